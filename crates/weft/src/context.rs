//! What most commands need: the workspace, the resolved settings and the store.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use weft_core::Timestamp;
use weft_store::{OpenOptions, Store};

use crate::cli::Globals;
use crate::error::{CliError, CliResult};
use crate::runners::known_runners;
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
        .filter_map(|k| std::env::var(k.env).ok().map(|v| (k.env.to_owned(), v)))
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
            busy_timeout: self.settings.busy_timeout(),
        }
    }

    /// The store if weft has written one here; reading never creates `.weft/`.
    pub fn store_if_any(&self) -> CliResult<Option<Store>> {
        Ok(Store::open_existing(
            &self.workspace.state_dir(),
            self.open_options(),
        )?)
    }

    /// The store, or an error saying there is no plan yet.
    pub fn store_with_plans(&self) -> CliResult<Store> {
        self.store_if_any()?.ok_or_else(|| self.no_plan_yet())
    }

    /// The store, created on first write.
    pub fn store_for_write(&self) -> CliResult<Store> {
        Ok(Store::open_or_create(
            &self.workspace.state_dir(),
            self.open_options(),
        )?)
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

    /// Whether a runner name has a manifest (built in, workspace or user).
    pub fn runner_names(&self) -> std::collections::BTreeSet<String> {
        let workspace_dir = self.workspace.state_dir().join("runners");
        let user_dir = self.user_config_dir.as_ref().map(|d| d.join("runners"));
        let mut dirs = vec![workspace_dir.as_path()];
        if let Some(dir) = &user_dir {
            dirs.push(dir.as_path());
        }
        known_runners(&dirs)
    }
}
