//! The server end to end over real sockets: script order, recording, each API's stream
//! and body shapes, cuts, stalls and shutdown.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::script::split_pieces;
use super::*;

mod messages;
mod responses;
mod script;

/// A raw HTTP/1.1 answer: status, lower-cased headers, decoded body, and whether a
/// chunked body ended properly.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
    complete: bool,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The `event:` names and JSON payloads of named server-sent events.
    fn named_events(&self) -> Vec<(String, Value)> {
        self.body
            .split("\n\n")
            .filter_map(|event| {
                let mut lines = event.lines();
                let name = lines.next()?.strip_prefix("event: ")?;
                let data = lines.next()?.strip_prefix("data: ")?;
                Some((name.to_owned(), serde_json::from_str(data).ok()?))
            })
            .collect()
    }

    /// The JSON payloads of the `data:` events, `[DONE]` as a string.
    fn events(&self) -> Vec<Value> {
        self.body
            .lines()
            .filter_map(|line| line.strip_prefix("data: "))
            .map(|data| serde_json::from_str(data).unwrap_or_else(|_| Value::from(data)))
            .collect()
    }

    fn streamed_text(&self) -> String {
        self.events()
            .iter()
            .filter_map(|e| {
                e.pointer("/choices/0/delta/content")
                    .and_then(Value::as_str)
            })
            .collect()
    }

    fn finish_reasons(&self) -> Vec<String> {
        self.events()
            .iter()
            .filter_map(|e| {
                e.pointer("/choices/0/finish_reason")
                    .and_then(Value::as_str)
            })
            .map(str::to_owned)
            .collect()
    }
}

fn post(model: &MockModel, path: &str, body: &Value, extra_headers: &[(&str, &str)]) -> Answer {
    send(
        model,
        "POST",
        path,
        &body.to_string(),
        extra_headers,
        Duration::from_secs(10),
    )
    .expect("the mock answers")
}

fn send(
    model: &MockModel,
    method: &str,
    path: &str,
    body: &str,
    extra_headers: &[(&str, &str)],
    read_timeout: Duration,
) -> io::Result<Answer> {
    let mut stream = TcpStream::connect(model.address())?;
    stream.set_read_timeout(Some(read_timeout))?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        model.address(),
        body.len()
    );
    for (name, value) in extra_headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    Ok(parse_answer(&raw))
}

fn parse_answer(raw: &[u8]) -> Answer {
    let text = String::from_utf8_lossy(raw);
    let (head, rest) = text.split_once("\r\n\r\n").expect("a complete head");
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v == "chunked");
    let (body, complete) = if chunked {
        dechunk(rest)
    } else {
        (rest.to_owned(), true)
    };
    Answer {
        status,
        headers,
        body,
        complete,
    }
}

