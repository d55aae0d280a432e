//! The worktree guards: attempt worktrees with a private object folder, importing what an
//! agent committed there, telling a tampered worktree from an intact one, atomic
//! multi-ref updates, outside symlinks.

use std::path::Path;

use fs_err as fs;
use weft_git::{AdminHead, GitError, Tamper};

use crate::support::Fixture;

/// Run git in `dir` as the agent would: objects into its private folder.
fn agent_git(fx: &Fixture, dir: &Path, env: &[(String, std::path::PathBuf)], args: &[&str]) {
    let output = fx
        .env
        .command("git")
        .current_dir(dir)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .args(["-c", "user.name=agent", "-c", "user.email=a@a.invalid"])
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
}

#[test]
fn an_agent_commit_goes_to_the_private_folder_and_is_imported_by_content() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    let path = fx.worktrees_dir().join("r/1-a");
    let made = repo
        .add_attempt_worktree(&path, "weft/r/1-a", &base)
        .unwrap();
    assert_eq!(
        repo.admin_head(&made.admin).unwrap(),
        AdminHead::Detached(base.clone())
    );
    assert_eq!(fx.oid("weft/r/1-a"), base, "the branch waits for weft");

    let env = made.git_env(&repo.objects_dir());
    fs::write(path.join("new.txt"), "agent work\n").unwrap();
    agent_git(&fx, &path, &env, &["add", "-A"]);
    agent_git(&fx, &path, &env, &["commit", "-qm", "agent"]);
    let AdminHead::Detached(head) = repo.admin_head(&made.admin).unwrap() else {
        panic!("HEAD left detached");
    };
    assert_ne!(head, base);
    // Not in the shared store until imported.
    let (code, _, _) = fx.try_in(fx.path(), &["cat-file", "-e", head.as_str()]);
    assert_ne!(code, 0, "the commit is private");
    assert!(!repo.objects_complete(&head, &base).unwrap());

    assert!(repo.import_objects(&made.objects).unwrap() >= 3);
    assert!(repo.objects_complete(&head, &base).unwrap());
    assert_eq!(fx.show(head.as_str(), "new.txt"), "agent work\n");
    // Importing again changes nothing; an empty folder imports nothing.
    repo.import_objects(&made.objects).unwrap();
    assert_eq!(repo.import_objects(&fx.worktrees_dir()).unwrap(), 0);
}

#[test]
fn a_forged_object_file_never_enters_the_store_under_its_false_name() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    let path = fx.worktrees_dir().join("r/1-a");
    let made = repo
        .add_attempt_worktree(&path, "weft/r/1-a", &base)
        .unwrap();
    let env = made.git_env(&repo.objects_dir());
    fs::write(path.join("a.txt"), "real\n").unwrap();
    agent_git(&fx, &path, &env, &["add", "-A"]);
    // Copy a real object's file under another name: its content hashes elsewhere.
    let real = fx.run_in(&path, &["ls-files", "-s", "a.txt"]);
    let real = real.split_whitespace().nth(1).unwrap().to_owned();
    let forged = "ab".to_owned() + &"c".repeat(38);
    let from = made.objects.join(&real[..2]).join(&real[2..]);
    fs::create_dir_all(made.objects.join("ab")).unwrap();
    fs::copy(&from, made.objects.join("ab").join(&forged[2..])).unwrap();
    let _ = repo.import_objects(&made.objects);
    let (code, _, _) = fx.try_in(fx.path(), &["cat-file", "-e", &forged]);
    assert_ne!(code, 0, "the forged name is not in the store");
    let (code, _, _) = fx.try_in(fx.path(), &["cat-file", "-e", &real]);
    assert_eq!(code, 0, "the real object is");
}

/// What a case does to a worktree (its folder, its admin folder).
type TamperWith = fn(&Path, &Path);

#[test]
fn a_tampered_worktree_is_named_before_any_git_runs_there() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    let cases: [(&str, TamperWith, Tamper); 4] = [
        (
            "deleted",
            |wt, _| fs::remove_file(wt.join(".git")).unwrap(),
            Tamper::GitDeleted,
        ),
        (
            "folder",
            |wt, _| {
                fs::remove_file(wt.join(".git")).unwrap();
                fs::create_dir(wt.join(".git")).unwrap();
            },
            Tamper::GitReplaced {
                now: "a folder (a repository of its own)",
            },
        ),
        (
            "config",
            |_, admin| {
                fs::write(
                    admin.join("config.worktree"),
                    "[core]\n\tfsmonitor = evil\n",
                )
                .unwrap()
            },
            Tamper::WorktreeConfig,
        ),
        (
            "commondir",
            |_, admin| fs::write(admin.join("commondir"), "/tmp\n").unwrap(),
            Tamper::CommonDirChanged,
        ),
    ];
    for (name, tamper, expected) in cases {
        let path = fx.worktrees_dir().join(format!("r/{name}"));
        let branch = format!("weft/r/{name}");
        let made = repo.add_attempt_worktree(&path, &branch, &base).unwrap();
        let intact = repo.inspect_worktree(&made.path, &made.admin).unwrap();
        assert!(intact.is_ok(), "{name}: intact before");
        tamper(&made.path, &made.admin);
        match repo.inspect_worktree(&made.path, &made.admin).unwrap() {
            Err(found) => assert_eq!(found, expected, "{name}"),
            Ok(_) => panic!("{name}: not noticed"),
        }
    }
    // `.git` rewritten to name another worktree's admin folder.
    let a = repo
        .add_attempt_worktree(fx.worktrees_dir().join("r/a"), "weft/r/a", &base)
        .unwrap();
    let b = repo
        .add_attempt_worktree(fx.worktrees_dir().join("r/b"), "weft/r/b", &base)
        .unwrap();
    fs::write(
        a.path.join(".git"),
        format!("gitdir: {}\n", b.admin.display()),
    )
    .unwrap();
    assert!(matches!(
        repo.inspect_worktree(&a.path, &a.admin).unwrap(),
        Err(Tamper::GitRepointed { .. })
    ));
}

