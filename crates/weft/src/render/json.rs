//! `weft status --json` and `weft plan --json`: the plan as JSON, written by hand where
//! it is large (every task of a plan) and through serde elsewhere.

use std::io::Write;

use serde::Serialize;
use weft_core::{Plan, PlanStatus, Strings, TaskKind, TaskStatus, TaskView, Timestamp};

use super::*;

/// The `weft status --json` object, serialized straight from the plan without a tree.
#[derive(Serialize)]
pub struct StatusJson<'a> {
    plan: PlanJson<'a>,
    /// The plan's spend over every attempt (running ones so far), against its budget.
    spend: SpendJson,
}

/// The plan's spend against its budget (`budget_usd`, `budget_tokens`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpendJson {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// `null` when a model's price is unknown (never 0 for that).
    pub cost_usd: Option<f64>,
    /// The priced part, a lower bound when `cost_usd` is null.
    pub cost_usd_known: f64,
    pub budget_usd: Option<f64>,
    pub budget_tokens: Option<u64>,
    /// The limit the spend reached (`budget_usd = $0.30`): no new task starts.
    pub reached: Option<String>,
    /// For people: `$0.40 of $0.30, 12000 tokens`.
    pub text: String,
}

/// The plan's spend from its tasks' usage, against `budget`.
pub fn spend_json(
    usage: &HashMap<String, TaskUsage>,
    budget: &weft_core::spend::Budget,
) -> SpendJson {
    let mut spend = weft_core::spend::Spend::default();
    for used in usage.values() {
        spend.add(&used.spend());
    }
    SpendJson {
        input_tokens: spend.tokens.input,
        output_tokens: spend.tokens.output,
        cost_usd: spend.cost_usd(),
        cost_usd_known: spend.usd,
        budget_usd: budget.usd,
        budget_tokens: budget.tokens,
        reached: budget.reached(&spend).map(|l| l.to_string()),
        text: budget.against(&spend),
    }
}

impl StatusJson<'_> {
    /// With the plan's budget (the settings'; none by default).
    pub fn budget(
        mut self,
        usage: &HashMap<String, TaskUsage>,
        budget: &weft_core::spend::Budget,
    ) -> Self {
        self.spend = spend_json(usage, budget);
        self
    }
}

impl StatusJson<'_> {
    /// This object's fields, `"plan":{…},"spend":{…}` without the braces, exactly as
    /// `serde_json::to_writer` writes them (a test holds the two equal), so a caller can
    /// add fields of its own. The tasks are written by hand: through serde, `flatten`
    /// makes each task a map whose every key goes through the string escaper, and that
    /// was two thirds of `weft status --json` on 10,000 tasks.
    ///
    /// The tasks are written as [`TasksJson::write_each`] says; from
    /// [`turns::SPLIT_FROM`] tasks on, by two threads taking turns.
    pub fn write_fields(&self, sink: &mut impl Write) -> serde_json::Result<()> {
        self.write_fields_split(sink, turns::SPLIT_FROM)
    }

    /// [`StatusJson::write_fields`], by two threads from `split_from` tasks on (what tests
    /// of the split use).
    #[doc(hidden)]
    pub fn write_fields_split(
        &self,
        sink: &mut impl Write,
        split_from: usize,
    ) -> serde_json::Result<()> {
        let plan = &self.plan;
        let mut buffer = Vec::with_capacity(1024);
        let out = &mut buffer;
        out.extend_from_slice(b"\"plan\":{\"id\":");
        json_str(out, plan.id);
        out.extend_from_slice(b",\"short_id\":");
        json_str(out, plan.short_id);
        out.extend_from_slice(b",\"goal\":");
        json_str(out, plan.goal);
        out.extend_from_slice(b",\"status\":");
        json_str(out, plan.status.as_str());
        out.extend_from_slice(b",\"runner\":");
        json_opt_str(out, plan.runner);
        out.extend_from_slice(b",\"revision\":");
        serde_json::to_writer(&mut *out, &plan.revision)?;
        out.extend_from_slice(b",\"created_at\":");
        serde_json::to_writer(&mut *out, &plan.created_at)?;
        out.extend_from_slice(b",\"updated_at\":");
        serde_json::to_writer(&mut *out, &plan.updated_at)?;
        out.extend_from_slice(b",\"tasks\":[");
        sink.write_all(out).map_err(serde_json::Error::io)?;
        out.clear();
        let tasks = &plan.tasks;
        // From `turns::SPLIT_FROM` tasks on, by two threads taking turns (see `turns`):
        // the bytes one writes.
        let written = turns::in_turns(
            sink,
            tasks.view.len(),
            split_from,
            |_| (),
            |_, range, sink| {
                let after_one = range.start > 0;
                let each = tasks.each_from(range.start).take(range.len());
                tasks
                    .write_each(each, after_one, sink)
                    .map_err(std::io::Error::from)
            },
        );
        written.map_err(serde_json::Error::io)?;
        out.extend_from_slice(b"]},\"spend\":");
        serde_json::to_writer(&mut *out, &self.spend)?;
        sink.write_all(out).map_err(serde_json::Error::io)
    }
}

