//! Errors as the API returns them: a status code and the CLI's JSON error shape,
//! `{"error", "hint", "causes"}`, with the same message, hint and causes the CLI prints.

use serde::Serialize;
use weft_core::{EditError, Hint, RefError};
use weft_engine::EngineError;
use weft_store::StoreError;

use crate::http::Response;

/// The most causes one error lists (as the CLI).
const MAX_CAUSES: usize = 16;

/// An error response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ApiError {
    #[serde(skip)]
    pub status: u16,
    pub error: String,
    /// Every hint, one per line; null when there is none.
    pub hint: Option<String>,
    pub causes: Vec<String>,
}

pub type ApiResult<T = Response> = Result<T, ApiError>;

impl ApiError {
    pub fn new(status: u16, error: impl Into<String>) -> ApiError {
        ApiError {
            status,
            error: error.into(),
            hint: None,
            causes: Vec::new(),
        }
    }

    pub fn bad_request(error: impl Into<String>) -> ApiError {
        ApiError::new(400, error)
    }

    pub fn not_found(error: impl Into<String>) -> ApiError {
        ApiError::new(404, error)
    }

    pub fn conflict(error: impl Into<String>) -> ApiError {
        ApiError::new(409, error)
    }

    pub fn internal(error: impl Into<String>) -> ApiError {
        ApiError::new(500, error)
    }

    pub fn hint(mut self, hint: impl Into<String>) -> ApiError {
        self.hint = Some(hint.into());
        self
    }

    /// A library error: its message, hint and distinct source chain, with `status`.
    pub fn from_error<E: Hint + 'static>(status: u16, error: &E) -> ApiError {
        let message = error.to_string();
        let mut causes: Vec<String> = Vec::new();
        let mut above = message.clone();
        let mut next = error.source();
        while let Some(current) = next {
            if causes.len() == MAX_CAUSES {
                break;
            }
            next = current.source();
            let cause = current.to_string().trim().to_owned();
            if cause.is_empty() || above.contains(&cause) {
                continue;
            }
            above.clone_from(&cause);
            causes.push(cause);
        }
        ApiError {
            status,
            error: message,
            hint: error.hint(),
            causes,
        }
    }

    pub fn response(&self) -> Response {
        Response::json(self.status, self)
    }
}

fn edit_status(error: &EditError) -> u16 {
    match error {
        EditError::Ref(RefError::Unknown { .. } | RefError::EmptyPlan { .. }) => 404,
        EditError::Ref(RefError::Ambiguous { .. }) => 400,
        EditError::Invalid(_)
        | EditError::BadPosition { .. }
        | EditError::NoChanges
        | EditError::MoveAcrossDependency { .. } => 400,
        EditError::Locked { .. } => 409,
    }
}

fn store_status(error: &StoreError) -> u16 {
    match error {
        StoreError::UnknownPlan { .. } | StoreError::UnknownTask { .. } => 404,
        StoreError::AmbiguousPlan { .. } => 400,
        StoreError::RunHeld { .. } | StoreError::Stale { .. } => 409,
        StoreError::Busy { .. } => 503,
        StoreError::Edit(edit) => edit_status(edit),
        _ => 500,
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> ApiError {
        ApiError::from_error(store_status(&error), &error)
    }
}

impl From<EditError> for ApiError {
    fn from(error: EditError) -> ApiError {
        ApiError::from_error(edit_status(&error), &error)
    }
}

impl From<RefError> for ApiError {
    fn from(error: RefError) -> ApiError {
        ApiError::from(EditError::from(error))
    }
}

impl From<EngineError> for ApiError {
    fn from(error: EngineError) -> ApiError {
        let status = match &error {
            EngineError::Store(store) => store_status(store),
            EngineError::Edit(edit) => edit_status(edit),
            EngineError::Ref(r) => edit_status(&EditError::Ref(r.clone())),
            EngineError::UnknownRunner { .. } | EngineError::RunnerUnavailable { .. } => 400,
            EngineError::TaskRunning { .. }
            | EngineError::WrongStatus { .. }
            | EngineError::NoActiveRun
            | EngineError::Draft { .. }
            | EngineError::Isolation { .. }
            | EngineError::Refused { .. } => 409,
            _ => 500,
        };
        ApiError::from_error(status, &error)
    }
}

impl From<std::io::Error> for ApiError {
    fn from(error: std::io::Error) -> ApiError {
        ApiError::internal(error.to_string())
    }
}
