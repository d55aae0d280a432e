//! Budgets, end to end with the fake agent as `claude` (and as `codex`, whose live spend
//! is read from its rollout file): spend is counted live from the
//! stream, a plan whose spend reaches its budget starts nothing new (running tasks
//! finish), and raising the budget lets `weft run` continue.

use serde_json::Value;

use crate::engine::statuses;
use crate::harness::{Run, Weft};

/// A chain a → b → c; each task's prompt holds `directives` (fake-agent script lines)
/// before its marker; `model` is every task's model.
fn chain(weft: &Weft, directives: &[(&str, &str)], model: Option<&str>) {
    let mut text = String::from("goal = \"Spend some money\"\nrunner = \"claude-code\"\n");
    let mut previous: Option<&str> = None;
    for id in ["a", "b", "c"] {
        let mut prompt = format!("Do {id}.\n@fake write out/{id}.txt {id}\n");
        for (task, directive) in directives {
            if *task == id {
                prompt.push_str(&format!("@fake {directive}\n"));
            }
        }
        prompt.push_str("@fake say done\n@fake marker\n");
        let deps = previous.map(|p| format!("\"{p}\"")).unwrap_or_default();
        text.push_str(&format!(
            "\n[[tasks]]\nid = \"{id}\"\ntitle = \"Task {id}\"\ndependencies = [{deps}]\nprompt = '''\n{prompt}'''\n"
        ));
        if let Some(model) = model {
            text.push_str(&format!("model = \"{model}\"\n"));
        }
        previous = Some(id);
    }
    weft.write("chain.toml", &text);
    weft.ok(&["plan", "--file", "chain.toml"]);
}

/// The plan's stored events of one kind (the `event` object of each).
fn events_of(weft: &Weft, kind: &str) -> Vec<Value> {
    let run = weft.ok(&["events", "--all", "--json"]);
    run.stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"]["kind"] == kind)
        .collect()
}

fn said(run: &Run) -> String {
    format!("{}{}", run.stdout, run.stderr)
}

