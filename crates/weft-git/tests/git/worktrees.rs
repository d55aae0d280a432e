//! Worktrees: creation (paths with spaces and non-ASCII, serialized, submodules), listing,
//! removal, folders deleted by hand, locks.

use std::sync::Arc;

use fs_err as fs;
use weft_git::{GitError, Head};

use crate::support::Fixture;

#[test]
fn add_worktree_creates_the_branch_and_checks_it_out_at_a_path_with_spaces_and_non_ascii() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    let path = fx.worktrees_dir().join("run 1/01-café ünïcode");
    let worktree = repo
        .add_worktree(&path, "weft/abcd1234/1-cafe", &base)
        .unwrap();
    assert_eq!(worktree.path, path.canonicalize().unwrap());
    assert_eq!(worktree.branch.as_deref(), Some("weft/abcd1234/1-cafe"));
    assert_eq!(worktree.head, base);
    assert!(path.join("README.md").is_file());

    let inside = repo.open_worktree(&path).unwrap();
    assert_eq!(inside.root(), worktree.path);
    assert_eq!(inside.common_dir(), repo.common_dir());
    assert_ne!(inside.git_dir(), repo.git_dir());
    assert_eq!(
        inside.head().unwrap(),
        Head::Branch {
            name: "weft/abcd1234/1-cafe".into(),
            commit: base.clone()
        }
    );

    let list = repo.list_worktrees().unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].path, repo.root());
    assert_eq!(list[0].branch.as_deref(), Some("main"));
    assert_eq!(list[1].path, worktree.path);
    assert_eq!(list[1].branch.as_deref(), Some("weft/abcd1234/1-cafe"));
    assert_eq!(list[1].head.as_ref(), Some(&base));
    assert!(!list[1].is_missing());

    // Work done there is committed on its branch, and visible from the main repository.
    fs::write(path.join("ñ new file.txt"), "hello\n").unwrap();
    let commit = inside
        .commit_all("task 1", &[] as &[&str])
        .unwrap()
        .expect("a commit");
    assert_eq!(
        repo.rev_parse("weft/abcd1234/1-cafe").unwrap(),
        Some(commit)
    );
    assert!(
        fx.tree_paths("weft/abcd1234/1-cafe")
            .contains(&"ñ new file.txt".to_owned())
    );
}

#[test]
fn a_relative_path_is_taken_from_the_repository_root() {
    let fx = Fixture::new();
    let repo = fx.open();
    let worktree = repo
        .add_worktree(
            ".weft/worktrees/abcd1234/1-task",
            "weft/abcd1234/1-task",
            &fx.main(),
        )
        .unwrap();
    assert_eq!(
        worktree.path,
        repo.root().join(".weft/worktrees/abcd1234/1-task")
    );
}

#[test]
fn add_worktree_refuses_an_existing_branch_and_creates_nothing() {
    let fx = Fixture::new();
    let repo = fx.open();
    repo.create_branch("taken", &fx.main()).unwrap();
    let path = fx.worktrees_dir().join("taken");
    let error = repo.add_worktree(&path, "taken", &fx.main()).unwrap_err();
    assert!(
        matches!(&error, GitError::BranchExists { branch, .. } if branch == "taken"),
        "{error:?}"
    );
    assert!(error.to_string().contains("taken"));
    assert!(!path.exists());
    assert_eq!(repo.list_worktrees().unwrap().len(), 1);
}

#[test]
fn add_worktree_refuses_a_non_empty_folder_and_leaves_no_branch() {
    let fx = Fixture::new();
    let repo = fx.open();
    let path = fx.worktrees_dir().join("occupied");
    fs::create_dir_all(&path).unwrap();
    fs::write(path.join("mine.txt"), "mine\n").unwrap();
    let error = repo.add_worktree(&path, "fresh", &fx.main()).unwrap_err();
    assert!(matches!(error, GitError::WorktreePath { .. }), "{error:?}");
    assert!(error.to_string().contains("occupied"), "{error}");
    assert!(!repo.branch_exists("fresh").unwrap());
    assert_eq!(fs::read_to_string(path.join("mine.txt")).unwrap(), "mine\n");

    // An empty folder is fine.
    let empty = fx.worktrees_dir().join("empty");
    fs::create_dir_all(&empty).unwrap();
    repo.add_worktree(&empty, "fresh", &fx.main()).unwrap();
}

#[test]
fn a_failed_worktree_add_deletes_the_branch_it_created() {
    let fx = Fixture::new();
    let repo = fx.open();
    // Make git fail after weft created the branch: the folder git keeps worktrees'
    // administrative files in is a file.
    fs::write(fx.path().join(".git/worktrees"), "in the way").unwrap();
    let error = repo
        .add_worktree(fx.worktrees_dir().join("wt"), "rolled-back", &fx.main())
        .unwrap_err();
    assert!(matches!(error, GitError::Command { .. }), "{error:?}");
    assert!(error.to_string().contains("worktree add"), "{error}");
    assert!(!repo.branch_exists("rolled-back").unwrap());
}

