//! The long-lived git processes a `Repo` handle keeps (refs and trees read over a pipe,
//! single-ref compare-and-swaps as `update-ref --stdin` transactions): the same answers
//! as the one-shot commands, fresh after other processes move things, and no git process
//! per question once they run.

use std::path::{Path, PathBuf};

use fs_err as fs;
use weft_git::{GitError, Oid};

use crate::support::{Fixture, wrapped_git};

/// A git that appends each command line it is started with to `<root>/git-log`.
fn logging_git(fx: &Fixture) -> (PathBuf, PathBuf) {
    let log = fx.env.root().join("git-log");
    let prelude = format!("printf '%s\\n' \"$*\" >> '{}'", log.display());
    (wrapped_git(fx, "git-logging", &prelude), log)
}

fn logged(log: &Path) -> Vec<String> {
    fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn refs_read_over_the_pipe_follow_what_other_processes_do_to_them() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    let next = fx.commit_here(&[("b.txt", Some("b\n"))], "next");
    let read = || repo.ref_targets(&["refs/weft/r/tip"]).unwrap();
    assert_eq!(read(), [None]);
    fx.run(&["update-ref", "refs/weft/r/tip", base.as_str()]);
    assert_eq!(read(), [Some(base.clone())]);
    fx.run(&["update-ref", "refs/weft/r/tip", next.as_str()]);
    assert_eq!(read(), [Some(next.clone())]);
    // Packed, then moved while packed, then deleted.
    fx.run(&["pack-refs", "--all"]);
    assert_eq!(read(), [Some(next.clone())]);
    fx.run(&["update-ref", "refs/weft/r/tip", base.as_str()]);
    fx.run(&["pack-refs", "--all"]);
    assert_eq!(read(), [Some(base)]);
    fx.run(&["update-ref", "-d", "refs/weft/r/tip"]);
    assert_eq!(read(), [None]);
}

#[test]
fn a_missing_ref_is_not_answered_by_a_look_alike_name() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    // `refs/tags/refs/weft/r/tip` is what a name lookup would try when
    // `refs/weft/r/tip` does not exist; weft's record is still missing.
    fx.run(&["update-ref", "refs/tags/refs/weft/r/tip", base.as_str()]);
    assert_eq!(
        repo.ref_targets(&["refs/weft/r/tip", "refs/heads/main"])
            .unwrap(),
        [None, Some(base.clone())]
    );
    fx.run(&["update-ref", "refs/weft/r/tip", base.as_str()]);
    assert_eq!(
        repo.ref_targets(&["refs/weft/r/tip"]).unwrap(),
        [Some(base)]
    );
}

#[test]
fn a_refused_compare_and_swap_names_where_the_ref_is_and_the_next_one_goes_through() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    let next = fx.commit_here(&[("b.txt", Some("b\n"))], "next");
    let reference = "refs/heads/weft/r/task";
    repo.update_ref_cas(reference, &base, None).unwrap();
    let refused = repo
        .update_ref_cas(reference, &next, Some(&next))
        .unwrap_err();
    assert!(
        matches!(&refused, GitError::RefMoved { found: Some(found), .. } if *found == base),
        "{refused:?}"
    );
    assert_eq!(fx.oid(reference), base);
    repo.update_ref_cas(reference, &next, Some(&base)).unwrap();
    assert_eq!(fx.oid(reference), next);
    // Moved by another process in between: still judged against where it is now.
    fx.run(&["update-ref", reference, base.as_str()]);
    assert!(matches!(
        repo.update_ref_cas(reference, &base, Some(&next)),
        Err(GitError::RefMoved { .. })
    ));
    repo.update_ref_cas(reference, &next, Some(&base)).unwrap();
    assert_eq!(fx.oid(reference), next);
    assert!(matches!(
        repo.create_branch("weft/r/task", &base),
        Err(GitError::BranchExists { at, .. }) if at == next
    ));
}

#[test]
fn once_running_the_per_task_questions_start_no_git_process() {
    let fx = Fixture::new();
    let (wrapper, log) = logging_git(&fx);
    let repo = fx.git().program(&wrapper).open(fx.path()).unwrap();
    let base = fx.main();
    let next = fx.commit_here(&[("b.txt", Some("b\n"))], "next");
    let ask = |round: usize| {
        let task = format!("refs/heads/weft/r/task-{round}");
        repo.update_ref_cas(&task, &base, None).unwrap();
        repo.update_ref_cas(&task, &next, Some(&base)).unwrap();
        repo.ref_targets(&["refs/weft/r/tip", &task]).unwrap();
        repo.outside_symlinks(&base, &next).unwrap();
        repo.set_note("refs/notes/weft", &next, &format!("{{\"round\":{round}}}"))
            .unwrap();
    };
    ask(0);
    let started = logged(&log).len();
    for round in 1..6 {
        ask(round);
    }
    assert_eq!(
        logged(&log)[started..],
        [] as [String; 0],
        "questions after the first round started git processes"
    );
    assert!(
        logged(&log)
            .iter()
            .all(|line| !line.contains("for-each-ref"))
    );
}

