//! `weft runners`: every runner, whether it can be used here, and why not.

use std::fmt::Write as _;

use weft_engine::runners::{self, RunnerReport};

use crate::cli::Globals;
use crate::commands::{print_json, stdout};
use crate::context::Ctx;
use crate::error::CliResult;
use crate::render::note;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print a JSON array.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let (registry, broken) = ctx.registry();
    for error in &broken {
        note(&format!("warning: runner manifest skipped: {error}"));
    }
    let path = std::env::var_os("PATH");
    let reports = runners::reports(
        &registry,
        path.as_deref(),
        weft_engine::defaults::PREFLIGHT_TIMEOUT,
    );
    if args.json {
        return print_json(&reports);
    }
    stdout(&table(&reports))
}

/// One line per runner: name, availability, version or reason, and where it came from.
fn table(reports: &[RunnerReport]) -> String {
    let width = reports.iter().map(|r| r.name.len()).max().unwrap_or(6);
    let mut text = String::new();
    for report in reports {
        let RunnerReport { name, origin, .. } = report;
        if report.available {
            let version = report.version.as_deref().unwrap_or("version unknown");
            let plans = if report.can_plan { ", can plan" } else { "" };
            let _ = writeln!(
                text,
                "{name:<width$}  available    {version}  ({origin}{plans})"
            );
        } else {
            let reason = report.reason.as_deref().unwrap_or("unavailable");
            let _ = writeln!(text, "{name:<width$}  unavailable  {reason}  ({origin})");
        }
    }
    text
}
