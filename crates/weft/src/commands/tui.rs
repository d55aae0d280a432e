//! `weft tui`: the plan, the live agents and every control in one terminal (the
//! `weft-tui` crate). This file only resolves what the TUI needs: the plan, the settings
//! and the engine configuration `weft run` would use for `R`.

use std::io::IsTerminal;
use std::rc::Rc;

use crate::cli::Globals;
use crate::context::{Ctx, RunOptions};
use crate::error::{CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Most tasks running at once in a run started with R (1 to 64; default: the
    /// `parallel` setting).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=64))]
    pub parallel: Option<u32>,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return Err(
            CliError::new("weft tui needs a terminal (stdin and stdout)")
                .hint("`weft status --watch` and `weft events --follow` work without one"),
        );
    }
    let ctx = Rc::new(Ctx::load(globals)?);
    let store = ctx.store_with_plans()?;
    let plan_id = ctx.plan_id(&store)?;
    drop(store);
    // Resolved once before the screen changes: broken runner manifests are reported here.
    let probe = engine_config(&ctx, &plan_id, args.parallel).map_err(CliError::new)?;
    let no_color = std::env::var("NO_COLOR").ok();
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .ok()
        .filter(|e| !e.trim().is_empty())
        .unwrap_or_else(|| "vi".to_owned());
    let factory_ctx = Rc::clone(&ctx);
    let factory_plan = plan_id.clone();
    let parallel = args.parallel;
    let options = weft_tui::Options {
        workspace: ctx.workspace.root.clone(),
        state_dir: ctx.workspace.state_dir(),
        plan_id,
        repos: ctx.settings.repos(),
        busy_timeout: ctx.settings.limits.busy_timeout,
        secrets: probe.supervision.secrets.clone(),
        bell: ctx.settings.notify.bell,
        colour: no_color.as_deref().is_none_or(str::is_empty),
        runner_names: ctx.runner_names(),
        editor,
        budget: ctx.settings.spend.budget,
        engine: Box::new(move || engine_config(&factory_ctx, &factory_plan, parallel)),
    };
    weft_tui::run(options).map_err(|e| match e {
        weft_tui::TuiError::Engine(error) => CliError::from(error),
        other => CliError::new(other.to_string()),
    })
}

/// The configuration `weft run` would use, with the TUI ringing its own bell. Isolated
/// as `weft run` decides it, without its notice (the screen is the TUI's).
fn engine_config(
    ctx: &Ctx,
    plan_id: &str,
    parallel: Option<u32>,
) -> Result<weft_engine::EngineConfig, String> {
    let isolated = ctx.settings.isolation()
        && match weft_engine::isolation_unavailable(&ctx.workspace.root, &ctx.settings.repos()) {
            None => true,
            Some(weft_engine::NoIsolation::NotARepository(_)) => false,
            Some(weft_engine::NoIsolation::Refused { detail, hint }) => {
                return Err(format!("cannot run isolated: {detail} (hint: {hint})"));
            }
        };
    let mut config = ctx
        .engine_config(
            plan_id,
            RunOptions {
                isolated,
                stash: false,
                parallel,
                halt_on_failure: false,
                retry_failed: false,
            },
        )
        .map_err(|e| e.message)?;
    config.notify.sink = None;
    Ok(config)
}
