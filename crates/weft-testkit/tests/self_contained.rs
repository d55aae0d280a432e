//! The repository is self-contained: a fresh clone passes its own tests. Nothing under
//! `crates/` and nothing in the README reads or names a folder beside the checkout, the
//! README links only inside the repository, and every agent-output sample the tests read is
//! here and listed in its README. (`.ci/run` proves the first by running the suite from a
//! copy of the repository with nothing beside it; these tests catch it sooner.)

use std::path::{Path, PathBuf};

use fs_err as fs;
use weft_testkit::samples::agent_output;

/// Where the tests once found their samples, outside the repository. Spelled in pieces so
/// that this file does not name them itself.
const OUTSIDE: [&str; 2] = [concat!("..", "/shared"), concat!("shared", "/fixtures")];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every file under `dir`, recursively, skipping build output.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable folder") {
        let entry = entry.expect("entry");
        let path = entry.path();
        let kind = entry.file_type().expect("file type");
        if kind.is_dir() {
            if entry.file_name() != "target" {
                files(&path, out);
            }
        } else if kind.is_file() {
            out.push(path);
        }
    }
}

#[test]
fn nothing_in_crates_or_the_readme_names_a_folder_beside_the_checkout() {
    let root = workspace();
    let mut checked = Vec::new();
    files(&root.join("crates"), &mut checked);
    checked.push(root.join("README.md"));
    assert!(
        checked.len() > 100,
        "the walk found the sources: {checked:?}"
    );
    let mut offenders = Vec::new();
    for path in &checked {
        let text = String::from_utf8_lossy(&fs::read(path).expect("readable file")).into_owned();
        for (n, line) in text.lines().enumerate() {
            if OUTSIDE.iter().any(|needle| line.contains(needle)) {
                let shown = path.strip_prefix(&root).unwrap_or(path);
                offenders.push(format!("{}:{}: {}", shown.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "these lines name a folder outside the repository; a fresh clone has no such \
         folder (test data goes in crates/weft-testkit/data/):\n{}",
        offenders.join("\n")
    );
}

#[test]
fn the_readme_links_only_inside_the_repository() {
    let root = workspace();
    let readme = fs::read_to_string(root.join("README.md")).expect("README.md");
    let mut outside = Vec::new();
    for (at, _) in readme.match_indices("](") {
        let target = &readme[at + 2..];
        let target = &target[..target.find(')').unwrap_or(target.len())];
        let path = target.split('#').next().unwrap_or("");
        if path.contains("://") || path.starts_with('/') || path.starts_with("..") {
            outside.push(target.to_owned());
        }
    }
    assert!(
        outside.is_empty(),
        "README.md links outside the repository: {outside:?}"
    );
}

#[test]
fn every_agent_output_sample_is_listed_in_its_readme() {
    let dir = agent_output();
    let readme = fs::read_to_string(dir.join("README.md")).expect("the samples' README");
    let mut unlisted = Vec::new();
    let mut count = 0;
    for folder in ["claude", "codex", "opencode", "cli-help"] {
        for entry in fs::read_dir(dir.join(folder)).expect("sample folder") {
            let name = entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned();
            count += 1;
            // Folders (a whole storage tree) are listed as `name/`.
            let listed = if dir.join(folder).join(&name).is_dir() {
                readme.contains(&format!("`{name}/`"))
            } else {
                readme.contains(&format!("`{name}`")) || readme.contains(&format!("/{name}`"))
            };
            if !listed {
                unlisted.push(format!("{folder}/{name}"));
            }
        }
    }
    assert!(count > 90, "the samples are there: {count}");
    assert!(
        unlisted.is_empty(),
        "samples missing from {}: {unlisted:?}",
        dir.join("README.md").display()
    );
}