/// `text` as a JSON string, the bytes `serde_json` writes: straight through when nothing
/// in it needs an escape (`"`, `\\`, a control character), which is nearly always.
fn json_str(out: &mut Vec<u8>, text: &str) {
    // 16 bytes at a time, a branch-free test the compiler vectorizes, then the rest.
    let escaped = |bytes: &[u8]| {
        bytes.iter().fold(false, |any, &b| {
            any | (b < 0x20) | (b == b'"') | (b == b'\\')
        })
    };
    let mut chunks = text.as_bytes().chunks_exact(16);
    let plain = !chunks.any(escaped) && !escaped(chunks.remainder());
    if plain {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    } else {
        serde_json::to_writer(&mut *out, text).expect("a string always serializes");
    }
}

/// One of weft's own names (a status, a kind: lowercase ASCII letters and `_`, nothing to
/// escape) as a JSON string, without looking for escapes.
fn json_name(out: &mut Vec<u8>, name: &'static str) {
    debug_assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.push(b'"');
}

fn json_opt_str(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        Some(text) => json_str(out, text),
        None => out.extend_from_slice(b"null"),
    }
}

fn json_strs(out: &mut Vec<u8>, items: Strings<'_>) {
    match items {
        // Items with nothing to escape, between their stored `["` and `"]`: serde's bytes.
        Strings::Joined(Some(joined)) => {
            out.extend_from_slice(b"[\"");
            out.extend_from_slice(joined.as_bytes());
            out.extend_from_slice(b"\"]");
        }
        _ => {
            out.push(b'[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                json_str(out, item);
            }
            out.push(b']');
        }
    }
}

/// A list of strings as serde writes a `Vec<String>`.
struct StringsJson<'a>(Strings<'a>);

impl Serialize for StringsJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter())
    }
}

#[derive(Serialize)]
struct PlanJson<'a> {
    id: &'a str,
    short_id: &'a str,
    goal: &'a str,
    status: PlanStatus,
    runner: Option<&'a str>,
    revision: u64,
    created_at: Timestamp,
    updated_at: Timestamp,
    tasks: TasksJson<'a>,
}

/// The tasks of the JSON, made one at a time from the view ([`task_json`]): never all at
/// once (10,000 of them were 2 MiB).
struct TasksJson<'a> {
    view: PlanView<'a>,
    default_runner: &'a str,
    usage: &'a HashMap<String, TaskUsage>,
}

impl<'a> TasksJson<'a> {
    fn each(&self) -> impl Iterator<Item = TaskJson<'a>> + 'a {
        self.each_from(0)
    }

    /// The tasks after the first `skip`.
    fn each_from(&self, skip: usize) -> impl Iterator<Item = TaskJson<'a>> + 'a {
        let (plan, default_runner, usage) = (self.view.plan(), self.default_runner, self.usage);
        self.view
            .tasks_from(skip)
            .map(move |(task, reason)| task_json(task, reason, plan, default_runner, usage))
    }

    /// `tasks` one after the other, each after a `,` but the first (unless `after_one`:
    /// they follow tasks written before), each put together in one reused buffer and
    /// written with one `write_all`: `sink` should be buffered; a whole 10,000-task object
    /// in memory cost more in page faults than its writes did.
    fn write_each(
        &self,
        tasks: impl Iterator<Item = TaskJson<'a>>,
        after_one: bool,
        sink: &mut dyn Write,
    ) -> serde_json::Result<()> {
        let mut buffer = Vec::with_capacity(1024);
        for (index, task) in tasks.enumerate() {
            if after_one || index > 0 {
                buffer.push(b',');
            }
            task.write(&mut buffer)?;
            sink.write_all(&buffer).map_err(serde_json::Error::io)?;
            buffer.clear();
        }
        Ok(())
    }
}

impl Serialize for TasksJson<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.each())
    }
}

