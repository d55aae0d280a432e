//! Isolated runs: a worktree and branch per AI attempt, cut from the run's integration
//! branch, and landing passed work back onto it one task at a time without any checkout.
//!
//! A workspace is one repository, or a folder holding several (a group: listed in
//! `repos`, or every repository one level down). In a group every task gets one worktree
//! per repository, all on the same branch name, inside one task folder; a landing is
//! atomic across the group (a conflict in one repository rolls back the others).

use std::path::{Path, PathBuf};

use weft_core::slug::slugify;
use weft_core::{Landing, Task};
use weft_git::{Git, Head, Oid, Repo, branch_ref};

use crate::error::EngineError;

/// One repository of the workspace.
#[derive(Debug)]
pub(crate) struct Slot {
    /// Folder name inside the group ("" for a single-repository workspace).
    pub name: String,
    pub repo: Repo,
}

/// The git side of one isolated run.
#[derive(Debug)]
pub(crate) struct Isolation {
    pub slots: Vec<Slot>,
    pub run_id: String,
    /// `weft/<run>/integration`, in every repository.
    pub integration_branch: String,
    /// `.weft/worktrees/<run>`.
    pub worktrees: PathBuf,
}

/// One repository's share of an attempt.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    pub slot: usize,
    pub path: PathBuf,
    pub cut_from: Oid,
    /// What weft made runnable and never commits, relative to `path`: links to the main
    /// checkout's ignored artifacts, mirrored `node_modules` folders and the files a
    /// setup command created (see `crate::links`).
    pub links: Vec<PathBuf>,
    /// Of `links`, the setup's files as it left them (to tell when the agent changed one).
    pub setup_files: Vec<crate::links::Created>,
    /// The worktree's admin folder (`None` after a restart: found by its back-link).
    pub admin: Option<PathBuf>,
}

/// Where an attempt works.
#[derive(Debug, Clone)]
pub(crate) struct Cut {
    /// The agent's folder: the worktree, or in a group the folder holding one per repo.
    pub path: PathBuf,
    pub branch: String,
    pub parts: Vec<Part>,
}

impl Cut {
    /// The git variables of the attempt's processes: its private object folder, the
    /// repository's store as a read-only alternate (see `weft_git`'s guard module).
    ///
    /// A group's task folder holds one worktree per repository, and `GIT_OBJECT_DIRECTORY`
    /// is one variable for every repository the agent's git touches (git has no
    /// per-repository or per-worktree setting for it). So a group's attempt gets one
    /// private folder for all its repositories (the first worktree's, see
    /// [`Isolation::private_objects`]) with every repository's store as an alternate:
    /// whichever repository the agent commits in, git reads that repository's objects and
    /// writes new ones privately. Objects are named by their content, so sharing the
    /// folder mixes nothing up; after the attempt each repository imports them, and what
    /// its new commits name that only a sibling's store held (identical content) is
    /// copied over too (`Repo::import_reachable`, in `Isolation::inspect`).
    pub fn git_env(&self, iso: &Isolation) -> Vec<(String, String)> {
        let Some(private) = iso.private_objects(self) else {
            return Vec::new();
        };
        let Ok(stores) = std::env::join_paths(iso.object_stores(self)) else {
            // A store path holding `:` cannot be listed: no private folder, and the
            // agent's own commits fail confined (nothing shared becomes writable).
            return Vec::new();
        };
        vec![
            ("GIT_OBJECT_DIRECTORY".into(), private.display().to_string()),
            (
                "GIT_ALTERNATE_OBJECT_DIRECTORIES".into(),
                stores.to_string_lossy().into_owned(),
            ),
        ]
    }

    /// What weft made runnable (links, mirrored folders, a setup's files), for the
    /// attempt's record: the first [`crate::links::EVENT_LINKS`] (the cut keeps all).
    pub fn links(&self) -> Vec<String> {
        self.parts
            .iter()
            .flat_map(|p| {
                p.links
                    .iter()
                    .map(move |l| p.path.join(l).display().to_string())
            })
            .take(crate::links::EVENT_LINKS)
            .collect()
    }
}

