//! What the user can do about an error.
//!
//! Every library error of weft implements [`Hint`] (as uv's errors do): the message says
//! what went wrong and names the path, task or value; the hint says what to do about it.
//! Front ends print both (the CLI as `error:` and `hint:` lines, or as one JSON object);
//! no library prints either.
//!
//! Wrapping errors delegate to the error they wrap, so a hint survives every layer between
//! the place that knows what to do and the front end that says it.

/// The advice that goes with an error.
pub trait Hint: std::error::Error {
    /// One line telling the user what to do about this error, or `None` when the message
    /// already says all there is.
    fn hint(&self) -> Option<String>;
}
