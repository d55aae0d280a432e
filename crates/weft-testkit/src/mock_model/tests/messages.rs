//! The Anthropic Messages API as Claude Code reads it.

use super::*;

fn messages_body(stream: bool) -> Value {
    json!({
        "model": "claude-mock",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "hello"}],
        "stream": stream,
    })
}

/// The text deltas, tool inputs (by block index) and stop reason of a Messages stream.
fn replay(events: &[(String, Value)]) -> (String, Vec<(String, String, String)>, String) {
    let mut text = String::new();
    let mut tools: Vec<(String, String, String)> = Vec::new();
    let mut stop = String::new();
    for (name, data) in events {
        assert_eq!(data["type"].as_str(), Some(name.as_str()), "{data}");
        match name.as_str() {
            "content_block_start" if data["content_block"]["type"] == "tool_use" => {
                let block = &data["content_block"];
                tools.push((
                    block["id"].as_str().unwrap().to_owned(),
                    block["name"].as_str().unwrap().to_owned(),
                    String::new(),
                ));
            }
            "content_block_delta" => match data["delta"]["type"].as_str() {
                Some("text_delta") => text.push_str(data["delta"]["text"].as_str().unwrap()),
                Some("input_json_delta") => tools
                    .last_mut()
                    .unwrap()
                    .2
                    .push_str(data["delta"]["partial_json"].as_str().unwrap()),
                _ => {}
            },
            "message_delta" => stop = data["delta"]["stop_reason"].as_str().unwrap().to_owned(),
            _ => {}
        }
    }
    (text, tools, stop)
}

#[test]
fn a_messages_stream_has_the_anthropic_event_sequence() {
    let model = MockModel::start(vec![
        MockReply::text("Hello from the mock").with_usage(40, 7),
    ]);
    let answer = post(&model, "/v1/messages?beta=true", &messages_body(true), &[]);
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("content-type"), Some("text/event-stream"));
    assert!(answer.complete);
    let events = answer.named_events();
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"message_start"));
    assert_eq!(names.last(), Some(&"message_stop"));
    assert!(names.contains(&"content_block_start") && names.contains(&"content_block_stop"));
    assert!(
        names
            .iter()
            .filter(|n| **n == "content_block_delta")
            .count()
            >= 2
    );
    let start = &events[0].1["message"];
    assert_eq!(start["role"], "assistant");
    assert_eq!(start["model"], "claude-mock");
    assert_eq!(start["usage"]["input_tokens"], 40);
    let delta = &events.iter().find(|(n, _)| n == "message_delta").unwrap().1;
    assert_eq!(delta["usage"]["output_tokens"], 7);
    let (text, tools, stop) = replay(&events);
    assert_eq!(text, "Hello from the mock");
    assert!(tools.is_empty());
    assert_eq!(stop, "end_turn");
    assert_eq!(model.requests_to(Api::Messages).len(), 1);
}

#[test]
fn a_tool_use_streams_its_input_as_json_deltas_and_stops_for_tool_use() {
    let model = MockModel::start(vec![MockReply::text_and_tool_calls(
        "Writing it.",
        vec![
            ("Write", json!({"file_path": "/w/a.txt", "content": "hi\n"})),
            ("Bash", json!({"command": "ls -la"})),
        ],
    )]);
    let answer = post(&model, "/v1/messages", &messages_body(true), &[]);
    let events = answer.named_events();
    let (text, tools, stop) = replay(&events);
    assert_eq!(text, "Writing it.");
    assert_eq!(stop, "tool_use");
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0].0, "toolu_mock_1");
    assert_eq!(tools[0].1, "Write");
    let input: Value = serde_json::from_str(&tools[0].2).unwrap();
    assert_eq!(input, json!({"file_path": "/w/a.txt", "content": "hi\n"}));
    assert_eq!(tools[1].1, "Bash");
    let deltas = events
        .iter()
        .filter(|(_, d)| d["delta"]["type"] == "input_json_delta" && d["index"] == 1)
        .count();
    assert!(deltas >= 2, "the input arrives in pieces");
}

#[test]
fn thinking_comes_first_with_a_signature() {
    let model = MockModel::start(vec![MockReply::reasoning_then_text("let me see", "done")]);
    let events = post(&model, "/v1/messages", &messages_body(true), &[]).named_events();
    let first_block = events
        .iter()
        .find(|(n, _)| n == "content_block_start")
        .unwrap();
    assert_eq!(first_block.1["content_block"]["type"], "thinking");
    assert!(
        events
            .iter()
            .any(|(_, d)| d["delta"]["type"] == "signature_delta")
    );
    assert_eq!(replay(&events).0, "done");
}

#[test]
fn a_non_streamed_message_and_anthropic_shaped_errors() {
    let model = MockModel::start(vec![
        MockReply::tool_calls(vec![("Bash", json!({"command": "true"}))]),
        MockReply::status(529, "Overloaded"),
    ]);
    let answer = post(&model, "/v1/messages", &messages_body(false), &[]);
    assert_eq!(answer.header("content-type"), Some("application/json"));
    let message: Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(message["type"], "message");
    assert_eq!(message["stop_reason"], "tool_use");
    assert_eq!(message["content"][0]["type"], "tool_use");
    assert_eq!(message["content"][0]["input"], json!({"command": "true"}));

    let error = post(&model, "/v1/messages", &messages_body(true), &[]);
    assert_eq!(error.status, 529);
    let error: Value = serde_json::from_str(&error.body).unwrap();
    assert_eq!(error["type"], "error");
    assert_eq!(error["error"]["message"], "Overloaded");
}
