//! commit_all (identity, excluded links), index.lock, conflict markers, repair merges.

use std::os::unix::fs::symlink;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use fs_err as fs;
use weft_git::{GitError, WorktreeMerge};

use crate::support::{BASE_TEXT, Fixture, TEST_LOCK_WAIT};

fn author(fx: &Fixture, rev: &str) -> String {
    fx.run(&["log", "-1", "--format=%an <%ae>|%cn <%ce>", rev])
        .trim()
        .to_owned()
}

#[test]
fn nothing_to_commit_is_none() {
    let fx = Fixture::new();
    let repo = fx.open();
    assert_eq!(repo.commit_all("nothing", &[] as &[&str]).unwrap(), None);
    fx.write("ignored.log", "x\n");
    fx.write(".gitignore", "*.log\n");
    fx.run(&["add", ".gitignore"]);
    fx.run(&["commit", "-q", "-m", "ignore logs"]);
    assert_eq!(
        repo.commit_all("only ignored files", &[] as &[&str])
            .unwrap(),
        None
    );
}

#[test]
fn commit_all_takes_everything_with_the_fallback_identity() {
    let fx = Fixture::new();
    fx.commit_here(
        &[("keep.txt", Some("k\n")), ("gone.txt", Some("g\n"))],
        "files",
    );
    let before = fx.main();
    fx.write("keep.txt", "changed\n");
    fs::remove_file(fx.path().join("gone.txt")).unwrap();
    fx.write("new dir/nouveau é.txt", "n\n");
    let repo = fx.open();
    let message = "weft: task 3: add things\n\n# not a comment";
    let commit = repo.commit_all(message, &[] as &[&str]).unwrap().unwrap();

    assert_eq!(fx.main(), commit);
    assert_eq!(fx.parents("main"), [before]);
    let mut paths = fx.tree_paths("main");
    paths.sort();
    assert_eq!(paths, ["README.md", "keep.txt", "new dir/nouveau é.txt"]);
    assert_eq!(fx.show("main", "keep.txt"), "changed\n");
    assert_eq!(
        author(&fx, "main"),
        "weft <weft@localhost>|weft <weft@localhost>"
    );
    assert_eq!(
        fx.run(&["log", "-1", "--format=%B", "main"]).trim_end(),
        message,
        "the message is kept verbatim"
    );
    assert!(repo.tracked_changes().unwrap().is_empty());
}

#[test]
fn commit_all_uses_the_configured_identity() {
    let fx = Fixture::new();
    fx.run(&["config", "user.name", "Ada Lovelace"]);
    fx.run(&["config", "user.email", "ada@example.com"]);
    fx.write("a.txt", "a\n");
    let commit = fx
        .open()
        .commit_all("ada's", &[] as &[&str])
        .unwrap()
        .unwrap();
    assert_eq!(
        author(&fx, commit.as_str()),
        "Ada Lovelace <ada@example.com>|Ada Lovelace <ada@example.com>"
    );
}

#[test]
fn commit_all_fills_in_only_the_missing_part_of_the_identity() {
    let fx = Fixture::new();
    fx.run(&["config", "user.name", "Only Name"]);
    fx.write("a.txt", "a\n");
    let commit = fx
        .open()
        .commit_all("half", &[] as &[&str])
        .unwrap()
        .unwrap();
    assert_eq!(
        author(&fx, commit.as_str()),
        "Only Name <weft@localhost>|Only Name <weft@localhost>"
    );
}

