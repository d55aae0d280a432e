//! Planning sessions against a real store, a mock OpenAI-compatible model and a front end
//! with a fake clock: asks published in the store and answered (or left to expire), the
//! draft plan and the current plan, stale revisions, and the PRD weft writes.
//!
//! The binary's end-to-end tests (`crates/weft/tests/cli/planner.rs`) use a real clock, so
//! they cannot wait out the five-minute planner ask; here time is whatever the front end
//! says it is.

use std::cell::Cell;
use std::collections::VecDeque;
use std::path::PathBuf;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use fs_err as fs;
use serde_json::{Value, json};
use weft_core::approval::{Mode, PLANNER_ASK_TTL, Scope};
use weft_core::{Hint as _, PlanStatus, Task, Timestamp};
use weft_engine::EngineError;
use weft_engine::planning::{
    ApprovalAnswer, ApprovalPrompt, PlanFrontEnd, PlannerChoice, PlannerEvent, PlanningConfig,
    PlanningError, PlanningOutcome, Style, plan_from_goal, revise_plan,
};
use weft_planner::ProviderError;
use weft_planner::conversation::PlannerError;
use weft_store::{AskState, LogEntry, OpenOptions, PlanDraft, PlanningInfo, Store, StoreError};
use weft_testkit::mock_model::{MockModel, MockReply};

const GOAL: &str = "Add a JSON API for the notes";
const MODEL: &str = "mock-model";
/// The fake clock's start: 2023-11-14, in ms.
const START: Timestamp = 1_700_000_000_000;
/// How far the clock moves while an approval question waits, in the expiry test.
const MINUTE_AND_A_BIT: Timestamp = 61_000;
/// Longest real time any test waits for another thread.
const REAL_DEADLINE: Duration = Duration::from_secs(30);

// ---------------------------------------------------------------------------------------
// Fixture
// ---------------------------------------------------------------------------------------

/// A workspace with its store, and a folder beside it with files outside the workspace.
struct Fixture {
    _root: tempfile::TempDir,
    workspace: PathBuf,
    outside: PathBuf,
    store: Store,
}

impl Fixture {
    fn new() -> Fixture {
        let root = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(root.path()).unwrap();
        let workspace = base.join("work");
        let outside = base.join("outside");
        fs::create_dir_all(workspace.join("src")).unwrap();
        fs::write(workspace.join("src/lib.rs"), "pub fn notes() {}\n").unwrap();
        for (dir, name, text) in [
            ("dir", "a.txt", "alpha outside\n"),
            ("dir", "b.txt", "beta outside\n"),
            ("other", "c.txt", "gamma outside\n"),
        ] {
            fs::create_dir_all(outside.join(dir)).unwrap();
            fs::write(outside.join(dir).join(name), text).unwrap();
        }
        let store = Store::open_or_create(&workspace.join(".weft"), OpenOptions::default())
            .expect("the store opens");
        Fixture {
            _root: root,
            workspace,
            outside,
            store,
        }
    }

    fn state_dir(&self) -> PathBuf {
        self.workspace.join(".weft")
    }

    fn outside_file(&self, relative: &str) -> String {
        self.outside.join(relative).to_string_lossy().into_owned()
    }

    fn dir_scope(&self, relative_dir: &str) -> String {
        format!("path:{}/*", self.outside.join(relative_dir).display())
    }

    fn config(&self, mock: &MockModel, style: Style) -> PlanningConfig {
        let mut config = PlanningConfig::new(self.workspace.clone(), PlannerChoice::OpenAi, style);
        config.env = vec![
            ("WEFT_PLANNER_BASE_URL".into(), mock.base_url()),
            ("WEFT_PLANNER_API_KEY".into(), "test-key-not-secret".into()),
            ("WEFT_PLANNER_MODEL".into(), MODEL.into()),
        ];
        config.approval_channel = true;
        config.approval_poll = Duration::from_millis(5);
        config.turn_timeout = Duration::from_secs(30);
        config
    }

