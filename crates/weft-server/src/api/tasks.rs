//! Tasks: edits (validated and stored exactly as `weft task ...`), controls (the engine's
//! `control` functions, as `weft retry` and the others), previews, transcripts, output,
//! attempts and review comments.

use weft_core::edit::NewTask;
use weft_core::limits::{self, LimitChanges};
use weft_core::{Edit, EditError, Plan, Task, TaskChanges, TaskKind, resolve_task_ref};
use weft_engine::control::{self, ControlReport};
use weft_store::Store;

use super::{App, Call, plan_id};
use crate::error::{ApiError, ApiResult};
use crate::http::Response;

/// The body of `POST .../tasks` (the flags of `weft task add`).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AddBody {
    title: String,
    #[serde(default)]
    prompt: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    deps: Vec<String>,
    #[serde(default)]
    at: Option<u32>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    runner: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    effort: Option<String>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    kind: TaskKind,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    steps: Vec<String>,
    #[serde(default)]
    checks: Vec<String>,
    #[serde(default)]
    timeout: Option<String>,
    #[serde(default)]
    idle_timeout: Option<String>,
    #[serde(default)]
    budget_usd: Option<String>,
    #[serde(default)]
    budget_tokens: Option<String>,
}

/// `timeout`, `idle_timeout`, `budget_usd`, `budget_tokens` as text, as the flags of
/// `weft task add/edit` take them (`""` clears), read by core's one parser.
fn limit_changes(
    timeout: &Option<String>,
    idle_timeout: &Option<String>,
    budget_usd: &Option<String>,
    budget_tokens: &Option<String>,
) -> Result<LimitChanges, ApiError> {
    let mut changes = LimitChanges::default();
    for (key, text) in [
        (limits::KEY_TIMEOUT, timeout),
        (limits::KEY_IDLE_TIMEOUT, idle_timeout),
        (limits::KEY_BUDGET_USD, budget_usd),
        (limits::KEY_BUDGET_TOKENS, budget_tokens),
    ] {
        if let Some(text) = text {
            changes.set_text(key, text).map_err(ApiError::bad_request)?;
        }
    }
    Ok(changes)
}

/// Field changes (the flags of `weft task edit` and `weft rearm`); `""` clears an
/// optional text field, a list replaces the list.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChangesBody {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    runner: Option<String>,
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    effort: Option<String>,
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    kind: Option<TaskKind>,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    steps: Option<Vec<String>>,
    #[serde(default)]
    checks: Option<Vec<String>>,
    #[serde(default)]
    timeout: Option<String>,
    #[serde(default)]
    idle_timeout: Option<String>,
    #[serde(default)]
    budget_usd: Option<String>,
    #[serde(default)]
    budget_tokens: Option<String>,
}

impl TryFrom<ChangesBody> for TaskChanges {
    type Error = ApiError;

    fn try_from(b: ChangesBody) -> Result<TaskChanges, ApiError> {
        let limits = limit_changes(&b.timeout, &b.idle_timeout, &b.budget_usd, &b.budget_tokens)?;
        Ok(TaskChanges {
            title: b.title,
            description: b.description,
            prompt: b.prompt,
            runner: b.runner,
            model: b.model,
            effort: b.effort,
            mode: b.mode,
            kind: b.kind,
            command: b.command,
            steps: b.steps,
            checks: b.checks,
            limits,
        })
    }
}

/// Apply one edit; the answer is the task it made or changed (a removed one as it was),
/// as `weft task ... --json` prints it, with the report lines and warnings beside it.
fn apply(app: &App, call: &Call, edit: Edit) -> ApiResult {
    let mut store = app.store()?;
    let id = plan_id(&store, call.param("plan"))?;
    let names = app.host.runner_names();
    let before = store.plan(&id)?;
    let (after, report) = store.apply_edit(&id, &edit, &|r| names.contains(r), crate::now())?;
    let task = find(&after, &report.task).or_else(|| find(&before, &report.task));
    let status = if matches!(edit, Edit::Add { .. }) {
        201
    } else {
        200
    };
    Ok(Response::json(status, &task))
}

