//! The REST routes: the same documents as the CLI's `--json`, the same validation, the
//! same errors with proper status codes.

use serde_json::{Value, json};

use super::Served;
use crate::harness::Weft;

fn cli_json(weft: &Weft, args: &[&str]) -> Value {
    serde_json::from_str(&weft.ok(args).stdout).unwrap()
}

#[test]
fn reads_return_exactly_what_the_cli_prints_with_json() {
    let weft = Weft::new();
    weft.import_sample();
    let served = Served::start(&weft);
    assert_eq!(
        served.get("/api/plans").expect(200).json(),
        cli_json(&weft, &["sessions", "list", "--json"])
    );
    assert_eq!(
        served.get("/api/plans/current").expect(200).json(),
        cli_json(&weft, &["status", "--json"])
    );
    assert_eq!(
        served.get("/api/settings").expect(200).json(),
        cli_json(&weft, &["config", "--json"])
    );
    assert_eq!(
        served.get("/api/runners").expect(200).json(),
        cli_json(&weft, &["runners", "--json"])
    );
    assert_eq!(
        served.get("/api/approvals").expect(200).json(),
        cli_json(&weft, &["approvals", "--json"])
    );
    assert_eq!(
        served
            .get("/api/plans/current/tasks/limiter/prompt")
            .expect(200)
            .json(),
        cli_json(&weft, &["prompt", "limiter", "--json"])
    );
    let export = served.get("/api/plans/current/export").expect(200);
    assert_eq!(export.body, weft.ok(&["plan", "export"]).stdout);
    // A plan by its id prefix is the same plan.
    let short = served.get("/api/plans").json()[0]["short_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        served.get(&format!("/api/plans/{short}")).json(),
        served.get("/api/plans/current").json()
    );
}

