//! Git guards: work never goes to the wrong place (issue 11, §3).
//!
//! - **The worktree guard.** Before weft commits what an agent left, it checks that the
//!   agent's worktree is still the worktree weft made ([`weft_git::Repo::inspect_worktree`]:
//!   its `.git` names its own admin folder, git sees the worktree as its own top level),
//!   and that HEAD is where weft left it (detached, or on the task's own branch). If the
//!   agent deleted or replaced `.git`, switched to another branch, or moved HEAD off the
//!   commit it was cut from, the attempt fails with a verdict naming exactly that, no git
//!   command runs in that folder, nothing is committed anywhere, and its work is kept: the
//!   folder stays, and commits on another branch or a stray HEAD are kept under
//!   `refs/weft/<run>/stray/<folder>`. Before any check, what the agent committed into
//!   its private object folder is imported, so a kept ref never names a missing object.
//! - **The integration guard.** Only weft moves the integration ref. weft records the tip
//!   it last set in `refs/weft/<run>/tip`, moved together with the integration ref in one
//!   atomic `git update-ref --stdin` transaction at every landing. Before each landing and
//!   before a handoff merge or discard, the integration ref must be at that recorded tip;
//!   if it is not, the step refuses, names the foreign commits, keeps them under
//!   `refs/weft/<run>/foreign/<sha>`, and prints the one `git update-ref` command that
//!   puts the recorded tip back (a plain git command, so it works whatever state weft is
//!   in, and it is itself a compare-and-swap: it refuses if the ref moved again).
//! - **Outside symlinks.** A task whose changes add a symlink pointing outside its
//!   worktree (absolute, or climbing out with `..`) fails at landing, the links named,
//!   unless `outside_symlinks = "allow"`.
//!
//! Threads: called from the run loop's thread (and the handoff commands). Bounds: at most
//! [`FOREIGN_SHOWN`] foreign commits are named. Crash safety: the import and the kept refs
//! are idempotent; the recorded tip moves atomically with the integration ref.

use weft_git::{AdminHead, Oid, Repo, Tamper, branch_ref};

use crate::error::EngineError;
use crate::isolation::{Cut, Isolation, Part, git_error};

/// How many foreign commits a refusal names.
const FOREIGN_SHOWN: usize = 5;

/// What inspecting one attempt's worktrees found.
#[derive(Debug, Default)]
pub(crate) struct Inspection {
    /// Why the attempt must fail (empty: its worktrees are intact).
    pub problems: Vec<String>,
    /// Per part: the opened worktree and its HEAD commit, when intact.
    pub intact: Vec<Option<(Repo, Oid)>>,
}

/// Commits on the integration branch that weft did not make.
#[derive(Debug, Clone)]
pub struct Foreign {
    /// What the refusal says.
    pub detail: String,
    /// The restore command(s).
    pub hint: String,
}

impl Foreign {
    pub fn into_error(self, what: &str) -> EngineError {
        EngineError::Refused {
            detail: format!("{what} is refused: {}", self.detail),
            hint: self.hint,
        }
    }
}

impl Isolation {
    /// `refs/weft/<run>/tip`: the integration tip weft last set.
    pub fn record_ref(&self) -> String {
        format!("refs/weft/{}/tip", self.run_id)
    }

    /// The integration tips weft recorded, per repository (a run from before the record
    /// existed adopts the branch's tip once).
    pub(crate) fn recorded_tips(&self) -> Result<Vec<Oid>, EngineError> {
        Ok(self.tips_now()?.into_iter().map(|(tip, _)| tip).collect())
    }

    /// Per repository: the recorded tip and where the integration ref is now (`None`:
    /// deleted), in one git call each.
    fn tips_now(&self) -> Result<Vec<(Oid, Option<Oid>)>, EngineError> {
        let record = self.record_ref();
        let integration = self.integration_ref();
        self.slots
            .iter()
            .map(|slot| {
                let found = slot
                    .repo
                    .ref_targets(&[&record, &integration])
                    .map_err(git_error)?;
                let (recorded, now) = (found[0].clone(), found[1].clone());
                if let Some(tip) = recorded {
                    return Ok((tip, now));
                }
                let tip = now.clone().ok_or_else(|| {
                    git_error(weft_git::GitError::UnknownRevision {
                        repo: slot.repo.root().to_owned(),
                        rev: integration.clone(),
                    })
                })?;
                slot.repo
                    .update_ref_cas(&record, &tip, None)
                    .map_err(git_error)?;
                Ok((tip, now))
            })
            .collect()
    }

