//! The read-only research envelope: the tools an API planner may call (DESIGN §10).
//!
//! An OpenAI-compatible model researches the workspace through seven tools: `list_dir`,
//! `read_file`, `search`, `git_log`, `git_show`, `git_diff` and `run_command`. weft runs
//! each call with [`Research::run`] and hands the model back [`ToolRun::result`]. Nothing
//! here writes: the file tools only open, list and read; the git tools run read-only git
//! subcommands; `run_command` runs only what [`crate::command_policy`] classifies as
//! read-only.
//!
//! # Contract
//!
//! * [`Research::run`] never fails and never panics: a bad argument, a missing file, a git
//!   error, a refused command are all result texts the model can act on, with a
//!   [`StepOutcome`] for the research log.
//! * Every result and every log summary ([`ToolRun::input`]) is masked before it leaves
//!   this module: the configured secret values, and the values of secret-named assignments
//!   (`API_KEY=…`, `"password": "…"`, …; see [`mask_text`]). Results are then capped at
//!   [`ResearchConfig::max_result_chars`], and the text says so when it was cut.
//! * Arguments are JSON objects checked against the tool's parameters: an unknown,
//!   missing or mistyped argument is refused with a message naming it and the expected
//!   shape.
//!
//! # Paths
//!
//! Paths are resolved against the workspace; a leading `~` is `$HOME` (read at call time).
//! Containment is decided on the **resolved** path: the longest existing prefix is
//! canonicalised (symlinks followed, as the kernel would) and the rest normalised
//! lexically, and the tools then open the resolved path, so what was checked is what is
//! read. (Ordewell checked lexically, so a symlink inside the workspace could read outside
//! it.)
//!
//! * Inside the workspace: allowed without asking, except reading a file whose name starts
//!   with `.env` (`.env`, `.env.local`, `.envrc`; not `.env.example`, `.env.sample`,
//!   `.env.template`), which asks [`Subject::Read`].
//! * Outside (an absolute path elsewhere, a `..` escape, a symlink pointing out): reading a
//!   file asks [`Subject::Read`], listing or searching a directory asks [`Subject::List`],
//!   with the absolute resolved path.
//! * A denial is [`StepOutcome::Denied`]; the result names the scope and where the decision
//!   came from (`denied (no-channel): …`), and the tool does not run.
//! * Directory walks (`list_dir`, `search`) honour `.gitignore`, `.ignore` and git's
//!   excludes, never descend into `.git/` or `.weft/`, and do not follow symlinks.
//!   `search` skips `.env*` files (it says how many), binary files and files over
//!   [`ResearchConfig::max_file_bytes`].
//! * The git tools take paths inside the workspace only (git sees nothing else), passed
//!   after `--` with literal pathspecs; revisions and paths starting with `-` are refused.
//!
//! # Commands
//!
//! `run_command` classifies the line with [`classify_with`] (home from `$HOME`, symlinks
//! followed). Refused lines never run and never ask; lines that name paths outside the
//! workspace or `.env*` files ask once per path, and all must be allowed. A read-only line
//! runs as `sh -c LINE` in the workspace with empty stdin, in its own process group, with a
//! scrubbed environment ([`scrub_env`]), its output capped at
//! [`ResearchConfig::max_output_bytes`]; the whole group is killed at
//! [`ResearchConfig::command_timeout`] ([`run_process`]).

mod args;
mod command;
mod exec;
mod files;
mod git;
mod mask;
mod paths;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use weft_core::approval::{Decision, Subject};

use crate::chat::{ToolCall, ToolSpec};
use crate::log::StepOutcome;

#[cfg(doc)]
use crate::command_policy::classify_with;

pub use exec::{ProcessOutput, run_process, scrub_env};
use mask::mask_cut_tail;
pub use mask::{mask_assignments, mask_text, prepare_secrets};
pub use paths::is_env_file;

use args::{ArgError, Args, Param};

/// Decides requests the envelope cannot settle itself (paths outside the workspace, `.env*`
/// reads). The implementation lives in the caller (it may block on a person for minutes).
pub trait Approver {
    fn decide(&mut self, subject: Subject) -> Decision;
}

