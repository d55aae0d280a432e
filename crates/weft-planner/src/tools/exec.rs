//! Running a research process: empty stdin, its own process group, stdout and stderr
//! captured together up to a cap, the whole group killed at a deadline, a scrubbed
//! environment.

use std::ffi::OsString;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use weft_agents::supervise::{group_alive, kill_group};
use weft_core::secrets::is_secret_name;

/// How long a killed group gets between `SIGTERM` and `SIGKILL`.
const KILL_GRACE: Duration = Duration::from_millis(300);

/// After the process ended or was killed, how long to wait for the output pipe to close
/// (a descendant outside the group could hold it open forever).
const DRAIN_WAIT: Duration = Duration::from_secs(2);

const POLL: Duration = Duration::from_millis(10);

/// What a process printed and how it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessOutput {
    /// stdout and stderr, interleaved as written, at most the cap.
    pub output: Vec<u8>,
    /// More output was written than the cap; the process was stopped once it was reached.
    pub truncated: bool,
    /// How the process ended (`None` if it could not be reaped).
    pub status: Option<ExitStatus>,
    /// The deadline passed and the process group was killed.
    pub timed_out: bool,
}

/// Runs `command` with empty stdin in its own process group, capturing stdout and stderr
/// through one pipe up to `max_output_bytes`. At `timeout` the whole group is killed
/// (`SIGTERM`, then `SIGKILL`); once the cap is reached the group is stopped too. Any
/// member of the group still alive after the process exits is killed. `Err` only when the
/// process cannot be started.
///
/// The caller sets the program, arguments, directory and environment.
pub fn run_process(
    mut command: Command,
    timeout: Duration,
    max_output_bytes: usize,
) -> std::io::Result<ProcessOutput> {
    let deadline = Instant::now() + timeout;
    let (mut reader, writer) = std::io::pipe()?;
    let writer_err = writer.try_clone()?;
    command
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(writer_err)
        .process_group(0);
    let spawned = command.spawn();
    // The command holds our copies of the pipe's write end: drop them so the reader sees
    // the end of output when the process (and its descendants) close theirs.
    drop(command);
    let mut child = spawned?;
    let group = i32::try_from(child.id()).unwrap_or(0);

    let captured = Arc::new(Mutex::new((Vec::new(), false)));
    let (done_tx, done_rx) = mpsc::channel::<()>();
    {
        let captured = Arc::clone(&captured);
        thread::spawn(move || {
            let mut chunk = [0u8; 8192];
            loop {
                let n = match reader.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                };
                let mut guard = captured.lock().unwrap_or_else(PoisonError::into_inner);
                let room = max_output_bytes.saturating_sub(guard.0.len());
                if n > room {
                    guard.0.extend_from_slice(&chunk[..room]);
                    guard.1 = true;
                    // Stop reading: the process gets SIGPIPE on its next write, and is
                    // stopped below anyway.
                    break;
                }
                guard.0.extend_from_slice(&chunk[..n]);
            }
            let _ = done_tx.send(());
        });
    }

    let mut timed_out = false;
    let mut status = None;
    match done_rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
        Ok(()) => {
            let truncated = captured.lock().unwrap_or_else(PoisonError::into_inner).1;
            if truncated {
                stop(group, &mut child);
            }
            // The output is closed; wait for the process itself, up to the deadline.
            loop {
                match child.try_wait() {
                    Ok(Some(s)) => {
                        status = Some(s);
                        break;
                    }
                    Ok(None) if Instant::now() >= deadline => {
                        timed_out = true;
                        stop(group, &mut child);
                        break;
                    }
                    Ok(None) => thread::sleep(POLL),
                    Err(_) => break,
                }
            }
        }
        Err(_) => {
            timed_out = true;
            stop(group, &mut child);
            let _ = done_rx.recv_timeout(DRAIN_WAIT);
        }
    }
    if status.is_none() {
        status = child.wait().ok();
    }
    // Descendants left in the group (the process exited before them).
    if group > 1 && group_alive(group) {
        kill_group(group, KILL_GRACE);
    }
    let (output, truncated) = {
        let mut guard = captured.lock().unwrap_or_else(PoisonError::into_inner);
        (std::mem::take(&mut guard.0), guard.1)
    };
    Ok(ProcessOutput {
        output,
        truncated,
        status,
        timed_out,
    })
}

/// Kills the group (and the child itself, should the group be unusable).
fn stop(group: i32, child: &mut std::process::Child) {
    if group > 1 {
        kill_group(group, KILL_GRACE);
    }
    let _ = child.kill();
}

