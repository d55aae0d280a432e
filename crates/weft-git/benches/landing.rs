//! Landing benchmark: 100 non-conflicting task branches landed one by one onto an
//! integration branch of a 10,000-file repository, without any checkout, with
//! `Repo::land` — and the same merges done with the bare git commands (merge-tree,
//! commit-tree, update-ref), to show what `land` adds.
//!
//! The repository is generated with `git fast-import` (10,000 files in 100 folders, one
//! commit; every task branch changes one different file), then checked out once. Each
//! measured phase runs on its own copy of it, so neither phase benefits from objects the
//! other wrote. The phases alternate across rounds (land first, then raw first). Every
//! phase is checked: each landing is a two-parent merge and the final integration tree has
//! every task's change.
//!
//! A second part times a task's whole git lifecycle in a small repository (200 files):
//! cut a worktree and branch from the integration tip, write a file, commit it, land it,
//! remove the worktree and the branch — through weft-git, and with the bare git commands
//! (`worktree add -b`, `add -A`, `commit`, merge-tree, commit-tree, update-ref,
//! `worktree remove`, `branch -D`) — the git share of weft's per-task isolation overhead.
//!
//! Timing is reported, never asserted. `WEFT_BENCH_QUICK=1` shrinks it to 2,000 files, 20
//! branches, 10 lifecycles and one round.

#![allow(
    clippy::print_stdout,
    reason = "a benchmark reports its figures on stdout"
)]

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use weft_git::{Git, Landing, Oid};
use weft_testkit::Hermetic;

const INTEGRATION: &str = "refs/heads/weft/bench0001/integration";

#[derive(Debug, Clone, Copy)]
struct Size {
    files: usize,
    tasks: usize,
    rounds: usize,
}

fn main() {
    let quick = std::env::var_os("WEFT_BENCH_QUICK").is_some_and(|v| v == "1");
    let size = if quick {
        Size {
            files: 2_000,
            tasks: 20,
            rounds: 1,
        }
    } else {
        Size {
            files: 10_000,
            tasks: 100,
            rounds: 2,
        }
    };
    let env = Hermetic::new();
    let git = Git::new().env_clear().envs(env.vars());
    let version = git.check_version().expect("git 2.38 or newer");

    let template = env.root().join("template");
    let start = Instant::now();
    let base = build_template(&env, &template, size);
    println!(
        "landing without checkout  (git {version}; {} files, {} task branches, {} round{})",
        size.files,
        size.tasks,
        size.rounds,
        if size.rounds == 1 { "" } else { "s" }
    );
    println!(
        "setup: repository generated and checked out in {:.0} ms",
        ms(start.elapsed())
    );

    let floor = process_floor(&env, &template);
    println!(
        "git process floor (git rev-parse HEAD, 50 runs): median {:.2} ms",
        ms(median(&floor))
    );

    let mut land_samples = Vec::new();
    let mut raw_samples = Vec::new();
    let mut land_totals = Vec::new();
    let mut raw_totals = Vec::new();
    for round in 0..size.rounds {
        let phases: [bool; 2] = if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for use_land in phases {
            let name = format!("{}-{round}", if use_land { "land" } else { "raw" });
            let dir = env.root().join(&name);
            copy_tree(&template, &dir);
            let start = Instant::now();
            let times = if use_land {
                land_all(&git, &dir, &base, size.tasks)
            } else {
                raw_all(&env, &dir, &base, size.tasks)
            };
            let total = start.elapsed();
            verify(&env, &dir, &base, size.tasks);
            println!(
                "  round {round} {:<6} total {:>8.1} ms  median {:>6.2} ms/landing",
                if use_land { "land()" } else { "raw" },
                ms(total),
                ms(median(&times))
            );
            if use_land {
                land_samples.extend(times);
                land_totals.push(total);
            } else {
                raw_samples.extend(times);
                raw_totals.push(total);
            }
        }
    }

    let report = |label: &str, samples: &[Duration], totals: &[Duration]| {
        let mut line = format!("{label:<40}");
        let _ = write!(
            line,
            " median {:.2} ms  min {:.2} ms  p90 {:.2} ms  max {:.2} ms  per landing; total {:.1} ms for {} landings (nearest-rank median over rounds)",
            ms(median(samples)),
            ms(percentile(samples, 0.0)),
            ms(percentile(samples, 0.9)),
            ms(percentile(samples, 1.0)),
            ms(median(totals)),
            size.tasks
        );
        println!("{line}");
    };
    report("Repo::land (5 git processes):", &land_samples, &land_totals);
    report(
        "raw merge-tree + commit-tree + update-ref:",
        &raw_samples,
        &raw_totals,
    );
    println!(
        "ratio land()/raw: {:.2}x per landing (medians), {:.2}x in total",
        ms(median(&land_samples)) / ms(median(&raw_samples)),
        ms(median(&land_totals)) / ms(median(&raw_totals))
    );

    lifecycle(&env, &git, if quick { 10 } else { 50 }, size.rounds);
}

