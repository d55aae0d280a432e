//! Notifications (`notify`, `bell`, `desktop_notify`): the `notify` command runs once per
//! transition — an approval waiting, a task failed, a run finished — with the typed event
//! on stdin and a summary in `WEFT_NOTIFY_SUMMARY`, however often the engine polls.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::harness::{Weft, read};

/// Appends each event and its summary to files in the folder it runs in.
const NOTIFY: &str =
    "cat >> notified.jsonl; printf '%s\\n' \"$WEFT_NOTIFY_SUMMARY\" >> summaries.txt";

#[test]
fn the_notify_command_gets_each_transition_once_with_its_event_and_summary() {
    let weft = Weft::with_agents();
    // A task that asks and waits while a slow one (long enough for the engine to poll
    // many times, every 200 ms) runs and the task after it fails.
    weft.write(
        "plan.toml",
        r#"goal = "Tell me"
runner = "exec"

[[tasks]]
id = "asks"
title = "Asks first"
runner = "claude-code"
mode = "ask"
prompt = '''
@fake ask Bash {"command":"ls -la"}
@fake marker
'''

[[tasks]]
id = "slow"
title = "Slow"
prompt = "sleep 2"

[[tasks]]
id = "bad"
title = "Fails"
prompt = "echo nope; exit 4"
dependencies = ["slow"]
"#,
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let mut command = weft.command(&["run", "--parallel", "2", "-c", &format!("notify={NOTIFY}")]);
    command.stdout(Stdio::null()).stderr(Stdio::piped());
    let run = command.spawn().unwrap();
    let summaries = weft.work().join("summaries.txt");
    // The question waits through the slow task and the failure: many polls.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !summaries.exists() || read(&summaries).lines().count() < 2 {
        assert!(
            Instant::now() < deadline,
            "no notification for the question and the failure"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1000));
    let open: Vec<Value> = serde_json::from_str(&weft.ok(&["approvals", "--json"]).stdout).unwrap();
    let id = open[0]["id"].as_i64().unwrap().to_string();
    weft.ok(&["approvals", "allow", &id]);
    let output = run.wait_with_output().unwrap();
    assert!(
        !output.status.success(),
        "the run ends failed (task `bad`): {}",
        String::from_utf8_lossy(&output.stderr)
    );

    let lines: Vec<Value> = read(&weft.work().join("notified.jsonl"))
        .lines()
        .map(|l| serde_json::from_str(l).expect("one compact JSON event per line"))
        .collect();
    let kinds: Vec<&str> = lines
        .iter()
        .map(|e| e["event"]["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["approval_asked", "task_finished", "run_ended"],
        "{lines:#?}"
    );
    assert_eq!(lines[1]["task"], "bad");
    assert_eq!(lines[1]["event"]["status"], "failed");
    let seqs: Vec<i64> = lines.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    // The same sequence numbers as the event log's.
    let logged: Vec<Value> = weft
        .ok(&["events", "--json", "--all"])
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    for line in &lines {
        assert!(
            logged.contains(line),
            "not in the event log as stored: {line}"
        );
    }
    let summaries = read(&summaries);
    let summaries: Vec<&str> = summaries.lines().collect();
    assert_eq!(summaries.len(), 3, "{summaries:?}");
    assert!(summaries[0].starts_with("weft: approval "), "{summaries:?}");
    assert!(
        summaries[1].starts_with("weft: task #3 Fails failed: "),
        "{summaries:?}"
    );
    assert!(summaries[2].starts_with("weft: run "), "{summaries:?}");
}

#[test]
fn a_notify_command_that_hangs_is_killed_and_never_holds_the_run() {
    let weft = Weft::with_agents();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"exec\"\n\n[[tasks]]\nid = \"bad\"\ntitle = \"Fails\"\nprompt = \"exit 1\"\n\n[[tasks]]\nid = \"after\"\ntitle = \"Independent\"\nprompt = \"sleep 1\"\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let started = Instant::now();
    let run = weft.run(&["run", "-c", "notify=echo started >> hung.txt; sleep 60"]);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    // Two transitions (the failure, the run's end), each bounded by the command timeout.
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(read(&weft.work().join("hung.txt")).lines().count(), 2);
    assert_eq!(
        crate::engine::statuses(&weft)["after"],
        "completed",
        "the run went on while the first command hung"
    );
}

/// The `notify_failed` events of the workspace's log, as `weft events --json` prints them.
fn notices(weft: &Weft) -> Vec<Value> {
    weft.ok(&["events", "--json", "--all"])
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"]["kind"] == "notify_failed")
        .collect()
}

/// How many lines of `text` say that the notify command failed.
fn notice_lines(text: &str) -> usize {
    text.lines()
        .filter(|l| l.contains("the notify command `"))
        .count()
}

/// A token shape the masker knows (`ghp_` and 36 alphanumerics).
const TOKEN: &str = "ghp_0123456789abcdefghijklmnopqrstuvwxyz";

/// A failing command (three transitions: two failed tasks and the run's end) is not
/// dropped without a word: one stored notice names it (its token masked), its exit
/// status and the end of its stderr (masked too), and `weft run` shows it once; it still
/// runs for every transition.
#[test]
fn a_notify_command_that_fails_leaves_one_notice_with_its_status_and_stderr_shown_once() {
    let weft = Weft::new();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"exec\"\n[[tasks]]\nid = \"one\"\ntitle = \"One\"\nprompt = \"exit 1\"\n[[tasks]]\nid = \"two\"\ntitle = \"Two\"\nprompt = \"exit 1\"\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let notify = format!(
        "echo ran >> ran.txt; echo 'first line' >&2; echo 'cannot reach the hook with {TOKEN}' >&2; exit 3 # {TOKEN}"
    );
    let run = weft.run(&["run", "-c", &format!("notify={notify}")]);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    assert_eq!(
        read(&weft.work().join("ran.txt")).lines().count(),
        3,
        "the command runs for every transition"
    );
    let found = notices(&weft);
    assert_eq!(found.len(), 1, "one notice per command per run: {found:#?}");
    let notice = &found[0]["event"];
    assert_eq!(notice["failure"], "exited with status 3", "{notice:#}");
    assert_eq!(notice["exit_code"], 3);
    assert_eq!(notice["timed_out"], false);
    let command = notice["command"].as_str().unwrap();
    assert!(command.starts_with("echo ran >> ran.txt;"), "{command}");
    let stderr = notice["stderr"].as_str().unwrap();
    assert!(
        stderr.contains("first line\ncannot reach the hook with ghp_"),
        "{stderr}"
    );
    let everything = format!("{}{}", serde_json::to_string(&found).unwrap(), run.stdout);
    assert!(
        !everything.contains(TOKEN) && !run.stderr.contains(TOKEN),
        "the token reached a notice or the run's output: {everything}"
    );
    // Named after the first transition it was run for, in the run it failed in.
    let first = weft
        .ok(&["events", "--json", "--all"])
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["event"]["kind"] == "task_finished")
        .unwrap();
    assert_eq!(notice["about"], first["seq"]);
    assert_eq!(found[0]["run"], first["run"]);
    let shown = notice_lines(&run.stdout) + notice_lines(&run.stderr);
    assert_eq!(shown, 1, "weft run shows it once: {}", weft.show(&run));
    let line = format!("{}{}", run.stdout, run.stderr);
    assert!(
        line.contains("exited with status 3 (stderr: first line | cannot reach the hook with ghp_"),
        "{line}"
    );
    assert!(
        weft.ok(&["events", "--all"])
            .stdout
            .contains("the notify command `echo ran"),
        "weft events says it too"
    );
}

