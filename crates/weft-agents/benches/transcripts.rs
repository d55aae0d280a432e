//! Transcript discovery and scanning (issue 5: discovery among 10,000 session files under
//! 200 ms; marker scan over 1 GB of JSONL, in GB/s).
//!
//! Generates a Claude Code store in a temporary directory: 10,000 small session files
//! (1,000 with `WEFT_BENCH_QUICK=1`) across 4 project folders, then times
//! `transcript::claude::find` for an attempt whose file is the newest of its folder, for
//! one whose file sits 40 deep among its folder's candidates (a marker scan), and for one
//! with no marker anywhere (the bounded scan, then a weak match). Then writes ~1 GB of
//! transcript JSONL (100 MB quick) with the marker in the last assistant record and times
//! `claude::scan_file` over it. Figures only: nothing is asserted.
//!
//! Run: `cargo bench -p weft-agents --bench transcripts`.
#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use weft_agents::transcript::{DEFAULT_ANSWER_CHARS, Locator, Query, claude};

const FOLDERS: usize = 4;

fn main() {
    let quick = std::env::var("WEFT_BENCH_QUICK").is_ok_and(|v| v == "1");
    let files = if quick { 1_000 } else { 10_000 };
    let scan_bytes: u64 = if quick { 100 << 20 } else { 1 << 30 };
    let tmp = tempfile::TempDir::new().expect("tempdir");
    let config = tmp.path().join("claude");
    let work = tmp.path().join("work");

    // The store: FOLDERS working directories, files spread evenly, one second apart.
    let started = Instant::now();
    let now = SystemTime::now();
    let per_folder = files / FOLDERS;
    let mut cwds = Vec::new();
    for f in 0..FOLDERS {
        let cwd = work.join(format!("project_{f}"));
        fs::create_dir_all(&cwd).expect("mkdir");
        let dir = config
            .join("projects")
            .join(claude::project_dir_name(cwd.to_str().expect("utf-8")));
        fs::create_dir_all(&dir).expect("mkdir");
        for i in 0..per_folder {
            let session = format!("{f:08x}-0000-4000-8000-{i:012x}");
            let path = dir.join(format!("{session}.jsonl"));
            let text = session_file(&cwd, &session, &marker(f, i));
            fs::write(&path, text).expect("write");
            // File i of each folder: newest is i = 0.
            let file = File::options().write(true).open(&path).expect("open");
            file.set_modified(now - Duration::from_secs(i as u64 + 1))
                .expect("mtime");
        }
        cwds.push(cwd);
    }
    println!(
        "transcripts: {files} session files in {FOLDERS} folders ({} ms to build){}",
        started.elapsed().as_millis(),
        if quick { " [WEFT_BENCH_QUICK]" } else { "" }
    );

    let locator = Locator {
        claude_config_dir: Some(config.clone()),
        ..Locator::default()
    };
    let since_all = now - Duration::from_secs(files as u64 * 2);
    let cwd = &cwds[1];
    let newest = marker(1, 0);
    let deep = marker(1, 39);
    let runs: [(&str, Option<&str>, &str); 3] = [
        (
            "newest file holds the marker",
            Some(&newest),
            "1 file opened",
        ),
        ("marker 40 deep (scan)", Some(&deep), "40 files opened"),
        (
            "no marker anywhere (bounded, weak)",
            Some("WEFT_DONE_absent"),
            "50 files opened",
        ),
    ];
    for (name, marker, note) in runs {
        let query = Query {
            cwd,
            started_at: since_all,
            marker,
            session_id: None,
            answer_chars: DEFAULT_ANSWER_CHARS,
        };
        let mut times = Vec::new();
        let mut result = None;
        for _ in 0..7 {
            let t = Instant::now();
            result = claude::find(&locator, &query);
            times.push(t.elapsed());
        }
        times.sort();
        let found = result.expect("a transcript");
        println!(
            "  discovery, {name}: median {:.1} ms, min {:.1} ms ({note}, {} candidates in the \
             folder; marker_found={}, weak={}) target < 200 ms",
            ms(times[times.len() / 2]),
            ms(times[0]),
            per_folder,
            found.marker_found,
            found.weak,
        );
    }

    // The marker scan over one big transcript.
    let big = tmp.path().join("big.jsonl");
    let t = Instant::now();
    let size = big_transcript(&big, &cwds[0], scan_bytes);
    println!(
        "  big transcript: {} MB written in {} ms",
        size >> 20,
        t.elapsed().as_millis()
    );
    let token = "WEFT_DONE_0123456789abcdef";
    let mut best = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let scan = claude::scan_file(&big, Some(token)).expect("scan");
        let secs = t.elapsed().as_secs_f64();
        assert!(scan.marker_found, "the marker is in the last record");
        best = best.min(secs);
    }
    println!(
        "  marker scan (claude::scan_file, line stream + record parse): {:.2} GB/s over {} MB \
         (best of 3, {:.0} ms; page cache warm)",
        size as f64 / best / 1e9,
        size >> 20,
        best * 1e3
    );
    let t = Instant::now();
    let stats = claude::for_each_line(File::open(&big).expect("open"), |_| {
        std::ops::ControlFlow::Continue(())
    });
    let secs = t.elapsed().as_secs_f64();
    println!(
        "  line split alone (claude::for_each_line): {:.2} GB/s ({} lines)",
        stats.bytes as f64 / secs / 1e9,
        stats.lines
    );
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn marker(folder: usize, i: usize) -> String {
    format!("WEFT_DONE_{folder:04x}{i:012x}")
}