#[test]
fn a_plan_whose_spend_reaches_its_budget_starts_nothing_new_until_the_budget_is_raised() {
    let weft = Weft::with_agents();
    // Task a's stream reports a message of 100k input tokens mid-run and $0.40 at its end.
    chain(&weft, &[("a", "spend 100000 1000 0.4")], None);
    let notify = "cat >> notified.jsonl";
    let first = weft.fails(
        &[
            "run",
            "--parallel",
            "1",
            "-c",
            "budget_usd=0.30",
            "-c",
            &format!("notify={notify}"),
        ],
        1,
    );
    let s = statuses(&weft);
    assert_eq!(s["a"], "completed", "a running task finishes: {s:?}");
    assert_eq!(s["b"], "pending", "nothing new starts: {s:?}");
    assert_eq!(s["c"], "pending");
    assert!(
        said(&first).contains("budget reached") && said(&first).contains("budget_usd = $0.30"),
        "weft says why: {}",
        said(&first)
    );
    let reached = events_of(&weft, "budget_reached");
    assert_eq!(reached.len(), 1, "one event per transition: {reached:?}");
    let cost = reached[0]["event"]["cost_usd"].as_f64().unwrap();
    assert!(
        (cost - 0.40132).abs() < 1e-9,
        "the CLI's own total: {reached:?}"
    );
    let told: Vec<Value> = crate::harness::read(&weft.work().join("notified.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &Value| e["event"]["kind"] == "budget_reached")
        .collect();
    assert_eq!(told.len(), 1, "the notify command is told once: {told:?}");

    // The same budget: still nothing starts, and weft says why again.
    let again = weft.fails(&["run", "-c", "budget_usd=0.30"], 1);
    assert!(said(&again).contains("budget reached"), "{}", said(&again));
    assert_eq!(statuses(&weft)["b"], "pending");
    let status = weft.ok(&["-c", "budget_usd=0.30", "status"]).stdout;
    assert!(
        status.contains("of $0.30") && status.contains("reached (budget_usd = $0.30)"),
        "{status}"
    );

    // Raised: the run continues, and spend across both runs adds up.
    weft.ok(&["run", "-c", "budget_usd=5"]);
    let s = statuses(&weft);
    assert!(s.values().all(|v| v == "completed"), "{s:?}");
    let status = weft.status_json();
    let spent = status["spend"]["cost_usd"].as_f64().unwrap();
    assert!(spent > 0.40132, "every attempt counts: {status}");
}

#[test]
fn live_spend_is_stored_while_an_attempt_runs_and_an_unknown_price_is_not_free() {
    let weft = Weft::with_agents();
    // The fake Claude answers as a model weft has no price for, and (as the real Claude
    // Code does for a model it does not know) reports a total cost of 0.
    chain(
        &weft,
        // Longer than the 5 s before a first live update is stored.
        &[
            ("a", "spend 5000 100 0"),
            ("a", "sleep 5.5"),
            ("a", "spend 100 100 0"),
            ("a", "usage 5100 200 0"),
        ],
        Some("mystery-9"),
    );
    weft.ok(&["run"]);
    let updates = events_of(&weft, "spend_updated");
    assert!(!updates.is_empty(), "a live spend update is stored");
    assert!(
        updates
            .iter()
            .all(|u| u["task"].is_string() && u["attempt"].is_string()),
        "{updates:?}"
    );
    let a = &updates[0]["event"];
    assert_eq!(a["cost_usd"], Value::Null, "{a}");
    assert_eq!(a["unpriced"], "mystery-9", "{a}");
    let status = weft.status_json();
    assert_eq!(status["spend"]["cost_usd"], Value::Null, "{status}");
    let text = weft.ok(&["status"]).stdout;
    assert!(text.contains("cost unknown"), "status says so: {text}");
    let budgeted = weft.ok(&["-c", "budget_tokens=1000000", "status"]).stdout;
    assert!(
        budgeted.contains("of 1000000 tokens (plan budget)"),
        "{budgeted}"
    );
}

/// Codex says nothing of usage on stdout before `turn.completed`: its live spend is the
/// `token_count` records of its rollout file, which weft reads while the attempt runs.
#[test]
fn a_codex_attempts_spend_is_stored_live_from_its_rollout_file_while_it_runs() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let weft = Weft::with_agents();
    // Codex's home exists, so the fake Codex writes its rollout as it runs.
    std::fs::create_dir_all(weft.env.home().join(".codex")).unwrap();
    let release = weft.env.root().join("release");
    // However the test ends, the agent is let go, so the run ends too.
    let _release = Release(release.clone());
    let plan = format!(
        r#"goal = "Spend live"
runner = "codex"

[[tasks]]
id = "a"
title = "Task a"
model = "gpt-5"
prompt = '''
Do a.
@fake spend 1000 20
@fake sleep 6
@fake spend 2000 40
@fake hang-unless {}
@fake say done
@fake marker
'''
"#,
        release.display()
    );
    weft.write("plan.toml", &plan);
    weft.ok(&["plan", "--file", "plan.toml"]);
    let mut run = weft.command(&["run"]);
    run.stdout(Stdio::piped()).stderr(Stdio::piped());
    let run = run.spawn().unwrap();

    // The fake's totals: its default 120 in, 20 out, plus each `spend`.
    let (input, output) = (120 + 1000 + 2000, 20 + 20 + 40);
    let deadline = Instant::now() + Duration::from_secs(40);
    let live = loop {
        let updates = events_of(&weft, "spend_updated");
        if let Some(last) = updates.last()
            && last["event"]["input_tokens"] == input
        {
            break last.clone();
        }
        assert!(
            Instant::now() < deadline,
            "no live update from the rollout: {updates:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    // Still running: the agent waits for the release file, nothing has finished.
    assert!(events_of(&weft, "attempt_finished").is_empty());
    let event = &live["event"];
    assert_eq!(event["output_tokens"], output, "{event}");
    assert_eq!(
        event["reported"], false,
        "live, not the CLI's total: {event}"
    );
    let cost = event["cost_usd"].as_f64().unwrap();
    let priced = (3120.0 * 1.25 + 80.0 * 10.0) / 1e6;
    assert!(
        (cost - priced).abs() < 1e-12,
        "priced by its model: {event}"
    );
    let running = weft.status_json();
    assert_eq!(running["spend"]["input_tokens"], input, "{running}");

    std::fs::write(&release, "").unwrap();
    let out = run.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The end: Codex's own total (`turn.completed`), the same figures.
    let finished = events_of(&weft, "attempt_finished");
    assert_eq!(finished.len(), 1, "{finished:?}");
    let usage = &finished[0]["event"]["usage"];
    assert_eq!(usage["input_tokens"], input, "{usage}");
    assert_eq!(usage["output_tokens"], output, "{usage}");
    assert_eq!(statuses(&weft)["a"], "completed");
}

/// Creates its file when dropped: an agent waiting for it (`hang-unless`) goes on.
struct Release(std::path::PathBuf);

impl Drop for Release {
    fn drop(&mut self) {
        let _ = std::fs::write(&self.0, "");
    }
}
