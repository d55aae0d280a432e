//! The `weft` binary: parse the command line, run one command, render its error.

mod cli;
mod commands;
mod context;
mod error;
mod interrupt;
mod planner_ui;
mod progress;
mod render;
mod settings;
mod workspace;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

fn main() -> ExitCode {
    // A per-attempt supervisor (weft re-executes itself for every process of a run):
    // dispatched before anything else is parsed or set up.
    let mut args = std::env::args_os();
    if args
        .nth(1)
        .is_some_and(|a| a == weft_engine::contain::SUPERVISOR_ARG)
    {
        return weft_engine::contain::supervisor_main(args);
    }
    let matches = match cli::Cli::command().try_get_matches() {
        Ok(matches) => matches,
        // A usage error of a command given --json is a JSON line too (exit 2 either way);
        // help and version are not errors and print as usual.
        Err(error) if error.use_stderr() && std::env::args_os().any(|a| a == "--json") => {
            return error::usage_error(&error).report(true);
        }
        Err(error) => error.exit(),
    };
    // Known before the command runs, so even a failure to load settings is JSON.
    let json = cli::wants_json(&matches);
    let cli = match cli::Cli::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(error) => error.exit(),
    };
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => error.report(json),
    }
}
