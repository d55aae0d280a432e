//! `weft evidence [REV]`: a landing's evidence, read from its git note under
//! `refs/notes/weft` (text, or `--json`); `weft evidence --check [RANGE]`: every landing of
//! a range whose note is missing, unreadable or records another tree than its commit's
//! (exit 1 when there is any); `weft evidence --schema`: the JSON Schema of a note.
//!
//! The default REV is the tip of the current run's integration branch; the default range
//! is that branch since the run's base. Everything a note holds that came from an agent or
//! a planner (titles, check names, reasons, paths) is shown with its control sequences
//! escaped (`render::safe`).

use std::fmt::Write as _;

use serde::Serialize;
use weft_core::note::{EvidenceNote, MarkerSource, VerificationResult};
use weft_engine::EngineError;
use weft_engine::evidence::{self, Finding, Landed, NoteState, Scope, Walk};

use crate::cli::Globals;
use crate::commands::{print_json, stdout};
use crate::context::Ctx;
use crate::error::{CliError, CliResult};
use crate::render::{minute, safe};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The landing commit (any revision; default: the tip of the current run's
    /// integration branch). With --check, a range `BASE..TIP` or a tip (default: the
    /// current run's integration branch since its base).
    pub rev: Option<String>,
    /// Report every landing of the range whose note is missing or whose recorded tree
    /// does not match its commit; exit status 1 when there is any.
    #[arg(long)]
    pub check: bool,
    /// Print the JSON Schema of an evidence note (schemas/evidence.schema.json).
    #[arg(long, conflicts_with_all = ["check", "rev"])]
    pub schema: bool,
    /// Print JSON: the landing and its note; with --check, every landing checked.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    if args.schema {
        return stdout(&EvidenceNote::json_schema());
    }
    let ctx = Ctx::load(globals)?;
    let store = ctx.store_if_any()?;
    let plan_id = match &store {
        Some(store) => ctx.plan_id(store).ok(),
        None => None,
    };
    let scope = evidence::scope(
        store.as_ref(),
        plan_id.as_deref(),
        &ctx.workspace.root,
        &ctx.workspace.state_dir(),
        &ctx.settings.repos(),
    )
    .map_err(|e| not_a_repository(e, &ctx))?;
    if args.check {
        check(&scope, args.rev.as_deref(), args.json)
    } else {
        show(&scope, args.rev.as_deref(), args.json)
    }
}

fn not_a_repository(error: EngineError, ctx: &Ctx) -> CliError {
    match error {
        EngineError::Isolation { detail, .. } => CliError::new(format!(
            "no evidence to read in {}: {detail}",
            ctx.workspace.root.display()
        ))
        .hint("evidence notes live in git (`refs/notes/weft`): run this in the repository of an isolated run"),
        other => other.into(),
    }
}

fn no_run() -> CliError {
    CliError::new("the current plan has no isolated run to read evidence from").hint(
        "name a commit (`weft evidence <REV>`) or a range (`weft evidence --check BASE..TIP`); \
         `weft run` starts an isolated run in a repository",
    )
}

fn no_commit(rev: &str) -> CliError {
    CliError::new(format!("`{}` names no commit here", safe(rev)))
        .hint("give a commit of the run's integration branch: `git log --first-parent weft/<run>/integration` lists its landings")
}

/// The commit REV names (default: the run's integration tip) with its note, and the
/// name of the repository it is in.
fn landing_at<'s>(scope: &'s Scope, rev: Option<&str>) -> CliResult<(&'s str, Landed)> {
    let (index, commit) = match rev {
        Some(rev) => scope.resolve(rev)?.ok_or_else(|| no_commit(rev))?,
        None => {
            let run = scope.run.as_ref().ok_or_else(no_run)?;
            scope.run_tip().ok_or_else(|| {
                CliError::new(format!("the integration branch {} is gone", run.branch))
                    .hint("name a commit: `weft evidence <REV>`")
            })?
        }
    };
    Ok((&scope.repos[index].0, scope.read(index, &commit)?))
}

#[derive(Serialize)]
struct Shown<'a> {
    repository: &'a str,
    commit: &'a str,
    tree: &'a str,
    subject: &'a str,
    tree_matches: bool,
    evidence: &'a EvidenceNote,
}

