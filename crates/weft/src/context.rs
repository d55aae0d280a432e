//! What most commands need: the workspace, the resolved settings and the store.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use weft_core::Timestamp;
use weft_engine::EngineConfig;
use weft_engine::runners::{ManifestError, Registry};
use weft_engine::transcripts::Locator;
use weft_store::{OpenOptions, Store};

use crate::cli::Globals;
use crate::error::{CliError, CliResult};
use crate::settings::{Layers, Settings};
use crate::workspace::Workspace;

#[derive(Debug)]
pub struct Ctx {
    pub workspace: Workspace,
    pub settings: Settings,
    pub plan_ref: Option<String>,
    user_config_dir: Option<PathBuf>,
}

/// `~/.config/weft` (or `$XDG_CONFIG_HOME/weft`), when a home is known.
pub fn user_config_dir() -> Option<PathBuf> {
    let base = match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").filter(|v| !v.is_empty())?).join(".config"),
    };
    Some(base.join("weft"))
}

/// The variables settings may come from.
fn settings_env() -> BTreeMap<String, String> {
    crate::settings::KEYS
        .iter()
        .filter_map(|k| std::env::var(k.env()).ok().map(|v| (k.env().to_owned(), v)))
        .collect()
}

pub fn now() -> Timestamp {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl Ctx {
    /// Find the workspace and resolve settings.
    pub fn load(globals: &Globals) -> CliResult<Ctx> {
        let workspace = match &globals.workspace {
            Some(dir) => Workspace::at(dir)?,
            None => Workspace::discover(
                &std::env::current_dir()
                    .map_err(|e| CliError::new(format!("cannot read the current folder: {e}")))?,
            )?,
        };
        Ctx::with_workspace(workspace, globals)
    }

    pub fn with_workspace(workspace: Workspace, globals: &Globals) -> CliResult<Ctx> {
        let user_config_dir = user_config_dir();
        let settings = Settings::resolve(&Layers {
            flags: &globals.set,
            env: settings_env(),
            project_file: Some(workspace.settings_file()),
            user_file: user_config_dir.as_ref().map(|d| d.join("config.toml")),
        })?;
        Ok(Ctx {
            workspace,
            settings,
            plan_ref: globals.plan.clone(),
            user_config_dir,
        })
    }

    fn open_options(&self) -> OpenOptions {
        OpenOptions {
            busy_timeout: self.settings.limits.busy_timeout,
        }
    }

    /// The store if weft has written one here; reading never creates `.weft/`.
    pub fn store_if_any(&self) -> CliResult<Option<Store>> {
        let store = Store::open_existing(&self.workspace.state_dir(), self.open_options())?;
        Ok(store.map(masking_secrets))
    }

    /// The store, or an error saying there is no plan yet.
    pub fn store_with_plans(&self) -> CliResult<Store> {
        self.store_if_any()?.ok_or_else(|| self.no_plan_yet())
    }

    /// The store, created on first write.
    pub fn store_for_write(&self) -> CliResult<Store> {
        let store = Store::open_or_create(&self.workspace.state_dir(), self.open_options())?;
        Ok(masking_secrets(store))
    }

    fn no_plan_yet(&self) -> CliError {
        CliError::new(format!(
            "no plan in the workspace {} yet",
            self.workspace.root.display()
        ))
        .hint("create one with `weft plan --file plan.toml` (`weft plan schema` shows the format)")
    }

    /// The plan named by `--plan`, else the current one.
    pub fn plan_id(&self, store: &Store) -> CliResult<String> {
        if let Some(reference) = &self.plan_ref {
            return Ok(store.resolve_plan(reference)?);
        }
        if let Some(id) = store.current_plan_id()? {
            return Ok(id);
        }
        let plans = store.plans()?;
        if plans.is_empty() {
            return Err(self.no_plan_yet());
        }
        Err(CliError::new("no current plan in this workspace")
            .hint("pick one with `weft sessions load <id>` (`weft sessions list` shows them)"))
    }

    /// Every runner manifest: built in, user (`~/.config/weft/runners`) and workspace
    /// (`.weft/runners`); broken manifest files are returned beside it.
    pub fn registry(&self) -> (Registry, Vec<ManifestError>) {
        let workspace_dir = self.workspace.state_dir().join("runners");
        let user_dir = self.user_config_dir.as_ref().map(|d| d.join("runners"));
        weft_engine::runners::load(&workspace_dir, user_dir.as_deref())
    }

    /// The names of every runner with a readable manifest.
    pub fn runner_names(&self) -> std::collections::BTreeSet<String> {
        self.registry().0.names().map(str::to_owned).collect()
    }

    /// The engine's settings for running `plan_id`: the one place the bin builds an
    /// [`EngineConfig`], from the resolved settings, this run's options and the process
    /// environment.
    pub fn engine_config(&self, plan_id: &str, run: RunOptions) -> CliResult<EngineConfig> {
        let (registry, broken) = self.registry();
        for error in &broken {
            warnings_text(&format!("runner manifest skipped: {error}"));
        }
        let secrets = env_secrets();
        let settings = &self.settings;
        Ok(EngineConfig {
            workspace: self.workspace.root.clone(),
            state_dir: self.workspace.state_dir(),
            plan_id: plan_id.to_owned(),
            isolation: weft_engine::IsolationConfig {
                enabled: run.isolated,
                repos: settings.isolation.repos.clone(),
                runnable: settings.isolation.runnable.clone(),
                stash: run.stash,
                keep_worktrees: settings.isolation.keep_worktrees,
                allow_outside_symlinks: settings.isolation.allow_outside_symlinks,
            },
            limits: weft_engine::Limits {
                parallel: run.parallel.unwrap_or(settings.run.parallel) as usize,
                task_timeout: settings.limits.task_timeout,
                idle_after: settings.supervision.idle_after,
                idle_timeout: settings.supervision.idle_timeout,
                marker_grace: settings.supervision.marker_grace,
                kill_grace: weft_engine::defaults::KILL_GRACE,
                log_cap_bytes: weft_engine::defaults::LOG_CAP_BYTES,
                answer_chars: settings.limits.answer_chars,
                busy_timeout: settings.limits.busy_timeout,
                poll_interval: weft_engine::defaults::POLL_INTERVAL,
                preflight_timeout: weft_engine::defaults::PREFLIGHT_TIMEOUT,
            },
            supervision: weft_engine::Supervision {
                default_runner: settings.run.runner.clone(),
                registry,
                secrets,
                running_as_root: nix_is_root(),
                path_env: std::env::var_os("PATH"),
                locator: transcript_locator(),
                interrupt: None,
                live_notice: None,
            },
            approvals: weft_engine::Approvals {
                mode: settings.approvals.mode,
                pre_approved: settings.approvals.pre_approved.clone(),
            },
            failures: weft_engine::Failures {
                halt: run.halt_on_failure || settings.run.halt_on_failure,
                retry: run.retry_failed,
            },
            contain: self.contain_config(),
            notify: self.notify_config(),
            spending: weft_engine::Spending {
                prices: settings.spend.prices.clone(),
                plan: settings.spend.budget,
            },
            verify: weft_engine::VerifyConfig {
                commands: settings.verify.commands.clone(),
                batch: settings.verify.batch.map(|n| n as usize),
                gate: settings.verify.gate,
            },
        })
    }

    /// The `notify`, `bell` and `desktop_notify` settings; the bell rings on stderr when it
    /// is a terminal (`weft tui` replaces the sink with its own).
    pub fn notify_config(&self) -> weft_engine::notify::NotifyConfig {
        let notify = &self.settings.notify;
        let bell: Option<weft_engine::notify::Sink> =
            (notify.bell && std::io::IsTerminal::is_terminal(&std::io::stderr())).then(|| {
                std::sync::Arc::new(|_: &weft_core::event::Event, _: &str| {
                    use std::io::Write as _;
                    let mut err = std::io::stderr();
                    let _ = err.write_all(b"\x07");
                    let _ = err.flush();
                }) as weft_engine::notify::Sink
            });
        weft_engine::notify::NotifyConfig {
            command: notify.command.clone(),
            desktop: notify.desktop,
            sink: bell,
        }
    }

    /// The `confine` and `write_paths` settings, the supervisor (this binary) and
    /// whether the kernel enforces Landlock. `WEFT_TEST_NO_LANDLOCK=1` makes weft
    /// believe it does not (a test seam: the refusal and the notice are testable on any
    /// kernel). With `confine = "auto"` on such a kernel, one notice per command.
    pub fn contain_config(&self) -> weft_engine::contain::ContainConfig {
        let forced_off = std::env::var_os("WEFT_TEST_NO_LANDLOCK").is_some_and(|v| v == "1");
        let available = !forced_off && weft_engine::contain::landlock_available();
        let confine = self.settings.supervision.confine;
        if confine == weft_engine::contain::Confine::Auto && !available {
            warnings_text(
                "this kernel does not enforce Landlock: tasks run unconfined (they can write anywhere you can); set confine = \"off\" to silence this, or \"landlock\" to refuse",
            );
        }
        let env = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v)))
            .collect();
        weft_engine::contain::ContainConfig {
            supervisor: std::env::current_exe().ok(),
            confine,
            landlock_available: available,
            write_paths: self.settings.supervision.write_paths.clone(),
            env_pass: self.settings.supervision.env_pass.clone(),
            env: weft_engine::contain::EnvSnapshot(env),
        }
    }
}

