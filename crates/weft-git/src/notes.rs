//! Git notes: text attached to commits under a notes ref (weft's evidence lives under
//! `refs/notes/weft`), and reading commits in bulk.
//!
//! Contract:
//!
//! - **Reading** is bulk and bounded in processes: [`Repo::commit_objects`] reads the tree
//!   and message of any number of commits with one `git cat-file --batch` (none when the
//!   handle wrote them all itself lately: a landing's merge);
//!   [`Repo::notes_of`] reads the notes of any number of commits with one `git notes list`
//!   and one `git cat-file --batch`. A note over [`NOTE_LIMIT`] bytes is refused as
//!   [`GitError::Unexpected`] rather than read into memory whole; a message is cut at
//!   [`MESSAGE_LIMIT`].
//! - **Writing** ([`Repo::set_note`]) writes what `git notes --ref <ref> add -f` writes (the
//!   note's blob, the notes trees, a notes commit whose parent is the ref's old commit, by
//!   the same committer with git's message, logged as git logs it) through the handle's
//!   long-lived git processes (see `batch`: `hash-object --stdin-paths` for the blob,
//!   the trees and the commit, and one `update-ref --stdin` transaction), and moves the ref with a
//!   compare-and-swap from the commit it read. The note is written on every landing, and
//!   that is a few pipe exchanges, about 1 ms, where one `git notes add` process was
//!   3.2–3.8 ms (`cargo bench -p weft-git --bench notes` prints both). When a process fails, the ref moved
//!   meanwhile, or the text is one git would clean up (more than one line, surrounding
//!   blanks), it runs `git notes add -f -F -` instead, which is not a compare-and-swap:
//!   two writers at once could then lose one note (never corrupt the ref). The caller
//!   keeps to one writer at a time (weft writes notes only from the engine, which holds
//!   the run, or from a control command that refuses while an engine runs).
//! - Only the notes ref moves; no checkout, index or other ref is read or written. A crash
//!   leaves the ref at its old commit or at the new one.

use crate::batch::Kind;
use crate::repo::{lossy, parse_oid};
use crate::{GitError, Oid, Repo};

/// The longest note [`Repo::notes_of`] reads.
pub const NOTE_LIMIT: usize = 1024 * 1024;
/// The longest commit message [`Repo::commit_objects`] keeps (the rest is cut).
pub const MESSAGE_LIMIT: usize = 64 * 1024;

/// A commit's tree and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitObject {
    pub commit: Oid,
    pub tree: Oid,
    pub parents: Vec<Oid>,
    /// Cut at [`MESSAGE_LIMIT`] bytes.
    pub message: String,
}

impl Repo {
    /// The tree, parents and message of each of `commits` (in the same order), with one
    /// `git cat-file --batch`. A commit that does not exist is
    /// [`GitError::UnknownRevision`].
    pub fn commit_objects(&self, commits: &[Oid]) -> Result<Vec<CommitObject>, GitError> {
        if commits.is_empty() {
            return Ok(Vec::new());
        }
        // Commits this handle wrote are known without asking git (a landing's merge).
        let known: Option<Vec<CommitObject>> = commits.iter().map(|c| self.written(c)).collect();
        if let Some(known) = known {
            return Ok(known);
        }
        let mut input = String::new();
        for commit in commits {
            input.push_str(commit.as_str());
            input.push('\n');
        }
        let call = self
            .read()
            .args(["cat-file", "--batch"])
            .stdin(input.into_bytes());
        let out = call.run()?;
        let objects = parse_batch(&call, &out.stdout, commits.len())?;
        let mut found = Vec::with_capacity(commits.len());
        for (commit, object) in commits.iter().zip(objects) {
            let Some((kind, body)) = object else {
                return Err(GitError::UnknownRevision {
                    repo: self.root().to_owned(),
                    rev: commit.as_str().to_owned(),
                });
            };
            if kind != "commit" {
                return Err(GitError::UnknownRevision {
                    repo: self.root().to_owned(),
                    rev: format!("{} (a {kind}, not a commit)", commit.as_str()),
                });
            }
            found.push(parse_commit(&call, commit, body)?);
        }
        Ok(found)
    }

    /// Up to `limit` commits of `tip`'s first-parent history, newest first, stopping
    /// before `stop` (excluded, with its own history) when given.
    pub fn first_parents(
        &self,
        tip: &Oid,
        stop: Option<&Oid>,
        limit: usize,
    ) -> Result<Vec<Oid>, GitError> {
        let mut call = self
            .read()
            .args(["rev-list", "--first-parent"])
            .arg(format!("--max-count={limit}"))
            .arg(tip.as_str());
        if let Some(stop) = stop {
            call = call.arg(format!("^{}", stop.as_str()));
        }
        let text = call.text()?;
        text.lines().map(|line| parse_oid(&call, line)).collect()
    }

