//! Live spend from the real CLIs' recorded streams: each parser's `Spend` events fed to a
//! `weft_core::spend::Meter` give the figures the CLI itself reported at its end.

use weft_agents::{AgentEvent, StreamKind, stream};
use weft_core::spend::{Meter, PriceTable, Spend, Tokens};
use weft_testkit::samples::agent_output_file;

/// The meter's spend after each `Spend` event of the sample, in order.
fn replay(kind: StreamKind, rel: &str, model: Option<&str>) -> Vec<Spend> {
    let path = agent_output_file(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut parser = stream::parser(kind);
    let mut meter = Meter::new(PriceTable::default(), model.map(str::to_owned));
    let mut seen = Vec::new();
    let mut events: Vec<AgentEvent> = text.lines().flat_map(|l| parser.line(l)).collect();
    events.extend(parser.finish());
    for event in events {
        if let AgentEvent::Spend {
            total,
            message,
            model,
            tokens,
            cost_usd,
        } = event
        {
            if total {
                meter.final_total(tokens, cost_usd);
            } else {
                meter.message(message.as_deref(), model.as_deref(), tokens, cost_usd);
            }
            seen.push(meter.spend());
        }
    }
    seen
}

#[test]
fn claude_codes_messages_are_counted_once_each_and_its_result_replaces_the_estimate() {
    let seen = replay(
        StreamKind::ClaudeStreamJson,
        "claude/cc2.1.197-stream-json-write-file-success.jsonl",
        None,
    );
    // Five assistant lines of three messages (100 input tokens each), then `result`.
    let live = &seen[seen.len() - 2];
    assert_eq!(live.tokens.input, 300, "{seen:?}");
    assert_eq!(live.tokens.output, 3);
    assert!(
        (live.usd - (300.0 * 3.0 + 3.0 * 15.0) / 1e6).abs() < 1e-12,
        "{live:?}"
    );
    let end = seen.last().unwrap();
    assert_eq!(end.cost_usd(), Some(0.00135));
    assert_eq!(end.tokens.total(), 330);
    assert!(
        seen.windows(2)
            .take(seen.len() - 2)
            .all(|w| w[1].usd >= w[0].usd),
        "monotone while live"
    );
}

#[test]
fn codexs_turn_total_is_priced_by_the_tasks_model_and_unknown_without_one() {
    let priced = replay(
        StreamKind::CodexJson,
        "codex/cx0.171.0-exec-json-write-file-success.jsonl",
        Some("gpt-5"),
    );
    let end = priced.last().unwrap();
    assert_eq!(
        end.tokens,
        Tokens {
            input: 3000,
            output: 60,
            ..Tokens::default()
        }
    );
    assert!((end.usd - (3000.0 * 1.25 + 60.0 * 10.0) / 1e6).abs() < 1e-12);
    // The recording's model, gpt-5.5, has no default price: unknown, never free.
    let unknown = replay(
        StreamKind::CodexJson,
        "codex/cx0.171.0-exec-json-write-file-success.jsonl",
        Some("gpt-5.5"),
    );
    let end = unknown.last().unwrap();
    assert_eq!(end.cost_usd(), None);
    assert_eq!(end.unpriced.as_deref(), Some("gpt-5.5"));
    assert_eq!(end.tokens.total(), 3060);
}

#[test]
fn opencodes_steps_add_up_and_a_zero_cost_step_with_tokens_is_priced_by_weft() {
    let seen = replay(
        StreamKind::OpencodeJson,
        "opencode/oc1.18.33-run-format-json-write-file-success.jsonl",
        Some("claude-haiku-4-5"),
    );
    assert_eq!(seen.len(), 3, "one per step");
    let end = seen.last().unwrap();
    assert_eq!(end.tokens.total(), 3 * 920);
    assert!((end.usd - 3.0 * (900.0 * 1.0 + 20.0 * 5.0) / 1e6).abs() < 1e-12);
    // The recording's mock model has no price: its cost is unknown.
    let unknown = replay(
        StreamKind::OpencodeJson,
        "opencode/oc1.18.33-run-format-json-write-file-success.jsonl",
        None,
    );
    assert_eq!(unknown.last().unwrap().cost_usd(), None);
}

/// The recorded 0.171 rollout of the write-file run: its thread id and bytes.
const ROLLOUT: &str = "codex/cx0.171.0-rollout-write-file-success.jsonl";
const ROLLOUT_THREAD: &str = "01a2296d-ffc6-7543-a3f9-8ae476b88e7c";

/// The meter's spend after each `Spend` event, for message-level events only.
fn metered(events: &[AgentEvent], model: Option<&str>) -> Vec<Spend> {
    let mut meter = Meter::new(PriceTable::default(), model.map(str::to_owned));
    let mut seen = Vec::new();
    for event in events {
        if let AgentEvent::Spend {
            total: false,
            message,
            model,
            tokens,
            cost_usd,
        } = event
        {
            meter.message(message.as_deref(), model.as_deref(), *tokens, *cost_usd);
            seen.push(meter.spend());
        }
    }
    seen
}

#[test]
fn codexs_rollout_token_counts_are_its_running_total_in_any_chunking() {
    use weft_agents::transcript::codex_tail::{LineReader, MESSAGE_ID};
    let bytes = std::fs::read(agent_output_file(ROLLOUT)).unwrap();
    for chunk in [bytes.len(), 4096, 7] {
        let mut reader = LineReader::new(ROLLOUT_THREAD);
        let events: Vec<AgentEvent> = bytes.chunks(chunk).flat_map(|c| reader.feed(c)).collect();
        assert!(!reader.foreign, "the session_meta names the thread");
        let totals: Vec<(u64, u64)> = events
            .iter()
            .map(|e| match e {
                AgentEvent::Spend {
                    total: false,
                    message: Some(id),
                    model: Some(model),
                    tokens,
                    cost_usd: None,
                } => {
                    assert_eq!((id.as_str(), model.as_str()), (MESSAGE_ID, "gpt-5.5"));
                    (tokens.input, tokens.output)
                }
                other => panic!("not a live total: {other:?}"),
            })
            .collect();
        // Three `token_count` records, each the thread's total so far.
        assert_eq!(
            totals,
            [(1000, 20), (2000, 40), (3000, 60)],
            "chunk {chunk}"
        );
        // Fed to the meter, the totals grow one message: the last is what
        // `turn.completed` reports (3000 in, 60 out), not their sum.
        let seen = metered(&events, None);
        assert_eq!(seen.last().unwrap().tokens.total(), 3060, "{seen:?}");
        assert_eq!(seen.last().unwrap().unpriced.as_deref(), Some("gpt-5.5"));
    }
}

#[test]
fn another_threads_rollout_or_an_overlong_line_counts_nothing() {
    use weft_agents::transcript::codex_tail::{LINE_MAX, LineReader};
    let bytes = std::fs::read(agent_output_file(ROLLOUT)).unwrap();
    let mut other = LineReader::new("01a2294c-cdab-7ec2-b19d-8fe47915ddcd");
    assert!(other.feed(&bytes).is_empty());
    assert!(other.foreign, "the session_meta names another thread");

    let text = String::from_utf8(bytes).unwrap();
    let count = text
        .lines()
        .find(|l| l.contains("\"token_count\""))
        .unwrap();
    let padded = count.replacen(
        "\"rate_limits\"",
        &format!("\"pad\":\"{}\",\"rate_limits\"", "x".repeat(LINE_MAX)),
        1,
    );
    let first = text.lines().next().unwrap();
    let mut reader = LineReader::new(ROLLOUT_THREAD);
    let events = reader.feed(format!("{first}\n{padded}\n{count}\n").as_bytes());
    assert_eq!(
        events.len(),
        1,
        "the overlong line is skipped, the next one read"
    );
    assert_eq!(reader.skipped, 1);
}

#[test]
fn a_rollout_tail_waits_for_the_file_then_reads_only_what_was_appended() {
    use std::io::Write;
    use weft_agents::transcript::Locator;
    use weft_agents::transcript::codex_tail::{FIND_EVERY, RolloutTail};
    let home = tempfile::tempdir().unwrap();
    let locator = Locator {
        codex_home: Some(home.path().to_owned()),
        ..Locator::default()
    };
    let mut tail = RolloutTail::new(&locator, ROLLOUT_THREAD).unwrap();
    assert!(tail.poll().is_empty(), "no file yet");
    let text = std::fs::read_to_string(agent_output_file(ROLLOUT)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let day = home.path().join("sessions/2026/11/29");
    std::fs::create_dir_all(&day).unwrap();
    // Another thread's rollout of the same day, newer: never read.
    std::fs::write(
        day.join("rollout-2026-11-29T22-31-00-01a2294c-cdab-7ec2-b19d-8fe47915ddcd.jsonl"),
        &text,
    )
    .unwrap();
    let path = day.join(format!(
        "rollout-2026-11-29T22-30-04-{ROLLOUT_THREAD}.jsonl"
    ));
    let mut file = std::fs::File::create(&path).unwrap();
    // Up to the first token_count, then half of the second's line.
    let first = lines
        .iter()
        .position(|l| l.contains("\"token_count\""))
        .unwrap();
    for line in &lines[..=first] {
        writeln!(file, "{line}").unwrap();
    }
    std::thread::sleep(FIND_EVERY);
    assert_eq!(
        metered(&tail.poll(), None).last().unwrap().tokens.total(),
        1020
    );
    assert_eq!(tail.path(), Some(path.as_path()));
    let rest = lines[first + 1..].join("\n") + "\n";
    let (a, b) = rest.split_at(rest.find("\"token_count\"").unwrap() + 20);
    file.write_all(a.as_bytes()).unwrap();
    assert!(tail.poll().is_empty(), "a partial line waits");
    file.write_all(b.as_bytes()).unwrap();
    let events = tail.poll();
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(tail.poll().is_empty(), "nothing appended, nothing read");
}

/// The fake Codex writes its rollout where and as the real one does: weft's transcript
/// lookup finds it by the thread id of its stream, and the tail reads its totals.
#[test]
fn the_fake_codexs_rollout_is_found_and_tailed_like_the_real_one() {
    use weft_agents::transcript::codex_tail::RolloutTail;
    use weft_agents::transcript::{self, Locator, Query, Store};
    let home = tempfile::tempdir().unwrap();
    let codex_home = home.path().join("codex");
    std::fs::create_dir_all(&codex_home).unwrap();
    let cwd = home.path().join("work");
    std::fs::create_dir_all(&cwd).unwrap();
    let started = std::time::SystemTime::now() - std::time::Duration::from_secs(2);
    let out = std::process::Command::new(weft_testkit::fake::binary())
        .args(["--fake-as", "codex", "exec", "--json", "-m", "gpt-5", "-"])
        .current_dir(&cwd)
        .env("CODEX_HOME", &codex_home)
        .env(
            "WEFT_FAKE_SCRIPT",
            "spend 1000 20\nsay All done.\nspend 2000 40",
        )
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let mut parser = stream::parser(StreamKind::CodexJson);
    let thread = stdout
        .lines()
        .flat_map(|l| parser.line(l))
        .find_map(|e| match e {
            AgentEvent::Session { id } => Some(id),
            _ => None,
        })
        .unwrap();
    let locator = Locator {
        codex_home: Some(codex_home.clone()),
        ..Locator::default()
    };
    let found = transcript::find(
        Store::Codex,
        &locator,
        &Query {
            cwd: &cwd,
            started_at: started,
            marker: None,
            session_id: Some(&thread),
            answer_chars: 100,
        },
    )
    .expect("the rollout is found");
    let name = found
        .path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    assert!(name.starts_with("rollout-") && name.ends_with(&format!("-{thread}.jsonl")));
    let day = found
        .path
        .parent()
        .unwrap()
        .strip_prefix(codex_home.join("sessions"));
    assert_eq!(day.unwrap().components().count(), 3, "YYYY/MM/DD");
    assert_eq!(found.final_answer.as_deref(), Some("All done."));
    assert_eq!(
        (found.input_tokens, found.output_tokens),
        (Some(3120), Some(80))
    );
    let mut tail = RolloutTail::new(&locator, &thread).unwrap();
    let seen = metered(&tail.poll(), None);
    assert_eq!(seen.len(), 2, "one total per `spend`: {seen:?}");
    assert_eq!(seen[1].tokens.total(), 3200);
}
