//! Running git: the [`Git`] handle (program, environment, lock patience) and the internal
//! [`Call`] builder every typed operation goes through.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::{GitError, Repo};

/// How long a git command that failed on a lock file is retried before weft gives up and
/// reports [`GitError::Locked`].
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(2);

/// The oldest git weft supports: `git merge-tree --write-tree` appeared in 2.38.
pub const MIN_GIT_VERSION: GitVersion = GitVersion {
    major: 2,
    minor: 38,
    patch: 0,
};

/// How much of git's standard error an error keeps.
const STDERR_LIMIT: usize = 4096;
/// First wait between two attempts of a command that met a lock; doubled up to the cap.
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
const MAX_BACKOFF: Duration = Duration::from_millis(100);

/// How many times a command run in its own process group is started again after a
/// terminal's signal killed it (see [`Call::output`]).
const RESPAWN_LIMIT: u32 = 3;

/// `Command::spawn`, started again a few times while the program is busy (`ETXTBSY`).
///
/// Why: a program written just before it is run (a wrapper script, a git being
/// upgraded) can still be open for writing in a child another thread of this process
/// forked in the moment between the write and the close; that child holds the descriptor
/// until it execs, and the kernel refuses to run a file open for writing. The window is
/// short, so a handful of short waits outlast it; past them the error is the caller's.
fn spawn_unless_busy(command: &mut Command) -> std::io::Result<Child> {
    let mut tries = 0u64;
    loop {
        match command.spawn() {
            Err(error) if error.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 5 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20 * tries));
            }
            result => return result,
        }
    }
}

/// At most this many stale lock files are removed for one command (see
/// [`Call::output`]): a killed git leaves one or two.
const MAX_CLEARED: usize = 4;

/// Whether `lock` is the lock file of one of weft's own refs (a task or integration
/// branch under `refs/heads/weft/`, or weft's records under `refs/weft/`).
fn is_weft_ref_lock(lock: &Path) -> bool {
    let text = lock.to_string_lossy();
    text.ends_with(".lock") && (text.contains("/refs/heads/weft/") || text.contains("/refs/weft/"))
}

/// Whether `lock` is the repository's `packed-refs.lock` (shared by every ref, weft's and
/// the user's).
fn is_packed_refs_lock(lock: &Path) -> bool {
    lock.file_name()
        .is_some_and(|name| name == "packed-refs.lock")
}

/// At most this many processes, and descriptors per process, are looked at by
/// [`held_open`]; past either bound the file counts as held.
const SCAN_PROCESSES: usize = 8192;
const SCAN_DESCRIPTORS: usize = 4096;

/// Whether any process has `path` open (Linux: a link in some `/proc/<pid>/fd`). A git
/// writing a lock file keeps it open until it renames it into place. Unknown (no `/proc`,
/// or past the bounds) counts as held.
fn held_open(path: &Path) -> bool {
    let Ok(target) = std::fs::canonicalize(path) else {
        return false;
    };
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return true;
    };
    let mut seen = 0;
    for process in processes.flatten() {
        if !process
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            continue;
        }
        seen += 1;
        if seen > SCAN_PROCESSES {
            return true;
        }
        let Ok(descriptors) = std::fs::read_dir(process.path().join("fd")) else {
            continue;
        };
        for (index, descriptor) in descriptors.flatten().enumerate() {
            if index >= SCAN_DESCRIPTORS {
                return true;
            }
            if std::fs::read_link(descriptor.path()).is_ok_and(|open| open == target) {
                return true;
            }
        }
    }
    false
}

/// Whether the file at `path` was last changed more than `age` ago.
fn older_than(path: &Path, age: Duration) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|at| at.elapsed().ok())
        .is_some_and(|elapsed| elapsed > age)
}

/// The signals a terminal or a `kill` of a whole process group sends.
fn is_group_signal(signal: i32) -> bool {
    // SIGHUP 1, SIGINT 2, SIGQUIT 3, SIGTERM 15 on Linux.
    matches!(signal, 1 | 2 | 3 | 15)
}

/// Variables that would point git at another repository than the one weft names with
/// `-C`; removed from every child unless the handle sets them explicitly.
const LOCATION_VARS: [&str; 7] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_PREFIX",
];

