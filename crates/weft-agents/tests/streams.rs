//! Stream parsers against every sample stream in weft-testkit's `data/agent-output/` (the
//! real CLIs' recordings and a few hand-written streams in the shapes of real-model
//! sessions), and against garbage.

use proptest::prelude::*;
use weft_agents::evidence::{View, text_contains_marker};
use weft_agents::stream::{self, MESSAGE_MAX, TOOL_SUMMARY_MAX};
use weft_agents::{AgentEvent, StreamKind, ToolOutcome};
use weft_testkit::samples::{agent_output, agent_output_file};

const ORCH_MARKER: &str = "ORCH-DONE-MARKER-7f3a9c";
const ORCH_FINAL: &str = "All done. ORCH-DONE-MARKER-7f3a9c";
const WEFT_MARKER: &str = "WEFT_DONE_0123456789abcdef";
const WEFT_FINAL: &str = "All done: hello.txt has been written. WEFT_DONE_0123456789abcdef";

/// Tool output and prompts seen in the fixtures: never assistant text.
const NOT_ASSISTANT: &[&str] = &[
    "hello from the fixture file",
    "This command requires approval",
    "was blocked. For security",
    "File created successfully",
    "hihello.txt",
    "hi\nhello.txt",
    "<path>",
    "<file>",
    "Wrote file successfully",
    "Your previous response had no visible output",
];

fn read(rel: &str) -> String {
    let path = agent_output_file(rel);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Every event of a stdout text fed line by line (`\r` kept), then `finish`.
fn parse_text(kind: StreamKind, text: &str) -> Vec<AgentEvent> {
    let mut parser = stream::parser(kind);
    let mut events = Vec::new();
    for line in text.split('\n') {
        events.extend(parser.line(line));
    }
    events.extend(parser.finish());
    assert!(parser.finish().is_empty(), "finish twice yields nothing");
    events
}

/// What a stream said, gathered.
#[derive(Debug, Default)]
struct Summary {
    sessions: Vec<String>,
    texts: Vec<String>,
    tools: Vec<(String, String)>,
    denials: Vec<(String, String)>,
    usages: Vec<(Option<u64>, Option<u64>, Option<f64>)>,
    finals: Vec<(Option<String>, bool, Option<String>)>,
    errors: Vec<String>,
}

impl Summary {
    fn of(events: &[AgentEvent]) -> Summary {
        let mut s = Summary::default();
        for event in events {
            match event.clone() {
                AgentEvent::Session { id } => s.sessions.push(id),
                AgentEvent::AssistantText { text, .. } => s.texts.push(text),
                AgentEvent::ToolUse { name, summary, .. } => s.tools.push((name, summary)),
                AgentEvent::PermissionDenied { tool, detail, .. } => {
                    s.denials.push((tool, detail));
                }
                AgentEvent::Usage {
                    input_tokens,
                    output_tokens,
                    cost_usd,
                    ..
                } => s.usages.push((input_tokens, output_tokens, cost_usd)),
                AgentEvent::Final {
                    text,
                    is_error,
                    detail,
                } => s.finals.push((text, is_error, detail)),
                AgentEvent::Error { message } => s.errors.push(message),
                AgentEvent::ToolResult { .. }
                | AgentEvent::Reasoning { .. }
                | AgentEvent::PlanText { .. }
                | AgentEvent::Truncated
                | AgentEvent::Spend { .. } => {}
            }
        }
        s
    }

    fn session(&self) -> &str {
        assert_eq!(self.sessions.len(), 1, "one session event: {self:?}");
        &self.sessions[0]
    }

    fn the_final(&self) -> &(Option<String>, bool, Option<String>) {
        assert_eq!(self.finals.len(), 1, "one final event: {self:?}");
        &self.finals[0]
    }

    fn last_usage(&self) -> (Option<u64>, Option<u64>, Option<f64>) {
        *self.usages.last().expect("a usage event")
    }

    fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(|(n, _)| n.as_str()).collect()
    }
}

fn parse(kind: StreamKind, rel: &str) -> Summary {
    let events = parse_text(kind, &read(rel));
    let summary = Summary::of(&events);
    // Invariants for every fixture.
    for text in &summary.texts {
        for never in NOT_ASSISTANT {
            assert!(
                !text.contains(never),
                "{rel}: tool output {never:?} in {text:?}"
            );
        }
    }
    for (name, s) in &summary.tools {
        assert!(
            s.chars().count() <= TOOL_SUMMARY_MAX,
            "{rel}: {name} summary too long"
        );
    }
    for e in &summary.errors {
        assert!(e.chars().count() <= MESSAGE_MAX);
    }
    // The final event, when there is one, is the last.
    if !summary.finals.is_empty() {
        assert!(
            matches!(events.last(), Some(AgentEvent::Final { .. })),
            "{rel}"
        );
    }
    summary
}

fn claude(rel: &str) -> Summary {
    parse(StreamKind::ClaudeStreamJson, &format!("claude/{rel}"))
}

fn codex(rel: &str) -> Summary {
    parse(StreamKind::CodexJson, &format!("codex/{rel}"))
}

fn opencode(rel: &str) -> Summary {
    parse(StreamKind::OpencodeJson, &format!("opencode/{rel}"))
}

fn ok_final(s: &Summary, text: &str) {
    let (t, is_error, detail) = s.the_final();
    assert_eq!(t.as_deref(), Some(text));
    assert!(!is_error);
    assert_eq!(detail, &None);
}

fn err_final(s: &Summary) -> (Option<&str>, &str) {
    let (t, is_error, detail) = s.the_final();
    assert!(is_error, "{s:?}");
    (t.as_deref(), detail.as_deref().expect("a failure detail"))
}

// ---------------------------------------------------------------------------------------
// Every stream fixture is covered

