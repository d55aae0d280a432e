//! Runs, attempts and control requests: what the engine writes and every other process
//! reads.

use rusqlite::{Connection, OptionalExtension, Row, Transaction, params};
use weft_core::event::{ControlRequest, Event, EventKind, RunTotals};
use weft_core::{
    Attempt, AttemptStatus, Denial, OutputSummary, Run, RunStatus, TaskStatus, Timestamp, Verdict,
};

use crate::rows::Checked;
use crate::{Store, StoreError};

/// A control request as queued for the engine that runs a plan, by any process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueuedControl {
    pub seq: i64,
    pub plan_id: String,
    pub request: ControlRequest,
    pub created_at: Timestamp,
}

/// What `claim_run` found.
#[derive(Debug, Clone)]
pub struct ClaimedRun {
    pub run: Run,
    /// False when this call created the run.
    pub continued: bool,
}

/// A task field change made by the engine or a control command, stored with one event.
#[derive(Debug, Clone, Default)]
pub struct TaskUpdate {
    pub status: Option<TaskStatus>,
    /// `Some(None)` clears the verdict.
    pub verdict: Option<Option<Verdict>>,
    pub output: Option<Option<OutputSummary>>,
    pub hold: Option<bool>,
}

impl TaskUpdate {
    /// A change of the status alone.
    pub fn status(status: TaskStatus) -> Self {
        TaskUpdate {
            status: Some(status),
            ..TaskUpdate::default()
        }
    }
}

const RUN_COLUMNS: &str = "id, plan_id, status, base_ref, integration_branch, engine_pid, \
     engine_start_ticks, started_at, ended_at";

fn run_from_row(row: &Row<'_>) -> rusqlite::Result<Checked<Run>> {
    let status: String = row.get(2)?;
    let Some(status) = RunStatus::parse(&status) else {
        return Ok(Err(format!("unknown run status {status:?}")));
    };
    Ok(Ok(Run {
        id: row.get(0)?,
        plan_id: row.get(1)?,
        status,
        base_ref: row.get(3)?,
        integration_branch: row.get(4)?,
        engine_pid: row.get(5)?,
        engine_start_ticks: row.get::<_, Option<i64>>(6)?.map(|t| t as u64),
        started_at: row.get(7)?,
        ended_at: row.get(8)?,
    }))
}

const ATTEMPT_COLUMNS: &str = "id, run_id, plan_id, task_id, number, runner, status, cwd, \
     worktree, branch, marker, session_id, agent_session_id, pid, process_group, \
     process_start_ticks, exit_code, signal, started_at, ended_at, verdict, log_path, \
     input_tokens, output_tokens, cost_usd, denials, final_text, cut_from, landing";

fn attempt_from_row(row: &Row<'_>) -> rusqlite::Result<Checked<Attempt>> {
    let status: String = row.get(6)?;
    let Some(status) = AttemptStatus::parse(&status) else {
        return Ok(Err(format!("unknown attempt status {status:?}")));
    };
    let verdict: Option<String> = row.get(20)?;
    let verdict = match verdict
        .map(|v| serde_json::from_str::<Verdict>(&v))
        .transpose()
    {
        Ok(v) => v,
        Err(e) => return Ok(Err(format!("unreadable attempt verdict: {e}"))),
    };
    let landing: Option<String> = row.get(28)?;
    let landing = match landing.map(|l| serde_json::from_str(&l)).transpose() {
        Ok(l) => l,
        Err(e) => return Ok(Err(format!("unreadable attempt landing: {e}"))),
    };
    let denials: String = row.get(25)?;
    let denials: Vec<Denial> = match serde_json::from_str(&denials) {
        Ok(d) => d,
        Err(e) => return Ok(Err(format!("unreadable attempt denials: {e}"))),
    };
    Ok(Ok(Attempt {
        id: row.get(0)?,
        run_id: row.get(1)?,
        plan_id: row.get(2)?,
        task_id: row.get(3)?,
        number: row.get(4)?,
        runner: row.get(5)?,
        status,
        cwd: row.get(7)?,
        worktree: row.get(8)?,
        branch: row.get(9)?,
        marker: row.get(10)?,
        session_id: row.get(11)?,
        agent_session_id: row.get(12)?,
        pid: row.get(13)?,
        process_group: row.get(14)?,
        process_start_ticks: row.get::<_, Option<i64>>(15)?.map(|t| t as u64),
        exit_code: row.get(16)?,
        signal: row.get(17)?,
        started_at: row.get(18)?,
        ended_at: row.get(19)?,
        verdict,
        log_path: row.get(21)?,
        input_tokens: row.get::<_, Option<i64>>(22)?.map(|t| t as u64),
        output_tokens: row.get::<_, Option<i64>>(23)?.map(|t| t as u64),
        cost_usd: row.get(24)?,
        denials,
        final_text: row.get(26)?,
        cut_from: row.get(27)?,
        landing,
    }))
}

