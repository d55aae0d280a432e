//! `weft status`: the plan map of the current plan.

use crate::cli::Globals;
use crate::commands::{stdout, styled};
use crate::context::Ctx;
use crate::error::CliResult;
use crate::render::{plan_json, plan_map};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON object instead of the map.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let store = ctx.store_with_plans()?;
    let plan = store.plan(&ctx.plan_id(&store)?)?;
    let default_runner = ctx.settings.runner();
    if args.json {
        let mut text = serde_json::to_string(&plan_json(&plan, default_runner))
            .expect("plan JSON always serializes");
        text.push('\n');
        stdout(&text)
    } else {
        stdout(&styled(|out| plan_map(out, &plan, default_runner)))
    }
}
