//! Process and process-group helpers built on `/proc` (Linux) with `kill(2)` fallbacks.

use std::thread;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::{Pid, getpgrp};

/// How often a group is polled while waiting for it to die.
const POLL: Duration = Duration::from_millis(10);

/// After `SIGKILL`, how long [`kill_group`] waits for the group to disappear.
const AFTER_KILL: Duration = Duration::from_secs(1);

/// What `/proc/<pid>/stat` says about one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stat {
    pub state: u8,
    pub ppid: u32,
    pub pgrp: i32,
    pub start_ticks: u64,
}

impl Stat {
    /// Zombies (exited, not yet reaped) and dead tasks hold no resources worth killing.
    pub(crate) fn is_dead(&self) -> bool {
        matches!(self.state, b'Z' | b'X' | b'x')
    }
}

/// Parses `/proc/<pid>/stat`. The command name (field 2) may contain spaces and
/// parentheses, so fields are counted from the last `)`.
pub(crate) fn parse_stat(text: &str) -> Option<Stat> {
    let rest = &text[text.rfind(')')? + 1..];
    let mut fields = rest.split_ascii_whitespace();
    // Field 3 is the state; fields are 1-based in proc(5).
    let state = *fields.next()?.as_bytes().first()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    // Field 22 (starttime) is 17 fields after field 5 (pgrp).
    let start_ticks = fields.nth(16)?.parse().ok()?;
    Some(Stat {
        state,
        ppid,
        pgrp,
        start_ticks,
    })
}

pub(crate) fn read_stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

fn proc_available() -> bool {
    std::path::Path::new("/proc/self/stat").exists()
}

/// Whether a process with this pid exists and has not exited (a zombie counts as gone).
pub fn process_alive(pid: u32) -> bool {
    let Ok(raw) = i32::try_from(pid) else {
        return false;
    };
    if raw == 0 {
        return false;
    }
    if proc_available() {
        return read_stat(pid).is_some_and(|stat| !stat.is_dead());
    }
    match kill(Pid::from_raw(raw), None) {
        Ok(()) | Err(Errno::EPERM) => true,
        Err(_) => false,
    }
}

/// The process's start time in clock ticks since boot (`/proc/<pid>/stat` field 22).
/// A stored `(pid, start_ticks)` pair names one process: a reused pid has a different
/// start time.
pub fn process_start_ticks(pid: u32) -> Option<u64> {
    read_stat(pid).map(|stat| stat.start_ticks)
}

/// Whether any live (non-zombie) process belongs to this process group.
///
/// Scans `/proc`, so a group whose only member is an unreaped zombie (an attempt's own
/// exited leader) counts as gone. Without `/proc`, asks `kill(-pgid, 0)`.
pub fn group_alive(process_group: i32) -> bool {
    if process_group <= 1 {
        return false;
    }
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if let Some(stat) = read_stat(pid)
                && stat.pgrp == process_group
                && !stat.is_dead()
            {
                return true;
            }
        }
        return false;
    }
    matches!(
        killpg(Pid::from_raw(process_group), None),
        Ok(()) | Err(Errno::EPERM)
    )
}

/// Sends `signal` to every member of the group. Refuses groups 0 and 1 and weft's own
/// group. `Ok(false)` when the group does not exist.
pub(crate) fn signal_group(process_group: i32, signal: Signal) -> bool {
    if process_group <= 1 || process_group == getpgrp().as_raw() {
        return false;
    }
    killpg(Pid::from_raw(process_group), signal).is_ok()
}

/// Terminates a whole process group: `SIGTERM` (and `SIGCONT`, so stopped members can act
/// on it), up to `grace` for the members to exit, then `SIGKILL`. Returns `true` if
/// anything was signalled (`false` when no live member exists). Refuses groups 0 and 1 and the caller's own group.
///
/// Blocks for up to `grace` plus about a second.
pub fn kill_group(process_group: i32, grace: Duration) -> bool {
    // A group of zombies only (their parent is gone and nobody reaped them yet) accepts
    // signals but has nothing left to stop.
    if !group_alive(process_group) || !signal_group(process_group, Signal::SIGTERM) {
        return false;
    }
    signal_group(process_group, Signal::SIGCONT);
    if wait_group_gone(process_group, grace) {
        return true;
    }
    signal_group(process_group, Signal::SIGKILL);
    wait_group_gone(process_group, AFTER_KILL);
    true
}

/// Polls until no live member of the group is left, up to `limit`.
fn wait_group_gone(process_group: i32, limit: Duration) -> bool {
    let until = Instant::now() + limit;
    loop {
        if !group_alive(process_group) {
            return true;
        }
        let now = Instant::now();
        if now >= until {
            return false;
        }
        thread::sleep(POLL.min(until - now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_awkward_command_names() {
        let text = "1234 (a b) (c)) S 1 1234 1234 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0";
        let stat = parse_stat(text).unwrap();
        assert_eq!(stat.state, b'S');
        assert_eq!(stat.ppid, 1);
        assert_eq!(stat.pgrp, 1234);
        assert_eq!(stat.start_ticks, 987_654);
    }

    #[test]
    fn own_process_is_alive_and_has_a_start_time() {
        let me = std::process::id();
        assert!(process_alive(me));
        assert!(process_start_ticks(me).is_some());
        assert!(!process_alive(0));
    }

    #[test]
    fn refuses_dangerous_groups() {
        assert!(!kill_group(0, Duration::ZERO));
        assert!(!kill_group(1, Duration::ZERO));
        assert!(!kill_group(-5, Duration::ZERO));
        assert!(!kill_group(getpgrp().as_raw(), Duration::ZERO));
    }
}
