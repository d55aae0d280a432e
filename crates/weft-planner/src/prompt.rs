//! What the planner model is told: the workflow (research, ask, outline, plan), the
//! task-sizing rules, the plan format, and the project context.

use std::fmt::Write as _;
use std::path::Path;

use fs_err as fs;

use crate::emit::{PRD_END, plan_format_help, task_ops_help};

/// A runner the plan may assign, as the planner is told about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunnerChoice {
    pub name: String,
    /// Whether weft found it on this machine (unavailable runners are listed but marked).
    pub available: bool,
}

/// How the planner is run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    /// A person answers questions and confirms the outline.
    Conversation,
    /// Nobody answers: assumptions go into the task descriptions.
    OneShot,
    /// Edits to an existing plan (`weft plan revise`).
    Revision,
}

/// Longest project-context file excerpt handed to the planner.
const CONTEXT_FILE_CHARS: usize = 6_000;
/// Files whose head is handed to the planner as project context, when present.
const CONTEXT_FILES: [&str; 5] = [
    "AGENTS.md",
    "CLAUDE.md",
    ".claude/CLAUDE.md",
    ".opencode/AGENTS.md",
    "README.md",
];

const WORKFLOW_CONVERSATION: &str = "\
How you work:
1. Research first. Use your read-only tools to learn how the repository works: its layout, the \
files the goal touches, its tests and how they run. Facts are your job: never ask the user \
something you can find out by reading.
2. Ask only the questions that matter: when the goal is vague, or when a decision would \
change the outcome materially (which library or storage, how wide the scope, the shape of an \
API). Ask ONE question per message, with no numbering and no second question, then stop and \
wait. Each question names the files that prompted it and carries your recommendation, e.g. \
\"I found db/migrations and a migration runner in src/db.rs, so I recommend SQLite unless \
you want the state diffable by hand.\" A fully specified goal needs no questions at all.
3. Then write a short prose outline: the slices in order, one or two sentences each, naming \
the files they touch. No JSON yet. Ask the user to confirm or correct it.
4. Only after the user confirms, reply with the plan JSON and nothing else.";

const WORKFLOW_ONE_SHOT: &str = "\
How you work: this is a one-shot run and nobody will answer questions. Research the \
repository with your read-only tools, then emit the plan JSON directly, with no outline and \
no questions. Where the goal is ambiguous, make the most reasonable assumption grounded in \
what you read, and write each assumption into the description of the task it shaped, as a \
line starting with \"Assumption:\".";

const WORKFLOW_REVISION: &str = "\
How you work: the plan below exists and may be partly done. Re-read the goal, the PRD (if \
any) and the plan, research what the change needs, then reply with task edits as one JSON \
object and nothing else. If the request is ambiguous in a way that would change the edits, \
you may instead ask one question (citing the files behind it, with your recommendation); \
if nobody can answer you will be told to decide. Completed and running tasks are the record \
of what ran: never update or remove them. Prefer the smallest set of edits.";

const SIZING_RULES: &str = "\
Task sizing:
- One task is one fresh agent session: it must fit one context window. An engineer who has \
never seen the repository must be able to finish it from its prompt plus the files it names.
- Cut vertical slices, not layers: each task delivers something someone can run and see, \
with a check that means something. A plan of \"types, then logic, then wiring, then tests\" \
is wrong.
- Not too small either: two tasks that would touch the same function for the same reason \
are one task.
- When the current code makes the change awkward, put an enabling refactor first, as its own \
task that changes no behaviour (the suite stays green); the slices depend on it.
- A change that spans the whole codebase (a rename, a type change) goes expand and contract: \
add the new form beside the old, migrate in batches that each depend on the first task, then \
remove the old form.
- Dependencies mean genuine ordering (B reads what A creates). Do not add one just because \
two tasks edit the same file: each task runs in its own git worktree and lands as its own \
merge. But give shared append-only files (changelog, registry, index) to one task.
- End with a verification task that depends on every other task and is judged by commands: \
give it `checks` (the test suite, the linter) and a prompt to write end-to-end tests of the \
goal through the public interface. If the repository has no tests, it writes a standalone \
verification script instead.
- Every task prompt is self-contained: say what to change, where, and how to verify it.";

