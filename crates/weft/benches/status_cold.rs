//! Cold-process benchmark of `weft status` and of importing a plan: how long a person
//! (or a script) waits for the plan map of a large plan, counting everything a fresh
//! `weft` process does — exec, dynamic loading, argument parsing, settings, opening the
//! SQLite store, loading every task and rendering — and how long `weft plan --file` takes
//! to store a large workflow file.
//!
//! For each plan size (the curve: 1,000, 3,000, 10,000 and 100,000 tasks) it builds a
//! hermetic workspace (fresh HOME, no git config), writes a realistic workflow file,
//! imports it with `weft plan --file` (timed), then spawns `weft status --json` and
//! `weft status` repeatedly, reading all of stdout each time and checking it. Timing is
//! reported and judged against the targets, never asserted. `WEFT_BENCH_QUICK=1` cuts
//! the repetitions for a smoke run. See `bench/README.md`.

#![allow(
    clippy::print_stdout,
    reason = "a benchmark reports its figures on stdout"
)]

use std::fmt::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fs_err as fs;
use weft_testkit::Hermetic;

/// The `weft` binary cargo built for this bench.
const WEFT: &str = env!("CARGO_BIN_EXE_weft");

/// The status target: both forms on a plan this size, median under this.
const STATUS_TARGET_TASKS: usize = 10_000;
const STATUS_TARGET: Duration = Duration::from_millis(10);
/// The import target: `weft plan --file` of a plan this size, median under this.
const IMPORT_TARGET_TASKS: usize = 100_000;
const IMPORT_TARGET: Duration = Duration::from_secs(2);

/// One plan size and how often to run each command against it.
#[derive(Debug, Clone, Copy)]
struct Size {
    tasks: usize,
    /// Imports, each into a fresh workspace (status runs on the last one).
    imports: usize,
    warmup: usize,
    runs: usize,
}

fn sizes(quick: bool) -> [Size; 4] {
    let size = |tasks, imports, warmup, runs| Size {
        tasks,
        imports,
        warmup,
        runs,
    };
    if quick {
        [
            size(1_000, 1, 1, 5),
            size(3_000, 1, 1, 3),
            size(10_000, 1, 1, 5),
            size(100_000, 1, 1, 2),
        ]
    } else {
        [
            size(1_000, 3, 5, 31),
            size(3_000, 3, 5, 21),
            size(10_000, 3, 5, 21),
            size(100_000, 3, 2, 7),
        ]
    }
}

/// What one size measured.
#[derive(Debug, Clone, Copy)]
struct Figures {
    tasks: usize,
    import: Stats,
    json: Stats,
    text: Stats,
}

fn main() {
    // `cargo bench` passes `--bench` (and any filter); this bench takes no arguments.
    let quick = std::env::var_os("WEFT_BENCH_QUICK").is_some_and(|v| !v.is_empty() && v != "0");
    // For profiling: write the workflow file of `WEFT_BENCH_PLAN_TASKS` tasks (10,000
    // unless set) and stop.
    if let Some(path) = std::env::var_os("WEFT_BENCH_WRITE_PLAN") {
        let tasks = std::env::var("WEFT_BENCH_PLAN_TASKS")
            .ok()
            .map(|n| {
                n.parse()
                    .expect("WEFT_BENCH_PLAN_TASKS is a number of tasks")
            })
            .unwrap_or(STATUS_TARGET_TASKS);
        fs::write(&path, workflow_toml(tasks)).expect("the plan file can be written");
        return;
    }
    println!(
        "weft status and plan --file, cold process{}  (binary: {WEFT})",
        if quick { "  [WEFT_BENCH_QUICK]" } else { "" }
    );

    let floor = process_floor(if quick { 5 } else { 31 });
    println!(
        "process floor: weft --version           median {}  min {}  p90 {}",
        ms(floor.median),
        ms(floor.min),
        ms(floor.p90)
    );

    let mut curve = Vec::new();
    for size in sizes(quick) {
        let figures = measure_size(size);
        curve.push(figures);
    }

    println!("curve (medians; per task after the process floor):");
    for f in &curve {
        let per_task = |d: Duration| {
            format!(
                "{:.2} µs",
                d.saturating_sub(floor.median).as_secs_f64() * 1e6 / f.tasks as f64
            )
        };
        println!(
            "  {:>7} tasks   plan --file {:>9} ({:>8}/task)   status --json {:>8} ({:>8}/task)   status {:>8} ({:>8}/task)",
            thousands(f.tasks),
            ms(f.import.median),
            per_task(f.import.median),
            ms(f.json.median),
            per_task(f.json.median),
            ms(f.text.median),
            per_task(f.text.median),
        );
    }

    for f in &curve {
        if f.tasks == STATUS_TARGET_TASKS {
            for (name, stats) in [("status --json", f.json), ("status", f.text)] {
                judge(
                    &format!("{name} on {} tasks", thousands(f.tasks)),
                    STATUS_TARGET,
                    stats.median,
                );
            }
        }
        if f.tasks == IMPORT_TARGET_TASKS {
            judge(
                &format!("plan --file of {} tasks", thousands(f.tasks)),
                IMPORT_TARGET,
                f.import.median,
            );
        }
    }
}

