//! The dashboard's files, this server, approvals, handoff, runners and settings.

use weft_core::approval::Scope;
use weft_engine::handoff::Handoff;
use weft_store::{AnswerRefused, Store};

use super::{App, Call, plan_id};
use crate::error::{ApiError, ApiResult};
use crate::http::Response;

pub(super) fn index(_: &App, _: &Call) -> ApiResult {
    Ok(crate::assets::index())
}

pub(super) fn asset(_: &App, call: &Call) -> ApiResult {
    crate::assets::file(call.param("file"))
        .ok_or_else(|| ApiError::not_found(format!("no dashboard file {:?}", call.param("file"))))
}

pub(super) fn server(app: &App, _: &Call) -> ApiResult {
    Ok(Response::json(
        200,
        &serde_json::json!({
            "workspace": app.workspace,
            "pid": std::process::id(),
            "hosts": app.gate.hosts(),
            "version": env!("CARGO_PKG_VERSION"),
        }),
    ))
}

pub(super) fn openapi(_: &App, _: &Call) -> ApiResult {
    Ok(Response::json(200, &crate::openapi::document()))
}

pub(super) fn approvals(app: &App, _: &Call) -> ApiResult {
    let open = match app.host.store(false)? {
        Some(mut store) => app.host.live_asks(&mut store)?,
        None => Vec::new(),
    };
    Ok(Response::json(200, &open))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AllowBody {
    #[serde(default)]
    scope: Option<String>,
}

pub(super) fn allow(app: &App, call: &Call) -> ApiResult {
    let body: AllowBody = call.json()?;
    answer(app, call.param("id"), true, body.scope.as_deref())
}

pub(super) fn deny(app: &App, call: &Call) -> ApiResult {
    answer(app, call.param("id"), false, None)
}

/// Record an answer for the waiting asker, as `weft approvals allow|deny ID --json`.
fn answer(app: &App, id: &str, allowed: bool, scope: Option<&str>) -> ApiResult {
    let id: i64 = id.trim().trim_start_matches('#').parse().map_err(|_| {
        ApiError::bad_request(format!("{id:?} is not an approval question id"))
            .hint("GET /api/approvals lists the open questions with their ids")
    })?;
    if let Some(scope) = scope {
        Scope::parse(scope).map_err(|e| ApiError::bad_request(format!("scope: {e}")))?;
    }
    let mut store = app.store_for_write()?;
    // Close the questions of processes that ended, so this answer is not lost on one.
    app.host.live_asks(&mut store)?;
    match store.answer_ask(id, allowed, scope, crate::now())? {
        Ok(ask) => Ok(Response::json(
            200,
            &serde_json::json!({
                "id": id,
                "allowed": allowed,
                "subject": ask.subject,
                "asked_scope": ask.scope,
                "scope": scope.unwrap_or(&ask.scope),
            }),
        )),
        Err(refused @ AnswerRefused::Unknown { .. }) => {
            Err(ApiError::not_found(refused.to_string())
                .hint("GET /api/approvals lists the open questions with their ids"))
        }
        Err(refused @ AnswerRefused::Closed { .. }) => Err(ApiError::conflict(refused.to_string())
            .hint("nothing was changed; GET /api/approvals lists the open questions")),
    }
}

/// The plan of `?plan=` (or a body's `plan`), else the current one.
fn chosen_plan(store: &Store, reference: Option<&str>) -> ApiResult<String> {
    plan_id(store, reference.unwrap_or("current"))
}

fn handoff(app: &App, store: &Store, plan: &str) -> ApiResult<Handoff> {
    Ok(Handoff::open(
        store,
        plan,
        &app.workspace,
        &app.workspace.join(".weft"),
        &app.host.repos(),
    )?)
}

/// What a handoff step did, as `weft handoff STEP --json` prints it.
fn step_report(run: &str, step: &str, lines: &[String]) -> Response {
    Response::json(
        200,
        &serde_json::json!({ "run": run, "step": step, "report": lines }),
    )
}

pub(super) fn handoff_review(app: &App, call: &Call) -> ApiResult {
    let store = app.store()?;
    let plan = chosen_plan(&store, call.request.query("plan"))?;
    let handoff = handoff(app, &store, &plan)?;
    let stat = call
        .request
        .query("stat")
        .is_some_and(|v| v == "1" || v == "true");
    let text = handoff.review(stat)?;
    Ok(Response::json(
        200,
        &serde_json::json!({
            "run": handoff.run.id,
            "integration_branch": handoff.integration_branch,
            "empty": handoff.is_empty(),
            "stat": stat,
            "text": text,
        }),
    ))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfirmBody {
    #[serde(default)]
    plan: Option<String>,
    #[serde(default)]
    confirm: bool,
}

fn confirmed(body: &ConfirmBody, what: &str) -> ApiResult<()> {
    if body.confirm {
        Ok(())
    } else {
        Err(ApiError::bad_request(format!("{what}: not confirmed"))
            .hint("send {\"confirm\": true} to go ahead (= --yes)"))
    }
}

pub(super) fn handoff_merge(app: &App, call: &Call) -> ApiResult {
    let body: ConfirmBody = call.json()?;
    let mut store = app.store()?;
    let plan = chosen_plan(&store, body.plan.as_deref())?;
    let handoff = handoff(app, &store, &plan)?;
    confirmed(
        &body,
        &format!(
            "merge {} into your checked-out branch",
            handoff.integration_branch
        ),
    )?;
    let run = handoff.run.id.clone();
    // The server has no terminal: nothing interrupts the merge but the process's end,
    // which the merge journal covers (`weft handoff merge` finishes it, `--abort` undoes it).
    let report = handoff.merge(&mut store, &plan, None)?;
    Ok(Response::json(
        200,
        &serde_json::json!({ "run": run, "step": "merge", "report": report }),
    ))
}

pub(super) fn handoff_discard(app: &App, call: &Call) -> ApiResult {
    let body: ConfirmBody = call.json()?;
    let mut store = app.store()?;
    let plan = chosen_plan(&store, body.plan.as_deref())?;
    let handoff = handoff(app, &store, &plan)?;
    confirmed(&body, &format!("discard {}", handoff.integration_branch))?;
    let run = handoff.run.id.clone();
    let lines = handoff.discard(&mut store, &plan)?;
    Ok(step_report(&run, "discard", &lines))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanBody {
    #[serde(default)]
    plan: Option<String>,
}

pub(super) fn handoff_cleanup(app: &App, call: &Call) -> ApiResult {
    let body: PlanBody = call.json()?;
    let store = app.store()?;
    let plan = chosen_plan(&store, body.plan.as_deref())?;
    let handoff = handoff(app, &store, &plan)?;
    let lines = handoff.cleanup()?;
    Ok(step_report(&handoff.run.id, "cleanup", &lines))
}

pub(super) fn runners(app: &App, _: &Call) -> ApiResult {
    let path = app.host.path_env();
    let reports = weft_engine::runners::reports(
        &app.host.registry(),
        path.as_deref(),
        weft_engine::defaults::PREFLIGHT_TIMEOUT,
    );
    Ok(Response::json(200, &reports))
}

pub(super) fn settings(app: &App, _: &Call) -> ApiResult {
    Ok(Response::json(200, &app.host.settings_json()?))
}
