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
    /// Variables added on top of weft's environment, secrets masked.
    pub env: Vec<(String, String)>,
    /// How the prompt is delivered: stdin, argument, file or env.
    pub prompt_via: String,
    pub prompt: String,
    /// Whether the attempt will be confined, and the paths it may then write.
    pub confinement: crate::contain::ConfinementPreview,
}

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
    Ok(Preview {
        task: plan.tasks[index].id.clone(),
        runner: launch.runner.clone(),
        program: spec.program.clone(),
        args,
        cwd: spec.cwd.display().to_string(),
        env: spec
            .env
            .iter()
            .map(|(k, v)| {
                let shown = if k == "WEFT_PROMPT" {
                    "<prompt>".to_owned()
                } else {
                    shown_value(k, v)
                };
                (k.clone(), mask(&shown, &config.supervision.secrets))
            })
            .collect(),
        prompt_via: prompt_via.into(),
        prompt: mask(&launch.prompt, &config.supervision.secrets),
        confinement: crate::contain::preview(
            config,
            &spec.cwd,
            crate::attempt::manifest_for(config, plan, index).ok(),
        ),
    })
}
