//! `weft completions SHELL`: the shell completion script, generated from the command line
//! definition (so it never drifts from the flags weft takes).

use clap::CommandFactory;

use crate::cli::WholeCli;
use crate::commands::stdout;
use crate::error::CliResult;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to complete for. Install e.g. with
    /// `weft completions bash > ~/.local/share/bash-completion/completions/weft`, or
    /// `weft completions zsh > ~/.zfunc/_weft`.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

pub fn run(args: Args) -> CliResult {
    let mut command = WholeCli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut command, "weft", &mut script);
    stdout(&String::from_utf8_lossy(&script))
}
