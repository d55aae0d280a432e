//! The `openai` provider against the scripted mock model server: streaming, tool calls,
//! the request it sends, every error it reports, and its configuration from the environment.

use std::collections::HashMap;
use std::net::TcpListener;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use weft_core::Hint as _;
use weft_planner::provider::openai::{OpenAiConfig, OpenAiModel};
use weft_planner::{
    ChatModel, FinishReason, Message, ProviderError, Reply, StreamEvent, ToolCall, ToolSpec, Usage,
};
use weft_testkit::mock_model::{MockModel, MockReply};

const KEY: &str = "sk-test-very-secret-0123456789";

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    move |name: &str| map.get(name).cloned()
}

fn config_for(mock: &MockModel) -> OpenAiConfig {
    OpenAiConfig {
        api_key: Some(KEY.into()),
        key_var: Some("WEFT_PLANNER_API_KEY".into()),
        ..OpenAiConfig::new(mock.base_url(), "test-model")
    }
}

fn quick(config: OpenAiConfig) -> OpenAiConfig {
    OpenAiConfig {
        connect_timeout: Duration::from_secs(2),
        idle_timeout: Duration::from_millis(300),
        request_timeout: Duration::from_secs(5),
        ..config
    }
}

fn conversation() -> Vec<Message> {
    vec![
        Message::system("You plan."),
        Message::user("Plan a refactor of src/lib.rs"),
    ]
}

fn read_file_tool() -> ToolSpec {
    ToolSpec {
        name: "read_file".into(),
        description: "Read a file of the repository".into(),
        parameters: json!({
            "type": "object",
            "properties": {"path": {"type": "string"}},
            "required": ["path"],
        }),
    }
}

/// One completion; the events it streamed and how it ended.
fn complete_with(
    config: OpenAiConfig,
    messages: &[Message],
    tools: &[ToolSpec],
) -> (Result<Reply, ProviderError>, Vec<StreamEvent>) {
    let mut model = OpenAiModel::new(config);
    let mut events = Vec::new();
    let result = model.complete(messages, tools, &mut |event| events.push(event));
    (result, events)
}

fn complete(mock: &MockModel) -> (Result<Reply, ProviderError>, Vec<StreamEvent>) {
    complete_with(config_for(mock), &conversation(), &[read_file_tool()])
}

fn error_of(mock: &MockModel) -> ProviderError {
    let error = complete(mock).0.expect_err("the completion fails");
    assert_key_hidden(&error);
    error
}

fn assert_key_hidden(error: &ProviderError) {
    let shown = format!("{error} {:?} {}", error, error.hint().unwrap_or_default());
    assert!(!shown.contains(KEY), "the key leaked: {shown}");
}

fn texts(events: &[StreamEvent]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Text(t) => Some(t.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_text_reply_streams_its_deltas_in_order() {
    let text = "Here is the plan: first read the code, then split the module.";
    let mock = MockModel::start(vec![MockReply::text(text)]);
    let (reply, events) = complete(&mock);
    let reply = reply.unwrap();
    assert_eq!(reply.text, text);
    assert_eq!(reply.finish, FinishReason::Stop);
    assert!(reply.tool_calls.is_empty());
    let deltas = texts(&events);
    assert!(deltas.len() >= 2, "several deltas: {deltas:?}");
    assert_eq!(deltas.concat(), text);
    assert_eq!(events.len(), deltas.len(), "only text events");
}

#[test]
fn usage_comes_from_the_last_chunk() {
    let mock = MockModel::start(vec![MockReply::text("ok").with_usage(1234, 56)]);
    let reply = complete(&mock).0.unwrap();
    assert_eq!(
        reply.usage,
        Some(Usage {
            input_tokens: 1234,
            output_tokens: 56
        })
    );
}

#[test]
fn several_tool_calls_are_reassembled_from_split_arguments() {
    let mock = MockModel::start(vec![MockReply::text_and_tool_calls(
        "Let me look.",
        vec![
            (
                "read_file",
                json!({"path": "src/lib.rs", "note": "ünïcode ✓ split across chunks"}),
            ),
            ("grep", json!({"pattern": "fn main", "path": "."})),
            ("list_dir", json!({"path": "crates"})),
        ],
    )]);
    let (reply, events) = complete(&mock);
    let reply = reply.unwrap();
    assert_eq!(reply.finish, FinishReason::ToolCalls);
    assert_eq!(reply.text, "Let me look.");
    let names: Vec<&str> = reply.tool_calls.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, vec!["read_file", "grep", "list_dir"]);
    let ids: Vec<&str> = reply.tool_calls.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, vec!["call_1", "call_2", "call_3"]);
    let first: Value = serde_json::from_str(&reply.tool_calls[0].arguments).unwrap();
    assert_eq!(
        first,
        json!({"path": "src/lib.rs", "note": "ünïcode ✓ split across chunks"})
    );
    let second: Value = serde_json::from_str(&reply.tool_calls[1].arguments).unwrap();
    assert_eq!(second, json!({"pattern": "fn main", "path": "."}));
    let started: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStarted { name } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(started, names, "each call announced once, in order");
}

