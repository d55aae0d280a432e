//! `weft tui` end to end, in a real terminal: tmux runs it on a private server, the test
//! types keys with `send-keys` and reads the screen with `capture-pane`. The plan runs the
//! fake agent (a runner's approval question) and exec tasks in an isolated run: start it
//! with R, watch tasks go running → completed, open a failed task's output, retry it with
//! r, answer the question in the overlay, and merge the handoff with H.
//!
//! Without tmux the test says so on stderr and passes, except under CI (`CI` set), where
//! tmux is required.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::harness::Weft;

struct Tmux {
    socket: String,
}

impl Tmux {
    fn cmd(&self) -> Command {
        let mut command = Command::new("tmux");
        command.args(["-u", "-L", &self.socket]);
        command
    }

    fn screen(&self) -> String {
        let out = self
            .cmd()
            .args(["capture-pane", "-p", "-t", "tui"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        for key in keys {
            let status = self
                .cmd()
                .args(["send-keys", "-t", "tui", key])
                .status()
                .unwrap();
            assert!(status.success());
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    /// Wait until the screen shows `text`; the screen then.
    fn wait_for(&self, text: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the screen never showed {text:?}; it shows:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd().arg("kill-server").status();
    }
}

fn tmux_available() -> bool {
    Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// A script that starts `weft tui` with exactly the hermetic environment the harness
/// gives every weft command.
fn launcher(weft: &Weft) -> PathBuf {
    let probe = weft.command(&["tui"]);
    let mut line = String::from("exec env -i");
    for (key, value) in probe.get_envs() {
        if let Some(value) = value {
            line.push_str(&format!(
                " {}={}",
                key.to_string_lossy(),
                shell_quote(&value.to_string_lossy())
            ));
        }
    }
    line.push_str(" TERM=xterm-256color WEFT_ISOLATION=true");
    line.push_str(&format!(" {} tui", shell_quote(env!("CARGO_BIN_EXE_weft"))));
    let script = format!(
        "cd {}\n{line}\n",
        shell_quote(&weft.work().display().to_string())
    );
    let path = weft.env.root().join("tui.sh");
    fs_err::write(&path, script).unwrap();
    path
}

/// `weft tui` in a new tmux session (110×32) on a private server; once it exits the pane
/// says how and whether the terminal is back in its normal (cooked) mode.
fn start(weft: &Weft, name: &str) -> Tmux {
    let script = launcher(weft);
    let tmux = Tmux {
        socket: format!("weft-tui-test-{}-{name}", std::process::id()),
    };
    let started = tmux
        .cmd()
        .args(["new-session", "-d", "-s", "tui", "-x", "110", "-y", "32"])
        .arg(format!(
            "sh {}; echo TUI-EXITED $?; if stty -a | grep -q -- ' icanon' && stty -a | grep -q -- ' echo '; then echo TERMINAL-COOKED; else echo TERMINAL-RAW; fi; sleep 120",
            shell_quote(&script.display().to_string())
        ))
        .status()
        .unwrap();
    assert!(started.success());
    tmux
}

#[test]
#[allow(clippy::print_stderr)] // the skip must be loud
fn in_a_terminal_the_tui_runs_the_plan_retries_a_failure_answers_a_question_and_merges() {
    if !tmux_available() {
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux is required under CI for the TUI's end-to-end test"
        );
        eprintln!("SKIPPED: tmux is not installed, so `weft tui` was not tested in a terminal");
        return;
    }
    let weft = Weft::with_agents();
    let fixed = weft.env.root().join("fixed");
    weft.write(
        "plan.toml",
        &format!(
            r#"goal = "Drive it from the TUI"
runner = "exec"

[[tasks]]
id = "asks"
title = "Asks before it lists"
runner = "claude-code"
mode = "ask"
prompt = '''
@fake ask Bash {{"command":"ls -la"}}
@fake marker
'''

[[tasks]]
id = "slow"
title = "Takes a moment"
prompt = "sleep 2; echo slow > slow.txt"

[[tasks]]
id = "flaky"
title = "Fails until fixed"
prompt = "test -f {fixed} || {{ echo not fixed yet; exit 3; }}; echo fixed > flaky.txt"
"#,
            fixed = fixed.display()
        ),
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let tmux = start(&weft, "run");
    tmux.wait_for("idle (R runs)");

    tmux.keys(&["R"]);
    tmux.wait_for("running here");
    tmux.wait_for("in_progress");
    // The runner's question: the overlay appears by itself; y allows it.
    let screen = tmux.wait_for("waits");
    assert!(screen.contains("ls -la"), "{screen}");
    tmux.keys(&["y"]);
    let screen = tmux.wait_for("idle (R runs)");
    assert!(screen.contains("completed"), "{screen}");
    assert!(screen.contains("failed"), "{screen}");

    // The failed task's output, then a retry.
    tmux.keys(&["G", "o"]);
    tmux.wait_for("not fixed yet");
    fs_err::write(&fixed, "").unwrap();
    tmux.keys(&["r"]);
    tmux.wait_for("will run again");
    tmux.keys(&["Escape", "R"]);
    tmux.wait_for("3/3 done");
    tmux.wait_for("idle (R runs)");
    // The retried task's own diff.
    tmux.keys(&["d"]);
    tmux.wait_for("+fixed");
    tmux.keys(&["Escape"]);

    // The handoff: review, then merge behind a confirmation.
    tmux.keys(&["H"]);
    tmux.wait_for("flaky.txt");
    tmux.keys(&["m"]);
    tmux.wait_for("Merge the run's work");
    tmux.keys(&["y"]);
    tmux.wait_for("merged");
    let log = Command::new("git")
        .args(["log", "--oneline", "-3"])
        .current_dir(weft.work())
        .envs(weft.env.vars())
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&log.stdout);
    assert!(log.contains("weft: merge run"), "{log}");
    assert!(weft.work().join("flaky.txt").exists());

    tmux.keys(&["q"]);
    let screen = tmux.wait_for("TERMINAL-");
    assert!(screen.contains("TUI-EXITED 0"), "{screen}");
    assert!(
        screen.contains("TERMINAL-COOKED"),
        "raw mode was left on:\n{screen}"
    );
}

#[test]
#[allow(clippy::print_stderr)] // the skip must be loud
fn sigterm_ends_the_tui_and_gives_the_terminal_back_in_its_normal_mode() {
    if !tmux_available() {
        assert!(
            std::env::var_os("CI").is_none(),
            "tmux is required under CI"
        );
        eprintln!("SKIPPED: tmux is not installed, so `weft tui` was not tested in a terminal");
        return;
    }
    let weft = Weft::new();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"exec\"\n\n[[tasks]]\nid = \"a\"\ntitle = \"A\"\nprompt = \"true\"\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let tmux = start(&weft, "term");
    tmux.wait_for("idle (R runs)");
    let pane = tmux
        .cmd()
        .args(["list-panes", "-t", "tui", "-F", "#{pane_pid}"])
        .output()
        .unwrap();
    let pane = String::from_utf8_lossy(&pane.stdout).trim().to_owned();
    // The pane's shell runs `sh tui.sh`, which became weft by exec.
    let children = Command::new("ps")
        .args(["-o", "pid=", "--ppid", &pane])
        .output()
        .unwrap();
    let weft_pid = String::from_utf8_lossy(&children.stdout).trim().to_owned();
    assert!(
        !weft_pid.is_empty(),
        "weft tui is not running under pane {pane}"
    );
    assert!(
        Command::new("kill")
            .args(["-TERM", &weft_pid])
            .status()
            .unwrap()
            .success()
    );
    let screen = tmux.wait_for("TERMINAL-");
    assert!(
        screen.contains("TERMINAL-COOKED"),
        "raw mode was left on:\n{screen}"
    );
}
