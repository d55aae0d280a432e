//! Preflight: is a runner usable on this machine?
//!
//! Two questions, answered separately and reported with what failed and how to fix it:
//!
//! 1. **Can the binary be started as a process at all?** The command is resolved (a bare
//!    name on the given `PATH`, otherwise a path) and started with the manifest's
//!    `version_args`, stdin `/dev/null`, in its own process group. A failure to start is
//!    classified: not found, not executable (permission denied, or a folder), exec format
//!    error (not a program for this machine, or a script without `#!`), missing
//!    interpreter (`#!` line or dynamic loader), or another OS error.
//! 2. **Does the version probe answer?** The started process must exit 0 within the
//!    timeout (default [`DEFAULT_TIMEOUT`]); the first non-empty line of its stdout (else
//!    stderr) is the version. On timeout the whole process group is killed. A non-zero exit
//!    reports its code and first stderr line.
//!
//! `PATH` lookup is done here, not by the OS, so the same `PATH` the runner will get can be
//! passed in. Empty `PATH` entries (which POSIX reads as the current folder) are skipped;
//! a non-executable file is passed over in favour of a later executable one, as `execvp`
//! does, and reported only when nothing better exists.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::manifest::Manifest;

/// How long the version probe may take by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// At most this much of each output stream is kept.
const CAPTURE_LIMIT: usize = 64 * 1024;
/// After the probe exits, how long to wait for processes it left behind to close its
/// output before they are killed.
const DRAIN_GRACE: Duration = Duration::from_millis(500);
/// Longest version or detail line reported.
const LINE_LIMIT: usize = 200;

/// The verdict of a preflight check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Availability {
    pub runner: String,
    pub available: bool,
    /// The resolved program, when it was found.
    pub program: Option<PathBuf>,
    /// The first line the version probe printed.
    pub version: Option<String>,
    /// When unavailable: what failed and how to fix it.
    pub reason: Option<String>,
    /// When unavailable: the failure, for code that wants to tell cases apart.
    pub problem: Option<Problem>,
}

/// Why a runner is unavailable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Problem {
    /// Not on `PATH`, or the path does not exist (or `PATH` is unset).
    NotFound,
    /// Found, but it cannot be executed: no execute permission, or a folder.
    NotExecutable,
    /// The kernel refused the file's format (ENOEXEC).
    ExecFormat,
    /// The file exists but its `#!` interpreter or dynamic loader does not.
    InterpreterNotFound,
    /// Starting failed for another reason (the OS error is in the reason).
    StartFailed,
    /// Started, but the version probe did not finish in time; its process group was killed.
    TimedOut,
    /// The version probe exited unsuccessfully.
    ProbeFailed {
        exit_code: Option<i32>,
        signal: Option<i32>,
    },
}

/// Why a command could not be resolved to a file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    #[error("{command} was not found on PATH")]
    NotOnPath { command: String },
    #[error("{command} was not found: PATH is not set")]
    NoPath { command: String },
    #[error("{} does not exist", path.display())]
    Missing { path: PathBuf },
}

/// Find the file `command` names: a path when it contains `/`, else the first executable
/// regular file called `command` in `path_env` (`None`: this process's `PATH`). If only a
/// non-executable match exists, it is returned, so that starting it reports why.
pub fn resolve_program(command: &str, path_env: Option<&OsStr>) -> Result<PathBuf, ResolveError> {
    if command.contains('/') {
        let path = PathBuf::from(command);
        return match path.try_exists() {
            Ok(false) => Err(ResolveError::Missing { path }),
            _ => Ok(path),
        };
    }
    let own_path;
    let path_env = match path_env {
        Some(p) => p,
        None => {
            own_path = std::env::var_os("PATH");
            match own_path.as_deref() {
                Some(p) => p,
                None => {
                    return Err(ResolveError::NoPath {
                        command: command.to_owned(),
                    });
                }
            }
        }
    };
    let mut fallback = None;
    for dir in std::env::split_paths(path_env) {
        if dir.as_os_str().is_empty() {
            continue;
        }
        let candidate = dir.join(command);
        let Ok(meta) = std::fs::metadata(&candidate) else {
            continue;
        };
        if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
            return Ok(candidate);
        }
        if meta.is_file() && fallback.is_none() {
            fallback = Some(candidate);
        }
    }
    fallback.ok_or_else(|| ResolveError::NotOnPath {
        command: command.to_owned(),
    })
}

