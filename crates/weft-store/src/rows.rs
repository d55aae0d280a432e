//! Mapping between the domain types and table rows.

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OptionalExtension, Row, params};
use weft_core::{Plan, PlanStatus, Task, TaskKind, TaskStatus, Timestamp};

use weft_core::Event;

use crate::PlanSummary;

pub(crate) const CURRENT_PLAN: &str = "current_plan";

/// A row that parsed, or a description of what in it is damaged.
pub(crate) type Checked<T> = Result<T, String>;

pub(crate) fn insert_plan(conn: &Connection, plan: &Plan) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO plans (id, goal, status, runner, created_at, updated_at, revision)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            plan.id,
            plan.goal,
            plan.status.as_str(),
            plan.runner,
            plan.created_at,
            plan.updated_at,
            plan.revision as i64,
        ],
    )?;
    Ok(())
}

pub(crate) fn update_plan_row(conn: &Connection, plan: &Plan) -> rusqlite::Result<()> {
    conn.execute(
        "UPDATE plans SET goal = ?2, status = ?3, runner = ?4, updated_at = ?5, revision = ?6
         WHERE id = ?1",
        params![
            plan.id,
            plan.goal,
            plan.status.as_str(),
            plan.runner,
            plan.updated_at,
            plan.revision as i64,
        ],
    )?;
    Ok(())
}

fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("plain data always serializes")
}

/// Replace every task row of the plan with the plan's tasks. Each task's dependencies go
/// both into its `dependencies` column (what loading reads) and into `task_dependencies`
/// (what the foreign keys check), in this one transaction.
pub(crate) fn write_tasks(conn: &Connection, plan: &Plan) -> rusqlite::Result<()> {
    size_cache_for(conn, plan.tasks.len())?;
    // The plan's key for its tasks' rows (schema 12), given by the first write of its
    // tasks (the plan's creation) and found by every later one.
    conn.execute(
        "INSERT INTO plan_keys (plan_id) VALUES (?1) ON CONFLICT (plan_id) DO NOTHING",
        [&plan.id],
    )?;
    let key: i64 = conn.query_row(
        "SELECT key FROM plan_keys WHERE plan_id = ?1",
        [&plan.id],
        |r| r.get(0),
    )?;
    conn.execute("DELETE FROM tasks WHERE plan_key = ?1", [key])?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO tasks (plan_key, id, position, title, description, prompt, runner, model,
                            effort, mode, kind, command, steps, checks, status, hold, verdict, output,
                            steps_done, dependencies, timeout_ms, idle_timeout_ms, budget_usd,
                            budget_tokens)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19,
                 ?20, ?21, ?22, ?23, ?24)",
    )?;
    for task in &plan.tasks {
        insert.execute(params![
            key,
            task.id,
            task.order,
            task.title,
            task.description,
            task.prompt,
            task.runner,
            task.model,
            task.effort,
            task.mode,
            task.kind.as_str(),
            task.command,
            to_json(&task.steps),
            to_json(&task.checks),
            task.status.as_str(),
            task.hold,
            task.verdict.as_ref().map(to_json),
            task.output.as_ref().map(to_json),
            to_json(&task.steps_done),
            to_json(&task.dependencies),
            task.limits.timeout.map(millis),
            task.limits.idle_timeout.map(millis),
            task.limits.budget_usd,
            task.limits
                .budget_tokens
                .map(|t| i64::try_from(t).unwrap_or(i64::MAX)),
        ])?;
    }
    // The rows from the lists just written, in one statement: with one `execute` per
    // dependency (bind four values, step, reset), the ~145,000 dependency rows of a
    // 100,000-task plan took 333 ms; this takes 266. `json_each` reads back exactly what
    // `to_json` wrote, in order (`key` is the position).
    conn.prepare_cached(
        "INSERT INTO task_dependencies (plan_key, task_id, depends_on, position)
         SELECT t.plan_key, t.id, d.value, d.key
           FROM tasks t, json_each(t.dependencies) d
          WHERE t.plan_key = ?1 AND t.dependencies <> '[]'",
    )?
    .execute([key])?;
    Ok(())
}