/// How weft runs git: which program, with which environment, and how patient it is with
/// lock files. Cheap to clone.
///
/// Production code uses [`Git::new`] (the inherited environment). Tests clear the
/// environment and pass a hermetic one:
///
/// ```no_run
/// # use weft_git::Git;
/// # let vars: Vec<(std::ffi::OsString, std::ffi::OsString)> = Vec::new();
/// let git = Git::new().env_clear().envs(vars);
/// let repo = git.open("/path/to/repo")?;
/// # Ok::<(), weft_git::GitError>(())
/// ```
///
/// Whatever the environment, every git child also gets `GIT_TERMINAL_PROMPT=0`,
/// `LC_ALL=C` (so messages are stable), `GIT_EDITOR=:` and `GIT_MERGE_AUTOEDIT=no`
/// (never an editor), standard input from `/dev/null` unless weft feeds it, and
/// `GIT_OPTIONAL_LOCKS=0` for commands that only read. `GIT_DIR`, `GIT_WORK_TREE`,
/// `GIT_INDEX_FILE`, `GIT_COMMON_DIR`, `GIT_OBJECT_DIRECTORY`,
/// `GIT_ALTERNATE_OBJECT_DIRECTORIES` and `GIT_PREFIX` are removed (weft always names the repository with `-C`) unless set with [`Git::env`].
#[derive(Debug, Clone)]
pub struct Git {
    program: OsString,
    clear_env: bool,
    env: Vec<(OsString, OsString)>,
    lock_wait: Duration,
    /// Start each child in a process group of its own (see [`Git::own_process_group`]).
    own_group: bool,
}

impl Default for Git {
    fn default() -> Self {
        Git::new()
    }
}

impl Git {
    /// `git` from `PATH`, the inherited environment, [`DEFAULT_LOCK_WAIT`].
    pub fn new() -> Git {
        Git {
            program: "git".into(),
            clear_env: false,
            env: Vec::new(),
            lock_wait: DEFAULT_LOCK_WAIT,
            own_group: false,
        }
    }

    /// Run this program instead of `git` from `PATH`.
    pub fn program(mut self, program: impl Into<OsString>) -> Git {
        self.program = program.into();
        self
    }

    /// Start git children from an empty environment (then add [`Git::env`] variables).
    pub fn env_clear(mut self) -> Git {
        self.clear_env = true;
        self
    }

    /// Set one variable for every git child.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Git {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Set several variables for every git child.
    pub fn envs<I, K, V>(mut self, vars: I) -> Git
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<OsString>,
        V: Into<OsString>,
    {
        self.env
            .extend(vars.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }

    /// How long a command that fails on an existing lock file (`index.lock`, a ref's
    /// `.lock`, a worktree being created) is retried before [`GitError::Locked`].
    pub fn lock_wait(mut self, wait: Duration) -> Git {
        self.lock_wait = wait;
        self
    }

    /// Start every git child in a process group of its own, so a Ctrl-C at the terminal
    /// (SIGINT to the foreground process group) reaches weft but not git: a step that
    /// must not stop half-way (the handoff merge's apply) finishes, and weft decides.
    /// A child such a signal still reached as it was being started is started again
    /// (see `Call::output`).
    pub fn own_process_group(mut self) -> Git {
        self.own_group = true;
        self
    }

    /// Whether git children get variable `key` (set with [`Git::env`], or inherited).
    pub(crate) fn sets(&self, key: &str) -> bool {
        match self.env.iter().rev().find(|(k, _)| k == key) {
            Some(_) => true,
            None => !self.clear_env && std::env::var_os(key).is_some(),
        }
    }

    /// The configured lock patience.
    pub fn lock_wait_duration(&self) -> Duration {
        self.lock_wait
    }

    /// Open the repository whose working tree contains `path`; see [`Repo::open_with`].
    pub fn open(&self, path: impl AsRef<Path>) -> Result<Repo, GitError> {
        Repo::open_with(self, path)
    }

    /// Make `dir` (an existing folder) a new repository (`git init`, the branch named
    /// by `init.defaultBranch`) and open it. A folder that already is one is
    /// re-initialized, as git does, which changes nothing in its history.
    pub fn init(&self, dir: impl AsRef<Path>) -> Result<Repo, GitError> {
        let dir = dir.as_ref();
        Call::new(self, dir).args(["init", "--quiet"]).run()?;
        self.open(dir)
    }

    /// The installed git's version (`git --version`).
    pub fn version(&self) -> Result<GitVersion, GitError> {
        let here = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
        let call = Call::bare(self, &here).arg("--version").read_only();
        let out = call.run()?;
        let text = String::from_utf8_lossy(&out.stdout);
        GitVersion::parse(&text).ok_or_else(|| GitError::UnexpectedOutput {
            repo: here.clone(),
            command: call.command_line(),
            detail: format!("no version in {:?}", text.trim()),
        })
    }

    /// Fail with [`GitError::TooOld`] unless git is at least [`MIN_GIT_VERSION`].
    pub fn check_version(&self) -> Result<GitVersion, GitError> {
        let version = self.version()?;
        if version < MIN_GIT_VERSION {
            return Err(GitError::TooOld {
                found: version.to_string(),
                needed: MIN_GIT_VERSION.to_string(),
            });
        }
        Ok(version)
    }
}

/// A git version, as `git --version` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GitVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl GitVersion {
    /// Parse `git version 2.47.3` (vendor suffixes such as `.windows.1` or
    /// ` (Apple Git-146)` are ignored).
    pub fn parse(text: &str) -> Option<GitVersion> {
        let rest = text.trim().strip_prefix("git version ")?;
        let mut numbers = rest
            .split(|c: char| !c.is_ascii_digit())
            .take(3)
            .map(|part| part.parse::<u32>().ok());
        let major = numbers.next()??;
        let minor = numbers.next()??;
        let patch = numbers.next().flatten().unwrap_or(0);
        Some(GitVersion {
            major,
            minor,
            patch,
        })
    }
}

