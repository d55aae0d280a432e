//! Plan emission: JSON extraction from model replies, validation, task edits and the PRD block.