/// Limits and inputs of the research envelope.
#[derive(Clone)]
pub struct ResearchConfig {
    /// The workspace root. Relative paths resolve against it; it is canonicalised once.
    pub workspace: PathBuf,
    /// Exact values to mask in every result and summary (values shorter than
    /// [`weft_agents::supervise::MIN_SECRET_LEN`] are ignored).
    pub secrets: Vec<String>,
    /// Largest file `read_file` reads whole and `search` searches while walking a
    /// directory. Bigger files can still be read by window or searched by name.
    pub max_file_bytes: u64,
    /// Longest result handed to the model, in characters.
    pub max_result_chars: usize,
    /// How long a command (or a git call, or a search walk) may run.
    pub command_timeout: Duration,
    /// Most output kept from one command (stdout and stderr together).
    pub max_output_bytes: usize,
    /// Where `~` points (the front end knows; the library reads no environment).
    pub home: Option<PathBuf>,
    /// The environment commands start from (secret-named variables are removed); `None`
    /// inherits this process's.
    pub env: Option<Vec<(String, String)>>,
    /// How commands and git calls are contained (weft's supervisor, a read-only Landlock
    /// ruleset); `None`: run directly, read-only by the command policy alone.
    pub contain: Option<weft_agents::contain::Containment>,
}

impl ResearchConfig {
    pub const DEFAULT_MAX_FILE_BYTES: u64 = 256 * 1024;
    pub const DEFAULT_MAX_RESULT_CHARS: usize = 40_000;
    pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(30);
    pub const DEFAULT_MAX_OUTPUT_BYTES: usize = 1024 * 1024;

    pub fn new(workspace: PathBuf) -> Self {
        ResearchConfig {
            workspace,
            secrets: Vec::new(),
            max_file_bytes: Self::DEFAULT_MAX_FILE_BYTES,
            max_result_chars: Self::DEFAULT_MAX_RESULT_CHARS,
            command_timeout: Self::DEFAULT_COMMAND_TIMEOUT,
            max_output_bytes: Self::DEFAULT_MAX_OUTPUT_BYTES,
            home: None,
            env: None,
            contain: None,
        }
    }
}

impl fmt::Debug for ResearchConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResearchConfig")
            .field("workspace", &self.workspace)
            .field("secrets", &format_args!("[{} masked]", self.secrets.len()))
            .field("max_file_bytes", &self.max_file_bytes)
            .field("max_result_chars", &self.max_result_chars)
            .field("command_timeout", &self.command_timeout)
            .field("max_output_bytes", &self.max_output_bytes)
            .finish()
    }
}

/// What one tool call produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolRun {
    /// What the model receives: masked and capped (the text says so when it was cut).
    pub result: String,
    pub outcome: StepOutcome,
    /// A one-line summary for the research log, masked (e.g. `read_file src/main.rs:1-200`).
    pub input: String,
    /// The approval decision, when the policy was consulted: the denial when one was
    /// denied, otherwise the last allowance.
    pub decision: Option<Decision>,
}

/// The tools, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tool {
    ListDir,
    ReadFile,
    Search,
    GitLog,
    GitShow,
    GitDiff,
    RunCommand,
}

impl Tool {
    const ALL: [Tool; 7] = [
        Tool::ListDir,
        Tool::ReadFile,
        Tool::Search,
        Tool::GitLog,
        Tool::GitShow,
        Tool::GitDiff,
        Tool::RunCommand,
    ];

    fn name(self) -> &'static str {
        match self {
            Tool::ListDir => "list_dir",
            Tool::ReadFile => "read_file",
            Tool::Search => "search",
            Tool::GitLog => "git_log",
            Tool::GitShow => "git_show",
            Tool::GitDiff => "git_diff",
            Tool::RunCommand => "run_command",
        }
    }

    fn parse(name: &str) -> Option<Tool> {
        Tool::ALL.into_iter().find(|tool| tool.name() == name)
    }

    fn description(self) -> &'static str {
        match self {
            Tool::ListDir => files::LIST_DIR_DESCRIPTION,
            Tool::ReadFile => files::READ_FILE_DESCRIPTION,
            Tool::Search => files::SEARCH_DESCRIPTION,
            Tool::GitLog => git::GIT_LOG_DESCRIPTION,
            Tool::GitShow => git::GIT_SHOW_DESCRIPTION,
            Tool::GitDiff => git::GIT_DIFF_DESCRIPTION,
            Tool::RunCommand => command::RUN_COMMAND_DESCRIPTION,
        }
    }

    fn params(self) -> &'static [Param] {
        match self {
            Tool::ListDir => files::LIST_DIR_PARAMS,
            Tool::ReadFile => files::READ_FILE_PARAMS,
            Tool::Search => files::SEARCH_PARAMS,
            Tool::GitLog => git::GIT_LOG_PARAMS,
            Tool::GitShow => git::GIT_SHOW_PARAMS,
            Tool::GitDiff => git::GIT_DIFF_PARAMS,
            Tool::RunCommand => command::RUN_COMMAND_PARAMS,
        }
    }
}

