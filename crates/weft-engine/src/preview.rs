//! `weft prompt N`: what a task would be handed, without starting anything.

use weft_core::{Plan, resolve_task_ref};

use crate::EngineConfig;
use crate::attempt::{LaunchIds, plan_launch};
use crate::error::EngineError;
use crate::secrets::{mask, shown_value};

/// The composed prompt and the launch of a task's next attempt.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Preview {
    pub task: String,
    pub runner: String,
    pub program: String,
    pub args: Vec<String>,
    pub cwd: String,
    /// The exact environment the process starts with, secrets masked: what it is passed
    /// of weft's environment (the base, its runner's and the setting's `env_pass`), then
    /// what weft sets for it.
    pub env: Vec<(String, String)>,
    /// How many variables of weft's environment it is not passed.
    pub env_withheld: usize,
    /// How the prompt is delivered: stdin, argument, file or env.
    pub prompt_via: String,
    pub prompt: String,
    /// Whether the attempt will be confined, and the paths it may then write.
    pub confinement: crate::contain::ConfinementPreview,
    /// Its time limits and budget, and whose each is.
    pub limits: PreviewLimits,
}

/// An attempt's limits as the engine will apply them.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PreviewLimits {
    /// `the task's timeout = 2s` or `the task_timeout setting = 1h`.
    pub timeout: String,
    pub idle_timeout: String,
    /// The task's own budget (`$0.50, 200000 tokens`), over every attempt.
    pub budget_usd: Option<f64>,
    pub budget_tokens: Option<u64>,
    /// Why the attempt would not start (an `idle_timeout` not longer than `idle_after`).
    pub problem: Option<String>,
}

// Budgets are checked finite wherever they are set.
impl Eq for PreviewLimits {}

/// Preview task `reference` with placeholder marker and session ids (a real attempt gets
/// fresh ones).
pub fn preview(
    config: &EngineConfig,
    plan: &Plan,
    reference: &str,
) -> Result<Preview, EngineError> {
    let index = resolve_task_ref(&plan.tasks, reference)?;
    let prompt_dir = config.state_dir.join("prompts").join("preview");
    let launch = plan_launch(
        config,
        plan,
        index,
        LaunchIds {
            marker_id: "0123456789abcdef",
            session_id: "00000000-0000-4000-8000-000000000000",
            attempt_id: "preview",
            prompt_dir: &prompt_dir,
            cwd: &config.workspace,
            repair_note: None,
        },
    )?;
    let spec = &launch.spec;
    let manifest = crate::attempt::manifest_for(config, plan, index).ok();
    // Uncontained (an engine embedded without the weft binary), a process inherits
    // weft's whole environment.
    let passed = match config.contain.supervisor {
        Some(_) => config
            .contain
            .passed_env(manifest.map(weft_agents::manifest::Manifest::env_pass)),
        None => config
            .contain
            .env
            .0
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>()
            .into(),
    };
    // The prompt appears once, below; argv shows where it goes.
    let args = spec
        .args
        .iter()
        .map(|a| {
            if a == &launch.prompt && !a.is_empty() {
                "<prompt>".to_owned()
            } else {
                mask(a, &config.supervision.secrets)
            }
        })
        .collect();
    let prompt_via = if spec.stdin.is_some() && spec.relay.is_some() {
        "stdin (a stream-json user message; permission answers follow on stdin)"
    } else if spec.stdin.is_some() {
        "stdin"
    } else if spec.prompt_file.is_some() {
        "file"
    } else if spec.args.iter().any(|a| a == &launch.prompt) {
        "argument"
    } else {
        "env (WEFT_PROMPT)"
    };
    let task = &plan.tasks[index];
    let (timeout, idle_timeout, problem) = match crate::attempt::time_limits(&config.limits, task) {
        Ok(l) => (l.timeout_whose, l.idle_whose, None),
        Err(problem) => (String::new(), String::new(), Some(problem)),
    };
    let limits = PreviewLimits {
        timeout,
        idle_timeout,
        budget_usd: task.limits.budget_usd,
        budget_tokens: task.limits.budget_tokens,
        problem,
    };
    Ok(Preview {
        limits,
        task: plan.tasks[index].id.clone(),
        runner: launch.runner.clone(),
        program: spec.program.clone(),
        args,
        cwd: spec.cwd.display().to_string(),
        env: exact_env(config, &passed, spec)
            .into_iter()
            .map(|(k, v)| {
                let shown = if k == "WEFT_PROMPT" {
                    "<prompt>".to_owned()
                } else {
                    shown_value(&k, &v)
                };
                (k, mask(&shown, &config.supervision.secrets))
            })
            .collect(),
        env_withheld: config.contain.env.0.len().saturating_sub(passed.0.len()),
        prompt_via: prompt_via.into(),
        prompt: mask(&launch.prompt, &config.supervision.secrets),
        confinement: crate::contain::preview(config, &spec.cwd, manifest),
    })
}

/// What the process's environment will be: the passed variables, those the launch sets
/// (replacing a passed one of the same name) and the per-attempt `TMPDIR`.
fn exact_env(
    config: &EngineConfig,
    passed: &weft_agents::contain::env::Passed,
    spec: &weft_agents::manifest::LaunchSpec,
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = passed
        .0
        .iter()
        .map(|(k, v)| (k.clone(), v.to_string_lossy().into_owned()))
        .collect();
    let mut set = |name: &str, value: String| {
        env.retain(|(k, _)| k != name);
        env.push((name.to_owned(), value));
    };
    for (name, value) in &spec.env {
        set(name, value.clone());
    }
    if config.contain.supervisor.is_some() {
        let tmp = config.state_dir.join("tmp").join("<attempt>");
        set("TMPDIR", tmp.display().to_string());
    }
    env
}
