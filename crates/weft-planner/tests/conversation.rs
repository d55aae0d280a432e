//! The planning conversation driven directly, with hand-written fakes for the model, the
//! agent CLI, the host and the approver: every turn weft takes on its own (correctives,
//! nudges, re-emits, wrap-up rounds) and every log entry it writes, without HTTP.
//!
//! `crates/weft/tests/cli/planner.rs` covers the same session through the binary and a mock
//! server; these tests pin the exact messages and counts that are awkward to see from there.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use fs_err as fs;
use serde_json::{Value, json};
use weft_core::approval::{Decision, Source, Subject};
use weft_core::{Plan, PlanStatus, TaskStatus, WorkflowFile, WorkflowFormat};
use weft_planner::chat::{
    AgentPlanner, AgentReply, AgentStep, ChatModel, FinishReason, Message, Reply, Role,
    StreamEvent, ToolCall, ToolSpec,
};
use weft_planner::conversation::{
    Backend, DEFAULT_HISTORY_BUDGET, DEFAULT_MAX_STEPS, Finish, Host, LogItem, LogKind,
    PlannerError, PlannerEvent, Session, SessionConfig,
};
use weft_planner::emit::{
    MAX_REPAIRS, PlanProblems, Prd, corrective_for_broken, corrective_for_ops,
    corrective_for_problems, terse_reemit, terse_reemit_ops,
};
use weft_planner::log::StepOutcome;
use weft_planner::prompt::{BUDGET_SPENT, ONE_SHOT_NUDGE, REVISION_NUDGE, Style};
use weft_planner::tools::{Approver, Research, ResearchConfig};
use weft_planner::{ProviderError, Usage};

// ---------------------------------------------------------------------------------------
// Fakes
// ---------------------------------------------------------------------------------------

const GOAL: &str = "Add a JSON API for the notes";
const SYSTEM: &str = "SYSTEM PROMPT FOR THE TEST";
const OPENING: &str = "<goal>\nAdd a JSON API for the notes\n</goal>";
const RUNNERS: [&str; 2] = ["claude-code", "codex"];
const SECRET: &str = "sk-test-0123456789abcdefSECRET";

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A chat model answering from a queue; records the messages of every call.
#[derive(Debug)]
struct ScriptedModel {
    replies: VecDeque<Reply>,
    calls: Arc<Mutex<Vec<Vec<Message>>>>,
}

impl ChatModel for ScriptedModel {
    fn label(&self) -> String {
        "scripted:model".into()
    }

    fn complete(
        &mut self,
        messages: &[Message],
        tools: &[ToolSpec],
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<Reply, ProviderError> {
        assert!(
            tools.iter().any(|t| t.name == "read_file"),
            "the research tools are offered on every call"
        );
        let mut calls = lock(&self.calls);
        calls.push(messages.to_vec());
        let reply = self.replies.pop_front().unwrap_or_else(|| {
            panic!(
                "the model was called {} times, more than scripted",
                calls.len()
            )
        });
        if !reply.text.is_empty() {
            on_event(StreamEvent::Text(reply.text.clone()));
        }
        Ok(reply)
    }
}

/// What an agent CLI was sent: (system, message).
type AgentSends = Arc<Mutex<Vec<(String, String)>>>;

/// An agent CLI answering from a queue.
#[derive(Debug)]
struct ScriptedAgent {
    replies: VecDeque<AgentReply>,
    sent: AgentSends,
}

impl AgentPlanner for ScriptedAgent {
    fn label(&self) -> String {
        "scripted-agent".into()
    }

    fn send(
        &mut self,
        system: &str,
        message: &str,
        on_event: &mut dyn FnMut(StreamEvent),
    ) -> Result<AgentReply, ProviderError> {
        lock(&self.sent).push((system.to_owned(), message.to_owned()));
        let reply = self
            .replies
            .pop_front()
            .expect("the agent was sent more turns than scripted");
        on_event(StreamEvent::Text(reply.text.clone()));
        Ok(reply)
    }
}

/// Records everything the session tells its host; answers from a script.
#[derive(Debug, Default)]
struct RecordingHost {
    events: Vec<PlannerEvent>,
    logs: Vec<LogItem>,
    prds: Vec<Prd>,
    /// What `ask_user` returns, in order; `None` (or an empty script) ends the conversation.
    answers: VecDeque<Option<String>>,
    /// The replies `ask_user` was shown.
    asked: Vec<String>,
    /// `save_prd` fails with this when set.
    prd_error: Option<String>,
}

impl RecordingHost {
    fn answering(answers: &[&str]) -> RecordingHost {
        RecordingHost {
            answers: answers.iter().map(|a| Some((*a).to_owned())).collect(),
            ..RecordingHost::default()
        }
    }

    fn kinds(&self) -> Vec<(u32, LogKind)> {
        self.logs.iter().map(|l| (l.turn, l.kind)).collect()
    }

    fn tool_logs(&self) -> Vec<&LogItem> {
        self.logs
            .iter()
            .filter(|l| l.kind == LogKind::Tool)
            .collect()
    }

