//! Containment: every process an attempt starts ends with the attempt, and (confined) it
//! writes only where it may.
//!
//! # The mechanism: a per-attempt supervisor process
//!
//! With a [`Containment`], [`crate::supervise::Attempt::start`] does not start the
//! command itself but a small supervisor: the weft binary again, with
//! [`SUPERVISOR_ARG`] as its first argument (its `main` hands the rest to
//! [`supervisor_main`] before parsing anything). The supervisor, in its own process and
//! on one thread:
//!
//! 1. becomes a **child subreaper** (`PR_SET_CHILD_SUBREAPER`): every process of the
//!    attempt whose parent dies (`setsid`, `nohup`, double-fork daemons, the agent CLIs'
//!    shell tools that start each command in a new session) is re-parented to it, so
//!    "the attempt's processes" is exactly "the supervisor's descendants", found through
//!    `/proc/*/stat` parent links, whatever sessions or groups they moved to;
//! 2. when asked, applies the **Landlock** ruleset to itself (reading everywhere,
//!    writing only beneath the write paths, no signals outside its own domain); every
//!    descendant inherits it and cannot lift it; weft itself stays unconfined;
//! 3. starts the real command with the same stdin, stdout and stderr (the engine's pipes
//!    or pty reach the agent directly), `TMPDIR` set to the attempt's private folder;
//! 4. waits until the agent exits, the engine asks it to stop (`SIGTERM`, `SIGINT`,
//!    `SIGHUP`, `SIGQUIT`: cancel, timeout, `weft stop`, Ctrl-C), or the engine dies
//!    (the lifeline: `getppid()` is polled every 200 ms);
//! 5. ends every remaining descendant: `SIGTERM` + `SIGCONT`, up to `kill_grace`
//!    (default 3 s, at most 5 s; 3 s at most when the engine died, so everything is gone
//!    within 5 s), then `SIGKILL`, reaping them;
//! 6. once it has no child left (not even a zombie), names itself `weft-clear`, which
//!    tells the engine that the attempt's process group is empty (so the engine need
//!    not scan `/proc` for its members; only the supervisor can set its own name), and
//!    exits like the agent (its code, or the same signal). The engine removes the temp
//!    folder.
//!
//! Only descendants are ever signalled, each through a pidfd whose process was verified
//! (start time and parent) after the pidfd was opened, so a reused pid is never hit.
//!
//! # Threads and bounds
//!
//! The supervisor has one thread and no signal handlers (signals are read from a
//! signalfd). The `/proc` scan is O(processes on the machine) per sweep; sweeps run
//! every 10 ms only while the attempt is being ended, bounded by `kill_grace` + 2 s.
//!
//! # What stays out of reach
//!
//! Work handed to a process that is not a descendant: an already-running daemon (a tmux
//! server, dockerd, systemd user units, an IDE's language server started elsewhere) runs
//! what it was asked outside the attempt's tree and outside its Landlock domain. A
//! process that calls `PR_SET_CHILD_SUBREAPER` itself still stays a descendant, so it is
//! still found.

mod confine;
pub mod env;
pub mod private;
mod supervisor;
mod tree;

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

pub use confine::{landlock_available, restrict_thread};
pub use supervisor::supervisor_main;
pub(crate) use supervisor::{exited_clear, is_ending};

/// The first argument that makes a weft binary the supervisor.
pub const SUPERVISOR_ARG: &str = "__contain";

/// Default `SIGTERM` → `SIGKILL` grace for the attempt's leftover processes.
pub const DEFAULT_KILL_GRACE: Duration = Duration::from_secs(3);
/// The longest grace the supervisor accepts.
pub const MAX_KILL_GRACE: Duration = Duration::from_secs(5);
/// How much longer than the supervisor's grace the engine waits before it `SIGKILL`s the
/// supervisor itself (which would leave the attempt's orphans to init).
pub const SUPERVISOR_MARGIN: Duration = Duration::from_secs(4);

/// The device files every program may write (besides its write paths).
pub const DEVICE_PATHS: [&str; 7] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// How one attempt's processes are contained.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Containment {
    /// The supervisor program: a binary whose `main` hands [`SUPERVISOR_ARG`] to
    /// [`supervisor_main`] (the weft binary itself).
    pub supervisor: PathBuf,
    /// Grace for the attempt's processes between `SIGTERM` and `SIGKILL` (capped at
    /// [`MAX_KILL_GRACE`]).
    pub kill_grace: Duration,
    /// Landlock confinement, or `None` to run unconfined (still contained).
    pub confine: Option<WritePaths>,
    /// The attempt's private temp folder: created (0700) before the command starts, its
    /// `TMPDIR`, writable when confined, removed when the attempt ends.
    pub tmp_dir: Option<PathBuf>,
    /// The environment the process starts from instead of weft's own (the launch's own
    /// variables are set on top; see [`mod@env`]), or `None` to inherit weft's.
    pub env: Option<env::Passed>,
}

