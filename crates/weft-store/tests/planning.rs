//! The planner's tables: research log, planning info and approval asks answered from
//! another process.

use std::path::Path;

use weft_core::{PlanStatus, Task};
use weft_store::{
    AnswerRefused, AskState, NewAsk, NewLogEntry, OpenOptions, PlanDraft, PlanningInfo, Store,
};

fn create(dir: &Path) -> Store {
    Store::open_or_create(&dir.join(".weft"), OpenOptions::default()).unwrap()
}

fn draft_plan(store: &mut Store) -> String {
    let mut task = Task::new("one", "One");
    task.prompt = "do one".into();
    store
        .create_plan(
            PlanDraft {
                goal: "goal".into(),
                runner: None,
                status: PlanStatus::Draft,
                tasks: vec![task],
                source: "planner".into(),
            },
            1,
        )
        .unwrap()
        .id
}

fn ask(plan: &str, created_at: i64) -> NewAsk {
    NewAsk {
        plan_id: Some(plan.into()),
        owner_pid: std::process::id(),
        scope: "path:/etc/*".into(),
        subject: "read /etc/hosts".into(),
        asker: "planner".into(),
        created_at,
        expires_at: Some(created_at + 300_000),
    }
}

#[test]
fn research_log_appends_in_order_and_reads_after_a_sequence() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = create(dir.path());
    let plan = draft_plan(&mut store);
    let first = store
        .append_planner_log(
            &plan,
            &[
                NewLogEntry {
                    turn: 1,
                    kind: "user".into(),
                    input: "Add rate limiting".into(),
                    ..Default::default()
                },
                NewLogEntry {
                    turn: 1,
                    kind: "tool".into(),
                    tool: Some("read_file".into()),
                    input: "read_file src/lib.rs".into(),
                    outcome: Some("success".into()),
                    detail: "12 lines".into(),
                    approval: None,
                },
            ],
            10,
        )
        .unwrap();
    assert_eq!(first, vec![1, 2]);
    let second = store
        .append_planner_log(
            &plan,
            &[NewLogEntry {
                turn: 1,
                kind: "tool".into(),
                tool: Some("run_command".into()),
                input: "cat /etc/hosts".into(),
                outcome: Some("denied".into()),
                detail: "denied (no-channel)".into(),
                approval: Some("denied (no-channel)".into()),
            }],
            11,
        )
        .unwrap();
    assert_eq!(second, vec![3]);
    let all = store.planner_log(&plan, 0).unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all[2].outcome.as_deref(), Some("denied"));
    assert_eq!(all[2].approval.as_deref(), Some("denied (no-channel)"));
    let after = store.planner_log(&plan, 2).unwrap();
    assert_eq!(after.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![3]);
    // An empty append writes nothing and needs no lock.
    assert!(store.append_planner_log(&plan, &[], 12).unwrap().is_empty());
}

#[test]
fn planning_info_is_upserted_and_goes_with_its_plan() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = create(dir.path());
    let plan = draft_plan(&mut store);
    assert_eq!(store.planning(&plan).unwrap(), None);
    let mut info = PlanningInfo {
        planner: "openai:test".into(),
        one_shot: true,
        prd_path: None,
        updated_at: 5,
    };
    store.set_planning(&plan, &info).unwrap();
    info.prd_path = Some(".scratch/limits/PRD.md".into());
    info.updated_at = 6;
    store.set_planning(&plan, &info).unwrap();
    assert_eq!(store.planning(&plan).unwrap(), Some(info));
    store
        .append_planner_log(
            &plan,
            &[NewLogEntry {
                turn: 1,
                kind: "note".into(),
                input: "x".into(),
                ..Default::default()
            }],
            7,
        )
        .unwrap();
    store.delete_plan(&plan, 8).unwrap();
    assert_eq!(store.planning(&plan).unwrap(), None);
    assert!(store.planner_log(&plan, 0).unwrap().is_empty());
}

#[test]
fn an_ask_is_answered_once_from_another_connection_then_settled() {
    let dir = tempfile::tempdir().unwrap();
    let mut planner = create(dir.path());
    let plan = draft_plan(&mut planner);
    let id = planner.open_ask(&ask(&plan, 100)).unwrap();
    // Another process (another connection) lists and answers it.
    let mut other = create(dir.path());
    let pending = other.pending_asks().unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].id, id);
    assert_eq!(pending[0].state, AskState::Open);
    let answered = other
        .answer_ask(id, true, Some("path:/etc"), 150)
        .unwrap()
        .unwrap();
    assert_eq!(answered.state, AskState::Answered);
    // A second answer is refused and changes nothing.
    let again = other.answer_ask(id, false, None, 151).unwrap();
    assert_eq!(
        again,
        Err(AnswerRefused::Closed {
            id,
            how: "answered".into()
        })
    );
    let seen = planner.ask(id).unwrap().unwrap();
    assert_eq!(seen.answer_allowed, Some(true));
    assert_eq!(seen.answer_scope.as_deref(), Some("path:/etc"));
    planner.settle_ask(id, "allowed (asked)", 160).unwrap();
    assert!(other.pending_asks().unwrap().is_empty());
    let late = other.answer_ask(id, false, None, 170).unwrap();
    assert_eq!(
        late,
        Err(AnswerRefused::Closed {
            id,
            how: "settled: allowed (asked)".into()
        })
    );
    assert_eq!(
        other.answer_ask(id + 99, true, None, 171).unwrap(),
        Err(AnswerRefused::Unknown { id: id + 99 })
    );
    // Settling twice keeps the first decision.
    planner.settle_ask(id, "denied (expired)", 180).unwrap();
    assert_eq!(
        planner.ask(id).unwrap().unwrap().decision.as_deref(),
        Some("allowed (asked)")
    );
    assert_eq!(planner.recent_asks(10).unwrap().len(), 1);
}