#[test]
fn a_worktree_folder_deleted_by_hand_is_detected_pruned_and_can_be_recreated() {
    let fx = Fixture::new();
    let repo = fx.open();
    let path = fx.worktrees_dir().join("deleted by hand é");
    let worktree = repo.add_worktree(&path, "task-a", &fx.main()).unwrap();
    fs::remove_dir_all(&path).unwrap();

    let entry = repo
        .find_worktree(&path)
        .unwrap()
        .expect("still registered");
    assert!(entry.is_missing());
    assert!(entry.prunable.is_some(), "{entry:?}");

    let pruned = repo.prune_worktrees().unwrap();
    assert_eq!(pruned, std::slice::from_ref(&worktree.path));
    assert!(repo.find_worktree(&path).unwrap().is_none());
    assert!(repo.prune_worktrees().unwrap().is_empty());

    // The branch survives; it can be deleted, and the path reused.
    repo.delete_branch("task-a", true).unwrap();
    repo.add_worktree(&path, "task-a", &fx.main()).unwrap();
    assert!(path.join("README.md").is_file());
}

#[test]
fn adding_at_a_path_whose_stale_registration_was_not_pruned_still_works() {
    let fx = Fixture::new();
    let repo = fx.open();
    let path = fx.worktrees_dir().join("again");
    repo.add_worktree(&path, "first", &fx.main()).unwrap();
    fs::remove_dir_all(&path).unwrap();
    // No prune: git would say "missing but already registered worktree".
    repo.add_worktree(&path, "second", &fx.main()).unwrap();
    let entry = repo.find_worktree(&path).unwrap().unwrap();
    assert_eq!(entry.branch.as_deref(), Some("second"));
    assert!(!entry.is_missing());
}

#[test]
fn remove_worktree_force_discards_changes_and_is_idempotent() {
    let fx = Fixture::new();
    let repo = fx.open();
    let path = fx.worktrees_dir().join("to remove");
    repo.add_worktree(&path, "to-remove", &fx.main()).unwrap();
    fs::write(path.join("README.md"), "changed\n").unwrap();
    fs::write(path.join("untracked.txt"), "u\n").unwrap();

    let error = repo.remove_worktree(&path, false).unwrap_err();
    assert!(matches!(error, GitError::Command { .. }), "{error:?}");
    assert!(path.exists(), "kept without force");

    repo.remove_worktree(&path, true).unwrap();
    assert!(!path.exists());
    assert!(repo.find_worktree(&path).unwrap().is_none());
    assert!(
        repo.branch_exists("to-remove").unwrap(),
        "the branch is kept"
    );
    repo.remove_worktree(&path, true).unwrap();
}

/// A `git worktree remove` killed after it deleted the folder's `.git` file (and some of
/// its files) but before the worktree's record: git refuses to remove it again; a forced
/// removal finishes it, one without force still refuses.
#[test]
fn a_forced_removal_finishes_one_that_was_interrupted() {
    let fx = Fixture::new();
    let repo = fx.open();
    let path = fx.worktrees_dir().join("half removed");
    repo.add_worktree(&path, "half-removed", &fx.main())
        .unwrap();
    fs::write(path.join("left.txt"), "left behind\n").unwrap();
    fs::remove_file(path.join(".git")).unwrap();
    fs::remove_file(path.join("README.md")).unwrap();

    let error = repo.remove_worktree(&path, false).unwrap_err();
    assert!(matches!(error, GitError::Command { .. }), "{error:?}");
    assert!(path.join("left.txt").exists(), "kept without force");

    repo.remove_worktree(&path, true).unwrap();
    assert!(!path.exists());
    assert!(repo.find_worktree(&path).unwrap().is_none());
    assert!(
        repo.branch_exists("half-removed").unwrap(),
        "the branch is kept"
    );
    // The repository agrees: nothing of it is left to prune.
    let listed = repo.list_worktrees().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    repo.remove_worktree(&path, true).unwrap();
}

#[test]
fn remove_worktree_of_a_folder_the_agent_deleted() {
    let fx = Fixture::new();
    let repo = fx.open();
    let path = fx.worktrees_dir().join("agent deleted");
    repo.add_worktree(&path, "agent-deleted", &fx.main())
        .unwrap();
    fs::remove_dir_all(&path).unwrap();
    repo.remove_worktree(&path, false).unwrap();
    assert!(repo.find_worktree(&path).unwrap().is_none());
}

