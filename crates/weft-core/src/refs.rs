//! Resolving what a user typed (`3`, `#3`, an id, an id prefix) to a task.

use thiserror::Error;

use crate::model::Task;

/// How many valid references an error lists before it summarises the rest.
const LISTED_REFERENCES: usize = 12;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RefError {
    #[error("the plan has no task {reference:?}; valid references: {valid}")]
    Unknown { reference: String, valid: String },
    #[error("{reference:?} matches more than one task id: {candidates}")]
    Ambiguous {
        reference: String,
        candidates: String,
    },
    #[error("the plan has no tasks, so {reference:?} cannot name one")]
    EmptyPlan { reference: String },
}

impl crate::Hint for RefError {
    fn hint(&self) -> Option<String> {
        Some("name a task by its order number, #order or id".into())
    }
}

/// Index of the task `reference` names: an order number (`3` or `#3`), an exact id, or an
/// id prefix that only one task has.
pub fn resolve_task_ref(tasks: &[Task], reference: &str) -> Result<usize, RefError> {
    let reference = reference.trim();
    if tasks.is_empty() {
        return Err(RefError::EmptyPlan {
            reference: reference.to_owned(),
        });
    }
    let digits = reference.strip_prefix('#').unwrap_or(reference);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(order) = digits.parse::<usize>()
            && (1..=tasks.len()).contains(&order)
        {
            return Ok(order - 1);
        }
        return Err(unknown(tasks, reference));
    }
    if let Some(index) = tasks.iter().position(|t| t.id == reference) {
        return Ok(index);
    }
    let matches: Vec<usize> = tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| !reference.is_empty() && t.id.starts_with(reference))
        .map(|(i, _)| i)
        .collect();
    match matches.as_slice() {
        [only] => Ok(*only),
        [] => Err(unknown(tasks, reference)),
        many => Err(RefError::Ambiguous {
            reference: reference.to_owned(),
            candidates: list(many.iter().map(|&i| describe(&tasks[i])), many.len()),
        }),
    }
}

fn unknown(tasks: &[Task], reference: &str) -> RefError {
    RefError::Unknown {
        reference: reference.to_owned(),
        valid: list(tasks.iter().map(describe), tasks.len()),
    }
}

fn describe(task: &Task) -> String {
    format!("{} ({})", task.order, task.id)
}

fn list(items: impl Iterator<Item = String>, total: usize) -> String {
    let mut shown: Vec<String> = items.take(LISTED_REFERENCES).collect();
    if total > LISTED_REFERENCES {
        shown.push(format!("and {} more", total - LISTED_REFERENCES));
    }
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tasks(ids: &[&str]) -> Vec<Task> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| {
                let mut t = Task::new(*id, *id);
                t.order = crate::model::order_of(i);
                t
            })
            .collect()
    }

    #[test]
    fn orders_ids_and_prefixes_resolve() {
        let plan = tasks(&["schema", "server", "client"]);
        assert_eq!(resolve_task_ref(&plan, "2"), Ok(1));
        assert_eq!(resolve_task_ref(&plan, "#3"), Ok(2));
        assert_eq!(resolve_task_ref(&plan, "client"), Ok(2));
        assert_eq!(resolve_task_ref(&plan, "sc"), Ok(0));
    }

    #[test]
    fn exact_id_wins_over_prefix() {
        let plan = tasks(&["api", "api-docs"]);
        assert_eq!(resolve_task_ref(&plan, "api"), Ok(0));
    }

    #[test]
    fn ambiguous_prefix_lists_candidates() {
        let plan = tasks(&["schema", "server"]);
        let err = resolve_task_ref(&plan, "s").unwrap_err();
        assert_eq!(
            err.to_string(),
            "\"s\" matches more than one task id: 1 (schema), 2 (server)"
        );
    }

    #[test]
    fn unknown_lists_valid_references_bounded() {
        let plan = tasks(&["a", "b"]);
        let err = resolve_task_ref(&plan, "9").unwrap_err();
        assert_eq!(
            err.to_string(),
            "the plan has no task \"9\"; valid references: 1 (a), 2 (b)"
        );
        let many: Vec<String> = (0..30).map(|i| format!("t{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        let err = resolve_task_ref(&tasks(&many), "zzz")
            .unwrap_err()
            .to_string();
        assert!(err.ends_with("and 18 more"), "{err}");
    }
}