#[test]
fn an_inspected_worktree_is_committed_where_weft_made_it_whatever_its_git_file_says_later() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    let made = repo
        .add_attempt_worktree(fx.worktrees_dir().join("r/here"), "weft/r/here", &base)
        .unwrap();
    let other = repo
        .add_attempt_worktree(fx.worktrees_dir().join("r/other"), "weft/r/other", &base)
        .unwrap();
    fs::write(made.path.join("work.txt"), "the agent's work\n").unwrap();
    let worktree = repo
        .inspect_worktree(&made.path, &made.admin)
        .unwrap()
        .expect("the worktree is intact");
    assert_eq!(worktree.root(), made.path);
    // Something left running rewrites `.git` after the inspection, to another worktree's
    // admin folder: weft's git never looks at it.
    fs::write(
        made.path.join(".git"),
        format!("gitdir: {}\n", other.admin.display()),
    )
    .unwrap();
    let commit = worktree
        .commit_all::<&str>("weft: task", &[])
        .unwrap()
        .expect("the work is committed");
    assert_eq!(
        fs::read_to_string(made.admin.join("HEAD")).unwrap().trim(),
        commit.as_str(),
        "the commit is on the worktree's own HEAD"
    );
    assert_eq!(
        fs::read_to_string(other.admin.join("HEAD")).unwrap().trim(),
        base.as_str(),
        "the other worktree's HEAD did not move"
    );
    assert_eq!(fx.tree_paths(commit.as_str()), ["README.md", "work.txt"]);
}

#[test]
fn several_refs_move_together_or_not_at_all() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    let next = fx.commit_on("side", &base, &[("s.txt", Some("s"))]);
    repo.update_refs_cas(
        &[
            ("refs/weft/x/a", &base, None),
            ("refs/weft/x/b", &base, None),
        ],
        "test",
    )
    .unwrap();
    // One expectation is wrong: neither moves.
    let error = repo
        .update_refs_cas(
            &[
                ("refs/weft/x/a", &next, Some(&base)),
                ("refs/weft/x/b", &next, Some(&next)),
            ],
            "test",
        )
        .unwrap_err();
    assert!(
        matches!(error, GitError::RefMoved { ref reference, .. } if reference == "refs/weft/x/b")
    );
    assert_eq!(fx.oid("refs/weft/x/a"), base);
    assert_eq!(fx.oid("refs/weft/x/b"), base);
    repo.update_refs_cas(
        &[
            ("refs/weft/x/a", &next, Some(&base)),
            ("refs/weft/x/b", &next, Some(&base)),
        ],
        "test",
    )
    .unwrap();
    assert_eq!(fx.oid("refs/weft/x/a"), next);
    assert_eq!(fx.oid("refs/weft/x/b"), next);
    // Read back in one call; a missing ref (or a mere prefix of one) is `None`.
    assert_eq!(
        repo.ref_targets(&["refs/weft/x/b", "refs/weft/x", "refs/weft/x/a"])
            .unwrap(),
        [Some(next.clone()), None, Some(next)]
    );
}

#[test]
fn symlinks_pointing_outside_the_tree_are_found_with_their_targets() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    let path = fx.worktrees_dir().join("r/links");
    repo.add_attempt_worktree(&path, "weft/r/links", &base)
        .unwrap();
    std::os::unix::fs::symlink("/etc", path.join("etc-link")).unwrap();
    fs::create_dir(path.join("sub")).unwrap();
    std::os::unix::fs::symlink("../../up", path.join("sub/up")).unwrap();
    std::os::unix::fs::symlink("../README.md", path.join("sub/fine")).unwrap();
    fx.run_in(&path, &["add", "-A"]);
    fx.run_in(&path, &["commit", "-qm", "links"]);
    let tip: weft_git::Oid = fx
        .run_in(&path, &["rev-parse", "HEAD"])
        .trim()
        .parse()
        .unwrap();
    let found = repo.outside_symlinks(&base, &tip).unwrap();
    assert_eq!(
        found,
        [
            ("etc-link".to_owned(), "/etc".to_owned()),
            ("sub/up".to_owned(), "../../up".to_owned())
        ]
    );
}
