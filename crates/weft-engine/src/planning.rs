//! Planning sessions: the planner conversation wired to the store (draft plan, research
//! log, committed plan or edits, PRD path) and to the approval policy, whose asks any
//! terminal can answer through the store.
//!
//! Front ends supply a [`PlanFrontEnd`] (render events, ask the user, show approval
//! questions) and the environment; the engine reads neither the terminal nor `$HOME`.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::time::Duration;

use fs_err as fs;
use weft_core::approval::{
    ApprovalPolicy, Asker, Decision, Mode, Outcome, Request, Scope, Subject,
};
use weft_core::edit::EditReport;
use weft_core::event::{Event, EventKind, TaskEdit};
use weft_core::{Hint, Plan, PlanStatus, Timestamp};
use weft_planner::conversation::{
    Backend, DEFAULT_MAX_STEPS, Finish, Host, LogItem, PlannerError, Session, SessionConfig,
};
use weft_planner::emit::Prd;
use weft_planner::prompt;
use weft_planner::provider::agent_cli::{AgentCliConfig, AgentCliPlanner};
use weft_planner::provider::openai::{OpenAiConfig, OpenAiModel};
use weft_planner::tools::{Approver, Research, ResearchConfig};
use weft_store::{NewAsk, NewLogEntry, PlanDraft, PlanningInfo, Store, StoreError};

use crate::EngineError;

pub use weft_planner::conversation::PlannerEvent;
pub use weft_planner::log::StepOutcome;
pub use weft_planner::prompt::{RunnerChoice, Style};
pub use weft_planner::provider::agent_cli::AgentCliKind;

/// Which planner to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlannerChoice {
    /// An OpenAI-compatible endpoint (`WEFT_PLANNER_*`).
    OpenAi,
    /// An agent CLI in its read-only mode.
    Agent(AgentCliKind),
}

impl PlannerChoice {
    pub fn parse(text: &str) -> Option<PlannerChoice> {
        match text {
            "openai" | "api" => Some(PlannerChoice::OpenAi),
            other => other.parse().ok().map(PlannerChoice::Agent),
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            PlannerChoice::OpenAi => "openai",
            PlannerChoice::Agent(kind) => kind.name(),
        }
    }
}

/// Everything a planning session needs, resolved by the front end.
#[derive(Debug, Clone)]
pub struct PlanningConfig {
    pub workspace: PathBuf,
    pub planner: PlannerChoice,
    /// Overrides `WEFT_PLANNER_MODEL` / the CLI's default model.
    pub model: Option<String>,
    pub effort: Option<String>,
    /// The program an agent-CLI planner starts (its runner manifest's command).
    pub program: Option<String>,
    pub style: Style,
    pub runners: Vec<RunnerChoice>,
    pub default_runner: Option<String>,
    /// The environment the planner sees (keys and base URL are read from here).
    pub env: Vec<(String, String)>,
    pub secrets: Vec<String>,
    pub approval_mode: Mode,
    pub pre_approved: Vec<Scope>,
    /// Whether anyone can be asked (a terminal, or another terminal through the store).
    pub approval_channel: bool,
    pub max_steps: usize,
    /// Wall clock per agent-CLI turn; idle limit for API streams.
    pub turn_timeout: Duration,
    /// How often an open ask looks for an answer from another terminal.
    pub approval_poll: Duration,
    /// Raised by the front end when the user interrupts (Ctrl-C).
    pub interrupt: Option<crate::Interrupt>,
    /// Prose replies go to the user (a conversation; a revision at a terminal).
    pub converse: bool,
    /// How an agent-CLI planner's processes are contained (see
    /// [`crate::contain::planner_containment`]); `None`: uncontained.
    pub contain: Option<crate::contain::Containment>,
    /// How the openai planner's research commands are contained (see
    /// [`crate::contain::research_containment`]); `None`: run directly.
    pub research_contain: Option<crate::contain::Containment>,
}

impl PlanningConfig {
    pub fn new(workspace: PathBuf, planner: PlannerChoice, style: Style) -> PlanningConfig {
        PlanningConfig {
            workspace,
            planner,
            model: None,
            effort: None,
            program: None,
            style,
            runners: Vec::new(),
            default_runner: None,
            env: Vec::new(),
            secrets: Vec::new(),
            approval_mode: Mode::Ask,
            pre_approved: Vec::new(),
            approval_channel: false,
            max_steps: DEFAULT_MAX_STEPS,
            turn_timeout: Duration::from_secs(600),
            approval_poll: Duration::from_millis(250),
            interrupt: None,
            converse: style == Style::Conversation,
            contain: None,
            research_contain: None,
        }
    }

