//! `weft runners`: every runner, whether it can be used here, and why not.

use std::fmt::Write as _;

use serde_json::json;
use weft_agents::preflight;

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

/// Whether `weft plan --planner NAME` has a transport for this runner (the agent CLIs
/// with a read-only mode weft speaks to); any runner can execute tasks.
fn can_plan(name: &str) -> bool {
    weft_engine::planning::PlannerChoice::parse(name)
        .is_some_and(|choice| !matches!(choice, weft_engine::planning::PlannerChoice::OpenAi))
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let (registry, broken) = ctx.registry();
    for error in &broken {
        note(&format!("warning: runner manifest skipped: {error}"));
    }
    let path = std::env::var_os("PATH");
    let checks: Vec<(String, String, preflight::Availability)> = registry
        .iter()
        .map(|loaded| {
            (
                loaded.manifest.name().to_owned(),
                loaded.origin.to_string(),
                preflight::check(
                    &loaded.manifest,
                    path.as_deref(),
                    weft_engine::defaults::PREFLIGHT_TIMEOUT,
                ),
            )
        })
        .collect();
    if args.json {
        let rows: Vec<serde_json::Value> = checks
            .iter()
            .map(|(name, origin, a)| {
                json!({
                    "name": name,
                    "origin": origin,
                    "available": a.available,
                    "program": a.program,
                    "version": a.version,
                    "reason": a.reason,
                    "can_plan": can_plan(name),
                })
            })
            .collect();
        return print_json(&rows);
    }
    let width = checks.iter().map(|(n, _, _)| n.len()).max().unwrap_or(6);
    let mut text = String::new();
    for (name, origin, availability) in &checks {
        if availability.available {
            let version = availability.version.as_deref().unwrap_or("version unknown");
            let plans = if can_plan(name) { ", can plan" } else { "" };
            let _ = writeln!(
                text,
                "{name:<width$}  available    {version}  ({origin}{plans})"
            );
        } else {
            let reason = availability.reason.as_deref().unwrap_or("unavailable");
            let _ = writeln!(text, "{name:<width$}  unavailable  {reason}  ({origin})");
        }
    }
    stdout(&text)
}
