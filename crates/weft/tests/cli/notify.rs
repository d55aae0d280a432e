//! Notifications (`notify`, `bell`, `desktop_notify`): the `notify` command runs once per
//! transition — an approval waiting, a task failed, a run finished — with the typed event
//! on stdin and a summary in `WEFT_NOTIFY_SUMMARY`, however often the engine polls.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{Weft, read};

/// Appends each event and its summary to files in the folder it runs in.
const NOTIFY: &str =
    "cat >> notified.jsonl; printf '%s\\n' \"$WEFT_NOTIFY_SUMMARY\" >> summaries.txt";

#[test]
fn the_notify_command_gets_each_transition_once_with_its_event_and_summary() {
    let weft = Weft::with_agents();
    // A task that asks and waits while a slow one (long enough for the engine to poll
    // many times, every 200 ms) runs and the task after it fails.
    weft.write(
        "plan.toml",
        r#"goal = "Tell me"
runner = "exec"

[[tasks]]
id = "asks"
title = "Asks first"
runner = "claude-code"
mode = "ask"
prompt = '''
@fake ask Bash {"command":"ls -la"}
@fake marker
'''

[[tasks]]
id = "slow"
title = "Slow"
prompt = "sleep 2"

[[tasks]]
id = "bad"
title = "Fails"
prompt = "echo nope; exit 4"
dependencies = ["slow"]
"#,
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let mut command = weft.command(&["run", "--parallel", "2", "-c", &format!("notify={NOTIFY}")]);
    command.stdout(Stdio::null()).stderr(Stdio::piped());
    let run = command.spawn().unwrap();
    let summaries = weft.work().join("summaries.txt");
    // The question waits through the slow task and the failure: many polls.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !summaries.exists() || read(&summaries).lines().count() < 2 {
        assert!(
            Instant::now() < deadline,
            "no notification for the question and the failure"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1000));
    let open: Vec<Value> = serde_json::from_str(&weft.ok(&["approvals", "--json"]).stdout).unwrap();
    let id = open[0]["id"].as_i64().unwrap().to_string();
    weft.ok(&["approvals", "allow", &id]);
    let output = run.wait_with_output().unwrap();
    assert!(
        !output.status.success(),
        "the run ends failed (task `bad`): {}",
        String::from_utf8_lossy(&output.stderr)
    );

    let lines: Vec<Value> = read(&weft.work().join("notified.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).expect("one compact JSON event per line"))
        .collect();
    let kinds: Vec<&str> = lines
        .iter()
        .map(|e| e["event"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["approval_asked", "task_finished", "run_ended"],
        "{lines:#?}"
    );
    assert_eq!(lines[1]["task"], "bad");
    assert_eq!(lines[1]["event"]["status"], "failed");
    let seqs: Vec<i64> = lines.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    // The same sequence numbers as the event log's.
    let logged: Vec<Value> = weft
        .ok(&["events", "--json", "--all"])
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for line in &lines {
        assert!(
            logged.contains(line),
            "not in the event log as stored: {line}"
        );
    }
    let summaries = read(&summaries);
    let summaries: Vec<&str> = summaries.lines().collect();
    assert_eq!(summaries.len(), 3, "{summaries:?}");
    assert!(summaries[0].starts_with("weft: approval "), "{summaries:?}");
    assert!(
        summaries[1].starts_with("weft: task #3 Fails failed: "),
        "{summaries:?}"
    );
    assert!(summaries[2].starts_with("weft: run "), "{summaries:?}");
}

#[test]
fn a_notify_command_that_hangs_is_killed_and_never_holds_the_run() {
    let weft = Weft::with_agents();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"exec\"\n\n[[tasks]]\nid = \"bad\"\ntitle = \"Fails\"\nprompt = \"exit 1\"\n\n[[tasks]]\nid = \"after\"\ntitle = \"Independent\"\nprompt = \"sleep 1\"\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let started = Instant::now();
    let run = weft.run(&["run", "-c", "notify=echo started >> hung.txt; sleep 60"]);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    // Two transitions (the failure, the run's end), each bounded by the command timeout.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(read(&weft.work().join("hung.txt")).lines().count(), 2);
    assert_eq!(
        crate::engine::statuses(&weft)["after"],
        "completed",
        "the run went on while the first command hung"
    );
}