/// What collecting an attempt's work found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Collected {
    /// Committed on its branch: the new commits, encoded as refs are (`None`: nothing
    /// was left uncommitted), and per part the commit its branch is at now (`None`: its
    /// worktree was gone, after a crash).
    Committed {
        commits: Option<String>,
        tips: Vec<Option<Oid>>,
        /// Per part: its tip is known to contain the commit it was cut from (the agent
        /// made no commit of its own, so the tip is weft's commit on the cut, or the
        /// cut), so landing it needs no ancestry check.
        from_cut: Vec<bool>,
    },
    /// The worktree guard refused: the attempt fails with this reason.
    Refused(String),
}

/// How a fresh worktree is made runnable (see `crate::links`).
#[derive(Debug, Clone)]
pub enum Runnable {
    /// Link what these entries (paths or globs) match in the main checkout in, entry by
    /// entry.
    Link(crate::links::Links),
    /// Run this shell command in the worktree instead.
    Setup(String),
}

/// `oid` for one repository, `name=oid;name=oid` for a group (how refs are stored).
fn encode(slots: &[Slot], oids: &[Oid]) -> String {
    if slots.len() == 1 && slots[0].name.is_empty() {
        return oids[0].as_str().to_owned();
    }
    slots
        .iter()
        .zip(oids)
        .map(|(s, o)| format!("{}={}", s.name, o.as_str()))
        .collect::<Vec<_>>()
        .join(";")
}

/// The oid recorded for each slot, in slot order.
pub(crate) fn decode(slots: &[Slot], text: &str) -> Option<Vec<Oid>> {
    if slots.len() == 1 && slots[0].name.is_empty() {
        return Some(vec![Oid::parse(text)?]);
    }
    let pairs: Vec<(&str, &str)> = text.split(';').filter_map(|p| p.split_once('=')).collect();
    slots
        .iter()
        .map(|s| {
            pairs
                .iter()
                .find(|(name, _)| *name == s.name)
                .and_then(|(_, oid)| Oid::parse(oid))
        })
        .collect()
}

/// What a missing git binary is called, wherever it is reported.
pub(crate) const GIT_NOT_FOUND: &str = "git was not found on PATH";

/// Whether `error` says the git binary itself could not be started.
fn git_missing(error: &weft_git::GitError) -> bool {
    matches!(error, weft_git::GitError::Spawn { error, .. } if error.kind() == std::io::ErrorKind::NotFound)
}

/// The workspace's repositories: itself, or the group's (`repos` names them; empty means
/// every folder one level down that is a repository root).
///
/// Errors: `Ok(Err(why))` for a folder that is no repository and holds none; `Err(why)`
/// for everything else (git missing from PATH, a listed repository that will not open).
fn open_slots(workspace: &Path, repos: &[String]) -> Result<Result<Vec<Slot>, String>, String> {
    let git = Git::new();
    if repos.is_empty() {
        match git.open(workspace) {
            Ok(repo) => {
                return Ok(Ok(vec![Slot {
                    name: String::new(),
                    repo,
                }]));
            }
            // Never "not a repository" when git could not even be asked.
            Err(e) if git_missing(&e) => return Err(GIT_NOT_FOUND.to_owned()),
            Err(_) => {}
        }
    }
    let names: Vec<String> = if repos.is_empty() {
        let mut found: Vec<String> = fs_err::read_dir(workspace)
            .map_err(|e| e.to_string())?
            .flatten()
            .filter(|e| e.path().join(".git").exists())
            .filter_map(|e| e.file_name().to_str().map(str::to_owned))
            .collect();
        found.sort();
        found
    } else {
        repos.to_vec()
    };
    if names.is_empty() {
        return Ok(Err(format!(
            "{} is not a git repository and holds none",
            workspace.display()
        )));
    }
    names
        .into_iter()
        .map(|name| {
            let path = workspace.join(&name);
            match git.open(&path) {
                Ok(repo) if repo.root() == path.canonicalize().unwrap_or(path.clone()) => {
                    Ok(Slot { name, repo })
                }
                Ok(_) => Err(format!("{} is not a repository root", path.display())),
                Err(e) if git_missing(&e) => Err(GIT_NOT_FOUND.to_owned()),
                Err(e) => Err(format!("{name}: {e}")),
            }
        })
        .collect::<Result<Vec<Slot>, String>>()
        .map(Ok)
}

/// Why a workspace cannot run isolated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoIsolation {
    /// The folder is no repository and holds none: the one case that may run shared by
    /// default (with a notice).
    NotARepository(String),
    /// Isolation is possible in principle but not now (git missing from PATH, a repository
    /// without commits, an unreadable repository): refused, never a silent shared run.
    Refused { detail: String, hint: String },
}

