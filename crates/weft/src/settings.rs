//! Layered settings: command-line flag (`-c`), then environment, then `weft.toml` at the
//! workspace root, then the user's `~/.config/weft/config.toml`, then defaults.
//!
//! Contract:
//! - Settings are resolved once, in [`Settings::resolve`], into typed values grouped the
//!   way the engine takes them ([`RunSettings`], [`IsolationSettings`], [`LimitSettings`],
//!   [`SupervisionSettings`], [`PlannerSettings`], [`ApprovalSettings`]). Nothing re-parses
//!   text later, so nothing can fall back to a value the user did not choose.
//! - Every default lives in one place: its [`Key`] below, as the text a user would write,
//!   parsed by the same parser as a value from any source (so a default is checked too).
//! - A bad value from any source is an error naming the key, the value and the source;
//!   one from `-c` is a usage error (exit 2), like a bad flag.
//! - Every value remembers its text and where it came from, so `weft config` can say.
//! - This module reads files but not the process environment: the caller passes the
//!   variables in ([`Layers`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fs_err as fs;
use weft_core::approval::{Mode, Scope};
use weft_engine::contain::Confine;
use weft_engine::{Links, Runnable};

use crate::error::{CliError, EXIT_FAILURE, EXIT_USAGE};

/// One known setting whose text parses into a `T`.
#[derive(Debug)]
pub struct Key<T> {
    pub name: &'static str,
    pub env: &'static str,
    /// The default, written as a user would write it.
    pub default: &'static str,
    pub about: &'static str,
    parse: fn(&str) -> Result<T, String>,
}

/// What every key says about itself, whatever its type.
pub trait Described: Sync {
    fn name(&self) -> &'static str;
    fn env(&self) -> &'static str;
    fn about(&self) -> &'static str;
}

impl<T> Described for Key<T> {
    fn name(&self) -> &'static str {
        self.name
    }
    fn env(&self) -> &'static str {
        self.env
    }
    fn about(&self) -> &'static str {
        self.about
    }
}