/// A worktree with weft's links: a whole-folder link and entry-by-entry links inside a
/// real `node_modules`, plus an `.env` file link.
fn linked_worktree(fx: &Fixture) -> (weft_git::Repo, PathBuf, Vec<PathBuf>) {
    let repo = fx.open();
    let shared = fx.env.root().join("shared");
    fs::create_dir_all(shared.join("node_modules/left-pad")).unwrap();
    fs::create_dir_all(shared.join(".venv")).unwrap();
    fs::write(shared.join(".env"), "SECRET=1\n").unwrap();

    let path = fx.worktrees_dir().join("linked task");
    repo.add_worktree(&path, "linked", &fx.main()).unwrap();
    fs::create_dir_all(path.join("node_modules")).unwrap();
    symlink(
        shared.join("node_modules/left-pad"),
        path.join("node_modules/left-pad"),
    )
    .unwrap();
    symlink(shared.join(".venv"), path.join(".venv")).unwrap();
    symlink(shared.join(".env"), path.join(".env local")).unwrap();
    let links = vec![
        PathBuf::from("node_modules/left-pad"),
        PathBuf::from(".venv"),
        path.join(".env local"), // absolute inside the worktree is accepted too
    ];
    let inside = repo.open_worktree(&path).unwrap();
    (inside, path, links)
}

#[test]
fn excluded_links_are_never_committed() {
    let fx = Fixture::new();
    let (inside, path, links) = linked_worktree(&fx);
    fs::write(path.join("work.txt"), "the agent's work\n").unwrap();
    let commit = inside.commit_all("task", &links).unwrap().unwrap();
    let paths = fx.tree_paths(commit.as_str());
    assert!(paths.contains(&"work.txt".to_owned()), "{paths:?}");
    for link in ["node_modules/left-pad", ".venv", ".env local"] {
        assert!(
            !paths.contains(&link.to_owned()),
            "{link} committed: {paths:?}"
        );
    }
    assert!(path.join(".venv").exists(), "links stay on disk");
}

/// A link that the repository also ignores (`.env`) must not make staging fail: git
/// refuses explicitly named ignored paths.
#[test]
fn excluded_links_that_are_also_ignored_are_fine() {
    let fx = Fixture::new();
    fx.write(".gitignore", ".env\n");
    fx.run(&["add", ".gitignore"]);
    fx.run(&["commit", "-q", "-m", "ignore .env"]);
    let (inside, path, _) = linked_worktree(&fx);
    symlink(fx.env.root().join("shared/.env"), path.join(".env")).unwrap();
    fs::write(path.join("work.txt"), "work\n").unwrap();
    let commit = inside
        .commit_all("task", &[PathBuf::from(".env")])
        .unwrap()
        .unwrap();
    let paths = fx.tree_paths(commit.as_str());
    assert!(paths.contains(&"work.txt".to_owned()), "{paths:?}");
    assert!(!paths.contains(&".env".to_owned()), "{paths:?}");
}

#[test]
fn excluded_links_staged_by_the_agent_are_unstaged() {
    let fx = Fixture::new();
    let (inside, path, links) = linked_worktree(&fx);
    fs::write(path.join("work.txt"), "work\n").unwrap();
    fx.run_in(&path, &["add", "-A"]);
    let staged = fx.run_in(&path, &["diff", "--cached", "--name-only"]);
    assert!(staged.contains(".venv"), "{staged}");

    let commit = inside.commit_all("task", &links).unwrap().unwrap();
    let paths = fx.tree_paths(commit.as_str());
    assert!(paths.contains(&"work.txt".to_owned()));
    assert!(
        !paths
            .iter()
            .any(|p| p == ".venv" || p == ".env local" || p.starts_with("node_modules")),
        "{paths:?}"
    );
    assert!(path.join("node_modules/left-pad").exists());
}

#[test]
fn excluded_links_the_agent_committed_are_removed_from_the_tip() {
    let fx = Fixture::new();
    let (inside, path, links) = linked_worktree(&fx);
    fs::write(path.join("work.txt"), "work\n").unwrap();
    // The agent ran `git add -A && git commit`.
    fx.run_in(&path, &["add", "-A"]);
    fx.run_in(&path, &["commit", "-q", "-m", "agent commit"]);
    let agent_commit = fx.oid("linked");
    assert!(fx.tree_paths("linked").contains(&".venv".to_owned()));

    let commit = inside.commit_all("task", &links).unwrap().unwrap();
    assert_eq!(
        fx.parents(commit.as_str()),
        [agent_commit],
        "the agent's commit is kept"
    );
    let paths = fx.tree_paths(commit.as_str());
    assert!(paths.contains(&"work.txt".to_owned()));
    assert!(
        !paths
            .iter()
            .any(|p| p == ".venv" || p == ".env local" || p.starts_with("node_modules")),
        "{paths:?}"
    );
    assert!(path.join(".venv").exists());
}

