//! Process supervision against real processes (`sh` scripts in temporary folders).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, channel};
use std::thread;
use std::time::{Duration, Instant};

use weft_agents::StreamKind;
use weft_agents::event::AgentEvent;
use weft_agents::manifest::LaunchSpec;
use weft_agents::supervise::{
    Attempt, LINE_EVENT_MAX, Outcome, OutputStream, SpawnError, SuperviseOptions, SupervisorEvent,
    group_alive, kill_group, process_alive, process_start_ticks,
};

const TOKEN: &str = "WEFT_DONE_0123456789abcdef";

fn sh(dir: &Path, script: &str) -> LaunchSpec {
    LaunchSpec {
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        env: vec![("WEFT_TEST_TOKEN".into(), TOKEN.into())],
        stdin: None,
        prompt_file: None,
        cwd: dir.to_owned(),
        needs_tty: false,
        stream: StreamKind::Plain,
        receives_marker: true,
        relay: None,
    }
}

fn options(dir: &Path) -> SuperviseOptions {
    let mut options = SuperviseOptions::new(dir.join("logs/attempt.log"), Duration::from_secs(10));
    options.kill_grace = Duration::from_millis(500);
    options.marker_grace = Duration::from_secs(5);
    options.marker_token = Some(TOKEN.into());
    options
}

fn start(spec: &LaunchSpec, options: SuperviseOptions) -> (Attempt, Receiver<SupervisorEvent>) {
    let (tx, rx) = channel();
    let attempt = Attempt::start(spec, options, tx).expect("starts");
    (attempt, rx)
}

fn run(spec: &LaunchSpec, options: SuperviseOptions) -> (Outcome, Vec<SupervisorEvent>) {
    let (attempt, rx) = start(spec, options);
    let outcome = attempt.wait();
    (outcome, rx.try_iter().collect())
}

fn log(dir: &Path) -> String {
    String::from_utf8_lossy(&std::fs::read(dir.join("logs/attempt.log")).unwrap()).into_owned()
}

fn lines(events: &[SupervisorEvent]) -> Vec<(OutputStream, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            SupervisorEvent::Line { stream, text } => Some((*stream, text.clone())),
            _ => None,
        })
        .collect()
}

fn read_pid(path: PathBuf) -> u32 {
    let until = Instant::now() + Duration::from_secs(5);
    loop {
        if let Ok(text) = std::fs::read_to_string(&path)
            && let Ok(pid) = text.trim().parse()
        {
            return pid;
        }
        assert!(Instant::now() < until, "no pid in {}", path.display());
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn reports_exit_code_and_started_first() {
    let dir = tempfile::tempdir().unwrap();
    let (attempt, rx) = start(&sh(dir.path(), "echo hi; exit 7"), options(dir.path()));
    let pid = attempt.pid;
    assert_eq!(attempt.process_group, pid as i32);
    assert!(attempt.start_ticks.is_some());
    let outcome = attempt.wait();
    assert_eq!(outcome.exit_code, Some(7));
    assert_eq!(outcome.signal, None);
    assert!(!outcome.timed_out && !outcome.cancelled && !outcome.killed_after_marker);
    assert_eq!(outcome.marker, None);
    assert_eq!(outcome.tail, "hi\n");
    assert_eq!(outcome.output_bytes, 3);
    let events: Vec<_> = rx.try_iter().collect();
    assert_eq!(
        events[0],
        SupervisorEvent::Started {
            pid,
            process_group: pid as i32
        }
    );
    assert!(!process_alive(pid), "the leader is reaped");
}

#[test]
fn reports_death_by_signal() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, _) = run(&sh(dir.path(), "kill -KILL $$"), options(dir.path()));
    assert_eq!(outcome.exit_code, None);
    assert_eq!(outcome.signal, Some(9));
}

