//! The planning conversation: turns with the model, the research loop with its step budget,
//! the repair loop for plans that do not validate, and the PRD capture.
//!
//! The conversation never touches the store, the terminal or the file system beyond the
//! research tools: a [`Host`] persists the log, saves the PRD, shows progress and asks the
//! user; an [`Approver`] decides what the envelope cannot.

use std::fmt;

use weft_core::Plan;
use weft_core::approval::Decision;
use weft_core::edit::EditReport;
use weft_core::workflow::ImportedPlan;

use crate::chat::{AgentPlanner, ChatModel, FinishReason, Message, StreamEvent};
use crate::emit::{
    self, MAX_REPAIRS, PlanProblems, Prd, ReplyKind, corrective_for_broken, corrective_for_ops,
    corrective_for_problems, terse_reemit, terse_reemit_ops,
};
use crate::error::ProviderError;
use crate::log::{LOG_DETAIL_CHARS, StepOutcome};
use crate::prompt::{self, Style};
use crate::tools::{Approver, Research};

/// Research steps (tool calls) allowed per user turn before calls go unexecuted.
pub const DEFAULT_MAX_STEPS: usize = 40;
/// Rounds answered "not executed" after the budget before the turn is ended.
const WRAP_UP_ROUNDS: usize = 2;
/// Prose replies a one-shot or revision planner gets nudged about before giving up.
const MAX_NUDGES: usize = 2;
/// Characters of API history (about 100,000 tokens) above which old tool results are
/// pruned before the next request.
pub const DEFAULT_HISTORY_BUDGET: usize = 400_000;
/// What a pruned tool result keeps of its start.
const PRUNED_KEEP_CHARS: usize = 400;
/// Tool results this short are never pruned.
const SMALL_RESULT_CHARS: usize = 1_500;
/// The newest tool results (the model is working from them) are kept whole.
const KEEP_RECENT_RESULTS: usize = 6;

/// Who plans.
#[derive(Debug)]
pub enum Backend {
    /// An OpenAI-compatible model; weft runs its research tools.
    Api {
        model: Box<dyn ChatModel>,
        research: Research,
    },
    /// An agent CLI in its read-only mode; it researches on its own.
    Agent(Box<dyn AgentPlanner>),
}

impl Backend {
    pub fn label(&self) -> String {
        match self {
            Backend::Api { model, .. } => model.label(),
            Backend::Agent(agent) => agent.label(),
        }
    }
}

/// What kind of research-log entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogKind {
    User,
    Assistant,
    Tool,
    Note,
}

impl LogKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LogKind::User => "user",
            LogKind::Assistant => "assistant",
            LogKind::Tool => "tool",
            LogKind::Note => "note",
        }
    }
}

/// One research-log entry, masked and capped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogItem {
    pub turn: u32,
    pub kind: LogKind,
    pub tool: Option<String>,
    pub input: String,
    pub outcome: Option<StepOutcome>,
    pub detail: String,
    /// `allowed (asked)`, `denied (no-channel)`, … when the approval policy decided.
    pub approval: Option<String>,
}

/// Progress for a front end to render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlannerEvent {
    /// Streamed reply text (API planners) or a whole turn's text (agent CLIs).
    Text(String),
    Reasoning(String),
    /// A research step finished.
    Step {
        tool: String,
        input: String,
        outcome: StepOutcome,
    },
    /// The model's reply for this turn is complete (PRD block removed).
    Reply(String),
    /// weft sent the model a corrective or a nudge, without asking the user.
    Correcting(String),
    /// A notice: the step budget, a PRD saved, a plan rejected.
    Notice(String),
}

/// The front end's side of the conversation.
pub trait Host {
    fn event(&mut self, event: PlannerEvent);
    fn log(&mut self, item: LogItem);
    /// Save a PRD the planner wrote; returns where it went, for the log.
    fn save_prd(&mut self, prd: &Prd) -> Result<String, String>;
    /// The user's next message after `reply`; `None` when the user ends the conversation.
    /// Only called in [`Style::Conversation`].
    fn ask_user(&mut self, reply: &str) -> Option<String>;
}

