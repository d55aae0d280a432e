//! A run's verification state (issue 15): the last integration tip whose verification
//! passed, the tip being verified now, and the journal of a quarantine in progress.
//!
//! One row per run (`run_verify`), written by the run's engine (and `weft verify`), read
//! by `weft status`. Each write is one transaction with its event, if it has one.
//! Crash safety: the quarantine journal is stored before the integration ref moves and
//! cleared only after the tasks' new statuses are stored, so a later engine finishes a
//! quarantine a dead one started (see weft-engine's `engine::verify`).

use rusqlite::{OptionalExtension, params};
use weft_core::{Event, Timestamp};

use crate::{Store, StoreError};

/// What the store knows of a run's verification.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VerifyState {
    /// The last tip a verification passed on (encoded like a landing's merge).
    pub green: Option<String>,
    /// The tip being verified now (by an engine that may have died since).
    pub verifying: Option<String>,
    /// A quarantine's journal (the engine's JSON), while it is in progress.
    pub quarantine: Option<String>,
    pub updated_at: Timestamp,
}

/// Fields to change; `None` leaves one as it is, `Some(None)` clears it.
#[derive(Debug, Clone, Default)]
pub struct VerifyUpdate {
    pub green: Option<Option<String>>,
    pub verifying: Option<Option<String>>,
    pub quarantine: Option<Option<String>>,
}

impl Store {
    /// A plan's own `verify` commands (empty: none; the setting applies).
    pub fn plan_verify(&self, plan_id: &str) -> Result<Vec<String>, StoreError> {
        let sql = self.mapper();
        let text: Option<String> = self
            .conn
            .query_row(
                "SELECT commands FROM plan_verify WHERE plan_id = ?1",
                [plan_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(&sql)?;
        Ok(text
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default())
    }

    /// The run's verification state (all empty when nothing was verified yet).
    pub fn verify_state(&self, run_id: &str) -> Result<VerifyState, StoreError> {
        let sql = self.mapper();
        let row = self
            .conn
            .query_row(
                "SELECT green, verifying, quarantine, updated_at FROM run_verify WHERE run_id = ?1",
                [run_id],
                |r| {
                    Ok(VerifyState {
                        green: r.get(0)?,
                        verifying: r.get(1)?,
                        quarantine: r.get(2)?,
                        updated_at: r.get(3)?,
                    })
                },
            )
            .optional()
            .map_err(&sql)?;
        Ok(row.unwrap_or_default())
    }

    /// Change the run's verification state, with `event` (if any) in the same
    /// transaction.
    pub fn update_verify(
        &mut self,
        run_id: &str,
        plan_id: &str,
        update: &VerifyUpdate,
        event: Option<Event>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let sql = self.mapper();
        let log = self.event_log();
        self.write(|tx| {
            tx.execute(
                "INSERT INTO run_verify (run_id, updated_at) VALUES (?1, ?2)
                 ON CONFLICT (run_id) DO NOTHING",
                params![run_id, now],
            )
            .map_err(&sql)?;
            let columns = [
                ("green", &update.green),
                ("verifying", &update.verifying),
                ("quarantine", &update.quarantine),
            ];
            for (column, value) in columns {
                if let Some(value) = value {
                    tx.execute(
                        &format!(
                            "UPDATE run_verify SET {column} = ?2, updated_at = ?3 WHERE run_id = ?1"
                        ),
                        params![run_id, value, now],
                    )
                    .map_err(&sql)?;
                }
            }
            if let Some(event) = event {
                log.append(tx, Some(plan_id), event, now).map_err(&sql)?;
            }
            Ok(())
        })
    }
}

/// Write a plan's own `verify` commands inside `tx` (an empty list removes them).
pub(crate) fn write_plan_verify(
    tx: &rusqlite::Transaction<'_>,
    plan_id: &str,
    commands: &[String],
) -> rusqlite::Result<()> {
    if commands.is_empty() {
        tx.execute("DELETE FROM plan_verify WHERE plan_id = ?1", [plan_id])?;
    } else {
        let text = serde_json::to_string(commands).unwrap_or_else(|_| "[]".into());
        tx.execute(
            "INSERT INTO plan_verify (plan_id, commands) VALUES (?1, ?2)
             ON CONFLICT (plan_id) DO UPDATE SET commands = excluded.commands",
            params![plan_id, text],
        )?;
    }
    Ok(())
}