pub const RUNNER: Key<String> = Key {
    name: "runner",
    env: "WEFT_RUNNER",
    default: "claude-code",
    about: "runner for tasks and plans that name none",
    parse: non_empty,
};
pub const PARALLEL: Key<u32> = Key {
    name: "parallel",
    env: "WEFT_PARALLEL",
    default: "3",
    about: "most tasks running at once (1 to 64)",
    parse: parallel,
};
pub const HALT_ON_FAILURE: Key<bool> = Key {
    name: "halt_on_failure",
    env: "WEFT_HALT_ON_FAILURE",
    default: "false",
    about: "start no new task once one has failed",
    parse: boolean,
};
pub const TASK_TIMEOUT: Key<Duration> = Key {
    name: "task_timeout",
    env: "WEFT_TASK_TIMEOUT",
    default: "60m",
    about: "wall-clock limit of one task attempt (e.g. 90s, 45m, 2h)",
    parse: duration,
};
pub const IDLE_AFTER: Key<Duration> = Key {
    name: "idle_after",
    env: "WEFT_IDLE_AFTER",
    default: "2m",
    about: "silence after which a running task is flagged idle (advisory)",
    parse: duration,
};
pub const IDLE_TIMEOUT: Key<Duration> = Key {
    name: "idle_timeout",
    env: "WEFT_IDLE_TIMEOUT",
    default: "20m",
    about: "no output, stream event or file change for this long ends a task attempt (0 turns it off; longer than idle_after)",
    parse: duration_or_zero,
};
pub const MARKER_GRACE: Key<Duration> = Key {
    name: "marker_grace",
    env: "WEFT_MARKER_GRACE",
    default: "30s",
    about: "how long an agent that printed its marker may take to exit before it is stopped",
    parse: duration,
};
pub const ISOLATION: Key<bool> = Key {
    name: "isolation",
    env: "WEFT_ISOLATION",
    default: "true",
    about: "run each AI task in its own git worktree and land its work on weft/<run>/integration",
    parse: boolean,
};
pub const REPOS: Key<Vec<String>> = Key {
    name: "repos",
    env: "WEFT_REPOS",
    default: "",
    about: "the repositories of a multi-repo workspace (folder names, comma-separated or a TOML list; empty: every repository one level down)",
    parse: list,
};
pub const KEEP_WORKTREES: Key<bool> = Key {
    name: "keep_worktrees",
    env: "WEFT_KEEP_WORKTREES",
    default: "false",
    about: "keep a task's worktree after its work landed (failed and conflicted ones are always kept)",
    parse: boolean,
};
pub const OUTSIDE_SYMLINKS: Key<bool> = Key {
    name: "outside_symlinks",
    env: "WEFT_OUTSIDE_SYMLINKS",
    default: "refuse",
    about: "a task whose changes add a symlink pointing outside its worktree (absolute, or escaping with ..): refuse (it fails at landing) or allow",
    parse: outside_symlinks,
};
pub const LINKS: Key<Links> = Key {
    name: "links",
    env: "WEFT_LINKS",
    default: "node_modules,.venv,venv,.env*,.claude,.codex,.opencode,.scratch",
    about: "ignored paths of your checkout linked into each task worktree, one link per match (paths or globs at any depth, e.g. packages/*/node_modules, **/target; comma-separated or a TOML list; a node_modules folder is linked entry by entry, workspace packages resolving inside the worktree)",
    parse: links,
};
pub const SETUP: Key<Option<String>> = Key {
    name: "setup",
    env: "WEFT_SETUP",
    default: "",
    about: "a shell command run in each new task worktree instead of linking (empty: link)",
    parse: optional,
};
pub const CONFINE: Key<Confine> = Key {
    name: "confine",
    env: "WEFT_CONFINE",
    default: "auto",
    about: "confine what each task's processes may write (Linux Landlock): auto (where the kernel supports it, else a notice), landlock (refuse to run without it) or off",
    parse: confine,
};
pub const WRITE_PATHS: Key<Vec<String>> = Key {
    name: "write_paths",
    env: "WEFT_WRITE_PATHS",
    default: "",
    about: "more folders every confined runner may write, besides its worktree, TMPDIR and its manifest's write_paths (comma-separated or a TOML list; ~/, $VAR and ${VAR:-fallback} expand)",
    parse: list,
};
pub const ENV_PASS: Key<Vec<String>> = Key {
    name: "env_pass",
    env: "WEFT_ENV_PASS",
    default: "",
    about: "more variables of your environment every task, check and planner gets, besides the base (PATH, HOME, LANG, WEFT_*, …) and its runner's env_pass (patterns, `*` any characters, comma-separated or a TOML list; `*` passes everything)",
    parse: env_pass,
};
pub const ANSWER_CHARS: Key<usize> = Key {
    name: "answer_chars",
    env: "WEFT_ANSWER_CHARS",
    default: "4000",
    about: "how much of an agent's final answer (from its transcript) weft keeps, in characters",
    parse: answer_chars,
};
pub const PLANNER: Key<Option<String>> = Key {
    name: "planner",
    env: "WEFT_PLANNER",
    default: "",
    about: "who plans from a goal: openai (WEFT_PLANNER_BASE_URL/_API_KEY/_MODEL), claude-code, codex or opencode (empty: openai when WEFT_PLANNER_MODEL is set, else the first agent CLI found)",
    parse: planner,
};
pub const PLANNER_TIMEOUT: Key<Duration> = Key {
    name: "planner_timeout",
    env: "WEFT_PLANNER_TIMEOUT",
    default: "10m",
    about: "how long one planner turn may take: an agent CLI's wall clock; for an API, the longest silence (the whole reply may take three times that)",
    parse: duration,
};
pub const PLANNER_MAX_STEPS: Key<usize> = Key {
    name: "planner_max_steps",
    env: "WEFT_PLANNER_MAX_STEPS",
    default: "40",
    about: "research tool calls an API planner may make per turn before its calls go unanswered",
    parse: max_steps,
};
pub const APPROVALS: Key<Mode> = Key {
    name: "approvals",
    env: "WEFT_APPROVALS",
    default: "ask",
    about: "what the planner may do outside its envelope (reads outside the workspace, .env files): ask, allow or deny",
    parse: approval_mode,
};
pub const PRE_APPROVED: Key<Vec<Scope>> = Key {
    name: "pre_approved",
    env: "WEFT_PRE_APPROVED",
    default: "",
    about: "scopes allowed in every approvals mode, comma-separated (e.g. path:/etc/*, command:git log)",
    parse: scopes,
};
pub const BUSY_TIMEOUT_MS: Key<Duration> = Key {
    name: "busy_timeout_ms",
    env: "WEFT_BUSY_TIMEOUT_MS",
    default: "5000",
    about: "how long a write waits for another weft process (milliseconds, up to 600000)",
    parse: busy_timeout,
};
pub const NOTIFY: Key<Option<String>> = Key {
    name: "notify",
    env: "WEFT_NOTIFY",
    default: "",
    about: "a shell command run (from the workspace root) when an approval waits, a task failed or conflicted, or a run finished: the event as one line of JSON on stdin, a summary in WEFT_NOTIFY_SUMMARY",
    parse: optional,
};
pub const BELL: Key<bool> = Key {
    name: "bell",
    env: "WEFT_BELL",
    default: "true",
    about: "ring the terminal bell in `weft run` and `weft tui` when an approval waits, a task failed or conflicted, or a run finished",
    parse: boolean,
};
pub const DESKTOP_NOTIFY: Key<bool> = Key {
    name: "desktop_notify",
    env: "WEFT_DESKTOP_NOTIFY",
    default: "false",
    about: "show those moments as desktop notifications through notify-send, where it exists",
    parse: boolean,
};
pub const BUDGET_USD: Key<Option<f64>> = Key {
    name: "budget_usd",
    env: "WEFT_BUDGET_USD",
    default: "",
    about: "the plan's budget in US dollars: once its spend (every attempt and retry) reaches it, no new task starts (empty: none; raise it and `weft run` continues)",
    parse: budget_usd,
};
pub const BUDGET_TOKENS: Key<Option<u64>> = Key {
    name: "budget_tokens",
    env: "WEFT_BUDGET_TOKENS",
    default: "",
    about: "the plan's budget in tokens (input, output and cache): once reached, no new task starts (empty: none)",
    parse: budget_tokens,
};
pub const PRICES: Key<Vec<(String, weft_core::spend::Price)>> = Key {
    name: "prices",
    env: "WEFT_PRICES",
    default: "",
    about: "model prices over weft's defaults, in dollars per million tokens: MODEL=INPUT/OUTPUT[/CACHE_READ[/CACHE_WRITE]], comma-separated",
    parse: prices,
};

