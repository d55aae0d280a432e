//! What containment costs per attempt: the supervisor's own start-up (an extra
//! fork + exec, subreaper, signalfd, the `/proc` scan at the end) and the Landlock
//! set-up inside it (ruleset, rules for the write paths, `restrict_self`).
//!
//! Each case starts `true` to completion `N` times and prints the mean wall time:
//! `true` alone; under the supervisor unconfined; under the supervisor confined (the
//! worktree, a temp folder, the devices and three state folders writable). The
//! differences are the supervisor's cost and the confinement's. Runs are sequential on
//! an idle machine's one core; the figures include process start-up noise.
//!
//! Run: `cargo bench -p weft-agents --bench contain` (`WEFT_BENCH_QUICK=1`: fewer runs).
#![allow(clippy::print_stdout, reason = "a benchmark reports on stdout")]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use weft_agents::contain::{SUPERVISOR_ARG, landlock_available};

const SUPERVISOR: &str = env!("CARGO_BIN_EXE_weft-supervisor");

fn mean(runs: u32, mut command: impl FnMut() -> Command) -> Duration {
    // One warm-up run (page cache, dynamic loader).
    let _ = command().status();
    let started = Instant::now();
    for _ in 0..runs {
        let status = command()
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("starts");
        assert!(status.success(), "{status}");
    }
    started.elapsed() / runs
}

fn main() {
    let quick = std::env::var("WEFT_BENCH_QUICK").is_ok_and(|v| v == "1");
    let runs = if quick { 50 } else { 500 };
    let dir = tempfile::tempdir().expect("a temp folder");
    let work = dir.path().join("work");
    let state: Vec<_> = ["claude", "codex", "opencode"]
        .iter()
        .map(|name| dir.path().join(name))
        .collect();
    std::fs::create_dir_all(&work).expect("work");
    let supervised = |confine: bool| {
        let mut command = Command::new(SUPERVISOR);
        command.args([SUPERVISOR_ARG, "--parent", &std::process::id().to_string()]);
        if confine {
            command.arg("--landlock").arg("--write").arg(&work);
            for path in &state {
                command.arg("--write").arg(path).arg("--create").arg(path);
            }
            for device in weft_agents::contain::DEVICE_PATHS {
                command.arg("--write").arg(device);
            }
        }
        command.arg("--tmp").arg(dir.path().join("tmp"));
        command.args(["--", "true"]);
        command
    };
    let bare = mean(runs, || Command::new("true"));
    let contained = mean(runs, || supervised(false));
    println!("contain: {runs} runs each");
    println!("  `true` alone:                    {:>8.3} ms", ms(bare));
    println!(
        "  under the supervisor, unconfined: {:>8.3} ms  (+{:.3} ms: the supervisor)",
        ms(contained),
        ms(contained.saturating_sub(bare))
    );
    if landlock_available() {
        let confined = mean(runs, || supervised(true));
        println!(
            "  under the supervisor, confined:   {:>8.3} ms  (+{:.3} ms: Landlock set-up)",
            ms(confined),
            ms(confined.saturating_sub(contained))
        );
        // The set-up alone, in process: each run on a fresh thread (Landlock restricts
        // the calling thread only), so this process stays unconfined.
        let mut write = vec![work.clone(), dir.path().join("tmp")];
        write.extend(state.iter().cloned());
        write.extend(weft_agents::contain::DEVICE_PATHS.iter().map(Into::into));
        let started = Instant::now();
        for _ in 0..runs {
            let write = write.clone();
            std::thread::spawn(move || weft_agents::contain::restrict_thread(&write))
                .join()
                .expect("the thread ends")
                .expect("Landlock applies");
        }
        let threads = started.elapsed() / runs;
        let started = Instant::now();
        for _ in 0..runs {
            std::thread::spawn(|| ()).join().expect("the thread ends");
        }
        let empty = started.elapsed() / runs;
        println!(
            "  Landlock set-up alone (ruleset, {} rules, restrict_self): {:.3} ms",
            write.len() + 1,
            ms(threads.saturating_sub(empty))
        );
    } else {
        println!("  confined: SKIPPED, this kernel does not enforce Landlock");
    }
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}