fn millis(duration: std::time::Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// Give the connection a page cache that holds a write of `tasks` tasks whole (about
/// 0.9 KiB a task with its indexes; 2 KiB are allowed), never less than SQLite's default
/// 2 MiB. With the default, a 100,000-task import spilled pages to the WAL in the middle
/// of its transaction and read them back: a sixth of its time. The cache is a bound, not
/// an allocation: only pages the write touches take memory, and they are freed with the
/// connection.
fn size_cache_for(conn: &Connection, tasks: usize) -> rusqlite::Result<()> {
    let kib = tasks.saturating_mul(2).max(2000);
    conn.pragma_update(None, "cache_size", -i64::try_from(kib).unwrap_or(i64::MAX))
}

/// Whether every dependency of every task names a task of the plan (what the foreign keys
/// of `task_dependencies` would check row by row). weft-core's validation guarantees it
/// for every plan it lets through; this is the store's own check before it relies on it.
pub(crate) fn dependencies_resolve(plan: &Plan) -> bool {
    let ids: std::collections::HashSet<&str> = plan.tasks.iter().map(|t| t.id.as_str()).collect();
    ids.len() == plan.tasks.len()
        && plan
            .tasks
            .iter()
            .all(|t| t.dependencies.iter().all(|d| ids.contains(d.as_str())))
}

pub(crate) fn parse_json<T: serde::de::DeserializeOwned>(
    text: &str,
    what: &str,
    task: &str,
) -> Checked<T> {
    serde_json::from_str(text).map_err(|e| format!("task {task:?} has an unreadable {what}: {e}"))
}

pub(crate) fn parse_status<T>(text: &str, parse: fn(&str) -> Option<T>, what: &str) -> Checked<T> {
    parse(text).ok_or_else(|| format!("unknown {what} {text:?}"))
}

/// One column of a row as borrowed text (`None` for NULL); a value of another type is
/// damage, described.
fn text_at<'r>(row: &'r Row<'_>, index: usize, column: &str) -> Checked<Option<&'r str>> {
    match row.get_ref(index).map_err(|e| e.to_string())? {
        ValueRef::Null => Ok(None),
        ValueRef::Text(bytes) => std::str::from_utf8(bytes)
            .map(Some)
            .map_err(|e| format!("the {column} column holds text that is not UTF-8: {e}")),
        other => Err(format!(
            "the {column} column holds {} instead of text",
            other.data_type()
        )),
    }
}

fn required<'r>(row: &'r Row<'_>, index: usize, column: &str) -> Checked<&'r str> {
    text_at(row, index, column)?.ok_or_else(|| format!("the {column} column is NULL"))
}

fn optional(row: &Row<'_>, index: usize, column: &str) -> Checked<Option<String>> {
    Ok(text_at(row, index, column)?.map(str::to_owned))
}

/// How much of each task a load reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Detail {
    /// Everything.
    Full,
    /// All but what only running a task needs; see [`crate::Store::plan_outline`].
    Outline,
}

impl Detail {
    /// The select list; an outline selects NULL for what it leaves out, so both read the
    /// same positions.
    fn columns(self) -> &'static str {
        match self {
            Detail::Full => {
                "id, position, title, description, prompt, runner, model, effort, mode, kind, \
                 command, steps, checks, status, hold, verdict, output, steps_done, dependencies, \
                 timeout_ms, idle_timeout_ms, budget_usd, budget_tokens"
            }
            Detail::Outline => {
                "id, position, title, NULL, NULL, runner, model, effort, mode, kind, \
                 NULL, NULL, checks, status, hold, verdict, NULL, NULL, dependencies, \
                 timeout_ms, idle_timeout_ms, budget_usd, budget_tokens"
            }
        }
    }
}

