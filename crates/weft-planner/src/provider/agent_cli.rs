//! Agent CLIs as planners: Claude Code, Codex and OpenCode in their read-only modes.
//!
//! The user plans with the CLI they already have and are logged into; weft never holds a
//! key. Each turn is one process: the message goes on stdin (then stdin is closed), the
//! CLI's JSON event stream is read from stdout to the end, and the process group is
//! killed if the turn outlives `turn_timeout`. Later turns resume the CLI's own session;
//! that id is only a hint (weft's transcript is authoritative), so a failed fresh turn
//! commits nothing and the next turn starts fresh again.
//!
//! Per-CLI facts (flags, stdin rules, exit codes) are in `reference/agent-clis.md`; the
//! stream readers are in the submodules.

mod claude;
mod codex;
mod collect;
mod opencode;
mod process;

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::chat::{AgentPlanner, AgentReply, StreamEvent};
use crate::error::ProviderError;
use collect::{Collector, JunkTail};

/// Default wall-clock limit of one turn.
pub const DEFAULT_TURN_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// Tools Claude Code may never use while planning (plan mode already refuses edits; this
/// also keeps them out of the model's tool list).
const CLAUDE_DISALLOWED_TOOLS: &str = "Edit,Write,MultiEdit,NotebookEdit";

/// Which agent CLI plans.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AgentCliKind {
    ClaudeCode,
    Codex,
    OpenCode,
}

impl AgentCliKind {
    /// The runner's name, as `--planner` and the research log spell it.
    pub fn name(self) -> &'static str {
        match self {
            AgentCliKind::ClaudeCode => "claude-code",
            AgentCliKind::Codex => "codex",
            AgentCliKind::OpenCode => "opencode",
        }
    }

    /// The command the CLI installs.
    pub fn default_program(self) -> &'static str {
        match self {
            AgentCliKind::ClaudeCode => "claude",
            AgentCliKind::Codex => "codex",
            AgentCliKind::OpenCode => "opencode",
        }
    }
}

impl fmt::Display for AgentCliKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A planner name that is none of the agent CLIs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown agent CLI `{0}`: expected claude-code, codex or opencode")]
pub struct UnknownAgentCli(pub String);

impl FromStr for AgentCliKind {
    type Err = UnknownAgentCli;

    /// Accepts the runner names and the command names (`claude` too).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "claude-code" | "claude" => Ok(AgentCliKind::ClaudeCode),
            "codex" => Ok(AgentCliKind::Codex),
            "opencode" => Ok(AgentCliKind::OpenCode),
            _ => Err(UnknownAgentCli(s.to_owned())),
        }
    }
}

/// How to run one agent CLI as the planner.
#[derive(Clone, PartialEq, Eq)]
pub struct AgentCliConfig {
    pub kind: AgentCliKind,
    /// Command (looked up on PATH) or path.
    pub program: String,
    /// The repository the planner researches: the process's working directory.
    pub workspace: PathBuf,
    pub model: Option<String>,
    pub effort: Option<String>,
    /// Wall clock per turn; then the whole process group is killed.
    pub turn_timeout: Duration,
    /// Extra environment for the CLI.
    pub env: Vec<(String, String)>,
    /// Raised by the front end when the user interrupts: the turn's process group is
    /// stopped.
    pub interrupt: Option<weft_core::interrupt::Interrupt>,
}

impl AgentCliConfig {
    /// The CLI's default command, its default model and effort, a 10-minute turn limit.
    pub fn new(kind: AgentCliKind, workspace: impl Into<PathBuf>) -> AgentCliConfig {
        AgentCliConfig {
            kind,
            program: kind.default_program().to_owned(),
            workspace: workspace.into(),
            model: None,
            effort: None,
            turn_timeout: DEFAULT_TURN_TIMEOUT,
            env: Vec::new(),
            interrupt: None,
        }
    }
}

