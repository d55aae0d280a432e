//! Layered settings: command-line flag, then environment, then `weft.toml` at the
//! workspace root, then the user's `~/.config/weft/config.toml`, then defaults.
//!
//! Every value remembers where it came from, so `weft config` can say.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fs_err as fs;

use crate::error::{CliError, EXIT_FAILURE, EXIT_USAGE};

/// One known setting.
#[derive(Debug)]
pub struct Key {
    pub name: &'static str,
    pub env: &'static str,
    pub default: &'static str,
    pub about: &'static str,
    check: fn(&str) -> Result<(), String>,
}

pub const KEYS: &[Key] = &[
    Key {
        name: "runner",
        env: "WEFT_RUNNER",
        default: "claude-code",
        about: "runner for tasks and plans that name none",
        check: non_empty,
    },
    Key {
        name: "parallel",
        env: "WEFT_PARALLEL",
        default: "3",
        about: "most tasks running at once (1 to 64)",
        check: parallel,
    },
    Key {
        name: "halt_on_failure",
        env: "WEFT_HALT_ON_FAILURE",
        default: "false",
        about: "start no new task once one has failed",
        check: boolean,
    },
    Key {
        name: "task_timeout",
        env: "WEFT_TASK_TIMEOUT",
        default: "60m",
        about: "wall-clock limit of one task attempt (e.g. 90s, 45m, 2h)",
        check: duration,
    },
    Key {
        name: "idle_after",
        env: "WEFT_IDLE_AFTER",
        default: "2m",
        about: "silence after which a running task is flagged idle (advisory)",
        check: duration,
    },
    Key {
        name: "marker_grace",
        env: "WEFT_MARKER_GRACE",
        default: "30s",
        about: "how long an agent that printed its marker may take to exit before it is stopped",
        check: duration,
    },
    Key {
        name: "isolation",
        env: "WEFT_ISOLATION",
        default: "true",
        about: "run each AI task in its own git worktree and land its work on weft/<run>/integration",
        check: boolean,
    },
    Key {
        name: "repos",
        env: "WEFT_REPOS",
        default: "",
        about: "the repositories of a multi-repo workspace (folder names, comma-separated or a TOML list; empty: every repository one level down)",
        check: anything,
    },
    Key {
        name: "keep_worktrees",
        env: "WEFT_KEEP_WORKTREES",
        default: "false",
        about: "keep a task's worktree after its work landed (failed and conflicted ones are always kept)",
        check: boolean,
    },
    Key {
        name: "links",
        env: "WEFT_LINKS",
        default: "node_modules,.venv,venv,.env*,.claude,.codex,.opencode,.scratch",
        about: "ignored entries of your checkout linked into each task worktree (comma-separated or a TOML list; `name*` matches a prefix)",
        check: anything,
    },
    Key {
        name: "setup",
        env: "WEFT_SETUP",
        default: "",
        about: "a shell command run in each new task worktree instead of linking (empty: link)",
        check: anything,
    },
    Key {
        name: "answer_chars",
        env: "WEFT_ANSWER_CHARS",
        default: "4000",
        about: "how much of an agent's final answer (from its transcript) weft keeps, in characters",
        check: answer_chars,
    },
    Key {
        name: "planner",
        env: "WEFT_PLANNER",
        default: "",
        about: "who plans from a goal: openai (WEFT_PLANNER_BASE_URL/_API_KEY/_MODEL), claude-code, codex or opencode (empty: openai when WEFT_PLANNER_MODEL is set, else the first agent CLI found)",
        check: planner,
    },
    Key {
        name: "planner_timeout",
        env: "WEFT_PLANNER_TIMEOUT",
        default: "10m",
        about: "how long one planner turn may take: an agent CLI's wall clock; for an API, the longest silence (the whole reply may take three times that)",
        check: duration,
    },
    Key {
        name: "planner_max_steps",
        env: "WEFT_PLANNER_MAX_STEPS",
        default: "40",
        about: "research tool calls an API planner may make per turn before its calls go unanswered",
        check: max_steps,
    },
    Key {
        name: "approvals",
        env: "WEFT_APPROVALS",
        default: "ask",
        about: "what the planner may do outside its envelope (reads outside the workspace, .env files): ask, allow or deny",
        check: approval_mode,
    },
    Key {
        name: "pre_approved",
        env: "WEFT_PRE_APPROVED",
        default: "",
        about: "scopes allowed in every approvals mode, comma-separated (e.g. path:/etc/*, command:git log)",
        check: scopes,
    },
    Key {
        name: "busy_timeout_ms",
        env: "WEFT_BUSY_TIMEOUT_MS",
        default: "5000",
        about: "how long a write waits for another weft process (milliseconds, up to 600000)",
        check: busy_timeout,
    },
];