/// Why `workspace` cannot run isolated, if it cannot.
///
/// Only a folder that is no repository at all may fall back to a shared run; everything
/// else refuses (see ARCHITECTURE.md, "Isolation and landing": a silent fallback once ran
/// an isolated run in the user's own checkout because git was missing from PATH).
pub fn isolation_unavailable(workspace: &Path, repos: &[String]) -> Option<NoIsolation> {
    match open_slots(workspace, repos) {
        Err(why) if why == GIT_NOT_FOUND => Some(NoIsolation::Refused {
            detail: why,
            hint: "install git or put it on PATH; weft never runs a repository's plan in your checkout because git is missing (--without-isolation does so on purpose)".into(),
        }),
        Err(why) => Some(NoIsolation::Refused {
            detail: why,
            hint: "fix the repository, or run with --without-isolation (tasks then share your checkout)".into(),
        }),
        Ok(Err(why)) => Some(NoIsolation::NotARepository(why)),
        Ok(Ok(slots)) => slots.iter().find_map(|slot| match slot.repo.head() {
            Ok(Head::Unborn { branch }) => Some(NoIsolation::Refused {
                detail: format!(
                    "the repository {} has no commits yet (branch {branch} is unborn)",
                    slot.repo.root().display()
                ),
                hint: "make a first commit (`git commit --allow-empty -m init`), or run with --without-isolation".into(),
            }),
            Ok(_) => None,
            Err(e) => Some(NoIsolation::Refused {
                detail: e.to_string(),
                hint: "fix the repository, or run with --without-isolation".into(),
            }),
        }),
    }
}

pub(crate) fn git_error(error: weft_git::GitError) -> EngineError {
    EngineError::Git(Box::new(error))
}

fn unusable(why: String) -> EngineError {
    EngineError::Isolation {
        detail: why,
        hint: "run it in a git repository (or a folder of them) with at least one commit, or with --without-isolation".into(),
    }
}

/// What `prepare` set up.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub isolation: Isolation,
    /// The run's base, encoded as refs are: the recorded one, or the one to record now.
    pub base: String,
    /// No base was recorded yet: the caller records `base`, then cuts the branches.
    pub new: bool,
    /// Stashes taken (`--stash`), per slot index.
    pub stashes: Vec<(usize, Oid)>,
}

impl Isolation {
    /// Open the workspace's repositories for a run and find its base: the recorded one, or
    /// HEAD for a new run. Cuts nothing: the caller records the base first and then calls
    /// [`Isolation::cut_integration`].
    pub fn prepare(
        workspace: &Path,
        state_dir: &Path,
        repos: &[String],
        run_id: &str,
        recorded_base: Option<&str>,
        stash: bool,
    ) -> Result<Prepared, EngineError> {
        let isolation = Isolation::existing(workspace, state_dir, repos, run_id)?;
        let mut heads = Vec::new();
        let mut dirty_files = Vec::new();
        for slot in &isolation.slots {
            let head = match slot.repo.head().map_err(git_error)? {
                Head::Branch { commit, .. } | Head::Detached { commit } => commit,
                Head::Unborn { branch } => {
                    return Err(EngineError::Isolation {
                        detail: format!(
                            "the repository has no commits yet (branch {branch} is unborn)"
                        ),
                        hint: "commit something first, or run with --without-isolation".into(),
                    });
                }
            };
            heads.push(head);
            let dirty = slot.repo.tracked_changes().map_err(git_error)?;
            dirty_files.extend(dirty.into_iter().map(|f| {
                if slot.name.is_empty() {
                    f
                } else {
                    format!("{}/{f}", slot.name)
                }
            }));
        }
        let mut stashes = Vec::new();
        if !dirty_files.is_empty() {
            if !stash {
                let shown: Vec<&str> = dirty_files.iter().take(10).map(String::as_str).collect();
                let more = dirty_files.len().saturating_sub(10);
                return Err(EngineError::Isolation {
                    detail: format!(
                        "the workspace has uncommitted changes to tracked files: {}{}",
                        shown.join(", "),
                        if more > 0 { format!(" and {more} more") } else { String::new() }
                    ),
                    hint: "commit them, or run with --stash (they are restored when the run ends) or --without-isolation (tasks then share your checkout)".into(),
                });
            }
            for (index, slot) in isolation.slots.iter().enumerate() {
                if let Some(oid) = slot
                    .repo
                    .stash_push(&format!("weft: stashed for run {run_id}"))
                    .map_err(git_error)?
                {
                    stashes.push((index, oid));
                }
            }
        }
        // The base is recorded before any branch is cut (see `cut_integration`): a run
        // that recorded one keeps it; a new run's base is HEAD, unless an earlier engine of
        // this same run cut the branch and died before recording it (the old order) — the
        // run id is this run's own, so that branch is ours and adopted where it stands.
        let base = match recorded_base {
            Some(base) => base.to_owned(),
            None => {
                let mut oids = Vec::new();
                for (slot, head) in isolation.slots.iter().zip(heads) {
                    let ours = slot
                        .repo
                        .rev_parse(&isolation.integration_ref())
                        .map_err(git_error)?;
                    oids.push(ours.unwrap_or(head));
                }
                encode(&isolation.slots, &oids)
            }
        };
        Ok(Prepared {
            isolation,
            base,
            new: recorded_base.is_none(),
            stashes,
        })
    }