#[test]
fn logs_stdout_and_stderr_in_arrival_order() {
    let dir = tempfile::tempdir().unwrap();
    let script =
        "echo one; sleep 0.1; echo two >&2; sleep 0.1; echo three; sleep 0.1; printf 'four' >&2";
    let (outcome, events) = run(&sh(dir.path(), script), options(dir.path()));
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(log(dir.path()), "one\ntwo\nthree\nfour");
    assert_eq!(outcome.tail, "one\ntwo\nthree\nfour");
    assert_eq!(
        lines(&events),
        vec![
            (OutputStream::Stdout, "one".into()),
            (OutputStream::Stderr, "two".into()),
            (OutputStream::Stdout, "three".into()),
            // No trailing newline: still a line at EOF.
            (OutputStream::Stderr, "four".into()),
        ]
    );
    assert!(!outcome.log_truncated);
}

#[test]
fn sees_a_marker_split_across_writes_and_waits_for_a_clean_exit() {
    let dir = tempfile::tempdir().unwrap();
    let script =
        "printf 'WEFT_DO'; sleep 0.1; printf 'NE_0123456789abcdef\\n'; sleep 0.2; echo bye";
    let (outcome, events) = run(&sh(dir.path(), script), options(dir.path()));
    assert_eq!(outcome.marker, Some("raw"));
    assert!(events.contains(&SupervisorEvent::MarkerSeen { view: "raw" }));
    assert!(!outcome.killed_after_marker, "it exited by itself");
    assert_eq!(outcome.exit_code, Some(0));
    assert!(outcome.tail.ends_with("bye\n"));
}

#[test]
fn marker_in_stderr_counts_for_plain_runners() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, _) = run(
        &sh(dir.path(), "echo \"$WEFT_TEST_TOKEN\" >&2"),
        options(dir.path()),
    );
    assert_eq!(outcome.marker, Some("raw"));
}

#[test]
fn no_marker_scan_for_runners_that_receive_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh(dir.path(), "echo \"$WEFT_TEST_TOKEN\"");
    spec.receives_marker = false;
    let (outcome, _) = run(&spec, options(dir.path()));
    assert_eq!(outcome.marker, None);
}

#[test]
fn kills_an_agent_still_running_after_the_marker_grace() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(dir.path());
    options.marker_grace = Duration::from_millis(300);
    let started = Instant::now();
    let (outcome, _) = run(
        &sh(dir.path(), "echo \"$WEFT_TEST_TOKEN\"; sleep 60"),
        options,
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(outcome.marker, Some("raw"));
    assert!(outcome.killed_after_marker);
    assert!(!outcome.timed_out);
    assert_eq!(outcome.signal, Some(15));
}

#[test]
fn timeout_kills_the_process_and_its_grandchildren() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(dir.path());
    options.timeout = Duration::from_millis(500);
    let script = "sleep 300 & echo $! > bg.pid; sh -c 'echo $$ > inner.pid; exec sleep 300' & wait";
    let started = Instant::now();
    let (attempt, _rx) = start(&sh(dir.path(), script), options);
    let leader = attempt.pid;
    let group = attempt.process_group;
    let bg = read_pid(dir.path().join("bg.pid"));
    let inner = read_pid(dir.path().join("inner.pid"));
    assert!(process_alive(bg) && process_alive(inner));
    let outcome = attempt.wait();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(outcome.timed_out);
    assert_eq!(outcome.signal, Some(15));
    for pid in [leader, bg, inner] {
        assert!(!process_alive(pid), "pid {pid} survived");
    }
    assert!(!group_alive(group));
}

#[test]
fn descendants_left_behind_at_exit_are_killed() {
    let dir = tempfile::tempdir().unwrap();
    // The agent exits at once; its background job holds stdout open and would run for
    // five minutes.
    let script = "sleep 300 & echo $! > bg.pid; echo done";
    let started = Instant::now();
    let (outcome, _) = run(&sh(dir.path(), script), options(dir.path()));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(outcome.exit_code, Some(0));
    assert!(!outcome.timed_out && !outcome.cancelled);
    let bg = read_pid(dir.path().join("bg.pid"));
    assert!(!process_alive(bg));
}

