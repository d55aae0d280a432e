//! Starting one attempt: its folder (through the executor), its launch, its record.

use std::path::{Path, PathBuf};
use std::time::{Instant, SystemTime};

use weft_agents::supervise::process_start_ticks;
use weft_core::event::{Event, EventKind};
use weft_core::{Attempt, TaskKind, TaskStatus};
use weft_store::TaskUpdate;

use super::live::Live;
use super::runloop::RunLoop;
use super::{now, random_hex16, to_millis};
use crate::attempt::{
    self, CheckPlan, LaunchIds, LaunchPlan, TranscriptPlan, plan_launch, supervise_options,
};
use crate::executor::{Folder, Place};
use crate::isolation::Cut;

/// A new attempt's ids.
struct Ids {
    attempt: String,
    session: String,
    number: u32,
}

impl RunLoop<'_> {
    /// Start the task at `index` (its `task_started` event is stored with it); an attempt that cannot start is recorded
    /// as failed, with the reason.
    pub(super) fn start_task(&mut self, index: usize) -> Result<(), super::EngineError> {
        let task_id = self.view.plan().tasks[index].id.clone();
        match self.launch(index) {
            Ok(started) => {
                self.live.insert(started.attempt.id.clone(), started);
            }
            Err(failure) => {
                self.fail_unstarted(index, &failure)?;
                self.after_failure(&task_id)?;
            }
        }
        Ok(())
    }

    /// Where the task works: isolated AI tasks in a fresh cut (a repair with its old
    /// branch merged in), isolated ops tasks in the integration checkout, else the
    /// workspace.
    fn place(&mut self, index: usize, number: u32) -> Place {
        let task = &self.view.plan().tasks[index];
        match (&self.isolation, task.kind) {
            (Some(_), TaskKind::Ai) => Place::Cut {
                number,
                repair_of: self.repairs.remove(&task.id),
            },
            (Some(_), _) => Place::Integration,
            (None, _) => Place::Workspace,
        }
    }

    fn launch(&mut self, index: usize) -> Result<Live, String> {
        let task = self.view.plan().tasks[index].clone();
        let limits = attempt::time_limits(&self.config.limits, &task)?;
        // The task's earlier attempts (every run): this run's count numbers the new one,
        // and what the ended ones spent counts against the task's budget.
        let earlier = self
            .store
            .attempts_of_task(self.plan_id(), &task.id)
            .map_err(|e| e.to_string())?;
        let ids = Ids {
            attempt: uuid::Uuid::new_v4().simple().to_string(),
            session: uuid::Uuid::new_v4().hyphenated().to_string(),
            number: earlier.iter().filter(|a| a.run_id == self.run_id).count() as u32 + 1,
        };
        let place = self.place(index, ids.number);
        let folder = self
            .executor
            .prepare(&task, &place)
            .map_err(|e| e.to_string())?;
        crate::failpoint::hit("worktree_added");
        let note = match (&place, &folder.repair_files) {
            (
                Place::Cut {
                    repair_of: Some(b), ..
                },
                Some(files),
            ) => Some(weft_core::prompt::repair_note(b, files)),
            _ => None,
        };
        let mut launch = plan_launch(
            self.config,
            self.view.plan(),
            index,
            LaunchIds {
                marker_id: &random_hex16(),
                session_id: &ids.session,
                attempt_id: &ids.attempt,
                prompt_dir: &self.prompt_dir,
                cwd: &folder.path,
                repair_note: note.as_deref(),
            },
        )
        .map_err(|e| e.to_string())?;
        // The attempt's git writes its objects into its private object folder (see
        // `crate::guards`), so its own commits need nothing shared writable.
        let git_env = match (&self.isolation, &folder.cut) {
            (Some(iso), Some(cut)) => cut.git_env(iso),
            _ => Vec::new(),
        };
        launch.spec.env.extend(git_env.iter().cloned());
        let log_path = self.log_dir.join(format!("{}.log", ids.attempt));
        let mut record = self.record(&task.id, &ids, &launch, &folder, &log_path);
        let mut checks = self.check_plan(index, &ids, &launch, &folder.path);
        checks.git_env = git_env;
        // The task's timeout bounds its checks too, as the setting does.
        checks.timeout = limits.timeout;
        let checks_id = format!("{}-checks", ids.attempt);
        // A task without checks runs none: their containment (an environment filter and
        // a listing of the folder, per launch) is not worked out.
        if !checks.commands.is_empty() {
            checks.contain =
                crate::contain::containment(self.config, &checks_id, &folder.path, None)?;
        }
        let mut options = supervise_options(self.config, log_path, launch.marker.as_ref());
        options.timeout = limits.timeout;
        options.idle_timeout = limits.idle_timeout;
        checks.limits = Some(limits);
        options.watch_dir = Some(folder.path.clone());
        options.contain = crate::contain::containment(
            self.config,
            &ids.attempt,
            &folder.path,
            attempt::manifest_for(self.config, self.view.plan(), index).ok(),
        )?;
        if launch.spec.relay.is_some() {
            let name = format!("task #{} {}", task.order, task.id);
            options.relay = Some(self.approvals.relay(&ids.attempt, &name, &folder.path));
        }
        let opencode = attempt::manifest_for(self.config, self.view.plan(), index)
            .is_ok_and(|m| m.transcript() == Some(weft_agents::transcript::Store::Opencode));
        let first_start = opencode
            .then(|| crate::first_start::enter(&self.config.supervision.locator))
            .flatten();
        let started = attempt::start(
            &self.executor,
            &ids.attempt,
            &launch.spec,
            options,
            checks,
            self.tx.clone(),
            first_start,
        )?;
        record.pid = Some(started.pid);
        record.process_group = Some(started.process_group);
        record.process_start_ticks = process_start_ticks(started.pid);
        record.started_at = to_millis(started.started_at);
        let links: Vec<String> = folder.cut.as_ref().map(Cut::links).unwrap_or_default();
        if let Err(e) = self.store_started(&record, &launch.runner, links) {
            started.canceller.cancel();
            return Err(e.to_string());
        }
        crate::failpoint::hit("attempt_recorded");
        Ok(Live {
            attempt: record,
            order: task.order,
            title: task.title.clone(),
            receives_marker: launch.marker.is_some(),
            canceller: started.canceller,
            started: Instant::now(),
            cancelled_by_user: false,
            denials: Vec::new(),
            agent_session: None,
            assistant_tail: String::new(),
            cut: folder.cut,
            repair_files: folder.repair_files,
            meter: weft_core::spend::Meter::new(
                self.config.spending.prices.clone(),
                task.model.clone(),
            ),
            spend_stored: (Instant::now(), weft_core::spend::Spend::default()),
            over_budget: None,
            idle_since: None,
            task_spent_before: super::live::stored_spend(&earlier),
            task,
        })
    }

    /// The attempt's record, before its process started.
    fn record(
        &self,
        task_id: &str,
        ids: &Ids,
        launch: &LaunchPlan,
        folder: &Folder,
        log_path: &Path,
    ) -> Attempt {
        let cut = folder.cut.as_ref();
        Attempt {
            cwd: folder.path.display().to_string(),
            worktree: cut.map(|c| c.path.display().to_string()),
            branch: cut.map(|c| c.branch.clone()),
            marker: launch.marker.as_ref().map(|m| m.token()),
            session_id: Some(ids.session.clone()),
            log_path: Some(log_path.display().to_string()),
            cut_from: match (&self.isolation, cut) {
                (Some(iso), Some(c)) => Some(iso.encode_cut_from(c)),
                _ => None,
            },
            ..Attempt::new(
                ids.attempt.clone(),
                self.run_id.clone(),
                self.plan_id().to_owned(),
                task_id.to_owned(),
                ids.number,
                launch.runner.clone(),
                now(),
            )
        }
    }

    /// What the attempt's waiting thread judges with, and the checks it may owe.
    fn check_plan(&self, index: usize, ids: &Ids, launch: &LaunchPlan, cwd: &Path) -> CheckPlan {
        let config = self.config;
        let task = &self.view.plan().tasks[index];
        let receives_marker = launch.marker.is_some();
        let transcript_store = attempt::manifest_for(config, self.view.plan(), index)
            .ok()
            .and_then(|m| m.transcript());
        CheckPlan {
            commands: if task.kind == TaskKind::Ai || task.kind == TaskKind::Ops {
                task.checks.clone()
            } else {
                Vec::new()
            },
            cwd: cwd.to_owned(),
            log_dir: self.log_dir.clone(),
            attempt_id: ids.attempt.clone(),
            timeout: config.limits.task_timeout,
            kill_grace: config.limits.kill_grace,
            secrets: config.supervision.secrets.clone(),
            receives_marker,
            contain: None,
            git_env: Vec::new(),
            transcript: match (receives_marker, transcript_store) {
                (true, Some(store)) => Some(TranscriptPlan {
                    store,
                    locator: config.supervision.locator.clone(),
                    cwd: PathBuf::from(cwd),
                    // A little slack: file times and our clock need not agree to the
                    // millisecond.
                    started_at: SystemTime::now() - std::time::Duration::from_secs(2),
                    marker: launch.marker.as_ref().map(|m| m.token()),
                    session_id: (store == weft_agents::transcript::Store::ClaudeCode)
                        .then(|| ids.session.clone()),
                    answer_chars: config.limits.answer_chars,
                }),
                _ => None,
            },
            limits: None,
        }
    }

    /// Record the started attempt and its task in progress.
    fn store_started(
        &mut self,
        record: &Attempt,
        runner: &str,
        links: Vec<String>,
    ) -> Result<(), super::EngineError> {
        let started = EventKind::AttemptStarted {
            number: record.number,
            runner: runner.to_owned(),
            pid: record.pid,
            links,
        };
        let update = TaskUpdate {
            status: Some(TaskStatus::InProgress),
            ..TaskUpdate::default()
        };
        let (order, title) = self
            .view
            .task(&record.task_id)
            .map(|t| (t.order, t.title.clone()))
            .unwrap_or_default();
        let event = Event::new(EventKind::TaskStarted {
            order,
            title,
            runner: runner.to_owned(),
            number: record.number,
        })
        .run(&record.run_id)
        .attempt(&record.id);
        self.view
            .save_attempt_and_task(&mut self.store, record, started, &update, event)
    }
}
