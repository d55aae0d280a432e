//! The route table and the application: every route is one row of [`ROUTES`] (method,
//! path pattern, what it is, its handler), which both dispatches requests and generates
//! the OpenAPI document ([`crate::openapi`]), so the two cannot drift apart.
//!
//! Handlers open a store handle per request (SQLite handles are cheap and not shared
//! between threads), do what the equivalent CLI command does through the same engine and
//! store functions, and return the CLI's `--json` document.

mod plans;
mod system;
mod tasks;

use std::path::PathBuf;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use weft_store::Store;

use crate::admission::{Admitted, Gate};
use crate::error::{ApiError, ApiResult};
use crate::http::{Request, Response};
use crate::{Host, events, runs};

/// What a route's request body is, for the OpenAPI document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    None,
    /// A JSON object (the name says which; `crates/weft-server/API.md` lists the fields).
    Json(&'static str),
}

/// What a route answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Produces {
    Json,
    Text,
    EventStream,
    Html,
}

/// One route.
pub struct Route {
    pub method: &'static str,
    /// `/api/plans/{plan}`: `{name}` matches one path segment.
    pub path: &'static str,
    pub summary: &'static str,
    pub body: Body,
    pub produces: Produces,
    /// The status of a success.
    pub status: u16,
    pub handler: fn(&App, &Call) -> ApiResult,
}

impl std::fmt::Debug for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.method, self.path)
    }
}

/// A request matched to a route, with its path parameters.
#[derive(Debug)]
pub struct Call<'a> {
    pub request: &'a Request,
    params: Vec<(&'static str, String)>,
}

impl Call<'_> {
    /// A path parameter (the route pattern names it).
    pub fn param(&self, name: &str) -> &str {
        self.params
            .iter()
            .find(|(k, _)| *k == name)
            .map_or("", |(_, v)| v.as_str())
    }

    /// The body as `T`; an empty body reads as `{}`.
    pub fn json<T: DeserializeOwned>(&self) -> ApiResult<T> {
        let body: &[u8] = if self.request.body.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &self.request.body
        };
        serde_json::from_slice(body).map_err(|e| {
            ApiError::bad_request(format!("the request body is not valid: {e}")).hint(
                "send a JSON object with the fields crates/weft-server/API.md lists for this route",
            )
        })
    }
}

macro_rules! route {
    ($method:literal, $path:literal, $summary:literal, $body:expr, $produces:ident, $status:literal, $handler:path) => {
        Route {
            method: $method,
            path: $path,
            summary: $summary,
            body: $body,
            produces: Produces::$produces,
            status: $status,
            handler: $handler,
        }
    };
}

use Body::{Json as J, None as N};

