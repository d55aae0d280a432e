//! What a task is handed (DESIGN §7): composed at start time from stored state, never from
//! anything a model wrote about itself.
//!
//! Layout, sections separated by one blank line:
//! 1. the plan map ([`plan_map`]);
//! 2. one block per **direct** dependency: its review note and the last 500 characters of
//!    its output, both defused (omitted when the task has no dependencies);
//! 3. `## Your task` and the task prompt, or for a resumed session a continuation reminder;
//! 4. the marker instruction, when the runner receives a marker.
//!
//! A repair attempt ([`compose_repair`]) gets the [`repair_note`] between its task and the
//! marker instruction.
//!
//! Everything carried from other tasks (their titles, review notes and output) goes through
//! [`defuse`]. The task's own prompt is the plan's text and is passed as written.

use std::fmt::Write as _;

use crate::marker::{Marker, defuse};
use crate::model::{Plan, Task, TaskKind, TaskStatus, order_of};

/// Most rows the plan map shows.
pub const MAP_ROWS: usize = 30;
/// Rows shown before the current one when the plan is longer than [`MAP_ROWS`].
pub const MAP_LOOKBACK: usize = MAP_ROWS / 3;
/// Characters of a dependency's output handed to its dependents.
pub const TAIL_CHARS: usize = 500;
/// Appended to the current row of the plan map.
pub const YOU_ARE_HERE: &str = "← you are here";

const MAP_HEADING: &str = "## Plan map";
const MAP_RULE: &str = "Only the row marked ← you are here is this session's work; the other \
                        rows are context, so do not redo earlier tasks or start on later ones.";
const OUTPUTS_HEADING: &str = "## Output of the tasks this one depends on";
const OUTPUTS_INTRO: &str = "For each task this one directly depends on: the note its review \
                             recorded and the last characters of its output.";
const TASK_HEADING: &str = "## Your task";

/// The plan map: numbered rows `N. [tag] title`, at most [`MAP_ROWS`] of them placed around
/// the current task, a footer counting the rows omitted above and below, [`YOU_ARE_HERE`]
/// and the runner on the current row, and the rule that only that row is this session's
/// work. A `current` outside the plan shows the first rows with no row marked.
///
/// Tags: `NOW` (the current task), `done`, `skipped`, `running`, `failed`, `conflicted`,
/// `cancelled`, `interrupted`, `blocked`, `held`, `manual` (waiting for a person's tick) and
/// `pending`. Tags are padded to the widest one shown so titles line up.
pub fn plan_map(plan: &Plan, current: usize) -> String {
    let tasks = &plan.tasks;
    let mut out = format!("{MAP_HEADING}\n\n{MAP_RULE}\n\n");
    if tasks.is_empty() {
        out.push_str("(the plan has no tasks)");
        return out;
    }
    let (start, end) = window(tasks.len(), current);
    let number_width = order_of(tasks.len() - 1).to_string().len();
    let tags: Vec<String> = (start..end)
        .map(|i| {
            let tag = if i == current {
                "NOW"
            } else {
                status_tag(&tasks[i])
            };
            format!("[{tag}]")
        })
        .collect();
    let tag_width = tags.iter().map(String::len).max().unwrap_or(0);
    for (i, tag) in (start..end).zip(&tags) {
        let task = &tasks[i];
        let _ = write!(
            out,
            "{:>number_width$}. {tag:<tag_width$} {}",
            order_of(i),
            one_line(&defuse(&task.title)),
        );
        if i == current {
            if let Some(runner) = task.effective_runner(plan.runner.as_deref()) {
                let _ = write!(out, " (runner: {})", one_line(runner));
            }
            let _ = write!(out, "  {YOU_ARE_HERE}");
        }
        out.push('\n');
    }
    let (above, below) = (start, tasks.len() - end);
    match (above, below) {
        (0, 0) => {}
        (n, 0) => {
            let _ = write!(out, "({} above {} not shown)", tasks_count(n), is_are(n));
        }
        (0, n) => {
            let _ = write!(out, "({} below {} not shown)", tasks_count(n), is_are(n));
        }
        (a, b) => {
            let _ = write!(
                out,
                "({} above and {b} below are not shown)",
                tasks_count(a)
            );
        }
    }
    out.truncate(out.trim_end().len());
    out
}