fn judge(what: &str, target: Duration, median: Duration) {
    let verdict = if median < target { "holds" } else { "MISSED" };
    println!(
        "target: {what} under {} — median {} → {verdict}",
        ms(target),
        ms(median)
    );
}

/// Import a plan of `size.tasks` tasks (each time into a fresh workspace), then time both
/// forms of `weft status` on the last one.
fn measure_size(size: Size) -> Figures {
    let text = workflow_toml(size.tasks);
    let mut imports = Vec::with_capacity(size.imports);
    let mut last = None;
    for _ in 0..size.imports {
        let env = Hermetic::new();
        let workspace = env.work();
        run_ok(&env, &["init", path_str(&workspace)]);
        let plan_file = env.root().join("plan.toml");
        fs::write(&plan_file, &text).expect("the plan file can be written");
        let (elapsed, stdout) = timed_run(&env, &["plan", "--file", path_str(&plan_file)]);
        if let Err(problem) = check_text(&stdout, size.tasks) {
            panic!("weft plan --file: unexpected output: {problem}");
        }
        imports.push(elapsed);
        last = Some(env);
    }
    let env = last.expect("at least one import");
    let import = Stats::of(imports.clone());
    println!(
        "plan --file       {:>7} tasks  median {}  min {}  ({} KiB TOML; runs: {})",
        thousands(size.tasks),
        ms(import.median),
        ms(import.min),
        text.len() / 1024,
        imports
            .iter()
            .map(|d| ms(*d))
            .collect::<Vec<_>>()
            .join(", ")
    );

    let json = measure(&env, &["status", "--json"], size, |out| {
        check_json(out, size.tasks)
    });
    println!(
        "status --json     {:>7} tasks  median {}  min {}  p90 {}  ({} runs)",
        thousands(size.tasks),
        ms(json.median),
        ms(json.min),
        ms(json.p90),
        size.runs
    );
    let text = measure(&env, &["status"], size, |out| check_text(out, size.tasks));
    println!(
        "status (map)      {:>7} tasks  median {}  min {}  p90 {}  ({} runs)",
        thousands(size.tasks),
        ms(text.median),
        ms(text.min),
        ms(text.p90),
        size.runs
    );
    Figures {
        tasks: size.tasks,
        import,
        json,
        text,
    }
}

/// Median, min and 90th percentile of a set of timings.
#[derive(Debug, Clone, Copy)]
struct Stats {
    median: Duration,
    min: Duration,
    p90: Duration,
}