/// The whole git side of one isolated task, weft-git against the bare commands.
fn lifecycle(env: &Hermetic, git: &Git, tasks: usize, rounds: usize) {
    let template = env.root().join("small-template");
    build_template(
        env,
        &template,
        Size {
            files: 200,
            tasks: 0,
            rounds,
        },
    );
    println!(
        "task lifecycle, small repository (200 files, {tasks} tasks): worktree + branch, commit, land, remove"
    );
    let mut weft_samples = Vec::new();
    let mut raw_samples = Vec::new();
    for round in 0..rounds {
        let phases: [bool; 2] = if round % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for use_weft in phases {
            let name = format!("small-{}-{round}", if use_weft { "weft" } else { "raw" });
            let dir = env.root().join(&name);
            copy_tree(&template, &dir);
            let worktrees = env.root().join(format!("{name}-worktrees"));
            let times = if use_weft {
                lifecycle_weft(git, &dir, &worktrees, tasks)
            } else {
                lifecycle_raw(env, &dir, &worktrees, tasks)
            };
            let merges = git_out(
                env,
                &dir,
                &[
                    "rev-list",
                    "--count",
                    "--merges",
                    &format!("main..{INTEGRATION}"),
                ],
            );
            assert_eq!(merges.trim(), tasks.to_string(), "one merge per task");
            let left = git_out(env, &dir, &["worktree", "list", "--porcelain"]);
            assert_eq!(left.matches("worktree ").count(), 1, "worktrees removed");
            println!(
                "  round {round} {:<8} median {:>6.2} ms/task",
                if use_weft { "weft-git" } else { "raw" },
                ms(median(&times))
            );
            if use_weft {
                weft_samples.extend(times);
            } else {
                raw_samples.extend(times);
            }
        }
    }
    println!(
        "weft-git lifecycle (15 git processes):   median {:.2} ms  p90 {:.2} ms per task",
        ms(median(&weft_samples)),
        ms(percentile(&weft_samples, 0.9))
    );
    println!(
        "raw git lifecycle (9 git processes):     median {:.2} ms  p90 {:.2} ms per task",
        ms(median(&raw_samples)),
        ms(percentile(&raw_samples, 0.9))
    );
    println!(
        "ratio weft-git/raw: {:.2}x per task (medians)",
        ms(median(&weft_samples)) / ms(median(&raw_samples))
    );
}

fn lifecycle_weft(git: &Git, dir: &Path, worktrees: &Path, tasks: usize) -> Vec<Duration> {
    let repo = git.open(dir).expect("the repository opens");
    let mut times = Vec::with_capacity(tasks);
    for task in 0..tasks {
        let branch = task_branch(task);
        let path = worktrees.join(format!("{:03}-task", task + 1));
        let message = format!("weft: land task {}: bench", task + 1);
        let start = Instant::now();
        let tip = repo
            .ref_target(INTEGRATION)
            .expect("the ref reads")
            .expect("the ref exists");
        let worktree = repo.add_worktree(&path, &branch, &tip).expect("worktree");
        std::fs::write(worktree.path.join(format!("task{task}.txt")), "work\n").expect("write");
        let inside = repo.open_worktree(&worktree.path).expect("opens");
        inside
            .commit_all(&message, &[] as &[&str])
            .expect("commit")
            .expect("something to commit");
        let outcome = repo
            .land(INTEGRATION, &branch, &tip, &message)
            .expect("land");
        assert!(matches!(outcome, Landing::Landed { .. }), "{outcome:?}");
        repo.remove_worktree(&worktree.path, true).expect("remove");
        repo.delete_branch(&branch, true).expect("delete");
        times.push(start.elapsed());
    }
    times
}

