//! The per-attempt supervisor process: `<weft> __contain [options] -- PROGRAM ARGS…`.
//!
//! One thread, no handlers: the signals it cares about are blocked and read from a
//! signalfd, so nothing runs asynchronously and no unsafe code is needed. The agent is
//! started with nothing blocked (see `spawn_agent`).

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask, raise};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::{Pid, getppid};

use super::{MAX_KILL_GRACE, tree};

/// How often the supervisor checks that the engine is still its parent.
const LIFELINE_POLL: Duration = Duration::from_millis(200);
/// The grace given after the engine died: detection plus grace plus the kill stay
/// under the 5 s the contract promises.
const ORPHANED_GRACE: Duration = Duration::from_secs(3);

/// The supervisor's process name (`/proc/<pid>/comm`) once its agent has exited.
const ENDING_NAME: &std::ffi::CStr = c"weft-ending";

/// The supervisor's process name from the moment every process of the attempt is gone
/// (it has no child left, not even a zombie) until it exits.
const CLEAR_NAME: &std::ffi::CStr = c"weft-clear";

/// Whether the supervisor `pid` is only ending what its agent left behind (the agent
/// itself has exited).
pub(crate) fn is_ending(pid: i32) -> bool {
    has_name(pid, ENDING_NAME)
}

/// Whether the supervisor `pid` (exited, not yet reaped) ended every process of its
/// attempt: then its process group has no other member and the engine need not scan
/// `/proc` for one.
///
/// Why the name can be trusted: only a thread of the supervisor itself can set it (the
/// kernel refuses a write to another process's `comm`, and `PR_SET_NAME` names the
/// caller), the supervisor sets it only once its subreaper's tree is empty, and nothing
/// of the attempt is left that could change it afterwards. A supervisor killed before
/// that (by its agent, say) keeps its other name, and the engine scans as before.
pub(crate) fn exited_clear(pid: i32) -> bool {
    has_name(pid, CLEAR_NAME)
}

fn has_name(pid: i32, wanted: &std::ffi::CStr) -> bool {
    std::fs::read(format!("/proc/{pid}/comm"))
        .is_ok_and(|name| name.strip_suffix(b"\n").unwrap_or(&name) == wanted.to_bytes())
}

/// Exit code when the supervisor itself cannot do its job (bad arguments, no Landlock).
const SETUP_FAILED: u8 = 125;

/// The parsed command line.
#[derive(Debug, Default)]
struct Args {
    parent: u32,
    grace: Duration,
    landlock: bool,
    write: Vec<PathBuf>,
    create: Vec<PathBuf>,
    tmp: Option<PathBuf>,
    program: OsString,
    args: Vec<OsString>,
}

fn parse(mut args: impl Iterator<Item = OsString>) -> Result<Args, String> {
    let mut parsed = Args {
        grace: super::DEFAULT_KILL_GRACE,
        ..Args::default()
    };
    let value = |args: &mut dyn Iterator<Item = OsString>, flag: &str| {
        args.next().ok_or_else(|| format!("{flag} needs a value"))
    };
    loop {
        let Some(arg) = args.next() else {
            return Err("no `--` before the program".into());
        };
        match arg.to_str() {
            Some("--") => break,
            Some("--parent") => {
                let text = value(&mut args, "--parent")?;
                parsed.parent = text
                    .to_str()
                    .and_then(|t| t.parse().ok())
                    .ok_or("--parent needs a pid")?;
            }
            Some("--grace-ms") => {
                let text = value(&mut args, "--grace-ms")?;
                let ms: u64 = text
                    .to_str()
                    .and_then(|t| t.parse().ok())
                    .ok_or("--grace-ms needs a number")?;
                parsed.grace = Duration::from_millis(ms).min(MAX_KILL_GRACE);
            }
            Some("--landlock") => parsed.landlock = true,
            Some("--write") => parsed.write.push(value(&mut args, "--write")?.into()),
            Some("--create") => parsed.create.push(value(&mut args, "--create")?.into()),
            Some("--tmp") => parsed.tmp = Some(value(&mut args, "--tmp")?.into()),
            _ => return Err(format!("unknown argument {}", arg.to_string_lossy())),
        }
    }
    parsed.program = args.next().ok_or("no program after `--`")?;
    parsed.args = args.collect();
    Ok(parsed)
}