/// Columns 19 to 22: the task's own limits, each NULL when unset (`timeout_ms`,
/// `idle_timeout_ms`, `budget_usd`, `budget_tokens`).
fn limits_from_row(row: &Row<'_>, id: &str) -> Checked<weft_core::TaskLimits> {
    let number = |index: usize| -> Checked<Option<i64>> {
        row.get(index)
            .map_err(|e| format!("task {id:?}: a limit is not a number: {e}"))
    };
    let usd: Option<f64> = row
        .get(21)
        .map_err(|e| format!("task {id:?}: budget_usd is not a number: {e}"))?;
    limits_of(id, [number(19)?, number(20)?], usd, number(22)?)
}

/// A task's limits from what its four columns hold: the one rule for every reader of
/// them (the full load's columns, the outline's text). A negative time limit is damage;
/// a budget that is not a positive finite number, or a token budget below zero, is no
/// budget.
pub(crate) fn limits_of(
    id: &str,
    [timeout_ms, idle_timeout_ms]: [Option<i64>; 2],
    budget_usd: Option<f64>,
    budget_tokens: Option<i64>,
) -> Checked<weft_core::TaskLimits> {
    let duration = |ms: Option<i64>| -> Checked<Option<std::time::Duration>> {
        ms.map(|ms| {
            u64::try_from(ms)
                .map(std::time::Duration::from_millis)
                .map_err(|_| format!("task {id:?}: a negative time limit ({ms} ms)"))
        })
        .transpose()
    };
    Ok(weft_core::TaskLimits {
        timeout: duration(timeout_ms)?,
        idle_timeout: duration(idle_timeout_ms)?,
        budget_usd: budget_usd.filter(|u| u.is_finite() && *u > 0.0),
        budget_tokens: budget_tokens.and_then(|t| u64::try_from(t).ok()),
    })
}

/// `result` with its error naming task `id`, unless it already does.
pub(crate) fn naming_task<T>(id: &str, result: Checked<T>) -> Checked<T> {
    result.map_err(|detail| {
        if detail.starts_with("task ") {
            detail
        } else {
            format!("task {id:?}: {detail}")
        }
    })
}

fn task_from_row(row: &Row<'_>, detail: Detail) -> Checked<Task> {
    let id = required(row, 0, "id")?;
    naming_task(id, task_columns(row, id, detail))
}

/// The columns after the id of [`task_from_row`].
fn task_columns(row: &Row<'_>, id: &str, detail: Detail) -> Checked<Task> {
    let mut task = Task::new(id, required(row, 2, "title")?);
    task.order = row.get(1).map_err(|e| e.to_string())?;
    task.runner = optional(row, 5, "runner")?;
    task.model = optional(row, 6, "model")?;
    task.effort = optional(row, 7, "effort")?;
    task.mode = optional(row, 8, "mode")?;
    task.kind = parse_status(required(row, 9, "kind")?, TaskKind::parse, "task kind")?;
    task.checks = crate::lists::parse_strings(required(row, 12, "checks")?, "checks list", id)?;
    task.status = parse_status(
        required(row, 13, "status")?,
        TaskStatus::parse,
        "task status",
    )?;
    task.hold = row.get(14).map_err(|e| e.to_string())?;
    task.verdict = text_at(row, 15, "verdict")?
        .map(|v| parse_json(v, "verdict", id))
        .transpose()?;
    task.dependencies =
        crate::lists::parse_strings(required(row, 18, "dependencies")?, "dependencies", id)?;
    task.limits = limits_from_row(row, id)?;
    if detail == Detail::Full {
        task.description = optional(row, 3, "description")?;
        task.prompt = required(row, 4, "prompt")?.to_owned();
        task.command = optional(row, 10, "command")?;
        task.steps = crate::lists::parse_strings(required(row, 11, "steps")?, "steps list", id)?;
        task.output = text_at(row, 16, "output")?
            .map(|v| parse_json(v, "output summary", id))
            .transpose()?;
        task.steps_done =
            crate::lists::parse_list(required(row, 17, "steps_done")?, "ticked steps", id)?;
    }
    Ok(task)
}

