//! The binary's place in the crate graph: front ends reach the agents and git only through
//! the engine, so that every front end (this CLI, and the server and TUI to come) drives
//! the same runtime and no front end runs an agent or git on its own.
//!
//! Read from the manifests rather than `cargo metadata`: no cargo process, no lock file
//! or network, and a dependency renamed with `package = "..."` (here or in the
//! workspace's table) is still caught.

use std::path::Path;

/// Crates the `weft` binary must not depend on directly.
const BEHIND_THE_ENGINE: [&str; 2] = ["weft-agents", "weft-git"];

fn manifest(path: &Path) -> toml::Table {
    let text = fs_err::read_to_string(path).unwrap();
    text.parse()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The package each normal dependency of `crate_manifest` names: its `package` key, else
/// its `path`'s last part, else its key; `workspace = true` entries resolved against the
/// workspace's `[workspace.dependencies]`.
fn normal_dependencies(crate_manifest: &toml::Table, workspace: &toml::Table) -> Vec<String> {
    let inherited = workspace["workspace"]["dependencies"]
        .as_table()
        .expect("the workspace has [workspace.dependencies]");
    let mut tables: Vec<&toml::Table> = Vec::new();
    if let Some(table) = crate_manifest
        .get("dependencies")
        .and_then(|d| d.as_table())
    {
        tables.push(table);
    }
    // `[target.'cfg(unix)'.dependencies]` are normal dependencies too.
    for target in crate_manifest
        .get("target")
        .and_then(|t| t.as_table())
        .into_iter()
        .flat_map(|t| t.values())
    {
        if let Some(table) = target.get("dependencies").and_then(|d| d.as_table()) {
            tables.push(table);
        }
    }
    let mut names = Vec::new();
    for table in tables {
        for (key, spec) in table {
            let spec = match spec.get("workspace").and_then(|w| w.as_bool()) {
                Some(true) => inherited.get(key).unwrap_or(spec),
                _ => spec,
            };
            let package = spec.get("package").and_then(|p| p.as_str());
            let path = spec
                .get("path")
                .and_then(|p| p.as_str())
                .and_then(|p| p.rsplit('/').next());
            names.push(package.or(path).unwrap_or(key).to_owned());
        }
    }
    names
}

#[test]
fn the_binary_depends_on_the_engine_and_on_neither_the_agents_nor_git() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dependencies = normal_dependencies(
        &manifest(&root.join("Cargo.toml")),
        &manifest(&root.join("../../Cargo.toml")),
    );
    // The reading is right: the crates the binary does use are found.
    for used in ["weft-engine", "weft-core", "weft-store"] {
        assert!(
            dependencies.iter().any(|d| d == used),
            "{used} missing from {dependencies:?}"
        );
    }
    for crate_name in BEHIND_THE_ENGINE {
        assert!(
            !dependencies.iter().any(|d| d == crate_name),
            "crates/weft depends on {crate_name} directly; reach it through a weft-engine \
             facade instead (weft_engine::runners, ::transcripts, ::repository)"
        );
    }
}

#[test]
fn the_server_depends_on_the_engine_store_and_core_and_on_neither_the_bin_nor_the_agents_nor_git() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dependencies = normal_dependencies(
        &manifest(&root.join("../weft-server/Cargo.toml")),
        &manifest(&root.join("../../Cargo.toml")),
    );
    for used in ["weft-engine", "weft-core", "weft-store"] {
        assert!(
            dependencies.iter().any(|d| d == used),
            "{used} missing from {dependencies:?}"
        );
    }
    for crate_name in BEHIND_THE_ENGINE.iter().chain(&["weft"]) {
        assert!(
            !dependencies.iter().any(|d| d == crate_name),
            "crates/weft-server depends on {crate_name}; the bin hands it what it needs \
             through weft_server::Host, and agents and git are reached through the engine"
        );
    }
}

#[test]
fn the_tui_depends_on_the_engine_store_and_core_and_on_neither_the_agents_git_nor_the_binary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = manifest(&root.join("../../Cargo.toml"));
    let binary = normal_dependencies(&manifest(&root.join("Cargo.toml")), &workspace);
    assert!(binary.iter().any(|d| d == "weft-tui"), "{binary:?}");
    let tui = normal_dependencies(&manifest(&root.join("../weft-tui/Cargo.toml")), &workspace);
    for used in ["weft-engine", "weft-core", "weft-store"] {
        assert!(tui.iter().any(|d| d == used), "{used} missing from {tui:?}");
    }
    for crate_name in BEHIND_THE_ENGINE.iter().chain(&["weft"]) {
        assert!(
            !tui.iter().any(|d| d == crate_name),
            "crates/weft-tui depends on {crate_name}; a front end reaches agents and git \
             through weft-engine, and the binary depends on the TUI, not the other way"
        );
    }
}
