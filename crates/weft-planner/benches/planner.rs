//! The planner's own costs, apart from the model's: reading a plan out of a reply, streaming
//! a reply over loopback HTTP, and the research tools on a mid-sized repository.
//!
//! 1. Plan emission: a 300-task plan, fenced, after 500 KB of prose, with a trailing comma:
//!    `emit::classify_reply` + `emit::plan_from_value` (extraction, schema and every plan
//!    rule), per reply.
//! 2. Streaming: a 2 MB reply in 20-character SSE chunks from the scripted mock model on
//!    127.0.0.1, through `OpenAiModel::complete`, in MB/s (includes HTTP and JSON per chunk).
//! 3. Research: `search` (regex, honouring .gitignore) and `list_dir` depth 3 over a
//!    generated 5,000-file repository (1,000 with `WEFT_BENCH_QUICK=1`), and `read_file`
//!    of a 2,000-line window.
//!
//! Figures only: nothing is asserted. Run: `cargo bench -p weft-planner --bench planner`.
#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;
use weft_core::approval::{Decision, Source, Subject};
use weft_planner::chat::{ChatModel, Message, ToolCall};
use weft_planner::emit::{ReplyKind, classify_reply, plan_from_value};
use weft_planner::provider::openai::{OpenAiConfig, OpenAiModel};
use weft_planner::tools::{Approver, Research, ResearchConfig};
use weft_testkit::mock_model::{MockModel, MockReply};

struct DenyAll;