#[test]
fn the_request_has_the_openai_shape() {
    let mock = MockModel::start(vec![MockReply::text("a"), MockReply::text("b")]);
    let messages = vec![
        Message::system("You plan."),
        Message::user("Plan it."),
        Message::assistant(
            "",
            vec![ToolCall {
                id: "call_9".into(),
                name: "read_file".into(),
                arguments: r#"{"path":"README.md"}"#.into(),
            }],
        ),
        Message::tool_result("call_9", "# weft"),
        Message::assistant("Read it.", Vec::new()),
    ];
    let config = OpenAiConfig {
        max_tokens: Some(32000),
        ..config_for(&mock)
    };
    complete_with(config, &messages, &[read_file_tool()])
        .0
        .unwrap();
    complete_with(config_for(&mock), &conversation(), &[])
        .0
        .unwrap();

    let requests = mock.chat_requests();
    assert_eq!(requests.len(), 2);
    let first = &requests[0];
    assert_eq!(first.method, "POST");
    assert_eq!(first.path, "/v1/chat/completions");
    assert_eq!(
        first.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert_eq!(first.header("accept"), Some("text/event-stream"));
    assert_eq!(first.header("content-type"), Some("application/json"));
    assert_eq!(
        first.body,
        json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "You plan."},
                {"role": "user", "content": "Plan it."},
                {"role": "assistant", "content": null, "tool_calls": [{
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": "{\"path\":\"README.md\"}"},
                }]},
                {"role": "tool", "tool_call_id": "call_9", "content": "# weft"},
                {"role": "assistant", "content": "Read it."},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "tools": [{"type": "function", "function": {
                "name": "read_file",
                "description": "Read a file of the repository",
                "parameters": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                },
            }}],
            "tool_choice": "auto",
            "max_tokens": 32000,
        })
    );

    let second = &requests[1].body;
    assert!(second.get("tools").is_none());
    assert!(second.get("tool_choice").is_none());
    assert!(second.get("max_tokens").is_none());
}

#[test]
fn no_key_means_no_authorization_header() {
    let mock = MockModel::start(vec![MockReply::text("local")]);
    let reply = complete_with(
        OpenAiConfig::new(mock.base_url(), "llama3"),
        &conversation(),
        &[],
    )
    .0
    .unwrap();
    assert_eq!(reply.text, "local");
    assert_eq!(mock.chat_requests()[0].header("authorization"), None);
}

#[test]
fn a_length_finish_marks_the_reply_truncated() {
    let mock = MockModel::start(vec![MockReply::text_then_length("The plan is: 1. read")]);
    let reply = complete(&mock).0.unwrap();
    assert_eq!(reply.finish, FinishReason::Length);
    assert_eq!(reply.text, "The plan is: 1. read");
}

