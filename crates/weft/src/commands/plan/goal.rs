//! `weft plan "goal"`: the planner researches the workspace read-only, asks what matters,
//! agrees an outline, and commits a validated plan. With `--yes` or without a terminal it
//! asks nothing and records its assumptions in the tasks.

use std::io::IsTerminal;

use weft_core::approval::Scope;
use weft_engine::planning::{
    self, AgentCliKind, PlannerChoice, PlanningConfig, PlanningError, PlanningOutcome,
    RunnerChoice, Style,
};
use weft_engine::runners;

use crate::commands::plan::print_plan;
use crate::commands::{JsonArg, print_json};
use crate::context::Ctx;
use crate::error::{CliError, CliResult};
use crate::planner_ui::TerminalPlanner;
use crate::render::note;

// Options shared by `weft plan "goal"` and `weft plan revise`. (Not a doc comment: see
// `JsonArg`.)
#[derive(Debug, Clone, clap::Args)]
pub struct PlannerArgs {
    /// Who plans: openai, claude-code, codex or opencode (default: the `planner` setting).
    #[arg(long, value_name = "NAME")]
    pub planner: Option<String>,
    /// The planner's model (default: WEFT_PLANNER_MODEL, or the agent CLI's own default).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The planner's thinking effort, for agent CLIs that take one.
    #[arg(long, value_name = "EFFORT")]
    pub effort: Option<String>,
    /// Plan in one shot: ask nothing, write each assumption into the task it shaped.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Hold the conversation even when standard input is not a terminal (answers are read
    /// line by line).
    #[arg(long, conflicts_with = "yes")]
    pub interactive: bool,
    /// Allow a scope in every approvals mode for this session (repeatable), e.g.
    /// `--allow path:/etc/*` or `--allow 'command:git log'`.
    #[arg(long = "allow", value_name = "SCOPE")]
    pub allow: Vec<String>,
}

/// The planner the user asked for, or the first one that can work here.
fn choose_planner(ctx: &Ctx, asked: Option<&str>) -> CliResult<PlannerChoice> {
    let named = asked.or(ctx.settings.planner.planner.as_deref());
    if let Some(name) = named {
        return PlannerChoice::parse(name).ok_or_else(|| {
            CliError::new(format!("unknown planner {name:?}"))
                .hint("choose openai, claude-code, codex or opencode")
        });
    }
    let env_set = |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty());
    if env_set("WEFT_PLANNER_MODEL") || env_set("WEFT_PLANNER_BASE_URL") {
        return Ok(PlannerChoice::OpenAi);
    }
    let (registry, _) = ctx.registry();
    let mut kinds = vec![
        AgentCliKind::ClaudeCode,
        AgentCliKind::Codex,
        AgentCliKind::OpenCode,
    ];
    // The default runner first: the user is most likely logged into it.
    kinds.sort_by_key(|kind| kind.name() != ctx.settings.runner());
    for kind in kinds {
        if which(&runners::planner_program(&registry, kind)) {
            return Ok(PlannerChoice::Agent(kind));
        }
    }
    Err(
        CliError::new("no planner is available: no agent CLI was found and WEFT_PLANNER_MODEL is not set")
            .hint("install and log into claude, codex or opencode, or set WEFT_PLANNER_BASE_URL, WEFT_PLANNER_API_KEY and WEFT_PLANNER_MODEL")
            .hint("or write the plan by hand: `weft plan --file plan.toml` (`weft plan schema` prints the format)"),
    )
}

/// Whether `program` can be started (a path, or an executable on PATH).
fn which(program: &str) -> bool {
    runners::program_available(program, std::env::var_os("PATH").as_deref())
}

