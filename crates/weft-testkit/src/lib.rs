//! Test-only helpers: a hermetic environment for running weft, real git repositories in
//! temporary folders, and the recorded agent-CLI output the tests read ([`samples`]).

pub mod fake;
pub mod hermetic;
pub mod mock_model;
pub mod repo;
pub mod samples;

pub use hermetic::Hermetic;
pub use repo::TestRepo;
