//! `git_log`, `git_show` and `git_diff`: the real git CLI, read-only subcommands only, with
//! revisions after `--end-of-options` and paths after `--` (literal pathspecs).

use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use super::args::{ArgError, Args, Kind, Param};
use super::paths::{Access, is_env_file};
use super::{Approver, Gate, Research, Step, denied_text};
use crate::log::StepOutcome;

const DEFAULT_LOG: u64 = 20;
const MAX_LOG: u64 = 50;

pub(crate) const GIT_LOG_DESCRIPTION: &str = "Show commit history (`git log`): one line per commit with short hash, date, author \
     and subject, newest first. Optionally for one revision range and/or one path.";

pub(crate) const GIT_LOG_PARAMS: &[Param] = &[
    Param {
        name: "path",
        kind: Kind::Str,
        required: false,
        description: "Only commits touching this file or directory (inside the workspace).",
    },
    Param {
        name: "max_count",
        kind: Kind::Int {
            min: 1,
            max: MAX_LOG,
        },
        required: false,
        description: "How many commits; default 20, at most 50.",
    },
    Param {
        name: "rev",
        kind: Kind::Str,
        required: false,
        description: "A revision or range, e.g. \"main\", \"v1.2..HEAD\"; default HEAD.",
    },
];

pub(crate) const GIT_SHOW_DESCRIPTION: &str = "Show one commit (`git show`): message, changed-file summary and patch. `rev` may also \
     be `REV:path` to print a file as it was at that revision.";

pub(crate) const GIT_SHOW_PARAMS: &[Param] = &[
    Param {
        name: "rev",
        kind: Kind::Str,
        required: true,
        description: "A commit (hash, branch, tag, HEAD~2) or REV:path.",
    },
    Param {
        name: "path",
        kind: Kind::Str,
        required: false,
        description: "Limit the patch to this file or directory (inside the workspace).",
    },
];

pub(crate) const GIT_DIFF_DESCRIPTION: &str = "Show a diff (`git diff`) with a changed-file summary. Without `from`: the uncommitted \
     changes (working tree and index against HEAD). With `from`: from that revision to the \
     working tree, or to `to`.";

pub(crate) const GIT_DIFF_PARAMS: &[Param] = &[
    Param {
        name: "from",
        kind: Kind::Str,
        required: false,
        description: "The revision to compare from; default HEAD.",
    },
    Param {
        name: "to",
        kind: Kind::Str,
        required: false,
        description: "The revision to compare to; default the working tree. Needs `from`.",
    },
    Param {
        name: "path",
        kind: Kind::Str,
        required: false,
        description: "Limit the diff to this file or directory (inside the workspace).",
    },
];

/// Checks a revision argument: not empty, not an option, no control characters.
fn check_rev(args: &Args, name: &str, rev: &str) -> Result<(), ArgError> {
    if rev.trim().is_empty() {
        return Err(args.invalid(format!("argument `{name}` is empty")));
    }
    if rev.starts_with('-') {
        return Err(args.invalid(format!(
            "argument `{name}` cannot start with `-` (git would read it as an option); give a \
             revision such as HEAD~1, a branch or a commit hash"
        )));
    }
    if rev.chars().any(char::is_control) || rev.len() > 512 {
        return Err(args.invalid(format!("argument `{name}` is not a revision")));
    }
    Ok(())
}

/// What a git call may be about after checks: the pathspec and the approval decision.
struct Target {
    pathspec: Option<String>,
    decision: Option<weft_core::approval::Decision>,
}

/// Checks a path argument (inside the workspace; `.env*` asks) and any `REV:path` in `revs`.
/// `Err` is the finished step.
fn target(
    research: &Research,
    args: &Args,
    path: Option<&str>,
    revs: &[&str],
    approver: &mut dyn Approver,
    input: &str,
) -> Result<Result<Target, Step>, ArgError> {
    let mut decision = None;
    let mut pathspec = None;
    // `REV:path` prints a file's content: a `.env*` file asks like a read.
    for rev in revs {
        let Some((_, file)) = rev.rsplit_once(':') else {
            continue;
        };
        let file = file.strip_prefix("./").unwrap_or(file);
        if Path::new(file).file_name().is_some_and(is_env_file) {
            let Ok(located) = research.locate(file) else {
                continue;
            };
            match research.gate(&located, Access::Read, approver) {
                Gate::Open => {}
                Gate::Allowed(d) => decision = Some(d),
                Gate::Denied(d) => {
                    let text = denied_text(&format!("showing {rev}"), &d);
                    return Ok(Err(
                        Step::new(input, StepOutcome::Denied, text).with_decision(Some(d))
                    ));
                }
            }
        }
    }
    if let Some(path) = path {
        if path.starts_with('-') {
            return Err(args.invalid(
                "argument `path` cannot start with `-`; prefix it with ./ if the file name does",
            ));
        }
        let located = match research.locate(path) {
            Ok(located) => located,
            Err(refusal) => return Ok(Err(Step::refused(input, refusal))),
        };
        let Some(relative) = located.relative.clone().filter(|_| located.lexical_inside) else {
            return Ok(Err(Step::refused(
                input,
                format!(
                    "{} is outside the workspace; git only sees the workspace's repository",
                    located.lexical.display()
                ),
            )));
        };
        if located.env_file {
            match research.gate(&located, Access::Read, approver) {
                Gate::Open => {}
                Gate::Allowed(d) => decision = Some(d),
                Gate::Denied(d) => {
                    let text = denied_text(&format!("the history of {relative}"), &d);
                    return Ok(Err(
                        Step::new(input, StepOutcome::Denied, text).with_decision(Some(d))
                    ));
                }
            }
        }
        pathspec = Some(relative);
    }
    Ok(Ok(Target { pathspec, decision }))
}

