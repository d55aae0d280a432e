//! Starting one attempt's process and watching it until it and everything it started are
//! gone.
//!
//! # Threads
//!
//! [`Attempt::start`] spawns the child in its own process group and these threads:
//!
//! - **stdin writer** (only when there is a prompt): writes it and closes the pipe. A child
//!   that never reads cannot block anything else; the thread ends when the write finishes
//!   or fails (the reader is gone). For a relayed launch (`LaunchSpec::relay`) it writes
//!   the prompt as the protocol's first message and then each permission answer, and
//!   closes stdin after the agent's final `result`.
//! - **permission deciders** (relayed launches only): one per `control_request`, calling
//!   [`SuperviseOptions::relay`], which may wait for a person; the monitor keeps watching
//!   meanwhile (timeouts and cancellation still apply).
//! - **output** (`output.rs`): polls the output pipes (stdout, stderr; or the pty master)
//!   and a pidfd of the child. It reads each pipe until EOF and passes chunks (at most
//!   64 KiB) over a bounded channel; it never stops early, so the child never sees a
//!   closed pipe, and when the channel is full it waits, which stalls the child's writes
//!   (flow control) rather than growing memory. The pidfd tells it of the exit without
//!   reaping, so the exited leader stays a zombie and its pid, which is also the process
//!   group id, cannot be reused while the group is still being signalled. Without pidfds
//!   (Linux before 5.3): a reader thread per pipe and one blocked in
//!   `waitid(WEXITED | WNOWAIT)`.
//! - **monitor**: owns every piece of state. It masks, logs, keeps the tail, splits lines,
//!   parses the structured stream, scans for the marker and emits events. It also
//!   enforces the wall-clock timeout, the idle notice, the marker grace and cancellation.
//!   [`Attempt::wait`] joins it.
//!
//! # Exit, drain and group kill
//!
//! Killing is a non-blocking state machine in the monitor: `SIGTERM` (+`SIGCONT`) to the
//! group, `kill_grace` while output is still drained, then `SIGKILL`. It is triggered by the
//! timeout, by cancellation, or by the marker grace running out while the leader still
//! runs.
//!
//! When the leader exits (observed, not yet reaped), the monitor looks for live members
//! left in the group (by scanning `/proc`) and, if there are any, kills them the same way.
//! The attempt ends once the leader has exited, no live member of the group is left, and
//! both pipes reached EOF, or 1 s has passed since the group emptied (a pipe held open
//! by a process that left the group). Only then is the leader reaped.
//!
//! Live members are found by scanning `/proc/*/stat` for the group id, ignoring zombies
//! (an orphan nobody has reaped yet, e.g. under a container init that does not reap,
//! holds nothing open and cannot be killed). A contained attempt's leader, the
//! supervisor, ends its own tree (a strict superset of its group) before it exits and
//! then names itself so (`weft-clear`, see [`crate::contain`]): its group is taken as
//! empty without the scan, which reads one file per process on the machine. A
//! supervisor that exits without that name (killed by its agent, or with processes that
//! outlived its `SIGKILL` sweeps) gets the scan.
//!
//! # Pseudo-terminal
//!
//! With `needs_tty`, stdout and stderr (and stdin when there is no prompt; a prompt still
//! goes through a pipe, so it can end with EOF) are the slave side of a pty of
//! [`PTY_ROWS`] × [`PTY_COLS`], and the master is read as the one output stream
//! (`Stdout`), scanned in all three marker views. The child does not get the pty as its
//! controlling terminal (that needs `setsid` in the child, i.e. `pre_exec`, i.e. unsafe
//! code): `isatty` is true, but opening `/dev/tty` fails.
//!
//! # Memory
//!
//! Bounded whatever the child prints: the channel (32 chunks of ≤ 64 KiB), the tails
//! (`tail_bytes`, and [`STDERR_TAIL_BYTES`] of stderr), the line buffers (4 KiB for plain text; 4 MiB for structured streams,
//! beyond which a line is cut and not parsed), the masker's carry (shorter than the
//! longest secret), permission denials (100), and live `Line` events (at most 1,000 a
//! second; the rest are counted in a note). The log file stops at `log_cap_bytes`.