fn say(text: &str) {
    let _ = writeln!(std::io::stderr(), "[weft: {text}]");
}

/// Why the supervisor stopped waiting for the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// The agent exited: what it left behind is ended.
    AgentExited,
    /// The engine asked (cancel, timeout, stop, Ctrl-C): `SIGTERM` or the like.
    Asked,
    /// The engine is gone (its pid is no longer our parent).
    Orphaned,
}

/// See the parent module. `args` are the arguments after [`super::SUPERVISOR_ARG`].
pub fn supervisor_main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let mut args = match parse(args.into_iter()) {
        Ok(args) => args,
        Err(e) => {
            say(&format!("weft's supervisor: {e}"));
            return ExitCode::from(SETUP_FAILED);
        }
    };
    // A test seam: `WEFT_TEST_NO_LIFELINE=1` in the engine's environment (which the
    // supervisor starts from) turns the lifeline off, so a test can prove what `weft stop`
    // and `weft cancel` do with a dead engine's leftovers without racing the lifeline
    // (which ends them by itself within 5 s, and is tested on its own).
    if std::env::var_os("WEFT_TEST_NO_LIFELINE").is_some_and(|v| v == "1") {
        args.parent = 0;
    }
    // Every orphan of the attempt (setsid, nohup, double fork) is re-parented to us, so
    // it stays findable as a descendant and is ended with the attempt.
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        say(&format!("weft's supervisor cannot become a subreaper: {e}"));
        return ExitCode::from(SETUP_FAILED);
    }
    let mut mask = SigSet::empty();
    for signal in [
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGQUIT,
        Signal::SIGCHLD,
    ] {
        mask.add(signal);
    }
    let signals = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&mask), None)
        .and_then(|()| SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC));
    let signals = match signals {
        Ok(fd) => fd,
        Err(e) => {
            say(&format!("weft's supervisor cannot watch signals: {e}"));
            return ExitCode::from(SETUP_FAILED);
        }
    };
    // The lifeline. We poll `getppid()`: it changes as soon as the engine's process is
    // gone, however it died (SIGKILL included), and needs nothing from the engine.
    // `PR_SET_PDEATHSIG` would fire when the *thread* that spawned us exits (the engine
    // spawns from short-lived threads) and covers only us, not what the agent started;
    // a pipe from the engine would need an inherited descriptor beyond stdio, which
    // `Command` cannot pass without unsafe code in the child.
    if args.parent != 0 && getppid().as_raw() != i32::try_from(args.parent).unwrap_or(-1) {
        say("weft's supervisor: the engine that started this attempt is gone");
        return ExitCode::from(SETUP_FAILED);
    }
    for folder in args.create.iter().chain(args.tmp.as_ref()) {
        if let Err(e) = create_private(folder) {
            say(&format!(
                "weft's supervisor cannot create {}: {e}",
                folder.display()
            ));
            return ExitCode::from(SETUP_FAILED);
        }
    }
    if args.landlock {
        let mut write = args.write.clone();
        write.extend(args.tmp.iter().cloned());
        if let Err(e) = super::confine::restrict_thread(&write) {
            say(&format!(
                "weft's supervisor refused to start the agent unconfined: {e}"
            ));
            return ExitCode::from(SETUP_FAILED);
        }
    }
    let agent = match spawn_agent(&args.program, &args.args, args.tmp.as_deref()) {
        Ok(pid) => pid,
        Err(e) => {
            say(&format!(
                "cannot start `{}`: {}",
                args.program.to_string_lossy(),
                std::io::Error::from(e)
            ));
            let code = if e == Errno::ENOENT { 127 } else { 126 };
            return ExitCode::from(code);
        }
    };
    let me = std::process::id();
    let mut status = None;
    let parent = args.parent;
    let stop = loop {
        let asked = wait_signal(&signals, LIFELINE_POLL);
        reap_all(agent, &mut status);
        if status.is_some() {
            break Stop::AgentExited;
        }
        if asked {
            break Stop::Asked;
        }
        if parent != 0 && getppid().as_raw() != i32::try_from(parent).unwrap_or(-1) {
            break Stop::Orphaned;
        }
    };
    if stop == Stop::AgentExited {
        // Tells the engine that the agent is done and only its leftovers are being
        // ended, so that this time is not counted against the attempt's time limit
        // (see `is_ending`).
        let _ = nix::sys::prctl::set_name(ENDING_NAME);
    }
    let grace = match stop {
        Stop::Orphaned => args.grace.min(ORPHANED_GRACE),
        Stop::AgentExited | Stop::Asked => args.grace,
    };
    let ended = tree::end_all(me, grace, |wait| {
        if !wait.is_zero() {
            wait_signal(&signals, wait);
        }
        reap_all(agent, &mut status);
    });
    if ended.killed > 0 {
        say(&format!(
            "{} process(es) of this attempt ignored SIGTERM for {} ms and were killed",
            ended.killed,
            grace.as_millis()
        ));
    }
    if ended.survivors > 0 {
        say(&format!(
            "{} process(es) of this attempt were still alive after SIGKILL; the engine looks for them in the attempt's process group",
            ended.survivors
        ));
    }
    if stop == Stop::Orphaned {
        say("the engine died; this attempt's processes were ended");
    }
    // Anything still unreaped (the agent itself when it died last).
    let until = Instant::now() + Duration::from_secs(1);
    while status.is_none() && Instant::now() < until {
        wait_signal(&signals, Duration::from_millis(10));
        reap_all(agent, &mut status);
    }
    // The last sweep saw no live descendant, so each one left is a zombie child (reaped
    // here). No child left: the attempt's tree is empty and stays so (nothing of
    // it is left to fork). The engine reads the name instead of scanning `/proc` for the
    // attempt's process group (`exited_clear`).
    reap_all(agent, &mut status);
    if tree::childless(me) == Some(true) {
        let _ = nix::sys::prctl::set_name(CLEAR_NAME);
    }
    // The temp folder is removed by the engine (unconfined): removing the folder itself
    // needs write access to its parent, which the attempt does not have.
    exit_like(status)
}

