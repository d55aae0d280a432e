//! What the store's integration tests share: a temporary workspace and a store in it.
// Each test file uses only some of these.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use weft_core::event::EventKind;
use weft_core::{Attempt, PlanStatus, Task};
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
        cwd: dir.display().to_string(),
        log_path: Some(log.display().to_string()),
        ..Attempt::new(
            "0123456789abcdef0123456789abcdef".into(),
            "r1".into(),
            plan.id.clone(),
            "a".into(),
            1,
            "exec".into(),
            2,
        )
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