    /// Cut the integration branch at the recorded `base` in every repository that does
    /// not have it yet. Called only after the base is stored, so a crash at any point
    /// leaves either no branch (cut at the next start) or one at the recorded base.
    pub fn cut_integration(&self, base: &str) -> Result<(), EngineError> {
        let oids = decode(&self.slots, base).ok_or_else(|| EngineError::Isolation {
            detail: format!("the run's recorded base {base:?} does not name every repository"),
            hint: "`weft handoff discard` ends this run; the next `weft run` starts a fresh one"
                .into(),
        })?;
        for (slot, oid) in self.slots.iter().zip(&oids) {
            if !slot
                .repo
                .branch_exists(&self.integration_branch)
                .map_err(git_error)?
            {
                slot.repo
                    .update_refs_cas(
                        &[
                            (&self.integration_ref(), oid, None),
                            (&self.record_ref(), oid, None),
                        ],
                        "weft: integration branch created",
                    )
                    .map_err(git_error)?;
            }
        }
        Ok(())
    }

    /// The isolation of a run whose branches exist (or are about to be created).
    pub fn existing(
        workspace: &Path,
        state_dir: &Path,
        repos: &[String],
        run_id: &str,
    ) -> Result<Isolation, EngineError> {
        let slots = open_slots(workspace, repos)
            .and_then(|found| found)
            .map_err(unusable)?;
        Ok(Isolation {
            slots,
            run_id: run_id.to_owned(),
            integration_branch: format!("weft/{run_id}/integration"),
            worktrees: state_dir.join("worktrees").join(run_id),
        })
    }

    /// The attempt's private object folder: in its (first) worktree's admin folder, so
    /// it lives exactly as long as that worktree. `None` when that worktree is no longer
    /// registered.
    pub fn private_objects(&self, cut: &Cut) -> Option<PathBuf> {
        let part = cut.parts.first()?;
        let admin = part
            .admin
            .clone()
            .or_else(|| self.slots[part.slot].repo.worktree_admin_dir(&part.path))?;
        Some(admin.join(weft_git::PRIVATE_OBJECTS))
    }

    /// The object stores of the cut's repositories, the alternates of its private folder.
    pub fn object_stores(&self, cut: &Cut) -> Vec<PathBuf> {
        cut.parts
            .iter()
            .map(|part| self.slots[part.slot].repo.objects_dir())
            .collect()
    }

    /// In a group, copy what `tip` (a commit the agent made in `part`'s worktree) names
    /// that this repository lacks from wherever the attempt's git read it (see
    /// [`Cut::git_env`]); a single repository's private folder already holds it all.
    pub(crate) fn import_reachable(
        &self,
        cut: &Cut,
        part: &Part,
        private: &Path,
        tip: &Oid,
    ) -> Result<(), EngineError> {
        let repo = &self.slots[part.slot].repo;
        if !self.is_group()
            || repo
                .objects_complete(tip, &part.cut_from)
                .map_err(git_error)?
        {
            return Ok(());
        }
        repo.import_reachable(private, &self.object_stores(cut), tip, &part.cut_from)
            .map_err(git_error)
    }

    pub fn is_group(&self) -> bool {
        !(self.slots.len() == 1 && self.slots[0].name.is_empty())
    }

    pub fn integration_ref(&self) -> String {
        branch_ref(&self.integration_branch)
    }

