//! weft's store: one SQLite database per workspace at `<workspace>/.weft/weft.db`.
//!
//! The database is the single source of truth shared by every weft process in a
//! workspace. Every change is one transaction that also appends an `events` row, and
//! every read-modify-write takes the write lock before it reads, so two processes editing
//! one plan never lose each other's edits.
//!
//! The event log holds typed [`weft_core::Event`]s: its API takes and returns them (the
//! `kind` column is the event's kind, `payload` the whole event as JSON); a row no typed
//! event can be read from (an earlier weft's) replays as
//! [`weft_core::EventKind::Unrecognized`]. Secrets handed to [`Store::set_secrets`] are
//! masked in every event before it is written. An attempt's live output is read by byte
//! offset through [`Store::read_output`] (see its module for the contract).

/// The key of the plan whose id is the SQL parameter `$param`, as an SQL expression:
/// `tasks` and `task_dependencies` name a plan by its key (schema 12, see `migrations`),
/// every other table by its id. One seek, evaluated once per statement.
macro_rules! plan_key_of {
    ($param:literal) => {
        concat!("(SELECT key FROM plan_keys WHERE plan_id = ", $param, ")")
    };
}

pub mod apart;
mod busy;
mod error;
mod limits;
mod lists;
mod migrations;
mod outline;
mod output;
mod packed;
mod planning;
mod rows;
mod runs;
mod verify;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fs_err::os::unix::fs::OpenOptionsExt;
use std::os::unix::fs::PermissionsExt;

use fs_err as fs;
use rusqlite::{Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior};
pub use weft_core::Event;
use weft_core::edit::{Edit, EditReport, apply};
use weft_core::{EventKind, Plan, PlanStatus, Task, Timestamp};

pub use busy::{BusyWait, LockHolder};
pub use error::StoreError;
pub use limits::IdleAttempt;
pub use migrations::{SCHEMA_VERSION, migration_sql};
pub use outline::{Outline, OutlineTasks};
pub use output::{OUTPUT_CHUNK_MAX, OutputChunk};
pub use planning::{
    AnswerRefused, AskRecord, AskState, LogEntry, NewAsk, NewLogEntry, PlanningInfo,
};
pub use runs::{ClaimedRun, QueuedControl, TaskUpdate};
pub use verify::{VerifyState, VerifyUpdate};

/// File name of the database inside the state folder.
pub const DATABASE_FILE: &str = "weft.db";
/// Default wait for another process's write lock.
pub const DEFAULT_BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// A write waiting for a busy store is first announced ([`Store::on_busy_wait`]) once it
/// has waited this long...
pub const BUSY_NOTICE_AFTER: Duration = Duration::from_secs(2);
/// ...then at most this often while it still waits.
pub const BUSY_NOTICE_EVERY: Duration = Duration::from_secs(10);
/// How many candidates an ambiguous or unknown plan reference lists.
const LISTED_PLANS: usize = 10;

#[derive(Debug, Clone, Copy)]
pub struct OpenOptions {
    /// How long a write waits for another process to release the database.
    pub busy_timeout: Duration,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            busy_timeout: DEFAULT_BUSY_TIMEOUT,
        }
    }
}

/// A plan as listed by `weft sessions list`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PlanSummary {
    pub id: String,
    pub short_id: String,
    pub goal: String,
    pub status: PlanStatus,
    pub task_count: u64,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub current: bool,
}

/// What a new plan is made of.
#[derive(Debug, Clone)]
pub struct PlanDraft {
    pub goal: String,
    pub runner: Option<String>,
    pub status: PlanStatus,
    /// Already validated and numbered.
    pub tasks: Vec<Task>,
    /// Where the plan came from (a file path, `demo`, ...), recorded in the event.
    pub source: String,
}

/// What a plan carries beyond its tasks (a workflow file's top-level keys): its own
/// `verify` commands and budget, each replacing the setting for this plan when set.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PlanOwn {
    pub verify: Vec<String>,
    pub budget: weft_core::spend::Budget,
}

/// How every connection to a store reads: pages through a memory map of the file (SQLite
/// still writes with `pwrite`, and the WAL is never mapped). Loading a 10,000-task plan
/// reads ~1,600 pages; one `pread` copy each was a tenth of `weft status`. 256 MiB is
/// address space, not memory: only the pages read are touched.
pub(crate) const READ_PRAGMAS: &str = "PRAGMA mmap_size = 268435456;";

