//! `weft plan "goal"`, `weft plan log`, `weft plan revise` and `weft approvals` against a
//! scripted OpenAI-compatible model on loopback (real HTTP, streamed), and an agent-CLI
//! planner replaying a recorded stream.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use weft_testkit::mock_model::{MockModel, MockReply};

use crate::harness::{Run, Weft};

const KEY: &str = "sk-test-0123456789abcdef";

/// A workspace with a small project the planner can read.
fn workspace() -> Weft {
    let weft = Weft::new();
    weft.write(
        "src/api.rs",
        "pub fn route(path: &str) -> &str {\n    path\n}\n",
    );
    weft.write("README.md", "# demo api\nA tiny API.\n");
    weft
}

fn planner_command(weft: &Weft, mock: &MockModel, args: &[&str]) -> Command {
    let mut command = weft.command(args);
    command
        .env("WEFT_PLANNER", "openai")
        .env("WEFT_PLANNER_BASE_URL", mock.base_url())
        .env("WEFT_PLANNER_API_KEY", KEY)
        .env("WEFT_PLANNER_MODEL", "mock-model")
        .env("WEFT_RUNNER", "exec");
    command
}

fn plan_with(weft: &Weft, mock: &MockModel, args: &[&str]) -> Run {
    weft.run_command(args, planner_command(weft, mock, args))
}