fn dechunk(mut rest: &str) -> (String, bool) {
    let mut body = String::new();
    loop {
        let Some((size, after)) = rest.split_once("\r\n") else {
            return (body, false);
        };
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else {
            return (body, false);
        };
        if size == 0 {
            return (body, true);
        }
        if after.len() < size + 2 {
            body.push_str(&after[..after.len().min(size)]);
            return (body, false);
        }
        body.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
}

fn chat_body(stream: bool, include_usage: bool) -> Value {
    json!({
        "model": "mock/test",
        "messages": [{"role": "user", "content": "hello"}],
        "stream": stream,
        "stream_options": {"include_usage": include_usage},
    })
}

#[test]
fn replies_are_served_in_order_then_the_script_is_exhausted() {
    let model = MockModel::start(vec![
        MockReply::text("first"),
        MockReply::status(429, "slow down"),
        MockReply::text("third"),
    ]);
    let path = "/v1/chat/completions";
    let first = post(&model, path, &chat_body(true, false), &[]);
    assert_eq!(first.status, 200);
    assert_eq!(first.streamed_text(), "first");

    let second = post(&model, path, &chat_body(true, false), &[]);
    assert_eq!(second.status, 429);
    assert_eq!(second.header("content-type"), Some("application/json"));
    let error: Value = serde_json::from_str(&second.body).unwrap();
    assert_eq!(error["error"]["message"], "slow down");

    assert_eq!(model.remaining(), 1);
    let third = post(&model, path, &chat_body(true, false), &[]);
    assert_eq!(third.streamed_text(), "third");

    let fourth = post(&model, path, &chat_body(true, false), &[]);
    assert_eq!(fourth.status, 500);
    assert!(
        fourth.body.contains("mock script exhausted"),
        "{}",
        fourth.body
    );
    assert_eq!(model.exhausted(), 1);
    assert_eq!(model.requests().len(), 4);
}

#[test]
fn requests_are_recorded_with_lowercased_headers_and_parsed_bodies() {
    let model = MockModel::start(vec![MockReply::text("ok")]);
    let body = chat_body(true, true);
    post(
        &model,
        "/v1/chat/completions",
        &body,
        &[("Authorization", "Bearer sk-test"), ("X-Custom", "Yes")],
    );
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method, "POST");
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.body, body);
    assert_eq!(request.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(request.header("X-CUSTOM"), Some("Yes"));
    assert!(
        request
            .headers
            .iter()
            .all(|(n, _)| *n == n.to_ascii_lowercase())
    );
    assert_eq!(model.chat_requests().len(), 1);
}

#[test]
fn a_text_stream_has_the_openai_shape_and_usage_only_when_asked() {
    let model = MockModel::start(vec![
        MockReply::text("Hello, streaming world!").with_usage(12, 34),
        MockReply::text("no usage here"),
    ]);
    let answer = post(&model, "/v1/chat/completions", &chat_body(true, true), &[]);
    assert_eq!(answer.status, 200);
    assert_eq!(answer.header("content-type"), Some("text/event-stream"));
    assert_eq!(answer.header("connection"), Some("close"));
    assert!(answer.complete);
    assert!(answer.body.ends_with("data: [DONE]\n\n"));
    let events = answer.events();
    let content_chunks = events
        .iter()
        .filter(|e| {
            e.pointer("/choices/0/delta/content")
                .and_then(Value::as_str)
                .is_some_and(|c| !c.is_empty())
        })
        .count();
    assert!(content_chunks >= 2, "text arrives in several chunks");
    assert_eq!(events[0]["object"], "chat.completion.chunk");
    assert_eq!(events[0]["model"], "mock/test");
    assert_eq!(answer.streamed_text(), "Hello, streaming world!");
    assert_eq!(answer.finish_reasons(), vec!["stop"]);
    let usage = events
        .iter()
        .find(|e| e.get("usage").is_some())
        .expect("a usage chunk");
    assert_eq!(usage["usage"]["prompt_tokens"], 12);
    assert_eq!(usage["usage"]["completion_tokens"], 34);

    let plain = post(&model, "/v1/chat/completions", &chat_body(true, false), &[]);
    assert!(plain.events().iter().all(|e| e.get("usage").is_none()));
}