    /// A stored, approved plan: `schema` → `api`.
    fn stored_plan(&mut self) -> weft_core::Plan {
        let mut schema = Task::new("schema", "Write the schema");
        schema.prompt = "Create schema.sql".into();
        let mut api = Task::new("api", "Serve the API");
        api.prompt = "Serve /notes".into();
        api.dependencies = vec!["schema".into()];
        self.store
            .create_plan(
                PlanDraft {
                    goal: GOAL.into(),
                    runner: None,
                    status: PlanStatus::Approved,
                    tasks: vec![schema, api],
                    source: "test".into(),
                },
                START,
            )
            .unwrap()
    }

    fn log(&self, plan_id: &str) -> Vec<LogEntry> {
        self.store.planner_log(plan_id, 0).unwrap()
    }

    fn tool_log(&self, plan_id: &str) -> Vec<(String, String, Option<String>)> {
        self.log(plan_id)
            .into_iter()
            .filter(|e| e.kind == "tool")
            .map(|e| (e.input, e.outcome.unwrap_or_default(), e.approval))
            .collect()
    }
}

/// How the fake front end answers approval questions.
enum Approvals {
    /// Nobody types; the clock moves on by this much per poll.
    Silent { step: Timestamp },
    /// Nobody types here; real time passes (`wait`) while another thread answers through
    /// the store. After [`REAL_DEADLINE`] the clock jumps past the expiry so the session
    /// ends (and the test fails on what it sees) instead of hanging.
    OtherTerminal { started: Instant },
    /// These answers are typed here, one per poll, then nothing.
    Typed(VecDeque<ApprovalAnswer>),
}

/// Something the front end does when it sees an event.
type EventHook = Box<dyn FnMut(&PlannerEvent)>;

/// A front end with a fake clock that records what the engine showed it.
struct FakeFront {
    clock: Cell<Timestamp>,
    approvals: Approvals,
    /// Every `approval` call (the engine polls, so one question appears several times).
    prompts: Vec<ApprovalPrompt>,
    settled: Vec<(i64, String)>,
    events: Vec<PlannerEvent>,
    /// Called with every event, to act "meanwhile" (another terminal editing the plan).
    on_event: Option<EventHook>,
}

impl FakeFront {
    fn new(approvals: Approvals) -> FakeFront {
        FakeFront {
            clock: Cell::new(START),
            approvals,
            prompts: Vec::new(),
            settled: Vec::new(),
            events: Vec::new(),
            on_event: None,
        }
    }

    fn silent() -> FakeFront {
        FakeFront::new(Approvals::Silent { step: 0 })
    }

    fn asked_ids(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self.prompts.iter().map(|p| p.id).collect();
        ids.dedup();
        ids
    }
}

impl PlanFrontEnd for FakeFront {
    fn event(&mut self, event: &PlannerEvent) {
        if let Some(hook) = &mut self.on_event {
            hook(event);
        }
        self.events.push(event.clone());
    }

    fn ask_user(&mut self, _reply: &str) -> Option<String> {
        None
    }

    fn approval(&mut self, ask: &ApprovalPrompt, wait: Duration) -> Option<ApprovalAnswer> {
        self.prompts.push(ask.clone());
        // A question the engine never settles would otherwise poll forever.
        assert!(
            self.prompts.len() < 10_000,
            "approval {} was polled {} times without being settled",
            ask.id,
            self.prompts.len()
        );
        match &mut self.approvals {
            Approvals::Silent { step } => {
                self.clock.set(self.clock.get() + *step);
                None
            }
            Approvals::OtherTerminal { started } => {
                thread::sleep(wait);
                if started.elapsed() > REAL_DEADLINE {
                    self.clock.set(self.clock.get() + PLANNER_ASK_TTL);
                }
                None
            }
            Approvals::Typed(answers) => answers.pop_front(),
        }
    }

