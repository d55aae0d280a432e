//! Notes under a notes ref, and commits read in bulk: what weft's evidence is made of.

use weft_git::{Landing, Oid, Rebuild, Repo};

use crate::support::{BASE_TEXT, Fixture};

const INTEGRATION: &str = "refs/heads/weft/abcd1234/integration";
const NOTES: &str = "refs/notes/weft";

fn land(fx: &Fixture, repo: &Repo, name: &str, file: &str) -> Oid {
    let cut = repo.ref_target(INTEGRATION).unwrap().unwrap();
    fx.commit_on(name, &cut, &[(file, Some(name))]);
    let message = format!("weft: land task {name}\n\nWeft-Task: {name}\nWeft-Verdict: pass\n");
    match repo.land(INTEGRATION, name, &cut, &message).unwrap() {
        Landing::Landed { merge, .. } => merge,
        other => panic!("expected a landing, got {other:?}"),
    }
}

fn three(fx: &Fixture) -> (Repo, Oid, [Oid; 3]) {
    let base = fx.commit_here(&[("f.txt", Some(BASE_TEXT))], "base");
    let repo = fx.open();
    repo.update_ref_cas(INTEGRATION, &base, None).unwrap();
    let a = land(fx, &repo, "a", "a.txt");
    let b = land(fx, &repo, "b", "b.txt");
    let c = land(fx, &repo, "c", "c.txt");
    (repo, base, [a, b, c])
}

#[test]
fn notes_are_written_replaced_and_read_back_in_bulk_without_touching_the_checkout() {
    let fx = Fixture::new();
    let (repo, base, [a, b, c]) = three(&fx);
    let status = fx.run(&["status", "--porcelain"]);
    assert_eq!(
        repo.notes_of(NOTES, std::slice::from_ref(&a)).unwrap(),
        [None]
    );
    repo.set_note(NOTES, &a, "{\"n\":1}").unwrap();
    repo.set_note(NOTES, &c, "{\"n\":3}").unwrap();
    repo.set_note(NOTES, &a, "{\"n\":\"again\"}").unwrap();
    let notes = repo
        .notes_of(NOTES, &[a.clone(), b.clone(), c.clone()])
        .unwrap();
    let notes: Vec<Option<&str>> = notes.iter().map(|n| n.as_deref().map(str::trim)).collect();
    assert_eq!(notes, [Some("{\"n\":\"again\"}"), None, Some("{\"n\":3}")]);
    // Plain git sees the same note.
    assert_eq!(
        fx.run(&["notes", "--ref", NOTES, "show", c.as_str()])
            .trim(),
        "{\"n\":3}"
    );
    assert_eq!(
        fx.run(&["status", "--porcelain"]),
        status,
        "the checkout changed"
    );
    assert_eq!(repo.ref_target(INTEGRATION).unwrap(), Some(c.clone()));
    // The landings, newest first, from the tip down to the base.
    let tip = repo.ref_target(INTEGRATION).unwrap().unwrap();
    assert_eq!(
        repo.first_parents(&tip, Some(&base), 100).unwrap(),
        [c.clone(), b.clone(), a.clone()]
    );
    assert_eq!(repo.first_parents(&tip, Some(&base), 2).unwrap().len(), 2);
}

#[test]
fn commits_are_read_with_tree_parents_and_message_and_a_missing_one_is_named() {
    let fx = Fixture::new();
    let (repo, base, [a, _, _]) = three(&fx);
    let objects = repo.commit_objects(&[a.clone(), base.clone()]).unwrap();
    let tree = fx.run(&["rev-parse", &format!("{}^{{tree}}", a.as_str())]);
    assert_eq!(objects[0].tree.as_str(), tree.trim());
    assert_eq!(objects[0].parents.len(), 2);
    assert_eq!(objects[0].parents[0], base);
    assert!(objects[0].message.contains("Weft-Task: a\n"));
    assert!(objects[1].message.starts_with("base"));
    let missing = Oid::parse(&"1".repeat(40)).unwrap();
    let error = repo.commit_objects(&[missing]).unwrap_err();
    assert!(error.to_string().contains("1111111"), "{error}");
}

#[test]
fn a_rebuild_keeps_each_reapplied_landings_message_and_its_trailers() {
    let fx = Fixture::new();
    let (repo, _, [a, b, c]) = three(&fx);
    let Rebuild::Rebuilt { reapplied, .. } = repo.rebuild_without(INTEGRATION, &[a]).unwrap()
    else {
        panic!("expected a rebuild");
    };
    let old: Vec<Oid> = reapplied.iter().map(|(o, _)| o.clone()).collect();
    assert_eq!(old, [b.clone(), c.clone()]);
    let new: Vec<Oid> = reapplied.iter().map(|(_, n)| n.clone()).collect();
    let before = repo.commit_objects(&old).unwrap();
    let after = repo.commit_objects(&new).unwrap();
    for (was, now) in before.iter().zip(&after) {
        assert_eq!(was.message, now.message);
        assert!(now.message.contains("Weft-Verdict: pass"));
        assert_ne!(was.tree, now.tree);
    }
}

#[test]
fn a_commit_the_handle_wrote_reads_back_exactly_as_git_stored_it() {
    let fx = Fixture::new();
    let base = fx.commit_here(&[("f.txt", Some(BASE_TEXT))], "base");
    let repo = fx.open();
    repo.update_ref_cas(INTEGRATION, &base, None).unwrap();
    let mut landed = Vec::new();
    // Messages with and without a final newline, with blank lines at the end, not ASCII.
    let messages = [
        "weft: land task a\n\nWeft-Task: a",
        "weft: land task b\n\nWeft-Task: b\n",
        "weft: land task c — ünïcode\n\nWeft-Task: c\n\n\n",
    ];
    for (index, message) in messages.iter().enumerate() {
        let name = format!("t{index}");
        let cut = repo.ref_target(INTEGRATION).unwrap().unwrap();
        fx.commit_on(&name, &cut, &[(&format!("{name}.txt"), Some("x"))]);
        match repo.land(INTEGRATION, &name, &cut, message).unwrap() {
            Landing::Landed { merge, .. } => landed.push(merge),
            other => panic!("expected a landing, got {other:?}"),
        }
    }
    // The same handle answers from what it wrote; a fresh one asks git (`cat-file`).
    let remembered = repo.commit_objects(&landed).unwrap();
    let from_git = fx.open().commit_objects(&landed).unwrap();
    assert_eq!(remembered, from_git);
}