fn lifecycle_raw(env: &Hermetic, dir: &Path, worktrees: &Path, tasks: usize) -> Vec<Duration> {
    let identity = ["-c", "user.name=weft", "-c", "user.email=weft@localhost"];
    let mut times = Vec::with_capacity(tasks);
    for task in 0..tasks {
        let branch = task_branch(task);
        let path = worktrees.join(format!("{:03}-task", task + 1));
        let path_text = path.to_string_lossy().into_owned();
        let message = format!("weft: land task {}: bench", task + 1);
        let start = Instant::now();
        let tip = git_out(env, dir, &["rev-parse", INTEGRATION])
            .trim()
            .to_owned();
        git_out(
            env,
            dir,
            &["worktree", "add", "-q", "-b", &branch, &path_text, &tip],
        );
        std::fs::write(path.join(format!("task{task}.txt")), "work\n").expect("write");
        git_out(env, &path, &["add", "-A"]);
        let mut commit = identity.to_vec();
        commit.extend(["commit", "-q", "-m", &message]);
        git_out(env, &path, &commit);
        let out = git_out(
            env,
            dir,
            &[
                "merge-tree",
                "--write-tree",
                "-z",
                "--name-only",
                &tip,
                &branch,
            ],
        );
        let tree = out.split('\0').next().expect("a tree id").to_owned();
        let mut commit_tree = identity.to_vec();
        commit_tree.extend([
            "commit-tree",
            &tree,
            "-p",
            &tip,
            "-p",
            &branch,
            "-m",
            &message,
        ]);
        let merge = git_out(env, dir, &commit_tree).trim().to_owned();
        git_out(env, dir, &["update-ref", INTEGRATION, &merge, &tip]);
        git_out(env, dir, &["worktree", "remove", "--force", &path_text]);
        git_out(env, dir, &["branch", "-q", "-D", &branch]);
        times.push(start.elapsed());
    }
    times
}