/// The folders and files a confined attempt may write (besides [`DEVICE_PATHS`] and its
/// temp folder). Paths that do not exist are skipped, except `create`d ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WritePaths {
    pub paths: Vec<PathBuf>,
    /// Of `paths`, the agent's own state folders: created (0700) before confining when
    /// missing, since the agent could not create them itself.
    pub create: Vec<PathBuf>,
}

impl WritePaths {
    /// Every writable path, devices and the temp folder included, in rule order.
    pub fn all(&self, tmp_dir: Option<&Path>) -> Vec<PathBuf> {
        let mut all = self.paths.clone();
        all.extend(tmp_dir.map(Path::to_path_buf));
        all.extend(DEVICE_PATHS.iter().map(PathBuf::from));
        all
    }
}

/// The `confine` setting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Confine {
    /// Confine where the kernel supports Landlock; otherwise run unconfined, with a notice.
    #[default]
    Auto,
    /// Confine, or refuse to start.
    Landlock,
    /// Never confine (processes are still contained).
    Off,
}

impl Confine {
    pub fn parse(text: &str) -> Option<Confine> {
        match text {
            "auto" => Some(Confine::Auto),
            "landlock" => Some(Confine::Landlock),
            "off" => Some(Confine::Off),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Confine::Auto => "auto",
            Confine::Landlock => "landlock",
            Confine::Off => "off",
        }
    }
}

impl fmt::Display for Confine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The worktree's own admin folder (`<repo>/.git/worktrees/<name>`), named by the
/// `gitdir:` line of its `.git` file; `None` for a main checkout or a missing file.
pub fn worktree_admin_dir(worktree: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(worktree.join(".git")).ok()?;
    let dir = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let dir = Path::new(dir);
    let dir = if dir.is_absolute() {
        dir.to_path_buf()
    } else {
        worktree.join(dir)
    };
    dir.is_dir().then_some(dir)
}

/// Why a write path cannot be granted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WritePathError {
    #[error("write path `{entry}` resolves to {}, which is not an absolute path", path.display())]
    Relative { entry: String, path: PathBuf },
    #[error("write path `{entry}` resolves to {}, which holds the whole home folder (or is it)", path.display())]
    Home { entry: String, path: PathBuf },
    #[error("write path `{entry}`: unclosed `${{`")]
    Syntax { entry: String },
}

/// Resolves one `write_paths` entry: `~/` is the home folder, `$NAME` and `${NAME}` an
/// environment variable, `${NAME:-fallback}` the fallback when it is unset or empty (the
/// fallback may itself start with `~/`). `Ok(None)` when something it needs is unset:
/// the entry grants nothing. Refuses relative results and the home folder or any folder
/// above it.
pub fn resolve_write_path(
    entry: &str,
    home: Option<&Path>,
    var: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Option<PathBuf>, WritePathError> {
    let Some(text) = expand(entry, home, var)? else {
        return Ok(None);
    };
    let path = PathBuf::from(text);
    if !path.is_absolute() {
        return Err(WritePathError::Relative {
            entry: entry.to_owned(),
            path,
        });
    }
    let clean: PathBuf = path.components().collect();
    if let Some(home) = home
        && home.starts_with(&clean)
    {
        return Err(WritePathError::Home {
            entry: entry.to_owned(),
            path: clean,
        });
    }
    if clean == Path::new("/") {
        return Err(WritePathError::Home {
            entry: entry.to_owned(),
            path: clean,
        });
    }
    Ok(Some(clean))
}

fn expand(
    entry: &str,
    home: Option<&Path>,
    var: &dyn Fn(&str) -> Option<OsString>,
) -> Result<Option<String>, WritePathError> {
    let tilde = |text: &str| -> Option<String> {
        match text.strip_prefix('~') {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => {
                Some(format!("{}{rest}", home?.display()))
            }
            _ => Some(text.to_owned()),
        }
    };
    let lookup = |name: &str| {
        var(name)
            .filter(|v| !v.is_empty())
            .map(|v| v.to_string_lossy().into_owned())
    };
    let Some(text) = tilde(entry) else {
        return Ok(None);
    };
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        rest = &rest[at + 1..];
        if let Some(inner) = rest.strip_prefix('{') {
            let close = inner.find('}').ok_or_else(|| WritePathError::Syntax {
                entry: entry.to_owned(),
            })?;
            let body = &inner[..close];
            rest = &inner[close + 1..];
            let (name, fallback) = match body.split_once(":-") {
                Some((name, fallback)) => (name, Some(fallback)),
                None => (body, None),
            };
            match (lookup(name), fallback) {
                (Some(value), _) => out.push_str(&value),
                (None, Some(fallback)) => match tilde(fallback) {
                    Some(fallback) => out.push_str(&fallback),
                    None => return Ok(None),
                },
                (None, None) => return Ok(None),
            }
        } else {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            match lookup(&rest[..end]) {
                Some(value) => out.push_str(&value),
                None => return Ok(None),
            }
            rest = &rest[end..];
        }
    }
    out.push_str(rest);
    Ok(Some(out))
}

