//! Agent CLIs as planners: Claude Code, Codex and OpenCode in their read-only modes.
//!
//! The user plans with the CLI they already have and are logged into; weft never holds a
//! key. Each turn is one process, run like every agent process weft runs: argv and
//! environment come from the CLI's built-in runner manifest (weft-agents) in its read-only
//! mode ([`PLAN_MODE`]), resuming its own session; weft-agents' supervisor starts and
//! watches it (its own process group, the message on stdin and then EOF, stdout read to
//! the end, the group killed when the turn outlives `turn_timeout` or is interrupted), and
//! weft-agents' parser for the CLI reads its stream. This module only turns those events
//! into the turn's reply and research steps (`collect`) and words the failures.
//!
//! Threads: the supervisor's (see `weft_agents::supervise`); the caller's thread receives
//! its events, runs `on_event`, and looks at the interrupt flag at least every 20 ms (a
//! raised flag cancels the attempt, which stops the whole group). Bounds: a stdout line
//! longer than the supervisor's structured-line cap (4 MiB) is not parsed; stderr is kept
//! as its last 16 KiB; the reply, steps and error texts are capped in `collect`. No output
//! log is written: the research log is the turn's record.
//!
//! Later turns resume the CLI's own session; that id is only a hint (weft's transcript is
//! authoritative), so a failed fresh turn commits nothing and the next turn starts fresh
//! again.

mod collect;

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use weft_agents::manifest::{LaunchSpec, LaunchVars, Manifest, PLAN_MODE, TurnVars};
use weft_agents::stream::one_line;
use weft_agents::supervise::{
    Attempt, Outcome, OutputStream, SpawnError, SuperviseOptions, SupervisorEvent,
};
use weft_agents::template::Var;

use crate::chat::{AgentPlanner, AgentReply, StreamEvent};
use crate::error::ProviderError;
use collect::{Collector, Verdict};

/// Default wall-clock limit of one turn.
pub const DEFAULT_TURN_TIMEOUT: Duration = Duration::from_secs(10 * 60);

/// How often a running turn looks at the interrupt flag while the CLI is quiet.
const POLL: Duration = Duration::from_millis(20);

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

    /// The command the CLI installs (its built-in manifest's).
    pub fn default_program(self) -> String {
        self.manifest().command().to_owned()
    }

    /// The CLI's built-in runner manifest: its flags live there, for tasks and planning.
    pub fn manifest(self) -> Manifest {
        Manifest::builtin(self.name()).expect("every agent CLI has a built-in manifest")
    }

    /// The product's own name, for messages.
    fn product(self) -> &'static str {
        match self {
            AgentCliKind::ClaudeCode => "Claude Code",
            AgentCliKind::Codex => "Codex",
            AgentCliKind::OpenCode => "OpenCode",
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
    /// Each turn's process runs under this containment (weft-agents' supervisor): the
    /// planner gets no write access to the workspace, whatever the CLI's own mode says.
    pub contain: Option<weft_agents::contain::Containment>,
}

