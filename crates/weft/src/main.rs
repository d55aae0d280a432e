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

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => error.report(),
    }
}