/// Starts the agent: `program` (looked up in `PATH` when it has no `/`) with `args`, the
/// supervisor's environment (`TMPDIR` set to `tmp`), stdio and folder.
///
/// Why not `Command`: it leaves the signal mask as it is, and ours blocks the stop signals
/// (they are read from the signalfd). An agent started with them blocked, and everything
/// it starts, would sit out the `SIGTERM` of a cancel or of the end of its attempt until
/// the `SIGKILL` after the grace. `posix_spawn` sets the child's mask to empty before the
/// program runs, and `SIGPIPE` back to its default (Rust's runtime ignores it in the
/// supervisor), as `Command` does.
fn spawn_agent(
    program: &std::ffi::OsStr,
    args: &[OsString],
    tmp: Option<&std::path::Path>,
) -> Result<u32, Errno> {
    use nix::spawn::{PosixSpawnAttr, PosixSpawnFileActions, PosixSpawnFlags, posix_spawnp};
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = |text: &std::ffi::OsStr| CString::new(text.as_bytes()).map_err(|_| Errno::EINVAL);
    let path = c(program)?;
    let mut argv = vec![path.clone()];
    for arg in args {
        argv.push(c(arg)?);
    }
    let mut env = Vec::new();
    for (key, value) in std::env::vars_os() {
        if tmp.is_some() && key == "TMPDIR" {
            continue;
        }
        let mut pair = key;
        pair.push("=");
        pair.push(value);
        env.push(c(&pair)?);
    }
    if let Some(tmp) = tmp {
        let mut pair = OsString::from("TMPDIR=");
        pair.push(tmp);
        env.push(c(&pair)?);
    }
    let mut attr = PosixSpawnAttr::init()?;
    attr.set_flags(
        PosixSpawnFlags::POSIX_SPAWN_SETSIGMASK | PosixSpawnFlags::POSIX_SPAWN_SETSIGDEF,
    )?;
    attr.set_sigmask(&SigSet::empty())?;
    let mut default = SigSet::empty();
    default.add(Signal::SIGPIPE);
    attr.set_sigdefault(&default)?;
    let actions = PosixSpawnFileActions::init()?;
    let pid = posix_spawnp(&path, &actions, &attr, &argv, &env)?;
    u32::try_from(pid.as_raw()).map_err(|_| Errno::EINVAL)
}

