//! Evidence travels with the commits: every landing merge commit of an isolated run has
//! weft's trailers and a git note under `refs/notes/weft` that validates against the
//! committed schema; `weft evidence` prints it and `--check` flags what is missing.

use serde_json::Value;

use crate::engine::{diamond, statuses};
use crate::events::violation;
use crate::harness::Weft;

fn schema() -> Value {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/evidence.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The landing commits of the run's integration branch, oldest first (a landing a rebuild
/// re-applied without its task branch is no merge any more).
fn landings(weft: &Weft) -> Vec<String> {
    let branch = weft.git(&[
        "branch",
        "--list",
        "weft/*/integration",
        "--format=%(refname)",
    ]);
    let branch = branch
        .lines()
        .next()
        .expect("an integration branch")
        .to_owned();
    weft.git(&[
        "log",
        "--first-parent",
        "--reverse",
        "--format=%H %s",
        &branch,
    ])
    .lines()
    .filter_map(|l| l.split_once(' '))
    .filter(|(_, subject)| subject.starts_with("weft: land task "))
    .map(|(commit, _)| commit.to_owned())
    .collect()
}

#[test]
fn every_landing_of_a_run_has_a_note_that_validates_and_names_its_tree() {
    let weft = Weft::with_agents();
    diamond(&weft, &[]);
    weft.ok(&["run", "--isolated"]);
    assert!(statuses(&weft).values().all(|s| s == "completed"));
    let schema = schema();
    let landed = landings(&weft);
    assert_eq!(landed.len(), 6);
    let mut orders = Vec::new();
    for commit in &landed {
        let note = weft.git(&["notes", "--ref", "refs/notes/weft", "show", commit]);
        let value: Value = serde_json::from_str(&note).unwrap();
        assert_eq!(violation(&schema, &schema, &value, "$"), None, "{note}");
        let tree = weft.git(&["rev-parse", &format!("{commit}^{{tree}}")]);
        assert_eq!(value["tree"], tree.trim());
        assert_eq!(value["runner"], "claude-code");
        assert_eq!(value["marker"]["found_in"], "stream", "{note}");
        assert_eq!(value["verification"], Value::Null);
        orders.push(value["task"]["order"].as_u64().unwrap());
        let message = weft.git(&["log", "-1", "--format=%B", commit]);
        let trailers = weft.git(&["log", "-1", "--format=%(trailers:only,unfold)", commit]);
        assert!(message.starts_with("weft: land task "), "{message}");
        for key in [
            "Weft-Plan: ",
            "Weft-Task: ",
            "Weft-Attempt: ",
            "Weft-Verdict: pass",
        ] {
            assert!(trailers.contains(key), "{key} missing in {trailers:?}");
        }
        assert!(trailers.contains(&format!(
            "Weft-Attempt: {}",
            value["attempt"]["id"].as_str().unwrap()
        )));
    }
    orders.sort_unstable();
    assert_eq!(orders, [1, 2, 3, 4, 5, 6]);
}

/// A two-task run (the second depends on the first), landed.
fn two_landings(weft: &Weft) {
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"claude-code\"\n\
         [[tasks]]\nid = \"parser\"\ntitle = \"Write the \\u001b]52;c;aGk=\\u0007parser\"\nchecks = [\"true\"]\nprompt = '''\n@fake write parser.txt p\n@fake marker\n'''\n\
         [[tasks]]\nid = \"cli\"\ntitle = \"Add the CLI\"\ndependencies = [\"parser\"]\nprompt = '''\n@fake write cli.txt c\n@fake marker\n'''\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    weft.ok(&["run", "--isolated"]);
    assert!(statuses(weft).values().all(|s| s == "completed"));
}

/// Snapshot `runs` with commit ids, durations and clock times redacted too.
macro_rules! evidence_snapshot {
    ($weft:expr, $($run:expr),+ $(,)?) => {{
        let mut settings = insta::Settings::clone_current();
        settings.add_filter(r"\b[0-9a-f]{40}\b", "[SHA]");
        settings.add_filter(r"\b[0-9a-f]{12}\b", "[COMMIT]");
        settings.add_filter(r"\b[0-9a-f]{7}\b", "[SHORT]");
        settings.add_filter(r"\b\d+ ms\b", "[N] ms");
        settings.bind(|| crate::snapshot!($weft, $($run),+));
    }};
}

#[test]
fn weft_evidence_prints_a_landing_and_check_flags_one_whose_note_was_deleted() {
    let weft = Weft::with_agents();
    two_landings(&weft);
    let landed = landings(&weft);
    assert_eq!(landed.len(), 2);
    let shown = weft.ok(&["evidence"]);
    let first = weft.ok(&["evidence", &landed[0]]);
    // The title's OSC 52 sequence is shown escaped, never raw.
    assert!(!first.stdout.contains('\u{1b}'), "{}", first.stdout);
    assert!(first.stdout.contains("\\x1b]52"), "{}", first.stdout);
    let json: Value =
        serde_json::from_str(&weft.ok(&["evidence", &landed[0], "--json"]).stdout).unwrap();
    assert_eq!(json["tree_matches"], true);
    assert_eq!(json["evidence"]["task"]["id"], "parser");
    let checks = json["evidence"]["checks"].as_array().unwrap();
    let command = checks.iter().find(|c| c["name"] == "check:true").unwrap();
    assert_eq!(command["exit_code"], 0);
    assert!(command["duration_ms"].is_u64(), "{command}");
    let clean = weft.ok(&["evidence", "--check"]);

    weft.git(&["notes", "--ref", "refs/notes/weft", "remove", &landed[0]]);
    let flagged = weft.fails(&["evidence", "--check"], 1);
    assert!(
        flagged.stdout.contains(&landed[0][..12]),
        "{}",
        flagged.stdout
    );
    let flagged_json = weft.fails(&["evidence", "--check", "--json"], 1);
    let rows: Value = serde_json::from_str(&flagged_json.stdout).unwrap();
    assert_eq!(rows[0]["finding"], "missing");
    assert_eq!(rows[1]["finding"], "ok");
    let missing = weft.fails(&["evidence", &landed[0]], 1);
    evidence_snapshot!(weft, shown, clean, flagged, missing);
}

#[test]
fn a_note_moved_to_another_commit_is_flagged_as_naming_another_tree() {
    let weft = Weft::with_agents();
    two_landings(&weft);
    let landed = landings(&weft);
    let note = weft.git(&["notes", "--ref", "refs/notes/weft", "show", &landed[0]]);
    let path = weft.write("forged.json", &note);
    weft.git(&[
        "notes",
        "--ref",
        "refs/notes/weft",
        "add",
        "-f",
        "-F",
        path.to_str().unwrap(),
        &landed[1],
    ]);
    let flagged = weft.fails(&["evidence", "--check"], 1);
    assert!(
        flagged.stdout.contains("its note records tree"),
        "{}",
        flagged.stdout
    );
    let shown = weft.ok(&["evidence", &landed[1]]);
    assert!(
        shown.stdout.contains("NOT the commit's tree"),
        "{}",
        shown.stdout
    );
}

#[test]
fn notes_a_crash_left_out_are_written_at_the_next_start() {
    let weft = Weft::with_agents();
    two_landings(&weft);
    let landed = landings(&weft);
    let before = weft.git(&["notes", "--ref", "refs/notes/weft", "show", &landed[1]]);
    // The state a kill between the landing's record and its note leaves.
    weft.git(&["update-ref", "-d", "refs/notes/weft"]);
    weft.fails(&["evidence", "--check"], 1);
    weft.ok(&["run", "--isolated"]);
    weft.ok(&["evidence", "--check"]);
    let after = weft.git(&["notes", "--ref", "refs/notes/weft", "show", &landed[1]]);
    let (before, after): (Value, Value) = (
        serde_json::from_str(&before).unwrap(),
        serde_json::from_str(&after).unwrap(),
    );
    assert_eq!(
        before, after,
        "the repaired note is the one the landing wrote"
    );
}

#[test]
fn a_revert_carries_the_notes_of_the_landings_it_reapplies_and_handoff_keeps_them() {
    let weft = Weft::with_agents();
    let mut plan = String::from("goal = \"g\"\nrunner = \"claude-code\"\n");
    for id in ["a", "b", "c"] {
        plan.push_str(&format!(
            "[[tasks]]\nid = \"{id}\"\ntitle = \"Task {id}\"\nprompt = '''\n@fake write {id}.txt {id}\n@fake marker\n'''\n"
        ));
    }
    weft.write("plan.toml", &plan);
    weft.ok(&["plan", "--file", "plan.toml"]);
    // One at a time: a lands first, so taking it out re-applies b and c.
    weft.ok(&["run", "--isolated", "--parallel", "1"]);
    let reverted = weft.ok(&["uncomplete", "a", "--revert", "--yes"]);
    assert!(
        reverted.stdout.contains("(2 other landing(s) re-applied"),
        "{}",
        reverted.stdout
    );
    let schema = schema();
    let landed = landings(&weft);
    assert_eq!(landed.len(), 2, "b and c stay");
    for commit in &landed {
        let note = weft.git(&["notes", "--ref", "refs/notes/weft", "show", commit]);
        let value: Value = serde_json::from_str(&note).unwrap();
        assert_eq!(violation(&schema, &schema, &value, "$"), None);
        let tree = weft.git(&["rev-parse", &format!("{commit}^{{tree}}")]);
        assert_eq!(
            value["tree"],
            tree.trim(),
            "a re-applied landing kept its old tree"
        );
    }
    weft.ok(&["evidence", "--check"]);
    // Run what the reverts put back, then hand the run off: the notes stay on the merged
    // commits, and the same check passes on the user's branch.
    weft.ok(&["run", "--isolated"]);
    weft.ok(&["handoff", "merge", "--yes"]);
    let all = landings(&weft);
    for commit in &all {
        weft.git(&["merge-base", "--is-ancestor", commit, "main"]);
        weft.git(&["notes", "--ref", "refs/notes/weft", "show", commit]);
    }
    weft.ok(&["evidence", "--check"]);
}

#[test]
fn what_weft_evidence_says_without_a_run_for_a_commit_that_is_no_landing_and_for_a_bad_rev() {
    let weft = Weft::with_agents();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"T\"\nprompt = '''\n@fake marker\n'''\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let no_run = weft.fails(&["evidence"], 1);
    let no_run_check = weft.fails(&["evidence", "--check"], 1);
    let not_landing = weft.fails(&["evidence", "HEAD"], 1);
    let bad = weft.fails(&["evidence", "no-such-rev"], 1);
    let bad_json = weft.fails(&["evidence", "no-such-rev", "--json"], 1);
    evidence_snapshot!(weft, no_run, no_run_check, not_landing, bad, bad_json);
}

#[test]
fn the_evidence_schema_weft_prints_is_the_committed_one() {
    let weft = Weft::bare();
    let printed = weft.ok(&["evidence", "--schema"]).stdout;
    assert_eq!(serde_json::from_str::<Value>(&printed).unwrap(), schema());
}
