//! The OpenAI Responses API as Codex reads it.

use super::*;

fn responses_body(stream: bool) -> Value {
    json!({
        "model": "mock-model",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "stream": stream,
    })
}

#[test]
fn a_responses_stream_has_numbered_events_from_created_to_completed() {
    let model = MockModel::start(vec![MockReply::text("All done.").with_usage(100, 9)]);
    let answer = post(&model, "/v1/responses", &responses_body(true), &[]);
    assert_eq!(answer.status, 200);
    assert!(answer.complete);
    let events = answer.named_events();
    let names: Vec<&str> = events.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.first(), Some(&"response.created"));
    assert_eq!(names.last(), Some(&"response.completed"));
    for wanted in [
        "response.output_item.added",
        "response.output_text.delta",
        "response.output_item.done",
    ] {
        assert!(names.contains(&wanted), "{wanted} in {names:?}");
    }
    for (index, (name, data)) in events.iter().enumerate() {
        assert_eq!(data["type"].as_str(), Some(name.as_str()));
        assert_eq!(data["sequence_number"], index);
    }
    let text: String = events
        .iter()
        .filter(|(n, _)| n == "response.output_text.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "All done.");
    let done = &events.last().unwrap().1["response"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["usage"]["input_tokens"], 100);
    assert_eq!(done["usage"]["output_tokens"], 9);
    assert_eq!(done["output"][0]["content"][0]["text"], "All done.");
}

#[test]
fn a_function_call_streams_its_arguments_and_ends_whole() {
    let model = MockModel::start(vec![MockReply::tool_calls(vec![(
        "shell",
        json!({"command": ["bash", "-lc", "echo hi > out.txt"]}),
    )])]);
    let events = post(&model, "/v1/responses", &responses_body(true), &[]).named_events();
    let added = &events
        .iter()
        .find(|(n, _)| n == "response.output_item.added")
        .unwrap()
        .1["item"];
    assert_eq!(added["type"], "function_call");
    assert_eq!(added["name"], "shell");
    assert_eq!(added["call_id"], "call_1");
    let deltas: Vec<&str> = events
        .iter()
        .filter(|(n, _)| n == "response.function_call_arguments.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert!(deltas.len() >= 2, "{deltas:?}");
    let arguments: Value = serde_json::from_str(&deltas.concat()).unwrap();
    assert_eq!(arguments["command"][2], "echo hi > out.txt");
    let done = &events
        .iter()
        .find(|(n, _)| n == "response.output_item.done")
        .unwrap()
        .1["item"];
    assert_eq!(done["status"], "completed");
    assert_eq!(done["arguments"].as_str(), Some(deltas.concat().as_str()));
}

#[test]
fn a_length_cut_is_incomplete_and_a_non_streamed_request_gets_the_response_object() {
    let model = MockModel::start(vec![
        MockReply::text_then_length("trunc"),
        MockReply::reasoning_then_text("think", "answer"),
    ]);
    let events = post(&model, "/v1/responses", &responses_body(true), &[]).named_events();
    let last = events.last().unwrap();
    assert_eq!(last.0, "response.incomplete");
    assert_eq!(
        last.1["response"]["incomplete_details"]["reason"],
        "max_output_tokens"
    );

    let answer = post(&model, "/v1/responses", &responses_body(false), &[]);
    let body: Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(body["object"], "response");
    assert_eq!(body["output"][0]["type"], "reasoning");
    assert_eq!(body["output"][1]["content"][0]["text"], "answer");
}

#[test]
fn one_script_serves_every_api_in_order() {
    let model = MockModel::start(vec![
        MockReply::text("to chat"),
        MockReply::text("to messages"),
        MockReply::text("to responses"),
    ]);
    let chat = post(
        &model,
        "/v1/chat/completions",
        &json!({"model": "m", "messages": [], "stream": true}),
        &[],
    );
    assert_eq!(chat.streamed_text(), "to chat");
    let messages = post(&model, "/v1/messages", &json!({"stream": false}), &[]);
    assert!(messages.body.contains("to messages"));
    let responses = post(&model, "/v1/responses", &json!({"stream": false}), &[]);
    assert!(responses.body.contains("to responses"));
    let apis: Vec<_> = model
        .model_requests()
        .iter()
        .filter_map(RecordedRequest::api)
        .collect();
    assert_eq!(apis, vec![Api::Chat, Api::Messages, Api::Responses]);
}
