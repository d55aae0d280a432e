//! Runner manifests: how an agent CLI is started.
//!
//! A manifest is a TOML file (unknown fields are refused):
//!
//! ```toml
//! name = "myagent"            # optional in a file: defaults to the file stem, and must equal it
//! command = "myagent"         # a bare name is looked up on PATH; anything with a `/` is a path
//! args = ["run", "{{if model}}", "--model", "{{model}}", "{{/if}}", "{{prompt}}"]
//! prompt_via = "arg"          # arg (default) | stdin | file | env
//! version_args = ["--version"]  # default; literal strings, not a template
//! stream = "plain"            # plain (default) | claude-stream-json | codex-json | opencode-json
//! needs_tty = false           # default false
//! marker = true               # default true; false: no completion marker, the exit code decides
//! install = "npm i -g myagent"  # optional: how to install the CLI, shown when it is missing
//! transcript = "claude-code"      # optional: claude-code | codex | opencode, whose session store to read
//!
//! [modes]                     # task mode id -> value of {{mode}}
//! default = "auto"            # used when a task names no mode
//! plan = "read-only"
//!
//! env_pass = ["MYAGENT_*", "*_API_KEY"]  # what it gets of weft's environment, beyond the base
//! write_paths = ["${MYAGENT_HOME:-~/.myagent}"]  # its own state folders, writable when confined
//!
//! [env]                       # set for it (never filtered); values are templates
//! SOME_VAR = "{{model}}"
//!
//! [root_env]                  # added only when weft runs as root (uid 0)
//! IS_SANDBOX = "1"
//! ```
//!
//! `args`, `env` and `root_env` values use the engine in [`crate::template`]: variables
//! `{{prompt}}`, `{{prompt_file}}`, `{{model}}`, `{{effort}}`, `{{mode}}`, `{{cwd}}`,
//! `{{session_id}}`, `{{relay}}`, `{{resume}}`, `{{system}}`, `{{confined}}`, and in `args` whole-entry conditionals `{{if X}}`, `{{if !X}}`,
//! `{{if X=v}}`, `{{if X!=v}}` … `{{/if}}` (e.g. `{{if mode!=plan}}` for a flag every mode
//! but plan gets). An argv entry that is exactly one unset variable is dropped. An env value
//! that is exactly one unset variable is left out; a larger env value with an unset
//! variable is a launch error, as for argv entries.
//!
//! Decisions:
//! - **The environment is an allow-list** (see [`crate::contain::env`]): a runner gets
//!   the base (`PATH`, `HOME`, `LANG`, `WEFT_*`, …), the variables its `env_pass`
//!   patterns name and those of the user's `env_pass` setting, then its `[env]`. A
//!   manifest without `env_pass` gets only the base and the setting's.
//! - **Relative command paths** (a `command` containing `/` that is not absolute) resolve
//!   against the folder holding the manifest file, so a manifest and its wrapper script
//!   can travel together; `~` is not expanded (refused, with a hint). A bare name is looked
//!   up on `PATH` when the runner is started or checked.
//! - **Name and file stem must agree.** `name` may be left out of a file (it is then the
//!   stem); when given, a different name is an error. This keeps one manifest per name per
//!   folder and makes "which file defines runner X" obvious.
//! - **Override order**: built-ins, then user manifests (`~/.config/weft/runners/*.toml`),
//!   then workspace manifests (`<workspace>/.weft/runners/*.toml`). A later manifest with
//!   the same name replaces the earlier one entirely (a built-in name may be overridden,
//!   e.g. to point `claude-code` at another binary). Within a folder, files load in file
//!   name order; a broken file is reported and skipped and does not affect the others (an
//!   earlier manifest of the same name stays in force).
//! - **Modes**: a task's mode id is looked up in `modes`; `default` is used when the task
//!   names none (if there is no `default`, `{{mode}}` is unset). A mode the manifest does not
//!   list is a launch error naming the runner, the mode and the known modes.
//! - **Prompt delivery** must be consistent: `prompt_via = "arg"` requires `{{prompt}}` in
//!   `args` or `env`; `"file"` requires `{{prompt_file}}` there, and `{{prompt_file}}` is only
//!   allowed with `"file"`; `"env"` sets `WEFT_PROMPT` itself, so `env` may not.

use std::fmt;
use std::path::{Component, Path, PathBuf};

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

use crate::event::StreamKind;
use crate::template::{RenderError, Template, TemplateError, Var, Vars};

/// The environment variable that carries the prompt for `prompt_via = "env"`.
pub const PROMPT_ENV: &str = "WEFT_PROMPT";

/// The `modes` key used when a task names no mode.
pub const DEFAULT_MODE: &str = "default";

/// The `modes` key of a runner's read-only mode: every built-in agent has it (Claude
/// Code's plan permission mode, Codex's read-only sandbox, OpenCode's plan agent), and the
/// planner runs its turns in it.
pub const PLAN_MODE: &str = "plan";

/// Linux refuses any single argv or environment string longer than this (MAX_ARG_STRLEN,
/// 32 pages, including the terminating NUL) with E2BIG.
pub const MAX_ARG_BYTES: usize = 32 * 4096 - 1;

