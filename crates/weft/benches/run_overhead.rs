//! Orchestration overhead of `weft run`: what weft adds per task when the agent itself
//! costs nothing. The plan is 200 tasks on the built-in `exec` runner, each prompt `true`
//! (an instant agent), wired as chains, fan-outs and joins.
//!
//! For `--parallel 1` and `--parallel 3` it builds a fresh hermetic workspace (fresh HOME,
//! no git config), imports the plan with `weft plan --file`, times `weft run` as a child
//! process (wall clock, stdout and stderr drained from pipes), and checks with
//! `weft status --json` that all 200 tasks completed. Separately it times what any runner
//! must pay anyway: 200 sequential `sh -c true` spawned from here (the agent time). It
//! prints the medians, the overhead per task, one timestamped `--json` run per `--parallel`
//! that shows where the time goes (and how often the engine's poll interval ran out), and
//! the target. Timing is reported, never asserted. `WEFT_BENCH_QUICK=1` measures once
//! instead of three times. See `bench/README.md`.

#![allow(
    clippy::print_stdout,
    reason = "a benchmark reports its figures on stdout"
)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};

use std::process::Stdio;
use std::time::{Duration, Instant};

use fs_err as fs;
use weft_testkit::Hermetic;

#[path = "common/mod.rs"]
mod common;
use common::{Median, Rng, Seen, WEFT, ms, ms2, path_str, phases, run_ok, weft};

/// Tasks in the plan.
const TASKS: usize = 200;
/// The `--parallel` values measured.
const PARALLEL: [usize; 2] = [1, 3];
/// The goal the figures are judged against: orchestration overhead per task.
const TARGET: Duration = Duration::from_millis(15);
/// How long the engine's loop waits for a message before it looks at the store anyway.
const POLL_INTERVAL: Duration = weft_engine::defaults::POLL_INTERVAL;
/// Plan sizes of the cost curve (`--without-isolation --parallel 8`).
const CURVE: [usize; 5] = [200, 300, 1_000, 3_000, 10_000];
/// The curve's sizes with `WEFT_BENCH_QUICK=1`.
const CURVE_QUICK: [usize; 4] = [200, 300, 1_000, 3_000];
/// The throughput run's plan size (`WEFT_BENCH_LARGE=1`).
const LARGE: usize = 100_000;
/// `--parallel` of the curve and the throughput run.
const CURVE_PARALLEL: usize = 8;
/// The curve's targets: wall per task at every size, the 3,000-task figure against the
/// 300-task one, and tasks per second on the large plan.
const CURVE_TARGET: Duration = Duration::from_millis(3);
const CURVE_RATIO: f64 = 1.5;
const LARGE_TARGET: f64 = 100.0;

fn flag(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty() && v != "0")
}

fn main() {
    // `cargo bench` passes `--bench` (and any filter); this bench takes no arguments.
    let quick = flag("WEFT_BENCH_QUICK");
    if flag("WEFT_BENCH_CURVE_ONLY") {
        curve(quick, flag("WEFT_BENCH_LARGE"));
        return;
    }
    let runs = if quick { 1 } else { 3 };
    println!(
        "weft run, orchestration overhead{}  (binary: {WEFT})",
        if quick { "  [WEFT_BENCH_QUICK]" } else { "" }
    );

    let shape = dependency_shape(TASKS);
    let plan = workflow_toml(&shape);
    let stats = ShapeStats::of(&shape);
    println!(
        "plan: {TASKS} tasks, runner exec, prompt `true`; {} dependencies: {} roots, {} chain \
         links, {} joins (2-3 deps), widest fan-out {}, longest chain {} tasks",
        stats.edges, stats.roots, stats.chain_links, stats.joins, stats.widest_fan_out, stats.depth
    );
    println!(
        "settings: defaults (no -c; marker_grace never applies, exec gets no marker); engine \
         poll interval {} ms",
        POLL_INTERVAL.as_millis()
    );

    // Interleave the measurements so a slow spell of the machine hits all of them alike.
    let mut agent = Vec::with_capacity(runs);
    let mut walls: BTreeMap<usize, Vec<Duration>> = BTreeMap::new();
    warm_up_spawns();
    for _ in 0..runs {
        agent.push(agent_time(TASKS));
        for parallel in PARALLEL {
            walls
                .entry(parallel)
                .or_default()
                .push(timed_run(&plan, parallel));
        }
    }

    let agent = Median::of(agent);
    println!(
        "agent time: {TASKS} x `sh -c true`, sequential   median {}  ({} per task; runs: {})",
        ms(agent.median),
        ms_per_task(agent.median),
        agent.list()
    );
    let mut headline = Vec::new();
    for (parallel, samples) in walls {
        let wall = Median::of(samples);
        println!(
            "run --parallel {parallel}   wall median {}  ({} per task; runs: {})",
            ms(wall.median),
            ms_per_task(wall.median),
            wall.list()
        );
        headline.push((parallel, wall.median));
    }

    let mut verdicts = Vec::new();
    for &(parallel, wall) in &headline {
        if parallel == 1 {
            let overhead = wall.saturating_sub(agent.median) / TASKS as u32;
            println!(
                "overhead per task (--parallel 1): ({} - {}) / {TASKS} = {}",
                ms(wall),
                ms(agent.median),
                ms2(overhead)
            );
            verdicts.push((
                format!("overhead per task (--parallel {parallel})"),
                overhead,
            ));
        } else {
            let per_task = wall / TASKS as u32;
            println!(
                "wall per task (--parallel {parallel}): {} / {TASKS} = {}",
                ms(wall),
                ms2(per_task)
            );
            verdicts.push((format!("wall per task (--parallel {parallel})"), per_task));
        }
    }

    println!(
        "where the time goes: one more run each with --json, every line timestamped as it arrives"
    );
    for parallel in PARALLEL {
        traced_run(&plan, parallel);
    }

    for (name, value) in verdicts {
        let verdict = if value < TARGET { "holds" } else { "MISSED" };
        println!(
            "target: under {} ms per task — {name}: {} → {verdict}",
            TARGET.as_millis(),
            ms2(value)
        );
    }
    curve(quick, flag("WEFT_BENCH_LARGE"));
}