fn non_empty(value: &str) -> Result<(), String> {
    if value.trim().is_empty() {
        Err("must not be empty".into())
    } else {
        Ok(())
    }
}

fn answer_chars(value: &str) -> Result<(), String> {
    match value.parse::<usize>() {
        Ok(n) if (100..=1_000_000).contains(&n) => Ok(()),
        _ => Err("must be a whole number from 100 to 1000000".into()),
    }
}

/// The same names `--planner` takes.
fn planner(value: &str) -> Result<(), String> {
    let value = value.trim();
    if value.is_empty() || weft_engine::planning::PlannerChoice::parse(value).is_some() {
        Ok(())
    } else {
        Err("must be openai, claude-code, codex or opencode (or empty)".into())
    }
}

fn max_steps(value: &str) -> Result<(), String> {
    match value.parse::<usize>() {
        Ok(n) if (1..=500).contains(&n) => Ok(()),
        _ => Err("must be a whole number from 1 to 500".into()),
    }
}

fn approval_mode(value: &str) -> Result<(), String> {
    weft_core::approval::Mode::parse(value.trim())
        .map(|_| ())
        .ok_or_else(|| "must be ask, allow or deny".into())
}

fn scopes(value: &str) -> Result<(), String> {
    for part in split_scopes(value) {
        weft_core::approval::Scope::parse(&part).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Scopes are separated by commas; a command family may not contain one.
fn split_scopes(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn anything(_value: &str) -> Result<(), String> {
    Ok(())
}

fn parallel(value: &str) -> Result<(), String> {
    match value.parse::<u32>() {
        Ok(n) if (1..=64).contains(&n) => Ok(()),
        _ => Err("must be a whole number from 1 to 64".into()),
    }
}

fn boolean(value: &str) -> Result<(), String> {
    parse_bool(value)
        .map(|_| ())
        .ok_or_else(|| "must be true or false".into())
}

fn parse_bool(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

fn duration(value: &str) -> Result<(), String> {
    match humantime::parse_duration(value) {
        Ok(d) if !d.is_zero() => Ok(()),
        Ok(_) => Err("must be longer than zero".into()),
        Err(e) => Err(format!(
            "is not a duration ({e}); write e.g. 90s, 45m or 2h"
        )),
    }
}

fn busy_timeout(value: &str) -> Result<(), String> {
    match value.parse::<u64>() {
        Ok(n) if n <= 600_000 => Ok(()),
        _ => Err("must be a whole number of milliseconds from 0 to 600000".into()),
    }
}

/// Where a value came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Flag,
    Env(&'static str),
    Project(PathBuf),
    User(PathBuf),
    Default,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Flag => f.write_str("command line (-c)"),
            Source::Env(name) => write!(f, "environment ({name})"),
            Source::Project(path) => write!(f, "project ({})", path.display()),
            Source::User(path) => write!(f, "user ({})", path.display()),
            Source::Default => f.write_str("default"),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Settings {
    values: BTreeMap<&'static str, (String, Source)>,
}

/// Inputs to resolution; the caller reads the process environment, not this module.
#[derive(Debug, Default)]
pub struct Layers<'a> {
    pub flags: &'a [String],
    pub env: BTreeMap<String, String>,
    pub project_file: Option<PathBuf>,
    pub user_file: Option<PathBuf>,
}

impl Settings {
    pub fn resolve(layers: &Layers<'_>) -> Result<Settings, CliError> {
        let flags = parse_flags(layers.flags)?;
        let project = match &layers.project_file {
            Some(path) => read_file(path)?,
            None => BTreeMap::new(),
        };
        let user = match &layers.user_file {
            Some(path) => read_file(path)?,
            None => BTreeMap::new(),
        };
        let mut values = BTreeMap::new();
        for key in KEYS {
            let (value, source) = if let Some(value) = flags.get(key.name) {
                (value.clone(), Source::Flag)
            } else if let Some(value) = layers.env.get(key.env) {
                (value.clone(), Source::Env(key.env))
            } else if let Some(value) = project.get(key.name) {
                (
                    value.clone(),
                    Source::Project(layers.project_file.clone().unwrap_or_default()),
                )
            } else if let Some(value) = user.get(key.name) {
                (
                    value.clone(),
                    Source::User(layers.user_file.clone().unwrap_or_default()),
                )
            } else {
                (key.default.to_owned(), Source::Default)
            };
            if let Err(problem) = (key.check)(&value) {
                let code = if source == Source::Flag {
                    EXIT_USAGE
                } else {
                    EXIT_FAILURE
                };
                return Err(CliError::new(format!(
                    "setting `{}` = {value:?} from {source} {problem}",
                    key.name
                ))
                .hint(format!("{}: {}", key.name, key.about))
                .with_code(code));
            }
            values.insert(key.name, (value, source));
        }
        Ok(Settings { values })
    }

    /// Every setting with its value and source, in name order.
    pub fn all(&self) -> impl Iterator<Item = (&'static str, &str, &Source)> {
        self.values.iter().map(|(k, (v, s))| (*k, v.as_str(), s))
    }

    fn raw(&self, name: &str) -> &str {
        &self.values[name].0
    }

    pub fn runner(&self) -> &str {
        self.raw("runner")
    }

    pub fn parallel(&self) -> u32 {
        self.raw("parallel").parse().unwrap_or(3)
    }

    pub fn isolation(&self) -> bool {
        parse_bool(self.raw("isolation")).unwrap_or(true)
    }

    pub fn answer_chars(&self) -> usize {
        self.raw("answer_chars").parse().unwrap_or(4000)
    }

    pub fn repos(&self) -> Vec<String> {
        self.raw("repos")
            .split(',')
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_owned)
            .collect()
    }

    pub fn keep_worktrees(&self) -> bool {
        parse_bool(self.raw("keep_worktrees")).unwrap_or(false)
    }

    pub fn halt_on_failure(&self) -> bool {
        parse_bool(self.raw("halt_on_failure")).unwrap_or(false)
    }

    pub fn task_timeout(&self) -> Duration {
        self.duration("task_timeout")
    }

    pub fn idle_after(&self) -> Duration {
        self.duration("idle_after")
    }

    pub fn marker_grace(&self) -> Duration {
        self.duration("marker_grace")
    }

    /// A duration setting; its value was checked when the settings were resolved.
    fn duration(&self, name: &str) -> Duration {
        humantime::parse_duration(self.raw(name)).unwrap_or(Duration::from_secs(60))
    }

    /// How task worktrees are made runnable: a setup command, or links.
    pub fn runnable(&self) -> weft_engine::Runnable {
        let setup = self.raw("setup").trim();
        if setup.is_empty() {
            weft_engine::Runnable::Link(
                self.raw("links")
                    .split(',')
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .map(str::to_owned)
                    .collect(),
            )
        } else {
            weft_engine::Runnable::Setup(setup.to_owned())
        }
    }

    /// The planner the user chose; `None` lets the command pick one.
    pub fn planner(&self) -> Option<&str> {
        Some(self.raw("planner").trim()).filter(|p| !p.is_empty())
    }

    pub fn planner_timeout(&self) -> Duration {
        humantime::parse_duration(self.raw("planner_timeout")).unwrap_or(Duration::from_secs(600))
    }

    pub fn planner_max_steps(&self) -> usize {
        self.raw("planner_max_steps").parse().unwrap_or(40)
    }

    pub fn approval_mode(&self) -> weft_core::approval::Mode {
        weft_core::approval::Mode::parse(self.raw("approvals").trim())
            .unwrap_or(weft_core::approval::Mode::Ask)
    }

    pub fn pre_approved(&self) -> Vec<weft_core::approval::Scope> {
        split_scopes(self.raw("pre_approved"))
            .iter()
            .filter_map(|s| weft_core::approval::Scope::parse(s).ok())
            .collect()
    }

    pub fn busy_timeout(&self) -> Duration {
        Duration::from_millis(self.raw("busy_timeout_ms").parse().unwrap_or(5000))
    }
}

fn known_names() -> String {
    KEYS.iter().map(|k| k.name).collect::<Vec<_>>().join(", ")
}

fn parse_flags(flags: &[String]) -> Result<BTreeMap<String, String>, CliError> {
    let mut out = BTreeMap::new();
    for flag in flags {
        let Some((name, value)) = flag.split_once('=') else {
            return Err(CliError::new(format!("-c {flag:?} is not KEY=VALUE"))
                .hint(format!("known settings: {}", known_names()))
                .with_code(EXIT_USAGE));
        };
        let name = name.trim();
        if !KEYS.iter().any(|k| k.name == name) {
            return Err(
                CliError::new(format!("-c names an unknown setting {name:?}"))
                    .hint(format!("known settings: {}", known_names()))
                    .with_code(EXIT_USAGE),
            );
        }
        out.insert(name.to_owned(), value.to_owned());
    }
    Ok(out)
}

/// A settings file's top-level keys as text; a missing file is empty.
fn read_file(path: &Path) -> Result<BTreeMap<String, String>, CliError> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(e.into()),
    };
    let table: toml::Table = toml::from_str(&text).map_err(|e| {
        let (line, column) = e
            .span()
            .map(|s| line_column(&text, s.start))
            .unwrap_or((1, 1));
        CliError::new(format!(
            "{}:{line}:{column}: invalid TOML: {}",
            path.display(),
            e.message().trim()
        ))
    })?;
    let mut out = BTreeMap::new();
    for (name, value) in table {
        if !KEYS.iter().any(|k| k.name == name) {
            return Err(
                CliError::new(format!("{}: unknown setting {name:?}", path.display()))
                    .hint(format!("known settings: {}", known_names())),
            );
        }
        let text = match value {
            toml::Value::String(s) => s,
            toml::Value::Integer(i) => i.to_string(),
            toml::Value::Boolean(b) => b.to_string(),
            toml::Value::Float(f) => f.to_string(),
            toml::Value::Array(items) if items.iter().all(toml::Value::is_str) => items
                .iter()
                .filter_map(toml::Value::as_str)
                .collect::<Vec<_>>()
                .join(","),
            other => {
                return Err(CliError::new(format!(
                    "{}: setting {name:?} must be a string, number or boolean, not {}",
                    path.display(),
                    other.type_str()
                )));
            }
        };
        out.insert(name, text);
    }
    Ok(out)
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let path = dir.join(name);
        fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn layers_apply_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let project = write(
            dir.path(),
            "weft.toml",
            "parallel = 5\nrunner = \"codex\"\n",
        );
        let user = write(
            dir.path(),
            "user.toml",
            "parallel = 2\nhalt_on_failure = true\nrunner = \"opencode\"\n",
        );
        let flags = vec!["runner=exec".to_owned()];
        let settings = Settings::resolve(&Layers {
            flags: &flags,
            env: BTreeMap::from([("WEFT_PARALLEL".to_owned(), "7".to_owned())]),
            project_file: Some(project.clone()),
            user_file: Some(user.clone()),
        })
        .unwrap();
        let source = |name| settings.values[name].1.clone();
        assert_eq!(settings.runner(), "exec");
        assert_eq!(source("runner"), Source::Flag);
        assert_eq!(settings.parallel(), 7);
        assert_eq!(source("parallel"), Source::Env("WEFT_PARALLEL"));
        assert!(settings.halt_on_failure());
        assert_eq!(source("halt_on_failure"), Source::User(user));
        assert_eq!(source("task_timeout"), Source::Default);
        assert_eq!(settings.task_timeout(), Duration::from_secs(3600));
    }

    #[test]
    fn bad_values_name_the_setting_and_source() {
        let err = Settings::resolve(&Layers {
            env: BTreeMap::from([("WEFT_PARALLEL".to_owned(), "0".to_owned())]),
            ..Layers::default()
        })
        .unwrap_err();
        assert_eq!(
            err.message,
            "setting `parallel` = \"0\" from environment (WEFT_PARALLEL) must be a whole number from 1 to 64"
        );
    }

    #[test]
    fn unknown_keys_and_bad_toml_are_refused_with_position() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "weft.toml", "paralel = 3\n");
        let err = Settings::resolve(&Layers {
            project_file: Some(path),
            ..Layers::default()
        })
        .unwrap_err();
        assert!(
            err.message.ends_with("unknown setting \"paralel\""),
            "{}",
            err.message
        );
        let path = write(dir.path(), "bad.toml", "parallel = 3\nrunner = \n");
        let err = Settings::resolve(&Layers {
            project_file: Some(path.clone()),
            ..Layers::default()
        })
        .unwrap_err();
        assert!(
            err.message.starts_with(&format!("{}:2:", path.display())),
            "{}",
            err.message
        );
    }
}