/// Generate the repository at `dir` with `git fast-import`: `main` with `files` files in
/// 100 folders, the integration branch at the same commit, and `tasks` branches each
/// changing one different file. Returns the base commit.
fn build_template(env: &Hermetic, dir: &Path, size: Size) -> Oid {
    std::fs::create_dir_all(dir).expect("the folder can be created");
    git_out(env, dir, &["init", "-q", "-b", "main"]);
    let mut stream = Vec::with_capacity(size.files * 300);
    let path = |i: usize| format!("src/mod{:02}/file{i:05}.txt", i % 100);
    let content = |i: usize, tag: &str| {
        let mut text = String::new();
        for line in 0..6 {
            let _ = writeln!(
                text,
                "file {i} line {line} {tag} lorem ipsum dolor sit amet"
            );
        }
        text
    };
    let data = |stream: &mut Vec<u8>, text: &str| {
        let _ = write!(stream, "data {}\n{text}\n", text.len());
    };
    for i in 0..size.files {
        let _ = writeln!(stream, "blob\nmark :{}", i + 1);
        data(&mut stream, &content(i, "base"));
    }
    let base_mark = size.files + 1;
    let ident = "Bench <bench@weft.invalid> 1700000000 +0000";
    let _ = write!(
        stream,
        "commit refs/heads/main\nmark :{base_mark}\nauthor {ident}\ncommitter {ident}\n"
    );
    data(&mut stream, "base: generated files");
    for i in 0..size.files {
        let _ = writeln!(stream, "M 100644 :{} {}", i + 1, path(i));
    }
    let _ = write!(stream, "\nreset {INTEGRATION}\nfrom :{base_mark}\n\n");
    for task in 0..size.tasks {
        let file = task * (size.files / size.tasks);
        let _ = writeln!(stream, "blob\nmark :{}", base_mark + 1 + task);
        data(&mut stream, &content(file, "changed by a task"));
        let _ = write!(
            stream,
            "commit refs/heads/{}\nauthor {ident}\ncommitter {ident}\n",
            task_branch(task)
        );
        data(&mut stream, &format!("task {task}"));
        let _ = write!(
            stream,
            "from :{base_mark}\nM 100644 :{} {}\n\n",
            base_mark + 1 + task,
            path(file)
        );
    }
    let mut child = env
        .command("git")
        .current_dir(dir)
        .args(["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("git fast-import starts");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(&stream)
        .expect("the stream is written");
    assert!(child.wait().expect("fast-import ends").success());
    git_out(env, dir, &["reset", "-q", "--hard", "main"]);
    git_out(env, dir, &["rev-parse", "main"])
        .trim()
        .parse()
        .expect("an object id")
}

fn task_branch(task: usize) -> String {
    format!("weft/bench0001/{:03}-task", task + 1)
}

fn land_all(git: &Git, dir: &Path, base: &Oid, tasks: usize) -> Vec<Duration> {
    let repo = git.open(dir).expect("the repository opens");
    let mut times = Vec::with_capacity(tasks);
    for task in 0..tasks {
        let branch = task_branch(task);
        let message = format!("weft: land task {}: bench", task + 1);
        let start = Instant::now();
        let outcome = repo
            .land(INTEGRATION, &branch, base, &message)
            .expect("landing works");
        times.push(start.elapsed());
        assert!(
            matches!(outcome, Landing::Landed { .. }),
            "task {task}: {outcome:?}"
        );
    }
    times
}

/// The same landings with the three git commands they need at the least, run directly.
fn raw_all(env: &Hermetic, dir: &Path, base: &Oid, tasks: usize) -> Vec<Duration> {
    let mut tip = base.to_string();
    let mut times = Vec::with_capacity(tasks);
    for task in 0..tasks {
        let branch = task_branch(task);
        let message = format!("weft: land task {}: bench", task + 1);
        let start = Instant::now();
        let out = git_out(
            env,
            dir,
            &[
                "merge-tree",
                "--write-tree",
                "-z",
                "--name-only",
                &tip,
                &branch,
            ],
        );
        let tree = out.split('\0').next().expect("a tree id").to_owned();
        let merge = git_out(
            env,
            dir,
            &[
                "-c",
                "user.name=weft",
                "-c",
                "user.email=weft@localhost",
                "commit-tree",
                &tree,
                "-p",
                &tip,
                "-p",
                &branch,
                "-m",
                &message,
            ],
        )
        .trim()
        .to_owned();
        git_out(env, dir, &["update-ref", INTEGRATION, &merge, &tip]);
        times.push(start.elapsed());
        tip = merge;
    }
    times
}

/// Every landing is a two-parent merge and every task's file changed.
fn verify(env: &Hermetic, dir: &Path, base: &Oid, tasks: usize) {
    let range = format!("{base}..{INTEGRATION}");
    let merges = git_out(env, dir, &["rev-list", "--count", "--merges", &range]);
    assert_eq!(merges.trim(), tasks.to_string(), "one merge per task");
    let changed = git_out(
        env,
        dir,
        &["diff", "--name-only", base.as_str(), INTEGRATION],
    );
    assert_eq!(changed.lines().count(), tasks, "every task's change landed");
    let status = git_out(env, dir, &["status", "--porcelain"]);
    assert!(status.is_empty(), "the checkout was not touched: {status}");
}

fn process_floor(env: &Hermetic, dir: &Path) -> Vec<Duration> {
    (0..50)
        .map(|_| {
            let start = Instant::now();
            git_out(env, dir, &["rev-parse", "HEAD"]);
            start.elapsed()
        })
        .collect()
}

fn copy_tree(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp starts");
    assert!(status.success(), "cp -a {from:?} {to:?}");
}

/// Run git in `dir` with the hermetic environment; panics on failure.
fn git_out(env: &Hermetic, dir: &Path, args: &[&str]) -> String {
    let out = env
        .command("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("LC_ALL", "C")
        .output()
        .expect("git starts");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn median(samples: &[Duration]) -> Duration {
    percentile(samples, 0.5)
}

/// Nearest-rank percentile (`0.0` is the minimum).
fn percentile(samples: &[Duration], p: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}