/// Stream files by folder, as listed in the fixtures README: each must be in the tests
/// below (a new fixture fails here until it gets expectations).
const COVERED: &[&str] = &[
    "claude/cc2.1.197-stream-json-allowedtools-bash.jsonl",
    "claude/cc2.1.197-stream-json-bad-model-404.jsonl",
    "claude/cc2.1.197-stream-json-error-max-turns.jsonl",
    "claude/cc2.1.197-stream-json-include-partial-messages.jsonl",
    "claude/cc2.1.197-stream-json-invalid-api-key-401.jsonl",
    "claude/cc2.1.197-stream-json-not-logged-in.jsonl",
    "claude/cc2.1.197-stream-json-permission-prompt-tool-stdio.stdin.jsonl",
    "claude/cc2.1.197-stream-json-permission-prompt-tool-stdio.stdout.jsonl",
    "claude/cc2.1.197-stream-json-permission-required-denied.jsonl",
    "claude/cc2.1.197-stream-json-tool-read-success.jsonl",
    "claude/cc2.1.197-stream-json-write-file-success.jsonl",
    "claude/cc2.1.197-stream-json-write-outside-workdir-denied.jsonl",
    "claude/cc2.1.197-output-format-json-resume.json",
    "claude/cc2.1.197-output-format-json-success.json",
    "claude/handwritten-stream-json-one-answer.ndjson",
    "claude/handwritten-result-success-pretty.json",
    "claude/failure-401.stdout.jsonl",
    "claude/failure-500.stdout.jsonl",
    "claude/failure-hang.stdout.jsonl",
    "claude/failure-hang_midstream.stdout.jsonl",
    "claude/failure-refused.stdout.jsonl",
    "codex/cx0.171.0-exec-json-bad-model.jsonl",
    "codex/cx0.171.0-exec-json-invalid-api-key-401.jsonl",
    "codex/cx0.171.0-exec-json-missing-env-key.jsonl",
    "codex/cx0.171.0-exec-json-no-network-killed.jsonl",
    "codex/cx0.171.0-exec-json-resume.jsonl",
    "codex/cx0.171.0-exec-json-success.jsonl",
    "codex/cx0.171.0-exec-json-write-file-success.jsonl",
    "codex/failure-401.stdout.jsonl",
    "codex/failure-500.stdout.jsonl",
    "codex/failure-hang.stdout.jsonl",
    "codex/failure-hang_midstream.stdout.jsonl",
    "codex/failure-refused.stdout.jsonl",
    "opencode/oc1.1.53-run-format-json-tool-read-success.jsonl",
    "opencode/oc1.18.33-run-format-json-continue-session.jsonl",
    "opencode/oc1.18.33-run-format-json-invalid-api-key-401.jsonl",
    "opencode/oc1.18.33-run-format-json-no-provider-default-zen-no-network.jsonl",
    "opencode/oc1.18.33-run-format-json-permission-auto-approved.jsonl",
    "opencode/oc1.18.33-run-format-json-permission-auto-rejected.jsonl",
    "opencode/oc1.18.33-run-format-json-permission-auto-rejected.stderr.txt",
    "opencode/oc1.18.33-run-format-json-tool-read-success.jsonl",
    "opencode/oc1.18.33-run-format-json-unknown-model.jsonl",
    "opencode/oc1.18.33-run-format-json-write-file-success.jsonl",
    "opencode/oc1.18.33-run-session-not-found.stderr.txt",
    "opencode/failure-401.stdout.jsonl",
    "opencode/failure-500.stdout.jsonl",
    "opencode/failure-hang.stdout.jsonl",
    "opencode/failure-hang_midstream.stdout.jsonl",
    "opencode/failure-refused.stdout.jsonl",
];

#[test]
fn every_stream_fixture_is_covered() {
    let is_stream = |dir: &str, name: &str| match dir {
        "claude" => {
            name.contains("stream-json")
                || name.ends_with(".ndjson")
                || name.starts_with("failure-")
                || name.contains("output-format-json")
                || name.contains("result-success")
        }
        "codex" => name.contains("exec-json") || name.starts_with("failure-"),
        _ => {
            name.contains("run-format-json")
                || name.starts_with("failure-")
                || name.contains("run-session")
        }
    };
    let mut found = 0;
    for dir in ["claude", "codex", "opencode"] {
        for entry in std::fs::read_dir(agent_output().join(dir)).expect("fixture folder") {
            let name = entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned();
            if is_stream(dir, &name) {
                found += 1;
                let rel = format!("{dir}/{name}");
                assert!(
                    COVERED.contains(&rel.as_str()),
                    "uncovered stream fixture {rel}"
                );
            }
        }
    }
    assert_eq!(found, COVERED.len());
}

// ---------------------------------------------------------------------------------------
// Claude Code

#[test]
fn claude_tool_read_success() {
    let s = claude("cc2.1.197-stream-json-tool-read-success.jsonl");
    assert_eq!(s.session(), "11111111-2222-4333-8444-555555555555");
    assert_eq!(s.texts, ["I will use a tool first.", ORCH_FINAL]);
    assert_eq!(
        s.tools,
        [(
            "Read".to_owned(),
            "/tmp/mockproj-claude/hello.txt".to_owned()
        )]
    );
    assert!(s.denials.is_empty());
    assert_eq!(s.last_usage(), (Some(240), Some(40), Some(0.00132)));
    assert!(s.errors.is_empty());
    ok_final(&s, ORCH_FINAL);
}

#[test]
fn claude_permission_denied_runs_still_succeed() {
    let s = claude("cc2.1.197-stream-json-permission-required-denied.jsonl");
    assert_eq!(s.session(), "33333333-2222-4333-8444-555555555555");
    assert_eq!(s.texts, ["I will use a tool first.", ORCH_FINAL]);
    assert_eq!(
        s.denials,
        [("Bash".to_owned(), "python3 -c \"print(6*7)\"".to_owned())]
    );
    ok_final(&s, ORCH_FINAL);

    let s = claude("cc2.1.197-stream-json-write-outside-workdir-denied.jsonl");
    assert_eq!(s.session(), "22222222-2222-4333-8444-555555555555");
    assert_eq!(
        s.denials,
        [(
            "Bash".to_owned(),
            "touch /tmp/mockproj-claude/made-by-bash".to_owned()
        )]
    );
    ok_final(&s, ORCH_FINAL);
}

#[test]
fn claude_allowed_tools_and_prompt_tool() {
    let s = claude("cc2.1.197-stream-json-allowedtools-bash.jsonl");
    assert_eq!(s.session(), "61af78a0-b5e7-44bc-99a4-c86aa8451692");
    assert_eq!(s.tool_names(), ["Bash"]);
    assert!(s.denials.is_empty());
    assert!(!s.texts.iter().any(|t| t == "42"));
    ok_final(&s, ORCH_FINAL);

    let s = claude("cc2.1.197-stream-json-permission-prompt-tool-stdio.stdout.jsonl");
    assert_eq!(s.session(), "de7e080d-3790-4453-a9c7-1cca4e1727f6");
    assert_eq!(s.texts, ["I will use a tool first.", ORCH_FINAL]);
    assert_eq!(s.tool_names(), ["Bash"]);
    assert!(
        s.denials.is_empty(),
        "an answered control_request is no denial"
    );
    ok_final(&s, ORCH_FINAL);

    // What the driver sent on stdin: a user message (the prompt) and a control response.
    let s = claude("cc2.1.197-stream-json-permission-prompt-tool-stdio.stdin.jsonl");
    assert!(s.texts.is_empty() && s.finals.is_empty() && s.sessions.is_empty());
}

#[test]
fn claude_error_max_turns() {
    let s = claude("cc2.1.197-stream-json-error-max-turns.jsonl");
    assert_eq!(s.session(), "6c67c437-54f0-4ae0-82e4-abde2a968775");
    assert_eq!(s.texts, ["I will use a tool first."]);
    assert_eq!(s.last_usage(), (Some(120), Some(20), Some(0.00066)));
    let (text, detail) = err_final(&s);
    assert_eq!(text, None, "error subtypes have no result");
    assert_eq!(
        detail,
        "error_max_turns; Reached maximum number of turns (1)"
    );
}

