//! Path arguments: `~` expansion, resolution through symlinks, containment and the `.env`
//! rule.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// What the tool does with a path, which decides the approval subject.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Reads a file (or searches one): [`weft_core::approval::Subject::Read`].
    Read,
    /// Lists or walks a directory: [`weft_core::approval::Subject::List`].
    List,
}

/// A resolved path argument.
#[derive(Debug, Clone)]
pub(crate) struct Located {
    /// Absolute, normalised lexically (`.` and `..` applied to the text), symlinks kept.
    pub lexical: PathBuf,
    /// Absolute with symlinks resolved: what the tools open.
    pub real: PathBuf,
    /// `real` is the workspace or inside it.
    pub inside: bool,
    /// `lexical` is the workspace or inside it (what git, which does not follow symlinks,
    /// sees).
    pub lexical_inside: bool,
    /// `lexical` relative to the workspace (`.` for the root) when `lexical_inside`.
    pub relative: Option<String>,
    /// The file name (given or resolved) marks a `.env*` file.
    pub env_file: bool,
    /// How to name the path in results: relative to the workspace when inside, else the
    /// resolved absolute path.
    pub shown: String,
}

/// Resolves `raw` against the workspace. `Err` is a refusal text.
pub(crate) fn locate(
    workspace_lexical: &Path,
    workspace_real: &Path,
    home: Option<&Path>,
    raw: &str,
) -> Result<Located, String> {
    if raw.contains('\0') {
        return Err("a path cannot contain a NUL character".to_owned());
    }
    let text = raw.trim();
    let text = if text.is_empty() { "." } else { text };
    let expanded = if text == "~" || text.starts_with("~/") {
        let home = home.ok_or_else(|| format!("cannot expand `{text}`: HOME is not known"))?;
        let mut path = home.to_path_buf();
        if let Some(rest) = text.strip_prefix("~/") {
            path.push(rest);
        }
        path
    } else if text.starts_with('~') {
        return Err(format!(
            "`{text}`: `~user` paths are not expanded; give the absolute path"
        ));
    } else {
        PathBuf::from(text)
    };
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        workspace_real.join(expanded)
    };
    let lexical = normalise(&joined);
    let real = resolve(&joined);
    let inside = real.starts_with(workspace_real);
    let lexical_inside =
        lexical.starts_with(workspace_real) || lexical.starts_with(workspace_lexical);
    let relative = if lexical_inside {
        let rest = lexical
            .strip_prefix(workspace_real)
            .or_else(|_| lexical.strip_prefix(workspace_lexical))
            .unwrap_or(Path::new(""));
        Some(if rest.as_os_str().is_empty() {
            ".".to_owned()
        } else {
            rest.to_string_lossy().into_owned()
        })
    } else {
        None
    };
    let env_file =
        lexical.file_name().is_some_and(is_env_file) || real.file_name().is_some_and(is_env_file);
    let shown = if inside {
        match real.strip_prefix(workspace_real) {
            Ok(rest) if rest.as_os_str().is_empty() => ".".to_owned(),
            Ok(rest) => rest.to_string_lossy().into_owned(),
            Err(_) => real.to_string_lossy().into_owned(),
        }
    } else {
        real.to_string_lossy().into_owned()
    };
    Ok(Located {
        lexical,
        real,
        inside,
        lexical_inside,
        relative,
        env_file,
        shown,
    })
}

/// Whether a file name marks an environment file whose reading needs approval: `.env`,
/// `.env.local`, `.envrc`, … but not the committed examples (`.env.example`, `.env.sample`,
/// `.env.template`, also as the last part: `.env.prod.example`).
pub fn is_env_file(name: &OsStr) -> bool {
    let name = name.to_string_lossy();
    if !name.starts_with(".env") {
        return false;
    }
    let last = name.rsplit('.').next().unwrap_or("");
    !matches!(
        last.to_ascii_lowercase().as_str(),
        "example" | "sample" | "template" | "dist"
    )
}

/// `path` with `.` and `..` applied lexically (`..` at the root stays at the root).
pub(crate) fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() && !path.is_absolute() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(if path.is_absolute() { "/" } else { "." });
    }
    out
}

/// `path` (absolute) with symlinks resolved as the kernel would: the longest existing prefix
/// is canonicalised and the rest applied lexically. A path with no existing prefix (or a
/// relative one) is only normalised.
pub(crate) fn resolve(path: &Path) -> PathBuf {
    if let Ok(real) = fs_err::canonicalize(path) {
        return real;
    }
    let components: Vec<Component> = path.components().collect();
    for split in (1..components.len()).rev() {
        let prefix: PathBuf = components[..split].iter().collect();
        let Ok(mut real) = fs_err::canonicalize(&prefix) else {
            continue;
        };
        for component in &components[split..] {
            match component {
                Component::CurDir => {}
                Component::ParentDir => {
                    real.pop();
                }
                other => real.push(other.as_os_str()),
            }
        }
        return real;
    }
    normalise(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_names() {
        for name in [".env", ".env.local", ".env.production", ".envrc"] {
            assert!(is_env_file(OsStr::new(name)), "{name}");
        }
        for name in [
            ".env.example",
            ".env.sample",
            ".env.template",
            ".env.prod.example",
            "env",
            "x.env",
            ".environment.md.sample",
        ] {
            assert!(!is_env_file(OsStr::new(name)), "{name}");
        }
    }

    #[test]
    fn normalises_lexically() {
        assert_eq!(normalise(Path::new("/a/b/../c/./d")), Path::new("/a/c/d"));
        assert_eq!(normalise(Path::new("/../..")), Path::new("/"));
        assert_eq!(normalise(Path::new("a/../../b")), Path::new("../b"));
    }

    #[test]
    fn resolves_the_existing_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let base = fs_err::canonicalize(dir.path()).unwrap();
        fs_err::create_dir(base.join("real")).unwrap();
        std::os::unix::fs::symlink(base.join("real"), base.join("link")).unwrap();
        assert_eq!(
            resolve(&base.join("link/missing/../x")),
            base.join("real/x")
        );
        assert_eq!(resolve(&base.join("link")), base.join("real"));
    }
}