#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
    busy_timeout: Duration,
    /// Masks the events this handle appends.
    log: rows::EventLog,
    /// How long a write that meets a busy store keeps retrying past `busy_timeout` (zero:
    /// it fails at once with [`StoreError::Busy`]); see [`Store::retry_busy_writes`].
    busy_retry: Duration,
    /// How long each write that had to retry waited, until taken.
    busy_waits: Vec<Duration>,
    /// Told while a write waits for a busy store; see [`Store::on_busy_wait`].
    busy_hook: BusyHook,
}

/// The hook [`Store::on_busy_wait`] sets.
#[derive(Default)]
struct BusyHook(Option<BusyCallback>);

/// What [`Store::on_busy_wait`] takes.
pub type BusyCallback = Box<dyn FnMut(&BusyWait) + Send>;

/// Call the busy hook if a write that has waited `wait.0` (of its patience `wait.1`) is
/// due a notice; `told` is when it was last told.
fn tell_busy(
    hook: &mut BusyHook,
    db: &Path,
    secrets: &[String],
    (waited, patience): (Duration, Duration),
    told: &mut Option<Instant>,
) {
    let Some(hook) = hook.0.as_mut() else {
        return;
    };
    let due = match told {
        None => waited >= BUSY_NOTICE_AFTER,
        Some(at) => at.elapsed() >= BUSY_NOTICE_EVERY,
    };
    if !due {
        return;
    }
    *told = Some(Instant::now());
    hook(&BusyWait {
        waited,
        patience,
        holder: busy::holder(db, secrets),
    });
}

impl std::fmt::Debug for BusyHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "BusyHook(set)"
        } else {
            "BusyHook(none)"
        })
    }
}

impl Store {
    /// Open the database in `state_dir` if it exists; `None` when weft has stored nothing
    /// in this workspace yet. Never creates anything.
    pub fn open_existing(
        state_dir: &Path,
        options: OpenOptions,
    ) -> Result<Option<Store>, StoreError> {
        if state_dir.exists() && !state_dir.is_dir() {
            return Err(StoreError::StateDirBlocked {
                path: state_dir.to_owned(),
            });
        }
        let path = state_dir.join(DATABASE_FILE);
        if !database_file_exists(&path)? {
            return Ok(None);
        }
        Store::open_path(path, OpenFlags::SQLITE_OPEN_READ_WRITE, options).map(Some)
    }

    /// Open the database in `state_dir`, creating the folder (with a `.gitignore` that
    /// ignores everything) and the database on first use.
    pub fn open_or_create(state_dir: &Path, options: OpenOptions) -> Result<Store, StoreError> {
        prepare_state_dir(state_dir)?;
        let path = state_dir.join(DATABASE_FILE);
        if !database_file_exists(&path)? {
            // Created here, 0600, rather than by SQLite (0644 less the umask): its `-wal`
            // and `-shm` files take the database file's mode.
            create_private_file(&path)?;
        }
        Store::open_path(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
            options,
        )
    }

    fn open_path(
        path: PathBuf,
        flags: OpenFlags,
        options: OpenOptions,
    ) -> Result<Store, StoreError> {
        let flags = flags | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(&path, flags)
            .map_err(|e| StoreError::from_sqlite(&path, options.busy_timeout, e))?;
        let mut store = Store {
            conn,
            path,
            busy_timeout: options.busy_timeout,
            log: rows::EventLog::default(),
            busy_retry: Duration::ZERO,
            busy_waits: Vec::new(),
            busy_hook: BusyHook::default(),
        };
        store.prepare()?;
        tighten_database_files(&store.path);
        Ok(store)
    }