mod buffers;
mod monitor;
mod output;
pub(crate) mod process;

use std::fmt;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Sender, SyncSender, sync_channel};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime};

use nix::errno::Errno;
use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

pub use buffers::MIN_SECRET_LEN;
pub use process::{group_alive, kill_group, process_alive, process_start_ticks};

use crate::contain::{self, Containment, MAX_KILL_GRACE, SUPERVISOR_MARGIN};
use crate::event::AgentEvent;
use crate::manifest::LaunchSpec;
use monitor::{Monitor, Msg};

/// Default `SIGTERM` → `SIGKILL` grace.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(3);
/// Default silence before an [`SupervisorEvent::Idle`].
pub const DEFAULT_IDLE_AFTER: Duration = Duration::from_secs(60);
/// The most directory entries one idle-timeout scan of `watch_dir` looks at.
pub const IDLE_SCAN_MAX: usize = 100_000;
/// Default wait for an agent to exit by itself once its marker was seen.
pub const DEFAULT_MARKER_GRACE: Duration = Duration::from_secs(15);
/// Default cap on an attempt's output log.
pub const DEFAULT_LOG_CAP_BYTES: u64 = 64 * 1024 * 1024;
/// Default size of the in-memory output tail.
pub const DEFAULT_TAIL_BYTES: usize = 64 * 1024;
/// Size of [`Outcome::stderr_tail`].
pub const STDERR_TAIL_BYTES: usize = 16 * 1024;
/// The longest text of one [`SupervisorEvent::Line`], note included.
pub const LINE_EVENT_MAX: usize = 4096;
/// Relayed permission requests decided at once; more are refused on the spot.
pub const MAX_PENDING_PERMISSIONS: usize = 8;
/// At most this many `(tool, detail)` pairs are kept in [`Outcome::permission_denials`].
pub const MAX_PERMISSION_DENIALS: usize = 100;
/// The pseudo-terminal size given to runners that need a TTY.
pub const PTY_ROWS: u16 = 50;
/// See [`PTY_ROWS`].
pub const PTY_COLS: u16 = 250;

/// A tool call an agent asks permission for (Claude Code's `can_use_tool`).
#[derive(Debug, Clone, PartialEq)]
pub struct PermissionRequest {
    /// `Bash`, `Edit`, `Read`, …
    pub tool: String,
    /// The tool's input as the agent sent it (secret values already masked).
    pub input: serde_json::Value,
    pub description: Option<String>,
}

/// The answer to a [`PermissionRequest`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PermissionAnswer {
    Allow,
    /// Refused; `message` goes back to the agent, which can plan around it.
    Deny {
        message: String,
    },
}

/// Decides relayed permission requests. It may block until a person answers; it must
/// return once the attempt no longer needs the answer (its owner withdraws the request).
#[derive(Clone)]
pub struct PermissionRelay(pub Arc<dyn Fn(PermissionRequest) -> PermissionAnswer + Send + Sync>);

impl fmt::Debug for PermissionRelay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PermissionRelay")
    }
}

