//! A scripted OpenAI-compatible model server on loopback, for planner tests.