impl std::fmt::Display for GitVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// What a finished git command left.
#[derive(Debug)]
pub(crate) struct Output {
    pub status: ExitStatus,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl Output {
    pub fn code(&self) -> Option<i32> {
        self.status.code()
    }

    /// Standard output as text, without the final newline.
    pub fn text(&self) -> String {
        let text = String::from_utf8_lossy(&self.stdout);
        text.strip_suffix('\n').unwrap_or(&text).to_owned()
    }
}

/// One git invocation: `git -C <dir> [-c k=v ...] <args>`.
#[derive(Debug)]
pub(crate) struct Call<'a> {
    git: &'a Git,
    dir: &'a Path,
    config: Vec<OsString>,
    args: Vec<OsString>,
    read_only: bool,
    stdin: Option<Vec<u8>>,
    /// Whether `-C dir` is passed (not for `git --version`).
    in_dir: bool,
}

impl<'a> Call<'a> {
    pub fn new(git: &'a Git, dir: &'a Path) -> Call<'a> {
        Call {
            git,
            dir,
            config: Vec::new(),
            args: Vec::new(),
            read_only: false,
            stdin: None,
            in_dir: true,
        }
    }

    fn bare(git: &'a Git, dir: &'a Path) -> Call<'a> {
        Call {
            in_dir: false,
            ..Call::new(git, dir)
        }
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Call<'a> {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Call<'a>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// `-c key=value` options placed before the subcommand.
    pub fn config(mut self, options: &[OsString]) -> Call<'a> {
        for option in options {
            self.config.push("-c".into());
            self.config.push(option.clone());
        }
        self
    }

    /// The command only reads: run it with `GIT_OPTIONAL_LOCKS=0`.
    pub fn read_only(mut self) -> Call<'a> {
        self.read_only = true;
        self
    }

    /// Feed `input` on standard input.
    pub fn stdin(mut self, input: Vec<u8>) -> Call<'a> {
        self.stdin = Some(input);
        self
    }

    fn all_args(&self) -> Vec<OsString> {
        let mut all = Vec::with_capacity(self.args.len() + self.config.len() + 2);
        if self.in_dir {
            all.push("-C".into());
            all.push(self.dir.as_os_str().to_owned());
        }
        all.extend(self.config.iter().cloned());
        all.extend(self.args.iter().cloned());
        all
    }

    /// The command line as a person would type it, for error messages.
    pub fn command_line(&self) -> String {
        let mut line = quote(&self.git.program);
        for arg in self.all_args() {
            line.push(' ');
            line.push_str(&quote(&arg));
        }
        line
    }

    fn command(&self) -> Command {
        let mut command = Command::new(&self.git.program);
        if self.git.clear_env {
            command.env_clear();
        }
        for var in LOCATION_VARS {
            command.env_remove(var);
        }
        command.envs(self.git.env.iter().map(|(k, v)| (k, v)));
        command
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C")
            .env("GIT_EDITOR", ":")
            .env("GIT_MERGE_AUTOEDIT", "no");
        if self.read_only {
            command.env("GIT_OPTIONAL_LOCKS", "0");
        }
        command.args(self.all_args());
        if self.git.own_group {
            std::os::unix::process::CommandExt::process_group(&mut command, 0);
        }
        command
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    fn spawn(&self) -> Result<Child, GitError> {
        spawn_unless_busy(&mut self.command()).map_err(|error| GitError::Spawn {
            program: self.git.program.to_string_lossy().into_owned(),
            error,
        })
    }

    /// Start it with standard input and output piped and standard error discarded, for a
    /// process weft talks to over its pipes (see `batch`): the caller reads its answers,
    /// and falls back to a one-shot command, whose error names what went wrong, when it
    /// misbehaves.
    pub fn spawn_piped(&self) -> Result<Child, GitError> {
        let mut command = self.command();
        command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        spawn_unless_busy(&mut command).map_err(|error| GitError::Spawn {
            program: self.git.program.to_string_lossy().into_owned(),
            error,
        })
    }

    /// Run once, whatever the exit status.
    fn run_once(&self) -> Result<Output, GitError> {
        let mut child = self.spawn()?;
        let writer = match (child.stdin.take(), &self.stdin) {
            (Some(mut pipe), Some(input)) => {
                let input = input.clone();
                // A thread, so a child that answers while still reading cannot deadlock us.
                Some(std::thread::spawn(move || {
                    // A child that exits early closes the pipe; its status tells the story.
                    let _ = pipe.write_all(&input);
                }))
            }
            _ => None,
        };
        let output = child.wait_with_output().map_err(|error| GitError::Spawn {
            program: self.git.program.to_string_lossy().into_owned(),
            error,
        })?;
        if let Some(writer) = writer {
            let _ = writer.join();
        }
        Ok(Output {
            status: output.status,
            stdout: output.stdout,
            stderr: output.stderr,
        })
    }

    /// Run, retrying while git reports an existing lock file, up to the handle's lock
    /// patience; then [`GitError::Locked`]. Any other outcome is returned as is,
    /// whatever the exit status.
    pub fn output(&self) -> Result<Output, GitError> {
        let start = Instant::now();
        let mut backoff = FIRST_BACKOFF;
        let mut attempts = 0u32;
        let mut respawned = 0;
        // The stale locks removed so far, each at most once (a killed `git branch -D`
        // leaves two: its ref's and `packed-refs.lock`).
        let mut cleared: Vec<PathBuf> = Vec::new();
        loop {
            let out = self.run_once()?;
            attempts += 1;
            if out.status.success() {
                return Ok(out);
            }
            if self.git.own_group
                && respawned < RESPAWN_LIMIT
                && out.status.signal().is_some_and(is_group_signal)
            {
                // Why: a child asked to run in a process group of its own is still in
                // weft's group for a moment after it is created (the C library blocks
                // signals, creates the child, moves it to its group, then unblocks). A
                // Ctrl-C at the terminal landing in that moment stays pending in the
                // child and kills it before git even starts, which would fail the one
                // step (the handoff merge's apply) that must finish. Nothing ran, so
                // running it again is safe; a git killed later, on purpose, by a
                // `kill` aimed at it, would reach here too, and every command run in
                // its own group is one that can be repeated (reads, index updates,
                // compare-and-swap ref moves). Bounded, so a git that keeps dying is
                // reported.
                respawned += 1;
                continue;
            }
            let Some(lock) = lock_in(&out.stderr) else {
                return Ok(out);
            };
            let waited = start.elapsed();
            if waited >= self.git.lock_wait {
                if cleared.len() < MAX_CLEARED
                    && !cleared.contains(&lock)
                    && (is_weft_ref_lock(&lock) || is_packed_refs_lock(&lock))
                    && older_than(&lock, self.git.lock_wait)
                    && !held_open(&lock)
                {
                    // Why: a git killed with the engine (SIGKILL leaves it no chance to
                    // clean up) leaves its lock, and keeping it would fail every later
                    // update for good, a handoff's cleanup included (crash campaign, seeds
                    // 1796183258441854149 and 1796195567102835607). Two kinds are removed:
                    // the lock of one of weft's own refs (`refs/heads/weft/…`,
                    // `refs/weft/…`: only weft writes them, and a git holds a ref's lock
                    // for the moment of one update), and `packed-refs.lock` (deleting a
                    // packed branch rewrites `packed-refs`). Only when it has been there
                    // longer than the whole patience and no process holds it open: a
                    // live git keeps its lock open until it renames it into place, so a
                    // long `git pack-refs` of the user's is never broken into. A lock on
                    // any other ref is the user's business and is only named. Each lock
                    // at most once, and more than one: a `git branch -D` killed as it
                    // deletes a packed branch leaves both its ref's lock and
                    // `packed-refs.lock` (seed 1796416889795172893, under load).
                    let _ = std::fs::remove_file(&lock);
                    cleared.push(lock);
                    continue;
                }
                return Err(GitError::Locked {
                    repo: self.dir.to_owned(),
                    lock,
                    command: self.command_line(),
                    attempts,
                    waited,
                    stderr: bounded(&out.stderr),
                });
            }
            std::thread::sleep(backoff.min(self.git.lock_wait - waited));
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
    }

    /// Run; any exit status but 0 is a [`GitError::Command`].
    pub fn run(&self) -> Result<Output, GitError> {
        self.run_accepting(&[0])
    }

    /// Run; exit codes outside `accepted` are a [`GitError::Command`].
    pub fn run_accepting(&self, accepted: &[i32]) -> Result<Output, GitError> {
        let out = self.output()?;
        match out.code() {
            Some(code) if accepted.contains(&code) => Ok(out),
            _ => Err(self.failed(&out)),
        }
    }

    /// Run and return standard output as text (without the final newline).
    pub fn text(&self) -> Result<String, GitError> {
        Ok(self.run()?.text())
    }

    /// The error for a finished command that did not do what was asked.
    pub fn failed(&self, out: &Output) -> GitError {
        GitError::Command {
            repo: self.dir.to_owned(),
            command: self.command_line(),
            status: describe_status(out.status),
            code: out.code(),
            stderr: bounded(&out.stderr),
        }
    }

    /// Output that did not parse.
    pub fn unexpected(&self, detail: impl Into<String>) -> GitError {
        GitError::UnexpectedOutput {
            repo: self.dir.to_owned(),
            command: self.command_line(),
            detail: detail.into(),
        }
    }

    /// Run this command with its standard output piped into `next`'s standard input
    /// (`self | next`), without holding the data in memory; both must exit 0.
    pub fn pipe_into(&self, next: &Call<'_>) -> Result<(), GitError> {
        let mut first = self.spawn()?;
        let writer = match (first.stdin.take(), &self.stdin) {
            (Some(mut pipe), Some(input)) => {
                let input = input.clone();
                Some(std::thread::spawn(move || {
                    let _ = pipe.write_all(&input);
                }))
            }
            _ => None,
        };
        let stdout = first.stdout.take().expect("stdout is piped");
        let mut second = next.command();
        second.stdin(Stdio::from(stdout));
        let second = spawn_unless_busy(&mut second);
        let second = match second {
            Ok(child) => child,
            Err(error) => {
                let _ = first.kill();
                let _ = first.wait();
                return Err(GitError::Spawn {
                    program: next.git.program.to_string_lossy().into_owned(),
                    error,
                });
            }
        };
        let first_out = first.wait_with_output();
        let second_out = second.wait_with_output();
        if let Some(writer) = writer {
            let _ = writer.join();
        }
        let spawn = |error| GitError::Spawn {
            program: self.git.program.to_string_lossy().into_owned(),
            error,
        };
        let first_out = first_out.map_err(spawn)?;
        let second_out = second_out.map_err(spawn)?;
        let first_out = Output {
            status: first_out.status,
            stdout: Vec::new(),
            stderr: first_out.stderr,
        };
        let second_out = Output {
            status: second_out.status,
            stdout: second_out.stdout,
            stderr: second_out.stderr,
        };
        if !first_out.status.success() {
            return Err(self.failed(&first_out));
        }
        if !second_out.status.success() {
            return Err(next.failed(&second_out));
        }
        Ok(())
    }

    /// Run, keeping at most `limit` bytes of standard output. When the output is longer
    /// the pipe is closed early (git stops on `SIGPIPE`, which is then not an error) and
    /// the second value is `true`.
    pub fn run_capped(&self, limit: usize) -> Result<(Vec<u8>, bool), GitError> {
        let mut child = self.spawn()?;
        let mut stdout = child.stdout.take().expect("stdout is piped");
        let mut stderr = child.stderr.take().expect("stderr is piped");
        let errors = std::thread::spawn(move || {
            let mut buffer = Vec::new();
            let _ = stderr.read_to_end(&mut buffer);
            buffer
        });
        let mut kept = Vec::new();
        let read = (&mut stdout).take(limit as u64 + 1).read_to_end(&mut kept);
        let truncated = kept.len() > limit;
        kept.truncate(limit);
        drop(stdout);
        let status = child.wait().map_err(|error| GitError::Spawn {
            program: self.git.program.to_string_lossy().into_owned(),
            error,
        })?;
        let stderr = errors.join().unwrap_or_default();
        let out = Output {
            status,
            stdout: Vec::new(),
            stderr,
        };
        if let Err(source) = read {
            return Err(GitError::io(self.dir, source));
        }
        // Once the output was cut, git's failure to write the rest (SIGPIPE or EPIPE) is
        // ours, not an error.
        if status.success() || truncated {
            Ok((kept, truncated))
        } else {
            Err(self.failed(&out))
        }
    }
}

fn describe_status(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "unknown exit status".to_owned(),
    }
}