#[test]
fn only_links_means_nothing_to_commit() {
    let fx = Fixture::new();
    let (inside, _path, links) = linked_worktree(&fx);
    assert_eq!(inside.commit_all("task", &links).unwrap(), None);
}

#[test]
fn an_excluded_path_outside_the_worktree_is_refused() {
    let fx = Fixture::new();
    let repo = fx.open();
    let error = repo
        .commit_all("x", &[PathBuf::from("/somewhere/else")])
        .unwrap_err();
    assert!(matches!(error, GitError::WorktreePath { .. }), "{error:?}");
}

#[test]
fn a_stale_index_lock_is_retried_then_named() {
    let fx = Fixture::new();
    let repo = fx.open();
    let lock = fx.path().join(".git/index.lock");
    fs::write(&lock, "").unwrap();
    fx.write("a.txt", "a\n");

    let start = Instant::now();
    let error = repo.commit_all("blocked", &[] as &[&str]).unwrap_err();
    let waited = start.elapsed();
    match &error {
        GitError::Locked {
            lock: named,
            attempts,
            command,
            ..
        } => {
            assert_eq!(named, &lock.canonicalize().unwrap());
            assert!(*attempts > 1, "retried: {attempts}");
            assert!(command.contains(" add "), "{command}");
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    assert!(waited >= TEST_LOCK_WAIT, "{waited:?}");
    assert!(
        waited < TEST_LOCK_WAIT + Duration::from_secs(5),
        "bounded: {waited:?}"
    );
    let message = error.to_string();
    assert!(message.contains("index.lock"), "{message}");
    assert!(message.contains("remove the file"), "{message}");
}

#[test]
fn an_index_lock_released_while_waiting_is_fine() {
    let fx = Fixture::new();
    // Patient enough that a slow machine cannot make the test flaky.
    let repo = fx
        .git()
        .lock_wait(Duration::from_secs(10))
        .open(fx.path())
        .unwrap();
    let lock = fx.path().join(".git/index.lock");
    fs::write(&lock, "").unwrap();
    fx.write("a.txt", "a\n");
    let remover = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(60));
        fs::remove_file(lock).unwrap();
    });
    let commit = repo.commit_all("after the lock", &[] as &[&str]).unwrap();
    remover.join().unwrap();
    assert!(commit.is_some());
}

#[test]
fn conflict_markers_are_found_in_files_and_in_commits() {
    let fx = Fixture::new();
    let repo = fx.open();
    fx.write(
        "marked é.txt",
        "a\n<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> task\n",
    );
    fx.write("half.txt", "ok\n>>>>>>> leftover\n");
    fx.write("clean.txt", "a <<<<<<< b\n========\n");
    fx.write("binary.bin", "\0<<<<<<< HEAD\n");
    let paths = [
        "marked é.txt",
        "half.txt",
        "clean.txt",
        "binary.bin",
        "missing.txt",
    ];
    assert_eq!(
        repo.conflict_markers_in(&paths).unwrap(),
        ["marked é.txt", "half.txt"]
    );

    let commit = repo
        .commit_all("with markers", &[] as &[&str])
        .unwrap()
        .unwrap();
    let mut at = repo.conflict_markers_at(&commit, &paths).unwrap();
    at.sort();
    assert_eq!(at, ["half.txt", "marked é.txt"]);
    assert!(
        repo.conflict_markers_at(&commit, &["clean.txt"])
            .unwrap()
            .is_empty()
    );
    assert!(
        repo.conflict_markers_at(&commit, &[] as &[&str])
            .unwrap()
            .is_empty()
    );
}