pub const VERIFY: Key<Vec<String>> = Key {
    name: "verify",
    env: "WEFT_VERIFY",
    default: "",
    about: "commands run in the run's integration checkout after landings, each with sh -c (one command, or a TOML list / JSON array of them); a failure is run once more, then bisected among the landings since the last green tip and the culprit quarantined",
    parse: commands,
};
pub const VERIFY_BATCH: Key<Option<u32>> = Key {
    name: "verify_batch",
    env: "WEFT_VERIFY_BATCH",
    default: "",
    about: "when `verify` runs: empty, whenever the landing queue has emptied; N, after every N landings (1: after each); always before the run ends",
    parse: verify_batch,
};
pub const VERIFY_GATE: Key<bool> = Key {
    name: "verify_gate",
    env: "WEFT_VERIFY_GATE",
    default: "true",
    about: "with `verify` set, a landed task counts as met for its dependents only once a verification of a tip holding it passed",
    parse: boolean,
};

/// Every key, in the order `weft config` hints list them.
pub static KEYS: &[&dyn Described] = &[
    &RUNNER,
    &PARALLEL,
    &HALT_ON_FAILURE,
    &TASK_TIMEOUT,
    &IDLE_AFTER,
    &IDLE_TIMEOUT,
    &MARKER_GRACE,
    &ISOLATION,
    &REPOS,
    &KEEP_WORKTREES,
    &OUTSIDE_SYMLINKS,
    &LINKS,
    &SETUP,
    &CONFINE,
    &WRITE_PATHS,
    &ENV_PASS,
    &ANSWER_CHARS,
    &PLANNER,
    &PLANNER_TIMEOUT,
    &PLANNER_MAX_STEPS,
    &APPROVALS,
    &PRE_APPROVED,
    &BUSY_TIMEOUT_MS,
    &NOTIFY,
    &BELL,
    &DESKTOP_NOTIFY,
    &BUDGET_USD,
    &BUDGET_TOKENS,
    &PRICES,
    &VERIFY,
    &VERIFY_BATCH,
    &VERIFY_GATE,
];

fn budget_usd(value: &str) -> Result<Option<f64>, String> {
    match value.trim().trim_start_matches('$') {
        "" => Ok(None),
        text => match text.parse::<f64>() {
            Ok(amount) if amount.is_finite() && amount >= 0.0 => Ok(Some(amount)),
            _ => Err("is not an amount of dollars (e.g. 5 or 2.50)".into()),
        },
    }
}