/// The built-in manifests, in picker order.
const BUILTINS: [(&str, &str); 4] = [
    ("claude-code", include_str!("builtin/claude-code.toml")),
    ("codex", include_str!("builtin/codex.toml")),
    ("opencode", include_str!("builtin/opencode.toml")),
    ("exec", include_str!("builtin/exec.toml")),
];

/// Names of the built-in runners, in picker order.
pub fn builtin_names() -> impl Iterator<Item = &'static str> {
    BUILTINS.iter().map(|(name, _)| *name)
}

/// The TOML source of a built-in manifest (a starting point for an override).
pub fn builtin_source(name: &str) -> Option<&'static str> {
    BUILTINS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, text)| *text)
}

/// Where workspace manifests live: `<workspace>/.weft/runners`.
pub fn workspace_runners_dir(workspace: &Path) -> PathBuf {
    workspace.join(".weft").join("runners")
}

/// Where user manifests live, given weft's user config folder (`~/.config/weft`):
/// `<config>/runners`.
pub fn user_runners_dir(config_dir: &Path) -> PathBuf {
    config_dir.join("runners")
}

/// How the prompt reaches the agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromptVia {
    /// Through `{{prompt}}` in `args` (or `env`). Linux limits one argument to 128 KiB.
    #[default]
    Arg,
    /// Written to stdin, which is then closed.
    Stdin,
    /// Written to a file before the start; `{{prompt_file}}` names it.
    File,
    /// In the environment variable `WEFT_PROMPT`.
    Env,
}

impl PromptVia {
    fn as_str(self) -> &'static str {
        match self {
            PromptVia::Arg => "arg",
            PromptVia::Stdin => "stdin",
            PromptVia::File => "file",
            PromptVia::Env => "env",
        }
    }
}

/// Where a manifest came from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Origin {
    /// Shipped inside weft.
    BuiltIn,
    /// `<workspace>/.weft/runners/<name>.toml`.
    Workspace(PathBuf),
    /// `~/.config/weft/runners/<name>.toml`.
    User(PathBuf),
}

impl Origin {
    /// The manifest file, for manifests that have one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Origin::BuiltIn => None,
            Origin::Workspace(p) | Origin::User(p) => Some(p),
        }
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::BuiltIn => f.write_str("built-in"),
            Origin::Workspace(p) => write!(f, "workspace manifest {}", p.display()),
            Origin::User(p) => write!(f, "user manifest {}", p.display()),
        }
    }
}

/// A manifest that could not be read, validated or launched. Every message names the
/// manifest (its file, or the built-in) and the field or value at fault.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    // The OS error is in the message and deliberately not a `source()` (these errors are
    // shown as one-line warnings; a front end printing the source chain would repeat it).
    #[error("cannot read runner manifest {}: {error}", path.display())]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot list runner manifests in {}: {error}", dir.display())]
    ReadDir { dir: PathBuf, error: std::io::Error },
    /// TOML syntax, an unknown field, a value of the wrong type or an unknown enum value.
    #[error("runner manifest {file}: {message}")]
    Syntax { file: String, message: String },
    /// A field whose value is not acceptable.
    #[error("runner manifest {file}: {field} = {value:?}: {problem}")]
    Invalid {
        file: String,
        field: String,
        value: String,
        problem: String,
    },
    /// A template entry that does not parse; `place` is e.g. `args[3]` or `env.PWD`.
    #[error("runner manifest {file}: {place} {text:?}: {problem}")]
    Template {
        file: String,
        place: String,
        text: String,
        problem: String,
    },
    /// The task asked for a mode the runner does not list.
    #[error(
        "runner `{runner}` has no mode `{mode}`; {}",
        if known.is_empty() {
            format!("it defines no modes ({file})")
        } else {
            format!("known modes: {} ({file})", known.join(", "))
        }
    )]
    UnknownMode {
        runner: String,
        file: String,
        mode: String,
        known: Vec<String>,
    },
    /// An entry mixes text with a variable this task leaves unset.
    #[error(
        "runner `{runner}` ({file}): {place} {text:?} needs {{{{{var}}}}}, which this task \
         does not set; guard the entry with \"{{{{if {var}}}}}\" … \"{{{{/if}}}}\""
    )]
    UnsetVariable {
        runner: String,
        file: String,
        place: String,
        text: String,
        var: Var,
    },
    /// Something about this launch's values cannot be passed to a process.
    #[error("runner `{runner}` ({file}): cannot start it: {problem}")]
    Launch {
        runner: String,
        file: String,
        problem: String,
    },
}

/// The values one launch fills the templates with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LaunchVars {
    /// The composed prompt.
    pub prompt: String,
    /// Where to write the prompt for `prompt_via = "file"` (required then, ignored
    /// otherwise).
    pub prompt_file: Option<PathBuf>,
    pub model: Option<String>,
    pub effort: Option<String>,
    /// The task's mode id, or `None` for the manifest's `default`.
    pub mode: Option<String>,
    pub cwd: PathBuf,
    pub session_id: String,
    /// weft runs as uid 0: `root_env` applies.
    pub running_as_root: bool,
    /// weft can answer permission requests (the `relay` applies in a `relay_modes` mode).
    pub relay: bool,
    /// weft confines the process with its Landlock ruleset (`{{confined}}` is set).
    pub confined: bool,
}

