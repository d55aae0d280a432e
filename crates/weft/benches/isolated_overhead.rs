//! Isolated-mode overhead of `weft run --isolated`: what a task costs when weft gives it
//! its own worktree and branch and lands its work, against the raw git commands that work
//! needs at the least.
//!
//! The plan is 100 AI-kind tasks on the built-in `exec` runner (a trivial agent: `sh -c`
//! of the prompt, its exit code is its verdict), each prompt writing one distinct file
//! (`printf x > out/fNNN.txt`), so every task lands a real change; the tasks are a mix of
//! independent ones and short chains (0–2 dependencies each).
//!
//! Three things are timed, each in a fresh hermetic git repository (fresh HOME, no git
//! config, `git init -b main`, a few hundred files committed):
//!
//! 1. `weft run --isolated --parallel 1` (wall clock, stdout and stderr drained); then
//!    every task must be completed and the integration branch must hold every file.
//! 2. `weft run --without-isolation --parallel 1` (shared mode: runs in a repository are
//!    isolated by default) on the same plan; every file must be in the checkout.
//! 3. The raw work, with the git CLI directly, 100 times in a row: `git worktree add -b`,
//!    the `sh -c` agent writing its file, `git add -A`, `git commit`, `git merge-tree
//!    --write-tree`, `git commit-tree`, `git update-ref` (compare-and-swap) and
//!    `git worktree remove --force`.
//!
//! It prints the wall per task of both runs, their difference (the isolation cost per
//! task), the raw cost per task, and the ratio isolated / raw against the target (within
//! 1.15x). Timing is reported, never asserted. `WEFT_BENCH_QUICK=1` runs 20 tasks once
//! instead of 100 tasks three times (medians).
//!
//! Nearly all of the time is creating and deleting files: every worktree checks out, and
//! then removes, the whole tree. The repositories live in the system's temporary folder
//! (`TMPDIR`), whose file system the bench prints. On ext4 without a journal (some VMs)
//! the inode allocator steps over every inode deleted in the last minute, one by one, so
//! there each phase pays for the deletions of the phases before it; run such a machine
//! with `TMPDIR=/dev/shm`. See `bench/README.md`.

#![allow(
    clippy::print_stdout,
    reason = "a benchmark reports its figures on stdout"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fs_err as fs;
use weft_testkit::Hermetic;

#[path = "common/mod.rs"]
mod common;
use common::{Median, Rng, Seen, WEFT, ms, ms2, path_str, phases, run_ok, weft};

/// Files committed on `main` in every repository (in 20 folders).
const REPO_FILES: usize = 300;
/// The goal: isolated wall per task within this multiple of the raw git work per task.
const TARGET_RATIO: f64 = 1.15;
/// The longest dependency chain the plan may have, in tasks.
const MAX_CHAIN: usize = 4;
/// The identity for the commits the bench makes itself (weft's commits use its own
/// fallback identity, as the hermetic git config has none).
const IDENTITY: [&str; 4] = [
    "-c",
    "user.name=weft bench",
    "-c",
    "user.email=bench@weft.invalid",
];
/// The raw loop's integration branch.
const RAW_INTEGRATION: &str = "weft/raw00001/integration";
/// The steps of one raw task, in order.
const STEPS: [&str; 8] = [
    "git worktree add -b",
    "sh -c (the agent writes its file)",
    "git add -A",
    "git commit",
    "git merge-tree --write-tree",
    "git commit-tree",
    "git update-ref (compare-and-swap)",
    "git worktree remove --force",
];

