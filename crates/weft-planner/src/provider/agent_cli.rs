//! Agent CLIs as planners: Claude Code, Codex and OpenCode in their read-only modes.
