//! Containment end to end: whatever an attempt started is gone when `weft run` exits (or
//! within 5 s of the engine's SIGKILL), and a confined attempt cannot write the user's
//! checkout, another task's worktree or `.weft/`.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::engine::statuses;
use crate::harness::{Weft, read};

/// Whether Landlock is enforced here; if not, the test that needs it says so on stderr
/// and is skipped — except in CI (`CI` set), where a kernel without Landlock fails it.
#[allow(clippy::print_stderr)]
pub(crate) fn landlock_or_skip(what: &str) -> bool {
    if weft_engine::contain::landlock_available() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "this kernel does not enforce Landlock; {what} needs it, and CI must run it"
    );
    eprintln!("SKIPPED: this kernel does not enforce Landlock; {what} needs it");
    false
}

/// Three escapees of one task, their pids in `dir`: a `setsid` grandchild holding the
/// output pipe, a `nohup` daemon from a double fork, and a new-session grandchild that
/// ignores SIGTERM.
fn escapees(dir: &Path) -> String {
    let d = dir.display();
    format!(
        r#"mkdir -p '{d}'
setsid sh -c 'echo $$ > "{d}/setsid.pid"; exec sleep 300' &
( nohup sh -c 'echo $$ > "{d}/nohup.pid"; exec sleep 300' >/dev/null 2>&1 & )
setsid sh -c 'trap "" TERM; echo $$ > "{d}/stubborn.pid"; while :; do sleep 1; done' >/dev/null 2>&1 &
while [ ! -s '{d}/setsid.pid' ] || [ ! -s '{d}/nohup.pid' ] || [ ! -s '{d}/stubborn.pid' ]; do sleep 0.01; done
"#
    )
}

/// A plan of independent `exec` tasks: (id, what the script does after its escapees).
fn escape_plan(weft: &Weft, tasks: &[(&str, &str)]) {
    let mut text = String::from("goal = \"g\"\nrunner = \"exec\"\n");
    // Made here: a confined task in a shared run cannot add entries to the workspace's
    // top folder (see `a_confined_shared_run_writes_the_workspace_but_not_its_state_folder`).
    std::fs::create_dir_all(weft.work().join("pids")).unwrap();
    for (id, then) in tasks {
        let script = format!("{}{then}\n", escapees(&pid_dir(weft, id)));
        text.push_str(&format!(
            "[[tasks]]\nid = \"{id}\"\ntitle = \"{id}\"\nprompt = '''\n{script}'''\n"
        ));
    }
    weft.write("plan.toml", &text);
    weft.ok(&["plan", "--file", "plan.toml"]);
}

fn pid_dir(weft: &Weft, task: &str) -> PathBuf {
    weft.work().join("pids").join(task)
}

fn read_pids(weft: &Weft, task: &str) -> Vec<(String, u32)> {
    let dir = pid_dir(weft, task);
    let until = Instant::now() + Duration::from_secs(30);
    ["setsid", "nohup", "stubborn"]
        .into_iter()
        .map(|name| {
            let path = dir.join(format!("{name}.pid"));
            loop {
                if let Ok(text) = std::fs::read_to_string(&path)
                    && let Ok(pid) = text.trim().parse()
                {
                    break (format!("{task}/{name}"), pid);
                }
                assert!(Instant::now() < until, "no pid in {}", path.display());
                thread::sleep(Duration::from_millis(20));
            }
        })
        .collect()
}

/// Alive and not a zombie.
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        let state = stat.rsplit(')').next().unwrap_or("").trim_start();
        !state.starts_with('Z') && !state.starts_with('X')
    })
}

fn assert_gone(pids: &[(String, u32)]) {
    let alive: Vec<_> = pids.iter().filter(|(_, pid)| running(*pid)).collect();
    assert!(
        alive.is_empty(),
        "still running after the attempt: {alive:?}"
    );
}

/// Shared mode: the tasks run (confined) in the workspace itself, where the pid files go.
fn shared(weft: &Weft, args: &[&str]) -> std::process::Command {
    let mut command = weft.command(args);
    command.env("WEFT_ISOLATION", "false");
    command
}