/// How a conversation ended.
#[derive(Debug)]
pub enum Finish {
    /// A validated plan: the goal is the user's text.
    Plan {
        plan: ImportedPlan,
        prd: Option<Prd>,
    },
    /// Validated edits to the base plan (revision).
    Edits {
        plan: Plan,
        reports: Vec<EditReport>,
        prd: Option<Prd>,
    },
    /// The user ended the conversation before a plan.
    Abandoned { prd: Option<Prd> },
}

#[derive(Debug, thiserror::Error)]
pub enum PlannerError {
    #[error(transparent)]
    Provider(#[from] ProviderError),
    #[error("the planner's plan was still invalid after {repairs} corrective turns:\n{problems}")]
    Rejected {
        repairs: usize,
        problems: PlanProblems,
    },
    #[error("the planner's edits were still refused after {repairs} corrective turns:\n{problems}")]
    EditsRejected {
        repairs: usize,
        problems: PlanProblems,
    },
    #[error("the planner's JSON was still unreadable after {repairs} corrective turns: {error}")]
    Unreadable { repairs: usize, error: String },
    #[error("the planner's plan was still cut off after {repairs} shorter re-emits")]
    Truncated { repairs: usize },
    #[error(
        "the planner answered without a {wanted} after {nudges} reminders; its last reply: {last}"
    )]
    NoPlan {
        wanted: &'static str,
        nudges: usize,
        last: String,
    },
    #[error("{0}")]
    StepLimit(String),
    #[error("planning was interrupted")]
    Interrupted,
    #[error("the planner sent two empty replies in a row")]
    Empty,
}

impl weft_core::Hint for PlannerError {
    fn hint(&self) -> Option<String> {
        match self {
            PlannerError::Provider(error) => error.hint(),
            PlannerError::Interrupted => None,
            PlannerError::StepLimit(_) => Some(
                "give a more specific goal, or plan interactively (on a terminal, without --yes)"
                    .into(),
            ),
            _ => Some(
                "`weft plan log` shows what the planner did; try again, or another planner with --planner"
                    .into(),
            ),
        }
    }
}

/// The settings of one conversation.
pub struct SessionConfig {
    pub style: Style,
    pub system: String,
    /// The plan a revision edits.
    pub base: Option<Plan>,
    /// The user's goal, which becomes the plan's goal.
    pub goal: String,
    pub default_runner: Option<String>,
    pub known_runner: Box<dyn Fn(&str) -> bool + Send>,
    pub max_steps: usize,
    pub secrets: Vec<String>,
    /// PRD slug when the planner gives none.
    pub prd_slug: String,
    /// Raised when the user interrupts: the conversation ends at the next step.
    pub interrupt: Option<weft_core::interrupt::Interrupt>,
    /// A prose reply goes to the user for an answer (a conversation, or a revision at a
    /// terminal); otherwise the planner is nudged to emit.
    pub converse: bool,
    /// How the opening turn is named in the research log (its text carries the whole
    /// project context); `None` names it by the goal.
    pub opening_summary: Option<String>,
    /// API history size (characters) above which old tool results are pruned.
    pub history_budget: usize,
}

impl fmt::Debug for SessionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionConfig")
            .field("style", &self.style)
            .field("goal", &self.goal)
            .field("default_runner", &self.default_runner)
            .field("max_steps", &self.max_steps)
            .field("secrets", &format_args!("{} masked", self.secrets.len()))
            .finish_non_exhaustive()
    }
}

/// One planning conversation.
#[derive(Debug)]
pub struct Session {
    backend: Backend,
    config: SessionConfig,
    /// API history (agent CLIs keep their own).
    messages: Vec<Message>,
    turn: u32,
    prd: Option<Prd>,
}

/// What one model turn produced.
struct TurnText {
    text: String,
    truncated: bool,
}

