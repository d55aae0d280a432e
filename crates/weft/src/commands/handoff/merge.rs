//! `weft handoff merge [--yes]`: merge the run branch into the checked-out branch, after a
//! preflight; nothing is merged when it finds a problem.

use crate::cli::Globals;
use crate::commands::stdout;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Merge without being asked.
    #[arg(long, short = 'y')]
    pub yes: bool,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let (mut store, plan_id, handoff) = super::open(globals)?;
    super::confirm(
        &format!(
            "merge {} into your checked-out branch",
            handoff.integration_branch
        ),
        args.yes,
    )?;
    let lines = handoff.merge(&mut store, &plan_id)?;
    stdout(&format!("{}\n", lines.join("\n")))
}
