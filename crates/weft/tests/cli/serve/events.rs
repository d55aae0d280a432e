//! `/api/events`: replay by sequence number, live follow, heartbeats, a slow client
//! dropped and resumed; `/api/attempts/{id}/output`.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{Served, exec_plan};
use crate::harness::Weft;

fn cli_events(weft: &Weft) -> Vec<Value> {
    weft.ok(&["events", "--json", "--all"])
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_stream_replays_the_events_after_a_sequence_number_each_with_its_seq_as_id() {
    let weft = Weft::new();
    weft.import_sample();
    weft.ok(&["task", "hold", "1"]);
    weft.ok(&["task", "release", "1"]);
    let all = cli_events(&weft);
    assert!(all.len() >= 3);
    let after = all[0]["seq"].as_i64().unwrap();
    let served = Served::start(&weft);
    for path in [
        format!("/api/events?after={after}"),
        "/api/events".to_owned(),
    ] {
        let mut stream = if path.contains('?') {
            served.stream(&path, &[])
        } else {
            // Last-Event-ID, as a reconnecting EventSource sends it.
            served.stream(&path, &[("Last-Event-ID", &after.to_string())])
        };
        for expected in &all[1..] {
            let message = stream.next().expect("a replayed event");
            assert_eq!(message.id, Some(expected["seq"].to_string()));
            assert_eq!(message.event.as_deref(), expected["event"]["kind"].as_str());
            let data: Value = serde_json::from_str(&message.data).unwrap();
            assert_eq!(&data, expected);
        }
    }
}

#[test]
fn an_edit_made_with_the_cli_reaches_an_open_stream_within_a_second_with_its_new_values() {
    let weft = Weft::new();
    weft.import_sample();
    let served = Served::start(&weft);
    let last = cli_events(&weft).last().unwrap()["seq"].as_i64().unwrap();
    let mut stream = served.stream(&format!("/api/events?after={last}"), &[]);
    let edited = Instant::now();
    weft.ok(&["task", "edit", "1", "--title", "Renamed from a terminal"]);
    let message = stream
        .next_of("task_edited", Duration::from_secs(5))
        .expect("the edit's event");
    // The CLI process itself takes a while to start; the stream adds at most a poll.
    assert!(
        edited.elapsed() < Duration::from_secs(3),
        "{:?}",
        edited.elapsed()
    );
    assert!(
        message.data.contains("Renamed from a terminal"),
        "{}",
        message.data
    );
}

#[test]
fn an_idle_stream_sends_heartbeats() {
    let weft = Weft::new();
    weft.import_sample();
    let served = Served::start(&weft);
    let mut stream = served.stream("/api/events?after=999999&heartbeat_ms=200", &[]);
    let start = Instant::now();
    let mut beats = 0;
    while beats < 2 {
        let line = stream.line().expect("the stream stays open");
        if line.starts_with(": hb") {
            beats += 1;
        }
    }
    assert!(start.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_client_too_slow_for_its_buffer_is_dropped_and_resumes_by_last_event_id_losing_nothing() {
    let weft = Weft::new();
    weft.import_sample();
    let served = Served::start_with(&weft, &[("WEFT_TEST_SSE_BUFFER", "2")]);
    let first = cli_events(&weft).last().unwrap()["seq"].as_i64().unwrap();
    let mut slow = served.stream(&format!("/api/events?after={first}"), &[]);
    // Big events (a 256 KiB prompt each) fill the socket's buffers while nobody reads.
    let big = "x".repeat(256 * 1024);
    for i in 0..40 {
        served
            .send(
                "PATCH",
                "/api/plans/current/tasks/1",
                &json!({"prompt": format!("{i}{big}")}),
            )
            .expect(200);
    }
    let wanted: Vec<String> = cli_events(&weft)
        .iter()
        .filter(|e| e["seq"].as_i64().unwrap() > first)
        .map(|e| e["seq"].to_string())
        .collect();
    assert_eq!(wanted.len(), 40);
    let mut got = Vec::new();
    while let Some(message) = slow.next() {
        got.push(message.id.unwrap());
    }
    assert!(
        got.len() < wanted.len(),
        "the slow client was not dropped ({} events)",
        got.len()
    );
    let resume = got.last().cloned().unwrap_or_else(|| first.to_string());
    let mut again = served.stream("/api/events", &[("Last-Event-ID", &resume)]);
    while got.len() < wanted.len() {
        got.push(again.next().expect("the rest").id.unwrap());
    }
    assert_eq!(got, wanted);
}

#[test]
fn an_attempts_output_is_read_by_range_sanitized_unless_raw_and_streamed_to_its_end() {
    let weft = Weft::new();
    exec_plan(
        &weft,
        "printf 'hello \\033]52;c;Zm9v\\007world\\n'",
        "echo second",
    );
    weft.ok(&["run", "--without-isolation"]);
    let served = Served::start(&weft);
    let attempts = served
        .get("/api/plans/current/tasks/1/attempts")
        .expect(200)
        .json();
    let id = attempts[0]["id"].as_str().unwrap().to_owned();
    let shown = served
        .get(&format!("/api/attempts/{id}/output"))
        .expect(200);
    assert!(
        shown.body.contains("hello \\x1b]52;c;Zm9v\\x07world"),
        "{}",
        shown.body
    );
    assert_eq!(shown.header("X-Weft-Done"), Some("1"));
    let raw = served
        .get(&format!("/api/attempts/{id}/output?raw=1"))
        .expect(200);
    assert!(
        raw.body.contains("hello \u{1b}]52;c;Zm9v\u{7}world"),
        "{:?}",
        raw.body
    );
    let next: u64 = raw.header("X-Weft-Next-Offset").unwrap().parse().unwrap();
    assert_eq!(next as usize, raw.body.len());
    let tail = served
        .get(&format!("/api/attempts/{id}/output?offset=6&max=5"))
        .expect(200);
    assert_eq!(tail.body, "\\x1b]52;");
    // The task's log route is the latest attempt's output.
    assert_eq!(
        served.get("/api/plans/current/tasks/1/log").body,
        shown.body
    );
    let mut stream = served.stream(&format!("/api/attempts/{id}/output/stream"), &[]);
    let chunk = stream.next().expect("output");
    assert_eq!(chunk.event.as_deref(), Some("output"));
    let text: String = serde_json::from_str(&chunk.data).unwrap();
    assert!(text.contains("world"));
    assert_eq!(
        stream.next().expect("the end").event.as_deref(),
        Some("end")
    );
}