    fn approval_settled(&mut self, ask: &ApprovalPrompt, decision: &str) {
        self.settled.push((ask.id, decision.to_owned()));
    }

    fn now(&self) -> Timestamp {
        self.clock.get()
    }
}

fn plan_json() -> Value {
    json!({"tasks": [
        {"id": "schema", "title": "Write the schema", "prompt": "Create schema.sql"},
        {"id": "api", "title": "Serve the API", "prompt": "Serve /notes", "dependencies": ["schema"]}
    ]})
}

fn plan_text() -> String {
    serde_json::to_string_pretty(&plan_json()).unwrap()
}

fn read(path: &str) -> (&'static str, Value) {
    ("read_file", json!({ "path": path }))
}

/// The tool results the model received in chat request `n`, in order.
fn tool_results(mock: &MockModel, n: usize) -> Vec<String> {
    mock.chat_requests()[n].body["messages"]
        .as_array()
        .expect("the request has messages")
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn committed(outcome: Result<PlanningOutcome, PlanningError>) -> (weft_core::Plan, Option<String>) {
    match outcome {
        Ok(PlanningOutcome::Committed { plan, prd_path }) => (plan, prd_path),
        Ok(other) => panic!("expected a committed plan, got {other:?}"),
        Err(error) => panic!("planning failed: {error}"),
    }
}

/// Answers the first open ask through `state_dir`'s store, as `weft approvals allow|deny`
/// in another terminal would; returns its id (`None` if none appeared in time).
fn answer_from_another_terminal(
    state_dir: PathBuf,
    allowed: bool,
    scope: Option<String>,
) -> JoinHandle<Option<i64>> {
    thread::spawn(move || {
        let mut store = Store::open_or_create(&state_dir, OpenOptions::default()).unwrap();
        let deadline = Instant::now() + REAL_DEADLINE;
        while Instant::now() < deadline {
            let open = store
                .pending_asks()
                .unwrap()
                .into_iter()
                .find(|ask| ask.state == AskState::Open);
            if let Some(ask) = open {
                let answered = store
                    .answer_ask(ask.id, allowed, scope.as_deref(), START)
                    .unwrap();
                assert!(answered.is_ok(), "{answered:?}");
                return Some(ask.id);
            }
            thread::sleep(Duration::from_millis(5));
        }
        None
    })
}

// ---------------------------------------------------------------------------------------
// Approvals
// ---------------------------------------------------------------------------------------

#[test]
fn a_planner_ask_nobody_answers_expires_as_denied_after_five_minutes() {
    let mut fixture = Fixture::new();
    let path = fixture.outside_file("dir/a.txt");
    let mock = MockModel::start(vec![
        MockReply::tool_calls(vec![read(&path)]),
        MockReply::text(plan_text()),
    ]);
    let config = fixture.config(&mock, Style::Conversation);
    let mut front = FakeFront::new(Approvals::Silent {
        step: MINUTE_AND_A_BIT,
    });

    let (plan, _) = committed(plan_from_goal(
        &mut fixture.store,
        GOAL,
        &config,
        &mut front,
    ));

    // One question, polled until its five minutes were up, and no longer.
    let ids = front.asked_ids();
    assert_eq!(ids.len(), 1, "{:?}", front.prompts);
    let id = ids[0];
    let prompt = &front.prompts[0];
    assert_eq!(prompt.subject, format!("read {path}"));
    assert_eq!(prompt.scope, fixture.dir_scope("dir"));
    assert_eq!(prompt.expires_at, Some(START + PLANNER_ASK_TTL));
    let waited = front.now() - START;
    assert!(
        (PLANNER_ASK_TTL..PLANNER_ASK_TTL + MINUTE_AND_A_BIT).contains(&waited),
        "the clock moved {waited} ms"
    );
    assert_eq!(front.prompts.len(), 5, "polled once per 61 s until 305 s");
    assert_eq!(front.settled, [(id, "denied (expired)".to_owned())]);

    // The model was told it was denied, and nothing of the file.
    let results = tool_results(&mock, 1);
    assert_eq!(results.len(), 1);
    assert!(
        results[0].starts_with("denied (expired): "),
        "{}",
        results[0]
    );
    assert!(!results[0].contains("alpha outside"));

    // The research log and the store say the same.
    let tools = fixture.tool_log(&plan.id);
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].1, "denied");
    assert_eq!(tools[0].2.as_deref(), Some("denied (expired)"));
    let ask = fixture.store.ask(id).unwrap().expect("the ask is stored");
    assert_eq!(ask.state, AskState::Settled);
    assert_eq!(ask.decision.as_deref(), Some("denied (expired)"));
    assert_eq!(ask.plan_id.as_deref(), Some(plan.id.as_str()));
    assert_eq!(ask.asker, "planner");
    assert_eq!(ask.expires_at, Some(START + PLANNER_ASK_TTL));
    assert_eq!(ask.answer_allowed, None, "nobody answered");
    assert_eq!(ask.settled_at, Some(front.now()));
    assert!(fixture.store.pending_asks().unwrap().is_empty());
}