fn budget_tokens(value: &str) -> Result<Option<u64>, String> {
    match value.trim().replace('_', "").as_str() {
        "" => Ok(None),
        text => text
            .parse::<u64>()
            .map(Some)
            .map_err(|_| "is not a whole number of tokens".into()),
    }
}

fn prices(value: &str) -> Result<Vec<(String, weft_core::spend::Price)>, String> {
    weft_core::spend::parse_prices(value).map_err(|e| {
        format!(
            "is not a price list: {e} (write MODEL=INPUT/OUTPUT[/CACHE_READ[/CACHE_WRITE]] per million tokens)"
        )
    })
}

fn non_empty(value: &str) -> Result<String, String> {
    if value.trim().is_empty() {
        Err("must not be empty".into())
    } else {
        Ok(value.to_owned())
    }
}

/// Empty (after trimming) means none.
fn optional(value: &str) -> Result<Option<String>, String> {
    Ok(Some(value.trim())
        .filter(|v| !v.is_empty())
        .map(str::to_owned))
}

/// Shell commands: a JSON array of strings (a TOML list arrives as one), else the whole
/// text as one command (commas and all); blank ones dropped.
fn commands(value: &str) -> Result<Vec<String>, String> {
    let trimmed = value.trim();
    let all: Vec<String> = if trimmed.starts_with('[') {
        serde_json::from_str::<Vec<String>>(trimmed)
            .map_err(|e| format!("is not a list of commands: {e}"))?
    } else {
        vec![trimmed.to_owned()]
    };
    Ok(all
        .into_iter()
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty())
        .collect())
}

fn verify_batch(value: &str) -> Result<Option<u32>, String> {
    if value.trim().is_empty() {
        return Ok(None);
    }
    whole_number(value, 1, 10_000, "").map(Some)
}

/// Comma-separated entries, blanks dropped (a TOML list arrives joined by commas).
fn list(value: &str) -> Result<Vec<String>, String> {
    Ok(value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect())
}

fn whole_number<T: std::str::FromStr + PartialOrd + std::fmt::Display>(
    value: &str,
    min: T,
    max: T,
    unit: &str,
) -> Result<T, String> {
    match value.trim().parse::<T>() {
        Ok(n) if n >= min && n <= max => Ok(n),
        _ => Err(format!("must be a whole number{unit} from {min} to {max}")),
    }
}

fn confine(value: &str) -> Result<Confine, String> {
    Confine::parse(value.trim()).ok_or_else(|| "must be auto, landlock or off".into())
}

fn env_pass(value: &str) -> Result<Vec<String>, String> {
    let patterns = list(value)?;
    for pattern in &patterns {
        weft_engine::contain::env::check_pattern(pattern)
            .map_err(|e| format!("`{pattern}`: {e}"))?;
    }
    Ok(patterns)
}

fn parallel(value: &str) -> Result<u32, String> {
    whole_number(value, 1, 64, "")
}

fn answer_chars(value: &str) -> Result<usize, String> {
    whole_number(value, 100, 1_000_000, "")
}

fn max_steps(value: &str) -> Result<usize, String> {
    whole_number(value, 1, 500, "")
}

fn busy_timeout(value: &str) -> Result<Duration, String> {
    whole_number(value, 0, 600_000, " of milliseconds").map(Duration::from_millis)
}

/// The same names `--planner` takes.
fn planner(value: &str) -> Result<Option<String>, String> {
    let value = optional(value)?;
    match &value {
        Some(name) if weft_engine::planning::PlannerChoice::parse(name).is_none() => {
            Err("must be openai, claude-code, codex or opencode (or empty)".into())
        }
        _ => Ok(value),
    }
}

fn approval_mode(value: &str) -> Result<Mode, String> {
    Mode::parse(value.trim()).ok_or_else(|| "must be ask, allow or deny".into())
}

/// Scopes are separated by commas; a command family may not contain one.
fn scopes(value: &str) -> Result<Vec<Scope>, String> {
    list(value)?
        .iter()
        .map(|part| Scope::parse(part).map_err(|e| e.to_string()))
        .collect()
}

/// Paths or globs, checked (a malformed glob is named). Split at the commas outside
/// braces, so `packages/{api,web}/node_modules` stays one entry.
fn links(value: &str) -> Result<Links, String> {
    let mut entries = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (at, c) in value.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                entries.push(&value[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    entries.push(&value[start..]);
    Links::parse(&entries)
}

/// `allow` (true) or `refuse` (false).
fn outside_symlinks(value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "allow" => Ok(true),
        "refuse" => Ok(false),
        _ => Err("must be refuse or allow".into()),
    }
}

fn boolean(value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err("must be true or false".into()),
    }
}

