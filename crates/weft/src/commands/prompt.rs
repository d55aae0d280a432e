//! `weft prompt N`: preview what a task would be handed and how its runner is started.

use std::fmt::Write as _;

use crate::cli::Globals;
use crate::commands::{print_json, stdout};
use crate::context::{Ctx, RunOptions};
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The task: order number, #order, id or id prefix.
    pub task: String,
    /// Print a JSON object.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let store = ctx.store_with_plans()?;
    let plan = store.plan(&ctx.plan_id(&store)?)?;
    let config = ctx.engine_config(&plan.id, RunOptions::default())?;
    let preview = weft_engine::preview::preview(&config, &plan, &args.task)?;
    if args.json {
        return print_json(&preview);
    }
    let mut text = String::new();
    let _ = writeln!(text, "runner:  {}", preview.runner);
    let _ = writeln!(
        text,
        "command: {} {}",
        preview.program,
        preview.args.join(" ")
    );
    let _ = writeln!(text, "cwd:     {}", preview.cwd);
    let _ = writeln!(text, "prompt:  via {}", preview.prompt_via);
    let limits = &preview.limits;
    match &limits.problem {
        Some(problem) => {
            let _ = writeln!(text, "limits:  it would not start: {problem}");
        }
        None => {
            let _ = writeln!(text, "limits:  {}; {}", limits.timeout, limits.idle_timeout);
        }
    }
    let budget = weft_core::spend::Budget {
        usd: limits.budget_usd,
        tokens: limits.budget_tokens,
    };
    if budget.is_set() {
        let _ = writeln!(
            text,
            "budget:  {} over all its attempts",
            [
                budget
                    .usd
                    .map(|u| format!("budget_usd = {}", weft_core::spend::usd(u))),
                budget.tokens.map(|t| format!("budget_tokens = {t}")),
            ]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(", ")
        );
    }
    match preview.confinement.mode.as_str() {
        "landlock" => {
            let _ = writeln!(text, "confine: landlock; it may write only:");
            for path in &preview.confinement.write_paths {
                let _ = writeln!(text, "  {path}");
            }
        }
        "off" => {
            let _ = writeln!(
                text,
                "confine: off (confine = \"off\"): it may write anywhere you can"
            );
        }
        _ => {
            let _ = writeln!(
                text,
                "confine: unavailable (this kernel does not enforce Landlock): it may write anywhere you can"
            );
        }
    }
    if !preview.env.is_empty() {
        let _ = writeln!(
            text,
            "env:     exactly these ({} of your variables withheld; the env_pass setting passes more)",
            preview.env_withheld
        );
        for (name, value) in &preview.env {
            let _ = writeln!(text, "  {name}={value}");
        }
    }
    let _ = writeln!(
        text,
        "(the marker and session id shown are placeholders; each attempt gets fresh ones)"
    );
    let _ = writeln!(text, "--- prompt");
    text.push_str(&preview.prompt);
    if !preview.prompt.ends_with('\n') {
        text.push('\n');
    }
    // The prompt holds its dependencies' output tails (agent text) and the plan's own
    // text: shown with control sequences escaped.
    stdout(&crate::render::safe(&text))
}
