//! Runs the server executes itself (`POST /api/runs`), and what any engine is doing.
//!
//! A run started here is `weft_engine::run` on a thread of its own, with the
//! configuration the bin builds for `weft run` (same engine, same store, same control
//! requests), so `weft stop`, `weft cancel N` and every other control work on it from a
//! terminal exactly as on a run in one, and the other way round. Never two engines on one
//! plan: the store's run claim decides (an engine holding the claim, here or in another
//! process, makes the engine refuse), and the refusal names the holder's pid. The request
//! waits until the engine has claimed the run (its first event) or failed, so a refusal
//! is the response, not a line in a log.

use std::collections::HashMap;
use std::sync::mpsc::{RecvTimeoutError, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use weft_store::Store;

use crate::api::{App, Call, plan_id};
use crate::error::{ApiError, ApiResult};
use crate::http::Response;

/// How long `POST /api/runs` waits for the engine to claim the run.
const CLAIM_WAIT: Duration = Duration::from_secs(30);

/// How the last run this server started for a plan ended.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    pub run: Option<String>,
    pub status: Option<String>,
    pub all_done: bool,
    pub error: Option<ApiError>,
}

#[derive(Debug, Default)]
struct Slot {
    thread: Option<std::thread::JoinHandle<()>>,
    outcome: Arc<Mutex<Option<Outcome>>>,
}

/// The runs this server started, by plan id.
#[derive(Debug, Default)]
pub struct Runs {
    slots: Mutex<HashMap<String, Slot>>,
}

impl Runs {
    /// Whether a run this server started is still going.
    pub fn active(&self) -> bool {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .any(|s| s.thread.as_ref().is_some_and(|t| !t.is_finished()))
    }
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanRef {
    #[serde(default)]
    plan: Option<String>,
}

/// Who is executing `plan`, as `GET /api/runs/current` shows it.
fn engine_json(store: &Store, plan: &str) -> ApiResult<serde_json::Value> {
    let pid = weft_engine::control::engine_running(store, plan)?;
    let run = store.open_run(plan)?.map(|r| r.id);
    Ok(serde_json::json!({
        "plan": plan,
        "running": pid.is_some(),
        "run": run,
        "engine": pid.map(|pid| serde_json::json!({
            "pid": pid,
            "surface": if pid == std::process::id() { "server" } else { "cli" },
        })),
    }))
}

fn held_by(plan: &str, pid: u32) -> ApiError {
    let who = if pid == std::process::id() {
        "this server".to_owned()
    } else {
        format!("another weft process (pid {pid}, e.g. `weft run` in a terminal)")
    };
    ApiError::conflict(format!("plan {plan} is already being run by {who}"))
        .hint("follow it with GET /api/events; stop it with POST /api/runs/stop or `weft stop`")
}

pub(crate) fn start(app: &App, call: &Call) -> ApiResult {
    let options: crate::RunOptions = call.json()?;
    if let Some(parallel) = options.parallel
        && !(1..=64).contains(&parallel)
    {
        return Err(ApiError::bad_request(format!(
            "parallel {parallel} is outside 1 to 64"
        )));
    }
    let store = app.store()?;
    let plan = plan_id(&store, options.plan.as_deref().unwrap_or("current"))?;
    if let Some(pid) = weft_engine::control::engine_running(&store, &plan)? {
        return Err(held_by(&plan, pid));
    }
    let mut slots = app
        .runs
        .slots
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if slots
        .get(&plan)
        .and_then(|s| s.thread.as_ref())
        .is_some_and(|t| !t.is_finished())
    {
        return Err(held_by(&plan, std::process::id()));
    }
    let config = app.host.engine_config(&plan, &options)?;
    let outcome: Arc<Mutex<Option<Outcome>>> = Arc::default();
    let (claimed, claim) = channel::<Result<(), ApiError>>();
    let thread = {
        let outcome = outcome.clone();
        std::thread::Builder::new()
            .name("weft-engine".into())
            .spawn(move || {
                let mut first = Some(claimed.clone());
                let result = weft_engine::run(&config, &mut |_| {
                    if let Some(tx) = first.take() {
                        let _ = tx.send(Ok(()));
                    }
                });
                let done = match result {
                    Ok(summary) => Outcome {
                        run: Some(summary.run_id),
                        status: Some(summary.status.as_str().to_owned()),
                        all_done: summary.all_done,
                        error: None,
                    },
                    Err(error) => {
                        let error = ApiError::from(error);
                        let _ = claimed.send(Err(error.clone()));
                        Outcome {
                            run: None,
                            status: None,
                            all_done: false,
                            error: Some(error),
                        }
                    }
                };
                let _ = claimed.send(Ok(()));
                *outcome.lock().unwrap_or_else(PoisonError::into_inner) = Some(done);
            })
            .map_err(|e| ApiError::internal(format!("cannot start the engine's thread: {e}")))?
    };
    slots.insert(
        plan.clone(),
        Slot {
            thread: Some(thread),
            outcome,
        },
    );
    drop(slots);
    match claim.recv_timeout(CLAIM_WAIT) {
        Ok(Err(error)) => return Err(error),
        Ok(Ok(())) | Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {}
    }
    Ok(Response::json(202, &engine_json(&app.store()?, &plan)?))
}

pub(crate) fn stop(app: &App, call: &Call) -> ApiResult {
    let body: PlanRef = call.json()?;
    let mut store = app.store()?;
    let plan = plan_id(&store, body.plan.as_deref().unwrap_or("current"))?;
    let report = weft_engine::control::stop(&mut store, &plan)?;
    let mut json = engine_json(&store, &plan)?;
    json["report"] = serde_json::to_value(&report.lines).unwrap_or_default();
    Ok(Response::json(200, &json))
}

pub(crate) fn current(app: &App, call: &Call) -> ApiResult {
    let store = app.store()?;
    let plan = plan_id(&store, call.request.query("plan").unwrap_or("current"))?;
    let mut json = engine_json(&store, &plan)?;
    let slots = app
        .runs
        .slots
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    let last = slots.get(&plan).and_then(|s| {
        s.outcome
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    });
    json["last_server_run"] = serde_json::to_value(last).unwrap_or_default();
    Ok(Response::json(200, &json))
}
