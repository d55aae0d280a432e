//! Which containment each process of a run gets: every attempt, check and ops task runs
//! under weft-agents' per-attempt supervisor (see `weft_agents::contain`), confined by
//! Landlock when the `confine` setting and the kernel allow.
//!
//! What a confined process may write: the folder it runs in (a task's worktree, the
//! integration checkout for ops tasks, the workspace in a shared run) and, for a
//! worktree, its own admin folder under `.git/worktrees/` (for a multi-repo group's task
//! folder, each of its worktrees'); its private temp folder
//! (`TMPDIR`, `<state>/tmp/<attempt>`); the device files; and, for an agent, its
//! manifest's `write_paths` plus the `write_paths` setting. Nothing else: not the user's
//! checkout, other worktrees, the integration checkout (from a task), nor `.weft/`.
//!
//! What a contained process gets of weft's environment (`weft_agents::contain::env`):
//! the base (`PATH`, `HOME`, `LANG`, `WEFT_*`, …), its runner manifest's `env_pass`, and
//! the `env_pass` setting; checks, ops tasks and the `exec` runner get the `exec`
//! manifest's (the common build toolchains' variables), an agent-CLI planner its CLI's.
//! Then the variables weft sets for it, unfiltered.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use weft_agents::contain::env::Passed;
use weft_agents::contain::{WritePaths, resolve_write_path, worktree_admin_dir};
use weft_agents::manifest::Manifest;

pub use weft_agents::contain::env;
pub use weft_agents::contain::{
    Confine, Containment, SUPERVISOR_ARG, landlock_available, supervisor_main,
};

use crate::EngineConfig;
use crate::error::EngineError;

/// The environment write paths are resolved from (read once by the front end).
#[derive(Clone, Default)]
pub struct EnvSnapshot(pub BTreeMap<String, OsString>);

impl fmt::Debug for EnvSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Values may be secrets: only the count.
        write!(f, "EnvSnapshot({} variables)", self.0.len())
    }
}

/// The `confine` and `write_paths` settings, and what the front end found out.
#[derive(Debug, Clone, Default)]
pub struct ContainConfig {
    /// The supervisor program (the weft binary). `None`: processes run uncontained, as
    /// their own group leaders (only for embedding the engine without the binary).
    pub supervisor: Option<PathBuf>,
    pub confine: Confine,
    /// Whether the kernel enforces Landlock (probed once by the front end).
    pub landlock_available: bool,
    /// Extra writable paths for every runner (entries as in a manifest's `write_paths`).
    pub write_paths: Vec<String>,
    /// The `env_pass` setting: patterns of the variables every process gets beyond the
    /// base and its runner's (`["*"]`: all of them).
    pub env_pass: Vec<String>,
    pub env: EnvSnapshot,
}

impl ContainConfig {
    /// What a process whose runner passes `runner_pass` gets of the environment: the
    /// base, `runner_pass` and the `env_pass` setting. `None` (a check or an ops task):
    /// the `exec` runner's patterns.
    pub fn passed_env(&self, runner_pass: Option<&[String]>) -> Passed {
        let runner_pass = runner_pass.unwrap_or_else(|| exec_env_pass());
        let patterns: Vec<&str> = runner_pass
            .iter()
            .chain(&self.env_pass)
            .map(String::as_str)
            .collect();
        env::filter(
            self.env.0.iter().map(|(k, v)| (k.as_str(), v.as_os_str())),
            &patterns,
        )
    }
}

/// The built-in `exec` runner's `env_pass`, parsed once (every launch asks, for its
/// checks).
fn exec_env_pass() -> &'static [String] {
    static PASS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    PASS.get_or_init(|| {
        Manifest::builtin("exec")
            .map(|m| m.env_pass().to_vec())
            .unwrap_or_default()
    })
}

/// Whether this run's processes are confined; refuses `confine = "landlock"` on a
/// kernel without Landlock.
pub fn confined(config: &EngineConfig) -> Result<bool, EngineError> {
    let contain = &config.contain;
    match contain.confine {
        Confine::Off => Ok(false),
        Confine::Auto => Ok(contain.landlock_available),
        Confine::Landlock if contain.landlock_available => Ok(true),
        Confine::Landlock => Err(EngineError::Refused {
            detail: "confine = \"landlock\", but this kernel does not enforce Landlock, so weft cannot confine the agents' writes".into(),
            hint: "run on Linux 5.13 or later with Landlock enabled (`lsm=…,landlock` on the kernel command line), or set `confine = \"auto\"` (unconfined with a notice) or `confine = \"off\"`".into(),
        }),
    }
}