/// What a launch that continues a conversation adds (the planner's turns): the CLI
/// session to resume and the text for its system prompt. A task's attempt sets neither.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnVars {
    /// `{{resume}}`: the CLI's own session id to continue.
    pub resume: Option<String>,
    /// `{{system}}`: instructions for the CLI's system prompt, when the manifest takes them
    /// as an option (`Manifest::renders(Var::System)`).
    pub system: Option<String>,
}

/// Everything the supervisor needs to start one runner process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaunchSpec {
    /// The manifest's command: a bare name (look it up on PATH) or an absolute path.
    pub program: String,
    pub args: Vec<String>,
    /// Added on top of weft's own environment, in order; names are unique.
    pub env: Vec<(String, String)>,
    /// The prompt when `prompt_via = "stdin"` (write it, then close stdin). `None` means
    /// stdin is `/dev/null`.
    pub stdin: Option<String>,
    /// Write this file (path, contents) before starting, for `prompt_via = "file"`.
    pub prompt_file: Option<(PathBuf, String)>,
    pub cwd: PathBuf,
    pub needs_tty: bool,
    pub stream: StreamKind,
    /// Whether the runner is given a completion marker (false for `exec`: its exit code
    /// decides).
    pub receives_marker: bool,
    /// Its permission requests are relayed: stdin stays open for the answers (the prompt
    /// goes first, in the protocol's form).
    pub relay: Option<RelayProtocol>,
}

/// `[modes]`, `[env]` and `[root_env]`: string tables kept in file order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct StringTable(Vec<(String, String)>);

impl<'de> Deserialize<'de> for StringTable {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct TableVisitor;
        impl<'de> Visitor<'de> for TableVisitor {
            type Value = StringTable;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a table of strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StringTable, A::Error> {
                let mut entries = Vec::new();
                while let Some((key, value)) = map.next_entry::<String, String>()? {
                    entries.push((key, value));
                }
                Ok(StringTable(entries))
            }
        }
        deserializer.deserialize_map(TableVisitor)
    }
}

fn default_version_args() -> Vec<String> {
    vec!["--version".to_owned()]
}

fn default_true() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawManifest {
    name: Option<String>,
    command: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    prompt_via: PromptVia,
    #[serde(default = "default_version_args")]
    version_args: Vec<String>,
    #[serde(default)]
    stream: StreamKind,
    #[serde(default)]
    needs_tty: bool,
    #[serde(default)]
    modes: StringTable,
    #[serde(default)]
    env: StringTable,
    #[serde(default)]
    root_env: StringTable,
    #[serde(default = "default_true")]
    marker: bool,
    install: Option<String>,
    transcript: Option<String>,
    relay: Option<String>,
    #[serde(default)]
    relay_modes: Vec<String>,
    #[serde(default)]
    write_paths: Vec<String>,
    #[serde(default)]
    env_pass: Vec<String>,
}

/// How weft answers an agent's permission requests when it relays them to a person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelayProtocol {
    /// Claude Code's `--permission-prompt-tool stdio` with `--input-format stream-json`:
    /// `control_request` lines on stdout, `control_response` lines on stdin
    /// (reference/agent-clis.md §1.5).
    ClaudeStdio,
}

