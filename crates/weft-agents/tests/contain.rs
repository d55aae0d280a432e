//! Containment against real processes: what an attempt starts ends with it, however it
//! ends, and a confined attempt writes only where it may.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;
use std::thread;
use std::time::{Duration, Instant};

use weft_agents::StreamKind;
use weft_agents::contain::{Containment, SUPERVISOR_ARG, WritePaths, landlock_available};
use weft_agents::manifest::LaunchSpec;
use weft_agents::supervise::{Attempt, Outcome, SuperviseOptions, process_alive};

const SUPERVISOR: &str = env!("CARGO_BIN_EXE_weft-supervisor");

/// Starts three escapees and records their pids: a `setsid` grandchild that keeps the
/// output pipe, a `nohup` daemon from a double fork, and a new-session grandchild that
/// ignores SIGTERM (its `sleep` inherits the ignored signal).
const ESCAPEES: &str = r#"
setsid sh -c 'echo $$ > setsid.pid; exec sleep 300' &
( nohup sh -c 'echo $$ > nohup.pid; exec sleep 300' >/dev/null 2>&1 & )
setsid sh -c 'trap "" TERM; echo $$ > stubborn.pid; while :; do sleep 1; done' >/dev/null 2>&1 &
while [ ! -s setsid.pid ] || [ ! -s nohup.pid ] || [ ! -s stubborn.pid ]; do sleep 0.01; done
"#;

fn spec(dir: &Path, then: &str) -> LaunchSpec {
    LaunchSpec {
        program: "sh".into(),
        args: vec!["-c".into(), format!("{ESCAPEES}\n{then}")],
        env: Vec::new(),
        stdin: None,
        prompt_file: None,
        cwd: dir.to_owned(),
        needs_tty: false,
        stream: StreamKind::Plain,
        receives_marker: false,
        relay: None,
    }
}

fn containment(confine: Option<WritePaths>, tmp: Option<PathBuf>) -> Containment {
    Containment {
        supervisor: SUPERVISOR.into(),
        kill_grace: Duration::from_millis(300),
        confine,
        tmp_dir: tmp,
        env: None,
    }
}

fn options(dir: &Path, timeout: Duration, contain: Containment) -> SuperviseOptions {
    let mut options = SuperviseOptions::new(dir.join("logs/attempt.log"), timeout);
    options.kill_grace = Duration::from_millis(300);
    options.contain = Some(contain);
    options
}

/// Starts `launch` contained (no confinement), its events unread.
fn start(launch: &LaunchSpec, dir: &Path, timeout: Duration) -> Attempt {
    let (tx, _rx) = channel();
    Attempt::start(launch, options(dir, timeout, containment(None, None)), tx).expect("starts")
}

fn read_pid(path: &Path) -> u32 {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(Instant::now() < until, "no pid in {}", path.display());
        thread::sleep(Duration::from_millis(10));
    }
}

fn escapees(dir: &Path) -> Vec<(&'static str, u32)> {
    ["setsid", "nohup", "stubborn"]
        .into_iter()
        .map(|name| (name, read_pid(&dir.join(format!("{name}.pid")))))
        .collect()
}

fn assert_all_gone(pids: &[(&str, u32)]) {
    for (name, pid) in pids {
        assert!(
            !process_alive(*pid),
            "the {name} grandchild (pid {pid}) survived the attempt"
        );
    }
}

fn run(dir: &Path, then: &str, timeout: Duration) -> (Outcome, Vec<(&'static str, u32)>) {
    let (tx, _rx) = channel();
    let attempt = Attempt::start(
        &spec(dir, then),
        options(dir, timeout, containment(None, None)),
        tx,
    )
    .expect("starts");
    let outcome = attempt.wait();
    (outcome, escapees(dir))
}

#[test]
fn escaped_grandchildren_end_when_the_agent_passes() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, pids) = run(dir.path(), "exit 0", Duration::from_secs(30));
    assert_eq!(outcome.exit_code, Some(0));
    assert_all_gone(&pids);
}

#[test]
fn escaped_grandchildren_end_when_the_agent_fails_and_its_exit_code_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, pids) = run(dir.path(), "exit 3", Duration::from_secs(30));
    assert_eq!(outcome.exit_code, Some(3));
    assert_all_gone(&pids);
}

