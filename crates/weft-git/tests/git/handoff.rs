//! Handoff: review diffs, the merge preflight, and the merge into the user's checkout.

use std::os::unix::fs::PermissionsExt;

use fs_err as fs;
use weft_git::{ApplyStep, GitError, MergeOutcome, Oid, Prepared, PreparedMerge, StashRestore};

use crate::support::{BASE_TEXT, Fixture};

/// `f.txt` and `g.txt` on main, and a run branch `run` that changes `f.txt` (line 2) and
/// adds `new.txt`. Returns (base, run tip).
fn handoff_setup(fx: &Fixture) -> (Oid, Oid) {
    let base = fx.commit_here(
        &[("f.txt", Some(BASE_TEXT)), ("g.txt", Some("g\n"))],
        "base",
    );
    let tip = fx.commit_on(
        "run",
        &base,
        &[
            ("f.txt", Some("one\nRUN\nthree\n")),
            ("new.txt", Some("n\n")),
        ],
    );
    (base, tip)
}

fn assert_problem(problems: &[String], needle: &str) {
    assert!(
        problems.iter().any(|p| p.contains(needle)),
        "no problem mentions {needle:?}: {problems:?}"
    );
}

#[test]
fn a_clean_checkout_passes_and_merges() {
    let fx = Fixture::new();
    let (base, tip) = handoff_setup(&fx);
    // The user moved on meanwhile, in another file: still fine.
    let user = fx.commit_here(&[("g.txt", Some("user's g\n"))], "user work");
    fx.write("unrelated.txt", "untracked, never blocks\n");
    fx.write(
        "g.txt",
        "uncommitted edit to a file the merge leaves alone\n",
    );
    let repo = fx.open();

    let preflight = repo.merge_preflight("run").unwrap();
    assert!(preflight.ok, "{:?}", preflight.problems);
    assert!(preflight.problems.is_empty());
    assert_eq!(preflight.head_branch.as_deref(), Some("main"));
    assert_eq!(preflight.head.as_ref(), Some(&user));
    assert_eq!(preflight.tip.as_ref(), Some(&tip));
    assert!(!preflight.up_to_date);
    let mut changes = preflight.changes.clone();
    changes.sort();
    assert_eq!(changes, ["f.txt", "new.txt"]);

    let outcome = repo
        .merge_into_checked_out("run", "weft: merge run abcd1234")
        .unwrap();
    let MergeOutcome::Merged { commit, previous } = outcome else {
        panic!("expected a merge, got {outcome:?}");
    };
    assert_eq!(previous, user);
    assert_eq!(fx.main(), commit);
    assert_eq!(fx.parents("main"), [user, tip]);
    assert_eq!(fx.read("f.txt"), "one\nRUN\nthree\n");
    assert_eq!(fx.read("new.txt"), "n\n");
    assert_eq!(
        fx.read("g.txt"),
        "uncommitted edit to a file the merge leaves alone\n",
        "the user's uncommitted edit survives"
    );
    assert_eq!(
        fx.run(&["log", "-1", "--format=%s", "main"]).trim(),
        "weft: merge run abcd1234"
    );
    assert!(repo.is_ancestor(base.as_str(), "main").unwrap());

    // Merging again: nothing to do.
    let again = repo.merge_into_checked_out("run", "again").unwrap();
    assert_eq!(again, MergeOutcome::UpToDate { head: commit });
}

#[test]
fn nothing_landed_is_up_to_date() {
    let fx = Fixture::new();
    let repo = fx.open();
    repo.create_branch("run", &fx.main()).unwrap();
    let preflight = repo.merge_preflight("run").unwrap();
    assert!(preflight.ok && preflight.up_to_date, "{preflight:?}");
    assert!(preflight.changes.is_empty());
    assert_eq!(
        repo.merge_into_checked_out("run", "m").unwrap(),
        MergeOutcome::UpToDate { head: fx.main() }
    );
    assert!(repo.diff_stat("main", "run").unwrap().is_empty());
    assert_eq!(repo.diff("main", "run").unwrap().text, "");
}