#[test]
fn symlinks_are_judged_in_nested_new_changed_and_retyped_entries_and_never_in_unchanged_ones() {
    let fx = Fixture::new();
    let repo = fx.open();
    let link = |path: &str, target: &str| {
        let full = fx.path().join(path);
        fs::create_dir_all(full.parent().unwrap()).unwrap();
        let _ = fs::remove_file(&full);
        std::os::unix::fs::symlink(target, &full).unwrap();
    };
    link("kept/old", "/etc");
    link("kept/same", "../..");
    fx.write("was-file", "x\n");
    fx.write("was-folder/inside.txt", "x\n");
    fx.run(&["add", "-A"]);
    fx.run(&["commit", "-qm", "before"]);
    let before = fx.oid("HEAD");
    link("kept/old", "/tmp");
    link("new/deep/er/up", "../../../../x");
    link("new/deep/fine", "../ok");
    fs::remove_file(fx.path().join("was-file")).unwrap();
    link("was-file", "/bin");
    fs::remove_dir_all(fx.path().join("was-folder")).unwrap();
    link("was-folder", "/usr");
    link("a-b", "/root");
    fx.run(&["add", "-A"]);
    fx.run(&["commit", "-qm", "after"]);
    let after = fx.oid("HEAD");
    let expected: Vec<(String, String)> = [
        ("a-b", "/root"),
        ("kept/old", "/tmp"),
        ("new/deep/er/up", "../../../../x"),
        ("was-file", "/bin"),
        ("was-folder", "/usr"),
    ]
    .iter()
    .map(|(p, t)| ((*p).to_owned(), (*t).to_owned()))
    .collect();
    assert_eq!(repo.outside_symlinks(&before, &after).unwrap(), expected);
    // The symlinks are the ones `git diff-tree` (the command the pipe replaces) names.
    let diff = fx.run(&[
        "diff-tree",
        "-r",
        "--no-renames",
        "--diff-filter=AMT",
        before.as_str(),
        after.as_str(),
    ]);
    let links: Vec<&str> = diff
        .lines()
        .filter(|l| l.split(' ').nth(1) == Some("120000"))
        .filter_map(|l| l.split('\t').nth(1))
        .collect();
    assert_eq!(
        links,
        [
            "a-b",
            "kept/old",
            "new/deep/er/up",
            "new/deep/fine",
            "was-file",
            "was-folder"
        ]
    );
    assert!(repo.outside_symlinks(&after, &after).unwrap().is_empty());
    let unknown = Oid::parse(&"1".repeat(40)).unwrap();
    assert!(repo.outside_symlinks(&before, &unknown).is_err());
}

/// `count` commits on a side branch, oldest first.
fn commits(fx: &Fixture, count: usize) -> Vec<Oid> {
    let mut made = Vec::new();
    for n in 0..count {
        fx.run(&["commit", "-q", "--allow-empty", "-m", &format!("c{n}")]);
        made.push(fx.oid("HEAD"));
    }
    made
}

const NOTES: &str = "refs/notes/weft";

#[test]
fn notes_written_over_the_pipe_are_the_objects_git_notes_add_writes() {
    let fx = Fixture::new();
    let repo = fx.open();
    let made = commits(&fx, 3);
    // What `git notes add` stores, in a second repository with the same commits.
    let other = Fixture::new();
    let their = commits(&other, 3);
    let git_note = |commit: &Oid, text: &str| {
        other.run(&[
            "notes",
            "--ref",
            NOTES,
            "add",
            "-f",
            "-m",
            text,
            commit.as_str(),
        ]);
    };
    for (ours, theirs) in made.iter().zip(&their) {
        repo.set_note(NOTES, ours, "{\"n\":1}").unwrap();
        git_note(theirs, "{\"n\":1}");
    }
    repo.set_note(NOTES, &made[0], "{\"n\":2}\n").unwrap();
    git_note(&their[0], "{\"n\":2}");
    for (ours, theirs) in made.iter().zip(&their) {
        assert_eq!(
            fx.run(&["notes", "--ref", NOTES, "show", ours.as_str()]),
            other.run(&["notes", "--ref", NOTES, "show", theirs.as_str()])
        );
    }
    assert_eq!(
        fx.run(&["notes", "--ref", NOTES, "list"]).lines().count(),
        3
    );
    // A commit per note, each on the one before, with git's message and reflog line.
    let log = fx.run(&["log", "--format=%s%x09%P", NOTES]);
    let lines: Vec<&str> = log.lines().collect();
    assert_eq!(lines.len(), 4);
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("Notes added by 'git notes add'\t"))
    );
    assert!(
        lines[3].ends_with('\t'),
        "the first notes commit has no parent: {log}"
    );
    let reflog = fx.run(&["log", "-g", "--format=%gs", NOTES]);
    assert!(
        reflog
            .lines()
            .all(|l| l == "notes: Notes added by 'git notes add'"),
        "{reflog}"
    );
    // By the identity `git notes add` gets from weft (the repository configures none).
    assert_eq!(
        fx.run(&["log", "--format=%an <%ae> %cn <%ce>", NOTES])
            .lines()
            .collect::<Vec<_>>(),
        ["weft <weft@localhost> weft <weft@localhost>"; 4]
    );
}

