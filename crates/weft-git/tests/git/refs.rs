//! Revisions, branches, compare-and-swap ref updates, ancestry, lock files on refs.

use std::time::Instant;

use fs_err as fs;
use weft_git::{GitError, Oid, branch_ref};

use crate::support::{Fixture, TEST_LOCK_WAIT};

#[test]
fn rev_parse_resolves_commits_and_reports_missing_ones() {
    let fx = Fixture::new();
    let repo = fx.open();
    assert_eq!(repo.rev_parse("main").unwrap(), Some(fx.main()));
    assert_eq!(repo.rev_parse("HEAD").unwrap(), Some(fx.main()));
    assert_eq!(repo.rev_parse("refs/heads/main").unwrap(), Some(fx.main()));
    assert_eq!(repo.rev_parse("no-such-thing").unwrap(), None);
    assert_eq!(repo.rev_parse("--help").unwrap(), None, "never an option");
    // An annotated tag peels to its commit.
    fx.run(&["tag", "-a", "-m", "v1", "v1"]);
    assert_eq!(repo.rev_parse("v1").unwrap(), Some(fx.main()));
    let error = repo.resolve("nope").unwrap_err();
    assert!(
        matches!(&error, GitError::UnknownRevision { rev, .. } if rev == "nope"),
        "{error:?}"
    );
}

#[test]
fn create_branch_refuses_an_existing_branch_by_name() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    repo.create_branch("weft/abc/1-task", &base).unwrap();
    assert_eq!(
        repo.rev_parse("weft/abc/1-task").unwrap(),
        Some(base.clone())
    );
    assert!(repo.branch_exists("weft/abc/1-task").unwrap());

    let other = fx.commit_here(&[("x.txt", Some("x\n"))], "another");
    let error = repo.create_branch("weft/abc/1-task", &other).unwrap_err();
    match &error {
        GitError::BranchExists { branch, at, .. } => {
            assert_eq!(branch, "weft/abc/1-task");
            assert_eq!(at, &base);
        }
        other => panic!("expected BranchExists, got {other:?}"),
    }
    assert!(error.to_string().contains("weft/abc/1-task"), "{error}");
    assert_eq!(
        repo.rev_parse("weft/abc/1-task").unwrap(),
        Some(base),
        "the existing branch did not move"
    );
}

#[test]
fn create_branch_refuses_bad_names() {
    let fx = Fixture::new();
    let repo = fx.open();
    for name in ["-x", "", "refs/heads/x"] {
        let error = repo.create_branch(name, &fx.main()).unwrap_err();
        assert!(
            matches!(error, GitError::InvalidName { .. }),
            "{name}: {error:?}"
        );
    }
    let error = repo.create_branch("a..b", &fx.main()).unwrap_err();
    assert!(matches!(error, GitError::Command { .. }), "{error:?}");
}

#[test]
fn delete_branch_respects_force_and_reports_missing_branches() {
    let fx = Fixture::new();
    let repo = fx.open();
    let tip = fx.commit_on("unmerged", &fx.main(), &[("u.txt", Some("u\n"))]);
    assert_ne!(tip, fx.main());
    let error = repo.delete_branch("unmerged", false).unwrap_err();
    assert!(matches!(error, GitError::Command { .. }), "{error:?}");
    assert!(repo.branch_exists("unmerged").unwrap());
    repo.delete_branch("unmerged", true).unwrap();
    assert!(!repo.branch_exists("unmerged").unwrap());

    repo.create_branch("merged", &fx.main()).unwrap();
    repo.delete_branch("merged", false).unwrap();

    let error = repo.delete_branch("unmerged", true).unwrap_err();
    assert!(
        matches!(&error, GitError::NoSuchBranch { branch, .. } if branch == "unmerged"),
        "{error:?}"
    );
}