    fn env(&self, name: &str) -> Option<String> {
        self.env
            .iter()
            .rev()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.clone())
            .filter(|value| !value.is_empty())
    }
}

/// An approval question for the front end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalPrompt {
    /// The id `weft approvals allow ID` takes.
    pub id: i64,
    pub subject: String,
    pub scope: String,
    pub expires_at: Option<Timestamp>,
}

/// A person's answer typed into the front end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalAnswer {
    pub allowed: bool,
    /// A wider scope to remember (`path:/etc/*`, `command:git`).
    pub scope: Option<String>,
}

/// The front end's side of a planning session.
pub trait PlanFrontEnd {
    fn event(&mut self, event: &PlannerEvent);
    /// The user's next message after the planner's `reply`; `None` ends the conversation.
    fn ask_user(&mut self, reply: &str) -> Option<String>;
    /// An approval question is open: show it (the first call for an id) and wait up to
    /// `wait` for an answer typed here. Another terminal may answer meanwhile.
    fn approval(&mut self, ask: &ApprovalPrompt, wait: Duration) -> Option<ApprovalAnswer>;
    /// How an approval question was settled (answered here, elsewhere, expired).
    fn approval_settled(&mut self, ask: &ApprovalPrompt, decision: &str);
    /// Milliseconds since the epoch (the engine reads no clock of its own).
    fn now(&self) -> Timestamp;
}

/// How a session ended, for the front end.
#[derive(Debug)]
pub enum PlanningOutcome {
    Committed {
        plan: Plan,
        prd_path: Option<String>,
    },
    Revised {
        plan: Plan,
        reports: Vec<EditReport>,
        prd_path: Option<String>,
    },
    /// The user left before a plan; the draft keeps the research log.
    Abandoned { draft: String },
}

