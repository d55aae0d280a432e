//! `weft status`: the plan map of the current plan.

use std::io::Write;

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
        // JSON carries no colour: write it straight out, not through the colour filter.
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        let written = serde_json::to_writer(&mut out, &plan_json(&plan, default_runner))
            .map_err(std::io::Error::from)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush());
        match written {
            Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
            _ => Ok(()),
        }
    } else {
        stdout(&styled(|out| plan_map(out, &plan, default_runner)))
    }
}