/// A duration where `0` (or `0s`) means "off".
fn duration_or_zero(value: &str) -> Result<Duration, String> {
    if value.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    humantime::parse_duration(value.trim())
        .map_err(|e| format!("is not a duration ({e}); write e.g. 20m or 1h, or 0 to turn it off"))
}

fn duration(value: &str) -> Result<Duration, String> {
    match humantime::parse_duration(value.trim()) {
        Ok(d) if !d.is_zero() => Ok(d),
        Ok(_) => Err("must be longer than zero".into()),
        Err(e) => Err(format!(
            "is not a duration ({e}); write e.g. 90s, 45m or 2h"
        )),
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

impl Source {
    /// The short name `weft config --json` gives it.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Flag => "flag",
            Source::Env(_) => "env",
            Source::Project(_) => "project",
            Source::User(_) => "user",
            Source::Default => "default",
        }
    }
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

/// What `weft run` does by default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunSettings {
    /// The runner of tasks and plans that name none.
    pub runner: String,
    pub parallel: u32,
    pub halt_on_failure: bool,
}

/// Where tasks work.
#[derive(Debug, Clone)]
pub struct IsolationSettings {
    /// Isolated runs unless asked otherwise.
    pub enabled: bool,
    /// The repositories of a multi-repo workspace (empty: every one a level down).
    pub repos: Vec<String>,
    pub keep_worktrees: bool,
    /// Land symlinks that point outside the worktree (`outside_symlinks = "allow"`).
    pub allow_outside_symlinks: bool,
    /// How a fresh worktree is made runnable: `setup` when set, else `links`.
    pub runnable: Runnable,
}

/// Bounds on one attempt and on waiting for the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitSettings {
    pub task_timeout: Duration,
    /// Characters of an agent's final answer weft keeps.
    pub answer_chars: usize,
    pub busy_timeout: Duration,
}

/// How a running agent is watched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupervisionSettings {
    pub idle_after: Duration,
    /// Zero: off. Longer than `idle_after` otherwise.
    pub idle_timeout: Duration,
    pub marker_grace: Duration,
    /// Whether attempts are confined (Landlock).
    pub confine: Confine,
    /// More writable paths for every confined runner (entries as in a manifest).
    pub write_paths: Vec<String>,
    /// More variables every process gets of weft's environment (patterns).
    pub env_pass: Vec<String>,
}

/// Who plans from a goal, and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannerSettings {
    /// `None` lets the command pick one.
    pub planner: Option<String>,
    pub turn_timeout: Duration,
    pub max_steps: usize,
}

/// What the planner may do outside its envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalSettings {
    pub mode: Mode,
    pub pre_approved: Vec<Scope>,
}

/// Who is told when something needs a person or is finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifySettings {
    pub command: Option<String>,
    pub bell: bool,
    pub desktop: bool,
}

/// What spending is priced at and allowed.
#[derive(Debug, Clone)]
pub struct SpendSettings {
    pub prices: weft_core::spend::PriceTable,
    pub budget: weft_core::spend::Budget,
}

/// How the run's integration tip is verified (issue 15).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifySettings {
    /// Empty: no verification.
    pub commands: Vec<String>,
    /// `None`: whenever the landing queue has emptied; `Some(n)`: after every n landings.
    pub batch: Option<u32>,
    pub gate: bool,
}

/// Every setting, resolved once.
#[derive(Debug, Clone)]
pub struct Settings {
    pub run: RunSettings,
    pub isolation: IsolationSettings,
    pub limits: LimitSettings,
    pub supervision: SupervisionSettings,
    pub planner: PlannerSettings,
    pub approvals: ApprovalSettings,
    pub notify: NotifySettings,
    pub spend: SpendSettings,
    pub verify: VerifySettings,
    /// Each setting's text and source, for `weft config`.
    shown: BTreeMap<&'static str, (String, Source)>,
}

/// Inputs to resolution; the caller reads the process environment, not this module.
#[derive(Debug, Default)]
pub struct Layers<'a> {
    pub flags: &'a [String],
    pub env: BTreeMap<String, String>,
    pub project_file: Option<PathBuf>,
    pub user_file: Option<PathBuf>,
}