    /// The note of each of `commits` under `notes_ref` (a full ref, `refs/notes/...`), in
    /// the same order; `None` where a commit has none (or the ref does not exist).
    pub fn notes_of(
        &self,
        notes_ref: &str,
        commits: &[Oid],
    ) -> Result<Vec<Option<String>>, GitError> {
        self.check_full_ref(notes_ref)?;
        if commits.is_empty() || self.ref_target(notes_ref)?.is_none() {
            return Ok(vec![None; commits.len()]);
        }
        let call = self.read().args(["notes", "--ref", notes_ref, "list"]);
        let text = call.text()?;
        let mut blob_of: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
        for line in text.lines() {
            if let Some((blob, object)) = line.split_once(' ') {
                blob_of.insert(object, blob);
            }
        }
        let wanted: Vec<Option<&str>> = commits
            .iter()
            .map(|c| blob_of.get(c.as_str()).copied())
            .collect();
        let blobs: Vec<&str> = wanted.iter().flatten().copied().collect();
        if blobs.is_empty() {
            return Ok(vec![None; commits.len()]);
        }
        let mut input = String::new();
        for blob in &blobs {
            input.push_str(blob);
            input.push('\n');
        }
        // Sizes first, so a huge note is refused before it is read.
        let check = self
            .read()
            .args(["cat-file", "--batch-check"])
            .stdin(input.clone().into_bytes());
        for line in check.text()?.lines() {
            let size: usize = line
                .rsplit(' ')
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            if size > NOTE_LIMIT {
                return Err(check.unexpected(format!(
                    "a note under {notes_ref} is {size} bytes, over the {NOTE_LIMIT} this reads"
                )));
            }
        }
        let call = self
            .read()
            .args(["cat-file", "--batch"])
            .stdin(input.into_bytes());
        let out = call.run()?;
        let mut texts = parse_batch(&call, &out.stdout, blobs.len())?
            .into_iter()
            .map(|object| object.map(|(_, body)| lossy(body)));
        Ok(wanted
            .iter()
            .map(|w| w.and_then(|_| texts.next().flatten()))
            .collect())
    }

    /// Attach `text` to `commit` as its note under `notes_ref`, replacing the one there
    /// (over the long-lived processes, else one `git notes add -f -F -`; see the module's
    /// contract).
    pub fn set_note(&self, notes_ref: &str, commit: &Oid, text: &str) -> Result<(), GitError> {
        self.check_full_ref(notes_ref)?;
        if self.set_note_piped(notes_ref, commit, text).is_some() {
            return Ok(());
        }
        let identity = self.identity_config()?.to_vec();
        let call = self
            .call()
            .config(&identity)
            .args(["notes", "--ref", notes_ref, "add", "-f", "-F", "-"])
            .arg(commit.as_str())
            .stdin(text.as_bytes().to_vec());
        call.run()?;
        Ok(())
    }
}

impl Repo {
    /// [`Repo::set_note`] through the long-lived processes (see `batch`): the objects
    /// `git notes add` writes (the note's blob, the notes trees, a notes commit whose
    /// parent is the ref's commit, by the same committer with git's message) and the ref
    /// moved with a compare-and-swap from the commit it was read at, logged as git logs
    /// it. `None`, with nothing moved, when a process failed, the ref moved meanwhile, or
    /// the text is one `git notes` would clean up (more than one line, surrounding
    /// blanks): the caller then runs `git notes add`.
    ///
    /// The trees keep whatever fan-out they have (git reads any, and its next `git notes
    /// add` redoes them); a note for a new object goes one level down, under the first
    /// two hex digits of its id, so a large run's notes are written 256 to a tree rather
    /// than all into one.
    fn set_note_piped(&self, notes_ref: &str, commit: &Oid, text: &str) -> Option<()> {
        let body = text.strip_suffix('\n').unwrap_or(text);
        if body.is_empty() || body.contains(['\n', '\r']) || body.trim() != body {
            return None;
        }
        let processes = self.processes();
        let idents = processes.idents(self)?;
        let current = processes.ref_targets(self, &[notes_ref])?.pop()?;
        let top = match &current {
            Some(notes) => {
                let info = processes.info(self, &[&format!("{notes}^{{tree}}")])?;
                Some(info.into_iter().next()??.oid)
            }
            None => None,
        };
        let blob = processes.write_object(self, Kind::Blob, format!("{body}\n").as_bytes())?;
        let tree = self.place_note(top.as_ref(), commit.as_str(), true, &blob)?;
        let parent = current
            .as_ref()
            .map_or(String::new(), |c| format!("parent {c}\n"));
        let notes_commit = format!(
            "tree {tree}\n{parent}{}\nNotes added by 'git notes add'\n",
            idents.lines()
        );
        let new = processes.write_object(self, Kind::Commit, notes_commit.as_bytes())?;
        let command = match &current {
            Some(old) => format!("update {notes_ref} {new} {old}\n"),
            None => format!("create {notes_ref} {new}\n"),
        };
        processes
            .transaction(self, "notes: Notes added by 'git notes add'", &command)
            .then_some(())
    }

