//! The command line: global options and the list of commands.

use std::path::PathBuf;

use clap::{ArgMatches, Parser, Subcommand};

use crate::commands::{
    approvals, attach, cancel, complete, completions, config, demo, events, evidence, force_start,
    handoff, init, log, man, manual, plan, prompt, rearm, repair, retry, run, runners, serve,
    sessions, skip, status, stop, task, transcript, tui, uncomplete, verify,
};

/// weft turns a goal into a plan of coding-agent tasks, runs each task in a fresh agent
/// session, and judges it by evidence.
#[derive(Debug, Parser)]
#[command(name = "weft", version, propagate_version = true, max_term_width = 100)]
pub struct Cli {
    #[command(flatten)]
    pub globals: Globals,
    #[command(subcommand)]
    pub command: Command,
}

// `Cli` with every command's arguments built at once: what the completion scripts and the
// manual pages are made from (see `commands!`). Its doc comment is `Cli`'s: it is the
// text they show.
/// weft turns a goal into a plan of coding-agent tasks, runs each task in a fresh agent
/// session, and judges it by evidence.
#[derive(Debug, Parser)]
#[command(name = "weft", version, propagate_version = true, max_term_width = 100)]
pub struct WholeCli {
    #[command(flatten)]
    pub globals: Globals,
    #[command(subcommand)]
    pub command: WholeCommand,
}

/// Options every command takes.
#[derive(Debug, Clone, clap::Args)]
pub struct Globals {
    /// Workspace folder (default: the nearest folder up from here holding .weft/, weft.toml
    /// or .git).
    #[arg(long, global = true, env = "WEFT_WORKSPACE", value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    /// Plan to act on, by id or unambiguous prefix (default: the current plan).
    #[arg(long, global = true, env = "WEFT_PLAN", value_name = "ID")]
    pub plan: Option<String>,
    /// Override a setting for this command, e.g. `-c parallel=2` (see `weft config`).
    #[arg(
        short = 'c',
        long = "set",
        global = true,
        value_name = "KEY=VALUE",
        long_help = crate::settings::help()
    )]
    pub set: Vec<String>,
}

/// Declares the commands once, as two enums of the same variants: [`Command`], what weft
/// parses with, and [`WholeCommand`], what the completion scripts and the manual pages are
/// made from.
///
/// Why two: [`Command`] adds a command's own arguments to the parser only when it is the
/// command run (clap's `defer`): building all 33 commands' arguments up front was ~0.7 M
/// instructions and ~80 page faults of every `weft` process, a quarter of `weft
/// --version`. But with `defer`, clap's `help` command copies the commands before their
/// arguments (and their own commands) are added, so the completion scripts would lose
/// `weft help task add` and kin; [`WholeCommand`] is built whole, as before.
macro_rules! commands {
    ($($variants:tt)*) => {
        #[derive(Debug, Subcommand)]
        #[command(defer = true)]
        pub enum Command {
            $($variants)*
        }

        /// [`Command`] built whole (see `commands!`).
        #[derive(Debug, Subcommand)]
        pub enum WholeCommand {
            $($variants)*
        }
    };
}

