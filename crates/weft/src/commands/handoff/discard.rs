//! `weft handoff discard [--yes]`: throw the run away, keeping its tip under
//! `refs/weft/discarded/<run>` so landed work is never lost outright; the tasks whose
//! work it held are pending again (the confirmation names them).

use crate::cli::Globals;
use crate::commands::JsonArg;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Discard without being asked.
    #[arg(long, short = 'y')]
    pub yes: bool,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let (mut store, plan_id, handoff) = super::open(globals)?;
    let run_id = handoff.run.id.clone();
    let reset = handoff.discarded_tasks(&store, &plan_id)?;
    let question = if reset.is_empty() {
        format!("discard run {run_id} and its branches")
    } else {
        format!(
            "discard run {run_id} and its branches, and put {} task(s) back to pending ({})",
            reset.len(),
            weft_engine::control::list_tasks(&reset)
        )
    };
    super::confirm(&question, args.yes)?;
    let lines = handoff.discard(&mut store, &plan_id)?;
    super::report(&run_id, "discard", &lines, args.output)
}
