//! What the store's integration tests share: a temporary workspace and a store in it.
// Each test file uses only some of these.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use weft_core::event::EventKind;
use weft_core::{Attempt, AttemptStatus, PlanStatus, Task};
use weft_store::{OpenOptions, PlanDraft, Store};

/// A temporary workspace and the path of its (not yet created) state folder.
pub fn workspace() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("temporary folder");
    let dir = tmp.path().join(".weft");
    (tmp, dir)
}

/// The store of state folder `dir`, made if it is not there.
pub fn create(dir: &Path) -> Store {
    Store::open_or_create(dir, OpenOptions::default()).expect("open_or_create")
}

/// A store in `dir/.weft` with a one-task plan (`a`), its run `r1` claimed and a running
/// attempt of `a` saved, whose output goes to `log`.
pub fn store_with_attempt(dir: &Path, log: &Path) -> (Store, Attempt) {
    let mut store = Store::open_or_create(&dir.join(".weft"), OpenOptions::default()).unwrap();
    let mut task = Task::new("a", "A");
    task.prompt = "do a".into();
    task.order = 1;
    let plan = store
        .create_plan(
            PlanDraft {
                goal: "g".into(),
                runner: None,
                status: PlanStatus::Approved,
                tasks: vec![task],
                source: "test".into(),
            },
            1,
        )
        .unwrap();
    store
        .claim_run(&plan.id, "r1", (1, 1), &|_, _| false, 1)
        .unwrap();
    let attempt = Attempt {
        id: "0123456789abcdef0123456789abcdef".into(),
        run_id: "r1".into(),
        plan_id: plan.id.clone(),
        task_id: "a".into(),
        number: 1,
        runner: "exec".into(),
        status: AttemptStatus::Running,
        cwd: dir.display().to_string(),
        worktree: None,
        branch: None,
        marker: None,
        session_id: None,
        agent_session_id: None,
        pid: None,
        process_group: None,
        process_start_ticks: None,
        exit_code: None,
        signal: None,
        started_at: 2,
        ended_at: None,
        verdict: None,
        log_path: Some(log.display().to_string()),
        input_tokens: None,
        output_tokens: None,
        cost_usd: None,
        denials: Vec::new(),
        final_text: None,
        cut_from: None,
        landing: None,
    };
    let started = EventKind::AttemptStarted {
        number: 1,
        runner: "exec".into(),
        pid: None,
        links: Vec::new(),
    };
    store.save_attempt(&attempt, started, 2).unwrap();
    (store, attempt)
}
