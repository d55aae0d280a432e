//! The thread that reads an attempt's output and learns of its exit.
//!
//! One thread, `weft-output-<pid>`, polls the output pipes (stdout and stderr, or the pty
//! master) and a pidfd of the child: a readable pipe is read once (at most
//! [`READ_CHUNK`] bytes) and the bytes go to the monitor; end of file (or `EIO`, a pty's
//! end) closes that pipe; the pidfd turns readable when the child exits, which sends
//! `Exited` without reaping it (the exited leader stays a zombie, so its pid, which is
//! also the process group id, cannot be reused while the group is still being
//! signalled). The thread ends once every pipe is closed and the exit was seen, or when
//! the monitor is gone.
//!
//! Flow control: the channel to the monitor is bounded; while it is full the thread
//! waits, so the child's writes to either pipe stall rather than memory growing. A pipe
//! is never closed early, so the child never sees one closed.
//!
//! Why one thread and not one per pipe plus one blocked in `waitid`: a thread start
//! costs about 50 µs of CPU, three of them per attempt. Where the kernel has no pidfds
//! (before Linux 5.3) it falls back to exactly that.

use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::mpsc::SyncSender;
use std::thread;

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;

use super::OutputStream;
use super::monitor::Msg;

/// Bytes per read.
pub(crate) const READ_CHUNK: usize = 64 * 1024;

/// Starts reading `sources` and watching the child `pid` for its exit; see the module.
pub(crate) fn spawn(
    sources: Vec<(OwnedFd, OutputStream)>,
    pid: u32,
    tx: SyncSender<Msg>,
) -> io::Result<()> {
    spawn_with(sources, pid, tx, true)
}

/// [`spawn`]; `pidfd: false` takes the fallback (the tests' seam).
fn spawn_with(
    sources: Vec<(OwnedFd, OutputStream)>,
    pid: u32,
    tx: SyncSender<Msg>,
    pidfd: bool,
) -> io::Result<()> {
    let pidfd = i32::try_from(pid)
        .ok()
        .filter(|_| pidfd)
        .and_then(rustix::process::Pid::from_raw)
        .and_then(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok());
    let Some(pidfd) = pidfd else {
        for (source, stream) in sources {
            spawn_reader(std::fs::File::from(source), stream, tx.clone(), pid)?;
        }
        return spawn_exit_watcher(pid, tx);
    };
    thread::Builder::new()
        .name(format!("weft-output-{pid}"))
        .spawn(move || run(sources, pidfd, &tx))?;
    Ok(())
}