/// Env values may hold tokens, so Debug shows only their names.
impl fmt::Debug for AgentCliConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let env_names: Vec<&str> = self.env.iter().map(|(k, _)| k.as_str()).collect();
        f.debug_struct("AgentCliConfig")
            .field("kind", &self.kind)
            .field("program", &self.program)
            .field("workspace", &self.workspace)
            .field("model", &self.model)
            .field("effort", &self.effort)
            .field("turn_timeout", &self.turn_timeout)
            .field("env", &env_names)
            .finish()
    }
}

/// Whether a turn starts a CLI session or continues one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TurnSession {
    /// A new session. Claude Code gets its id up front (`--session-id`); Codex and
    /// OpenCode mint theirs and report it in the stream.
    Fresh { session_id: Option<String> },
    /// Continue the CLI's own session.
    Resume { session_id: String },
}

/// Everything one turn sends, decided before the process starts (so argv and stdin are
/// pure functions of it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnPlan {
    pub system: String,
    pub message: String,
    pub session: TurnSession,
}

/// An agent CLI spoken to turn by turn, one process per turn.
#[derive(Debug)]
pub struct AgentCliPlanner {
    config: AgentCliConfig,
    /// The CLI session to resume on the next turn (set after a successful turn).
    session: Option<String>,
}

impl AgentCliPlanner {
    pub fn new(config: AgentCliConfig) -> AgentCliPlanner {
        AgentCliPlanner {
            config,
            session: None,
        }
    }

    pub fn config(&self) -> &AgentCliConfig {
        &self.config
    }

    /// The CLI session the next turn resumes, if any.
    pub fn session_id(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// Resume this CLI session on the next turn (e.g. one stored with a plan), or start
    /// fresh with `None`. A resumed session is assumed to have had the system text already.
    pub fn set_session(&mut self, session_id: Option<String>) {
        self.session = session_id.filter(|id| !id.trim().is_empty());
    }

    /// What the next turn sends: a fresh session (with a new UUID for Claude Code) or a
    /// resume of the current one.
    pub fn plan_turn(&self, system: &str, message: &str) -> TurnPlan {
        let session = match &self.session {
            Some(id) => TurnSession::Resume {
                session_id: id.clone(),
            },
            None => TurnSession::Fresh {
                session_id: (self.config.kind == AgentCliKind::ClaudeCode)
                    .then(|| uuid::Uuid::new_v4().to_string()),
            },
        };
        TurnPlan {
            system: system.to_owned(),
            message: message.to_owned(),
            session,
        }
    }

    /// The CLI's arguments for a turn (without the program).
    pub fn argv(&self, turn: &TurnPlan) -> Vec<String> {
        let model = non_empty(self.config.model.as_deref());
        let effort = non_empty(self.config.effort.as_deref());
        let mut args: Vec<String> = Vec::new();
        let mut push = |items: &[&str]| args.extend(items.iter().map(|s| (*s).to_owned()));
        match self.config.kind {
            AgentCliKind::ClaudeCode => {
                push(&[
                    "-p",
                    "--output-format",
                    "stream-json",
                    "--verbose",
                    "--permission-mode",
                    "plan",
                    "--disallowedTools",
                    CLAUDE_DISALLOWED_TOOLS,
                ]);
                // The system prompt is a flag of the process, not part of the stored
                // conversation: a resumed session needs it again.
                if !turn.system.trim().is_empty() {
                    push(&["--append-system-prompt", &turn.system]);
                }
                if let Some(model) = model {
                    push(&["--model", model]);
                }
                if let Some(effort) = effort {
                    push(&["--effort", effort]);
                }
                match &turn.session {
                    TurnSession::Fresh {
                        session_id: Some(id),
                    } => push(&["--session-id", id]),
                    TurnSession::Fresh { session_id: None } => {}
                    TurnSession::Resume { session_id } => push(&["--resume", session_id]),
                }
            }
            AgentCliKind::Codex => {
                // Options before `resume` belong to `exec` and apply to both forms.
                push(&[
                    "exec",
                    "--json",
                    "--skip-git-repo-check",
                    "--sandbox",
                    "read-only",
                    "-c",
                    "approval_policy=\"never\"",
                ]);
                if let Some(model) = model {
                    push(&["-m", model]);
                }
                if let Some(effort) = effort {
                    let setting = format!("model_reasoning_effort={}", toml_string(effort));
                    push(&["-c", &setting]);
                }
                if let TurnSession::Resume { session_id } = &turn.session {
                    push(&["resume", session_id]);
                }
                // `-`: the prompt is all of stdin.
                push(&["-"]);
            }
            AgentCliKind::OpenCode => {
                push(&["run", "--format", "json", "--agent", "plan"]);
                if let Some(model) = model {
                    push(&["-m", model]);
                }
                if let Some(effort) = effort {
                    push(&["--variant", effort]);
                }
                if let TurnSession::Resume { session_id } = &turn.session {
                    push(&["--session", session_id]);
                }
            }
        }
        args
    }

    /// What goes on the CLI's stdin. Codex `exec` and OpenCode `run` have no system-prompt
    /// option, so the first message of a session carries the system text, delimited; the
    /// session remembers it after that.
    pub fn stdin_text(&self, turn: &TurnPlan) -> String {
        let carries_system = self.config.kind != AgentCliKind::ClaudeCode
            && matches!(turn.session, TurnSession::Fresh { .. })
            && !turn.system.trim().is_empty();
        if carries_system {
            format!(
                "<planner-instructions>\n{}\n</planner-instructions>\n\n{}",
                turn.system.trim_end(),
                turn.message
            )
        } else {
            turn.message.clone()
        }
    }

    /// Environment the CLI needs beyond `config.env`.
    fn kind_env(&self, workspace: &Path) -> Vec<(String, String)> {
        match self.config.kind {
            // `opencode run` takes its directory from $PWD, not the OS working directory.
            AgentCliKind::OpenCode => vec![("PWD".to_owned(), workspace.display().to_string())],
            AgentCliKind::ClaudeCode | AgentCliKind::Codex => Vec::new(),
        }
    }

    fn agent_error(&self, message: String) -> ProviderError {
        ProviderError::Agent {
            runner: self.label(),
            message,
        }
    }
}

impl AgentPlanner for AgentCliPlanner {
    fn label(&self) -> String {
        self.config.kind.name().to_owned()
    }

