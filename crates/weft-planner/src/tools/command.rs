//! `run_command`: a shell line the command policy classifies as read-only, run in the
//! workspace with empty stdin, in its own process group, with a scrubbed environment.

use std::fmt::Write as _;
use std::process::Command;

use weft_core::approval::Subject;

use super::args::{ArgError, Args, Kind, Param};
use super::{Approver, Research, Step, denied_text, one_line};
use crate::command_policy::{AccessKind, Classification, Envelope, classify_with};
use crate::log::StepOutcome;

pub(crate) const RUN_COMMAND_DESCRIPTION: &str = "Run a read-only shell command in the workspace (e.g. `ls -la src`, `rg -n foo`, \
     `git log --oneline | head -5`, `wc -l src/*.rs`, `cargo metadata --no-deps`). Commands \
     that could write, delete, build, install, reach the network or run arbitrary code are \
     refused with the reason; variables and command substitution are refused too. Reading \
     outside the workspace asks the user first. Output is capped; stdin is empty.";

pub(crate) const RUN_COMMAND_PARAMS: &[Param] = &[Param {
    name: "command",
    kind: Kind::Str,
    required: true,
    description: "The shell command line.",
}];

pub(crate) fn run_command(
    research: &Research,
    args: &Args,
    approver: &mut dyn Approver,
) -> Result<Step, ArgError> {
    let line = args.required_string("command")?;
    let input = format!("run_command {}", one_line(&line, 400));
    if line.trim().is_empty() {
        return Err(args.invalid("argument `command` is empty"));
    }
    let envelope = Envelope {
        workspace: research.workspace().to_owned(),
        home: research.config.home.clone(),
        follow_symlinks: true,
    };
    let mut decision = None;
    match classify_with(&line, &envelope) {
        Classification::ReadOnly => {}
        Classification::Refused { reason } => {
            return Ok(Step::refused(
                input,
                format!("refused: {reason}. Nothing was run."),
            ));
        }
        Classification::NeedsApproval { accesses, reason } => {
            let mut asked: Vec<Subject> = Vec::new();
            for access in accesses {
                let subject = match access.kind {
                    AccessKind::Read => Subject::Read { path: access.path },
                    AccessKind::List => Subject::List { path: access.path },
                };
                if asked.contains(&subject) {
                    continue;
                }
                asked.push(subject.clone());
                let what = match &subject {
                    Subject::Read { path } => format!("reading {path}"),
                    Subject::List { path } => format!("listing {path}"),
                    Subject::Command { line } => format!("running {line}"),
                };
                let answer = approver.decide(subject);
                if !answer.allowed {
                    let text = format!("{} ({reason})", denied_text(&what, &answer));
                    return Ok(
                        Step::new(input, StepOutcome::Denied, text).with_decision(Some(answer))
                    );
                }
                decision = Some(answer);
            }
        }
    }
    Ok(execute(research, &line, &input).with_decision(decision))
}

/// Runs `sh -c LINE` in the workspace and reports output and exit code.
fn execute(research: &Research, line: &str, input: &str) -> Step {
    let mut command = Command::new("sh");
    command.arg("-c").arg(line);
    let config = &research.config;
    let (out, mut text) = match research.run_masked(command) {
        Ok(done) => done,
        Err(e) => return Step::failure(input, format!("cannot start the shell: {e}")),
    };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    if text.is_empty() {
        text.push_str("(no output)\n");
    }
    if out.truncated {
        let _ = writeln!(
            text,
            "[output cut at {} bytes; the command was stopped there. Narrow it (a path, `head`, \
             a tighter pattern)]",
            config.max_output_bytes
        );
    }
    if out.timed_out {
        let _ = write!(
            text,
            "[timed out after {} s; the command and everything it started were stopped]",
            config.command_timeout.as_secs()
        );
        return Step::failure(input, text);
    }
    if out.truncated {
        // What it printed up to the cap is the answer; its exit status (usually a signal)
        // says nothing more.
        text.push_str("(stopped at the output cap)");
        return Step::success(input, text);
    }
    match out.status.and_then(|s| s.code()) {
        Some(0) => {
            text.push_str("exit code 0");
            Step::success(input, text)
        }
        Some(code) => {
            let _ = write!(text, "exit code {code}");
            Step::failure(input, text)
        }
        None => {
            let signal = out
                .status
                .and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s))
                .map_or_else(|| "unknown".to_owned(), |s| s.to_string());
            let _ = write!(text, "killed by signal {signal}");
            Step::failure(input, text)
        }
    }
}
