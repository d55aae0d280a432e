//! `e`: re-arm a task after editing its fields in `$EDITOR`, as TOML.
//!
//! The file holds the fields `weft rearm` takes (title, description, prompt, runner,
//! model, effort, mode, checks); `""` clears an optional one, as on the command line.
//! What changed goes to `weft_engine::control::rearm`, the operation `weft rearm` calls,
//! so it is validated exactly like `weft task edit`. A file that does not parse, or an
//! edit the validation refuses, is opened again with the error on top; a file saved
//! unchanged (or emptied) re-arms nothing. At most [`MAX_ROUNDS`] rounds.

use std::collections::BTreeSet;
use std::process::Command;

use serde::{Deserialize, Serialize};
use weft_core::{Task, TaskChanges};
use weft_engine::EngineError;
use weft_store::{Store, StoreError};

/// Times the editor is opened again after an error before giving up.
pub const MAX_ROUNDS: usize = 20;

/// A task's editable fields, as the TOML file shows them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Editable {
    pub title: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub prompt: String,
    #[serde(default)]
    pub runner: String,
    #[serde(default)]
    pub model: String,
    #[serde(default)]
    pub effort: String,
    #[serde(default)]
    pub mode: String,
    #[serde(default)]
    pub checks: Vec<String>,
}

impl Editable {
    pub fn of(task: &Task) -> Editable {
        let text = |v: &Option<String>| v.clone().unwrap_or_default();
        Editable {
            title: task.title.clone(),
            description: text(&task.description),
            prompt: task.prompt.clone(),
            runner: text(&task.runner),
            model: text(&task.model),
            effort: text(&task.effort),
            mode: text(&task.mode),
            checks: task.checks.clone(),
        }
    }

    /// What differs from `before`, as the changes `weft rearm` would pass.
    pub fn changes_from(&self, before: &Editable) -> TaskChanges {
        let field = |new: &String, old: &String| (new != old).then(|| new.clone());
        TaskChanges {
            title: field(&self.title, &before.title),
            description: field(&self.description, &before.description),
            prompt: field(&self.prompt, &before.prompt),
            runner: field(&self.runner, &before.runner),
            model: field(&self.model, &before.model),
            effort: field(&self.effort, &before.effort),
            mode: field(&self.mode, &before.mode),
            checks: (self.checks != before.checks).then(|| self.checks.clone()),
            ..TaskChanges::default()
        }
    }
}

const HEADER: &str = "# Re-arm this task: edit the fields, save and quit. \"\" clears an optional \
                      field.\n# Save it unchanged (or empty) to re-arm nothing.\n";

/// The file's text: errors (as comments) on top, then the fields.
pub fn file_text(error: Option<&str>, fields: &str) -> String {
    let mut text = String::new();
    if let Some(error) = error {
        for line in error.lines() {
            text.push_str("# ERROR: ");
            text.push_str(line);
            text.push('\n');
        }
    }
    text.push_str(HEADER);
    text.push_str(fields);
    text
}