#[test]
fn remove_worktree_refuses_a_folder_that_is_not_a_worktree() {
    let fx = Fixture::new();
    let repo = fx.open();
    let plain = fx.worktrees_dir().join("plain");
    fs::create_dir_all(&plain).unwrap();
    let error = repo.remove_worktree(&plain, true).unwrap_err();
    assert!(matches!(error, GitError::WorktreePath { .. }), "{error:?}");
    assert!(plain.exists());
}

#[test]
fn a_locked_worktree_is_waited_for_then_named() {
    let fx = Fixture::new();
    let repo = fx.open();
    let path = fx.worktrees_dir().join("locked one");
    repo.add_worktree(&path, "locked-one", &fx.main()).unwrap();
    fx.run(&[
        "worktree",
        "lock",
        "--reason",
        "in use",
        &path.to_string_lossy(),
    ]);
    let entry = repo.find_worktree(&path).unwrap().unwrap();
    assert_eq!(entry.locked.as_deref(), Some("in use"));

    let error = repo.remove_worktree(&path, true).unwrap_err();
    match &error {
        GitError::Locked { lock, attempts, .. } => {
            assert!(lock.ends_with("locked"), "{lock:?}");
            assert!(lock.exists(), "{lock:?}");
            assert!(*attempts > 1);
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    assert!(path.exists());

    // Unlocked while weft waits: the removal goes through. (Patient enough that a slow
    // machine cannot make the test flaky.)
    let repo = fx
        .git()
        .lock_wait(std::time::Duration::from_secs(10))
        .open(fx.path())
        .unwrap();
    let unlock_path = path.clone();
    let fx = Arc::new(fx);
    let fx2 = Arc::clone(&fx);
    let unlocker = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(80));
        fx2.run(&["worktree", "unlock", &unlock_path.to_string_lossy()]);
    });
    repo.remove_worktree(&path, true).unwrap();
    unlocker.join().unwrap();
    assert!(!path.exists());
}

#[test]
fn a_stale_index_lock_in_the_main_checkout_does_not_stop_worktree_creation() {
    let fx = Fixture::new();
    let repo = fx.open();
    fs::write(fx.path().join(".git/index.lock"), "").unwrap();
    let path = fx.worktrees_dir().join("despite the lock");
    repo.add_worktree(&path, "despite", &fx.main()).unwrap();
    assert!(path.join("README.md").is_file());
}

#[test]
fn concurrent_worktree_creation_is_serialized() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    let dir = fx.worktrees_dir();
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..6)
            .map(|i| {
                let repo = repo.clone();
                let base = base.clone();
                let path = dir.join(format!("parallel {i}"));
                scope.spawn(move || repo.add_worktree(&path, &format!("parallel-{i}"), &base))
            })
            .collect();
        for handle in handles {
            handle.join().unwrap().unwrap();
        }
    });
    assert_eq!(repo.list_worktrees().unwrap().len(), 7);
}

#[test]
fn a_repository_with_a_submodule_still_gets_usable_worktrees() {
    let fx = Fixture::new();
    let other = fx.other_repo("library");
    fx.run(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        &other.path.to_string_lossy(),
        "vendor/library",
    ]);
    fx.run(&["commit", "-q", "-m", "add a submodule"]);
    let repo = fx.open();
    assert!(repo.has_submodules().unwrap());

    let path = fx.worktrees_dir().join("with submodule");
    repo.add_worktree(&path, "with-submodule", &fx.main())
        .unwrap();
    let inside = repo.open_worktree(&path).unwrap();
    assert!(path.join(".gitmodules").is_file());
    assert!(
        path.join("vendor/library").is_dir(),
        "an empty submodule folder"
    );
    assert!(inside.tracked_changes().unwrap().is_empty());

    fs::write(path.join("feature.txt"), "f\n").unwrap();
    let commit = inside
        .commit_all("task work", &[] as &[&str])
        .unwrap()
        .unwrap();
    let paths = fx.tree_paths(commit.as_str());
    assert!(paths.contains(&"feature.txt".to_owned()));
    assert!(
        paths.contains(&"vendor/library".to_owned()),
        "the submodule is kept: {paths:?}"
    );
}

#[test]
fn a_detached_worktree_can_be_moved_to_a_new_tip() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    let path = fx.worktrees_dir().join("integration");
    let worktree = repo.add_worktree_detached(&path, &base).unwrap();
    assert_eq!(worktree.branch, None);
    let inside = repo.open_worktree(&path).unwrap();
    assert_eq!(inside.head().unwrap(), Head::Detached { commit: base });

    let next = fx.commit_here(&[("landed.txt", Some("l\n"))], "landed");
    fs::write(path.join("README.md"), "scribbled by an ops task\n").unwrap();
    inside.force_checkout_detached(&next).unwrap();
    assert_eq!(inside.head().unwrap(), Head::Detached { commit: next });
    assert!(path.join("landed.txt").is_file());
    assert!(inside.tracked_changes().unwrap().is_empty());
}
