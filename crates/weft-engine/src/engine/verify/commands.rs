//! How a verification's commands run (see the parent module's contract): in the
//! integration checkout moved to the tip, like a task's checks, on a worker thread for
//! the run loop ([`spawn_worker`], stopped by a [`Stopper`]) or on the caller's thread
//! for `weft verify` ([`by_hand`]).

use std::path::Path;
use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use weft_agents::supervise::Canceller;
use weft_core::CheckRun;
use weft_core::event::{Event, EventKind};
use weft_git::Oid;
use weft_store::VerifyUpdate;

use super::{Phase, VERDICT_TAIL};
use crate::EngineConfig;
use crate::attempt::{CheckPlan, Msg, run_checks, run_checks_watched};
use crate::engine::{now, random_hex16};
use crate::error::EngineError;
use crate::executor::Executor;
use crate::isolation::Isolation;

/// Run the `verify` commands once in `iso`'s integration checkout detached at `tip`,
/// like a task's checks (in order, stopping at the first that fails), on this thread.
fn run_commands(
    config: &EngineConfig,
    commands: &[String],
    iso: &Isolation,
    executor: &dyn Executor,
    log_dir: &Path,
    tip: &Oid,
) -> Result<Vec<CheckRun>, EngineError> {
    Ok(match check_plan(config, commands, iso, log_dir, tip)? {
        Ok(plan) => run_checks(executor, &plan, &plan.commands),
        Err(runs) => runs,
    })
}

/// The integration checkout detached at `tip`, and how the `verify` commands run there
/// (like a task's checks); `Err`: the checkout could not be moved, as the failed run
/// that says so.
pub(super) fn check_plan(
    config: &EngineConfig,
    commands: &[String],
    iso: &Isolation,
    log_dir: &Path,
    tip: &Oid,
) -> Result<Result<CheckPlan, Vec<CheckRun>>, EngineError> {
    let folder = match iso.integration_checkout_at(std::slice::from_ref(tip)) {
        Ok(folder) => folder,
        Err(error) => {
            return Ok(Err(vec![CheckRun {
                command: commands.first().cloned().unwrap_or_default(),
                exit_code: None,
                output_tail: format!(
                    "the integration checkout could not be moved to the tip: {error}"
                ),
                duration_ms: None,
            }]));
        }
    };
    let id = format!("verify-{}", random_hex16());
    let contain = crate::contain::containment(config, &id, &folder, None).map_err(|detail| {
        EngineError::Refused {
            detail: format!("verification cannot be contained: {detail}"),
            hint: "check the `confine` setting (`weft config`)".into(),
        }
    })?;
    Ok(Ok(CheckPlan {
        commands: commands.to_vec(),
        cwd: folder,
        log_dir: log_dir.to_owned(),
        attempt_id: id,
        timeout: config.limits.task_timeout,
        kill_grace: config.limits.kill_grace,
        secrets: config.supervision.secrets.clone(),
        receives_marker: false,
        contain,
        git_env: Vec::new(),
        transcript: None,
        limits: None,
    }))
}

/// Run a verification step's commands on a thread of its own (`weft-verify-<id>`), which
/// sends [`Msg::Verified`] to the loop as its last act.
pub(super) fn spawn_worker(
    executor: Arc<dyn Executor>,
    plan: CheckPlan,
    stopper: Arc<Stopper>,
    to_loop: Sender<Msg>,
) -> Result<JoinHandle<()>, EngineError> {
    std::thread::Builder::new()
        .name(format!("weft-{}", plan.attempt_id))
        .spawn(move || {
            let runs = run_checks_watched(executor.as_ref(), &plan, &plan.commands, &|check| {
                stopper.started(check)
            });
            let _ = to_loop.send(Msg::Verified {
                runs,
                stopped: stopper.stopped(),
            });
        })
        .map_err(|error| EngineError::Io {
            path: "a verification thread".into(),
            error,
        })
}

/// Stops a verification step from the loop's thread: the running command is cancelled
/// (its process group), none after it starts.
#[derive(Debug, Default)]
pub(super) struct Stopper {
    /// Stop asked; the running command's canceller.
    state: Mutex<(bool, Option<Canceller>)>,
}

impl Stopper {
    pub(super) fn stop(&self) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.0 = true;
        if let Some(check) = &state.1 {
            check.cancel();
        }
    }

    /// A command started: false when a stop came first (it is cancelled at once).
    fn started(&self, check: &Canceller) -> bool {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        state.1 = Some(check.clone());
        !state.0
    }

    fn stopped(&self) -> bool {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).0
    }
}

/// The verification step in progress: its commands run on `worker`.
#[derive(Debug)]
pub(crate) struct Running {
    /// The tip being verified (the red one, in a bisect).
    pub(super) tip: Oid,
    /// The tip this step's commands run on.
    pub(super) at: Oid,
    pub(super) purpose: &'static str,
    /// What the step is for, so its outcome leads to the next.
    pub(super) phase: Phase,
    pub(super) clock: Instant,
    pub(super) stopper: Arc<Stopper>,
    pub(super) worker: Option<JoinHandle<()>>,
}

