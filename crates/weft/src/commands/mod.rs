//! One module per command; each has its clap `Args` and a `run` function.

pub mod approvals;
pub mod attach;
pub mod cancel;
pub mod complete;
pub mod completions;
pub mod config;
pub mod control;
pub mod demo;
pub mod events;
pub mod evidence;
pub mod force_start;
pub mod handoff;
pub mod init;
pub mod log;
pub mod man;
pub mod manual;
pub mod plan;
pub mod prompt;
pub mod rearm;
pub mod repair;
pub mod retry;
pub mod run;
pub mod runners;
pub mod serve;
pub mod sessions;
pub mod skip;
pub mod status;
pub mod stop;
pub mod task;
pub mod transcript;
pub mod tui;
pub mod uncomplete;
pub mod verify;

use std::io::Write;

use crate::cli::{Cli, Command};
use crate::error::CliResult;

pub fn run(cli: Cli) -> CliResult {
    let globals = &cli.globals;
    match cli.command {
        Command::Init(args) => init::run(args, globals),
        Command::Plan(args) => plan::run(args, globals),
        Command::Status(args) => status::run(args, globals),
        Command::Task(args) => task::run(args, globals),
        Command::Sessions(args) => sessions::run(args, globals),
        Command::Config(args) => config::run(args, globals),
        Command::Demo(args) => demo::run(args, globals),
        Command::Run(args) => run::run(args, globals),
        Command::Retry(args) => retry::run(args, globals),
        Command::Rearm(args) => rearm::run(args, globals),
        Command::Complete(args) => complete::run(args, globals),
        Command::Uncomplete(args) => uncomplete::run(args, globals),
        Command::ForceStart(args) => force_start::run(args, globals),
        Command::Skip(args) => skip::run(args, globals),
        Command::Cancel(args) => cancel::run(args, globals),
        Command::Stop(args) => stop::run(args, globals),
        Command::Log(args) => log::run(args, globals),
        Command::Prompt(args) => prompt::run(args, globals),
        Command::Runners(args) => runners::run(args, globals),
        Command::Handoff(args) => handoff::run(args, globals),
        Command::Repair(args) => repair::run(args, globals),
        Command::Manual(args) => manual::run(args, globals),
        Command::Transcript(args) => transcript::run(args, globals),
        Command::Approvals(args) => approvals::run(args, globals),
        Command::Completions(args) => completions::run(args),
        Command::Man(args) => man::run(args),
        Command::Events(args) => events::run(args, globals),
        Command::Evidence(args) => evidence::run(args, globals),
        Command::Serve(args) => serve::run(args, globals),
        Command::Tui(args) => tui::run(args, globals),
        Command::Attach(args) => attach::run(args, globals),
        Command::Verify(args) => verify::run(args, globals),
    }
}

/// Write data to stdout; a closed pipe (`weft status | head`) is not an error.
pub fn stdout(text: &str) -> CliResult {
    let mut out = anstream::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

// The `--json` flag of every command that reports something. (Not a doc comment: a
// flattened struct's doc would become the `about` of the command that flattens it, which
// clap's `defer` applies after the command's own; see `cli::Command`.)
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct JsonArg {
    /// Print the result as JSON on stdout (notes stay on stderr; an error is one line of
    /// JSON on stderr, with the same exit code).
    #[arg(long)]
    pub json: bool,
}

/// Write `value` as pretty JSON and a newline (the `--json` form of every command).
pub fn print_json(value: &impl serde::Serialize) -> CliResult {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| {
        crate::error::CliError::new(format!("cannot encode the output as JSON: {e}"))
    })?;
    text.push('\n');
    stdout(&text)
}

/// The text report of a command: its lines on stdout, or with `--json` on stderr (for the
/// person), since stdout then carries only the JSON result.
pub fn report_lines(lines: &[String], json: bool) -> CliResult {
    if json {
        for line in lines {
            crate::render::note(line);
        }
        return Ok(());
    }
    let mut text = lines.join("\n");
    text.push('\n');
    stdout(&text)
}

/// Print a plan map on stdout. Where colour would be stripped (not a terminal,
/// `NO_COLOR`), the map is rendered without it and written through a buffer, not
/// filtered: the same bytes, without scanning a large plan's map for escape codes.
pub fn print_plan_map(
    plan: crate::render::PlanView<'_>,
    default_runner: &str,
    usage: &std::collections::HashMap<String, crate::render::TaskUsage>,
) -> CliResult {
    let raw = std::io::stdout();
    if anstream::AutoStream::choice(&raw) != anstream::ColorChoice::Never {
        return stdout(&styled(|out| {
            crate::render::plan_map(out, plan, default_runner, usage)
        }));
    }
    let mut out = bulk_stdout();
    match crate::render::plan_map_styled(&mut out, plan, default_runner, usage, false)
        .and_then(|()| out.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// The pipe size [`bulk_stdout`] asks for: the default `/proc/sys/fs/pipe-max-size`, so
/// any user may.
const PIPE_SIZE: i32 = 1024 * 1024;

/// Standard output for a large write (a plan map, status JSON), in 64 KiB blocks. It goes
/// to a duplicate of the descriptor, not through std's `Stdout`, whose line buffer searches
/// every block for its last newline (a twentieth of `weft status --json` on 10,000 tasks);
/// what std had buffered is flushed first, so the order of the output holds. If the
/// descriptor cannot be duplicated, std's `Stdout` it is.
///
/// When standard output is a pipe, it is grown to [`PIPE_SIZE`] first (where the kernel
/// allows; otherwise it stays as it is): a pipe holds 64 KiB by default, so 2.6 MB of
/// status JSON took forty turns of writer and reader, each waiting on the other. With
/// 1 MiB, three: `weft status --json` on 10,000 tasks read through a pipe took a tenth
/// less time.
pub fn bulk_stdout() -> std::io::BufWriter<Box<dyn Write>> {
    use std::os::fd::AsFd as _;
    let mut stdout = std::io::stdout();
    // Fails on anything but a pipe, or past the user's pipe allowance: then as it is.
    let _ = nix::fcntl::fcntl(
        stdout.as_fd(),
        nix::fcntl::FcntlArg::F_SETPIPE_SZ(PIPE_SIZE),
    );
    let raw: Box<dyn Write> = match stdout
        .flush()
        .and_then(|()| stdout.as_fd().try_clone_to_owned())
    {
        Ok(fd) => Box::new(std::fs::File::from(fd)),
        Err(_) => Box::new(stdout.lock()),
    };
    std::io::BufWriter::with_capacity(64 * 1024, raw)
}

/// Render into a buffer with colour codes that anstream strips when it should.
pub fn styled(render: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut buffer = Vec::new();
    render(&mut buffer).expect("writing to memory cannot fail");
    String::from_utf8_lossy(&buffer).into_owned()
}