    /// `Err` naming the foreign commits when an integration ref is not at the tip weft
    /// recorded (they are then kept under `refs/weft/<run>/foreign/<sha>`).
    pub fn check_integration(&self) -> Result<Vec<Oid>, Foreign> {
        let fail = |e: EngineError| Foreign {
            detail: format!("weft could not read the integration branch: {e}"),
            hint: "check the repository with `git status`, then try again".into(),
        };
        let tips = self.tips_now().map_err(fail)?;
        let integration = self.integration_ref();
        let mut details = Vec::new();
        let mut hints = Vec::new();
        for (slot, (tip, now)) in self.slots.iter().zip(&tips) {
            let repo = &slot.repo;
            let Some(now) = now.clone() else {
                details.push(format!(
                    "{}{} was deleted (weft recorded it at {})",
                    label(&slot.name),
                    self.integration_branch,
                    tip.short()
                ));
                hints.push(restore_command(repo, &integration, tip, None));
                continue;
            };
            if &now == tip {
                continue;
            }
            let (commits, total) = repo
                .commits_between(tip, &now, FOREIGN_SHOWN)
                .map_err(|e| fail(git_error(e)))?;
            let kept = format!("refs/weft/{}/foreign/{}", self.run_id, &now.as_str()[..12]);
            let _ = repo.update_ref_cas(&kept, &now, None);
            let named: Vec<String> = commits
                .iter()
                .map(|(oid, subject)| format!("{} {subject:?}", oid.short()))
                .collect();
            let more = total.saturating_sub(commits.len());
            let what = if total == 0 {
                format!(
                    "was moved back or rewritten to {} (weft recorded {})",
                    now.short(),
                    tip.short()
                )
            } else {
                format!(
                    "holds {total} commit(s) weft did not make: {}{}",
                    named.join(", "),
                    if more > 0 {
                        format!(" and {more} more")
                    } else {
                        String::new()
                    }
                )
            };
            details.push(format!(
                "{}{} {what}; only weft moves it (kept at {kept})",
                label(&slot.name),
                self.integration_branch
            ));
            hints.push(restore_command(repo, &integration, tip, Some(&now)));
        }
        if details.is_empty() {
            return Ok(tips.into_iter().map(|(tip, _)| tip).collect());
        }
        Err(Foreign {
            detail: details.join("; "),
            hint: format!(
                "put back the tip weft recorded with `{}` (the foreign commits stay under refs/weft/{}/foreign/), then run the command again",
                hints.join(" && "),
                self.run_id
            ),
        })
    }

    /// Import what the agent committed, then check each of the cut's worktrees (see the
    /// module documentation). Keeps stray commits under `refs/weft/<run>/stray/`.
    pub(crate) fn inspect(&self, cut: &Cut) -> Result<Inspection, EngineError> {
        let mut inspection = Inspection::default();
        for part in &cut.parts {
            let repo = &self.slots[part.slot].repo;
            let name = label(&self.slots[part.slot].name);
            // After a crash the worktree may already be gone; its branch holds the work.
            if !part.path.exists() {
                inspection.intact.push(None);
                continue;
            }
            let admin = part
                .admin
                .clone()
                .or_else(|| repo.worktree_admin_dir(&part.path));
            let Some(admin) = admin else {
                inspection.problems.push(format!(
                    "{name}{} (its worktree {} is no longer registered; its files are kept there)",
                    Tamper::AdminDeleted,
                    part.path.display()
                ));
                inspection.intact.push(None);
                continue;
            };
            // The attempt's private folder (a group's is one for all its repositories).
            let private = self
                .private_objects(cut)
                .unwrap_or_else(|| admin.join(weft_git::PRIVATE_OBJECTS));
            repo.import_objects(&private).map_err(git_error)?;
            let head = repo.admin_head(&admin).map_err(git_error)?;
            let moved = match &head {
                AdminHead::Detached(tip) => Some(tip),
                AdminHead::Branch { commit, .. } => commit.as_ref(),
                AdminHead::Unknown => None,
            };
            if let Some(tip) = moved.filter(|tip| **tip != part.cut_from) {
                self.import_reachable(cut, part, &private, tip)?;
            }
            let worktree = repo
                .inspect_worktree(&part.path, &admin)
                .map_err(git_error)?;
            let stray = |tip: &Oid| self.keep_stray(repo, cut, part, tip);
            match (worktree, head) {
                (Err(tamper), head) => {
                    let mut problem = format!(
                        "{name}{tamper}; nothing was committed, and its files are kept in {}",
                        part.path.display()
                    );
                    let tip = match head {
                        AdminHead::Detached(tip) => Some(tip),
                        AdminHead::Branch { commit, .. } => commit,
                        AdminHead::Unknown => None,
                    };
                    if let Some(tip) = tip.filter(|t| t != &part.cut_from) {
                        problem.push_str(&stray(&tip)?);
                    }
                    inspection.problems.push(problem);
                    inspection.intact.push(None);
                }
                (Ok(opened), AdminHead::Branch { name: branch, .. }) if branch == cut.branch => {
                    let tip = repo.resolve(&branch_ref(&branch)).map_err(git_error)?;
                    inspection.intact.push(Some((opened, tip)));
                }
                (
                    Ok(_),
                    AdminHead::Branch {
                        name: branch,
                        commit,
                    },
                ) => {
                    let mut problem =
                        format!("{name}the agent switched its worktree to branch `{branch}`");
                    match commit {
                        Some(tip) if tip != part.cut_from => {
                            problem.push_str(&stray(&tip)?);
                        }
                        _ => problem.push_str("; nothing was committed there"),
                    }
                    inspection.problems.push(problem);
                    inspection.intact.push(None);
                }
                (Ok(opened), AdminHead::Detached(tip)) => {
                    if tip != part.cut_from
                        && !repo
                            .is_ancestor(part.cut_from.as_str(), tip.as_str())
                            .map_err(git_error)?
                    {
                        inspection.problems.push(format!(
                            "{name}the agent moved its worktree's HEAD off the commit it was cut from (to {}){}",
                            tip.short(),
                            stray(&tip)?
                        ));
                        inspection.intact.push(None);
                    } else {
                        inspection.intact.push(Some((opened, tip)));
                    }
                }
                (Ok(_), AdminHead::Unknown) => {
                    inspection.problems.push(format!(
                        "{name}the agent broke its worktree's HEAD; nothing was committed, and its files are kept in {}",
                        part.path.display()
                    ));
                    inspection.intact.push(None);
                }
            }
        }
        Ok(inspection)
    }