impl RelayProtocol {
    pub fn parse(name: &str) -> Option<RelayProtocol> {
        match name {
            "claude-stdio" => Some(RelayProtocol::ClaudeStdio),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
struct EnvEntry {
    name: String,
    text: String,
    template: Template,
}

/// A validated runner manifest.
#[derive(Debug, Clone)]
pub struct Manifest {
    name: String,
    command: String,
    args: Vec<String>,
    args_template: Template,
    prompt_via: PromptVia,
    version_args: Vec<String>,
    stream: StreamKind,
    needs_tty: bool,
    modes: Vec<(String, String)>,
    env: Vec<EnvEntry>,
    root_env: Vec<EnvEntry>,
    marker: bool,
    install: Option<String>,
    /// Which agent store holds this runner's session transcripts.
    transcript: Option<crate::transcript::Store>,
    /// How the agent's permission requests reach weft, and in which task modes.
    relay: Option<RelayProtocol>,
    relay_modes: Vec<String>,
    /// Where the agent keeps its own state, writable when confined (entries as written:
    /// `~/`, `$NAME`, `${NAME:-fallback}`; see [`crate::contain::resolve_write_path`]).
    write_paths: Vec<String>,
    /// Patterns of the variables of weft's environment it gets beyond the base (see
    /// [`crate::contain::env`]).
    env_pass: Vec<String>,
    /// The file it was read from (`None` for built-ins and inline text).
    file: Option<PathBuf>,
    /// How messages name this manifest.
    label: String,
}

impl Manifest {
    /// Read and validate a manifest file. Its stem is the runner name.
    pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
        let text = fs_err::read_to_string(path).map_err(|error| ManifestError::Read {
            path: path.to_owned(),
            error,
        })?;
        Manifest::parse(&text, Some(path))
    }

    /// Validate manifest text. With `file`, the name defaults to (and must equal) the file
    /// stem and relative command paths resolve against the file's folder; without it,
    /// `name` is required.
    pub fn parse(text: &str, file: Option<&Path>) -> Result<Manifest, ManifestError> {
        let label = match file {
            Some(path) => path.display().to_string(),
            None => "<inline>".to_owned(),
        };
        Manifest::parse_labelled(text, file, label)
    }

    /// A built-in manifest by name.
    pub fn builtin(name: &str) -> Option<Manifest> {
        let text = builtin_source(name)?;
        let manifest = Manifest::parse_labelled(text, None, format!("built-in runner {name}"))
            .unwrap_or_else(|e| panic!("the built-in manifest {name} is valid: {e}"));
        Some(manifest)
    }

    fn parse_labelled(
        text: &str,
        file: Option<&Path>,
        label: String,
    ) -> Result<Manifest, ManifestError> {
        let raw: RawManifest = toml::from_str(text).map_err(|e| ManifestError::Syntax {
            file: label.clone(),
            message: e.to_string().trim_end().to_owned(),
        })?;
        Validator { label: &label }.build(raw, file, label.clone())
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The command as it will be started: a bare name (looked up on PATH) or a path
    /// (relative paths in a file were already made absolute).
    pub fn command(&self) -> &str {
        &self.command
    }

    /// The argv template as written.
    pub fn args(&self) -> &[String] {
        &self.args
    }

    pub fn prompt_via(&self) -> PromptVia {
        self.prompt_via
    }

    pub fn version_args(&self) -> &[String] {
        &self.version_args
    }

    pub fn stream(&self) -> StreamKind {
        self.stream
    }

    pub fn needs_tty(&self) -> bool {
        self.needs_tty
    }

    /// Whether the runner receives a completion marker.
    pub fn marker(&self) -> bool {
        self.marker
    }

    /// How to install the CLI, when the manifest says.
    pub fn install(&self) -> Option<&str> {
        self.install.as_deref()
    }

    /// Which agent store holds this runner's session transcripts, if any.
    pub fn transcript(&self) -> Option<crate::transcript::Store> {
        self.transcript
    }

    /// The relay protocol, when the runner can hand its permission requests to weft.
    pub fn relay(&self) -> Option<RelayProtocol> {
        self.relay
    }

    /// Whether a task in `mode` (its id; `None` is `default`) has its permission requests
    /// relayed.
    pub fn relays(&self, mode: Option<&str>) -> bool {
        let id = mode.filter(|m| !m.is_empty()).unwrap_or(DEFAULT_MODE);
        self.relay.is_some() && self.relay_modes.iter().any(|m| m == id)
    }

    /// `(mode id, value)` pairs in file order.
    /// The agent's own state folders, as written (resolve each with
    /// [`crate::contain::resolve_write_path`]).
    pub fn write_paths(&self) -> &[String] {
        &self.write_paths
    }

    /// Patterns of the variables of weft's environment this runner gets beyond
    /// [`crate::contain::env::BASE`].
    pub fn env_pass(&self) -> &[String] {
        &self.env_pass
    }

    pub fn modes(&self) -> impl Iterator<Item = (&str, &str)> {
        self.modes.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The value a mode id maps to.
    pub fn mode_value(&self, mode: &str) -> Option<&str> {
        self.modes
            .iter()
            .find(|(k, _)| k == mode)
            .map(|(_, v)| v.as_str())
    }

    /// `(name, value template)` pairs of `[env]`, in file order.
    pub fn env(&self) -> impl Iterator<Item = (&str, &str)> {
        self.env.iter().map(|e| (e.name.as_str(), e.text.as_str()))
    }

    /// `(name, value template)` pairs of `[root_env]`, in file order.
    pub fn root_env(&self) -> impl Iterator<Item = (&str, &str)> {
        self.root_env
            .iter()
            .map(|e| (e.name.as_str(), e.text.as_str()))
    }

    /// The file this manifest was read from.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// How messages name this manifest: its path, or `built-in runner <name>`.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Whether a launch passes `var` to the CLI (its args or env render it): e.g. a CLI
    /// that renders `{{session_id}}` takes a session id chosen up front, one that renders
    /// `{{system}}` takes system-prompt text as an option (otherwise a caller with
    /// instructions puts them in the first message of a session).
    pub fn renders(&self, var: Var) -> bool {
        self.args_template.renders(var) || self.env.iter().any(|e| e.template.renders(var))
    }

    /// Render everything needed to start this runner for one attempt.
    pub fn launch(&self, vars: &LaunchVars) -> Result<LaunchSpec, ManifestError> {
        self.launch_turn(vars, &TurnVars::default())
    }

    /// [`Manifest::launch`] for a turn of a conversation: `turn` fills `{{resume}}` and
    /// `{{system}}`.
    pub fn launch_turn(
        &self,
        vars: &LaunchVars,
        turn: &TurnVars,
    ) -> Result<LaunchSpec, ManifestError> {
        let mode = self.resolve_mode(vars.mode.as_deref())?;
        let prompt_file = match self.prompt_via {
            PromptVia::File => Some(vars.prompt_file.clone().ok_or_else(|| {
                self.launch_error(
                    "prompt_via = \"file\" but no prompt file path was given for this launch"
                        .to_owned(),
                )
            })?),
            _ => None,
        };

        let relay = (vars.relay && self.relays(vars.mode.as_deref()))
            .then_some(self.relay)
            .flatten();
        let mut tv = Vars::new();
        tv.set(Var::Relay, relay.map(|_| "1"));
        tv.set(Var::Confined, vars.confined.then_some("1"));
        tv.set(Var::Prompt, Some(vars.prompt.as_str()))
            .set(Var::Model, vars.model.as_deref())
            .set(Var::Effort, vars.effort.as_deref())
            .set(Var::Mode, mode)
            .set(Var::Cwd, Some(self.path_str("cwd", &vars.cwd)?))
            .set(Var::SessionId, Some(vars.session_id.as_str()))
            .set(Var::Resume, turn.resume.as_deref())
            .set(Var::System, turn.system.as_deref());
        if let Some(path) = &prompt_file {
            tv.set(Var::PromptFile, Some(self.path_str("prompt file", path)?));
        }

        let args = self
            .args_template
            .render(&tv)
            .map_err(|e| self.unset(e, |i| format!("args[{i}]")))?;

        let mut env: Vec<(String, String)> = Vec::new();
        let mut put = |name: &str, value: String| {
            env.retain(|(n, _)| n != name);
            env.push((name.to_owned(), value));
        };
        let tables: [(&[EnvEntry], &str); 2] = [(&self.env, "env"), (&self.root_env, "root_env")];
        for (entries, table) in tables {
            if table == "root_env" && !vars.running_as_root {
                continue;
            }
            for entry in entries {
                let value = entry
                    .template
                    .render_value(&tv)
                    .map_err(|e| self.unset(e, |_| format!("{table}.{}", entry.name)))?;
                if let Some(value) = value {
                    put(&entry.name, value);
                }
            }
        }
        if self.prompt_via == PromptVia::Env {
            put(PROMPT_ENV, vars.prompt.clone());
        }

        self.check_passable(&args, &env)?;

        Ok(LaunchSpec {
            program: self.command.clone(),
            args,
            env,
            stdin: (self.prompt_via == PromptVia::Stdin).then(|| vars.prompt.clone()),
            prompt_file: prompt_file.map(|path| (path, vars.prompt.clone())),
            cwd: vars.cwd.clone(),
            needs_tty: self.needs_tty,
            stream: self.stream,
            receives_marker: self.marker,
            relay,
        })
    }

    fn resolve_mode(&self, mode: Option<&str>) -> Result<Option<&str>, ManifestError> {
        match mode.filter(|m| !m.is_empty()) {
            None => Ok(self.mode_value(DEFAULT_MODE)),
            Some(id) => self
                .mode_value(id)
                .map(Some)
                .ok_or_else(|| ManifestError::UnknownMode {
                    runner: self.name.clone(),
                    file: self.label.clone(),
                    mode: id.to_owned(),
                    known: self.modes.iter().map(|(k, _)| k.clone()).collect(),
                }),
        }
    }

    fn path_str<'p>(&self, what: &str, path: &'p Path) -> Result<&'p str, ManifestError> {
        path.to_str().ok_or_else(|| {
            self.launch_error(format!("the {what} {} is not valid UTF-8", path.display()))
        })
    }

    fn check_passable(
        &self,
        args: &[String],
        env: &[(String, String)],
    ) -> Result<(), ManifestError> {
        for (i, arg) in args.iter().enumerate() {
            if arg.contains('\0') {
                return Err(self.launch_error(format!("args[{i}] contains a NUL byte")));
            }
            if arg.len() > MAX_ARG_BYTES {
                return Err(self.launch_error(format!(
                    "args[{i}] is {} bytes, over the system limit of {MAX_ARG_BYTES} for one \
                     argument; deliver the prompt by stdin or file instead",
                    arg.len()
                )));
            }
        }
        for (name, value) in env {
            if value.contains('\0') {
                return Err(
                    self.launch_error(format!("environment variable {name} contains a NUL byte"))
                );
            }
            if name.len() + 1 + value.len() > MAX_ARG_BYTES {
                return Err(self.launch_error(format!(
                    "environment variable {name} is {} bytes, over the system limit of \
                     {MAX_ARG_BYTES}; deliver the prompt by stdin or file instead",
                    value.len()
                )));
            }
        }
        Ok(())
    }

    fn launch_error(&self, problem: String) -> ManifestError {
        ManifestError::Launch {
            runner: self.name.clone(),
            file: self.label.clone(),
            problem,
        }
    }

    fn unset(&self, e: RenderError, place: impl Fn(usize) -> String) -> ManifestError {
        ManifestError::UnsetVariable {
            runner: self.name.clone(),
            file: self.label.clone(),
            place: place(e.index),
            text: e.text,
            var: e.var,
        }
    }
}

struct Validator<'a> {
    label: &'a str,
}

impl Validator<'_> {
    fn invalid(&self, field: &str, value: &str, problem: impl Into<String>) -> ManifestError {
        ManifestError::Invalid {
            file: self.label.to_owned(),
            field: field.to_owned(),
            value: value.to_owned(),
            problem: problem.into(),
        }
    }