impl PartialEq for PermissionRelay {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// How one attempt is watched.
#[derive(Debug, Clone, PartialEq)]
pub struct SuperviseOptions {
    /// Hard wall-clock limit; then the group is killed and `Outcome::timed_out` is set.
    pub timeout: Duration,
    /// Silence before an `Idle` event (once per silence); advisory only. Zero: never.
    pub idle_after: Duration,
    /// No output, no stream event and no file change under `watch_dir` for this long:
    /// the group is killed and `Outcome::idle_timed_out` (and `timed_out`) is set. Zero:
    /// never (the default).
    pub idle_timeout: Duration,
    /// The folder whose file changes count as activity for `idle_timeout` (the
    /// attempt's worktree); scanned only when the silence reaches the limit, at most
    /// [`IDLE_SCAN_MAX`] entries, `.git` and symlinks not followed.
    pub watch_dir: Option<PathBuf>,
    /// `SIGTERM` → `SIGKILL` grace.
    pub kill_grace: Duration,
    /// Once the marker is seen, how long the agent may take to exit by itself before its
    /// group is killed (`Outcome::killed_after_marker`).
    pub marker_grace: Duration,
    /// Raw output, stdout and stderr interleaved in arrival order, masked; created with
    /// its parents (truncated if it exists). Empty: no log file ([`SuperviseOptions::unlogged`]).
    pub log_path: PathBuf,
    /// Past this, one note line is written and the rest is dropped (still read and scanned).
    pub log_cap_bytes: u64,
    /// Size of `Outcome::tail`.
    pub tail_bytes: usize,
    /// The completion marker to look for (ignored when the spec does not receive one).
    pub marker_token: Option<String>,
    /// Values shown as `****` in the log, the tail and events (at least
    /// [`MIN_SECRET_LEN`] bytes; shorter ones are ignored).
    pub secrets: Vec<String>,
    /// Answers the agent's permission requests when the launch relays them
    /// (`LaunchSpec::relay`); without it such a launch gets every request denied.
    pub relay: Option<PermissionRelay>,
    /// Start the command under a per-attempt supervisor that ends everything it started
    /// (and confines it), see [`crate::contain`]; `None`: the command is the group leader.
    pub contain: Option<Containment>,
}

impl SuperviseOptions {
    /// Options with the defaults above, no marker and no secrets.
    pub fn new(log_path: impl Into<PathBuf>, timeout: Duration) -> Self {
        Self {
            timeout,
            idle_after: DEFAULT_IDLE_AFTER,
            idle_timeout: Duration::ZERO,
            watch_dir: None,
            kill_grace: DEFAULT_KILL_GRACE,
            marker_grace: DEFAULT_MARKER_GRACE,
            log_path: log_path.into(),
            log_cap_bytes: DEFAULT_LOG_CAP_BYTES,
            tail_bytes: DEFAULT_TAIL_BYTES,
            marker_token: None,
            secrets: Vec::new(),
            relay: None,
            contain: None,
        }
    }

    /// [`SuperviseOptions::new`] without a log file, for a process whose consumer keeps its
    /// own record (the planner's turns: the research log). Events, the tails and the
    /// outcome are the same.
    pub fn unlogged(timeout: Duration) -> Self {
        Self::new(PathBuf::new(), timeout)
    }
}

/// Which pipe a line came from. Under a pseudo-terminal everything is `Stdout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputStream {
    Stdout,
    Stderr,
}

impl OutputStream {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Stdout => "stdout",
            Self::Stderr => "stderr",
        }
    }

    fn index(self) -> usize {
        match self {
            Self::Stdout => 0,
            Self::Stderr => 1,
        }
    }
}

/// What happens during an attempt, as it happens.
#[derive(Debug, Clone, PartialEq)]
pub enum SupervisorEvent {
    /// Always the first event.
    Started { pid: u32, process_group: i32 },
    /// One output line, masked, at most [`LINE_EVENT_MAX`] bytes (longer lines are cut,
    /// with a note). For live display; rate-limited (a note counts what was skipped).
    Line { stream: OutputStream, text: String },
    /// Parsed from the structured stream (masked).
    Agent(AgentEvent),
    /// No output for `silent_for` (once per silence).
    Idle { silent_for: Duration },
    /// The marker was seen; `view` is `raw`, `flattened`, `rendered` or `final_result`.
    MarkerSeen { view: &'static str },
}

/// How an attempt ended.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outcome {
    pub exit_code: Option<i32>,
    /// The signal that ended the process, if one did.
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// The time limit was `idle_timeout`: nothing happened for that long.
    pub idle_timed_out: bool,
    pub cancelled: bool,
    /// The marker was seen and the agent, still running after `marker_grace`, was killed.
    pub killed_after_marker: bool,
    /// The view that saw the marker: `raw`, `flattened`, `rendered` or `final_result`.
    pub marker: Option<&'static str>,
    /// The last `tail_bytes` of output (stdout and stderr interleaved), lossy UTF-8, masked.
    pub tail: String,
    /// The last [`STDERR_TAIL_BYTES`] of stderr alone (lossy UTF-8, masked): what a CLI
    /// said went wrong, without its stream around it. Empty under a pseudo-terminal.
    pub stderr_tail: String,
    /// The structured stream's final answer.
    pub final_text: Option<String>,
    /// An error the structured stream reported (the final record's, else the last one).
    pub stream_error: Option<String>,
    pub session_id: Option<String>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
    /// `(tool, detail)`, at most [`MAX_PERMISSION_DENIALS`].
    pub permission_denials: Vec<(String, String)>,
    /// Bytes read from the child (before masking), whether logged or not.
    pub output_bytes: u64,
    /// The log stopped at its cap (or could not be written).
    pub log_truncated: bool,
    /// From the start to the leader's exit.
    pub duration: Duration,
}

