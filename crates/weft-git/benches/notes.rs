//! The cost of a landing's evidence: its note (what `weft_engine::evidence::attach`
//! does: at a landing `Repo::set_note` over the handle's long-lived git processes, the
//! merge's tree and trailers being known from the commit it wrote; cold, as `repair` does,
//! one `git cat-file --batch` first) and its trailers, as the notes ref grows to 10, 100
//! and 1,000 notes.
//!
//! A chain of 1,000 landing-like merge commits (with weft's trailers) is generated with
//! `git fast-import`; then each gets its note, one by one, timed. The figures are the
//! median per note over the notes written while the ref held 1–10, 11–100 and 101–1,000
//! notes, so the curve is visible. The same is done on a copy of the repository with one
//! `git notes add` process per note (what weft did before), for comparison. The
//! trailers' cost is the merge commit's `commit-tree` with and without them.
//!
//! Timing is reported, never asserted. `WEFT_BENCH_QUICK=1` stops at 100 notes.

#![allow(
    clippy::print_stdout,
    reason = "a benchmark reports its figures on stdout"
)]

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use weft_core::Task;
use weft_core::note::landing_message;
use weft_git::{Git, Oid};
use weft_testkit::Hermetic;

const NOTES: &str = "refs/notes/weft";
const CHAIN: &str = "refs/heads/weft/bench0001/integration";
/// The sizes reported: the notes ref holds up to this many notes.
const SIZES: [usize; 3] = [10, 100, 1000];

fn main() {
    let quick = std::env::var_os("WEFT_BENCH_QUICK").is_some_and(|v| v == "1");
    let landings = if quick { 100 } else { 1000 };
    let env = Hermetic::new();
    let git = Git::new().env_clear().envs(env.vars());
    let version = git.check_version().expect("git 2.38 or newer");
    let template = env.root().join("template");
    let commits = build_chain(&env, &template, landings);
    println!("evidence notes per landing  (git {version}; {landings} landing commits)");
    let floor: Vec<Duration> = (0..30)
        .map(|_| {
            let start = Instant::now();
            git_out(&env, &template, &["rev-parse", "HEAD"]);
            start.elapsed()
        })
        .collect();
    println!(
        "git process floor (git rev-parse HEAD, 30 runs): median {:.2} ms",
        ms(median(&floor))
    );

    let weft_dir = env.root().join("weft");
    copy_tree(&template, &weft_dir);
    let repo = git.open(&weft_dir).expect("the repository opens");
    let note = sample_note();
    let mut trees = Vec::with_capacity(commits.len());
    let weft_times: Vec<Duration> = commits
        .iter()
        .map(|commit| {
            let start = Instant::now();
            let object = repo
                .commit_objects(std::slice::from_ref(commit))
                .expect("the commit reads");
            let text = note.replace("TREE", object[0].tree.as_str());
            repo.set_note(NOTES, commit, &text)
                .expect("the note is written");
            let elapsed = start.elapsed();
            trees.push(object[0].tree.clone());
            elapsed
        })
        .collect();

    // At a landing the merge's tree and trailers are known (weft wrote the merge and
    // remembers it): the note is `set_note` alone.
    let landing_dir = env.root().join("landing");
    copy_tree(&template, &landing_dir);
    let landing_repo = git.open(&landing_dir).expect("the repository opens");
    let landing_times: Vec<Duration> = commits
        .iter()
        .zip(&trees)
        .map(|(commit, tree)| {
            let start = Instant::now();
            let text = note.replace("TREE", tree.as_str());
            landing_repo
                .set_note(NOTES, commit, &text)
                .expect("the note is written");
            start.elapsed()
        })
        .collect();
    let shown = git_out(
        &env,
        &landing_dir,
        &[
            "notes",
            "--ref",
            NOTES,
            "show",
            commits[commits.len() / 2].as_str(),
        ],
    );
    assert!(
        shown.contains(trees[commits.len() / 2].as_str()),
        "git notes show finds the note"
    );
    let written = repo.notes_of(NOTES, &commits).expect("the notes read");
    assert!(
        written.iter().all(Option::is_some),
        "every commit has its note"
    );

    // What a note cost before the long-lived processes: one `git notes add` per note
    // (with the `rev-parse` of the tree the note names, as the note needs it).
    let one_shot_dir = env.root().join("one-shot");
    copy_tree(&template, &one_shot_dir);
    let one_shot_times: Vec<Duration> = commits
        .iter()
        .map(|commit| {
            let start = Instant::now();
            one_shot_note(&env, &one_shot_dir, commit, &note);
            start.elapsed()
        })
        .collect();
    let listed = git_out(&env, &one_shot_dir, &["notes", "--ref", NOTES, "list"]);
    assert_eq!(
        listed.lines().count(),
        commits.len(),
        "every one-shot note is there"
    );

    println!("per note, median (min, max) while the notes ref held:");
    let mut from = 0;
    for size in SIZES.into_iter().filter(|&s| s <= landings) {
        let window = |times: &[Duration]| {
            let part = &times[from..size];
            format!(
                "{:>6.2} ms ({:.2}, {:.2})",
                ms(median(part)),
                ms(percentile(part, 0.0)),
                ms(percentile(part, 1.0))
            )
        };
        println!(
            "  {:>5}–{:<5} notes  at a landing (pipes) {}   cold (cat-file + pipes) {}   one git notes add {}",
            from + 1,
            size,
            window(&landing_times),
            window(&weft_times),
            window(&one_shot_times)
        );
        from = size;
    }
    println!(
        "ratio one-shot/landing over all notes: {:.2}x (medians; cold/landing {:.2}x)",
        ms(median(&one_shot_times)) / ms(median(&landing_times)),
        ms(median(&weft_times)) / ms(median(&landing_times))
    );

    trailers(&env, &template, &commits);
}

