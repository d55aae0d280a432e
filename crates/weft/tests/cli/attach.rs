//! `weft attach N`: the live attempt of a task, replayed and followed through the store,
//! sanitized; Ctrl-C detaches and the attempt goes on.

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::engine::statuses;
use crate::harness::Weft;

fn printing_plan(weft: &Weft, seconds: u32) {
    weft.write(
        "plan.toml",
        &format!(
            "goal = \"g\"\nrunner = \"exec\"\n\n[[tasks]]\nid = \"talk\"\ntitle = \"Talks\"\nprompt = '''\necho first line\nprintf 'osc \\033]52;c;QUFB\\007 end\\n'\nsleep {seconds}\necho last line\n'''\n"
        ),
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
}

fn wait_running(weft: &Weft) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while statuses(weft)["talk"] != "in_progress" {
        assert!(Instant::now() < deadline, "the task never started");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn attach_replays_what_the_attempt_printed_follows_it_sanitized_and_exits_when_it_ends() {
    let weft = Weft::new();
    printing_plan(&weft, 2);
    let mut run = weft.command(&["run"]);
    run.stdout(Stdio::null()).stderr(Stdio::null());
    let mut run = run.spawn().unwrap();
    wait_running(&weft);
    // Attached after the first lines were printed: they are replayed.
    std::thread::sleep(Duration::from_millis(500));
    let attached = weft.run(&["attach", "1"]);
    assert_eq!(attached.code, 0, "{}", weft.show(&attached));
    assert_eq!(
        attached.stdout,
        "first line\nosc \\x1b]52;c;QUFB\\x07 end\nlast line\n",
        "{}",
        weft.show(&attached)
    );
    assert!(
        attached.stderr.contains("attached to attempt 1"),
        "{}",
        attached.stderr
    );
    assert!(
        attached.stderr.contains("ended: passed"),
        "{}",
        attached.stderr
    );
    assert!(run.wait().unwrap().success());
    // After the end: the whole output, and that it had ended.
    let after = weft.ok(&["attach", "talk"]);
    assert!(after.stdout.ends_with("last line\n"));
    assert!(
        after.stderr.contains("had already ended: passed"),
        "{}",
        after.stderr
    );
}

#[test]
fn ctrl_c_detaches_and_the_attempt_goes_on() {
    let weft = Weft::new();
    printing_plan(&weft, 3);
    let mut run = weft.command(&["run"]);
    run.stdout(Stdio::null()).stderr(Stdio::null());
    let mut run = run.spawn().unwrap();
    wait_running(&weft);
    let mut attach = weft.command(&["attach", "1"]);
    attach.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut attach = attach.spawn().unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let killed = std::process::Command::new("kill")
        .args(["-INT", &attach.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let started = Instant::now();
    let status = attach.wait().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "detached at once"
    );
    assert!(status.success(), "detaching is not an error");
    let mut stderr = String::new();
    attach
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(stderr.contains("detached: the attempt goes on"), "{stderr}");
    assert_eq!(statuses(&weft)["talk"], "in_progress");
    assert!(run.wait().unwrap().success());
    assert_eq!(statuses(&weft)["talk"], "completed");
}

#[test]
fn attaching_to_a_task_that_never_ran_says_so() {
    let weft = Weft::new();
    printing_plan(&weft, 0);
    let run = weft.fails(&["attach", "1"], 1);
    assert!(run.stderr.contains("has not run yet"), "{}", run.stderr);
}
