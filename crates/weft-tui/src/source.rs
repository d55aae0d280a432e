//! Reading what the TUI shows from the store (the only source: another terminal's `weft
//! run`, `weft retry` or `weft approvals allow` is seen exactly like this TUI's own).

use weft_engine::EngineError;
use weft_store::Store;

use crate::state::{Ask, Detail, Engine, Snapshot};

/// The plan, its run, whether an engine executes it, the open questions about it and its
/// spend against `budget`. `ours`: this process's engine thread is running the plan.
pub fn snapshot(
    store: &Store,
    plan_id: &str,
    ours: bool,
    budget: weft_core::spend::Budget,
) -> Result<Snapshot, EngineError> {
    // The sequence number first: whatever is read after it is at least that new.
    let seq = store.last_event_seq()?;
    let plan = store.plan(plan_id)?;
    let run = store.open_run(plan_id)?;
    let engine = match weft_engine::control::engine_running(store, plan_id)? {
        _ if ours => Engine::Ours,
        Some(pid) if pid == std::process::id() => Engine::Ours,
        Some(pid) => Engine::Elsewhere { pid },
        None => Engine::Idle,
    };
    let asks = store
        .pending_asks()?
        .into_iter()
        .filter(|a| a.plan_id.as_deref().is_none_or(|p| p == plan_id))
        // An ask whose process ended waits for nobody (`weft approvals` closes it).
        .filter(|a| std::path::Path::new(&format!("/proc/{}", a.owner_pid)).exists())
        .map(|a| Ask {
            id: a.id,
            subject: a.subject,
            scope: a.scope,
            asker: a.asker,
        })
        .collect();
    // Running attempts carry their spend so far (the engine writes it, throttled).
    let mut spend = weft_core::spend::Spend::default();
    for a in store.attempts_of_plan(plan_id)? {
        spend.add(&weft_core::spend::Spend::stored(
            a.input_tokens,
            a.output_tokens,
            a.cost_usd,
        ));
    }
    Ok(Snapshot {
        spend,
        budget,
        isolated: run.as_ref().is_some_and(|r| r.integration_branch.is_some()),
        run: run.map(|r| (r.id, r.status.as_str().to_owned())),
        plan: Some(plan),
        engine,
        asks,
        seq,
    })
}

/// The task's attempts, oldest first.
pub fn detail(store: &Store, plan_id: &str, task: &str) -> Result<Detail, EngineError> {
    let mut attempts = store.attempts_of_task(plan_id, task)?;
    attempts.sort_by_key(|a| (a.started_at, a.number));
    Ok(Detail {
        task: task.to_owned(),
        attempts,
    })
}
