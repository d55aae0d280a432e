//! What the planner leaves behind: which planner wrote a plan and where its PRD went, the
//! research log, and approval asks that another terminal can answer.

use rusqlite::{OptionalExtension, Row, params};
use weft_core::Timestamp;
use weft_core::event::{Event, EventKind};

use crate::{Store, StoreError};

/// How a plan came from the planner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlanningInfo {
    /// `openai:<model>`, `claude-code`, …
    pub planner: String,
    pub one_shot: bool,
    /// The PRD the planner wrote, relative to the workspace (`.scratch/<slug>/PRD.md`).
    pub prd_path: Option<String>,
    pub updated_at: Timestamp,
}

/// One research-log entry to append.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NewLogEntry {
    /// The user turn it belongs to (1 is the goal).
    pub turn: u32,
    /// `tool` (a research step), `user`, `assistant` or `note`.
    pub kind: String,
    pub tool: Option<String>,
    pub input: String,
    /// For tools: success, failure, refused, denied, not_executed.
    pub outcome: Option<String>,
    pub detail: String,
    /// When the approval policy decided: `allowed (asked)`, `denied (no-channel)`, …
    pub approval: Option<String>,
}

/// A stored research-log entry.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LogEntry {
    pub seq: i64,
    pub at: Timestamp,
    pub turn: u32,
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    pub input: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    pub detail: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval: Option<String>,
}

/// An approval ask to publish, so any terminal can answer it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAsk {
    pub plan_id: Option<String>,
    /// The process that waits on the answer; asks of a dead owner are withdrawn.
    pub owner_pid: u32,
    pub scope: String,
    /// What was asked for, as shown (`read /etc/hosts`).
    pub subject: String,
    /// `planner` or `runner:<attempt>`.
    pub asker: String,
    pub created_at: Timestamp,
    pub expires_at: Option<Timestamp>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AskState {
    /// Waiting for a person.
    Open,
    /// A person answered; the waiting process has not applied it yet.
    Answered,
    /// Decided; `decision` says how.
    Settled,
}

impl AskState {
    fn as_str(self) -> &'static str {
        match self {
            AskState::Open => "open",
            AskState::Answered => "answered",
            AskState::Settled => "settled",
        }
    }

    fn parse(text: &str) -> AskState {
        match text {
            "open" => AskState::Open,
            "answered" => AskState::Answered,
            _ => AskState::Settled,
        }
    }
}

/// A stored approval ask.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AskRecord {
    pub id: i64,
    pub plan_id: Option<String>,
    pub owner_pid: u32,
    pub scope: String,
    pub subject: String,
    pub asker: String,
    pub created_at: Timestamp,
    pub expires_at: Option<Timestamp>,
    pub state: AskState,
    /// The answer a person gave (before or after it was applied).
    pub answer_allowed: Option<bool>,
    /// A wider scope the person granted with the answer.
    pub answer_scope: Option<String>,
    pub answered_at: Option<Timestamp>,
    /// How it was settled: `allowed (asked)`, `denied (expired)`, …
    pub decision: Option<String>,
    pub settled_at: Option<Timestamp>,
}

const ASK_COLUMNS: &str = "id, plan_id, owner_pid, scope, subject, asker, created_at, expires_at, \
     state, answer_allowed, answer_scope, answered_at, decision, settled_at";

fn ask_from_row(row: &Row<'_>) -> rusqlite::Result<AskRecord> {
    let state: String = row.get(8)?;
    Ok(AskRecord {
        id: row.get(0)?,
        plan_id: row.get(1)?,
        owner_pid: row.get(2)?,
        scope: row.get(3)?,
        subject: row.get(4)?,
        asker: row.get(5)?,
        created_at: row.get(6)?,
        expires_at: row.get(7)?,
        state: AskState::parse(&state),
        answer_allowed: row.get(9)?,
        answer_scope: row.get(10)?,
        answered_at: row.get(11)?,
        decision: row.get(12)?,
        settled_at: row.get(13)?,
    })
}

/// Why an answer was not recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerRefused {
    #[error("there is no approval question {id}")]
    Unknown { id: i64 },
    #[error("approval question {id} is already {how}")]
    Closed { id: i64, how: String },
}

