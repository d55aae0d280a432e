//! Rebuilding an integration branch without a landing: merge-tree onto the tip before
//! it, compare-and-swap, no checkout.

use weft_git::{Landing, Oid, Rebuild, Repo};

use crate::support::{BASE_TEXT, Fixture};

const INTEGRATION: &str = "refs/heads/weft/abcd1234/integration";

fn tip(repo: &Repo) -> Oid {
    repo.ref_target(INTEGRATION).unwrap().unwrap()
}

/// Land a branch cut from the current integration tip that writes `files`.
fn land(fx: &Fixture, repo: &Repo, name: &str, files: &[(&str, Option<&str>)]) -> Oid {
    let cut = tip(repo);
    fx.commit_on(name, &cut, files);
    match repo
        .land(INTEGRATION, name, &cut, &format!("weft: land task {name}"))
        .unwrap()
    {
        Landing::Landed { merge, .. } => merge,
        other => panic!("expected a landing, got {other:?}"),
    }
}

/// base; A adds a.txt; B (cut after A) adds b.txt; C (after B) edits a.txt.
fn three_landings(fx: &Fixture) -> (Repo, Oid, [Oid; 3]) {
    let base = fx.commit_here(&[("f.txt", Some(BASE_TEXT))], "base");
    let repo = fx.open();
    repo.update_ref_cas(INTEGRATION, &base, None).unwrap();
    let a = land(fx, &repo, "a", &[("a.txt", Some("a\n"))]);
    let b = land(fx, &repo, "b", &[("b.txt", Some("b\n"))]);
    let c = land(fx, &repo, "c", &[("a.txt", Some("a, edited by c\n"))]);
    (repo, base, [a, b, c])
}

#[test]
fn a_landing_and_its_dependent_are_taken_out_and_the_others_reapplied() {
    let fx = Fixture::new();
    let (repo, base, [a, b, c]) = three_landings(&fx);
    let checkout = fx.run(&["status", "--porcelain"]);
    let outcome = repo
        .rebuild_without(INTEGRATION, &[a.clone(), c.clone()])
        .unwrap();
    let Rebuild::Rebuilt {
        old_tip,
        new_tip,
        base: from,
        reapplied,
    } = outcome
    else {
        panic!("expected a rebuild, got {outcome:?}");
    };
    assert_eq!(old_tip, c);
    assert_eq!(from, base);
    assert_eq!(tip(&repo), new_tip);
    assert_eq!(reapplied.len(), 1);
    assert_eq!(reapplied[0].0, b);
    let mut paths = fx.tree_paths(new_tip.as_str());
    paths.sort();
    assert_eq!(paths, ["README.md", "b.txt", "f.txt"]);
    assert!(
        !repo.is_ancestor(a.as_str(), new_tip.as_str()).unwrap(),
        "the dropped landing is still reachable (through b's branch, cut after it)"
    );
    assert_eq!(
        fx.run(&["log", "-1", "--format=%s", new_tip.as_str()])
            .trim(),
        "weft: land task b"
    );
    assert_eq!(
        fx.run(&["status", "--porcelain"]),
        checkout,
        "a checkout changed"
    );

    // Again: the landings are gone already.
    let again = repo
        .rebuild_without(INTEGRATION, std::slice::from_ref(&a))
        .unwrap();
    assert_eq!(again, Rebuild::NotOnBranch { commits: vec![a] });
    assert_eq!(tip(&repo), new_tip);
}

#[test]
fn a_landing_that_no_longer_applies_is_reported_and_nothing_moves() {
    let fx = Fixture::new();
    let (repo, _, [a, _, c]) = three_landings(&fx);
    let outcome = repo.rebuild_without(INTEGRATION, &[a]).unwrap();
    match outcome {
        Rebuild::NoLongerApplies {
            commit,
            subject,
            files,
        } => {
            assert_eq!(commit, c);
            assert_eq!(subject, "weft: land task c");
            assert_eq!(files, ["a.txt"]);
        }
        other => panic!("expected NoLongerApplies, got {other:?}"),
    }
    assert_eq!(tip(&repo), c, "the ref moved");
}

#[test]
fn a_commit_not_on_the_branch_is_refused_before_anything_is_written() {
    let fx = Fixture::new();
    let (repo, _, [_, b, _]) = three_landings(&fx);
    let stranger = fx.commit_on("stranger", &b, &[("s.txt", Some("s\n"))]);
    let outcome = repo
        .rebuild_without(INTEGRATION, std::slice::from_ref(&stranger))
        .unwrap();
    assert_eq!(
        outcome,
        Rebuild::NotOnBranch {
            commits: vec![stranger]
        }
    );
}