/// Check one runner: resolve and start its command with `version_args`, then wait for the
/// probe at most `timeout`. `path_env` is the `PATH` to search and to give the probe
/// (`None`: this process's own).
pub fn check(manifest: &Manifest, path_env: Option<&OsStr>, timeout: Duration) -> Availability {
    let mut availability = Availability {
        runner: manifest.name().to_owned(),
        available: false,
        program: None,
        version: None,
        reason: None,
        problem: None,
    };
    let fail = |mut a: Availability, problem: Problem, reason: String| {
        a.problem = Some(problem);
        a.reason = Some(reason);
        a
    };

    let program = match resolve_program(manifest.command(), path_env) {
        Ok(program) => program,
        Err(e) => {
            let reason = format!("{e}; {}", fix_hint(manifest));
            return fail(availability, Problem::NotFound, reason);
        }
    };
    availability.program = Some(program.clone());

    let shown = shown_command(&program, manifest.version_args());
    match probe(&program, manifest.version_args(), path_env, timeout) {
        Err(Probe::Start(error)) => {
            let (problem, what) = classify_start(&program, &error);
            let reason = format!("{what}; {}", start_hint(manifest, &problem, &program));
            fail(availability, problem, reason)
        }
        Err(Probe::TimedOut) => fail(
            availability,
            Problem::TimedOut,
            format!(
                "`{shown}` did not answer within {timeout:?} and was stopped; the CLI may be \
                 waiting for input, a network or an update; run it by hand to see why"
            ),
        ),
        Ok(output) if output.status.success() => {
            availability.available = true;
            availability.version =
                first_line(&output.stdout).or_else(|| first_line(&output.stderr));
            availability
        }
        Ok(output) => {
            let status = output.status;
            let detail = first_line(&output.stderr).or_else(|| first_line(&output.stdout));
            let how = match (status.code(), status.signal()) {
                (Some(code), _) => format!("exited with code {code}"),
                (None, Some(signal)) => format!("was killed by signal {signal}"),
                (None, None) => format!("ended with {status}"),
            };
            let reason = match detail {
                Some(detail) => format!("`{shown}` {how}: {detail}"),
                None => format!("`{shown}` {how} without printing anything"),
            };
            let problem = Problem::ProbeFailed {
                exit_code: status.code(),
                signal: status.signal(),
            };
            fail(availability, problem, reason)
        }
    }
}

/// Check every runner of a registry, one after another.
pub fn check_all(
    registry: &crate::manifest::Registry,
    path_env: Option<&OsStr>,
    timeout: Duration,
) -> Vec<Availability> {
    registry
        .iter()
        .map(|loaded| check(&loaded.manifest, path_env, timeout))
        .collect()
}

fn shown_command(program: &Path, args: &[String]) -> String {
    let mut shown = program.display().to_string();
    for arg in args {
        shown.push(' ');
        shown.push_str(arg);
    }
    shown
}

/// "install it with … or set command in …".
fn fix_hint(manifest: &Manifest) -> String {
    let where_ = match manifest.file() {
        Some(file) => format!("fix command in {}", file.display()),
        None => format!("set command in .weft/runners/{}.toml", manifest.name()),
    };
    match manifest.install() {
        Some(install) => format!("install it with {install} or {where_}"),
        None => format!("install it or {where_}"),
    }
}

fn start_hint(manifest: &Manifest, problem: &Problem, program: &Path) -> String {
    match problem {
        Problem::NotExecutable if program.is_dir() => fix_hint(manifest),
        Problem::NotExecutable => format!(
            "make it executable (chmod +x {}) or {}",
            program.display(),
            fix_hint(manifest)
        ),
        Problem::NotFound => fix_hint(manifest),
        Problem::InterpreterNotFound => format!(
            "install the interpreter its first line names, or reinstall it; or {}",
            fix_hint(manifest)
        ),
        _ => fix_hint(manifest),
    }
}

fn classify_start(program: &Path, error: &std::io::Error) -> (Problem, String) {
    let shown = program.display();
    const ENOEXEC: i32 = 8;
    if error.raw_os_error() == Some(ENOEXEC) {
        return (
            Problem::ExecFormat,
            format!(
                "{shown} cannot be executed (exec format error): it is not a program for this \
                 machine, or a script without a #! line"
            ),
        );
    }
    match error.kind() {
        std::io::ErrorKind::NotFound if program.exists() => (
            Problem::InterpreterNotFound,
            format!(
                "{shown} exists but could not be started: its interpreter (#! line or dynamic \
                 loader) was not found"
            ),
        ),
        std::io::ErrorKind::NotFound => (Problem::NotFound, format!("{shown} does not exist")),
        std::io::ErrorKind::PermissionDenied if program.is_dir() => (
            Problem::NotExecutable,
            format!("{shown} is a folder, not a program"),
        ),
        std::io::ErrorKind::PermissionDenied => (
            Problem::NotExecutable,
            format!("{shown} is not executable (permission denied)"),
        ),
        _ => (
            Problem::StartFailed,
            format!("{shown} could not be started: {error}"),
        ),
    }
}

