//! The runners a front end shows and chooses from: their manifests, whether each can be
//! started here, and which can plan.
//!
//! Front ends reach weft-agents only through this module (and [`crate::transcripts`]):
//! they load the [`Registry`] here, hand it to the engine in
//! [`EngineConfig`](crate::EngineConfig), and render the typed [`RunnerReport`]s; the
//! English of `weft runners` belongs to the front end.
//!
//! Threads: none of its own; [`reports`] runs each runner's version probe in turn, each
//! bounded by the timeout given (a hung probe's process group is killed).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use weft_agents::preflight;

pub use weft_agents::manifest::{ManifestError, Registry};

use crate::planning::{AgentCliKind, PlannerChoice};

/// Every runner manifest: built in, then the user's (`user_runners`, usually
/// `~/.config/weft/runners`), then the workspace's (`workspace_runners`, `.weft/runners`),
/// a later one replacing an earlier one of the same name. Broken manifest files are
/// returned beside it, so the front end can warn and go on with the rest.
pub fn load(
    workspace_runners: &Path,
    user_runners: Option<&Path>,
) -> (Registry, Vec<ManifestError>) {
    Registry::load(Some(workspace_runners), user_runners)
}

/// One runner as `weft runners` shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct RunnerReport {
    pub name: String,
    /// Where its manifest came from: `built-in`, or the file it was read from.
    pub origin: String,
    /// Its program starts and answers the version probe.
    pub available: bool,
    /// The program as resolved (on `PATH`, or the path the manifest names).
    pub program: Option<PathBuf>,
    /// The first line the version probe printed.
    pub version: Option<String>,
    /// Why it is unavailable, and how to fix it.
    pub reason: Option<String>,
    /// `weft plan --planner NAME` has a transport for it.
    pub can_plan: bool,
}

/// Probe every runner of `registry`, in the registry's order, with `path_env` as `PATH`
/// (None: the process's own), each probe bounded by `timeout`.
pub fn reports(
    registry: &Registry,
    path_env: Option<&OsStr>,
    timeout: Duration,
) -> Vec<RunnerReport> {
    registry
        .iter()
        .map(|loaded| {
            let name = loaded.manifest.name();
            let availability = preflight::check(&loaded.manifest, path_env, timeout);
            RunnerReport {
                name: name.to_owned(),
                origin: loaded.origin.to_string(),
                available: availability.available,
                program: availability.program,
                version: availability.version,
                reason: availability.reason,
                can_plan: can_plan(name),
            }
        })
        .collect()
}

/// Whether `weft plan --planner NAME` has a transport for this runner (the agent CLIs
/// with a read-only mode weft speaks to); any runner can execute tasks.
pub fn can_plan(name: &str) -> bool {
    PlannerChoice::parse(name).is_some_and(|choice| !matches!(choice, PlannerChoice::OpenAi))
}

/// Whether `program` can be started: the runners' own preflight lookup (a path, or an
/// executable on `path_env`). Presence, not health: nothing is run.
pub fn program_available(program: &str, path_env: Option<&OsStr>) -> bool {
    preflight::resolve_program(program, path_env).is_ok()
}

/// The command an agent-CLI planner of `kind` starts: its runner manifest's (so a
/// `.weft/runners/claude-code.toml` pointing elsewhere is honoured), else the CLI's name.
pub fn planner_program(registry: &Registry, kind: AgentCliKind) -> String {
    registry
        .get(kind.name())
        .map(|m| m.manifest.command().to_owned())
        .unwrap_or_else(|| kind.default_program().to_owned())
}

/// The command the runner `name` starts, when a manifest of that name is loaded.
pub fn runner_program<'a>(registry: &'a Registry, name: &str) -> Option<&'a str> {
    registry.get(name).map(|m| m.manifest.command())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn built_in() -> Registry {
        let nowhere = Path::new("/nonexistent/weft-runners");
        let (registry, broken) = load(nowhere, None);
        assert!(broken.is_empty(), "{broken:?}");
        registry
    }

    #[test]
    fn only_the_agent_clis_with_a_read_only_mode_can_plan() {
        for name in ["claude-code", "codex", "opencode"] {
            assert!(can_plan(name), "{name}");
        }
        for name in ["exec", "openai", "myagent"] {
            assert!(!can_plan(name), "{name}");
        }
    }

    #[test]
    fn a_runner_whose_program_is_not_on_path_is_reported_unavailable_with_the_reason() {
        let empty = tempfile::tempdir().unwrap();
        let reports = reports(
            &built_in(),
            Some(empty.path().as_os_str()),
            Duration::from_secs(5),
        );
        let claude = reports.iter().find(|r| r.name == "claude-code").unwrap();
        assert!(!claude.available);
        assert_eq!(claude.origin, "built-in");
        assert!(claude.can_plan);
        let reason = claude.reason.as_deref().unwrap();
        assert!(reason.contains("claude was not found on PATH"), "{reason}");
    }

    #[test]
    fn the_planner_program_is_the_manifest_command() {
        assert_eq!(
            planner_program(&built_in(), AgentCliKind::ClaudeCode),
            "claude"
        );
        assert_eq!(
            runner_program(&built_in(), "codex"),
            Some("codex"),
            "the built-in codex manifest starts codex"
        );
        assert_eq!(runner_program(&built_in(), "nope"), None);
    }

    #[test]
    fn a_program_named_by_path_is_available_only_when_it_exists() {
        assert!(program_available("/bin/sh", None));
        assert!(!program_available("/nonexistent/weft-agent", None));
    }
}