/// The cost curve: wall per task of `weft run --without-isolation --parallel 8` at several
/// plan sizes, the 3,000/300 ratio and (with `large`) tasks per second on 100,000 tasks.
fn curve(quick: bool, large: bool) {
    let sizes: &[usize] = if quick { &CURVE_QUICK } else { &CURVE };
    println!(
        "cost curve: weft run --without-isolation --parallel {CURVE_PARALLEL}, the same plan \
         shape at each size{}",
        if large {
            ""
        } else {
            " (WEFT_BENCH_LARGE=1 adds 100,000 tasks)"
        }
    );
    let mut per_task: BTreeMap<usize, Duration> = BTreeMap::new();
    for &tasks in sizes {
        let plan = workflow_toml(&dependency_shape(tasks));
        let runs = if quick || tasks > 3_000 { 1 } else { 3 };
        let samples = (0..runs)
            .map(|_| timed_run_args(&plan, tasks, &curve_args()).wall)
            .collect();
        let wall = Median::of(samples);
        let each = wall.median / tasks as u32;
        per_task.insert(tasks, each);
        println!(
            "  {tasks:>6} tasks  wall median {}  {} per task  (runs: {})",
            ms(wall.median),
            ms2(each),
            wall.list()
        );
    }
    let mut verdicts: Vec<(String, bool)> = Vec::new();
    for (&tasks, &each) in &per_task {
        if [200, 1_000, 10_000].contains(&tasks) {
            verdicts.push((
                format!(
                    "at most {} ms per task at {tasks} tasks: {}",
                    CURVE_TARGET.as_millis(),
                    ms2(each)
                ),
                each <= CURVE_TARGET,
            ));
        }
    }
    if let (Some(small), Some(big)) = (per_task.get(&300), per_task.get(&3_000)) {
        let ratio = big.as_secs_f64() / small.as_secs_f64();
        verdicts.push((
            format!("3,000 tasks at most {CURVE_RATIO}x the 300-task figure: {ratio:.2}x"),
            ratio <= CURVE_RATIO,
        ));
    }
    if large {
        let plan = workflow_toml(&dependency_shape(LARGE));
        let run = timed_run_args(&plan, LARGE, &curve_args());
        let rate = LARGE as f64 / run.wall.as_secs_f64();
        println!(
            "  {LARGE:>6} tasks  wall {}  {rate:.0} tasks/s  ({} per task; import {})",
            ms(run.wall),
            ms2(run.wall / LARGE as u32),
            ms(run.import)
        );
        verdicts.push((
            format!("at least {LARGE_TARGET} tasks/s on {LARGE} tasks: {rate:.0} tasks/s"),
            rate >= LARGE_TARGET,
        ));
    }
    for (text, held) in verdicts {
        println!("target: {text} → {}", if held { "holds" } else { "MISSED" });
    }
}