#[test]
fn update_ref_cas_moves_only_from_the_expected_value() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    let next = fx.commit_here(&[("n.txt", Some("n\n"))], "next");
    let reference = "refs/heads/weft/run/integration";

    repo.update_ref_cas(reference, &base, None).unwrap();
    assert_eq!(repo.ref_target(reference).unwrap(), Some(base.clone()));

    // Creating again (expecting no ref) is refused.
    let error = repo.update_ref_cas(reference, &next, None).unwrap_err();
    match &error {
        GitError::RefMoved {
            reference: r,
            expected,
            found,
            ..
        } => {
            assert_eq!(r, reference);
            assert_eq!(expected, &None);
            assert_eq!(found, &Some(base.clone()));
        }
        other => panic!("expected RefMoved, got {other:?}"),
    }

    // A wrong expected value is refused, and the ref stays.
    let error = repo
        .update_ref_cas(reference, &base, Some(&next))
        .unwrap_err();
    match &error {
        GitError::RefMoved {
            expected, found, ..
        } => {
            assert_eq!(expected, &Some(next.clone()));
            assert_eq!(found, &Some(base.clone()));
        }
        other => panic!("expected RefMoved, got {other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.contains(reference) && message.contains("moved"),
        "{message}"
    );
    assert_eq!(repo.ref_target(reference).unwrap(), Some(base.clone()));

    // The right expected value moves it.
    repo.update_ref_cas(reference, &next, Some(&base)).unwrap();
    assert_eq!(repo.ref_target(reference).unwrap(), Some(next.clone()));

    // Delete, compare-and-swap too.
    let error = repo.delete_ref_cas(reference, &base).unwrap_err();
    assert!(matches!(error, GitError::RefMoved { .. }), "{error:?}");
    repo.delete_ref_cas(reference, &next).unwrap();
    assert_eq!(repo.ref_target(reference).unwrap(), None);
    let error = repo.delete_ref_cas(reference, &next).unwrap_err();
    assert!(
        matches!(&error, GitError::RefMoved { found: None, .. }),
        "{error:?}"
    );
}

#[test]
fn update_ref_cas_needs_a_full_ref_name() {
    let fx = Fixture::new();
    let repo = fx.open();
    let error = repo
        .update_ref_cas("weft/run/integration", &fx.main(), None)
        .unwrap_err();
    assert!(matches!(error, GitError::InvalidName { .. }), "{error:?}");
    assert!(
        !fx.path().join(".git/weft").exists(),
        "no pseudo-ref written"
    );
}

#[test]
fn a_stale_ref_lock_is_retried_then_named() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    let next = fx.commit_here(&[("n.txt", Some("n\n"))], "next");
    repo.create_branch("locked", &base).unwrap();
    let lock = fx.path().join(".git/refs/heads/locked.lock");
    fs::write(&lock, "").unwrap();

    let start = Instant::now();
    let error = repo
        .update_ref_cas(&branch_ref("locked"), &next, Some(&base))
        .unwrap_err();
    let waited = start.elapsed();
    match &error {
        GitError::Locked {
            lock: named,
            attempts,
            ..
        } => {
            assert_eq!(named, &lock.canonicalize().unwrap());
            assert!(*attempts > 1, "retried: {attempts}");
        }
        other => panic!("expected Locked, got {other:?}"),
    }
    assert!(waited >= TEST_LOCK_WAIT, "{waited:?}");
    assert!(error.to_string().contains("locked.lock"), "{error}");
    assert!(lock.exists(), "a lock on the user's ref was removed");
    assert_eq!(repo.rev_parse("locked").unwrap(), Some(base));
}

#[test]
fn is_ancestor_answers_both_ways() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    let tip = fx.commit_here(&[("t.txt", Some("t\n"))], "tip");
    assert!(repo.is_ancestor(base.as_str(), tip.as_str()).unwrap());
    assert!(!repo.is_ancestor(tip.as_str(), base.as_str()).unwrap());
    assert!(repo.is_ancestor("main", "main").unwrap());
    assert!(repo.is_ancestor("-x", "main").is_err());
}