    fn send(
        &mut self,
        system: &str,
        message: &str,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<AgentReply, ProviderError> {
        let turn = self.plan_turn(system, message);
        let workspace = std::path::absolute(&self.config.workspace)
            .unwrap_or_else(|_| self.config.workspace.clone());
        let mut env = self.config.env.clone();
        env.extend(self.kind_env(&workspace));
        let spec = process::RunSpec {
            program: &self.config.program,
            args: self.argv(&turn),
            cwd: &workspace,
            env,
            stdin: self.stdin_text(&turn),
            timeout: self.config.turn_timeout,
            interrupt: self.config.interrupt.clone(),
        };

        let mut parser: Box<dyn StreamParser> = match self.config.kind {
            AgentCliKind::ClaudeCode => Box::<claude::ClaudeStream>::default(),
            AgentCliKind::Codex => Box::<codex::CodexStream>::default(),
            AgentCliKind::OpenCode => Box::<opencode::OpencodeStream>::default(),
        };
        let mut turn_state = Collector::default();
        let mut junk = JunkTail::default();
        let run = process::run(&spec, &mut |line: &str| {
            let trimmed = line.trim();
            if trimmed.is_empty() {
                return;
            }
            match json_object(trimmed) {
                Some(obj) => {
                    turn_state.saw_event = true;
                    parser.line(&obj, &mut turn_state, on_event);
                }
                None => junk.push(trimmed),
            }
        })
        .map_err(|message| ProviderError::Spawn {
            runner: self.label(),
            program: self.config.program.clone(),
            message,
        })?;

        let resumed = matches!(turn.session, TurnSession::Resume { .. });
        if run.interrupted {
            return Err(ProviderError::Interrupted {
                what: format!("{} planner's turn", self.label()),
            });
        }
        if run.timed_out {
            // A CLI that retries for ever (no network, a bad key) usually said why.
            let note = match parser.verdict(&mut turn_state, false) {
                Verdict::Failed(message) => Some(message),
                Verdict::Undecided { note } => note,
                Verdict::Success => None,
            };
            let stderr = run
                .stderr
                .lines()
                .rev()
                .map(str::trim)
                .find(|line| !line.is_empty())
                .map(|line| collect::one_line(line, 300));
            return Err(ProviderError::AgentTimeout {
                runner: self.label(),
                after: self.config.turn_timeout,
                last_words: note.or(stderr),
            });
        }
        let verdict = parser.verdict(&mut turn_state, run.exit_code == Some(0));
        let saw_event = turn_state.saw_event;
        let result = match verdict {
            Verdict::Success => {
                let planned = match &turn.session {
                    TurnSession::Fresh { session_id } => session_id.clone(),
                    TurnSession::Resume { session_id } => Some(session_id.clone()),
                };
                let mut reply = turn_state.into_reply();
                if reply.session_id.is_none() {
                    reply.session_id = planned;
                }
                Ok(reply)
            }
            Verdict::Failed(message) => Err(self.agent_error(message)),
            Verdict::Undecided { note } => {
                Err(self.agent_error(describe_exit(&spec, &run, &junk, note.as_deref())))
            }
        };
        match &result {
            Ok(reply) => {
                if reply.session_id.is_some() {
                    self.session.clone_from(&reply.session_id);
                }
            }
            // The CLI refused the resume before starting (unknown session): the hint is
            // dead, so the next turn starts fresh.
            Err(_) if resumed && !saw_event => self.session = None,
            Err(_) => {}
        }
        result
    }
}

/// How a turn's stream ended, as its reader judges it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    Success,
    /// The CLI reported the failure itself; the text is its own.
    Failed(String),
    /// No end record: the exit status and stderr must explain.
    Undecided {
        note: Option<String>,
    },
}

/// One CLI's JSON event reader.
trait StreamParser {
    fn line(
        &mut self,
        obj: &Map<String, Value>,
        turn: &mut Collector,
        on_event: &mut dyn FnMut(StreamEvent),
    );