#[test]
fn notes_of_a_long_run_are_fanned_out_and_a_tree_git_wrote_flat_keeps_every_note_once() {
    let fx = Fixture::new();
    let repo = fx.open();
    let made = commits(&fx, 40);
    // git writes the first notes flat, at the top.
    for commit in &made[..20] {
        fx.run(&["notes", "--ref", NOTES, "add", "-m", "git", commit.as_str()]);
    }
    let top = fx.run(&["ls-tree", NOTES]);
    assert!(top.lines().all(|l| l.contains(" blob ")), "{top}");
    for commit in &made[10..] {
        repo.set_note(NOTES, commit, "weft").unwrap();
    }
    // Replaced where git put them; the new ones one level down.
    let top = fx.run(&["ls-tree", NOTES]);
    assert_eq!(
        top.lines().filter(|l| l.contains(" blob ")).count(),
        20,
        "{top}"
    );
    assert!(top.lines().any(|l| l.contains(" tree ")), "{top}");
    let listed = fx.run(&["notes", "--ref", NOTES, "list"]);
    assert_eq!(listed.lines().count(), 40);
    for (n, commit) in made.iter().enumerate() {
        let want = if n < 10 { "git" } else { "weft" };
        assert_eq!(
            fx.run(&["notes", "--ref", NOTES, "show", commit.as_str()])
                .trim(),
            want
        );
    }
    // git's next note redoes the fan-out and keeps them all.
    fx.run(&[
        "notes",
        "--ref",
        NOTES,
        "add",
        "-f",
        "-m",
        "last",
        made[39].as_str(),
    ]);
    assert_eq!(
        fx.run(&["notes", "--ref", NOTES, "list"]).lines().count(),
        40
    );
    assert_eq!(
        fx.run(&["notes", "--ref", NOTES, "show", made[25].as_str()])
            .trim(),
        "weft"
    );
}

#[test]
fn a_note_git_would_clean_up_is_left_to_git_notes_and_a_note_git_added_in_between_is_kept() {
    let fx = Fixture::new();
    let repo = fx.open();
    let made = commits(&fx, 2);
    repo.set_note(NOTES, &made[0], "  two\n\n\nlines  \n")
        .unwrap();
    let cleaned = Fixture::new();
    let mine = commits(&cleaned, 1);
    let out = cleaned
        .env
        .command("git")
        .current_dir(cleaned.path())
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "notes",
            "--ref",
            NOTES,
            "add",
            "-F",
            "-",
        ])
        .arg(mine[0].as_str())
        .stdin(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(b"  two\n\n\nlines  \n")?;
            child.wait()
        })
        .unwrap();
    assert!(out.success());
    assert_eq!(
        fx.run(&["notes", "--ref", NOTES, "show", made[0].as_str()]),
        cleaned.run(&["notes", "--ref", NOTES, "show", mine[0].as_str()])
    );
    // A note git added since weft's last one is kept: weft's starts from where the ref is.
    fx.run(&[
        "notes",
        "--ref",
        NOTES,
        "add",
        "-m",
        "theirs",
        made[1].as_str(),
    ]);
    repo.set_note(NOTES, &made[1], "ours").unwrap();
    assert_eq!(
        fx.run(&["notes", "--ref", NOTES, "show", made[1].as_str()])
            .trim(),
        "ours"
    );
    assert_eq!(
        fx.run(&["notes", "--ref", NOTES, "list"]).lines().count(),
        2
    );
}

