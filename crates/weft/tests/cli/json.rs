//! `--json`: every command that reports something prints its result as JSON on stdout and
//! nothing else there; an error is one JSON line on stderr with the exit code unchanged.

use serde_json::Value;

use crate::harness::{Run, Weft};

/// stdout as one JSON document.
fn json(run: &Run) -> Value {
    serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("weft {:?} printed no JSON ({e}):\n{}", run.args, run.stdout))
}

/// stderr as exactly one line holding a JSON error object; stdout empty.
fn json_error(run: &Run) -> Value {
    assert!(run.stdout.is_empty(), "stdout: {}", run.stdout);
    let lines: Vec<&str> = run.stderr.lines().collect();
    let [line] = lines.as_slice() else {
        panic!("expected one stderr line, got:\n{}", run.stderr)
    };
    let value: Value = serde_json::from_str(line).expect("the error line is JSON");
    assert!(value["error"].is_string(), "{value}");
    assert!(value["causes"].is_array(), "{value}");
    assert!(value.get("hint").is_some(), "{value}");
    value
}

#[test]
fn task_edit_with_json_prints_the_edited_task() {
    let weft = Weft::new();
    weft.import_sample();
    let run = weft.ok(&["task", "edit", "2", "--title", "Route it", "--json"]);
    let task = json(&run);
    assert_eq!(task["title"], "Route it");
    assert_eq!(task["order"], 2);
    assert_eq!(task["id"], "wire-the-limiter-into-the-router");
    assert_eq!(task["prompt"], "Use the limiter in every public route.");
    // The English report is for the person: on stderr.
    assert!(run.stderr.contains("#2"), "{}", run.stderr);
}

#[test]
fn an_unknown_task_with_json_is_one_json_error_line_on_stderr() {
    let weft = Weft::new();
    weft.import_sample();
    let run = weft.fails(&["task", "edit", "99", "--title", "T", "--json"], 1);
    let error = json_error(&run);
    assert!(
        error["error"].as_str().unwrap().contains("\"99\""),
        "{error}"
    );
    assert_eq!(
        error["hint"],
        "name a task by its order number, #order or id"
    );
    // The same failure without --json keeps its text form and exit code.
    let text = weft.fails(&["task", "edit", "99", "--title", "T"], 1);
    assert!(text.stderr.starts_with("error: "), "{}", text.stderr);
}

