//! Whole runs with the fake agent standing in for the agent CLIs (as `claude` on PATH).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{Weft, read};

/// One line of the fake agent's `record` file.
#[derive(Debug, Clone)]
pub struct Record {
    pub event: String,
    pub pid: u64,
    pub task: String,
    pub ts: u64,
    pub prompt: String,
}

/// The diamond: root → left, right → join → after, plus an independent side task.
/// `extra` adds directives per task id (before the default `marker`).
pub fn diamond(weft: &Weft, extra: &[(&str, &str)]) {
    let record = weft.env.root().join("record.jsonl");
    let tasks = [
        ("root", "Lay the foundation", vec![], "0.3"),
        ("left", "Build the left side", vec!["root"], "0.3"),
        ("right", "Build the right side", vec!["root"], "0.3"),
        ("join", "Join both sides", vec!["left", "right"], "0.2"),
        ("after", "Polish the joined work", vec!["join"], "0.1"),
        ("side", "Tidy an unrelated corner", vec![], "0.1"),
    ];
    let mut text = String::from("goal = \"Build a diamond\"\nrunner = \"claude-code\"\n");
    for (id, title, deps, sleep) in tasks {
        let extra: Vec<&str> = extra
            .iter()
            .filter(|(t, _)| *t == id)
            .map(|(_, d)| *d)
            .collect();
        let mut prompt = format!(
            "Do the {id} part.\n@fake record {}\n@fake sleep {sleep}\n@fake write out/{id}.txt {id}\n",
            record.display()
        );
        for directive in &extra {
            prompt.push_str(&format!("@fake {directive}\n"));
        }
        if !extra.iter().any(|d| d.starts_with("exit ") || *d == "hang") {
            prompt.push_str(&format!("@fake say finished {id}\n@fake marker\n"));
        }
        let deps: Vec<String> = deps.iter().map(|d| format!("\"{d}\"")).collect();
        text.push_str(&format!(
            "\n[[tasks]]\nid = \"{id}\"\ntitle = \"{title}\"\ndependencies = [{}]\nprompt = '''\n{prompt}'''\n",
            deps.join(", ")
        ));
    }
    weft.write("diamond.toml", &text);
    weft.ok(&["plan", "--file", "diamond.toml"]);
}

pub fn records(weft: &Weft) -> Vec<Record> {
    let path = weft.env.root().join("record.jsonl");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let mut by_pid: BTreeMap<u64, String> = BTreeMap::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let value: Value = serde_json::from_str(line).unwrap();
        let pid = value["pid"].as_u64().unwrap();
        let prompt = value["prompt"].as_str().unwrap_or("").to_owned();
        if value["event"] == "start" {
            let task = prompt
                .lines()
                .find_map(|l| {
                    l.strip_prefix("Do the ")
                        .and_then(|r| r.strip_suffix(" part."))
                })
                .unwrap_or("?")
                .to_owned();
            by_pid.insert(pid, task);
        }
        out.push(Record {
            event: value["event"].as_str().unwrap().to_owned(),
            pid,
            task: by_pid.get(&pid).cloned().unwrap_or_default(),
            ts: value["ts_ms"].as_u64().unwrap(),
            prompt,
        });
    }
    out
}

