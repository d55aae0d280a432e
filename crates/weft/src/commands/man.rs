//! `weft man [COMMAND...]`: the manual page (roff) of weft or of one of its commands,
//! generated from the command line definition. Read it with `weft man | man -l -`.

use clap::CommandFactory;

use crate::cli::WholeCli;
use crate::commands::stdout;
use crate::error::{CliError, CliResult};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The command whose page to print, e.g. `task edit` (default: weft's own page, which
    /// lists every command).
    pub command: Vec<String>,
}

pub fn run(args: Args) -> CliResult {
    let mut command = WholeCli::command();
    command.build();
    let mut name = String::from("weft");
    for part in &args.command {
        let Some(sub) = command.find_subcommand(part).cloned() else {
            let known: Vec<&str> = command.get_subcommands().map(|c| c.get_name()).collect();
            let error = CliError::new(format!(
                "`{}` has no command {part:?}",
                name.replace('-', " ")
            ));
            return Err(if known.is_empty() {
                error.hint(format!(
                    "`weft man {}` is its page",
                    args.command[..args.command.len() - 1].join(" ")
                ))
            } else {
                error.hint(format!("its commands: {}", known.join(", ")))
            });
        };
        name = format!("{name}-{}", sub.get_name());
        command = sub.name(name.clone());
    }
    let mut page = Vec::new();
    clap_mangen::Man::new(command).render(&mut page)?;
    stdout(&String::from_utf8_lossy(&page))
}