#[derive(Debug, thiserror::Error)]
pub enum PlanningError {
    #[error(transparent)]
    Planner(#[from] PlannerError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    /// The planner's error is part of the message and deliberately not a `source()`, so a
    /// front end printing the source chain says it once.
    #[error("plan {plan}: {error}")]
    Failed {
        /// The draft that keeps the research log.
        plan: String,
        error: PlannerError,
    },
}

impl Hint for PlanningError {
    fn hint(&self) -> Option<String> {
        match self {
            PlanningError::Planner(error) => error.hint(),
            PlanningError::Engine(error) => error.hint(),
            PlanningError::Failed { plan, error } => Some(match error.hint() {
                Some(hint) => format!("{hint}; `weft plan log --plan {plan}` shows the research"),
                None => format!("`weft plan log --plan {plan}` shows the research"),
            }),
        }
    }
}

impl From<StoreError> for PlanningError {
    fn from(error: StoreError) -> Self {
        PlanningError::Engine(EngineError::Store(error))
    }
}

/// The backend a config asks for.
pub fn backend(config: &PlanningConfig) -> Result<Backend, PlannerError> {
    match &config.planner {
        PlannerChoice::OpenAi => {
            let mut openai =
                OpenAiConfig::from_env(&|name| config.env(name), config.model.as_deref())?;
            // Reasoning models can be silent for minutes before their first byte, and a
            // long plan streams for a while: silence is bounded by the planner timeout, the
            // whole reply by three times that.
            openai.idle_timeout = config.turn_timeout;
            openai.request_timeout = config.turn_timeout.saturating_mul(3);
            openai.interrupt = config.interrupt.clone();
            let mut research = ResearchConfig::new(config.workspace.clone());
            research.secrets = config.secrets.clone();
            research.home = config.env("HOME").map(PathBuf::from);
            research.env = Some(config.env.clone());
            research.contain = config.research_contain.clone();
            Ok(Backend::Api {
                model: Box::new(OpenAiModel::new(openai)),
                research: Research::new(research),
            })
        }
        PlannerChoice::Agent(kind) => {
            let mut cli = AgentCliConfig::new(*kind, config.workspace.clone());
            if let Some(program) = &config.program {
                cli.program = program.clone();
            }
            cli.model = config.model.clone();
            cli.effort = config.effort.clone();
            cli.turn_timeout = config.turn_timeout;
            // Contained, the CLI's environment is its containment's allow-list of weft's
            // (`contain::planner_containment`); handing it the whole planning
            // environment as extra variables would pass everything.
            cli.env = match &config.contain {
                Some(contain) if contain.env.is_some() => Vec::new(),
                _ => config.env.clone(),
            };
            cli.interrupt = config.interrupt.clone();
            cli.contain = config.contain.clone();
            Ok(Backend::Agent(Box::new(AgentCliPlanner::new(cli))))
        }
    }
}

fn session_config(
    config: &PlanningConfig,
    goal: &str,
    base: Option<Plan>,
    prd_slug: String,
) -> SessionConfig {
    let names: Vec<String> = config.runners.iter().map(|r| r.name.clone()).collect();
    SessionConfig {
        style: config.style,
        system: prompt::system_prompt(
            config.style,
            &config.runners,
            config.default_runner.as_deref(),
        ),
        base,
        goal: goal.to_owned(),
        default_runner: config.default_runner.clone(),
        known_runner: Box::new(move |name| names.iter().any(|n| n == name)),
        max_steps: config.max_steps,
        secrets: config.secrets.clone(),
        prd_slug,
        interrupt: config.interrupt.clone(),
        converse: config.converse,
        opening_summary: None,
        history_budget: weft_planner::conversation::DEFAULT_HISTORY_BUDGET,
    }
}

/// Plan from a goal: a draft plan holds the research log while the conversation runs; the
/// validated plan replaces its tasks and becomes the current plan.
pub fn plan_from_goal(
    store: &mut Store,
    goal: &str,
    config: &PlanningConfig,
    front: &mut dyn PlanFrontEnd,
) -> Result<PlanningOutcome, PlanningError> {
    let backend = backend(config)?;
    let label = backend.label();
    let previous = store.current_plan_id()?;
    let draft = store.create_plan(
        PlanDraft {
            goal: goal.to_owned(),
            runner: config.default_runner.clone(),
            status: PlanStatus::Draft,
            tasks: Vec::new(),
            source: format!("planner {label}"),
        },
        front.now(),
    )?;
    // A draft is not the current plan until it has tasks.
    if let Some(previous) = previous {
        store.set_current_plan(&previous, front.now())?;
    }
    store.set_planning(
        &draft.id,
        &PlanningInfo {
            planner: label,
            one_shot: config.style == Style::OneShot,
            prd_path: None,
            updated_at: front.now(),
        },
    )?;
    let slug = weft_core::slug::slugify(goal);
    let mut session = Session::new(backend, session_config(config, goal, None, slug));
    let opening = prompt::opening_message(goal, &prompt::project_context(&config.workspace));
    let (result, prd_path) = converse(&mut session, opening, store, &draft.id, config, front);
    let finish = result.map_err(|error| PlanningError::Failed {
        plan: draft.short_id().to_owned(),
        error,
    })?;
    match finish {
        Finish::Plan { plan: imported, .. } => {
            let now = front.now();
            let tasks = imported.tasks;
            let (plan, ()) = store.update_plan(&draft.id, now, move |current| {
                let mut next = current.clone();
                next.tasks = tasks;
                next.status = PlanStatus::Approved;
                let planned = EventKind::PlanPlanned {
                    tasks: next.tasks.len(),
                };
                Ok((next, Event::new(planned), ()))
            })?;
            store.set_current_plan(&plan.id, now)?;
            record_prd(store, &plan.id, prd_path.as_deref(), now)?;
            Ok(PlanningOutcome::Committed { plan, prd_path })
        }
        Finish::Abandoned { .. } => Ok(PlanningOutcome::Abandoned {
            draft: draft.short_id().to_owned(),
        }),
        Finish::Edits { .. } => unreachable!("a goal session never edits"),
    }
}

/// Revise a stored plan: the planner re-reads the goal, the PRD and the plan, and its edits
/// are validated like hand edits and stored atomically.
pub fn revise_plan(
    store: &mut Store,
    plan_id: &str,
    request: &str,
    config: &PlanningConfig,
    front: &mut dyn PlanFrontEnd,
) -> Result<PlanningOutcome, PlanningError> {
    let base = store.plan(plan_id)?;
    let info = store.planning(plan_id)?;
    let prd_path = info.as_ref().and_then(|i| i.prd_path.clone());
    let prd_text = prd_path
        .as_deref()
        .and_then(|p| fs::read_to_string(config.workspace.join(p)).ok());
    let backend = backend(config)?;
    let slug = prd_path
        .as_deref()
        .and_then(|p| {
            Path::new(p)
                .parent()?
                .file_name()?
                .to_str()
                .map(str::to_owned)
        })
        .unwrap_or_else(|| weft_core::slug::slugify(&base.goal));
    let mut revision = config.clone();
    revision.style = Style::Revision;
    let mut session_settings = session_config(&revision, &base.goal, Some(base.clone()), slug);
    session_settings.opening_summary = Some(format!("revise: {request}"));
    let mut session = Session::new(backend, session_settings);
    let opening =
        prompt::revision_message(&base.goal, prd_text.as_deref(), &plan_lines(&base), request);
    let (result, saved_prd) = converse(&mut session, opening, store, plan_id, &revision, front);
    let finish = result.map_err(|error| PlanningError::Failed {
        plan: base.short_id().to_owned(),
        error,
    })?;
    let now = front.now();
    match finish {
        Finish::Edits {
            plan: edited,
            reports,
            ..
        } => {
            let base_revision = base.revision;
            let edits: Vec<TaskEdit> = reports
                .iter()
                .map(|r| TaskEdit {
                    task: r.task.clone(),
                    edit: r.event.clone(),
                })
                .collect();
            let (plan, ()) = store.update_plan(plan_id, now, move |current| {
                if current.revision != base_revision {
                    return Err(StoreError::Stale {
                        plan: current.short_id().to_owned(),
                        detail: "it changed while the planner revised it".into(),
                    });
                }
                Ok((edited, Event::new(EventKind::PlanRevised { edits }), ()))
            })?;
            record_prd(store, &plan.id, saved_prd.as_deref(), now)?;
            Ok(PlanningOutcome::Revised {
                plan,
                reports,
                prd_path: saved_prd.or(prd_path),
            })
        }
        Finish::Abandoned { .. } => Ok(PlanningOutcome::Abandoned {
            draft: base.short_id().to_owned(),
        }),
        Finish::Plan { .. } => unreachable!("a revision session only edits"),
    }
}

/// Run the session with the store-backed host and approver; returns where a PRD was saved.
fn converse(
    session: &mut Session,
    opening: String,
    store: &mut Store,
    plan_id: &str,
    config: &PlanningConfig,
    front: &mut dyn PlanFrontEnd,
) -> (Result<Finish, PlannerError>, Option<String>) {
    let shared = RefCell::new(Shared {
        store,
        front,
        plan_id: plan_id.to_owned(),
        workspace: config.workspace.clone(),
        prd_path: None,
        log_error: None,
    });
    let mut policy = ApprovalPolicy::new(config.approval_mode, config.pre_approved.clone());
    policy.set_channel(config.approval_channel);
    let mut host = StoreHost { shared: &shared };
    let mut approver = StoreApprover {
        shared: &shared,
        policy,
        poll: config.approval_poll,
        interrupt: config.interrupt.clone(),
    };
    let result = session.run(opening, &mut host, &mut approver);
    let shared = shared.into_inner();
    (result, shared.prd_path)
}

/// The store and the front end, shared by the host and the approver (one thread; never
/// borrowed by both at once).
struct Shared<'a> {
    store: &'a mut Store,
    front: &'a mut dyn PlanFrontEnd,
    plan_id: String,
    workspace: PathBuf,
    prd_path: Option<String>,
    /// The first failure to write the log; planning goes on, the front end is told.
    log_error: Option<String>,
}