#[test]
fn cancel_from_another_thread() {
    let dir = tempfile::tempdir().unwrap();
    let (attempt, _rx) = start(&sh(dir.path(), "sleep 60"), options(dir.path()));
    let canceller = attempt.canceller();
    let started = Instant::now();
    let handle = thread::spawn(move || {
        thread::sleep(Duration::from_millis(200));
        canceller.cancel();
        canceller.cancel();
        canceller.is_cancelled()
    });
    let outcome = attempt.wait();
    assert!(handle.join().unwrap());
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(outcome.cancelled);
    assert!(!outcome.timed_out);
    assert_eq!(outcome.signal, Some(15));
}

#[test]
fn escalates_to_sigkill_after_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(dir.path());
    options.timeout = Duration::from_millis(200);
    options.kill_grace = Duration::from_millis(300);
    let started = Instant::now();
    let (outcome, _) = run(
        &sh(
            dir.path(),
            "trap '' TERM; echo ready; while :; do sleep 0.05; done",
        ),
        options,
    );
    assert!(outcome.timed_out);
    assert_eq!(outcome.signal, Some(9));
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(500) && elapsed < Duration::from_secs(5));
}

#[test]
fn idle_event_after_silence_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(dir.path());
    options.idle_after = Duration::from_millis(250);
    let (outcome, events) = run(&sh(dir.path(), "echo a; sleep 0.6; echo b"), options);
    assert_eq!(outcome.exit_code, Some(0));
    let idles: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            SupervisorEvent::Idle { silent_for } => Some(*silent_for),
            _ => None,
        })
        .collect();
    assert_eq!(idles.len(), 1, "{events:?}");
    assert!(idles[0] >= Duration::from_millis(250));
}

#[test]
fn log_is_capped_with_a_note_but_everything_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(dir.path());
    options.log_cap_bytes = 1000;
    options.tail_bytes = 100;
    let script = "i=0; while [ $i -lt 200 ]; do echo line-$i-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; i=$((i+1)); done; echo \"$WEFT_TEST_TOKEN\"";
    let (outcome, _) = run(&sh(dir.path(), script), options);
    let log = log(dir.path());
    assert!(outcome.log_truncated);
    assert!(log.ends_with("\n[weft: log capped at 1000 bytes; further output dropped]\n"));
    assert!(log.len() < 1100);
    assert!(log.starts_with("line-0-"));
    assert_eq!(outcome.marker, Some("raw"), "scanned past the cap");
    assert!(outcome.output_bytes > 7000);
    assert!(outcome.tail.len() <= 100);
    assert!(outcome.tail.ends_with(&format!("{TOKEN}\n")));
}

#[test]
fn secrets_are_masked_in_log_tail_and_events() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(dir.path());
    options.secrets = vec!["sk-very-secret-42".into(), "abc".into()];
    let script = "echo key=sk-very-secret-42 abc; sleep 0.1; printf 'split sk-ve' >&2; sleep 0.1; printf 'ry-secret-42 end' >&2";
    let (outcome, events) = run(&sh(dir.path(), script), options);
    let log = log(dir.path());
    for text in [&log, &outcome.tail] {
        assert!(!text.contains("secret-42"), "{text}");
        assert!(text.contains("key=****"), "{text}");
        assert!(text.contains("split **** end"), "{text}");
        assert!(text.contains("abc"), "short values are not masked: {text}");
    }
    let lines = lines(&events);
    assert!(lines.iter().all(|(_, text)| !text.contains("secret")));
    assert!(lines.contains(&(OutputStream::Stdout, "key=**** abc".into())));
    assert!(lines.contains(&(OutputStream::Stderr, "split **** end".into())));
}

#[test]
fn long_lines_are_cut_for_display_only() {
    let dir = tempfile::tempdir().unwrap();
    let script = "head -c 10000 /dev/zero | tr '\\0' 'x'; echo; echo short";
    let (outcome, events) = run(&sh(dir.path(), script), options(dir.path()));
    assert_eq!(outcome.output_bytes, 10007);
    assert_eq!(log(dir.path()).len(), 10007);
    let lines = lines(&events);
    assert_eq!(lines.len(), 2);
    assert!(lines[0].1.len() <= LINE_EVENT_MAX);
    assert!(lines[0].1.starts_with("xxxx"));
    assert!(
        lines[0].1.ends_with("[weft: line cut, 10000 bytes]"),
        "{}",
        lines[0].1
    );
    assert_eq!(lines[1].1, "short");
}