#[test]
fn an_answer_from_another_terminal_is_applied_and_a_wider_scope_is_remembered() {
    let mut fixture = Fixture::new();
    let mock = MockModel::start(vec![
        MockReply::tool_calls(vec![read(&fixture.outside_file("dir/a.txt"))]),
        // The same directory, then a sibling only the wider scope covers.
        MockReply::tool_calls(vec![
            read(&fixture.outside_file("dir/b.txt")),
            read(&fixture.outside_file("other/c.txt")),
        ]),
        MockReply::text(plan_text()),
    ]);
    let config = fixture.config(&mock, Style::Conversation);
    let wide = format!("path:{}/*", fixture.outside.display());
    let answerer = answer_from_another_terminal(fixture.state_dir(), true, Some(wide.clone()));
    let mut front = FakeFront::new(Approvals::OtherTerminal {
        started: Instant::now(),
    });

    let (plan, _) = committed(plan_from_goal(
        &mut fixture.store,
        GOAL,
        &config,
        &mut front,
    ));
    let answered = answerer.join().expect("the answering thread finished");
    let id = answered.expect("an ask appeared in the store for the other terminal");

    assert_eq!(front.asked_ids(), [id], "one question only");
    assert_eq!(front.settled, [(id, "allowed (asked)".to_owned())]);
    let asks = fixture.store.recent_asks(10).unwrap();
    assert_eq!(
        asks.len(),
        1,
        "the remembered answer opened no new ask: {asks:?}"
    );
    assert_eq!(asks[0].id, id);
    assert_eq!(asks[0].scope, fixture.dir_scope("dir"));
    assert_eq!(asks[0].state, AskState::Settled);
    assert_eq!(asks[0].answer_allowed, Some(true));
    assert_eq!(asks[0].answer_scope.as_deref(), Some(wide.as_str()));
    assert_eq!(asks[0].decision.as_deref(), Some("allowed (asked)"));

    let approvals: Vec<(String, Option<String>)> = fixture
        .tool_log(&plan.id)
        .into_iter()
        .map(|(_, outcome, approval)| (outcome, approval))
        .collect();
    assert_eq!(
        approvals,
        [
            ("success".to_owned(), Some("allowed (asked)".to_owned())),
            (
                "success".to_owned(),
                Some("allowed (remembered)".to_owned())
            ),
            (
                "success".to_owned(),
                Some("allowed (remembered)".to_owned())
            ),
        ]
    );
    assert!(tool_results(&mock, 1)[0].contains("alpha outside"));
    let results = tool_results(&mock, 2);
    assert!(results[1].contains("beta outside"), "{results:?}");
    assert!(results[2].contains("gamma outside"), "{results:?}");
}