#[test]
fn an_uncommitted_edit_to_a_file_the_merge_changes_is_caught() {
    let fx = Fixture::new();
    handoff_setup(&fx);
    fx.write("f.txt", "one\ntwo\nthree\nlocal edit\n");
    let repo = fx.open();
    let preflight = repo.merge_preflight("run").unwrap();
    assert!(!preflight.ok);
    assert_eq!(preflight.problems.len(), 1, "{:?}", preflight.problems);
    assert_problem(&preflight.problems, "f.txt has uncommitted changes");

    // A staged edit counts too.
    fx.run(&["add", "f.txt"]);
    let preflight = repo.merge_preflight("run").unwrap();
    assert_problem(&preflight.problems, "f.txt has uncommitted changes");
}

#[test]
fn an_untracked_file_in_the_way_is_caught() {
    let fx = Fixture::new();
    handoff_setup(&fx);
    fx.write("new.txt", "mine\n");
    let preflight = fx.open().merge_preflight("run").unwrap();
    assert!(!preflight.ok);
    assert_problem(&preflight.problems, "untracked new.txt");
}

#[test]
fn a_conflict_with_the_checkout_is_caught_without_touching_it() {
    let fx = Fixture::new();
    handoff_setup(&fx);
    let user = fx.commit_here(&[("f.txt", Some("one\nUSER\nthree\n"))], "user edit");
    let repo = fx.open();
    let preflight = repo.merge_preflight("run").unwrap();
    assert!(!preflight.ok);
    assert_problem(&preflight.problems, "conflicts in f.txt");
    assert_eq!(fx.main(), user);
    assert_eq!(fx.read("f.txt"), "one\nUSER\nthree\n");
    assert!(repo.tracked_changes().unwrap().is_empty());
    assert!(!fx.path().join(".git/MERGE_HEAD").exists());
}

#[test]
fn a_merge_in_progress_is_caught() {
    let fx = Fixture::new();
    let (base, _) = handoff_setup(&fx);
    fx.commit_on("other", &base, &[("f.txt", Some("one\nOTHER\nthree\n"))]);
    fx.commit_here(&[("f.txt", Some("one\nUSER\nthree\n"))], "user edit");
    let (code, _, _) = fx.try_in(fx.path(), &["merge", "--no-edit", "other"]);
    assert_eq!(code, 1, "the user's own merge stopped on a conflict");

    let preflight = fx.open().merge_preflight("run").unwrap();
    assert!(!preflight.ok);
    assert_problem(&preflight.problems, "a merge is in progress");
    assert_problem(&preflight.problems, "unresolved conflicts in f.txt");
}

#[test]
fn rebase_and_cherry_pick_in_progress_are_caught() {
    let fx = Fixture::new();
    handoff_setup(&fx);
    let repo = fx.open();
    fs::create_dir_all(fx.path().join(".git/rebase-merge")).unwrap();
    assert_problem(
        &repo.merge_preflight("run").unwrap().problems,
        "a rebase is in progress",
    );
    fs::remove_dir_all(fx.path().join(".git/rebase-merge")).unwrap();
    fs::write(fx.path().join(".git/CHERRY_PICK_HEAD"), fx.main().as_str()).unwrap();
    assert_problem(
        &repo.merge_preflight("run").unwrap().problems,
        "a cherry-pick is in progress",
    );
}

#[test]
fn a_detached_head_and_a_missing_branch_are_caught() {
    let fx = Fixture::new();
    handoff_setup(&fx);
    fx.run(&["checkout", "-q", "--detach", "main"]);
    let repo = fx.open();
    let preflight = repo.merge_preflight("run").unwrap();
    assert!(!preflight.ok);
    assert_problem(&preflight.problems, "HEAD is detached");

    fx.run(&["checkout", "-q", "main"]);
    let preflight = repo.merge_preflight("no-such-run").unwrap();
    assert!(!preflight.ok);
    assert_problem(&preflight.problems, "there is no branch no-such-run");
}