    /// Keep `tip` (stray work of the attempt) under `refs/weft/<run>/stray/<folder>`;
    /// returns how the verdict says so.
    fn keep_stray(
        &self,
        repo: &Repo,
        cut: &Cut,
        part: &Part,
        tip: &Oid,
    ) -> Result<String, EngineError> {
        let folder = cut
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "attempt".into());
        let slot = &self.slots[part.slot].name;
        let kept = if slot.is_empty() {
            format!("refs/weft/{}/stray/{folder}", self.run_id)
        } else {
            format!("refs/weft/{}/stray/{folder}/{slot}", self.run_id)
        };
        let (_, total) = repo
            .commits_between(&part.cut_from, tip, 0)
            .map_err(git_error)?;
        let existing = repo.ref_target(&kept).map_err(git_error)?;
        if existing.as_ref() != Some(tip) {
            repo.update_ref_cas(&kept, tip, existing.as_ref())
                .map_err(git_error)?;
        }
        Ok(format!(
            "; {total} commit(s) there were not landed, kept at `{kept}`"
        ))
    }

    /// The symlinks the attempt's work adds that point outside its worktree, named;
    /// `tips`: the commit each part's work ended at (`None`: the branch's tip is read).
    pub(crate) fn outside_symlinks(
        &self,
        cut: &Cut,
        tips: &[Option<Oid>],
    ) -> Result<Vec<String>, EngineError> {
        let mut found = Vec::new();
        for (part, tip) in cut.parts.iter().zip(tips) {
            let slot = &self.slots[part.slot];
            let tip = match tip {
                Some(tip) => Some(tip.clone()),
                None => slot
                    .repo
                    .rev_parse(&branch_ref(&cut.branch))
                    .map_err(git_error)?,
            };
            let Some(tip) = tip.filter(|tip| *tip != part.cut_from) else {
                continue;
            };
            for (path, target) in slot
                .repo
                .outside_symlinks(&part.cut_from, &tip)
                .map_err(git_error)?
            {
                found.push(format!("{}{path} -> {target}", prefix(&slot.name)));
            }
        }
        Ok(found)
    }
}

/// The git command that moves `reference` back to `tip` (from `now`; `None`: it is gone).
fn restore_command(repo: &Repo, reference: &str, tip: &Oid, now: Option<&Oid>) -> String {
    let root = repo.root().display().to_string();
    let root = if root
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b))
    {
        root
    } else {
        format!("'{}'", root.replace('\'', "'\\''"))
    };
    match now {
        Some(now) => format!("git -C {root} update-ref {reference} {tip} {now}"),
        None => format!("git -C {root} update-ref {reference} {tip} ''"),
    }
}

fn label(slot: &str) -> String {
    if slot.is_empty() {
        String::new()
    } else {
        format!("{slot}: ")
    }
}

fn prefix(slot: &str) -> String {
    if slot.is_empty() {
        String::new()
    } else {
        format!("{slot}/")
    }
}