#[test]
fn claude_synthetic_api_errors_are_errors_not_text() {
    let cases = [
        (
            "cc2.1.197-stream-json-bad-model-404.jsonl",
            "b01dc32b-ca44-4d83-bcba-e899f2a079bd",
            "model_not_found: There's an issue with the selected model",
            "(HTTP 404)",
        ),
        (
            "cc2.1.197-stream-json-invalid-api-key-401.jsonl",
            "5d04b993-8198-4b72-aa2c-e2ad999eae1f",
            "authentication_failed: Invalid API key",
            "(HTTP 401)",
        ),
        (
            "cc2.1.197-stream-json-not-logged-in.jsonl",
            "7e7f582e-4bba-49a0-9465-dbf75a2893d9",
            "authentication_failed: Not logged in",
            "Not logged in · Please run /login",
        ),
        (
            "failure-401.stdout.jsonl",
            "9dfa98b1-f3f7-4b9e-b830-efd785f63556",
            "authentication_failed: Invalid API key",
            "(HTTP 401)",
        ),
    ];
    for (file, session, error, detail_part) in cases {
        let s = claude(file);
        assert_eq!(s.session(), session, "{file}");
        assert!(s.texts.is_empty(), "{file}: {:?}", s.texts);
        assert_eq!(s.errors.len(), 1, "{file}");
        assert!(s.errors[0].starts_with(error), "{file}: {}", s.errors[0]);
        let (text, detail) = err_final(&s);
        assert!(text.is_some(), "{file}: the error text is the result");
        assert!(detail.contains(detail_part), "{file}: {detail}");
        assert_eq!(s.last_usage(), (Some(0), Some(0), Some(0.0)));
    }
}

#[test]
fn claude_retries_then_failure() {
    let s = claude("failure-500.stdout.jsonl");
    assert_eq!(s.session(), "065f47d1-f774-41ba-9e8f-569137fad3a9");
    assert_eq!(s.errors.len(), 11);
    assert_eq!(s.errors[0], "API retry 1/10: server_error (HTTP 500)");
    assert_eq!(s.errors[9], "API retry 10/10: server_error (HTTP 500)");
    assert!(s.errors[10].starts_with("server_error: API Error: 500"));
    let (_, detail) = err_final(&s);
    assert!(detail.contains("(HTTP 500)"));

    let s = claude("failure-refused.stdout.jsonl");
    assert_eq!(s.session(), "a636cba7-46ff-44f1-8ce0-8337b65ed34b");
    assert_eq!(s.errors.len(), 11);
    assert_eq!(s.errors[0], "API retry 1/10: unknown");
    let (text, _) = err_final(&s);
    assert_eq!(
        text,
        Some("API Error: Unable to connect to API (ConnectionRefused)")
    );
}

#[test]
fn claude_hangs_have_no_final() {
    let s = claude("failure-hang.stdout.jsonl");
    assert_eq!(s.session(), "709910a7-400a-4c7c-8e5c-2eeb326d91e7");
    assert_eq!(s.errors, ["API retry 1/10: unknown"]);
    assert!(s.finals.is_empty() && s.texts.is_empty());

    // A synthetic "continue" nudge from the CLI is a user message, not the assistant.
    let s = claude("failure-hang_midstream.stdout.jsonl");
    assert_eq!(s.session(), "ad96728c-6579-45ea-b015-adb28b3373e3");
    assert!(s.finals.is_empty() && s.texts.is_empty() && s.errors.is_empty());
}

#[test]
fn claude_partial_messages_count_once() {
    let s = claude("cc2.1.197-stream-json-include-partial-messages.jsonl");
    assert_eq!(s.session(), "16e3a375-055b-4252-93fb-7ac0650b9282");
    // The deltas ("All done. OR", "CH-DONE-MARK", ...) are not texts; the full message is.
    assert_eq!(s.texts, [ORCH_FINAL]);
    assert_eq!(s.last_usage(), (Some(120), Some(20), Some(0.00066)));
    ok_final(&s, ORCH_FINAL);
}

#[test]
fn claude_write_file_success_has_the_marker() {
    let s = claude("cc2.1.197-stream-json-write-file-success.jsonl");
    assert_eq!(s.session(), "652df806-db08-4cef-ab6f-8029a23637db");
    assert_eq!(
        s.texts,
        [
            "I will create hello.txt now.",
            "Checking the file.",
            WEFT_FINAL
        ]
    );
    assert_eq!(
        s.tools,
        [
            (
                "Write".to_owned(),
                "/tmp/weft-sample/wd-claude/hello.txt".to_owned()
            ),
            ("Bash".to_owned(), "cat hello.txt && ls".to_owned()),
        ]
    );
    assert_eq!(s.last_usage(), (Some(300), Some(30), Some(0.00135)));
    ok_final(&s, WEFT_FINAL);
    assert_eq!(
        text_contains_marker(&s.texts[2], WEFT_MARKER),
        Some(View::Raw)
    );
    assert!(
        s.texts[..2]
            .iter()
            .all(|t| text_contains_marker(t, WEFT_MARKER).is_none())
    );
}

#[test]
fn claude_one_answer_streams_and_json_results() {
    // A real model's one-turn answer (2.1.7 shapes): the assistant message's usage is a
    // running figure; the result's is the one that counts.
    let s = claude("handwritten-stream-json-one-answer.ndjson");
    assert_eq!(s.session(), "798e980c-1cea-403c-8cb1-171791d36a86");
    assert_eq!(s.texts, ["Seven."]);
    assert_eq!(s.last_usage(), (Some(12), Some(29), Some(0.1284125)));
    ok_final(&s, "Seven.");

    // `--output-format json`: the single result object.
    let s = claude("cc2.1.197-output-format-json-success.json");
    assert_eq!(s.session(), "ff1dbbac-6215-4ae8-9227-37c710841ada");
    assert_eq!(s.last_usage(), (Some(120), Some(20), Some(0.00066)));
    ok_final(&s, ORCH_FINAL);
    let s = claude("cc2.1.197-output-format-json-resume.json");
    assert_eq!(s.session(), "11111111-2222-4333-8444-555555555555");
    ok_final(&s, ORCH_FINAL);

    // A pretty-printed result (2.1.4 shapes): not a stream line as is; as one line it parses.
    let pretty = read("claude/handwritten-result-success-pretty.json");
    assert!(pretty.lines().count() > 1, "the sample is pretty-printed");
    assert!(parse_text(StreamKind::ClaudeStreamJson, &pretty).is_empty());
    let value: serde_json::Value = serde_json::from_str(&pretty).expect("json");
    let s = Summary::of(&parse_text(
        StreamKind::ClaudeStreamJson,
        &value.to_string(),
    ));
    assert_eq!(s.session(), "2bded680-9158-45c7-a362-04df41d4357e");
    assert_eq!(s.last_usage(), (Some(21), Some(388), Some(0.19340875)));
    ok_final(
        &s,
        "The workspace has two crates: inkwell and inkwell-server.",
    );
}

