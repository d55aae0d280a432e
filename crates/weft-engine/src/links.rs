//! Making a fresh task worktree runnable: the user's ignored artifacts linked in
//! (`links`), or a `setup` command run there instead; and recording what either made, so
//! that it is never committed as the task's work.
//!
//! Contract:
//! - **Entries.** A `links` entry is a path or a glob (`globset` syntax, `*` never crossing
//!   a `/`, `**` any depth: `node_modules`, `.env*`, `packages/*/node_modules`,
//!   `**/target`), relative to each repository's main checkout. [`Links::parse`] checks
//!   them when settings load: an absolute entry, one with `..` or a malformed glob is an
//!   error naming the entry.
//! - **Expansion.** Entries are expanded against the main checkout by one bounded walk
//!   ([`Links::expand`]): never into `.git` or `.weft`, never through a symbolic link,
//!   never into a folder no entry could match below, never into a match, at most
//!   [`MAX_DEPTH`] deep, at most [`MAX_FOLDERS`] folders read and [`MAX_MATCHES`]
//!   matches (past either, the cut fails with a clear error rather than linking half).
//!   A glob that matches nothing is fine.
//! - **Linking, entry by entry.** Each match gets its own symlink in the worktree, to the
//!   main checkout's path. A path the worktree already has (tracked content) is never
//!   replaced; a match whose parent folder the worktree lacks, or reaches through a
//!   symbolic link, is skipped (weft never creates folders, nor writes through a link).
//! - **Workspace links.** A match named `node_modules` that is a real folder is mirrored:
//!   the worktree gets a real `node_modules` folder and one link per entry (and per entry
//!   of its `@scope` folders and `.bin`). An entry that is itself a relative symlink
//!   resolving inside the repository (npm and pnpm workspaces link
//!   `node_modules/<pkg>` to `../packages/<pkg>`; pnpm links a package's dependencies to
//!   `../../node_modules/.pnpm/…`) is recreated as the same relative symlink, so it
//!   resolves inside the worktree: `require('<pkg>')` there loads the worktree's
//!   `packages/<pkg>`, the one the agent edits, not the main checkout's stale copy. Every
//!   other entry links to the main checkout's (absolute).
//! - **Setup.** A `setup` command replaces linking ([`setup`]): it runs once per cut in
//!   the task folder, contained like every attempt process, and the untracked files it
//!   created are recorded like links.
//! - **Never committed.** What was linked or created is recorded on the cut's parts
//!   (`Part::links`, relative to each worktree; a mirrored `node_modules` is recorded as
//!   the folder, everything in it being weft's) and excluded from the commit of what the
//!   agent left (`Repo::commit_all` takes it back out of the index, even after the agent's
//!   own `git add -A && git commit`), so it never reaches the task's branch, its landing
//!   or the landing guards (which judge the branch). The attempt's `attempt_started`
//!   event names it (at most [`EVENT_LINKS`] paths).
//!
//! Threads: called on the run loop's thread while an attempt is prepared. Crash safety:
//! nothing is recorded in the store here; a cut whose engine died is reclaimed like any
//! other (its links are symlinks, which never count as work).

use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

use globset::{Glob, GlobBuilder, GlobMatcher};

use crate::contain::SetupContainment;
use crate::error::EngineError;
use crate::isolation::{Cut, Isolation, Runnable};

pub(crate) mod setup;

pub(crate) use setup::{Created, setup_files_changed};

/// At most this many paths match the `links` entries in one checkout.
pub const MAX_MATCHES: usize = 1_000;
/// At most this many folders are read to expand the `links` entries in one checkout.
pub const MAX_FOLDERS: usize = 20_000;
/// The walk goes no deeper than this.
pub const MAX_DEPTH: usize = 32;
/// At most this many entries are mirrored from one checkout's `node_modules` folders.
pub const MAX_MIRRORED: usize = 50_000;
/// The `attempt_started` event names at most this many of what a cut made runnable.
pub const EVENT_LINKS: usize = 200;

/// The `links` setting, checked: what of each main checkout is linked into a worktree.
#[derive(Debug, Clone, Default)]
pub struct Links {
    entries: Vec<Entry>,
}

#[derive(Debug, Clone)]
struct Entry {
    text: String,
    whole: Matcher,
    /// Per path component; `None` when the entry cannot be split (the walk then reads
    /// every folder below the checkout for it).
    steps: Option<Vec<Step>>,
}