/// Why an attempt could not be started. Every message names the program and where it was
/// to run.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("cannot start `{program}` in {}: program not found{}", cwd.display(), if program.contains('/') { "" } else { " on PATH" })]
    NotFound { program: String, cwd: PathBuf },
    #[error("cannot start `{program}` in {}: permission denied (is it an executable file?)", cwd.display())]
    PermissionDenied { program: String, cwd: PathBuf },
    #[error("cannot start `{program}` in {}: not an executable format (a script needs a `#!` line)", cwd.display())]
    ExecFormat { program: String, cwd: PathBuf },
    #[error("cannot start `{program}`: working directory {} does not exist or is not a directory", cwd.display())]
    CwdMissing { program: String, cwd: PathBuf },
    // The OS error is in each message and deliberately not a `source()`: a launch failure
    // is kept as one line (a verdict's reason), and a front end printing the source chain
    // would otherwise repeat it.
    #[error("cannot start `{program}` in {}: cannot write the prompt file {}: {error}", cwd.display(), path.display())]
    PromptFile {
        program: String,
        cwd: PathBuf,
        path: PathBuf,
        error: io::Error,
    },
    #[error("cannot start `{program}` in {}: cannot create the output log {}: {error}", cwd.display(), path.display())]
    Log {
        program: String,
        cwd: PathBuf,
        path: PathBuf,
        error: io::Error,
    },
    #[error("cannot start `{program}` in {}: cannot open a pseudo-terminal: {error}", cwd.display())]
    Pty {
        program: String,
        cwd: PathBuf,
        error: nix::Error,
    },
    #[error("cannot start `{program}` in {}: {error}", cwd.display())]
    Io {
        program: String,
        cwd: PathBuf,
        error: io::Error,
    },
}

impl SpawnError {
    fn from_spawn(err: io::Error, spec: &LaunchSpec) -> Self {
        let program = spec.program.clone();
        let cwd = spec.cwd.clone();
        if !spec.cwd.is_dir() {
            return Self::CwdMissing { program, cwd };
        }
        match err.raw_os_error().map(Errno::from_raw) {
            Some(Errno::ENOENT) => Self::NotFound { program, cwd },
            Some(Errno::EACCES | Errno::EPERM) => Self::PermissionDenied { program, cwd },
            Some(Errno::ENOEXEC) => Self::ExecFormat { program, cwd },
            _ => Self::Io {
                program,
                cwd,
                error: err,
            },
        }
    }
}

/// Stops an attempt from any thread: its whole process group is terminated (`SIGTERM`,
/// `kill_grace`, `SIGKILL`) and `Outcome::cancelled` is set. Does not block.
#[derive(Debug, Clone)]
pub struct Canceller {
    tx: SyncSender<Msg>,
    requested: Arc<AtomicBool>,
}

