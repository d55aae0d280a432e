//! Landing without a checkout: merge-tree, commit-tree, compare-and-swap.

use weft_git::{GitError, Landing, Oid, Repo};

use crate::support::{BASE_TEXT, Fixture};

const INTEGRATION: &str = "refs/heads/weft/abcd1234/integration";

/// A repository with `f.txt` and `g.txt` committed and an integration branch at that
/// commit (the run's base). Returns the base.
fn run_setup(fx: &Fixture) -> (Repo, Oid) {
    let base = fx.commit_here(
        &[("f.txt", Some(BASE_TEXT)), ("g.txt", Some("g\n"))],
        "base",
    );
    let repo = fx.open();
    repo.update_ref_cas(INTEGRATION, &base, None).unwrap();
    (repo, base)
}

fn integration(repo: &Repo) -> Oid {
    repo.ref_target(INTEGRATION)
        .unwrap()
        .expect("the integration ref exists")
}

#[test]
fn non_conflicting_branches_land_as_two_parent_merges_without_touching_the_checkout() {
    let fx = Fixture::new();
    let (repo, base) = run_setup(&fx);
    let head_before = fx.main();
    let t1 = fx.commit_on("weft/abcd1234/1-a", &base, &[("a new é.txt", Some("a\n"))]);
    let t2 = fx.commit_on(
        "weft/abcd1234/2-b",
        &base,
        &[("f.txt", Some("one\nTWO\nthree\n")), ("g.txt", None)],
    );

    let first = repo
        .land(
            INTEGRATION,
            "weft/abcd1234/1-a",
            &base,
            "weft: land task 1: a",
        )
        .unwrap();
    let Landing::Landed {
        merge: m1,
        previous,
        task,
    } = first
    else {
        panic!("expected Landed, got {first:?}");
    };
    assert_eq!(previous, base);
    assert_eq!(task, t1);
    assert_eq!(integration(&repo), m1);
    assert_eq!(fx.parents(m1.as_str()), [base.clone(), t1]);

    let second = repo
        .land(
            INTEGRATION,
            "weft/abcd1234/2-b",
            &base,
            "weft: land task 2: b",
        )
        .unwrap();
    let Landing::Landed {
        merge: m2,
        previous,
        ..
    } = second
    else {
        panic!("expected Landed, got {second:?}");
    };
    assert_eq!(previous, m1);
    assert_eq!(integration(&repo), m2);
    assert_eq!(fx.parents(m2.as_str()), [m1, t2]);

    // Both tasks' work is on the integration branch.
    let mut paths = fx.tree_paths(m2.as_str());
    paths.sort();
    assert_eq!(paths, ["README.md", "a new é.txt", "f.txt"]);
    assert_eq!(fx.show(m2.as_str(), "f.txt"), "one\nTWO\nthree\n");
    assert_eq!(
        fx.run(&["log", "-1", "--format=%s|%an <%ae>", m2.as_str()])
            .trim(),
        "weft: land task 2: b|weft <weft@localhost>"
    );

    // The checkout was never touched.
    assert_eq!(fx.main(), head_before);
    assert!(repo.tracked_changes().unwrap().is_empty());
    assert!(!fx.path().join("a new é.txt").exists());

    // A dependent cut from the new tip sees both tasks' files.
    let path = fx.worktrees_dir().join("3-dependent");
    repo.add_worktree(&path, "weft/abcd1234/3-dependent", &m2)
        .unwrap();
    assert!(path.join("a new é.txt").is_file());
    assert!(!path.join("g.txt").exists());
}

#[test]
fn conflicting_branches_are_reported_and_the_ref_does_not_move() {
    let fx = Fixture::new();
    let (repo, base) = run_setup(&fx);
    fx.commit_on("t1", &base, &[("f.txt", Some("one\nFIRST\nthree\n"))]);
    let t2 = fx.commit_on(
        "t2",
        &base,
        &[
            ("f.txt", Some("one\nSECOND\nthree\n")),
            ("g.txt", Some("g changed\n")),
        ],
    );
    let landed = repo.land(INTEGRATION, "t1", &base, "land 1").unwrap();
    assert!(matches!(landed, Landing::Landed { .. }), "{landed:?}");
    let tip = integration(&repo);

    // t2 changed the same line as t1: a content conflict in f.txt (g.txt merges).
    let outcome = repo.land(INTEGRATION, "t2", &base, "land 2").unwrap();
    match &outcome {
        Landing::Conflicted {
            files,
            detail,
            onto,
            task,
        } => {
            assert_eq!(files, &["f.txt"]);
            assert!(detail.contains("CONFLICT (content)"), "{detail}");
            assert!(detail.contains("f.txt"), "{detail}");
            assert_eq!(onto, &tip);
            assert_eq!(task, &t2);
        }
        other => panic!("expected Conflicted, got {other:?}"),
    }
    assert_eq!(integration(&repo), tip, "the integration ref did not move");
    assert_eq!(fx.oid("t2"), t2, "the task branch is kept");
}