#[test]
fn binary_output_is_handled_lossily() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, events) = run(
        &sh(dir.path(), "printf 'a\\377\\376b\\r\\n\\0c'"),
        options(dir.path()),
    );
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(outcome.output_bytes, 8);
    let lines = lines(&events);
    assert_eq!(lines[0].1, "a\u{fffd}\u{fffd}b");
    assert_eq!(lines[1].1, "\0c");
}

#[test]
fn a_child_that_never_reads_a_large_prompt_does_not_deadlock() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh(dir.path(), "sleep 0.2; echo finished");
    spec.stdin = Some("x".repeat(8 * 1024 * 1024));
    let started = Instant::now();
    let (outcome, _) = run(&spec, options(dir.path()));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(outcome.tail, "finished\n");
}

#[test]
fn the_prompt_arrives_on_stdin_and_stdin_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh(dir.path(), "wc -c");
    spec.stdin = Some("y".repeat(1024 * 1024 + 3));
    let (outcome, _) = run(&spec, options(dir.path()));
    assert_eq!(outcome.tail.trim(), "1048579");
    // Without a prompt, stdin is /dev/null: `cat` ends at once.
    let (outcome, _) = run(&sh(dir.path(), "cat; echo eof"), options(dir.path()));
    assert_eq!(outcome.tail, "eof\n");
}

#[test]
fn prompt_file_is_written_before_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh(dir.path(), "cat .weft/prompt.md");
    spec.prompt_file = Some((PathBuf::from(".weft/prompt.md"), "do the thing\n".into()));
    let (outcome, _) = run(&spec, options(dir.path()));
    assert_eq!(outcome.tail, "do the thing\n");
}

#[test]
fn a_child_that_closes_stdout_early_keeps_being_watched() {
    let dir = tempfile::tempdir().unwrap();
    let script = "echo before; exec 1>&-; sleep 0.4; echo after >&2; exit 3";
    let started = Instant::now();
    let (outcome, events) = run(&sh(dir.path(), script), options(dir.path()));
    assert!(started.elapsed() >= Duration::from_millis(400));
    assert_eq!(outcome.exit_code, Some(3));
    assert_eq!(
        lines(&events),
        vec![
            (OutputStream::Stdout, "before".into()),
            (OutputStream::Stderr, "after".into())
        ]
    );
}