#[test]
fn a_repair_merge_leaves_markers_and_commit_all_concludes_it() {
    let fx = Fixture::new();
    let base = fx.commit_here(&[("f.txt", Some(BASE_TEXT))], "base");
    let tip = fx.commit_here(&[("f.txt", Some("one\nTIP\nthree\n"))], "landed work");
    let task = fx.commit_on("task", &base, &[("f.txt", Some("one\nTASK\nthree\n"))]);
    let repo = fx.open();

    let path = fx.worktrees_dir().join("repair");
    repo.add_worktree(&path, "task-repair", &tip).unwrap();
    let inside = repo.open_worktree(&path).unwrap();
    let merge = inside
        .merge_in_worktree("task", "weft: repair task 2")
        .unwrap();
    assert_eq!(
        merge,
        WorktreeMerge::Conflicted {
            files: vec!["f.txt".into()]
        }
    );
    assert_eq!(inside.conflict_markers_in(&["f.txt"]).unwrap(), ["f.txt"]);

    // The repair agent resolves the file; weft commits, concluding the merge.
    fs::write(path.join("f.txt"), "one\nTIP and TASK\nthree\n").unwrap();
    let commit = inside
        .commit_all("weft: repair task 2", &[] as &[&str])
        .unwrap()
        .unwrap();
    assert_eq!(fx.parents(commit.as_str()), [tip.clone(), task]);
    assert!(repo.is_ancestor(tip.as_str(), commit.as_str()).unwrap());
    assert!(inside.conflict_markers_in(&["f.txt"]).unwrap().is_empty());

    // A clean merge is committed at once.
    let other = fx.commit_on("other", &base, &[("g.txt", Some("g\n"))]);
    match inside.merge_in_worktree("other", "merge other").unwrap() {
        WorktreeMerge::Clean { commit: merged } => {
            assert_eq!(fx.parents(merged.as_str()), [commit, other]);
        }
        conflicted => panic!("expected a clean merge, got {conflicted:?}"),
    }
}

#[test]
fn commit_all_on_a_detached_worktree_says_nothing_was_staged_and_names_the_new_head() {
    let fx = Fixture::new();
    let repo = fx.open();
    let tip = fx.main();
    let path = fx.worktrees_dir().join("detached");
    repo.add_worktree_detached(&path, &tip).unwrap();
    let inside = repo.open_worktree(&path).unwrap();
    // Nothing changed: no commit, HEAD where it was.
    assert_eq!(inside.commit_all("nothing", &[] as &[&str]).unwrap(), None);
    assert_eq!(
        fx.run_in(&path, &["rev-parse", "HEAD"]).trim(),
        tip.as_str()
    );
    // Only an excluded file changed: still nothing.
    fs::write(path.join("excluded.txt"), "x\n").unwrap();
    assert_eq!(
        inside.commit_all("excluded", &["excluded.txt"]).unwrap(),
        None
    );
    // A change: the commit returned is the worktree's new HEAD, on top of the cut.
    fs::write(path.join("new.txt"), "new\n").unwrap();
    let commit = inside
        .commit_all("work", &["excluded.txt"])
        .unwrap()
        .expect("a commit");
    assert_eq!(
        fx.run_in(&path, &["rev-parse", "HEAD"]).trim(),
        commit.as_str()
    );
    assert_ne!(commit, tip);
    assert_eq!(fx.parents(commit.as_str()), [tip]);
}

#[test]
fn weft_commits_leave_auto_maintenance_to_one_check_when_the_run_ends() {
    let fx = Fixture::new();
    let trace = fx.env.root().join("trace");
    let git = fx.git().env("GIT_TRACE", &trace);
    let repo = git.open(fx.path()).unwrap();
    fx.write("c.txt", "c\n");
    repo.commit_all::<&str>("weft: task 1", &[])
        .unwrap()
        .unwrap();
    let traced = fs::read_to_string(&trace).unwrap();
    assert!(traced.contains("commit"), "{traced}");
    assert!(!traced.contains("maintenance"), "{traced}");
    repo.run_auto_maintenance();
    let traced = fs::read_to_string(&trace).unwrap();
    assert!(traced.contains("maintenance run --auto"), "{traced}");
}