#[derive(Serialize)]
struct TaskJson<'a> {
    order: u32,
    id: &'a str,
    title: &'a str,
    status: TaskStatus,
    kind: TaskKind,
    /// The effective runner of an AI task; null for manual and ops tasks.
    runner: Option<&'a str>,
    dependencies: StringsJson<'a>,
    hold: bool,
    model: Option<&'a str>,
    effort: Option<&'a str>,
    mode: Option<&'a str>,
    checks: StringsJson<'a>,
    /// Its own `timeout`, `idle_timeout`, `budget_usd`, `budget_tokens` (unset: absent).
    #[serde(skip_serializing_if = "weft_core::TaskLimits::is_empty")]
    limits: weft_core::TaskLimits,
    verdict: Option<&'a weft_core::Verdict>,
    #[serde(flatten)]
    usage: Option<&'a TaskUsage>,
    /// Why it reads as it does, when the status was not the store's (see
    /// [`PlanView::orphaned`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'static str>,
}

impl TaskJson<'_> {
    /// What `serde_json` writes for this task (see [`StatusJson::write_fields`]); the
    /// rare parts, a verdict and the usage, still go through serde.
    fn write(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        out.extend_from_slice(b"{\"order\":");
        out.extend_from_slice(decimal(self.order, &mut [0; 10]));
        out.extend_from_slice(b",\"id\":");
        json_str(out, self.id);
        out.extend_from_slice(b",\"title\":");
        json_str(out, self.title);
        out.extend_from_slice(b",\"status\":");
        json_name(out, self.status.as_str());
        out.extend_from_slice(b",\"kind\":");
        json_name(out, self.kind.as_str());
        out.extend_from_slice(b",\"runner\":");
        json_opt_str(out, self.runner);
        out.extend_from_slice(b",\"dependencies\":");
        json_strs(out, self.dependencies.0);
        out.extend_from_slice(if self.hold {
            b",\"hold\":true"
        } else {
            b",\"hold\":false"
        });
        out.extend_from_slice(b",\"model\":");
        json_opt_str(out, self.model);
        out.extend_from_slice(b",\"effort\":");
        json_opt_str(out, self.effort);
        out.extend_from_slice(b",\"mode\":");
        json_opt_str(out, self.mode);
        out.extend_from_slice(b",\"checks\":");
        json_strs(out, self.checks.0);
        if !self.limits.is_empty() {
            out.extend_from_slice(b",\"limits\":");
            serde_json::to_writer(&mut *out, &self.limits)?;
        }
        out.extend_from_slice(b",\"verdict\":");
        serde_json::to_writer(&mut *out, &self.verdict)?;
        if let Some(usage) = self.usage {
            // Flattened: its fields, without its braces, follow the task's own.
            let object = serde_json::to_vec(usage)?;
            if let Some(fields) = object.get(1..object.len() - 1).filter(|f| !f.is_empty()) {
                out.push(b',');
                out.extend_from_slice(fields);
            }
        }
        if let Some(reason) = self.reason {
            out.extend_from_slice(b",\"reason\":");
            json_str(out, reason);
        }
        out.push(b'}');
        Ok(())
    }
}

/// One task of the JSON.
fn task_json<'a>(
    task: TaskView<'a>,
    reason: Option<&'static str>,
    plan: &'a Plan,
    default_runner: &'a str,
    usage: &'a HashMap<String, TaskUsage>,
) -> TaskJson<'a> {
    TaskJson {
        order: task.order,
        id: task.id,
        title: task.title,
        status: task.status,
        kind: task.kind,
        runner: match task.kind {
            TaskKind::Ai => Some(
                task.effective_runner(plan.runner.as_deref())
                    .unwrap_or(default_runner),
            ),
            _ => None,
        },
        dependencies: StringsJson(task.dependencies),
        hold: task.hold,
        model: task.model,
        effort: task.effort,
        mode: task.mode,
        checks: StringsJson(task.checks),
        limits: task.limits,
        verdict: task.verdict,
        usage: usage.get(task.id),
        reason,
    }
}

/// The `weft status --json` object of `view` (`weft plan --file --json` too).
pub fn plan_json<'a>(
    view: PlanView<'a>,
    default_runner: &'a str,
    usage: &'a HashMap<String, TaskUsage>,
) -> StatusJson<'a> {
    let plan = view.plan();
    StatusJson {
        plan: PlanJson {
            id: &plan.id,
            short_id: plan.short_id(),
            goal: &plan.goal,
            status: plan.status,
            runner: plan.runner.as_deref(),
            revision: plan.revision,
            created_at: plan.created_at,
            updated_at: plan.updated_at,
            tasks: TasksJson {
                view,
                default_runner,
                usage,
            },
        },
        spend: spend_json(usage, &weft_core::spend::Budget::default()),
    }
}