/// The values of this process's secret-named environment variables.
fn env_secrets() -> Vec<String> {
    let vars: Vec<(String, String)> = std::env::vars().collect();
    weft_engine::secrets::secret_values(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// A store that masks the environment's secret values in every event it writes (a task
/// prompt an edit sets may quote one).
fn masking_secrets(mut store: Store) -> Store {
    store.set_secrets(env_secrets());
    store
}

/// Where the agent CLIs keep their transcripts, from the environment.
pub fn transcript_locator() -> Locator {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    Locator {
        home: var("HOME"),
        claude_config_dir: var("CLAUDE_CONFIG_DIR"),
        codex_home: var("CODEX_HOME"),
        xdg_data_home: var("XDG_DATA_HOME"),
        opencode_db: var("OPENCODE_DB"),
    }
}

/// Options of one `weft run` that override settings.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions {
    pub isolated: bool,
    pub stash: bool,
    pub parallel: Option<u32>,
    pub halt_on_failure: bool,
    pub retry_failed: bool,
}

fn warnings_text(text: &str) {
    crate::render::note(&format!("warning: {text}"));
}

/// Whether weft runs as root (Claude Code's bypass mode needs IS_SANDBOX=1 then).
fn nix_is_root() -> bool {
    // The owner of /proc/self is the effective user.
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}