    /// Settings, version check and migrations.
    fn prepare(&mut self) -> Result<(), StoreError> {
        self.conn
            .busy_timeout(self.busy_timeout)
            .map_err(|e| self.sqlite(e))?;
        // `READ_PRAGMAS`: pages read through a memory map.
        self.conn
            .execute_batch("PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL;")
            .and_then(|()| self.conn.execute_batch(READ_PRAGMAS))
            .map_err(|e| self.sqlite(e))?;
        let version = self.user_version()?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: self.path.clone(),
                found: version,
                known: SCHEMA_VERSION,
            });
        }
        self.use_wal()?;
        if version < SCHEMA_VERSION {
            let path = self.path.clone();
            let timeout = self.busy_timeout;
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(|e| StoreError::from_sqlite(&path, timeout, e))?;
            migrations::migrate(&tx).map_err(|e| StoreError::from_sqlite(&path, timeout, e))?;
            tx.commit()
                .map_err(|e| StoreError::from_sqlite(&path, timeout, e))?;
        }
        Ok(())
    }

    /// Switch the database to WAL. The switch needs an exclusive lock, and while another
    /// connection is writing (say, a second process migrating a new database) SQLite
    /// answers `SQLITE_BUSY` at once without calling the busy handler, so the switch is
    /// retried here until the busy timeout.
    fn use_wal(&self) -> Result<(), StoreError> {
        let deadline = Instant::now() + self.busy_timeout;
        loop {
            let mode: String = self
                .conn
                .query_row("PRAGMA journal_mode", [], |r| r.get(0))
                .map_err(|e| self.sqlite(e))?;
            if mode.eq_ignore_ascii_case("wal") {
                return Ok(());
            }
            match self
                .conn
                .query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
            {
                Ok(_) => return Ok(()),
                Err(rusqlite::Error::SqliteFailure(failure, _))
                    if failure.code == rusqlite::ErrorCode::DatabaseBusy
                        && Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(self.sqlite(e)),
            }
        }
    }

    fn user_version(&self) -> Result<u32, StoreError> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| self.sqlite(e))
    }

    fn sqlite(&self, error: rusqlite::Error) -> StoreError {
        StoreError::from_sqlite(&self.path, self.busy_timeout, error)
    }

    /// A converter from SQLite errors to ours that outlives a borrow of `self`.
    fn mapper(&self) -> impl Fn(rusqlite::Error) -> StoreError + use<> {
        let path = self.path.clone();
        let timeout = self.busy_timeout;
        move |error| StoreError::from_sqlite(&path, timeout, error)
    }

    /// Secret values this handle masks (`****`) in every event it appends, in every text
    /// field (a task prompt an edit set, a verdict's reason, a notice).
    pub fn set_secrets(&mut self, secrets: Vec<String>) {
        self.log.secrets = secrets;
    }

    /// The event log writer, detached from `self` for use inside [`Store::write`].
    pub(crate) fn event_log(&self) -> rows::EventLog {
        self.log.clone()
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        self.user_version()
    }

    /// Writes that meet a store held busy past `busy_timeout` by another process retry
    /// instead of failing, with backoff (doubling from 100 ms, at most 5 s between tries),
    /// for up to `budget` in all; then [`StoreError::Busy`]. For the engine: a run must
    /// not end, or lose a finished attempt's result, because another command held the
    /// lock. Writes stay in order: each one waits, nothing is queued behind it.
    pub fn retry_busy_writes(&mut self, budget: Duration) {
        self.busy_retry = budget;
    }

    /// `hook` is told while a write waits for a store another process holds (only with
    /// [`Store::retry_busy_writes`]): once it has waited [`BUSY_NOTICE_AFTER`], then at most
    /// every [`BUSY_NOTICE_EVERY`], with who holds the lock when `/proc/locks` says
    /// (see [`LockHolder`]). It runs on the waiting thread, between two tries; the write
    /// goes on waiting after it returns. For a live notice: library crates never print.
    pub fn on_busy_wait(&mut self, hook: BusyCallback) {
        self.busy_hook = BusyHook(Some(hook));
    }

    /// How long each write that had to wait for a busy store waited since the last call
    /// (for a notice), oldest first; bounded by the writes made in between.
    pub fn take_busy_waits(&mut self) -> Vec<Duration> {
        std::mem::take(&mut self.busy_waits)
    }

    /// Run `body` in a transaction that holds the write lock from its first statement.
    ///
    /// The lock is taken before `body` runs (`BEGIN IMMEDIATE`), so a busy store is met
    /// there, before anything was written, and retrying the begin is always safe.
    fn write<T>(
        &mut self,
        body: impl FnOnce(&Transaction<'_>) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let path = self.path.clone();
        let timeout = self.busy_timeout;
        let retry = self.busy_retry;
        let started = Instant::now();
        let mut backoff = Duration::from_millis(100);
        let mut waited = false;
        let mut told: Option<Instant> = None;
        let tx = loop {
            match self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
            {
                Ok(tx) => break tx,
                Err(rusqlite::Error::SqliteFailure(failure, _))
                    if matches!(
                        failure.code,
                        rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
                    ) && started.elapsed() + backoff < retry =>
                {
                    waited = true;
                    let wait = (started.elapsed(), retry);
                    tell_busy(
                        &mut self.busy_hook,
                        &self.path,
                        &self.log.secrets,
                        wait,
                        &mut told,
                    );
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                }
                Err(e) => return Err(StoreError::from_sqlite(&path, timeout, e)),
            }
        };
        let value = body(&tx)?;
        tx.commit()
            .map_err(|e| StoreError::from_sqlite(&path, timeout, e))?;
        if waited && self.busy_waits.len() < 1000 {
            self.busy_waits.push(started.elapsed());
        }
        Ok(value)
    }

    /// Store a new plan and make it the workspace's current plan.
    pub fn create_plan(&mut self, draft: PlanDraft, now: Timestamp) -> Result<Plan, StoreError> {
        self.create_plan_with(draft, &PlanOwn::default(), now)
    }

    /// [`Store::create_plan`] with the plan's own settings (a workflow file's top-level
    /// `verify` and budget), stored in the same transaction: an import is whole or absent.
    pub fn create_plan_with(
        &mut self,
        draft: PlanDraft,
        own: &PlanOwn,
        now: Timestamp,
    ) -> Result<Plan, StoreError> {
        let mut plan = Plan {
            id: uuid::Uuid::new_v4().simple().to_string(),
            goal: draft.goal,
            status: draft.status,
            created_at: now,
            updated_at: now,
            runner: draft.runner,
            revision: 1,
            tasks: draft.tasks,
        };
        plan.renumber();
        let sql = self.mapper();
        let log = self.event_log();
        // A new plan's rows refer only to the plan itself and to its own tasks, so once
        // the store has seen that every dependency names one of them, SQLite's foreign
        // key checks (two index lookups per dependency row) add nothing but time: about a
        // third of storing the dependencies of a 100,000-task plan. They are off for this
        // one transaction only (the pragma cannot change inside one), and on again before
        // anything else is written; every other write keeps them.
        let unchecked = rows::dependencies_resolve(&plan);
        if unchecked {
            self.conn
                .pragma_update(None, "foreign_keys", false)
                .map_err(&sql)?;
        }
        let written = self.write(|tx| {
            rows::insert_plan(tx, &plan).map_err(&sql)?;
            rows::write_tasks(tx, &plan).map_err(&sql)?;
            rows::set_meta(tx, rows::CURRENT_PLAN, &plan.id).map_err(&sql)?;
            verify::write_plan_verify(tx, &plan.id, &own.verify).map_err(&sql)?;
            limits::write_plan_budget(tx, &plan.id, &own.budget).map_err(&sql)?;
            let created = EventKind::PlanCreated {
                goal: plan.goal.clone(),
                tasks: plan.tasks.len(),
                source: draft.source,
            };
            log.append(tx, Some(&plan.id), Event::new(created), now)
                .map_err(&sql)?;
            Ok(())
        });
        if unchecked {
            self.conn
                .pragma_update(None, "foreign_keys", true)
                .map_err(&sql)?;
        }
        written?;
        Ok(plan)
    }

    /// `plan` as a workflow file: its tasks, and its own `verify` and budget (what
    /// `weft plan export` and the API's export write, and [`Store::create_plan_with`]
    /// reads back).
    pub fn plan_file(&self, plan: &Plan) -> Result<weft_core::WorkflowFile, StoreError> {
        let mut file =
            weft_core::WorkflowFile::from_plan(&plan.goal, plan.runner.as_deref(), &plan.tasks)
                .with_budget(self.plan_budget(&plan.id)?);
        file.verify = self.plan_verify(&plan.id)?;
        Ok(file)
    }

    /// The whole plan with its tasks, in order.
    pub fn plan(&self, id: &str) -> Result<Plan, StoreError> {
        self.load(id, rows::Detail::Full)
    }

    /// The plan as [`Store::plan`] gives it, but without what only running a task needs:
    /// every task's `prompt`, `description`, `command`, `steps`, `steps_done` and `output`
    /// are left empty. Its ids, order, titles, dependencies, settings, status, hold and
    /// verdict are all there: what a plan map or `weft status --json` shows, for a third
    /// less reading on a large plan (the prompts are most of a task's bytes). Never edit
    /// and store an outline; [`Store::update_plan`] reads the full plan itself.
    pub fn plan_outline(&self, id: &str) -> Result<Plan, StoreError> {
        self.load(id, rows::Detail::Outline)
    }

    /// Leaves the write-ahead log (the database's `-wal` and `-shm` files) in place when
    /// this handle closes. By default the last connection to close copies the log into
    /// the database file and deletes both files, and the next open creates them again.
    /// For a command that only reads, such as `weft status`.
    ///
    /// Why: creating a file takes an inode, and ext4 without a journal (a common VM and
    /// container setup) skips every inode deleted in the last few seconds when it picks
    /// one (`recently_deleted` in its allocator), so readers run back to back paid for
    /// each other's deletions: about 7% of a `weft status` on 10,000 tasks. Nothing is
    /// lost: what the log holds is committed, every connection reads it, and the next
    /// writer to close last copies it in and deletes the files as before.
    pub fn leave_log_on_close(&self) -> Result<(), StoreError> {
        self.conn
            .set_db_config(
                rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
                true,
            )
            .map(|_| ())
            .map_err(|e| self.sqlite(e))
    }

    /// What [`Store::plan_outline`] gives, without a `Task` per row (see [`Outline`]):
    /// what `weft status` reads. A damaged row is refused as `plan_outline` refuses it.
    ///
    /// A plan of 3,000 tasks or more is read by two readers at once, this handle's
    /// connection up from the first task and a second connection in another thread down
    /// from the last, and only kept when both read one state of the store (else it is
    /// read again whole); see [`Store::outline_split_from`].
    pub fn outline(&self, id: &str) -> Result<Outline, StoreError> {
        self.outline_split_from(id, rows::SPLIT_FROM)
    }

    /// [`Store::outline`], splitting the read from `split_from` tasks on (`i64::MAX`:
    /// never): what tests of the split read use.
    #[doc(hidden)]
    pub fn outline_split_from(&self, id: &str, split_from: i64) -> Result<Outline, StoreError> {
        let helper = rows::Helper {
            path: &self.path,
            busy_timeout: self.busy_timeout,
        };
        self.checked(
            id,
            rows::load_outline(&self.conn, id, Some(helper), split_from),
        )
    }

    fn load(&self, id: &str, detail: rows::Detail) -> Result<Plan, StoreError> {
        self.checked(id, rows::load_plan(&self.conn, id, detail))
    }

    /// A load's answer: the plan's, an unknown plan, damage or SQLite's error.
    fn checked<T>(
        &self,
        id: &str,
        loaded: rusqlite::Result<Option<rows::Checked<T>>>,
    ) -> Result<T, StoreError> {
        loaded
            .map_err(|e| self.sqlite(e))?
            .ok_or_else(|| StoreError::UnknownPlan {
                reference: id.to_owned(),
                known: String::new(),
            })
            .and_then(|result| {
                result.map_err(|detail| StoreError::Damaged {
                    path: self.path.clone(),
                    plan: id.to_owned(),
                    detail,
                })
            })
    }

    /// Every plan of the workspace, most recently changed first.
    pub fn plans(&self) -> Result<Vec<PlanSummary>, StoreError> {
        let current = self.current_plan_id()?;
        rows::plan_summaries(&self.conn, current.as_deref())
            .map_err(|e| self.sqlite(e))?
            .into_iter()
            .map(|row| {
                row.map_err(|detail| StoreError::Damaged {
                    path: self.path.clone(),
                    plan: String::from("(listing)"),
                    detail,
                })
            })
            .collect()
    }

    /// The full id of the plan `reference` names: a full id or any unambiguous prefix.
    pub fn resolve_plan(&self, reference: &str) -> Result<String, StoreError> {
        let wanted = reference.trim().to_ascii_lowercase();
        let plans = self.plans()?;
        if let Some(plan) = plans.iter().find(|p| p.id == wanted) {
            return Ok(plan.id.clone());
        }
        let matches: Vec<&PlanSummary> = plans
            .iter()
            .filter(|p| !wanted.is_empty() && p.id.starts_with(&wanted))
            .collect();
        match matches.as_slice() {
            [only] => Ok(only.id.clone()),
            [] => Err(StoreError::UnknownPlan {
                reference: reference.to_owned(),
                known: describe_plans(plans.iter()),
            }),
            many => Err(StoreError::AmbiguousPlan {
                reference: reference.to_owned(),
                candidates: describe_plans(many.iter().copied()),
            }),
        }
    }

    /// The plan commands act on when none is named.
    pub fn current_plan_id(&self) -> Result<Option<String>, StoreError> {
        rows::get_meta(&self.conn, rows::CURRENT_PLAN).map_err(|e| self.sqlite(e))
    }

    pub fn set_current_plan(&mut self, id: &str, now: Timestamp) -> Result<(), StoreError> {
        let sql = self.mapper();
        let log = self.event_log();
        self.write(|tx| {
            let exists: Option<i64> = tx
                .query_row("SELECT 1 FROM plans WHERE id = ?1", [id], |r| r.get(0))
                .optional()
                .map_err(&sql)?;
            if exists.is_none() {
                return Err(StoreError::UnknownPlan {
                    reference: id.to_owned(),
                    known: String::new(),
                });
            }
            rows::set_meta(tx, rows::CURRENT_PLAN, id).map_err(&sql)?;
            log.append(tx, Some(id), Event::new(EventKind::CurrentPlanSet), now)
                .map_err(&sql)?;
            Ok(())
        })
    }

    /// Delete a plan, its tasks and dependencies. Its events stay in the log.
    pub fn delete_plan(&mut self, id: &str, now: Timestamp) -> Result<(), StoreError> {
        let sql = self.mapper();
        let log = self.event_log();
        self.write(|tx| {
            let deleted = tx
                .execute("DELETE FROM plans WHERE id = ?1", [id])
                .map_err(&sql)?;
            if deleted == 0 {
                return Err(StoreError::UnknownPlan {
                    reference: id.to_owned(),
                    known: String::new(),
                });
            }
            tx.execute(
                "DELETE FROM meta WHERE key = ?1 AND value = ?2",
                [rows::CURRENT_PLAN, id],
            )
            .map_err(&sql)?;
            log.append(tx, Some(id), Event::new(EventKind::PlanDeleted), now)
                .map_err(&sql)?;
            Ok(())
        })
    }

    /// Apply one validated edit to the stored plan, atomically with its event.
    ///
    /// The plan is read inside the write transaction, so an edit made by another process
    /// a moment earlier is seen and kept.
    pub fn apply_edit(
        &mut self,
        plan_id: &str,
        edit: &Edit,
        known_runner: &dyn Fn(&str) -> bool,
        now: Timestamp,
    ) -> Result<(Plan, EditReport), StoreError> {
        self.update_plan(plan_id, now, |plan| {
            let (next, report) = apply(plan, edit, known_runner)?;
            Ok((next, report.to_event(), report))
        })
    }

    /// Read-modify-write of one plan under the write lock. `change` returns the new plan,
    /// the event that says what changed (the store adds the plan, time and sequence
    /// number), and a value handed back to the caller.
    pub fn update_plan<T>(
        &mut self,
        plan_id: &str,
        now: Timestamp,
        change: impl FnOnce(&Plan) -> Result<(Plan, Event, T), StoreError>,
    ) -> Result<(Plan, T), StoreError> {
        let sql = self.mapper();
        let log = self.event_log();
        let path = self.path.clone();
        self.write(|tx| {
            let current = rows::load_plan(tx, plan_id, rows::Detail::Full)
                .map_err(&sql)?
                .ok_or_else(|| StoreError::UnknownPlan {
                    reference: plan_id.to_owned(),
                    known: String::new(),
                })?
                .map_err(|detail| StoreError::Damaged {
                    path: path.clone(),
                    plan: plan_id.to_owned(),
                    detail,
                })?;
            let (mut next, event, value) = change(&current)?;
            next.id = current.id.clone();
            next.created_at = current.created_at;
            next.updated_at = now.max(current.updated_at);
            next.revision = current.revision + 1;
            next.renumber();
            rows::update_plan_row(tx, &next).map_err(&sql)?;
            rows::write_tasks(tx, &next).map_err(&sql)?;
            log.append(tx, Some(&next.id), event, now).map_err(&sql)?;
            Ok((next, value))
        })
    }

    /// Events after `after_seq`, oldest first, at most `limit`; for one plan or all.
    /// Rows an earlier (or later) weft wrote replay as [`EventKind::Unrecognized`].
    pub fn events(
        &self,
        plan_id: Option<&str>,
        after_seq: i64,
        limit: u32,
    ) -> Result<Vec<Event>, StoreError> {
        rows::events(&self.conn, plan_id, after_seq, limit).map_err(|e| self.sqlite(e))
    }
}

