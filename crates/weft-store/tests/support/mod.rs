//! What the store's integration tests share: a temporary workspace and a store in it.

use std::path::{Path, PathBuf};

use weft_store::{OpenOptions, Store};

/// A temporary workspace and the path of its (not yet created) state folder.
pub fn workspace() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("temporary folder");
    let dir = tmp.path().join(".weft");
    (tmp, dir)
}

/// The store of state folder `dir`, made if it is not there.
pub fn create(dir: &Path) -> Store {
    Store::open_or_create(dir, OpenOptions::default()).expect("open_or_create")
}
