//! Task runners' permission requests relayed to a person (DESIGN §11): a Claude Code task
//! in `ask` mode hands weft each tool call that needs approval; `weft approvals` answers it
//! from another terminal, the run's policy remembers the answer, and an attempt that ends
//! withdraws its open questions.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::engine::statuses;
use crate::harness::Weft;

/// A plan of claude-code tasks in `ask` mode, each asking before `Bash` runs its command.
fn asking_plan(weft: &Weft, tasks: &[(&str, &str)]) {
    let mut text = String::from("goal = \"Ask first\"\nrunner = \"claude-code\"\n");
    for (id, command) in tasks {
        text.push_str(&format!(
            "\n[[tasks]]\nid = \"{id}\"\ntitle = \"Task {id}\"\nmode = \"ask\"\nprompt = '''\nDo {id}.\n@fake ask Bash {{\"command\":\"{command}\"}}\n@fake say finished {id}\n@fake marker\n'''\n"
        ));
    }
    weft.write("asking.toml", &text);
    weft.ok(&["plan", "--file", "asking.toml"]);
}

fn start_run(weft: &Weft, extra: &[&str]) -> Child {
    let mut args = vec!["run", "--parallel", "1"];
    args.extend_from_slice(extra);
    let mut command = weft.command(&args);
    command.stdout(Stdio::null()).stderr(Stdio::piped());
    command.spawn().unwrap()
}

fn open_questions(weft: &Weft) -> Vec<Value> {
    serde_json::from_str(&weft.ok(&["approvals", "--json"]).stdout).unwrap()
}

/// Wait until a question is open; return it.
fn next_question(weft: &Weft) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(first) = open_questions(weft).into_iter().next() {
            return first;
        }
        assert!(
            Instant::now() < deadline,
            "no question appeared: {:?}",
            statuses(weft)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn log_of(weft: &Weft, task: &str) -> String {
    weft.ok(&["log", task]).stdout
}

#[test]
fn a_runner_question_is_answered_from_another_terminal_and_remembered_for_the_run() {
    let weft = Weft::with_agents();
    asking_plan(&weft, &[("one", "ls -la"), ("two", "ls src")]);
    let run = start_run(&weft, &[]);
    let question = next_question(&weft);
    assert!(
        question["subject"]
            .as_str()
            .unwrap()
            .contains("task #1 one: run ls -la"),
        "{question}"
    );
    assert_eq!(question["scope"], "command:ls");
    assert!(question["asker"].as_str().unwrap().starts_with("runner:"));
    // A runner's question does not expire: it waits for a person.
    assert!(question["expires_at"].is_null(), "{question}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(statuses(&weft)["one"], "in_progress");

    let id = question["id"].as_i64().unwrap().to_string();
    weft.ok(&["approvals", "allow", &id]);
    let output = run.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let statuses = statuses(&weft);
    assert_eq!(statuses["one"], "completed");
    assert_eq!(statuses["two"], "completed");
    assert!(log_of(&weft, "1").contains("ASK-ALLOWED Bash"));
    // The second task's `ls` was allowed by the remembered answer: nobody was asked.
    assert!(log_of(&weft, "2").contains("ASK-ALLOWED Bash"));
    assert!(open_questions(&weft).is_empty());
}

#[test]
fn a_denied_runner_question_reaches_the_agent_as_a_refusal() {
    let weft = Weft::with_agents();
    asking_plan(&weft, &[("one", "rm -rf build")]);
    let run = start_run(&weft, &[]);
    let question = next_question(&weft);
    let id = question["id"].as_i64().unwrap().to_string();
    weft.ok(&["approvals", "deny", &id]);
    let output = run.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "the agent planned around the refusal: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let log = log_of(&weft, "1");
    assert!(log.contains("ASK-DENIED Bash"), "{log}");
    assert!(log.contains("denied (asked)"), "{log}");
}

#[test]
fn pre_approved_scopes_and_the_deny_mode_decide_without_asking() {
    let weft = Weft::with_agents();
    asking_plan(&weft, &[("one", "ls"), ("two", "rm -rf build")]);
    let run = start_run(
        &weft,
        &["-c", "approvals=deny", "-c", "pre_approved=command:ls"],
    );
    let output = run.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(log_of(&weft, "1").contains("ASK-ALLOWED Bash"));
    let denied = log_of(&weft, "2");
    assert!(denied.contains("ASK-DENIED Bash"), "{denied}");
    assert!(denied.contains("denied (mode)"), "{denied}");
    assert!(open_questions(&weft).is_empty(), "nothing was asked");
}

#[test]
fn a_question_is_withdrawn_when_its_attempt_ends() {
    let weft = Weft::with_agents();
    asking_plan(&weft, &[("one", "ls")]);
    let run = start_run(&weft, &[]);
    let question = next_question(&weft);
    weft.ok(&["cancel", "1"]);
    let output = run.wait_with_output().unwrap();
    assert!(!output.status.success());
    assert_eq!(statuses(&weft)["one"], "cancelled");
    assert!(open_questions(&weft).is_empty());
    let id = question["id"].as_i64().unwrap().to_string();
    let late = weft.run(&["approvals", "allow", &id]);
    assert_eq!(late.code, 1, "{}", weft.show(&late));
    assert!(late.stderr.contains("withdrawn"), "{}", late.stderr);
}
