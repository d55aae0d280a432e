//! Mapping between the domain types and table rows.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params};
use weft_core::{Plan, PlanStatus, Task, TaskKind, TaskStatus, Timestamp};

use crate::{Event, PlanSummary};

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

/// Replace every task row of the plan with the plan's tasks.
pub(crate) fn write_tasks(conn: &Connection, plan: &Plan) -> rusqlite::Result<()> {
    conn.execute("DELETE FROM tasks WHERE plan_id = ?1", [&plan.id])?;
    let mut insert = conn.prepare_cached(
        "INSERT INTO tasks (plan_id, id, position, title, description, prompt, runner, model,
                            effort, mode, kind, command, steps, checks, status, hold, verdict, output,
                            steps_done)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19)",
    )?;
    for task in &plan.tasks {
        insert.execute(params![
            plan.id,
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
        ])?;
    }
    let mut insert_dependency = conn.prepare_cached(
        "INSERT INTO task_dependencies (plan_id, task_id, depends_on, position)
         VALUES (?1, ?2, ?3, ?4)",
    )?;
    for task in &plan.tasks {
        for (position, dependency) in task.dependencies.iter().enumerate() {
            insert_dependency.execute(params![plan.id, task.id, dependency, position as i64])?;
        }
    }
    Ok(())
}

fn parse_json<T: serde::de::DeserializeOwned>(text: &str, what: &str, task: &str) -> Checked<T> {
    serde_json::from_str(text).map_err(|e| format!("task {task:?} has an unreadable {what}: {e}"))
}

fn parse_status<T>(text: &str, parse: fn(&str) -> Option<T>, what: &str) -> Checked<T> {
    parse(text).ok_or_else(|| format!("unknown {what} {text:?}"))
}

/// The whole plan, or `None` when no plan has that id.
pub(crate) fn load_plan(conn: &Connection, id: &str) -> rusqlite::Result<Option<Checked<Plan>>> {
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

    let mut dependencies: HashMap<String, Vec<String>> = HashMap::new();
    let mut select_dependencies = conn.prepare_cached(
        "SELECT task_id, depends_on FROM task_dependencies WHERE plan_id = ?1
         ORDER BY task_id, position",
    )?;
    let mut rows = select_dependencies.query([id])?;
    while let Some(row) = rows.next()? {
        dependencies
            .entry(row.get(0)?)
            .or_default()
            .push(row.get(1)?);
    }

    let mut select_tasks = conn.prepare_cached(
        "SELECT id, position, title, description, prompt, runner, model, effort, mode, kind,
                command, steps, checks, status, hold, verdict, output, steps_done
         FROM tasks WHERE plan_id = ?1 ORDER BY position",
    )?;
    let mut tasks = Vec::new();
    let mut rows = select_tasks.query([id])?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let kind: String = row.get(9)?;
        let steps: String = row.get(11)?;
        let checks: String = row.get(12)?;
        let status: String = row.get(13)?;
        let verdict: Option<String> = row.get(15)?;
        let output: Option<String> = row.get(16)?;
        let steps_done: String = row.get(17)?;
        let parsed = (|| -> Checked<Task> {
            let mut task = Task::new(
                id.clone(),
                row.get::<_, String>(2).map_err(|e| e.to_string())?,
            );
            task.order = row.get(1).map_err(|e| e.to_string())?;
            task.description = row.get(3).map_err(|e| e.to_string())?;
            task.prompt = row.get(4).map_err(|e| e.to_string())?;
            task.runner = row.get(5).map_err(|e| e.to_string())?;
            task.model = row.get(6).map_err(|e| e.to_string())?;
            task.effort = row.get(7).map_err(|e| e.to_string())?;
            task.mode = row.get(8).map_err(|e| e.to_string())?;
            task.kind = parse_status(&kind, TaskKind::parse, "task kind")?;
            task.command = row.get(10).map_err(|e| e.to_string())?;
            task.steps = parse_json(&steps, "steps list", &id)?;
            task.steps_done = parse_json(&steps_done, "ticked steps", &id)?;
            task.checks = parse_json(&checks, "checks list", &id)?;
            task.status = parse_status(&status, TaskStatus::parse, "task status")?;
            task.hold = row.get(14).map_err(|e| e.to_string())?;
            task.verdict = verdict
                .as_deref()
                .map(|v| parse_json(v, "verdict", &id))
                .transpose()?;
            task.output = output
                .as_deref()
                .map(|v| parse_json(v, "output summary", &id))
                .transpose()?;
            task.dependencies = dependencies.remove(&id).unwrap_or_default();
            Ok(task)
        })();
        match parsed {
            Ok(task) => tasks.push(task),
            Err(detail) => return Ok(Some(Err(detail))),
        }
    }
    let status = match parse_status(&status, PlanStatus::parse, "plan status") {
        Ok(status) => status,
        Err(detail) => return Ok(Some(Err(detail))),
    };
    Ok(Some(Ok(Plan {
        id: id.to_owned(),
        goal,
        status,
        created_at,
        updated_at,
        runner,
        revision: u64::try_from(revision).unwrap_or(0),
        tasks,
    })))
}

pub(crate) fn plan_summaries(
    conn: &Connection,
    current: Option<&str>,
) -> rusqlite::Result<Vec<Checked<PlanSummary>>> {
    let mut select = conn.prepare_cached(
        "SELECT p.id, p.goal, p.status, p.created_at, p.updated_at,
                (SELECT COUNT(*) FROM tasks t WHERE t.plan_id = p.id)
         FROM plans p ORDER BY p.updated_at DESC, p.created_at DESC, p.id",
    )?;
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

pub(crate) fn append_event(
    conn: &Connection,
    plan_id: Option<&str>,
    kind: &str,
    payload: &serde_json::Value,
    at: Timestamp,
) -> rusqlite::Result<()> {
    conn.execute(
        "INSERT INTO events (plan_id, kind, payload, at) VALUES (?1, ?2, ?3, ?4)",
        params![plan_id, kind, payload.to_string(), at],
    )?;
    Ok(())
}

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
        Ok(Event {
            seq: r.get(0)?,
            plan_id: r.get(1)?,
            kind: r.get(2)?,
            payload: serde_json::from_str(&payload).unwrap_or(serde_json::Value::String(payload)),
            at: r.get(4)?,
        })
    })?;
    rows.collect()
}