fn json_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("plain data always serializes")
}

/// [`Store::update_tasks`] inside the caller's transaction.
fn write_task_updates(
    tx: &Transaction<'_>,
    log: &crate::rows::EventLog,
    sql: &impl Fn(rusqlite::Error) -> StoreError,
    plan_id: &str,
    updates: &[(&str, &TaskUpdate)],
    event: Event,
    now: Timestamp,
) -> Result<(), StoreError> {
    for (task_id, update) in updates {
        let mut sets: Vec<&str> = Vec::new();
        let status = update.status.map(|s| s.as_str());
        let verdict = update.verdict.as_ref().map(|v| v.as_ref().map(json_text));
        let output = update.output.as_ref().map(|o| o.as_ref().map(json_text));
        if status.is_some() {
            sets.push("status = :status");
        }
        if verdict.is_some() {
            sets.push("verdict = :verdict");
        }
        if output.is_some() {
            sets.push("output = :output");
        }
        if update.hold.is_some() {
            sets.push("hold = :hold");
        }
        if sets.is_empty() {
            continue;
        }
        let statement = format!(
            "UPDATE tasks SET {} WHERE plan_key = {} AND id = :task",
            sets.join(", "),
            plan_key_of!(":plan")
        );
        let mut stmt = tx.prepare_cached(&statement).map_err(sql)?;
        let mut named: Vec<(&str, &dyn rusqlite::ToSql)> =
            vec![(":plan", &plan_id), (":task", task_id)];
        if let Some(status) = &status {
            named.push((":status", status));
        }
        if let Some(verdict) = &verdict {
            named.push((":verdict", verdict));
        }
        if let Some(output) = &output {
            named.push((":output", output));
        }
        if let Some(hold) = &update.hold {
            named.push((":hold", hold));
        }
        let changed = stmt.execute(named.as_slice()).map_err(sql)?;
        if changed == 0 {
            return Err(StoreError::UnknownTask {
                plan: plan_id.to_owned(),
                task: (*task_id).to_owned(),
            });
        }
    }
    bump_revision(tx, plan_id, now).map_err(sql)?;
    log.append(tx, Some(plan_id), event, now).map_err(sql)?;
    Ok(())
}

/// The plan's run-state rows changed: its revision moves by one (see
/// [`Store::plan_revision`]).
fn bump_revision(conn: &Connection, plan_id: &str, now: Timestamp) -> rusqlite::Result<()> {
    conn.prepare_cached(
        "UPDATE plans SET revision = revision + 1, updated_at = max(updated_at, ?2) WHERE id = ?1",
    )?
    .execute(params![plan_id, now])?;
    Ok(())
}

/// The attempt's row and an event about it (its run, task and id filled in where the
/// event names none).
fn write_attempt_with_event(
    conn: &Connection,
    log: &crate::rows::EventLog,
    attempt: &Attempt,
    event: EventKind,
    now: Timestamp,
) -> rusqlite::Result<()> {
    write_attempt(conn, attempt)?;
    let event = Event::new(event)
        .run(&attempt.run_id)
        .task(&attempt.task_id)
        .attempt(&attempt.id);
    log.append(conn, Some(&attempt.plan_id), event, now)?;
    Ok(())
}