impl Canceller {
    pub fn cancel(&self) {
        if !self.requested.swap(true, Ordering::SeqCst) {
            // Wakes the monitor, which acts on the flag. A full channel means the monitor
            // has messages to wake for anyway; a closed one, that the attempt is over.
            let _ = self.tx.try_send(Msg::Cancel);
        }
    }

    pub fn is_cancelled(&self) -> bool {
        self.requested.load(Ordering::SeqCst)
    }
}

/// One running agent process and its supervisor.
#[derive(Debug)]
pub struct Attempt {
    pub pid: u32,
    /// Equal to `pid`: the child leads its own group.
    pub process_group: i32,
    pub started_at: SystemTime,
    /// `/proc/<pid>/stat` start time, so a stored `(pid, start_ticks)` pair identifies
    /// this process even after its pid is reused.
    pub start_ticks: Option<u64>,
    canceller: Canceller,
    monitor: JoinHandle<Outcome>,
    /// The contained attempt's private temp folder, removed once it has ended.
    tmp_dir: Option<PathBuf>,
}

/// Chunks in flight between the reading thread and the monitor.
const CHANNEL_DEPTH: usize = 32;

impl Attempt {
    /// Writes the prompt file (if any), creates the log, starts the process in its own
    /// process group and starts supervising it. The first event sent is `Started`; on an
    /// error nothing is sent.
    pub fn start(
        spec: &LaunchSpec,
        options: SuperviseOptions,
        events: Sender<SupervisorEvent>,
    ) -> Result<Attempt, SpawnError> {
        let program = spec.program.clone();
        let cwd = spec.cwd.clone();
        if !spec.cwd.is_dir() {
            return Err(SpawnError::CwdMissing { program, cwd });
        }
        if let Some((path, text)) = &spec.prompt_file {
            let path = spec.cwd.join(path);
            write_prompt_file(&path, text).map_err(|error| SpawnError::PromptFile {
                program: program.clone(),
                cwd: cwd.clone(),
                path,
                error,
            })?;
        }
        let log = buffers::LogFile::create(&options.log_path, options.log_cap_bytes).map_err(
            |error| SpawnError::Log {
                program: program.clone(),
                cwd: cwd.clone(),
                path: options.log_path.clone(),
                error,
            },
        )?;

        let mut options = options;
        let mut command = match &options.contain {
            Some(containment) => {
                let program = resolve_program(spec)?;
                // The supervisor needs its own grace and then some before the engine
                // would SIGKILL it (and orphan the attempt's processes to init).
                options.kill_grace = containment.kill_grace.min(MAX_KILL_GRACE) + SUPERVISOR_MARGIN;
                contain::supervisor_command(containment, &program, &spec.args)
            }
            None => {
                let mut command = Command::new(&spec.program);
                command.args(&spec.args);
                command
            }
        };
        // A contained process starts from the environment its containment passes (an
        // allow-list of weft's), not from weft's whole environment; the launch's own
        // variables come on top, unfiltered.
        if let Some(passed) = options.contain.as_ref().and_then(|c| c.env.as_ref()) {
            command
                .env_clear()
                .envs(passed.0.iter().map(|(k, v)| (k, v)));
        }
        command
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&spec.cwd)
            .process_group(0);
        let master = if spec.needs_tty {
            let (master, slave) = open_pty().map_err(|error| SpawnError::Pty {
                program: program.clone(),
                cwd: cwd.clone(),
                error,
            })?;
            let io_err = |error| SpawnError::Io {
                program: program.clone(),
                cwd: cwd.clone(),
                error,
            };
            command.stdout(Stdio::from(slave.try_clone().map_err(io_err)?));
            command.stderr(Stdio::from(slave.try_clone().map_err(io_err)?));
            if spec.stdin.is_some() {
                command.stdin(Stdio::piped());
            } else {
                command.stdin(Stdio::from(slave));
            }
            Some(master)
        } else {
            command
                .stdin(if spec.stdin.is_some() {
                    Stdio::piped()
                } else {
                    Stdio::null()
                })
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            None
        };
        let tmp_dir = options.contain.as_ref().and_then(|c| c.tmp_dir.clone());
        let spawned = spawn_retrying(&mut command);
        // The command holds our copies of the pty slave: close them, so the master sees
        // EOF (EIO) once the child's side is gone.
        drop(command);
        let mut child = spawned.map_err(|err| SpawnError::from_spawn(err, spec))?;
        let started = Instant::now();
        let started_at = SystemTime::now();
        let pid = child.id();
        let process_group = i32::try_from(pid).unwrap_or(i32::MAX);
        let start_ticks = process_start_ticks(pid);