#[test]
fn spawn_errors_name_the_program_and_the_directory() {
    let dir = tempfile::tempdir().unwrap();
    let (tx, _rx) = channel();

    let mut spec = sh(dir.path(), "true");
    spec.program = "weft-no-such-program-4711".into();
    let err = Attempt::start(&spec, options(dir.path()), tx.clone()).unwrap_err();
    assert!(matches!(err, SpawnError::NotFound { .. }), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("weft-no-such-program-4711") && message.contains("not found"));
    assert!(
        message.contains(&dir.path().display().to_string()),
        "{message}"
    );

    let script = dir.path().join("agent.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    let mut spec = sh(dir.path(), "true");
    spec.program = script.display().to_string();
    spec.args.clear();
    let err = Attempt::start(&spec, options(dir.path()), tx.clone()).unwrap_err();
    assert!(
        matches!(err, SpawnError::PermissionDenied { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("agent.sh") && err.to_string().contains("permission denied"));

    std::fs::write(&script, "echo no interpreter line\n").unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let err = Attempt::start(&spec, options(dir.path()), tx.clone()).unwrap_err();
    assert!(matches!(err, SpawnError::ExecFormat { .. }), "{err:?}");
    assert!(err.to_string().contains("agent.sh") && err.to_string().contains("#!"));

    let mut spec = sh(&dir.path().join("gone"), "true");
    let err = Attempt::start(&spec, options(dir.path()), tx.clone()).unwrap_err();
    assert!(matches!(err, SpawnError::CwdMissing { .. }), "{err:?}");
    assert!(err.to_string().contains("gone") && err.to_string().contains("does not exist"));

    spec.cwd = dir.path().to_owned();
    std::fs::write(dir.path().join("plain-file"), "").unwrap();
    spec.prompt_file = Some((PathBuf::from("plain-file/prompt.md"), "hi".into()));
    let err = Attempt::start(&spec, options(dir.path()), tx.clone()).unwrap_err();
    assert!(matches!(err, SpawnError::PromptFile { .. }), "{err:?}");
    assert!(err.to_string().contains("prompt.md"));
}

#[test]
fn runs_under_a_pseudo_terminal_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh(
        dir.path(),
        "test -t 0 && test -t 1 && test -t 2 && echo all-tty; printf '\\033[2;5HWEFT_DONE_\\033[2;15H0123456789abcdef'; sleep 0.3",
    );
    spec.needs_tty = true;
    let (outcome, events) = run(&spec, options(dir.path()));
    assert_eq!(outcome.exit_code, Some(0));
    let lines = lines(&events);
    assert_eq!(lines[0], (OutputStream::Stdout, "all-tty".into()));
    assert!(outcome.marker.is_some(), "{outcome:?}");
}

/// Three lines of a real Claude Code stream (`cc2.1.197-stream-json-tool-read-success`),
/// shortened, with `{TOOL}` in a tool result and `{RESULT}` in the final result.
const CLAUDE_STREAM: &str = r#"{"type":"system","subtype":"init","cwd":"/tmp/mockproj-claude","session_id":"11111111-2222-4333-8444-555555555555","tools":["Read"],"model":"claude-sonnet-4-5-20250929","permissionMode":"default"}
{"type":"assistant","message":{"id":"msg_mock0005","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[{"type":"text","text":"I will use a tool first."}],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":120,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1},"context_management":null},"parent_tool_use_id":null,"session_id":"11111111-2222-4333-8444-555555555555"}
{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_mock0006","type":"tool_result","content":"1\thello {TOOL} from the fixture file\n2\t"}]},"parent_tool_use_id":null,"session_id":"11111111-2222-4333-8444-555555555555","uuid":"5c2ad68d-aac2-4e7e-b92f-e6e29acbe8e6"}
{"type":"result","subtype":"success","is_error":false,"duration_ms":226,"num_turns":2,"result":"All done. {RESULT}","stop_reason":"end_turn","session_id":"11111111-2222-4333-8444-555555555555","total_cost_usd":0.00132,"usage":{"input_tokens":240,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":12},"permission_denials":[]}
"#;

fn claude(dir: &Path, tool: &str, result: &str) -> LaunchSpec {
    let stream = CLAUDE_STREAM
        .replace("{TOOL}", tool)
        .replace("{RESULT}", result);
    std::fs::write(dir.join("stream.jsonl"), stream).unwrap();
    let mut spec = sh(
        dir,
        "while IFS= read -r line; do printf '%s\\n' \"$line\"; sleep 0.01; done < stream.jsonl",
    );
    spec.stream = StreamKind::ClaudeStreamJson;
    spec
}

#[test]
fn structured_stream_marker_only_in_tool_output_is_not_seen() {
    let dir = tempfile::tempdir().unwrap();
    let (outcome, events) = run(
        &claude(dir.path(), TOKEN, "no marker here"),
        options(dir.path()),
    );
    assert_eq!(outcome.marker, None);
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, SupervisorEvent::MarkerSeen { .. }))
    );
    assert_eq!(
        outcome.final_text.as_deref(),
        Some("All done. no marker here")
    );
    assert_eq!(
        outcome.session_id.as_deref(),
        Some("11111111-2222-4333-8444-555555555555")
    );
    assert_eq!(outcome.cost_usd, Some(0.00132));
    assert_eq!(outcome.stream_error, None);
    assert!(events.iter().any(|e| matches!(
        e,
        SupervisorEvent::Agent(AgentEvent::AssistantText { text, .. }) if text == "I will use a tool first."
    )));
}

#[test]
fn structured_stream_marker_in_the_result_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(dir.path());
    options.secrets = vec!["hello-secret".into()];
    let (outcome, events) = run(&claude(dir.path(), "hello-secret", TOKEN), options);
    assert_eq!(outcome.marker, Some("final_result"));
    assert!(events.contains(&SupervisorEvent::MarkerSeen {
        view: "final_result"
    }));
    assert!(!outcome.killed_after_marker);
    assert_eq!(outcome.final_text, Some(format!("All done. {TOKEN}")));
    assert!(!log(dir.path()).contains("hello-secret"));
    assert!(log(dir.path()).contains("hello **** from"));
}