/// Alive and not a zombie.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        !state.starts_with('Z') && !state.starts_with('X')
    })
}

/// The live members of process group `group`.
fn group_members(group: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .collect();
        if fields.get(2) == Some(&group.to_string().as_str()) && running(pid) {
            members.push(pid);
        }
    }
    members
}

/// A command that runs past its 5 s is ended with everything it started (its own
/// process group: `sleep 100 & sleep 100` leaves nothing behind), and its notice says
/// it timed out; `weft run` shows it once, although it was stored after the run's last
/// transition (the run's end).
#[test]
fn a_notify_command_that_times_out_is_ended_with_its_children_and_says_so_once() {
    let weft = Weft::new();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"exec\"\n[[tasks]]\nid = \"ok\"\ntitle = \"Passes\"\nprompt = \"true\"\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let notify = "echo $$ > sh.pid; sleep 100 & echo $! > bg.pid; echo waiting >&2; sleep 100";
    let started = Instant::now();
    let run = weft.run(&["run", "-c", &format!("notify={notify}")]);
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    let pid = |name: &str| -> u32 { read(&weft.work().join(name)).trim().parse().unwrap() };
    let (sh, background) = (pid("sh.pid"), pid("bg.pid"));
    assert_ne!(sh, std::process::id());
    assert!(!running(sh), "its shell is still running");
    assert!(
        !running(background),
        "its background child is still running"
    );
    assert_eq!(group_members(sh), Vec::<u32>::new(), "its group lives on");
    let found = notices(&weft);
    assert_eq!(found.len(), 1, "{found:#?}");
    let notice = &found[0]["event"];
    assert_eq!(notice["failure"], "timed out after 5 s", "{notice:#}");
    assert_eq!(notice["timed_out"], true);
    assert_eq!(notice["exit_code"], Value::Null);
    assert_eq!(notice["stderr"], "waiting\n");
    let shown = notice_lines(&run.stdout) + notice_lines(&run.stderr);
    assert_eq!(shown, 1, "weft run shows it once: {}", weft.show(&run));
    assert!(
        format!("{}{}", run.stdout, run.stderr).contains("timed out after 5 s (stderr: waiting)"),
        "{}",
        weft.show(&run)
    );
}