        match Self::supervise(&mut child, spec, options, events, log, master, started) {
            Ok((canceller, monitor_input)) => {
                let monitor = thread::Builder::new()
                    .name(format!("weft-monitor-{pid}"))
                    .spawn(move || monitor_input.run(child));
                match monitor {
                    Ok(monitor) => Ok(Attempt {
                        pid,
                        process_group,
                        started_at,
                        start_ticks,
                        canceller,
                        monitor,
                        tmp_dir,
                    }),
                    Err(error) => {
                        // The closure (and the child with it) is gone; kill by group id.
                        process::signal_group(process_group, Signal::SIGKILL);
                        Err(SpawnError::Io {
                            program,
                            cwd,
                            error,
                        })
                    }
                }
            }
            Err(error) => {
                process::signal_group(process_group, Signal::SIGKILL);
                let _ = child.wait();
                Err(SpawnError::Io {
                    program,
                    cwd,
                    error,
                })
            }
        }
    }

    /// Starts the stdin writer and the output thread; returns the monitor to run.
    fn supervise(
        child: &mut Child,
        spec: &LaunchSpec,
        options: SuperviseOptions,
        events: Sender<SupervisorEvent>,
        log: buffers::LogFile,
        master: Option<OwnedFd>,
        started: Instant,
    ) -> io::Result<(Canceller, Monitor)> {
        let pid = child.id();
        let (tx, rx) = sync_channel(CHANNEL_DEPTH);
        let mut answers = None;
        if let (Some(prompt), Some(mut stdin)) = (spec.stdin.clone(), child.stdin.take()) {
            if spec.relay.is_some() {
                // Claude's stream-json input: the prompt as a user message, then one line
                // per answer; stdin closes when the monitor drops its sender (after the
                // final `result`) and every pending answer is written.
                let (lines, inbox) = std::sync::mpsc::channel::<String>();
                let first = serde_json::json!({
                    "type": "user",
                    "message": {"role": "user", "content": prompt},
                    "parent_tool_use_id": null,
                    "session_id": "",
                });
                let _ = lines.send(first.to_string());
                thread::Builder::new()
                    .name(format!("weft-stdin-{pid}"))
                    .spawn(move || {
                        for line in inbox {
                            let written = stdin
                                .write_all(line.as_bytes())
                                .and_then(|()| stdin.write_all(b"\n"))
                                .and_then(|()| stdin.flush());
                            if written.is_err() {
                                break;
                            }
                        }
                    })?;
                answers = Some((options.relay.clone().unwrap_or_else(deny_everything), lines));
            } else {
                thread::Builder::new()
                    .name(format!("weft-stdin-{pid}"))
                    .spawn(move || {
                        // A child that exits without reading makes this fail: fine.
                        let _ = stdin.write_all(prompt.as_bytes());
                    })?;
            }
        }
        let sources = match master {
            Some(master) => vec![(master, OutputStream::Stdout)],
            None => {
                let mut sources = Vec::with_capacity(2);
                if let Some(stdout) = child.stdout.take() {
                    sources.push((OwnedFd::from(stdout), OutputStream::Stdout));
                }
                if let Some(stderr) = child.stderr.take() {
                    sources.push((OwnedFd::from(stderr), OutputStream::Stderr));
                }
                sources
            }
        };
        output::spawn(sources, pid, tx.clone())?;
        let requested = Arc::new(AtomicBool::new(false));
        let canceller = Canceller {
            tx,
            requested: Arc::clone(&requested),
        };
        let token = options
            .marker_token
            .clone()
            .filter(|token| spec.receives_marker && !token.is_empty());
        let monitor = Monitor::new(
            rx,
            events,
            &options,
            token,
            spec.stream,
            log,
            spec.needs_tty,
            requested,
            started,
            i32::try_from(pid).unwrap_or(i32::MAX),
            answers,
        );
        Ok((canceller, monitor))
    }

    /// A handle that cancels this attempt from any thread.
    pub fn canceller(&self) -> Canceller {
        self.canceller.clone()
    }

    /// Blocks until the child has exited, its output is drained (or abandoned to a
    /// process outside the group), and no live member of its group is left.
    pub fn wait(self) -> Outcome {
        let Attempt {
            pid,
            process_group,
            canceller,
            monitor,
            tmp_dir,
            ..
        } = self;
        drop(canceller);
        let joined = monitor.join();
        if let Some(tmp) = tmp_dir {
            let _ = fs_err::remove_dir_all(tmp);
        }
        match joined {
            Ok(outcome) => outcome,
            Err(_) => {
                // The monitor panicked: make sure nothing of the attempt survives.
                kill_group(process_group, DEFAULT_KILL_GRACE);
                Outcome {
                    stream_error: Some(format!("weft's supervisor of pid {pid} failed")),
                    ..Outcome::default()
                }
            }
        }
    }
}