fn describe_plans<'a>(plans: impl Iterator<Item = &'a PlanSummary>) -> String {
    let all: Vec<&PlanSummary> = plans.collect();
    let mut shown: Vec<String> = all
        .iter()
        .take(LISTED_PLANS)
        .map(|p| format!("{} ({})", p.short_id, truncate(&p.goal, 40)))
        .collect();
    if all.len() > LISTED_PLANS {
        shown.push(format!("and {} more", all.len() - LISTED_PLANS));
    }
    if shown.is_empty() {
        "none".into()
    } else {
        shown.join(", ")
    }
}

fn truncate(text: &str, max_chars: usize) -> String {
    let mut chars = text.chars();
    let mut out: String = chars.by_ref().take(max_chars).collect();
    if chars.next().is_some() {
        out.push('…');
    }
    out
}

/// Whether the database file exists; anything but a regular file there is refused.
fn database_file_exists(path: &Path) -> Result<bool, StoreError> {
    match fs::metadata(path) {
        Ok(meta) if meta.is_file() => Ok(true),
        Ok(_) => Err(StoreError::Corrupt {
            path: path.to_owned(),
            detail: "it is not a regular file".into(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(StoreError::Io {
            path: path.to_owned(),
            source,
        }),
    }
}

/// Mode of `.weft/` (and every folder weft makes in it): only the user may enter it.
pub const STATE_DIR_MODE: u32 = 0o700;
/// Mode of every file weft writes in `.weft/`.
pub const STATE_FILE_MODE: u32 = 0o600;

/// Creates `path`, empty, `0600` whatever the umask (`create_new`: never over a file).
fn create_private_file(path: &Path) -> Result<(), StoreError> {
    let io = |source| StoreError::Io {
        path: path.to_owned(),
        source,
    };
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(STATE_FILE_MODE)
        .open(path)
    {
        // The umask can only have removed bits from 0600; chmod says it exactly.
        Ok(file) => file
            .set_permissions(std::fs::Permissions::from_mode(STATE_FILE_MODE))
            .map_err(io),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(source) => Err(io(source)),
    }
}

/// Sets `path` to `mode` when it is not already (a store an earlier weft made 0644).
fn tighten(path: &Path, mode: u32) -> Result<(), StoreError> {
    let io = |source| StoreError::Io {
        path: path.to_owned(),
        source,
    };
    let meta = fs::metadata(path).map_err(io)?;
    if meta.permissions().mode() & 0o7777 != mode {
        fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io)?;
    }
    Ok(())
}

/// The database and its `-wal` and `-shm` files `0600`, its folder `.weft/` `0700`. Best
/// effort: a file another user owns (which we could still open) keeps its mode rather
/// than failing the open.
fn tighten_database_files(db: &Path) {
    if let Some(dir) = db.parent() {
        let _ = tighten(dir, STATE_DIR_MODE);
    }
    let mut paths = vec![db.to_owned()];
    for suffix in ["-wal", "-shm"] {
        let mut name = db.as_os_str().to_owned();
        name.push(suffix);
        paths.push(PathBuf::from(name));
    }
    for path in paths {
        if path.exists() {
            let _ = tighten(&path, STATE_FILE_MODE);
        }
    }
}

/// Create `.weft/` (`0700`, or tighten it to that) and its `.gitignore` (never
/// overwriting one the user edited).
fn prepare_state_dir(state_dir: &Path) -> Result<(), StoreError> {
    match fs::metadata(state_dir) {
        Ok(meta) if meta.is_dir() => {}
        Ok(_) => {
            return Err(StoreError::StateDirBlocked {
                path: state_dir.to_owned(),
            });
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(STATE_DIR_MODE)
                .create(state_dir)
                .map_err(|source| StoreError::Io {
                    path: state_dir.to_owned(),
                    source,
                })?;
        }
        Err(source) => {
            return Err(StoreError::Io {
                path: state_dir.to_owned(),
                source,
            });
        }
    }
    tighten(state_dir, STATE_DIR_MODE)?;
    let ignore = state_dir.join(".gitignore");
    match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(STATE_FILE_MODE)
        .open(&ignore)
    {
        Ok(mut file) => {
            use std::io::Write;
            file.write_all(b"*\n").map_err(|source| StoreError::Io {
                path: ignore.clone(),
                source,
            })?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(source) => {
            return Err(StoreError::Io {
                path: ignore,
                source,
            });
        }
    }
    Ok(())
}
