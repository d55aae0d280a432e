//! The read-only research envelope: the tools an API planner may call.