#[test]
fn helpers_kill_a_group_and_identify_processes() {
    let dir = tempfile::tempdir().unwrap();
    let (attempt, _rx) = start(&sh(dir.path(), "sleep 60 & sleep 60"), options(dir.path()));
    let group = attempt.process_group;
    assert!(process_alive(attempt.pid));
    assert_eq!(process_start_ticks(attempt.pid), attempt.start_ticks);
    assert!(group_alive(group));
    assert!(kill_group(group, Duration::from_millis(500)));
    let outcome = attempt.wait();
    assert_eq!(outcome.signal, Some(15));
    assert!(!outcome.cancelled && !outcome.timed_out);
    assert!(!group_alive(group));
    assert!(!kill_group(group, Duration::ZERO), "nothing left to signal");
}

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Prints its measurements (see them with `--nocapture`); run it alone for a peak RSS
/// not raised by the other tests.
#[test]
#[allow(clippy::print_stderr)]
fn a_flood_of_output_keeps_memory_flat() {
    const FLOOD: u64 = 200_000_000;
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(dir.path());
    options.timeout = Duration::from_secs(60);
    options.log_cap_bytes = 1024 * 1024;
    options.tail_bytes = 64 * 1024;
    options.secrets = vec!["never-printed-secret".into()];
    let line = "x".repeat(999);
    let spec = sh(
        dir.path(),
        &format!("yes {line} | head -c {FLOOD}; echo; echo \"$WEFT_TEST_TOKEN\""),
    );
    let before = peak_rss_kib();
    let (attempt, rx) = start(&spec, options);
    let drain = thread::spawn(move || rx.iter().count());
    let started = Instant::now();
    let outcome = attempt.wait();
    let elapsed = started.elapsed();
    let events = drain.join().unwrap();
    let after = peak_rss_kib();
    let growth = after.saturating_sub(before);
    eprintln!(
        "flood: {FLOOD} bytes in {elapsed:?}, {events} events, peak RSS {before} KiB -> {after} KiB (+{growth} KiB)"
    );
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(outcome.output_bytes, FLOOD + 1 + TOKEN.len() as u64 + 1);
    assert_eq!(outcome.marker, Some("raw"));
    assert!(outcome.tail.len() <= 64 * 1024);
    assert!(outcome.log_truncated);
    let log_len = std::fs::metadata(dir.path().join("logs/attempt.log"))
        .unwrap()
        .len();
    assert!(log_len < 1024 * 1024 + 100);
    assert!(growth < 64 * 1024, "peak RSS grew by {growth} KiB");
}

#[test]
fn pipes_held_by_a_process_outside_the_group_are_not_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(dir.path());
    // Effectively no timeout: nothing may depend on it.
    options.timeout = Duration::MAX;
    let script = "setsid sh -c 'echo $$ > escaped.pid; exec sleep 30' & \
                  while [ ! -s escaped.pid ]; do sleep 0.01; done; echo bye";
    let started = Instant::now();
    let (outcome, _) = run(&sh(dir.path(), script), options);
    let escaped = read_pid(dir.path().join("escaped.pid"));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(outcome.tail, "bye\n");
    // It left the group (its own session), so it is not the attempt's to kill; clean up.
    assert!(process_alive(escaped));
    assert!(kill_group(escaped as i32, Duration::from_millis(500)));
}