#[test]
fn modify_delete_conflicts_and_unusual_paths_are_listed() {
    let fx = Fixture::new();
    let base = fx.commit_here(
        &[
            ("g.txt", Some("g\n")),
            ("dir with space/ünï.txt", Some(BASE_TEXT)),
        ],
        "base",
    );
    let repo = fx.open();
    repo.update_ref_cas(INTEGRATION, &base, None).unwrap();
    fx.commit_on(
        "deletes",
        &base,
        &[
            ("g.txt", None),
            ("dir with space/ünï.txt", Some("one\nA\nthree\n")),
        ],
    );
    fx.commit_on(
        "modifies",
        &base,
        &[
            ("g.txt", Some("changed\n")),
            ("dir with space/ünï.txt", Some("one\nB\nthree\n")),
        ],
    );
    repo.land(INTEGRATION, "deletes", &base, "land").unwrap();
    let tip = integration(&repo);
    let Landing::Conflicted {
        mut files, detail, ..
    } = repo.land(INTEGRATION, "modifies", &base, "land").unwrap()
    else {
        panic!("expected a conflict");
    };
    files.sort();
    assert_eq!(files, ["dir with space/ünï.txt", "g.txt"]);
    assert!(detail.contains("modify/delete"), "{detail}");
    assert_eq!(integration(&repo), tip);
}

#[test]
fn a_task_branch_with_no_commits_lands_as_no_changes() {
    let fx = Fixture::new();
    let (repo, base) = run_setup(&fx);
    repo.create_branch("idle", &base).unwrap();
    let outcome = repo.land(INTEGRATION, "idle", &base, "land").unwrap();
    assert_eq!(
        outcome,
        Landing::NoChanges {
            previous: base.clone()
        }
    );
    assert_eq!(integration(&repo), base);
}

#[test]
fn a_rewritten_task_branch_is_refused() {
    let fx = Fixture::new();
    let (repo, base) = run_setup(&fx);
    // The task was cut from `cut`, then rebased onto `base`, dropping `cut`.
    let cut = fx.commit_on("landed-before", &base, &[("x.txt", Some("x\n"))]);
    fx.commit_on("task", &cut, &[("y.txt", Some("y\n"))]);
    fx.run(&[
        "rebase",
        "-q",
        "--onto",
        base.as_str(),
        cut.as_str(),
        "task",
    ]);
    fx.run(&["checkout", "-q", "main"]);
    assert!(!repo.is_ancestor(cut.as_str(), "task").unwrap());

    let outcome = repo.land(INTEGRATION, "task", &cut, "land").unwrap();
    match &outcome {
        Landing::Rewritten { reason } => {
            assert!(reason.contains(cut.short()), "{reason}");
            assert!(reason.contains("rewritten"), "{reason}");
        }
        other => panic!("expected Rewritten, got {other:?}"),
    }
    assert_eq!(integration(&repo), base);

    // An amended single commit is refused too.
    let amended_cut = fx.commit_on("amend-me", &base, &[("z.txt", Some("z\n"))]);
    fx.run(&["checkout", "-q", "amend-me"]);
    fx.run(&["commit", "-q", "--amend", "-m", "amended"]);
    fx.run(&["checkout", "-q", "main"]);
    let outcome = repo
        .land(INTEGRATION, "amend-me", &amended_cut, "land")
        .unwrap();
    assert!(matches!(outcome, Landing::Rewritten { .. }), "{outcome:?}");
}