#[derive(Debug, Clone)]
enum Step {
    /// `**`: any number of folders.
    AnyDepth,
    Name(Matcher),
}

/// A glob checked when settings load and compiled the first time it matches: every weft
/// command loads the settings, few ever expand `links`, and compiling the default
/// entries' matchers (a regex each) was 1.3 M instructions of every command.
#[derive(Debug, Clone)]
struct Matcher {
    glob: Glob,
    compiled: OnceLock<GlobMatcher>,
}

impl Matcher {
    fn is_match(&self, path: impl AsRef<Path>) -> bool {
        self.compiled
            .get_or_init(|| self.glob.compile_matcher())
            .is_match(path)
    }
}

fn glob(text: &str) -> Result<Matcher, globset::Error> {
    Ok(Matcher {
        glob: GlobBuilder::new(text)
            .literal_separator(true)
            .backslash_escape(true)
            .build()?,
        compiled: OnceLock::new(),
    })
}

impl Links {
    /// Check the entries (empty ones are skipped; a trailing `/` and a leading `./` are
    /// dropped). The error names the entry and what is wrong with it.
    pub fn parse<S: AsRef<str>>(entries: &[S]) -> Result<Links, String> {
        let mut parsed = Vec::new();
        for entry in entries {
            let raw = entry.as_ref().trim();
            let text = raw.trim_start_matches("./").trim_end_matches('/');
            if text.is_empty() {
                continue;
            }
            if text.starts_with('/') {
                return Err(format!(
                    "has an absolute entry `{raw}`; links are paths or globs inside the checkout, e.g. `packages/*/node_modules`"
                ));
            }
            if text.split('/').any(|part| part == "..") {
                return Err(format!(
                    "has an entry `{raw}` that climbs out of the checkout with `..`; links are paths or globs inside it"
                ));
            }
            let whole = glob(text)
                .map_err(|e| format!("has a malformed glob in entry `{raw}`: {}", e.kind()))?;
            let steps = text
                .split('/')
                .map(|part| match part {
                    "**" => Some(Step::AnyDepth),
                    part => glob(part).ok().map(Step::Name),
                })
                .collect();
            parsed.push(Entry {
                text: text.to_owned(),
                whole,
                steps,
            });
        }
        Ok(Links { entries: parsed })
    }

    /// The entries as written (normalised).
    pub fn entries(&self) -> impl Iterator<Item = &str> {
        self.entries.iter().map(|e| e.text.as_str())
    }

    fn matches(&self, relative: &Path) -> bool {
        self.entries.iter().any(|e| e.whole.is_match(relative))
    }

    /// Whether some entry could match a path below folder `relative`.
    fn could_contain(&self, relative: &Path) -> bool {
        let names: Vec<&std::ffi::OsStr> = relative.iter().collect();
        self.entries.iter().any(|entry| {
            let Some(steps) = &entry.steps else {
                return true;
            };
            for (index, name) in names.iter().enumerate() {
                match steps.get(index) {
                    None => return false,
                    Some(Step::AnyDepth) => return true,
                    Some(Step::Name(glob)) if glob.is_match(name) => {}
                    Some(Step::Name(_)) => return false,
                }
            }
            names.len() < steps.len()
        })
    }

    /// Every path of `root` the entries match, relative, sorted (see the module
    /// documentation for the walk's bounds).
    pub fn expand(&self, root: &Path) -> Result<Vec<PathBuf>, EngineError> {
        let mut found = Vec::new();
        if self.entries.is_empty() {
            return Ok(found);
        }
        let mut folders = vec![PathBuf::new()];
        let mut read = 0usize;
        while let Some(folder) = folders.pop() {
            read += 1;
            if read > MAX_FOLDERS {
                return Err(self.too_many(root, format!("more than {MAX_FOLDERS} folders")));
            }
            // An unreadable folder holds nothing to link.
            let Ok(dir) = fs_err::read_dir(root.join(&folder)) else {
                continue;
            };
            for entry in dir.flatten() {
                let name = entry.file_name();
                if name == ".git" || name == ".weft" {
                    continue;
                }
                let relative = folder.join(&name);
                if self.matches(&relative) {
                    found.push(relative);
                    if found.len() > MAX_MATCHES {
                        return Err(self.too_many(root, format!("more than {MAX_MATCHES} matches")));
                    }
                    continue;
                }
                // `file_type` does not follow a symbolic link: the walk never leaves.
                let folder_below = entry.file_type().is_ok_and(|t| t.is_dir());
                if folder_below
                    && relative.components().count() < MAX_DEPTH
                    && self.could_contain(&relative)
                {
                    folders.push(relative);
                }
            }
        }
        found.sort();
        Ok(found)
    }