impl Stats {
    fn of(mut samples: Vec<Duration>) -> Stats {
        assert!(!samples.is_empty(), "at least one sample");
        samples.sort_unstable();
        let at = |q: f64| {
            // Nearest rank: the smallest sample with at least q of them at or below it.
            let rank = (q * samples.len() as f64).ceil() as usize;
            samples[rank.clamp(1, samples.len()) - 1]
        };
        Stats {
            median: at(0.5),
            min: samples[0],
            p90: at(0.9),
        }
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

/// `1000` as `1,000`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("temporary paths are UTF-8")
}

/// Spawn `weft args`, wait, and return all of stdout; panics (with stderr) on failure.
fn run_ok(env: &Hermetic, args: &[&str]) -> Vec<u8> {
    let output = weft(env, args)
        .stderr(Stdio::piped())
        .output()
        .expect("weft can be spawned");
    assert!(
        output.status.success(),
        "weft {} failed ({}):\n{}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

fn weft(env: &Hermetic, args: &[&str]) -> Command {
    let mut command = env.command(WEFT);
    command
        .args(args)
        .env("WEFT_WORKSPACE", env.work())
        .stdin(Stdio::null())
        .stdout(Stdio::piped());
    command
}

/// One cold run: spawn, read all of stdout, wait. Stderr goes to /dev/null so only the
/// command's own work is timed; a failing run is re-run by `run_ok` to show its error.
fn timed_run(env: &Hermetic, args: &[&str]) -> (Duration, Vec<u8>) {
    let mut command = weft(env, args);
    command.stderr(Stdio::null());
    let started = Instant::now();
    let output = command.output().expect("weft can be spawned");
    let elapsed = started.elapsed();
    if !output.status.success() {
        run_ok(env, args);
        panic!("weft {} failed ({})", args.join(" "), output.status);
    }
    (elapsed, output.stdout)
}

/// Warm up, then time `size.runs` cold runs one after the other, then check every output
/// with `check`.
///
/// The checks come after the runs, not between them: checking 10,000 tasks of JSON builds
/// a `serde_json::Value` of the 2.6 MB output (tens of MB allocated and freed), and the run
/// right after it was slower for it. Measured with a harness spawning `weft status --json`
/// as this bench does, three rounds in a quiet period: 9.01 / 8.44 / 8.53 ms medians with
/// no check between runs, 9.14 / 9.25 / 9.57 ms with that check between them. Every output
/// is still checked. Bound: the outputs of one size are held until checked, warm-ups and
/// runs (9 of ~26 MB for 100,000 tasks of JSON, ~240 MB).
fn measure(
    env: &Hermetic,
    args: &[&str],
    size: Size,
    check: impl Fn(&[u8]) -> Result<(), String>,
) -> Stats {
    let mut samples = Vec::with_capacity(size.runs);
    let mut outputs = Vec::with_capacity(size.warmup + size.runs);
    for run in 0..size.warmup + size.runs {
        let (elapsed, stdout) = timed_run(env, args);
        outputs.push(stdout);
        if run >= size.warmup {
            samples.push(elapsed);
        }
    }
    for stdout in &outputs {
        if let Err(problem) = check(stdout) {
            panic!("weft {}: unexpected output: {problem}", args.join(" "));
        }
    }
    Stats::of(samples)
}

fn check_json(stdout: &[u8], tasks: usize) -> Result<(), String> {
    let value: serde_json::Value =
        serde_json::from_slice(stdout).map_err(|e| format!("not JSON: {e}"))?;
    let found = value["plan"]["tasks"]
        .as_array()
        .ok_or("no plan.tasks array")?
        .len();
    if found == tasks {
        Ok(())
    } else {
        Err(format!("{found} tasks, expected {tasks}"))
    }
}

fn check_text(stdout: &[u8], tasks: usize) -> Result<(), String> {
    let text = std::str::from_utf8(stdout).map_err(|e| format!("not UTF-8: {e}"))?;
    let last_title = format!("(step {tasks})");
    if text.lines().count() >= tasks && text.contains(&last_title) {
        Ok(())
    } else {
        Err(format!(
            "{} lines, last task {last_title:?} {}",
            text.lines().count(),
            if text.contains(&last_title) {
                "present"
            } else {
                "missing"
            }
        ))
    }
}

/// `weft --version` cold: the cost of a process that does no work.
fn process_floor(runs: usize) -> Stats {
    let env = Hermetic::new();
    let mut samples = Vec::with_capacity(runs);
    for run in 0..runs + 3 {
        let (elapsed, stdout) = timed_run(&env, &["--version"]);
        assert!(
            stdout.starts_with(b"weft "),
            "weft --version prints its name"
        );
        if run >= 3 {
            samples.push(elapsed);
        }
    }
    Stats::of(samples)
}

/// A small deterministic generator (xorshift), so every run benches the same plan.
#[derive(Debug)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const AREAS: &[&str] = &[
    "rate limiter",
    "session store",
    "billing export",
    "search index",
    "audit log",
    "webhook dispatcher",
    "config loader",
    "retry policy",
    "CSV importer",
    "permissions check",
    "metrics endpoint",
    "cache layer",
];
const VERBS: &[&str] = &[
    "Add",
    "Refactor",
    "Test",
    "Document",
    "Harden",
    "Split",
    "Instrument",
    "Migrate",
];
const FILES: &[&str] = &[
    "src/limiter.rs",
    "src/store/session.rs",
    "src/billing/export.rs",
    "src/search/index.rs",
    "src/audit.rs",
    "src/hooks/dispatch.rs",
    "src/config.rs",
    "src/retry.rs",
];
const CHECKS: &[&str] = &[
    "cargo test --workspace",
    "cargo clippy --all-targets -- -D warnings",
    "cargo fmt --check",
    "./scripts/check-migrations.sh",
];
const RUNNERS: &[&str] = &["claude-code", "codex", "opencode"];

/// A workflow file of `tasks` tasks: mostly AI tasks with multi-line prompts, each
/// depending on 0–3 earlier tasks, some with checks and overrides, a few ops and manual
/// tasks. Every task has the explicit id `task-NNNNN`.
fn workflow_toml(tasks: usize) -> String {
    let mut rng = Rng(0x5eed_f00d_u64 ^ tasks as u64);
    let mut out = String::with_capacity(tasks * 700);
    out.push_str("goal = \"Ship the platform hardening milestone: limits, audit, exports\"\n");
    out.push_str("runner = \"claude-code\"\n");
    for index in 0..tasks {
        let number = index + 1;
        let area = rng.pick(AREAS);
        let verb = rng.pick(VERBS);
        let file = rng.pick(FILES);
        out.push_str("\n[[tasks]]\n");
        let _ = writeln!(out, "id = \"task-{number:05}\"");
        let _ = writeln!(out, "title = \"{verb} the {area} (step {number})\"");

        let dependencies = if index == 0 { 0 } else { rng.below(4) };
        let mut chosen: Vec<usize> = Vec::new();
        for _ in 0..dependencies {
            // Mostly recent tasks, sometimes far back, like a real plan.
            let back = if rng.below(4) == 0 {
                1 + rng.below(index)
            } else {
                1 + rng.below(index.min(12))
            };
            let order = number - back;
            if !chosen.contains(&order) {
                chosen.push(order);
            }
        }
        if !chosen.is_empty() {
            let refs: Vec<String> = chosen
                .iter()
                .map(|&order| match rng.below(3) {
                    0 => order.to_string(),
                    1 => format!("\"#{order}\""),
                    _ => format!("\"task-{order:05}\""),
                })
                .collect();
            let _ = writeln!(out, "dependencies = [{}]", refs.join(", "));
        }

        match rng.below(50) {
            0 => {
                out.push_str("kind = \"ops\"\n");
                let _ = writeln!(
                    out,
                    "command = \"cargo test -p {} -- --test-threads=2\"",
                    area.replace(' ', "-")
                );
            }
            1 => {
                out.push_str("kind = \"manual\"\n");
                let _ = writeln!(
                    out,
                    "steps = [\"Review the {area} dashboard\", \"Confirm alerts fire in staging\", \"Sign off in the release ticket\"]"
                );
            }
            _ => {
                if rng.below(5) == 0 {
                    let _ = writeln!(out, "description = \"Follow-up from the {area} review.\"");
                }
                let _ = writeln!(
                    out,
                    "prompt = \"\"\"\n{verb} the {area} in `{file}`.\n\n\
                     Keep the public API unchanged and cover every new branch with a unit test.\n\
                     Read the existing module first; match its error handling and naming.\n\
                     If a helper already exists in the crate, reuse it rather than adding one.\n\
                     When done, update the module docs and note any assumption in the PR text.\n\"\"\""
                );
                if rng.below(6) == 0 {
                    let _ = writeln!(out, "runner = \"{}\"", rng.pick(RUNNERS));
                }
                if rng.below(8) == 0 {
                    out.push_str("effort = \"high\"\n");
                }
                if rng.below(3) == 0 {
                    let count = 1 + rng.below(2);
                    let checks: Vec<String> = (0..count)
                        .map(|i| format!("\"{}\"", CHECKS[(index + i) % CHECKS.len()]))
                        .collect();
                    let _ = writeln!(out, "checks = [{}]", checks.join(", "));
                }
            }
        }
    }
    out
}