impl Approver for DenyAll {
    fn decide(&mut self, subject: Subject) -> Decision {
        Decision {
            scope: subject.scope(),
            allowed: false,
            source: Source::NoChannel,
            decided_at: 0,
        }
    }
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn time<T>(rounds: usize, mut work: impl FnMut() -> T) -> Duration {
    let mut samples = Vec::with_capacity(rounds);
    for _ in 0..rounds {
        let started = Instant::now();
        std::hint::black_box(work());
        samples.push(started.elapsed());
    }
    median(samples)
}

fn main() {
    let quick = std::env::var("WEFT_BENCH_QUICK").is_ok_and(|v| v == "1");
    emission();
    streaming();
    research(if quick { 1_000 } else { 5_000 });
}

fn emission() {
    let tasks: Vec<_> = (0..300)
        .map(|i| {
            let deps: Vec<String> = (i.max(3) - 3..i).map(|d| format!("task-{d}")).collect();
            json!({
                "id": format!("task-{i}"),
                "title": format!("Slice {i}: make the thing number {i} work end to end"),
                "description": "Assumption: the existing router stays; only the handler changes.",
                "prompt": "Change src/handler.rs so that the new case is handled, add a test in tests/handler.rs that exercises it through the public API, and run the suite.".repeat(2),
                "dependencies": deps,
                "runner": "exec",
            })
        })
        .collect();
    let mut plan = serde_json::to_string_pretty(&json!({ "tasks": tasks })).expect("json");
    // A trailing comma after the last task, as models write.
    plan = plan.replacen("\n  ]\n}", ",\n  ]\n}", 1);
    let mut reply = String::new();
    while reply.len() < 500_000 {
        let _ = writeln!(
            reply,
            "I read src/handler.rs and {{ the router }} and decided on slices; here is why. "
        );
    }
    let _ = write!(reply, "```json\n{plan}\n```\n");
    let known = |name: &str| name == "exec";
    let elapsed = time(20, || match classify_reply(&reply) {
        ReplyKind::Plan(value) => plan_from_value(&value, "goal", Some("exec"), &known)
            .expect("the plan is valid")
            .tasks
            .len(),
        other => panic!("not a plan: {other:?}"),
    });
    println!(
        "emission: 300-task plan in a {:.0} KB reply: {:.2} ms per reply (extract + validate), {:.0} MB/s",
        reply.len() as f64 / 1e3,
        elapsed.as_secs_f64() * 1e3,
        reply.len() as f64 / 1e6 / elapsed.as_secs_f64()
    );
}

fn streaming() {
    let text: String = "The planner streams its answer in small pieces. "
        .repeat(2_000_000 / 48)
        .chars()
        .take(2_000_000)
        .collect();
    // Hand-written SSE in 20-character deltas, as real endpoints send.
    let mut body = String::new();
    let pieces: Vec<char> = text.chars().collect();
    for piece in pieces.chunks(20) {
        let delta: String = piece.iter().collect();
        let chunk = json!({"id": "c", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": delta}, "finish_reason": null}]});
        let _ = write!(body, "data: {chunk}\n\n");
    }
    let last = json!({"id": "c", "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    let _ = write!(body, "data: {last}\n\ndata: [DONE]\n\n");
    let rounds = 5;
    let mock = MockModel::start(
        (0..rounds)
            .map(|_| MockReply::raw(200, "text/event-stream", body.clone()))
            .collect(),
    );
    let mut model = OpenAiModel::new(OpenAiConfig::new(mock.base_url(), "bench"));
    let messages = [Message::user("go")];
    let elapsed = time(rounds, || {
        let mut events = 0usize;
        let reply = model
            .complete(&messages, &[], &mut |_| events += 1)
            .expect("the mock answers");
        assert_eq!(reply.text.len(), text.len());
        events
    });
    println!(
        "streaming: 2 MB reply in 100,000 SSE chunks over loopback: {:.0} ms, {:.1} MB/s",
        elapsed.as_secs_f64() * 1e3,
        2.0 / elapsed.as_secs_f64()
    );
}

fn research(files: usize) {
    let tmp = tempfile::TempDir::new().expect("tempdir");
    let root = tmp.path();
    write_repo(root, files);
    let research = Research::new(ResearchConfig::new(root.to_path_buf()));
    let call = |name: &str, args: serde_json::Value| ToolCall {
        id: "c".into(),
        name: name.into(),
        arguments: args.to_string(),
    };
    // Matches nothing, so every file is read.
    let search = call(
        "search",
        json!({"pattern": r"fn never_\d+\(", "max_results": 200}),
    );
    let found = call(
        "search",
        json!({"pattern": r"fn handle_\d*777\(", "max_results": 200}),
    );
    let list = call("list_dir", json!({"path": ".", "depth": 3}));
    let read = call(
        "read_file",
        json!({"path": "big.txt", "offset": 1, "limit": 2000}),
    );
    for (label, call) in [
        ("search, no match (every file read)", &search),
        ("search, a few matches", &found),
        ("list_dir depth 3", &list),
        ("read_file 2,000-line window", &read),
    ] {
        let elapsed = time(9, || research.run(call, &mut DenyAll).result.len());
        println!(
            "research: {label} on {files} files: {:.1} ms",
            elapsed.as_secs_f64() * 1e3
        );
    }
}

/// A repository-shaped tree: `files` small Rust files in nested folders, a gitignored
/// `target/` with as many again (skipped by search), and one big text file.
fn write_repo(root: &Path, files: usize) {
    fs_err::write(root.join(".gitignore"), "target/\n").expect("write");
    for i in 0..files {
        let dir = root.join(format!("src/m{}/n{}", i % 20, i % 7));
        fs_err::create_dir_all(&dir).expect("mkdir");
        let mut text = String::new();
        for f in 0..20 {
            let _ = writeln!(
                text,
                "pub fn handle_{}(x: u32) -> u32 {{ x + {f} }}",
                i * 20 + f
            );
        }
        fs_err::write(dir.join(format!("f{i}.rs")), &text).expect("write");
        let ignored = root.join(format!("target/debug/{}", i % 50));
        fs_err::create_dir_all(&ignored).expect("mkdir");
        fs_err::write(ignored.join(format!("f{i}.rs")), &text).expect("write");
    }
    let big: String = (0..50_000)
        .map(|i| format!("line {i} of a big file\n"))
        .collect();
    fs_err::write(root.join("big.txt"), big).expect("write");
}
