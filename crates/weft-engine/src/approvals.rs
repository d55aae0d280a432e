//! Task runners' permission requests (DESIGN §11): an agent in an asking mode (Claude Code
//! `ask`/`acceptEdits`) hands weft each tool call that needs approval. The run's approval
//! policy decides at once when it can (pre-approved, remembered, the mode); otherwise the
//! question is published in the store, where `weft approvals allow|deny ID` answers it from
//! any terminal. A runner's question never expires: the agent waits for a person. When the
//! attempt ends, its open questions are withdrawn (denied).
//!
//! Grants are remembered for the run, across its tasks, as the seeds describe ("the floor is
//! per session, not per task").

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use weft_agents::supervise::{PermissionAnswer, PermissionRelay, PermissionRequest};
use weft_core::approval::{
    ApprovalPolicy, AskId, Asker, Decision, Mode, Outcome, Request, Scope, Settlement, Subject,
    WaiterId,
};
use weft_store::{NewAsk, OpenOptions, Store};

use crate::engine::now;

/// How often a waiting request looks for an answer from another terminal.
const POLL: Duration = Duration::from_millis(200);

/// The run's approval state, shared by every attempt's relay.
pub(crate) struct RunnerApprovals {
    state: Mutex<State>,
    state_dir: PathBuf,
    busy_timeout: Duration,
    plan_id: String,
}

struct State {
    policy: ApprovalPolicy,
    /// Decisions reached for waiters, collected by whoever settled them.
    settled: HashMap<WaiterId, Decision>,
    /// Open asks and their row in the store.
    published: HashMap<AskId, i64>,
}

impl RunnerApprovals {
    pub(crate) fn new(
        mode: Mode,
        pre_approved: Vec<Scope>,
        state_dir: &Path,
        busy_timeout: Duration,
        plan_id: &str,
    ) -> Arc<RunnerApprovals> {
        let mut policy = ApprovalPolicy::new(mode, pre_approved);
        // `weft approvals` in any terminal is the channel.
        policy.set_channel(true);
        Arc::new(RunnerApprovals {
            state: Mutex::new(State {
                policy,
                settled: HashMap::new(),
                published: HashMap::new(),
            }),
            state_dir: state_dir.to_owned(),
            busy_timeout,
            plan_id: plan_id.to_owned(),
        })
    }