/// The supervisor's command line around `program` and `args`.
pub(crate) fn supervisor_command(
    containment: &Containment,
    program: &Path,
    args: &[String],
) -> Command {
    let mut command = Command::new(&containment.supervisor);
    let grace = containment.kill_grace.min(MAX_KILL_GRACE);
    command
        .arg(SUPERVISOR_ARG)
        .arg("--parent")
        .arg(std::process::id().to_string())
        .arg("--grace-ms")
        .arg(grace.as_millis().to_string());
    if let Some(confine) = &containment.confine {
        command.arg("--landlock");
        for path in confine.all(None) {
            command.arg("--write").arg(path);
        }
        for path in &confine.create {
            command.arg("--create").arg(path);
        }
    }
    if let Some(tmp) = &containment.tmp_dir {
        command.arg("--tmp").arg(tmp);
    }
    command.arg("--").arg(program).args(args);
    command
}

/// A command that runs `program` with `args` under `containment`'s supervisor, for a
/// caller that runs and watches the process itself (the planner's research commands):
/// the caller sets its directory, environment and stdio, which the program inherits
/// through the supervisor. Signalling the command's process group (or the supervisor)
/// ends everything it started. `program` is found on `path` now, so a missing one is an
/// error here. [`Containment::env`] is not applied: the caller sets the environment.
pub fn wrap(
    containment: &Containment,
    program: &std::ffi::OsStr,
    args: &[&std::ffi::OsStr],
    path: Option<&std::ffi::OsStr>,
) -> std::io::Result<Command> {
    let found = find_program(&program.to_string_lossy(), path).map_err(|kind| {
        std::io::Error::new(
            kind,
            format!("cannot start `{}`", program.to_string_lossy()),
        )
    })?;
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    Ok(supervisor_command(containment, &found, &args))
}

/// Finds `program` the way `execvp` would (a name with a `/` as it is, else the first
/// executable file of that name on `path`), so that "not found" is still an error of
/// the spawn and not an exit code of the supervisor.
pub(crate) fn find_program(
    program: &str,
    path: Option<&std::ffi::OsStr>,
) -> Result<PathBuf, std::io::ErrorKind> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |candidate: &Path| {
        std::fs::metadata(candidate)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    };
    if program.contains('/') {
        let candidate = Path::new(program);
        return if !candidate.exists() {
            Err(std::io::ErrorKind::NotFound)
        } else if executable(candidate) {
            Ok(candidate.to_path_buf())
        } else {
            Err(std::io::ErrorKind::PermissionDenied)
        };
    }
    let mut denied = false;
    for dir in std::env::split_paths(path.unwrap_or_default()) {
        let candidate = if dir.as_os_str().is_empty() {
            PathBuf::from(program)
        } else {
            dir.join(program)
        };
        if executable(&candidate) {
            return Ok(candidate);
        }
        denied |= candidate.is_file();
    }
    Err(if denied {
        std::io::ErrorKind::PermissionDenied
    } else {
        std::io::ErrorKind::NotFound
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<OsString> + 'a {
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| OsString::from(v))
        }
    }

    #[test]
    fn write_paths_expand_variables_fallbacks_and_the_home_folder() {
        let home = Path::new("/home/ann");
        let vars = env(&[("CODEX_HOME", "/opt/codex"), ("EMPTY", "")]);
        let resolve = |entry| resolve_write_path(entry, Some(home), &vars).unwrap();
        assert_eq!(
            resolve("${CODEX_HOME:-~/.codex}"),
            Some("/opt/codex".into())
        );
        assert_eq!(
            resolve("${CLAUDE_CONFIG_DIR:-~/.claude}"),
            Some("/home/ann/.claude".into())
        );
        assert_eq!(resolve("${EMPTY:-~/.x}/y"), Some("/home/ann/.x/y".into()));
        assert_eq!(
            resolve("$CODEX_HOME/sessions"),
            Some("/opt/codex/sessions".into())
        );
        assert_eq!(resolve("$UNSET/x"), None);
        assert_eq!(
            resolve("~/.cache/opencode"),
            Some("/home/ann/.cache/opencode".into())
        );
        assert_eq!(resolve_write_path("~/.x", None, &vars).unwrap(), None);
    }

    #[test]
    fn write_paths_never_grant_the_home_folder_or_above() {
        let home = Path::new("/home/ann");
        let vars = env(&[("H", "/home/ann/"), ("ROOT", "/")]);
        for entry in ["~", "~/", "$H", "/home", "$ROOT", "/"] {
            let err = resolve_write_path(entry, Some(home), &vars).unwrap_err();
            assert!(matches!(err, WritePathError::Home { .. }), "{entry}: {err}");
        }
        assert!(matches!(
            resolve_write_path("rel/dir", Some(home), &vars),
            Err(WritePathError::Relative { .. })
        ));
        assert!(matches!(
            resolve_write_path("${OOPS", Some(home), &vars),
            Err(WritePathError::Syntax { .. })
        ));
    }

    #[test]
    fn confine_setting_round_trips() {
        for confine in [Confine::Auto, Confine::Landlock, Confine::Off] {
            assert_eq!(Confine::parse(confine.as_str()), Some(confine));
        }
        assert_eq!(Confine::parse("yes"), None);
    }
}