#[test]
fn a_landing_merge_is_the_commit_git_commit_tree_writes_and_fixed_dates_leave_it_to_git() {
    for fixed in [false, true] {
        let fx = Fixture::new();
        let git = if fixed {
            fx.git()
                .env("GIT_AUTHOR_DATE", "@1700000000 +0000")
                .env("GIT_COMMITTER_DATE", "@1700000000 +0000")
        } else {
            fx.git()
        };
        let repo = git.open(fx.path()).unwrap();
        let base = fx.main();
        fx.run(&["branch", "weft/r/integration", base.as_str()]);
        let task = fx.commit_on("weft/r/task", &base, &[("t.txt", Some("t\n"))]);
        let message = "weft: land task 1\n\nWeft-Task: 1";
        let landed = repo
            .land(
                "refs/heads/weft/r/integration",
                "refs/heads/weft/r/task",
                &base,
                message,
            )
            .unwrap();
        let weft_git::Landing::Landed { merge, .. } = landed else {
            panic!("expected a landing: {landed:?}");
        };
        let tree = fx.run(&["rev-parse", &format!("{merge}^{{tree}}")]);
        let by_git = fx.run(&[
            "commit-tree",
            tree.trim(),
            "-p",
            base.as_str(),
            "-p",
            task.as_str(),
            "-m",
            message,
        ]);
        let undated = |commit: &str| -> Vec<String> {
            fx.run(&["cat-file", "commit", commit.trim()])
                .lines()
                .map(|l| match l.split_once('>') {
                    Some((who, _)) if l.starts_with("author ") || l.starts_with("committer ") => {
                        who.to_owned()
                    }
                    _ => l.to_owned(),
                })
                .collect()
        };
        let ours = undated(merge.as_str());
        assert_eq!(
            ours[..2],
            [format!("tree {}", tree.trim()), format!("parent {base}")]
        );
        // The fixture's git runs with its own test identity; weft's falls back to its own.
        assert_eq!(
            ours[..5],
            undated(&by_git)[..3]
                .iter()
                .cloned()
                .chain([
                    "author weft <weft@localhost".to_owned(),
                    "committer weft <weft@localhost".to_owned()
                ])
                .collect::<Vec<_>>()[..]
        );
        assert_eq!(ours[5..], undated(&by_git)[5..]);
        let date = fx.run(&["log", "-1", "--format=%ct", merge.as_str()]);
        assert_eq!(date.trim() == "1700000000", fixed, "{date}");
    }
}

/// Kill (SIGKILL) this test process's git children working in `repo` whose command line
/// holds `needle` (only this test's: others run in threads of the same process); how many
/// were killed.
fn kill_children(repo: &Path, needle: &str) -> usize {
    let repo = repo.to_string_lossy().into_owned();
    let me = std::process::id().to_string();
    let mut killed = 0;
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: the fields after the last `)`.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1));
        let cmdline = fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if ppid == Some(me.as_str()) && cmdline.contains(&repo) && cmdline.contains(needle) {
            let status = std::process::Command::new("kill")
                .args(["-KILL", &pid])
                .status()
                .unwrap();
            killed += usize::from(status.success());
        }
    }
    killed
}

#[test]
fn a_long_lived_git_killed_between_questions_changes_no_answer_and_is_started_again() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    let next = fx.commit_here(&[("b.txt", Some("b\n"))], "next");
    repo.update_ref_cas("refs/weft/r/tip", &base, None).unwrap();
    repo.set_note(NOTES, &base, "{\"n\":1}").unwrap();
    assert_eq!(
        repo.ref_targets(&["refs/weft/r/tip"]).unwrap(),
        [Some(base.clone())]
    );
    // As a Ctrl-C at the terminal would: every long-lived git of the handle dies.
    let killed = kill_children(fx.path(), "--batch-command")
        + kill_children(fx.path(), "update-ref")
        + kill_children(fx.path(), "--stdin-paths");
    assert!(
        killed >= 3,
        "expected the reader and writers to be running, killed {killed}"
    );
    repo.update_ref_cas("refs/weft/r/tip", &next, Some(&base))
        .unwrap();
    assert_eq!(
        repo.ref_targets(&["refs/weft/r/tip"]).unwrap(),
        [Some(next.clone())]
    );
    repo.set_note(NOTES, &next, "{\"n\":2}").unwrap();
    assert_eq!(
        fx.run(&["notes", "--ref", NOTES, "show", next.as_str()])
            .trim(),
        "{\"n\":2}"
    );
    assert_eq!(
        fx.run(&["notes", "--ref", NOTES, "show", base.as_str()])
            .trim(),
        "{\"n\":1}"
    );
    // And the processes are back for the next questions.
    assert!(
        kill_children(fx.path(), "--batch-command") >= 1,
        "the reader was started again"
    );
}