    /// Where attempts are cut from: the integration tips weft recorded (never a commit
    /// something else put on the branch).
    fn tips(&self) -> Result<Vec<Oid>, EngineError> {
        self.recorded_tips()
    }

    /// Where a slot's worktree goes inside a task folder.
    fn slot_path(&self, folder: &Path, slot: &Slot) -> PathBuf {
        if self.is_group() {
            folder.join(&slot.name)
        } else {
            folder.to_owned()
        }
    }

    /// Fresh worktrees for attempt `number` of `task`, cut from the integration tips and
    /// made runnable by linking each checkout's ignored artifacts in (or a setup command,
    /// contained by `setup`).
    pub fn cut(
        &self,
        task: &Task,
        number: u32,
        runnable: &Runnable,
        setup: &crate::contain::SetupContainment,
    ) -> Result<Cut, EngineError> {
        let mut name = format!("{}-{}", task.order, slugify(&task.title));
        if number > 1 {
            name.push_str(&format!("-{number}"));
        }
        let folder = self.worktrees.join(&name);
        let branch = format!("weft/{}/{name}", self.run_id);
        let tips = self.tips()?;
        let mut parts = Vec::new();
        for (index, (slot, tip)) in self.slots.iter().zip(tips).enumerate() {
            let path = self.slot_path(&folder, slot);
            // Something standing at this attempt's name is reclaimed only when it is in
            // the way (no git call is spent looking for it first).
            let made = match slot.repo.add_attempt_worktree(&path, &branch, &tip) {
                Ok(made) => made,
                Err(
                    weft_git::GitError::BranchExists { .. }
                    | weft_git::GitError::WorktreePath { .. },
                ) => {
                    reclaim_unrecorded(&slot.repo, &path, &branch)?;
                    slot.repo
                        .add_attempt_worktree(&path, &branch, &tip)
                        .map_err(git_error)?
                }
                Err(other) => return Err(git_error(other)),
            };
            parts.push(Part {
                slot: index,
                path,
                cut_from: tip,
                links: Vec::new(),
                setup_files: Vec::new(),
                admin: Some(made.admin),
            });
        }
        let mut cut = Cut {
            path: folder,
            branch,
            parts,
        };
        crate::links::make_runnable(self, &mut cut, runnable, setup)?;
        Ok(cut)
    }

    /// The cut an attempt record describes (after a restart).
    pub fn recorded_cut(&self, folder: &Path, branch: &str, cut_from: &str) -> Option<Cut> {
        let oids = decode(&self.slots, cut_from)?;
        let parts = self
            .slots
            .iter()
            .zip(oids)
            .enumerate()
            .map(|(index, (slot, cut_from))| Part {
                slot: index,
                path: self.slot_path(folder, slot),
                cut_from,
                links: Vec::new(),
                setup_files: Vec::new(),
                admin: None,
            })
            .collect();
        Some(Cut {
            path: folder.to_owned(),
            branch: branch.to_owned(),
            parts,
        })
    }

    /// How an attempt's `cut_from` is recorded.
    pub fn encode_cut_from(&self, cut: &Cut) -> String {
        let oids: Vec<Oid> = cut.parts.iter().map(|p| p.cut_from.clone()).collect();
        encode(&self.slots, &oids)
    }

    /// The run's integration checkout (detached at the current tips), for ops tasks.
    pub fn integration_checkout(&self) -> Result<PathBuf, EngineError> {
        self.integration_checkout_at(&self.tips()?)
    }

    /// The run's integration checkout detached at `tips` (one per repository): the
    /// current tips, or an earlier tip a verification bisects to.
    pub fn integration_checkout_at(&self, tips: &[Oid]) -> Result<PathBuf, EngineError> {
        let folder = self.worktrees.join("integration");
        for (slot, tip) in self.slots.iter().zip(tips.iter().cloned()) {
            let path = self.slot_path(&folder, slot);
            if path.exists() {
                slot.repo
                    .open_worktree(&path)
                    .and_then(|wt| wt.force_checkout_detached(&tip))
                    .map_err(git_error)?;
            } else {
                slot.repo
                    .add_worktree_detached(&path, &tip)
                    .map_err(git_error)?;
            }
        }
        Ok(folder)
    }

