//! Who holds the store's write lock, for the live notice of a write that waits.
//!
//! SQLite in WAL mode takes its write lock as a POSIX (`fcntl`) lock on byte 120 of the
//! `-shm` file (`WAL_WRITE_LOCK`); Linux lists every such lock in `/proc/locks` with the
//! holder's pid and the file's device and inode. [`holder`] finds the `WRITE` lock
//! covering that byte on our `-shm` (else any `WRITE` lock on the database or its `-wal`),
//! and names the process from `/proc/<pid>/cmdline`. Where there is no `/proc` (or the
//! lock is an open-file-description lock, listed with pid -1), the holder is unknown.
//!
//! Bounds: at most [`LOCKS_MAX`] bytes of `/proc/locks` and [`CMDLINE_MAX`] of the command
//! line are read; the command shown is at most [`COMMAND_CHARS`] characters, with every
//! secret masked ([`weft_core::secrets::mask`]: the store's known secrets, token shapes and
//! `NAME=value` assignments of secret-looking names). Nothing here fails: a file that
//! cannot be read means "unknown".

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Duration;

/// Most bytes of `/proc/locks` read.
pub const LOCKS_MAX: u64 = 1 << 20;
/// Most bytes of a holder's command line read.
pub const CMDLINE_MAX: u64 = 4096;
/// Most characters of the holder's command shown.
pub const COMMAND_CHARS: usize = 120;
/// The byte of the `-shm` file SQLite's WAL write lock covers.
const WAL_WRITE_LOCK: u64 = 120;

/// A write waiting for a store another process holds: what the notice says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BusyWait {
    /// How long the write has waited so far.
    pub waited: Duration,
    /// How long it waits in all before it gives up ([`crate::Store::retry_busy_writes`]).
    pub patience: Duration,
    /// Who holds the lock, when that is known.
    pub holder: Option<LockHolder>,
}

/// The process holding the store's write lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockHolder {
    pub pid: u32,
    /// Its command line, words joined by spaces, bounded and masked; `None` when unreadable.
    pub command: Option<String>,
}

/// The holder of the write lock on the database at `db`, if it can be known.
pub fn holder(db: &Path, secrets: &[String]) -> Option<LockHolder> {
    let id = |path: &Path| {
        fs_err::metadata(path)
            .ok()
            .map(|m| (dev_major(m.dev()), dev_minor(m.dev()), m.ino()))
    };
    let with = |suffix: &str| {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        id(Path::new(&name))
    };
    let shm = with("-shm");
    let others = [id(db), with("-wal")];
    let mut text = String::new();
    fs_err::File::open("/proc/locks")
        .ok()?
        .take(LOCKS_MAX)
        .read_to_string(&mut text)
        .ok()?;
    let mut fallback = None;
    for lock in text.lines().filter_map(parse_lock) {
        if !lock.write || lock.pid <= 0 {
            continue;
        }
        let Ok(pid) = u32::try_from(lock.pid) else {
            continue;
        };
        if shm == Some(lock.file) && lock.start <= WAL_WRITE_LOCK && WAL_WRITE_LOCK <= lock.end {
            return Some(named(pid, secrets));
        }
        if fallback.is_none() && others.contains(&Some(lock.file)) {
            fallback = Some(pid);
        }
    }
    fallback.map(|pid| named(pid, secrets))
}

fn named(pid: u32, secrets: &[String]) -> LockHolder {
    LockHolder {
        pid,
        command: command_line(pid, secrets),
    }
}

/// `/proc/<pid>/cmdline`, words joined by spaces, masked, then cut to [`COMMAND_CHARS`].
fn command_line(pid: u32, secrets: &[String]) -> Option<String> {
    let mut bytes = Vec::new();
    fs_err::File::open(format!("/proc/{pid}/cmdline"))
        .ok()?
        .take(CMDLINE_MAX)
        .read_to_end(&mut bytes)
        .ok()?;
    let words: Vec<String> = bytes
        .split(|b| *b == 0)
        .filter(|w| !w.is_empty())
        .map(|w| String::from_utf8_lossy(w).into_owned())
        .collect();
    if words.is_empty() {
        return None;
    }
    let masked = weft_core::secrets::mask(&words.join(" "), secrets);
    let clean: String = masked
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    Some(match clean.char_indices().nth(COMMAND_CHARS) {
        None => clean,
        Some((cut, _)) => format!("{}…", &clean[..cut]),
    })
}

#[derive(Debug, PartialEq)]
struct Lock {
    write: bool,
    pid: i64,
    file: (u64, u64, u64),
    start: u64,
    end: u64,
}

/// One `/proc/locks` line: `1: POSIX  ADVISORY  WRITE 23962 fe:00:10026920 120 120`
/// (a blocked waiter's line has `->` after the number and is skipped).
fn parse_lock(line: &str) -> Option<Lock> {
    let mut words = line.split_whitespace();
    let _number = words.next()?;
    let kind = words.next()?;
    if kind == "->" || kind == "OFDLCK" {
        return None;
    }
    let _mode = words.next()?;
    let access = words.next()?;
    let pid = words.next()?.parse().ok()?;
    let mut file = words.next()?.split(':');
    let major = u64::from_str_radix(file.next()?, 16).ok()?;
    let minor = u64::from_str_radix(file.next()?, 16).ok()?;
    let inode = file.next()?.parse().ok()?;
    let start = words.next()?.parse().ok()?;
    let end = match words.next()? {
        "EOF" => u64::MAX,
        end => end.parse().ok()?,
    };
    Some(Lock {
        write: access == "WRITE",
        pid,
        file: (major, minor, inode),
        start,
        end,
    })
}

/// Linux's `dev_t` encoding (glibc's `gnu_dev_major` / `gnu_dev_minor`).
fn dev_major(dev: u64) -> u64 {
    ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff)
}

fn dev_minor(dev: u64) -> u64 {
    (dev & 0xff) | ((dev >> 12) & !0xff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_locks_lines_are_read_and_waiters_skipped() {
        assert_eq!(
            parse_lock("1: POSIX  ADVISORY  WRITE 23962 fe:00:10026920 120 120"),
            Some(Lock {
                write: true,
                pid: 23962,
                file: (0xfe, 0, 10_026_920),
                start: 120,
                end: 120
            })
        );
        assert_eq!(
            parse_lock("4: FLOCK  ADVISORY  READ 16229 fe:00:12468226 0 EOF").map(|l| l.end),
            Some(u64::MAX)
        );
        assert_eq!(
            parse_lock("1: -> POSIX  ADVISORY  WRITE 2 fe:00:1 120 120"),
            None
        );
        assert_eq!(parse_lock("garbage"), None);
    }

    #[test]
    fn a_holders_command_is_masked_and_bounded() {
        let me = command_line(std::process::id(), &[]).unwrap();
        assert!(me.chars().count() <= COMMAND_CHARS + 1, "{me}");
        let secret = std::env::args().next().unwrap();
        let masked = command_line(std::process::id(), std::slice::from_ref(&secret)).unwrap();
        assert!(!masked.contains(&secret), "{masked}");
    }
}
