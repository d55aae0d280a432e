//! `weft status`: the plan map of the current plan, with what each task used; `--watch`
//! follows a run from another terminal.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::time::Duration;

use weft_engine::kept::NO_ENGINE;
use weft_store::Store;

use crate::cli::Globals;
use crate::commands::{print_plan_map, stdout, styled};
use crate::context::Ctx;
use crate::error::CliResult;
use crate::render::{PlanView, TaskUsage, plan_json, plan_map, safe, usage_by_task};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print one JSON object instead of the map.
    #[arg(long)]
    pub json: bool,
    /// Redraw whenever the plan changes, until its run ends.
    #[arg(long, conflicts_with = "json")]
    pub watch: bool,
}

pub fn run(args: Args, globals: &Globals) -> CliResult {
    let ctx = Ctx::load(globals)?;
    let store = ctx.store_with_plans()?;
    store.leave_log_on_close()?;
    let plan_id = ctx.plan_id(&store)?;
    let default_runner = ctx.settings.runner();
    if args.watch {
        return watch(&store, &plan_id, default_runner);
    }
    // The outline: everything the map and the JSON show, without the prompts, and
    // without a `Task` per row (see `weft_store::Outline`). Not freed: the process ends
    // right after this command.
    let outline = std::mem::ManuallyDrop::new(store.outline(&plan_id)?);
    let attempts = store.attempts_of_plan(&plan_id)?;
    let engine_alive = weft_engine::control::engine_running(&store, &plan_id)?.is_some();
    // Tasks recorded running whose engine is gone are interrupted, whatever the store says.
    let mut plan = PlanView::outline(&outline);
    if !engine_alive {
        plan = plan.orphaned(NO_ENGINE);
    }
    let kept = weft_engine::kept::kept_worktrees(&attempts, engine_alive);
    let mut usage = usage_by_task(&attempts);
    limits_usage(&store, plan, engine_alive, &mut usage)?;
    let plan_budget = plan_budget(&store, &plan_id, &ctx.settings.spend.budget)?;
    let verification = verification(&store, &plan_id, engine_alive)?;
    // The store is closed on a helper while the status is written: closing unmaps what
    // was read through the memory map, which the output no longer waits for (a
    // 10,000-task status 2–8% faster in A/B runs).
    std::thread::scope(|scope| {
        scope.spawn(move || drop(store));
        if args.json {
            let status = StatusWithKept {
                status: plan_json(plan, default_runner, &usage).budget(&usage, &plan_budget),
                kept_worktrees: &kept,
                verification: verification.as_ref(),
            };
            // JSON carries no colour: write it straight out, not through the colour filter.
            let mut out = super::bulk_stdout();
            let written = status
                .write_json(&mut out)
                .map_err(std::io::Error::from)
                .and_then(|()| out.write_all(b"\n"))
                .and_then(|()| out.flush());
            match written {
                Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
                _ => Ok(()),
            }
        } else {
            print_text(
                plan,
                default_runner,
                &usage,
                &plan_budget,
                &kept,
                verification.as_ref(),
            )
        }
    })
}

/// The status as text: the plan map, then the plan's spend, verification, interrupted
/// tasks and kept worktrees, each when there is something to say.
fn print_text(
    plan: PlanView<'_>,
    default_runner: &str,
    usage: &HashMap<String, TaskUsage>,
    plan_budget: &weft_core::spend::Budget,
    kept: &[weft_engine::kept::KeptWorktree],
    verification: Option<&Verification>,
) -> CliResult {
    print_plan_map(plan, default_runner, usage)?;
    let mut text = String::new();
    let spend = crate::render::spend_json(usage, plan_budget);
    if spend.budget_usd.is_some() || spend.budget_tokens.is_some() {
        text.push_str(&format!("\nspent {} (plan budget)", spend.text));
        if let Some(limit) = &spend.reached {
            text.push_str(&format!(
                ": reached ({limit}), no new task starts; raise it and `weft run` continues"
            ));
        }
        text.push('\n');
    }
    if let Some(v) = verification {
        text.push_str(&v.line());
    }
    let orphaned: Vec<String> = plan
        .any_orphaned()
        .then(|| plan.tasks())
        .into_iter()
        .flatten()
        .filter(|(_, reason)| reason.is_some())
        .map(|(task, _)| format!("#{}", task.order))
        .collect();
    if !orphaned.is_empty() {
        text.push_str(&format!(
            "\ninterrupted ({NO_ENGINE}): {}; `weft run` continues them\n",
            orphaned.join(", ")
        ));
    }
    if !kept.is_empty() {
        text.push_str("\nkept worktrees:\n");
        for k in kept.iter().take(KEPT_SHOWN) {
            text.push_str(&format!(
                "  {} (task {}): {}\n",
                safe(&k.path),
                safe(&k.task),
                safe(&k.reason)
            ));
        }
        if kept.len() > KEPT_SHOWN {
            text.push_str(&format!(
                "  and {} more (`weft status --json` lists them all)\n",
                kept.len() - KEPT_SHOWN
            ));
        }
    }
    if text.is_empty() {
        Ok(())
    } else {
        stdout(&text)
    }
}