    fn template(&self, place: String, e: TemplateError) -> ManifestError {
        ManifestError::Template {
            file: self.label.to_owned(),
            place,
            text: e.text,
            problem: e.problem,
        }
    }

    fn build(
        &self,
        raw: RawManifest,
        file: Option<&Path>,
        label: String,
    ) -> Result<Manifest, ManifestError> {
        let name = self.name(raw.name, file)?;
        let command = self.command(&raw.command, file)?;

        let args_template = Template::parse(&raw.args).map_err(|e| {
            let place = format!("args[{}]", e.index);
            self.template(place, e)
        })?;

        for (i, arg) in raw.version_args.iter().enumerate() {
            if arg.contains("{{") {
                return Err(self.invalid(
                    &format!("version_args[{i}]"),
                    arg,
                    "version_args are passed as written; they are not a template",
                ));
            }
        }

        for (id, value) in &raw.modes.0 {
            if id.trim().is_empty() {
                return Err(self.invalid("modes", id, "a mode id cannot be empty"));
            }
            if value.is_empty() {
                return Err(self.invalid(
                    &format!("modes.{id}"),
                    value,
                    "a mode value cannot be empty",
                ));
            }
        }

        let env = self.env_table("env", raw.env)?;
        let root_env = self.env_table("root_env", raw.root_env)?;

        let renders =
            |var: Var| args_template.renders(var) || env.iter().any(|e| e.template.renders(var));
        let uses = |var: Var| {
            args_template.uses(var) || env.iter().chain(&root_env).any(|e| e.template.uses(var))
        };

        let via = raw.prompt_via;
        match via {
            PromptVia::Arg if !renders(Var::Prompt) => {
                return Err(self.invalid(
                    "prompt_via",
                    via.as_str(),
                    "args never use {{prompt}}, so the agent would not get the prompt; add \
                     \"{{prompt}}\" to args or set prompt_via to stdin, file or env",
                ));
            }
            PromptVia::File if !renders(Var::PromptFile) => {
                return Err(self.invalid(
                    "prompt_via",
                    via.as_str(),
                    "args never use {{prompt_file}}, so the agent would not find the prompt \
                     file; add \"{{prompt_file}}\" to args",
                ));
            }
            PromptVia::File => {}
            _ if uses(Var::PromptFile) => {
                return Err(self.invalid(
                    "prompt_via",
                    via.as_str(),
                    "{{prompt_file}} is only set when prompt_via = \"file\"",
                ));
            }
            _ => {}
        }
        if via == PromptVia::Env
            && let Some(e) = env.iter().chain(&root_env).find(|e| e.name == PROMPT_ENV)
        {
            return Err(self.invalid(
                &format!("env.{}", e.name),
                &e.text,
                "prompt_via = \"env\" sets WEFT_PROMPT itself",
            ));
        }
        if !raw.modes.0.is_empty() && !uses(Var::Mode) {
            return Err(self.invalid(
                "modes",
                &raw.modes
                    .0
                    .iter()
                    .map(|(k, _)| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
                "modes are defined but no args or env entry uses {{mode}}",
            ));
        }
        if let Some(install) = &raw.install
            && install.trim().is_empty()
        {
            return Err(self.invalid("install", install, "leave it out instead of empty"));
        }
        let transcript = match &raw.transcript {
            None => None,
            Some(name) => Some(crate::transcript::Store::parse(name).ok_or_else(|| {
                self.invalid(
                    "transcript",
                    name,
                    "known transcript stores: claude-code, codex, opencode",
                )
            })?),
        };

        let relay = match &raw.relay {
            None => None,
            Some(name) => {
                let protocol = RelayProtocol::parse(name)
                    .ok_or_else(|| self.invalid("relay", name, "known protocols: claude-stdio"))?;
                if via != PromptVia::Stdin || raw.stream != StreamKind::ClaudeStreamJson {
                    return Err(self.invalid(
                        "relay",
                        name,
                        "claude-stdio needs prompt_via = \"stdin\" and stream = \"claude-stream-json\"",
                    ));
                }
                Some(protocol)
            }
        };
        for mode in &raw.relay_modes {
            if relay.is_none() {
                return Err(self.invalid("relay_modes", mode, "set `relay` to say how"));
            }
            if !raw.modes.0.iter().any(|(id, _)| id == mode) {
                return Err(self.invalid(
                    "relay_modes",
                    mode,
                    "every relayed mode must be one of the manifest's [modes]",
                ));
            }
        }

        for entry in &raw.write_paths {
            let unset = |_: &str| None;
            if let Err(e) = crate::contain::resolve_write_path(entry, None, &unset) {
                return Err(self.invalid("write_paths", entry, e.to_string()));
            }
        }
        for pattern in &raw.env_pass {
            if let Err(problem) = crate::contain::env::check_pattern(pattern) {
                return Err(self.invalid("env_pass", pattern, problem));
            }
        }
        Ok(Manifest {
            relay,
            relay_modes: raw.relay_modes,
            write_paths: raw.write_paths,
            env_pass: raw.env_pass,
            name,
            command,
            args: raw.args,
            args_template,
            prompt_via: via,
            version_args: raw.version_args,
            stream: raw.stream,
            needs_tty: raw.needs_tty,
            modes: raw.modes.0,
            env,
            root_env,
            marker: raw.marker,
            install: raw.install,
            transcript,
            file: file.map(Path::to_owned),
            label,
        })
    }

    fn name(&self, name: Option<String>, file: Option<&Path>) -> Result<String, ManifestError> {
        let stem = match file {
            Some(path) => Some(
                path.file_stem()
                    .and_then(|s| s.to_str())
                    .ok_or_else(|| {
                        self.invalid(
                            "name",
                            &path.display().to_string(),
                            "the file name is not valid UTF-8",
                        )
                    })?
                    .to_owned(),
            ),
            None => None,
        };
        let name = match (name, stem) {
            (Some(name), Some(stem)) if name != stem => {
                return Err(self.invalid(
                    "name",
                    &name,
                    format!(
                        "differs from the file name {stem}.toml; a manifest's name is its file \
                         stem (rename the file or the name, or leave name out)"
                    ),
                ));
            }
            (Some(name), _) => name,
            (None, Some(stem)) => stem,
            (None, None) => return Err(self.invalid("name", "", "missing")),
        };
        let well_formed = !name.is_empty()
            && name.len() <= 64
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
            && name.starts_with(|c: char| c.is_ascii_alphanumeric())
            && name.ends_with(|c: char| c.is_ascii_alphanumeric());
        if !well_formed {
            return Err(self.invalid(
                "name",
                &name,
                "a runner name is 1 to 64 ASCII letters, digits, '.', '_' or '-', starting and \
                 ending with a letter or digit",
            ));
        }
        Ok(name)
    }

    fn command(&self, command: &str, file: Option<&Path>) -> Result<String, ManifestError> {
        if command.trim().is_empty() {
            return Err(self.invalid("command", command, "is empty; name the program to run"));
        }
        if command.contains('\0') {
            return Err(self.invalid("command", command, "contains a NUL byte"));
        }
        if command.trim() != command {
            return Err(self.invalid("command", command, "has leading or trailing whitespace"));
        }
        if !command.contains('/') {
            if command.contains(char::is_whitespace) {
                return Err(self.invalid(
                    "command",
                    command,
                    "is one program name; put its arguments in args",
                ));
            }
            return Ok(command.to_owned());
        }
        if command.starts_with('~') {
            return Err(self.invalid(
                "command",
                command,
                "~ is not expanded; use an absolute path or one relative to the manifest's folder",
            ));
        }
        let path = Path::new(command);
        let Some(dir) = file.and_then(Path::parent).filter(|_| path.is_relative()) else {
            return Ok(command.to_owned());
        };
        let joined: PathBuf = dir
            .join(path)
            .components()
            .filter(|c| !matches!(c, Component::CurDir))
            .collect();
        joined
            .into_os_string()
            .into_string()
            .map_err(|_| self.invalid("command", command, "the resolved path is not valid UTF-8"))
    }

    fn env_table(&self, table: &str, entries: StringTable) -> Result<Vec<EnvEntry>, ManifestError> {
        entries
            .0
            .into_iter()
            .map(|(name, text)| {
                if name.is_empty() || name.contains(['=', '\0']) {
                    return Err(self.invalid(
                        &format!("{table}.{name}"),
                        &text,
                        "an environment variable name cannot be empty or contain '=' or NUL",
                    ));
                }
                let template = Template::parse_value(&text)
                    .map_err(|e| self.template(format!("{table}.{name}"), e))?;
                Ok(EnvEntry {
                    name,
                    text,
                    template,
                })
            })
            .collect()
    }
}

/// How a folder's manifests are labelled.
type OriginOf = fn(PathBuf) -> Origin;

/// A manifest in a [`Registry`], with where it came from.
#[derive(Debug, Clone)]
pub struct LoadedManifest {
    pub manifest: Manifest,
    pub origin: Origin,
    /// Earlier manifests of the same name this one replaced (built-in first).
    pub overrides: Vec<Origin>,
}

/// Every runner weft knows, by name.
#[derive(Debug, Clone)]
pub struct Registry {
    entries: Vec<LoadedManifest>,
}

impl Registry {
    /// Only the built-in runners.
    pub fn builtin() -> Registry {
        let entries = builtin_names()
            .map(|name| LoadedManifest {
                manifest: Manifest::builtin(name).expect("a built-in name has a manifest"),
                origin: Origin::BuiltIn,
                overrides: Vec::new(),
            })
            .collect();
        Registry { entries }
    }