    fn too_many(&self, root: &Path, what: String) -> EngineError {
        let entries: Vec<&str> = self.entries().collect();
        EngineError::Isolation {
            detail: format!(
                "the `links` entries {} found {what} in {}; nothing was linked",
                entries.join(", "),
                root.display()
            ),
            hint: "make the entries more specific (a literal first folder, e.g. `packages/*/node_modules` rather than `**/node_modules`), or use `setup` instead".into(),
        }
    }
}

/// Make the cut's fresh worktrees runnable (the one call `Isolation::cut` makes): link
/// each main checkout's matches in, or run the setup command; what was made is recorded
/// on the cut's parts.
pub(crate) fn make_runnable(
    iso: &Isolation,
    cut: &mut Cut,
    runnable: &Runnable,
    contain: &SetupContainment,
) -> Result<(), EngineError> {
    match runnable {
        Runnable::Link(links) => {
            for part in &mut cut.parts {
                let main = iso.slots[part.slot].repo.root();
                let mut mirrored = 0usize;
                for relative in links.expand(main)? {
                    if link_match(main, &part.path, &relative, &mut mirrored)? {
                        part.links.push(relative);
                    }
                }
            }
            Ok(())
        }
        Runnable::Setup(command) => setup::run(iso, cut, command, contain),
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> EngineError + '_ {
    move |error| EngineError::Io {
        path: path.display().to_string(),
        error,
    }
}

/// Link one match of the main checkout `main` into `worktree`; false when it is skipped
/// (the worktree has the path, or no real parent folder for it).
fn link_match(
    main: &Path,
    worktree: &Path,
    relative: &Path,
    mirrored: &mut usize,
) -> Result<bool, EngineError> {
    let target = worktree.join(relative);
    if target.symlink_metadata().is_ok() {
        // Tracked content is already there; it is never replaced.
        return Ok(false);
    }
    // Every folder on the way must be a real folder of the worktree: weft creates none
    // and never writes through a symbolic link (a tracked one could lead anywhere).
    let mut on_the_way = worktree.to_path_buf();
    if let Some(parent) = relative.parent() {
        for name in parent.iter() {
            on_the_way.push(name);
            match on_the_way.symlink_metadata() {
                Ok(meta) if meta.is_dir() => {}
                _ => return Ok(false),
            }
        }
    }
    let source = main.join(relative);
    let is_folder = source.symlink_metadata().is_ok_and(|m| m.is_dir());
    if is_folder && relative.file_name().is_some_and(|n| n == "node_modules") {
        mirror(main, worktree, &source, &target, true, mirrored)?;
    } else {
        link_entry(main, worktree, &source, &target)?;
    }
    Ok(true)
}

/// Mirror the folder `source` (a `node_modules`, or one of its `@scope` folders or
/// `.bin`) as a real folder `target` holding one link per entry.
fn mirror(
    main: &Path,
    worktree: &Path,
    source: &Path,
    target: &Path,
    top: bool,
    mirrored: &mut usize,
) -> Result<(), EngineError> {
    fs_err::create_dir(target).map_err(io(target))?;
    let mut names: Vec<(std::ffi::OsString, bool)> = fs_err::read_dir(source)
        .map_err(io(source))?
        .flatten()
        .map(|e| {
            let folder = e.file_type().is_ok_and(|t| t.is_dir());
            (e.file_name(), folder)
        })
        .collect();
    names.sort();
    // Scope folders and `.bin` after the plain entries, `.bin` last: its links point at
    // the packages (`../pkg/cli.js`), which must be in place to be seen in the worktree.
    let nested = |name: &std::ffi::OsStr, folder: bool| {
        top && folder && (name == ".bin" || name.as_encoded_bytes().starts_with(b"@"))
    };
    names.sort_by_key(|(name, folder)| (nested(name, *folder), name == ".bin"));
    for (name, folder) in names {
        *mirrored += 1;
        if *mirrored > MAX_MIRRORED {
            return Err(EngineError::Isolation {
                detail: format!(
                    "{} holds more than {MAX_MIRRORED} entries to mirror into the worktree",
                    source.display()
                ),
                hint: "link fewer `node_modules` folders (name them in `links`), or use `setup` instead".into(),
            });
        }
        let (from, to) = (source.join(&name), target.join(&name));
        if nested(&name, folder) {
            mirror(main, worktree, &from, &to, false, mirrored)?;
        } else {
            link_entry(main, worktree, &from, &to)?;
        }
    }
    Ok(())
}

/// Link `source` (in the main checkout `main`) at `target` (in `worktree`): the same
/// relative link when `source` is one that resolves inside the repository and to
/// something the worktree has, else a link to `source` itself.
fn link_entry(
    main: &Path,
    worktree: &Path,
    source: &Path,
    target: &Path,
) -> Result<(), EngineError> {
    if let Ok(points_to) = fs_err::read_link(source)
        && points_to.is_relative()
        && let Some(from) = source.parent()
        && let Some(resolved) = lexical(&from.join(&points_to))
        && let Ok(inside) = resolved.strip_prefix(main)
        && worktree.join(inside).symlink_metadata().is_ok()
    {
        return std::os::unix::fs::symlink(&points_to, target).map_err(io(target));
    }
    std::os::unix::fs::symlink(source, target).map_err(io(target))
}

/// `path` with `.` and `..` taken out by name (no link followed); `None` when it climbs
/// above the root.
fn lexical(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            other => out.push(other),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn links(entries: &[&str]) -> Links {
        Links::parse(entries).unwrap()
    }

    #[test]
    fn entries_match_at_their_own_depth_and_globstars_at_any() {
        let set = links(&[
            "node_modules",
            ".env*",
            "packages/*/node_modules",
            "**/target",
        ]);
        for yes in [
            "node_modules",
            ".env",
            ".env.local",
            "packages/a/node_modules",
            "target",
            "crates/x/target",
        ] {
            assert!(set.matches(Path::new(yes)), "{yes}");
        }
        for no in [
            "a/node_modules",
            "packages/a/b/node_modules",
            "x/.env",
            "packages/node_modules",
        ] {
            assert!(!set.matches(Path::new(no)), "{no}");
        }
    }

    #[test]
    fn the_walk_reads_only_folders_an_entry_could_match_below() {
        let set = links(&["packages/*/node_modules"]);
        assert!(set.could_contain(Path::new("packages")));
        assert!(set.could_contain(Path::new("packages/a")));
        assert!(!set.could_contain(Path::new("packages/a/src")));
        assert!(!set.could_contain(Path::new("src")));
        let deep = links(&["crates/**/target"]);
        assert!(deep.could_contain(Path::new("crates/a/b/c")));
        assert!(!deep.could_contain(Path::new("docs")));
    }

    #[test]
    fn bad_entries_are_refused_naming_them() {
        let bad = Links::parse(&["node_modules", "packages/[a/node_modules"]).unwrap_err();
        assert!(bad.contains("`packages/[a/node_modules`"), "{bad}");
        assert!(Links::parse(&["/etc"]).unwrap_err().contains("`/etc`"));
        assert!(Links::parse(&["../x"]).unwrap_err().contains("`../x`"));
        let fine = links(&[" ./node_modules/ ", ""]);
        assert_eq!(fine.entries().collect::<Vec<_>>(), ["node_modules"]);
    }

    proptest::proptest! {
        /// The walk's pruning never hides a match: every folder above a path an entry
        /// matches is one the walk reads.
        #[test]
        fn no_folder_above_a_match_is_pruned(
            entry in proptest::collection::vec(
                proptest::sample::select(vec!["a", "b", "*", "**", "a*", "?", "{a,b}", "[ab]"]),
                1..5,
            ),
            path in proptest::collection::vec(proptest::sample::select(vec!["a", "b", "ab", "c"]), 1..7),
        ) {
            let set = links(&[entry.join("/").as_str()]);
            let path: PathBuf = path.iter().collect();
            if set.matches(&path) {
                let mut above = PathBuf::new();
                for name in path.parent().into_iter().flat_map(Path::iter) {
                    above.push(name);
                    proptest::prop_assert!(set.could_contain(&above), "{} pruned above {}", above.display(), path.display());
                }
            }
        }
    }

    #[test]
    fn lexical_resolution_never_climbs_above_the_root() {
        assert_eq!(
            lexical(Path::new("/r/node_modules/../packages/b")),
            Some(PathBuf::from("/r/packages/b"))
        );
        assert_eq!(lexical(Path::new("/../..")), None);
    }
}