impl Drop for Running {
    /// A step dropped unfinished (the loop failed) leaves no process behind.
    fn drop(&mut self) {
        self.stopper.stop();
        if let Some(worker) = self.worker.take() {
            let _ = worker.join();
        }
    }
}

/// The plan's own `verify` commands (from its workflow file) when it has some, else the
/// setting's.
pub(super) fn effective_commands(
    store: &weft_store::Store,
    plan_id: &str,
    setting: &[String],
) -> Result<Vec<String>, EngineError> {
    let own = store.plan_verify(plan_id)?;
    Ok(if own.is_empty() {
        setting.to_vec()
    } else {
        own
    })
}

/// What `weft verify` found.
#[derive(Debug, Clone)]
pub struct ByHand {
    pub run_id: String,
    pub tip: String,
    /// The first command that failed (none: every one passed), with its exit code and
    /// output tail.
    pub failed: Option<CheckRun>,
    pub duration_ms: u64,
}

/// `weft verify`: run the `verify` commands on the open run's recorded integration tip,
/// by hand, with the run's events; a pass records the tip as green. Refused while an
/// engine runs the plan (its own verification would race this one), without `verify`
/// set, and without an open isolated run. Nothing is bisected or quarantined here: the
/// next `weft run` does that.
pub fn by_hand(config: &EngineConfig) -> Result<ByHand, EngineError> {
    let refuse = |detail: String, hint: &str| EngineError::Refused {
        detail,
        hint: hint.to_owned(),
    };
    let options = weft_store::OpenOptions {
        busy_timeout: config.limits.busy_timeout,
    };
    let mut store = weft_store::Store::open_or_create(&config.state_dir, options)?;
    store.set_secrets(config.supervision.secrets.clone());
    let commands = effective_commands(&store, &config.plan_id, &config.verify.commands)?;
    if commands.is_empty() {
        return Err(refuse(
            "there is nothing to verify with: the `verify` setting is empty".into(),
            "set it in weft.toml, e.g. `verify = [\"cargo test --workspace\"]`, or pass `-c verify=\"…\"`",
        ));
    }
    if let Some(pid) = crate::control::engine_running(&store, &config.plan_id)? {
        return Err(refuse(
            format!("a run of this plan is active (engine pid {pid}); it verifies its own tip"),
            "wait for it to end, or `weft stop` it first",
        ));
    }
    let run = store.open_run(&config.plan_id)?;
    let Some(run) = run.filter(|r| r.integration_branch.is_some()) else {
        return Err(refuse(
            "this plan has no open isolated run: there is no integration tip to verify".into(),
            "`weft run` starts one",
        ));
    };
    let iso = Isolation::existing(
        &config.workspace,
        &config.state_dir,
        &config.isolation.repos,
        &run.id,
    )?;
    if iso.is_group() {
        return Err(refuse(
            "verifying a multi-repo run is not supported".into(),
            "run the commands in each repository's integration checkout by hand",
        ));
    }
    iso.check_integration()
        .map_err(|f| f.into_error("verifying the integration tip"))?;
    let tip = iso.recorded_tips()?.remove(0);
    let log_dir = config.state_dir.join("logs").join(&run.id);
    weft_agents::contain::private::create_dir_all(&log_dir).map_err(|error| EngineError::Io {
        path: log_dir.display().to_string(),
        error,
    })?;
    let started = EventKind::VerificationStarted {
        tip: tip.as_str().to_owned(),
        commands: commands.clone(),
        purpose: "by_hand".into(),
    };
    store.record_event(
        Some(&config.plan_id),
        Event::new(started).run(&run.id),
        now(),
    )?;
    let iso = Arc::new(iso);
    let executor = crate::executor::LocalExecutor {
        workspace: config.workspace.clone(),
        runnable: config.isolation.runnable.clone(),
        setup: crate::contain::SetupContainment::of(config),
        isolation: Some(iso.clone()),
    };
    let clock = Instant::now();
    let runs = run_commands(config, &commands, &iso, &executor, &log_dir, &tip)?;
    let duration_ms = clock.elapsed().as_millis() as u64;
    let failed = runs.into_iter().find(|r| r.exit_code != Some(0));
    let (kind, green) = match &failed {
        None => (
            EventKind::VerificationPassed {
                tip: tip.as_str().to_owned(),
                purpose: "by_hand".into(),
                duration_ms,
            },
            Some(Some(tip.as_str().to_owned())),
        ),
        Some(run) => (
            EventKind::VerificationFailed {
                tip: tip.as_str().to_owned(),
                purpose: "by_hand".into(),
                command: run.command.clone(),
                exit_code: run.exit_code,
                output_tail: weft_core::tail_chars(&run.output_tail, VERDICT_TAIL),
                duration_ms,
            },
            None,
        ),
    };
    let update = VerifyUpdate {
        green,
        ..VerifyUpdate::default()
    };
    store.update_verify(
        &run.id,
        &config.plan_id,
        &update,
        Some(Event::new(kind).run(&run.id)),
        now(),
    )?;
    Ok(ByHand {
        run_id: run.id,
        tip: tip.as_str().to_owned(),
        failed,
        duration_ms,
    })
}