commands! {
    /// Make this folder a weft workspace (optional: weft creates .weft/ on first write).
    Init(init::Args),
    /// Create a plan from a workflow file, export the current plan, or print the schema.
    Plan(plan::Args),
    /// Show the current plan: every task with its status, runner and dependencies.
    Status(status::Args),
    /// Add, remove, edit, reorder, re-wire, hold or release tasks.
    Task(task::Args),
    /// List, load or delete the plans stored in this workspace.
    Sessions(sessions::Args),
    /// Print every setting with its value and where it came from.
    Config(config::Args),
    /// Run the built-in demo plan (exec runner) in a fresh repository in a temporary folder.
    Demo(demo::Args),
    /// Start or continue the current plan's run.
    Run(run::Args),
    /// Run a finished task again: verdict cleared, blocked descendants released.
    Retry(retry::Args),
    /// Edit a task and run it again, in one step.
    Rearm(rearm::Args),
    /// Mark a task done by hand (its verdict says no verification ran).
    Complete(complete::Args),
    /// Take back a completion: the task is pending again.
    Uncomplete(uncomplete::Args),
    /// Run the `verify` commands on the run's integration tip by hand.
    Verify(verify::Args),
    /// Start a task now, ignoring its dependencies, hold and the slot cap.
    ForceStart(force_start::Args),
    /// Skip a task; it counts as met for its dependents.
    Skip(skip::Args),
    /// Cancel a task; a running one is killed with its whole process group.
    Cancel(cancel::Args),
    /// Stop the active run; running tasks are killed and marked interrupted.
    Stop(stop::Args),
    /// Show the raw output of a task's latest attempt.
    Log(log::Args),
    /// Preview what a task would be handed: prompt, command, folder, environment.
    Prompt(prompt::Args),
    /// List every runner with whether it is available here and, if not, why.
    Runners(runners::Args),
    /// End an isolated run: review, merge, discard or clean up.
    Handoff(handoff::Args),
    /// Give a conflicted task one repair attempt (isolated runs).
    Repair(repair::Args),
    /// Show a manual task's checklist and where to do it; tick steps with --done.
    Manual(manual::Args),
    /// Show the agent's own transcript of a task's latest attempt and its final answer.
    Transcript(transcript::Args),
    /// List the planner's open approval questions; answer one with `allow` or `deny`.
    Approvals(approvals::Args),
    /// Print the shell completion script for bash, zsh, fish, elvish or powershell.
    Completions(completions::Args),
    /// Print the manual page (roff) of weft or of one command, e.g. `weft man | man -l -`.
    Man(man::Args),
    /// Print the plan's event log; `weft events schema` prints the events' JSON Schema.
    Events(events::Args),
    /// Show a landing's evidence (its git note); `--check` finds landings without it.
    Evidence(evidence::Args),
    /// Serve the workspace's local API, live events and dashboard on 127.0.0.1.
    Serve(serve::Args),
    /// The terminal UI: the plan, the live agents and every control in one terminal.
    Tui(tui::Args),
    /// Follow the live attempt of a task as it prints (Ctrl-C detaches, the attempt goes on).
    Attach(attach::Args),
}

/// Whether the command being run was given `--json` (every command that reports something
/// takes it): then stdout carries only its result and an error is one line of JSON.
pub fn wants_json(matches: &ArgMatches) -> bool {
    let mut current = matches;
    loop {
        if let Ok(Some(true)) = current.try_get_one::<bool>("json") {
            return true;
        }
        match current.subcommand() {
            Some((_, sub)) => current = sub,
            None => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;

    /// Every command, and every flag and positional argument of every command, says what it
    /// is for in `--help` (and so in the man page and the shell completions).
    #[test]
    fn every_command_and_argument_has_help_text() {
        fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in command.get_arguments() {
                let id = arg.get_id().as_str();
                if matches!(id, "help" | "version") {
                    continue;
                }
                let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
                if help.trim().is_empty() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in command.get_subcommands() {
                let sub_path = format!("{path} {}", sub.get_name());
                if sub.get_name() == "help" {
                    continue;
                }
                let about = sub.get_about().map(ToString::to_string).unwrap_or_default();
                if about.trim().is_empty() {
                    missing.push(format!("{sub_path} (the command itself)"));
                }
                walk(sub, &sub_path, missing);
            }
        }
        let mut command = Cli::command();
        command.build();
        let mut missing = Vec::new();
        walk(&command, "weft", &mut missing);
        assert!(
            missing.is_empty(),
            "without help text:\n  {}",
            missing.join("\n  ")
        );
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
        WholeCli::command().debug_assert();
    }

    /// What weft parses with (each command's arguments deferred) and what its completion
    /// scripts and manual pages are made from (built whole) are one command line: every
    /// command's help, short and long, is the same in both, and so are the commands.
    #[test]
    fn the_deferred_command_line_is_the_whole_one() {
        fn helps(command: &mut clap::Command, path: &str, out: &mut Vec<(String, String)>) {
            out.push((path.to_owned(), command.render_help().to_string()));
            out.push((path.to_owned(), command.render_long_help().to_string()));
            for sub in command.get_subcommands_mut() {
                if sub.get_name() != "help" {
                    let sub_path = format!("{path} {}", sub.get_name());
                    helps(sub, &sub_path, out);
                }
            }
        }
        let (mut deferred, mut whole) = (Cli::command(), WholeCli::command());
        deferred.build();
        whole.build();
        let (mut parsed, mut documented) = (Vec::new(), Vec::new());
        helps(&mut deferred, "weft", &mut parsed);
        helps(&mut whole, "weft", &mut documented);
        assert!(parsed.len() > 100, "every command and its own commands");
        for ((path, parsed), (_, documented)) in parsed.iter().zip(&documented) {
            assert_eq!(parsed, documented, "`{path} --help`");
        }
        assert_eq!(parsed.len(), documented.len());
    }
}