/// The trailers' cost: the same merge commit written with weft's subject alone and with
/// the subject and trailers.
fn trailers(env: &Hermetic, dir: &Path, commits: &[Oid]) {
    let mut task = Task::new("t-0001", "Bench a landing");
    task.order = 1;
    let with = landing_message(&"p".repeat(32), &task, &"a".repeat(32));
    let without = format!("weft: land task 1: {}", task.title);
    let tip = commits.last().expect("a commit").as_str();
    let tree = git_out(env, dir, &["rev-parse", &format!("{tip}^{{tree}}")]);
    let tree = tree.trim();
    let time = |message: &str| -> Vec<Duration> {
        (0..30)
            .map(|_| {
                let start = Instant::now();
                git_out(env, dir, &["commit-tree", tree, "-p", tip, "-m", message]);
                start.elapsed()
            })
            .collect()
    };
    let plain = time(&without);
    let trailed = time(&with);
    let start = Instant::now();
    for _ in 0..1000 {
        std::hint::black_box(landing_message(&"p".repeat(32), &task, &"a".repeat(32)));
    }
    let compose = start.elapsed() / 1000;
    println!(
        "trailers: commit-tree with them {:.2} ms, without {:.2} ms (medians of 30; {} bytes more); composing the message {:.1} µs",
        ms(median(&trailed)),
        ms(median(&plain)),
        with.len() - without.len(),
        compose.as_secs_f64() * 1e6
    );
}