#[test]
fn task_edits_are_validated_like_the_cli_and_stored_for_every_terminal() {
    let weft = Weft::new();
    weft.import_sample();
    let served = Served::start(&weft);
    let added = served
        .post(
            "/api/plans/current/tasks",
            &json!({"title": "Document the limits", "prompt": "Write docs/limits.md", "deps": ["limiter"], "runner": "exec"}),
        )
        .expect(201)
        .json();
    assert_eq!(added["id"], "document-the-limits");
    assert_eq!(added["order"], 5);
    let edited = served
        .send(
            "PATCH",
            "/api/plans/current/tasks/5",
            &json!({"prompt": "Write docs/LIMITS.md", "model": "opus"}),
        )
        .expect(200)
        .json();
    assert_eq!(edited["prompt"], "Write docs/LIMITS.md");
    assert_eq!(
        served.get("/api/plans/current/tasks/5").expect(200).json(),
        edited
    );
    served
        .send(
            "PUT",
            "/api/plans/current/tasks/5/deps",
            &json!({"deps": []}),
        )
        .expect(200);
    served
        .post("/api/plans/current/tasks/5/move", &json!({"to": 1}))
        .expect(200);
    served
        .post("/api/plans/current/tasks/1/hold", &json!({}))
        .expect(200);
    let status = weft.status_json();
    let first = &status["plan"]["tasks"][0];
    assert_eq!(first["id"], "document-the-limits");
    assert_eq!(first["model"], "opus");
    assert_eq!(first["hold"], true, "{first}");
    served
        .post("/api/plans/current/tasks/1/release", &json!({}))
        .expect(200);
    // The same validation: an empty title, a dependency cycle, no field at all.
    let unknown = served
        .send("PATCH", "/api/plans/current/tasks/1", &json!({"title": ""}))
        .expect(400)
        .json();
    let cli = weft.fails(&["task", "edit", "1", "--title", "", "--json"], 1);
    let cli: Value = serde_json::from_str(cli.stderr.lines().last().unwrap()).unwrap();
    assert_eq!(unknown, cli);
    served
        .send("PATCH", "/api/plans/current/tasks/1", &json!({}))
        .expect(400);
    served
        .send(
            "PUT",
            "/api/plans/current/tasks/limiter/deps",
            &json!({"deps": ["wire-the-limiter-into-the-router"]}),
        )
        .expect(400);
    let removed = served
        .send("DELETE", "/api/plans/current/tasks/1", &json!({}))
        .expect(200)
        .json();
    assert_eq!(removed["id"], "document-the-limits");
    assert_eq!(
        weft.status_json()["plan"]["tasks"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
}

#[test]
fn bad_json_unknown_ids_and_wrong_states_get_400_404_and_409() {
    let weft = Weft::new();
    weft.import_sample();
    let served = Served::start(&weft);
    let auth = format!("Bearer {}", served.token);
    let bad = served
        .raw(
            "PATCH",
            "/api/plans/current/tasks/1",
            &[
                ("Authorization", &auth),
                ("Content-Type", "application/json"),
            ],
            "{\"title\": ",
        )
        .expect(400)
        .json();
    assert!(
        bad["error"].as_str().unwrap().contains("not valid"),
        "{bad}"
    );
    served
        .send(
            "PATCH",
            "/api/plans/current/tasks/1",
            &json!({"colour": "red"}),
        )
        .expect(400);
    served.get("/api/plans/ffffffff").expect(404);
    let task = served
        .get("/api/plans/current/tasks/99/prompt")
        .expect(404)
        .json();
    assert!(task["hint"].is_string(), "{task}");
    served
        .post("/api/approvals/12345/allow", &json!({}))
        .expect(404);
    served
        .post("/api/approvals/abc/deny", &json!({}))
        .expect(400);
    served.get("/api/attempts/0123/output").expect(404);
    served.get("/api/nothing").expect(404);
    served
        .send("DELETE", "/api/settings", &json!({}))
        .expect(405);
    served
        .post("/api/plans/current/tasks/1/frobnicate", &json!({}))
        .expect(404);
    // Wrong states: a completed task's fields are the record of what ran; a pending one
    // cannot be un-completed; there is no run to stop or hand off.
    weft.ok(&["complete", "1"]);
    let locked = served
        .send(
            "PATCH",
            "/api/plans/current/tasks/1",
            &json!({"title": "x"}),
        )
        .expect(409)
        .json();
    assert!(
        locked["hint"].as_str().unwrap().contains("re-arm"),
        "{locked}"
    );
    served
        .post("/api/plans/current/tasks/2/uncomplete", &json!({}))
        .expect(409);
    served.post("/api/runs/stop", &json!({})).expect(409);
    served
        .post("/api/handoff/merge", &json!({"confirm": true}))
        .expect(409);
}

#[test]
fn controls_move_tasks_as_the_cli_does_and_answer_with_the_stored_task() {
    let weft = Weft::new();
    weft.import_sample();
    let served = Served::start(&weft);
    let skipped = served
        .post("/api/plans/current/tasks/1/skip", &json!({}))
        .expect(200)
        .json();
    assert_eq!(skipped["status"], "skipped");
    assert!(skipped["report"].is_array());
    served
        .post("/api/plans/current/tasks/1/uncomplete", &json!({}))
        .expect(200);
    served
        .post("/api/plans/current/tasks/1/complete", &json!({}))
        .expect(200);
    assert_eq!(
        weft.status_json()["plan"]["tasks"][0]["status"],
        "completed"
    );
    let rearmed = served
        .post(
            "/api/plans/current/tasks/1/rearm",
            &json!({"prompt": "Try again, smaller."}),
        )
        .expect(200)
        .json();
    assert_eq!(rearmed["status"], "pending");
    assert_eq!(rearmed["prompt"], "Try again, smaller.");
    // A manual task's checklist.
    let manual = served
        .post("/api/plans/current/tasks/4/manual", &json!({}))
        .expect(200)
        .json();
    assert_eq!(manual["steps"].as_array().unwrap().len(), 2);
}

#[test]
fn plans_are_imported_exported_loaded_and_deleted() {
    let weft = Weft::new();
    weft.import_sample();
    let served = Served::start(&weft);
    let first = served.get("/api/plans").json()[0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let created = served
        .post(
            "/api/plans",
            &json!({"workflow": "goal = \"second\"\n[[tasks]]\ntitle = \"Only\"\nprompt = \"p\"\n"}),
        )
        .expect(201)
        .json();
    assert_eq!(created["plan"]["goal"], "second");
    assert_eq!(weft.status_json()["plan"]["goal"], "second");
    let broken = served
        .post(
            "/api/plans",
            &json!({"workflow": "goal = \"x\"\n[[tasks]]\nname = 1\n"}),
        )
        .expect(400)
        .json();
    assert!(broken["hint"].is_string(), "{broken}");
    served
        .post(&format!("/api/plans/{first}/load"), &json!({}))
        .expect(200);
    assert_eq!(weft.status_json()["plan"]["id"], first.as_str());
    let deleted = served
        .send("DELETE", &format!("/api/plans/{first}"), &json!({}))
        .expect(200)
        .json();
    assert_eq!(deleted["deleted"], true);
    assert_eq!(served.get("/api/plans").json().as_array().unwrap().len(), 1);
}

#[test]
fn a_plan_imported_through_the_api_keeps_its_own_verify_and_budget_and_exports_them() {
    let weft = Weft::new();
    weft.import_sample();
    let served = Served::start(&weft);
    let workflow = "goal = \"own\"\nverify = [\"sh verify.sh\"]\nbudget_usd = 2.5\nbudget_tokens = 900000\n\n[[tasks]]\ntitle = \"Only\"\nprompt = \"p\"\nbudget_usd = 0.5\n";
    let created = served
        .post("/api/plans", &json!({ "workflow": workflow }))
        .expect(201)
        .json();
    assert_eq!(created["spend"]["budget_usd"], 2.5, "{created}");
    assert_eq!(created["spend"]["budget_tokens"], 900000, "{created}");
    let task = &created["plan"]["tasks"][0];
    assert_eq!(
        task["budget"]["budget_usd"], 0.5,
        "the task's own budget: {task}"
    );
    // The server's status is the CLI's.
    assert_eq!(
        served.get("/api/plans/current").expect(200).json()["spend"],
        weft.status_json()["spend"]
    );
    let export = served.get("/api/plans/current/export").expect(200).body;
    for line in [
        "verify = [\"sh verify.sh\"]",
        "budget_usd = 2.5",
        "budget_tokens = 900000",
    ] {
        assert!(export.contains(line), "{line:?} in:\n{export}");
    }
    assert_eq!(export, weft.ok(&["plan", "export"]).stdout);
}

#[test]
fn concurrent_edits_from_many_clients_are_all_stored() {
    let weft = Weft::new();
    weft.import_sample();
    let served = std::sync::Arc::new(Served::start(&weft));
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let served = served.clone();
            std::thread::spawn(move || {
                served
                    .post(
                        "/api/plans/current/tasks",
                        &json!({"title": format!("Parallel {i}"), "prompt": "p"}),
                    )
                    .expect(201);
                served.get("/api/plans/current").expect(200);
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let tasks = weft.status_json()["plan"]["tasks"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(tasks, 12);
}

#[test]
fn the_openapi_document_is_generated_from_the_routes_and_matches_the_committed_one() {
    let weft = Weft::new();
    let served = Served::start(&weft);
    let served_doc = served.get("/api/openapi.json").expect(200).json();
    assert_eq!(served_doc["openapi"], "3.1.0");
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../schemas/openapi.json");
    let text = format!("{}\n", serde_json::to_string_pretty(&served_doc).unwrap());
    if std::env::var_os("WEFT_UPDATE_OPENAPI").is_some() {
        fs_err::write(&path, &text).unwrap();
    }
    let committed = fs_err::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == text,
        "schemas/openapi.json differs from GET /api/openapi.json; run WEFT_UPDATE_OPENAPI=1 cargo nextest run -p weft --test cli serve::api and commit it"
    );
    for route in [
        "/api/plans/{plan}/tasks/{task}/review",
        "/api/events",
        "/api/runs",
    ] {
        assert!(served_doc["paths"][route].is_object(), "{route} missing");
    }
}