/// What weft does after a reply.
enum Next {
    Done(Finish),
    /// Send this to the model without asking the user.
    Correct(String),
    /// Show the reply and wait for the user (or nudge, without one).
    Prose,
}

impl Session {
    pub fn new(backend: Backend, mut config: SessionConfig) -> Session {
        config.secrets = crate::tools::prepare_secrets(&config.secrets);
        let messages = vec![Message::system(config.system.clone())];
        Session {
            backend,
            config,
            messages,
            turn: 0,
            prd: None,
        }
    }

    pub fn label(&self) -> String {
        self.backend.label()
    }

    /// Run the conversation from its opening message to a plan, edits, or the user leaving.
    pub fn run(
        &mut self,
        opening: String,
        host: &mut dyn Host,
        approver: &mut dyn Approver,
    ) -> Result<Finish, PlannerError> {
        let mut message = opening;
        let mut repairs = 0usize;
        let mut nudges = 0usize;
        let mut empty_replies = 0usize;
        let mut from_user = true;
        loop {
            self.check_interrupt()?;
            if from_user {
                self.turn += 1;
                // The opening carries the project context; the goal is what a reader wants.
                if self.turn == 1 {
                    let summary = self
                        .config
                        .opening_summary
                        .clone()
                        .unwrap_or_else(|| self.config.goal.clone());
                    self.log_summarised(host, LogKind::User, &summary, &message);
                } else {
                    self.log_text(host, LogKind::User, &message);
                }
            } else {
                self.log_text(host, LogKind::Note, &message);
            }
            let reply = self.model_turn(&message, host, approver)?;
            if let Some(prd) = emit::extract_prd(&reply.text, &self.config.prd_slug) {
                match host.save_prd(&prd) {
                    Ok(path) => {
                        self.note(host, format!("PRD saved to {path}"));
                    }
                    Err(error) => self.note(host, format!("the PRD could not be saved: {error}")),
                }
                self.prd = Some(prd);
            }
            let shown = emit::strip_prd(&reply.text);
            self.log_text(host, LogKind::Assistant, &reply.text);
            host.event(PlannerEvent::Reply(shown.clone()));
            let next = if reply.text.trim().is_empty() && !reply.truncated {
                // Models sometimes end a turn with nothing: one reminder, then give up.
                empty_replies += 1;
                if empty_replies > 1 {
                    return Err(PlannerError::Empty);
                }
                Next::Correct(prompt::EMPTY_REPLY.to_owned())
            } else {
                empty_replies = 0;
                self.judge(&reply, &mut repairs)?
            };
            match next {
                Next::Done(finish) => return Ok(finish),
                Next::Correct(text) => {
                    host.event(PlannerEvent::Correcting(text.clone()));
                    message = text;
                    from_user = false;
                }
                Next::Prose if self.config.converse => match host.ask_user(&shown) {
                    Some(answer) => {
                        message = answer;
                        from_user = true;
                        repairs = 0;
                    }
                    None => {
                        return Ok(Finish::Abandoned {
                            prd: self.prd.take(),
                        });
                    }
                },
                Next::Prose => {
                    if nudges >= MAX_NUDGES {
                        return Err(PlannerError::NoPlan {
                            wanted: if self.config.style == Style::Revision {
                                "set of task edits"
                            } else {
                                "plan"
                            },
                            nudges,
                            last: cap(&shown, 500),
                        });
                    }
                    nudges += 1;
                    message = if self.config.style == Style::Revision {
                        prompt::REVISION_NUDGE.to_owned()
                    } else {
                        prompt::ONE_SHOT_NUDGE.to_owned()
                    };
                    host.event(PlannerEvent::Correcting(message.clone()));
                    from_user = false;
                }
            }
        }
    }