/// The layers read, and the text and source of each setting picked so far.
struct Resolver<'a> {
    layers: &'a Layers<'a>,
    flags: BTreeMap<String, String>,
    project: BTreeMap<String, String>,
    user: BTreeMap<String, String>,
    shown: BTreeMap<&'static str, (String, Source)>,
}

impl Resolver<'_> {
    /// The value of `key` from the first layer that has it, parsed; a bad one is an error
    /// naming the key, the value and its source.
    fn get<T>(&mut self, key: &Key<T>) -> Result<T, CliError> {
        let layers = self.layers;
        let (text, source) = if let Some(value) = self.flags.get(key.name) {
            (value.clone(), Source::Flag)
        } else if let Some(value) = layers.env.get(key.env) {
            (value.clone(), Source::Env(key.env))
        } else if let Some(value) = self.project.get(key.name) {
            let path = layers.project_file.clone().unwrap_or_default();
            (value.clone(), Source::Project(path))
        } else if let Some(value) = self.user.get(key.name) {
            let path = layers.user_file.clone().unwrap_or_default();
            (value.clone(), Source::User(path))
        } else {
            (key.default.to_owned(), Source::Default)
        };
        let value = (key.parse)(&text).map_err(|problem| {
            let code = if source == Source::Flag {
                EXIT_USAGE
            } else {
                EXIT_FAILURE
            };
            CliError::new(format!(
                "setting `{}` = {text:?} from {source} {problem}",
                key.name
            ))
            .hint(format!("{}: {}", key.name, key.about))
            .with_code(code)
        })?;
        self.shown.insert(key.name, (text, source));
        Ok(value)
    }
}

impl Settings {
    pub fn resolve(layers: &Layers<'_>) -> Result<Settings, CliError> {
        let mut r = Resolver {
            layers,
            flags: parse_flags(layers.flags)?,
            project: match &layers.project_file {
                Some(path) => read_file(path)?,
                None => BTreeMap::new(),
            },
            user: match &layers.user_file {
                Some(path) => read_file(path)?,
                None => BTreeMap::new(),
            },
            shown: BTreeMap::new(),
        };
        let run = RunSettings {
            runner: r.get(&RUNNER)?,
            parallel: r.get(&PARALLEL)?,
            halt_on_failure: r.get(&HALT_ON_FAILURE)?,
        };
        let limits = LimitSettings {
            task_timeout: r.get(&TASK_TIMEOUT)?,
            answer_chars: r.get(&ANSWER_CHARS)?,
            busy_timeout: r.get(&BUSY_TIMEOUT_MS)?,
        };
        let idle_after = r.get(&IDLE_AFTER)?;
        let idle_timeout = r.get(&IDLE_TIMEOUT)?;
        if !idle_timeout.is_zero() && idle_timeout <= idle_after {
            return Err(CliError::new(format!(
                "setting `idle_timeout` = {:?} is not longer than `idle_after` = {:?}: an attempt would be ended before it is even shown as idle",
                humantime::format_duration(idle_timeout).to_string(),
                humantime::format_duration(idle_after).to_string(),
            ))
            .hint("make idle_timeout longer than idle_after (default 20m against 2m), or set idle_timeout = 0 to turn it off")
            .with_code(
                if [IDLE_AFTER.name, IDLE_TIMEOUT.name]
                    .iter()
                    .any(|name| r.shown.get(name).is_some_and(|(_, s)| *s == Source::Flag))
                {
                    EXIT_USAGE
                } else {
                    EXIT_FAILURE
                },
            ));
        }
        let supervision = SupervisionSettings {
            idle_after,
            idle_timeout,
            marker_grace: r.get(&MARKER_GRACE)?,
            confine: r.get(&CONFINE)?,
            write_paths: r.get(&WRITE_PATHS)?,
            env_pass: r.get(&ENV_PASS)?,
        };
        let enabled = r.get(&ISOLATION)?;
        let repos = r.get(&REPOS)?;
        let keep_worktrees = r.get(&KEEP_WORKTREES)?;
        let links = r.get(&LINKS)?;
        let runnable = match r.get(&SETUP)? {
            Some(command) => Runnable::Setup(command),
            None => Runnable::Link(links),
        };
        let isolation = IsolationSettings {
            enabled,
            repos,
            keep_worktrees,
            allow_outside_symlinks: r.get(&OUTSIDE_SYMLINKS)?,
            runnable,
        };
        let planner = PlannerSettings {
            planner: r.get(&PLANNER)?,
            turn_timeout: r.get(&PLANNER_TIMEOUT)?,
            max_steps: r.get(&PLANNER_MAX_STEPS)?,
        };
        let approvals = ApprovalSettings {
            mode: r.get(&APPROVALS)?,
            pre_approved: r.get(&PRE_APPROVED)?,
        };
        let notify = NotifySettings {
            command: r.get(&NOTIFY)?,
            bell: r.get(&BELL)?,
            desktop: r.get(&DESKTOP_NOTIFY)?,
        };
        let spend = SpendSettings {
            budget: weft_core::spend::Budget {
                usd: r.get(&BUDGET_USD)?,
                tokens: r.get(&BUDGET_TOKENS)?,
            },
            prices: weft_core::spend::PriceTable::default().with_overrides(r.get(&PRICES)?),
        };
        let verify = VerifySettings {
            commands: r.get(&VERIFY)?,
            batch: r.get(&VERIFY_BATCH)?,
            gate: r.get(&VERIFY_GATE)?,
        };
        debug_assert_eq!(r.shown.len(), KEYS.len(), "every key is resolved");
        Ok(Settings {
            run,
            isolation,
            limits,
            supervision,
            planner,
            approvals,
            notify,
            spend,
            verify,
            shown: r.shown,
        })
    }