/// The prompt handed to the task at `index`, composed from stored state (see the module
/// documentation for the layout). `marker` is `None` for runners that get none (`exec`).
/// For a resumed session the prompt is replaced by a continuation reminder. Ends with a
/// newline.
pub fn compose(plan: &Plan, index: usize, marker: Option<&Marker>, resumed: bool) -> String {
    let mut sections = vec![plan_map(plan, index)];
    if let Some(task) = plan.tasks.get(index) {
        if let Some(outputs) = dependency_outputs(plan, task) {
            sections.push(outputs);
        }
        sections.push(if resumed {
            continuation_reminder(index)
        } else {
            format!("{TASK_HEADING}\n\n{}", task.prompt.trim())
        });
    }
    if let Some(marker) = marker {
        sections.push(marker.instruction());
    }
    let mut prompt = sections.join("\n\n");
    prompt.push('\n');
    prompt
}

/// The prompt of a repair attempt: [`compose`] without the marker instruction, then the
/// `note` ([`repair_note`]) on the next line, then the marker instruction. Ends with a
/// newline.
pub fn compose_repair(plan: &Plan, index: usize, marker: &Marker, note: &str) -> String {
    format!(
        "{}\n{note}\n\n{}\n",
        compose(plan, index, None, false).trim_end(),
        marker.instruction()
    )
}

/// What a repair attempt is told: its earlier work on `branch` could not land and has been
/// merged into its folder, conflicting in `files` (named when known), and how to resolve
/// it.
pub fn repair_note(branch: &str, files: &[String]) -> String {
    let files = if files.is_empty() {
        "the merged files".to_owned()
    } else {
        files.join(", ")
    };
    format!(
        "## Repair\n\nThis is a repair attempt. Your earlier work on this task (branch \
         {branch}) could not land: it conflicts with work that landed meanwhile. It has been \
         merged into this folder; resolve the conflicts in {files} so that both sides' intent \
         survives, and remove every conflict marker (`<<<<<<<`, `=======`, `>>>>>>>`). The \
         merge is in progress: just edit the files; weft commits them."
    )
}

/// The reminder a resumed session gets instead of its prompt.
pub fn continuation_reminder(index: usize) -> String {
    format!(
        "## Continuing task {order}\n\n\
         This session continues your earlier work on task {order}; the instructions you were \
         given still apply. The working directory was recreated from the run's integration \
         branch, so edits from the earlier attempt are present only if they landed there. \
         Check the files before relying on them, then finish the task.",
        order = order_of(index)
    )
}

/// Last `n` characters (chars, not bytes) of `text`, trimmed. Trailing whitespace is dropped
/// before counting, so a run that ends in blank lines still hands over `n` characters of
/// content.
pub fn tail_chars(text: &str, n: usize) -> String {
    let text = text.trim_end();
    let start = if n == 0 {
        text.len()
    } else {
        text.char_indices()
            .rev()
            .nth(n - 1)
            .map_or(0, |(byte, _)| byte)
    };
    text[start..].trim_start().to_owned()
}

/// `(start, end)` of the rows shown: up to [`MAP_LOOKBACK`] rows before the current one,
/// then as many after as fit, shifted back when the plan ends first.
fn window(len: usize, current: usize) -> (usize, usize) {
    if len <= MAP_ROWS || current >= len {
        return (0, len.min(MAP_ROWS));
    }
    let start = current.saturating_sub(MAP_LOOKBACK).min(len - MAP_ROWS);
    (start, start + MAP_ROWS)
}

fn status_tag(task: &Task) -> &'static str {
    match task.status {
        TaskStatus::Completed => "done",
        TaskStatus::Skipped => "skipped",
        TaskStatus::InProgress => "running",
        TaskStatus::Failed => "failed",
        TaskStatus::Conflicted => "conflicted",
        TaskStatus::Cancelled => "cancelled",
        TaskStatus::Interrupted => "interrupted",
        TaskStatus::Blocked => "blocked",
        TaskStatus::Pending | TaskStatus::Approved if task.hold => "held",
        TaskStatus::Pending | TaskStatus::Approved if task.kind == TaskKind::Manual => "manual",
        TaskStatus::Pending | TaskStatus::Approved => "pending",
    }
}