/// Variables never handed to a research process, besides secret-named ones: they change
/// what programs run or read (pagers, shell start-up files, tool configuration).
const DROPPED: &[&str] = &[
    "PAGER",
    "MANPAGER",
    "BASH_ENV",
    "ENV",
    "CDPATH",
    "PROMPT_COMMAND",
    "SHELLOPTS",
    "BASHOPTS",
    "RIPGREP_CONFIG_PATH",
    "GREP_OPTIONS",
    "LESSOPEN",
    "LESSCLOSE",
    "LD_PRELOAD",
    "LD_AUDIT",
];

/// `GIT_*` variables that are kept: where git's own configuration lives (the user's choice,
/// trusted like `~/.gitconfig`). Every other `GIT_*` (`GIT_DIR`, `GIT_EXTERNAL_DIFF`,
/// `GIT_CONFIG_PARAMETERS`, …) is dropped.
const KEPT_GIT: &[&str] = &[
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CEILING_DIRECTORIES",
];

/// The environment of a research process: `vars` without secret-named variables
/// ([`is_secret_name`]), `GIT_*` redirections and the variables that change what programs
/// run, plus a fixed set that keeps output plain (`PAGER=cat`, `GIT_PAGER=cat`,
/// `NO_COLOR=1`, `TERM=dumb`, `GIT_TERMINAL_PROMPT=0`, `GIT_OPTIONAL_LOCKS=0`).
pub fn scrub_env(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    let mut out: Vec<(OsString, OsString)> = vars
        .into_iter()
        .filter(|(name, _)| {
            let name = name.to_string_lossy();
            let dropped_git = name.starts_with("GIT_") && !KEPT_GIT.contains(&name.as_ref());
            !(is_secret_name(&name) || dropped_git || DROPPED.contains(&name.as_ref()))
        })
        .collect();
    for (name, value) in [
        ("PAGER", "cat"),
        ("GIT_PAGER", "cat"),
        ("NO_COLOR", "1"),
        ("TERM", "dumb"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GIT_OPTIONAL_LOCKS", "0"),
    ] {
        out.retain(|(n, _)| n != name);
        out.push((name.into(), value.into()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut command = Command::new("sh");
        command.arg("-c").arg(script);
        command
    }

    #[test]
    fn captures_both_streams_and_the_exit_code() {
        let out = run_process(
            sh("echo out; echo err >&2; exit 3"),
            Duration::from_secs(10),
            1000,
        )
        .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.output), "out\nerr\n");
        assert_eq!(out.status.and_then(|s| s.code()), Some(3));
        assert!(!out.truncated && !out.timed_out);
    }

    #[test]
    fn kills_the_whole_group_at_the_deadline() {
        let started = Instant::now();
        // `sleep` holds the output pipe: killing only `sh` would leave the read blocked.
        let out = run_process(
            sh("echo before; sleep 30 | cat"),
            Duration::from_millis(500),
            1000,
        )
        .unwrap();
        assert!(out.timed_out);
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(String::from_utf8_lossy(&out.output), "before\n");
    }

    #[test]
    fn stops_at_the_output_cap() {
        let started = Instant::now();
        let out = run_process(sh("yes"), Duration::from_secs(20), 10_000).unwrap();
        assert!(out.truncated);
        assert_eq!(out.output.len(), 10_000);
        assert!(!out.timed_out);
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn scrubs_the_environment() {
        let vars = [
            ("PATH", "/bin"),
            ("OPENAI_API_KEY", "sk-1"),
            ("GITHUB_TOKEN", "t"),
            ("DB_PASSWORD", "p"),
            ("GIT_DIR", "/elsewhere"),
            ("GIT_CONFIG_GLOBAL", "/dev/null"),
            ("PAGER", "less"),
            ("BASH_ENV", "/tmp/x"),
        ]
        .map(|(n, v)| (OsString::from(n), OsString::from(v)));
        let env = scrub_env(vars);
        let get = |name: &str| {
            env.iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        assert_eq!(get("PATH").as_deref(), Some("/bin"));
        assert_eq!(get("GIT_CONFIG_GLOBAL").as_deref(), Some("/dev/null"));
        assert_eq!(get("PAGER").as_deref(), Some("cat"));
        for gone in [
            "OPENAI_API_KEY",
            "GITHUB_TOKEN",
            "DB_PASSWORD",
            "GIT_DIR",
            "BASH_ENV",
        ] {
            assert_eq!(get(gone), None, "{gone}");
        }
    }
}