#[test]
fn escaped_grandchildren_end_when_the_attempt_times_out() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, pids) = run(dir.path(), "sleep 300", Duration::from_secs(2));
    assert!(outcome.timed_out);
    // The agent died of the supervisor's SIGTERM, and the engine sees that signal.
    assert_eq!(outcome.signal, Some(15));
    assert_all_gone(&pids);
}

#[test]
fn escaped_grandchildren_end_when_the_attempt_is_cancelled() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, _rx) = channel();
    let mut launch = spec(dir.path(), "");
    launch.args = vec!["-c".into(), format!("trap '' TERM\n{ESCAPEES}\nsleep 300")];
    let attempt = Attempt::start(
        &launch,
        options(dir.path(), Duration::from_secs(60), containment(None, None)),
        tx,
    )
    .expect("starts");
    let pids = escapees(dir.path());
    attempt.canceller().cancel();
    let outcome = attempt.wait();
    assert!(outcome.cancelled);
    assert_eq!(outcome.signal, Some(9), "the agent ignored SIGTERM");
    assert_all_gone(&pids);
}

#[test]
fn a_missing_program_is_still_a_spawn_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut launch = spec(dir.path(), "");
    launch.program = "weft-no-such-program".into();
    let (tx, _rx) = channel();
    let err = Attempt::start(
        &launch,
        options(dir.path(), Duration::from_secs(5), containment(None, None)),
        tx,
    )
    .unwrap_err();
    assert!(err.to_string().contains("program not found"), "{err}");
}

/// The supervisor reads its stop signals from a signalfd, with them blocked; the agent
/// must not inherit that mask (nor Rust's ignored `SIGPIPE`), or it and everything it
/// starts would sit out every `SIGTERM` until the `SIGKILL` after the grace.
#[test]
fn the_agent_starts_with_no_signal_blocked_or_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let mut launch = spec(dir.path(), "");
    launch.program = "cat".into();
    launch.args = vec!["/proc/self/status".into()];
    let attempt = start(&launch, dir.path(), Duration::from_secs(30));
    let outcome = attempt.wait();
    assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
    let field = |name: &str| {
        outcome
            .tail
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map(str::trim)
            .unwrap_or_else(|| panic!("no {name} in {}", outcome.tail))
            .to_owned()
    };
    assert_eq!(field("SigBlk:"), "0000000000000000");
    // glibc's own real-time signals (32 and 33) may show as ignored; none of the
    // standard ones (1 to 31, SIGPIPE among them) may.
    let ignored = u64::from_str_radix(&field("SigIgn:"), 16).unwrap();
    assert_eq!(ignored & 0x7fff_ffff, 0, "ignored: {ignored:#x}");
}

/// A supervisor that ended every process of its attempt says so in its process name,
/// which the engine reads instead of scanning `/proc` for the attempt's group.
#[test]
fn a_supervisor_that_ended_its_whole_tree_exits_named_clear() {
    use nix::sys::wait::{Id, WaitPidFlag, waitid};
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let mut supervisor = Command::new(SUPERVISOR)
        .args([SUPERVISOR_ARG, "--grace-ms", "300", "--", "sh", "-c"])
        .arg(format!("{ESCAPEES}\nexit 0"))
        .current_dir(dir.path())
        .process_group(0)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pids = escapees(dir.path());
    let pid = i32::try_from(supervisor.id()).unwrap();
    // Exited, not reaped: what the engine's output thread sees.
    waitid(
        Id::Pid(nix::unistd::Pid::from_raw(pid)),
        WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT,
    )
    .unwrap();
    let name = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap();
    assert_eq!(name.trim_end(), "weft-clear");
    assert_all_gone(&pids);
    assert_eq!(supervisor.wait().unwrap().code(), Some(0));
}

/// The supervisor is no wall against its own agent (same user): killed by it, it ends
/// nothing and says nothing. The engine then finds the agent and what it started in the
/// attempt's process group and ends them.
#[test]
fn what_an_agent_that_killed_its_supervisor_left_in_the_group_is_ended() {
    let dir = tempfile::tempdir().unwrap();
    let mut launch = spec(dir.path(), "");
    launch.args = vec![
        "-c".into(),
        "sleep 300 & echo $! > child.pid; echo $$ > agent.pid; kill -KILL $PPID; sleep 300".into(),
    ];
    let attempt = start(&launch, dir.path(), Duration::from_secs(60));
    let pids = [
        ("agent", read_pid(&dir.path().join("agent.pid"))),
        ("child", read_pid(&dir.path().join("child.pid"))),
    ];
    let outcome = attempt.wait();
    assert_eq!(outcome.signal, Some(9), "the supervisor's own death");
    assert!(!outcome.timed_out);
    assert_all_gone(&pids);
}