fn tasks_count(n: usize) -> String {
    if n == 1 {
        "1 task".to_owned()
    } else {
        format!("{n} tasks")
    }
}

fn is_are(n: usize) -> &'static str {
    if n == 1 { "is" } else { "are" }
}

/// Text on one line: line breaks and runs of whitespace become single spaces.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` with every line indented by two spaces (blank lines stay empty).
fn indented(text: &str) -> String {
    text.lines()
        .map(|line| {
            let line = line.trim_end();
            if line.is_empty() {
                String::new()
            } else {
                format!("  {line}")
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The block for the task's direct dependencies, in plan order; `None` when it has none.
fn dependency_outputs(plan: &Plan, task: &Task) -> Option<String> {
    let blocks: Vec<String> = plan
        .tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| t.id != task.id && task.dependencies.contains(&t.id))
        .map(|(i, dependency)| dependency_block(i, dependency))
        .collect();
    if blocks.is_empty() {
        return None;
    }
    Some(format!(
        "{OUTPUTS_HEADING}\n\n{OUTPUTS_INTRO}\n\n{}",
        blocks.join("\n\n")
    ))
}

fn dependency_block(index: usize, task: &Task) -> String {
    let mut block = format!(
        "### Task {} [{}]: {}\n",
        order_of(index),
        status_tag(task),
        one_line(&defuse(&task.title))
    );
    let review = task
        .output
        .as_ref()
        .map(|o| defuse(&o.review_reason))
        .filter(|r| !r.trim().is_empty());
    match review {
        Some(review) => {
            let mut lines = review.trim().lines();
            let first = lines.next().unwrap_or_default();
            let _ = write!(block, "- Review: {}", first.trim_end());
            let rest: Vec<&str> = lines.collect();
            if !rest.is_empty() {
                block.push('\n');
                block.push_str(&indented(&rest.join("\n")));
            }
            block.push('\n');
        }
        None => block.push_str("- Review: (no review note)\n"),
    }
    // Defuse the whole stored tail first, so the cut cannot leave part of an id behind.
    let tail = task
        .output
        .as_ref()
        .map(|o| tail_chars(&defuse(&o.log_tail), TAIL_CHARS))
        .filter(|t| !t.is_empty());
    match tail {
        Some(tail) => {
            let _ = write!(block, "- Output tail:\n{}", indented(&tail));
        }
        None => block.push_str("- Output tail: (no output captured)"),
    }
    block
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marker::{MARKER_PREFIX, flatten};
    use crate::model::{OutputSummary, PlanStatus};

    fn plan(n: usize) -> Plan {
        let mut plan = Plan {
            id: "0123456789abcdef0123456789abcdef".into(),
            goal: "goal".into(),
            status: PlanStatus::Running,
            created_at: 0,
            updated_at: 0,
            runner: Some("claude-code".into()),
            revision: 0,
            tasks: (1..=n)
                .map(|i| {
                    let mut t = Task::new(format!("t{i}"), format!("Task number {i}"));
                    t.prompt = format!("Do thing {i}.");
                    t
                })
                .collect(),
        };
        plan.renumber();
        plan
    }

    fn three() -> Plan {
        let mut p = plan(3);
        p.tasks[0].title = "Add the settings model".into();
        p.tasks[0].status = TaskStatus::Completed;
        p.tasks[1].title = "Wire the flag into the CLI".into();
        p.tasks[1].runner = Some("codex".into());
        p.tasks[2].title = "Update the reference docs".into();
        p
    }

    const RULE: &str = "Only the row marked ← you are here is this session's work; the other rows are context, so do not redo earlier tasks or start on later ones.";

    #[test]
    fn map_of_three_with_current_at_each_position() {
        let p = three();
        assert_eq!(
            plan_map(&p, 0),
            format!(
                "## Plan map\n\n{RULE}\n\n\
                 1. [NOW]     Add the settings model (runner: claude-code)  ← you are here\n\
                 2. [pending] Wire the flag into the CLI\n\
                 3. [pending] Update the reference docs"
            )
        );
        assert_eq!(
            plan_map(&p, 1),
            format!(
                "## Plan map\n\n{RULE}\n\n\
                 1. [done]    Add the settings model\n\
                 2. [NOW]     Wire the flag into the CLI (runner: codex)  ← you are here\n\
                 3. [pending] Update the reference docs"
            )
        );
        assert_eq!(
            plan_map(&p, 2),
            format!(
                "## Plan map\n\n{RULE}\n\n\
                 1. [done] Add the settings model\n\
                 2. [pending] Wire the flag into the CLI\n\
                 3. [NOW]  Update the reference docs (runner: claude-code)  ← you are here"
            )
            .replace("[done] ", "[done]    ")
            .replace("[NOW]  ", "[NOW]     ")
        );
    }

    #[test]
    fn every_status_has_a_tag() {
        let mut p = plan(13);
        let statuses = [
            (TaskStatus::Completed, false, TaskKind::Ai, "done"),
            (TaskStatus::Skipped, false, TaskKind::Ai, "skipped"),
            (TaskStatus::InProgress, false, TaskKind::Ai, "running"),
            (TaskStatus::Failed, false, TaskKind::Ai, "failed"),
            (TaskStatus::Conflicted, false, TaskKind::Ai, "conflicted"),
            (TaskStatus::Cancelled, false, TaskKind::Ai, "cancelled"),
            (TaskStatus::Interrupted, false, TaskKind::Ai, "interrupted"),
            (TaskStatus::Blocked, false, TaskKind::Ai, "blocked"),
            (TaskStatus::Pending, true, TaskKind::Ai, "held"),
            (TaskStatus::Approved, false, TaskKind::Manual, "manual"),
            (TaskStatus::Approved, false, TaskKind::Ops, "pending"),
            (TaskStatus::Pending, false, TaskKind::Ai, "pending"),
        ];
        for (task, (status, hold, kind, _)) in p.tasks.iter_mut().zip(statuses) {
            task.status = status;
            task.hold = hold;
            task.kind = kind;
        }
        let map = plan_map(&p, 12);
        let rows: Vec<&str> = map.lines().skip(4).collect();
        for (row, (_, _, _, tag)) in rows.iter().zip(statuses) {
            assert!(
                row.contains(&format!("[{tag}]")),
                "{row:?} should carry [{tag}]"
            );
        }
        // Titles line up after the widest tag, `[interrupted]`.
        assert!(rows[0].starts_with(&format!(" 1. [done]{} Task number 1", " ".repeat(7))));
        assert!(rows[12].starts_with(&format!("13. [NOW]{} Task number 13", " ".repeat(8))));
    }

    fn rows(map: &str) -> Vec<&str> {
        map.lines()
            .filter(|l| {
                l.trim_start()
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_digit())
            })
            .collect()
    }

    #[test]
    fn map_of_a_hundred_windows_thirty_rows_around_the_current_task() {
        let p = plan(100);
        // At the start: rows 1..=30, 70 omitted below.
        let map = plan_map(&p, 0);
        let shown = rows(&map);
        assert_eq!(shown.len(), MAP_ROWS);
        assert_eq!(
            shown[0],
            "  1. [NOW]     Task number 1 (runner: claude-code)  ← you are here"
        );
        assert_eq!(shown[29], " 30. [pending] Task number 30");
        assert!(map.ends_with("\n(70 tasks below are not shown)"), "{map}");

        // In the middle: 10 rows before the current one, 19 after.
        let map = plan_map(&p, 49);
        let shown = rows(&map);
        assert_eq!(shown.len(), MAP_ROWS);
        assert_eq!(shown[0], " 40. [pending] Task number 40");
        assert_eq!(
            shown[10],
            " 50. [NOW]     Task number 50 (runner: claude-code)  ← you are here"
        );
        assert_eq!(shown[29], " 69. [pending] Task number 69");
        assert!(
            map.ends_with("\n(39 tasks above and 31 below are not shown)"),
            "{map}"
        );

        // At the end: the window is shifted back so it still shows 30 rows.
        let map = plan_map(&p, 99);
        let shown = rows(&map);
        assert_eq!(shown.len(), MAP_ROWS);
        assert_eq!(shown[0], " 71. [pending] Task number 71");
        assert_eq!(
            shown[29],
            "100. [NOW]     Task number 100 (runner: claude-code)  ← you are here"
        );
        assert!(map.ends_with("\n(70 tasks above are not shown)"), "{map}");

        for current in [0, 49, 99] {
            let map = plan_map(&p, current);
            assert_eq!(map.matches(YOU_ARE_HERE).count(), 2, "the rule and the row");
            assert!(map.starts_with(&format!("## Plan map\n\n{RULE}\n\n")));
        }
    }

    #[test]
    fn map_of_thirty_one_exact() {
        let p = plan(31);
        let map = plan_map(&p, 30);
        let mut expected = format!("## Plan map\n\n{RULE}\n\n");
        for i in 2..=30 {
            expected.push_str(&format!("{i:>2}. [pending] Task number {i}\n"));
        }
        expected.push_str(
            "31. [NOW]     Task number 31 (runner: claude-code)  ← you are here\n\
             (1 task above is not shown)",
        );
        assert_eq!(map, expected);
    }

    #[test]
    fn map_edge_cases() {
        let p = plan(40);
        // No current row: the first 30 rows, none marked.
        let map = plan_map(&p, 40);
        assert_eq!(rows(&map).len(), 30);
        assert_eq!(map.matches(YOU_ARE_HERE).count(), 1);
        assert!(map.ends_with("(10 tasks below are not shown)"));
        let mut empty = plan(0);
        empty.runner = None;
        assert!(plan_map(&empty, 0).ends_with("(the plan has no tasks)"));
        // A runner-less current task shows no runner; titles are one line and defused.
        let mut p = plan(2);
        p.runner = None;
        p.tasks[0].title = "Fix\nWEFT_DONE_0123456789abcdef  echo".into();
        assert_eq!(
            rows(&plan_map(&p, 1)),
            [
                "1. [pending] Fix WEFT-DONE-(defused) echo",
                "2. [NOW]     Task number 2  ← you are here"
            ]
        );
    }

    #[test]
    fn tail_chars_counts_chars_and_trims() {
        assert_eq!(tail_chars("héllo wörld", 5), "wörld");
        assert_eq!(tail_chars("abc", 10), "abc");
        assert_eq!(tail_chars("  abc  \n\n", 3), "abc");
        assert_eq!(tail_chars("ab   cd", 4), "cd");
        assert_eq!(tail_chars("abc", 0), "");
        assert_eq!(tail_chars("", 5), "");
        assert_eq!(
            tail_chars(&"é".repeat(600), TAIL_CHARS).chars().count(),
            500
        );
    }

    const ID_A: &str = "aaaaaaaaaaaaaaa1";
    const ID_B: &str = "bbbbbbbbbbbbbbb2";
    const ID_C: &str = "ccccccccccccccc3";

    fn output(review: &str, tail: &str) -> Option<OutputSummary> {
        Some(OutputSummary {
            review_reason: review.into(),
            log_tail: tail.into(),
            captured_at: 0,
        })
    }

    /// A plan whose task 4 depends on 2 and 3; 2 depends on 1 (indirect for task 4).
    fn diamond() -> Plan {
        let mut p = plan(4);
        p.tasks[0].title = "Write the schema".into();
        p.tasks[1].title = "Add the parser".into();
        p.tasks[2].title = "Add the settings model".into();
        p.tasks[3].title = "Wire the flag into the CLI".into();
        p.tasks[3].prompt = "Add a --verbose flag and use the settings model.".into();
        p.tasks[1].dependencies = vec!["t1".into()];
        p.tasks[3].dependencies = vec!["t3".into(), "t2".into()];
        for t in &mut p.tasks[..3] {
            t.status = TaskStatus::Completed;
        }
        p.tasks[0].output = output(
            "INDIRECT REVIEW",
            &format!("INDIRECT OUTPUT\nWEFT_DONE_{ID_C}"),
        );
        p.tasks[1].output = output(
            &format!("Passed: the marker WEFT_DONE_{ID_A} was seen."),
            &format!(
                "{}\nparser done\n\x1b[1mWEFT_DONE_\x1b[0m{ID_A}\nalso WEFT_DO\nNE_{}\n{}",
                "x".repeat(700),
                &ID_A[..8],
                &ID_A[8..]
            ),
        );
        p.tasks[2].output = output(
            "Passed: the completion marker was seen in the agent's output.",
            &format!(
                "Added Settings.\nW E F T _ D O N E _ {}\nWEFT_DONE_\n{ID_B}\n\nWEFT_DONE_{ID_B}",
                ID_B.chars().map(String::from).collect::<Vec<_>>().join(" ")
            ),
        );
        p
    }

    /// Remove ANSI escape sequences (CSI and single-character ones) and every whitespace
    /// character: an independent flattening for the tests.
    fn strip_ansi_and_whitespace(text: &str) -> String {
        let mut out = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for d in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&d) {
                            break;
                        }
                    }
                } else {
                    chars.next();
                }
            } else if !c.is_whitespace() {
                out.push(c);
            }
        }
        out
    }

    /// Any `WEFT_DONE_` followed by 16 lowercase hex characters.
    fn has_token(text: &str) -> bool {
        text.match_indices(MARKER_PREFIX).any(|(i, _)| {
            let rest = &text[i + MARKER_PREFIX.len()..];
            rest.len() >= 16
                && rest[..16]
                    .bytes()
                    .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        })
    }

    #[test]
    fn compose_carries_direct_dependencies_defused() {
        let p = diamond();
        let marker = Marker::from_id("0123456789abcdef").unwrap();
        let prompt = compose(&p, 3, Some(&marker), false);
        for view in [
            prompt.clone(),
            strip_ansi_and_whitespace(&prompt),
            flatten(&prompt),
        ] {
            assert!(!has_token(&view), "a live token in:\n{view}");
            for id in [ID_A, ID_B, ID_C] {
                assert!(!view.contains(id), "{id} leaked into:\n{view}");
            }
        }
        // The indirect dependency is not carried; the direct ones are, in plan order.
        assert!(!prompt.contains("INDIRECT"));
        let parser = prompt.find("### Task 2 [done]: Add the parser").unwrap();
        let settings = prompt
            .find("### Task 3 [done]: Add the settings model")
            .unwrap();
        assert!(parser < settings);
        // The tail is at most 500 characters.
        let tail_start = prompt[parser..].find("- Output tail:\n").unwrap() + parser;
        let tail_block: String = prompt[tail_start + "- Output tail:\n".len()..settings]
            .lines()
            .map(|l| l.strip_prefix("  ").unwrap_or(l))
            .collect::<Vec<_>>()
            .join("\n");
        assert!(tail_block.trim().chars().count() <= TAIL_CHARS);
        // Order: map, outputs, task, marker instruction last.
        let map = prompt.find("## Plan map").unwrap();
        let outputs = prompt.find(OUTPUTS_HEADING).unwrap();
        let task = prompt.find("## Your task\n\nAdd a --verbose flag").unwrap();
        let instruction = prompt.find(&marker.instruction()).unwrap();
        assert!(map < outputs && outputs < task && task < instruction);
        assert!(prompt.ends_with(&format!("{}\n", marker.instruction())));
        assert!(!marker.appears_in(&prompt));
    }

    #[test]
    fn compose_exact() {
        let mut p = three();
        p.tasks[1].dependencies = vec!["t1".into()];
        p.tasks[0].output = output(
            "Passed: the completion marker was seen in the agent's output.",
            "Added Settings { verbose: bool } in src/settings.rs.\n\nWEFT_DONE_fedcba9876543210\n",
        );
        let marker = Marker::from_id("0123456789abcdef").unwrap();
        assert_eq!(
            compose(&p, 1, Some(&marker), false),
            format!(
                "## Plan map\n\n{RULE}\n\n\
                 1. [done]    Add the settings model\n\
                 2. [NOW]     Wire the flag into the CLI (runner: codex)  ← you are here\n\
                 3. [pending] Update the reference docs\n\
                 \n\
                 ## Output of the tasks this one depends on\n\
                 \n\
                 For each task this one directly depends on: the note its review recorded and \
                 the last characters of its output.\n\
                 \n\
                 ### Task 1 [done]: Add the settings model\n\
                 - Review: Passed: the completion marker was seen in the agent's output.\n\
                 - Output tail:\n\
                 \x20 Added Settings {{ verbose: bool }} in src/settings.rs.\n\
                 \n\
                 \x20 WEFT-DONE-(defused)\n\
                 \n\
                 ## Your task\n\
                 \n\
                 Do thing 2.\n\
                 \n\
                 {}\n",
                marker.instruction()
            )
        );
    }

    #[test]
    fn a_repair_attempt_is_told_its_branch_and_files_before_the_marker_instruction() {
        let p = three();
        let marker = Marker::from_id("0123456789abcdef").unwrap();
        let files = vec!["src/a.rs".to_owned(), "src/b.rs".to_owned()];
        let note = repair_note("weft/r/2-wire", &files);
        assert_eq!(
            note,
            "## Repair\n\nThis is a repair attempt. Your earlier work on this task (branch \
             weft/r/2-wire) could not land: it conflicts with work that landed meanwhile. It \
             has been merged into this folder; resolve the conflicts in src/a.rs, src/b.rs so \
             that both sides' intent survives, and remove every conflict marker (`<<<<<<<`, \
             `=======`, `>>>>>>>`). The merge is in progress: just edit the files; weft \
             commits them."
        );
        assert!(repair_note("b", &[]).contains("resolve the conflicts in the merged files so"));
        let prompt = compose_repair(&p, 1, &marker, &note);
        assert_eq!(
            prompt,
            format!(
                "{}\n{note}\n\n{}\n",
                compose(&p, 1, None, false).trim_end(),
                marker.instruction()
            )
        );
        assert!(prompt.contains("Do thing 2.\n## Repair\n\nThis is a repair attempt."));
        assert_eq!(prompt.matches(&marker.instruction()).count(), 1);
    }

    #[test]
    fn dependencies_without_output_and_multiline_reviews() {
        let mut p = plan(3);
        p.tasks[2].dependencies = vec!["t1".into(), "t2".into()];
        p.tasks[0].status = TaskStatus::Skipped;
        p.tasks[1].status = TaskStatus::Completed;
        p.tasks[1].output = output("first line\nsecond line", "  \n");
        let prompt = compose(&p, 2, None, false);
        assert!(prompt.contains(
            "### Task 1 [skipped]: Task number 1\n\
             - Review: (no review note)\n\
             - Output tail: (no output captured)\n\n\
             ### Task 2 [done]: Task number 2\n\
             - Review: first line\n  second line\n\
             - Output tail: (no output captured)\n\n## Your task"
        ));
        // No marker (the exec runner): the prompt is the last section.
        assert!(prompt.ends_with("## Your task\n\nDo thing 3.\n"));
    }

    #[test]
    fn no_dependencies_no_outputs_block() {
        let p = plan(3);
        let prompt = compose(&p, 0, None, false);
        assert!(!prompt.contains(OUTPUTS_HEADING));
    }

    #[test]
    fn a_resumed_session_gets_a_reminder_instead_of_its_prompt() {
        let p = diamond();
        let marker = Marker::from_id("0123456789abcdef").unwrap();
        let prompt = compose(&p, 3, Some(&marker), true);
        assert!(!prompt.contains("Add a --verbose flag"));
        assert!(!prompt.contains(TASK_HEADING));
        assert!(prompt.contains(&format!(
            "{}\n\n{}\n",
            continuation_reminder(3),
            marker.instruction()
        )));
        assert_eq!(
            continuation_reminder(3),
            "## Continuing task 4\n\nThis session continues your earlier work on task 4; the \
             instructions you were given still apply. The working directory was recreated from \
             the run's integration branch, so edits from the earlier attempt are present only \
             if they landed there. Check the files before relying on them, then finish the task."
        );
        // The map and the dependency outputs are still current state.
        assert!(prompt.starts_with("## Plan map"));
        assert!(prompt.contains(OUTPUTS_HEADING));
    }
}