enum Probe {
    Start(std::io::Error),
    TimedOut,
}

struct Output {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
}

fn probe(
    program: &Path,
    args: &[String],
    path_env: Option<&OsStr>,
    timeout: Duration,
) -> Result<Output, Probe> {
    let deadline = Instant::now() + timeout;
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    if let Some(path) = path_env {
        command.env("PATH", path);
    }
    let mut child = crate::supervise::spawn_retrying(&mut command).map_err(Probe::Start)?;
    let group = i32::try_from(child.id()).ok().map(Pid::from_raw);
    let kill_group = || {
        if let Some(group) = group {
            // The group may already be gone; nothing else to do then.
            let _ = killpg(group, Signal::SIGKILL);
        }
    };

    let (done_tx, done_rx) = mpsc::channel::<()>();
    let stdout = Arc::new(Mutex::new(Vec::new()));
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let mut readers = 0;
    if let Some(pipe) = child.stdout.take() {
        readers += 1;
        drain(pipe, Arc::clone(&stdout), done_tx.clone());
    }
    if let Some(pipe) = child.stderr.take() {
        readers += 1;
        drain(pipe, Arc::clone(&stderr), done_tx.clone());
    }
    drop(done_tx);

    let (status_tx, status_rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = status_tx.send(child.wait());
    });

    let status = match status_rx.recv_timeout(timeout) {
        Ok(Ok(status)) => status,
        Ok(Err(error)) => {
            kill_group();
            return Err(Probe::Start(error));
        }
        Err(_) => {
            kill_group();
            // SIGKILL cannot be ignored: the leader dies and the waiter reaps it.
            let _ = status_rx.recv();
            return Err(Probe::TimedOut);
        }
    };

    // The probe exited; its output is complete once every writer closed the pipes.
    // Processes it left behind in its group may hold them open: give them a moment, then
    // kill them.
    let grace_end = deadline.min(Instant::now() + DRAIN_GRACE);
    let mut finished = 0;
    while finished < readers {
        let left = grace_end.saturating_duration_since(Instant::now());
        match done_rx.recv_timeout(left) {
            Ok(()) => finished += 1,
            Err(_) => {
                kill_group();
                break;
            }
        }
    }
    let take = |buf: &Arc<Mutex<Vec<u8>>>| match buf.lock() {
        Ok(mut guard) => std::mem::take(&mut *guard),
        Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
    };
    Ok(Output {
        status,
        stdout: take(&stdout),
        stderr: take(&stderr),
    })
}

/// Read a pipe to its end on a thread, keeping the first [`CAPTURE_LIMIT`] bytes.
fn drain(mut pipe: impl Read + Send + 'static, into: Arc<Mutex<Vec<u8>>>, done: mpsc::Sender<()>) {
    thread::spawn(move || {
        let mut chunk = [0u8; 8192];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    if let Ok(mut buf) = into.lock() {
                        let room = CAPTURE_LIMIT.saturating_sub(buf.len());
                        buf.extend_from_slice(&chunk[..n.min(room)]);
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = done.send(());
    });
}

/// The first non-blank line, without control characters, at most [`LINE_LIMIT`] chars.
fn first_line(bytes: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(bytes);
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let mut clean = String::new();
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // Skip an ANSI escape: ESC [ params final-byte, or ESC and one character.
            if chars.next_if_eq(&'[').is_some() {
                while chars
                    .next()
                    .is_some_and(|c| !('\u{40}'..='\u{7e}').contains(&c))
                {}
            } else {
                chars.next();
            }
            continue;
        }
        if !c.is_control() {
            clean.push(c);
        }
    }
    let clean: String = clean.trim().chars().take(LINE_LIMIT).collect();
    (!clean.is_empty()).then_some(clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_line_skips_blank_lines_and_control_characters() {
        assert_eq!(
            first_line(b"\n  \n \x1b[1m2.1.197 (Claude Code)\x1b[0m \nmore"),
            Some("2.1.197 (Claude Code)".to_owned())
        );
        assert_eq!(first_line(b" \n\t\n"), None);
        assert_eq!(first_line(&[b'x'; 500]).unwrap().len(), LINE_LIMIT);
    }

    #[test]
    fn empty_path_entries_are_not_the_current_folder() {
        let e =
            resolve_program("definitely-not-a-program-weft", Some(OsStr::new("::"))).unwrap_err();
        assert!(matches!(e, ResolveError::NotOnPath { .. }));
    }
}
