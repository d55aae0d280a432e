//! Evidence travels with the commits: every landing merge commit of an isolated run has
//! weft's trailers and a git note under `refs/notes/weft` that validates against the
//! committed schema; `weft evidence` prints it and `--check` flags what is missing.

use serde_json::Value;

use crate::engine::{diamond, statuses};
use crate::events::violation;
use crate::harness::Weft;

fn git(weft: &Weft, args: &[&str]) -> String {
    let output = weft
        .env
        .command("git")
        .args(args)
        .output()
        .expect("git runs");
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn schema() -> Value {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/evidence.schema.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The landing merge commits of the run's integration branch, oldest first.
fn landings(weft: &Weft) -> Vec<String> {
    let branch = git(
        weft,
        &[
            "branch",
            "--list",
            "weft/*/integration",
            "--format=%(refname)",
        ],
    );
    let branch = branch
        .lines()
        .next()
        .expect("an integration branch")
        .to_owned();
    git(
        weft,
        &[
            "rev-list",
            "--first-parent",
            "--merges",
            "--reverse",
            &branch,
        ],
    )
    .lines()
    .map(str::to_owned)
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
        let note = git(
            &weft,
            &["notes", "--ref", "refs/notes/weft", "show", commit],
        );
        let value: Value = serde_json::from_str(&note).unwrap();
        assert_eq!(violation(&schema, &schema, &value, "$"), None, "{note}");
        let tree = git(&weft, &["rev-parse", &format!("{commit}^{{tree}}")]);
        assert_eq!(value["tree"], tree.trim());
        assert_eq!(value["runner"], "claude-code");
        assert_eq!(value["marker"]["found_in"], "stream", "{note}");
        assert_eq!(value["verification"], Value::Null);
        orders.push(value["task"]["order"].as_u64().unwrap());
        let message = git(&weft, &["log", "-1", "--format=%B", commit]);
        let trailers = git(
            &weft,
            &["log", "-1", "--format=%(trailers:only,unfold)", commit],
        );
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