/// Git's standard error, trimmed, at most [`STDERR_LIMIT`] bytes (the start and the end
/// are kept; git puts the `fatal:` line last).
pub(crate) fn bounded(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    if text.len() <= STDERR_LIMIT {
        return text.to_owned();
    }
    let head_end = floor_char_boundary(text, STDERR_LIMIT / 4);
    let tail_start = ceil_char_boundary(text, text.len() - STDERR_LIMIT * 3 / 4);
    format!(
        "{} [... {} bytes cut ...] {}",
        &text[..head_end],
        tail_start - head_end,
        &text[tail_start..]
    )
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn ceil_char_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index += 1;
    }
    index
}

/// The lock file named by git's "Unable to create '<path>.lock': File exists." message.
pub(crate) fn lock_in(stderr: &[u8]) -> Option<PathBuf> {
    const START: &[u8] = b"Unable to create '";
    const END: &[u8] = b"': File exists";
    let start = memchr::memmem::find(stderr, START)? + START.len();
    let length = memchr::memmem::find(&stderr[start..], END)?;
    let path = &stderr[start..start + length];
    Some(PathBuf::from(OsStr::from_bytes(path)))
}

/// Quote an argument for display the way a POSIX shell would need it.
fn quote(arg: &OsStr) -> String {
    let text = arg.to_string_lossy();
    let plain = !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,^{}~".contains(&b) || !b.is_ascii());
    if plain {
        text.into_owned()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse() {
        assert_eq!(
            GitVersion::parse("git version 2.47.3\n"),
            Some(GitVersion {
                major: 2,
                minor: 47,
                patch: 3
            })
        );
        assert_eq!(
            GitVersion::parse("git version 2.39.3 (Apple Git-146)"),
            Some(GitVersion {
                major: 2,
                minor: 39,
                patch: 3
            })
        );
        assert_eq!(
            GitVersion::parse("git version 2.45.1.windows.1").map(|v| v >= MIN_GIT_VERSION),
            Some(true)
        );
        assert!(GitVersion::parse("git version 2.37.1").unwrap() < MIN_GIT_VERSION);
        assert_eq!(GitVersion::parse("hg 6"), None);
    }

    #[test]
    fn lock_paths_are_found_in_git_messages() {
        let stderr = b"fatal: Unable to create '/tmp/r t/.git/index.lock': File exists.\n\nAnother git process";
        assert_eq!(
            lock_in(stderr),
            Some(PathBuf::from("/tmp/r t/.git/index.lock"))
        );
        let stderr = b"fatal: update_ref failed for ref 'refs/heads/t3': cannot lock ref 'refs/heads/t3': Unable to create '/x/.git/refs/heads/t3.lock': File exists.";
        assert_eq!(
            lock_in(stderr),
            Some(PathBuf::from("/x/.git/refs/heads/t3.lock"))
        );
        assert_eq!(
            lock_in(b"fatal: cannot lock ref 'x': is at a but expected b"),
            None
        );
    }

    #[test]
    fn stderr_is_bounded() {
        let long = "é".repeat(10_000);
        let cut = bounded(long.as_bytes());
        assert!(cut.len() < STDERR_LIMIT + 100, "{}", cut.len());
        assert!(cut.contains("bytes cut"));
        assert_eq!(bounded(b"  short\n"), "short");
    }

    #[test]
    fn arguments_are_quoted_for_display() {
        assert_eq!(quote(OsStr::new("rev-parse")), "rev-parse");
        assert_eq!(quote(OsStr::new("a b")), "'a b'");
        assert_eq!(quote(OsStr::new("it's")), "'it'\\''s'");
        assert_eq!(quote(OsStr::new("")), "''");
        assert_eq!(quote(OsStr::new("déjà")), "déjà");
    }
}