#[test]
fn every_task_edit_prints_the_task_it_made_changed_or_removed() {
    let weft = Weft::new();
    weft.import_sample();
    let added = json(&weft.ok(&[
        "task",
        "add",
        "--title",
        "Docs",
        "--prompt",
        "Write docs",
        "--at",
        "2",
        "--json",
    ]));
    assert_eq!(
        (added["id"].as_str(), added["order"].as_u64()),
        (Some("docs"), Some(2))
    );
    let wired = json(&weft.ok(&["task", "deps", "docs", "1", "--json"]));
    assert_eq!(wired["dependencies"], serde_json::json!(["limiter"]));
    let moved = json(&weft.ok(&["task", "move", "docs", "--to", "5", "--json"]));
    assert_eq!(moved["order"], 5);
    let held = json(&weft.ok(&["task", "hold", "docs", "--json"]));
    assert_eq!(held["hold"], true);
    let released = json(&weft.ok(&["task", "release", "docs", "--json"]));
    assert_eq!(released["hold"], false);
    let removed = json(&weft.ok(&["task", "remove", "docs", "--json"]));
    assert_eq!(
        (removed["id"].as_str(), removed["order"].as_u64()),
        (Some("docs"), Some(5))
    );
    assert_eq!(
        weft.status_json()["plan"]["tasks"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
}

#[test]
fn control_commands_print_the_task_afterwards() {
    let weft = Weft::new();
    weft.import_sample();
    let skipped = json(&weft.ok(&["skip", "1", "--json"]));
    assert_eq!(skipped["status"], "skipped");
    let back = json(&weft.ok(&["uncomplete", "1", "--json"]));
    assert_eq!(back["status"], "pending");
    let done = json(&weft.ok(&["complete", "1", "--json"]));
    assert_eq!(done["status"], "completed");
    let again = json(&weft.ok(&["retry", "1", "--json"]));
    assert_eq!(again["status"], "pending");
    let rearmed = json(&weft.ok(&["rearm", "1", "--model", "opus", "--json"]));
    assert_eq!(rearmed["model"], "opus");
    let forced = json(&weft.ok(&["force-start", "2", "--json"]));
    assert_eq!(forced["id"], "wire-the-limiter-into-the-router");
    let cancelled = json(&weft.ok(&["cancel", "2", "--json"]));
    assert_eq!(cancelled["status"], "cancelled");
    let manual = json(&weft.ok(&["manual", "4", "--json"]));
    assert_eq!(manual["steps"][0]["done"], false);
    assert_eq!(manual["steps"][1]["text"], "Confirm 429s appear under load");
    // Refusals are JSON errors with the usual exit code.
    json_error(&weft.fails(&["stop", "--json"], 1));
    json_error(&weft.fails(&["repair", "1", "--json"], 1));
    json_error(&weft.fails(&["handoff", "review", "--json"], 1));
    json_error(&weft.fails(&["approvals", "deny", "7", "--json"], 1));
}

#[test]
fn workspace_plan_and_session_commands_print_json() {
    let weft = Weft::new();
    let init = json(&weft.ok(&["init", "--json"]));
    assert_eq!(init["created"], true);
    weft.write("plan.toml", crate::harness::SAMPLE_TOML);
    let plan = json(&weft.ok(&["plan", "--file", "plan.toml", "--json"]));
    let id = plan["plan"]["id"].as_str().unwrap().to_owned();
    assert_eq!(plan["plan"]["tasks"].as_array().unwrap().len(), 4);
    let exported = json(&weft.ok(&["plan", "export", "--json"]));
    assert_eq!(exported["goal"], "Add rate limiting to the public API");
    let written = json(&weft.ok(&["plan", "export", "-o", "out.toml", "--json"]));
    assert_eq!(written["format"], "toml");
    json(&weft.ok(&["plan", "schema", "--json"]));
    let loaded = json(&weft.ok(&["sessions", "load", &id[..8], "--json"]));
    assert_eq!(
        (loaded["id"].as_str(), loaded["current"].as_bool()),
        (Some(&*id), Some(true))
    );
    let deleted = json(&weft.ok(&["sessions", "delete", &id[..8], "--yes", "--json"]));
    assert_eq!(deleted["deleted"], true);
    json_error(&weft.fails(&["status", "--json"], 1));
}

#[test]
fn settings_errors_are_json_too_and_keep_their_exit_code() {
    let weft = Weft::new();
    let flag = json_error(&weft.fails(&["-c", "parallel=0", "config", "--json"], 2));
    assert!(
        flag["error"]
            .as_str()
            .unwrap()
            .contains("command line (-c)"),
        "{flag}"
    );
    weft.write("weft.toml", "parallel = 0\n");
    let file = json_error(&weft.fails(&["config", "--json"], 1));
    assert!(
        file["error"].as_str().unwrap().contains("weft.toml"),
        "{file}"
    );
}

#[test]
fn a_usage_error_with_json_is_a_json_line_and_exits_2() {
    let weft = Weft::new();
    let missing = json_error(&weft.fails(&["task", "edit", "--json"], 2));
    assert!(
        missing["error"].as_str().unwrap().contains("<TASK>"),
        "{missing}"
    );
    let unknown = json_error(&weft.fails(&["task", "edit", "1", "--bogus", "--json"], 2));
    assert_eq!(unknown["error"], "unexpected argument '--bogus' found");
    // Help is not an error: it prints as usual, on stdout, with exit 0.
    let help = weft.ok(&["status", "--help", "--json"]);
    assert!(
        help.stdout.starts_with("Show the current plan"),
        "{}",
        help.stdout
    );
}

/// A large output to a pipe first grows the pipe (`commands::bulk_stdout`), so that writer
/// and reader take fewer turns; the output is the same.
#[test]
fn status_json_into_a_pipe_grows_the_pipe_first() {
    use nix::fcntl::{FcntlArg, fcntl};
    let weft = Weft::new();
    weft.import_sample();
    let expected = weft.status_json();
    let (read, write) = nix::unistd::pipe().unwrap();
    let mut command = weft.command(&["status", "--json"]);
    command.stdout(std::process::Stdio::from(write));
    let mut child = command.spawn().unwrap();
    drop(command);
    assert!(child.wait().unwrap().success());
    assert_eq!(fcntl(&read, FcntlArg::F_GETPIPE_SZ).unwrap(), 1024 * 1024);
    let mut out = String::new();
    std::io::Read::read_to_string(&mut std::fs::File::from(read), &mut out).unwrap();
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), expected);
}