fn curve_args() -> Vec<String> {
    ["run", "--without-isolation", "--parallel"]
        .iter()
        .map(|s| (*s).to_owned())
        .chain([CURVE_PARALLEL.to_string()])
        .collect()
}

/// One measured run and the import before it.
struct Timed {
    wall: Duration,
    import: Duration,
}

fn ms_per_task(d: Duration) -> String {
    ms2(d / TASKS as u32)
}

/// A fresh hermetic workspace (`weft init`) with the plan imported and current, and how
/// long the import took.
fn workspace_with_plan(plan: &str) -> (Hermetic, Duration) {
    let env = Hermetic::new();
    run_ok(&env, &["init", path_str(&env.work())]);
    let plan_file = env.root().join("plan.toml");
    fs::write(&plan_file, plan).expect("the plan file can be written");
    let started = Instant::now();
    run_ok(&env, &["plan", "--file", path_str(&plan_file)]);
    (env, started.elapsed())
}

/// One measured `weft run --parallel N` of the 200-task plan.
fn timed_run(plan: &str, parallel: usize) -> Duration {
    let args: Vec<String> = [
        "run".to_owned(),
        "--parallel".to_owned(),
        parallel.to_string(),
    ]
    .into();
    timed_run_args(plan, TASKS, &args).wall
}