/// The program a contained launch hands its supervisor, found now so that a missing or
/// non-executable program is still a [`SpawnError`].
fn resolve_program(spec: &LaunchSpec) -> Result<PathBuf, SpawnError> {
    let from_spec = spec
        .env
        .iter()
        .rev()
        .find(|(name, _)| name == "PATH")
        .map(|(_, value)| std::ffi::OsString::from(value));
    let path = from_spec.or_else(|| std::env::var_os("PATH"));
    let program = if spec.program.contains('/') && !Path::new(&spec.program).is_absolute() {
        spec.cwd.join(&spec.program).display().to_string()
    } else {
        spec.program.clone()
    };
    contain::find_program(&program, path.as_deref()).map_err(|kind| {
        let (program, cwd) = (spec.program.clone(), spec.cwd.clone());
        match kind {
            io::ErrorKind::PermissionDenied => SpawnError::PermissionDenied { program, cwd },
            _ => SpawnError::NotFound { program, cwd },
        }
    })
}

/// A relayed launch with nobody to decide: every request is refused, with the reason.
fn deny_everything() -> PermissionRelay {
    PermissionRelay(Arc::new(|_| PermissionAnswer::Deny {
        message: "weft has no approval channel for this run".into(),
    }))
}

fn write_prompt_file(path: &Path, text: &str) -> io::Result<()> {
    contain::private::write(path, text.as_bytes())
}

/// `Command::spawn`, retried briefly on `ETXTBSY`: an agent CLI in the middle of an
/// update, or a freshly written executable another thread of this process had open for
/// writing when it forked (the child holds the descriptor until it execs).
pub(crate) fn spawn_retrying(command: &mut Command) -> io::Result<Child> {
    let mut tries = 0;
    loop {
        match command.spawn() {
            Err(err) if err.kind() == io::ErrorKind::ExecutableFileBusy && tries < 5 => {
                tries += 1;
                thread::sleep(Duration::from_millis(20 * tries));
            }
            other => return other,
        }
    }
}

/// A pseudo-terminal pair, both ends close-on-exec (the child gets the slave through its
/// stdio, which `Command` dup2s without the flag).
fn open_pty() -> Result<(OwnedFd, OwnedFd), nix::Error> {
    use nix::fcntl::{FcntlArg, FdFlag, fcntl};
    use nix::pty::{Winsize, openpty};
    let size = Winsize {
        ws_row: PTY_ROWS,
        ws_col: PTY_COLS,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pair = openpty(&size, None::<&nix::sys::termios::Termios>)?;
    fcntl(&pair.master, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    fcntl(&pair.slave, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))?;
    Ok((pair.master, pair.slave))
}
