//! `weft serve [--port N] [--open] [--listen ADDR]`: the workspace's local API, its live
//! event stream and the dashboard (crate `weft-server`), until Ctrl-C.
//!
//! The bin's part: resolve the workspace and settings once, and hand the server what only
//! the bin knows through [`weft_server::Host`] (how a store is opened, the engine's
//! configuration for a run, runner manifests, the JSON of `weft status`, `weft config`
//! and `weft approvals`).

use std::ffi::OsString;
use std::net::IpAddr;
use std::sync::Arc;

use weft_engine::EngineConfig;
use weft_engine::kept::NO_ENGINE;
use weft_engine::runners::Registry;
use weft_server::{ApiError, ApiResult, Host, RunOptions, ServerConfig};
use weft_store::{AskRecord, Store};

use crate::cli::Globals;
use crate::context::{self, Ctx};
use crate::error::{CliError, CliResult};
use crate::render::{PlanView, note, plan_json, usage_by_task};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The port to listen on (0 picks a free one).
    #[arg(long, default_value_t = 7878)]
    pub port: u16,
    /// Open the dashboard in the browser (xdg-open).
    #[arg(long)]
    pub open: bool,
    /// Listen on this address instead of 127.0.0.1 and ::1 (repeat for more); the token
    /// is still required.
    #[arg(long, value_name = "ADDR")]
    pub listen: Vec<IpAddr>,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let state_dir = ctx.workspace.state_dir();
    let config = ServerConfig {
        state_dir: state_dir.clone(),
        workspace: ctx.workspace.root.clone(),
        port: args.port,
        listen: args.listen,
        // A test seam: a tiny buffer makes a slow client easy to produce.
        client_buffer: std::env::var("WEFT_TEST_SSE_BUFFER")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(weft_server::events::CLIENT_BUFFER),
    };
    let server = weft_server::start(Arc::new(BinHost { ctx }), config).map_err(api_to_cli)?;
    let url = server.login_url();
    let addresses: Vec<String> = server.addresses.iter().map(ToString::to_string).collect();
    note(&format!(
        "weft serve: listening on {} (token in {}); Ctrl-C stops it",
        addresses.join(", "),
        state_dir.join(weft_server::state::TOKEN_FILE).display()
    ));
    crate::commands::stdout(&format!("{url}\n"))?;
    if args.open {
        // Best effort: a machine without a browser still has the URL printed above.
        let _ = std::process::Command::new("xdg-open")
            .arg(&url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
    }
    let interrupt = crate::interrupt::install();
    while !weft_engine::interrupted(Some(&interrupt)) {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    // The runs it started stop their agents on the same flag; give them time to record it.
    if !server.finish_runs(std::time::Duration::from_secs(20)) {
        note("weft serve: a run did not stop within 20 s; `weft run` continues it");
    }
    weft_server::state::remove(&state_dir);
    Ok(())
}

fn api_to_cli(error: ApiError) -> CliError {
    let mut cli = CliError::new(error.error);
    if let Some(hint) = error.hint {
        cli = cli.hint(hint);
    }
    cli
}

fn cli_to_api(error: CliError) -> ApiError {
    let causes = error.causes();
    ApiError {
        status: if error.code == crate::error::EXIT_BUSY {
            503
        } else {
            400
        },
        error: error.message,
        hint: (!error.hints.is_empty()).then(|| error.hints.join("\n")),
        causes,
    }
}

/// The bin's side of the server.
#[derive(Debug)]
struct BinHost {
    ctx: Ctx,
}

impl Host for BinHost {
    fn store(&self, create: bool) -> ApiResult<Option<Store>> {
        if create {
            self.ctx.store_for_write().map(Some).map_err(cli_to_api)
        } else {
            self.ctx.store_if_any().map_err(cli_to_api)
        }
    }

    fn engine_config(&self, plan_id: &str, options: &RunOptions) -> ApiResult<EngineConfig> {
        let isolated = crate::commands::run::isolation_choice(
            &self.ctx,
            options.isolated,
            options.without_isolation,
        )
        .map_err(|e| ApiError {
            status: 409,
            ..cli_to_api(e)
        })?;
        let mut config = self
            .ctx
            .engine_config(
                plan_id,
                context::RunOptions {
                    isolated,
                    stash: options.stash,
                    parallel: options.parallel,
                    halt_on_failure: options.halt_on_failure,
                    retry_failed: options.retry_failed,
                },
            )
            .map_err(cli_to_api)?;
        // Ctrl-C on `weft serve` stops its runs as it stops `weft run`'s.
        config.supervision.interrupt = Some(crate::interrupt::install());
        // A busy store's live notice goes to the server's stderr, as `weft run`'s does.
        config.supervision.live_notice = Some(crate::commands::run::busy_notice());
        Ok(config)
    }

    fn registry(&self) -> Registry {
        self.ctx.registry().0
    }

    fn default_runner(&self) -> String {
        self.ctx.settings.runner().to_owned()
    }

    /// `weft status --json`, as `commands::status` builds it (a test compares the two).
    fn status_json(&self, store: &Store, plan_id: &str) -> ApiResult<serde_json::Value> {
        // The outline `weft status` reads, not a `Task` per row.
        let outline = store.outline(plan_id)?;
        let attempts = store.attempts_of_plan(plan_id)?;
        let engine_alive = weft_engine::control::engine_running(store, plan_id)?.is_some();
        let mut view = PlanView::outline(&outline);
        if !engine_alive {
            view = view.orphaned(NO_ENGINE);
        }
        let kept = weft_engine::kept::kept_worktrees(&attempts, engine_alive);
        let mut usage = usage_by_task(&attempts);
        super::status::limits_usage(store, view, engine_alive, &mut usage).map_err(cli_to_api)?;
        let budget = super::status::plan_budget(store, plan_id, &self.ctx.settings.spend.budget)?;
        let verification =
            super::status::verification(store, plan_id, engine_alive).map_err(cli_to_api)?;
        let default_runner = self.ctx.settings.runner();
        let status = plan_json(view, default_runner, &usage).budget(&usage, &budget);
        let mut json =
            serde_json::to_value(status).map_err(|e| ApiError::internal(e.to_string()))?;
        json["kept_worktrees"] =
            serde_json::to_value(&kept).map_err(|e| ApiError::internal(e.to_string()))?;
        if let Some(verification) = verification {
            json["verification"] = serde_json::to_value(&verification)
                .map_err(|e| ApiError::internal(e.to_string()))?;
        }
        Ok(json)
    }

    /// `weft config --json`, as `commands::config` builds it (a test compares the two).
    fn settings_json(&self) -> ApiResult<serde_json::Value> {
        let object: serde_json::Map<String, serde_json::Value> = self
            .ctx
            .settings
            .all()
            .map(|(name, value, source)| {
                (
                    name.to_owned(),
                    serde_json::json!({ "value": value, "source": source.kind(), "from": source.to_string() }),
                )
            })
            .collect();
        Ok(object.into())
    }

    fn live_asks(&self, store: &mut Store) -> ApiResult<Vec<AskRecord>> {
        crate::commands::approvals::live_asks(store).map_err(cli_to_api)
    }

    fn repos(&self) -> Vec<String> {
        self.ctx.settings.repos()
    }

    fn transcript_locator(&self) -> weft_engine::transcripts::Locator {
        context::transcript_locator()
    }

    fn path_env(&self) -> Option<OsString> {
        std::env::var_os("PATH")
    }

    fn answer_chars(&self) -> usize {
        self.ctx.settings.answer_chars()
    }
}
