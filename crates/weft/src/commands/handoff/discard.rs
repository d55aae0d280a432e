//! `weft handoff discard [--yes]`: throw the run away, keeping its tip under
//! `refs/weft/discarded/<run>` so landed work is never lost outright.

use crate::cli::Globals;
use crate::commands::stdout;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Discard without being asked.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let (mut store, plan_id, handoff) = super::open(globals)?;
    super::confirm(
        &format!("discard run {} and its branches", handoff.run.id),
        args.yes,
    )?;
    let lines = handoff.discard(&mut store, &plan_id)?;
    stdout(&format!("{}\n", lines.join("\n")))
}
