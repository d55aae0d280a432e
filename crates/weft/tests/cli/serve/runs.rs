//! Runs: started from the API and controlled from the CLI, started from the CLI and
//! controlled from the API; never two engines on one plan; review comments re-arm.

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;

use super::{Served, eventually, exec_plan};
use crate::harness::Weft;

fn task_status(weft: &Weft, index: usize) -> String {
    weft.status_json()["plan"]["tasks"][index]["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn a_run_started_from_the_api_is_seen_and_stopped_from_the_cli_and_refuses_a_second_engine() {
    let weft = Weft::new();
    exec_plan(&weft, "sleep 30", "echo two");
    let served = Served::start(&weft);
    let started = served
        .post("/api/runs", &json!({"without_isolation": true}))
        .expect(202)
        .json();
    assert_eq!(started["running"], true, "{started}");
    assert_eq!(started["engine"]["surface"], "server");
    assert_eq!(started["engine"]["pid"], served.pid());
    assert!(eventually(Duration::from_secs(10), || task_status(
        &weft, 0
    ) == "in_progress"));
    // A second engine, from the API or from a terminal, is refused and told who runs it.
    let again = served.post("/api/runs", &json!({})).expect(409).json();
    assert!(
        again["error"].as_str().unwrap().contains("this server"),
        "{again}"
    );
    let cli = weft.fails(&["run", "--without-isolation"], 1);
    assert!(
        cli.stderr.contains(&format!("pid {}", served.pid())),
        "{}",
        cli.stderr
    );
    weft.ok(&["stop"]);
    assert!(eventually(Duration::from_secs(15), || {
        served.get("/api/runs/current").json()["running"] == false
    }));
    let current = served.get("/api/runs/current").expect(200).json();
    assert_eq!(current["last_server_run"]["all_done"], false, "{current}");
    assert_eq!(task_status(&weft, 0), "interrupted");
}

#[test]
fn a_run_started_from_the_cli_is_shown_by_the_api_and_stopped_from_it() {
    let weft = Weft::new();
    exec_plan(&weft, "sleep 30", "echo two");
    let served = Served::start(&weft);
    let mut run = weft.command(&["run", "--without-isolation"]);
    run.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = run.spawn().unwrap();
    assert!(eventually(Duration::from_secs(15), || {
        served.get("/api/runs/current").json()["running"] == true
    }));
    let current = served.get("/api/runs/current").json();
    assert_eq!(current["engine"]["surface"], "cli");
    assert_eq!(current["engine"]["pid"], child.id());
    let refused = served.post("/api/runs", &json!({})).expect(409).json();
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains(&format!("pid {}", child.id())),
        "{refused}"
    );
    served.post("/api/runs/stop", &json!({})).expect(200);
    let status = child.wait().unwrap();
    assert!(!status.success());
    assert_eq!(served.get("/api/runs/current").json()["running"], false);
}

#[test]
fn a_run_from_the_api_with_the_fake_agent_completes_and_a_cli_cancel_reaches_it() {
    let weft = Weft::with_agents();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\nid = \"a\"\ntitle = \"A\"\nprompt = \"say done\"\n[[tasks]]\nid = \"slow\"\ntitle = \"Slow\"\nrunner = \"exec\"\nprompt = \"sleep 30\"\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let served = Served::start(&weft);
    served
        .post("/api/runs", &json!({"parallel": 2}))
        .expect(202);
    assert!(eventually(Duration::from_secs(20), || task_status(
        &weft, 0
    ) == "completed"));
    assert!(eventually(Duration::from_secs(10), || task_status(
        &weft, 1
    ) == "in_progress"));
    weft.ok(&["cancel", "2"]);
    assert!(eventually(Duration::from_secs(15), || {
        served.get("/api/runs/current").json()["running"] == false
    }));
    assert_eq!(task_status(&weft, 1), "cancelled");
    let transcript = served
        .get("/api/plans/current/tasks/1/transcript")
        .expect(200);
    assert!(transcript.json().is_object() || transcript.json().is_null());
}

#[test]
fn request_changes_re_arms_the_task_with_the_comments_appended_as_review_notes() {
    let weft = Weft::new();
    exec_plan(&weft, "echo one", "echo two");
    weft.ok(&["run", "--without-isolation"]);
    let served = Served::start(&weft);
    served
        .post(
            "/api/plans/current/tasks/1/review",
            &json!({"comments": [], "request_changes": true}),
        )
        .expect(400);
    let rearmed = served
        .post(
            "/api/plans/current/tasks/1/review",
            &json!({"comments": [{"path": "src/lib.rs", "line": 12, "body": "Name this constant."}], "request_changes": true}),
        )
        .expect(200)
        .json();
    assert_eq!(rearmed["status"], "pending");
    let prompt = rearmed["prompt"].as_str().unwrap();
    assert!(prompt.starts_with("echo one"), "{prompt}");
    assert!(
        prompt.contains("## Review notes")
            && prompt.contains("`src/lib.rs:12`: Name this constant."),
        "{prompt}"
    );
    assert_eq!(weft.status_json()["plan"]["tasks"][0]["status"], "pending");
}

#[test]
fn an_isolated_runs_task_diff_and_handoff_review_merge_and_cleanup_work_over_the_api() {
    let weft = Weft::new();
    exec_plan(&weft, "echo hello > a.txt", "echo two > b.txt");
    let served = Served::start(&weft);
    served.post("/api/runs", &json!({})).expect(202);
    assert!(eventually(Duration::from_secs(30), || {
        served.get("/api/runs/current").json()["running"] == false
    }));
    assert_eq!(
        task_status(&weft, 1),
        "completed",
        "{}",
        served.get("/api/runs/current").body
    );
    let diff = served
        .get("/api/plans/current/tasks/1/diff")
        .expect(200)
        .json();
    assert_eq!(diff["landed"], true);
    assert_eq!(diff["files"].as_array().unwrap().len(), 1, "{diff}");
    assert_eq!(diff["files"][0]["path"], "a.txt");
    assert_eq!(diff["files"][0]["status"], "added");
    assert!(
        diff["files"][0]["patch"]
            .as_str()
            .unwrap()
            .contains("+hello")
    );
    let review = served.get("/api/handoff/review").expect(200).json();
    assert!(
        review["text"].as_str().unwrap().contains("b.txt"),
        "{review}"
    );
    served.post("/api/handoff/cleanup", &json!({})).expect(200);
    served.post("/api/handoff/merge", &json!({})).expect(400);
    let merged = served
        .post("/api/handoff/merge", &json!({"confirm": true}))
        .expect(200)
        .json();
    assert_eq!(merged["step"], "merge");
    assert!(weft.work().join("a.txt").exists() && weft.work().join("b.txt").exists());
    // Handed off: nothing is left to merge.
    served
        .post("/api/handoff/merge", &json!({"confirm": true}))
        .expect(409);
}

#[test]
fn ctrl_c_on_the_server_stops_its_runs_agents_and_removes_its_files() {
    let weft = Weft::new();
    exec_plan(&weft, "sleep 30", "echo two");
    let mut served = Served::start(&weft);
    served
        .post("/api/runs", &json!({"without_isolation": true}))
        .expect(202);
    assert!(eventually(Duration::from_secs(10), || task_status(
        &weft, 0
    ) == "in_progress"));
    let started = std::time::Instant::now();
    assert!(served.interrupt().success());
    assert!(started.elapsed() < Duration::from_secs(15));
    assert_eq!(task_status(&weft, 0), "interrupted");
    assert!(!weft.work().join(".weft/server.json").exists());
    assert!(!weft.work().join(".weft/server.token").exists());
}