#[test]
fn two_reads_of_one_scope_in_one_round_make_one_ask_settled_by_one_answer() {
    let mut fixture = Fixture::new();
    let mock = MockModel::start(vec![
        MockReply::tool_calls(vec![
            read(&fixture.outside_file("dir/a.txt")),
            read(&fixture.outside_file("dir/b.txt")),
        ]),
        MockReply::text(plan_text()),
    ]);
    let config = fixture.config(&mock, Style::Conversation);
    // Denied at this terminal on the first poll.
    let mut front = FakeFront::new(Approvals::Typed(
        [ApprovalAnswer {
            allowed: false,
            scope: None,
        }]
        .into(),
    ));

    let (plan, _) = committed(plan_from_goal(
        &mut fixture.store,
        GOAL,
        &config,
        &mut front,
    ));

    // The calls run one after the other: the first waits on the ask, the second finds the
    // answer remembered for the scope, so nobody is asked twice.
    assert_eq!(front.prompts.len(), 1);
    let id = front.prompts[0].id;
    assert_eq!(front.settled, [(id, "denied (asked)".to_owned())]);
    let asks = fixture.store.recent_asks(10).unwrap();
    assert_eq!(asks.len(), 1, "{asks:?}");
    assert_eq!(asks[0].state, AskState::Settled);
    assert_eq!(asks[0].decision.as_deref(), Some("denied (asked)"));

    let approvals: Vec<(String, Option<String>)> = fixture
        .tool_log(&plan.id)
        .into_iter()
        .map(|(_, outcome, approval)| (outcome, approval))
        .collect();
    assert_eq!(
        approvals,
        [
            ("denied".to_owned(), Some("denied (asked)".to_owned())),
            ("denied".to_owned(), Some("denied (remembered)".to_owned())),
        ]
    );
    let results = tool_results(&mock, 1);
    assert!(results[0].starts_with("denied (asked): "), "{}", results[0]);
    assert!(
        results[1].starts_with("denied (remembered): "),
        "{}",
        results[1]
    );
}

#[test]
fn deny_mode_honours_the_pre_approved_list_and_publishes_nothing() {
    let mut fixture = Fixture::new();
    let mock = MockModel::start(vec![
        MockReply::tool_calls(vec![
            read(&fixture.outside_file("dir/a.txt")),
            read(&fixture.outside_file("other/c.txt")),
        ]),
        MockReply::text(plan_text()),
    ]);
    let mut config = fixture.config(&mock, Style::Conversation);
    config.approval_mode = Mode::Deny;
    config.pre_approved = vec![Scope::parse(&fixture.dir_scope("dir")).unwrap()];
    let mut front = FakeFront::silent();

    let (plan, _) = committed(plan_from_goal(
        &mut fixture.store,
        GOAL,
        &config,
        &mut front,
    ));

    let approvals: Vec<(String, Option<String>)> = fixture
        .tool_log(&plan.id)
        .into_iter()
        .map(|(_, outcome, approval)| (outcome, approval))
        .collect();
    assert_eq!(
        approvals,
        [
            (
                "success".to_owned(),
                Some("allowed (pre-approved)".to_owned())
            ),
            ("denied".to_owned(), Some("denied (mode)".to_owned())),
        ]
    );
    let results = tool_results(&mock, 1);
    assert!(results[0].contains("alpha outside"), "{}", results[0]);
    assert!(results[1].starts_with("denied (mode): "), "{}", results[1]);
    assert!(front.prompts.is_empty(), "nobody is asked in deny mode");
    assert!(front.settled.is_empty());
    assert!(fixture.store.recent_asks(10).unwrap().is_empty());
}

// ---------------------------------------------------------------------------------------
// Plans in the store
// ---------------------------------------------------------------------------------------

