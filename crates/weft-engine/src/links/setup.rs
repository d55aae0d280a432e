//! A worktree's `setup` command: run once per cut in the task folder, instead of
//! linking, contained like every attempt process; what it created recorded like links.
//!
//! Contract:
//! - **Contained.** It runs under weft's per-attempt supervisor (`weft __contain`) with
//!   the `exec` runner's containment ([`SetupContainment`]): the allow-listed
//!   environment (the base, the `exec` manifest's `env_pass` and the `env_pass`
//!   setting; a secret of weft's environment no pattern names never reaches it), the
//!   cut's git variables (its private object folder), and, when confined, Landlock write
//!   access to the task folder, its worktrees' admin folders, a private `TMPDIR`, the
//!   devices and the `write_paths` setting, nothing else. Whatever it starts (a
//!   `setsid` daemon included) is ended when it exits. Bounded: [`SETUP_TIMEOUT`], then
//!   it is stopped; its output goes to `<folder>.setup.log` (capped), and an error quotes
//!   its last [`SETUP_TAIL_BYTES`].
//! - **Recorded.** The untracked files of each worktree (ignored ones never count: git
//!   never commits them) are listed before and after it; what is new was created by the
//!   setup, and is recorded on the part like a link (never committed as the task's
//!   work), with a stamp (size, modification time, link target) of each. At most
//!   [`MAX_CREATED`] such files (more fails the cut: ignore them in `.gitignore`).
//! - **Edited later.** A file the setup created stays the setup's: when the agent changes
//!   or removes one it is still not committed, and the engine stores a notice naming it
//!   ([`setup_files_changed`]) when the attempt passes. Files the setup *changed* that the
//!   repository tracks are not recorded: they are committed with the task's work.
//! - Before any git runs in a worktree the setup had, the worktree guard
//!   (`Isolation::inspect`) checks it, as after an agent.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use weft_agents::StreamKind;
use weft_agents::manifest::LaunchSpec;
use weft_agents::supervise::{Attempt as Supervised, SuperviseOptions};

use crate::contain::SetupContainment;
use crate::error::EngineError;
use crate::isolation::{Cut, Isolation, git_error};

/// How much of a failed setup command's output its error quotes.
pub const SETUP_TAIL_BYTES: usize = 4096;

/// The longest a worktree's `setup` command may run.
pub const SETUP_TIMEOUT: Duration = Duration::from_secs(20 * 60);

/// At most this many untracked files a setup may create (in all of a cut's worktrees).
pub const MAX_CREATED: usize = 10_000;

/// The most a setup's log keeps.
const LOG_CAP_BYTES: u64 = 16 * 1024 * 1024;

/// A file the setup created, relative to its worktree, as it was when the setup ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Created {
    pub path: PathBuf,
    stamp: Option<Stamp>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    len: u64,
    modified: Option<SystemTime>,
    link: Option<PathBuf>,
}

fn stamp(path: &Path) -> Option<Stamp> {
    let meta = path.symlink_metadata().ok()?;
    Some(Stamp {
        len: meta.len(),
        modified: meta.modified().ok(),
        link: fs_err::read_link(path).ok(),
    })
}

/// Run `command` for `cut` (see the module documentation).
pub(crate) fn run(
    iso: &Isolation,
    cut: &mut Cut,
    command: &str,
    contain: &SetupContainment,
) -> Result<(), EngineError> {
    let mut before = Vec::new();
    for part in &cut.parts {
        // A worktree weft has just made: nothing but weft has touched it yet.
        let untracked = iso.slots[part.slot]
            .repo
            .open_worktree(&part.path)
            .and_then(|wt| wt.untracked_paths())
            .map_err(git_error)?;
        before.push(untracked.into_iter().collect::<BTreeSet<_>>());
    }
    start_and_wait(iso, cut, command, contain)?;
    let inspection = iso.inspect(cut)?;
    if !inspection.problems.is_empty() {
        return Err(EngineError::Isolation {
            detail: format!(
                "after the setup command `{command}`, weft will not run git in {}: {}",
                cut.path.display(),
                inspection.problems.join("; ")
            ),
            hint: "make `setup` in weft.toml leave the worktree's `.git` and its admin folder as git made them".into(),
        });
    }
    let mut total = 0usize;
    for ((part, intact), before) in cut.parts.iter_mut().zip(inspection.intact).zip(before) {
        let Some((worktree, _)) = intact else {
            continue;
        };
        let after = worktree.untracked_paths().map_err(git_error)?;
        for path in after.into_iter().filter(|p| !before.contains(p)) {
            total += 1;
            if total > MAX_CREATED {
                return Err(EngineError::Isolation {
                    detail: format!(
                        "the setup command `{command}` created more than {MAX_CREATED} files git does not ignore in {}",
                        cut.path.display()
                    ),
                    hint:
                        "ignore what it builds (.gitignore), so that weft need not record each file"
                            .into(),
                });
            }
            let path = PathBuf::from(path);
            let stamp = stamp(&part.path.join(&path));
            part.links.push(path.clone());
            part.setup_files.push(Created { path, stamp });
        }
    }
    Ok(())
}