    /// Notes tree `tree` (`None`: none yet) with the note of the object whose id is, past
    /// the fan-out folders above, `rest` set to `blob`: replaced where it is, else put in
    /// the fan-out folder of its next two digits when there is one (or at the top, where
    /// one is made), else here.
    fn place_note(&self, tree: Option<&Oid>, rest: &str, top: bool, blob: &Oid) -> Option<Oid> {
        let processes = self.processes();
        let content = match tree {
            Some(tree) => match processes.contents(self, tree)?? {
                (kind, content) if kind == "tree" => content,
                _ => return None,
            },
            None => Vec::new(),
        };
        let hash_len = blob.as_str().len() / 2;
        let entries = crate::batch::tree_entries(&content, hash_len)?;
        let mut lines: Vec<(String, Vec<u8>, Oid)> = entries
            .iter()
            .map(|e| (e.mode.to_owned(), e.name.to_vec(), e.oid.clone()))
            .collect();
        let (fan, below) = rest.split_at(2);
        let here = lines
            .iter()
            .position(|(mode, name, _)| mode != "40000" && name == rest.as_bytes());
        let folder = lines
            .iter()
            .position(|(mode, name, _)| mode == "40000" && name == fan.as_bytes());
        match (here, folder) {
            (Some(index), _) => {
                lines[index] = ("100644".into(), rest.as_bytes().to_vec(), blob.clone())
            }
            (None, Some(index)) if !below.is_empty() => {
                let sub = self.place_note(Some(&lines[index].2.clone()), below, false, blob)?;
                lines[index].2 = sub;
            }
            (None, _) if top && !below.is_empty() => {
                let sub = self.place_note(None, below, false, blob)?;
                lines.push(("40000".into(), fan.as_bytes().to_vec(), sub));
            }
            (None, _) => lines.push(("100644".into(), rest.as_bytes().to_vec(), blob.clone())),
        }
        let content = crate::batch::tree_content(&mut lines)?;
        processes.write_object(self, Kind::Tree, &content)
    }
}

/// One object `git cat-file --batch` printed: its type and content.
type BatchObject<'b> = (String, &'b [u8]);

/// Parse `git cat-file --batch` output for `count` requests: each object's type and
/// content, or `None` for a missing one.
fn parse_batch<'b>(
    call: &crate::cmd::Call<'_>,
    mut stdout: &'b [u8],
    count: usize,
) -> Result<Vec<Option<BatchObject<'b>>>, GitError> {
    let mut objects = Vec::with_capacity(count);
    for _ in 0..count {
        let newline = memchr::memchr(b'\n', stdout)
            .ok_or_else(|| call.unexpected("a cut-short object header"))?;
        let header = lossy(&stdout[..newline]);
        stdout = &stdout[newline + 1..];
        let fields: Vec<&str> = header.split(' ').collect();
        match fields.as_slice() {
            [_, "missing"] | [_, "ambiguous"] => objects.push(None),
            [_, kind, size] => {
                let size: usize = size
                    .parse()
                    .map_err(|_| call.unexpected(format!("object header {header:?}")))?;
                if stdout.len() < size + 1 {
                    return Err(call.unexpected("a cut-short object"));
                }
                objects.push(Some(((*kind).to_owned(), &stdout[..size])));
                stdout = &stdout[size + 1..];
            }
            _ => return Err(call.unexpected(format!("object header {header:?}"))),
        }
    }
    Ok(objects)
}

fn parse_commit(
    call: &crate::cmd::Call<'_>,
    commit: &Oid,
    body: &[u8],
) -> Result<CommitObject, GitError> {
    let (headers, message) = match memchr::memmem::find(body, b"\n\n") {
        Some(at) => (&body[..at], &body[at + 2..]),
        None => (body, &[][..]),
    };
    let mut tree = None;
    let mut parents = Vec::new();
    for line in headers.split(|&b| b == b'\n') {
        if let Some(id) = line.strip_prefix(b"tree ") {
            tree = Oid::parse(&lossy(id));
        } else if let Some(id) = line.strip_prefix(b"parent ") {
            parents.extend(Oid::parse(&lossy(id)));
        }
    }
    let tree =
        tree.ok_or_else(|| call.unexpected(format!("commit {} has no tree", commit.short())))?;
    let message = &message[..message.len().min(MESSAGE_LIMIT)];
    Ok(CommitObject {
        commit: commit.clone(),
        tree,
        parents,
        message: lossy(message),
    })
}
