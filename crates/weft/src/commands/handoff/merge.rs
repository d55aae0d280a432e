//! `weft handoff merge [--yes]`: merge the run branch into the checked-out branch, after a
//! preflight; nothing is merged when it finds a problem.

use crate::cli::Globals;
use crate::commands::JsonArg;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Merge without being asked.
    #[arg(long, short = 'y')]
    pub yes: bool,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let (mut store, plan_id, handoff) = super::open(globals)?;
    let run_id = handoff.run.id.clone();
    super::confirm(
        &format!(
            "merge {} into your checked-out branch",
            handoff.integration_branch
        ),
        args.yes,
    )?;
    let lines = handoff.merge(&mut store, &plan_id)?;
    super::report(&run_id, "merge", &lines, args.output)
}
