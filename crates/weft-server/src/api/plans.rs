//! Plans: list, import, status, export, load, delete.

use weft_core::workflow::{WorkflowFile, WorkflowFormat};
use weft_core::{Plan, PlanStatus};
use weft_store::{PlanDraft, PlanOwn};

use super::{App, Call, plan_id};
use crate::error::{ApiError, ApiResult};
use crate::http::Response;

pub(super) fn list(app: &App, _: &Call) -> ApiResult {
    let plans = match app.host.store(false)? {
        Some(store) => store.plans()?,
        None => Vec::new(),
    };
    Ok(Response::json(200, &plans))
}

pub(super) fn status(app: &App, call: &Call) -> ApiResult {
    let store = app.store()?;
    let id = plan_id(&store, call.param("plan"))?;
    Ok(Response::json(200, &app.host.status_json(&store, &id)?))
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Import {
    /// The workflow file's text.
    workflow: String,
    /// `toml` or `json` (default: sniffed from the text).
    #[serde(default)]
    format: Option<String>,
    /// Where it came from (recorded as the plan's source; default `api`).
    #[serde(default)]
    source: Option<String>,
}

pub(super) fn import(app: &App, call: &Call) -> ApiResult {
    let body: Import = call.json()?;
    let format = match body.format.as_deref() {
        None => WorkflowFormat::sniff(&body.workflow),
        Some("toml") => WorkflowFormat::Toml,
        Some("json") => WorkflowFormat::Json,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "format {other:?} is not a workflow format"
            ))
            .hint("use \"toml\" or \"json\", or leave it out"));
        }
    };
    let source = body.source.unwrap_or_else(|| "api".to_owned());
    let names = app.host.runner_names();
    let imported = WorkflowFile::parse(&body.workflow, format, &source)
        .and_then(|file| file.into_plan(&source, &|r| names.contains(r)))
        .map_err(|e| ApiError::from_error(400, &e))?;
    let own = PlanOwn {
        verify: imported.verify,
        budget: imported.budget,
    };
    let mut store = app.store_for_write()?;
    let plan = store.create_plan_with(
        PlanDraft {
            goal: imported.goal,
            runner: imported.runner,
            status: PlanStatus::Approved,
            tasks: imported.tasks,
            source,
        },
        &own,
        crate::now(),
    )?;
    let mut status = app.host.status_json(&store, &plan.id)?;
    status["warnings"] = imported.warnings.iter().map(ToString::to_string).collect();
    Ok(Response::json(201, &status))
}

pub(super) fn export(app: &App, call: &Call) -> ApiResult {
    let store = app.store()?;
    let plan = store.plan(&plan_id(&store, call.param("plan"))?)?;
    let format = match call.request.query("format") {
        None | Some("toml") => WorkflowFormat::Toml,
        Some("json") => WorkflowFormat::Json,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "format {other:?} is not a workflow format"
            ))
            .hint("use ?format=toml or ?format=json"));
        }
    };
    let text = store.plan_file(&plan)?.to_text(format);
    let kind = match format {
        WorkflowFormat::Json => "application/json",
        WorkflowFormat::Toml => "application/toml",
    };
    Ok(Response::bytes(200, kind, text.into_bytes()))
}

/// What `weft sessions load --json` and `delete --json` print about a plan.
fn plan_json(plan: &Plan, current: bool) -> serde_json::Value {
    serde_json::json!({
        "id": plan.id,
        "short_id": plan.short_id(),
        "goal": plan.goal,
        "status": plan.status,
        "task_count": plan.tasks.len(),
        "current": current,
    })
}

pub(super) fn load(app: &App, call: &Call) -> ApiResult {
    let mut store = app.store()?;
    let id = plan_id(&store, call.param("plan"))?;
    store.set_current_plan(&id, crate::now())?;
    let plan = store.plan(&id)?;
    Ok(Response::json(200, &plan_json(&plan, true)))
}

pub(super) fn delete(app: &App, call: &Call) -> ApiResult {
    let mut store = app.store()?;
    let id = plan_id(&store, call.param("plan"))?;
    if let Some(pid) = weft_engine::control::engine_running(&store, &id)? {
        return Err(
            ApiError::conflict(format!("plan {id} is being run by engine pid {pid}"))
                .hint("stop it first (POST /api/runs/stop, `weft stop`)"),
        );
    }
    let plan = store.plan(&id)?;
    let current = store.current_plan_id()?.as_deref() == Some(id.as_str());
    store.delete_plan(&id, crate::now())?;
    let mut deleted = plan_json(&plan, current);
    deleted["deleted"] = true.into();
    Ok(Response::json(200, &deleted))
}