fn find<'a>(plan: &'a Plan, id: &str) -> Option<&'a Task> {
    plan.tasks.iter().find(|t| t.id == id)
}

pub(super) fn add(app: &App, call: &Call) -> ApiResult {
    let b: AddBody = call.json()?;
    let task = NewTask {
        id: b.id,
        title: b.title,
        description: b.description,
        prompt: b.prompt,
        dependencies: b.deps,
        runner: b.runner,
        model: b.model,
        effort: b.effort,
        mode: b.mode,
        kind: b.kind,
        command: b.command,
        steps: b.steps,
        checks: b.checks,
        limits: limit_changes(&b.timeout, &b.idle_timeout, &b.budget_usd, &b.budget_tokens)?
            .applied_to(Default::default()),
    };
    apply(app, call, Edit::Add { task, at: b.at })
}

pub(super) fn edit(app: &App, call: &Call) -> ApiResult {
    let changes: ChangesBody = call.json()?;
    let edit = Edit::Update {
        task: call.param("task").to_owned(),
        changes: changes.try_into()?,
    };
    apply(app, call, edit)
}

pub(super) fn remove(app: &App, call: &Call) -> ApiResult {
    let edit = Edit::Remove {
        task: call.param("task").to_owned(),
    };
    apply(app, call, edit)
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DepsBody {
    deps: Vec<String>,
}

pub(super) fn deps(app: &App, call: &Call) -> ApiResult {
    let body: DepsBody = call.json()?;
    let edit = Edit::SetDependencies {
        task: call.param("task").to_owned(),
        dependencies: body.deps,
    };
    apply(app, call, edit)
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct MoveBody {
    to: u32,
}

pub(super) fn reorder(app: &App, call: &Call) -> ApiResult {
    let body: MoveBody = call.json()?;
    let edit = Edit::Move {
        task: call.param("task").to_owned(),
        to: body.to,
    };
    apply(app, call, edit)
}

/// The answer of a control: the task as stored afterwards (`weft retry N --json`), and
/// what the control did.
fn controlled(store: &Store, plan: &str, reference: &str, report: &ControlReport) -> ApiResult {
    let stored = store.plan(plan)?;
    let index = resolve_task_ref(&stored.tasks, reference).map_err(EditError::from)?;
    let mut json = serde_json::to_value(&stored.tasks[index]).unwrap_or_default();
    json["report"] = serde_json::to_value(&report.lines).unwrap_or_default();
    Ok(Response::json(200, &json))
}

pub(super) fn control(app: &App, call: &Call) -> ApiResult {
    let action = call.param("action");
    let reference = call.param("task");
    if action == "hold" || action == "release" {
        let edit = Edit::SetHold {
            task: reference.to_owned(),
            hold: action == "hold",
        };
        return apply(app, call, edit);
    }
    let mut store = app.store()?;
    let plan = plan_id(&store, call.param("plan"))?;
    let report = match action {
        "retry" => control::retry(&mut store, &plan, reference)?,
        "rearm" => {
            let changes: ChangesBody = call.json()?;
            let names = app.host.runner_names();
            control::rearm(&mut store, &plan, reference, &changes.try_into()?, &|r| {
                names.contains(r)
            })?
        }
        "complete" => control::complete(&mut store, &plan, reference)?,
        "uncomplete" => control::uncomplete(&mut store, &plan, reference)?,
        "skip" => control::skip(&mut store, &plan, reference)?,
        "cancel" => control::cancel(&mut store, &plan, reference)?,
        "force-start" => control::force_start(&mut store, &plan, reference)?,
        "repair" => control::repair(&mut store, &plan, reference)?,
        other => {
            return Err(ApiError::not_found(format!("no task action {other:?}")).hint(
                "actions: hold, release, retry, rearm, complete, uncomplete, skip, cancel, force-start, repair, manual, review",
            ));
        }
    };
    controlled(&store, &plan, reference, &report)
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ManualBody {
    /// Steps to tick (1-based); empty: only show the checklist. `[0]`: every step.
    #[serde(default)]
    done: Vec<usize>,
}

pub(super) fn manual(app: &App, call: &Call) -> ApiResult {
    let body: ManualBody = call.json()?;
    let mut store = app.store()?;
    let plan = plan_id(&store, call.param("plan"))?;
    let reference = call.param("task");
    let mut lines = Vec::new();
    for step in &body.done {
        let step = (*step != 0).then_some(*step);
        lines.extend(control::manual_tick(&mut store, &plan, reference, step)?.lines);
    }
    let view = control::manual_view(
        &store,
        &plan,
        reference,
        &app.workspace,
        &app.workspace.join(".weft"),
        &app.host.repos(),
    )?;
    Ok(Response::json(
        200,
        &serde_json::json!({
            "order": view.order,
            "id": view.id,
            "title": view.title,
            "status": view.status,
            "steps": view.steps.iter().map(|(text, done)| serde_json::json!({"text": text, "done": done})).collect::<Vec<_>>(),
            "checkout": view.checkout,
            "waiting_on": view.waiting_on,
            "report": lines,
        }),
    ))
}

/// The plan and the index of the task a route names.
fn task_of(app: &App, call: &Call) -> ApiResult<(Store, Plan, usize)> {
    let store = app.store()?;
    let plan = store.plan(&plan_id(&store, call.param("plan"))?)?;
    let index = resolve_task_ref(&plan.tasks, call.param("task")).map_err(EditError::from)?;
    Ok((store, plan, index))
}

pub(super) fn show(app: &App, call: &Call) -> ApiResult {
    let (_, plan, index) = task_of(app, call)?;
    Ok(Response::json(200, &plan.tasks[index]))
}

pub(super) fn prompt(app: &App, call: &Call) -> ApiResult {
    let (_, plan, _) = task_of(app, call)?;
    // As `weft prompt N`: the preview of a shared run (the CLI builds its configuration
    // without the isolation choice of `weft run`).
    let options = crate::RunOptions {
        without_isolation: true,
        ..crate::RunOptions::default()
    };
    let config = app.host.engine_config(&plan.id, &options)?;
    let preview = weft_engine::preview::preview(&config, &plan, call.param("task"))?;
    Ok(Response::json(200, &preview))
}

pub(super) fn attempts(app: &App, call: &Call) -> ApiResult {
    let (store, plan, index) = task_of(app, call)?;
    let attempts = store.attempts_of_task(&plan.id, &plan.tasks[index].id)?;
    Ok(Response::json(200, &attempts))
}

/// The task's attempt `?attempt=K` (1-based number), else its latest.
pub(crate) fn attempt_of(
    store: &Store,
    plan: &Plan,
    index: usize,
    number: Option<&str>,
) -> ApiResult<weft_core::Attempt> {
    let task = &plan.tasks[index];
    let attempts = store.attempts_of_task(&plan.id, &task.id)?;
    let chosen = match number {
        None => attempts.into_iter().last(),
        Some(text) => {
            let n: u32 = text
                .parse()
                .map_err(|_| ApiError::bad_request(format!("attempt {text:?} is not a number")))?;
            attempts.into_iter().find(|a| a.number == n)
        }
    };
    chosen.ok_or_else(|| {
        ApiError::not_found(format!(
            "task #{} {:?} has no such attempt (it may not have run yet)",
            task.order, task.id
        ))
        .hint("GET .../tasks/{task}/attempts lists its attempts")
    })
}

pub(super) fn transcript(app: &App, call: &Call) -> ApiResult {
    let (store, plan, index) = task_of(app, call)?;
    let attempt = attempt_of(&store, &plan, index, None)?;
    let lookup = weft_engine::transcripts::of_attempt(
        &app.host.registry(),
        &app.host.transcript_locator(),
        &attempt,
        app.host.answer_chars(),
    );
    match lookup {
        weft_engine::transcripts::TranscriptLookup::Found(found) => Ok(Response::json(200, &found)),
        weft_engine::transcripts::TranscriptLookup::NotKept { runner } => Err(ApiError::not_found(
            format!("the runner {runner:?} keeps no transcript weft can read"),
        )
        .hint(
            "transcripts are read for claude-code, codex and opencode (manifest key `transcript`)",
        )),
        // As `weft transcript N --json`: nothing found is `null`.
        weft_engine::transcripts::TranscriptLookup::Missing { .. } => {
            Ok(Response::json(200, &serde_json::Value::Null))
        }
    }
}

pub(super) fn log(app: &App, call: &Call) -> ApiResult {
    let (store, plan, index) = task_of(app, call)?;
    let attempt = attempt_of(&store, &plan, index, call.request.query("attempt"))?;
    crate::output::read(&store, &attempt.id, call.request)
}

pub(super) fn diff(app: &App, call: &Call) -> ApiResult {
    let (store, plan, index) = task_of(app, call)?;
    let task = &plan.tasks[index];
    let attempts = match call.request.query("attempt") {
        Some(number) => vec![attempt_of(&store, &plan, index, Some(number))?],
        None => store.attempts_of_task(&plan.id, &task.id)?,
    };
    for attempt in attempts.iter().rev() {
        if let Some(diff) = weft_engine::task_diff::of_attempt(&app.workspace, attempt)? {
            return Ok(Response::json(200, &diff));
        }
    }
    Err(ApiError::not_found(format!(
        "task #{} {:?} has no work to show: no attempt of it landed or kept a branch",
        task.order, task.id
    ))
    .hint("a task's diff exists once it ran in an isolated run"))
}

/// One review comment on a line of the task's diff.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Comment {
    path: String,
    #[serde(default)]
    line: Option<u32>,
    body: String,
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ReviewBody {
    comments: Vec<Comment>,
    #[serde(default)]
    request_changes: bool,
}

/// The most comments one review takes, and the most characters of one comment.
const MAX_COMMENTS: usize = 200;
const MAX_COMMENT_CHARS: usize = 4000;

/// Review notes appended to a prompt: a fixed heading, then one bullet per comment.
pub fn review_notes(comments: &[(String, Option<u32>, String)]) -> String {
    let mut notes = String::from(
        "\n\n## Review notes\n\nA reviewer asked for these changes to your previous attempt:\n",
    );
    for (path, line, body) in comments {
        let place = match line {
            Some(line) => format!("{path}:{line}"),
            None => path.clone(),
        };
        notes.push_str(&format!("\n- `{place}`: {}", body.trim()));
    }
    notes.push('\n');
    notes
}

pub(super) fn review(app: &App, call: &Call) -> ApiResult {
    let body: ReviewBody = call.json()?;
    if body.comments.is_empty() {
        return Err(ApiError::bad_request("a review needs at least one comment"));
    }
    if body.comments.len() > MAX_COMMENTS {
        return Err(ApiError::bad_request(format!(
            "a review takes at most {MAX_COMMENTS} comments"
        )));
    }
    if let Some(long) = body
        .comments
        .iter()
        .find(|c| c.body.chars().count() > MAX_COMMENT_CHARS || c.body.trim().is_empty())
    {
        return Err(ApiError::bad_request(format!(
            "the comment on {} is empty or longer than {MAX_COMMENT_CHARS} characters",
            long.path
        )));
    }
    let comments: Vec<(String, Option<u32>, String)> = body
        .comments
        .into_iter()
        .map(|c| (c.path, c.line, c.body))
        .collect();
    let notes = review_notes(&comments);
    if !body.request_changes {
        return Ok(Response::json(
            200,
            &serde_json::json!({"rearmed": false, "notes": notes}),
        ));
    }
    let (mut store, plan, index) = task_of(app, call)?;
    let reference = plan.tasks[index].id.clone();
    let changes = TaskChanges {
        prompt: Some(format!("{}{notes}", plan.tasks[index].prompt)),
        ..TaskChanges::default()
    };
    let names = app.host.runner_names();
    let report = control::rearm(&mut store, &plan.id, &reference, &changes, &|r| {
        names.contains(r)
    })?;
    controlled(&store, &plan.id, &reference, &report)
}