fn write_attempt(conn: &Connection, attempt: &Attempt) -> rusqlite::Result<()> {
    conn.prepare_cached(&format!(
            "INSERT INTO attempts ({ATTEMPT_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9,
             ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27,
             ?28, ?29)
             ON CONFLICT(id) DO UPDATE SET status = excluded.status, worktree = excluded.worktree,
               branch = excluded.branch, agent_session_id = excluded.agent_session_id,
               pid = excluded.pid, process_group = excluded.process_group,
               process_start_ticks = excluded.process_start_ticks, exit_code = excluded.exit_code,
               signal = excluded.signal, ended_at = excluded.ended_at, verdict = excluded.verdict,
               log_path = excluded.log_path, input_tokens = excluded.input_tokens,
               output_tokens = excluded.output_tokens, cost_usd = excluded.cost_usd,
               denials = excluded.denials, final_text = excluded.final_text,
               cut_from = excluded.cut_from, landing = excluded.landing,
               idle_since = CASE WHEN excluded.ended_at IS NULL THEN idle_since END"
    ))?
    .execute(params![
            attempt.id,
            attempt.run_id,
            attempt.plan_id,
            attempt.task_id,
            attempt.number,
            attempt.runner,
            attempt.status.as_str(),
            attempt.cwd,
            attempt.worktree,
            attempt.branch,
            attempt.marker,
            attempt.session_id,
            attempt.agent_session_id,
            attempt.pid,
            attempt.process_group,
            attempt.process_start_ticks.map(|t| t as i64),
            attempt.exit_code,
            attempt.signal,
            attempt.started_at,
            attempt.ended_at,
            attempt.verdict.as_ref().map(json_text),
            attempt.log_path,
            attempt.input_tokens.map(|t| t as i64),
            attempt.output_tokens.map(|t| t as i64),
            attempt.cost_usd,
            json_text(&attempt.denials),
            attempt.final_text,
            attempt.cut_from,
            attempt.landing.as_ref().map(json_text),
    ])?;
    Ok(())
}

impl Store {
    fn damaged(&self, plan: &str, detail: String) -> StoreError {
        StoreError::Damaged {
            path: self.path().to_owned(),
            plan: plan.to_owned(),
            detail,
        }
    }

    /// The plan's open run (not handed off), if any.
    pub fn open_run(&self, plan_id: &str) -> Result<Option<Run>, StoreError> {
        self.latest_run_where(plan_id, "AND status != 'handed_off'")
    }

    /// The plan's latest run, open or handed off, if it ever ran.
    pub fn latest_run(&self, plan_id: &str) -> Result<Option<Run>, StoreError> {
        self.latest_run_where(plan_id, "")
    }

