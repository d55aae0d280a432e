//! Embeds every file under `assets/` (the dashboard) into the binary: writes
//! `$OUT_DIR/assets.rs` with one `(name, bytes)` entry per file, so adding a file to the
//! dashboard needs no change here. A missing folder embeds nothing.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
    println!("cargo:rerun-if-changed={}", dir.display());
    let mut files = Vec::new();
    collect(&dir, &dir, &mut files);
    files.sort();
    let mut code = String::from(
        "/// Every dashboard file: its path under `assets/` and its bytes.\npub static FILES: &[(&str, &[u8])] = &[\n",
    );
    for (name, path) in &files {
        println!("cargo:rerun-if-changed={path}");
        let _ = writeln!(code, "    ({name:?}, include_bytes!({path:?})),");
    }
    code.push_str("];\n");
    let out = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("assets.rs");
    std::fs::write(out, code).expect("write assets.rs");
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        println!("cargo:rerun-if-changed={}", path.display());
        if path.is_dir() {
            collect(root, &path, files);
        } else if let Ok(relative) = path.strip_prefix(root) {
            files.push((
                relative.to_string_lossy().replace('\\', "/"),
                path.to_string_lossy().into_owned(),
            ));
        }
    }
}