#[test]
fn tool_call_arguments_are_split_across_chunks_by_index() {
    let model = MockModel::start(vec![
        MockReply::tool_calls(vec![
            (
                "read_file",
                json!({"path": "src/main.rs", "max_lines": 200}),
            ),
            ("grep", json!({"pattern": "fn main", "path": "."})),
        ]),
        MockReply::tool_calls(vec![("list_dir", json!({"path": "."}))]),
    ]);
    let answer = post(&model, "/v1/chat/completions", &chat_body(true, false), &[]);
    let mut names = vec![String::new(); 2];
    let mut ids = vec![String::new(); 2];
    let mut arguments = vec![String::new(); 2];
    let mut argument_chunks = [0; 2];
    for event in answer.events() {
        let Some(calls) = event
            .pointer("/choices/0/delta/tool_calls")
            .and_then(Value::as_array)
        else {
            continue;
        };
        for call in calls {
            let index = call["index"].as_u64().unwrap() as usize;
            if let Some(id) = call["id"].as_str() {
                ids[index] = id.to_owned();
            }
            if let Some(name) = call.pointer("/function/name").and_then(Value::as_str) {
                names[index].push_str(name);
            }
            if let Some(args) = call.pointer("/function/arguments").and_then(Value::as_str) {
                if !args.is_empty() {
                    argument_chunks[index] += 1;
                }
                arguments[index].push_str(args);
            }
        }
    }
    assert_eq!(names, vec!["read_file", "grep"]);
    assert_eq!(ids, vec!["call_1", "call_2"]);
    assert!(
        argument_chunks.iter().all(|&n| n >= 2),
        "{argument_chunks:?}"
    );
    let first: Value = serde_json::from_str(&arguments[0]).unwrap();
    assert_eq!(first, json!({"path": "src/main.rs", "max_lines": 200}));
    let second: Value = serde_json::from_str(&arguments[1]).unwrap();
    assert_eq!(second, json!({"pattern": "fn main", "path": "."}));
    assert_eq!(answer.finish_reasons(), vec!["tool_calls"]);

    // Ids keep counting across replies.
    let next = post(&model, "/v1/chat/completions", &chat_body(true, false), &[]);
    assert!(next.body.contains("\"call_3\""));
}

#[test]
fn a_cut_reply_closes_without_finish_or_done() {
    let model = MockModel::start(vec![MockReply::cut("partial answer that never ends")]);
    let started = Instant::now();
    let answer = post(&model, "/v1/chat/completions", &chat_body(true, true), &[]);
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(answer.status, 200);
    assert!(
        !answer.complete,
        "the chunked body has no terminating chunk"
    );
    assert!(!answer.body.contains("[DONE]"));
    assert!(answer.finish_reasons().is_empty());
    assert_eq!(answer.streamed_text(), "partial answer that never ends");
}