/// Runs `git -C WORKSPACE --no-pager --literal-pathspecs -c color.ui=never ARGS`.
fn run_git(research: &Research, input: &str, args: Vec<OsString>, empty: &str) -> Step {
    let workspace = research.workspace();
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(workspace)
        .args(["--no-pager", "--literal-pathspecs", "-c", "color.ui=never"])
        .args(["-c", "core.quotepath=off"])
        .args(args);
    let config = &research.config;
    let (out, mut text) = match research.run_masked(command) {
        Ok(done) => done,
        Err(e) => return Step::failure(input, format!("cannot run git: {e}")),
    };
    if out.truncated {
        let _ = write!(
            text,
            "\n[output cut at {} bytes; narrow it with `path` or a smaller range]",
            config.max_output_bytes
        );
    }
    if out.timed_out {
        let _ = write!(
            text,
            "\n[git did not finish within {} s and was stopped]",
            config.command_timeout.as_secs()
        );
        return Step::failure(input, text);
    }
    let code = out.status.and_then(|s| s.code());
    if code == Some(0) || (out.truncated && code.is_none()) {
        if text.trim().is_empty() {
            text = empty.to_owned();
        }
        Step::success(input, text)
    } else {
        let code = code.map_or_else(|| "a signal".to_owned(), |c| c.to_string());
        Step::failure(
            input,
            format!("{}\n[git exited with {code}]", text.trim_end()),
        )
    }
}

fn push_pathspec(args: &mut Vec<OsString>, pathspec: Option<String>) {
    args.push("--".into());
    if let Some(pathspec) = pathspec {
        args.push(pathspec.into());
    }
}

pub(crate) fn git_log(
    research: &Research,
    args: &Args,
    approver: &mut dyn Approver,
) -> Result<Step, ArgError> {
    let path = args.string("path")?;
    let max_count = args.int("max_count")?.unwrap_or(DEFAULT_LOG);
    let rev = args.string("rev")?;
    let mut input = "git_log".to_owned();
    if let Some(rev) = &rev {
        let _ = write!(input, " {rev}");
    }
    if let Some(path) = &path {
        let _ = write!(input, " -- {path}");
    }
    let _ = write!(input, " -n {max_count}");
    if let Some(rev) = &rev {
        check_rev(args, "rev", rev)?;
    }
    let revs: Vec<&str> = rev.as_deref().into_iter().collect();
    let target = match target(research, args, path.as_deref(), &revs, approver, &input)? {
        Ok(target) => target,
        Err(step) => return Ok(step),
    };
    let mut git: Vec<OsString> = vec![
        "log".into(),
        "--no-color".into(),
        "--date=short".into(),
        "--format=%h %ad %an: %s".into(),
        format!("--max-count={max_count}").into(),
    ];
    if let Some(rev) = rev {
        git.push("--end-of-options".into());
        git.push(rev.into());
    }
    push_pathspec(&mut git, target.pathspec);
    Ok(run_git(research, &input, git, "(no commits)").with_decision(target.decision))
}

pub(crate) fn git_show(
    research: &Research,
    args: &Args,
    approver: &mut dyn Approver,
) -> Result<Step, ArgError> {
    let rev = args.required_string("rev")?;
    let path = args.string("path")?;
    let mut input = format!("git_show {rev}");
    if let Some(path) = &path {
        let _ = write!(input, " -- {path}");
    }
    check_rev(args, "rev", &rev)?;
    let target = match target(research, args, path.as_deref(), &[&rev], approver, &input)? {
        Ok(target) => target,
        Err(step) => return Ok(step),
    };
    let mut git: Vec<OsString> = vec![
        "show".into(),
        "--no-color".into(),
        "--no-ext-diff".into(),
        "--no-textconv".into(),
        "--stat".into(),
        "--patch".into(),
        "--format=fuller".into(),
        "--end-of-options".into(),
        rev.into(),
    ];
    push_pathspec(&mut git, target.pathspec);
    Ok(run_git(research, &input, git, "(nothing to show)").with_decision(target.decision))
}

pub(crate) fn git_diff(
    research: &Research,
    args: &Args,
    approver: &mut dyn Approver,
) -> Result<Step, ArgError> {
    let from = args.string("from")?;
    let to = args.string("to")?;
    let path = args.string("path")?;
    let mut input = format!("git_diff {}", from.as_deref().unwrap_or("HEAD"));
    if let Some(to) = &to {
        let _ = write!(input, "..{to}");
    }
    if let Some(path) = &path {
        let _ = write!(input, " -- {path}");
    }
    if to.is_some() && from.is_none() {
        return Err(args.invalid("argument `to` needs `from` (the revision to compare from)"));
    }
    let from = from.unwrap_or_else(|| "HEAD".to_owned());
    check_rev(args, "from", &from)?;
    if let Some(to) = &to {
        check_rev(args, "to", to)?;
    }
    let mut revs = vec![from.as_str()];
    revs.extend(to.as_deref());
    let target = match target(research, args, path.as_deref(), &revs, approver, &input)? {
        Ok(target) => target,
        Err(step) => return Ok(step),
    };
    let mut git: Vec<OsString> = vec![
        "diff".into(),
        "--no-color".into(),
        "--no-ext-diff".into(),
        "--no-textconv".into(),
        "--stat".into(),
        "--patch".into(),
        "--end-of-options".into(),
        from.into(),
    ];
    if let Some(to) = to {
        git.push(to.into());
    }
    push_pathspec(&mut git, target.pathspec);
    Ok(run_git(research, &input, git, "(no differences)").with_decision(target.decision))
}
