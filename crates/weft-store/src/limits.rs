//! Limits beyond the task row: a plan's own budget, and which running attempts are idle.
//!
//! A plan's budget (`plan_budget`, one row per plan, none when unset) is written when a
//! workflow file is imported and read by the engine and `weft status`. An attempt's
//! `idle_since` is written by its engine once per transition (silent past `idle_after`,
//! then talking again or ended), each time in one transaction with its event when it has
//! one, so `weft status` in another process can say `idle for 12m`.

use rusqlite::{OptionalExtension, params};
use weft_core::spend::Budget;
use weft_core::{Event, EventKind, Timestamp};

use crate::{Store, StoreError};

/// A running attempt that has been silent past `idle_after`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdleAttempt {
    pub attempt: String,
    pub task: String,
    /// When its silence began (its last output).
    pub since: Timestamp,
}

impl Store {
    /// A plan's own budget (unset: the settings' applies).
    pub fn plan_budget(&self, plan_id: &str) -> Result<Budget, StoreError> {
        let sql = self.mapper();
        let row: Option<(Option<f64>, Option<i64>)> = self
            .conn
            .query_row(
                "SELECT budget_usd, budget_tokens FROM plan_budget WHERE plan_id = ?1",
                [plan_id],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()
            .map_err(&sql)?;
        let (usd, tokens) = row.unwrap_or_default();
        Ok(Budget {
            usd: usd.filter(|u| u.is_finite() && *u > 0.0),
            tokens: tokens
                .and_then(|t| u64::try_from(t).ok())
                .filter(|t| *t > 0),
        })
    }

    /// Mark an attempt idle since `since` (`None`: no longer idle), with its event if
    /// there is one (the store fills in its run, task and attempt).
    pub fn set_attempt_idle(
        &mut self,
        attempt: &weft_core::Attempt,
        since: Option<Timestamp>,
        event: Option<EventKind>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let sql = self.mapper();
        let log = self.event_log();
        self.write(|tx| {
            tx.execute(
                "UPDATE attempts SET idle_since = ?2 WHERE id = ?1",
                params![attempt.id, since],
            )
            .map_err(&sql)?;
            if let Some(event) = event {
                let event = Event::new(event)
                    .run(&attempt.run_id)
                    .task(&attempt.task_id)
                    .attempt(&attempt.id);
                log.append(tx, Some(&attempt.plan_id), event, now)
                    .map_err(&sql)?;
            }
            Ok(())
        })
    }

    /// The plan's attempts still running that are idle, oldest silence first.
    pub fn idle_attempts(&self, plan_id: &str) -> Result<Vec<IdleAttempt>, StoreError> {
        let sql = self.mapper();
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT id, task_id, idle_since FROM attempts
                 WHERE plan_id = ?1 AND idle_since IS NOT NULL AND ended_at IS NULL
                 ORDER BY idle_since",
            )
            .map_err(&sql)?;
        let rows = stmt
            .query_map([plan_id], |r| {
                Ok(IdleAttempt {
                    attempt: r.get(0)?,
                    task: r.get(1)?,
                    since: r.get(2)?,
                })
            })
            .map_err(&sql)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(&sql)?;
        Ok(rows)
    }
}

/// Write a plan's own budget inside `tx` (an unset one removes it).
pub(crate) fn write_plan_budget(
    tx: &rusqlite::Transaction<'_>,
    plan_id: &str,
    budget: &Budget,
) -> rusqlite::Result<()> {
    if budget.is_set() {
        let tokens = budget.tokens.map(|t| i64::try_from(t).unwrap_or(i64::MAX));
        tx.execute(
            "INSERT INTO plan_budget (plan_id, budget_usd, budget_tokens) VALUES (?1, ?2, ?3)
             ON CONFLICT (plan_id) DO UPDATE SET budget_usd = excluded.budget_usd,
                                                 budget_tokens = excluded.budget_tokens",
            params![plan_id, budget.usd, tokens],
        )?;
    } else {
        tx.execute("DELETE FROM plan_budget WHERE plan_id = ?1", [plan_id])?;
    }
    Ok(())
}