    fn latest_run_where(&self, plan_id: &str, condition: &str) -> Result<Option<Run>, StoreError> {
        let sql = self.mapper();
        let row = self
            .conn
            .query_row(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM runs WHERE plan_id = ?1 {condition}
                     ORDER BY started_at DESC LIMIT 1"
                ),
                [plan_id],
                run_from_row,
            )
            .optional()
            .map_err(&sql)?;
        row.map(|r| r.map_err(|d| self.damaged(plan_id, d)))
            .transpose()
    }

    pub fn run(&self, run_id: &str) -> Result<Option<Run>, StoreError> {
        let sql = self.mapper();
        let row = self
            .conn
            .query_row(
                &format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1"),
                [run_id],
                run_from_row,
            )
            .optional()
            .map_err(&sql)?;
        row.map(|r| r.map_err(|d| self.damaged(run_id, d)))
            .transpose()
    }

    /// Take the plan's open run for this engine process, or create one.
    ///
    /// `engine_alive` says whether a recorded engine (pid, start ticks) still runs; when it
    /// does, the claim is refused with [`StoreError::RunHeld`].
    pub fn claim_run(
        &mut self,
        plan_id: &str,
        new_run_id: &str,
        engine: (u32, u64),
        engine_alive: &dyn Fn(u32, Option<u64>) -> bool,
        now: Timestamp,
    ) -> Result<ClaimedRun, StoreError> {
        let sql = self.mapper();
        let log = self.event_log();
        let path = self.path().to_owned();
        self.write(|tx| {
            let existing = tx
                .query_row(
                    &format!(
                        "SELECT {RUN_COLUMNS} FROM runs WHERE plan_id = ?1 AND status != 'handed_off'
                         ORDER BY started_at DESC LIMIT 1"
                    ),
                    [plan_id],
                    run_from_row,
                )
                .optional()
                .map_err(&sql)?
                .transpose()
                .map_err(|detail| StoreError::Damaged {
                    path: path.clone(),
                    plan: plan_id.to_owned(),
                    detail,
                })?;
            let (pid, ticks) = engine;
            match existing {
                Some(run) => {
                    if let Some(holder) = run.engine_pid
                        && run.status == RunStatus::Running
                        && holder != pid
                        && engine_alive(holder, run.engine_start_ticks)
                    {
                        return Err(StoreError::RunHeld {
                            run: run.id,
                            pid: holder,
                        });
                    }
                    tx.execute(
                        "UPDATE runs SET status = 'running', engine_pid = ?2,
                         engine_start_ticks = ?3, ended_at = NULL WHERE id = ?1",
                        params![run.id, pid, ticks as i64],
                    )
                    .map_err(&sql)?;
                    let continued = EventKind::RunContinued {
                        pid,
                        previous_pid: run.engine_pid,
                    };
                    log.append(tx, Some(plan_id), Event::new(continued).run(&run.id), now)
                        .map_err(&sql)?;
                    Ok(ClaimedRun {
                        run: Run {
                            status: RunStatus::Running,
                            engine_pid: Some(pid),
                            engine_start_ticks: Some(ticks),
                            ended_at: None,
                            ..run
                        },
                        continued: true,
                    })
                }
                None => {
                    let run = Run {
                        id: new_run_id.to_owned(),
                        plan_id: plan_id.to_owned(),
                        base_ref: None,
                        integration_branch: None,
                        status: RunStatus::Running,
                        engine_pid: Some(pid),
                        engine_start_ticks: Some(ticks),
                        started_at: now,
                        ended_at: None,
                    };
                    tx.execute(
                        &format!("INSERT INTO runs ({RUN_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"),
                        params![
                            run.id,
                            run.plan_id,
                            run.status.as_str(),
                            run.base_ref,
                            run.integration_branch,
                            pid,
                            ticks as i64,
                            run.started_at,
                            run.ended_at
                        ],
                    )
                    .map_err(&sql)?;
                    let started = Event::new(EventKind::RunStarted { pid }).run(&run.id);
                    log.append(tx, Some(plan_id), started, now).map_err(&sql)?;
                    Ok(ClaimedRun {
                        run,
                        continued: false,
                    })
                }
            }
        })
    }

    /// Record where an isolated run started and its integration branch.
    pub fn set_run_refs(
        &mut self,
        run_id: &str,
        plan_id: &str,
        base_ref: &str,
        integration_branch: &str,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let sql = self.mapper();
        let log = self.event_log();
        self.write(|tx| {
            tx.execute(
                "UPDATE runs SET base_ref = ?2, integration_branch = ?3 WHERE id = ?1",
                params![run_id, base_ref, integration_branch],
            )
            .map_err(&sql)?;
            let isolated = EventKind::RunIsolated {
                base: base_ref.to_owned(),
                integration_branch: integration_branch.to_owned(),
            };
            log.append(tx, Some(plan_id), Event::new(isolated).run(run_id), now)
                .map_err(&sql)?;
            Ok(())
        })
    }

    /// The engine lets go of its run (`totals`: how its tasks stood, when an engine ended
    /// it rather than a handoff).
    pub fn release_run(
        &mut self,
        run_id: &str,
        plan_id: &str,
        status: RunStatus,
        totals: Option<RunTotals>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let sql = self.mapper();
        let log = self.event_log();
        self.write(|tx| end_run(tx, &log, run_id, plan_id, status, totals, now).map_err(&sql))
    }

    /// [`Store::release_run`] and, in the same transaction, put `tasks` (id, status it
    /// had) back to pending with their verdict and output cleared, one
    /// `task_marked_not_done` event each: a discarded run's work is gone, so the state
    /// says so, and a crash never leaves one without the other.
    pub fn release_run_resetting(
        &mut self,
        run_id: &str,
        plan_id: &str,
        status: RunStatus,
        tasks: &[(&str, TaskStatus)],
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let sql = self.mapper();
        let log = self.event_log();
        self.write(|tx| {
            end_run(tx, &log, run_id, plan_id, status, None, now).map_err(&sql)?;
            for (task_id, was) in tasks {
                tx.execute(
                    concat!(
                        "UPDATE tasks SET status = ?3, verdict = NULL, output = NULL WHERE plan_key = ",
                        plan_key_of!("?1"),
                        " AND id = ?2"
                    ),
                    params![plan_id, task_id, TaskStatus::Pending.as_str()],
                )
                .map_err(&sql)?;
                let event = Event::new(EventKind::TaskMarkedNotDone { was: *was })
                    .run(run_id)
                    .task(*task_id);
                log.append(tx, Some(plan_id), event, now).map_err(&sql)?;
            }
            bump_revision(tx, plan_id, now).map_err(&sql)?;
            Ok(())
        })
    }

    /// Change a task's run-state fields, with one event (about that task unless the event
    /// names one).
    pub fn update_task(
        &mut self,
        plan_id: &str,
        task_id: &str,
        update: &TaskUpdate,
        event: Event,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let event = match event.task {
            Some(_) => event,
            None => event.task(task_id),
        };
        self.update_tasks(plan_id, &[(task_id, update)], event, now)
    }

    /// Give every task in `ids` the status `status`, with one event (blocking a failed
    /// task's dependents, releasing them, requeueing after a crash). Nothing is stored
    /// when `ids` is empty.
    pub fn set_statuses(
        &mut self,
        plan_id: &str,
        ids: &[String],
        status: TaskStatus,
        event: Event,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let update = TaskUpdate::status(status);
        let updates: Vec<(&str, &TaskUpdate)> =
            ids.iter().map(|id| (id.as_str(), &update)).collect();
        self.update_tasks(plan_id, &updates, event, now)
    }

    /// Change several tasks at once (a failure blocking its descendants), with one event.
    pub fn update_tasks(
        &mut self,
        plan_id: &str,
        updates: &[(&str, &TaskUpdate)],
        event: Event,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let sql = self.mapper();
        let log = self.event_log();
        self.write(|tx| write_task_updates(tx, &log, &sql, plan_id, updates, event, now))
    }

    /// Insert or update an attempt row, with an event about the attempt (its run, task
    /// and id are filled in where the event names none).
    pub fn save_attempt(
        &mut self,
        attempt: &Attempt,
        event: EventKind,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let sql = self.mapper();
        let log = self.event_log();
        self.write(|tx| write_attempt_with_event(tx, &log, attempt, event, now).map_err(&sql))
    }

    /// [`Store::save_attempt`] and [`Store::update_tasks`] of the attempt's own task, in
    /// one transaction: an attempt's start (its task in progress) or end (its task's new
    /// status) is stored whole or not at all, and costs one commit instead of two.
    pub fn save_attempt_and_task(
        &mut self,
        attempt: &Attempt,
        attempt_event: EventKind,
        update: &TaskUpdate,
        task_event: Event,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let sql = self.mapper();
        let log = self.event_log();
        self.write(|tx| {
            write_attempt_with_event(tx, &log, attempt, attempt_event, now).map_err(&sql)?;
            let task_event = match task_event.task {
                Some(_) => task_event,
                None => task_event.task(&attempt.task_id),
            };
            write_task_updates(
                tx,
                &log,
                &sql,
                &attempt.plan_id,
                &[(&attempt.task_id, update)],
                task_event,
                now,
            )
        })
    }

    fn attempts_where(
        &self,
        condition: &str,
        params: &[&dyn rusqlite::ToSql],
    ) -> Result<Vec<Attempt>, StoreError> {
        let sql = self.mapper();
        let mut stmt = self
            .conn
            .prepare_cached(&format!(
                "SELECT {ATTEMPT_COLUMNS} FROM attempts WHERE {condition} ORDER BY started_at, number"
            ))
            .map_err(&sql)?;
        let rows = stmt
            .query_map(params, attempt_from_row)
            .map_err(&sql)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(&sql)?;
        rows.into_iter()
            .map(|r| r.map_err(|d| self.damaged("(attempts)", d)))
            .collect()
    }

    /// Every attempt of a task in a plan, oldest first.
    pub fn attempts_of_task(
        &self,
        plan_id: &str,
        task_id: &str,
    ) -> Result<Vec<Attempt>, StoreError> {
        self.attempts_where("plan_id = ?1 AND task_id = ?2", &[&plan_id, &task_id])
    }

    /// Every attempt of a plan, oldest first.
    pub fn attempts_of_plan(&self, plan_id: &str) -> Result<Vec<Attempt>, StoreError> {
        self.attempts_where("plan_id = ?1", &[&plan_id])
    }

    /// Attempts recorded as running (in any plan of the workspace).
    pub fn running_attempts(&self) -> Result<Vec<Attempt>, StoreError> {
        self.attempts_where("status = 'running'", &[])
    }

    pub fn attempt(&self, attempt_id: &str) -> Result<Option<Attempt>, StoreError> {
        Ok(self
            .attempts_where("id = ?1", &[&attempt_id])?
            .into_iter()
            .next())
    }

    /// Queue a request for the engine running `plan_id`; returns its sequence number.
    pub fn push_control(
        &mut self,
        plan_id: &str,
        request: &ControlRequest,
        now: Timestamp,
    ) -> Result<i64, StoreError> {
        let sql = self.mapper();
        let log = self.event_log();
        self.write(|tx| {
            tx.execute(
                "INSERT INTO control_requests (plan_id, kind, task_id, created_at)
                 VALUES (?1, ?2, ?3, ?4)",
                params![plan_id, request.kind(), request.task(), now],
            )
            .map_err(&sql)?;
            let seq = tx.last_insert_rowid();
            let mut event = Event::new(EventKind::ControlRequested {
                request: request.clone(),
                request_seq: seq,
            });
            event.task = request.task().map(str::to_owned);
            log.append(tx, Some(plan_id), event, now).map_err(&sql)?;
            Ok(seq)
        })
    }

    /// Take every unhandled request for the plan, marking them handled (one
    /// [`EventKind::ControlHandled`] each). A kind this weft does not know comes back as
    /// [`ControlRequest::Unrecognized`].
    pub fn take_controls(
        &mut self,
        plan_id: &str,
        now: Timestamp,
    ) -> Result<Vec<QueuedControl>, StoreError> {
        let sql = self.mapper();
        let log = self.event_log();
        // Cheap check first: most ticks have nothing to take and need no write lock.
        let pending: i64 = self
            .conn
            .query_row(
                "SELECT COUNT(*) FROM control_requests WHERE plan_id = ?1 AND handled_at IS NULL",
                [plan_id],
                |r| r.get(0),
            )
            .map_err(&sql)?;
        if pending == 0 {
            return Ok(Vec::new());
        }
        self.write(|tx| {
            let mut stmt = tx
                .prepare_cached(
                    "SELECT seq, plan_id, kind, task_id, created_at FROM control_requests
                     WHERE plan_id = ?1 AND handled_at IS NULL ORDER BY seq",
                )
                .map_err(&sql)?;
            let requests = stmt
                .query_map([plan_id], |r| {
                    let kind: String = r.get(2)?;
                    Ok(QueuedControl {
                        seq: r.get(0)?,
                        plan_id: r.get(1)?,
                        request: ControlRequest::from_stored(&kind, r.get(3)?),
                        created_at: r.get(4)?,
                    })
                })
                .map_err(&sql)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(&sql)?;
            tx.execute(
                "UPDATE control_requests SET handled_at = ?2 WHERE plan_id = ?1 AND handled_at IS NULL",
                params![plan_id, now],
            )
            .map_err(&sql)?;
            for queued in &requests {
                let mut event = Event::new(EventKind::ControlHandled {
                    request: queued.request.clone(),
                    request_seq: queued.seq,
                });
                event.task = queued.request.task().map(str::to_owned);
                log.append(tx, Some(plan_id), event, now).map_err(&sql)?;
            }
            Ok(requests)
        })
    }

    /// Set a plan's overall status, with an event.
    pub fn set_plan_status(
        &mut self,
        plan_id: &str,
        status: weft_core::PlanStatus,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let sql = self.mapper();
        let log = self.event_log();
        self.write(|tx| {
            tx.execute(
                "UPDATE plans SET status = ?2, revision = revision + 1,
                 updated_at = max(updated_at, ?3) WHERE id = ?1",
                params![plan_id, status.as_str(), now],
            )
            .map_err(&sql)?;
            let changed = Event::new(EventKind::PlanStatusChanged { status });
            log.append(tx, Some(plan_id), changed, now).map_err(&sql)?;
            Ok(())
        })
    }

    /// Append an event that goes with no row change (engine progress, notices); returns
    /// its sequence number.
    pub fn record_event(
        &mut self,
        plan_id: Option<&str>,
        event: Event,
        now: Timestamp,
    ) -> Result<i64, StoreError> {
        let sql = self.mapper();
        let log = self.event_log();
        self.write(|tx| log.append(tx, plan_id, event, now).map_err(&sql))
    }

    /// The plan's revision. Every change to the plan or its tasks moves it by one, so a
    /// reader holding a copy of the plan knows from this one cheap read whether to read it
    /// again.
    pub fn plan_revision(&self, plan_id: &str) -> Result<u64, StoreError> {
        let sql = self.mapper();
        let revision: Option<i64> = self
            .conn
            .query_row("SELECT revision FROM plans WHERE id = ?1", [plan_id], |r| {
                r.get(0)
            })
            .optional()
            .map_err(&sql)?;
        match revision {
            Some(revision) => Ok(u64::try_from(revision).unwrap_or(0)),
            None => Err(StoreError::UnknownPlan {
                reference: plan_id.to_owned(),
                known: String::new(),
            }),
        }
    }

    /// The newest event sequence number (0 when there are none).
    pub fn last_event_seq(&self) -> Result<i64, StoreError> {
        let sql = self.mapper();
        self.conn
            .query_row("SELECT COALESCE(MAX(seq), 0) FROM events", [], |r| r.get(0))
            .map_err(&sql)
    }
}

/// The run ended (`status`): its engine released, `ended_at` set, `run_ended` stored; the
/// one way [`Store::release_run`] and [`Store::release_run_resetting`] end a run.
fn end_run(
    tx: &Transaction<'_>,
    log: &crate::rows::EventLog,
    run_id: &str,
    plan_id: &str,
    status: RunStatus,
    totals: Option<RunTotals>,
    now: Timestamp,
) -> rusqlite::Result<()> {
    tx.execute(
        "UPDATE runs SET status = ?2, engine_pid = NULL, engine_start_ticks = NULL,
         ended_at = ?3 WHERE id = ?1",
        params![run_id, status.as_str(), now],
    )?;
    let ended = Event::new(EventKind::RunEnded { status, totals }).run(run_id);
    log.append(tx, Some(plan_id), ended, now)?;
    Ok(())
}