#[test]
fn a_failed_preflight_merges_nothing() {
    let fx = Fixture::new();
    handoff_setup(&fx);
    fx.write("f.txt", "local\n");
    let repo = fx.open();
    let before = fx.main();
    let error = repo.merge_into_checked_out("run", "m").unwrap_err();
    match &error {
        GitError::PreflightFailed {
            branch, problems, ..
        } => {
            assert_eq!(branch, "run");
            assert_problem(problems, "f.txt");
        }
        other => panic!("expected PreflightFailed, got {other:?}"),
    }
    assert!(error.to_string().contains("nothing was changed"), "{error}");
    assert_eq!(fx.main(), before);
    assert_eq!(fx.read("f.txt"), "local\n");
    assert!(!fx.path().join("new.txt").exists());
}

#[test]
fn a_merge_refused_by_a_hook_is_aborted() {
    let fx = Fixture::new();
    handoff_setup(&fx);
    let hook = fx.path().join(".git/hooks/pre-merge-commit");
    fs::create_dir_all(hook.parent().unwrap()).unwrap();
    fs::write(&hook, "#!/bin/sh\necho 'no merges today' >&2\nexit 1\n").unwrap();
    fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let repo = fx.open();
    let before = fx.main();
    let error = repo.merge_into_checked_out("run", "m").unwrap_err();
    assert!(error.to_string().contains("no merges today"), "{error}");
    assert_eq!(fx.main(), before);
    assert!(!fx.path().join(".git/MERGE_HEAD").exists());
    assert!(repo.tracked_changes().unwrap().is_empty());
    assert!(!fx.path().join("new.txt").exists());
}

#[test]
fn review_diffs_and_stats() {
    let fx = Fixture::new();
    let (base, tip) = handoff_setup(&fx);
    let repo = fx.open();
    let stat = repo.diff_stat(base.as_str(), tip.as_str()).unwrap();
    assert_eq!(stat.files.len(), 2);
    assert_eq!(stat.files[0].path, "f.txt");
    assert_eq!(stat.files[0].insertions, Some(1));
    assert_eq!(stat.files[0].deletions, Some(1));
    assert_eq!(stat.files[1].path, "new.txt");
    assert_eq!((stat.insertions, stat.deletions), (2, 1));

    let diff = repo.diff(base.as_str(), tip.as_str()).unwrap();
    assert!(!diff.truncated);
    assert!(diff.notice().is_none());
    assert!(diff.text.contains("+RUN"), "{}", diff.text);
    assert!(diff.text.contains("diff --git a/new.txt b/new.txt"));

    let mut changed = repo.changed_files(base.as_str(), tip.as_str()).unwrap();
    changed.sort();
    assert_eq!(changed, ["f.txt", "new.txt"]);
}

#[test]
fn a_long_diff_is_cut_and_says_so() {
    let fx = Fixture::new();
    let base = fx.main();
    let big: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    let tip = fx.commit_on(
        "big",
        &base,
        &[("big.txt", Some(&big)), ("bin.dat", Some("\0\u{1}"))],
    );
    let repo = fx.open();
    let diff = repo
        .diff_limited(base.as_str(), tip.as_str(), 10_000)
        .unwrap();
    assert!(diff.truncated);
    assert!(diff.text.len() <= 10_000);
    assert!(diff.text.ends_with('\n'), "cut at a line end");
    assert!(diff.notice().unwrap().contains("cut"));

    let stat = repo.diff_stat(base.as_str(), tip.as_str()).unwrap();
    let binary = stat.files.iter().find(|f| f.path == "bin.dat").unwrap();
    assert_eq!((binary.insertions, binary.deletions), (None, None));
    assert_eq!(stat.insertions, 20_000);
}