/// Waits up to `timeout` for a signal; whether one of the stop signals (not `SIGCHLD`)
/// arrived. Drains every pending signal.
fn wait_signal(signals: &SignalFd, timeout: Duration) -> bool {
    let millis = u16::try_from(timeout.as_millis()).unwrap_or(u16::MAX);
    let mut fds = [PollFd::new(
        std::os::fd::AsFd::as_fd(signals),
        PollFlags::POLLIN,
    )];
    let _ = poll(&mut fds, PollTimeout::from(millis));
    let mut asked = false;
    while let Ok(Some(info)) = signals.read_signal() {
        if info.ssi_signo != Signal::SIGCHLD as u32 {
            asked = true;
        }
    }
    asked
}

/// Reaps every exited child (the agent and re-parented orphans); records the agent's.
fn reap_all(agent: u32, status: &mut Option<std::process::ExitStatus>) {
    loop {
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) => {
                if pid.as_raw() as u32 == agent {
                    *status = Some(std::process::ExitStatus::from_raw((code & 0xff) << 8));
                }
            }
            Ok(WaitStatus::Signaled(pid, signal, _)) => {
                if pid.as_raw() as u32 == agent {
                    *status = Some(std::process::ExitStatus::from_raw(signal as i32));
                }
            }
            Ok(WaitStatus::StillAlive) | Err(Errno::ECHILD) => return,
            Err(Errno::EINTR) | Ok(_) => {}
            Err(_) => return,
        }
    }
}

/// Ends the supervisor the way the agent ended: its exit code, or the same signal (the
/// engine then reports the agent's signal death as such).
fn exit_like(status: Option<std::process::ExitStatus>) -> ExitCode {
    let Some(status) = status else {
        return ExitCode::from(SETUP_FAILED);
    };
    if let Some(code) = status.code() {
        return ExitCode::from(u8::try_from(code).unwrap_or(u8::MAX));
    }
    let Some(raw) = status.signal() else {
        return ExitCode::from(SETUP_FAILED);
    };
    if let Ok(signal) = Signal::try_from(raw) {
        // No core file of ours in the worktree: the agent's signal is only reported.
        let _ = nix::sys::resource::setrlimit(nix::sys::resource::Resource::RLIMIT_CORE, 0, 0);
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&SigSet::empty()), None);
        let _ = raise(signal);
    }
    // A signal whose default is not to terminate: the shell's convention.
    ExitCode::from(u8::try_from(128 + raw).unwrap_or(u8::MAX))
}

/// Creates `folder` (and its parents) readable only by the user when it is new (an
/// agent's existing state folder is left as the user made it).
fn create_private(folder: &std::path::Path) -> std::io::Result<()> {
    if folder.is_dir() {
        return Ok(());
    }
    super::private::create_dir_all(folder)
}