/// The read-only research envelope for one workspace.
pub struct Research {
    config: ResearchConfig,
    /// The workspace as configured, made absolute and normalised lexically.
    workspace_lexical: PathBuf,
    /// The workspace with symlinks resolved (the lexical form when it does not exist).
    workspace_real: PathBuf,
    /// `config.secrets`, longest first, short ones dropped.
    secrets: Vec<String>,
}

impl fmt::Debug for Research {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Research")
            .field("config", &self.config)
            .field("workspace_real", &self.workspace_real)
            .finish_non_exhaustive()
    }
}

/// One tool's answer before masking and capping.
#[derive(Debug)]
struct Step {
    input: String,
    result: String,
    outcome: StepOutcome,
    decision: Option<Decision>,
}

impl Step {
    fn new(input: impl Into<String>, outcome: StepOutcome, result: impl Into<String>) -> Step {
        Step {
            input: input.into(),
            result: result.into(),
            outcome,
            decision: None,
        }
    }

    fn success(input: impl Into<String>, result: impl Into<String>) -> Step {
        Step::new(input, StepOutcome::Success, result)
    }

    fn failure(input: impl Into<String>, result: impl Into<String>) -> Step {
        Step::new(input, StepOutcome::Failure, result)
    }

    fn refused(input: impl Into<String>, result: impl Into<String>) -> Step {
        Step::new(input, StepOutcome::Refused, result)
    }

    fn with_decision(mut self, decision: Option<Decision>) -> Step {
        self.decision = decision;
        self
    }
}

/// The answer of the approval gate for one path.
#[derive(Debug)]
enum Gate {
    /// Inside the workspace and not a `.env*` read: nobody was asked.
    Open,
    Allowed(Decision),
    Denied(Decision),
}

impl Research {
    pub fn new(config: ResearchConfig) -> Research {
        let absolute = if config.workspace.is_absolute() {
            config.workspace.clone()
        } else {
            std::env::current_dir()
                .map(|dir| dir.join(&config.workspace))
                .unwrap_or_else(|_| config.workspace.clone())
        };
        let workspace_lexical = paths::normalise(&absolute);
        let workspace_real = paths::resolve(&workspace_lexical);
        let secrets = prepare_secrets(&config.secrets);
        Research {
            config,
            workspace_lexical,
            workspace_real,
            secrets,
        }
    }

    pub fn config(&self) -> &ResearchConfig {
        &self.config
    }

    /// The workspace with symlinks resolved: where commands run and what paths are
    /// compared with.
    pub fn workspace(&self) -> &Path {
        &self.workspace_real
    }

    /// The tools offered to the model (names, descriptions, JSON Schemas of arguments).
    pub fn specs(&self) -> Vec<ToolSpec> {
        Tool::ALL
            .into_iter()
            .map(|tool| ToolSpec {
                name: tool.name().to_owned(),
                description: tool.description().to_owned(),
                parameters: args::schema(tool.params()),
            })
            .collect()
    }

