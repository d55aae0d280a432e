//! Pieces the run benchmarks share: the binary, timing formats, medians, a deterministic
//! generator and how `weft` is started hermetically.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use weft_testkit::Hermetic;

/// The `weft` binary cargo built for this bench.
pub const WEFT: &str = env!("CARGO_BIN_EXE_weft");

/// The median of a few timings, and all of them for the record.
#[derive(Debug)]
pub struct Median {
    pub median: Duration,
    pub samples: Vec<Duration>,
}

impl Median {
    pub fn of(samples: Vec<Duration>) -> Median {
        assert!(!samples.is_empty(), "at least one sample");
        let mut sorted = samples.clone();
        sorted.sort_unstable();
        Median {
            median: sorted[(sorted.len() - 1) / 2],
            samples,
        }
    }

    pub fn list(&self) -> String {
        self.samples
            .iter()
            .map(|d| format!("{:.1}", d.as_secs_f64() * 1000.0))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

pub fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

pub fn ms2(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

pub fn path_str(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

pub fn weft(env: &Hermetic, args: &[&str]) -> Command {
    let mut command = env.command(WEFT);
    command
        .args(args)
        .env("WEFT_WORKSPACE", env.work())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

/// Spawn `weft args`, wait, and return all of stdout; panics (with stderr) on failure.
pub fn run_ok(env: &Hermetic, args: &[&str]) -> Vec<u8> {
    let output = weft(env, args).output().expect("weft can be spawned");
    assert!(
        output.status.success(),
        "weft {} failed ({}):\n{}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// One event line of `weft run --json` and when it arrived.
#[derive(Debug)]
pub struct Seen {
    pub at: Duration,
    pub event: String,
    pub task: Option<String>,
}

/// A small deterministic generator (xorshift), so every run benches the same plan.
#[derive(Debug)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// With one task at a time, the wall time splits into: start-up (spawn to the first task
/// started), each task's attempt (started to finished; isolated: the agent, then the
/// commit and the landing), the gaps between tasks (finished to the next started;
/// isolated: the worktree is removed, then the next one cut) and wind-down (last finished
/// to exit).
pub fn phases(seen: &[Seen], wall: Duration) -> String {
    let mut started_at: HashMap<&str, Duration> = HashMap::new();
    let mut in_attempt = Duration::ZERO;
    let mut between = Duration::ZERO;
    let mut gaps = 0u32;
    let mut first_start = None;
    let mut last_finish: Option<Duration> = None;
    let mut attempts = 0u32;
    for s in seen {
        match (s.event.as_str(), s.task.as_deref()) {
            ("task_started", Some(task)) => {
                first_start.get_or_insert(s.at);
                if let Some(finished) = last_finish {
                    between += s.at.saturating_sub(finished);
                    gaps += 1;
                }
                started_at.insert(task, s.at);
            }
            ("task_finished", Some(task)) => {
                if let Some(&began) = started_at.get(task) {
                    in_attempt += s.at.saturating_sub(began);
                    attempts += 1;
                }
                last_finish = Some(s.at);
            }
            _ => {}
        }
    }
    let (Some(first_start), Some(last_finish)) = (first_start, last_finish) else {
        return String::from("; no task started");
    };
    format!(
        "\n    start-up   spawn → first task_started               {}  (once)\
         \n    attempt    task_started → task_finished             {} per task  ({} in all)\
         \n    between    task_finished → next task_started        {} per task  ({} in all)\
         \n    wind-down  last task_finished → exit                 {}  (once)",
        ms(first_start),
        ms2(in_attempt / attempts.max(1)),
        ms(in_attempt),
        ms2(between / gaps.max(1)),
        ms(between),
        ms(wall.saturating_sub(last_finish))
    )
}