/// The lifeline: the supervisor's parent (standing in for the engine) is killed with
/// SIGKILL; everything the attempt started is gone within 5 s, with nobody asking.
#[test]
fn everything_ends_within_five_seconds_after_the_engine_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    // `sh` is the "engine": it starts the supervisor and waits; `$$` is its pid.
    let script = format!(
        "'{SUPERVISOR}' {SUPERVISOR_ARG} --parent $$ --grace-ms 5000 -- sh -c \"$0\" & wait",
    );
    let mut engine = Command::new("sh")
        .arg("-c")
        .arg(&script)
        .arg(format!("{ESCAPEES}\nsleep 300"))
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pids = escapees(dir.path());
    let killed_at = Instant::now();
    engine.kill().unwrap();
    engine.wait().unwrap();
    loop {
        if pids.iter().all(|(_, pid)| !process_alive(*pid)) {
            break;
        }
        assert!(
            killed_at.elapsed() < Duration::from_secs(5),
            "still alive 5 s after the engine died: {:?}",
            pids.iter()
                .filter(|(_, pid)| process_alive(*pid))
                .collect::<Vec<_>>()
        );
        thread::sleep(Duration::from_millis(20));
    }
}

/// Whether Landlock can be tested here; says so loudly when not.
#[allow(clippy::print_stderr)]
fn landlock_or_say_so() -> bool {
    let available = landlock_available();
    if !available {
        eprintln!("SKIPPED: this kernel does not enforce Landlock");
    }
    available
}

fn confined(dir: &Path, script: &str, write: Vec<PathBuf>, tmp: PathBuf) -> Outcome {
    let mut launch = spec(dir, "");
    launch.args = vec!["-c".into(), script.into()];
    let (tx, _rx) = channel();
    let confine = WritePaths {
        paths: write,
        create: Vec::new(),
    };
    Attempt::start(
        &launch,
        options(
            dir,
            Duration::from_secs(30),
            containment(Some(confine), Some(tmp)),
        ),
        tx,
    )
    .expect("starts")
    .wait()
}

#[test]
fn a_confined_attempt_writes_its_folder_and_temp_folder_and_nothing_else() {
    if !landlock_or_say_so() {
        return;
    }
    let root = tempfile::tempdir().unwrap();
    let work = root.path().join("work");
    std::fs::create_dir(&work).unwrap();
    std::fs::write(root.path().join("outside.txt"), "mine\n").unwrap();
    let tmp = root.path().join("tmp-attempt");
    let script = r#"
        echo ok > inside.txt || exit 10
        echo ok > "$TMPDIR/scratch" || exit 11
        echo ok > /dev/null || exit 12
        if { echo evil > ../outside.txt; } 2>err.txt; then exit 13; fi
        grep -q "Permission denied" err.txt || exit 14
        if rm ../outside.txt 2>/dev/null; then exit 15; fi
        if touch ../new.txt 2>/dev/null; then exit 16; fi
        cat ../outside.txt > read.txt || exit 17
        exit 0
    "#;
    let outcome = confined(&work, script, vec![work.clone()], tmp.clone());
    assert_eq!(outcome.exit_code, Some(0), "{}", outcome.tail);
    assert_eq!(
        std::fs::read_to_string(root.path().join("outside.txt")).unwrap(),
        "mine\n"
    );
    assert!(!root.path().join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(work.join("read.txt")).unwrap(),
        "mine\n"
    );
    assert!(
        !tmp.exists(),
        "the private temp folder is removed after the attempt"
    );
}

#[test]
fn a_confined_attempt_cannot_signal_the_engine() {
    if !landlock_or_say_so() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let me = std::process::id();
    let script = format!("if kill -0 {me} 2>/dev/null; then exit 20; fi; kill -0 $$ || exit 21");
    let tmp = dir.path().join("tmp");
    let outcome = confined(dir.path(), &script, vec![dir.path().to_owned()], tmp);
    assert_eq!(outcome.exit_code, Some(0), "{}", outcome.tail);
    assert!(process_alive(me));
}
