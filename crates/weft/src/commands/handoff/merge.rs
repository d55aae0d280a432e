//! `weft handoff merge [--yes] [--abort]`: merge the run branch into the checked-out
//! branch, after a preflight; nothing is merged when it finds a problem.
//!
//! The merge is computed first, journaled, then applied; a Ctrl-C (or SIGTERM, SIGHUP)
//! while it runs is held back until the checkout is fully merged, or, before anything is
//! written, stops it with the checkout untouched. Run again after a kill, it finishes the
//! journaled merge; `--abort` puts the checkout back as it was.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use weft_engine::Interrupt;
use weft_engine::handoff::{AbortReport, MergeReport};

use crate::cli::Globals;
use crate::commands::{JsonArg, print_json, report_lines};
use crate::error::{CliError, CliResult, EXIT_INTERRUPTED};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Merge without being asked.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Undo a handoff merge that was interrupted while writing your checkout: the
    /// checkout and the branch are put back as they were; the run stays open.
    #[arg(long)]
    pub abort: bool,
    #[command(flatten)]
    pub output: JsonArg,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let interrupt = defer_signals();
    let (mut store, plan_id, handoff) = super::open(globals)?;
    let run_id = handoff.run.id.clone();
    if args.abort {
        let report = handoff.abort_merge()?;
        report_lines(&abort_lines(&report), args.output.json)?;
        return if args.output.json {
            print_json(&report)
        } else {
            Ok(())
        };
    }
    let pending = handoff.merge_pending()?;
    let question = if pending {
        format!("finish the interrupted merge of run {run_id} into your checked-out branch")
    } else {
        format!(
            "merge {} into your checked-out branch",
            handoff.integration_branch
        )
    };
    super::confirm(&question, args.yes)?;
    let result = handoff.merge(&mut store, &plan_id, Some(&interrupt));
    let report = match result {
        Ok(report) => report,
        Err(error) if interrupt.is_raised() => {
            return Err(CliError::from_error(error).with_code(EXIT_INTERRUPTED));
        }
        Err(error) => return Err(error.into()),
    };
    report_lines(&merge_lines(&report), args.output.json)?;
    if args.output.json {
        print_json(&report)?;
    }
    if report.interrupted {
        return Err(CliError::new(
            "interrupted: the merge was being written into your checkout, so it was finished first",
        )
        .with_code(EXIT_INTERRUPTED));
    }
    Ok(())
}

/// From here on, SIGINT, SIGTERM and SIGHUP only raise the returned flag: the merge looks
/// at it before it writes anything and finishes what it has begun writing.
fn defer_signals() -> Interrupt {
    let interrupt = Interrupt::new();
    let flag: Arc<AtomicBool> = interrupt.flag();
    for signal in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        // Without the handler the signal would end weft mid-write; the journal would
        // still account for that, so a failure to install is not fatal.
        let _ = signal_hook::flag::register(signal, Arc::clone(&flag));
    }
    debug_assert!(!flag.load(Ordering::Relaxed));
    interrupt
}

/// The person's lines of a [`MergeReport`].
pub fn merge_lines(report: &MergeReport) -> Vec<String> {
    report.lines()
}

/// The person's lines of an [`AbortReport`].
pub fn abort_lines(report: &AbortReport) -> Vec<String> {
    report.lines()
}