#[test]
fn a_relayed_launch_sends_the_prompt_as_a_message_and_refuses_a_flood_of_requests() {
    use std::sync::Arc;
    use weft_agents::manifest::RelayProtocol;
    use weft_agents::supervise::{MAX_PENDING_PERMISSIONS, PermissionAnswer, PermissionRelay};

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let flood = MAX_PENDING_PERMISSIONS + 4;
    let script = format!(
        "read first\nprintf '%s\\n' \"$first\" > first.json\ni=0\nwhile [ $i -lt {flood} ]; do\n  printf '{{\"type\":\"control_request\",\"request_id\":\"r%s\",\"request\":{{\"subtype\":\"can_use_tool\",\"tool_name\":\"Bash\",\"input\":{{\"command\":\"ls\"}}}}}}\\n' $i\n  i=$((i+1))\ndone\nhead -n 4 > answers.txt\necho '{{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false,\"result\":\"done\"}}'\n"
    );
    let mut spec = sh(dir, &script);
    spec.stdin = Some("the prompt".into());
    spec.stream = StreamKind::ClaudeStreamJson;
    spec.relay = Some(RelayProtocol::ClaudeStdio);
    let mut options = options(dir);
    // Every request the relay takes waits (a person who is slow to answer).
    options.relay = Some(PermissionRelay(Arc::new(|_| {
        thread::sleep(Duration::from_secs(2));
        PermissionAnswer::Allow
    })));
    let started = Instant::now();
    let (outcome, _) = run(&spec, options);
    assert_eq!(outcome.exit_code, Some(0), "{outcome:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the excess was refused at once"
    );
    let first: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("first.json")).unwrap()).unwrap();
    assert_eq!(first["type"], "user");
    assert_eq!(first["message"]["content"], "the prompt");
    let answers = std::fs::read_to_string(dir.join("answers.txt")).unwrap();
    let answers: Vec<serde_json::Value> = answers
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 4);
    for answer in &answers {
        assert_eq!(answer["type"], "control_response");
        let response = &answer["response"]["response"];
        assert_eq!(response["behavior"], "deny", "{answer}");
        assert!(
            response["message"]
                .as_str()
                .unwrap()
                .contains("ask one at a time"),
            "{answer}"
        );
    }
}

#[test]
fn an_unlogged_process_keeps_no_file_and_its_stderr_tail_apart() {
    let dir = tempfile::tempdir().unwrap();
    let script = "echo out-1; echo err-1 >&2; echo out-2; printf 'err-2\\n' >&2";
    let mut options = SuperviseOptions::unlogged(Duration::from_secs(10));
    options.kill_grace = Duration::from_millis(500);
    let (outcome, events) = run(&sh(dir.path(), script), options);
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(outcome.stderr_tail, "err-1\nerr-2\n");
    assert!(outcome.tail.contains("out-2"), "{}", outcome.tail);
    assert!(lines(&events).contains(&(OutputStream::Stdout, "out-1".to_owned())));
    // Nothing was written anywhere.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn an_attempt_silent_past_its_idle_timeout_is_ended_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = options(dir.path());
    options.idle_after = Duration::from_millis(100);
    options.idle_timeout = Duration::from_millis(400);
    options.watch_dir = Some(dir.path().to_owned());
    let started = Instant::now();
    let (outcome, events) = run(&sh(dir.path(), "echo started; sleep 30"), options);
    assert!(outcome.idle_timed_out && outcome.timed_out, "{outcome:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "waited for the sleep"
    );
    assert!(
        events
            .iter()
            .any(|e| matches!(e, SupervisorEvent::Idle { .. })),
        "the idle notice came first"
    );
}

#[test]
fn file_changes_without_output_keep_an_attempt_alive_past_its_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("work")).unwrap();
    let mut options = options(dir.path());
    options.idle_after = Duration::from_millis(100);
    options.idle_timeout = Duration::from_millis(600);
    options.watch_dir = Some(dir.path().join("work"));
    let script =
        "i=0; while [ $i -lt 8 ]; do echo $i > work/progress.txt; sleep 0.2; i=$((i+1)); done";
    let (outcome, _) = run(&sh(dir.path(), script), options);
    assert!(!outcome.idle_timed_out && !outcome.timed_out, "{outcome:?}");
    assert_eq!(outcome.exit_code, Some(0));
}