/// Every route the server answers (besides `/login`, which admission answers).
pub static ROUTES: &[Route] = &[
    route!("GET", "/", "the dashboard", N, Html, 200, system::index),
    route!(
        "GET",
        "/assets/{file}",
        "a file of the dashboard",
        N,
        Text,
        200,
        system::asset
    ),
    route!(
        "GET",
        "/api/server",
        "this server: workspace, port, pid, version",
        N,
        Json,
        200,
        system::server
    ),
    route!(
        "GET",
        "/api/openapi.json",
        "this document",
        N,
        Json,
        200,
        system::openapi
    ),
    route!(
        "GET",
        "/api/plans",
        "the plans of the workspace (= weft sessions list --json)",
        N,
        Json,
        200,
        plans::list
    ),
    route!(
        "POST",
        "/api/plans",
        "import a workflow file and make it current (= weft plan --file)",
        J("ImportPlan"),
        Json,
        201,
        plans::import
    ),
    route!(
        "GET",
        "/api/plans/{plan}",
        "the plan map (= weft status --json)",
        N,
        Json,
        200,
        plans::status
    ),
    route!(
        "DELETE",
        "/api/plans/{plan}",
        "delete a plan (= weft sessions delete --yes)",
        N,
        Json,
        200,
        plans::delete
    ),
    route!(
        "GET",
        "/api/plans/{plan}/export",
        "the plan as a workflow file (= weft plan export; ?format=json)",
        N,
        Text,
        200,
        plans::export
    ),
    route!(
        "POST",
        "/api/plans/{plan}/load",
        "make the plan current (= weft sessions load)",
        N,
        Json,
        200,
        plans::load
    ),
    route!(
        "POST",
        "/api/plans/{plan}/tasks",
        "add a task (= weft task add --json)",
        J("NewTask"),
        Json,
        201,
        tasks::add
    ),
    route!(
        "GET",
        "/api/plans/{plan}/tasks/{task}",
        "a task as stored, every field (= what weft task edit --json prints)",
        N,
        Json,
        200,
        tasks::show
    ),
    route!(
        "PATCH",
        "/api/plans/{plan}/tasks/{task}",
        "change fields of a task (= weft task edit --json)",
        J("TaskChanges"),
        Json,
        200,
        tasks::edit
    ),
    route!(
        "DELETE",
        "/api/plans/{plan}/tasks/{task}",
        "remove a task (= weft task remove --json)",
        N,
        Json,
        200,
        tasks::remove
    ),
    route!(
        "PUT",
        "/api/plans/{plan}/tasks/{task}/deps",
        "set a task's dependencies (= weft task deps --json)",
        J("Deps"),
        Json,
        200,
        tasks::deps
    ),
    route!(
        "POST",
        "/api/plans/{plan}/tasks/{task}/move",
        "move a task (= weft task move --json)",
        J("Move"),
        Json,
        200,
        tasks::reorder
    ),
    route!(
        "POST",
        "/api/plans/{plan}/tasks/{task}/manual",
        "a manual task's checklist; tick steps (= weft manual N --done)",
        J("Manual"),
        Json,
        200,
        tasks::manual
    ),
    route!(
        "GET",
        "/api/plans/{plan}/tasks/{task}/prompt",
        "what the task would be handed (= weft prompt N --json)",
        N,
        Json,
        200,
        tasks::prompt
    ),
    route!(
        "GET",
        "/api/plans/{plan}/tasks/{task}/transcript",
        "the agent's transcript of its latest attempt (= weft transcript N --json)",
        N,
        Json,
        200,
        tasks::transcript
    ),
    route!(
        "GET",
        "/api/plans/{plan}/tasks/{task}/attempts",
        "the task's attempts, oldest first",
        N,
        Json,
        200,
        tasks::attempts
    ),
    route!(
        "GET",
        "/api/plans/{plan}/tasks/{task}/log",
        "the latest attempt's output (= weft log N; ?offset ?max ?raw ?attempt)",
        N,
        Text,
        200,
        tasks::log
    ),
    route!(
        "GET",
        "/api/plans/{plan}/tasks/{task}/diff",
        "what the task's latest attempt with work changed, by file (?attempt=K)",
        N,
        Json,
        200,
        tasks::diff
    ),
    route!(
        "POST",
        "/api/plans/{plan}/tasks/{task}/review",
        "review comments; request_changes re-arms the task with them as review notes",
        J("Review"),
        Json,
        200,
        tasks::review
    ),
    route!(
        "POST",
        "/api/plans/{plan}/tasks/{task}/{action}",
        "hold, release, retry, rearm (body: fields), complete, uncomplete, skip, cancel, force-start, repair (= weft ACTION N --json)",
        J("TaskChanges"),
        Json,
        200,
        tasks::control
    ),
    route!(
        "POST",
        "/api/runs",
        "run a plan in this server (= weft run; {} runs the current plan with the defaults)",
        J("RunOptions"),
        Json,
        202,
        runs::start
    ),
    route!(
        "POST",
        "/api/runs/stop",
        "stop a plan's run (= weft stop)",
        J("PlanRef"),
        Json,
        200,
        runs::stop
    ),
    route!(
        "GET",
        "/api/runs/current",
        "whether a plan is running, and which engine runs it (?plan)",
        N,
        Json,
        200,
        runs::current
    ),
    route!(
        "GET",
        "/api/approvals",
        "the open approval questions (= weft approvals --json)",
        N,
        Json,
        200,
        system::approvals
    ),
    route!(
        "POST",
        "/api/approvals/{id}/allow",
        "allow what a question asks (= weft approvals allow ID [--scope])",
        J("Allow"),
        Json,
        200,
        system::allow
    ),
    route!(
        "POST",
        "/api/approvals/{id}/deny",
        "deny what a question asks (= weft approvals deny ID)",
        N,
        Json,
        200,
        system::deny
    ),
    route!(
        "GET",
        "/api/events",
        "the event log as server-sent events: replay after ?after or Last-Event-ID, then follow (?plan)",
        N,
        EventStream,
        200,
        events::stream
    ),
    route!(
        "GET",
        "/api/attempts/{id}/output",
        "an attempt's output from ?offset (at most ?max bytes), sanitized unless ?raw=1",
        N,
        Text,
        200,
        crate::output::range
    ),
    route!(
        "GET",
        "/api/attempts/{id}/output/stream",
        "an attempt's output from ?offset as server-sent events until it ends",
        N,
        EventStream,
        200,
        crate::output::stream
    ),
    route!(
        "GET",
        "/api/handoff/review",
        "the run's diff against its base (= weft handoff review; ?plan ?stat=1)",
        N,
        Json,
        200,
        system::handoff_review
    ),
    route!(
        "POST",
        "/api/handoff/merge",
        "merge the run into the checked-out branch (= weft handoff merge --yes)",
        J("Confirm"),
        Json,
        200,
        system::handoff_merge
    ),
    route!(
        "POST",
        "/api/handoff/discard",
        "discard the run's branch (= weft handoff discard --yes)",
        J("Confirm"),
        Json,
        200,
        system::handoff_discard
    ),
    route!(
        "POST",
        "/api/handoff/cleanup",
        "remove the run's worktrees (= weft handoff cleanup)",
        J("PlanRef"),
        Json,
        200,
        system::handoff_cleanup
    ),
    route!(
        "GET",
        "/api/runners",
        "every runner and whether it is available (= weft runners --json)",
        N,
        Json,
        200,
        system::runners
    ),
    route!(
        "GET",
        "/api/settings",
        "every setting and where it came from (= weft config --json)",
        N,
        Json,
        200,
        system::settings
    ),
];