#[test]
fn stashed_changes_come_back_after_the_run() {
    let fx = Fixture::new();
    handoff_setup(&fx);
    let repo = fx.open();
    assert_eq!(repo.stash_push("nothing to stash").unwrap(), None);

    fx.write("f.txt", "one\ntwo\nthree\nlocal\n");
    fx.write("g.txt", "staged g\n");
    fx.run(&["add", "g.txt"]);
    fx.write("untracked.txt", "stays\n");
    let stash = repo
        .stash_push("weft run abcd1234")
        .unwrap()
        .expect("a stash");
    assert!(
        repo.tracked_changes().unwrap().is_empty(),
        "the tree is clean now"
    );
    assert_eq!(fx.read("untracked.txt"), "stays\n", "untracked files stay");

    // The run lands work elsewhere; the user's branch moves on in another file.
    fx.commit_here(&[("other.txt", Some("o\n"))], "meanwhile");
    assert_eq!(repo.stash_restore(&stash).unwrap(), StashRestore::Restored);
    assert_eq!(fx.read("f.txt"), "one\ntwo\nthree\nlocal\n");
    assert_eq!(fx.read("g.txt"), "staged g\n");
    let staged = fx.run(&["diff", "--cached", "--name-only"]);
    assert_eq!(staged.trim(), "g.txt", "what was staged is staged again");
    assert_eq!(fx.run(&["stash", "list"]), "", "the entry was dropped");

    let error = repo.stash_restore(&stash).unwrap_err();
    assert!(
        matches!(error, GitError::UnknownRevision { .. }),
        "{error:?}"
    );
}

#[test]
fn a_stash_that_conflicts_on_restore_is_kept() {
    let fx = Fixture::new();
    handoff_setup(&fx);
    let repo = fx.open();
    fx.write("f.txt", "one\nLOCAL\nthree\n");
    let stash = repo.stash_push("weft run abcd1234").unwrap().unwrap();
    fx.run(&["merge", "-q", "--no-edit", "run"]);
    match repo.stash_restore(&stash).unwrap() {
        StashRestore::Conflicted { files } => assert_eq!(files, ["f.txt"]),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert!(fx.read("f.txt").contains("<<<<<<<"));
    let list = fx.run(&["stash", "list", "--format=%H"]);
    assert_eq!(list.trim(), stash.as_str(), "the stash is kept");
}

/// A run branch that changes, adds, deletes and turns a file into a folder, with an
/// executable script and a symlink. Returns (base, run tip).
fn reshaping_setup(fx: &Fixture) -> (Oid, Oid) {
    let base = fx.commit_here(
        &[
            ("f.txt", Some(BASE_TEXT)),
            ("gone.txt", Some("gone\n")),
            ("deep/gone/x.txt", Some("x\n")),
            ("shape", Some("a file, then a folder\n")),
            ("keep.txt", Some("keep\n")),
        ],
        "base",
    );
    fx.run(&["checkout", "-q", "-b", "run", base.as_str()]);
    fx.write("f.txt", "one\nRUN\nthree\n");
    fx.write("added/new.txt", "n\n");
    fx.write("run.sh", "#!/bin/sh\necho hi\n");
    fs::set_permissions(
        fx.path().join("run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::os::unix::fs::symlink("f.txt", fx.path().join("link")).unwrap();
    fx.run(&["rm", "-q", "gone.txt", "deep/gone/x.txt", "shape"]);
    fx.write("shape/inside.txt", "now a folder\n");
    fx.run(&["add", "-A"]);
    fx.run(&["commit", "-q", "-m", "reshape"]);
    let tip = fx.oid("HEAD");
    fx.run(&["checkout", "-q", "main"]);
    (base, tip)
}

/// Everything `git status` shows, untracked files included.
fn status(fx: &Fixture) -> String {
    fx.run(&["status", "--porcelain", "--untracked-files=all"])
}

/// Apply, dying (a panic standing in for SIGKILL) right after the step `stop_at` picks.
fn apply_until(repo: &weft_git::Repo, merge: &PreparedMerge, stop_at: fn(ApplyStep) -> bool) {
    let died = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        repo.apply_merge(merge, &mut |step| {
            if stop_at(step) {
                panic!("killed at {step:?}");
            }
        })
    }));
    assert!(died.is_err(), "the apply never reached the kill point");
}