/// The folders a confined process running in `cwd` may write besides its temp folder
/// and the device files; the agent's state folders (to create when missing) beside.
pub fn write_paths(
    config: &EngineConfig,
    cwd: &Path,
    manifest: Option<&Manifest>,
) -> Result<WritePaths, String> {
    let mut paths = folder_paths(cwd, &config.state_dir)?;
    paths.extend(worktree_admin_dir(cwd));
    paths.extend(group_admin_dirs(cwd));
    let Some(manifest) = manifest else {
        return Ok(WritePaths {
            paths,
            create: Vec::new(),
        });
    };
    let runner = runner_write_paths(config, manifest)?;
    paths.extend(runner.paths);
    Ok(WritePaths {
        paths,
        create: runner.create,
    })
}

/// What a runner may write wherever it runs: its manifest's `write_paths` (its state
/// folders, created when missing) and the `write_paths` setting.
fn runner_write_paths(config: &EngineConfig, manifest: &Manifest) -> Result<WritePaths, String> {
    let mut paths = Vec::new();
    let mut create = Vec::new();
    let env = &config.contain.env.0;
    let var = |name: &str| env.get(name).cloned();
    let home = config.supervision.locator.home.as_deref();
    let resolve = |entry: &str, whose: &str| {
        resolve_write_path(entry, home, &var).map_err(|e| format!("{whose}: {e}"))
    };
    for entry in manifest.write_paths() {
        if let Some(path) = resolve(entry, &format!("runner {}", manifest.name()))? {
            create.push(path.clone());
            paths.push(path);
        }
    }
    for entry in &config.contain.write_paths {
        if let Some(path) = resolve(entry, "the write_paths setting")? {
            paths.push(path);
        }
    }
    Ok(WritePaths { paths, create })
}