    /// The relay for one attempt; `task` names it in questions (`task #2 api`).
    pub(crate) fn relay(
        self: &Arc<Self>,
        attempt: &str,
        task: &str,
        cwd: &Path,
    ) -> PermissionRelay {
        let this = Arc::clone(self);
        let (attempt, task, cwd) = (attempt.to_owned(), task.to_owned(), cwd.to_owned());
        PermissionRelay(Arc::new(move |request| {
            this.decide(&attempt, &task, &cwd, &request)
        }))
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn store(&self) -> Option<Store> {
        let options = OpenOptions {
            busy_timeout: self.busy_timeout,
        };
        Store::open_existing(&self.state_dir, options)
            .ok()
            .flatten()
    }

    fn decide(
        &self,
        attempt: &str,
        task: &str,
        cwd: &Path,
        request: &PermissionRequest,
    ) -> PermissionAnswer {
        let subject = subject_for(request, cwd);
        let mut store = self.store();
        let asker = Asker::Runner {
            attempt: attempt.to_owned(),
        };
        let (ask, waiter) = {
            let mut state = self.lock();
            match state
                .policy
                .request(Request::new(subject.clone(), asker), now())
            {
                Outcome::Decided(decision) => return answer(&decision),
                Outcome::Pending { ask, waiter } => (ask, waiter),
            }
        };
        loop {
            {
                let mut state = self.lock();
                if let Some(decision) = state.settled.remove(&waiter) {
                    return answer(&decision);
                }
                // Publish the question (again, if the store was busy the last time).
                if !state.published.contains_key(&ask) {
                    if store.is_none() {
                        store = self.store();
                    }
                    if let Some(view) = state.policy.open_asks().into_iter().find(|v| v.id == ask)
                        && let Some(store) = store.as_mut()
                        && let Ok(id) = store.open_ask(&NewAsk {
                            plan_id: Some(self.plan_id.clone()),
                            owner_pid: std::process::id(),
                            scope: view.scope.to_string(),
                            subject: format!("{task}: {subject}"),
                            asker: format!("runner:{attempt}"),
                            created_at: now(),
                            expires_at: None,
                        })
                    {
                        state.published.insert(ask, id);
                    }
                }
                let stored = state
                    .published
                    .get(&ask)
                    .copied()
                    .and_then(|id| store.as_ref()?.ask(id).ok().flatten());
                if let Some(stored) = stored
                    && let Some(allowed) = stored.answer_allowed
                {
                    let scope = stored
                        .answer_scope
                        .as_deref()
                        .and_then(|s| Scope::parse(s).ok());
                    let now = now();
                    let settlements = match state.policy.answer(ask, allowed, scope, now) {
                        Ok(done) => done,
                        // A scope that does not cover the ask: remember the plain answer.
                        Err(_) => state
                            .policy
                            .answer(ask, allowed, None, now)
                            .unwrap_or_default(),
                    };
                    record(&mut state, settlements, store.as_mut());
                    continue;
                }
            }
            std::thread::sleep(POLL);
        }
    }

    /// Withdraw the attempt's open requests (it ended: nobody waits for the answer).
    pub(crate) fn attempt_ended(&self, attempt: &str) {
        let mut state = self.lock();
        let settlements = state.policy.attempt_ended(attempt, now());
        if settlements.is_empty() {
            return;
        }
        let mut store = self.store();
        record(&mut state, settlements, store.as_mut());
    }
}

/// Keep each waiter's decision for it, and close the store rows of the asks it settled.
fn record(state: &mut State, settlements: Vec<Settlement>, mut store: Option<&mut Store>) {
    for settlement in settlements {
        let label = settlement.decision.label();
        if let Some(id) = state.published.remove(&settlement.ask)
            && let Some(store) = store.as_deref_mut()
        {
            let _ = store.settle_ask(id, &label, now());
        }
        state.settled.insert(settlement.waiter, settlement.decision);
    }
}

fn answer(decision: &Decision) -> PermissionAnswer {
    if decision.allowed {
        PermissionAnswer::Allow
    } else {
        PermissionAnswer::Deny {
            message: format!(
                "weft's approval policy refused this ({}; scope {}). Do without it, or ask the user to allow it with `weft approvals`.",
                decision.label(),
                decision.scope
            ),
        }
    }
}

/// What a tool call asks for, as the approval policy sees it: shell commands by their
/// families, reads by their directory, other tools (edits, fetches) as a family of their own.
fn subject_for(request: &PermissionRequest, cwd: &Path) -> Subject {
    let text = |key: &str| request.input.get(key).and_then(serde_json::Value::as_str);
    let absolute = |path: &str| {
        let path = Path::new(path);
        if path.is_absolute() {
            path.display().to_string()
        } else {
            cwd.join(path).display().to_string()
        }
    };
    match request.tool.as_str() {
        "Bash" => Subject::Command {
            line: text("command").unwrap_or_default().to_owned(),
        },
        "Read" | "NotebookRead" => match text("file_path").or(text("notebook_path")) {
            Some(path) => Subject::Read {
                path: absolute(path),
            },
            None => tool_subject(request),
        },
        "Glob" | "Grep" | "LS" => Subject::List {
            path: absolute(text("path").unwrap_or(".")),
        },
        _ => tool_subject(request),
    }
}

/// `Edit /abs/path`, `WebFetch https://…`: the tool is the family.
fn tool_subject(request: &PermissionRequest) -> Subject {
    let detail = ["file_path", "notebook_path", "url", "path", "query"]
        .iter()
        .find_map(|k| request.input.get(*k).and_then(serde_json::Value::as_str))
        .unwrap_or_default();
    Subject::Command {
        line: format!("{} {detail}", request.tool).trim_end().to_owned(),
    }
}