/// One measured `weft ARGS` on a fresh workspace with `plan` (of `tasks` tasks): spawn,
/// drain stdout and stderr, wait. Then checks that the run says so and that every task
/// completed.
fn timed_run_args(plan: &str, tasks: usize, args: &[String]) -> Timed {
    let (env, import) = workspace_with_plan(plan);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut command = weft(&env, &args);
    let started = Instant::now();
    let output = command.output().expect("weft can be spawned");
    let wall = started.elapsed();
    assert!(
        output.status.success(),
        "weft {args:?} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let summary = format!("completed: {tasks} completed");
    assert!(
        text.lines().last().is_some_and(|l| l.contains(&summary)),
        "weft {args:?}: the last line does not say {summary:?}:\n{}",
        text.lines().last().unwrap_or("")
    );
    check_all_completed(&env, tasks);
    Timed { wall, import }
}

/// `weft status --json` must list exactly `tasks` tasks, all completed.
fn check_all_completed(env: &Hermetic, tasks_wanted: usize) {
    let stdout = run_ok(env, &["status", "--json"]);
    let value: serde_json::Value =
        serde_json::from_slice(&stdout).expect("weft status --json prints JSON");
    let tasks = value["plan"]["tasks"]
        .as_array()
        .expect("weft status --json has plan.tasks");
    let mut by_status: BTreeMap<&str, usize> = BTreeMap::new();
    for task in tasks {
        *by_status
            .entry(task["status"].as_str().unwrap_or("?"))
            .or_default() += 1;
    }
    assert!(
        tasks.len() == tasks_wanted && by_status.get("completed") == Some(&tasks_wanted),
        "after the run, weft status --json shows {} tasks: {by_status:?}",
        tasks.len()
    );
}

/// A few spawns first, so the first measured one does not pay for cold caches.
fn warm_up_spawns() {
    agent_time(20);
}

/// What running `count` instant agents costs without weft: spawn `sh -c true` (hermetic
/// environment, same PATH and folder as weft's children, output through pipes), read
/// its output to the end and wait, one after the other.
fn agent_time(count: usize) -> Duration {
    let env = Hermetic::new();
    let started = Instant::now();
    for _ in 0..count {
        let output = env
            .command("sh")
            .args(["-c", "true"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .expect("sh can be spawned");
        assert!(output.status.success(), "sh -c true failed");
    }
    started.elapsed()
}

/// A `weft run --parallel N --json` whose lines are timestamped on arrival: prints the
/// poll ticks and, for `--parallel 1` (one task at a time, so the phases add up to the
/// wall time), where each task's time goes.
fn traced_run(plan: &str, parallel: usize) {
    let (env, _) = workspace_with_plan(plan);
    let parallel_arg = parallel.to_string();
    let mut command = weft(
        &env,
        &["run", "--parallel", parallel_arg.as_str(), "--json"],
    );
    command.stderr(Stdio::null());
    let started = Instant::now();
    let mut child = command.spawn().expect("weft can be spawned");
    let stdout = child.stdout.take().expect("stdout is piped");
    let mut seen = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let at = started.elapsed();
        let line = line.expect("weft prints UTF-8");
        let value: serde_json::Value =
            serde_json::from_str(&line).expect("every --json line is a JSON object");
        seen.push(Seen {
            at,
            event: value["event"]["kind"].as_str().unwrap_or("?").to_owned(),
            task: value["task"].as_str().map(str::to_owned),
        });
    }
    let status = child.wait().expect("weft can be waited for");
    let wall = started.elapsed();
    assert!(
        status.success(),
        "weft run --parallel {parallel} --json failed ({status})"
    );
    check_all_completed(&env, TASKS);

    let ticks = seen.iter().filter(|s| s.event == "tick").count();
    let mut out = format!(
        "  --parallel {parallel} --json: wall {}; {ticks} poll ticks ({} ms each, so at most {} \
         of the wall was spent waiting out a poll interval)",
        ms(wall),
        POLL_INTERVAL.as_millis(),
        ms(POLL_INTERVAL * ticks as u32)
    );
    if parallel == 1 {
        let _ = write!(out, "{}", phases(&seen, wall));
    }
    println!("{out}");
}

/// Each task's dependencies (0-based indexes of earlier tasks, 0–3 of them): about 15%
/// new roots, 30% chain links (the task just before), 25% fan-out (a shared hub that
/// moves on every few tasks) and 30% joins of 2–3 earlier tasks (mostly recent ones,
/// sometimes far back).
fn dependency_shape(tasks: usize) -> Vec<Vec<usize>> {
    let mut rng = Rng(0x0bad_cafe_u64 ^ tasks as u64);
    let mut hub = 0;
    let mut shape: Vec<Vec<usize>> = Vec::with_capacity(tasks);
    for index in 0..tasks {
        let mut deps = Vec::new();
        if index > 0 {
            match rng.below(20) {
                0..=2 => {}
                3..=8 => deps.push(index - 1),
                9..=13 => {
                    if rng.below(3) == 0 || index - hub > 12 {
                        hub = index - 1;
                    }
                    deps.push(hub);
                }
                _ => {
                    let wanted = 2 + rng.below(2);
                    for _ in 0..wanted {
                        let back = if rng.below(4) == 0 {
                            1 + rng.below(index)
                        } else {
                            1 + rng.below(index.min(12))
                        };
                        if !deps.contains(&(index - back)) {
                            deps.push(index - back);
                        }
                    }
                    deps.sort_unstable();
                }
            }
        }
        shape.push(deps);
    }
    shape
}

/// What the dependency graph looks like, for the report.
#[derive(Debug)]
struct ShapeStats {
    edges: usize,
    roots: usize,
    chain_links: usize,
    joins: usize,
    widest_fan_out: usize,
    /// Tasks on the longest dependency chain: no schedule can finish in fewer rounds.
    depth: usize,
}

impl ShapeStats {
    fn of(shape: &[Vec<usize>]) -> ShapeStats {
        let mut dependents = vec![0usize; shape.len()];
        let mut depth = vec![1usize; shape.len()];
        for (index, deps) in shape.iter().enumerate() {
            for &dep in deps {
                dependents[dep] += 1;
                depth[index] = depth[index].max(depth[dep] + 1);
            }
        }
        ShapeStats {
            edges: shape.iter().map(Vec::len).sum(),
            roots: shape.iter().filter(|d| d.is_empty()).count(),
            chain_links: shape
                .iter()
                .enumerate()
                .filter(|(i, d)| d.len() == 1 && d[0] + 1 == *i)
                .count(),
            joins: shape.iter().filter(|d| d.len() >= 2).count(),
            widest_fan_out: dependents.iter().copied().max().unwrap_or(0),
            depth: depth.iter().copied().max().unwrap_or(0),
        }
    }
}

/// The workflow file: every task runs `true` with the `exec` runner; dependencies by
/// order number (1-based).
fn workflow_toml(shape: &[Vec<usize>]) -> String {
    let mut out = String::with_capacity(shape.len() * 100);
    out.push_str("goal = \"Orchestration overhead: instant tasks\"\n");
    out.push_str("runner = \"exec\"\n");
    for (index, deps) in shape.iter().enumerate() {
        let number = index + 1;
        out.push_str("\n[[tasks]]\n");
        let _ = writeln!(out, "id = \"task-{number:03}\"");
        let _ = writeln!(out, "title = \"Instant task {number}\"");
        out.push_str("prompt = \"true\"\n");
        if !deps.is_empty() {
            let refs: Vec<String> = deps.iter().map(|d| (d + 1).to_string()).collect();
            let _ = writeln!(out, "dependencies = [{}]", refs.join(", "));
        }
    }
    out
}