/// When `cwd` is a multi-repo group's task folder (or its integration checkout), which
/// is no worktree itself but holds one per repository: each one's admin folder (its
/// `HEAD`, `index`, and the attempt's private object folder). Read when the attempt is
/// launched, before any of its processes ran, so the `.git` files are weft's own.
fn group_admin_dirs(cwd: &Path) -> Vec<PathBuf> {
    if cwd.join(".git").symlink_metadata().is_ok() {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(cwd) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
        .filter_map(|entry| worktree_admin_dir(&entry.path()))
        .collect();
    dirs.sort();
    dirs
}

/// What a process running in `cwd` may write of it: `cwd` itself, or, when `cwd` holds
/// the state folder (a shared run, in the workspace), each entry of `cwd` but the state
/// folder. Landlock cannot take a folder back from beneath a granted one, so the
/// workspace itself is not granted: its entries are, one by one (its files for writing,
/// its folders wholly), and creating, renaming or deleting entries directly in the
/// workspace's top folder is refused. Symbolic links there are skipped: a rule would
/// grant what they point to.
fn folder_paths(cwd: &Path, state_dir: &Path) -> Result<Vec<PathBuf>, String> {
    let Ok(inside) = state_dir.strip_prefix(cwd) else {
        return Ok(vec![cwd.to_path_buf()]);
    };
    let Some(first) = inside.components().next() else {
        // The state folder is the folder itself: nothing of it may be written.
        return Ok(Vec::new());
    };
    let entries = std::fs::read_dir(cwd).map_err(|e| format!("{}: {e}", cwd.display()))?;
    let mut paths = Vec::new();
    for entry in entries.flatten() {
        if entry.file_name() == first.as_os_str() {
            continue;
        }
        let path = entry.path();
        match entry.file_type() {
            Ok(kind) if kind.is_symlink() => {}
            Ok(_) => paths.push(path),
            Err(_) => {}
        }
    }
    paths.sort();
    Ok(paths)
}

/// The per-attempt temp folder of `attempt` (created by its supervisor).
fn tmp_dir(config: &EngineConfig, attempt: &str) -> PathBuf {
    config.state_dir.join("tmp").join(attempt)
}

/// The containment of a process of attempt `attempt` in `cwd`: an agent's (`manifest`
/// given: its state folders are writable) or a check's (`None`: only its folder).
pub(crate) fn containment(
    config: &EngineConfig,
    attempt: &str,
    cwd: &Path,
    manifest: Option<&Manifest>,
) -> Result<Option<Containment>, String> {
    let Some(supervisor) = &config.contain.supervisor else {
        return Ok(None);
    };
    let tmp = tmp_dir(config, attempt);
    let confine = match confined(config) {
        Ok(true) => Some(write_paths(config, cwd, manifest)?),
        Ok(false) => None,
        Err(e) => return Err(e.to_string()),
    };
    let env = config.contain.passed_env(manifest.map(Manifest::env_pass));
    Ok(Some(Containment {
        supervisor: supervisor.clone(),
        kill_grace: config.limits.kill_grace,
        confine,
        tmp_dir: Some(tmp),
        env: Some(env),
    }))
}

/// The containment of a worktree's `setup` command, made once per run from the settings
/// (the executor outlives the run loop's borrow of them): an `exec` task's, exactly —
/// the `exec` runner's environment (`env_pass`), its `write_paths` and the
/// `write_paths` setting — with the folders it prepares writable, given when it starts.
#[derive(Debug, Clone, Default)]
pub(crate) struct SetupContainment {
    /// `None`: run uncontained, as its own group leader (an embedded engine).
    supervisor: Option<PathBuf>,
    kill_grace: std::time::Duration,
    /// `Some`: confined, these writable besides its folders (`Err`: one did not resolve,
    /// or `confine = "landlock"` cannot be honoured: the setup is refused, saying so).
    confine: Option<Result<WritePaths, String>>,
    env: Option<Passed>,
    tmp_root: PathBuf,
    /// Values masked in its log and its error.
    pub secrets: Vec<String>,
}

impl SetupContainment {
    pub(crate) fn of(config: &EngineConfig) -> SetupContainment {
        let builtin = Manifest::builtin("exec");
        let exec = config
            .supervision
            .registry
            .get("exec")
            .map(|loaded| &loaded.manifest)
            .or(builtin.as_ref());
        let confine = match (confined(config), exec) {
            (Ok(false), _) => None,
            (Ok(true), Some(exec)) => Some(runner_write_paths(config, exec)),
            (Ok(true), None) => Some(Ok(WritePaths::default())),
            (Err(e), _) => Some(Err(e.to_string())),
        };
        SetupContainment {
            supervisor: config.contain.supervisor.clone(),
            kill_grace: config.limits.kill_grace,
            confine,
            env: Some(config.contain.passed_env(exec.map(Manifest::env_pass))),
            tmp_root: config.state_dir.join("tmp"),
            secrets: config.supervision.secrets.clone(),
        }
    }

    /// Whether the setup runs confined.
    pub(crate) fn confined(&self) -> bool {
        self.supervisor.is_some() && self.confine.is_some()
    }

    pub(crate) fn kill_grace(&self) -> std::time::Duration {
        self.kill_grace
    }

    /// The containment of setup `name` (a temp folder of its own), writing `folders`.
    pub(crate) fn containment(
        &self,
        name: &str,
        folders: Vec<PathBuf>,
    ) -> Result<Option<Containment>, String> {
        let Some(supervisor) = &self.supervisor else {
            return Ok(None);
        };
        let confine = match &self.confine {
            None => None,
            Some(Err(e)) => return Err(e.clone()),
            Some(Ok(runner)) => {
                let mut paths = folders;
                paths.extend(runner.paths.iter().cloned());
                Some(WritePaths {
                    paths,
                    create: runner.create.clone(),
                })
            }
        };
        Ok(Some(Containment {
            supervisor: supervisor.clone(),
            kill_grace: self.kill_grace,
            confine,
            tmp_dir: Some(self.tmp_root.join(format!("setup-{name}"))),
            env: self.env.clone(),
        }))
    }
}

/// What `weft prompt N` and `weft runners` say about confinement.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ConfinementPreview {
    /// `landlock`, `off` (by the setting) or `unavailable` (auto on a kernel without it).
    pub mode: String,
    /// The paths the process may write when confined (empty otherwise).
    pub write_paths: Vec<String>,
}