    /// Commit what the agent left uncommitted and set the attempt's branch to the
    /// result, in every repository, after the worktree guard
    /// ([`Isolation::inspect`]) found every worktree intact.
    pub fn commit(&self, cut: &Cut, task: &Task) -> Result<Collected, EngineError> {
        let inspection = self.inspect(cut)?;
        if !inspection.problems.is_empty() {
            return Ok(Collected::Refused(inspection.problems.join("; ")));
        }
        let mut commits = Vec::new();
        let mut tips = vec![None; cut.parts.len()];
        let mut from_cut = vec![false; cut.parts.len()];
        for (index, (part, intact)) in cut.parts.iter().zip(inspection.intact).enumerate() {
            let slot = &self.slots[part.slot];
            // After a crash the worktree may already be gone; its branch holds the work then.
            let Some((worktree, head)) = intact else {
                continue;
            };
            let commit = worktree
                .commit_all(
                    &format!("weft: task {}: {}", task.order, task.title),
                    &part.links,
                )
                .map_err(git_error)?;
            let tip = commit.clone().unwrap_or(head.clone());
            if head != part.cut_from
                && !slot
                    .repo
                    .objects_complete(&head, &part.cut_from)
                    .map_err(git_error)?
            {
                return Ok(Collected::Refused(format!(
                    "the agent's commits on its worktree's HEAD ({}) name objects that are in no object store; its worktree is kept in {}",
                    head.short(),
                    part.path.display()
                )));
            }
            // weft sets the task branch itself, forward from where it was cut: one
            // compare-and-swap from the cut in the common case.
            let reference = branch_ref(&cut.branch);
            match slot
                .repo
                .update_ref_cas(&reference, &tip, Some(&part.cut_from))
            {
                Ok(()) => {}
                Err(weft_git::GitError::RefMoved { found, .. }) => {
                    let forward = match &found {
                        None => true,
                        Some(at) => {
                            at == &tip
                                || slot
                                    .repo
                                    .is_ancestor(at.as_str(), tip.as_str())
                                    .map_err(git_error)?
                        }
                    };
                    if !forward {
                        return Ok(Collected::Refused(format!(
                            "the task branch {} was moved by something other than weft (to {}); its worktree's work is kept in {}",
                            cut.branch,
                            found.as_ref().map_or("nothing", |c| c.short()),
                            part.path.display()
                        )));
                    }
                    if found.as_ref() != Some(&tip) {
                        slot.repo
                            .update_ref_cas(&reference, &tip, found.as_ref())
                            .map_err(git_error)?;
                    }
                }
                Err(other) => return Err(git_error(other)),
            }
            tips[index] = Some(tip);
            from_cut[index] = head == part.cut_from;
            commits.extend(commit.map(|c| {
                if self.is_group() {
                    format!("{}={}", slot.name, c.as_str())
                } else {
                    c.as_str().to_owned()
                }
            }));
        }
        Ok(Collected::Committed {
            commits: (!commits.is_empty()).then(|| commits.join(";")),
            tips,
            from_cut,
        })
    }