    /// Called once after the stream ended; `exit_ok` is a zero exit status.
    fn verdict(&mut self, turn: &mut Collector, exit_ok: bool) -> Verdict;
}

/// The line as a JSON object, or `None` for anything else.
fn json_object(line: &str) -> Option<Map<String, Value>> {
    if !line.starts_with('{') {
        return None;
    }
    match serde_json::from_str::<Value>(line) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    }
}

/// A failure without a parsable error: the CLI's own stderr text first (it says what to
/// do), then how the process ended.
fn describe_exit(
    spec: &process::RunSpec<'_>,
    run: &process::RunEnd,
    junk: &JunkTail,
    note: Option<&str>,
) -> String {
    let mut text = collect::excerpt(&run.stderr);
    if text.is_empty() {
        text = collect::excerpt(&junk.text());
    }
    if let Some(note) = note.filter(|n| !n.is_empty() && !text.contains(*n)) {
        if text.is_empty() {
            text = note.to_owned();
        } else {
            text.push_str("\nlast stream error: ");
            text.push_str(note);
        }
    }
    let how = match (run.exit_code, run.signal) {
        (Some(0), _) => format!("`{}` exited without finishing the turn", spec.program),
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "ended abnormally".to_owned(),
    };
    if text.is_empty() {
        format!("`{}` printed nothing ({how})", spec.program)
    } else {
        format!("{text} ({how})")
    }
}

fn non_empty(value: Option<&str>) -> Option<&str> {
    value.map(str::trim).filter(|v| !v.is_empty())
}

/// A TOML basic string, since `codex -c key=value` parses the value as TOML.
fn toml_string(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests;