fn show(scope: &Scope, rev: Option<&str>, json: bool) -> CliResult {
    let (name, landed) = landing_at(scope, rev)?;
    let commit = &landed.commit;
    if !landed.is_landing() {
        return Err(CliError::new(format!(
            "commit {} ({:?}) is not a landing",
            commit.short(),
            safe(&landed.subject)
        ))
        .hint("a landing's merge commit starts `weft: land task N:` and carries Weft-* trailers; `git log --first-parent weft/<run>/integration` lists a run's landings"));
    }
    let note = match &landed.note {
        NoteState::Present(note) => note,
        NoteState::Missing => {
            return Err(CliError::new(format!(
                "landing {} ({:?}) has no evidence note",
                commit.short(),
                safe(&landed.subject)
            ))
            .hint("`weft run` writes the missing notes of the current run's landings; notes pushed elsewhere come back with `git fetch origin refs/notes/weft:refs/notes/weft`"));
        }
        NoteState::Unreadable(why) => {
            return Err(CliError::new(format!(
                "the note of landing {} is not readable evidence: {}",
                commit.short(),
                safe(why)
            ))
            .hint("`git notes --ref refs/notes/weft show <commit>` shows it as it is"));
        }
    };
    let tree_matches = note.tree == landed.tree.as_str();
    if json {
        return print_json(&Shown {
            repository: name,
            commit: commit.as_str(),
            tree: landed.tree.as_str(),
            subject: &landed.subject,
            tree_matches,
            evidence: note,
        });
    }
    stdout(&describe(&landed, note, tree_matches))
}

fn describe(landed: &Landed, note: &EvidenceNote, tree_matches: bool) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "landing   {}  {}",
        landed.commit.as_str(),
        safe(&landed.subject)
    );
    let tree = if tree_matches {
        format!("{} (the commit's)", note.tree)
    } else {
        format!(
            "{} — NOT the commit's tree {}: this note was copied or forged",
            safe(&note.tree),
            landed.tree.as_str()
        )
    };
    let _ = writeln!(text, "tree      {tree}");
    let _ = writeln!(
        text,
        "task      #{} {} ({})",
        note.task.order,
        safe(&note.task.title),
        safe(&note.task.id)
    );
    let _ = writeln!(
        text,
        "plan      {}  run {}",
        safe(&note.plan),
        safe(&note.run)
    );
    let _ = writeln!(
        text,
        "attempt   {} ({})  runner {}  model {}  effort {}  mode {}",
        note.attempt.number,
        safe(&note.attempt.id),
        safe(&note.runner),
        safe(note.model.as_deref().unwrap_or("default")),
        safe(note.effort.as_deref().unwrap_or("default")),
        safe(note.mode.as_deref().unwrap_or("default")),
    );
    let marker = match &note.marker {
        None => "none given (the exit code decided)".to_owned(),
        Some(found) => {
            let place = match found.found_in {
                MarkerSource::Stream => "in the stream",
                MarkerSource::Transcript => "in the transcript",
                MarkerSource::Both => "in the stream and the transcript",
            };
            match &found.view {
                Some(view) => format!("found {place} ({} view)", safe(view)),
                None => format!("found {place}"),
            }
        }
    };
    let _ = writeln!(text, "marker    {marker}");
    let outcome = match note.verdict.outcome {
        weft_core::VerdictOutcome::Pass => "pass",
        weft_core::VerdictOutcome::Fail => "fail",
    };
    let _ = writeln!(text, "verdict   {outcome}: {}", safe(&note.verdict.reason));
    let _ = writeln!(text, "checks");
    for check in &note.checks {
        let mark = if check.skipped {
            "-"
        } else if check.passed {
            "✓"
        } else {
            "✗"
        };
        let mut facts = Vec::new();
        if let Some(code) = check.exit_code {
            facts.push(format!("exit {code}"));
        }
        if let Some(ms) = check.duration_ms {
            facts.push(format!("{ms} ms"));
        }
        if check.skipped {
            facts.push("not consulted".to_owned());
        }
        let facts = if facts.is_empty() {
            String::new()
        } else {
            format!("  ({})", facts.join(", "))
        };
        let _ = writeln!(text, "  {mark} {}{facts}", safe(&check.name));
    }
    let verification = match &note.verification {
        None => "none yet".to_owned(),
        Some(v) => {
            let result = match v.result {
                VerificationResult::Passed => "passed",
                VerificationResult::Failed => "failed",
                VerificationResult::Flaky => "flaky",
            };
            let commands: Vec<String> = v
                .commands
                .iter()
                .map(|c| format!("`{}`", safe(c)))
                .collect();
            format!(
                "{result} on {} at {} ({})",
                safe(&v.tip),
                minute(v.at),
                commands.join(", ")
            )
        }
    };
    let _ = writeln!(text, "verified  {verification}");
    let tokens = |t: Option<u64>| t.map_or("?".to_owned(), |t| t.to_string());
    let cost = note
        .usage
        .cost_usd
        .map_or("cost unknown".to_owned(), |c| format!("${c:.4}"));
    let _ = writeln!(
        text,
        "usage     {} in, {} out tokens, {cost}",
        tokens(note.usage.input_tokens),
        tokens(note.usage.output_tokens)
    );
    let ended = note.ended_at.map_or("-".to_owned(), minute);
    let _ = writeln!(text, "time      {} to {ended}", minute(note.started_at));
    if let Some(path) = &note.transcript {
        let _ = writeln!(text, "transcript {}", safe(path));
    }
    text
}