struct StoreHost<'s, 'a> {
    shared: &'s RefCell<Shared<'a>>,
}

impl Host for StoreHost<'_, '_> {
    fn event(&mut self, event: PlannerEvent) {
        self.shared.borrow_mut().front.event(&event);
    }

    fn log(&mut self, item: LogItem) {
        let mut shared = self.shared.borrow_mut();
        let now = shared.front.now();
        let entry = NewLogEntry {
            turn: item.turn,
            kind: item.kind.as_str().to_owned(),
            tool: item.tool,
            input: item.input,
            outcome: item.outcome.map(|o| o.as_str().to_owned()),
            detail: item.detail,
            approval: item.approval,
        };
        let plan_id = shared.plan_id.clone();
        if let Err(error) = shared.store.append_planner_log(&plan_id, &[entry], now)
            && shared.log_error.is_none()
        {
            let text = format!("the research log could not be written: {error}");
            shared.front.event(&PlannerEvent::Notice(text.clone()));
            shared.log_error = Some(text);
        }
    }

    fn save_prd(&mut self, prd: &Prd) -> Result<String, String> {
        let mut shared = self.shared.borrow_mut();
        let relative = format!(".scratch/{}/PRD.md", prd.slug);
        let path = shared.workspace.join(&relative);
        write_atomically(&path, &prd.markdown).map_err(|e| e.to_string())?;
        shared.prd_path = Some(relative.clone());
        Ok(relative)
    }