impl Store {
    /// Record (or replace) how a plan came from the planner.
    pub fn set_planning(&mut self, plan_id: &str, info: &PlanningInfo) -> Result<(), StoreError> {
        let sql = self.mapper();
        self.write(|tx| {
            tx.execute(
                "INSERT INTO planning (plan_id, planner, one_shot, prd_path, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (plan_id) DO UPDATE SET planner = ?2, one_shot = ?3,
                     prd_path = ?4, updated_at = ?5",
                params![
                    plan_id,
                    info.planner,
                    info.one_shot,
                    info.prd_path,
                    info.updated_at
                ],
            )
            .map_err(&sql)?;
            Ok(())
        })
    }

    pub fn planning(&self, plan_id: &str) -> Result<Option<PlanningInfo>, StoreError> {
        self.conn
            .query_row(
                "SELECT planner, one_shot, prd_path, updated_at FROM planning WHERE plan_id = ?1",
                [plan_id],
                |r| {
                    Ok(PlanningInfo {
                        planner: r.get(0)?,
                        one_shot: r.get(1)?,
                        prd_path: r.get(2)?,
                        updated_at: r.get(3)?,
                    })
                },
            )
            .optional()
            .map_err(|e| self.sqlite(e))
    }

    /// Append research-log entries in one transaction; returns their sequence numbers.
    pub fn append_planner_log(
        &mut self,
        plan_id: &str,
        entries: &[NewLogEntry],
        now: Timestamp,
    ) -> Result<Vec<i64>, StoreError> {
        if entries.is_empty() {
            return Ok(Vec::new());
        }
        let sql = self.mapper();
        let log = self.event_log();
        self.write(|tx| {
            let last: i64 = tx
                .query_row(
                    "SELECT COALESCE(MAX(seq), 0) FROM planner_log WHERE plan_id = ?1",
                    [plan_id],
                    |r| r.get(0),
                )
                .map_err(&sql)?;
            let mut stmt = tx
                .prepare_cached(
                    "INSERT INTO planner_log
                       (plan_id, seq, at, turn, kind, tool, input, outcome, detail, approval)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )
                .map_err(&sql)?;
            let mut seqs = Vec::with_capacity(entries.len());
            for (offset, entry) in entries.iter().enumerate() {
                let seq = last + 1 + offset as i64;
                stmt.execute(params![
                    plan_id,
                    seq,
                    now,
                    entry.turn,
                    entry.kind,
                    entry.tool,
                    entry.input,
                    entry.outcome,
                    entry.detail,
                    entry.approval,
                ])
                .map_err(&sql)?;
                seqs.push(seq);
            }
            let logged = EventKind::PlannerLogged {
                entries: entries.len(),
                last_seq: seqs.last().copied(),
            };
            log.append(tx, Some(plan_id), Event::new(logged), now)
                .map_err(&sql)?;
            Ok(seqs)
        })
    }