    /// The built-ins, then every `*.toml` in `user_runners` (`~/.config/weft/runners`), then
    /// every `*.toml` in `workspace_runners` (`<workspace>/.weft/runners`); see
    /// [`user_runners_dir`] and [`workspace_runners_dir`]. Later manifests replace earlier
    /// ones of the same name. A missing folder is fine; a broken file is returned as an
    /// error and skipped.
    pub fn load(
        workspace_runners: Option<&Path>,
        user_runners: Option<&Path>,
    ) -> (Registry, Vec<ManifestError>) {
        let mut registry = Registry::builtin();
        let mut errors = Vec::new();
        let folders: [(Option<&Path>, OriginOf); 2] = [
            (user_runners, Origin::User),
            (workspace_runners, Origin::Workspace),
        ];
        for (dir, origin) in folders {
            let Some(dir) = dir else { continue };
            for path in manifest_files(dir, &mut errors) {
                match Manifest::load(&path) {
                    Ok(manifest) => {
                        registry.insert(manifest, origin(path));
                    }
                    Err(e) => errors.push(e),
                }
            }
        }
        (registry, errors)
    }

    /// Add a manifest, replacing one of the same name (which keeps its position).
    pub fn insert(&mut self, manifest: Manifest, origin: Origin) {
        match self
            .entries
            .iter_mut()
            .find(|e| e.manifest.name() == manifest.name())
        {
            Some(existing) => {
                let mut overrides = std::mem::take(&mut existing.overrides);
                overrides.push(existing.origin.clone());
                *existing = LoadedManifest {
                    manifest,
                    origin,
                    overrides,
                };
            }
            None => self.entries.push(LoadedManifest {
                manifest,
                origin,
                overrides: Vec::new(),
            }),
        }
    }