/// The application behind the routes.
pub struct App {
    pub(crate) host: Arc<dyn Host>,
    pub(crate) gate: Gate,
    pub(crate) workspace: PathBuf,
    pub(crate) events: events::Hub,
    pub(crate) runs: runs::Runs,
}

impl std::fmt::Debug for App {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("App")
            .field("workspace", &self.workspace)
            .finish_non_exhaustive()
    }
}

impl App {
    pub fn new(host: Arc<dyn Host>, gate: Gate, workspace: PathBuf, client_buffer: usize) -> App {
        App {
            events: events::Hub::with_buffer(host.clone(), client_buffer),
            runs: runs::Runs::default(),
            host,
            gate,
            workspace,
        }
    }

    /// Admit, route and answer one request.
    pub fn handle(&self, request: &Request) -> Response {
        match self.gate.admit(request) {
            Admitted::Answer(response) => response,
            Admitted::Yes(_) => match self.dispatch(request) {
                Ok(response) => response,
                Err(error) => error.response(),
            },
        }
    }

    fn dispatch(&self, request: &Request) -> ApiResult {
        let segments = request.segments();
        let mut path_matched = false;
        for route in ROUTES {
            let Some(params) = match_path(route.path, &segments) else {
                continue;
            };
            path_matched = true;
            if route.method != request.method {
                continue;
            }
            let call = Call { request, params };
            return (route.handler)(self, &call);
        }
        if path_matched {
            return Err(ApiError::new(
                405,
                format!("{} is not allowed on {}", request.method, request.path),
            )
            .hint("GET /api/openapi.json lists every route and its methods"));
        }
        Err(ApiError::not_found(format!("no route {}", request.path))
            .hint("GET /api/openapi.json lists every route"))
    }

    /// A store handle that must hold plans.
    pub(crate) fn store(&self) -> ApiResult<Store> {
        self.host.store(false)?.ok_or_else(|| {
            ApiError::not_found(format!(
                "no plan in the workspace {} yet",
                self.workspace.display()
            ))
            .hint("import one with POST /api/plans (`weft plan --file plan.toml`)")
        })
    }

    /// A store handle, created on first write.
    pub(crate) fn store_for_write(&self) -> ApiResult<Store> {
        self.host
            .store(true)?
            .ok_or_else(|| ApiError::internal("the store could not be created"))
    }
}

/// The full id of the plan `reference` names: an id, a prefix, or `current`.
pub(crate) fn plan_id(store: &Store, reference: &str) -> ApiResult<String> {
    if reference != "current" {
        return Ok(store.resolve_plan(reference)?);
    }
    if let Some(id) = store.current_plan_id()? {
        return Ok(id);
    }
    Err(ApiError::not_found("no current plan in this workspace")
        .hint("pick one with POST /api/plans/{plan}/load (`weft sessions load <id>`)"))
}

/// The parameters of `pattern` when `segments` match it.
fn match_path(pattern: &'static str, segments: &[&str]) -> Option<Vec<(&'static str, String)>> {
    let parts: Vec<&'static str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    if parts.len() != segments.len() {
        return None;
    }
    let mut params = Vec::new();
    for (part, segment) in parts.iter().zip(segments) {
        match part.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
            Some(name) => params.push((name, (*segment).to_owned())),
            None if part == segment => {}
            None => return None,
        }
    }
    Some(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_literal_segment_wins_over_a_parameter_listed_after_it() {
        let segments = ["api", "plans", "p", "tasks", "3", "review"];
        let first = ROUTES
            .iter()
            .find(|r| r.method == "POST" && match_path(r.path, &segments).is_some())
            .map(|r| r.path);
        assert_eq!(first, Some("/api/plans/{plan}/tasks/{task}/review"));
    }

    #[test]
    fn no_two_routes_share_a_method_and_a_pattern() {
        let mut seen = std::collections::BTreeSet::new();
        for route in ROUTES {
            assert!(seen.insert((route.method, route.path)), "{route:?} twice");
        }
    }
}