    /// The research log of a plan, oldest first, after `after_seq`.
    pub fn planner_log(&self, plan_id: &str, after_seq: i64) -> Result<Vec<LogEntry>, StoreError> {
        let sql = self.mapper();
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq, at, turn, kind, tool, input, outcome, detail, approval
                 FROM planner_log WHERE plan_id = ?1 AND seq > ?2 ORDER BY seq",
            )
            .map_err(&sql)?;
        stmt.query_map(params![plan_id, after_seq], |r| {
            Ok(LogEntry {
                seq: r.get(0)?,
                at: r.get(1)?,
                turn: r.get(2)?,
                kind: r.get(3)?,
                tool: r.get(4)?,
                input: r.get(5)?,
                outcome: r.get(6)?,
                detail: r.get(7)?,
                approval: r.get(8)?,
            })
        })
        .map_err(&sql)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(&sql)
    }

    /// Publish an ask; returns its id (what `weft approvals allow ID` takes).
    pub fn open_ask(&mut self, ask: &NewAsk) -> Result<i64, StoreError> {
        let sql = self.mapper();
        let log = self.event_log();
        self.write(|tx| {
            tx.execute(
                "INSERT INTO approval_asks
                   (plan_id, owner_pid, scope, subject, asker, created_at, expires_at, state)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'open')",
                params![
                    ask.plan_id,
                    ask.owner_pid,
                    ask.scope,
                    ask.subject,
                    ask.asker,
                    ask.created_at,
                    ask.expires_at
                ],
            )
            .map_err(&sql)?;
            let id = tx.last_insert_rowid();
            let asked = EventKind::ApprovalAsked {
                ask: id,
                scope: ask.scope.clone(),
                subject: ask.subject.clone(),
            };
            log.append(
                tx,
                ask.plan_id.as_deref(),
                Event::new(asked),
                ask.created_at,
            )
            .map_err(&sql)?;
            Ok(id)
        })
    }

    /// Record a person's answer to an open ask. The waiting process applies it.
    pub fn answer_ask(
        &mut self,
        id: i64,
        allowed: bool,
        scope: Option<&str>,
        now: Timestamp,
    ) -> Result<Result<AskRecord, AnswerRefused>, StoreError> {
        let sql = self.mapper();
        let log = self.event_log();
        self.write(|tx| {
            let found = tx
                .query_row(
                    &format!("SELECT {ASK_COLUMNS} FROM approval_asks WHERE id = ?1"),
                    [id],
                    ask_from_row,
                )
                .optional()
                .map_err(&sql)?;
            let Some(mut ask) = found else {
                return Ok(Err(AnswerRefused::Unknown { id }));
            };
            if ask.state != AskState::Open {
                let how = match (&ask.state, &ask.decision) {
                    (AskState::Settled, Some(decision)) => format!("settled: {decision}"),
                    _ => "answered".to_owned(),
                };
                return Ok(Err(AnswerRefused::Closed { id, how }));
            }
            tx.execute(
                "UPDATE approval_asks SET state = 'answered', answer_allowed = ?2,
                     answer_scope = ?3, answered_at = ?4 WHERE id = ?1",
                params![id, allowed, scope, now],
            )
            .map_err(&sql)?;
            let answered = EventKind::ApprovalAnswered {
                ask: id,
                allowed,
                scope: scope.map(str::to_owned),
            };
            log.append(tx, ask.plan_id.as_deref(), Event::new(answered), now)
                .map_err(&sql)?;
            ask.state = AskState::Answered;
            ask.answer_allowed = Some(allowed);
            ask.answer_scope = scope.map(str::to_owned);
            ask.answered_at = Some(now);
            Ok(Ok(ask))
        })
    }

    /// Asks that are not settled yet (open or answered), oldest first.
    pub fn pending_asks(&self) -> Result<Vec<AskRecord>, StoreError> {
        self.asks_where("state != 'settled' ORDER BY id")
    }

    /// Every ask, newest last (bounded to the last `limit`).
    pub fn recent_asks(&self, limit: u32) -> Result<Vec<AskRecord>, StoreError> {
        let mut asks = self.asks_where(&format!("1 ORDER BY id DESC LIMIT {limit}"))?;
        asks.sort_by_key(|a| a.id);
        Ok(asks)
    }

    pub fn ask(&self, id: i64) -> Result<Option<AskRecord>, StoreError> {
        Ok(self.asks_where(&format!("id = {id}"))?.pop())
    }

    /// `clause` is fixed SQL from this module (never user text).
    fn asks_where(&self, clause: &str) -> Result<Vec<AskRecord>, StoreError> {
        let sql = self.mapper();
        let query = format!("SELECT {ASK_COLUMNS} FROM approval_asks WHERE {clause}");
        let mut stmt = self.conn.prepare(&query).map_err(&sql)?;
        stmt.query_map([], ask_from_row)
            .map_err(&sql)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(&sql)
    }

    /// Close an ask with the decision that settled it (`allowed (asked)`, `denied (expired)`).
    pub fn settle_ask(
        &mut self,
        id: i64,
        decision: &str,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let sql = self.mapper();
        let log = self.event_log();
        self.write(|tx| {
            let plan: Option<Option<String>> = tx
                .query_row(
                    "SELECT plan_id FROM approval_asks WHERE id = ?1 AND state != 'settled'",
                    [id],
                    |r| r.get(0),
                )
                .optional()
                .map_err(&sql)?;
            let Some(plan) = plan else { return Ok(()) };
            tx.execute(
                &format!(
                    "UPDATE approval_asks SET state = '{}', decision = ?2, settled_at = ?3
                     WHERE id = ?1",
                    AskState::Settled.as_str()
                ),
                params![id, decision, now],
            )
            .map_err(&sql)?;
            let settled = EventKind::ApprovalSettled {
                ask: id,
                decision: decision.to_owned(),
            };
            log.append(tx, plan.as_deref(), Event::new(settled), now)
                .map_err(&sql)?;
            Ok(())
        })
    }
}
