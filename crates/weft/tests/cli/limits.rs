//! Per-task limits (issues 12 and 15), end to end with the fake agent as `claude`: a
//! task's `timeout`, `idle_timeout` and budget stop its attempt with a verdict that names
//! whose limit it was; the limits travel file → store → export, are edited by flags, are
//! refused naming the key when bad; `weft status` shows spend against a task's budget and
//! an attempt that is idle right now, from another process.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::engine::statuses;
use crate::harness::Weft;

/// A plan of independent tasks, each `(id, extra TOML lines, fake-agent directives)`.
fn plan(weft: &Weft, tasks: &[(&str, &str, &str)]) {
    let mut text = String::from("goal = \"Limits\"\nrunner = \"claude-code\"\n");
    for (id, extra, directives) in tasks {
        text.push_str(&format!(
            "\n[[tasks]]\nid = \"{id}\"\ntitle = \"Task {id}\"\n{extra}\nprompt = '''\nDo {id}.\n{directives}'''\n"
        ));
    }
    weft.write("plan.toml", &text);
    weft.ok(&["plan", "--file", "plan.toml"]);
}

fn task<'a>(status: &'a Value, id: &str) -> &'a Value {
    status["plan"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no task {id} in {status}"))
}

fn events_of(weft: &Weft, kind: &str) -> Vec<Value> {
    weft.ok(&["events", "--all", "--json"])
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["event"]["kind"] == kind)
        .collect()
}

#[test]
fn a_stream_over_its_tasks_budget_stops_that_attempt_naming_the_budget_and_the_others_go_on() {
    let weft = Weft::with_agents();
    plan(
        &weft,
        &[
            (
                "costly",
                "budget_usd = 0.1",
                // Live, a message is priced by its model: a million input tokens is
                // dollars, well over 10 cents, long before the agent would end.
                "@fake spend 1000000 1000 0.5\n@fake sleep 30\n@fake marker\n",
            ),
            ("cheap", "", "@fake spend 10 10 0.01\n@fake marker\n"),
        ],
    );
    let started = Instant::now();
    weft.fails(&["run"], 1);
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "the attempt was stopped, not waited for: {:?}",
        started.elapsed()
    );
    let status = weft.status_json();
    let costly = task(&status, "costly");
    assert_eq!(costly["status"], "failed", "{costly}");
    let reason = costly["verdict"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("stopped over its budget") && reason.contains("budget_usd = $0.10"),
        "{reason}"
    );
    let checks = costly["verdict"]["checks"].as_array().unwrap();
    assert!(
        checks
            .iter()
            .any(|c| c["name"] == "budget" && c["passed"] == false),
        "{checks:?}"
    );
    assert_eq!(task(&status, "cheap")["status"], "completed", "{status}");
    // The task's spend against its budget, in both forms of `weft status`.
    let budget = &costly["budget"];
    assert_eq!(budget["budget_usd"], 0.1, "{costly}");
    assert_eq!(budget["exceeded"], "budget_usd = $0.10", "{costly}");
    let text = weft.ok(&["status"]).stdout;
    assert!(
        text.contains("#1 spent $")
            && text.contains(" of $0.10, ")
            && text.contains("(task budget: over its budget_usd = $0.10)"),
        "{text}"
    );
}

#[test]
fn a_tasks_budget_covers_every_attempt_so_a_retry_starts_over_it_and_stops() {
    let weft = Weft::with_agents();
    plan(
        &weft,
        &[(
            "twice",
            "budget_tokens = 15000",
            "@fake spend 10000 0 0\n@fake marker\n",
        )],
    );
    // The first attempt spends about 10000 of 15000 tokens (its message, and the fake's
    // own turn) and passes.
    weft.ok(&["run"]);
    weft.ok(&["uncomplete", "twice"]);
    // The second adds as much again: over the task's budget, across attempts.
    weft.fails(&["run"], 1);
    let status = weft.status_json();
    let twice = task(&status, "twice");
    assert_eq!(twice["status"], "failed", "{twice}");
    assert!(
        twice["verdict"]["reason"]
            .as_str()
            .unwrap()
            .contains("budget_tokens = 15000"),
        "{twice}"
    );
}

