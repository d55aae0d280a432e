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

fn main() {
    // `cargo bench` passes `--bench` (and any filter); this bench takes no arguments.
    let quick = std::env::var_os("WEFT_BENCH_QUICK").is_some_and(|v| !v.is_empty() && v != "0");
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
}

fn ms_per_task(d: Duration) -> String {
    ms2(d / TASKS as u32)
}

/// A fresh hermetic workspace (`weft init`) with the plan imported and current.
fn workspace_with_plan(plan: &str) -> Hermetic {
    let env = Hermetic::new();
    run_ok(&env, &["init", path_str(&env.work())]);
    let plan_file = env.root().join("plan.toml");
    fs::write(&plan_file, plan).expect("the plan file can be written");
    run_ok(&env, &["plan", "--file", path_str(&plan_file)]);
    env
}

/// One measured `weft run --parallel N` on a fresh workspace: spawn, drain stdout and
/// stderr, wait. Then checks that the run says so and that every task completed.
fn timed_run(plan: &str, parallel: usize) -> Duration {
    let env = workspace_with_plan(plan);
    let parallel_arg = parallel.to_string();
    let args = ["run", "--parallel", parallel_arg.as_str()];
    let mut command = weft(&env, &args);
    let started = Instant::now();
    let output = command.output().expect("weft can be spawned");
    let elapsed = started.elapsed();
    assert!(
        output.status.success(),
        "weft run --parallel {parallel} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let summary = format!("completed: {TASKS} completed");
    assert!(
        text.lines().last().is_some_and(|l| l.contains(&summary)),
        "weft run --parallel {parallel}: the last line does not say {summary:?}:\n{text}"
    );
    check_all_completed(&env);
    elapsed
}

/// `weft status --json` must list exactly `TASKS` tasks, all completed.
fn check_all_completed(env: &Hermetic) {
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
        tasks.len() == TASKS && by_status.get("completed") == Some(&TASKS),
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
    let env = workspace_with_plan(plan);
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
            event: value["event"].as_str().unwrap_or("?").to_owned(),
            task: value["task"].as_str().map(str::to_owned),
        });
    }
    let status = child.wait().expect("weft can be waited for");
    let wall = started.elapsed();
    assert!(
        status.success(),
        "weft run --parallel {parallel} --json failed ({status})"
    );
    check_all_completed(&env);

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