/// A note of a realistic size (a passing agent with two checks).
fn sample_note() -> String {
    let mut text = String::from(
        r#"{"version":1,"tree":"TREE","plan":"pppppppppppppppppppppppppppppppp","run":"bench001","task":{"id":"t","order":1,"title":"Bench a landing"},"attempt":{"id":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa","number":1},"runner":"claude-code","model":null,"effort":null,"mode":null,"marker":{"found_in":"both","view":"raw"},"verdict":{"outcome":"pass","reason":"Passed: the completion marker was seen in the agent's output; all 2 checks passed.","decided_at":1700000000000},"checks":["#,
    );
    for (i, name) in [
        "completion_marker",
        "exit_code",
        "check:cargo test",
        "check:cargo fmt --check",
    ]
    .iter()
    .enumerate()
    {
        if i > 0 {
            text.push(',');
        }
        let _ = write!(
            text,
            r#"{{"name":"{name}","passed":true,"skipped":false,"exit_code":0,"duration_ms":1234,"detail":"exited with code 0"}}"#
        );
    }
    text.push_str(r#"],"verification":null,"usage":{"input_tokens":12345,"output_tokens":2345,"cost_usd":0.1234},"started_at":1700000000000,"ended_at":1700000100000,"transcript":"/home/u/.claude/projects/x/y.jsonl"}"#);
    text
}

/// The way weft wrote a note before: one `git notes add -f -F -` process.
fn one_shot_note(env: &Hermetic, dir: &Path, commit: &Oid, note: &str) {
    let tree = git_out(
        env,
        dir,
        &["rev-parse", &format!("{}^{{tree}}", commit.as_str())],
    );
    git_in(
        env,
        dir,
        &[
            "notes",
            "--ref",
            NOTES,
            "add",
            "-f",
            "-F",
            "-",
            commit.as_str(),
        ],
        note.replace("TREE", tree.trim()).as_bytes(),
    );
}

/// A repository with a chain of `count` merge commits (each with weft's trailers) on
/// `CHAIN`, every one changing its own file; their ids, oldest first.
fn build_chain(env: &Hermetic, dir: &Path, count: usize) -> Vec<Oid> {
    std::fs::create_dir_all(dir).expect("the folder can be created");
    git_out(env, dir, &["init", "-q", "-b", "main"]);
    let ident = "Bench <bench@weft.invalid> 1700000000 +0000";
    let mut stream = Vec::new();
    let data = |stream: &mut Vec<u8>, text: &str| {
        let _ = write!(stream, "data {}\n{text}\n", text.len());
    };
    let _ = write!(
        stream,
        "commit refs/heads/main\nmark :1\nauthor {ident}\ncommitter {ident}\n"
    );
    data(&mut stream, "base");
    let _ = writeln!(stream, "M 100644 inline README.md");
    data(&mut stream, "bench\n");
    let _ = write!(stream, "\nreset {CHAIN}\nfrom :1\n\n");
    for i in 0..count {
        let side = 2 + 2 * i;
        let merge = side + 1;
        let _ = write!(
            stream,
            "commit refs/heads/side\nmark :{side}\nauthor {ident}\ncommitter {ident}\n"
        );
        data(&mut stream, &format!("task {i}"));
        let _ = write!(stream, "from :1\nM 100644 inline f{i}.txt\n");
        data(&mut stream, &format!("{i}\n"));
        let mut task = Task::new(format!("t-{i}"), format!("Task {i}"));
        task.order = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let message = landing_message(&"p".repeat(32), &task, &format!("{i:032x}"));
        let _ = write!(
            stream,
            "\ncommit {CHAIN}\nmark :{merge}\nauthor {ident}\ncommitter {ident}\n"
        );
        data(&mut stream, &message);
        let _ = write!(stream, "merge :{side}\nM 100644 inline f{i}.txt\n");
        data(&mut stream, &format!("{i}\n"));
        stream.push(b'\n');
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
        .expect("fast-import reads its stream");
    assert!(
        child.wait().expect("fast-import ends").success(),
        "fast-import"
    );
    git_out(
        env,
        dir,
        &["rev-list", "--first-parent", "--reverse", CHAIN],
    )
    .lines()
    .skip(1)
    .map(|line| Oid::parse(line).expect("an object id"))
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

fn git_out(env: &Hermetic, dir: &Path, args: &[&str]) -> String {
    git_in(env, dir, args, b"")
}

fn git_in(env: &Hermetic, dir: &Path, args: &[&str], input: &[u8]) -> String {
    let mut child = env
        .command("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=Bench",
            "-c",
            "user.email=bench@weft.invalid",
        ])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("git starts");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(input)
        .expect("git reads its input");
    let out = child.wait_with_output().expect("git ends");
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