/// What the task limits add to each task's usage: its spend against its own budget, and
/// how long its running attempt has been idle (only while an engine runs the plan: a dead
/// engine's attempts read interrupted).
/// The plan's budget: its own (a workflow file's top-level keys) when it has one, else
/// the settings' (what the engine applies too).
pub(crate) fn plan_budget(
    store: &Store,
    plan_id: &str,
    settings: &weft_core::spend::Budget,
) -> Result<weft_core::spend::Budget, weft_store::StoreError> {
    let own = store.plan_budget(plan_id)?;
    Ok(if own.is_set() { own } else { *settings })
}

pub(crate) fn limits_usage(
    store: &Store,
    plan: PlanView<'_>,
    engine_alive: bool,
    usage: &mut HashMap<String, TaskUsage>,
) -> CliResult {
    let with_limits = plan
        .may_have_limits()
        .then(|| plan.tasks())
        .into_iter()
        .flatten();
    for (task, _) in with_limits.filter(|(t, _)| t.limits.budget().is_set()) {
        usage
            .entry(task.id.to_owned())
            .or_default()
            .set_budget(&task.limits.budget());
    }
    if engine_alive {
        let now = crate::context::now();
        for idle in store.idle_attempts(&plan.plan().id)? {
            if let Some(used) = usage.get_mut(&idle.task) {
                used.idle_secs = Some(u64::try_from(now - idle.since).unwrap_or(0) / 1000);
            }
        }
    }
    Ok(())
}

/// `weft status --json`: the plan, and the worktrees weft keeps (issue 12: every worktree
/// weft registered is a running attempt's, the integration checkout, or listed here).
#[derive(serde::Serialize)]
struct StatusWithKept<'a> {
    #[serde(flatten)]
    status: crate::render::StatusJson<'a>,
    kept_worktrees: &'a [weft_engine::kept::KeptWorktree],
    /// The open run's verification of its integration tip (`verify`), once it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    verification: Option<&'a Verification>,
}

impl StatusWithKept<'_> {
    /// Exactly what `serde_json::to_writer(out, self)` writes, without serde's per-key
    /// cost for every task (see [`crate::render::StatusJson::write_fields`]).
    fn write_json(&self, out: &mut impl Write) -> serde_json::Result<()> {
        let io = serde_json::Error::io;
        out.write_all(b"{").map_err(io)?;
        self.status.write_fields(out)?;
        out.write_all(b",\"kept_worktrees\":").map_err(io)?;
        serde_json::to_writer(&mut *out, self.kept_worktrees)?;
        if let Some(verification) = self.verification {
            out.write_all(b",\"verification\":").map_err(io)?;
            serde_json::to_writer(&mut *out, verification)?;
        }
        out.write_all(b"}").map_err(io)
    }
}

/// `weft status`'s verification part: the last green tip and the tip being verified.
#[derive(serde::Serialize)]
pub(crate) struct Verification {
    run: String,
    green: Option<String>,
    /// Only while the run's engine is alive (a dead one's is no longer being verified).
    verifying: Option<String>,
}

impl Verification {
    fn line(&self) -> String {
        let short = |t: &String| t.get(..12).unwrap_or(t).to_owned();
        let mut line = format!(
            "\nverify: last green tip {}",
            self.green.as_ref().map_or("none yet".into(), short)
        );
        if let Some(tip) = &self.verifying {
            line.push_str(&format!("; verifying {} now", short(tip)));
        }
        line.push('\n');
        line
    }
}