#[test]
fn reasoning_deltas_are_events_not_text() {
    let mock = MockModel::start(vec![MockReply::reasoning_then_text(
        "The user wants a plan; check the layout first.",
        "Plan ready.",
    )]);
    let (reply, events) = complete(&mock);
    let reply = reply.unwrap();
    assert_eq!(reply.text, "Plan ready.");
    let reasoning: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::Reasoning(r) => Some(r.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(reasoning, "The user wants a plan; check the layout first.");
    let first_text = events
        .iter()
        .position(|e| matches!(e, StreamEvent::Text(_)))
        .unwrap();
    assert!(
        events[..first_text]
            .iter()
            .all(|e| matches!(e, StreamEvent::Reasoning(_)))
    );
}

#[test]
fn reasoning_content_is_read_too_and_crlf_comments_and_other_fields_are_tolerated() {
    let body = concat!(
        ": OPENROUTER PROCESSING\r\n\r\n",
        "event: message\r\nid: 1\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"reasoning_content\":\"thinking\"},\"finish_reason\":null}]}\r\n\r\n",
        "data:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}\r\n\r\n",
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\r\n\r\n",
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2}}\r\n\r\n",
        "data: [DONE]\r\n\r\n",
    );
    let mock = MockModel::start(vec![MockReply::raw(200, "text/event-stream", body)]);
    let (reply, events) = complete(&mock);
    let reply = reply.unwrap();
    assert_eq!(reply.text, "Hello");
    assert_eq!(reply.finish, FinishReason::Stop);
    assert_eq!(
        reply.usage,
        Some(Usage {
            input_tokens: 7,
            output_tokens: 2
        })
    );
    assert_eq!(events[0], StreamEvent::Reasoning("thinking".into()));
}