/// The fields part of an edited file (the comments weft wrote dropped).
fn strip_comments(text: &str) -> String {
    text.lines()
        .skip_while(|l| l.starts_with("# ERROR: ") || HEADER.lines().any(|h| h == *l))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// How an edited file reads: unchanged (nothing to do), invalid (why), or changes.
#[derive(Debug, PartialEq)]
pub enum Reading {
    Unchanged,
    Invalid(String),
    Changes(TaskChanges),
}

pub fn read(edited: &str, before: &Editable) -> Reading {
    if edited.trim().is_empty() {
        return Reading::Unchanged;
    }
    match toml::from_str::<Editable>(edited) {
        Err(e) => Reading::Invalid(e.to_string()),
        Ok(after) => {
            let changes = after.changes_from(before);
            if changes.is_empty() {
                Reading::Unchanged
            } else {
                Reading::Changes(changes)
            }
        }
    }
}

fn refused(detail: String) -> EngineError {
    EngineError::Refused {
        detail,
        hint: "`weft rearm N --prompt …` does the same from the command line".to_owned(),
    }
}

/// Open `editor` on the task's fields until they validate (or are left as they were),
/// then re-arm it. Runs with the terminal in its normal mode.
pub fn rearm(
    store: &mut Store,
    plan_id: &str,
    task_id: &str,
    editor: &str,
    runner_names: &BTreeSet<String>,
) -> Result<Vec<String>, EngineError> {
    let plan = store.plan(plan_id)?;
    let task = plan
        .tasks
        .iter()
        .find(|t| t.id == task_id)
        .ok_or_else(|| refused(format!("task {task_id:?} is no longer in the plan")))?;
    let before = Editable::of(task);
    let fields = toml::to_string(&before)
        .map_err(|e| refused(format!("cannot write the task as TOML: {e}")))?;
    let mut text = file_text(None, &fields);
    let file = tempfile::Builder::new()
        .prefix("weft-rearm-")
        .suffix(".toml")
        .tempfile()
        .map_err(|e| refused(format!("cannot make a temporary file: {e}")))?;
    for _ in 0..MAX_ROUNDS {
        fs_err::write(file.path(), &text).map_err(|e| refused(e.to_string()))?;
        let status = Command::new("sh")
            .arg("-c")
            .arg(format!("{editor} \"$1\""))
            .arg("sh")
            .arg(file.path())
            .status()
            .map_err(|e| refused(format!("cannot start the editor {editor:?}: {e}")))?;
        if !status.success() {
            return Err(refused(format!(
                "the editor {editor:?} exited with {status}; nothing was re-armed"
            )));
        }
        let edited = fs_err::read_to_string(file.path()).map_err(|e| refused(e.to_string()))?;
        let body = strip_comments(&edited);
        let changes = match read(&body, &before) {
            Reading::Unchanged => {
                return Ok(vec![
                    "nothing changed: the task was not re-armed".to_owned(),
                ]);
            }
            Reading::Invalid(why) => {
                text = file_text(Some(&why), &body);
                continue;
            }
            Reading::Changes(changes) => changes,
        };
        match weft_engine::control::rearm(store, plan_id, task_id, &changes, &|r| {
            runner_names.contains(r)
        }) {
            Ok(report) => return Ok(report.lines),
            Err(error @ (EngineError::Edit(_) | EngineError::Store(StoreError::Edit(_)))) => {
                let hint = weft_core::Hint::hint(&error)
                    .map(|h| format!("\nhint: {h}"))
                    .unwrap_or_default();
                text = file_text(Some(&format!("{error}{hint}")), &body);
            }
            Err(other) => return Err(other),
        }
    }
    Err(refused(format!(
        "the task's fields did not validate after {MAX_ROUNDS} edits; nothing was re-armed"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edit_yields_only_the_fields_that_changed_and_an_empty_string_clears() {
        let mut task = Task::new("limiter", "Add a limiter");
        task.model = Some("opus".into());
        task.prompt = "do it".into();
        let before = Editable::of(&task);
        let mut after = before.clone();
        after.model = String::new();
        after.prompt = "do it well".into();
        let text = toml::to_string(&after).unwrap();
        let Reading::Changes(changes) = read(&text, &before) else {
            panic!("expected changes");
        };
        assert_eq!(changes.model.as_deref(), Some(""));
        assert_eq!(changes.prompt.as_deref(), Some("do it well"));
        assert_eq!(changes.title, None);
        assert_eq!(
            read(&toml::to_string(&before).unwrap(), &before),
            Reading::Unchanged
        );
        assert_eq!(read("  \n", &before), Reading::Unchanged);
    }

    #[test]
    fn a_file_that_does_not_parse_or_names_an_unknown_field_is_invalid_with_the_reason() {
        let before = Editable::of(&Task::new("a", "A"));
        let Reading::Invalid(why) = read("title = \"A\"\npriority = 3\n", &before) else {
            panic!("an unknown field must be refused");
        };
        assert!(why.contains("priority"), "{why}");
        assert!(matches!(read("title = ", &before), Reading::Invalid(_)));
    }

    #[test]
    fn the_error_comments_weft_wrote_are_dropped_before_reading_again() {
        let text = file_text(Some("bad\nthing"), "title = \"A\"\n");
        assert_eq!(strip_comments(&text), "title = \"A\"\n");
    }
}