#[test]
fn landing_twice_is_harmless() {
    let fx = Fixture::new();
    let (repo, base) = run_setup(&fx);
    fx.commit_on("task", &base, &[("t.txt", Some("t\n"))]);
    let Landing::Landed { merge, .. } = repo.land(INTEGRATION, "task", &base, "land").unwrap()
    else {
        panic!("expected Landed");
    };
    // A crash after the ref moved but before the engine wrote it down: land again.
    let again = repo.land(INTEGRATION, "task", &base, "land").unwrap();
    assert!(
        matches!(&again, Landing::AlreadyIntegrated { previous, .. } if previous == &merge),
        "{again:?}"
    );
    assert_eq!(integration(&repo), merge);
}

#[test]
fn a_ref_that_moved_meanwhile_is_never_moved() {
    let fx = Fixture::new();
    let (repo, base) = run_setup(&fx);
    fx.commit_on("task", &base, &[("t.txt", Some("t\n"))]);
    let intruder = fx.commit_on("intruder", &base, &[("i.txt", Some("i\n"))]);

    // The engine read the tip (base) and computed the merge; meanwhile something else
    // moved the ref.
    repo.update_ref_cas(INTEGRATION, &intruder, Some(&base))
        .unwrap();
    let error = repo
        .land_onto(INTEGRATION, &base, "task", &base, "land")
        .unwrap_err();
    match &error {
        GitError::RefMoved {
            reference,
            expected,
            found,
            ..
        } => {
            assert_eq!(reference, INTEGRATION);
            assert_eq!(expected.as_ref(), Some(&base));
            assert_eq!(found.as_ref(), Some(&intruder));
        }
        other => panic!("expected RefMoved, got {other:?}"),
    }
    assert_eq!(
        integration(&repo),
        intruder,
        "left where the other writer put it"
    );

    // Against the tip that is really there, it lands.
    let outcome = repo
        .land_onto(INTEGRATION, &intruder, "task", &base, "land")
        .unwrap();
    assert!(
        matches!(&outcome, Landing::Landed { previous, .. } if previous == &intruder),
        "{outcome:?}"
    );
}

#[test]
fn bad_refs_are_named() {
    let fx = Fixture::new();
    let (repo, base) = run_setup(&fx);
    let error = repo
        .land("weft/abcd1234/integration", "main", &base, "x")
        .unwrap_err();
    assert!(matches!(error, GitError::InvalidName { .. }), "{error:?}");

    let error = repo
        .land("refs/heads/weft/none/integration", "main", &base, "x")
        .unwrap_err();
    assert!(
        matches!(&error, GitError::UnknownRevision { rev, .. } if rev == "refs/heads/weft/none/integration"),
        "{error:?}"
    );
    let error = repo.land(INTEGRATION, "no-task", &base, "x").unwrap_err();
    assert!(
        matches!(&error, GitError::UnknownRevision { rev, .. } if rev == "no-task"),
        "{error:?}"
    );
}

#[test]
fn a_landing_can_be_rolled_back_when_another_repository_of_the_group_conflicts() {
    // Two repositories of a multi-repo group; the task lands in the first and conflicts
    // in the second, so the engine moves the first back with the same compare-and-swap.
    let first = Fixture::new();
    let second = Fixture::new();
    let (repo_a, base_a) = run_setup(&first);
    let (repo_b, base_b) = run_setup(&second);
    first.commit_on("task", &base_a, &[("a.txt", Some("a\n"))]);
    second.commit_on("other", &base_b, &[("f.txt", Some("one\nOTHER\nthree\n"))]);
    second.commit_on("task", &base_b, &[("f.txt", Some("one\nTASK\nthree\n"))]);
    repo_b
        .land(INTEGRATION, "other", &base_b, "land other")
        .unwrap();
    let tip_b = integration(&repo_b);

    let Landing::Landed {
        merge, previous, ..
    } = repo_a.land(INTEGRATION, "task", &base_a, "land").unwrap()
    else {
        panic!("expected Landed in the first repository");
    };
    let in_b = repo_b.land(INTEGRATION, "task", &base_b, "land").unwrap();
    assert!(matches!(in_b, Landing::Conflicted { .. }), "{in_b:?}");
    repo_a
        .update_ref_cas(INTEGRATION, &previous, Some(&merge))
        .unwrap();
    assert_eq!(integration(&repo_a), base_a);
    assert_eq!(integration(&repo_b), tip_b);
}