/// The system prompt of a planning session.
pub fn system_prompt(
    style: Style,
    runners: &[RunnerChoice],
    default_runner: Option<&str>,
) -> String {
    let mut out = String::from(
        "You are weft's planner. weft turns a goal into a plan of small tasks; each task runs \
         in a fresh coding-agent session in its own git worktree, and passes only on evidence. \
         You are read-only: you never create, edit or delete files and never run commands that \
         write (they are refused). weft saves what you emit.\n\n",
    );
    out.push_str(match style {
        Style::Conversation => WORKFLOW_CONVERSATION,
        Style::OneShot => WORKFLOW_ONE_SHOT,
        Style::Revision => WORKFLOW_REVISION,
    });
    out.push_str("\n\n");
    out.push_str(SIZING_RULES);
    out.push_str("\n\n");
    out.push_str(&runner_section(runners, default_runner));
    out.push_str("\n\n");
    match style {
        Style::Revision => out.push_str(&task_ops_help()),
        _ => out.push_str(&plan_format_help()),
    }
    out.push_str("\n\n");
    let _ = write!(
        out,
        "A PRD (product requirements: problem, users, stories, out of scope) is optional; write \
         one only when the work is large or will be revised. When you do, put it in any reply \
         between the line `<!-- WEFT_PRD_START slug=\"short-feature-slug\" -->` and the line \
         `{PRD_END}`; weft saves it to .scratch/<slug>/PRD.md, where task sessions can read it."
    );
    out
}

fn runner_section(runners: &[RunnerChoice], default_runner: Option<&str>) -> String {
    let mut out = String::from("Runners a task may name in `runner`:");
    if runners.is_empty() {
        out.push_str(" (none configured; leave `runner` out)");
    }
    for runner in runners {
        let _ = write!(out, "\n- {}", runner.name);
        if Some(runner.name.as_str()) == default_runner {
            out.push_str(" (default: used when a task names none)");
        }
        if !runner.available {
            out.push_str(" (not installed here; avoid it)");
        }
    }
    out
}

/// The first user message: the goal, with the project context gathered up front.
pub fn opening_message(goal: &str, context: &str) -> String {
    format!("<project_context>\n{context}\n</project_context>\n\n<goal>\n{goal}\n</goal>")
}

/// The revision request: goal, PRD, current plan, and what the user wants changed.
pub fn revision_message(goal: &str, prd: Option<&str>, plan_lines: &str, request: &str) -> String {
    let mut out = format!("<goal>\n{goal}\n</goal>\n\n");
    if let Some(prd) = prd {
        let _ = write!(out, "<prd>\n{prd}\n</prd>\n\n");
    }
    let _ = write!(
        out,
        "<current_plan>\n{plan_lines}\n</current_plan>\n\n<change_request>\n{request}\n</change_request>"
    );
    out
}

/// What the planner knows before its first tool call: the top of the tree and the agent
/// instruction files (the comparable tool never handed these over; see its §4.7 bug).
pub fn project_context(workspace: &Path) -> String {
    let mut out = String::from("Top-level entries:\n");
    let mut entries: Vec<String> = fs::read_dir(workspace)
        .map(|dir| {
            dir.filter_map(Result::ok)
                .filter_map(|entry| {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    if name == ".git" || name == ".weft" {
                        return None;
                    }
                    let is_dir = entry.file_type().map(|t| t.is_dir()).unwrap_or(false);
                    Some(if is_dir { format!("{name}/") } else { name })
                })
                .collect()
        })
        .unwrap_or_default();
    entries.sort();
    let shown = entries.len().min(200);
    for name in &entries[..shown] {
        let _ = writeln!(out, "  {name}");
    }
    if entries.len() > shown {
        let _ = writeln!(out, "  … {} more", entries.len() - shown);
    }
    for name in CONTEXT_FILES {
        let path = workspace.join(name);
        // Only the head is wanted: never read a huge (or endless) file whole.
        let mut head = Vec::new();
        let Ok(file) = fs::File::open(&path) else {
            continue;
        };
        if std::io::Read::read_to_end(
            &mut std::io::Read::take(file, (CONTEXT_FILE_CHARS * 4 + 4) as u64),
            &mut head,
        )
        .is_err()
        {
            continue;
        }
        let text = String::from_utf8_lossy(&head);
        let head: String = text.chars().take(CONTEXT_FILE_CHARS).collect();
        let cut = if head.len() < text.len() {
            "\n[… cut; read the file for the rest]"
        } else {
            ""
        };
        let _ = write!(out, "\n<file path=\"{name}\">\n{head}{cut}\n</file>\n");
    }
    out
}

/// Nudge for a one-shot planner that answered in prose.
pub const ONE_SHOT_NUDGE: &str = "Nobody can answer questions in this run. Make the most \
reasonable assumptions grounded in your research, write each one into the description of the \
task it shaped (\"Assumption: …\"), and reply now with only the plan JSON.";

/// Nudge for a reviser that answered in prose.
pub const REVISION_NUDGE: &str =
    "Reply with only the task edits as one JSON object `{\"taskOps\": [...]}`.";

/// Sent once after an empty reply.
pub const EMPTY_REPLY: &str = "Your last reply was empty. Continue: ask your question, \
write the outline, or emit the JSON.";

/// Tool-result note for a call the model already made this turn.
pub const REPEATED_CALL: &str = "Not executed: you already made this exact call in this \
turn and its result is above. Use it, or ask for something different.";

/// Tool-result note when the research budget is spent.
pub const BUDGET_SPENT: &str = "Not executed: the research budget for this turn is spent. \
Answer with what you have learned: ask your question, write the outline, or emit the plan.";