    fn correcting(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter_map(|e| match e {
                PlannerEvent::Correcting(text) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    fn notices(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter_map(|e| match e {
                PlannerEvent::Notice(text) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    fn replies(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter_map(|e| match e {
                PlannerEvent::Reply(text) => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }
}

impl Host for RecordingHost {
    fn event(&mut self, event: PlannerEvent) {
        self.events.push(event);
    }

    fn log(&mut self, item: LogItem) {
        self.logs.push(item);
    }

    fn save_prd(&mut self, prd: &Prd) -> Result<String, String> {
        self.prds.push(prd.clone());
        match &self.prd_error {
            Some(error) => Err(error.clone()),
            None => Ok(format!(".scratch/{}/PRD.md", prd.slug)),
        }
    }

    fn ask_user(&mut self, reply: &str) -> Option<String> {
        self.asked.push(reply.to_owned());
        self.answers.pop_front().flatten()
    }
}

/// Answers from a queue (then denies as nobody-to-ask); records every subject.
#[derive(Debug, Default)]
struct ScriptedApprover {
    answers: VecDeque<(bool, Source)>,
    seen: Vec<Subject>,
}

impl Approver for ScriptedApprover {
    fn decide(&mut self, subject: Subject) -> Decision {
        let (allowed, source) = self
            .answers
            .pop_front()
            .unwrap_or((false, Source::NoChannel));
        let scope = subject.scope();
        self.seen.push(subject);
        Decision {
            scope,
            allowed,
            source,
            decided_at: 0,
        }
    }
}

// ---------------------------------------------------------------------------------------
// Builders
// ---------------------------------------------------------------------------------------

/// A workspace with two small files, and a folder beside it (outside the workspace).
struct Fixture {
    _root: tempfile::TempDir,
    workspace: PathBuf,
    outside: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let root = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(root.path()).unwrap();
        let workspace = base.join("work");
        let outside = base.join("outside");
        fs::create_dir_all(workspace.join("src")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(
            workspace.join("src/lib.rs"),
            "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n",
        )
        .unwrap();
        fs::write(workspace.join("README.md"), "# notes\nA note keeper.\n").unwrap();
        Fixture {
            _root: root,
            workspace,
            outside,
        }
    }

    fn research(&self) -> Research {
        Research::new(ResearchConfig::new(self.workspace.clone()))
    }

    fn write_outside(&self, name: &str, text: &str) -> PathBuf {
        let path = self.outside.join(name);
        fs::write(&path, text).unwrap();
        path
    }
}

fn config(style: Style) -> SessionConfig {
    SessionConfig {
        style,
        system: SYSTEM.into(),
        base: None,
        goal: GOAL.into(),
        default_runner: Some("claude-code".into()),
        known_runner: Box::new(|name| RUNNERS.contains(&name)),
        max_steps: DEFAULT_MAX_STEPS,
        secrets: Vec::new(),
        prd_slug: "Fallback Slug".into(),
        interrupt: None,
        converse: style == Style::Conversation,
        opening_summary: None,
        history_budget: DEFAULT_HISTORY_BUDGET,
    }
}

type Calls = Arc<Mutex<Vec<Vec<Message>>>>;

fn api_session(fixture: &Fixture, config: SessionConfig, replies: Vec<Reply>) -> (Session, Calls) {
    let calls = Calls::default();
    let model = ScriptedModel {
        replies: replies.into(),
        calls: Arc::clone(&calls),
    };
    let backend = Backend::Api {
        model: Box::new(model),
        research: fixture.research(),
    };
    (Session::new(backend, config), calls)
}

fn text(text: impl Into<String>) -> Reply {
    Reply {
        text: text.into(),
        tool_calls: Vec::new(),
        finish: FinishReason::Stop,
        usage: Some(Usage::default()),
    }
}

fn cut_by_length(text: impl Into<String>) -> Reply {
    Reply {
        finish: FinishReason::Length,
        ..self::text(text)
    }
}

fn tool_calls(calls: &[(&str, &str, Value)]) -> Reply {
    Reply {
        text: String::new(),
        tool_calls: calls
            .iter()
            .map(|(id, name, arguments)| ToolCall {
                id: (*id).to_owned(),
                name: (*name).to_owned(),
                arguments: arguments.to_string(),
            })
            .collect(),
        finish: FinishReason::ToolCalls,
        usage: None,
    }
}

/// A valid two-task plan that also names a goal of its own (which weft must ignore).
fn plan_reply() -> String {
    let plan = json!({
        "goal": "A goal the model made up",
        "tasks": [
            {"id": "schema", "title": "Write the schema", "prompt": "Create schema.sql"},
            {"id": "api", "title": "Serve the API", "prompt": "Serve /notes", "dependencies": ["schema"], "runner": "codex"}
        ]
    });
    format!("Here is the plan:\n```json\n{plan:#}\n```")
}

/// The plan with a dependency on a later task and an unknown runner.
fn invalid_plan_reply() -> String {
    json!({"tasks": [
        {"id": "a", "title": "A", "prompt": "p", "dependencies": ["b"]},
        {"id": "b", "title": "B", "prompt": "p", "runner": "gpt-coder"}
    ]})
    .to_string()
}

fn invalid_plan_problems() -> PlanProblems {
    PlanProblems::new(vec![
        "task #1 \"a\" depends on \"b\" (#2), which comes later in the order; a task may only depend on earlier tasks".into(),
        "task #2 \"b\" uses the runner \"gpt-coder\", which is not available; use one of the runners you were given, or omit `runner` for the default".into(),
    ])
}

/// The messages of call `n` (0-based).
fn call(calls: &Calls, n: usize) -> Vec<Message> {
    lock(calls)
        .get(n)
        .cloned()
        .unwrap_or_else(|| panic!("the model was not called {} times", n + 1))
}

fn call_count(calls: &Calls) -> usize {
    lock(calls).len()
}

/// The last message of call `n`, which must be a user message (a turn weft or the user sent).
fn sent(calls: &Calls, n: usize) -> String {
    let messages = call(calls, n);
    let last = messages.last().expect("a call has messages");
    assert_eq!(last.role, Role::User, "call {n} ends with {last:?}");
    last.content.clone()
}

fn tool_results(messages: &[Message]) -> Vec<(String, String)> {
    messages
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| {
            (
                m.tool_call_id.clone().unwrap_or_default(),
                m.content.clone(),
            )
        })
        .collect()
}

fn plan_of(finish: Finish) -> weft_core::workflow::ImportedPlan {
    match finish {
        Finish::Plan { plan, .. } => plan,
        other => panic!("expected a plan, got {other:?}"),
    }
}

fn run(
    session: &mut Session,
    host: &mut RecordingHost,
    approver: &mut ScriptedApprover,
) -> Result<Finish, PlannerError> {
    session.run(OPENING.to_owned(), host, approver)
}

/// Every 8-character piece of `secret` (a partly masked secret still leaks).
fn secret_pieces(secret: &str) -> Vec<&str> {
    (0..=secret.len() - 8).map(|i| &secret[i..i + 8]).collect()
}

fn assert_no_secret(item: &LogItem, secret: &str) {
    for piece in secret_pieces(secret) {
        assert!(
            !item.input.contains(piece) && !item.detail.contains(piece),
            "part of the secret ({piece:?}) is in the log item {item:#?}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Plans, interviews, abandoning
// ---------------------------------------------------------------------------------------

#[test]
fn an_eager_planner_commits_its_first_reply_with_the_users_goal() {
    let fixture = Fixture::new();
    let (mut session, calls) = api_session(
        &fixture,
        config(Style::Conversation),
        vec![text(plan_reply())],
    );
    let mut host = RecordingHost::default();
    let mut approver = ScriptedApprover::default();

    let finish = run(&mut session, &mut host, &mut approver).unwrap();
    let Finish::Plan { plan, prd } = finish else {
        panic!("expected a plan")
    };
    assert_eq!(plan.goal, GOAL, "the model's own goal is ignored");
    assert!(prd.is_none());
    let ids: Vec<&str> = plan.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["schema", "api"]);
    assert_eq!(plan.tasks[1].dependencies, ["schema"]);
    assert_eq!(plan.tasks[1].runner.as_deref(), Some("codex"));
    assert_eq!(plan.runner.as_deref(), Some("claude-code"));

    // One call: the system prompt and the opening, nothing else.
    assert_eq!(call_count(&calls), 1);
    assert_eq!(
        call(&calls, 0),
        [Message::system(SYSTEM), Message::user(OPENING)]
    );
    assert!(
        host.asked.is_empty(),
        "a plan needs no answer from the user"
    );
    assert!(host.correcting().is_empty());
    assert_eq!(host.kinds(), [(1, LogKind::User), (1, LogKind::Assistant)]);
    assert_eq!(
        host.logs[0].input, GOAL,
        "the opening is logged by its goal"
    );
    assert_eq!(host.logs[0].detail, OPENING);
    assert_eq!(host.logs[1].detail, plan_reply());
    assert!(
        host.events.contains(&PlannerEvent::Text(plan_reply())),
        "streamed text is forwarded"
    );
    assert_eq!(host.replies(), [plan_reply()]);
}

#[test]
fn an_interviewing_planner_asks_outlines_then_plans() {
    let fixture = Fixture::new();
    let question = "I found src/lib.rs. Which storage do you want? I recommend SQLite.";
    let outline = "Outline:\n1. Write the schema.\n2. Serve the API.\nDoes that look right?";
    let (mut session, calls) = api_session(
        &fixture,
        config(Style::Conversation),
        vec![text(question), text(outline), text(plan_reply())],
    );
    let mut host = RecordingHost::answering(&["SQLite, please", "Yes, go ahead"]);
    let mut approver = ScriptedApprover::default();

    let plan = plan_of(run(&mut session, &mut host, &mut approver).unwrap());
    assert_eq!(plan.goal, GOAL);
    assert_eq!(host.asked, [question, outline]);
    assert_eq!(call_count(&calls), 3);
    assert_eq!(sent(&calls, 1), "SQLite, please");
    assert_eq!(sent(&calls, 2), "Yes, go ahead");
    // The whole history goes back each time.
    let roles: Vec<Role> = call(&calls, 2).iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::User,
            Role::Assistant,
            Role::User
        ]
    );
    assert_eq!(call(&calls, 2)[2].content, question);
    assert_eq!(
        host.kinds(),
        [
            (1, LogKind::User),
            (1, LogKind::Assistant),
            (2, LogKind::User),
            (2, LogKind::Assistant),
            (3, LogKind::User),
            (3, LogKind::Assistant)
        ]
    );
    assert!(host.correcting().is_empty());
}

#[test]
fn the_repair_budget_starts_again_after_the_user_answers() {
    let broken = "{\"tasks\": [{\"title\": 'A'}]}";
    let fixture = Fixture::new();
    let (mut session, calls) = api_session(
        &fixture,
        config(Style::Conversation),
        vec![
            text("Which storage do you want?"),
            text(broken),
            text("Outline: schema, then API. Confirm?"),
            // After the answer: two corrective turns again, then a valid plan.
            text(broken),
            text(broken),
            text(plan_reply()),
        ],
    );
    let mut host = RecordingHost::answering(&["SQLite", "Yes"]);
    let mut approver = ScriptedApprover::default();

    let plan = plan_of(run(&mut session, &mut host, &mut approver).unwrap());
    assert_eq!(plan.tasks.len(), 2);
    assert_eq!(call_count(&calls), 6);
    let corrective = corrective_for_broken("expected value at line 1 column 22");
    assert_eq!(host.correcting(), [corrective.as_str(); 3]);
    assert_eq!(sent(&calls, 2), corrective);
    assert_eq!(sent(&calls, 3), "Yes");
    assert_eq!(sent(&calls, 4), corrective);
    assert_eq!(sent(&calls, 5), corrective);
    // Correctives are notes of the same turn; only the user's messages open turns.
    assert_eq!(
        host.kinds(),
        [
            (1, LogKind::User),
            (1, LogKind::Assistant),
            (2, LogKind::User),
            (2, LogKind::Assistant),
            (2, LogKind::Note),
            (2, LogKind::Assistant),
            (3, LogKind::User),
            (3, LogKind::Assistant),
            (3, LogKind::Note),
            (3, LogKind::Assistant),
            (3, LogKind::Note),
            (3, LogKind::Assistant)
        ]
    );

    // Without an answer in between, the third broken reply in a row ends the session.
    let (mut session, calls) = api_session(
        &fixture,
        config(Style::Conversation),
        vec![text(broken), text(broken), text(broken)],
    );
    let mut host = RecordingHost::default();
    match run(&mut session, &mut host, &mut approver) {
        Err(PlannerError::Unreadable { repairs, error }) => {
            assert_eq!(repairs, MAX_REPAIRS);
            assert_eq!(error, "expected value at line 1 column 22");
        }
        other => panic!("expected Unreadable, got {other:?}"),
    }
    assert_eq!(call_count(&calls), 3);
    assert!(host.asked.is_empty());
}

#[test]
fn the_user_ending_the_conversation_abandons_it_and_keeps_the_prd() {
    let fixture = Fixture::new();
    let reply = "Here is a PRD.\n<!-- WEFT_PRD_START slug=\"notes-api\" -->\n# Notes API\n\nServe notes as JSON.\n<!-- WEFT_PRD_END -->\nWhich storage do you want?";
    let (mut session, calls) =
        api_session(&fixture, config(Style::Conversation), vec![text(reply)]);
    let mut host = RecordingHost::default(); // ask_user → None
    let mut approver = ScriptedApprover::default();

    let finish = run(&mut session, &mut host, &mut approver).unwrap();
    let Finish::Abandoned { prd: Some(prd) } = finish else {
        panic!("expected an abandoned session with its PRD, got {finish:?}")
    };
    assert_eq!(prd.slug, "notes-api");
    assert_eq!(prd.markdown, "# Notes API\n\nServe notes as JSON.\n");
    assert_eq!(host.prds, [prd]);
    assert_eq!(host.asked, ["Here is a PRD.\n\nWhich storage do you want?"]);
    assert_eq!(call_count(&calls), 1);

    // Without a PRD there is none to carry.
    let (mut session, _) = api_session(
        &fixture,
        config(Style::Conversation),
        vec![text("Which storage?")],
    );
    let mut host = RecordingHost::default();
    let finish = run(&mut session, &mut host, &mut approver).unwrap();
    assert!(
        matches!(finish, Finish::Abandoned { prd: None }),
        "{finish:?}"
    );
}

// ---------------------------------------------------------------------------------------
// The repair loop
// ---------------------------------------------------------------------------------------

#[test]
fn an_invalid_plan_is_corrected_twice_with_its_exact_problems_then_rejected() {
    let fixture = Fixture::new();
    let (mut session, calls) = api_session(
        &fixture,
        config(Style::Conversation),
        vec![
            text(invalid_plan_reply()),
            text(invalid_plan_reply()),
            text(invalid_plan_reply()),
        ],
    );
    let mut host = RecordingHost::default();
    let mut approver = ScriptedApprover::default();

    match run(&mut session, &mut host, &mut approver) {
        Err(PlannerError::Rejected { repairs, problems }) => {
            assert_eq!(repairs, MAX_REPAIRS);
            assert_eq!(problems, invalid_plan_problems());
        }
        other => panic!("expected Rejected, got {other:?}"),
    }
    assert_eq!(call_count(&calls), 1 + MAX_REPAIRS);
    let corrective = corrective_for_problems(&invalid_plan_problems());
    for n in 1..=MAX_REPAIRS {
        let message = sent(&calls, n);
        assert_eq!(message, corrective);
        for problem in &invalid_plan_problems().problems {
            assert!(message.contains(problem.as_str()), "{message}");
        }
    }
    assert!(host.asked.is_empty(), "the user is not asked about repairs");
    assert_eq!(host.correcting().len(), MAX_REPAIRS);
}

#[test]
fn an_invalid_plan_fixed_after_one_corrective_is_committed() {
    let fixture = Fixture::new();
    let (mut session, calls) = api_session(
        &fixture,
        config(Style::OneShot),
        vec![text(invalid_plan_reply()), text(plan_reply())],
    );
    let mut host = RecordingHost::default();
    let plan = plan_of(run(&mut session, &mut host, &mut ScriptedApprover::default()).unwrap());
    assert_eq!(plan.tasks.len(), 2);
    assert_eq!(
        sent(&calls, 1),
        corrective_for_problems(&invalid_plan_problems())
    );
}

#[test]
fn broken_json_gets_a_corrective_quoting_the_parser_error() {
    let fixture = Fixture::new();
    let broken = "Here:\n```json\n{\n  \"tasks\": [\n    {\"title\": 'single quotes'}\n  ]\n}\n```";
    let (mut session, calls) = api_session(
        &fixture,
        config(Style::Conversation),
        vec![text(broken), text(plan_reply())],
    );
    let mut host = RecordingHost::default();
    let plan = plan_of(run(&mut session, &mut host, &mut ScriptedApprover::default()).unwrap());
    assert_eq!(plan.tasks.len(), 2);
    let message = sent(&calls, 1);
    assert_eq!(
        message,
        corrective_for_broken("expected value at line 3 column 15")
    );
    assert!(message.contains("expected value at line 3 column 15"));
}

#[test]
fn a_truncated_reply_gets_a_terse_re_emit_request_not_the_same_request() {
    let fixture = Fixture::new();
    let unbalanced =
        "{\"tasks\": [{\"id\": \"schema\", \"title\": \"Write the schema\", \"prompt\": \"Create";
    let (mut session, calls) = api_session(
        &fixture,
        config(Style::Conversation),
        vec![
            cut_by_length("Let me write the plan. The first task creates the schema and"),
            text(unbalanced),
            text(plan_reply()),
        ],
    );
    let mut host = RecordingHost::default();
    let plan = plan_of(run(&mut session, &mut host, &mut ScriptedApprover::default()).unwrap());
    assert_eq!(plan.tasks.len(), 2);
    assert_eq!(call_count(&calls), 3);
    for n in 1..=2 {
        assert_eq!(sent(&calls, n), terse_reemit());
        assert_ne!(sent(&calls, n), OPENING);
        // The cut reply stays in the history and the request grows by it and the re-emit.
        assert_eq!(call(&calls, n).len(), call(&calls, n - 1).len() + 2);
    }
    assert_eq!(call(&calls, 2)[4].content, unbalanced);
    assert!(
        host.asked.is_empty(),
        "a cut reply is not shown as a question"
    );

    // Cut off three times in a row: Truncated after the two re-emits.
    let (mut session, calls) = api_session(
        &fixture,
        config(Style::OneShot),
        vec![text(unbalanced), text(unbalanced), text(unbalanced)],
    );
    let mut host = RecordingHost::default();
    match run(&mut session, &mut host, &mut ScriptedApprover::default()) {
        Err(PlannerError::Truncated { repairs }) => assert_eq!(repairs, MAX_REPAIRS),
        other => panic!("expected Truncated, got {other:?}"),
    }
    assert_eq!(call_count(&calls), 3);
}

// ---------------------------------------------------------------------------------------
// One-shot and revision nudges
// ---------------------------------------------------------------------------------------

#[test]
fn a_one_shot_planner_answering_in_prose_is_nudged() {
    let fixture = Fixture::new();
    let (mut session, calls) = api_session(
        &fixture,
        config(Style::OneShot),
        vec![text("Which storage do you want?"), text(plan_reply())],
    );
    let mut host = RecordingHost::default();
    let plan = plan_of(run(&mut session, &mut host, &mut ScriptedApprover::default()).unwrap());
    assert_eq!(plan.goal, GOAL);
    assert_eq!(sent(&calls, 1), ONE_SHOT_NUDGE);
    assert_eq!(host.correcting(), [ONE_SHOT_NUDGE]);
    assert!(host.asked.is_empty(), "nobody is asked in a one-shot run");
}

#[test]
fn a_one_shot_planner_that_never_plans_gives_no_plan_after_two_nudges() {
    let fixture = Fixture::new();
    let (mut session, calls) = api_session(
        &fixture,
        config(Style::OneShot),
        vec![
            text("Which storage?"),
            text("Really, which storage?"),
            text("I cannot plan without knowing the storage."),
        ],
    );
    let mut host = RecordingHost::default();
    match run(&mut session, &mut host, &mut ScriptedApprover::default()) {
        Err(PlannerError::NoPlan {
            wanted,
            nudges,
            last,
        }) => {
            assert_eq!(wanted, "plan");
            assert_eq!(nudges, 2);
            assert_eq!(last, "I cannot plan without knowing the storage.");
        }
        other => panic!("expected NoPlan, got {other:?}"),
    }
    assert_eq!(call_count(&calls), 3);
    assert_eq!(sent(&calls, 1), ONE_SHOT_NUDGE);
    assert_eq!(sent(&calls, 2), ONE_SHOT_NUDGE);
    assert!(host.asked.is_empty());
}

/// A stored plan to revise: `schema` (completed) → `api`, built through the workflow
/// importer as `weft plan import` would.
fn base_plan() -> Plan {
    let text = json!({
        "goal": GOAL,
        "runner": "claude-code",
        "tasks": [
            {"id": "schema", "title": "Write the schema", "prompt": "Create schema.sql"},
            {"id": "api", "title": "Serve the API", "prompt": "Serve /notes", "dependencies": ["schema"]}
        ]
    })
    .to_string();
    let file = WorkflowFile::parse(&text, WorkflowFormat::Json, "base.json").unwrap();
    let imported = file
        .into_plan("base.json", &|name| RUNNERS.contains(&name))
        .unwrap();
    let mut plan = Plan {
        id: "0123456789abcdef0123456789abcdef".into(),
        goal: imported.goal,
        status: PlanStatus::Approved,
        created_at: 0,
        updated_at: 0,
        runner: imported.runner,
        revision: 4,
        tasks: imported.tasks,
    };
    plan.renumber();
    plan.tasks[0].status = TaskStatus::Completed;
    plan
}

fn revision_config() -> SessionConfig {
    SessionConfig {
        base: Some(base_plan()),
        ..config(Style::Revision)
    }
}

#[test]
fn a_revision_applies_task_ops_after_correcting_an_edit_to_a_completed_task() {
    let fixture = Fixture::new();
    let edit_completed = json!({"taskOps": [
        {"op": "update", "task": "schema", "changes": {"prompt": "Redo the schema"}}
    ]})
    .to_string();
    let good = json!({"taskOps": [
        {"op": "update", "task": "api", "changes": {"prompt": "Serve /notes with pagination"}},
        {"op": "add", "task": {"id": "docs", "title": "Document the API", "prompt": "Write docs/api.md", "dependencies": ["api"]}}
    ]})
    .to_string();
    let (mut session, calls) = api_session(
        &fixture,
        revision_config(),
        vec![text(plan_reply()), text(edit_completed), text(good)],
    );
    let mut host = RecordingHost::default();

    let finish = run(&mut session, &mut host, &mut ScriptedApprover::default()).unwrap();
    let Finish::Edits { plan, reports, prd } = finish else {
        panic!("expected edits, got {finish:?}")
    };
    assert!(prd.is_none());
    // A whole plan is the wrong envelope for a revision.
    assert_eq!(sent(&calls, 1), REVISION_NUDGE);
    assert_eq!(
        sent(&calls, 2),
        corrective_for_ops(&PlanProblems::single(
            "op #1 (update): task #1 \"schema\" is completed; its fields are the record of what ran"
        ))
    );
    assert_eq!(call_count(&calls), 3);

    let base = base_plan();
    assert_eq!(
        plan.tasks[0], base.tasks[0],
        "the completed task is untouched"
    );
    assert_eq!(plan.tasks[1].prompt, "Serve /notes with pagination");
    assert_eq!(plan.tasks[2].id, "docs");
    assert_eq!(plan.tasks[2].dependencies, ["api"]);
    assert_eq!(plan.goal, base.goal);
    let lines: Vec<&str> = reports
        .iter()
        .flat_map(|r| r.lines.iter().map(String::as_str))
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[1].starts_with("added task #3 \"docs\""), "{lines:?}");
}

#[test]
fn a_reviser_answering_in_prose_is_nudged_then_gives_up() {
    let fixture = Fixture::new();
    let (mut session, calls) = api_session(
        &fixture,
        revision_config(),
        vec![
            text("The plan looks fine to me."),
            text("Still fine."),
            text("No edits needed."),
        ],
    );
    let mut host = RecordingHost::default();
    match run(&mut session, &mut host, &mut ScriptedApprover::default()) {
        Err(PlannerError::NoPlan { wanted, nudges, .. }) => {
            assert_eq!(wanted, "set of task edits");
            assert_eq!(nudges, 2);
        }
        other => panic!("expected NoPlan, got {other:?}"),
    }
    assert_eq!(sent(&calls, 1), REVISION_NUDGE);
    assert_eq!(sent(&calls, 2), REVISION_NUDGE);
}

#[test]
fn a_truncated_revision_is_asked_for_the_edits_again_not_a_whole_plan() {
    let fixture = Fixture::new();
    let cut =
        "{\"taskOps\": [{\"op\": \"update\", \"task\": \"api\", \"changes\": {\"prompt\": \"Serve";
    let good = json!({"taskOps": [
        {"op": "update", "task": "api", "changes": {"prompt": "Serve /notes with pagination"}}
    ]})
    .to_string();
    let (mut session, calls) = api_session(
        &fixture,
        revision_config(),
        vec![
            text(cut),
            cut_by_length("I will now send the edits:"),
            text(good),
        ],
    );
    let mut host = RecordingHost::default();
    let finish = run(&mut session, &mut host, &mut ScriptedApprover::default()).unwrap();
    assert!(matches!(finish, Finish::Edits { .. }), "{finish:?}");
    // The re-emit request of a revision asks for task ops, never for `{"tasks": [...]}`.
    assert_eq!(sent(&calls, 1), terse_reemit_ops());
    assert_eq!(sent(&calls, 2), terse_reemit_ops());
}

// ---------------------------------------------------------------------------------------
// Research
// ---------------------------------------------------------------------------------------

#[test]
fn tool_calls_run_through_the_research_envelope_and_results_go_back() {
    let fixture = Fixture::new();
    let (mut session, calls) = api_session(
        &fixture,
        config(Style::Conversation),
        vec![
            tool_calls(&[
                ("call_a", "read_file", json!({"path": "src/lib.rs"})),
                ("call_b", "read_file", json!({"path": "src/missing.rs"})),
            ]),
            text(plan_reply()),
        ],
    );
    let mut host = RecordingHost::default();
    let mut approver = ScriptedApprover::default();
    let plan = plan_of(run(&mut session, &mut host, &mut approver).unwrap());
    assert_eq!(plan.tasks.len(), 2);
    assert!(
        approver.seen.is_empty(),
        "reads inside the workspace ask nobody"
    );

    assert_eq!(call_count(&calls), 2);
    let second = call(&calls, 1);
    assert_eq!(second[2].role, Role::Assistant);
    assert_eq!(second[2].tool_calls.len(), 2);
    let results = tool_results(&second);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0].0, "call_a");
    assert!(
        results[0].1.contains("pub fn add(a: i32, b: i32) -> i32"),
        "{}",
        results[0].1
    );
    assert_eq!(results[1].0, "call_b");
    assert!(
        results[1].1.contains("no such file: src/missing.rs"),
        "{}",
        results[1].1
    );

    let tools = host.tool_logs();
    let outcomes: Vec<_> = tools.iter().map(|l| l.outcome).collect();
    assert_eq!(
        outcomes,
        [Some(StepOutcome::Success), Some(StepOutcome::Failure)]
    );
    assert_eq!(tools[0].tool.as_deref(), Some("read_file"));
    assert!(
        tools[0].input.starts_with("read_file src/lib.rs"),
        "{}",
        tools[0].input
    );
    assert!(tools[0].detail.contains("a + b"));
    assert_eq!(tools[0].approval, None);
    assert_eq!(
        host.kinds(),
        [
            (1, LogKind::User),
            (1, LogKind::Tool),
            (1, LogKind::Tool),
            (1, LogKind::Assistant)
        ]
    );
    let steps: Vec<StepOutcome> = host
        .events
        .iter()
        .filter_map(|e| match e {
            PlannerEvent::Step { outcome, .. } => Some(*outcome),
            _ => None,
        })
        .collect();
    assert_eq!(steps, [StepOutcome::Success, StepOutcome::Failure]);
}

#[test]
fn a_model_that_keeps_calling_tools_gets_two_wrap_up_rounds_then_a_step_limit() {
    let fixture = Fixture::new();
    let config = SessionConfig {
        max_steps: 2,
        ..config(Style::OneShot)
    };
    let (mut session, calls) = api_session(
        &fixture,
        config,
        vec![
            tool_calls(&[("c1", "read_file", json!({"path": "src/lib.rs"}))]),
            tool_calls(&[("c2", "list_dir", json!({"path": "."}))]),
            tool_calls(&[("c3", "read_file", json!({"path": "README.md"}))]),
            tool_calls(&[("c4", "read_file", json!({"path": "README.md"}))]),
            // Never reached.
            text(plan_reply()),
        ],
    );
    let mut host = RecordingHost::default();
    match run(&mut session, &mut host, &mut ScriptedApprover::default()) {
        Err(PlannerError::StepLimit(text)) => {
            assert!(text.contains("research budget of 2 steps"), "{text}");
        }
        other => panic!("expected StepLimit, got {other:?}"),
    }
    assert_eq!(
        call_count(&calls),
        4,
        "2 executed rounds and 2 wrap-up rounds"
    );

    let last = call(&calls, 3);
    let results = tool_results(&last);
    assert_eq!(results.len(), 3);
    assert!(results[0].1.contains("a + b"));
    assert!(results[1].1.contains("src/"), "{}", results[1].1);
    assert_eq!(results[2], ("c3".to_owned(), BUDGET_SPENT.to_owned()));

    let outcomes: Vec<(Option<&str>, Option<StepOutcome>)> = host
        .logs
        .iter()
        .filter(|l| l.kind != LogKind::User)
        .map(|l| (l.tool.as_deref(), l.outcome))
        .collect();
    assert_eq!(
        outcomes,
        [
            (Some("read_file"), Some(StepOutcome::Success)),
            (Some("list_dir"), Some(StepOutcome::Success)),
            (Some("read_file"), Some(StepOutcome::NotExecuted)),
            (Some("read_file"), Some(StepOutcome::NotExecuted)),
            (None, None),
        ]
    );
    let note = host.logs.last().unwrap();
    assert_eq!(note.kind, LogKind::Note);
    assert!(note.input.contains("research budget of 2 steps"));
    assert_eq!(host.tool_logs()[2].detail, BUDGET_SPENT);
    assert!(
        host.notices()
            .iter()
            .any(|n| n.contains("research budget of 2 steps"))
    );
}

#[test]
fn a_model_that_answers_in_a_wrap_up_round_is_heard() {
    let fixture = Fixture::new();
    let config = SessionConfig {
        max_steps: 1,
        ..config(Style::OneShot)
    };
    let (mut session, calls) = api_session(
        &fixture,
        config,
        vec![
            // Two calls in one round with one step left: the second is not executed.
            tool_calls(&[
                ("c1", "read_file", json!({"path": "src/lib.rs"})),
                ("c2", "read_file", json!({"path": "README.md"})),
            ]),
            tool_calls(&[("c3", "read_file", json!({"path": "README.md"}))]),
            text(plan_reply()),
        ],
    );
    let mut host = RecordingHost::default();
    let plan = plan_of(run(&mut session, &mut host, &mut ScriptedApprover::default()).unwrap());
    assert_eq!(plan.tasks.len(), 2);
    assert_eq!(call_count(&calls), 3);
    let outcomes: Vec<_> = host.tool_logs().iter().map(|l| l.outcome).collect();
    assert_eq!(
        outcomes,
        [
            Some(StepOutcome::Success),
            Some(StepOutcome::NotExecuted),
            Some(StepOutcome::NotExecuted)
        ]
    );
    let results = tool_results(&call(&calls, 2));
    assert_eq!(results[1].1, BUDGET_SPENT);
    assert_eq!(results[2].1, BUDGET_SPENT);
}

#[test]
fn reads_outside_the_workspace_consult_the_approver_and_the_log_names_the_decision() {
    let fixture = Fixture::new();
    let denied = fixture.write_outside("denied.txt", "never shown\n");
    let allowed = fixture.write_outside("allowed.txt", "shared settings\n");
    let (mut session, calls) = api_session(
        &fixture,
        config(Style::OneShot),
        vec![
            tool_calls(&[
                ("c1", "read_file", json!({"path": denied.to_str().unwrap()})),
                ("c2", "read_file", json!({"path": "src/lib.rs"})),
                (
                    "c3",
                    "read_file",
                    json!({"path": allowed.to_str().unwrap()}),
                ),
            ]),
            text(plan_reply()),
        ],
    );
    let mut host = RecordingHost::default();
    let mut approver = ScriptedApprover {
        answers: [(false, Source::NoChannel), (true, Source::Asked)].into(),
        seen: Vec::new(),
    };
    plan_of(run(&mut session, &mut host, &mut approver).unwrap());

    assert_eq!(
        approver.seen,
        [
            Subject::Read {
                path: denied.to_string_lossy().into_owned()
            },
            Subject::Read {
                path: allowed.to_string_lossy().into_owned()
            }
        ],
        "only the two outside reads asked, with their absolute paths"
    );
    let tools = host.tool_logs();
    let logged: Vec<_> = tools
        .iter()
        .map(|l| (l.outcome, l.approval.as_deref()))
        .collect();
    assert_eq!(
        logged,
        [
            (Some(StepOutcome::Denied), Some("denied (no-channel)")),
            (Some(StepOutcome::Success), None),
            (Some(StepOutcome::Success), Some("allowed (asked)")),
        ]
    );
    let results = tool_results(&call(&calls, 1));
    assert!(
        results[0].1.starts_with("denied (no-channel): "),
        "{}",
        results[0].1
    );
    assert!(!results[0].1.contains("never shown"));
    assert!(results[2].1.contains("shared settings"), "{}", results[2].1);
}

// ---------------------------------------------------------------------------------------
// PRD
// ---------------------------------------------------------------------------------------

#[test]
fn a_prd_block_is_saved_with_a_safe_slug_and_stripped_from_the_reply() {
    let fixture = Fixture::new();
    let reply = "Here is the PRD.\n<!-- WEFT_PRD_START slug=\"../Notes API!!\" -->\n\n# Notes API\n\nServe notes as JSON.\n\n<!-- WEFT_PRD_END -->\nShall I outline the slices?";
    let (mut session, _calls) = api_session(
        &fixture,
        config(Style::Conversation),
        vec![text(reply), text(plan_reply())],
    );
    let mut host = RecordingHost::answering(&["yes"]);
    let finish = run(&mut session, &mut host, &mut ScriptedApprover::default()).unwrap();

    let expected = Prd {
        slug: "notes-api".into(),
        markdown: "# Notes API\n\nServe notes as JSON.\n".into(),
    };
    assert_eq!(host.prds, std::slice::from_ref(&expected));
    let shown = "Here is the PRD.\n\nShall I outline the slices?";
    assert_eq!(host.replies()[0], shown);
    assert_eq!(host.asked, [shown]);
    assert_eq!(host.notices(), ["PRD saved to .scratch/notes-api/PRD.md"]);
    // The log keeps the whole reply (block included); a note says where the PRD went.
    assert!(
        host.logs
            .iter()
            .any(|l| l.kind == LogKind::Assistant && l.detail == reply)
    );
    assert!(
        host.logs
            .iter()
            .any(|l| l.kind == LogKind::Note && l.input == "PRD saved to .scratch/notes-api/PRD.md")
    );
    match finish {
        Finish::Plan { prd, .. } => assert_eq!(prd, Some(expected)),
        other => panic!("expected a plan, got {other:?}"),
    }
}

#[test]
fn a_prd_that_cannot_be_saved_is_a_notice_and_planning_goes_on() {
    let fixture = Fixture::new();
    // No slug in the block: the session's fallback slug, sanitised.
    let reply = format!(
        "<!-- WEFT_PRD_START -->\n# Notes\n<!-- WEFT_PRD_END -->\n{}",
        plan_reply()
    );
    let (mut session, calls) = api_session(&fixture, config(Style::OneShot), vec![text(reply)]);
    let mut host = RecordingHost {
        prd_error: Some("disk full".into()),
        ..RecordingHost::default()
    };
    let finish = run(&mut session, &mut host, &mut ScriptedApprover::default()).unwrap();
    assert_eq!(host.prds.len(), 1);
    assert_eq!(host.prds[0].slug, "fallback-slug");
    assert_eq!(host.notices(), ["the PRD could not be saved: disk full"]);
    assert_eq!(call_count(&calls), 1);
    let Finish::Plan { plan, prd } = finish else {
        panic!("expected a plan")
    };
    assert_eq!(plan.tasks.len(), 2);
    // The PRD is still handed back with the plan (the host knows it was not saved).
    assert_eq!(prd.map(|p| p.markdown), Some("# Notes\n".to_owned()));
}

// ---------------------------------------------------------------------------------------
// Agent CLIs and masking
// ---------------------------------------------------------------------------------------

fn agent_session(config: SessionConfig, replies: Vec<AgentReply>) -> (Session, AgentSends) {
    let sent = AgentSends::default();
    let agent = ScriptedAgent {
        replies: replies.into(),
        sent: Arc::clone(&sent),
    };
    (Session::new(Backend::Agent(Box::new(agent)), config), sent)
}

fn agent_reply(text: impl Into<String>, steps: Vec<AgentStep>) -> AgentReply {
    AgentReply {
        text: text.into(),
        steps,
        session_id: Some("agent-session-1".into()),
        truncated: false,
        usage: None,
    }
}

fn step(
    tool: &str,
    input: impl Into<String>,
    outcome: StepOutcome,
    detail: impl Into<String>,
) -> AgentStep {
    AgentStep {
        tool: tool.into(),
        input: input.into(),
        outcome,
        detail: detail.into(),
    }
}

#[test]
fn an_agent_cli_planners_steps_become_masked_log_items() {
    let config = SessionConfig {
        secrets: vec![SECRET.into()],
        ..config(Style::Conversation)
    };
    // The secret also sits across the points where inputs (300) and details (2,000
    // characters) are cut: a cut must not leave part of it behind.
    let long_input = format!("{}{SECRET}{}", "x".repeat(290), "t".repeat(100));
    let long_detail = format!("{}{SECRET}{}", "y".repeat(1_990), "z".repeat(100));
    let (mut session, sent) = agent_session(
        config,
        vec![
            agent_reply(
                "Which storage do you want?",
                vec![
                    step("Read", "src/lib.rs", StepOutcome::Success, "pub fn add"),
                    step(
                        "Bash",
                        format!("curl -H 'Authorization: Bearer {SECRET}' example.invalid"),
                        StepOutcome::Refused,
                        format!("refused: the line carries {SECRET}"),
                    ),
                ],
            ),
            agent_reply(
                plan_reply(),
                vec![
                    step(
                        "Read",
                        long_input,
                        StepOutcome::Denied,
                        "denied by plan mode",
                    ),
                    step("Grep", "notes", StepOutcome::Failure, long_detail),
                ],
            ),
        ],
    );
    let mut host = RecordingHost::answering(&["SQLite"]);
    let plan = plan_of(run(&mut session, &mut host, &mut ScriptedApprover::default()).unwrap());
    assert_eq!(plan.goal, GOAL);

    assert_eq!(
        *lock(&sent),
        [
            (SYSTEM.to_owned(), OPENING.to_owned()),
            (SYSTEM.to_owned(), "SQLite".to_owned())
        ]
    );
    assert_eq!(
        host.kinds(),
        [
            (1, LogKind::User),
            (1, LogKind::Tool),
            (1, LogKind::Tool),
            (1, LogKind::Assistant),
            (2, LogKind::User),
            (2, LogKind::Tool),
            (2, LogKind::Tool),
            (2, LogKind::Assistant)
        ]
    );
    let tools = host.tool_logs();
    let logged: Vec<_> = tools
        .iter()
        .map(|l| (l.tool.as_deref().unwrap(), l.outcome.unwrap()))
        .collect();
    assert_eq!(
        logged,
        [
            ("Read", StepOutcome::Success),
            ("Bash", StepOutcome::Refused),
            ("Read", StepOutcome::Denied),
            ("Grep", StepOutcome::Failure)
        ]
    );
    assert_eq!(tools[0].input, "src/lib.rs");
    assert_eq!(tools[0].detail, "pub fn add");
    assert_eq!(
        tools[1].input,
        "curl -H 'Authorization: Bearer ****' example.invalid"
    );
    assert_eq!(tools[1].detail, "refused: the line carries ****");
    assert!(tools[2].input.ends_with("… [cut]"), "{}", tools[2].input);
    assert!(tools[3].detail.ends_with("… [cut]"));
    for item in &host.logs {
        assert_no_secret(item, SECRET);
    }
    for event in &host.events {
        if let PlannerEvent::Step { input, .. } = event {
            for piece in secret_pieces(SECRET) {
                assert!(!input.contains(piece), "{input}");
            }
        }
    }
}

#[test]
fn secrets_in_user_and_assistant_text_are_masked_in_the_log() {
    let fixture = Fixture::new();
    let config = SessionConfig {
        secrets: vec![SECRET.into()],
        ..config(Style::Conversation)
    };
    let question = format!("I saw the key {SECRET} in .env. Should the API use it?");
    let long_reply = format!("{}{SECRET}\n{}", "z".repeat(295), plan_reply());
    let (mut session, _) = api_session(&fixture, config, vec![text(question), text(long_reply)]);
    let mut host = RecordingHost::answering(&[&format!("Yes, use {SECRET} for now")]);
    let opening = format!("{OPENING}\nMy key is {SECRET}.");
    let finish = session
        .run(opening, &mut host, &mut ScriptedApprover::default())
        .unwrap();
    assert!(matches!(finish, Finish::Plan { .. }));

    assert_eq!(host.logs.len(), 4);
    for item in &host.logs {
        assert_no_secret(item, SECRET);
    }
    assert!(host.logs[0].detail.ends_with("My key is ****."));
    assert_eq!(
        host.logs[1].detail,
        "I saw the key **** in .env. Should the API use it?"
    );
    assert_eq!(host.logs[1].input, host.logs[1].detail);
    assert_eq!(host.logs[2].detail, "Yes, use **** for now");
    assert!(
        host.logs[3].input.contains("****"),
        "{}",
        host.logs[3].input
    );
}

#[test]
fn unexecuted_tool_calls_are_logged_with_their_arguments_masked() {
    let fixture = Fixture::new();
    let config = SessionConfig {
        max_steps: 0,
        secrets: vec![SECRET.into()],
        ..config(Style::OneShot)
    };
    // The secret straddles the 300-character cut of the logged arguments.
    let pattern = format!("{}{SECRET}", "q".repeat(280));
    let (mut session, calls) = api_session(
        &fixture,
        config,
        vec![
            tool_calls(&[("c1", "search", json!({"pattern": pattern}))]),
            tool_calls(&[("c2", "search", json!({"pattern": SECRET}))]),
        ],
    );
    let mut host = RecordingHost::default();
    let error = run(&mut session, &mut host, &mut ScriptedApprover::default()).unwrap_err();
    assert!(matches!(error, PlannerError::StepLimit(_)), "{error:?}");
    assert_eq!(call_count(&calls), 2);
    let tools = host.tool_logs();
    assert_eq!(tools.len(), 2);
    assert!(
        tools
            .iter()
            .all(|l| l.outcome == Some(StepOutcome::NotExecuted))
    );
    assert!(tools[1].input.contains("****"), "{}", tools[1].input);
    for item in &host.logs {
        assert_no_secret(item, SECRET);
    }
}

/// Raises the interrupt when consulted, as Ctrl-C during an approval question would.
#[derive(Debug)]
struct InterruptingApprover(weft_core::interrupt::Interrupt);

impl Approver for InterruptingApprover {
    fn decide(&mut self, subject: Subject) -> Decision {
        self.0.raise();
        Decision {
            scope: subject.scope(),
            allowed: false,
            source: Source::Withdrawn,
            decided_at: 0,
        }
    }
}

#[test]
fn an_interrupt_ends_the_conversation_before_the_next_step() {
    let fixture = Fixture::new();
    let outside = fixture.write_outside("x.txt", "x\n");
    let interrupt = weft_core::interrupt::Interrupt::new();
    let mut first = config(Style::OneShot);
    first.interrupt = Some(interrupt.clone());
    let (mut session, calls) = api_session(
        &fixture,
        first,
        vec![
            tool_calls(&[
                (
                    "c1",
                    "read_file",
                    json!({"path": outside.to_str().unwrap()}),
                ),
                ("c2", "read_file", json!({"path": "src/lib.rs"})),
            ]),
            text(plan_reply()),
        ],
    );
    let mut host = RecordingHost::default();
    let result = session.run(
        OPENING.to_owned(),
        &mut host,
        &mut InterruptingApprover(interrupt.clone()),
    );
    assert!(
        matches!(result, Err(PlannerError::Interrupted)),
        "{result:?}"
    );
    // The second call never ran and the model was not asked again.
    assert_eq!(call_count(&calls), 1);
    let tools: Vec<&LogItem> = host
        .logs
        .iter()
        .filter(|l| l.kind == LogKind::Tool)
        .collect();
    assert_eq!(tools.len(), 1, "{tools:?}");

    // Raised before the start: nothing is sent at all.
    let interrupt = weft_core::interrupt::Interrupt::new();
    interrupt.raise();
    let mut second = config(Style::OneShot);
    second.interrupt = Some(interrupt);
    let (mut session, calls) = api_session(&fixture, second, vec![text(plan_reply())]);
    let result = run(
        &mut session,
        &mut RecordingHost::default(),
        &mut ScriptedApprover::default(),
    );
    assert!(matches!(result, Err(PlannerError::Interrupted)));
    assert_eq!(call_count(&calls), 0);
}

#[test]
fn a_call_repeated_in_one_turn_is_answered_without_running_again() {
    let fixture = Fixture::new();
    let (mut session, calls) = api_session(
        &fixture,
        config(Style::OneShot),
        vec![
            tool_calls(&[("c1", "read_file", json!({"path": "src/lib.rs", "limit": 5}))]),
            // The same call with its arguments in another order.
            tool_calls(&[("c2", "read_file", json!({"limit": 5, "path": "src/lib.rs"}))]),
            text(plan_reply()),
        ],
    );
    let mut host = RecordingHost::default();
    plan_of(run(&mut session, &mut host, &mut ScriptedApprover::default()).unwrap());
    assert_eq!(call_count(&calls), 3);
    let results = tool_results(&call(&calls, 2));
    assert!(results[0].1.contains("a + b"), "{}", results[0].1);
    assert_eq!(
        results[1],
        (
            "c2".to_owned(),
            weft_planner::prompt::REPEATED_CALL.to_owned()
        )
    );
    let outcomes: Vec<Option<StepOutcome>> = host.tool_logs().iter().map(|l| l.outcome).collect();
    assert_eq!(
        outcomes,
        [Some(StepOutcome::Success), Some(StepOutcome::NotExecuted)]
    );
}

#[test]
fn old_tool_results_are_pruned_when_the_history_outgrows_its_budget() {
    let fixture = Fixture::new();
    let big: String = (0..400)
        .map(|i| format!("line {i:03} of the big file\n"))
        .collect();
    fs::write(fixture.workspace.join("big.txt"), &big).unwrap();
    let rounds = 10;
    let mut replies: Vec<Reply> = (0..rounds)
        .map(|i| {
            tool_calls(&[(
                &format!("c{i}"),
                "read_file",
                json!({"path": "big.txt", "offset": 1 + i, "limit": 400}),
            )])
        })
        .collect();
    replies.push(text(plan_reply()));
    let small = SessionConfig {
        history_budget: 40_000,
        ..config(Style::OneShot)
    };
    let (mut session, calls) = api_session(&fixture, small, replies);
    let mut host = RecordingHost::default();
    plan_of(run(&mut session, &mut host, &mut ScriptedApprover::default()).unwrap());

    let last = call(&calls, rounds);
    let results = tool_results(&last);
    assert_eq!(results.len(), rounds);
    // Ten whole results would weigh ten times the newest; six whole ones and four
    // pruned stubs weigh a little over six times.
    let whole = results[rounds - 1].1.len();
    let size: usize = results.iter().map(|(_, t)| t.len()).sum();
    assert!(size < 6 * whole + 4 * 1_000, "{size} vs {whole} per result");
    // The oldest are pruned to their start with a note; the newest six are whole.
    assert!(results[0].1.contains("[pruned by weft"), "{}", results[0].1);
    assert!(results[0].1.len() < 1_000);
    for (_, text) in &results[rounds - 6..] {
        assert!(!text.contains("[pruned by weft"));
        assert!(text.contains("of the big file"));
    }
    assert!(
        host.notices().iter().any(|n| n.contains("pruned")),
        "{:?}",
        host.notices()
    );
    // Within budget, nothing is touched.
    let fixture = Fixture::new();
    let (mut session, calls) = api_session(
        &fixture,
        config(Style::OneShot),
        vec![
            tool_calls(&[("c1", "read_file", json!({"path": "README.md"}))]),
            text(plan_reply()),
        ],
    );
    plan_of(
        run(
            &mut session,
            &mut RecordingHost::default(),
            &mut ScriptedApprover::default(),
        )
        .unwrap(),
    );
    assert!(!tool_results(&call(&calls, 1))[0].1.contains("[pruned"));
}

#[test]
fn an_empty_reply_gets_one_reminder_and_a_second_in_a_row_ends_planning() {
    let fixture = Fixture::new();
    let (mut session, calls) = api_session(
        &fixture,
        config(Style::OneShot),
        vec![text(""), text(plan_reply())],
    );
    plan_of(
        run(
            &mut session,
            &mut RecordingHost::default(),
            &mut ScriptedApprover::default(),
        )
        .unwrap(),
    );
    assert_eq!(sent(&calls, 1), weft_planner::prompt::EMPTY_REPLY);

    let (mut session, calls) = api_session(
        &fixture,
        config(Style::OneShot),
        vec![text("  "), text(""), text(plan_reply())],
    );
    let result = run(
        &mut session,
        &mut RecordingHost::default(),
        &mut ScriptedApprover::default(),
    );
    assert!(matches!(result, Err(PlannerError::Empty)), "{result:?}");
    assert_eq!(call_count(&calls), 2);
}

#[test]
fn an_env_file_an_agent_cli_read_is_masked_in_the_log_even_without_known_secrets() {
    let (mut session, _) = agent_session(
        config(Style::OneShot),
        vec![agent_reply(
            plan_reply(),
            vec![step(
                "Read",
                ".env",
                StepOutcome::Success,
                "1\tSTRIPE_API_KEY=sk_live_abcdefghijklmnop\n2\tDEBUG=1\n",
            )],
        )],
    );
    let mut host = RecordingHost::default();
    plan_of(run(&mut session, &mut host, &mut ScriptedApprover::default()).unwrap());
    let read = &host.tool_logs()[0];
    assert!(
        !read.detail.contains("sk_live_abcdefghijklmnop"),
        "{}",
        read.detail
    );
    assert!(read.detail.contains("STRIPE_API_KEY="), "{}", read.detail);
    assert!(read.detail.contains("DEBUG=1"), "{}", read.detail);
}