fn main() {
    // `cargo bench` passes `--bench` (and any filter); this bench takes no arguments.
    let quick = std::env::var_os("WEFT_BENCH_QUICK").is_some_and(|v| !v.is_empty() && v != "0");
    let (tasks, runs) = if quick { (20, 1) } else { (100, 3) };
    println!(
        "weft run --isolated, per-task isolation overhead{}  (binary: {WEFT})",
        if quick { "  [WEFT_BENCH_QUICK]" } else { "" }
    );

    let shape = dependency_shape(tasks);
    let plan = workflow_toml(&shape);
    let stats = ShapeStats::of(&shape);
    let probe = Hermetic::new();
    let version = git_out(&probe, probe.root(), &["--version"]);
    println!(
        "plan: {tasks} AI-kind tasks, runner exec, prompt `printf x > out/fNNN.txt` (one distinct \
         file each); {} dependencies: {} independent, {} with one, {} with two; longest chain \
         {} tasks",
        stats.edges, stats.roots, stats.single, stats.double, stats.depth
    );
    println!(
        "repository: fresh per run, `git init -b main`, {REPO_FILES} files committed; {}",
        version.trim()
    );
    let temp = std::env::temp_dir();
    println!(
        "temporary folder: {} ({}); load average at the start: {}",
        temp.display(),
        file_system(&temp),
        load_average()
    );

    // Warm caches (git, sh, the weft binary) before anything is measured.
    raw_run(5);
    let _ = timed_run(&workflow_toml(&dependency_shape(5)), 5, Mode::Shared);

    let mut raw_walls = Vec::new();
    let mut raw_steps = [Duration::ZERO; STEPS.len()];
    let mut shared_walls = Vec::new();
    let mut isolated_walls = Vec::new();
    for round in 0..runs {
        // Rotate the order, so no measurement always runs first or last.
        for slot in 0..3 {
            match (round + slot) % 3 {
                0 => {
                    let raw = raw_run(tasks);
                    raw_walls.push(raw.wall);
                    for (sum, step) in raw_steps.iter_mut().zip(raw.steps) {
                        *sum += step;
                    }
                }
                1 => shared_walls.push(timed_run(&plan, tasks, Mode::Shared)),
                _ => isolated_walls.push(timed_run(&plan, tasks, Mode::Isolated)),
            }
        }
    }
    // Round by round: isolated against the raw loop of the same round.
    let round_ratios: Vec<String> = isolated_walls
        .iter()
        .zip(&raw_walls)
        .map(|(isolated, raw)| format!("{:.2}x", isolated.as_secs_f64() / raw.as_secs_f64()))
        .collect();
    let raw = Median::of(raw_walls);
    let shared = Median::of(shared_walls);
    let isolated = Median::of(isolated_walls);
    let per_task = |d: Duration| d / tasks as u32;

    println!(
        "raw git + agent, {tasks} tasks in a row         median {}  ({} per task; runs: {})",
        ms(raw.median),
        ms2(per_task(raw.median)),
        raw.list()
    );
    let step_total: Duration = raw_steps.iter().sum();
    for (name, step) in STEPS.iter().zip(raw_steps) {
        let mean = step / (tasks * runs) as u32;
        println!(
            "    {name:<36} {:>9} per task  ({:>4.1}%)",
            ms2(mean),
            100.0 * step.as_secs_f64() / step_total.as_secs_f64()
        );
    }
    println!(
        "run --without-isolation --parallel 1 (shared) wall median {}  ({} per task; runs: {})",
        ms(shared.median),
        ms2(per_task(shared.median)),
        shared.list()
    );
    println!(
        "run --isolated --parallel 1                  wall median {}  ({} per task; runs: {})",
        ms(isolated.median),
        ms2(per_task(isolated.median)),
        isolated.list()
    );

    let isolated_per_task = per_task(isolated.median);
    let shared_per_task = per_task(shared.median);
    let raw_per_task = per_task(raw.median);
    let ratio = isolated_per_task.as_secs_f64() / raw_per_task.as_secs_f64();
    let figures = [
        ("isolated wall per task", ms2(isolated_per_task)),
        ("shared wall per task", ms2(shared_per_task)),
        (
            "isolation cost per task (isolated - shared)",
            signed_ms2(isolated_per_task, shared_per_task),
        ),
        ("raw git + agent per task", ms2(raw_per_task)),
        (
            "weft beyond raw per task (isolated - raw)",
            signed_ms2(isolated_per_task, raw_per_task),
        ),
    ];
    for (name, value) in figures {
        println!("{:<45} {value:>10}", format!("{name}:"));
    }
    println!(
        "{:<45} {ratio:>9.2}x  ({} / {}; round by round: {})",
        "ratio isolated / raw per task:",
        ms2(isolated_per_task),
        ms2(raw_per_task),
        round_ratios.join(", ")
    );

    println!(
        "where the time goes: one more run each with --json, every line timestamped as it arrives"
    );
    traced_run(&plan, tasks, Mode::Shared);
    traced_run(&plan, tasks, Mode::Isolated);
    println!("load average at the end: {}", load_average());

    let verdict = if ratio <= TARGET_RATIO {
        "holds"
    } else {
        "MISSED"
    };
    println!(
        "target: isolated within {TARGET_RATIO}x of the raw git commands it needs — \
         {ratio:.2}x → {verdict}"
    );
}