/// Resolve the planning settings from the flags, the settings and the environment.
pub fn planning_config(ctx: &Ctx, args: &PlannerArgs, style: Style) -> CliResult<PlanningConfig> {
    let choice = choose_planner(ctx, args.planner.as_deref())?;
    let (registry, _) = ctx.registry();
    let mut config = PlanningConfig::new(ctx.workspace.root.clone(), choice.clone(), style);
    if let PlannerChoice::Agent(kind) = &choice {
        let program = runners::planner_program(&registry, *kind);
        // The comparable tool's preflight: presence, not health (a lapsed login shows up
        // as the CLI's own error on the first turn).
        if !which(&program) {
            return Err(CliError::new(format!(
                "{program} is not installed or is not on PATH, so the {} planner cannot start",
                kind.name()
            ))
            .hint("install it and log in once, or choose another planner with --planner"));
        }
        config.program = Some(program);
        config.contain = weft_engine::contain::planner_containment(
            &ctx.contain_config(),
            &ctx.workspace.state_dir(),
            crate::context::transcript_locator().home.as_deref(),
            kind.name(),
        )?;
    }
    if choice == PlannerChoice::OpenAi {
        config.research_contain = weft_engine::contain::research_containment(
            &ctx.contain_config(),
            &ctx.workspace.state_dir(),
        )?;
    }
    config.model = args.model.clone();
    if args.effort.is_some() && choice == PlannerChoice::OpenAi {
        return Err(CliError::new(
            "--effort applies to agent-CLI planners; the openai planner has no effort setting",
        )
        .hint("pick a reasoning model with --model or WEFT_PLANNER_MODEL instead"));
    }
    config.effort = args.effort.clone();
    let mut names: Vec<String> = registry.names().map(str::to_owned).collect();
    names.sort();
    config.runners = names
        .iter()
        .map(|name| RunnerChoice {
            name: name.clone(),
            available: runners::runner_program(&registry, name).is_some_and(which),
        })
        .collect();
    config.default_runner = Some(ctx.settings.runner().to_owned());
    config.env = std::env::vars().collect();
    config.secrets = weft_engine::secrets::secret_values(
        config.env.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    );
    config.approval_mode = ctx.settings.approvals.mode;
    config.pre_approved = ctx.settings.approvals.pre_approved.clone();
    for scope in &args.allow {
        config
            .pre_approved
            .push(Scope::parse(scope).map_err(|e| CliError::new(format!("--allow: {e}")))?);
    }
    // A conversation has someone to ask (here, or from another terminal); a one-shot run
    // has nobody, so its asks are denied at once.
    config.approval_channel = style == Style::Conversation;
    config.max_steps = ctx.settings.planner.max_steps;
    config.interrupt = Some(crate::interrupt::install());
    config.turn_timeout = ctx.settings.planner.turn_timeout;
    Ok(config)
}

/// Whether this invocation holds a conversation.
pub fn conversational(args: &PlannerArgs) -> bool {
    !args.yes && (args.interactive || std::io::stdin().is_terminal())
}

pub fn run(goal: String, args: PlannerArgs, output: JsonArg, ctx: Ctx) -> CliResult {
    if goal.trim().is_empty() {
        return Err(CliError::new("the goal is empty").hint(
            "say what you want done, e.g. `weft plan \"Add rate limiting to the public API\"`",
        ));
    }
    let style = if conversational(&args) {
        Style::Conversation
    } else {
        Style::OneShot
    };
    let config = planning_config(&ctx, &args, style)?;
    let front = match style {
        Style::Conversation => TerminalPlanner::conversation(config.interrupt.clone()),
        _ => TerminalPlanner::one_shot(config.interrupt.clone()),
    };
    let mut front = front.text_on_stderr(output.json);
    // Configuration errors (no model, no key) before anything is stored.
    let label = planning::backend(&config)
        .map_err(|e| planning_error(PlanningError::Planner(e), &config))?
        .label();
    let mut store = ctx.store_for_write()?;
    note(&format!(
        "planning with {label} ({}); research is read-only",
        if style == Style::OneShot {
            "one shot: no questions, assumptions go into the tasks"
        } else {
            "type /done to stop"
        }
    ));
    let outcome = planning::plan_from_goal(&mut store, goal.trim(), &config, &mut front)
        .map_err(|e| planning_error(e, &config))?;
    match outcome {
        PlanningOutcome::Committed { plan, prd_path } => {
            note(&format!(
                "created plan {} with {} task{}; it is now the current plan",
                plan.short_id(),
                plan.tasks.len(),
                if plan.tasks.len() == 1 { "" } else { "s" }
            ));
            if let Some(path) = prd_path {
                note(&format!("the PRD is in {path}"));
            }
            note(
                "review it with `weft status`, edit with `weft task …` or `weft plan revise \"…\"`, then `weft run`",
            );
            print_plan(&plan, ctx.settings.runner(), output)
        }
        PlanningOutcome::Abandoned { draft }
            if weft_engine::interrupted(config.interrupt.as_ref()) =>
        {
            let mut error = CliError::new(format!(
                "planning interrupted before a plan; draft {draft} keeps the research log"
            ))
            .hint(format!("`weft plan log --plan {draft}` shows it"));
            error.code = crate::error::EXIT_INTERRUPTED;
            Err(error)
        }
        PlanningOutcome::Abandoned { draft } => {
            note(&format!(
                "planning ended without a plan; draft {draft} keeps the research log (`weft plan log --plan {draft}`)"
            ));
            if output.json {
                return print_json(&serde_json::json!({ "plan": null, "draft": draft }));
            }
            Ok(())
        }
        PlanningOutcome::Revised { .. } => unreachable!("a goal is never a revision"),
    }
}

pub fn planning_error(error: PlanningError, config: &PlanningConfig) -> CliError {
    let mut out = CliError::from(error);
    if weft_engine::interrupted(config.interrupt.as_ref()) {
        out.code = crate::error::EXIT_INTERRUPTED;
    }
    out
}