#[test]
fn a_failed_session_keeps_the_current_plan_and_its_draft_keeps_the_log() {
    let mut fixture = Fixture::new();
    let previous = fixture.stored_plan();
    let mock = MockModel::start(vec![
        MockReply::tool_calls(vec![("list_dir", json!({"path": "."}))]),
        MockReply::status(500, "the model fell over"),
        MockReply::text(plan_text()),
    ]);
    let config = fixture.config(&mock, Style::OneShot);
    let mut front = FakeFront::silent();

    let error = plan_from_goal(&mut fixture.store, GOAL, &config, &mut front).unwrap_err();
    let PlanningError::Failed {
        plan: short,
        error: source,
    } = &error
    else {
        panic!("expected a failed session, got {error:?}")
    };
    assert!(
        matches!(
            source,
            PlannerError::Provider(ProviderError::Status { status: 500, .. })
        ),
        "{source:?}"
    );
    assert!(
        error
            .hint()
            .unwrap()
            .contains(&format!("weft plan log --plan {short}"))
    );

    assert_eq!(
        fixture.store.current_plan_id().unwrap().as_deref(),
        Some(previous.id.as_str()),
        "the previous plan stays current"
    );
    assert_eq!(fixture.store.plan(&previous.id).unwrap(), previous);
    let draft_id = fixture.store.resolve_plan(short).unwrap();
    let draft = fixture.store.plan(&draft_id).unwrap();
    assert_eq!(draft.status, PlanStatus::Draft);
    assert!(draft.tasks.is_empty());
    assert_eq!(draft.goal, GOAL);
    let kinds: Vec<(String, Option<String>)> = fixture
        .log(&draft_id)
        .into_iter()
        .map(|e| (e.kind, e.outcome))
        .collect();
    assert_eq!(
        kinds,
        [
            ("user".to_owned(), None),
            ("tool".to_owned(), Some("success".to_owned()))
        ]
    );

    // Planning again succeeds: the new plan is current and says who planned it.
    front.clock.set(START + 1_000);
    let (plan, prd_path) = committed(plan_from_goal(
        &mut fixture.store,
        GOAL,
        &config,
        &mut front,
    ));
    assert!(prd_path.is_none());
    assert_ne!(plan.id, draft_id);
    assert_eq!(
        fixture.store.current_plan_id().unwrap().as_deref(),
        Some(plan.id.as_str())
    );
    let stored = fixture.store.plan(&plan.id).unwrap();
    assert_eq!(stored.status, PlanStatus::Approved);
    assert_eq!(stored.goal, GOAL);
    let ids: Vec<&str> = stored.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["schema", "api"]);
    assert_eq!(
        fixture.store.planning(&plan.id).unwrap(),
        Some(PlanningInfo {
            planner: format!("openai:{MODEL}"),
            one_shot: true,
            prd_path: None,
            updated_at: START + 1_000,
        })
    );
    assert_eq!(mock.remaining(), 0);
}