/// The type of the file system `dir` is on (`stat -f`), for the record.
fn file_system(dir: &Path) -> String {
    Command::new("stat")
        .args(["-f", "-c", "%T"])
        .arg(dir)
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .unwrap_or_else(|| String::from("file system unknown"))
}

/// The 1, 5 and 15 minute load averages, for the record.
fn load_average() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|text| {
            text.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_else(|_| String::from("unknown"))
}

/// Shared checkout or a worktree per task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Shared,
    Isolated,
}

impl Mode {
    fn args(self) -> &'static [&'static str] {
        match self {
            Mode::Shared => &["run", "--without-isolation", "--parallel", "1"],
            Mode::Isolated => &["run", "--isolated", "--parallel", "1"],
        }
    }

    fn name(self) -> &'static str {
        match self {
            Mode::Shared => "run --without-isolation --parallel 1",
            Mode::Isolated => "run --isolated --parallel 1",
        }
    }
}

/// `a - b` in milliseconds, with its sign.
fn signed_ms2(a: Duration, b: Duration) -> String {
    format!("{:+.2} ms", (a.as_secs_f64() - b.as_secs_f64()) * 1000.0)
}

/// The file task `number` (1-based) writes.
/// In `out/` (committed with a `.keep`), not the top folder: a confined shared run may
/// change the workspace's entries but not add any to its top folder (ARCHITECTURE.md,
/// containment).
fn task_file(number: usize) -> String {
    format!("out/f{number:03}.txt")
}