pub fn statuses(weft: &Weft) -> BTreeMap<String, String> {
    weft.status_json()["plan"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_owned(),
                t["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn starts(records: &[Record], task: &str) -> usize {
    records
        .iter()
        .filter(|r| r.event == "start" && r.task == task)
        .count()
}

#[test]
fn the_diamond_runs_in_order_within_the_cap() {
    let weft = Weft::with_agents();
    diamond(&weft, &[]);
    let run = weft.ok(&["run", "--parallel", "2"]);
    assert!(
        run.stdout.contains("6 completed, 0 skipped, 0 failed"),
        "{}",
        run.stdout
    );
    let records = records(&weft);

    // The cap: never more than 2 agents alive at once.
    let mut events: Vec<(u64, i32)> = records
        .iter()
        .map(|r| (r.ts, if r.event == "start" { 1 } else { -1 }))
        .collect();
    events.sort_by_key(|&(ts, delta)| (ts, delta));
    let mut alive = 0;
    for (_, delta) in events {
        alive += delta;
        assert!(alive <= 2, "more than 2 agents ran at once: {records:?}");
    }
    // Order: no task starts before each dependency's agent ended.
    let end_of = |task: &str| {
        records
            .iter()
            .find(|r| r.event == "end" && r.task == task)
            .unwrap()
            .ts
    };
    let start_of = |task: &str| {
        records
            .iter()
            .find(|r| r.event == "start" && r.task == task)
            .unwrap()
            .ts
    };
    for (task, deps) in [
        ("left", &["root"][..]),
        ("right", &["root"]),
        ("join", &["left", "right"]),
        ("after", &["join"]),
    ] {
        for dep in deps {
            assert!(
                start_of(task) >= end_of(dep),
                "{task} started before {dep} ended"
            );
        }
    }
    for task in ["root", "left", "right", "join", "after", "side"] {
        assert_eq!(starts(&records, task), 1, "{task} ran more than once");
        assert!(weft.work().join(format!("out/{task}.txt")).exists());
    }

    // The context `join` was handed: plan map, both direct dependencies' outputs (defused),
    // not root's, then its prompt and the marker paragraph.
    let handed = &records
        .iter()
        .find(|r| r.event == "start" && r.task == "join")
        .unwrap()
        .prompt;
    assert!(
        handed.contains("finished left") && handed.contains("finished right"),
        "{handed}"
    );
    assert!(
        !handed.contains("finished root"),
        "an indirect dependency's output was handed on"
    );
    let flat: String = handed.chars().filter(|c| !c.is_whitespace()).collect();
    let live_tokens = flat.matches("WEFT_DONE_").count();
    assert_eq!(
        live_tokens, 1,
        "only the instruction names the prefix: {handed}"
    );
    let mut settings = insta::Settings::clone_current();
    settings.add_filter(r"`[0-9a-f]{16}`", "`[MARKER-ID]`");
    settings.add_filter(
        &regex_escape(&weft.env.root().display().to_string()),
        "[ROOT]",
    );
    settings.bind(|| insta::assert_snapshot!("join_handed_context", handed));

    // Status shows every task completed and the attempts are recorded.
    let status = weft.status_json();
    for task in status["plan"]["tasks"].as_array().unwrap() {
        assert_eq!(task["status"], "completed");
        assert_eq!(task["attempts"], 1);
        assert_eq!(task["verdict"]["outcome"], "pass");
    }
    assert_eq!(status["plan"]["status"], "completed");
}

fn regex_escape(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '/' || c == '_' || c == '-' {
                c.to_string()
            } else {
                format!("\\{c}")
            }
        })
        .collect()
}

#[test]
fn a_failure_blocks_exactly_its_descendants_and_retry_then_run_completes() {
    let weft = Weft::with_agents();
    diamond(&weft, &[("left", "require flag-left")]);
    let run = weft.fails(&["run"], 1);
    assert!(
        run.stderr.contains("not every task completed"),
        "{}",
        run.stderr
    );
    let after_first = statuses(&weft);
    let expected: BTreeMap<String, String> = [
        ("root", "completed"),
        ("left", "failed"),
        ("right", "completed"),
        ("join", "blocked"),
        ("after", "blocked"),
        ("side", "completed"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_owned(), b.to_owned()))
    .collect();
    assert_eq!(after_first, expected);
    let status = weft.ok(&["status"]).stdout;
    assert!(
        status.contains("#2 failed: Failed: the agent exited cleanly (code 0) but did not print its completion marker"),
        "{status}"
    );

    // Retrying while nothing changed is allowed; make the task able to pass, then retry.
    weft.write("flag-left", "");
    let retry = weft.ok(&["retry", "left"]);
    assert!(
        retry.stdout.contains("released blocked tasks: join, after"),
        "{}",
        retry.stdout
    );
    weft.ok(&["run"]);
    assert!(statuses(&weft).values().all(|s| s == "completed"));
    let records = records(&weft);
    for (task, runs) in [
        ("root", 1),
        ("left", 2),
        ("right", 1),
        ("side", 1),
        ("join", 1),
        ("after", 1),
    ] {
        assert_eq!(starts(&records, task), runs, "{task}");
    }
}

#[test]
fn halt_on_failure_starts_nothing_new_and_the_next_run_continues_without_rerunning_failures() {
    let weft = Weft::with_agents();
    // With one slot, root runs, then left fails; nothing else may start after that.
    diamond(
        &weft,
        &[
            ("left", "require flag-left"),
            ("right", "require flag-right"),
        ],
    );
    weft.fails(&["run", "--parallel", "1", "--halt-on-failure"], 1);
    let first = statuses(&weft);
    assert_eq!(first["root"], "completed");
    assert_eq!(first["left"], "failed");
    assert_eq!(first["right"], "pending", "{first:?}");
    assert_eq!(first["side"], "pending", "{first:?}");

    // A plain `weft run` continues: right and side run, left stays failed (not re-run).
    weft.write("flag-right", "");
    weft.fails(&["run"], 1);
    let second = statuses(&weft);
    assert_eq!(second["left"], "failed");
    assert_eq!(second["right"], "completed");
    assert_eq!(second["side"], "completed");
    assert_eq!(starts(&records(&weft), "left"), 1);

    // --retry-failed puts it back in line.
    weft.write("flag-left", "");
    weft.ok(&["run", "--retry-failed"]);
    assert!(statuses(&weft).values().all(|s| s == "completed"));
}

