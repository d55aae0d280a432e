//! Which runner names weft knows. The engine issue replaces this with real manifests;
//! for now a runner is known when it is built in or a manifest file names it.

use std::collections::BTreeSet;
use std::path::Path;

use fs_err as fs;

pub const BUILT_IN: [&str; 4] = ["claude-code", "codex", "opencode", "exec"];

/// Built-in runners plus the stems of `*.toml` files in the given manifest folders.
pub fn known_runners(manifest_dirs: &[&Path]) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = BUILT_IN.iter().map(|n| (*n).to_owned()).collect();
    for dir in manifest_dirs {
        let Ok(entries) = fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "toml")
                && let Some(stem) = path.file_stem().and_then(|s| s.to_str())
            {
                names.insert(stem.to_owned());
            }
        }
    }
    names
}