pub(crate) fn verification(
    store: &Store,
    plan_id: &str,
    engine_alive: bool,
) -> Result<Option<Verification>, crate::error::CliError> {
    let Some(run) = store.open_run(plan_id)? else {
        return Ok(None);
    };
    let state = store.verify_state(&run.id)?;
    if state.updated_at == 0 {
        return Ok(None);
    }
    Ok(Some(Verification {
        run: run.id,
        green: state.green,
        verifying: state.verifying.filter(|_| engine_alive),
    }))
}

/// How many kept worktrees the text lists (a screenful); the rest are counted.
const KEPT_SHOWN: usize = 20;

fn map_text(
    plan: PlanView<'_>,
    default_runner: &str,
    usage: &HashMap<String, TaskUsage>,
) -> String {
    styled(|out| plan_map(out, plan, default_runner, usage))
}

fn watch(store: &Store, plan_id: &str, default_runner: &str) -> CliResult {
    let terminal = std::io::stdout().is_terminal();
    let mut seen = -1;
    loop {
        let seq = store.last_event_seq()?;
        let running = weft_engine::control::engine_running(store, plan_id)?;
        if seq != seen {
            seen = seq;
            let plan = store.outline(plan_id)?;
            let usage = usage_by_task(&store.attempts_of_plan(plan_id)?);
            let mut text = String::new();
            if terminal {
                text.push_str("\x1b[H\x1b[2J");
            }
            text.push_str(&map_text(PlanView::outline(&plan), default_runner, &usage));
            match running {
                Some(pid) => text.push_str(&format!(
                    "\n(watching the run of engine pid {pid}; Ctrl-C to stop watching)\n"
                )),
                None => text.push_str("\n(no run is active)\n"),
            }
            if !terminal {
                text.push('\n');
            }
            stdout(&text)?;
        }
        if running.is_none() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_core::spend::Budget;
    use weft_core::{
        Check, Denial, Landing, Plan, PlanStatus, Task, TaskKind, TaskStatus, Verdict,
        VerdictOutcome,
    };
    use weft_engine::kept::KeptWorktree;

    /// Every status, both verdicts (one with text that needs escapes), a hold, every kind,
    /// runner/model/effort/mode overrides, checks, dependencies, usage of every shape
    /// (tokens, cost, unknown cost, denials, each landing) and titles that need escapes.
    fn rich_plan() -> (Plan, HashMap<String, TaskUsage>) {
        let statuses = TaskStatus::ALL;
        let titles = [
            "Plain title",
            "quote \" and backslash \\ and tab \t",
            "Ünïcödé «title» — \u{1b}[2J escape",
            "line one\nline two",
            "\u{7f} del and \u{85} C1",
        ];
        let mut tasks = Vec::new();
        let mut usage = HashMap::new();
        for (index, status) in statuses.iter().enumerate() {
            let id = format!("task-{index}");
            let mut task = Task::new(&id, titles[index % titles.len()]);
            task.status = *status;
            task.hold = index % 4 == 1;
            if index % 5 == 2 {
                task.limits = weft_core::TaskLimits {
                    timeout: Some(Duration::from_secs(1800)),
                    idle_timeout: (index % 2 == 0).then_some(Duration::from_secs(300)),
                    budget_usd: Some(0.5),
                    budget_tokens: (index % 3 == 0).then_some(200_000),
                };
            }
            task.kind = [TaskKind::Ai, TaskKind::Manual, TaskKind::Ops][index % 3];
            if index % 2 == 0 {
                task.runner = Some("codex".into());
                task.model = Some("gpt-5".into());
                task.effort = Some("high".into());
                task.mode = Some("plan".into());
            }
            if index > 0 {
                task.dependencies = (0..index.min(3)).map(|d| format!("task-{d}")).collect();
            }
            if index % 3 == 0 {
                task.checks = vec!["cargo test".into(), "say \"ok\"".into()];
            }
            if index % 2 == 1 {
                task.verdict = Some(Verdict {
                    outcome: if index % 4 == 1 {
                        VerdictOutcome::Pass
                    } else {
                        VerdictOutcome::Fail
                    },
                    reason: "exit 1: \"boom\"\n\u{1b}[31mred".into(),
                    checks: vec![Check {
                        name: "cargo test".into(),
                        passed: false,
                        skipped: false,
                        detail: "1 failed".into(),
                        exit_code: Some(101),
                        duration_ms: Some(1234),
                    }],
                    decided_at: 1_796_000_000_000 + index as i64,
                });
            }
            if index % 5 != 4 {
                usage.insert(
                    id.clone(),
                    TaskUsage {
                        attempts: 1 + index as u32 % 3,
                        input_tokens: (index % 2 == 0).then_some(1000 * index as u64),
                        output_tokens: (index % 2 == 0).then_some(10 * index as u64),
                        cost_usd: (index % 3 != 2).then_some(0.0125 * index as f64),
                        cost_unknown: index % 3 == 2,
                        denials: if index % 4 == 0 {
                            vec![Denial {
                                tool: "Bash".into(),
                                detail: "rm -rf \"/\"".into(),
                            }]
                        } else {
                            Vec::new()
                        },
                        landing: match index % 4 {
                            0 => None,
                            1 => Some(Landing::NoChanges),
                            2 => Some(Landing::Landed {
                                merge: "0123abcd".into(),
                            }),
                            _ => Some(Landing::Conflicted {
                                files: vec!["src/a.rs".into()],
                                detail: "both modified".into(),
                            }),
                        },
                        idle_secs: (index % 6 == 1).then_some(725 + index as u64),
                        budget: (index % 7 == 3).then(|| crate::render::TaskBudgetJson {
                            budget_usd: Some(0.5),
                            budget_tokens: (index % 2 == 0).then_some(200_000),
                            exceeded: (index % 14 == 3).then(|| "budget_usd = $0.50".into()),
                            text: format!(
                                "${:.2} of $0.50, \"{index}\" tokens",
                                0.01 * index as f64
                            ),
                        }),
                    },
                );
            }
            tasks.push(task);
        }
        let mut plan = Plan {
            id: "0123456789abcdef0123456789abcdef".into(),
            goal: "a \"goal\" with\ttabs".into(),
            status: PlanStatus::Running,
            created_at: 1_796_000_000_000,
            updated_at: 1_796_000_000_999,
            runner: Some("claude-code".into()),
            revision: 7,
            tasks,
        };
        plan.renumber();
        (plan, usage)
    }

    #[test]
    fn the_hand_written_status_json_is_what_serde_writes() {
        let (plan, usage) = rich_plan();
        let kept = [KeptWorktree {
            path: "/tmp/w \"1\"".into(),
            task: "task-3".into(),
            reason: "kept: conflicted".into(),
        }];
        let verification = Verification {
            run: "run-1".into(),
            green: Some("abc".into()),
            verifying: None,
        };
        let budgets = [
            Budget::default(),
            Budget {
                usd: Some(0.01),
                tokens: Some(5),
            },
        ];
        // With and without an engine (without, tasks in progress read interrupted, with a
        // reason).
        let views = [PlanView::of(&plan), PlanView::of(&plan).orphaned(NO_ENGINE)];
        for (budget, view) in budgets
            .iter()
            .flat_map(|b| views.iter().map(move |v| (b, *v)))
        {
            for (kept, verification) in [(&kept[..], Some(&verification)), (&[][..], None)] {
                let status = StatusWithKept {
                    status: plan_json(view, "opencode", &usage).budget(&usage, budget),
                    kept_worktrees: kept,
                    verification,
                };
                let expected = serde_json::to_vec(&status).unwrap();
                let mut written = Vec::new();
                status.write_json(&mut written).unwrap();
                assert_eq!(
                    String::from_utf8(written).unwrap(),
                    String::from_utf8(expected).unwrap()
                );
            }
        }
        // An empty plan too.
        let empty = Plan {
            tasks: Vec::new(),
            runner: None,
            ..plan.clone()
        };
        let status = StatusWithKept {
            status: plan_json(PlanView::of(&empty), "opencode", &usage),
            kept_worktrees: &[],
            verification: None,
        };
        let mut written = Vec::new();
        status.write_json(&mut written).unwrap();
        assert_eq!(written, serde_json::to_vec(&status).unwrap());
    }
}