#[test]
fn a_tasks_timeout_shorter_than_the_setting_stops_a_hanging_attempt_and_its_verdict_names_it() {
    let weft = Weft::with_agents();
    plan(&weft, &[("hangs", "timeout = \"1s\"", "@fake hang\n")]);
    let started = Instant::now();
    let run = weft.fails(&["-c", "task_timeout=1h", "run"], 1);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    let status = weft.status_json();
    let hangs = task(&status, "hangs");
    assert_eq!(hangs["status"], "failed", "{hangs}");
    assert_eq!(
        hangs["verdict"]["reason"], "timed out: the task's timeout = 1s",
        "{}",
        run.stdout
    );
}

#[test]
fn a_tasks_idle_timeout_ends_a_silent_attempt_and_one_not_longer_than_idle_after_is_refused() {
    let weft = Weft::with_agents();
    plan(
        &weft,
        &[
            (
                "silent",
                "idle_timeout = \"2s\"",
                "@fake say thinking\n@fake hang\n",
            ),
            ("short", "idle_timeout = \"1s\"", "@fake marker\n"),
        ],
    );
    let started = Instant::now();
    weft.fails(&["-c", "idle_after=1s", "-c", "idle_timeout=1h", "run"], 1);
    assert!(started.elapsed() < Duration::from_secs(30));
    let status = weft.status_json();
    let silent = task(&status, "silent");
    assert_eq!(silent["status"], "failed", "{silent}");
    assert_eq!(
        silent["verdict"]["reason"],
        "idle: no output, stream event or file change for its idle_timeout (the task's idle_timeout = 2s)",
        "{silent}"
    );
    // 1s is not longer than idle_after = 1s: the attempt does not start, and says why.
    let short = task(&status, "short");
    assert_eq!(short["status"], "failed", "{short}");
    let reason = short["verdict"]["reason"].as_str().unwrap();
    assert!(
        reason.contains("its idle_timeout (1s) must be longer than the idle_after setting (1s)"),
        "{reason}"
    );
}

#[test]
fn limits_round_trip_from_the_file_through_the_store_to_the_export() {
    let weft = Weft::new();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nbudget_usd = 2.5\nbudget_tokens = 900000\n\n[[tasks]]\nid = \"a\"\ntitle = \"A\"\nprompt = \"p\"\ntimeout = \"30m\"\nidle_timeout = \"5m\"\nbudget_usd = 0.5\nbudget_tokens = 200000\n\n[[tasks]]\nid = \"b\"\ntitle = \"B\"\nprompt = \"p\"\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let exported = weft.ok(&["plan", "export"]).stdout;
    for line in [
        "budget_usd = 2.5\n",
        "budget_tokens = 900000\n",
        "timeout = \"30m\"\n",
        "idle_timeout = \"5m\"\n",
        "budget_usd = 0.5\n",
        "budget_tokens = 200000\n",
    ] {
        assert!(exported.contains(line), "{line:?} in:\n{exported}");
    }
    assert_eq!(
        exported.matches("timeout = ").count(),
        2,
        "b has none: {exported}"
    );
    // The export imports back into the same definition.
    weft.write("again.toml", &exported);
    weft.ok(&["plan", "--file", "again.toml"]);
    assert_eq!(weft.ok(&["plan", "export"]).stdout, exported);
    let a = weft.ok(&["prompt", "a", "--json"]).stdout;
    let a: Value = serde_json::from_str(&a).unwrap();
    assert_eq!(a["limits"]["timeout"], "the task's timeout = 30m", "{a}");
    assert_eq!(a["limits"]["budget_usd"], 0.5, "{a}");
    let status = weft.status_json();
    assert_eq!(
        task(&status, "a")["limits"]["idle_timeout"],
        "5m",
        "{status}"
    );
    assert_eq!(
        status["spend"]["budget_usd"], 2.5,
        "the plan's own budget: {status}"
    );
}