/// A small realistic session: queue operations, the prompt, an attachment, a text +
/// tool_use reply, a tool result, the final answer with the marker, `last-prompt`.
fn session_file(cwd: &Path, session: &str, marker: &str) -> String {
    let cwd = cwd.display();
    let common = format!(
        r#""userType":"external","entrypoint":"sdk-cli","cwd":"{cwd}","sessionId":"{session}","version":"2.1.197","gitBranch":"main""#
    );
    let usage = r#""usage":{"input_tokens":100,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":10,"service_tier":"standard"}"#;
    let mut s = String::new();
    s.push_str(&format!(
        r#"{{"type":"queue-operation","operation":"enqueue","timestamp":"2026-11-29T22:30:02.000Z","sessionId":"{session}","content":"Do the task. Print WEFT_DONE_ then the id."}}"#
    ));
    s.push('\n');
    s.push_str(&format!(
        r#"{{"parentUuid":null,"isSidechain":false,"type":"user","message":{{"role":"user","content":"Do the task described in TASK.md. When done, print WEFT_DONE_ followed by the id (not the id alone)."}},"uuid":"u1","timestamp":"2026-11-29T22:30:03.019Z",{common}}}"#
    ));
    s.push('\n');
    s.push_str(&format!(
        r#"{{"parentUuid":"u1","isSidechain":false,"type":"attachment","attachment":{{"type":"skill_listing","content":"{}"}},"uuid":"a1",{common}}}"#,
        "skill ".repeat(60)
    ));
    s.push('\n');
    s.push_str(&format!(
        r#"{{"parentUuid":"a1","isSidechain":false,"message":{{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{{"type":"text","text":"I will read TASK.md first."}}],"stop_reason":null,{usage}}},"type":"assistant","uuid":"m1",{common}}}"#
    ));
    s.push('\n');
    s.push_str(&format!(
        r#"{{"parentUuid":"m1","isSidechain":false,"message":{{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{{"type":"tool_use","id":"toolu_1","name":"Read","input":{{"file_path":"{cwd}/TASK.md"}}}}],"stop_reason":"tool_use",{usage}}},"type":"assistant","uuid":"m2",{common}}}"#
    ));
    s.push('\n');
    s.push_str(&format!(
        r#"{{"parentUuid":"m2","isSidechain":false,"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"toolu_1","type":"tool_result","content":"{}"}}]}},"uuid":"u2","toolUseResult":{{"type":"text"}},{common}}}"#,
        "1\tSome task text line that goes on for a while.\\n".repeat(20)
    ));
    s.push('\n');
    s.push_str(&format!(
        r#"{{"parentUuid":"u2","isSidechain":false,"message":{{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{{"type":"text","text":"Done: the task is complete. {marker}"}}],"stop_reason":"end_turn",{usage}}},"type":"assistant","uuid":"m3",{common}}}"#
    ));
    s.push('\n');
    s.push_str(&format!(
        r#"{{"type":"last-prompt","lastPrompt":"Do the task.","leafUuid":"m3","sessionId":"{session}"}}"#
    ));
    s.push('\n');
    s
}

/// About `bytes` of transcript: repeated work cycles (progress records, assistant text and
/// tool calls, tool results of a few KB), the marker in the very last assistant record.
fn big_transcript(path: &PathBuf, cwd: &Path, bytes: u64) -> u64 {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path).expect("create"));
    let cycle = session_file(cwd, "big", "WEFT_DONE_notthisone");
    let progress = format!(
        r#"{{"type":"progress","isSidechain":false,"cwd":"{}","data":{{"type":"bash_progress","output":"{}"}}}}"#,
        cwd.display(),
        "compiling crate v0.1.0 (/work)\\n".repeat(40)
    );
    let tool = format!(
        r#"{{"parentUuid":"x","isSidechain":false,"type":"user","message":{{"role":"user","content":[{{"tool_use_id":"t","type":"tool_result","content":"{}"}}]}},"cwd":"{}"}}"#,
        "test result: ok. 12 passed; 0 failed; Finished `test` profile\\n".repeat(60),
        cwd.display()
    );
    let mut written = 0u64;
    while written < bytes {
        for part in [cycle.as_str(), &progress, "\n", &tool, "\n"] {
            out.write_all(part.as_bytes()).expect("write");
            written += part.len() as u64;
        }
    }
    let last = session_file(cwd, "big", "WEFT_DONE_0123456789abcdef");
    out.write_all(last.as_bytes()).expect("write");
    written += last.len() as u64;
    out.flush().expect("flush");
    written
}