/// Start the setup under its supervisor in the task folder, and wait for it.
fn start_and_wait(
    iso: &Isolation,
    cut: &Cut,
    command: &str,
    contain: &SetupContainment,
) -> Result<(), EngineError> {
    let folder = &cut.path;
    let log_path = folder.with_extension("setup.log");
    let name = folder
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut writable = vec![folder.clone()];
    writable.extend(cut.parts.iter().filter_map(|p| p.admin.clone()));
    let refused = |why: String| EngineError::Isolation {
        detail: format!(
            "the setup command `{command}` cannot be confined in {}: {why}",
            folder.display()
        ),
        hint: "fix the `write_paths` entry it names, or set `confine = \"auto\"`".into(),
    };
    let containment = contain
        .containment(&format!("{}-{name}", iso.run_id), writable)
        .map_err(refused)?;
    let spec = LaunchSpec {
        program: "sh".into(),
        args: vec!["-c".into(), command.to_owned()],
        env: cut.git_env(iso),
        stdin: None,
        prompt_file: None,
        cwd: folder.clone(),
        needs_tty: false,
        stream: StreamKind::Plain,
        receives_marker: false,
        relay: None,
    };
    let options = SuperviseOptions {
        timeout: SETUP_TIMEOUT,
        idle_after: SETUP_TIMEOUT,
        idle_timeout: Duration::ZERO,
        watch_dir: None,
        kill_grace: contain.kill_grace(),
        marker_grace: contain.kill_grace(),
        log_path: log_path.clone(),
        log_cap_bytes: LOG_CAP_BYTES,
        tail_bytes: SETUP_TAIL_BYTES,
        marker_token: None,
        secrets: contain.secrets.clone(),
        relay: None,
        contain: containment,
    };
    // Nobody watches a setup's live events (its output is in its log).
    let (tx, rx) = std::sync::mpsc::channel();
    drop(rx);
    let started = Supervised::start(&spec, options, tx).map_err(|e| EngineError::Isolation {
        detail: format!("the setup command `{command}` could not start: {e}"),
        hint:
            "check that `sh` is on PATH, or remove `setup` from weft.toml to link artifacts instead"
                .into(),
    })?;
    let outcome = started.wait();
    if outcome.timed_out {
        return Err(EngineError::Isolation {
            detail: format!(
                "the setup command `{command}` did not finish in {} within {} minutes; it was stopped, with everything it started",
                folder.display(),
                SETUP_TIMEOUT.as_secs() / 60
            ),
            hint: format!(
                "its output so far is in {}; make `setup` in weft.toml finish by itself",
                log_path.display()
            ),
        });
    }
    if outcome.exit_code == Some(0) {
        let _ = fs_err::remove_file(&log_path);
        return Ok(());
    }
    let status = match (outcome.exit_code, outcome.signal) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "no exit status".to_owned(),
    };
    let tail = weft_core::prompt::tail_chars(outcome.tail.trim_end(), 2000);
    // The verdict keeps the detail only: what confinement allows is said there.
    let confined = if contain.confined() {
        "; it ran confined like every task process: it may write only the task folder, its TMPDIR and the `write_paths` setting's folders (add a folder it must write there, or set `confine = \"off\"`), and it gets only the allow-listed environment (`env_pass`)"
    } else {
        ""
    };
    Err(EngineError::Isolation {
        detail: format!(
            "the setup command `{command}` failed in {} ({status}){confined}: {tail}",
            folder.display()
        ),
        hint: format!(
            "its whole output is in {}; fix `setup` in weft.toml, or remove it to link artifacts instead",
            log_path.display()
        ),
    })
}

/// The files the setup created that are no longer as it left them, named (at most five,
/// then how many more): for the notice that they were not committed.
pub(crate) fn setup_files_changed(cut: &Cut, group: bool) -> Option<String> {
    let mut changed = Vec::new();
    for part in &cut.parts {
        for created in &part.setup_files {
            if stamp(&part.path.join(&created.path)) != created.stamp {
                let shown = if group {
                    let slot = part
                        .path
                        .file_name()
                        .map(Path::new)
                        .unwrap_or(Path::new(""));
                    slot.join(&created.path)
                } else {
                    created.path.clone()
                };
                changed.push(shown.display().to_string());
            }
        }
    }
    if changed.is_empty() {
        return None;
    }
    let more = changed.len().saturating_sub(5);
    changed.truncate(5);
    Some(format!(
        "{}{} created by the setup command changed during the attempt; the setup's files are never committed as the task's work",
        changed.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    ))
}