#[test]
fn status_replies_carry_their_code_and_wrap_plain_text() {
    let model = MockModel::start(vec![
        MockReply::status(401, "Incorrect API key provided"),
        MockReply::status(503, r#"{"error":{"message":"overloaded","code":503}}"#),
        MockReply::status(500, ""),
    ]);
    let unauthorized = post(&model, "/v1/chat/completions", &chat_body(true, false), &[]);
    assert_eq!(unauthorized.status, 401);
    let body: Value = serde_json::from_str(&unauthorized.body).unwrap();
    assert_eq!(body["error"]["message"], "Incorrect API key provided");

    let overloaded = post(&model, "/v1/chat/completions", &chat_body(true, false), &[]);
    assert_eq!(overloaded.status, 503);
    assert_eq!(
        overloaded.body,
        r#"{"error":{"message":"overloaded","code":503}}"#
    );

    let empty = post(&model, "/v1/chat/completions", &chat_body(true, false), &[]);
    assert_eq!(empty.status, 500);
    assert_eq!(empty.body, "");
}

#[test]
fn other_paths_get_404_and_are_recorded_without_consuming_the_script() {
    let model = MockModel::start(vec![MockReply::text("kept")]);
    let answer = send(&model, "GET", "/v1/other", "", &[], Duration::from_secs(5)).unwrap();
    assert_eq!(answer.status, 404);
    assert!(answer.body.contains("/v1/other"), "{}", answer.body);
    assert_eq!(model.remaining(), 1);
    assert_eq!(model.requests().len(), 1);
    assert!(model.chat_requests().is_empty());
    assert!(model.model_requests().is_empty());
}

#[test]
fn side_requests_are_answered_without_consuming_the_script() {
    let model = MockModel::start(vec![MockReply::text("kept")]);
    let models = send(
        &model,
        "GET",
        "/v1/models?limit=5",
        "",
        &[],
        Duration::from_secs(5),
    )
    .unwrap();
    assert_eq!(models.status, 200);
    let listing: Value = serde_json::from_str(&models.body).unwrap();
    assert_eq!(listing["data"][0]["id"], "mock-model");

    let body = json!({"model": "m", "messages": [{"role": "user", "content": "count me please"}]});
    let counted = post(&model, "/v1/messages/count_tokens", &body, &[]);
    assert_eq!(counted.status, 200);
    let counted: Value = serde_json::from_str(&counted.body).unwrap();
    assert!(counted["input_tokens"].as_u64().unwrap() > 0);

    assert_eq!(model.remaining(), 1);
    assert_eq!(model.requests().len(), 2);
    assert!(model.model_requests().is_empty());
}

#[test]
fn a_non_streamed_request_gets_one_json_completion() {
    let model = MockModel::start(vec![
        MockReply::tool_calls(vec![("read_file", json!({"path": "a"}))]),
        MockReply::text("plain anyway").non_streamed(),
    ]);
    let answer = post(
        &model,
        "/v1/chat/completions",
        &chat_body(false, false),
        &[],
    );
    assert_eq!(answer.header("content-type"), Some("application/json"));
    let body: Value = serde_json::from_str(&answer.body).unwrap();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(
        body["choices"][0]["message"]["tool_calls"][0]["function"]["name"],
        "read_file"
    );
    assert_eq!(
        body["choices"][0]["message"]["tool_calls"][0]["id"],
        "call_1"
    );

    let forced = post(&model, "/v1/chat/completions", &chat_body(true, true), &[]);
    let body: Value = serde_json::from_str(&forced.body).unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "plain anyway");
    assert!(body["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
}

#[test]
fn delay_waits_before_answering() {
    let model = MockModel::start(vec![MockReply::delay(
        Duration::from_millis(300),
        MockReply::text("late"),
    )]);
    let started = Instant::now();
    let answer = post(&model, "/v1/chat/completions", &chat_body(true, false), &[]);
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(answer.streamed_text(), "late");
}

#[test]
fn a_hung_reply_says_nothing_and_dropping_the_server_releases_the_client() {
    let model = MockModel::start(vec![MockReply::hang(), MockReply::stall("half")]);
    let timed_out = send(
        &model,
        "POST",
        "/v1/chat/completions",
        &chat_body(true, false).to_string(),
        &[],
        Duration::from_millis(300),
    )
    .expect_err("nothing arrives");
    assert!(
        matches!(
            timed_out.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ),
        "{timed_out:?}"
    );
    assert_eq!(
        model.chat_requests().len(),
        1,
        "the hung request was still recorded"
    );

    // A client waiting on a stalled stream sees the connection end once the server drops.
    let address = model.address();
    let client = thread::spawn(move || {
        let mut stream = TcpStream::connect(address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let body = chat_body(true, false).to_string();
        let request = format!(
            "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut raw = Vec::new();
        let started = Instant::now();
        let result = stream.read_to_end(&mut raw);
        (result.is_ok(), started.elapsed(), parse_answer(&raw))
    });
    while model.chat_requests().len() < 2 {
        thread::sleep(POLL);
    }
    thread::sleep(Duration::from_millis(100));
    let dropped = Instant::now();
    drop(model);
    assert!(
        dropped.elapsed() < Duration::from_secs(2),
        "drop does not hang"
    );
    let (closed_cleanly, waited, answer) = client.join().unwrap();
    assert!(closed_cleanly, "the client saw the connection close");
    assert!(waited < Duration::from_secs(5));
    assert_eq!(answer.streamed_text(), "half");
    assert!(!answer.complete);
    assert!(!answer.body.contains("[DONE]"));
}

#[test]
fn split_pieces_respects_characters() {
    assert_eq!(split_pieces("", 3), Vec::<&str>::new());
    assert_eq!(split_pieces("ab", 3), vec!["a", "b"]);
    assert_eq!(split_pieces("héllo wörld", 3).concat(), "héllo wörld");
    assert_eq!(split_pieces("abcdefghi", 3), vec!["abc", "def", "ghi"]);
}