#[test]
fn a_merge_is_prepared_without_touching_the_checkout_then_applied_exactly() {
    let fx = Fixture::new();
    let (_, tip) = reshaping_setup(&fx);
    fx.write("keep.txt", "the user's uncommitted edit\n");
    let before = status(&fx);
    let repo = fx.open();
    let Prepared::Ready(merge) = repo.prepare_merge("run", "weft: merge").unwrap() else {
        panic!("expected a merge to apply");
    };
    assert_eq!(merge.branch, "main");
    assert_eq!(merge.previous, fx.main());
    assert_eq!(status(&fx), before, "preparing touched the checkout");
    assert!(!fx.path().join("added").exists());

    let mut steps = Vec::new();
    repo.apply_merge(&merge, &mut |step| steps.push(step))
        .unwrap();
    assert_eq!(steps.last(), Some(&ApplyStep::Moved));
    assert_eq!(fx.main(), merge.commit);
    assert_eq!(fx.parents("main"), [merge.previous.clone(), tip]);
    assert_eq!(status(&fx), " M keep.txt\n", "only the user's edit differs");
    assert_eq!(fx.read("keep.txt"), "the user's uncommitted edit\n");
    assert_eq!(fx.read("shape/inside.txt"), "now a folder\n");
    assert!(!fx.path().join("gone.txt").exists());
    assert!(
        !fx.path().join("deep").exists(),
        "emptied folders are removed"
    );
    let mode = fs::metadata(fx.path().join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "the script stays executable");
    assert_eq!(
        std::fs::read_link(fx.path().join("link")).unwrap(),
        std::path::Path::new("f.txt")
    );
    // Applying again is a no-op.
    repo.apply_merge(&merge, &mut |_| {}).unwrap();
    assert_eq!(fx.main(), merge.commit);
}

#[test]
fn an_apply_killed_at_any_step_is_finished_by_applying_again() {
    let stops: [fn(ApplyStep) -> bool; 2] = [
        |s| matches!(s, ApplyStep::Indexed { .. }),
        |s| matches!(s, ApplyStep::Wrote { .. }),
    ];
    for stop_at in stops {
        let fx = Fixture::new();
        reshaping_setup(&fx);
        let repo = fx.open();
        let Prepared::Ready(merge) = repo.prepare_merge("run", "m").unwrap() else {
            panic!("expected a merge to apply");
        };
        apply_until(&repo, &merge, stop_at);
        assert_eq!(fx.main(), merge.previous, "the branch moves last");
        assert!(
            !status(&fx).contains("??"),
            "a half-applied merge left untracked files: {}",
            status(&fx)
        );
        repo.apply_merge(&merge, &mut |_| {}).unwrap();
        assert_eq!(fx.main(), merge.commit);
        assert_eq!(status(&fx), "", "the finished merge left differences");
        assert_eq!(fx.read("f.txt"), "one\nRUN\nthree\n");
    }
}

#[test]
fn an_apply_killed_at_any_step_is_undone_by_unapplying() {
    let stops: [fn(ApplyStep) -> bool; 3] = [
        |s| matches!(s, ApplyStep::Indexed { .. }),
        |s| matches!(s, ApplyStep::Wrote { .. }),
        |s| matches!(s, ApplyStep::Moved),
    ];
    for stop_at in stops {
        let fx = Fixture::new();
        reshaping_setup(&fx);
        fx.write("keep.txt", "the user's uncommitted edit\n");
        fx.write("mine.txt", "the user's untracked file\n");
        let before = (fx.main(), status(&fx));
        let repo = fx.open();
        let Prepared::Ready(merge) = repo.prepare_merge("run", "m").unwrap() else {
            panic!("expected a merge to apply");
        };
        apply_until(&repo, &merge, stop_at);
        repo.unapply_merge(&merge, &mut |_| {}).unwrap();
        assert_eq!((fx.main(), status(&fx)), before);
        assert_eq!(fx.read("shape"), "a file, then a folder\n");
        assert_eq!(fx.read("deep/gone/x.txt"), "x\n");
        assert!(!fx.path().join("added").exists());
        assert!(!fx.path().join("link").exists());
        // Undoing again changes nothing.
        repo.unapply_merge(&merge, &mut |_| {}).unwrap();
        assert_eq!((fx.main(), status(&fx)), before);
    }
}