/// The plan, or `None` when no plan has that id.
///
/// Cost: this is what `weft status` and every engine pass pay, so it is one query over
/// one table: the dependencies come from each task's own `dependencies` column, not from
/// `task_dependencies` (a second query whose 15,000 rows for a 10,000-task plan cost as
/// much as the tasks themselves, plus a sort). Columns are borrowed from SQLite and
/// copied once; `[]`, what most list columns hold, is not parsed.
pub(crate) fn load_plan(
    conn: &Connection,
    id: &str,
    detail: Detail,
) -> rusqlite::Result<Option<Checked<Plan>>> {
    let head = match plan_head(conn, id)? {
        Some(Ok(head)) => head,
        Some(Err(detail)) => return Ok(Some(Err(detail))),
        None => return Ok(None),
    };

    let mut select_tasks = conn.prepare_cached(&format!(
        "SELECT {} FROM tasks WHERE plan_key = {} ORDER BY position",
        detail.columns(),
        plan_key_of!("?1")
    ))?;
    let mut tasks = Vec::new();
    let mut rows = select_tasks.query([id])?;
    while let Some(row) = rows.next()? {
        match task_from_row(row, detail) {
            Ok(task) => tasks.push(task),
            Err(detail) => return Ok(Some(Err(detail))),
        }
    }
    Ok(Some(Ok(Plan { tasks, ..head })))
}

/// The plan's own row as a [`Plan`] without tasks, or `None` when no plan has that id.
fn plan_head(conn: &Connection, id: &str) -> rusqlite::Result<Option<Checked<Plan>>> {
    let head = conn
        .query_row(
            "SELECT goal, status, runner, created_at, updated_at, revision FROM plans WHERE id = ?1",
            [id],
            |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, Option<String>>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, i64>(5)?,
                ))
            },
        )
        .optional()?;
    let Some((goal, status, runner, created_at, updated_at, revision)) = head else {
        return Ok(None);
    };
    Ok(Some(
        parse_status(&status, PlanStatus::parse, "plan status").map(|status| Plan {
            id: id.to_owned(),
            goal,
            status,
            created_at,
            updated_at,
            runner,
            revision: u64::try_from(revision).unwrap_or(0),
            tasks: Vec::new(),
        }),
    ))
}

/// The plan's outline ([`crate::Outline`]), or `None` when no plan has that id: what
/// [`load_plan`] reads for [`Detail::Outline`], here from each row's `outline` column in
/// the `tasks_outline` index (migration 9, read by `packed.rs`) and decoded by the same
/// rules, checked whole before the caller sees any of it, and copied into the outline's
/// one block of text instead of a `Task` each.
///
/// With a `helper` (the store's file) and a plan of `split_from` tasks or more, a second
/// connection in another thread reads from the last task down while `conn` reads up
/// ([`load_outline_split`]): reading is most of `weft status`, and the machine has cores
/// to spare.
pub(crate) fn load_outline(
    conn: &Connection,
    id: &str,
    helper: Option<Helper<'_>>,
    split_from: i64,
) -> rusqlite::Result<Option<Checked<crate::Outline>>> {
    if let Some(helper) = helper
        && conn.is_autocommit()
        && let Some(read) = load_outline_split(conn, id, helper, split_from)?
    {
        return Ok(read);
    }
    let head = match plan_head(conn, id)? {
        Some(Ok(head)) => head,
        Some(Err(detail)) => return Ok(Some(Err(detail))),
        None => return Ok(None),
    };
    let mut outline = crate::Outline::new(head);
    let read = outline_rows(conn, id, i64::MIN, Direction::Up, &mut outline, |_| true)?;
    Ok(Some(read.map(|()| outline)))
}