    /// Land the attempt's branch (committed by [`Isolation::commit`]) on the integration
    /// branch of every repository, all or nothing, as merge commits with `message`
    /// (`evidence::landing_message`: weft's subject and trailers).
    /// `expected`: the integration tips weft recorded (checked by
    /// [`Isolation::check_integration`]); the integration ref and weft's record move
    /// together, only from there.
    ///
    /// `known`: per part, the tip [`Isolation::commit`] set its branch to and whether it
    /// is known to contain the cut (`None`: the branch is read, and the ancestry
    /// checked).
    pub fn land(
        &self,
        cut: &Cut,
        message: &str,
        expected: &[Oid],
        known: &[Option<weft_git::KnownTask>],
    ) -> Result<Landing, EngineError> {
        let record = self.record_ref();
        let mut landed: Vec<(usize, Oid, Oid)> = Vec::new();
        let mut merges = Vec::new();
        let mut changed = false;
        for (index, part) in cut.parts.iter().enumerate() {
            let slot = &self.slots[part.slot];
            let integration = self.integration_ref();
            let expected = &expected[part.slot];
            let outcome = match known.get(index).and_then(Option::as_ref) {
                Some(task) => slot.repo.land_known(
                    &integration,
                    &record,
                    expected,
                    task,
                    &part.cut_from,
                    message,
                ),
                None => slot.repo.land_recorded(
                    &integration,
                    &record,
                    expected,
                    &cut.branch,
                    &part.cut_from,
                    message,
                ),
            }
            .map_err(git_error);
            let failure = match outcome {
                Ok(weft_git::Landing::Landed {
                    merge, previous, ..
                }) => {
                    changed = true;
                    merges.push(merge.clone());
                    landed.push((part.slot, merge, previous));
                    None
                }
                Ok(
                    weft_git::Landing::AlreadyIntegrated { previous, .. }
                    | weft_git::Landing::NoChanges { previous },
                ) => {
                    merges.push(previous);
                    None
                }
                Ok(weft_git::Landing::Conflicted { files, detail, .. }) => {
                    let files = files
                        .into_iter()
                        .map(|f| {
                            if self.is_group() {
                                format!("{}/{f}", slot.name)
                            } else {
                                f
                            }
                        })
                        .collect();
                    Some(Landing::Conflicted { files, detail })
                }
                Ok(weft_git::Landing::Rewritten { reason }) => Some(Landing::Conflicted {
                    files: Vec::new(),
                    detail: format!(
                        "the task branch no longer contains the tip it was cut from: {reason}"
                    ),
                }),
                Err(e) => Some(Landing::Conflicted {
                    files: Vec::new(),
                    detail: format!("landing failed: {e}"),
                }),
            };
            if let Some(failure) = failure {
                // All or nothing: what already landed in other repositories goes back.
                for (slot, merge, previous) in landed.iter().rev() {
                    let _ = self.slots[*slot].repo.update_refs_cas(
                        &[
                            (&self.integration_ref(), previous, Some(merge)),
                            (&record, previous, Some(merge)),
                        ],
                        "weft: roll back a landing",
                    );
                }
                return Ok(failure);
            }
        }
        if !changed {
            return Ok(Landing::NoChanges);
        }
        Ok(Landing::Landed {
            merge: encode(&self.slots, &merges),
        })
    }

    /// Merge a conflicted attempt's branch into a fresh cut, leaving conflict markers for
    /// the repair agent; returns the files it must resolve (none when it merged cleanly).
    pub fn merge_for_repair(&self, cut: &Cut, branch: &str) -> Result<Vec<String>, EngineError> {
        let mut files = Vec::new();
        for part in &cut.parts {
            let slot = &self.slots[part.slot];
            let worktree = slot.repo.open_worktree(&part.path).map_err(git_error)?;
            let merged = worktree
                .merge_in_worktree(branch, &format!("weft: merge {branch} for repair"))
                .map_err(git_error)?;
            if let weft_git::WorktreeMerge::Conflicted { files: conflicted } = merged {
                files.extend(conflicted.into_iter().map(|f| {
                    if self.is_group() {
                        format!("{}/{f}", slot.name)
                    } else {
                        f
                    }
                }));
            }
        }
        Ok(files)
    }

    /// Files among `files` (relative to the agent's folder) that still hold conflict
    /// markers.
    pub fn markers_left(&self, cut: &Cut, files: &[String]) -> Result<Vec<String>, EngineError> {
        let mut left = Vec::new();
        for part in &cut.parts {
            let slot = &self.slots[part.slot];
            let prefix = if self.is_group() {
                format!("{}/", slot.name)
            } else {
                String::new()
            };
            let mine: Vec<&str> = files
                .iter()
                .filter_map(|f| f.strip_prefix(prefix.as_str()))
                .collect();
            if mine.is_empty() {
                continue;
            }
            let worktree = slot.repo.open_worktree(&part.path).map_err(git_error)?;
            left.extend(
                worktree
                    .conflict_markers_in(&mine)
                    .map_err(git_error)?
                    .into_iter()
                    .map(|f| format!("{prefix}{f}")),
            );
        }
        Ok(left)
    }

    /// The `git maintenance run --auto` weft's commits leave out (one check per run,
    /// not one per task: see [`weft_git::Repo::run_auto_maintenance`]), in every
    /// repository.
    pub fn run_auto_maintenance(&self) {
        for slot in &self.slots {
            slot.repo.run_auto_maintenance();
        }
    }

    /// Put back what `--stash` set aside; a conflict keeps the stash and says so.
    pub fn restore_stashes(&self, stashes: &[(usize, Oid)]) -> Vec<String> {
        stashes
            .iter()
            .map(|(slot, stash)| {
                let repo = &self.slots[*slot].repo;
                match repo.stash_restore(stash) {
                    Ok(weft_git::StashRestore::Restored) => format!(
                        "your stashed changes are restored in {}",
                        repo.root().display()
                    ),
                    Ok(weft_git::StashRestore::Conflicted { files }) => format!(
                        "restoring your stashed changes conflicted in {}; the stash {} is kept (`git stash list`)",
                        files.join(", "),
                        stash.short()
                    ),
                    Err(e) => format!(
                        "could not restore your stashed changes ({e}); they are kept in `git stash list` as {}",
                        stash.short()
                    ),
                }
            })
            .collect()
    }

