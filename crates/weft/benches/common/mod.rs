//! Pieces the run benchmarks share: the binary, timing formats, medians, a deterministic
//! generator and how `weft` is started hermetically.
#![allow(dead_code)]

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