fn run(sources: Vec<(OwnedFd, OutputStream)>, pidfd: OwnedFd, tx: &SyncSender<Msg>) {
    let mut open: Vec<(std::fs::File, OutputStream)> = sources
        .into_iter()
        .map(|(fd, stream)| (std::fs::File::from(fd), stream))
        .collect();
    let mut pidfd = Some(pidfd);
    let mut buf = vec![0u8; READ_CHUNK];
    while !open.is_empty() || pidfd.is_some() {
        let ready = {
            let mut fds: Vec<PollFd<'_>> = open
                .iter()
                .map(|(file, _)| PollFd::new(file.as_fd(), PollFlags::POLLIN))
                .chain(
                    pidfd
                        .iter()
                        .map(|fd| PollFd::new(fd.as_fd(), PollFlags::POLLIN)),
                )
                .collect();
            match poll(&mut fds, PollTimeout::NONE) {
                Ok(_) => {}
                Err(Errno::EINTR) => continue,
                // Cannot happen with valid descriptors; do not spin.
                Err(_) => return,
            }
            fds.iter()
                .map(|fd| fd.revents().is_some_and(|r| !r.is_empty()))
                .collect::<Vec<bool>>()
        };
        // The pipes first (what the child wrote before it exited comes before `Exited`),
        // from the last so that closing one keeps the others' places.
        for index in (0..open.len()).rev() {
            if !ready[index] {
                continue;
            }
            let (file, stream) = &mut open[index];
            let stream = *stream;
            match file.read(&mut buf) {
                Ok(n) if n > 0 => {
                    if tx.send(Msg::Chunk(stream, buf[..n].to_vec())).is_err() {
                        // The monitor is gone (it gave up on a pipe held open by a process
                        // outside the group): stop reading.
                        return;
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                    ) => {}
                // End of file, or EIO: the pty's slave side is closed everywhere.
                _ => {
                    open.remove(index);
                    if tx.send(Msg::Eof(stream)).is_err() {
                        return;
                    }
                }
            }
        }
        if pidfd.is_some() && ready.last() == Some(&true) {
            pidfd = None;
            if tx.send(Msg::Exited).is_err() {
                return;
            }
        }
    }
}

/// Without a pidfd: one reader thread for `source`.
fn spawn_reader(
    mut source: std::fs::File,
    stream: OutputStream,
    tx: SyncSender<Msg>,
    pid: u32,
) -> io::Result<()> {
    thread::Builder::new()
        .name(format!("weft-{}-{pid}", stream.as_str()))
        .spawn(move || {
            let mut buf = vec![0u8; READ_CHUNK];
            loop {
                match source.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        if tx.send(Msg::Chunk(stream, buf[..n].to_vec())).is_err() {
                            return;
                        }
                    }
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = tx.send(Msg::Eof(stream));
        })?;
    Ok(())
}

/// Without a pidfd: a thread blocked in `waitid(WEXITED | WNOWAIT)`, which learns of the
/// exit without reaping.
fn spawn_exit_watcher(pid: u32, tx: SyncSender<Msg>) -> io::Result<()> {
    thread::Builder::new()
        .name(format!("weft-exit-{pid}"))
        .spawn(move || {
            if let Ok(raw) = i32::try_from(pid) {
                // Exited, or cannot be waited for (then `Child::wait` will say so).
                while let Err(Errno::EINTR) = waitid(
                    Id::Pid(Pid::from_raw(raw)),
                    WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT,
                ) {}
            }
            let _ = tx.send(Msg::Exited);
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::process::{Command, Stdio};
    use std::sync::mpsc::sync_channel;

    use super::*;

    /// What the monitor is told about `sh -c SCRIPT`.
    #[derive(Debug, Default)]
    struct Seen {
        stdout: String,
        stderr: String,
        /// `eof stdout`, `eof stderr` and `exited`, in the order they came.
        marks: Vec<&'static str>,
        /// What stdout had brought when the exit was told.
        stdout_at_exit: String,
        /// Whether the child was still unreaped (a zombie) then.
        zombie_at_exit: bool,
    }

    fn observe(script: &str, pidfd: bool) -> Seen {
        let mut child = Command::new("sh")
            .args(["-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let pid = child.id();
        let sources = vec![
            (
                OwnedFd::from(child.stdout.take().unwrap()),
                OutputStream::Stdout,
            ),
            (
                OwnedFd::from(child.stderr.take().unwrap()),
                OutputStream::Stderr,
            ),
        ];
        // A channel of one: the thread waits on it as on a slow monitor.
        let (tx, rx) = sync_channel(1);
        spawn_with(sources, pid, tx, pidfd).unwrap();
        let mut seen = Seen::default();
        for msg in rx {
            match msg {
                Msg::Chunk(OutputStream::Stdout, bytes) => {
                    seen.stdout.push_str(&String::from_utf8_lossy(&bytes));
                }
                Msg::Chunk(OutputStream::Stderr, bytes) => {
                    seen.stderr.push_str(&String::from_utf8_lossy(&bytes));
                }
                Msg::Eof(OutputStream::Stdout) => seen.marks.push("eof stdout"),
                Msg::Eof(OutputStream::Stderr) => seen.marks.push("eof stderr"),
                Msg::Exited => {
                    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
                    seen.zombie_at_exit = stat
                        .rsplit(')')
                        .next()
                        .is_some_and(|rest| rest.trim_start().starts_with('Z'));
                    seen.stdout_at_exit = seen.stdout.clone();
                    seen.marks.push("exited");
                }
                Msg::Cancel => seen.marks.push("cancel"),
            }
        }
        assert_eq!(child.wait().unwrap().code(), Some(3));
        seen
    }

    #[test]
    fn both_pipes_and_the_exit_reach_the_monitor_with_and_without_a_pidfd() {
        // More than the channel holds and more than one read, on both pipes.
        let script =
            "i=0; while [ $i -lt 3000 ]; do echo out$i; echo err$i >&2; i=$((i+1)); done; exit 3";
        let out: String = (0..3000).map(|i| format!("out{i}\n")).collect();
        let err: String = (0..3000).map(|i| format!("err{i}\n")).collect();
        for pidfd in [true, false] {
            let mut seen = observe(script, pidfd);
            assert_eq!(seen.stdout, out, "pidfd: {pidfd}");
            assert_eq!(seen.stderr, err, "pidfd: {pidfd}");
            assert!(seen.zombie_at_exit, "pidfd: {pidfd}");
            seen.marks.sort_unstable();
            assert_eq!(
                seen.marks,
                ["eof stderr", "eof stdout", "exited"],
                "pidfd: {pidfd}"
            );
        }
    }

    #[test]
    fn the_exit_is_told_while_a_pipe_is_still_held_open() {
        // A grandchild keeps both pipes open for a while after the child exited.
        for pidfd in [true, false] {
            let seen = observe("(sleep 1; echo late) & echo early; exit 3", pidfd);
            assert_eq!(seen.stdout, "early\nlate\n", "pidfd: {pidfd}");
            if pidfd {
                // One thread reads before it tells of the exit; two threads race.
                assert_eq!(seen.stdout_at_exit, "early\n");
            }
            assert_eq!(seen.marks[0], "exited", "pidfd: {pidfd}");
            assert!(seen.zombie_at_exit, "pidfd: {pidfd}");
        }
    }
}