#[test]
fn a_revision_is_refused_when_the_plan_changed_meanwhile() {
    let mut fixture = Fixture::new();
    let base = fixture.stored_plan();
    let edits = json!({"taskOps": [
        {"op": "add", "task": {"id": "docs", "title": "Document the API", "prompt": "Write docs/api.md", "dependencies": ["api"]}}
    ]})
    .to_string();
    let mock = MockModel::start(vec![MockReply::text(edits.clone())]);
    let config = fixture.config(&mock, Style::Conversation);
    let mut front = FakeFront::silent();

    // While the planner's reply is shown, another terminal edits the plan.
    let state_dir = fixture.state_dir();
    let plan_id = base.id.clone();
    let mut edited_elsewhere = false;
    front.on_event = Some(Box::new(move |event| {
        if matches!(event, PlannerEvent::Reply(_)) && !edited_elsewhere {
            edited_elsewhere = true;
            let mut other = Store::open_or_create(&state_dir, OpenOptions::default()).unwrap();
            other
                .update_plan(&plan_id, START + 500, |plan| {
                    let mut next = plan.clone();
                    next.tasks[1].description = Some("edited in another terminal".into());
                    let edited = weft_core::EventKind::TaskEdited {
                        changes: vec![weft_core::FieldChange::Description(Some(
                            "edited in another terminal".into(),
                        ))],
                    };
                    Ok((next, weft_core::Event::new(edited), ()))
                })
                .unwrap();
        }
    }));

    let error = revise_plan(
        &mut fixture.store,
        &base.id,
        "Add API docs",
        &config,
        &mut front,
    )
    .unwrap_err();
    assert!(
        matches!(
            error,
            PlanningError::Engine(EngineError::Store(StoreError::Stale { .. }))
        ),
        "{error:?}"
    );
    let stored = fixture.store.plan(&base.id).unwrap();
    assert_eq!(
        stored.revision,
        base.revision + 1,
        "only the other edit landed"
    );
    assert_eq!(
        stored.tasks[1].description.as_deref(),
        Some("edited in another terminal")
    );
    let ids: Vec<&str> = stored.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        ["schema", "api"],
        "the planner's edits were not stored"
    );

    // The same revision with nobody else editing is stored.
    let mock = MockModel::start(vec![MockReply::text(edits)]);
    let config = fixture.config(&mock, Style::Conversation);
    let mut front = FakeFront::silent();
    let outcome = revise_plan(
        &mut fixture.store,
        &base.id,
        "Add API docs",
        &config,
        &mut front,
    )
    .unwrap();
    let PlanningOutcome::Revised { plan, reports, .. } = outcome else {
        panic!("expected a revision, got {outcome:?}")
    };
    assert_eq!(plan.revision, stored.revision + 1);
    let ids: Vec<&str> = plan.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["schema", "api", "docs"]);
    assert_eq!(reports.len(), 1);
    assert_eq!(fixture.store.plan(&base.id).unwrap(), plan);
    // Its event carries each edit as a hand edit would have stored it.
    let revised = fixture
        .store
        .events(Some(&base.id), 0, 1000)
        .unwrap()
        .into_iter()
        .rev()
        .find(|e| e.kind_name() == "plan_revised")
        .expect("a plan_revised event");
    let weft_core::EventKind::PlanRevised { edits } = revised.event else {
        unreachable!()
    };
    assert_eq!(edits.len(), 1);
    assert_eq!(edits[0].task, "docs");
    assert_eq!(edits[0].edit, reports[0].event);
}

#[test]
fn weft_writes_the_prd_atomically_and_records_its_path() {
    let mut fixture = Fixture::new();
    let prd_dir = fixture.workspace.join(".scratch/notes-api");
    fs::create_dir_all(&prd_dir).unwrap();
    fs::write(prd_dir.join("PRD.md"), "an older PRD\n").unwrap();
    let reply = format!(
        "<!-- WEFT_PRD_START slug=\"Notes API\" -->\n# Notes API\n\nServe notes as JSON.\n<!-- WEFT_PRD_END -->\n{}",
        plan_text()
    );
    let mock = MockModel::start(vec![MockReply::text(reply)]);
    let config = fixture.config(&mock, Style::OneShot);
    let mut front = FakeFront::silent();

    let (plan, prd_path) = committed(plan_from_goal(
        &mut fixture.store,
        GOAL,
        &config,
        &mut front,
    ));

    let relative = ".scratch/notes-api/PRD.md";
    assert_eq!(prd_path.as_deref(), Some(relative));
    assert_eq!(
        fs::read_to_string(fixture.workspace.join(relative)).unwrap(),
        "# Notes API\n\nServe notes as JSON.\n"
    );
    let mut left: Vec<String> = fs::read_dir(&prd_dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    assert_eq!(left, ["PRD.md"], "no temporary file is left behind");
    let info = fixture.store.planning(&plan.id).unwrap().unwrap();
    assert_eq!(info.prd_path.as_deref(), Some(relative));
    assert!(
        front
            .events
            .contains(&PlannerEvent::Notice(format!("PRD saved to {relative}")))
    );
    assert!(
        fixture
            .log(&plan.id)
            .iter()
            .any(|e| e.kind == "note" && e.input == format!("PRD saved to {relative}"))
    );
}