#[derive(Serialize)]
struct Checked {
    repository: String,
    commit: String,
    subject: String,
    /// `ok`, `missing`, `wrong_tree` or `unreadable`.
    finding: &'static str,
    detail: Option<String>,
}

fn check(scope: &Scope, range: Option<&str>, json: bool) -> CliResult {
    let (walks, what) = match range {
        Some(range) => (vec![walk_of(scope, range)?], safe(range).into_owned()),
        None => {
            let run = scope.run.as_ref().ok_or_else(no_run)?;
            let walks = scope.run_walks();
            if walks.is_empty() {
                return Err(CliError::new(format!(
                    "the integration branch {} is gone",
                    run.branch
                ))
                .hint("name a range: `weft evidence --check BASE..TIP`"));
            }
            (walks, format!("{} since the run's base", run.branch))
        }
    };
    let mut rows = Vec::new();
    let mut cut = false;
    for walk in &walks {
        let name = &scope.repos[walk.repo].0;
        let (landed, was_cut) = scope.landings(walk)?;
        cut |= was_cut;
        for landing in landed.iter().rev() {
            let (finding, detail) = match landing.finding() {
                None => ("ok", None),
                Some(Finding::Missing) => ("missing", None),
                Some(Finding::WrongTree { recorded }) => (
                    "wrong_tree",
                    Some(format!(
                        "its note records tree {recorded}, the commit's tree is {}",
                        landing.tree.as_str()
                    )),
                ),
                Some(Finding::Unreadable(why)) => ("unreadable", Some(why)),
            };
            rows.push(Checked {
                repository: name.clone(),
                commit: landing.commit.as_str().to_owned(),
                subject: landing.subject.clone(),
                finding,
                detail,
            });
        }
    }
    let bad = rows.iter().filter(|r| r.finding != "ok").count();
    if json {
        print_json(&rows)?;
    } else {
        let mut text = String::new();
        for row in rows.iter().filter(|r| r.finding != "ok") {
            let place = if row.repository.is_empty() {
                String::new()
            } else {
                format!("{}: ", safe(&row.repository))
            };
            let why = match (row.finding, &row.detail) {
                ("missing", _) => "no evidence note".to_owned(),
                (_, Some(detail)) => safe(detail).into_owned(),
                (other, None) => other.to_owned(),
            };
            let _ = writeln!(
                text,
                "{place}{}  {}: {why}",
                &row.commit[..row.commit.len().min(12)],
                safe(&row.subject)
            );
        }
        let _ = writeln!(
            text,
            "{} landing(s) checked in {what}: {}",
            rows.len(),
            if bad == 0 {
                "each has its evidence".to_owned()
            } else {
                format!("{bad} without matching evidence")
            }
        );
        if cut {
            let _ = writeln!(
                text,
                "(the walk stopped after {} commits; name a shorter range)",
                evidence::MAX_LANDINGS
            );
        }
        stdout(&text)?;
    }
    if bad > 0 {
        return Err(CliError::new(format!(
            "{bad} landing(s) in {what} have no matching evidence note"
        ))
        .hint("`weft run` writes the missing notes of the current run's landings; a note with another tree was copied from another commit or left by a rebuild"));
    }
    Ok(())
}

/// The walk a range names: `BASE..TIP` (either may be left out: `..TIP`, `BASE..` is up
/// to HEAD), or a tip alone.
fn walk_of(scope: &Scope, range: &str) -> CliResult<Walk> {
    let (from, to) = match range.split_once("..") {
        Some((from, to)) => (Some(from), if to.is_empty() { "HEAD" } else { to }),
        None => (None, range),
    };
    let (repo, tip) = scope.resolve(to)?.ok_or_else(|| no_commit(to))?;
    let stop = match from {
        Some(from) if !from.is_empty() => Some(
            scope
                .resolve(from)?
                .filter(|(r, _)| *r == repo)
                .map(|(_, c)| c)
                .ok_or_else(|| {
                    no_commit(from).hint("a range is `BASE..TIP`, each a commit, branch or tag")
                })?,
        ),
        _ => None,
    };
    Ok(Walk { repo, tip, stop })
}