    fn ask_user(&mut self, reply: &str) -> Option<String> {
        self.shared.borrow_mut().front.ask_user(reply)
    }
}

/// The approval policy of the session, its asks published in the store so that any
/// terminal can answer them (`weft approvals allow ID`).
struct StoreApprover<'s, 'a> {
    shared: &'s RefCell<Shared<'a>>,
    policy: ApprovalPolicy,
    poll: Duration,
    interrupt: Option<crate::Interrupt>,
}

impl Approver for StoreApprover<'_, '_> {
    fn decide(&mut self, subject: Subject) -> Decision {
        let mut shared = self.shared.borrow_mut();
        let now = shared.front.now();
        let request = Request::new(subject.clone(), Asker::Planner);
        let (ask, waiter) = match self.policy.request(request, now) {
            Outcome::Decided(decision) => return decision,
            Outcome::Pending { ask, waiter } => (ask, waiter),
        };
        let view = self
            .policy
            .open_asks()
            .into_iter()
            .find(|view| view.id == ask)
            .expect("a pending request has an open ask");
        let plan_id = shared.plan_id.clone();
        let published = shared.store.open_ask(&NewAsk {
            plan_id: Some(plan_id),
            owner_pid: std::process::id(),
            scope: view.scope.to_string(),
            subject: subject.to_string(),
            asker: "planner".into(),
            created_at: now,
            expires_at: view.expires_at,
        });
        let prompt = ApprovalPrompt {
            id: published.as_ref().copied().unwrap_or(0),
            subject: subject.to_string(),
            scope: view.scope.to_string(),
            expires_at: view.expires_at,
        };
        let decision = loop {
            let answer = shared.front.approval(&prompt, self.poll);
            let now = shared.front.now();
            // An answer typed here wins; otherwise look for one from another terminal.
            let answer = answer.or_else(|| {
                let id = published.as_ref().ok()?;
                let stored = shared.store.ask(*id).ok()??;
                Some(ApprovalAnswer {
                    allowed: stored.answer_allowed?,
                    scope: stored.answer_scope,
                })
            });
            let mut settled = Vec::new();
            if let Some(answer) = answer {
                let scope = answer.scope.as_deref().and_then(|s| Scope::parse(s).ok());
                match self.policy.answer(ask, answer.allowed, scope, now) {
                    Ok(done) => settled = done,
                    // A scope that does not cover the ask: remember the plain answer.
                    Err(_) => {
                        settled = self
                            .policy
                            .answer(ask, answer.allowed, None, now)
                            .unwrap_or_default()
                    }
                }
            }
            settled.extend(self.policy.expire(now));
            if crate::interrupted(self.interrupt.as_ref()) {
                // Nobody waits for the answer any more.
                settled.extend(self.policy.planner_stopped(now));
            }
            if let Some(mine) = settled.into_iter().find(|s| s.waiter == waiter) {
                break mine.decision;
            }
        };
        let label = decision.label();
        if let Ok(id) = published {
            let now = shared.front.now();
            let _ = shared.store.settle_ask(id, &label, now);
        }
        shared.front.approval_settled(&prompt, &label);
        decision
    }
}

fn record_prd(
    store: &mut Store,
    plan_id: &str,
    prd_path: Option<&str>,
    now: Timestamp,
) -> Result<(), StoreError> {
    if let Some(mut info) = store.planning(plan_id)? {
        if prd_path.is_some() {
            info.prd_path = prd_path.map(str::to_owned);
        }
        info.updated_at = now;
        store.set_planning(plan_id, &info)?;
    }
    Ok(())
}

/// One line per task, as the reviser sees the plan.
fn plan_lines(plan: &Plan) -> String {
    plan.tasks
        .iter()
        .map(|task| {
            let deps = if task.dependencies.is_empty() {
                String::new()
            } else {
                format!(" deps: {}", task.dependencies.join(", "))
            };
            let runner = task
                .runner
                .as_deref()
                .map(|r| format!(" runner: {r}"))
                .unwrap_or_default();
            format!(
                "#{} {} [{}] {:?}{runner}{deps}\n    prompt: {}",
                task.order,
                task.id,
                task.status,
                task.title,
                first_chars(&task.prompt, 300)
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Write `text` beside `path` and rename it into place, so a reader never sees half a file.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let temporary = dir.join(format!(
        ".{}.weft-{}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        std::process::id()
    ));
    fs::write(&temporary, text)?;
    fs::rename(&temporary, path)
}

fn first_chars(text: &str, limit: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(limit) {
        None => flat,
        Some((end, _)) => format!("{}…", &flat[..end]),
    }
}