    /// Decide what a reply means: a plan to commit, edits, a repair, or prose.
    fn judge(&mut self, reply: &TurnText, repairs: &mut usize) -> Result<Next, PlannerError> {
        let revising = self.config.style == Style::Revision;
        let kind = emit::classify_reply(&reply.text);
        let correction = match kind {
            ReplyKind::Plan(value) if !revising => match emit::plan_from_value(
                &value,
                &self.config.goal,
                self.config.default_runner.as_deref(),
                &*self.config.known_runner,
            ) {
                Ok(plan) => {
                    return Ok(Next::Done(Finish::Plan {
                        plan,
                        prd: self.prd.take(),
                    }));
                }
                Err(problems) => {
                    if *repairs >= MAX_REPAIRS {
                        return Err(PlannerError::Rejected {
                            repairs: *repairs,
                            problems,
                        });
                    }
                    corrective_for_problems(&problems)
                }
            },
            ReplyKind::TaskOps(value) if revising => {
                let base = self
                    .config
                    .base
                    .as_ref()
                    .expect("a revision has a base plan");
                let applied = emit::parse_task_ops(&value)
                    .and_then(|ops| emit::apply_task_ops(base, &ops, &*self.config.known_runner));
                match applied {
                    Ok((plan, reports)) => {
                        return Ok(Next::Done(Finish::Edits {
                            plan,
                            reports,
                            prd: self.prd.take(),
                        }));
                    }
                    Err(problems) => {
                        if *repairs >= MAX_REPAIRS {
                            return Err(PlannerError::EditsRejected {
                                repairs: *repairs,
                                problems,
                            });
                        }
                        corrective_for_ops(&problems)
                    }
                }
            }
            ReplyKind::Broken { error, .. } => {
                if *repairs >= MAX_REPAIRS {
                    return Err(PlannerError::Unreadable {
                        repairs: *repairs,
                        error,
                    });
                }
                corrective_for_broken(&error)
            }
            ReplyKind::Truncated { .. } => {
                if *repairs >= MAX_REPAIRS {
                    return Err(PlannerError::Truncated { repairs: *repairs });
                }
                // Room for the re-emit: the research results have done their work.
                compact(&mut self.messages, 0);
                reemit(revising)
            }
            ReplyKind::Plan(_) | ReplyKind::TaskOps(_) => {
                // The wrong envelope for this session: tell the model which one is wanted.
                if *repairs >= MAX_REPAIRS {
                    return Ok(Next::Prose);
                }
                if revising {
                    prompt::REVISION_NUDGE.to_owned()
                } else {
                    "Reply with the complete plan as one JSON object `{\"tasks\": [...]}`, not task edits.".to_owned()
                }
            }
            ReplyKind::Prose if reply.truncated => {
                if *repairs >= MAX_REPAIRS {
                    return Err(PlannerError::Truncated { repairs: *repairs });
                }
                reemit(revising)
            }
            ReplyKind::Prose => return Ok(Next::Prose),
        };
        *repairs += 1;
        Ok(Next::Correct(correction))
    }