    pub fn get(&self, name: &str) -> Option<&LoadedManifest> {
        self.entries.iter().find(|e| e.manifest.name() == name)
    }

    /// Runner names: built-ins in picker order, then others in load order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.manifest.name())
    }

    pub fn iter(&self) -> std::slice::Iter<'_, LoadedManifest> {
        self.entries.iter()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<'a> IntoIterator for &'a Registry {
    type Item = &'a LoadedManifest;
    type IntoIter = std::slice::Iter<'a, LoadedManifest>;
    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter()
    }
}

/// The `*.toml` files of a folder, by file name; dotfiles and folders are skipped.
fn manifest_files(dir: &Path, errors: &mut Vec<ManifestError>) -> Vec<PathBuf> {
    let read_dir = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(error) => {
            errors.push(ManifestError::ReadDir {
                dir: dir.to_owned(),
                error,
            });
            return Vec::new();
        }
    };
    let mut files = Vec::new();
    for entry in read_dir {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                errors.push(ManifestError::ReadDir {
                    dir: dir.to_owned(),
                    error,
                });
                continue;
            }
        };
        let path = entry.path();
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        let is_toml = path.extension().is_some_and(|ext| ext == "toml");
        if hidden || !is_toml || path.is_dir() {
            continue;
        }
        files.push(path);
    }
    files.sort();
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> LaunchVars {
        LaunchVars {
            prompt: "do it".into(),
            cwd: "/w".into(),
            session_id: "sid".into(),
            ..LaunchVars::default()
        }
    }

    #[test]
    fn every_builtin_parses_and_has_its_file_name() {
        for name in builtin_names() {
            let m = Manifest::builtin(name).unwrap();
            assert_eq!(m.name(), name);
            assert!(m.label().contains(name));
            assert!(m.file().is_none());
        }
        assert!(Manifest::builtin("nope").is_none());
        assert_eq!(
            Registry::builtin().names().collect::<Vec<_>>(),
            ["claude-code", "codex", "opencode", "exec"]
        );
    }

    #[test]
    fn relative_command_paths_resolve_against_the_manifest_folder() {
        let text = "command = './bin/agent'\nargs = ['{{prompt}}']";
        let m = Manifest::parse(text, Some(Path::new("/cfg/runners/a.toml"))).unwrap();
        assert_eq!(m.command(), "/cfg/runners/bin/agent");
        let text = "command = '../tools/agent'\nargs = ['{{prompt}}']";
        let m = Manifest::parse(text, Some(Path::new("/cfg/runners/a.toml"))).unwrap();
        assert_eq!(m.command(), "/cfg/runners/../tools/agent");
        let text = "command = '/opt/my agent/run'\nargs = ['{{prompt}}']";
        let m = Manifest::parse(text, Some(Path::new("/cfg/runners/a.toml"))).unwrap();
        assert_eq!(m.command(), "/opt/my agent/run");
        let text = "name = 'a'\ncommand = 'bin/agent'\nargs = ['{{prompt}}']";
        let m = Manifest::parse(text, None).unwrap();
        assert_eq!(m.command(), "bin/agent");
    }

    #[test]
    fn later_env_entries_replace_earlier_ones() {
        let text = "name = 'a'\ncommand = 'a'\nprompt_via = 'stdin'\n\
                    [env]\nX = '1'\nY = '{{model}}'\n[root_env]\nX = '2'";
        let m = Manifest::parse(text, None).unwrap();
        let spec = m.launch(&vars()).unwrap();
        assert_eq!(spec.env, vec![("X".to_owned(), "1".to_owned())]);
        let spec = m
            .launch(&LaunchVars {
                running_as_root: true,
                model: Some("m".into()),
                ..vars()
            })
            .unwrap();
        assert_eq!(
            spec.env,
            vec![
                ("Y".to_owned(), "m".to_owned()),
                ("X".to_owned(), "2".to_owned())
            ]
        );
    }

    #[test]
    fn oversized_or_nul_arguments_are_refused_at_launch() {
        let m = Manifest::builtin("exec").unwrap();
        let big = LaunchVars {
            prompt: "x".repeat(MAX_ARG_BYTES + 1),
            ..vars()
        };
        let e = m.launch(&big).unwrap_err().to_string();
        assert!(e.contains("args[1]") && e.contains("system limit"), "{e}");
        let nul = LaunchVars {
            prompt: "a\0b".into(),
            ..vars()
        };
        let e = m.launch(&nul).unwrap_err().to_string();
        assert!(e.contains("NUL"), "{e}");
    }
}