#[test]
fn task_edit_sets_and_clears_each_limit_and_the_event_names_each_field() {
    let weft = Weft::new();
    weft.write(
        "one.toml",
        "goal = \"g\"\n[[tasks]]\ntitle = \"First\"\nprompt = \"p\"\n",
    );
    weft.ok(&["plan", "--file", "one.toml"]);
    let added = weft.ok(&[
        "task",
        "add",
        "--title",
        "T",
        "--prompt",
        "p",
        "--timeout",
        "10m",
        "--json",
    ]);
    let task: Value = serde_json::from_str(&added.stdout).unwrap();
    assert_eq!(
        task["limits"],
        serde_json::json!({"timeout": "10m"}),
        "{task}"
    );
    let set = weft.ok(&[
        "task",
        "edit",
        "t",
        "--timeout",
        "30m",
        "--idle-timeout",
        "5m",
        "--budget-usd",
        "0.5",
        "--budget-tokens",
        "200000",
        "--json",
    ]);
    let task: Value = serde_json::from_str(&set.stdout).unwrap();
    assert_eq!(
        task["limits"],
        serde_json::json!({"timeout": "30m", "idle_timeout": "5m", "budget_usd": 0.5, "budget_tokens": 200000}),
        "{task}"
    );
    let edited = events_of(&weft, "task_edited");
    let fields: Vec<&str> = edited[0]["event"]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        ["timeout", "idle_timeout", "budget_usd", "budget_tokens"]
    );
    let cleared = weft.ok(&[
        "task",
        "edit",
        "t",
        "--timeout",
        "",
        "--idle-timeout",
        "",
        "--budget-usd",
        "",
        "--budget-tokens",
        "",
        "--json",
    ]);
    let task: Value = serde_json::from_str(&cleared.stdout).unwrap();
    assert_eq!(task["limits"], Value::Null, "every limit cleared: {task}");
    let events = weft.ok(&["events", "--all"]).stdout;
    assert!(events.contains("budget_usd = (cleared)"), "{events}");
}

#[test]
fn a_bad_limit_in_the_file_or_a_flag_is_refused_naming_the_key() {
    let weft = Weft::new();
    weft.write(
        "plan.toml",
        "goal = \"g\"\n[[tasks]]\ntitle = \"T\"\nprompt = \"p\"\ntimeout = \"soon\"\n",
    );
    let refused = weft.run(&["plan", "--file", "plan.toml"]);
    assert_ne!(refused.code, 0);
    assert!(
        refused
            .stderr
            .contains("plan.toml: task #1 \"t\": `timeout` = \"soon\""),
        "{}",
        refused.stderr
    );
    assert_ne!(weft.run(&["status"]).code, 0, "no plan was made");
    weft.write(
        "good.toml",
        "goal = \"g\"\n[[tasks]]\ntitle = \"T\"\nprompt = \"p\"\n",
    );
    weft.ok(&["plan", "--file", "good.toml"]);
    for (flag, value) in [
        ("--budget-usd", "-1"),
        ("--budget-tokens", "many"),
        ("--idle-timeout", "later"),
    ] {
        let refused = weft.run(&["task", "edit", "1", flag, value]);
        assert_ne!(refused.code, 0, "{flag} {value}");
        assert!(
            refused.stderr.contains(&format!("{flag}: `")) && refused.stderr.contains("hint"),
            "{}",
            refused.stderr
        );
    }
    let status = weft.status_json();
    assert_eq!(
        task(&status, "t")["limits"],
        Value::Null,
        "nothing was written: {status}"
    );
}

#[test]
fn weft_status_shows_an_attempt_that_is_idle_while_its_run_goes_on() {
    let weft = Weft::with_agents();
    plan(
        &weft,
        &[(
            "quiet",
            "",
            "@fake say thinking\n@fake sleep 4\n@fake marker\n",
        )],
    );
    let mut run = weft.command(&["-c", "idle_after=1s", "run"]);
    run.stdout(Stdio::null()).stderr(Stdio::null());
    let mut run = run.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let idle = loop {
        let status = weft.status_json();
        let quiet = task(&status, "quiet").clone();
        if quiet["idle_secs"].is_u64() {
            break quiet;
        }
        assert!(Instant::now() < deadline, "never shown idle: {status}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(idle["status"], "in_progress", "{idle}");
    let text = weft.ok(&["status"]).stdout;
    assert!(text.contains("in_progress (idle for "), "{text}");
    assert!(run.wait().unwrap().success());
    let status = weft.status_json();
    let quiet = task(&status, "quiet");
    assert_eq!(quiet["status"], "completed");
    assert!(quiet.get("idle_secs").is_none(), "no longer idle: {quiet}");
    let marked = events_of(&weft, "attempt_idle");
    assert_eq!(marked.len(), 1, "one event per silence: {marked:?}");
    assert!(marked[0]["attempt"].is_string(), "{marked:?}");
    assert!(statuses(&weft).values().all(|s| s == "completed"));
}