/// Run a conversation, feeding `input` on stdin.
fn converse(weft: &Weft, mock: &MockModel, args: &[&str], input: &str) -> Run {
    let mut command = planner_command(weft, mock, args);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().expect("weft starts");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    Run {
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// A stand-in `claude` in a folder put first on PATH: `body` is its shell script (after
/// the `#!`); `$BIN` names the folder. Returns the folder.
fn fake_claude(weft: &Weft, body: &str) -> std::path::PathBuf {
    let bin = weft.env.root().join("bin");
    fs_err::create_dir_all(&bin).unwrap();
    let script = bin.join("claude");
    fs_err::write(
        &script,
        format!("#!/bin/sh\nBIN='{}'\n{body}", bin.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    bin
}

/// `weft args` with the fake CLIs in `bin` first on PATH.
fn with_bin(weft: &Weft, bin: &std::path::Path, args: &[&str]) -> Command {
    let mut command = weft.command(args);
    let mut joined = bin.as_os_str().to_owned();
    joined.push(":");
    joined.push(std::env::var_os("PATH").unwrap_or_default());
    command.env("PATH", joined).env("WEFT_RUNNER", "exec");
    // The stand-in CLIs in `bin` record their argv and stdin there, outside the
    // workspace, which a confined planner cannot write.
    command.env("WEFT_CONFINE", "off");
    command
}

const CLAUDE_PLANNER: [&str; 5] = [
    "plan",
    "Add rate limiting",
    "--yes",
    "--planner",
    "claude-code",
];

fn plan_json() -> Value {
    json!({"tasks": [
        {"id": "limiter", "title": "Add a token-bucket limiter", "prompt": "Add src/limit.rs with a token bucket and unit tests.",
         "description": "Assumption: limits are per client IP."},
        {"id": "wire", "title": "Wire the limiter into the router", "prompt": "Call the limiter from src/api.rs route().",
         "dependencies": ["limiter"]},
        {"id": "verify", "title": "Verify end to end", "prompt": "Write an end-to-end test of 429 responses.",
         "dependencies": ["limiter", "wire"], "checks": ["true"]}
    ]})
}

fn plan_text() -> String {
    serde_json::to_string_pretty(&plan_json()).unwrap()
}

/// The messages of the `n`th chat request the model received.
fn messages(mock: &MockModel, n: usize) -> Vec<Value> {
    mock.chat_requests()[n].body["messages"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn last_message(mock: &MockModel, n: usize) -> String {
    messages(mock, n)
        .last()
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

fn task_ids(weft: &Weft) -> Vec<String> {
    weft.status_json()["plan"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_owned())
        .collect()
}

/// The current plan as a workflow file (every task field).
fn exported(weft: &Weft) -> Value {
    serde_json::from_str(&weft.ok(&["plan", "export", "--format", "json"]).stdout).unwrap()
}

fn log_json(weft: &Weft) -> Vec<Value> {
    serde_json::from_str::<Vec<Value>>(&weft.ok(&["plan", "log", "--json"]).stdout).unwrap()
}

#[test]
fn an_eager_one_shot_planner_commits_a_fenced_plan_with_a_trailing_comma() {
    let weft = workspace();
    let mut text = plan_text();
    // A trailing comma after the last task, inside a fence, after some prose.
    text = text.replacen("\n  ]\n}", ",\n  ]\n}", 1);
    assert!(text.contains(",\n  ]"), "{text}");
    let mock = MockModel::start(vec![MockReply::text(format!(
        "Here is the plan.\n```json\n{text}\n```\n"
    ))]);
    let run = plan_with(
        &weft,
        &mock,
        &["plan", "Add rate limiting to the public API", "--yes"],
    );
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    assert!(
        run.stdout.contains("Add a token-bucket limiter"),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains("it is now the current plan"),
        "{}",
        run.stderr
    );
    assert_eq!(task_ids(&weft), ["limiter", "wire", "verify"]);
    let file = exported(&weft);
    assert_eq!(file["goal"], "Add rate limiting to the public API");
    // The one-shot assumption landed in the task's description.
    assert_eq!(
        file["tasks"][0]["description"],
        "Assumption: limits are per client IP."
    );

    // What the model was sent: the rules, the tools, the key, the goal with project context.
    let request = &mock.chat_requests()[0];
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    let system = messages(&mock, 0)[0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        system.contains("one-shot run and nobody will answer"),
        "{system}"
    );
    assert!(system.contains("vertical slices"), "{system}");
    assert!(system.contains("verification task"), "{system}");
    let tools: Vec<&str> = request.body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    for tool in [
        "list_dir",
        "read_file",
        "search",
        "git_log",
        "git_show",
        "git_diff",
        "run_command",
    ] {
        assert!(tools.contains(&tool), "{tools:?}");
    }
    let opening = last_message(&mock, 0);
    assert!(
        opening.contains("<goal>\nAdd rate limiting to the public API"),
        "{opening}"
    );
    assert!(opening.contains("src/"), "{opening}");
    assert!(opening.contains("# demo api"), "{opening}");

    // The research log has the goal and the reply; the key is nowhere in it.
    let log = weft.ok(&["plan", "log", "--full"]);
    assert!(
        log.stdout.contains("planner openai:mock-model (one shot)"),
        "{}",
        log.stdout
    );
    assert!(
        log.stdout
            .contains("user: Add rate limiting to the public API\n       <project_context>"),
        "the goal, then the whole opening: {}",
        log.stdout
    );
    assert!(
        log.stdout.contains("assistant: Here is the plan."),
        "{}",
        log.stdout
    );
    assert!(!log.stdout.contains(KEY));
}

#[test]
fn an_interviewing_planner_researches_asks_one_question_outlines_then_plans() {
    let weft = workspace();
    let mock = MockModel::start(vec![
        MockReply::tool_calls(vec![("read_file", json!({"path": "src/api.rs"}))]),
        MockReply::text(
            "Where should the limits be configured? I found src/api.rs routes every request \
             through route(), so I recommend a constant there unless you want a config file.",
        ),
        MockReply::text(
            "Outline:\n1. Add the limiter.\n2. Wire it into route().\n3. Verify. Shall I write the plan?",
        ),
        MockReply::text(plan_text()),
    ]);
    let run = converse(
        &weft,
        &mock,
        &["plan", "Add rate limiting", "--interactive"],
        "a constant in src/api.rs\nyes, go ahead\n",
    );
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    assert!(
        run.stdout
            .contains("Where should the limits be configured?"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("Outline:"), "{}", run.stdout);
    assert_eq!(task_ids(&weft), ["limiter", "wire", "verify"]);

    // The tool ran for real and its result went back to the model.
    let second = messages(&mock, 1);
    let tool_result = second
        .iter()
        .find(|m| m["role"] == "tool")
        .expect("a tool result");
    assert!(
        tool_result["content"]
            .as_str()
            .unwrap()
            .contains("pub fn route"),
        "{tool_result}"
    );
    // Each user answer reached the model as its own message.
    assert_eq!(last_message(&mock, 2), "a constant in src/api.rs");
    assert_eq!(last_message(&mock, 3), "yes, go ahead");
    let system = messages(&mock, 0)[0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(system.contains("ONE question per message"), "{system}");
    assert!(system.contains("prose outline"), "{system}");

    let log = log_json(&weft);
    let tool = log
        .iter()
        .find(|e| e["kind"] == "tool")
        .expect("a tool entry");
    assert_eq!(tool["tool"], "read_file");
    assert_eq!(tool["outcome"], "success");
    let users: Vec<&str> = log
        .iter()
        .filter(|e| e["kind"] == "user")
        .map(|e| e["input"].as_str().unwrap())
        .collect();
    assert_eq!(users.len(), 3, "{log:?}");
    assert_eq!(users[1], "a constant in src/api.rs");
}

#[test]
fn broken_json_is_repaired_by_a_turn_that_quotes_the_parser_error() {
    let weft = workspace();
    let mock = MockModel::start(vec![
        MockReply::text(r#"{"tasks": [{"title": "A" "prompt": "x"}]}"#),
        MockReply::text(plan_text()),
    ]);
    let run = plan_with(&weft, &mock, &["plan", "Add rate limiting", "--yes"]);
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    let corrective = last_message(&mock, 1);
    assert!(corrective.contains("expected"), "{corrective}");
    assert!(corrective.contains("line 1"), "{corrective}");
    assert_eq!(task_ids(&weft).len(), 3);
}

#[test]
fn a_truncated_plan_gets_a_terser_re_emit_request() {
    let weft = workspace();
    let cut = &plan_text()[..120];
    let mock = MockModel::start(vec![
        MockReply::text_then_length(cut),
        MockReply::text(plan_text()),
    ]);
    let run = plan_with(&weft, &mock, &["plan", "Add rate limiting", "--yes"]);
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    let corrective = last_message(&mock, 1);
    assert!(corrective.to_lowercase().contains("brief"), "{corrective}");
    assert_ne!(
        corrective,
        last_message(&mock, 0),
        "not the same request again"
    );
}

#[test]
fn an_invalid_plan_is_corrected_with_its_exact_problems_then_refused_after_two_turns() {
    let weft = workspace();
    // A dependency on a later task (a cycle is impossible to write otherwise) and an
    // unknown runner.
    let bad = json!({"tasks": [
        {"id": "a", "title": "A", "prompt": "a", "dependencies": ["b"]},
        {"id": "b", "title": "B", "prompt": "b", "dependencies": ["a"], "runner": "nope"}
    ]})
    .to_string();
    let mock = MockModel::start(vec![
        MockReply::text(&bad),
        MockReply::text(&bad),
        MockReply::text(&bad),
    ]);
    let run = plan_with(&weft, &mock, &["plan", "Add rate limiting", "--yes"]);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    assert_eq!(
        mock.chat_requests().len(),
        3,
        "two corrective turns, no more"
    );
    let corrective = last_message(&mock, 1);
    assert!(corrective.contains("\"b\""), "{corrective}");
    assert!(corrective.contains("nope"), "{corrective}");
    assert!(
        run.stderr
            .contains("still invalid after 2 corrective turns"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("nope"), "{}", run.stderr);
    assert!(
        run.stderr.contains("weft plan log --plan"),
        "{}",
        run.stderr
    );
    // The draft keeps the log, with no tasks: nothing half-made can run.
    let shown = weft.ok(&["status"]);
    assert!(
        shown.stdout.contains("a planner draft with no plan yet"),
        "{}",
        shown.stdout
    );
    let status = weft.status_json();
    assert_eq!(status["plan"]["status"], "draft");
    assert_eq!(status["plan"]["tasks"].as_array().unwrap().len(), 0);
    let run = weft.run(&["run"]);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    assert!(run.stderr.contains("draft"), "{}", run.stderr);
}

#[test]
fn a_write_command_is_refused_with_a_reason_the_model_receives() {
    let weft = workspace();
    let mock = MockModel::start(vec![
        MockReply::tool_calls(vec![("run_command", json!({"command": "rm -rf src"}))]),
        MockReply::tool_calls(vec![(
            "run_command",
            json!({"command": "git log --oneline"}),
        )]),
        MockReply::text(plan_text()),
    ]);
    let run = plan_with(&weft, &mock, &["plan", "Add rate limiting", "--yes"]);
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    assert!(
        weft.work().join("src/api.rs").exists(),
        "nothing was removed"
    );
    let refusal = messages(&mock, 1)
        .into_iter()
        .rfind(|m| m["role"] == "tool")
        .unwrap();
    let text = refusal["content"].as_str().unwrap();
    assert!(text.contains("rm"), "{text}");
    let log = log_json(&weft);
    let outcomes: Vec<(&str, &str)> = log
        .iter()
        .filter(|e| e["kind"] == "tool")
        .map(|e| (e["input"].as_str().unwrap(), e["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(outcomes.len(), 2, "{outcomes:?}");
    assert_eq!(outcomes[0].1, "refused");
    assert_eq!(outcomes[1].1, "success");
}

#[test]
fn a_read_outside_the_workspace_asks_and_is_denied_at_the_prompt() {
    let weft = workspace();
    let outside = weft.env.root().join("outside");
    fs_err::create_dir_all(&outside).unwrap();
    fs_err::write(outside.join("secret.txt"), "top secret").unwrap();
    let mock = MockModel::start(vec![
        MockReply::tool_calls(vec![(
            "read_file",
            json!({"path": outside.join("secret.txt").display().to_string()}),
        )]),
        MockReply::text(plan_text()),
    ]);
    let run = converse(
        &weft,
        &mock,
        &["plan", "Add rate limiting", "--interactive"],
        "n\n",
    );
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    assert!(run.stderr.contains("approval 1:"), "{}", run.stderr);
    assert!(run.stderr.contains("denied (asked)"), "{}", run.stderr);
    let result = messages(&mock, 1)
        .into_iter()
        .rfind(|m| m["role"] == "tool")
        .unwrap();
    let text = result["content"].as_str().unwrap();
    assert!(!text.contains("top secret"), "{text}");
    assert!(text.contains("denied"), "{text}");
    let log = log_json(&weft);
    let step = log.iter().find(|e| e["kind"] == "tool").unwrap();
    assert_eq!(step["outcome"], "denied");
    assert_eq!(step["approval"], "denied (asked)");
}

#[test]
fn a_one_shot_run_has_nobody_to_ask_so_outside_reads_are_denied_at_once() {
    let weft = workspace();
    let mock = MockModel::start(vec![
        MockReply::tool_calls(vec![("list_dir", json!({"path": "/"}))]),
        MockReply::text(plan_text()),
    ]);
    let run = plan_with(&weft, &mock, &["plan", "Add rate limiting", "--yes"]);
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    let log = log_json(&weft);
    let step = log.iter().find(|e| e["kind"] == "tool").unwrap();
    assert_eq!(step["outcome"], "denied");
    assert_eq!(step["approval"], "denied (no-channel)");
    // --allow pre-approves a scope even so.
    let weft = workspace();
    let mock = MockModel::start(vec![
        MockReply::tool_calls(vec![("list_dir", json!({"path": "/"}))]),
        MockReply::text(plan_text()),
    ]);
    let run = plan_with(
        &weft,
        &mock,
        &["plan", "Add rate limiting", "--yes", "--allow", "path:/"],
    );
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    let log = log_json(&weft);
    let step = log.iter().find(|e| e["kind"] == "tool").unwrap();
    assert_eq!(step["outcome"], "success", "{step}");
    assert_eq!(step["approval"], "allowed (pre-approved)");
}

#[test]
fn another_terminal_answers_an_open_approval_with_weft_approvals() {
    let weft = workspace();
    let outside = weft.env.root().join("outside");
    fs_err::create_dir_all(&outside).unwrap();
    fs_err::write(outside.join("notes.txt"), "outside notes").unwrap();
    let mock = MockModel::start(vec![
        MockReply::tool_calls(vec![(
            "read_file",
            json!({"path": outside.join("notes.txt").display().to_string()}),
        )]),
        MockReply::text(plan_text()),
    ]);
    let args = ["plan", "Add rate limiting", "--interactive"];
    let mut command = planner_command(&weft, &mock, &args);
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command.spawn().unwrap();
    // Keep stdin open (nobody types here) and answer from "another terminal".
    let stdin = child.stdin.take().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let id = loop {
        let open: Vec<Value> =
            serde_json::from_str(&weft.ok(&["approvals", "--json"]).stdout).unwrap();
        if let Some(ask) = open.first() {
            assert_eq!(ask["scope"], format!("path:{}/*", outside.display()));
            break ask["id"].as_i64().unwrap();
        }
        assert!(Instant::now() < deadline, "no approval question appeared");
        std::thread::sleep(Duration::from_millis(100));
    };
    let unknown = weft.run(&["approvals", "allow", "999"]);
    assert_eq!(unknown.code, 1, "{}", weft.show(&unknown));
    assert!(
        unknown.stderr.contains("no approval question 999"),
        "{}",
        unknown.stderr
    );
    let bad_scope = weft.run(&["approvals", "allow", &id.to_string(), "--scope", "nonsense"]);
    assert_eq!(bad_scope.code, 1, "{}", weft.show(&bad_scope));
    weft.ok(&["approvals", "allow", &id.to_string()]);
    let again = weft.run(&["approvals", "deny", &id.to_string()]);
    assert_eq!(again.code, 1, "{}", weft.show(&again));
    assert!(again.stderr.contains("already"), "{}", again.stderr);
    // The planner applies the answer; the conversation needs a user reply after the plan?
    // No: the plan commits as soon as it is valid.
    let output = child.wait_with_output().unwrap();
    drop(stdin);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("allowed (asked)"), "{stderr}");
    let result = messages(&mock, 1)
        .into_iter()
        .rfind(|m| m["role"] == "tool")
        .unwrap();
    assert!(
        result["content"]
            .as_str()
            .unwrap()
            .contains("outside notes"),
        "{result}"
    );
    let listed: Vec<Value> =
        serde_json::from_str(&weft.ok(&["approvals", "--json"]).stdout).unwrap();
    assert!(listed.is_empty());
}

#[test]
fn a_prd_between_markers_is_saved_by_weft_and_revision_re_reads_it() {
    let weft = workspace();
    let prd = "<!-- WEFT_PRD_START slug=\"rate-limits\" -->\n# Rate limits\n\nClients get 429 after 100 requests a minute.\n<!-- WEFT_PRD_END -->";
    let mock = MockModel::start(vec![MockReply::text(format!("{prd}\n\n{}", plan_text()))]);
    let run = plan_with(&weft, &mock, &["plan", "Add rate limiting", "--yes"]);
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    let saved = weft.work().join(".scratch/rate-limits/PRD.md");
    let text = fs_err::read_to_string(&saved).unwrap();
    assert!(text.starts_with("# Rate limits"), "{text}");
    assert!(text.ends_with("a minute.\n"), "{text:?}");
    assert!(
        run.stderr.contains(".scratch/rate-limits/PRD.md"),
        "{}",
        run.stderr
    );
    let log = weft.ok(&["plan", "log"]);
    assert!(
        log.stdout.contains("PRD: .scratch/rate-limits/PRD.md"),
        "{}",
        log.stdout
    );

    // The user edits the PRD; the revision reads the file, not the conversation.
    fs_err::write(
        &saved,
        "# Rate limits\n\nAlso document the limits in docs/limits.md.\n",
    )
    .unwrap();
    weft.ok(&["complete", "1"]);
    let ops = json!({"taskOps": [
        {"op": "add", "task": {"id": "docs", "title": "Document the limits", "prompt": "Write docs/limits.md.", "dependencies": ["limiter"]}},
        {"op": "update", "task": "wire", "changes": {"prompt": "Call the limiter from route() and return 429."}}
    ]});
    let touching_done = json!({"taskOps": [
        {"op": "update", "task": "limiter", "changes": {"prompt": "rewrite history"}}
    ]});
    let mock = MockModel::start(vec![
        MockReply::text(touching_done.to_string()),
        MockReply::text(ops.to_string()),
    ]);
    let run = plan_with(
        &weft,
        &mock,
        &["plan", "revise", "Also document the limits", "--yes"],
    );
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    let opening = last_message(&mock, 0);
    assert!(
        opening.contains("docs/limits.md"),
        "the PRD file was read: {opening}"
    );
    assert!(opening.contains("<current_plan>"), "{opening}");
    assert!(opening.contains("Also document the limits"), "{opening}");
    // The edit to a completed task was refused and corrected.
    let corrective = last_message(&mock, 1);
    assert!(corrective.contains("limiter"), "{corrective}");
    let status = exported(&weft);
    let ids: Vec<&str> = status["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&"docs"), "{ids:?}");
    assert_eq!(
        status["tasks"][0]["prompt"], "Add src/limit.rs with a token bucket and unit tests.",
        "the completed task is untouched"
    );
    let wire = status["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == "wire")
        .unwrap();
    assert_eq!(
        wire["prompt"],
        "Call the limiter from route() and return 429."
    );
}

#[test]
fn the_endpoint_refusing_the_key_names_the_variable_it_came_from() {
    let weft = workspace();
    let mock = MockModel::start(vec![MockReply::status(401, "Incorrect API key provided")]);
    let args = ["plan", "Add rate limiting", "--yes"];
    let mut command = weft.command(&args);
    command
        .env("WEFT_PLANNER", "openai")
        .env("WEFT_PLANNER_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", KEY)
        .env("WEFT_PLANNER_MODEL", "mock-model");
    let run = weft.run_command(&args, command);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    assert!(run.stderr.contains("OPENAI_API_KEY"), "{}", run.stderr);
    assert!(run.stderr.contains("HTTP 401"), "{}", run.stderr);
    assert!(!run.stderr.contains(KEY), "{}", run.stderr);
    // With the key in WEFT_PLANNER_API_KEY, that is the variable named.
    let mock = MockModel::start(vec![MockReply::status(401, "bad key")]);
    let run = plan_with(&weft, &mock, &args);
    assert!(
        run.stderr.contains("WEFT_PLANNER_API_KEY"),
        "{}",
        run.stderr
    );
}

#[test]
fn endpoint_failures_name_the_address_and_lose_nothing() {
    let weft = workspace();
    weft.import_sample();
    let before = weft.status_json();

    // Unreachable: a port nobody listens on.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let args = ["plan", "Add rate limiting", "--yes"];
    let mut command = weft.command(&args);
    command
        .env("WEFT_PLANNER", "openai")
        .env(
            "WEFT_PLANNER_BASE_URL",
            format!("http://127.0.0.1:{port}/v1"),
        )
        .env("WEFT_PLANNER_MODEL", "m");
    let run = weft.run_command(&args, command);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    assert!(
        run.stderr.contains(&format!("127.0.0.1:{port}")),
        "{}",
        run.stderr
    );

    // HTTP 500 with the server's message.
    let mock = MockModel::start(vec![MockReply::status(500, "upstream exploded")]);
    let run = plan_with(&weft, &mock, &args);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    assert!(run.stderr.contains("HTTP 500"), "{}", run.stderr);
    assert!(run.stderr.contains("upstream exploded"), "{}", run.stderr);

    // The stream closed mid-reply.
    let mock = MockModel::start(vec![MockReply::cut("Let me think about the")]);
    let run = plan_with(&weft, &mock, &args);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    assert!(run.stderr.contains("closed the stream"), "{}", run.stderr);

    // Silence beyond the planner timeout.
    let mock = MockModel::start(vec![MockReply::hang()]);
    let timed = [
        "-c",
        "planner_timeout=1s",
        "plan",
        "Add rate limiting",
        "--yes",
    ];
    let run = plan_with(&weft, &mock, &timed);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    assert!(
        run.stderr.contains("did not answer within"),
        "{}",
        run.stderr
    );

    // The plan that was current is still current and unchanged.
    let after = weft.status_json();
    assert_eq!(before["plan"]["id"], after["plan"]["id"]);
    assert_eq!(before["plan"]["tasks"], after["plan"]["tasks"]);
}

#[test]
fn a_model_that_never_stops_calling_tools_is_ended_by_the_step_limit() {
    let weft = workspace();
    // Different calls each round (a repeated call would be answered without running).
    let call = |i: usize| {
        MockReply::tool_calls(vec![("list_dir", json!({"path": ".", "depth": 1 + i % 3}))])
    };
    let mock = MockModel::start((0..10).map(call).collect());
    let args = [
        "-c",
        "planner_max_steps=3",
        "plan",
        "Add rate limiting",
        "--yes",
    ];
    let run = plan_with(&weft, &mock, &args);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    assert!(
        run.stderr.contains("research budget of 3 steps"),
        "{}",
        run.stderr
    );
    // 3 executed rounds + 2 wrap-up rounds answered "not executed".
    assert_eq!(mock.chat_requests().len(), 5);
    let plan_id = run
        .stderr
        .split("weft plan log --plan ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_hexdigit()).next())
        .expect("the error names the draft")
        .to_owned();
    let log: Vec<Value> = serde_json::from_str(
        &weft
            .ok(&["--plan", &plan_id, "plan", "log", "--json"])
            .stdout,
    )
    .unwrap();
    let outcomes: Vec<&str> = log
        .iter()
        .filter(|e| e["kind"] == "tool")
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(
        outcomes,
        [
            "success",
            "success",
            "success",
            "not_executed",
            "not_executed"
        ]
    );
}

#[test]
fn an_agent_cli_planner_that_is_not_logged_in_shows_its_own_error() {
    let weft = workspace();
    let fixture = weft_testkit::samples::agent_output_file(
        "claude/cc2.1.197-stream-json-not-logged-in.jsonl",
    );
    let bin = fake_claude(
        &weft,
        &format!("cat > /dev/null\ncat '{}'\nexit 1\n", fixture.display()),
    );
    let args = CLAUDE_PLANNER;
    let command = with_bin(&weft, &bin, &args);
    let run = weft.run_command(&args, command);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    assert!(run.stderr.contains("Not logged in"), "{}", run.stderr);
    assert!(run.stderr.contains("claude-code"), "{}", run.stderr);
}

#[test]
fn planning_needs_a_goal_and_a_known_planner() {
    let weft = workspace();
    let run = weft.run(&["plan", "  ", "--yes"]);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    assert!(run.stderr.contains("the goal is empty"), "{}", run.stderr);
    let run = weft.run(&["plan", "x", "--yes", "--planner", "gemini"]);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    assert!(
        run.stderr.contains("unknown planner \"gemini\""),
        "{}",
        run.stderr
    );
    // openai without a model says which variable to set.
    let run = weft.run(&["plan", "x", "--yes", "--planner", "openai"]);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    assert!(run.stderr.contains("WEFT_PLANNER_MODEL"), "{}", run.stderr);
    // A plan from a file has no research log.
    weft.import_sample();
    let run = weft.run(&["plan", "log"]);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    assert!(
        run.stderr.contains("was not written by the planner"),
        "{}",
        run.stderr
    );
    // No open questions.
    let run = weft.ok(&["approvals"]);
    assert!(
        run.stderr.contains("no approval question is open"),
        "{}",
        run.stderr
    );
}

#[test]
fn an_agent_cli_planner_researches_in_plan_mode_and_its_plan_is_committed() {
    let weft = workspace();
    let bin = weft.env.root().join("bin");
    fs_err::create_dir_all(&bin).unwrap();
    let session = "11111111-2222-4333-8444-555555555555";
    let lines = [
        json!({"type": "system", "subtype": "init", "session_id": session, "cwd": weft.work()}),
        json!({"type": "assistant", "parent_tool_use_id": null, "session_id": session,
               "message": {"id": "m1", "role": "assistant", "content": [
                   {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "src/api.rs"}}]}}),
        json!({"type": "user", "parent_tool_use_id": null, "session_id": session,
               "message": {"role": "user", "content": [
                   {"type": "tool_result", "tool_use_id": "t1", "content": "pub fn route"}]}}),
        json!({"type": "assistant", "parent_tool_use_id": null, "session_id": session,
               "message": {"id": "m2", "role": "assistant", "content": [
                   {"type": "text", "text": plan_text()}]}}),
        json!({"type": "result", "subtype": "success", "is_error": false, "session_id": session,
               "result": plan_text(), "usage": {"input_tokens": 10, "output_tokens": 20}}),
    ];
    let stream = bin.join("stream.jsonl");
    fs_err::write(
        &stream,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    fake_claude(
        &weft,
        &format!(
            "for a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$BIN/argv\"\ncat > \"$BIN/stdin\"\ncat '{}'\n",
            stream.display()
        ),
    );
    let args = CLAUDE_PLANNER;
    let command = with_bin(&weft, &bin, &args);
    let run = weft.run_command(&args, command);
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    assert_eq!(task_ids(&weft), ["limiter", "wire", "verify"]);
    let argv = fs_err::read_to_string(bin.join("argv")).unwrap();
    assert!(argv.contains("-p\n"), "{argv}");
    assert!(argv.contains("--permission-mode\nplan\n"), "{argv}");
    assert!(
        argv.contains("--append-system-prompt\nYou are weft's planner"),
        "{argv}"
    );
    let stdin = fs_err::read_to_string(bin.join("stdin")).unwrap();
    assert!(stdin.contains("<goal>\nAdd rate limiting"), "{stdin}");
    let log = log_json(&weft);
    let step = log
        .iter()
        .find(|e| e["kind"] == "tool")
        .expect("the Read step");
    assert_eq!(step["tool"], "Read");
    assert_eq!(step["outcome"], "success");
    let info = weft.ok(&["plan", "log"]);
    assert!(
        info.stdout.contains("planner claude-code (one shot)"),
        "{}",
        info.stdout
    );
}

#[test]
fn ctrl_c_stops_an_agent_cli_planner_and_keeps_the_draft() {
    let weft = workspace();
    let bin = fake_claude(
        &weft,
        "cat > /dev/null\nsleep 120 & echo $! > \"$BIN/sleep.pid\"\nwait\n",
    );
    let args = CLAUDE_PLANNER;
    let mut command = with_bin(&weft, &bin, &args);
    command.stdout(Stdio::null()).stderr(Stdio::piped());
    let child = command.spawn().unwrap();
    let pid_file = bin.join("sleep.pid");
    let deadline = Instant::now() + Duration::from_secs(30);
    while fs_err::read_to_string(&pid_file).map_or(true, |t| t.trim().is_empty()) {
        assert!(Instant::now() < deadline, "the planner CLI never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let sleeper: u32 = fs_err::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    // Gone, or a zombie waiting for init to reap it.
    let running = fs_err::read_to_string(format!("/proc/{sleeper}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    });
    assert!(!running, "the planner CLI's child survived Ctrl-C");
    // The draft keeps what was logged.
    let status = weft.status_json();
    assert_eq!(status["plan"]["status"], "draft");
}

#[test]
fn a_fully_specified_goal_is_planned_without_a_question_even_in_a_conversation() {
    let weft = workspace();
    let mock = MockModel::start(vec![MockReply::text(plan_text())]);
    // Nothing is typed: the plan commits on the first reply.
    let run = converse(
        &weft,
        &mock,
        &["plan", "Add a token bucket to route()", "--interactive"],
        "",
    );
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    assert!(
        !run.stderr.contains("you>"),
        "nobody was asked: {}",
        run.stderr
    );
    assert_eq!(task_ids(&weft), ["limiter", "wire", "verify"]);
    assert_eq!(mock.chat_requests().len(), 1);
}

#[test]
fn a_revision_at_a_terminal_may_ask_one_question_first() {
    let weft = workspace();
    let mock = MockModel::start(vec![MockReply::text(plan_text())]);
    plan_with(&weft, &mock, &["plan", "Add rate limiting", "--yes"]);
    let ops = json!({"taskOps": [
        {"op": "add", "task": {"id": "docs", "title": "Document the limits", "prompt": "Write docs/limits.md."}}
    ]});
    let mock = MockModel::start(vec![
        MockReply::text(
            "Should the docs go in README.md or a new docs/limits.md? I recommend docs/limits.md.",
        ),
        MockReply::text(ops.to_string()),
    ]);
    let run = converse(
        &weft,
        &mock,
        &["plan", "revise", "Document the limits", "--interactive"],
        "docs/limits.md\n",
    );
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    assert!(run.stdout.contains("Should the docs go"), "{}", run.stdout);
    assert_eq!(last_message(&mock, 1), "docs/limits.md");
    assert!(task_ids(&weft).contains(&"docs".to_owned()));
    let log = weft.ok(&["plan", "log"]);
    assert!(
        log.stdout.contains("user: revise: Document the limits"),
        "{}",
        log.stdout
    );
}

/// `run` with the mock's port written as PORT, for snapshots.
fn portless(mut run: Run, mock_port: Option<u16>) -> Run {
    if let Some(port) = mock_port {
        run.stdout = run.stdout.replace(&port.to_string(), "PORT");
        run.stderr = run.stderr.replace(&port.to_string(), "PORT");
    }
    run
}

#[test]
fn what_a_one_shot_plan_and_its_log_look_like() {
    let weft = workspace();
    let mock = MockModel::start(vec![
        MockReply::tool_calls(vec![
            ("read_file", json!({"path": "src/api.rs"})),
            ("run_command", json!({"command": "rm -rf src"})),
        ]),
        MockReply::text(format!("I read src/api.rs.\n```json\n{}\n```", plan_text())),
    ]);
    let plan = plan_with(&weft, &mock, &["plan", "Add rate limiting", "--yes"]);
    let log = weft.run(&["plan", "log"]);
    crate::snapshot!(weft, plan, log);
}

#[test]
fn what_planner_failures_look_like() {
    let weft = workspace();
    let args = ["plan", "Add rate limiting", "--yes"];
    let mock = MockModel::start(vec![MockReply::status(401, "Incorrect API key provided")]);
    let port = mock.address().port();
    let refused = portless(plan_with(&weft, &mock, &args), Some(port));
    let mock = MockModel::start(vec![MockReply::status(500, "upstream exploded")]);
    let port = mock.address().port();
    let failed = portless(plan_with(&weft, &mock, &args), Some(port));
    let no_model = weft.run(&["plan", "x", "--yes", "--planner", "openai"]);
    let unknown = weft.run(&["plan", "x", "--yes", "--planner", "gemini"]);
    let none_open = weft.run(&["approvals"]);
    let no_ask = weft.run(&["approvals", "deny", "7"]);
    crate::snapshot!(weft, refused, failed, no_model, unknown, none_open, no_ask);
}

#[test]
fn an_agent_cli_planner_that_is_not_installed_is_refused_before_anything_is_stored() {
    let weft = workspace();
    let args = ["plan", "x", "--yes", "--planner", "opencode"];
    let mut command = weft.command(&args);
    // A PATH without any agent CLI.
    command.env("PATH", "/usr/bin:/bin");
    let run = weft.run_command(&args, command);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    assert!(
        run.stderr
            .contains("opencode is not installed or is not on PATH"),
        "{}",
        run.stderr
    );
    assert!(!weft.db_path().exists(), "nothing was stored");
}

#[test]
fn planner_names_and_flags_are_checked_the_same_everywhere() {
    let weft = workspace();
    // `--effort` means nothing to an API planner: refused, not silently dropped.
    let run = weft.run(&[
        "plan",
        "x",
        "--yes",
        "--planner",
        "openai",
        "--effort",
        "high",
    ]);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    assert!(
        run.stderr
            .contains("--effort applies to agent-CLI planners"),
        "{}",
        run.stderr
    );
    // The setting takes the names `--planner` takes.
    weft.ok(&["-c", "planner=claude", "config"]);
    let bad = weft.run(&["-c", "planner=gemini", "config"]);
    assert_eq!(bad.code, 2, "{}", weft.show(&bad));
}

/// With `--json`, stdout carries only the committed plan: the planner's own words (its
/// question, its outline) go to stderr with the notes.
#[test]
fn a_conversation_with_json_prints_only_the_plan_on_stdout() {
    let weft = workspace();
    let mock = MockModel::start(vec![
        MockReply::text("Where should the limits live? I recommend a constant in src/api.rs."),
        MockReply::text("Outline:\n1. Add the limiter.\n2. Wire it.\n3. Verify. Shall I?"),
        MockReply::text(plan_text()),
    ]);
    let run = converse(
        &weft,
        &mock,
        &["plan", "Add rate limiting", "--interactive", "--json"],
        "a constant\nyes\n",
    );
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    let plan: Value = serde_json::from_str(&run.stdout).expect("stdout is the plan as JSON");
    let ids: Vec<&str> = plan["plan"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["limiter", "wire", "verify"]);
    assert!(
        run.stderr.contains("Where should the limits live?"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("Outline:"), "{}", run.stderr);
    // A revision with --json prints the revised plan the same way.
    let ops = json!({"taskOps": [
        {"op": "add", "task": {"id": "docs", "title": "Document the limits", "prompt": "Write docs/limits.md."}}
    ]});
    let mock = MockModel::start(vec![MockReply::text(ops.to_string())]);
    let revised = plan_with(&weft, &mock, &["plan", "revise", "Add docs", "--json"]);
    assert_eq!(revised.code, 0, "{}", weft.show(&revised));
    let again: Value = serde_json::from_str(&revised.stdout).expect("stdout is the plan as JSON");
    assert_eq!(again["plan"]["id"], plan["plan"]["id"]);
    assert_eq!(again["plan"]["tasks"][3]["id"], "docs");
}