impl AgentCliConfig {
    /// The CLI's default command, its default model and effort, a 10-minute turn limit.
    pub fn new(kind: AgentCliKind, workspace: impl Into<PathBuf>) -> AgentCliConfig {
        AgentCliConfig {
            kind,
            program: kind.default_program(),
            workspace: workspace.into(),
            model: None,
            effort: None,
            turn_timeout: DEFAULT_TURN_TIMEOUT,
            env: Vec::new(),
            interrupt: None,
            contain: None,
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
    /// A new session. A CLI whose manifest takes `{{session_id}}` (Claude Code) gets its id
    /// up front; the others (Codex, OpenCode) mint theirs and report it in the stream.
    Fresh { session_id: Option<String> },
    /// Continue the CLI's own session.
    Resume { session_id: String },
}

/// Everything one turn sends, decided before the process starts (so its launch is a pure
/// function of it).
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
    manifest: Manifest,
    /// The CLI session to resume on the next turn (set after a successful turn).
    session: Option<String>,
}

impl AgentCliPlanner {
    pub fn new(config: AgentCliConfig) -> AgentCliPlanner {
        AgentCliPlanner {
            manifest: config.kind.manifest(),
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

    /// What the next turn sends: a fresh session (with a new UUID when the CLI takes one,
    /// as Claude Code does) or a resume of the current one.
    pub fn plan_turn(&self, system: &str, message: &str) -> TurnPlan {
        let session = match &self.session {
            Some(id) => TurnSession::Resume {
                session_id: id.clone(),
            },
            None => TurnSession::Fresh {
                session_id: self
                    .manifest
                    .renders(Var::SessionId)
                    .then(|| uuid::Uuid::new_v4().to_string()),
            },
        };
        TurnPlan {
            system: system.to_owned(),
            message: message.to_owned(),
            session,
        }
    }

    /// How a turn's process is started: the manifest's launch in its read-only mode, with
    /// the configured program, and the configured environment under the manifest's.
    pub fn launch(&self, turn: &TurnPlan) -> Result<LaunchSpec, ProviderError> {
        let workspace = std::path::absolute(&self.config.workspace)
            .unwrap_or_else(|_| self.config.workspace.clone());
        let (fresh_id, resume) = match &turn.session {
            TurnSession::Fresh { session_id } => (session_id.clone(), None),
            TurnSession::Resume { session_id } => (None, Some(session_id.clone())),
        };
        let vars = LaunchVars {
            prompt: self.stdin_text(turn),
            prompt_file: None,
            model: non_empty(self.config.model.as_deref()),
            effort: non_empty(self.config.effort.as_deref()),
            mode: Some(PLAN_MODE.to_owned()),
            cwd: workspace,
            session_id: fresh_id.unwrap_or_default(),
            // `root_env` is for the autonomous modes (Claude's IS_SANDBOX lets bypass mode
            // run as root); the read-only planner needs none of it.
            running_as_root: false,
            relay: false,
            confined: self
                .config
                .contain
                .as_ref()
                .is_some_and(|c| c.confine.is_some()),
        };
        let system = (self.manifest.renders(Var::System) && !turn.system.trim().is_empty())
            .then(|| turn.system.clone());
        let mut spec = self
            .manifest
            .launch_turn(&vars, &TurnVars { resume, system })
            .map_err(|e| self.spawn_error(e.to_string()))?;
        spec.program.clone_from(&self.config.program);
        let mut env = self.config.env.clone();
        env.append(&mut spec.env);
        spec.env = env;
        Ok(spec)
    }

    /// What goes on the CLI's stdin. A CLI without a system-prompt option (Codex `exec`,
    /// OpenCode `run`) gets the system text in the first message of a session, delimited;
    /// the session remembers it after that.
    pub fn stdin_text(&self, turn: &TurnPlan) -> String {
        let carries_system = !self.manifest.renders(Var::System)
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

    /// Runs the turn's process to its end, feeding its events to `turn` and `on_event`.
    fn run(
        &self,
        spec: &LaunchSpec,
        turn: &mut Collector,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<Outcome, ProviderError> {
        let mut options = SuperviseOptions::unlogged(self.config.turn_timeout);
        options.idle_after = Duration::ZERO;
        options.contain = self.config.contain.clone();
        let (events, received) = mpsc::channel();
        let attempt = Attempt::start(spec, options, events)
            .map_err(|e| self.spawn_error(spawn_message(&e)))?;
        let canceller = attempt.canceller();
        let product = self.config.kind.product();
        loop {
            match received.recv_timeout(POLL) {
                Ok(SupervisorEvent::Agent(event)) => turn.event(event, product, on_event),
                Ok(SupervisorEvent::Line {
                    stream: OutputStream::Stdout,
                    text,
                }) => turn.stdout_line(&text),
                Ok(_) | Err(RecvTimeoutError::Timeout) => {}
                // The supervisor is done: the process and its group are gone.
                Err(RecvTimeoutError::Disconnected) => break,
            }
            if weft_core::interrupt::Interrupt::raised(self.config.interrupt.as_ref()) {
                canceller.cancel();
            }
        }
        Ok(attempt.wait())
    }

    fn spawn_error(&self, message: String) -> ProviderError {
        ProviderError::Spawn {
            runner: self.label(),
            program: self.config.program.clone(),
            message,
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
        let spec = self.launch(&turn)?;
        let mut turn_state = Collector::default();
        let run = self.run(&spec, &mut turn_state, on_event)?;

        let resumed = matches!(turn.session, TurnSession::Resume { .. });
        if run.cancelled {
            return Err(ProviderError::Interrupted {
                what: format!("{} planner's turn", self.label()),
            });
        }
        if run.timed_out {
            // A CLI that retries for ever (no network, a bad key) usually said why.
            let stderr = run
                .stderr_tail
                .lines()
                .rev()
                .map(str::trim)
                .find(|line| !line.is_empty())
                .map(|line| one_line(line, 300));
            return Err(ProviderError::AgentTimeout {
                runner: self.label(),
                after: self.config.turn_timeout,
                last_words: turn_state.last_words().or(stderr),
            });
        }
        let verdict = turn_state.verdict(spec.stream, run.exit_code == Some(0));
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
            // A failure the CLI printed only on stderr (OpenCode's `Error: Session not
            // found`) is quoted from there, in its own layout, with how the process ended.
            Verdict::Failed(message) if collect::excerpt(&run.stderr_tail).contains(&message) => {
                Err(self.agent_error(describe_exit(&spec, &run, &turn_state, None)))
            }
            Verdict::Failed(message) => Err(self.agent_error(message)),
            Verdict::Undecided { note } => {
                Err(self.agent_error(describe_exit(&spec, &run, &turn_state, note.as_deref())))
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

/// Why a CLI could not be started, in the planner's words (the program and the runner
/// are already in [`ProviderError::Spawn`]).
fn spawn_message(error: &SpawnError) -> String {
    match error {
        SpawnError::NotFound { program, .. } if program.contains('/') => {
            "no such program".to_owned()
        }
        SpawnError::NotFound { .. } => "not found on PATH".to_owned(),
        SpawnError::PermissionDenied { .. } => {
            "permission denied (is it an executable file?)".to_owned()
        }
        SpawnError::CwdMissing { cwd, .. } => format!(
            "the workspace {} does not exist or is not a directory",
            cwd.display()
        ),
        other => other.to_string(),
    }
}

/// A failure without a parsable error: the CLI's own stderr text first (it says what to
/// do), then how the process ended.
fn describe_exit(spec: &LaunchSpec, run: &Outcome, turn: &Collector, note: Option<&str>) -> String {
    let mut text = collect::excerpt(&run.stderr_tail);
    if text.is_empty() {
        text = collect::excerpt(&turn.junk.text());
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

fn non_empty(value: Option<&str>) -> Option<String> {
    value
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests;