    /// Every setting with its text and source, in name order.
    pub fn all(&self) -> impl Iterator<Item = (&'static str, &str, &Source)> {
        self.shown.iter().map(|(k, (v, s))| (*k, v.as_str(), s))
    }

    /// The runner of tasks and plans that name none.
    pub fn runner(&self) -> &str {
        &self.run.runner
    }

    pub fn isolation(&self) -> bool {
        self.isolation.enabled
    }

    pub fn repos(&self) -> Vec<String> {
        self.isolation.repos.clone()
    }

    pub fn answer_chars(&self) -> usize {
        self.limits.answer_chars
    }
}

/// The long help of `-c`: every setting, its variable, its default and what it does.
pub fn help() -> String {
    let mut text = String::from(
        "Override a setting for this command, e.g. `-c parallel=2`; repeat for more. Settings \
         come from -c, then the environment, then weft.toml at the workspace root, then \
         ~/.config/weft/config.toml; `weft config` shows where each one came from.\n\nSettings:",
    );
    for key in KEYS {
        text.push_str(&format!(
            "\n  {} ({}): {}",
            key.name(),
            key.env(),
            key.about()
        ));
    }
    text
}

fn known_names() -> String {
    KEYS.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
}

fn is_known(name: &str) -> bool {
    KEYS.iter().any(|k| k.name() == name)
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
        if !is_known(name) {
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
        if !is_known(&name) {
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
            // Commands may hold commas: the list is kept whole, as JSON.
            toml::Value::Array(items)
                if name == VERIFY.name && items.iter().all(toml::Value::is_str) =>
            {
                serde_json::to_string(
                    &items
                        .iter()
                        .filter_map(toml::Value::as_str)
                        .collect::<Vec<_>>(),
                )
                .unwrap_or_default()
            }
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

    fn source(settings: &Settings, name: &str) -> Source {
        settings.shown[name].1.clone()
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
        assert_eq!(settings.runner(), "exec");
        assert_eq!(source(&settings, "runner"), Source::Flag);
        assert_eq!(settings.run.parallel, 7);
        assert_eq!(source(&settings, "parallel"), Source::Env("WEFT_PARALLEL"));
        assert!(settings.run.halt_on_failure);
        assert_eq!(source(&settings, "halt_on_failure"), Source::User(user));
        assert_eq!(source(&settings, "task_timeout"), Source::Default);
    }

    #[test]
    fn the_defaults_parse_into_the_documented_values() {
        let settings = Settings::resolve(&Layers::default()).unwrap();
        assert_eq!(settings.all().count(), KEYS.len());
        assert!(settings.all().all(|(_, _, s)| *s == Source::Default));
        assert_eq!(settings.limits.task_timeout, Duration::from_secs(3600));
        assert_eq!(settings.supervision.idle_after, Duration::from_secs(120));
        assert_eq!(settings.supervision.marker_grace, Duration::from_secs(30));
        assert_eq!(settings.planner.turn_timeout, Duration::from_secs(600));
        assert_eq!(settings.limits.busy_timeout, Duration::from_millis(5000));
        assert_eq!(settings.run.parallel, 3);
        assert!(settings.isolation.enabled);
        assert!(matches!(
            &settings.isolation.runnable,
            Runnable::Link(links) if links.entries().count() == 8 && links.entries().nth(3) == Some(".env*")
        ));
        assert_eq!(settings.planner.planner, None);
        assert_eq!(settings.approvals.mode, Mode::Ask);
    }

    #[test]
    fn every_value_is_typed_once_and_kept_as_written_for_weft_config() {
        let flags = vec![
            "task_timeout=90s".to_owned(),
            "setup= make deps ".to_owned(),
            "pre_approved=path:/etc/*, command:git log".to_owned(),
            "repos=api, web,".to_owned(),
        ];
        let settings = Settings::resolve(&Layers {
            flags: &flags,
            ..Layers::default()
        })
        .unwrap();
        assert_eq!(settings.limits.task_timeout, Duration::from_secs(90));
        assert!(
            matches!(&settings.isolation.runnable, Runnable::Setup(c) if c == "make deps"),
            "{:?}",
            settings.isolation.runnable
        );
        assert_eq!(settings.approvals.pre_approved.len(), 2);
        assert_eq!(settings.repos(), ["api", "web"]);
        let shown: BTreeMap<_, _> = settings.all().map(|(k, v, _)| (k, v)).collect();
        assert_eq!(shown["task_timeout"], "90s");
        assert_eq!(shown["repos"], "api, web,");
    }

    /// A bad value from each source is refused, naming the key, the value and the source;
    /// no source falls back to the default.
    #[test]
    fn a_bad_value_from_any_source_names_key_value_and_source() {
        let dir = tempfile::tempdir().unwrap();
        let flags = vec!["task_timeout=soon".to_owned()];
        let from_flag = Settings::resolve(&Layers {
            flags: &flags,
            ..Layers::default()
        })
        .unwrap_err();
        assert!(
            from_flag.message.starts_with(
                "setting `task_timeout` = \"soon\" from command line (-c) is not a duration"
            ),
            "{}",
            from_flag.message
        );
        assert_eq!(from_flag.code, EXIT_USAGE);

        let from_env = Settings::resolve(&Layers {
            env: BTreeMap::from([("WEFT_IDLE_AFTER".to_owned(), "0s".to_owned())]),
            ..Layers::default()
        })
        .unwrap_err();
        assert_eq!(
            from_env.message,
            "setting `idle_after` = \"0s\" from environment (WEFT_IDLE_AFTER) must be longer than zero"
        );
        assert_eq!(from_env.code, EXIT_FAILURE);

        let idle = Settings::resolve(&Layers {
            env: BTreeMap::from([("WEFT_IDLE_TIMEOUT".to_owned(), "1m".to_owned())]),
            ..Layers::default()
        })
        .unwrap_err();
        assert!(
            idle.message
                .contains("`idle_timeout` = \"1m\" is not longer than `idle_after` = \"2m\""),
            "{}",
            idle.message
        );
        assert!(
            idle.hints[0].contains("idle_timeout = 0"),
            "{:?}",
            idle.hints
        );
        let off = Settings::resolve(&Layers {
            env: BTreeMap::from([("WEFT_IDLE_TIMEOUT".to_owned(), "0".to_owned())]),
            ..Layers::default()
        })
        .unwrap();
        assert_eq!(off.supervision.idle_timeout, Duration::ZERO);
        assert_eq!(
            Settings::resolve(&Layers::default())
                .unwrap()
                .supervision
                .idle_timeout,
            Duration::from_secs(20 * 60)
        );

        let project = write(dir.path(), "weft.toml", "marker_grace = \"a while\"\n");
        let from_project = Settings::resolve(&Layers {
            project_file: Some(project.clone()),
            ..Layers::default()
        })
        .unwrap_err();
        assert!(
            from_project.message.starts_with(&format!(
                "setting `marker_grace` = \"a while\" from project ({}) is not a duration",
                project.display()
            )),
            "{}",
            from_project.message
        );

        let user = write(dir.path(), "user.toml", "planner_timeout = 5\n");
        let from_user = Settings::resolve(&Layers {
            user_file: Some(user.clone()),
            ..Layers::default()
        })
        .unwrap_err();
        assert!(
            from_user.message.starts_with(&format!(
                "setting `planner_timeout` = \"5\" from user ({}) is not a duration",
                user.display()
            )),
            "{}",
            from_user.message
        );
        assert_eq!(
            from_user.hints,
            [format!("planner_timeout: {}", PLANNER_TIMEOUT.about)]
        );
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
