//! `weft verify`: run the `verify` commands on the current integration tip by hand.

use serde_json::json;

use crate::cli::Globals;
use crate::commands::{JsonArg, print_json, stdout};
use crate::context::{Ctx, RunOptions};
use crate::error::{CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let store = ctx.store_with_plans()?;
    let plan_id = ctx.plan_id(&store)?;
    drop(store);
    let options = RunOptions {
        isolated: true,
        ..RunOptions::default()
    };
    let config = ctx.engine_config(&plan_id, options)?;
    let found = weft_engine::verify_by_hand(&config)?;
    let short = found.tip.get(..12).unwrap_or(&found.tip).to_owned();
    if args.output.json {
        print_json(&json!({
            "plan": plan_id,
            "run": found.run_id,
            "tip": found.tip,
            "passed": found.failed.is_none(),
            "duration_ms": found.duration_ms,
            "failed": found.failed.as_ref().map(|f| json!({
                "command": f.command,
                "exit_code": f.exit_code,
                "output_tail": f.output_tail,
            })),
        }))?;
    }
    match found.failed {
        None => {
            if !args.output.json {
                stdout(&format!(
                    "verification passed on {short} in {:.1} s: it is the run's green tip\n",
                    found.duration_ms as f64 / 1000.0
                ))?;
            }
            Ok(())
        }
        Some(failed) => {
            let tail = weft_core::tail_chars(&failed.output_tail, 2000);
            Err(CliError::new(format!(
                "verification failed on {short}: `{}` {}\n{}",
                failed.command,
                match failed.exit_code {
                    Some(code) => format!("exited {code}"),
                    None => "did not finish".into(),
                },
                crate::render::safe(&tail)
            ))
            .hint("the next `weft run` runs it again and, if it still fails, bisects the landings since the last green tip and quarantines the culprit"))
        }
    }
}
