//! Committing a task's work, and finding leftover conflict markers.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::repo::{lossy, nul_records};
use crate::{GitError, Oid, Repo};

/// How much of a file is looked at to decide it is binary (git's own heuristic: a NUL in
/// the first 8000 bytes).
const BINARY_PROBE: usize = 8000;

impl Repo {
    /// What `git commit` does after committing and weft's commits leave out: `git
    /// maintenance run --auto`, which packs loose objects and refs once they pass git's
    /// thresholds (in the background where git can: `--detach`, from git 2.47). Best
    /// effort: a failure only means the next check does the work.
    pub fn run_auto_maintenance(&self) {
        let detached = self
            .call()
            .args(["maintenance", "run", "--auto", "--quiet", "--detach"])
            .output();
        if detached.is_ok_and(|out| out.code() == Some(129)) {
            // Older than 2.47: no `--detach` (its gc detaches itself, `gc.autoDetach`).
            let _ = self
                .call()
                .args(["maintenance", "run", "--auto", "--quiet"])
                .output();
        }
    }

    /// Commit everything in this working tree — tracked changes and untracked files that
    /// are not ignored — except the `exclude`d paths, with `message`. Returns the new
    /// commit, or `None` when there was nothing to commit.
    ///
    /// `exclude` lists paths relative to the working tree root (absolute paths inside it
    /// are accepted): the links weft created. They never reach the commit: they are not
    /// staged, and if they are in the index anyway (the agent ran `git add -A`, or even
    /// committed one) they are removed from it, so the commit's tree does not contain
    /// them. The files themselves stay on disk.
    ///
    /// The commit uses the repository's configured identity, or `weft <weft@localhost>`
    /// for the parts that are not configured. Hooks do not run (`--no-verify`): the
    /// agent's work was already judged, and a hook must not block or rewrite it. If a
    /// merge is in progress (a repair attempt), the commit concludes it.
    pub fn commit_all<P: AsRef<Path>>(
        &self,
        message: &str,
        exclude: &[P],
    ) -> Result<Option<Oid>, GitError> {
        let mut relative = Vec::with_capacity(exclude.len());
        for path in exclude {
            let path = path.as_ref();
            let path = path.strip_prefix(self.root()).unwrap_or(path);
            if path.is_absolute() || path.as_os_str().is_empty() {
                return Err(GitError::WorktreePath {
                    repo: self.root().to_owned(),
                    path: path.to_owned(),
                    reason: "an excluded path must be inside the worktree".to_owned(),
                });
            }
            relative.push(path.as_os_str().as_bytes().to_vec());
        }

        // Stage everything, then take the excluded paths back out of the index. (Naming
        // them as exclude pathspecs to `add` fails when one is also ignored, e.g. `.env`.)
        self.call().args(["add", "--all"]).run()?;
        if !relative.is_empty() {
            let mut unstage = Vec::new();
            for path in &relative {
                unstage.extend_from_slice(b":(literal)");
                unstage.extend_from_slice(path);
                unstage.push(0);
            }
            self.call()
                .args([
                    "rm",
                    "--quiet",
                    "--cached",
                    "-r",
                    "--force",
                    "--ignore-unmatch",
                    "--pathspec-from-file=-",
                    "--pathspec-file-nul",
                ])
                .stdin(unstage)
                .run()?;
        }

        // No `diff --cached` first and no `rev-parse HEAD` after: on a detached HEAD (as
        // weft's worktrees are) with no merge in progress, `git commit` without
        // `--allow-empty` itself says whether anything was staged (exit 1, "nothing to
        // commit", HEAD unmoved), and the new HEAD is read from this working tree's HEAD
        // file. On a branch, or concluding a merge, it asks git as before.
        let merging = self.git_path_exists("MERGE_HEAD")?;
        let before = if merging { None } else { self.head_file() };
        if before.is_none() && !merging {
            let staged = self
                .read()
                .args(["diff", "--cached", "--quiet", "--no-ext-diff"])
                .run_accepting(&[0, 1])?;
            if staged.code() == Some(0) {
                return Ok(None);
            }
        }
        let mut options = self.identity_config()?.to_vec();
        // No `git maintenance run --auto` after each commit (a process of its own, a
        // twentieth of an isolated task): a run makes one commit per task, and checks
        // once, at its end ([`Repo::run_auto_maintenance`]).
        options.push("maintenance.auto=false".into());
        let mut call = self.call().config(&options).args([
            "commit",
            "--quiet",
            "--no-verify",
            "--no-edit",
            "--cleanup=verbatim",
        ]);
        if before.is_none() {
            call = call.arg("--allow-empty");
        }
        let call = call.args(["-m", message]);
        let out = call.run_accepting(if before.is_some() { &[0, 1] } else { &[0] })?;
        let after = self.head_file();
        if out.code() == Some(1) {
            // Exit 1 is "nothing to commit" (messages are in `LC_ALL=C`) with HEAD unmoved.
            if after == before && String::from_utf8_lossy(&out.stdout).contains("nothing") {
                return Ok(None);
            }
            return Err(call.unexpected(format!(
                "git commit exited 1: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        match after {
            Some(head) => Ok(Some(head)),
            None => self.resolve("HEAD").map(Some),
        }
    }

    /// The commit this working tree's HEAD file names when HEAD is detached (a plain
    /// object id); `None` when it is on a branch or the file cannot be read.
    fn head_file(&self) -> Option<Oid> {
        let text = std::fs::read_to_string(self.git_dir().join("HEAD")).ok()?;
        Oid::parse(text.trim_end())
    }

    /// Whether this working tree's state file `name` (e.g. `MERGE_HEAD`, which lives in
    /// the per-worktree git folder) exists.
    pub(crate) fn git_path_exists(&self, name: &str) -> Result<bool, GitError> {
        Ok(self.git_dir().join(name).exists())
    }

    /// Which of `paths` (relative to this working tree's root) still contain a conflict
    /// marker line: a line starting with `<<<<<<<` or `>>>>>>>` followed by a space or
    /// the end of the line. Reads the files on disk; missing files, folders, symlinks and
    /// binary files are skipped. Returns the offending paths in the order given.
    pub fn conflict_markers_in<P: AsRef<Path>>(
        &self,
        paths: &[P],
    ) -> Result<Vec<String>, GitError> {
        let mut found = Vec::new();
        for path in paths {
            let relative = path.as_ref();
            let full = self.root().join(relative);
            let metadata = match std::fs::symlink_metadata(&full) {
                Ok(metadata) => metadata,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => return Err(GitError::io(full, error)),
            };
            if !metadata.is_file() {
                continue;
            }
            let bytes = std::fs::read(&full).map_err(|error| GitError::io(&full, error))?;
            let probe = &bytes[..bytes.len().min(BINARY_PROBE)];
            if memchr::memchr(0, probe).is_none() && has_conflict_marker(&bytes) {
                found.push(relative.to_string_lossy().into_owned());
            }
        }
        Ok(found)
    }

    /// Like [`Repo::conflict_markers_in`], but looks at the files as committed in `rev`
    /// (`git grep` on the commit, binary files skipped), not at the working tree.
    pub fn conflict_markers_at<P: AsRef<Path>>(
        &self,
        rev: &Oid,
        paths: &[P],
    ) -> Result<Vec<String>, GitError> {
        if paths.is_empty() {
            return Ok(Vec::new());
        }
        let mut call = self.read().args([
            "grep",
            "--files-with-matches",
            "-z",
            "-I",
            "--no-color",
            "--extended-regexp",
            "-e",
            "^(<<<<<<<|>>>>>>>)( |\r?$)",
            rev.as_str(),
            "--",
        ]);
        for path in paths {
            let mut spec = std::ffi::OsString::from(":(literal)");
            spec.push(path.as_ref().as_os_str());
            call = call.arg(spec);
        }
        let out = call.run_accepting(&[0, 1])?;
        let prefix = format!("{rev}:");
        Ok(nul_records(&out.stdout)
            .map(|record| lossy(record.strip_prefix(prefix.as_bytes()).unwrap_or(record)))
            .collect())
    }
}

/// Whether `bytes` hold a line that starts with 7 `<` or 7 `>` followed by a space or the
/// end of the line.
pub(crate) fn has_conflict_marker(bytes: &[u8]) -> bool {
    for needle in [&b"<<<<<<<"[..], &b">>>>>>>"[..]] {
        for at in memchr::memmem::find_iter(bytes, needle) {
            let line_start = at == 0 || bytes[at - 1] == b'\n';
            let after = bytes.get(at + needle.len()).copied();
            let ends = matches!(after, None | Some(b' ' | b'\n' | b'\r'));
            if line_start && ends {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::has_conflict_marker;

    #[test]
    fn markers_are_whole_line_prefixes() {
        assert!(has_conflict_marker(
            b"<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n"
        ));
        assert!(has_conflict_marker(b"ok\n>>>>>>> theirs"));
        assert!(has_conflict_marker(b"ok\n<<<<<<<\r\n"));
        assert!(has_conflict_marker(b"<<<<<<<"));
        assert!(!has_conflict_marker(b"a <<<<<<< b\n"));
        assert!(!has_conflict_marker(b"<<<<<<<< eight\n"));
        assert!(!has_conflict_marker(b"=======\n"));
        assert!(!has_conflict_marker(b""));
    }
}