#[test]
fn an_apply_refuses_a_branch_someone_else_moved() {
    let fx = Fixture::new();
    reshaping_setup(&fx);
    let repo = fx.open();
    let Prepared::Ready(merge) = repo.prepare_merge("run", "m").unwrap() else {
        panic!("expected a merge to apply");
    };
    let moved = fx.commit_here(&[("other.txt", Some("o\n"))], "the user moved on");
    let error = repo.apply_merge(&merge, &mut |_| {}).unwrap_err();
    assert!(matches!(error, GitError::RefMoved { .. }), "{error:?}");
    assert_eq!(fx.main(), moved);
    assert_eq!(status(&fx), "");
}

#[test]
fn a_refusal_names_a_screenful_of_paths_and_counts_the_rest() {
    let fx = Fixture::new();
    let base = fx.main();
    let files: Vec<(String, Option<&str>)> = (0..500)
        .map(|i| (format!("many/f{i:03}.txt"), Some("run\n")))
        .collect();
    let borrowed: Vec<(&str, Option<&str>)> = files.iter().map(|(p, c)| (p.as_str(), *c)).collect();
    fx.commit_on("run", &base, &borrowed);
    for (path, _) in &files {
        fx.write(path, "untracked, in the way\n");
    }
    let preflight = fx.open().merge_preflight("run").unwrap();
    assert_eq!(preflight.problems.len(), 1, "{:?}", preflight.problems);
    let problem = &preflight.problems[0];
    assert!(problem.starts_with("500 untracked files"), "{problem}");
    assert!(problem.contains(" and 480 more"), "{problem}");
    assert!(problem.len() < 1000, "{} bytes: {problem}", problem.len());
    assert_eq!(weft_git::list_paths(&["a", "b"]), "a, b");
}

/// A git that dies of SIGINT the first time it is started (a Ctrl-C landing in the
/// moment a child is still in weft's process group), then behaves.
fn git_killed_once_by_ctrl_c(fx: &Fixture) -> std::path::PathBuf {
    let flag = fx.env.root().join("killed-once");
    let prelude = format!(
        "if [ ! -e '{flag}' ]; then : > '{flag}'; kill -INT $$; fi",
        flag = flag.display()
    );
    crate::support::wrapped_git(fx, "git-killed-once", &prelude)
}

#[test]
fn an_apply_in_its_own_process_group_survives_a_ctrl_c_that_reached_a_git_as_it_started() {
    let fx = Fixture::new();
    reshaping_setup(&fx);
    let Prepared::Ready(merge) = fx.open().prepare_merge("run", "m").unwrap() else {
        panic!("expected a merge to apply");
    };
    let wrapper = git_killed_once_by_ctrl_c(&fx);
    let own = fx.git().program(&wrapper).own_process_group();
    let repo = own.open(fx.path()).unwrap();
    repo.apply_merge(&merge, &mut |_| {}).unwrap();
    assert_eq!(fx.main(), merge.commit);
    assert!(
        fx.env.root().join("killed-once").exists(),
        "the wrapper never fired"
    );

    // Without its own group, a git killed by a Ctrl-C is an error, as it should be: the
    // command was meant to be interruptible.
    let fx = Fixture::new();
    reshaping_setup(&fx);
    let wrapper = git_killed_once_by_ctrl_c(&fx);
    let shared = fx.git().program(&wrapper);
    let error = shared.open(fx.path()).unwrap_err();
    assert!(error.to_string().contains("signal 2"), "{error}");
}
