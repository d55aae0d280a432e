//! One turn's process: started in its own process group, the prompt written to stdin and
//! stdin closed, stdout read line by line to the end (Codex panics if its stdout closes
//! early), a bounded stderr tail kept, and the whole group killed (`SIGTERM`, then
//! `SIGKILL`) when the turn outlives its timeout or leaves processes behind.
//!
//! weft-agents' task supervisor does the same for runners, but it caps the lines it hands
//! out (they are for display) and needs a log file; a planner turn needs every stdout line
//! whole, so this is a small loop over the same group helpers.

use std::io::{self, Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use weft_agents::supervise::{group_alive, kill_group, process_alive};

/// `SIGTERM` → `SIGKILL` grace when a group is killed.
const KILL_GRACE: Duration = Duration::from_secs(3);
/// Once the leader has exited, how long its stdout may stay open (held by a child) before
/// what is left of the group is killed.
const DRAIN_GRACE: Duration = Duration::from_secs(1);
/// How often the leader is checked while output is quiet.
const POLL: Duration = Duration::from_millis(20);
/// Longest stdout line handed to the parser; a longer one is skipped (and noted).
const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;
/// Lines in flight between the reader and the parser.
const CHANNEL_DEPTH: usize = 64;
/// Bytes of stderr kept (its end).
const STDERR_TAIL_BYTES: usize = 64 * 1024;

/// What to run for one turn.
#[derive(Debug)]
pub(super) struct RunSpec<'a> {
    pub program: &'a str,
    pub args: Vec<String>,
    pub cwd: &'a Path,
    pub env: Vec<(String, String)>,
    pub stdin: String,
    pub timeout: Duration,
    pub interrupt: Option<weft_core::interrupt::Interrupt>,
}

/// How the process ended.
#[derive(Debug, Default)]
pub(super) struct RunEnd {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// The user interrupted; the group was killed.
    pub interrupted: bool,
    /// The end of stderr, lossy UTF-8.
    pub stderr: String,
}

enum Msg {
    Line(String),
    Eof,
}

/// Runs the process, passing each stdout line (without its newline) to `on_line` on this
/// thread. `Err` is why it could not start, worded for the user.
pub(super) fn run(spec: &RunSpec<'_>, on_line: &mut dyn FnMut(&str)) -> Result<RunEnd, String> {
    if !spec.cwd.is_dir() {
        return Err(format!(
            "the workspace {} does not exist or is not a directory",
            spec.cwd.display()
        ));
    }
    let mut command = Command::new(spec.program);
    command
        .args(&spec.args)
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .current_dir(spec.cwd)
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = spawn_retrying(&mut command).map_err(|err| spawn_message(&err, spec))?;
    let pid = child.id();
    let group = i32::try_from(pid).unwrap_or(i32::MAX);

    // Until the leader is reaped, any way out of here (a panicking `on_line` included)
    // takes the group down with it.
    let mut guard = GroupGuard(Some(group));

    let (tx, rx) = sync_channel(CHANNEL_DEPTH);
    let stderr_tail = Arc::new(Mutex::new(Vec::new()));
    if let Err(err) = start_threads(&mut child, spec, tx, Arc::clone(&stderr_tail)) {
        drop(guard);
        let _ = child.wait();
        return Err(format!("cannot watch the process: {err}"));
    }

    let started = Instant::now();
    let deadline = started
        .checked_add(spec.timeout)
        .unwrap_or_else(|| started + Duration::from_secs(100 * 365 * 24 * 3600));
    let mut stdout_open = true;
    let mut timed_out = false;
    let mut interrupted = false;
    // When the leader was first seen gone while stdout stayed open.
    let mut leader_gone_since: Option<Instant> = None;
    // After a kill, how long output may still drain.
    let mut give_up_at: Option<Instant> = None;
    let mut next_check = Instant::now();
    loop {
        if stdout_open {
            match rx.recv_timeout(POLL) {
                Ok(Msg::Line(line)) => on_line(&line),
                Ok(Msg::Eof) | Err(RecvTimeoutError::Disconnected) => stdout_open = false,
                Err(RecvTimeoutError::Timeout) => {}
            }
        } else {
            thread::sleep(POLL.min(Duration::from_millis(5)));
        }
        let now = Instant::now();
        if stdout_open && now < next_check {
            continue;
        }
        next_check = now + POLL;
        let leader_alive = process_alive(pid);
        if !stdout_open && !leader_alive {
            break;
        }
        if !timed_out
            && !interrupted
            && weft_core::interrupt::Interrupt::raised(spec.interrupt.as_ref())
        {
            interrupted = true;
            kill_group(group, KILL_GRACE);
            give_up_at = Some(Instant::now() + DRAIN_GRACE);
            continue;
        }
        if !timed_out && !interrupted && now >= deadline {
            timed_out = true;
            kill_group(group, KILL_GRACE);
            give_up_at = Some(Instant::now() + DRAIN_GRACE);
            continue;
        }
        if give_up_at.is_some_and(|at| now >= at) {
            break;
        }
        if !leader_alive {
            let since = *leader_gone_since.get_or_insert(now);
            if now.duration_since(since) >= DRAIN_GRACE {
                // A child still holds stdout: stop the group, then let it drain briefly.
                if !group_alive(group) || give_up_at.is_some() {
                    break;
                }
                kill_group(group, KILL_GRACE);
                give_up_at = Some(Instant::now() + DRAIN_GRACE);
            }
        }
    }
    // The leader is exited but not reaped, so its pid still names the group: whatever the
    // turn left running goes with it.
    if group_alive(group) {
        kill_group(group, KILL_GRACE);
    }
    // Reaping frees the pid (the group id) for reuse: no signal may follow.
    guard.0 = None;
    let status = child
        .wait()
        .map_err(|err| format!("cannot wait for the process: {err}"))?;
    let stderr = {
        let tail = stderr_tail.lock().unwrap_or_else(PoisonError::into_inner);
        String::from_utf8_lossy(&tail).into_owned()
    };
    Ok(RunEnd {
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        interrupted,
        stderr,
    })
}

