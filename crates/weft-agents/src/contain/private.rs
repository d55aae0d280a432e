//! Files and folders only the user can read, whatever the umask: what weft writes under
//! `.weft/` (logs, prompt files, temp folders) may hold secrets an agent printed.
//!
//! A mode given at creation is filtered by the umask, which can only remove bits, so
//! `0700`/`0600` come out as asked under any umask that leaves the owner's bits (the
//! only sane ones); an existing folder or file is tightened with `chmod`, which the
//! umask does not touch.

use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Folder mode under `.weft/`.
pub const DIR_MODE: u32 = 0o700;
/// File mode under `.weft/`.
pub const FILE_MODE: u32 = 0o600;

/// Creates `dir` and its missing parents `0700`; an existing `dir` is tightened to
/// `0700` (its existing parents are left alone).
pub fn create_dir_all(dir: &Path) -> io::Result<()> {
    if !dir.is_dir() {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(DIR_MODE)
            .create(dir)
            .map_err(|e| with_path(e, dir))?;
    }
    tighten(dir, DIR_MODE)
}

/// Creates (or truncates) `path` for writing, `0600`, its parent folders `0700`.
pub fn create_file(path: &Path) -> io::Result<std::fs::File> {
    if let Some(parent) = path.parent()
        && !parent.as_os_str().is_empty()
    {
        create_dir_all(parent)?;
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(path)
        .map_err(|e| with_path(e, path))?;
    // A file that existed keeps its old mode through `open`.
    file.set_permissions(std::fs::Permissions::from_mode(FILE_MODE))
        .map_err(|e| with_path(e, path))?;
    Ok(file)
}

/// Writes `text` to `path` as [`create_file`] creates it.
pub fn write(path: &Path, text: &[u8]) -> io::Result<()> {
    use std::io::Write;
    create_file(path)?
        .write_all(text)
        .map_err(|e| with_path(e, path))
}

fn tighten(path: &Path, mode: u32) -> io::Result<()> {
    let meta = std::fs::metadata(path).map_err(|e| with_path(e, path))?;
    if meta.permissions().mode() & 0o7777 != mode {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .map_err(|e| with_path(e, path))?;
    }
    Ok(())
}

fn with_path(error: io::Error, path: &Path) -> io::Error {
    io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}
