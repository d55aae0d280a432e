//! The format descriptions the system prompt carries. Tests keep them in step with
//! `TaskSpec` and the op parser: a field the model is never told about is a field it will
//! never use, and a field it is told about that does not exist costs a repair round.

use super::ops::CHANGE_FIELDS;

/// The fields of `weft_core::workflow::TaskSpec`, in declaration order (checked against the
/// generated JSON Schema by a test).
pub const TASK_FIELDS: [&str; 17] = [
    "id",
    "title",
    "description",
    "prompt",
    "dependencies",
    "runner",
    "model",
    "effort",
    "mode",
    "kind",
    "command",
    "steps",
    "checks",
    "timeout",
    "idle_timeout",
    "budget_usd",
    "budget_tokens",
];

/// How to emit a plan: `{"tasks": [...]}` and every task field.
pub fn plan_format_help() -> String {
    r#"To propose a plan, reply with one JSON object and nothing else:
{"tasks": [<task>, ...]}
Tasks run in the order listed; each is one focused unit of work for one agent session. The plan's goal is the user's request; do not repeat it. Task fields (only these; any other field is refused):
- "title" (required): a short imperative summary.
- "id": a unique id of ASCII letters, digits, '-', '_' or '.', not only digits; defaults to a slug of the title.
- "description": why the task exists and the assumptions made.
- "prompt": the complete instruction the coding agent follows; required for "ai" tasks.
- "kind": "ai" (default: a coding agent does it), "manual" (a person works through "steps") or "ops" (weft runs "command").
- "dependencies": ids, or 1-based order numbers, of EARLIER tasks this one needs; never itself or a later task.
- "runner": the agent that runs an "ai" task, only one of the runners you were given; omit it for the default.
- "model", "effort", "mode": optional runner settings (model name, reasoning effort, runner-specific mode); omit them unless the task needs them.
- "command": the shell command of an "ops" task (ops tasks only).
- "steps": the checklist of a "manual" task (manual tasks only).
- "checks": shell commands that must all exit 0 after the task for it to pass, e.g. ["cargo test"].
- "timeout", "idle_timeout" (durations such as "30m"), "budget_usd", "budget_tokens" (positive numbers): the task's own limits; omit them unless the user asked for limits.
Example: {"tasks": [{"id": "limiter", "title": "Add a token-bucket limiter", "prompt": "Add a token-bucket rate limiter in src/limit.rs with unit tests.", "checks": ["cargo test"]}, {"title": "Wire the limiter into the server", "prompt": "Apply the limiter from src/limit.rs to every request handler.", "dependencies": ["limiter"]}]}"#
        .to_owned()
}

/// How to emit edits to an existing plan: `{"taskOps": [...]}` and every op.
pub fn task_ops_help() -> String {
    let fields = CHANGE_FIELDS
        .iter()
        .map(|f| format!("\"{f}\""))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        r##"To change the existing plan, reply with one JSON object and nothing else:
{{"taskOps": [<op>, ...]}}
The ops apply in order, all or nothing. REF names a task as the plan stands before this batch: its id, "#N" or N (its order number), or its exact title; a task added earlier in the same batch is named by its id.
- {{"op": "add", "task": {{<task fields as in a plan>}}, "after": REF}}: add a task after REF; without "after" it goes last; "after": 0 puts it first.
- {{"op": "remove", "task": REF}}: remove a task; tasks that depended on it lose that dependency.
- {{"op": "update", "task": REF, "changes": {{...}}}}: change any of {fields}; an empty string or null clears an optional text field or a limit.
- {{"op": "set_dependencies", "task": REF, "dependencies": [REF, ...]}}: replace a task's dependencies (earlier tasks only).
Completed and running tasks are the record of what ran: they cannot be updated, re-wired or removed, and a task they depend on cannot be removed."##
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use weft_core::WorkflowFile;

    /// The property names of `TaskSpec` in the generated schema.
    fn schema_task_fields() -> Vec<String> {
        let schema: serde_json::Value = serde_json::from_str(&WorkflowFile::json_schema()).unwrap();
        let definitions = schema
            .get("$defs")
            .or_else(|| schema.get("definitions"))
            .expect("the schema has definitions");
        definitions["TaskSpec"]["properties"]
            .as_object()
            .expect("TaskSpec has properties")
            .keys()
            .cloned()
            .collect()
    }

    #[test]
    fn task_fields_are_the_task_spec_fields() {
        let mut schema = schema_task_fields();
        let mut listed: Vec<String> = TASK_FIELDS.iter().map(|f| (*f).to_owned()).collect();
        schema.sort();
        listed.sort();
        assert_eq!(schema, listed);
    }

    #[test]
    fn plan_help_names_every_task_field() {
        let help = plan_format_help();
        for field in schema_task_fields() {
            assert!(help.contains(&format!("\"{field}\"")), "{field} missing");
        }
        for kind in ["\"ai\"", "\"manual\"", "\"ops\""] {
            assert!(help.contains(kind), "{kind} missing");
        }
    }

    #[test]
    fn ops_help_names_every_op_and_change_field() {
        let help = task_ops_help();
        for op in [
            "\"add\"",
            "\"remove\"",
            "\"update\"",
            "\"set_dependencies\"",
        ] {
            assert!(help.contains(op), "{op} missing");
        }
        for field in CHANGE_FIELDS {
            assert!(help.contains(&format!("\"{field}\"")), "{field} missing");
        }
    }

    #[test]
    fn the_plan_example_is_a_valid_plan() {
        let help = plan_format_help();
        let example = help.split("Example: ").nth(1).unwrap();
        let value: serde_json::Value = serde_json::from_str(example).unwrap();
        crate::emit::plan_from_value(&value, "goal", None, &|_| true).unwrap();
    }
}