#[test]
fn claude_sub_agent_and_synthetic_lines() {
    let mut parser = stream::parser(StreamKind::ClaudeStreamJson);
    let sub = r#"{"type":"assistant","message":{"model":"m","content":[{"type":"text","text":"sub-agent WEFT_DONE_0123456789abcdef"},{"type":"tool_use","name":"Read","input":{}}]},"parent_tool_use_id":"toolu_1","session_id":"s1"}"#;
    assert_eq!(
        parser.line(sub),
        [
            AgentEvent::Session { id: "s1".into() },
            AgentEvent::ToolUse {
                id: None,
                name: "Read".into(),
                summary: "{}".into(),
                subagent: true,
            }
        ],
        "sub-agent traffic is not the agent's answer; its tool calls are marked as its own"
    );
    let api_error = r#"{"type":"assistant","isApiErrorMessage":true,"message":{"model":"claude","content":[{"type":"text","text":"Overloaded"}]},"session_id":"s1"}"#;
    assert_eq!(
        parser.line(api_error),
        [AgentEvent::Error {
            message: "Overloaded".into()
        }]
    );
    let thinking = r#"{"type":"assistant","message":{"content":[{"type":"thinking","thinking":"WEFT_DONE_0123456789abcdef"}]}}"#;
    assert_eq!(
        parser.line(thinking),
        [AgentEvent::Reasoning {
            text: "WEFT_DONE_0123456789abcdef".into()
        }],
        "reasoning is not assistant text"
    );
}

// ---------------------------------------------------------------------------------------
// Codex

#[test]
fn codex_success_and_resume() {
    let s = codex("cx0.171.0-exec-json-success.jsonl");
    assert_eq!(s.session(), "01a2294c-cdab-7ec2-b19d-8fe47915ddcd");
    assert_eq!(s.texts, [ORCH_FINAL]);
    assert_eq!(s.errors.len(), 1, "the model-metadata warning");
    assert!(s.errors[0].starts_with("Model metadata for `mock-model` not found"));
    assert_eq!(s.last_usage(), (Some(1200), Some(20), None));
    ok_final(&s, ORCH_FINAL);

    let s = codex("cx0.171.0-exec-json-resume.jsonl");
    assert_eq!(s.session(), "01a2294c-cdab-7ec2-b19d-8fe47915ddcd");
    assert_eq!(
        s.last_usage(),
        (Some(2400), Some(40), None),
        "cumulative on resume"
    );
    ok_final(&s, ORCH_FINAL);
}

#[test]
fn codex_write_file_success_has_the_marker() {
    let s = codex("cx0.171.0-exec-json-write-file-success.jsonl");
    assert_eq!(s.session(), "01a2296d-ffc6-7543-a3f9-8ae476b88e7c");
    assert_eq!(
        s.texts,
        [
            "I will create hello.txt now.",
            "Checking the file.",
            WEFT_FINAL
        ]
    );
    // Started and completed items give one tool use each.
    assert_eq!(
        s.tools,
        [
            (
                "file_change".to_owned(),
                "add /tmp/weft-sample/wd-codex/hello.txt".to_owned()
            ),
            (
                "command_execution".to_owned(),
                "/bin/bash -lc 'cat hello.txt && ls'".to_owned()
            ),
        ]
    );
    assert!(s.errors.is_empty() && s.denials.is_empty());
    assert_eq!(s.last_usage(), (Some(3000), Some(60), None));
    ok_final(&s, WEFT_FINAL);
    let (text, _, _) = s.the_final();
    assert_eq!(
        text_contains_marker(text.as_deref().unwrap_or_default(), WEFT_MARKER),
        Some(View::Raw)
    );
}

#[test]
fn codex_failed_turns() {
    let cases = [
        (
            "cx0.171.0-exec-json-bad-model.jsonl",
            "01a2294c-e7f6-7fe3-afeb-4c244f9f5889",
            2,
            "The requested model 'nonexistent-model' does not exist.",
        ),
        (
            "cx0.171.0-exec-json-invalid-api-key-401.jsonl",
            "01a2294c-e91c-7f30-92a9-f43a59175231",
            7,
            "unexpected status 401 Unauthorized: Incorrect API key provided: sk-inval***., url: http://127.0.0.1:18181/v1/responses",
        ),
        (
            "cx0.171.0-exec-json-missing-env-key.jsonl",
            "01a2294d-0371-7532-857c-e30feae25f4f",
            2,
            "Missing environment variable: `MOCK_API_KEY`.",
        ),
        (
            "failure-401.stdout.jsonl",
            "01a22955-e7f1-7d40-b84e-1c461a927f68",
            6,
            "unexpected status 401 Unauthorized: Incorrect API key provided: dummy., url: http://127.0.0.1:45653/v1/responses",
        ),
        (
            "failure-500.stdout.jsonl",
            "01a22955-e7a8-74d3-8a7e-730b4b61f633",
            6,
            "We’re currently experiencing high demand, which may cause temporary errors.",
        ),
    ];
    for (file, session, errors, detail) in cases {
        let s = codex(file);
        assert_eq!(s.session(), session, "{file}");
        assert_eq!(s.errors.len(), errors, "{file}: {:?}", s.errors);
        assert!(s.texts.is_empty() && s.usages.is_empty(), "{file}");
        assert_eq!(err_final(&s), (None, detail), "{file}");
    }
}

#[test]
fn codex_hangs_have_no_final() {
    for (file, session, errors) in [
        (
            "cx0.171.0-exec-json-no-network-killed.jsonl",
            "01a2293c-adab-7be3-8f86-ef72dbfa3fe8",
            10,
        ),
        (
            "failure-hang.stdout.jsonl",
            "01a22959-f88b-7ee0-95d9-a042ac768cac",
            0,
        ),
        (
            "failure-hang_midstream.stdout.jsonl",
            "01a22959-f82b-7472-bd0e-ae9a46aa7901",
            1,
        ),
        (
            "failure-refused.stdout.jsonl",
            "01a22967-6a82-7a80-b834-743402ef45be",
            7,
        ),
    ] {
        let s = codex(file);
        assert_eq!(s.session(), session, "{file}");
        assert_eq!(s.errors.len(), errors, "{file}");
        assert!(
            s.errors
                .iter()
                .all(|e| e.contains("Reconnecting") || e.contains("Falling back"))
        );
        assert!(s.finals.is_empty() && s.texts.is_empty(), "{file}");
    }
}