    /// One user-visible turn with the model, research included.
    fn model_turn(
        &mut self,
        message: &str,
        host: &mut dyn Host,
        approver: &mut dyn Approver,
    ) -> Result<TurnText, PlannerError> {
        match &mut self.backend {
            Backend::Agent(agent) => {
                // The CLI keeps the conversation; the transport decides when it needs the
                // instructions again.
                let reply = agent.send(&self.config.system, message, &mut |event| {
                    forward(host, event)
                })?;
                for step in &reply.steps {
                    host.event(PlannerEvent::Step {
                        tool: step.tool.clone(),
                        input: cap(&mask(&self.config.secrets, &step.input), 300),
                        outcome: step.outcome,
                    });
                    host.log(LogItem {
                        turn: self.turn,
                        kind: LogKind::Tool,
                        tool: Some(step.tool.clone()),
                        input: cap(&mask(&self.config.secrets, &step.input), 300),
                        outcome: Some(step.outcome),
                        detail: cap(&mask(&self.config.secrets, &step.detail), LOG_DETAIL_CHARS),
                        approval: None,
                    });
                }
                Ok(TurnText {
                    text: reply.text,
                    truncated: reply.truncated,
                })
            }
            Backend::Api { model, research } => {
                self.messages.push(Message::user(message));
                let specs = research.specs();
                let mut steps = 0usize;
                let mut wrap_ups = 0usize;
                // Calls already made this turn: a repeat is answered without running again.
                let mut made: std::collections::HashSet<(String, String)> =
                    std::collections::HashSet::new();
                loop {
                    let pruned = compact(&mut self.messages, self.config.history_budget);
                    if pruned > 0 {
                        host.event(PlannerEvent::Notice(format!(
                            "pruned {pruned} old tool result{} to keep the conversation within the model's context",
                            if pruned == 1 { "" } else { "s" }
                        )));
                    }
                    let reply = model
                        .complete(&self.messages, &specs, &mut |event| forward(host, event))?;
                    if reply.tool_calls.is_empty() {
                        self.messages
                            .push(Message::assistant(reply.text.clone(), Vec::new()));
                        return Ok(TurnText {
                            truncated: reply.finish == FinishReason::Length,
                            text: reply.text,
                        });
                    }
                    self.messages.push(Message::assistant(
                        reply.text.clone(),
                        reply.tool_calls.clone(),
                    ));
                    let over_budget = steps >= self.config.max_steps;
                    if over_budget {
                        wrap_ups += 1;
                    }
                    for call in &reply.tool_calls {
                        if weft_core::interrupt::Interrupt::raised(self.config.interrupt.as_ref()) {
                            return Err(PlannerError::Interrupted);
                        }
                        let unrun = if steps >= self.config.max_steps {
                            Some(prompt::BUDGET_SPENT)
                        } else {
                            steps += 1;
                            let key = (call.name.clone(), normalise_arguments(&call.arguments));
                            (!made.insert(key)).then_some(prompt::REPEATED_CALL)
                        };
                        if let Some(note) = unrun {
                            let input = mask(&self.config.secrets, &call.arguments);
                            host.log(LogItem {
                                turn: self.turn,
                                kind: LogKind::Tool,
                                tool: Some(call.name.clone()),
                                input: cap(&format!("{} {input}", call.name), 300),
                                outcome: Some(StepOutcome::NotExecuted),
                                detail: note.to_owned(),
                                approval: None,
                            });
                            host.event(PlannerEvent::Step {
                                tool: call.name.clone(),
                                input: cap(&input, 300),
                                outcome: StepOutcome::NotExecuted,
                            });
                            self.messages.push(Message::tool_result(&call.id, note));
                            continue;
                        }
                        let run = research.run(call, approver);
                        let approval = run.decision.as_ref().map(Decision::label);
                        host.event(PlannerEvent::Step {
                            tool: call.name.clone(),
                            input: run.input.clone(),
                            outcome: run.outcome,
                        });
                        host.log(LogItem {
                            turn: self.turn,
                            kind: LogKind::Tool,
                            tool: Some(call.name.clone()),
                            input: run.input.clone(),
                            outcome: Some(run.outcome),
                            detail: cap(&run.result, LOG_DETAIL_CHARS),
                            approval,
                        });
                        self.messages
                            .push(Message::tool_result(&call.id, run.result));
                    }
                    if over_budget && wrap_ups >= WRAP_UP_ROUNDS {
                        let text = format!(
                            "The planner kept calling tools after its research budget of {} steps was spent, so weft ended the turn.",
                            self.config.max_steps
                        );
                        self.note(host, text.clone());
                        return Err(PlannerError::StepLimit(text));
                    }
                }
            }
        }
    }

    fn check_interrupt(&self) -> Result<(), PlannerError> {
        if weft_core::interrupt::Interrupt::raised(self.config.interrupt.as_ref()) {
            return Err(PlannerError::Interrupted);
        }
        Ok(())
    }

