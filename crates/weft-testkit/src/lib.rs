//! Test-only helpers: a hermetic environment for running weft, and real git repositories
//! in temporary folders.

pub mod fake;
pub mod hermetic;
pub mod mock_model;
pub mod repo;

pub use hermetic::Hermetic;
pub use repo::TestRepo;