#[test]
fn an_engine_killed_mid_run_is_finished_by_the_next_run() {
    let weft = Weft::with_agents();
    diamond(&weft, &[("left", "hang-unless go")]);
    let mut engine = weft.command(&["run"]);
    engine.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = engine.spawn().unwrap();
    // Wait until root is done and left is running.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let s = statuses(&weft);
        if s["root"] == "completed" && s["left"] == "in_progress" && s["right"] == "completed" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the run never reached the middle: {s:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let hung_pid = records(&weft)
        .iter()
        .find(|r| r.event == "start" && r.task == "left")
        .unwrap()
        .pid;
    nix_kill(child.id(), 9);
    child.wait().unwrap();
    assert!(
        Path::new(&format!("/proc/{hung_pid}")).exists(),
        "the agent should outlive a kill -9 of weft"
    );

    weft.write("go", "");
    let run = weft.ok(&["run"]);
    assert!(
        run.stdout
            .contains("was left running by an engine that is gone"),
        "{}",
        run.stdout
    );
    assert!(statuses(&weft).values().all(|s| s == "completed"));
    assert!(
        !process_running(hung_pid),
        "the leftover agent of the crashed run was not killed"
    );
    let records = records(&weft);
    for (task, runs) in [
        ("root", 1),
        ("right", 1),
        ("left", 2),
        ("join", 1),
        ("after", 1),
    ] {
        assert_eq!(starts(&records, task), runs, "{task}");
    }
}

#[test]
fn ctrl_c_stops_the_running_agents_and_the_next_run_continues() {
    let weft = Weft::with_agents();
    diamond(&weft, &[("left", "hang-unless go")]);
    let mut engine = weft.command(&["run"]);
    engine.stdout(Stdio::null()).stderr(Stdio::piped());
    let child = engine.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while statuses(&weft)["left"] != "in_progress" {
        assert!(Instant::now() < deadline, "{:?}", statuses(&weft));
        std::thread::sleep(Duration::from_millis(50));
    }
    let hung_pid = records(&weft)
        .iter()
        .find(|r| r.event == "start" && r.task == "left")
        .unwrap()
        .pid;
    // SIGINT, as Ctrl-C sends it.
    nix_kill(child.id(), 2);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
    assert!(
        !process_running(hung_pid),
        "Ctrl-C left the agent {hung_pid} running"
    );
    assert_eq!(statuses(&weft)["left"], "interrupted");

    weft.write("go", "");
    weft.ok(&["run"]);
    assert!(statuses(&weft).values().all(|s| s == "completed"));
}

/// Start `weft run` in the background and wait until `task` is running.
fn start_engine_until_running(weft: &Weft, task: &str) -> std::process::Child {
    let mut engine = weft.command(&["run"]);
    engine.stdout(Stdio::null()).stderr(Stdio::null());
    let child = engine.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while statuses(weft)[task] != "in_progress" {
        assert!(
            Instant::now() < deadline,
            "{task} never started: {:?}",
            statuses(weft)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child
}

fn nix_kill(pid: u32, signal: i32) {
    let status = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

/// Alive and not a zombie.
fn process_running(pid: u64) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

#[test]
fn a_hung_agent_is_killed_at_its_timeout() {
    let weft = Weft::with_agents();
    weft.write("plan.toml", "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"Hang\"\nprompt = \"@fake hang\"\n");
    weft.ok(&["plan", "--file", "plan.toml"]);
    let started = Instant::now();
    let run = weft.fails(&["-c", "task_timeout=1s", "run"], 1);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    assert!(run.stdout.contains("timed out"), "{}", run.stdout);
    let status = weft.status_json();
    assert_eq!(status["plan"]["tasks"][0]["status"], "failed");
    assert_eq!(
        status["plan"]["tasks"][0]["verdict"]["reason"],
        "timed out: the task_timeout setting = 1s"
    );
}

#[test]
fn a_flooding_agent_keeps_weft_memory_bounded() {
    let weft = Weft::with_agents();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"Flood\"\nprompt = '''\n@fake flood 150m\n@fake marker\n'''\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let mut command = weft.command(&["run"]);
    command.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = command.spawn().unwrap();
    let mut peak_kb = 0u64;
    while child.try_wait().unwrap().is_none() {
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{}/status", child.id())) {
            for line in status.lines() {
                if let Some(rest) = line.strip_prefix("VmHWM:") {
                    let kb: u64 = rest
                        .trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse()
                        .unwrap_or(0);
                    peak_kb = peak_kb.max(kb);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(child.wait().unwrap().success());
    assert!(peak_kb > 0, "never measured");
    assert!(
        peak_kb < 100 * 1024,
        "weft peaked at {peak_kb} kB while the agent flooded 150 MB"
    );
    let log = weft.ok(&["log", "1"]).stdout;
    assert!(log.len() < 70 * 1024 * 1024, "the log is capped");
}

#[test]
fn markers_copied_from_other_tasks_never_pass() {
    let weft = Weft::with_agents();
    diamond(&weft, &[("join", "copy-markers\n@fake exit 0")]);
    weft.fails(&["run"], 1);
    let s = statuses(&weft);
    assert_eq!(s["join"], "failed");
    assert_eq!(s["after"], "blocked");
}

#[test]
fn runners_that_misbehave_fail_with_a_clear_reason() {
    let weft = Weft::with_agents();
    // A plain runner (no stream parsing) that is the fake agent under another name.
    let fake = weft_testkit::fake::binary();
    weft.write(
        ".weft/runners/plainfake.toml",
        &format!(
            "name = \"plainfake\"\ncommand = \"{}\"\nargs = [\"--fake-as\", \"plain\"]\nprompt_via = \"stdin\"\nstream = \"plain\"\n",
            fake.display()
        ),
    );
    let plan = "goal = \"g\"\nrunner = \"plainfake\"\n\
        [[tasks]]\nid = \"quits\"\ntitle = \"Exits at once\"\nprompt = \"@fake exit 0\"\n\
        [[tasks]]\nid = \"garbage\"\ntitle = \"Prints binary garbage then the marker\"\nprompt = '''\n@fake garbage 20000\n@fake marker\n'''\n\
        [[tasks]]\nid = \"no-newline\"\ntitle = \"Prints the marker with no newline\"\nprompt = \"@fake marker-raw\"\n\
        [[tasks]]\nid = \"crash\"\ntitle = \"Crashes\"\nprompt = \"@fake crash\"\n";
    weft.write("plan.toml", plan);
    weft.ok(&["plan", "--file", "plan.toml"]);
    weft.fails(&["run"], 1);
    let status = weft.status_json();
    let tasks = status["plan"]["tasks"].as_array().unwrap();
    let by_id = |id: &str| tasks.iter().find(|t| t["id"] == id).unwrap();
    assert_eq!(by_id("quits")["status"], "failed");
    assert!(
        by_id("quits")["verdict"]["reason"]
            .as_str()
            .unwrap()
            .contains("did not print its completion marker")
    );
    assert_eq!(by_id("garbage")["status"], "completed");
    assert_eq!(by_id("no-newline")["status"], "completed");
    assert_eq!(by_id("crash")["status"], "failed");
}

#[test]
fn a_missing_or_broken_runner_refuses_the_run_and_names_the_task() {
    let weft = Weft::new();
    weft.write("plan.toml", "goal = \"g\"\n[[tasks]]\ntitle = \"Use claude\"\nprompt = \"p\"\nrunner = \"claude-code\"\n");
    weft.ok(&["plan", "--file", "plan.toml"]);
    let missing = weft.fails(&["run"], 1);
    assert!(missing.stderr.contains("task #1 \"use-claude\" uses the runner \"claude-code\", which is not available: claude was not found on PATH"), "{}", missing.stderr);

    // Not executable.
    weft.write("bin/notexec", "#!/bin/sh\necho hi\n");
    weft.write(
        ".weft/runners/notexec.toml",
        &format!(
            "name = \"notexec\"\ncommand = \"{}\"\nargs = [\"{{{{prompt}}}}\"]\n",
            weft.work().join("bin/notexec").display()
        ),
    );
    weft.ok(&["task", "edit", "1", "--runner", "notexec"]);
    let not_exec = weft.fails(&["run"], 1);
    assert!(
        not_exec
            .stderr
            .contains("\"notexec\", which is not available"),
        "{}",
        not_exec.stderr
    );

    // A manifest with an unknown variable is skipped with a warning; the run names the runner.
    weft.write(
        ".weft/runners/broken.toml",
        "name = \"broken\"\ncommand = \"sh\"\nargs = [\"{{promt}}\"]\n",
    );
    weft.write(
        ".weft/runners/unclosed.toml",
        "name = \"unclosed\"\ncommand = \"sh\"\nargs = [\"{{if model}}\", \"{{prompt}}\"]\n",
    );
    let runners = weft.ok(&["runners"]);
    assert!(runners.stderr.contains("broken.toml"), "{}", runners.stderr);
    assert!(
        runners.stderr.contains("unclosed.toml"),
        "{}",
        runners.stderr
    );
    weft.ok(&["task", "edit", "1", "--runner", "broken"]);
    let unknown = weft.fails(&["run"], 1);
    assert!(
        unknown
            .stderr
            .contains("uses the runner \"broken\", which weft does not know"),
        "{}",
        unknown.stderr
    );
    assert!(
        statuses(&weft).values().all(|s| s == "pending"),
        "a refused run changed tasks"
    );
}

#[test]
fn control_commands_refuse_unknown_and_running_tasks() {
    let weft = Weft::with_agents();
    diamond(&weft, &[("root", "hang-unless go")]);
    let unknown = weft.fails(&["retry", "nope"], 1);
    assert!(
        unknown.stderr.contains("the plan has no task \"nope\""),
        "{}",
        unknown.stderr
    );
    let no_run = weft.fails(&["stop"], 1);
    assert!(
        no_run.stderr.contains("no run of this plan is active"),
        "{}",
        no_run.stderr
    );

    let mut child = start_engine_until_running(&weft, "root");
    let running = weft.fails(&["retry", "root"], 1);
    assert!(
        running.stderr.contains("task #1 \"root\" is running"),
        "{}",
        running.stderr
    );
    assert!(
        running.stderr.contains("weft cancel 1"),
        "{}",
        running.stderr
    );
    // A second engine on the same plan is refused and names the first one's pid.
    let second = weft.fails(&["run"], 1);
    assert!(
        second
            .stderr
            .contains(&format!("another weft process (pid {})", child.id())),
        "{}",
        second.stderr
    );
    // Cancel the running task from this terminal: the engine kills it.
    let cancel = weft.ok(&["cancel", "root"]);
    assert!(
        cancel.stdout.contains("asked the engine"),
        "{}",
        cancel.stdout
    );
    weft.ok(&["stop"]);
    let status = child.wait().unwrap();
    assert!(!status.success());
    let s = statuses(&weft);
    assert_eq!(s["root"], "cancelled");
    assert_eq!(s["left"], "blocked");
}

#[test]
fn prompt_previews_the_launch_and_masks_secrets() {
    let weft = Weft::with_agents();
    diamond(&weft, &[]);
    let mut command = weft.command(&["prompt", "join"]);
    command.env("MY_API_KEY", "sk-very-secret-value");
    let run = weft.run_command(&["prompt", "join"], command);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("command: claude -p --output-format stream-json --verbose --session-id"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("--permission-mode bypassPermissions"),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("prompt:  via stdin"), "{}", run.stdout);
    assert!(run.stdout.contains("← you are here"), "{}", run.stdout);
    assert!(!run.stdout.contains("sk-very-secret-value"));
    let _ = read;
}

#[test]
fn refused_tool_calls_tokens_and_cost_show_in_status() {
    let weft = Weft::with_agents();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"Try something risky\"\nprompt = '''\n@fake deny Bash rm -rf /\n@fake usage 1000 200 0.25\n@fake marker\n'''\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let run = weft.ok(&["run"]);
    assert!(
        run.stdout.contains("[1 refused tool call(s)]"),
        "{}",
        run.stdout
    );
    let status = weft.ok(&["status"]).stdout;
    assert!(
        status.contains("#1 was refused 1 tool call(s): Bash"),
        "{status}"
    );
    assert!(
        status.contains("#1 tokens 1000 in / 200 out, $0.2500"),
        "{status}"
    );
    assert!(
        status.contains("total: tokens 1000 in / 200 out, $0.2500"),
        "{status}"
    );
    let json = weft.status_json();
    let task = &json["plan"]["tasks"][0];
    assert_eq!(task["input_tokens"], 1000);
    assert_eq!(task["denials"][0]["tool"], "Bash");
}

#[test]
fn secrets_in_the_environment_never_reach_the_log() {
    let weft = Weft::with_agents();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"Leak\"\nprompt = '''\n@fake run echo \"key is $SERVICE_API_KEY\"\n@fake say the key is sk-live-0123456789\n@fake marker\n'''\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let mut command = weft.command(&["run", "--json"]);
    command.env("SERVICE_API_KEY", "sk-live-0123456789");
    let run = weft.run_command(&["run", "--json"], command);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !run.stdout.contains("sk-live-0123456789"),
        "an event carried the secret"
    );
    let log = weft.ok(&["log", "1"]).stdout;
    assert!(log.contains("****"), "{log}");
    assert!(
        !log.contains("sk-live-0123456789"),
        "the log carried the secret"
    );
}

#[test]
fn log_follow_and_status_watch_track_a_run_from_another_terminal() {
    let weft = Weft::with_agents();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"Slow\"\nprompt = '''\n@fake say starting\n@fake hang-unless go\n@fake say wrapping up\n@fake marker\n'''\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let mut child = start_engine_until_running(&weft, "slow");
    let mut follow = weft.command(&["log", "1", "--follow"]);
    follow.stdout(Stdio::piped());
    let follow = follow.spawn().unwrap();
    let mut watch = weft.command(&["status", "--watch"]);
    watch.stdout(Stdio::piped());
    let watch = watch.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    weft.write("go", "");
    assert!(child.wait().unwrap().success());
    let followed = String::from_utf8(follow.wait_with_output().unwrap().stdout).unwrap();
    assert!(
        followed.contains("starting") && followed.contains("wrapping up"),
        "{followed}"
    );
    let watched = String::from_utf8(watch.wait_with_output().unwrap().stdout).unwrap();
    assert!(watched.contains("in_progress"), "{watched}");
    assert!(watched.contains("completed"), "{watched}");
    assert!(
        watched.trim_end().ends_with("(no run is active)"),
        "{watched}"
    );
}

#[test]
fn slot_caps_are_validated() {
    let weft = Weft::with_agents();
    diamond(&weft, &[]);
    let zero = weft.fails(&["run", "--parallel", "0"], 2);
    assert!(
        zero.stderr.contains("0 is not in 1..=64"),
        "{}",
        zero.stderr
    );
    // A bad `-c` is a usage error, like a bad `--parallel`.
    let word = weft.fails(&["-c", "parallel=abc", "run"], 2);
    assert!(
        word.stderr.contains("must be a whole number from 1 to 64"),
        "{}",
        word.stderr
    );
    let big = weft.fails(&["run", "--parallel", "65"], 2);
    assert!(big.stderr.contains("65 is not in 1..=64"), "{}", big.stderr);
}

#[test]
fn complete_skip_and_uncomplete_move_tasks_by_hand() {
    let weft = Weft::with_agents();
    diamond(&weft, &[("left", "require flag-left")]);
    weft.fails(&["run"], 1);
    // Skipping the failed task counts as met: its dependents are released and run.
    let skip = weft.ok(&["skip", "left"]);
    assert!(
        skip.stdout.contains("released blocked tasks: join, after"),
        "{}",
        skip.stdout
    );
    weft.ok(&["run"]);
    let s = statuses(&weft);
    assert_eq!(s["left"], "skipped");
    assert_eq!(s["join"], "completed");
    let uncomplete = weft.ok(&["uncomplete", "after"]);
    assert!(
        uncomplete.stdout.contains("pending again"),
        "{}",
        uncomplete.stdout
    );
    let complete = weft.ok(&["complete", "after"]);
    assert!(
        complete
            .stdout
            .contains("marked complete (no verification ran)"),
        "{}",
        complete.stdout
    );
    let verdict = &weft.status_json()["plan"]["tasks"][4]["verdict"];
    assert_eq!(verdict["checks"][0]["name"], "manual");
    let again = weft.fails(&["complete", "after"], 1);
    assert!(
        again
            .stderr
            .contains("is completed: it is already complete"),
        "{}",
        again.stderr
    );
}

#[test]
fn force_start_runs_a_blocked_task_on_the_next_run() {
    let weft = Weft::with_agents();
    diamond(&weft, &[("left", "require flag-left")]);
    weft.fails(&["run"], 1);
    assert_eq!(statuses(&weft)["join"], "blocked");
    let forced = weft.ok(&["force-start", "join"]);
    assert!(
        forced
            .stdout
            .contains("starts first thing when `weft run` next runs"),
        "{}",
        forced.stdout
    );
    let run = weft.fails(&["run"], 1);
    assert!(
        run.stdout.contains("control: force_start \"join\""),
        "{}",
        run.stdout
    );
    let s = statuses(&weft);
    assert_eq!(s["join"], "completed");
    // join's work is done, so it shields `after` from the failure above it.
    assert_eq!(s["after"], "completed");
    assert_eq!(s["left"], "failed");
    let refused = weft.fails(&["force-start", "join"], 1);
    assert!(
        refused
            .stderr
            .contains("is completed: retry it first to run it again"),
        "{}",
        refused.stderr
    );
}

#[test]
fn a_failing_check_fails_a_task_whose_agent_printed_its_marker() {
    let weft = Weft::with_agents();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"Claims success\"\nprompt = \"@fake marker\"\nchecks = [\"true\", \"echo the tests failed; exit 3\"]\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    weft.fails(&["run"], 1);
    let json = weft.status_json();
    let verdict = &json["plan"]["tasks"][0]["verdict"];
    assert_eq!(verdict["outcome"], "fail");
    let reason = verdict["reason"].as_str().unwrap();
    assert!(reason.contains("echo the tests failed; exit 3"), "{reason}");
    let checks = verdict["checks"].as_array().unwrap();
    assert!(
        checks
            .iter()
            .any(|c| c["name"] == "completion_marker" && c["passed"] == true)
    );
    let failed = checks
        .iter()
        .find(|c| c["name"] == "check:echo the tests failed; exit 3")
        .unwrap();
    assert_eq!(failed["passed"], false);
    assert!(
        failed["detail"]
            .as_str()
            .unwrap()
            .contains("the tests failed"),
        "{failed}"
    );
}

#[test]
fn a_task_added_from_another_terminal_joins_the_running_run() {
    let weft = Weft::with_agents();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\nid = \"slow\"\ntitle = \"Slow\"\nprompt = '''\n@fake hang-unless go\n@fake marker\n'''\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let mut child = start_engine_until_running(&weft, "slow");
    weft.ok(&[
        "task",
        "add",
        "--title",
        "Late",
        "--id",
        "late",
        "--prompt",
        "@fake marker",
    ]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while statuses(&weft)["late"] != "completed" {
        assert!(
            Instant::now() < deadline,
            "the running engine never picked up the new task"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(statuses(&weft)["slow"], "in_progress");
    weft.write("go", "");
    assert!(child.wait().unwrap().success());
    assert!(statuses(&weft).values().all(|s| s == "completed"));
}

/// The transcript is the record: a marker the agent only wrote into its own session file
/// is evidence, the verdict says where it came from, and `weft transcript` shows it.
#[test]
fn a_marker_found_only_in_the_agents_transcript_passes() {
    let weft = Weft::with_agents();
    weft.write(
        "plan.toml",
        &format!(
            "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"Quiet\"\nprompt = '''\n@fake say working on it\n@fake transcript-marker\n'''\n\
             [[tasks]]\ntitle = \"Next\"\ndependencies = [1]\nprompt = '''\nDo the next part.\n@fake record {}\n@fake marker\n'''\n",
            weft.env.root().join("record.jsonl").display()
        ),
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    weft.ok(&["run"]);
    let json = weft.status_json();
    let verdict = &json["plan"]["tasks"][0]["verdict"];
    assert_eq!(verdict["outcome"], "pass", "{verdict}");
    let marker = verdict["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "completion_marker")
        .unwrap();
    assert!(
        marker["detail"].as_str().unwrap().contains("transcript"),
        "{marker}"
    );
    // The dependent was handed the transcript's final answer, not the terminal tail.
    let handed = &records(&weft)
        .into_iter()
        .find(|r| r.event == "start")
        .unwrap()
        .prompt;
    assert!(
        handed.contains("All done; the work is in place."),
        "{handed}"
    );
    let shown = weft.ok(&["transcript", "1"]).stdout;
    assert!(shown.contains(".claude/projects/"), "{shown}");
    assert!(
        shown.contains("the attempt's marker is in it: evidence"),
        "{shown}"
    );
    assert!(shown.contains("All done; the work is in place."), "{shown}");
    // Without a transcript store (exec), the command says so.
    let exec = Weft::with_agents();
    exec.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"exec\"\n[[tasks]]\ntitle = \"T\"\nprompt = \"true\"\n",
    );
    exec.ok(&["plan", "--file", "plan.toml"]);
    exec.ok(&["run"]);
    let none = exec.fails(&["transcript", "1"], 1);
    assert!(
        none.stderr.contains("keeps no transcript"),
        "{}",
        none.stderr
    );
}

/// `OPENCODE_DB=:memory:` leaves no OpenCode transcript on disk: `weft transcript` says
/// why instead of only "not found".
#[test]
fn transcript_of_an_in_memory_opencode_session_says_why_it_is_missing() {
    let weft = Weft::with_agents();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"opencode\"\n[[tasks]]\ntitle = \"T\"\nprompt = '''\n@fake marker\n'''\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    weft.ok(&["run"]);
    let args = ["transcript", "1"];
    let mut command = weft.command(&args);
    command.env("OPENCODE_DB", ":memory:");
    let run = weft.run_command(&args, command);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("no opencode transcript found"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("OPENCODE_DB is \":memory:\""),
        "{}",
        run.stderr
    );
    // Unset (or empty), the hint is not given.
    let mut command = weft.command(&args);
    command.env("OPENCODE_DB", "");
    let run = weft.run_command(&args, command);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(!run.stderr.contains("OPENCODE_DB"), "{}", run.stderr);
}

#[test]
fn runners_lists_availability_with_reasons() {
    let weft = Weft::new();
    let json: Value = serde_json::from_str(&weft.ok(&["runners", "--json"]).stdout).unwrap();
    let rows = json.as_array().unwrap();
    let by_name = |name: &str| rows.iter().find(|r| r["name"] == name).unwrap().clone();
    assert_eq!(by_name("exec")["available"], true);
    // Only the agent CLIs with a read-only mode can plan; any runner executes.
    assert_eq!(by_name("exec")["can_plan"], false);
    for name in ["claude-code", "codex", "opencode"] {
        assert_eq!(by_name(name)["can_plan"], true, "{name}");
    }
    let claude = by_name("claude-code");
    assert_eq!(claude["available"], false);
    assert!(
        claude["reason"]
            .as_str()
            .unwrap()
            .contains("claude was not found on PATH"),
        "{claude}"
    );
    // With the fake agent on PATH, claude-code is available and reports its version.
    let agents = Weft::with_agents();
    let json: Value = serde_json::from_str(&agents.ok(&["runners", "--json"]).stdout).unwrap();
    let claude = json
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "claude-code")
        .unwrap()
        .clone();
    assert_eq!(claude["available"], true, "{claude}");
    assert!(
        claude["version"].as_str().unwrap().contains("Claude Code"),
        "{claude}"
    );
    let text = agents.ok(&["runners"]).stdout;
    assert!(
        text.lines()
            .any(|l| l.starts_with("claude-code") && l.contains("can plan")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("exec") && !l.contains("can plan")),
        "{text}"
    );
}

/// Issue 12, failure 11: two `opencode run` started at once on a data folder with no
/// database race on OpenCode's own setup and one exits 1 (`Failed query: CREATE TABLE
/// workspace`). The fake agent's OpenCode persona reproduces the race; weft starts one
/// OpenCode at a time until the database exists, so every task passes.
#[test]
fn parallel_opencode_tasks_on_a_fresh_data_folder_all_pass() {
    let weft = Weft::with_agents();
    let agents = weft.agents.clone().unwrap();
    // The race is real: two fakes started together, one fails as OpenCode does.
    let fresh = weft.env.root().join("fresh-home");
    let start = || {
        let mut command = weft.env.command(agents.join("opencode"));
        command
            .args(["run", "--format", "json"])
            .env("HOME", &fresh)
            .env("WEFT_FAKE_OPENCODE_SETUP_MS", "400")
            .env("WEFT_PROMPT", "@fake say hi")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        command.spawn().unwrap()
    };
    let (a, b) = (start(), start());
    let outputs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
    let failed: Vec<_> = outputs.iter().filter(|o| !o.status.success()).collect();
    assert_eq!(failed.len(), 1, "the fake did not race");
    assert!(
        String::from_utf8_lossy(&failed[0].stderr).contains("Failed query: CREATE TABLE workspace")
    );

    let mut plan = String::from("goal = \"g\"\nrunner = \"opencode\"\n");
    for n in 1..=3 {
        plan.push_str(&format!(
            "[[tasks]]\ntitle = \"T{n}\"\nprompt = '''\n@fake write t{n}.txt {n}\n@fake marker\n'''\n"
        ));
    }
    weft.write("plan.toml", &plan);
    weft.ok(&["plan", "--file", "plan.toml"]);
    let args = ["run", "--parallel", "3"];
    let mut command = weft.command(&args);
    command.env("WEFT_FAKE_OPENCODE_SETUP_MS", "400");
    let run = weft.run_command(&args, command);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    let status = weft.status_json();
    for task in status["plan"]["tasks"].as_array().unwrap() {
        assert_eq!(task["status"], "completed", "{task}");
    }
    assert!(
        weft.env
            .home()
            .join(".local/share/opencode/opencode.db")
            .exists()
    );
}

/// Issue 12, "hangs end without waiting an hour": an attempt with no output, stream event
/// or file change for `idle_timeout` is ended, and its verdict says so.
#[test]
fn a_hung_agent_is_ended_by_idle_timeout_with_a_verdict_that_says_so() {
    let weft = Weft::with_agents();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"Hangs\"\nprompt = '''\n@fake say thinking\n@fake hang\n'''\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let refused = weft.fails(&["-c", "idle_timeout=1s", "run"], 2);
    assert!(
        refused.stderr.contains("is not longer than `idle_after`"),
        "{}",
        refused.stderr
    );
    let started = Instant::now();
    let run = weft.fails(&["-c", "idle_after=1s", "-c", "idle_timeout=2s", "run"], 1);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{}",
        run.stderr
    );
    let task = &weft.status_json()["plan"]["tasks"][0];
    assert_eq!(task["status"], "failed", "{task}");
    assert_eq!(
        task["verdict"]["reason"],
        "idle: no output, stream event or file change for its idle_timeout (the idle_timeout setting = 2s)",
        "{task}"
    );
}