    /// An interrupted attempt's cut, at the next start: removed with its branch when it
    /// holds nothing that did not land, else kept. `Some(why)` when it is kept.
    ///
    /// "Holds work" means a commit on its branch beyond where it was cut, or an uncommitted
    /// path in a worktree other than a symlink (weft's own links to the main checkout's
    /// ignored artifacts are symlinks; an agent's work rarely is).
    pub fn reclaim_interrupted(&self, cut: &Cut) -> Option<String> {
        let mut work = Vec::new();
        let private = self.private_objects(cut);
        for part in &cut.parts {
            let repo = &self.slots[part.slot].repo;
            let tip = repo.rev_parse(&branch_ref(&cut.branch)).ok().flatten();
            if tip.as_ref().is_some_and(|tip| *tip != part.cut_from) {
                work.push(format!("commits on {}", cut.branch));
            }
            // The agent's own commits are on its detached HEAD, their objects in its
            // private folder: bring them in, and count them as work.
            if let Some(admin) = repo.worktree_admin_dir(&part.path) {
                if let Some(private) = &private {
                    let _ = repo.import_objects(private);
                }
                if let Ok(weft_git::AdminHead::Detached(head)) = repo.admin_head(&admin)
                    && head != part.cut_from
                {
                    if let Some(private) = &private {
                        let _ = self.import_reachable(cut, part, private, &head);
                    }
                    work.push("commits in its worktree".to_owned());
                }
            }
            if part.path.exists() {
                match repo
                    .open_worktree(&part.path)
                    .and_then(|wt| wt.uncommitted_paths())
                {
                    Ok(paths) => {
                        let real = paths
                            .iter()
                            .filter(|p| !part.path.join(p.trim_end_matches('/')).is_symlink())
                            .count();
                        if real > 0 {
                            work.push(format!("{real} uncommitted file(s)"));
                        }
                    }
                    // Unreadable: keep it, never remove what cannot be inspected.
                    Err(e) => work.push(format!("its worktree could not be inspected: {e}")),
                }
            }
        }
        if !work.is_empty() {
            return Some(format!(
                "interrupted with work that did not land ({})",
                work.join(", ")
            ));
        }
        for part in &cut.parts {
            let repo = &self.slots[part.slot].repo;
            let _ = repo.remove_worktree(&part.path, true);
            if repo.branch_exists(&cut.branch).unwrap_or(false) {
                let _ = repo.delete_branch(&cut.branch, true);
            }
        }
        if self.is_group() {
            let _ = fs_err::remove_dir_all(&cut.path);
        }
        None
    }

    /// Remove a landed attempt's worktrees (its branches stay until handoff).
    pub fn drop_worktree(&self, cut: &Cut) {
        for part in &cut.parts {
            let _ = self.slots[part.slot].repo.remove_worktree(&part.path, true);
        }
        if self.is_group() {
            let _ = fs_err::remove_dir(&cut.path);
        }
    }
}

/// Make room for a fresh cut at `path` on `branch` when an engine that died left one
/// there before recording its attempt.
///
/// Safe by construction: the folder and branch names carry the attempt number, which is
/// one more than the attempts this run recorded for the task, so whatever stands at that
/// name belongs to an attempt the store never heard of — it never ran to a verdict and its
/// work can never land. It is removed (worktree, folder and branch) instead of failing the
/// task on every rerun with "the folder exists and is not empty".
fn reclaim_unrecorded(repo: &Repo, path: &Path, branch: &str) -> Result<(), EngineError> {
    if path.symlink_metadata().is_ok() {
        repo.remove_worktree(path, true).map_err(git_error)?;
        if path.symlink_metadata().is_ok() {
            fs_err::remove_dir_all(path).map_err(|error| EngineError::Io {
                path: path.display().to_string(),
                error,
            })?;
        }
        repo.prune_worktrees().map_err(git_error)?;
    }
    if repo.branch_exists(branch).map_err(git_error)? {
        repo.delete_branch(branch, true).map_err(git_error)?;
    }
    Ok(())
}