#[test]
fn oids_parse_and_serialize_as_strings() {
    let text = "0123456789abcdef0123456789abcdef01234567";
    let oid: Oid = text.parse().unwrap();
    assert_eq!(oid.as_str(), text);
    assert_eq!(oid.short(), "0123456789ab");
    assert_eq!(
        Oid::parse(&text.to_uppercase()).unwrap(),
        oid,
        "stored lowercase"
    );
    assert!(Oid::parse("xyz").is_none());
    assert!(Oid::parse(&"a".repeat(64)).is_some());
    assert!(Oid::parse(&"a".repeat(41)).is_none());
    let json = serde_json::to_string(&oid).unwrap();
    assert_eq!(json, format!("\"{text}\""));
    assert_eq!(serde_json::from_str::<Oid>(&json).unwrap(), oid);
    assert!(serde_json::from_str::<Oid>("\"nope\"").is_err());
}

/// A SIGKILL of the engine can kill a git in the middle of a ref update, leaving its
/// `.lock`: on weft's own refs such a lock (older than the patience) is removed and the
/// update goes on; on the user's refs it is only named (the test above).
#[test]
fn a_stale_lock_a_killed_git_left_on_a_weft_ref_is_removed_and_the_update_goes_on() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    let next = fx.commit_here(&[("n.txt", Some("n\n"))], "next");
    repo.create_branch("weft/run1/1-task", &base).unwrap();
    let lock = fx.path().join(".git/refs/heads/weft/run1/1-task.lock");
    fs::write(&lock, "").unwrap();

    repo.update_ref_cas(&branch_ref("weft/run1/1-task"), &next, Some(&base))
        .unwrap();
    assert_eq!(repo.rev_parse("weft/run1/1-task").unwrap(), Some(next));
    assert!(!lock.exists());

    // A lock on one of the user's refs is never removed (the test above).
}

/// A `packed-refs.lock` a killed git left (deleting a packed branch rewrites
/// `packed-refs`) is removed once no process holds it and it outlived the patience, and
/// the delete goes on; one a live process holds open is kept and named.
#[test]
fn a_stale_packed_refs_lock_is_removed_but_one_a_process_holds_open_is_named() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    repo.create_branch("weft/run1/1-task", &base).unwrap();
    repo.create_branch("weft/run1/2-task", &base).unwrap();
    fx.run(&["pack-refs", "--all"]);
    let lock = fx.path().join(".git/packed-refs.lock");

    // Held open by a live process (this test): kept, and the delete fails naming it.
    let held = fs::File::create(&lock).unwrap();
    let error = repo.delete_branch("weft/run1/1-task", true).unwrap_err();
    assert!(
        matches!(&error, GitError::Locked { lock: named, .. } if named.ends_with("packed-refs.lock")),
        "{error:?}"
    );
    assert!(lock.exists(), "a lock a live process holds was removed");
    drop(held);

    // Left behind by a killed git: removed, and the delete goes on.
    repo.delete_branch("weft/run1/1-task", true).unwrap();
    assert!(!lock.exists());
    assert_eq!(repo.rev_parse("refs/heads/weft/run1/1-task").unwrap(), None);
    assert_eq!(
        repo.rev_parse("refs/heads/weft/run1/2-task").unwrap(),
        Some(base)
    );
}

/// A `git branch -D` killed as it deletes a packed branch leaves two locks, its ref's and
/// `packed-refs.lock`: both are removed (each once) and the delete goes on.
#[test]
fn both_locks_a_killed_branch_delete_left_are_removed_and_the_delete_goes_on() {
    let fx = Fixture::new();
    let repo = fx.open();
    let base = fx.main();
    repo.create_branch("weft/run1/1-task", &base).unwrap();
    fx.run(&["pack-refs", "--all"]);
    let ref_lock = fx.path().join(".git/refs/heads/weft/run1/1-task.lock");
    let packed_lock = fx.path().join(".git/packed-refs.lock");
    fs::create_dir_all(ref_lock.parent().unwrap()).unwrap();
    fs::write(&ref_lock, "").unwrap();
    fs::write(&packed_lock, "").unwrap();

    repo.delete_branch("weft/run1/1-task", true).unwrap();
    assert!(!ref_lock.exists() && !packed_lock.exists());
    assert_eq!(repo.rev_parse("refs/heads/weft/run1/1-task").unwrap(), None);
}
