//! Errors of planner backends. Every message names what the user can act on: the variable a
//! key came from, the address that could not be reached, the CLI's own error text.

use std::time::Duration;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum ProviderError {
    /// No key, base URL or model configured.
    #[error("the `openai` planner is not configured: {what}")]
    NotConfigured { what: String },
    /// 401/403: the endpoint refused the key; `key_var` names where the key came from.
    #[error("{url} refused the API key from {key_var} (HTTP {status}): {message}")]
    Unauthorized {
        url: String,
        key_var: String,
        status: u16,
        message: String,
    },
    #[error("cannot reach the planner endpoint at {address}: {message}")]
    Unreachable { address: String, message: String },
    #[error("the planner endpoint at {url} did not answer within {}s", .after.as_secs())]
    Timeout { url: String, after: Duration },
    /// Any other non-2xx status.
    #[error("the planner endpoint at {url} answered HTTP {status}: {message}")]
    Status {
        url: String,
        status: u16,
        message: String,
    },
    /// The stream ended before the model finished (no `[DONE]`, no finish reason).
    #[error("the planner endpoint at {url} closed the stream mid-reply: {message}")]
    StreamCut { url: String, message: String },
    /// The endpoint sent something that is not the chat-completions format.
    #[error("the planner endpoint at {url} sent a reply weft cannot read: {message}")]
    Protocol { url: String, message: String },
    /// An agent CLI could not be started.
    #[error("cannot start the {runner} planner (`{program}`): {message}")]
    Spawn {
        runner: String,
        program: String,
        message: String,
    },
    /// An agent CLI ended the turn with an error; `message` is the CLI's own text.
    #[error("the {runner} planner failed: {message}")]
    Agent { runner: String, message: String },
    #[error(
        "the {runner} planner gave no answer within {}s; it was stopped{}",
        .after.as_secs(),
        said(.last_words)
    )]
    AgentTimeout {
        runner: String,
        after: Duration,
        /// The last thing it reported (a retry, a warning, its stderr), if anything.
        last_words: Option<String>,
    },
    /// The user interrupted the turn; an agent CLI's processes were stopped.
    #[error("the {what} was interrupted")]
    Interrupted { what: String },
}

fn said(words: &Option<String>) -> String {
    match words {
        Some(words) => format!(" (its last message: {words})"),
        None => String::new(),
    }
}

impl weft_core::Hint for ProviderError {
    fn hint(&self) -> Option<String> {
        match self {
            ProviderError::NotConfigured { .. } => Some(
                "set WEFT_PLANNER_BASE_URL, WEFT_PLANNER_API_KEY and WEFT_PLANNER_MODEL, or plan with an agent CLI you are logged into: --planner claude-code|codex|opencode".into(),
            ),
            ProviderError::Unauthorized { key_var, .. } => {
                Some(format!("check the key in {key_var}, or point WEFT_PLANNER_BASE_URL at the service that issued it"))
            }
            ProviderError::Unreachable { .. } => Some(
                "check WEFT_PLANNER_BASE_URL and that the service is running; nothing was planned".into(),
            ),
            ProviderError::Timeout { .. } => {
                Some("the service may be overloaded; try again, or raise planner_timeout".into())
            }
            ProviderError::Status { status, .. } if *status >= 500 => {
                Some("the service failed; try again later".into())
            }
            ProviderError::Status { .. } => {
                Some("check WEFT_PLANNER_MODEL and WEFT_PLANNER_BASE_URL".into())
            }
            ProviderError::StreamCut { .. } => Some("try again; nothing was saved from the cut reply".into()),
            ProviderError::Protocol { .. } => Some(
                "WEFT_PLANNER_BASE_URL must point at an OpenAI-compatible API (usually ending in /v1)".into(),
            ),
            ProviderError::Spawn { runner, .. } => Some(format!(
                "install {runner} or put it on PATH; `weft runners` shows what weft finds"
            )),
            ProviderError::Agent { .. } => Some(
                "the text above is the CLI's own; fix it there (for a login, run the CLI once by hand)".into(),
            ),
            ProviderError::AgentTimeout { .. } => Some("try again, or raise planner_timeout".into()),
            ProviderError::Interrupted { .. } => None,
        }
    }
}