    /// Run one call. Never panics and never returns Err: every failure is a result text the
    /// model can act on.
    pub fn run(&self, call: &ToolCall, approver: &mut dyn Approver) -> ToolRun {
        let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            self.dispatch(call, approver)
        }))
        .unwrap_or_else(|_| {
            Step::failure(
                format!("{} (internal error)", call.name),
                format!(
                    "weft hit an internal error while running `{}`; try a different call",
                    call.name
                ),
            )
        });
        self.finish(step)
    }

    /// Masks any text the way results are masked (configured secrets, secret-named
    /// assignments).
    /// Run `command` in the workspace with a scrubbed environment and the configured time
    /// and output limits; its output comes back masked (a secret cut at the cap too).
    pub(crate) fn run_masked(
        &self,
        command: std::process::Command,
    ) -> std::io::Result<(ProcessOutput, String)> {
        let env = scrub_env(match &self.config.env {
            Some(vars) => vars
                .iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect::<Vec<_>>(),
            None => std::env::vars_os().collect(),
        });
        // Contained: the command runs under weft's supervisor, whose Landlock ruleset
        // grants no write access to the workspace (or anywhere but a private temp folder
        // and the devices), whatever the command policy let through.
        let mut command = match &self.config.contain {
            Some(containment) => {
                let path = env
                    .iter()
                    .find(|(k, _)| k == "PATH")
                    .map(|(_, v)| v.as_os_str());
                let args: Vec<&std::ffi::OsStr> = command.get_args().collect();
                weft_agents::contain::wrap(containment, command.get_program(), &args, path)?
            }
            None => command,
        };
        command.current_dir(self.workspace()).env_clear().envs(env);
        let out = run_process(
            command,
            self.config.command_timeout,
            self.config.max_output_bytes,
        );
        if let Some(tmp) = self
            .config
            .contain
            .as_ref()
            .and_then(|c| c.tmp_dir.as_ref())
        {
            let _ = fs_err::remove_dir_all(tmp);
        }
        let out = out?;
        let mut text = self.mask(&String::from_utf8_lossy(&out.output));
        if out.truncated {
            text = mask_cut_tail(&text, &self.secrets);
        }
        Ok((out, text))
    }

    pub fn mask(&self, text: &str) -> String {
        mask_text(text, &self.secrets)
    }

    fn dispatch(&self, call: &ToolCall, approver: &mut dyn Approver) -> Step {
        let Some(tool) = Tool::parse(call.name.trim()) else {
            let names: Vec<&str> = Tool::ALL.iter().map(|t| t.name()).collect();
            return Step::refused(
                format!("{} (unknown tool)", one_line(&call.name, 80)),
                format!(
                    "there is no tool named `{}`; the tools are: {}",
                    one_line(&call.name, 80),
                    names.join(", ")
                ),
            );
        };
        let raw_input = || {
            let raw = one_line(&call.arguments, 200);
            format!("{} {raw}", tool.name()).trim_end().to_owned()
        };
        let args = match Args::parse(tool.name(), tool.params(), &call.arguments) {
            Ok(args) => args,
            Err(error) => return Step::refused(raw_input(), error.to_string()),
        };
        let answer = match tool {
            Tool::ListDir => files::list_dir(self, &args, approver),
            Tool::ReadFile => files::read_file(self, &args, approver),
            Tool::Search => files::search(self, &args, approver),
            Tool::GitLog => git::git_log(self, &args, approver),
            Tool::GitShow => git::git_show(self, &args, approver),
            Tool::GitDiff => git::git_diff(self, &args, approver),
            Tool::RunCommand => command::run_command(self, &args, approver),
        };
        answer.unwrap_or_else(|error: ArgError| Step::refused(raw_input(), error.to_string()))
    }

    fn finish(&self, step: Step) -> ToolRun {
        let result = cap_chars(&self.mask(&step.result), self.config.max_result_chars);
        let input = one_line(&self.mask(&step.input), 500);
        ToolRun {
            result,
            outcome: step.outcome,
            input,
            decision: step.decision,
        }
    }

    /// Resolves a path argument; `Err` is the refusal text.
    fn locate(&self, raw: &str) -> Result<paths::Located, String> {
        paths::locate(
            &self.workspace_lexical,
            &self.workspace_real,
            self.config.home.as_deref(),
            raw,
        )
    }

    /// Asks the approver when `located` is outside the workspace, or (for reads) a `.env*`
    /// file inside it.
    fn gate(
        &self,
        located: &paths::Located,
        kind: paths::Access,
        approver: &mut dyn Approver,
    ) -> Gate {
        let needs = !located.inside || (kind == paths::Access::Read && located.env_file);
        if !needs {
            return Gate::Open;
        }
        let path = located.real.to_string_lossy().into_owned();
        let subject = match kind {
            paths::Access::Read => Subject::Read { path },
            paths::Access::List => Subject::List { path },
        };
        let decision = approver.decide(subject);
        if decision.allowed {
            Gate::Allowed(decision)
        } else {
            Gate::Denied(decision)
        }
    }
}

/// The result text of a denial: what was denied, which scope, and by whom.
fn denied_text(what: &str, decision: &Decision) -> String {
    format!(
        "denied ({}): {what} needs approval for {} and it was not given; nothing was read. \
         Continue with what is inside the workspace, or ask the user to approve {}.",
        decision.source.as_str(),
        decision.scope,
        decision.scope
    )
}

/// `text` cut to `max` characters (on a character boundary), with a closing note.
pub fn cap_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((cut, _)) => {
            let mut out = text[..cut].to_owned();
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&format!("[output cut at {max} characters]"));
            out
        }
    }
}

/// `text` on one line (line breaks and other control characters shown as escapes), cut to
/// `max` characters with `…`.
fn one_line(text: &str, max: usize) -> String {
    let mut out = String::new();
    for (count, c) in text.trim().chars().enumerate() {
        if count >= max {
            out.push('…');
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push(' '),
            c if c.is_control() => out.push_str(&c.escape_default().to_string()),
            c => out.push(c),
        }
    }
    out
}

/// `line` cut to `max` characters with a marker.
fn clip_line(line: &str, max: usize) -> String {
    match line.char_indices().nth(max) {
        None => line.to_owned(),
        Some((cut, _)) => format!("{}… [line cut]", &line[..cut]),
    }
}