    fn note(&self, host: &mut dyn Host, text: String) {
        host.log(LogItem {
            turn: self.turn,
            kind: LogKind::Note,
            tool: None,
            input: cap(&text, 300),
            outcome: None,
            detail: String::new(),
            approval: None,
        });
        host.event(PlannerEvent::Notice(text));
    }

    fn log_text(&self, host: &mut dyn Host, kind: LogKind, text: &str) {
        self.log_summarised(host, kind, first_line(text), text);
    }

    fn log_summarised(&self, host: &mut dyn Host, kind: LogKind, summary: &str, text: &str) {
        let masked = mask(&self.config.secrets, text);
        host.log(LogItem {
            turn: self.turn,
            kind,
            tool: None,
            input: cap(&mask(&self.config.secrets, summary), 300),
            outcome: None,
            detail: cap(&masked, LOG_DETAIL_CHARS),
            approval: None,
        });
    }
}

/// The request after a cut-off reply: the edits again in a revision, else the whole plan.
fn reemit(revising: bool) -> String {
    if revising {
        terse_reemit_ops()
    } else {
        terse_reemit()
    }
}

/// Prune old tool results (each kept to its start, with a note) while the history is over
/// `budget` characters, oldest first; the newest results and short ones stay whole.
/// Returns how many were pruned.
fn compact(messages: &mut [Message], budget: usize) -> usize {
    let size = |messages: &[Message]| -> usize {
        messages
            .iter()
            .map(|m| {
                m.content.len()
                    + m.tool_calls
                        .iter()
                        .map(|c| c.arguments.len() + c.name.len())
                        .sum::<usize>()
            })
            .sum()
    };
    let mut total = size(messages);
    if total <= budget {
        return 0;
    }
    let results: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == crate::chat::Role::Tool)
        .map(|(i, _)| i)
        .collect();
    let prunable = results.len().saturating_sub(KEEP_RECENT_RESULTS);
    let mut pruned = 0;
    for &index in &results[..prunable] {
        if total <= budget {
            break;
        }
        let content = &messages[index].content;
        if content.chars().count() <= SMALL_RESULT_CHARS || content.ends_with(PRUNED_NOTE) {
            continue;
        }
        let before = content.len();
        let kept: String = content.chars().take(PRUNED_KEEP_CHARS).collect();
        messages[index].content = format!("{kept}…{PRUNED_NOTE}");
        total = total - before + messages[index].content.len();
        pruned += 1;
    }
    pruned
}

const PRUNED_NOTE: &str =
    "\n[pruned by weft to save context; call the tool again if you need the rest]";

/// Tool arguments compared by meaning: `{"a":1, "b":2}` and `{"b":2,"a":1}` are one call.
fn normalise_arguments(arguments: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(value) => sorted(value).to_string(),
        Err(_) => arguments.trim().to_owned(),
    }
}

fn sorted(value: serde_json::Value) -> serde_json::Value {
    match value {
        serde_json::Value::Object(map) => {
            let mut entries: Vec<(String, serde_json::Value)> =
                map.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            serde_json::Value::Object(entries.into_iter().collect())
        }
        serde_json::Value::Array(items) => {
            serde_json::Value::Array(items.into_iter().map(sorted).collect())
        }
        other => other,
    }
}

fn forward(host: &mut dyn Host, event: StreamEvent) {
    match event {
        StreamEvent::Text(text) => host.event(PlannerEvent::Text(text)),
        StreamEvent::Reasoning(text) => host.event(PlannerEvent::Reasoning(text)),
        StreamEvent::ToolCallStarted { .. } => {}
    }
}

/// The research tools' masking: known values, then secret-looking assignments, tokens and
/// keys (an agent CLI that read a `.env` file reports its contents as step detail).
fn mask(secrets_list: &[String], text: &str) -> String {
    crate::tools::mask_text(text, secrets_list)
}

fn first_line(text: &str) -> &str {
    text.trim_start().lines().next().unwrap_or("")
}

/// `text` cut to `limit` characters, saying so.
pub(crate) fn cap(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}… [cut]", &text[..end]),
    }
}
