//! The masker's throughput on log-like text: `cargo bench -p weft-core --bench masker`.
//!
//! About 64 MiB of build and test output, agent chatter and JSON lines (with URLs, paths,
//! shas, the words `key` and `token`, near misses of every shape) holding a few secrets,
//! masked whole and streamed in 64 KiB chunks (what a pipe read gives the supervisor).
//! Prints MB/s; the target is at least 500 MB/s streamed.

#![allow(clippy::print_stdout)]

use std::hint::black_box;
use std::time::Instant;

use weft_core::secrets::{Masker, StreamMasker, encode_base64};

const TARGET: usize = 64 * 1024 * 1024;
const CHUNK: usize = 64 * 1024;
const SECRET: &str = "s3cr3t-Pa55w0rd-0f-the-user";

/// Lines of agent output. Their density of shape triggers (the words `key`, `token`, …,
/// `://`, `sk-`, …: one per about 300 bytes) is that of captured Claude Code and Codex
/// streams (one per 150 to 500 bytes); [`dense_text`] has one per 70.
const LINES: &[&str] = &[
    "   Compiling weft-core v0.1.0 (/work/wt/secrets/crates/weft-core)\n",
    "   Compiling serde_json v1.0.133\n",
    "test secrets::tests::names_and_values ... ok\n",
    "test schedule::tests::ready_tasks_start_in_order ... ok\n",
    "2026-12-01T19:48:33.123Z INFO weft_engine::engine: task 3 landed at 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39\n",
    "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"I will read the config file and check the names first.\"}]},\"session_id\":\"123e4567-e89b-12d3-a456-426614174000\"}\n",
    "{\"type\":\"user\",\"message\":{\"content\":[{\"type\":\"tool_result\",\"content\":\"src/lib.rs\\nsrc/main.rs\\nCargo.toml\\n\"}]}}\n",
    "GET https://api.example.com/v1/items?page=2 200 OK (34 ms)\n",
    "warning: unused variable: `count` --> src/desk-top/task-runner.rs:12:9\n",
    "{\"type\":\"result\",\"usage\":{\"input_tokens\":240,\"output_tokens\":12},\"total_cost_usd\":0.0013}\n",
    "    Finished `release` profile [optimized] target(s) in 1m 02s\n",
    "diff --git a/src/lib.rs b/src/lib.rs\n+    let name = map.get(\"name\").unwrap();\n",
    "    Running tests/integration.rs (target/debug/deps/integration-9f8e7d6c5b4a3921)\n",
];

/// The same with a trigger on almost every line.
const DENSE: &[&str] = &[
    "   Compiling weft-core v0.1.0 (/work/wt/secrets/crates/weft-core)\n",
    "test secrets::tests::masks_tokens ... ok\n",
    "{\"type\":\"assistant\",\"message\":{\"content\":[{\"type\":\"text\",\"text\":\"I will read the config file and check the key names.\"}]},\"session_id\":\"123e4567-e89b-12d3-a456-426614174000\"}\n",
    "GET https://api.example.com/v1/items?page=2 200 OK (34 ms)\n",
    "warning: unused variable: `token` --> src/desk-top/task-runner.rs:12:9\n",
    "{\"type\":\"result\",\"usage\":{\"input_tokens\":240,\"output_tokens\":12},\"total_cost_usd\":0.0013}\n",
    "diff --git a/src/lib.rs b/src/lib.rs\n+    let key = map.get(\"name\").unwrap();\n",
];

fn log_text() -> Vec<u8> {
    text_of(LINES)
}

fn dense_text() -> Vec<u8> {
    text_of(DENSE)
}

fn text_of(lines: &[&str]) -> Vec<u8> {
    let secrets = [
        format!("export API_KEY={SECRET}\n"),
        "DATABASE_URL=postgres://admin:hunter2@db:5432/app\n".to_owned(),
        "token ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5 found\n".to_owned(),
        format!("blob {}\n", encode_base64(SECRET.as_bytes(), false)),
    ];
    let mut text = Vec::with_capacity(TARGET + 4096);
    let mut i = 0usize;
    while text.len() < TARGET {
        text.extend_from_slice(lines[i % lines.len()].as_bytes());
        if i % 5000 == 4999 {
            text.extend_from_slice(secrets[(i / 5000) % secrets.len()].as_bytes());
        }
        i += 1;
    }
    text
}

fn report(what: &str, bytes: usize, seconds: f64) {
    println!(
        "masker {what}: {:.1} MiB in {:.3} s = {:.0} MB/s",
        bytes as f64 / (1024.0 * 1024.0),
        seconds,
        bytes as f64 / seconds / 1e6
    );
}

fn main() {
    let text = log_text();
    let dense = dense_text();
    let masker = Masker::new(&[SECRET.to_owned()]);

    let mut best = f64::MAX;
    let mut whole = Vec::new();
    for _ in 0..3 {
        let started = Instant::now();
        whole = masker.mask_bytes(&text).into_owned();
        best = best.min(started.elapsed().as_secs_f64());
    }
    report("whole text (best of 3)", text.len(), best);
    let masks = whole.windows(4).filter(|w| w == b"****").count();
    assert!(masks > 0 && !whole.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()));

    let mut best = f64::MAX;
    for _ in 0..3 {
        let started = Instant::now();
        let mut stream = StreamMasker::default();
        let mut out = Vec::with_capacity(CHUNK * 2);
        let mut total = 0;
        for chunk in text.chunks(CHUNK) {
            stream.push(&masker, chunk, &mut out);
            total += out.len();
            black_box(&out);
            out.clear();
        }
        stream.finish(&masker, &mut out);
        total += out.len();
        assert_eq!(total, whole.len(), "streamed and whole agree");
        best = best.min(started.elapsed().as_secs_f64());
    }
    report("streamed (64 KiB chunks, best of 3)", text.len(), best);
    let started = Instant::now();
    let mut stream = StreamMasker::default();
    let mut out = Vec::with_capacity(CHUNK * 2);
    for chunk in dense.chunks(CHUNK) {
        stream.push(&masker, chunk, &mut out);
        black_box(&out);
        out.clear();
    }
    stream.finish(&masker, &mut out);
    report(
        "streamed, dense triggers",
        dense.len(),
        started.elapsed().as_secs_f64(),
    );
    println!("masker: {masks} masks in the text");
}