/// Plans from this many tasks on are read by two readers at once. Below it, a second
/// connection (~0.45 ms to open and read the schema) and a thread cost more than they
/// save. Measured on a 2-vCPU VM, with the helper started at once (`apart`): 3,000 tasks
/// 5.1 -> 4.9 ms (map) and 5.1-5.6 -> 4.7-5.2 ms (JSON) split; 2,000 tasks no better
/// split. (Before `apart`, when the helper often started 2-4 ms late, 3,000 tasks read in
/// 6.4 ms whole but 7.3-7.8 ms split, and this was 5,000.)
///
/// Tried and not kept: opening the second connection ahead, while the command opens its
/// store, was 0.4-0.6 ms slower at 10,000 tasks (alternated runs; likely the two opens
/// contending for the WAL index, not looked into further).
pub(crate) const SPLIT_FROM: i64 = 3_000;

/// The most tasks a split read makes room for up front, each reader (the guess is the
/// span of positions, which a damaged store could make huge): ~25 MiB of text and
/// ~12 MiB of records of address space, touched only as tasks are read. A larger plan
/// grows its buffers as it is read.
const MOST_RESERVED: usize = 1 << 17;

/// Where a second connection to the store opens, and how it waits for a busy one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Helper<'a> {
    pub path: &'a std::path::Path,
    pub busy_timeout: std::time::Duration,
}

/// [`load_outline`] in two parts read at once: `conn` reads up from the first position in
/// a read transaction while a second connection in another thread reads down from the
/// last, each stopping where the other has been, so a helper that starts late only
/// leaves more to `conn`. `None` when it was not split (no such plan, a small one) or the
/// parts could not be shown to be one state of the store (then it is read again whole).
///
/// One state: the helper reads in one statement, whose snapshot is taken after `conn`'s
/// transaction began, and `PRAGMA data_version` on `conn` is the same before its
/// transaction and after it ends, so nothing was committed between the two snapshots
/// (SQLite: the value changes when another connection commits in the interim). Every row
/// is read: `conn` stops only at a position the helper has read, and the helper has read
/// every row from there up; a row both read is kept once. A damaged row is the first by
/// position, as in one read: `conn` reads up until the helper's part, and the helper
/// stops at its first damage without taking that row, so `conn` meets it (or an earlier
/// one). If the helper cannot read, `conn` reads the rest in its own transaction.
fn load_outline_split(
    conn: &Connection,
    id: &str,
    helper: Helper<'_>,
    split_from: i64,
) -> rusqlite::Result<Option<Option<Checked<crate::Outline>>>> {
    use std::sync::atomic::{AtomicI64, Ordering::SeqCst};
    let before = data_version(conn)?;
    let tx = conn.unchecked_transaction()?;
    let Some(Ok(head)) = plan_head(&tx, id)? else {
        return Ok(None);
    };
    let (first, last): (Option<i64>, Option<i64>) = tx
        .prepare_cached(concat!(
            "SELECT (SELECT min(position) FROM tasks WHERE plan_key = ",
            plan_key_of!("?1"),
            "), (SELECT max(position) FROM tasks WHERE plan_key = ",
            plan_key_of!("?1"),
            ")"
        ))?
        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    let (Some(first), Some(last)) = (first, last) else {
        return Ok(None);
    };
    if last.saturating_sub(first) < split_from - 1 {
        return Ok(None);
    }
    // The last position `conn` took, the first the helper took.
    let mine_upto = AtomicI64::new(i64::MIN);
    let theirs_from = AtomicI64::new(i64::MAX);
    let part_head = head.clone();
    // Each reader reads about half, but where they meet is not known: both make room
    // for all of them (room that is not written is never touched).
    let tasks = usize::try_from(last - first + 1)
        .unwrap_or(0)
        .min(MOST_RESERVED);
    let (mine, theirs) = std::thread::scope(|scope| {
        // On another CPU at once: a helper the scheduler leaves queued behind this thread
        // reads nothing until it runs (see `apart`).
        let theirs = crate::apart::spawn(scope, || {
            outline_part(helper, id, part_head, tasks, |order| {
                let order = i64::from(order);
                let take = order > mine_upto.load(SeqCst);
                if take {
                    theirs_from.store(order, SeqCst);
                }
                take
            })
        });
        let mut outline = crate::Outline::with_capacity(head, tasks);
        let mine = outline_rows(&tx, id, i64::MIN, Direction::Up, &mut outline, |order| {
            let order = i64::from(order);
            let take = order < theirs_from.load(SeqCst);
            if take {
                mine_upto.store(order, SeqCst);
            }
            take
        })
        .map(|read| (read, outline));
        (mine, theirs.join())
    });
    let (mine, mut outline) = mine?;
    if let Err(detail) = mine {
        return Ok(Some(Some(Err(detail))));
    }
    let upto = mine_upto.load(SeqCst);
    let part = match theirs {
        Ok(Ok(Ok(part))) => part,
        // Damage `conn` did not meet: not one state.
        Ok(Ok(Err(_))) => return Ok(None),
        _ => {
            let read = outline_rows(&tx, id, upto, Direction::Up, &mut outline, |_| true)?;
            tx.commit()?;
            return Ok(Some(Some(read.map(|()| outline))));
        }
    };
    tx.commit()?;
    if data_version(conn)? != before {
        return Ok(None);
    }
    outline.append_down_after(part, upto);
    Ok(Some(Some(Ok(outline))))
}