/// Run git in `dir` with the hermetic environment; panics on failure; returns stdout.
fn git_out(env: &Hermetic, dir: &Path, args: &[&str]) -> String {
    let output = env
        .command("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("git can be spawned");
    assert!(
        output.status.success(),
        "git {args:?} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Make the hermetic work folder a repository on `main` with `REPO_FILES` files committed.
fn fresh_repo(env: &Hermetic) {
    let work = env.work();
    git_out(env, &work, &["init", "-q", "-b", "main"]);
    for index in 0..REPO_FILES {
        let dir = work.join(format!("src/mod{:02}", index % 20));
        fs::create_dir_all(&dir).expect("a source folder can be created");
        let mut text = String::new();
        for line in 0..6 {
            let _ = writeln!(text, "file {index} line {line}: lorem ipsum dolor sit amet");
        }
        fs::write(dir.join(format!("file{index:04}.txt")), text).expect("a file can be written");
    }
    fs::write(work.join("README.md"), "# bench repository\n").expect("README can be written");
    fs::create_dir_all(work.join("out")).expect("out/ can be created");
    fs::write(work.join("out/.keep"), "").expect("out/.keep can be written");
    git_out(env, &work, &["add", "-A"]);
    let mut commit = IDENTITY.to_vec();
    commit.extend(["commit", "-q", "-m", "base"]);
    git_out(env, &work, &commit);
}

/// A fresh hermetic repository made a weft workspace, with the plan imported (the plan
/// file lives outside the repository).
fn workspace_with_plan(plan: &str) -> Hermetic {
    let env = Hermetic::new();
    fresh_repo(&env);
    run_ok(&env, &["init", path_str(&env.work())]);
    let plan_file = env.root().join("plan.toml");
    fs::write(&plan_file, plan).expect("the plan file can be written");
    run_ok(&env, &["plan", "--file", path_str(&plan_file)]);
    env
}

/// One measured `weft run [--isolated] --parallel 1` on a fresh repository: spawn, drain
/// stdout and stderr, wait. Then checks the outcome.
fn timed_run(plan: &str, tasks: usize, mode: Mode) -> Duration {
    let env = workspace_with_plan(plan);
    let mut command = weft(&env, mode.args());
    let started = Instant::now();
    let output = command.output().expect("weft can be spawned");
    let elapsed = started.elapsed();
    assert!(
        output.status.success(),
        "weft {} failed ({}):\n{}",
        mode.name(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    let summary = format!("completed: {tasks} completed");
    assert!(
        text.lines().last().is_some_and(|l| l.contains(&summary)),
        "weft {}: the last line does not say {summary:?}:\n{text}",
        mode.name()
    );
    check_outcome(&env, tasks, mode);
    elapsed
}

/// Every task completed; isolated: the integration branch holds every task's file (one
/// merge each), no worktree is left and the user's checkout is untouched; shared: every
/// file is in the checkout.
fn check_outcome(env: &Hermetic, tasks: usize, mode: Mode) {
    check_all_completed(env, tasks);
    let work = env.work();
    match mode {
        Mode::Shared => {
            for number in 1..=tasks {
                let file = work.join(task_file(number));
                let text = fs::read_to_string(&file).expect("every task wrote its file");
                assert_eq!(text, "x", "{}", file.display());
            }
        }
        Mode::Isolated => {
            let refs = git_out(
                env,
                &work,
                &[
                    "for-each-ref",
                    "--format=%(refname:short)",
                    "refs/heads/weft/",
                ],
            );
            let integration: Vec<&str> = refs
                .lines()
                .filter(|r| r.ends_with("/integration"))
                .collect();
            let [integration] = integration[..] else {
                panic!("expected one integration branch, found {refs}");
            };
            check_integration(env, &work, integration, tasks);
            for number in 1..=tasks {
                assert!(
                    !work.join(task_file(number)).exists(),
                    "a task wrote into the user's checkout"
                );
            }
            let dirty = git_out(
                env,
                &work,
                &["status", "--porcelain", "--untracked-files=no"],
            );
            assert!(dirty.is_empty(), "the user's checkout changed: {dirty}");
        }
    }
}

/// `integration` holds `out/f001.txt`…, one merge per task, and only the main worktree is
/// left.
fn check_integration(env: &Hermetic, repo: &Path, integration: &str, tasks: usize) {
    let tree = git_out(
        env,
        repo,
        &["ls-tree", "-r", "--name-only", integration, "--", "out"],
    );
    let names: BTreeSet<&str> = tree.lines().collect();
    for number in 1..=tasks {
        let file = task_file(number);
        assert!(
            names.contains(file.as_str()),
            "{integration} lacks {file}:\n{tree}"
        );
    }
    let content = git_out(
        env,
        repo,
        &["show", &format!("{integration}:{}", task_file(tasks))],
    );
    assert_eq!(content, "x");
    let merges = git_out(
        env,
        repo,
        &[
            "rev-list",
            "--merges",
            "--count",
            &format!("main..{integration}"),
        ],
    );
    assert_eq!(merges.trim(), tasks.to_string(), "one merge per task");
    let worktrees = git_out(env, repo, &["worktree", "list", "--porcelain"]);
    assert_eq!(
        worktrees.matches("worktree ").count(),
        1,
        "task worktrees are removed:\n{worktrees}"
    );
}

/// `weft status --json` must list exactly `tasks` tasks, all completed.
fn check_all_completed(env: &Hermetic, tasks: usize) {
    let stdout = run_ok(env, &["status", "--json"]);
    let value: serde_json::Value =
        serde_json::from_slice(&stdout).expect("weft status --json prints JSON");
    let listed = value["plan"]["tasks"]
        .as_array()
        .expect("weft status --json has plan.tasks");
    let mut by_status: BTreeMap<&str, usize> = BTreeMap::new();
    for task in listed {
        *by_status
            .entry(task["status"].as_str().unwrap_or("?"))
            .or_default() += 1;
    }
    assert!(
        listed.len() == tasks && by_status.get("completed") == Some(&tasks),
        "after the run, weft status --json shows {} tasks: {by_status:?}",
        listed.len()
    );
}

/// One raw pass: the wall time of all tasks and the time of each step summed over them.
#[derive(Debug)]
struct Raw {
    wall: Duration,
    steps: [Duration; STEPS.len()],
}

/// Time laps: each call adds the time since the previous one to a step.
#[derive(Debug)]
struct Laps {
    last: Instant,
    steps: [Duration; STEPS.len()],
}

impl Laps {
    fn lap(&mut self, step: usize) {
        let now = Instant::now();
        self.steps[step] += now - self.last;
        self.last = now;
    }
}

/// The git work `tasks` isolated tasks need, done with the git CLI directly, one task
/// after the other, in a fresh repository: cut a worktree and branch from the integration
/// tip, run the agent there (`sh -c 'printf x > out/fNNN.txt'`, output through pipes), commit
/// everything, merge onto the integration tip without a checkout, move the integration
/// branch with a compare-and-swap, remove the worktree.
fn raw_run(tasks: usize) -> Raw {
    let env = Hermetic::new();
    fresh_repo(&env);
    let repo = env.work();
    let base = git_out(&env, &repo, &["rev-parse", "HEAD"])
        .trim()
        .to_owned();
    git_out(&env, &repo, &["branch", RAW_INTEGRATION, &base]);
    let integration_ref = format!("refs/heads/{RAW_INTEGRATION}");
    let worktrees = repo.join(".weft/worktrees/raw00001");
    let mut tip = base;
    let started = Instant::now();
    let mut laps = Laps {
        last: started,
        steps: [Duration::ZERO; STEPS.len()],
    };
    for number in 1..=tasks {
        let name = format!("{number}-task-{number}");
        let branch = format!("weft/raw00001/{name}");
        let path = worktrees.join(&name);
        let path_text = path_str(&path);
        laps.last = Instant::now();
        git_out(
            &env,
            &repo,
            &["worktree", "add", "-q", "-b", &branch, path_text, &tip],
        );
        laps.lap(0);
        let agent = env
            .command("sh")
            .args(["-c", &format!("printf x > {}", task_file(number))])
            .current_dir(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .expect("sh can be spawned");
        assert!(agent.status.success(), "the agent failed");
        laps.lap(1);
        git_out(&env, &path, &["add", "-A"]);
        laps.lap(2);
        let mut commit = IDENTITY.to_vec();
        commit.extend(["commit", "-q", "-m", "m"]);
        git_out(&env, &path, &commit);
        laps.lap(3);
        let merged = git_out(
            &env,
            &repo,
            &["merge-tree", "--write-tree", &integration_ref, &branch],
        );
        let tree = merged.lines().next().expect("merge-tree prints a tree");
        laps.lap(4);
        let mut commit_tree = IDENTITY.to_vec();
        commit_tree.extend(["commit-tree", tree, "-p", &tip, "-p", &branch, "-m", "m"]);
        let merge = git_out(&env, &repo, &commit_tree).trim().to_owned();
        laps.lap(5);
        git_out(&env, &repo, &["update-ref", &integration_ref, &merge, &tip]);
        laps.lap(6);
        git_out(&env, &repo, &["worktree", "remove", "--force", path_text]);
        laps.lap(7);
        tip = merge;
    }
    let wall = started.elapsed();
    check_integration(&env, &repo, RAW_INTEGRATION, tasks);
    Raw {
        wall,
        steps: laps.steps,
    }
}

/// A `weft run [--isolated] --parallel 1 --json` whose lines are timestamped on arrival:
/// prints where each task's time goes (one task at a time, so the phases add up to the
/// wall time).
fn traced_run(plan: &str, tasks: usize, mode: Mode) {
    let env = workspace_with_plan(plan);
    let mut args = mode.args().to_vec();
    args.push("--json");
    let mut command = weft(&env, &args);
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
        "weft {} --json failed ({status})",
        mode.name()
    );
    check_outcome(&env, tasks, mode);
    println!(
        "  {} --json: wall {}{}",
        mode.name(),
        ms(wall),
        phases(&seen, wall)
    );
}

/// Each task's dependencies (0-based indexes of earlier tasks, 0–2 of them): about 40%
/// independent, 40% one dependency (mostly the task just before, which makes chains), 20%
/// two recent ones. No chain is longer than `MAX_CHAIN` tasks: a dependency that would
/// make one longer is dropped.
fn dependency_shape(tasks: usize) -> Vec<Vec<usize>> {
    let mut rng = Rng(0x5eed_f00d_u64 ^ tasks as u64);
    let mut depth: Vec<usize> = Vec::with_capacity(tasks);
    let mut shape: Vec<Vec<usize>> = Vec::with_capacity(tasks);
    for index in 0..tasks {
        let mut deps = Vec::new();
        if index > 0 {
            let wanted = match rng.below(10) {
                0..=3 => 0,
                4..=7 => 1,
                _ => 2,
            };
            for pick in 0..wanted {
                let back = if pick == 0 && wanted == 1 && rng.below(4) != 0 {
                    1
                } else {
                    1 + rng.below(index.min(8))
                };
                let dep = index - back;
                if depth[dep] < MAX_CHAIN && !deps.contains(&dep) {
                    deps.push(dep);
                }
            }
            deps.sort_unstable();
        }
        depth.push(1 + deps.iter().map(|&d| depth[d]).max().unwrap_or(0));
        shape.push(deps);
    }
    shape
}

/// What the dependency graph looks like, for the report.
#[derive(Debug)]
struct ShapeStats {
    edges: usize,
    roots: usize,
    single: usize,
    double: usize,
    /// Tasks on the longest dependency chain.
    depth: usize,
}

impl ShapeStats {
    fn of(shape: &[Vec<usize>]) -> ShapeStats {
        let mut depth = vec![1usize; shape.len()];
        for (index, deps) in shape.iter().enumerate() {
            for &dep in deps {
                depth[index] = depth[index].max(depth[dep] + 1);
            }
        }
        ShapeStats {
            edges: shape.iter().map(Vec::len).sum(),
            roots: shape.iter().filter(|d| d.is_empty()).count(),
            single: shape.iter().filter(|d| d.len() == 1).count(),
            double: shape.iter().filter(|d| d.len() == 2).count(),
            depth: depth.iter().copied().max().unwrap_or(0),
        }
    }
}

/// The workflow file: every task is AI-kind on the `exec` runner and writes its own file;
/// dependencies by order number (1-based).
fn workflow_toml(shape: &[Vec<usize>]) -> String {
    let mut out = String::with_capacity(shape.len() * 120);
    out.push_str("goal = \"Isolation overhead: one file per task\"\n");
    out.push_str("runner = \"exec\"\n");
    for (index, deps) in shape.iter().enumerate() {
        let number = index + 1;
        out.push_str("\n[[tasks]]\n");
        let _ = writeln!(out, "id = \"task-{number:03}\"");
        let _ = writeln!(out, "title = \"Write file {number}\"");
        let _ = writeln!(out, "prompt = \"printf x > {}\"", task_file(number));
        if !deps.is_empty() {
            let refs: Vec<String> = deps.iter().map(|d| (d + 1).to_string()).collect();
            let _ = writeln!(out, "dependencies = [{}]", refs.join(", "));
        }
    }
    out
}