fn spawn_run(weft: &Weft) -> Child {
    shared(weft, &["run"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn signal(pid: u32, signal: &str) {
    let status = std::process::Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn escapees_of_passed_failed_and_timed_out_attempts_are_gone_when_weft_run_exits() {
    let weft = Weft::new();
    escape_plan(
        &weft,
        &[
            ("pass", "exit 0"),
            ("fail", "exit 1"),
            ("slow", "sleep 300"),
        ],
    );
    let run = weft.run_command(
        &["run"],
        shared(&weft, &["run", "-c", "task_timeout=2s", "-c", "parallel=3"]),
    );
    assert_ne!(run.code, 0, "{}", weft.show(&run));
    let s = statuses(&weft);
    assert_eq!(
        s["pass"],
        "completed",
        "{s:?}\n{}\n{}",
        weft.show(&run),
        weft.status_json()
    );
    assert_eq!(s["fail"], "failed", "{s:?}");
    assert_eq!(s["slow"], "failed", "{s:?}");
    let mut pids = read_pids(&weft, "pass");
    pids.extend(read_pids(&weft, "fail"));
    pids.extend(read_pids(&weft, "slow"));
    assert_gone(&pids);
}

/// `weft cancel`, `weft stop` and Ctrl-C, each against a running attempt.
#[test]
fn escapees_are_gone_when_weft_run_exits_after_cancel_stop_or_ctrl_c() {
    for how in ["cancel", "stop", "ctrl-c"] {
        let weft = Weft::new();
        escape_plan(&weft, &[("hang", "sleep 300")]);
        let engine = spawn_run(&weft);
        let pids = read_pids(&weft, "hang");
        match how {
            "cancel" => {
                weft.ok(&["cancel", "hang"]);
            }
            "stop" => {
                weft.ok(&["stop"]);
            }
            _ => signal(engine.id(), "-INT"),
        }
        let output = engine.wait_with_output().unwrap();
        assert!(
            !output.status.success() || how == "stop",
            "{how}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_gone(&pids);
    }
}

#[test]
fn escapees_end_within_five_seconds_after_the_engine_is_killed_with_no_weft_command() {
    let weft = Weft::new();
    escape_plan(&weft, &[("hang", "sleep 300")]);
    let mut engine = spawn_run(&weft);
    let pids = read_pids(&weft, "hang");
    let killed_at = Instant::now();
    engine.kill().unwrap();
    engine.wait().unwrap();
    loop {
        if pids.iter().all(|(_, pid)| !running(*pid)) {
            break;
        }
        assert!(
            killed_at.elapsed() < Duration::from_secs(5),
            "5 s after the engine's SIGKILL: {:?}",
            pids.iter()
                .filter(|(_, pid)| running(*pid))
                .collect::<Vec<_>>()
        );
        thread::sleep(Duration::from_millis(20));
    }
}

fn sha(path: &Path) -> String {
    let output = std::process::Command::new("sha256sum")
        .arg(path)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned()
}

fn object_files(git_dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(git_dir.join("objects"))
        .unwrap()
        .flatten()
    {
        if entry.file_name().len() == 2 {
            for object in std::fs::read_dir(entry.path()).unwrap().flatten() {
                files.push(object.path());
            }
        }
    }
    files
}

/// Acceptance 5: every write outside the attempt's own worktree fails with EACCES inside
/// the agent; the checkout, the other worktree, the objects and the store are unchanged.
#[test]
fn a_confined_task_cannot_write_the_checkout_another_worktree_or_the_store() {
    if !landlock_or_skip("acceptance 5") {
        return;
    }
    let weft = Weft::new();
    let work = weft.work();
    weft.write("outside.txt", "the user's own file\n");
    let readme = work.join("README.md");
    let (outside_sha, readme_sha) = (sha(&work.join("outside.txt")), sha(&readme));
    let objects_before = object_files(&work.join(".git"));
    let db = work.join(".weft/weft.db");
    // `first` leaves a file in its worktree (kept); `probe` tries every escape.
    let attempt = |name: &str, command: &str| {
        format!(
            "if ( {command} ) 2>err; then echo \"WROTE {name}\"; else echo \"DENIED {name}: $(cat err)\"; fi\n"
        )
    };
    let mut probe = String::new();
    probe.push_str(&attempt(
        "outside",
        &format!("echo evil > '{}'", work.join("outside.txt").display()),
    ));
    probe.push_str(&attempt(
        "new-file",
        &format!("echo evil > '{}'", work.join("new.txt").display()),
    ));
    probe.push_str(&attempt(
        "readme",
        &format!("echo evil >> '{}'", readme.display()),
    ));
    probe.push_str(&attempt(
        "other-worktree",
        "echo evil > ../1-first/kept.txt",
    ));
    probe.push_str(&attempt(
        "store",
        &format!(
            "sqlite3 '{}' \"update tasks set status='completed'\"",
            db.display()
        ),
    ));
    probe.push_str(&attempt(
        "objects",
        &format!("rm -r '{}'/objects/??", work.join(".git").display()),
    ));
    probe.push_str(&attempt(
        "logs",
        &format!("rm -r '{}'", work.join(".weft/logs").display()),
    ));
    probe.push_str(&attempt("own-worktree", "echo fine > mine.txt"));
    probe.push_str(&attempt("tmpdir", "echo fine > \"$TMPDIR/t\""));
    weft.write(
        "plan.toml",
        &format!(
            "goal = \"g\"\nrunner = \"exec\"\n[[tasks]]\nid = \"first\"\ntitle = \"first\"\nprompt = 'echo kept > kept.txt'\n\
             [[tasks]]\nid = \"probe\"\ntitle = \"probe\"\ndependencies = [\"first\"]\nprompt = '''\n{probe}'''\n"
        ),
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let preview = weft.ok(&["prompt", "probe"]).stdout;
    assert!(
        preview.contains("confine: landlock; it may write only:"),
        "{preview}"
    );
    let run = weft.ok(&["run", "-c", "keep_worktrees=true"]);
    let s = statuses(&weft);
    assert!(
        s.values().all(|v| v == "completed"),
        "{s:?}\n{}",
        weft.show(&run)
    );
    let log = weft.ok(&["log", "probe"]).stdout;
    for name in [
        "outside",
        "new-file",
        "readme",
        "other-worktree",
        "store",
        "objects",
        "logs",
    ] {
        let line = log
            .lines()
            .find(|l| l.contains(&format!(" {name}")))
            .unwrap_or_else(|| panic!("no line for {name} in\n{log}"));
        assert!(
            line.starts_with("DENIED")
                && (line.contains("Permission denied") || line.contains("readonly database")),
            "{name}: {line}\n{log}"
        );
    }
    for name in ["own-worktree", "tmpdir"] {
        assert!(log.contains(&format!("WROTE {name}")), "{name}:\n{log}");
    }
    assert_eq!(sha(&work.join("outside.txt")), outside_sha);
    assert_eq!(sha(&readme), readme_sha);
    assert!(!work.join("new.txt").exists());
    assert!(work.join(".weft/logs").is_dir());
    for object in &objects_before {
        assert!(object.exists(), "{} was deleted", object.display());
    }
    let kept = std::fs::read_dir(work.join(".weft/worktrees"))
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path()
        .join("1-first/kept.txt");
    assert_eq!(read(&kept), "kept\n");
}

#[test]
fn confine_landlock_refuses_to_run_where_landlock_is_unavailable_and_auto_says_so_once() {
    let weft = Weft::new();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"exec\"\n[[tasks]]\ntitle = \"t\"\nprompt = 'echo hi > hi.txt'\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let mut refused = weft.command(&["run", "-c", "confine=landlock"]);
    refused.env("WEFT_TEST_NO_LANDLOCK", "1");
    let run = weft.run_command(&["run", "-c", "confine=landlock"], refused);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    assert!(
        run.stderr
            .contains("confine = \"landlock\", but this kernel does not enforce Landlock"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("confine = \\\"auto\\\"") || run.stderr.contains("confine = \"auto\""),
        "{}",
        run.stderr
    );
    assert_eq!(statuses(&weft)["t"], "pending", "nothing ran");

    let mut auto = weft.command(&["run"]);
    auto.env("WEFT_TEST_NO_LANDLOCK", "1");
    let run = weft.run_command(&["run"], auto);
    assert_eq!(run.code, 0, "{}", weft.show(&run));
    assert_eq!(
        run.stderr
            .matches("does not enforce Landlock: tasks run unconfined")
            .count(),
        1,
        "{}",
        run.stderr
    );
    assert_eq!(statuses(&weft)["t"], "completed");
}

/// Acceptance 9 (the agent-CLI planners: the fake agent's Claude, Codex and OpenCode
/// personas): a planner whose CLI writes and deletes workspace files, which its own plan
/// mode would not stop here (the fake agent ignores modes), is refused by the
/// confinement; the same script writes them with `confine = "off"`.
#[test]
fn an_agent_cli_planner_cannot_write_the_workspace_whatever_its_own_mode_allows() {
    if !landlock_or_skip("acceptance 9") {
        return;
    }
    let script = "write README.md evil\nwrite new.txt evil\nrun rm -f tracked.txt\nsay done";
    for (planner, confine, writes) in [
        ("claude-code", "off", true),
        ("claude-code", "auto", false),
        ("codex", "auto", false),
        ("opencode", "auto", false),
    ] {
        let weft = Weft::with_agents();
        let readme = weft.work().join("README.md");
        weft.write("tracked.txt", "keep me\n");
        let before = read(&readme);
        let args = ["plan", "x", "--yes", "--planner", planner];
        let mut command = weft.command(&args);
        command
            .env("WEFT_CONFINE", confine)
            .env("WEFT_FAKE_SCRIPT", script);
        let run = weft.run_command(&args, command);
        assert_eq!(
            weft.work().join("new.txt").exists(),
            writes,
            "{planner}, confine={confine}: {}",
            weft.show(&run)
        );
        assert_eq!(
            read(&readme) == before,
            !writes,
            "{planner}, confine={confine}"
        );
        assert_eq!(
            weft.work().join("tracked.txt").exists(),
            !writes,
            "{planner}, confine={confine}: the delete"
        );
    }
}

/// Acceptance 9 (the openai planner's `run_command`): a command its command policy lets
/// through as read-only can still write — here `git status` runs the repository's
/// `core.fsmonitor` hook, which deletes README.md and writes a new file. Its research
/// commands run under weft's supervisor with a ruleset that grants no write access to
/// the workspace, so the hook's writes fail; with `confine = "off"` the same call writes.
#[test]
fn the_openai_planners_run_command_cannot_write_the_workspace_whatever_its_policy_allows() {
    use serde_json::json;
    use weft_testkit::mock_model::{MockModel, MockReply};
    if !landlock_or_skip("acceptance 9") {
        return;
    }
    let plan = json!({"tasks": [{"id": "a", "title": "A", "prompt": "do a"}]}).to_string();
    for (confine, writes) in [("off", true), ("auto", false)] {
        let weft = Weft::new();
        let work = weft.work();
        let hook = weft.env.root().join("fsmonitor-hook");
        std::fs::write(
            &hook,
            format!(
                "#!/bin/sh\nrm -f '{0}/README.md'\necho evil > '{0}/new.txt'\necho\n",
                work.display()
            ),
        )
        .unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let git = std::process::Command::new("git")
            .args(["config", "core.fsmonitor"])
            .arg(&hook)
            .current_dir(&work)
            .envs(weft.env.vars())
            .status()
            .unwrap();
        assert!(git.success());
        let readme = work.join("README.md");
        let before = read(&readme);
        let mock = MockModel::start(vec![
            MockReply::tool_calls(vec![(
                "run_command",
                json!({"command": "git status --short"}),
            )]),
            MockReply::text(plan.clone()),
        ]);
        let args = ["plan", "Add rate limiting", "--yes"];
        let mut command = weft.command(&args);
        command
            .env("WEFT_PLANNER", "openai")
            .env("WEFT_PLANNER_BASE_URL", mock.base_url())
            .env("WEFT_PLANNER_API_KEY", "sk-test-0123456789abcdef")
            .env("WEFT_PLANNER_MODEL", "mock-model")
            .env("WEFT_RUNNER", "exec")
            .env("WEFT_CONFINE", confine);
        let run = weft.run_command(&args, command);
        assert_eq!(run.code, 0, "confine={confine}: {}", weft.show(&run));
        let tool_result = mock.chat_requests()[1].body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rfind(|m| m["role"] == "tool")
            .map(|m| m["content"].to_string())
            .unwrap_or_default();
        assert_eq!(
            work.join("new.txt").exists(),
            writes,
            "confine={confine}: {tool_result}"
        );
        assert_eq!(readme.exists(), !writes, "confine={confine}: {tool_result}");
        if !writes {
            assert_eq!(read(&readme), before);
            assert!(
                tool_result.contains("Permission denied"),
                "the command saw an ordinary permission error: {tool_result}"
            );
        }
    }
}

/// A shared run (tasks in the workspace itself, which holds `.weft/`): a confined task
/// changes the workspace's files and folders, but cannot write the store or delete the
/// logs — nor add or remove entries in the workspace's top folder, since Landlock cannot
/// grant that folder without `.weft/` beneath it.
#[test]
fn a_confined_shared_run_writes_the_workspace_but_not_its_state_folder() {
    if !landlock_or_skip("this test") {
        return;
    }
    let weft = Weft::new();
    let work = weft.work();
    weft.write("src/lib.rs", "// old\n");
    weft.write("notes.txt", "old\n");
    let db = work.join(".weft/weft.db");
    // Its error output goes to its temp folder: it may not create files at the top.
    let attempt = |name: &str, command: &str| {
        format!(
            "if ( {command} ) 2>\"$TMPDIR/err\"; then echo \"WROTE {name}\"; else echo \"DENIED {name}: $(cat \"$TMPDIR/err\")\"; fi\n"
        )
    };
    let mut probe = String::new();
    probe.push_str(&attempt(
        "store",
        &format!(
            "sqlite3 '{}' \"update tasks set status='failed'\"",
            db.display()
        ),
    ));
    probe.push_str(&attempt(
        "store-file",
        &format!("echo x >> '{}'", db.display()),
    ));
    probe.push_str(&attempt(
        "logs",
        &format!("rm -r '{}'", work.join(".weft/logs").display()),
    ));
    probe.push_str(&attempt("top-level-new", "echo x > top-new.txt"));
    probe.push_str(&attempt("existing-file", "echo new > notes.txt"));
    probe.push_str(&attempt(
        "folder",
        "echo fn > src/new.rs && echo '// new' > src/lib.rs",
    ));
    weft.write(
        "plan.toml",
        &format!(
            "goal = \"g\"\nrunner = \"exec\"\n[[tasks]]\nid = \"probe\"\ntitle = \"probe\"\nprompt = '''\n{probe}'''\n"
        ),
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let run = shared(&weft, &["run"]).output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let log = weft.ok(&["log", "probe"]).stdout;
    for name in ["store", "store-file", "logs", "top-level-new"] {
        let line = log
            .lines()
            .find(|l| l.contains(&format!(" {name}")))
            .unwrap_or_else(|| panic!("no line for {name} in\n{log}"));
        assert!(
            line.starts_with("DENIED")
                && (line.contains("Permission denied")
                    || line.contains("readonly database")
                    || line.contains("unable to open")),
            "{name}: {line}\n{log}"
        );
    }
    for name in ["existing-file", "folder"] {
        assert!(log.contains(&format!("WROTE {name}")), "{name}:\n{log}");
    }
    assert!(work.join(".weft/logs").is_dir());
    assert!(!work.join("top-new.txt").exists());
    assert_eq!(read(&work.join("notes.txt")), "new\n");
    assert_eq!(read(&work.join("src/new.rs")), "fn\n");
    // Completed by its exit code; the agent's `update … 'failed'` never reached the store.
    assert_eq!(statuses(&weft)["probe"], "completed");
}

/// Acceptance 10 for the planners: `confine = "landlock"` on a kernel without it refuses
/// to start an agent-CLI planner and the openai planner (whose research commands would
/// run unconfined), storing nothing; `auto` plans unconfined with its notice once. (For
/// `weft run`: `confine_landlock_refuses_to_run_where_landlock_is_unavailable_and_auto_says_so_once`.)
#[test]
fn planners_refuse_confine_landlock_without_landlock_and_auto_says_so_once() {
    use weft_testkit::mock_model::{MockModel, MockReply};
    let plan = serde_json::json!({"tasks": [{"id": "a", "title": "A", "prompt": "do a"}]});
    let mock = MockModel::start(vec![MockReply::text(plan.to_string())]);
    for planner in ["claude-code", "openai"] {
        let weft = Weft::with_agents();
        let args = ["plan", "x", "--yes", "--planner", planner];
        let mut command = weft.command(&args);
        command
            .env("WEFT_TEST_NO_LANDLOCK", "1")
            .env("WEFT_CONFINE", "landlock")
            .env("WEFT_PLANNER_BASE_URL", mock.base_url())
            .env("WEFT_PLANNER_API_KEY", "sk-test-0123456789abcdef")
            .env("WEFT_PLANNER_MODEL", "mock-model");
        let run = weft.run_command(&args, command);
        assert_eq!(run.code, 1, "{planner}: {}", weft.show(&run));
        assert!(
            run.stderr
                .contains("confine = \"landlock\", but this kernel does not enforce Landlock"),
            "{planner}: {}",
            run.stderr
        );
        assert!(run.stderr.contains("hint:"), "{planner}: {}", run.stderr);
        let sessions = weft.ok(&["sessions", "list", "--json"]).stdout;
        assert!(
            !sessions.contains("\"x\""),
            "{planner} stored a plan: {sessions}"
        );
    }
    let weft = Weft::with_agents();
    let args = ["plan", "x", "--yes", "--planner", "claude-code"];
    let mut command = weft.command(&args);
    command
        .env("WEFT_TEST_NO_LANDLOCK", "1")
        .env("WEFT_CONFINE", "auto");
    let run = weft.run_command(&args, command);
    // The fake planner answers no plan here; that it ran is what counts.
    assert!(
        run.stderr.contains("planning with claude-code"),
        "{}",
        weft.show(&run)
    );
    assert_eq!(
        run.stderr
            .matches("does not enforce Landlock: tasks run unconfined")
            .count(),
        1,
        "{}",
        run.stderr
    );
}