/// The plan's rows from the last down, read on a connection of its own while `take`
/// says so (see [`load_outline_split`]).
fn outline_part(
    helper: Helper<'_>,
    id: &str,
    head: Plan,
    tasks: usize,
    take: impl FnMut(u32) -> bool,
) -> rusqlite::Result<Checked<crate::Outline>> {
    let conn = Connection::open_with_flags(
        helper.path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(helper.busy_timeout)?;
    conn.execute_batch(crate::READ_PRAGMAS)?;
    let mut part = crate::Outline::with_capacity(head, tasks);
    let read = outline_rows(&conn, id, i64::MIN, Direction::Down, &mut part, take)?;
    Ok(read.map(|()| part))
}

fn data_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.query_row("PRAGMA data_version", [], |r| r.get(0))
}

/// Which way [`outline_rows`] reads.
#[derive(Debug, Clone, Copy)]
enum Direction {
    Up,
    Down,
}

/// The outline of each task after position `?2`, in plan order, from the index that holds
/// it (migration 9; see `packed.rs`): one column from one index scan, no table lookups.
macro_rules! outline_select {
    ($order:literal) => {
        concat!(
            "SELECT outline FROM tasks INDEXED BY tasks_outline WHERE plan_key = ",
            plan_key_of!("?1"),
            " AND position > ?2 ORDER BY position ",
            $order
        )
    };
}

/// Push the rows of plan `id` after position `after`, in `direction`, into `outline`
/// while `take` (given each row's order) says so; `Err` for the first damaged one.
fn outline_rows(
    conn: &Connection,
    id: &str,
    after: i64,
    direction: Direction,
    outline: &mut crate::Outline,
    mut take: impl FnMut(u32) -> bool,
) -> rusqlite::Result<Checked<()>> {
    let mut select_tasks = conn.prepare_cached(match direction {
        Direction::Up => outline_select!("ASC"),
        Direction::Down => outline_select!("DESC"),
    })?;
    let mut rows = select_tasks.query(params![id, after])?;
    while let Some(row) = rows.next()? {
        let texts = match outline_row(row) {
            Ok(texts) => texts,
            Err(detail) => return Ok(Err(detail)),
        };
        if !take(texts.order) {
            break;
        }
        if let Err(detail) = outline.push(texts) {
            return Ok(Err(detail));
        }
    }
    Ok(Ok(()))
}