pub(crate) fn preview(
    config: &EngineConfig,
    cwd: &Path,
    manifest: Option<&Manifest>,
) -> ConfinementPreview {
    let mode = match (config.contain.confine, config.contain.landlock_available) {
        (Confine::Off, _) => "off",
        (_, true) => "landlock",
        (_, false) => "unavailable",
    };
    let tmp = config.state_dir.join("tmp").join("<attempt>");
    let write_paths = if mode == "landlock" {
        match write_paths(config, cwd, manifest) {
            Ok(paths) => {
                let mut shown: Vec<String> = paths
                    .all(Some(&tmp))
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect();
                // The preview runs nothing, so it has no worktree to show: name it.
                if config.isolation.enabled && !shown.is_empty() {
                    shown[0] =
                        "<the task's own worktree and its admin folder in .git/worktrees/>".into();
                }
                shown
            }
            Err(e) => vec![format!("<error: {e}>")],
        }
    } else {
        Vec::new()
    };
    ConfinementPreview {
        mode: mode.into(),
        write_paths,
    }
}

/// The containment of an agent-CLI planner's turns: contained like an attempt and, when
/// confined, writing only the CLI's own state folders (its manifest's `write_paths`) and
/// a private temp folder, never the workspace. `state_dir` is `<workspace>/.weft`;
/// `home` the user's home folder.
pub fn planner_containment(
    contain: &ContainConfig,
    state_dir: &Path,
    home: Option<&Path>,
    runner: &str,
) -> Result<Option<Containment>, EngineError> {
    let Some(supervisor) = &contain.supervisor else {
        return Ok(None);
    };
    let confine = match (contain.confine, contain.landlock_available) {
        (Confine::Off, _) | (Confine::Auto, false) => false,
        (_, true) => true,
        (Confine::Landlock, false) => {
            return Err(EngineError::Refused {
                detail: "confine = \"landlock\", but this kernel does not enforce Landlock, so weft cannot keep the planner read-only".into(),
                hint: "set `confine = \"auto\"` or `confine = \"off\"`, or plan from a plan file (`weft plan --file`)".into(),
            });
        }
    };
    let tmp = state_dir
        .join("tmp")
        .join(format!("planner-{}", std::process::id()));
    let confine = if confine {
        let manifest = Manifest::builtin(runner);
        let var = |name: &str| contain.env.0.get(name).cloned();
        let mut paths = Vec::new();
        for entry in manifest.iter().flat_map(|m| m.write_paths()) {
            let resolved =
                resolve_write_path(entry, home, &var).map_err(|e| EngineError::Refused {
                    detail: format!("the {runner} planner: {e}"),
                    hint: "fix the variable it names, or plan with another planner".into(),
                })?;
            paths.extend(resolved);
        }
        Some(WritePaths {
            create: paths.clone(),
            paths,
        })
    } else {
        None
    };
    let env = contain.passed_env(Some(
        Manifest::builtin(runner)
            .map(|m| m.env_pass().to_vec())
            .unwrap_or_default()
            .as_slice(),
    ));
    Ok(Some(Containment {
        supervisor: supervisor.clone(),
        kill_grace: weft_agents::contain::DEFAULT_KILL_GRACE,
        confine,
        tmp_dir: Some(tmp),
        env: Some(env),
    }))
}

/// The containment of the openai planner's research commands (`run_command` and the git
/// tools): contained like an attempt and, when confined, writing nothing but a private
/// temp folder and the devices: no write access to the workspace at all, whatever the
/// command policy let through. Their environment is the research tools' own (scrubbed).
pub fn research_containment(
    contain: &ContainConfig,
    state_dir: &Path,
) -> Result<Option<Containment>, EngineError> {
    let Some(supervisor) = &contain.supervisor else {
        return Ok(None);
    };
    let confine = match (contain.confine, contain.landlock_available) {
        (Confine::Off, _) | (Confine::Auto, false) => None,
        (_, true) => Some(WritePaths::default()),
        (Confine::Landlock, false) => {
            return Err(EngineError::Refused {
                detail: "confine = \"landlock\", but this kernel does not enforce Landlock, so weft cannot keep the planner's commands read-only".into(),
                hint: "set `confine = \"auto\"` or `confine = \"off\"`, or plan from a plan file (`weft plan --file`)".into(),
            });
        }
    };
    Ok(Some(Containment {
        supervisor: supervisor.clone(),
        // The research runner kills the command's group 300 ms after asking it to stop;
        // the supervisor ends what the command started within that.
        kill_grace: std::time::Duration::from_millis(100),
        confine,
        tmp_dir: Some(
            state_dir
                .join("tmp")
                .join(format!("research-{}", std::process::id())),
        ),
        env: None,
    }))
}
