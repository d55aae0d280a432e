//! The processes descended from one process, found in `/proc`, and how they are ended.
//!
//! Only the supervisor uses this, on its own descendants: as their child subreaper it is
//! the ancestor of every process the attempt started, including those that left its
//! session or process group and those whose parents died. A process is signalled only
//! through a pidfd opened *before* its ancestry is checked again, so a pid that was freed
//! and reused between the scan and the signal is never hit: the pidfd names the process
//! whose start time and parent were verified, or the check fails and it is skipped.

use std::collections::{HashMap, HashSet};
use std::os::fd::OwnedFd;
use std::time::{Duration, Instant};

use rustix::process::{Pid, PidfdFlags, Signal, pidfd_open, pidfd_send_signal};

use crate::supervise::process::{Stat, read_stat};

/// One live (non-zombie) descendant, as the scan saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Member {
    pub pid: u32,
    pub ppid: u32,
    pub start_ticks: u64,
}

/// Every live process whose parent chain leads to `root` (not `root` itself).
pub(crate) fn descendants(root: u32) -> Vec<Member> {
    // Fast path, the common case.
    if childless(root) == Some(true) {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut children: HashMap<u32, Vec<(u32, Stat)>> = HashMap::new();
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(stat) = read_stat(pid) {
            children.entry(stat.ppid).or_default().push((pid, stat));
        }
    }
    let mut found = Vec::new();
    let mut queue = vec![root];
    let mut seen = HashSet::from([root]);
    while let Some(parent) = queue.pop() {
        for (pid, stat) in children.get(&parent).map(Vec::as_slice).unwrap_or_default() {
            if !seen.insert(*pid) {
                continue;
            }
            // A zombie's children (if any) were re-parented already; it holds nothing.
            if !stat.is_dead() {
                found.push(Member {
                    pid: *pid,
                    ppid: stat.ppid,
                    start_ticks: stat.start_ticks,
                });
            }
            queue.push(*pid);
        }
    }
    found
}

/// Whether `root` has no children at all, zombies included (`None`: cannot tell). For
/// the supervisor, a child subreaper, that means no descendants at all: every orphan is
/// re-parented to it, and every other descendant's parent chain passes through one of
/// its children. The file lists the children of one thread; `root` (the supervisor) is
/// single-threaded, so its tid is its pid.
pub(crate) fn childless(root: u32) -> Option<bool> {
    std::fs::read_to_string(format!("/proc/{root}/task/{root}/children"))
        .ok()
        .map(|children| children.trim().is_empty())
}

/// Sends `signal` to `member` if it is still the process the scan saw (same start time,
/// same parent). Whether it was sent.
pub(crate) fn signal_member(member: Member, signal: Signal) -> bool {
    let Some(pid) = i32::try_from(member.pid).ok().and_then(Pid::from_raw) else {
        return false;
    };
    let Ok(fd): Result<OwnedFd, _> = pidfd_open(pid, PidfdFlags::empty()) else {
        return false;
    };
    // The pidfd now pins one process; check it is the one the scan saw.
    let same = read_stat(member.pid).is_some_and(|stat| {
        stat.start_ticks == member.start_ticks && stat.ppid == member.ppid && !stat.is_dead()
    });
    same && pidfd_send_signal(&fd, signal).is_ok()
}

/// What [`end_all`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ended {
    /// Processes that were still alive when `SIGKILL` was needed.
    pub killed: usize,
    /// Descendants still alive when the sweeps gave up (unkillable, or forking faster
    /// than the sweeps): zero means the tree is empty.
    pub survivors: usize,
}

/// How often the tree is scanned while it is being ended.
const SWEEP: Duration = Duration::from_millis(10);
/// After `SIGKILL`, how long to keep sweeping (new forks of dying processes included).
const AFTER_KILL: Duration = Duration::from_secs(2);

/// Ends every descendant of `root`: `SIGTERM` and `SIGCONT` to each (newcomers too, as
/// they appear), up to `grace` for them to exit, then `SIGKILL` sweeps until none is left
/// (bounded by [`AFTER_KILL`]). `reap` is called between sweeps so that the caller, their
/// subreaper, collects the exited ones (otherwise they would stay zombies).
pub(crate) fn end_all(root: u32, grace: Duration, mut reap: impl FnMut(Duration)) -> Ended {
    let term_until = Instant::now() + grace;
    let mut termed: HashSet<(u32, u64)> = HashSet::new();
    loop {
        reap(Duration::ZERO);
        let live = descendants(root);
        if live.is_empty() {
            return Ended {
                killed: 0,
                survivors: 0,
            };
        }
        for member in &live {
            if termed.insert((member.pid, member.start_ticks)) {
                signal_member(*member, Signal::TERM);
                signal_member(*member, Signal::CONT);
            }
        }
        if Instant::now() >= term_until {
            break;
        }
        reap(SWEEP);
    }
    let kill_until = Instant::now() + AFTER_KILL;
    let mut killed = 0;
    let mut counted: HashSet<(u32, u64)> = HashSet::new();
    loop {
        reap(Duration::ZERO);
        let live = descendants(root);
        if live.is_empty() || Instant::now() >= kill_until {
            return Ended {
                killed,
                survivors: live.len(),
            };
        }
        for member in live {
            if signal_member(member, Signal::KILL)
                && counted.insert((member.pid, member.start_ticks))
            {
                killed += 1;
            }
        }
        reap(SWEEP);
    }
}