/// One row of [`load_outline`]'s query, read as [`task_from_row`] reads its columns.
fn outline_row<'r>(row: &'r Row<'_>) -> Checked<crate::outline::RowTexts<'r>> {
    match row.get_ref(0).map_err(|e| e.to_string())? {
        ValueRef::Text(bytes) => crate::packed::outline_row(bytes),
        other => Err(format!(
            "the outline column holds {} instead of text",
            other.data_type()
        )),
    }
}

pub(crate) fn plan_summaries(
    conn: &Connection,
    current: Option<&str>,
) -> rusqlite::Result<Vec<Checked<PlanSummary>>> {
    let mut select = conn.prepare_cached(concat!(
        "SELECT p.id, p.goal, p.status, p.created_at, p.updated_at,
                (SELECT COUNT(*) FROM tasks t WHERE t.plan_key = ",
        plan_key_of!("p.id"),
        ")
         FROM plans p ORDER BY p.updated_at DESC, p.created_at DESC, p.id",
    ))?;
    let rows = select.query_map([], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, i64>(3)?,
            r.get::<_, i64>(4)?,
            r.get::<_, i64>(5)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, goal, status, created_at, updated_at, count) = row?;
        out.push(
            parse_status(&status, PlanStatus::parse, "plan status").map(|status| PlanSummary {
                short_id: weft_core::model::short_id(&id).to_owned(),
                current: current == Some(id.as_str()),
                id,
                goal,
                status,
                task_count: u64::try_from(count).unwrap_or(0),
                created_at,
                updated_at,
            }),
        );
    }
    Ok(out)
}

pub(crate) fn get_meta(conn: &Connection, key: &str) -> rusqlite::Result<Option<String>> {
    conn.query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
        .optional()
}

pub(crate) fn set_meta(conn: &Connection, key: &str, value: &str) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO meta (key, value) VALUES (?1, ?2)
         ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [key, value],
    )?;
    Ok(())
}

/// Appends events to the log, masking every secret value it was given first.
#[derive(Debug, Clone, Default)]
pub(crate) struct EventLog {
    pub(crate) secrets: Vec<String>,
}

impl EventLog {
    /// Append `event` about `plan_id` (unless the event names its own plan) at `at`;
    /// returns its sequence number.
    pub(crate) fn append(
        &self,
        conn: &Connection,
        plan_id: Option<&str>,
        event: Event,
        at: Timestamp,
    ) -> rusqlite::Result<i64> {
        let mut event = event.masked(&self.secrets);
        event.at = at;
        event.seq = 0;
        if event.plan.is_none() {
            event.plan = plan_id.map(str::to_owned);
        }
        conn.prepare_cached(
            "INSERT INTO events (plan_id, kind, payload, at) VALUES (?1, ?2, ?3, ?4)",
        )?
        .execute(params![
            event.plan,
            event.kind_name(),
            event.to_stored(),
            at
        ])?;
        Ok(conn.last_insert_rowid())
    }
}

/// Events after `after_seq`, oldest first. A row this weft cannot read as a typed event
/// (an earlier weft's ad-hoc payload, a newer weft's kind) is replayed as
/// [`weft_core::EventKind::Unrecognized`], never refused.
pub(crate) fn events(
    conn: &Connection,
    plan_id: Option<&str>,
    after_seq: i64,
    limit: u32,
) -> rusqlite::Result<Vec<Event>> {
    let mut select = conn.prepare_cached(
        "SELECT seq, plan_id, kind, payload, at FROM events
         WHERE seq > ?1 AND (?2 IS NULL OR plan_id = ?2)
         ORDER BY seq LIMIT ?3",
    )?;
    let rows = select.query_map(params![after_seq, plan_id, limit], |r| {
        let payload: String = r.get(3)?;
        let kind: String = r.get(2)?;
        Ok(Event::from_stored(
            r.get(0)?,
            r.get(1)?,
            &kind,
            &payload,
            r.get(4)?,
        ))
    })?;
    rows.collect()
}