#[test]
fn codex_declined_commands_are_denials() {
    let mut parser = stream::parser(StreamKind::CodexJson);
    let started = r#"{"type":"item.started","item":{"id":"item_3","type":"command_execution","command":"rm -rf /","aggregated_output":"","exit_code":null,"status":"in_progress"}}"#;
    let declined = r#"{"type":"item.completed","item":{"id":"item_3","type":"command_execution","command":"rm -rf /","aggregated_output":"","exit_code":null,"status":"declined"}}"#;
    assert_eq!(
        parser.line(started),
        [AgentEvent::ToolUse {
            id: Some("item_3".into()),
            name: "command_execution".into(),
            summary: "rm -rf /".into(),
            subagent: false,
        }]
    );
    assert_eq!(
        parser.line(declined),
        [
            AgentEvent::ToolResult {
                id: Some("item_3".into()),
                outcome: ToolOutcome::Denied,
                detail: "declined by Codex's approval policy".into(),
            },
            AgentEvent::PermissionDenied {
                id: Some("item_3".into()),
                tool: "command_execution".into(),
                detail: "rm -rf /".into()
            }
        ]
    );
    // Completed without a start: the tool use, then the refusal.
    let lone = r#"{"type":"item.completed","item":{"id":"item_9","type":"mcp_tool_call","server":"fs","tool":"write","arguments":{"path":"/etc/x"},"status":"declined"}}"#;
    assert_eq!(
        parser.line(lone),
        [
            AgentEvent::ToolUse {
                id: Some("item_9".into()),
                name: "fs.write".into(),
                summary: "/etc/x".into(),
                subagent: false,
            },
            AgentEvent::ToolResult {
                id: Some("item_9".into()),
                outcome: ToolOutcome::Denied,
                detail: "declined by Codex's approval policy".into(),
            },
            AgentEvent::PermissionDenied {
                id: Some("item_9".into()),
                tool: "fs.write".into(),
                detail: "/etc/x".into()
            }
        ]
    );
    // Reasoning is not assistant text.
    let reasoning = r#"{"type":"item.completed","item":{"id":"item_4","type":"reasoning","text":"WEFT_DONE_0123456789abcdef"}}"#;
    assert_eq!(
        parser.line(reasoning),
        [AgentEvent::Reasoning {
            text: "WEFT_DONE_0123456789abcdef".into()
        }]
    );
    // The turn's final text is its last agent message.
    parser.line(r#"{"type":"turn.started"}"#);
    parser.line(
        r#"{"type":"item.completed","item":{"id":"item_5","type":"agent_message","text":"first"}}"#,
    );
    parser.line(r#"{"type":"item.completed","item":{"id":"item_6","type":"agent_message","text":"second"}}"#);
    let end =
        parser.line(r#"{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":2}}"#);
    assert_eq!(
        end.last(),
        Some(&AgentEvent::Final {
            text: Some("second".into()),
            is_error: false,
            detail: None
        })
    );
}

// ---------------------------------------------------------------------------------------
// OpenCode

#[test]
fn opencode_tool_read_success_both_versions() {
    for (file, session) in [
        (
            "oc1.18.33-run-format-json-tool-read-success.jsonl",
            "ses_dd6b17eedffeyGcEh8RWkIGo0T",
        ),
        (
            "oc1.1.53-run-format-json-tool-read-success.jsonl",
            "ses_dd6af4c1effeWKfDgp3qnQe9my",
        ),
        (
            "oc1.18.33-run-format-json-permission-auto-approved.jsonl",
            "ses_dd6b110e4ffeajQSxcZHwLNLDW",
        ),
    ] {
        let s = opencode(file);
        assert_eq!(s.session(), session, "{file}");
        assert_eq!(s.texts, ["I will use a tool first.", ORCH_FINAL], "{file}");
        assert_eq!(s.tool_names(), ["read"], "{file}");
        assert!(s.tools[0].1.ends_with("/hello.txt"), "{file}");
        assert!(s.denials.is_empty() && s.errors.is_empty(), "{file}");
        // Running totals over the two steps.
        assert_eq!(s.usages.len(), 2, "{file}");
        assert_eq!(s.usages[0], (Some(900), Some(20), Some(0.0)));
        assert_eq!(s.last_usage(), (Some(1800), Some(40), Some(0.0)), "{file}");
        ok_final(&s, ORCH_FINAL);
    }
}

#[test]
fn opencode_continue_session() {
    let s = opencode("oc1.18.33-run-format-json-continue-session.jsonl");
    assert_eq!(s.session(), "ses_dd6b17eedffeyGcEh8RWkIGo0T");
    assert_eq!(s.texts, [ORCH_FINAL]);
    assert_eq!(s.last_usage(), (Some(900), Some(20), Some(0.0)));
    ok_final(&s, ORCH_FINAL);
}

#[test]
fn opencode_write_file_success_has_the_marker() {
    let s = opencode("oc1.18.33-run-format-json-write-file-success.jsonl");
    assert_eq!(s.session(), "ses_dd691f309ffeDwpRBNM1fuf9yd");
    assert_eq!(
        s.texts,
        [
            "I will create hello.txt now.",
            "Checking the file.",
            WEFT_FINAL
        ]
    );
    assert_eq!(
        s.tools,
        [
            (
                "write".to_owned(),
                "/tmp/weft-sample/wd-opencode/hello.txt".to_owned()
            ),
            ("bash".to_owned(), "cat hello.txt && ls".to_owned()),
        ]
    );
    assert_eq!(s.last_usage(), (Some(2700), Some(60), Some(0.0)));
    ok_final(&s, WEFT_FINAL);
}

#[test]
fn opencode_auto_rejected_permission() {
    let s = opencode("oc1.18.33-run-format-json-permission-auto-rejected.jsonl");
    assert_eq!(s.session(), "ses_dd6b14109ffejeZdyUREY6O3hg");
    assert_eq!(s.texts, ["I will use a tool first."]);
    assert_eq!(s.tool_names(), ["read"]);
    assert_eq!(s.denials.len(), 1);
    assert_eq!(s.denials[0].0, "read");
    assert_eq!(
        s.denials[0].1,
        "/tmp/mockproj-claude/hello.txt: The user rejected permission to use this specific tool call."
    );
    // The rejection halts the session: no "stop" step, no error, so no final record.
    assert!(s.finals.is_empty());

    // Its stderr line is not counted a second time.
    let mut parser = stream::parser(StreamKind::OpencodeJson);
    for line in
        read("opencode/oc1.18.33-run-format-json-permission-auto-rejected.stderr.txt").lines()
    {
        assert!(parser.stderr_line(line).is_empty());
    }
    assert!(parser.finish().is_empty());
}

#[test]
fn opencode_session_not_found_is_reported_from_stderr() {
    let mut parser = stream::parser(StreamKind::OpencodeJson);
    let mut events = Vec::new();
    for line in read("opencode/oc1.18.33-run-session-not-found.stderr.txt").lines() {
        events.extend(parser.stderr_line(line));
    }
    events.extend(parser.finish());
    assert_eq!(
        events,
        [
            AgentEvent::Error {
                message: "Session not found".into()
            },
            AgentEvent::Final {
                text: None,
                is_error: true,
                detail: Some("Session not found".into())
            }
        ]
    );
    // Other parsers ignore stderr.
    for kind in [
        StreamKind::ClaudeStreamJson,
        StreamKind::CodexJson,
        StreamKind::Plain,
    ] {
        assert!(
            stream::parser(kind)
                .stderr_line("Error: Session not found")
                .is_empty()
        );
    }
}

#[test]
fn opencode_error_events() {
    let cases = [
        (
            "oc1.18.33-run-format-json-invalid-api-key-401.jsonl",
            "ses_dd6b11c97ffeY304k3nSazl9Df",
            "APIError: Incorrect API key provided: sk-inval***. (HTTP 401)",
        ),
        (
            "oc1.18.33-run-format-json-no-provider-default-zen-no-network.jsonl",
            "ses_dd6b0be13ffeyC63cP2uEtyJEl",
            "APIError: Cannot connect to API: Unable to connect. Is the computer able to access the url?",
        ),
        (
            "oc1.18.33-run-format-json-unknown-model.jsonl",
            "ses_dd6b151f8ffe0FrNtC5eAkASpn",
            "UnknownError: Unexpected server error. Check server logs for details. (ref err_ab215d6e)",
        ),
        (
            "failure-401.stdout.jsonl",
            "ses_dd6aa0ac3ffexWHOkTIf6CflQX",
            "APIError: Incorrect API key provided: dummy. (HTTP 401)",
        ),
        (
            "failure-500.stdout.jsonl",
            "ses_dd6aa0af8ffecnN3yAlFZaAgIF",
            "APIError: Internal server error (HTTP 500)",
        ),
        (
            "failure-refused.stdout.jsonl",
            "ses_dd6988c00ffeTOTM1XCe5vmXAE",
            "APIError: Cannot connect to API: Unable to connect. Is the computer able to access the url?",
        ),
    ];
    for (file, session, message) in cases {
        let s = opencode(file);
        assert_eq!(s.session(), session, "{file}");
        assert_eq!(s.errors, [message], "{file}");
        assert!(s.texts.is_empty(), "{file}");
        assert_eq!(err_final(&s), (None, message), "{file}");
    }
}

#[test]
fn opencode_hangs_have_no_final() {
    let s = opencode("failure-hang.stdout.jsonl");
    assert!(s.sessions.is_empty() && s.finals.is_empty());
    let s = opencode("failure-hang_midstream.stdout.jsonl");
    assert_eq!(s.session(), "ses_dd6a5fc51ffeL1EIFVFMhKJs9w");
    assert!(s.finals.is_empty() && s.texts.is_empty());
}

#[test]
fn opencode_final_uses_the_stop_message_and_late_errors() {
    let mut parser = stream::parser(StreamKind::OpencodeJson);
    let text = |msg: &str, t: &str| {
        format!(
            r#"{{"type":"text","sessionID":"s","part":{{"messageID":"{msg}","type":"text","text":"{t}"}}}}"#
        )
    };
    let finish = |msg: &str, reason: &str| {
        format!(
            r#"{{"type":"step_finish","sessionID":"s","part":{{"messageID":"{msg}","type":"step-finish","reason":"{reason}","tokens":{{"input":5,"output":1}},"cost":0.5}}}}"#
        )
    };
    parser.line(&text("m1", "thinking aloud"));
    parser.line(&finish("m1", "tool-calls"));
    parser.line(&text("m2", "part one"));
    parser.line(&text("m2", "part two"));
    let usage = parser.line(&finish("m2", "stop"));
    assert_eq!(
        usage,
        [
            AgentEvent::Spend {
                total: false,
                message: None,
                model: None,
                tokens: weft_core::spend::Tokens {
                    input: 5,
                    output: 1,
                    ..Default::default()
                },
                cost_usd: Some(0.5),
            },
            AgentEvent::Usage {
                input_tokens: Some(10),
                output_tokens: Some(2),
                cost_usd: Some(1.0),
                cache_tokens: None,
                reasoning_tokens: None,
            }
        ]
    );
    assert_eq!(
        parser.finish(),
        [AgentEvent::Final {
            text: Some("part one\npart two".into()),
            is_error: false,
            detail: None
        }]
    );

    // An error after the last step makes the run a failure.
    let mut parser = stream::parser(StreamKind::OpencodeJson);
    parser.line(&text("m1", "done"));
    parser.line(&finish("m1", "stop"));
    parser.line(r#"{"type":"error","sessionID":"s","error":{"name":"MessageAbortedError","data":{"message":"aborted"}}}"#);
    assert_eq!(
        parser.finish(),
        [AgentEvent::Final {
            text: Some("done".into()),
            is_error: true,
            detail: Some("MessageAbortedError: aborted".into())
        }]
    );

    // A rule-denied tool is a denial too; synthetic text parts are not the assistant's.
    let mut parser = stream::parser(StreamKind::OpencodeJson);
    let denied = r#"{"type":"tool_use","sessionID":"s","part":{"type":"tool","tool":"bash","state":{"status":"error","input":{"command":"rm x"},"error":"The user has specified a rule which prevents you from using this specific tool call. Here are some of the relevant rules"}}}"#;
    let events = parser.line(denied);
    assert!(
        matches!(&events[..], [AgentEvent::Session { .. }, AgentEvent::ToolUse { .. }, AgentEvent::ToolResult { outcome: ToolOutcome::Denied, .. }, AgentEvent::PermissionDenied { tool, .. }] if tool == "bash")
    );
    let synthetic = r#"{"type":"text","sessionID":"s","part":{"type":"text","synthetic":true,"text":"WEFT_DONE_0123456789abcdef"}}"#;
    assert!(parser.line(synthetic).is_empty());
}

// ---------------------------------------------------------------------------------------
// Plain

#[test]
fn plain_lines_are_assistant_text() {
    let events = parse_text(
        StreamKind::Plain,
        "hello\r\n\n  \nWEFT_DONE_x\n\x1b[1mbold\x1b[0m",
    );
    assert_eq!(
        events,
        [
            AgentEvent::AssistantText {
                text: "hello".into(),
                message: None,
            },
            AgentEvent::AssistantText {
                text: "WEFT_DONE_x".into(),
                message: None,
            },
            AgentEvent::AssistantText {
                text: "\x1b[1mbold\x1b[0m".into(),
                message: None,
            },
        ]
    );
}

// ---------------------------------------------------------------------------------------
// Garbage

const ALL_KINDS: [StreamKind; 4] = [
    StreamKind::Plain,
    StreamKind::ClaudeStreamJson,
    StreamKind::CodexJson,
    StreamKind::OpencodeJson,
];
const JSON_KINDS: [StreamKind; 3] = [
    StreamKind::ClaudeStreamJson,
    StreamKind::CodexJson,
    StreamKind::OpencodeJson,
];

#[test]
fn binary_bytes_are_tolerated() {
    let mut bytes = Vec::new();
    let mut x: u32 = 0x9E37_79B9;
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        bytes.push(x as u8);
    }
    let text = String::from_utf8_lossy(&bytes);
    for kind in JSON_KINDS {
        let events = parse_text(kind, &text);
        assert!(events.is_empty(), "{kind:?}: {events:?}");
    }
    let plain = parse_text(StreamKind::Plain, &text);
    assert!(!plain.is_empty());
}

#[test]
fn truncated_json_lines_yield_nothing() {
    let files = [
        (
            StreamKind::ClaudeStreamJson,
            "claude/cc2.1.197-stream-json-permission-required-denied.jsonl",
        ),
        (
            StreamKind::CodexJson,
            "codex/cx0.171.0-exec-json-write-file-success.jsonl",
        ),
        (
            StreamKind::OpencodeJson,
            "opencode/oc1.18.33-run-format-json-write-file-success.jsonl",
        ),
    ];
    for (kind, file) in files {
        for line in read(file).lines() {
            let mut cut = 0;
            while cut < line.len() {
                let mut parser = stream::parser(kind);
                assert!(
                    parser.line(&line[..cut]).is_empty(),
                    "{file}: prefix of {cut} bytes"
                );
                cut = (cut + 7..=line.len())
                    .find(|&i| line.is_char_boundary(i))
                    .unwrap_or(line.len());
            }
        }
    }
}

#[test]
fn crlf_lines_parse_the_same() {
    let text = read("claude/cc2.1.197-stream-json-tool-read-success.jsonl");
    let crlf = text.replace('\n', "\r\n");
    assert_eq!(
        parse_text(StreamKind::ClaudeStreamJson, &text),
        parse_text(StreamKind::ClaudeStreamJson, &crlf)
    );
}

#[test]
fn huge_lines_are_bounded_where_it_matters() {
    let huge = "x".repeat(8 << 20);
    // Assistant text is kept whole.
    let line = serde_json::json!({"type":"assistant","message":{"content":[
        {"type":"text","text": huge},
        {"type":"tool_use","name":"Write","input":{"content": huge}},
        {"type":"tool_use","name": huge,"input":{"command": huge}},
    ]}})
    .to_string();
    let events = stream::parser(StreamKind::ClaudeStreamJson).line(&line);
    assert_eq!(events.len(), 3);
    match &events[0] {
        AgentEvent::AssistantText { text, .. } => assert_eq!(text.len(), huge.len()),
        other => panic!("{other:?}"),
    }
    for event in &events[1..] {
        match event {
            AgentEvent::ToolUse { name, summary, .. } => {
                assert!(name.chars().count() <= stream::NAME_MAX);
                assert!(summary.chars().count() <= TOOL_SUMMARY_MAX);
            }
            other => panic!("{other:?}"),
        }
    }
    // Error messages and ids are bounded.
    let line = serde_json::json!({"type":"error","message": huge}).to_string();
    match &stream::parser(StreamKind::CodexJson).line(&line)[..] {
        [AgentEvent::Error { message }] => assert!(message.chars().count() <= MESSAGE_MAX),
        other => panic!("{other:?}"),
    }
    let line = serde_json::json!({"type":"thread.started","thread_id": huge}).to_string();
    match &stream::parser(StreamKind::CodexJson).line(&line)[..] {
        [AgentEvent::Session { id }] => assert!(id.chars().count() <= stream::ID_MAX),
        other => panic!("{other:?}"),
    }
    // A huge line that is not JSON is nothing.
    for kind in JSON_KINDS {
        assert!(stream::parser(kind).line(&huge).is_empty());
    }
}

#[test]
fn unknown_and_mistyped_lines_yield_nothing() {
    let lines = [
        "",
        "   ",
        "{}",
        "[]",
        "null",
        "42",
        "\"string\"",
        "not json at all",
        "{\"type\":\"mystery\",\"session_id\":5}",
        "{\"type\":42}",
        "{\"type\":\"assistant\",\"message\":\"not an object\"}",
        "{\"type\":\"assistant\",\"message\":{\"content\":\"text\"}}",
        "{\"type\":\"assistant\",\"message\":{\"content\":[1,null,{\"type\":\"text\"}]}}",
        "{\"type\":\"item.completed\",\"item\":null}",
        "{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":7}}",
        "{\"type\":\"text\",\"part\":\"nope\"}",
        "{\"type\":\"step_finish\",\"part\":{\"tokens\":\"many\"}}",
        "{\"type\":\"tool_use\"}",
        "{\"type\":\"stream_event\",\"event\":{\"type\":\"content_block_delta\",\"delta\":{\"text\":\"WEFT_DONE_0123456789abcdef\"}}}",
        "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"content\":\"WEFT_DONE_0123456789abcdef\"}]}}",
    ];
    for kind in JSON_KINDS {
        for line in lines {
            let events = stream::parser(kind).line(line);
            let texts = events
                .iter()
                .filter(|e| {
                    matches!(
                        e,
                        AgentEvent::AssistantText { .. } | AgentEvent::Final { .. }
                    )
                })
                .count();
            assert_eq!(texts, 0, "{kind:?} {line:?}: {events:?}");
        }
    }
    // Deep nesting is refused by the JSON reader, not a stack overflow.
    let deep = format!(
        "{{\"type\":\"assistant\",\"x\":{}{}}}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    for kind in ALL_KINDS {
        let _ = stream::parser(kind).line(&deep);
    }
    // Mistyped result fields: still a final record, with what could be read.
    let events = stream::parser(StreamKind::ClaudeStreamJson).line(
        "{\"type\":\"result\",\"is_error\":\"yes\",\"usage\":\"x\",\"permission_denials\":[{}]}",
    );
    assert_eq!(
        events,
        [
            AgentEvent::PermissionDenied {
                id: None,
                tool: "tool".into(),
                detail: String::new()
            },
            AgentEvent::Final {
                text: None,
                is_error: true,
                detail: Some("is_error".into())
            }
        ]
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any line, to any parser, on stdout or stderr: no panic.
    #[test]
    fn any_line_is_tolerated(line in any::<String>(), kind in 0usize..4) {
        let mut parser = stream::parser(ALL_KINDS[kind]);
        let _ = parser.line(&line);
        let _ = parser.stderr_line(&line);
        let _ = parser.finish();
    }

    /// Fixture lines with bytes flipped: no panic, and bounded strings.
    #[test]
    fn mutated_fixture_lines_are_tolerated(
        file in 0usize..3,
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
    ) {
        let (kind, rel) = [
            (StreamKind::ClaudeStreamJson, "claude/cc2.1.197-stream-json-write-file-success.jsonl"),
            (StreamKind::CodexJson, "codex/cx0.171.0-exec-json-write-file-success.jsonl"),
            (StreamKind::OpencodeJson, "opencode/oc1.18.33-run-format-json-write-file-success.jsonl"),
        ][file];
        let mut bytes = read(rel).into_bytes();
        for (at, b) in flips {
            let len = bytes.len();
            bytes[at % len] = b;
        }
        let text = String::from_utf8_lossy(&bytes);
        for event in parse_text(kind, &text) {
            if let AgentEvent::ToolUse { summary, .. } = event {
                prop_assert!(summary.chars().count() <= TOOL_SUMMARY_MAX);
            }
        }
    }
}

#[test]
fn marker_only_in_assistant_text_across_clis() {
    // The final answers hold the marker; nothing else the parsers emit does.
    for (kind, rel) in [
        (
            StreamKind::ClaudeStreamJson,
            "claude/cc2.1.197-stream-json-write-file-success.jsonl",
        ),
        (
            StreamKind::CodexJson,
            "codex/cx0.171.0-exec-json-write-file-success.jsonl",
        ),
        (
            StreamKind::OpencodeJson,
            "opencode/oc1.18.33-run-format-json-write-file-success.jsonl",
        ),
    ] {
        let events = parse_text(kind, &read(rel));
        let mut with_marker = 0;
        for event in &events {
            let text = match event {
                AgentEvent::AssistantText { text, .. } => Some(text.as_str()),
                AgentEvent::Final { text, .. } => text.as_deref(),
                AgentEvent::ToolUse { summary, .. } => {
                    assert!(text_contains_marker(summary, WEFT_MARKER).is_none());
                    None
                }
                _ => None,
            };
            if text.is_some_and(|t| text_contains_marker(t, WEFT_MARKER).is_some()) {
                with_marker += 1;
            }
        }
        assert_eq!(
            with_marker, 2,
            "{rel}: the last message and the final record"
        );
        assert!(!events.iter().any(
            |e| matches!(e, AgentEvent::AssistantText { text, .. } if text.contains(ORCH_MARKER))
        ));
    }
}

/// `(id, name)` of every call and `(id, outcome, detail)` of every result, in order.
type Calls = (
    Vec<(Option<String>, String)>,
    Vec<(Option<String>, ToolOutcome, String)>,
);

fn calls(kind: StreamKind, rel: &str) -> Calls {
    let mut out = Calls::default();
    for event in parse_text(kind, &read(rel)) {
        match event {
            AgentEvent::ToolUse { id, name, .. } => out.0.push((id, name)),
            AgentEvent::ToolResult {
                id,
                outcome,
                detail,
            } => out.1.push((id, outcome, detail)),
            _ => {}
        }
    }
    out
}

#[test]
fn every_cli_pairs_each_tool_call_with_how_it_ended() {
    // Claude: `tool_use` ids, answered by `tool_result` blocks.
    let (uses, results) = calls(
        StreamKind::ClaudeStreamJson,
        "claude/cc2.1.197-stream-json-tool-read-success.jsonl",
    );
    assert_eq!(uses.len(), 1);
    assert_eq!(uses[0].1, "Read");
    assert_eq!(results.len(), 1);
    assert_eq!(
        (&results[0].0, results[0].1),
        (&uses[0].0, ToolOutcome::Success)
    );
    assert!(results[0].2.contains("hello from the fixture file"));
    let (_, results) = calls(
        StreamKind::ClaudeStreamJson,
        "claude/cc2.1.197-stream-json-permission-required-denied.jsonl",
    );
    assert_eq!(results[0].1, ToolOutcome::Denied, "{results:?}");
    assert_eq!(results[0].2, "This command requires approval");
    // Codex: item ids, finished on completion, with the command's output.
    let (uses, results) = calls(
        StreamKind::CodexJson,
        "codex/cx0.171.0-exec-json-write-file-success.jsonl",
    );
    assert_eq!(
        uses.len(),
        2,
        "started and completed items are one call each"
    );
    let outcomes: Vec<_> = results.iter().map(|r| (r.0.clone(), r.1)).collect();
    assert_eq!(
        outcomes,
        uses.iter()
            .map(|u| (u.0.clone(), ToolOutcome::Success))
            .collect::<Vec<_>>()
    );
    assert_eq!(results[1].2, "hi\nhello.txt\n");
    // OpenCode: one finished part per call, by `callID`.
    let (uses, results) = calls(
        StreamKind::OpencodeJson,
        "opencode/oc1.18.33-run-format-json-tool-read-success.jsonl",
    );
    assert_eq!(uses.len(), 1);
    assert_eq!(uses[0].1, "read");
    assert_eq!(results[0].0, uses[0].0);
    assert!(uses[0].0.is_some());
    assert!(results[0].2.contains("hello from the fixture file"));
}

#[test]
fn failed_and_sandboxed_codex_commands_end_with_their_exit_code() {
    let mut parser = stream::parser(StreamKind::CodexJson);
    let cmd = |id: &str, exit: i64, out: &str| {
        format!(
            r#"{{"type":"item.completed","item":{{"id":"{id}","type":"command_execution","command":"x","aggregated_output":"{out}","exit_code":{exit},"status":"failed"}}}}"#
        )
    };
    let result = |line: &str, parser: &mut Box<dyn stream::StreamParser>| {
        parser.line(line).into_iter().find_map(|e| match e {
            AgentEvent::ToolResult {
                outcome, detail, ..
            } => Some((outcome, detail)),
            _ => None,
        })
    };
    assert_eq!(
        result(&cmd("i1", 2, "ls: cannot access 'nope'"), &mut parser),
        Some((
            ToolOutcome::Failure,
            "ls: cannot access 'nope'\nexit code 2".to_owned()
        ))
    );
    let sandboxed = cmd("i2", 1, "touch: cannot touch 'f': Read-only file system");
    assert_eq!(
        result(&sandboxed, &mut parser).map(|r| r.0),
        Some(ToolOutcome::Refused)
    );
}

#[test]
fn claude_reports_plans_truncation_and_cached_input() {
    let mut parser = stream::parser(StreamKind::ClaudeStreamJson);
    let plan = r#"{"type":"assistant","parent_tool_use_id":null,"message":{"id":"m1","stop_reason":"max_tokens","content":[{"type":"tool_use","id":"t1","name":"ExitPlanMode","input":{"plan":"PLAN BODY"}}]}}"#;
    assert_eq!(
        parser.line(plan),
        [
            AgentEvent::Truncated,
            AgentEvent::ToolUse {
                id: Some("t1".into()),
                name: "ExitPlanMode".into(),
                summary: "plan".into(),
                subagent: false,
            },
            AgentEvent::PlanText {
                text: "PLAN BODY".into(),
                message: Some("m1".into()),
            }
        ]
    );
    let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"x","usage":{"input_tokens":10,"cache_creation_input_tokens":2,"cache_read_input_tokens":5,"output_tokens":3},"permission_denials":[{"tool_name":"ExitPlanMode","tool_use_id":"t1","tool_input":{}}]}"#;
    let events = parser.line(result);
    assert!(events.contains(&AgentEvent::Usage {
        input_tokens: Some(10),
        output_tokens: Some(3),
        cost_usd: None,
        cache_tokens: Some(7),
        reasoning_tokens: None,
    }));
    assert!(events.contains(&AgentEvent::PermissionDenied {
        id: Some("t1".into()),
        tool: "ExitPlanMode".into(),
        detail: "{}".into(),
    }));
}
