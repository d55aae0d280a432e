use crate::harness::Weft;
use crate::snapshot;

#[test]
fn edits_add_rewire_move_hold_and_remove() {
    let weft = Weft::new();
    weft.import_sample();
    snapshot!(
        weft,
        weft.ok(&[
            "task",
            "add",
            "--title",
            "Document the limits",
            "--prompt",
            "Write docs/limits.md",
            "--deps",
            "1",
            "--at",
            "2"
        ]),
        weft.ok(&[
            "task",
            "edit",
            "2",
            "--model",
            "opus",
            "--checks",
            "test -f docs/limits.md",
            "--checks",
            "true"
        ]),
        weft.ok(&["task", "deps", "run", "1,#3"]),
        weft.ok(&["task", "move", "document", "--to", "5"]),
        weft.ok(&["task", "hold", "#2"]),
        weft.ok(&["status"]),
        weft.ok(&["task", "release", "wire"]),
        weft.ok(&["task", "remove", "limiter"]),
        weft.ok(&["status"]),
    );
    let status = weft.status_json();
    let tasks = status["plan"]["tasks"].as_array().unwrap();
    let ids: Vec<&str> = tasks.iter().map(|t| t["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "wire-the-limiter-into-the-router",
            "run-the-whole-suite",
            "check-the-dashboards",
            "document-the-limits"
        ]
    );
    assert!(tasks.iter().all(|t| t["hold"] == false));
    assert_eq!(tasks[3]["model"], "opus");
    assert_eq!(
        tasks[3]["checks"],
        serde_json::json!(["test -f docs/limits.md", "true"])
    );
}

#[test]
fn optional_fields_clear_with_an_empty_value_and_kind_changes_clear_old_fields() {
    let weft = Weft::new();
    weft.import_sample();
    weft.ok(&["task", "edit", "1", "--model", "", "--no-checks"]);
    let run = weft.ok(&[
        "task",
        "edit",
        "3",
        "--kind",
        "ai",
        "--prompt",
        "run the suite yourself",
    ]);
    assert!(
        run.stdout
            .contains("cleared `command`, which ai tasks do not use"),
        "{}",
        run.stdout
    );
    let status = weft.status_json();
    assert_eq!(status["plan"]["tasks"][0]["model"], serde_json::Value::Null);
    assert_eq!(status["plan"]["tasks"][0]["checks"], serde_json::json!([]));
    assert_eq!(status["plan"]["tasks"][2]["kind"], "ai");
}

#[test]
fn bad_references_and_refused_edits_change_nothing() {
    let weft = Weft::new();
    weft.import_sample();
    weft.ok(&[
        "task",
        "add",
        "--title",
        "Wire docs",
        "--id",
        "wire-docs",
        "--prompt",
        "p",
    ]);
    let before = weft.ok(&["plan", "export"]).stdout;
    snapshot!(
        weft,
        weft.fails(&["task", "edit", "9", "--model", "x"], 1),
        weft.fails(&["task", "hold", "wi"], 1),
        weft.fails(&["task", "deps", "1", "2"], 1),
        weft.fails(&["task", "deps", "2", "2"], 1),
        weft.fails(&["task", "edit", "1"], 1),
        weft.fails(&["task", "add", "--title", "No prompt"], 1),
        weft.fails(
            &[
                "task", "add", "--title", "Dup", "--id", "limiter", "--prompt", "p"
            ],
            1
        ),
        weft.fails(
            &[
                "task", "add", "--title", "Digits", "--id", "42", "--prompt", "p"
            ],
            1
        ),
        weft.fails(&["task", "move", "1", "--to", "99"], 1),
        weft.fails(&["task", "move", "1", "--to", "3"], 1),
        weft.fails(
            &[
                "task", "add", "--title", "Robot", "--kind", "robot", "--prompt", "p"
            ],
            2
        ),
    );
    assert_eq!(
        weft.ok(&["plan", "export"]).stdout,
        before,
        "a refused edit changed the plan"
    );
}

#[test]
fn every_edit_bumps_the_revision_and_refusals_do_not() {
    let weft = Weft::new();
    weft.import_sample();
    let revision = |weft: &Weft| weft.status_json()["plan"]["revision"].as_u64().unwrap();
    assert_eq!(revision(&weft), 1);
    weft.ok(&["task", "hold", "1"]);
    assert_eq!(revision(&weft), 2);
    weft.fails(&["task", "deps", "1", "4"], 1);
    assert_eq!(revision(&weft), 2);
}

#[test]
fn edits_work_on_a_named_plan_that_is_not_current() {
    let weft = Weft::new();
    weft.import_sample();
    let first = weft.status_json()["plan"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    weft.import_sample();
    weft.ok(&["--plan", &first[..6], "task", "remove", "4"]);
    let named = weft.ok(&["status", "--json", "--plan", &first[..8]]).stdout;
    let named: serde_json::Value = serde_json::from_str(&named).unwrap();
    assert_eq!(named["plan"]["tasks"].as_array().unwrap().len(), 3);
    assert_eq!(
        weft.status_json()["plan"]["tasks"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
}