/// Kills the process group when dropped while still armed.
struct GroupGuard(Option<i32>);

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(group) = self.0.take() {
            kill_group(group, Duration::ZERO);
        }
    }
}

fn start_threads(
    child: &mut Child,
    spec: &RunSpec<'_>,
    tx: SyncSender<Msg>,
    stderr_tail: Arc<Mutex<Vec<u8>>>,
) -> io::Result<()> {
    let pid = child.id();
    if let Some(mut stdin) = child.stdin.take() {
        let prompt = spec.stdin.clone().into_bytes();
        thread::Builder::new()
            .name(format!("weft-planner-stdin-{pid}"))
            .spawn(move || {
                // A CLI that exits without reading makes this fail: fine. Dropping `stdin`
                // closes it, which is the end of the prompt.
                let _ = stdin.write_all(&prompt);
            })?;
    }
    if let Some(stdout) = child.stdout.take() {
        thread::Builder::new()
            .name(format!("weft-planner-stdout-{pid}"))
            .spawn(move || read_lines(stdout, &tx))?;
    }
    if let Some(mut stderr) = child.stderr.take() {
        thread::Builder::new()
            .name(format!("weft-planner-stderr-{pid}"))
            .spawn(move || {
                let mut buf = vec![0u8; 16 * 1024];
                loop {
                    match stderr.read(&mut buf) {
                        Ok(0) => break,
                        Ok(n) => {
                            let mut tail =
                                stderr_tail.lock().unwrap_or_else(PoisonError::into_inner);
                            tail.extend_from_slice(&buf[..n]);
                            if tail.len() > 2 * STDERR_TAIL_BYTES {
                                let cut = tail.len() - STDERR_TAIL_BYTES;
                                tail.drain(..cut);
                            }
                        }
                        Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                        Err(_) => break,
                    }
                }
            })?;
    }
    Ok(())
}

/// Reads to EOF whatever happens (the CLI must never see its stdout close), sending whole
/// lines. Once the receiver is gone the rest is read and dropped.
fn read_lines(mut stdout: impl Read, tx: &SyncSender<Msg>) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut line: Vec<u8> = Vec::new();
    let mut skipped = 0usize;
    let mut receiver_gone = false;
    let mut send = |line: &mut Vec<u8>, skipped: &mut usize| {
        let text = if *skipped > 0 {
            format!(
                "(weft skipped an output line of {} bytes: longer than {MAX_LINE_BYTES})",
                line.len() + *skipped
            )
        } else {
            String::from_utf8_lossy(line).into_owned()
        };
        line.clear();
        *skipped = 0;
        if !receiver_gone && tx.send(Msg::Line(text)).is_err() {
            receiver_gone = true;
        }
    };
    loop {
        let n = match stdout.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let mut rest = &buf[..n];
        while !rest.is_empty() {
            let (piece, ends_line) = match rest.iter().position(|&b| b == b'\n') {
                Some(pos) => (&rest[..pos], true),
                None => (rest, false),
            };
            if skipped > 0 || line.len() + piece.len() > MAX_LINE_BYTES {
                skipped += piece.len();
            } else {
                line.extend_from_slice(piece);
            }
            rest = &rest[piece.len() + usize::from(ends_line)..];
            if ends_line {
                send(&mut line, &mut skipped);
            }
        }
    }
    if !line.is_empty() || skipped > 0 {
        send(&mut line, &mut skipped);
    }
    let _ = tx.send(Msg::Eof);
}

/// `Command::spawn`, retried briefly on `ETXTBSY` (another thread had the freshly written
/// executable open for writing when this one forked).
fn spawn_retrying(command: &mut Command) -> io::Result<Child> {
    let mut tries = 0;
    loop {
        match command.spawn() {
            Err(err) if err.kind() == io::ErrorKind::ExecutableFileBusy && tries < 10 => {
                tries += 1;
                thread::sleep(Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

fn spawn_message(err: &io::Error, spec: &RunSpec<'_>) -> String {
    match err.kind() {
        io::ErrorKind::NotFound if spec.program.contains('/') => "no such program".to_owned(),
        io::ErrorKind::NotFound => "not found on PATH".to_owned(),
        io::ErrorKind::PermissionDenied => {
            "permission denied (is it an executable file?)".to_owned()
        }
        _ => err.to_string(),
    }
}