#[test]
fn a_server_ignoring_stream_answers_one_json_completion() {
    let mock = MockModel::start(vec![
        MockReply::tool_calls(vec![("read_file", json!({"path": "a.rs"}))])
            .with_usage(10, 3)
            .non_streamed(),
        MockReply::raw(
            200,
            "text/plain",
            r#"{"choices":[{"index":0,"message":{"role":"assistant","content":"sniffed"},"finish_reason":"stop"}]}"#,
        ),
    ]);
    let (reply, events) = complete(&mock);
    let reply = reply.unwrap();
    assert_eq!(reply.finish, FinishReason::ToolCalls);
    assert_eq!(reply.tool_calls.len(), 1);
    assert_eq!(reply.tool_calls[0].id, "call_1");
    assert_eq!(reply.tool_calls[0].name, "read_file");
    assert_eq!(reply.tool_calls[0].arguments, r#"{"path":"a.rs"}"#);
    assert_eq!(
        reply.usage,
        Some(Usage {
            input_tokens: 10,
            output_tokens: 3
        })
    );
    assert_eq!(
        events,
        vec![StreamEvent::ToolCallStarted {
            name: "read_file".into()
        }]
    );

    let reply = complete(&mock).0.unwrap();
    assert_eq!(reply.text, "sniffed");
}

#[test]
fn an_unknown_finish_reason_is_kept() {
    let body = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"no\"},\"finish_reason\":\"content_filter\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    let mock = MockModel::start(vec![MockReply::raw(200, "text/event-stream", body)]);
    let reply = complete(&mock).0.unwrap();
    assert_eq!(reply.finish, FinishReason::Other("content_filter".into()));
}

#[test]
fn unauthorized_names_the_variable_the_key_came_from() {
    for key_var in ["WEFT_PLANNER_API_KEY", "OPENAI_API_KEY"] {
        let mock = MockModel::start(vec![MockReply::status(
            401,
            "Incorrect API key provided: sk-test-***789",
        )]);
        let base_url = mock.base_url();
        let env = env_of(&[
            ("WEFT_PLANNER_BASE_URL", &base_url),
            (key_var, KEY),
            ("WEFT_PLANNER_MODEL", "gpt-test"),
        ]);
        let config = OpenAiConfig::from_env(&env, None).unwrap();
        assert_eq!(config.key_var.as_deref(), Some(key_var));
        let error = complete_with(config, &conversation(), &[])
            .0
            .expect_err("refused");
        assert_key_hidden(&error);
        match &error {
            ProviderError::Unauthorized {
                key_var: named,
                status,
                message,
                url,
            } => {
                assert_eq!(named, key_var);
                assert_eq!(*status, 401);
                assert_eq!(message, "Incorrect API key provided: sk-test-***789");
                assert_eq!(url, &format!("{base_url}/chat/completions"));
            }
            other => panic!("expected Unauthorized, got {other:?}"),
        }
        assert!(error.to_string().contains(key_var), "{error}");
        assert!(error.hint().unwrap().contains(key_var));
    }
}

#[test]
fn forbidden_is_unauthorized_and_a_key_echoed_by_the_server_is_masked() {
    let mock = MockModel::start(vec![MockReply::status(
        403,
        format!("key {KEY} has no access to this model"),
    )]);
    match error_of(&mock) {
        ProviderError::Unauthorized {
            status, message, ..
        } => {
            assert_eq!(status, 403);
            assert_eq!(message, "key **** has no access to this model");
        }
        other => panic!("expected Unauthorized, got {other:?}"),
    }
}

#[test]
fn a_server_error_carries_its_message() {
    let mock = MockModel::start(vec![
        MockReply::status(500, "upstream model exploded"),
        MockReply::status(
            429,
            r#"{"error":{"message":"Provider returned error","code":429,"metadata":{"raw":"rate limited upstream"}}}"#,
        ),
        MockReply::raw(
            502,
            "text/html",
            format!("<html>{}</html>", "x".repeat(2000)),
        ),
    ]);
    match error_of(&mock) {
        ProviderError::Status {
            status, message, ..
        } => {
            assert_eq!(status, 500);
            assert_eq!(message, "upstream model exploded");
        }
        other => panic!("expected Status, got {other:?}"),
    }
    match error_of(&mock) {
        ProviderError::Status {
            status, message, ..
        } => {
            assert_eq!(status, 429);
            assert_eq!(message, "Provider returned error: rate limited upstream");
        }
        other => panic!("expected Status, got {other:?}"),
    }
    match error_of(&mock) {
        ProviderError::Status {
            status, message, ..
        } => {
            assert_eq!(status, 502);
            assert!(message.starts_with("<html>xxx"));
            assert!(message.chars().count() <= 501, "capped: {}", message.len());
        }
        other => panic!("expected Status, got {other:?}"),
    }
}

#[test]
fn an_exhausted_script_is_a_500_saying_so() {
    let mock = MockModel::start(Vec::new());
    let error = error_of(&mock);
    assert!(
        matches!(&error, ProviderError::Status { status: 500, message, .. } if message.contains("mock script exhausted")),
        "{error:?}"
    );
    assert_eq!(mock.exhausted(), 1);
}

#[test]
fn an_error_inside_the_stream_is_reported() {
    let with_code = concat!(
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"par\"},\"finish_reason\":null}]}\n\n",
        "data: {\"error\":{\"message\":\"Rate limit exceeded\",\"code\":429}}\n\n",
    );
    let without_code =
        "data: {\"error\":{\"message\":\"model overloaded\",\"type\":\"server_error\"}}\n\n";
    let mock = MockModel::start(vec![
        MockReply::raw(200, "text/event-stream", with_code),
        MockReply::raw(200, "text/event-stream", without_code),
    ]);
    match error_of(&mock) {
        ProviderError::Status {
            status, message, ..
        } => {
            assert_eq!(status, 429);
            assert_eq!(message, "Rate limit exceeded");
        }
        other => panic!("expected Status, got {other:?}"),
    }
    match error_of(&mock) {
        ProviderError::Protocol { message, .. } => {
            assert!(message.contains("model overloaded"), "{message}")
        }
        other => panic!("expected Protocol, got {other:?}"),
    }
}

#[test]
fn a_closed_port_is_unreachable_and_named() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let config = OpenAiConfig {
        api_key: Some(KEY.into()),
        ..quick(OpenAiConfig::new(
            format!("http://127.0.0.1:{port}/v1"),
            "m",
        ))
    };
    let error = complete_with(config, &conversation(), &[])
        .0
        .expect_err("nothing listens");
    assert_key_hidden(&error);
    match &error {
        ProviderError::Unreachable { address, .. } => {
            assert_eq!(address, &format!("127.0.0.1:{port}"))
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
    assert!(error.to_string().contains(&format!("127.0.0.1:{port}")));
}

#[test]
fn an_unknown_host_is_unreachable() {
    // Through a proxy the lookup would be the proxy's, answered with its own status.
    let proxied = ["HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
    if proxied {
        return;
    }
    let config = quick(OpenAiConfig::new(
        "http://weft-no-such-host.invalid/v1",
        "m",
    ));
    let error = complete_with(config, &conversation(), &[])
        .0
        .expect_err("no such host");
    match &error {
        ProviderError::Unreachable { address, .. } => {
            assert_eq!(address, "weft-no-such-host.invalid:80")
        }
        other => panic!("expected Unreachable, got {other:?}"),
    }
}

#[test]
fn silence_before_the_answer_is_a_timeout() {
    let mock = MockModel::start(vec![MockReply::hang()]);
    let started = Instant::now();
    let error = complete_with(quick(config_for(&mock)), &conversation(), &[])
        .0
        .expect_err("hangs");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_key_hidden(&error);
    match error {
        ProviderError::Timeout { after, url } => {
            assert_eq!(after, Duration::from_millis(300));
            assert_eq!(url, format!("{}/chat/completions", mock.base_url()));
        }
        other => panic!("expected Timeout, got {other:?}"),
    }
}

#[test]
fn silence_mid_stream_is_a_timeout() {
    let mock = MockModel::start(vec![MockReply::stall("I will now think for a very long")]);
    let started = Instant::now();
    let mut texts_seen = 0;
    let mut model = OpenAiModel::new(quick(config_for(&mock)));
    let error = model
        .complete(&conversation(), &[], &mut |event| {
            if matches!(event, StreamEvent::Text(_)) {
                texts_seen += 1;
            }
        })
        .expect_err("stalls");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(texts_seen > 0, "the text before the stall was streamed");
    assert!(
        matches!(error, ProviderError::Timeout { after, .. } if after == Duration::from_millis(300)),
        "{error:?}"
    );
}

#[test]
fn a_reply_slower_than_the_request_budget_is_a_timeout() {
    let mock = MockModel::start(vec![MockReply::delay(
        Duration::from_secs(3),
        MockReply::text("too late"),
    )]);
    let config = OpenAiConfig {
        idle_timeout: Duration::from_secs(10),
        request_timeout: Duration::from_millis(500),
        ..config_for(&mock)
    };
    let started = Instant::now();
    let error = complete_with(config, &conversation(), &[])
        .0
        .expect_err("over budget");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(
        matches!(error, ProviderError::Timeout { after, .. } if after == Duration::from_millis(500)),
        "{error:?}"
    );
}

#[test]
fn a_cut_stream_is_reported_as_cut() {
    let mock = MockModel::start(vec![MockReply::cut("The plan has three st")]);
    let (result, events) = complete(&mock);
    let error = result.expect_err("cut");
    assert_key_hidden(&error);
    assert!(
        matches!(&error, ProviderError::StreamCut { .. }),
        "{error:?}"
    );
    assert_eq!(texts(&events).concat(), "The plan has three st");
}

#[test]
fn a_close_delimited_stream_without_done_is_cut_unless_it_finished() {
    let unfinished = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half\"},\"finish_reason\":null}]}\n\n";
    let finished = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"whole\"},\"finish_reason\":\"stop\"}]}\n\n";
    let mock = MockModel::start(vec![
        MockReply::raw(200, "text/event-stream", unfinished),
        MockReply::raw(200, "text/event-stream", finished),
        MockReply::raw(200, "text/event-stream", ""),
        MockReply::raw(200, "text/event-stream", "data: {\"hello\":1}\n\n"),
    ]);
    assert!(matches!(error_of(&mock), ProviderError::StreamCut { .. }));
    let reply = complete(&mock).0.unwrap();
    assert_eq!(reply.text, "whole");
    assert_eq!(reply.finish, FinishReason::Stop);
    assert!(matches!(error_of(&mock), ProviderError::StreamCut { .. }));
    assert!(matches!(error_of(&mock), ProviderError::Protocol { .. }));
}

#[test]
fn runaway_text_and_arguments_hit_their_caps() {
    let mock = MockModel::start(vec![
        MockReply::text("x".repeat(2 * 1024 * 1024 + 10)),
        MockReply::tool_calls(vec![(
            "read_file",
            json!({"path": "y".repeat(1024 * 1024)}),
        )]),
    ]);
    match error_of(&mock) {
        ProviderError::Protocol { message, .. } => assert!(message.contains("2 MiB"), "{message}"),
        other => panic!("expected Protocol, got {other:?}"),
    }
    match error_of(&mock) {
        ProviderError::Protocol { message, .. } => assert!(message.contains("1 MiB"), "{message}"),
        other => panic!("expected Protocol, got {other:?}"),
    }
}

#[test]
fn the_label_names_the_model() {
    let model = OpenAiModel::new(OpenAiConfig::new("http://127.0.0.1:1/v1", "gpt-5.4"));
    assert_eq!(model.label(), "openai:gpt-5.4");
}

mod from_env {
    use super::*;

    fn read_env(pairs: &[(&str, &str)]) -> Result<OpenAiConfig, ProviderError> {
        OpenAiConfig::from_env(&env_of(pairs), None)
    }

    fn not_configured(result: Result<OpenAiConfig, ProviderError>) -> String {
        match result {
            Err(ProviderError::NotConfigured { what }) => what,
            other => panic!("expected NotConfigured, got {other:?}"),
        }
    }

    #[test]
    fn everything_set_explicitly() {
        let config = read_env(&[
            ("WEFT_PLANNER_BASE_URL", "https://llm.example.com/v1/"),
            ("WEFT_PLANNER_API_KEY", KEY),
            ("WEFT_PLANNER_MODEL", "big-model"),
        ])
        .unwrap();
        assert_eq!(config.base_url, "https://llm.example.com/v1");
        assert_eq!(config.api_key.as_deref(), Some(KEY));
        assert_eq!(config.key_var.as_deref(), Some("WEFT_PLANNER_API_KEY"));
        assert_eq!(config.model, "big-model");
        assert_eq!(config.connect_timeout, Duration::from_secs(10));
        assert_eq!(config.idle_timeout, Duration::from_secs(60));
        assert_eq!(config.request_timeout, Duration::from_secs(300));
        assert_eq!(config.max_tokens, None);
        assert_eq!(
            config.endpoint(),
            "https://llm.example.com/v1/chat/completions"
        );
    }

    #[test]
    fn the_key_falls_back_in_order() {
        let all = read_env(&[
            ("WEFT_PLANNER_API_KEY", "sk-weft"),
            ("OPENAI_API_KEY", "sk-openai"),
            ("OPENROUTER_API_KEY", "sk-or"),
            ("WEFT_PLANNER_MODEL", "m"),
        ])
        .unwrap();
        assert_eq!(all.api_key.as_deref(), Some("sk-weft"));
        assert_eq!(all.base_url, "https://api.openai.com/v1");

        let openai = read_env(&[
            ("OPENAI_API_KEY", "sk-openai"),
            ("OPENROUTER_API_KEY", "sk-or"),
            ("WEFT_PLANNER_MODEL", "m"),
        ])
        .unwrap();
        assert_eq!(openai.api_key.as_deref(), Some("sk-openai"));
        assert_eq!(openai.key_var.as_deref(), Some("OPENAI_API_KEY"));
        assert_eq!(openai.base_url, "https://api.openai.com/v1");

        let openrouter =
            read_env(&[("OPENROUTER_API_KEY", "sk-or"), ("WEFT_PLANNER_MODEL", "m")]).unwrap();
        assert_eq!(openrouter.api_key.as_deref(), Some("sk-or"));
        assert_eq!(openrouter.key_var.as_deref(), Some("OPENROUTER_API_KEY"));
        assert_eq!(openrouter.base_url, "https://openrouter.ai/api/v1");

        // An explicit base URL wins over the OpenRouter default.
        let custom = read_env(&[
            ("OPENROUTER_API_KEY", "sk-or"),
            ("WEFT_PLANNER_BASE_URL", "https://proxy.example.com/api/v1"),
            ("WEFT_PLANNER_MODEL", "m"),
        ])
        .unwrap();
        assert_eq!(custom.base_url, "https://proxy.example.com/api/v1");
    }

    #[test]
    fn empty_values_count_as_unset() {
        let config = read_env(&[
            ("WEFT_PLANNER_BASE_URL", ""),
            ("WEFT_PLANNER_API_KEY", ""),
            ("OPENAI_API_KEY", "  "),
            ("OPENROUTER_API_KEY", "sk-or"),
            ("WEFT_PLANNER_MODEL", "m"),
        ])
        .unwrap();
        assert_eq!(config.key_var.as_deref(), Some("OPENROUTER_API_KEY"));
        assert_eq!(config.base_url, "https://openrouter.ai/api/v1");

        let what = not_configured(read_env(&[
            ("WEFT_PLANNER_API_KEY", "sk-x"),
            ("WEFT_PLANNER_MODEL", ""),
        ]));
        assert!(what.contains("WEFT_PLANNER_MODEL"), "{what}");
    }

    #[test]
    fn a_missing_model_names_the_variable() {
        let what = not_configured(read_env(&[("WEFT_PLANNER_API_KEY", "sk-x")]));
        assert!(what.contains("WEFT_PLANNER_MODEL"), "{what}");
        let error = read_env(&[("WEFT_PLANNER_API_KEY", "sk-x")]).unwrap_err();
        assert!(error.to_string().contains("WEFT_PLANNER_MODEL"));
    }

    #[test]
    fn the_model_override_wins() {
        let config = OpenAiConfig::from_env(
            &env_of(&[
                ("WEFT_PLANNER_API_KEY", "sk-x"),
                ("WEFT_PLANNER_MODEL", "env-model"),
            ]),
            Some("flag-model"),
        )
        .unwrap();
        assert_eq!(config.model, "flag-model");
        let config = OpenAiConfig::from_env(
            &env_of(&[("WEFT_PLANNER_API_KEY", "sk-x")]),
            Some("only-flag"),
        )
        .unwrap();
        assert_eq!(config.model, "only-flag");
    }

    #[test]
    fn a_missing_key_is_an_error_for_remote_endpoints() {
        let what = not_configured(read_env(&[("WEFT_PLANNER_MODEL", "m")]));
        assert!(what.contains("WEFT_PLANNER_API_KEY"), "{what}");
        let what = not_configured(read_env(&[
            ("WEFT_PLANNER_BASE_URL", "https://llm.example.com/v1"),
            ("WEFT_PLANNER_MODEL", "m"),
        ]));
        assert!(what.contains("WEFT_PLANNER_API_KEY"), "{what}");
        // Both missing: both named.
        let what = not_configured(read_env(&[]));
        assert!(
            what.contains("WEFT_PLANNER_API_KEY") && what.contains("WEFT_PLANNER_MODEL"),
            "{what}"
        );
    }

    #[test]
    fn loopback_endpoints_need_no_key() {
        for url in [
            "http://localhost:11434/v1",
            "http://127.0.0.1:8080/v1",
            "http://[::1]:8000/v1/",
            "http://127.0.0.2/v1",
        ] {
            let config = read_env(&[
                ("WEFT_PLANNER_BASE_URL", url),
                ("WEFT_PLANNER_MODEL", "llama3"),
            ])
            .unwrap_or_else(|e| panic!("{url}: {e}"));
            assert_eq!(config.api_key, None);
            assert_eq!(config.key_var, None);
            assert_eq!(config.base_url, url.trim_end_matches('/'));
        }
    }

    #[test]
    fn a_pasted_endpoint_is_cut_to_the_base_url_and_bad_urls_are_refused() {
        let config = read_env(&[
            (
                "WEFT_PLANNER_BASE_URL",
                "http://localhost:11434/v1/chat/completions",
            ),
            ("WEFT_PLANNER_MODEL", "m"),
        ])
        .unwrap();
        assert_eq!(config.base_url, "http://localhost:11434/v1");
        let what = not_configured(read_env(&[
            ("WEFT_PLANNER_BASE_URL", "localhost:11434"),
            ("WEFT_PLANNER_MODEL", "m"),
        ]));
        assert!(what.contains("WEFT_PLANNER_BASE_URL"), "{what}");
    }

    #[test]
    fn a_key_with_inner_spaces_is_refused_without_showing_it() {
        let error = read_env(&[
            ("WEFT_PLANNER_API_KEY", "sk-abc def-secret"),
            ("WEFT_PLANNER_MODEL", "m"),
        ])
        .unwrap_err();
        let shown = error.to_string();
        assert!(shown.contains("WEFT_PLANNER_API_KEY"));
        assert!(!shown.contains("def-secret"));
    }

    #[test]
    fn the_key_never_shows_in_debug_output() {
        let config =
            read_env(&[("WEFT_PLANNER_API_KEY", KEY), ("WEFT_PLANNER_MODEL", "m")]).unwrap();
        let debug = format!("{config:?} {:?}", OpenAiModel::new(config.clone()));
        assert!(!debug.contains(KEY), "{debug}");
        assert!(debug.contains("****"));
        assert!(debug.contains("WEFT_PLANNER_API_KEY"));
    }
}

#[test]
fn an_interrupt_is_heard_while_the_server_says_nothing() {
    let mock = MockModel::start(vec![MockReply::hang()]);
    let interrupt = weft_core::interrupt::Interrupt::new();
    let config = OpenAiConfig {
        interrupt: Some(interrupt.clone()),
        ..config_for(&mock)
    };
    let mut model = OpenAiModel::new(config);
    let raiser = {
        let interrupt = interrupt.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            interrupt.raise();
        })
    };
    let started = Instant::now();
    let result = model.complete(&[Message::user("plan")], &[], &mut |_| {});
    raiser.join().unwrap();
    assert!(
        matches!(result, Err(ProviderError::Interrupted { .. })),
        "{result:?}"
    );
    // Long before the 60 s idle timeout.
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn with_an_interrupt_configured_a_reply_still_streams_through() {
    let mock = MockModel::start(vec![MockReply::text("hello there")]);
    let config = OpenAiConfig {
        interrupt: Some(weft_core::interrupt::Interrupt::new()),
        ..config_for(&mock)
    };
    let mut model = OpenAiModel::new(config);
    let mut text = String::new();
    let reply = model
        .complete(&[Message::user("hi")], &[], &mut |event| {
            if let StreamEvent::Text(delta) = event {
                text.push_str(&delta);
            }
        })
        .unwrap();
    assert_eq!(reply.text, "hello there");
    assert_eq!(text, "hello there");
}
