//! Isolated runs against real git: a worktree per task, landing, conflicts, handoff.

use crate::engine::{diamond, statuses};
use crate::harness::{Weft, read};

fn run_id(weft: &Weft) -> String {
    let branches = weft.git(&[
        "branch",
        "--list",
        "weft/*/integration",
        "--format=%(refname:short)",
    ]);
    branches
        .lines()
        .next()
        .expect("an integration branch")
        .split('/')
        .nth(1)
        .unwrap()
        .to_owned()
}

#[test]
fn a_handoff_of_a_plan_that_never_ran_is_refused_with_how_to_run_it() {
    let weft = Weft::with_agents();
    diamond(&weft, &[]);
    for step in ["review", "merge"] {
        let refused = weft.fails(&["handoff", step], 1);
        assert!(
            refused.stderr.contains("this plan has no run to hand off"),
            "{}",
            refused.stderr
        );
        assert!(
            refused.stderr.contains("run it first with `weft run`"),
            "{}",
            refused.stderr
        );
    }
}

#[test]
fn each_task_works_in_its_own_worktree_and_lands_on_the_integration_branch() {
    let weft = Weft::with_agents();
    // join only passes if both sides already landed in the tip its worktree was cut from.
    diamond(
        &weft,
        &[
            ("join", "require out/left.txt"),
            ("join", "require out/right.txt"),
        ],
    );
    weft.ok(&["run", "--isolated"]);
    assert!(
        statuses(&weft).values().all(|s| s == "completed"),
        "{:?}",
        statuses(&weft)
    );
    let run = run_id(&weft);
    let integration = format!("weft/{run}/integration");
    for task in ["root", "left", "right", "join", "after", "side"] {
        assert_eq!(
            weft.git(&["show", &format!("{integration}:out/{task}.txt")]),
            task
        );
    }
    // The user's checkout and branch are untouched until handoff.
    assert!(
        !weft.work().join("out").exists(),
        "a task wrote into the user's checkout"
    );
    assert_eq!(weft.git(&["rev-list", "--count", "main"]).trim(), "1");
    let log = weft.git(&["log", "--format=%s", &integration]);
    assert_eq!(log.matches("weft: land task").count(), 6, "{log}");
    let merges = weft.git(&["rev-list", "--merges", "--count", &integration]);
    assert_eq!(merges.trim(), "6");
    // Landed worktrees are removed.
    let worktrees = weft.git(&["worktree", "list", "--porcelain"]);
    assert!(
        !worktrees.contains(&format!("worktrees/{run}/")),
        "{worktrees}"
    );

    let review = weft.ok(&["handoff", "review", "--stat"]).stdout;
    assert!(
        review.contains("out/join.txt") && review.contains("6 file(s) changed"),
        "{review}"
    );
    let refused = weft.fails(&["handoff", "merge"], 1);
    assert!(refused.stderr.contains("pass --yes"), "{}", refused.stderr);
    let merged = weft.ok(&["handoff", "merge", "--yes"]);
    assert!(merged.stdout.contains("merged"), "{}", merged.stdout);
    for task in ["root", "join", "side"] {
        assert_eq!(read(&weft.work().join(format!("out/{task}.txt"))), task);
    }
    // Task branches go; the merged integration branch stays as the record of the run.
    assert_eq!(
        weft.git(&["branch", "--list", "weft/*", "--format=%(refname:short)"])
            .trim(),
        format!("weft/{run}/integration")
    );
    // Asked again (say, by a person whose merge was killed after it had finished), it
    // says the run was handed off, not that the plan never ran.
    for step in ["review", "merge"] {
        let again = weft.fails(
            &["handoff", step, "--yes"][..if step == "merge" { 3 } else { 2 }],
            1,
        );
        assert!(
            again.stderr.contains(&format!(
                "this plan's last run, {run}, was already handed off"
            )),
            "{}",
            again.stderr
        );
        assert!(
            again.stderr.contains("nothing left to hand off"),
            "{}",
            again.stderr
        );
    }
}

#[test]
fn a_conflicting_landing_is_kept_apart_and_its_dependents_wait() {
    let weft = Weft::with_agents();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"claude-code\"\n\
         [[tasks]]\nid = \"fast\"\ntitle = \"Fast edit\"\nprompt = '''\n@fake write shared.txt from fast\n@fake marker\n'''\n\
         [[tasks]]\nid = \"slow\"\ntitle = \"Slow edit\"\nprompt = '''\n@fake sleep 0.6\n@fake write shared.txt from slow\n@fake marker\n'''\n\
         [[tasks]]\nid = \"after\"\ntitle = \"After slow\"\ndependencies = [\"slow\"]\nprompt = \"@fake marker\"\n",
    );
    weft.write("shared.txt", "original\n");
    weft.commit_all("plan");
    weft.ok(&["plan", "--file", "plan.toml"]);
    let run = weft.fails(&["run", "--isolated"], 1);
    let s = statuses(&weft);
    assert_eq!(s["fast"], "completed");
    assert_eq!(s["slow"], "conflicted", "{}", run.stdout);
    assert_eq!(s["after"], "blocked");
    let json = weft.status_json();
    let reason = json["plan"]["tasks"][1]["verdict"]["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        reason.contains("conflicts with the integration branch in shared.txt"),
        "{reason}"
    );
    let id = run_id(&weft);
    assert_eq!(
        weft.git(&["show", &format!("weft/{id}/integration:shared.txt")]),
        "from fast"
    );
    // The conflicted task's branch and worktree are kept for inspection or repair.
    assert!(
        weft.git(&["branch", "--list", &format!("weft/{id}/2-slow-edit")])
            .contains("2-slow-edit")
    );
    assert!(
        weft.work()
            .join(format!(".weft/worktrees/{id}/2-slow-edit/shared.txt"))
            .exists()
    );

    // Discarding keeps the landed work reachable.
    let discard = weft.ok(&["handoff", "discard", "--yes"]);
    assert!(
        discard
            .stdout
            .contains(&format!("refs/weft/discarded/{id}")),
        "{}",
        discard.stdout
    );
    assert_eq!(
        weft.git(&["show", &format!("refs/weft/discarded/{id}:shared.txt")]),
        "from fast"
    );
    assert_eq!(weft.git(&["branch", "--list", "weft/*"]).trim(), "");
}

#[test]
fn a_dirty_checkout_holds_an_isolated_run_and_shared_runs_have_no_handoff() {
    let weft = Weft::with_agents();
    diamond(&weft, &[]);
    weft.write("README.md", "edited\n");
    let held = weft.fails(&["run", "--isolated"], 1);
    assert!(
        held.stderr
            .contains("uncommitted changes to tracked files: README.md"),
        "{}",
        held.stderr
    );
    assert!(
        held.stderr
            .contains("hint: commit them, or run with --stash"),
        "{}",
        held.stderr
    );
    assert!(statuses(&weft).values().all(|s| s == "pending"));
    // --stash sets the edit aside for the run and puts it back at the end.
    let stashed = weft.ok(&["run", "--isolated", "--stash"]);
    assert!(
        stashed
            .stdout
            .contains("note: stashed your uncommitted changes"),
        "{}",
        stashed.stdout
    );
    assert!(
        stashed
            .stdout
            .contains("note: your stashed changes are restored"),
        "{}",
        stashed.stdout
    );
    assert_eq!(read(&weft.work().join("README.md")), "edited\n");
    assert!(statuses(&weft).values().all(|s| s == "completed"));
    weft.ok(&["handoff", "discard", "--yes"]);
    weft.ok(&["plan", "--file", "diamond.toml"]);
    weft.ok(&["run", "--without-isolation"]);
    let no_handoff = weft.fails(&["handoff", "review"], 1);
    assert!(
        no_handoff.stderr.contains("was not isolated"),
        "{}",
        no_handoff.stderr
    );
}

#[test]
fn a_run_that_landed_nothing_says_so() {
    let weft = Weft::with_agents();
    weft.write("plan.toml", "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"Think only\"\nprompt = \"@fake marker\"\n");
    weft.ok(&["plan", "--file", "plan.toml"]);
    let run = weft.ok(&["run", "--isolated"]);
    assert!(
        run.stdout
            .contains("It changed nothing, so nothing was landed."),
        "{}",
        run.stdout
    );
    let status = weft.ok(&["status"]).stdout;
    assert!(status.contains("completed (no changes)"), "{status}");
    let review = weft.ok(&["handoff", "review"]).stdout;
    assert!(review.contains("landed nothing"), "{review}");
    let merge = weft.fails(&["handoff", "merge", "--yes"], 1);
    assert!(
        merge.stderr.contains("nothing to merge"),
        "{}",
        merge.stderr
    );
    weft.ok(&["handoff", "cleanup"]);
}

#[test]
fn ignored_artifacts_are_linked_in_and_never_committed() {
    let weft = Weft::with_agents();
    weft.write(".gitignore", "node_modules/\n.env\n");
    weft.git(&["add", ".gitignore"]);
    weft.git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "ignore",
    ]);
    weft.write("node_modules/dep/index.js", "dep\n");
    weft.write(".env", "SECRET=1\n");
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"Use deps\"\nprompt = '''\n\
         @fake require node_modules/dep/index.js\n@fake require .env\n@fake write app.txt app\n\
         @fake run git add -A && git -c user.name=a -c user.email=a@a commit -qm agent\n@fake marker\n'''\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let run = weft.ok(&["run", "--isolated"]);
    assert!(run.stdout.contains("1 completed"), "{}", run.stdout);
    let id = run_id(&weft);
    let tree = weft.git(&[
        "ls-tree",
        "-r",
        "--name-only",
        &format!("weft/{id}/integration"),
    ]);
    assert!(tree.contains("app.txt"), "{tree}");
    assert!(
        !tree.contains("node_modules") && !tree.contains(".env"),
        "a link was committed:\n{tree}"
    );
}

#[test]
fn a_setup_command_replaces_linking_and_its_failure_fails_the_attempt() {
    let weft = Weft::with_agents();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"Needs setup\"\nprompt = '''\n@fake require .prepared\n@fake marker\n'''\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    weft.ok(&["-c", "setup=echo ok > .prepared", "run", "--isolated"]);
    assert_eq!(statuses(&weft)["needs-setup"], "completed");

    let weft = Weft::with_agents();
    weft.write("plan.toml", "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"Needs setup\"\nprompt = \"@fake marker\"\n");
    weft.ok(&["plan", "--file", "plan.toml"]);
    let failed = weft.fails(&["-c", "setup=echo broken; exit 4", "run", "--isolated"], 1);
    assert!(
        failed
            .stdout
            .contains("the setup command `echo broken; exit 4` failed"),
        "{}",
        failed.stdout
    );
    assert!(failed.stdout.contains("broken"), "{}", failed.stdout);
    assert_eq!(statuses(&weft)["needs-setup"], "failed");
}

/// The issue's whole story: two tasks edit the same lines → conflict → repair → land →
/// handoff merge leaves the user's branch with all three tasks' work.
#[test]
fn conflict_then_repair_then_land_then_handoff_merge() {
    let weft = Weft::with_agents();
    weft.write("shared.txt", "original\n");
    weft.commit_all("shared");
    let rec = weft.env.root().join("record.jsonl").display().to_string();
    weft.write(
        "plan.toml",
        &format!("goal = \"g\"\nrunner = \"claude-code\"\n\
         [[tasks]]\nid = \"fast\"\ntitle = \"Fast edit\"\nprompt = '''\n@fake write shared.txt from fast\\n\n@fake write a.txt a\n@fake marker\n'''\n\
         [[tasks]]\nid = \"slow\"\ntitle = \"Slow edit\"\nprompt = '''\n@fake record {rec}\n@fake sleep 0.6\n@fake write shared.txt from fast and slow\\n\n@fake write b.txt b\n@fake marker\n'''\n\
         [[tasks]]\nid = \"after\"\ntitle = \"After slow\"\ndependencies = [\"slow\"]\nprompt = '''\n@fake require b.txt\n@fake write c.txt c\n@fake marker\n'''\n"),
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    weft.fails(&["run", "--isolated"], 1);
    assert_eq!(statuses(&weft)["slow"], "conflicted");
    assert_eq!(statuses(&weft)["after"], "blocked");
    let not_conflicted = weft.fails(&["repair", "fast"], 1);
    assert!(
        not_conflicted
            .stderr
            .contains("only a conflicted task can be repaired"),
        "{}",
        not_conflicted.stderr
    );

    let repair = weft.ok(&["repair", "slow"]);
    assert!(
        repair.stdout.contains("gets one repair attempt"),
        "{}",
        repair.stdout
    );
    assert!(
        repair.stdout.contains("released blocked tasks: after"),
        "{}",
        repair.stdout
    );
    let run = weft.ok(&["run", "--isolated"]);
    assert!(
        run.stdout
            .contains("#2 Slow edit [claude-code] (attempt 2)"),
        "{}",
        run.stdout
    );
    assert!(
        statuses(&weft).values().all(|s| s == "completed"),
        "{:?}",
        statuses(&weft)
    );
    // The repair attempt was told what to resolve, before its marker paragraph.
    let records = crate::engine::records(&weft);
    let repair_prompt = &records
        .iter()
        .rev()
        .find(|r| r.event == "start")
        .unwrap()
        .prompt;
    let repair_at = repair_prompt.find("## Repair").expect("a repair section");
    assert!(
        repair_prompt[repair_at..].contains("resolve the conflicts in shared.txt"),
        "{repair_prompt}"
    );
    assert!(repair_at < repair_prompt.find("When the task is fully done").unwrap());

    weft.ok(&["handoff", "merge", "--yes"]);
    for (file, text) in [
        ("a.txt", "a"),
        ("b.txt", "b"),
        ("c.txt", "c"),
        ("shared.txt", "from fast and slow\n"),
    ] {
        assert_eq!(read(&weft.work().join(file)), text, "{file}");
    }
}

/// weft dies between judging a task and recording its landing: before the integration
/// ref moved, or after. The next run finishes the landing without re-running the agent,
/// and the ref is never left half-way.
#[test]
fn a_landing_interrupted_by_a_crash_is_finished_at_the_next_start() {
    let weft = Weft::with_agents();
    let rec = weft.env.root().join("record.jsonl").display().to_string();
    weft.write(
        "plan.toml",
        &format!("goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"Write app\"\nprompt = '''\nDo the app part.\n@fake record {rec}\n@fake write app.txt app\n@fake marker\n'''\n"),
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    weft.ok(&["run", "--isolated"]);
    let id = run_id(&weft);
    let integration = format!("refs/heads/weft/{id}/integration");
    let db = rusqlite::Connection::open(weft.db_path()).unwrap();
    let base: String = db
        .query_row("SELECT base_ref FROM runs WHERE id = ?1", [&id], |r| {
            r.get(0)
        })
        .unwrap();

    let crash = |db: &rusqlite::Connection| {
        db.execute_batch(
            "UPDATE attempts SET landing = NULL; UPDATE tasks SET status = 'in_progress';",
        )
        .unwrap();
    };

    // Before the compare-and-swap: the ref (and weft's record of it, which moves with it
    // in one transaction) is still at the base.
    weft.git(&["update-ref", &integration, &base]);
    weft.git(&["update-ref", &format!("refs/weft/{id}/tip"), &base]);
    crash(&db);
    let run = weft.ok(&["run", "--isolated"]);
    assert!(
        run.stdout
            .contains("its landing was finished after a restart"),
        "{}",
        run.stdout
    );
    assert_eq!(
        weft.git(&["show", &format!("{integration}:app.txt")]),
        "app"
    );
    assert_eq!(statuses(&weft)["write-app"], "completed");

    // After it: the ref already moved; nothing is merged twice.
    let tip = weft.git(&["rev-parse", &integration]).trim().to_owned();
    crash(&db);
    weft.ok(&["run", "--isolated"]);
    assert_eq!(weft.git(&["rev-parse", &integration]).trim(), tip);
    assert_eq!(statuses(&weft)["write-app"], "completed");
    let starts = crate::engine::records(&weft)
        .iter()
        .filter(|r| r.event == "start")
        .count();
    assert_eq!(starts, 1, "the agent ran again");
}

#[test]
fn runs_are_isolated_by_default_in_a_repository_and_shared_elsewhere() {
    let weft = Weft::with_agents();
    weft.write("plan.toml", "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"Write\"\nprompt = '''\n@fake write w.txt w\n@fake marker\n'''\n");
    weft.ok(&["plan", "--file", "plan.toml"]);
    let mut command = weft.command(&["run"]);
    command.env_remove("WEFT_ISOLATION");
    let run = weft.run_command(&["run"], command);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("Landed as"), "{}", run.stdout);
    assert!(!weft.work().join("w.txt").exists());
    let id = run_id(&weft);
    assert_eq!(
        weft.git(&["show", &format!("weft/{id}/integration:w.txt")]),
        "w"
    );

    // Not a repository: shared mode, with a notice.
    let bare = Weft::with_agents();
    std::fs::remove_dir_all(bare.work().join(".git")).unwrap();
    bare.write("plan.toml", "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"Write\"\nprompt = '''\n@fake write w.txt w\n@fake marker\n'''\n");
    bare.ok(&["init"]);
    bare.ok(&["plan", "--file", "plan.toml"]);
    let mut command = bare.command(&["run"]);
    command.env_remove("WEFT_ISOLATION");
    let run = bare.run_command(&["run"], command);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("note: running without isolation"),
        "{}",
        run.stderr
    );
    assert_eq!(read(&bare.work().join("w.txt")), "w");
    let forced = bare.fails(&["run", "--isolated", "--retry-failed"], 1);
    assert!(
        forced.stderr.contains("cannot run isolated"),
        "{}",
        forced.stderr
    );
}

#[test]
fn independent_ops_tasks_take_turns_in_the_shared_integration_checkout() {
    let weft = Weft::with_agents();
    let log = weft.env.root().join("ops.log");
    let mut text = String::from("goal = \"g\"\nrunner = \"claude-code\"\n");
    for id in ["first", "second", "third"] {
        text.push_str(&format!(
            "[[tasks]]\nid = \"{id}\"\ntitle = \"{id}\"\nkind = \"ops\"\ncommand = \"echo start >> {log}; sleep 0.3; echo end >> {log}\"\n",
            log = log.display()
        ));
    }
    weft.write("plan.toml", &text);
    weft.ok(&["plan", "--file", "plan.toml"]);
    weft.ok(&["run", "--isolated", "--parallel", "3"]);
    let lines = fs_err::read_to_string(&log).unwrap();
    assert_eq!(
        lines, "start\nend\nstart\nend\nstart\nend\n",
        "ops tasks overlapped in the one integration checkout"
    );
}

#[test]
fn ops_tasks_run_against_the_landed_work_in_the_integration_checkout() {
    let weft = Weft::with_agents();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"claude-code\"\n\
         [[tasks]]\nid = \"make\"\ntitle = \"Make a\"\nprompt = '''\n@fake write a.txt a\n@fake marker\n'''\n\
         [[tasks]]\nid = \"check\"\ntitle = \"Check a\"\nkind = \"ops\"\ncommand = \"test -f a.txt && test ! -e .git/MERGE_HEAD\"\ndependencies = [\"make\"]\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    weft.ok(&["run", "--isolated"]);
    assert_eq!(statuses(&weft)["check"], "completed");
    assert!(
        !weft.work().join("a.txt").exists(),
        "the ops task ran in the user's checkout"
    );
    let id = run_id(&weft);
    assert!(
        weft.work()
            .join(format!(".weft/worktrees/{id}/integration/a.txt"))
            .exists()
    );
}

#[test]
fn awkward_repositories_unborn_detached_spaces_and_deleted_worktrees() {
    // No commits yet: isolation is refused when asked for.
    let unborn = Weft::with_agents();
    std::fs::remove_dir_all(unborn.work().join(".git")).unwrap();
    unborn.git(&["init", "-q", "-b", "main"]);
    unborn.write("plan.toml", "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"T\"\nprompt = \"@fake marker\"\n");
    unborn.ok(&["plan", "--file", "plan.toml"]);
    let refused = unborn.fails(&["run", "--isolated"], 1);
    assert!(
        refused.stderr.contains("no commits yet"),
        "{}",
        refused.stderr
    );

    // A detached HEAD runs from its commit; the handoff merge refuses (nothing checked out
    // to merge into) and changes nothing.
    let detached = Weft::with_agents();
    detached.git(&["checkout", "-q", "--detach"]);
    detached.write("plan.toml", "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"T\"\nprompt = '''\n@fake write t.txt t\n@fake marker\n'''\n");
    detached.ok(&["plan", "--file", "plan.toml"]);
    detached.ok(&["run", "--isolated"]);
    let head = detached.git(&["rev-parse", "HEAD"]);
    let merge = detached.fails(&["handoff", "merge", "--yes"], 1);
    assert!(
        merge.stderr.contains("merging") && merge.stderr.contains("refused"),
        "{}",
        merge.stderr
    );
    assert_eq!(detached.git(&["rev-parse", "HEAD"]), head);

    // An agent that deletes its own worktree: weft lands what its branch holds and goes on.
    let deleter = Weft::with_agents();
    deleter.write("plan.toml", "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"Self destruct\"\nprompt = '''\n@fake run rm -rf \"$PWD\"\n@fake marker\n'''\n");
    deleter.ok(&["plan", "--file", "plan.toml"]);
    deleter.ok(&["run", "--isolated"]);
    assert!(
        deleter
            .ok(&["status"])
            .stdout
            .contains("completed (no changes)")
    );
    deleter.ok(&["handoff", "cleanup"]);

    // A workspace whose path has spaces and non-ASCII characters.
    let spaced = Weft::with_agents();
    let dir = spaced.work().join("my wörk späce");
    std::fs::create_dir_all(&dir).unwrap();
    weft_testkit::TestRepo::init(&dir, &spaced.env);
    spaced.write("my wörk späce/plan.toml", "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"Über task\"\nprompt = '''\n@fake write ü.txt ü\n@fake marker\n'''\n");
    let workspace = dir.to_str().unwrap();
    spaced.ok(&[
        "--workspace",
        workspace,
        "plan",
        "--file",
        dir.join("plan.toml").to_str().unwrap(),
    ]);
    spaced.ok(&["--workspace", workspace, "run", "--isolated"]);
    spaced.ok(&["--workspace", workspace, "handoff", "merge", "--yes"]);
    assert_eq!(read(&dir.join("ü.txt")), "ü");
}

#[test]
fn manual_tasks_wait_behind_the_merge_gate_and_complete_when_every_step_is_ticked() {
    let weft = Weft::with_agents();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"claude-code\"\n\
         [[tasks]]\nid = \"build\"\ntitle = \"Build a\"\nprompt = '''\n@fake write a.txt a\n@fake marker\n'''\n\
         [[tasks]]\nid = \"review\"\ntitle = \"Review a\"\nkind = \"manual\"\nsteps = [\"Read a.txt\", \"Sign off\"]\ndependencies = [\"build\"]\n\
         [[tasks]]\nid = \"ship\"\ntitle = \"Ship\"\ndependencies = [\"review\"]\nprompt = \"@fake marker\"\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let early = weft.fails(&["manual", "review", "--done"], 1);
    assert!(
        early.stderr.contains("cannot be ticked off yet"),
        "{}",
        early.stderr
    );
    assert!(
        early
            .stderr
            .starts_with("error: task #2 \"review\" cannot be ticked off yet"),
        "the refusal says what it is, not an isolation failure: {}",
        early.stderr
    );
    let not_manual = weft.fails(&["manual", "build"], 1);
    assert!(
        not_manual
            .stderr
            .contains("only a manual task has steps to tick"),
        "{}",
        not_manual.stderr
    );

    let run = weft.fails(&["run", "--isolated"], 1);
    assert!(
        run.stdout
            .contains("#2 Review a is a manual task: see its steps with `weft manual 2`"),
        "{}",
        run.stdout
    );
    let view = weft.ok(&["manual", "review"]).stdout;
    assert!(
        view.contains("[ ] 1. Read a.txt") && view.contains("[ ] 2. Sign off"),
        "{view}"
    );
    let id = run_id(&weft);
    let checkout = weft
        .work()
        .join(format!(".weft/worktrees/{id}/integration"));
    assert!(view.contains(&checkout.display().to_string()), "{view}");
    assert_eq!(
        read(&checkout.join("a.txt")),
        "a",
        "the checkout holds the landed work"
    );

    let one = weft.ok(&["manual", "review", "--done", "1"]);
    assert!(
        one.stdout.contains("1 of 2 step(s) ticked"),
        "{}",
        one.stdout
    );
    assert!(
        weft.ok(&["manual", "review"])
            .stdout
            .contains("[x] 1. Read a.txt")
    );
    let bad = weft.fails(&["manual", "review", "--done", "5"], 1);
    assert!(
        bad.stderr.contains("it has no step with that number"),
        "{}",
        bad.stderr
    );
    let all = weft.ok(&["manual", "review", "--done", "2"]);
    assert!(
        all.stdout.contains("the task is complete"),
        "{}",
        all.stdout
    );
    weft.ok(&["run", "--isolated"]);
    assert!(
        statuses(&weft).values().all(|s| s == "completed"),
        "{:?}",
        statuses(&weft)
    );
}

#[test]
fn landed_worktrees_are_kept_when_asked() {
    let weft = Weft::with_agents();
    weft.write("plan.toml", "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"Keep me\"\nprompt = '''\n@fake write k.txt k\n@fake marker\n'''\n");
    weft.ok(&["plan", "--file", "plan.toml"]);
    weft.ok(&["-c", "keep_worktrees=true", "run", "--isolated"]);
    let id = run_id(&weft);
    assert_eq!(
        read(
            &weft
                .work()
                .join(format!(".weft/worktrees/{id}/1-keep-me/k.txt"))
        ),
        "k"
    );
    let cleanup = weft.ok(&["handoff", "cleanup"]);
    assert!(
        cleanup.stdout.contains("removed 1 worktree(s)"),
        "{}",
        cleanup.stdout
    );
    assert!(
        !weft
            .work()
            .join(format!(".weft/worktrees/{id}/1-keep-me"))
            .exists()
    );
}

fn git_in(weft: &Weft, dir: &str, args: &[&str]) -> (bool, String) {
    let output = weft
        .env
        .command("git")
        .current_dir(weft.work().join(dir))
        .args(args)
        .output()
        .expect("git runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

/// A folder holding two repositories: one worktree per repository per task, landing
/// atomic across them, handoff merge all or nothing.
#[test]
fn a_multi_repo_group_lands_atomically_and_hands_off_all_or_nothing() {
    let weft = Weft::with_agents();
    std::fs::remove_dir_all(weft.work().join(".git")).unwrap();
    for repo in ["api", "web"] {
        let path = weft.work().join(repo);
        weft_testkit::TestRepo::init(&path, &weft.env);
    }
    weft.write("web/shared.txt", "original\n");
    git_in(&weft, "web", &["add", "-A"]);
    git_in(
        &weft,
        "web",
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "shared",
        ],
    );
    weft.ok(&["init"]);
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"claude-code\"\n\
         [[tasks]]\nid = \"fast\"\ntitle = \"Fast\"\nprompt = '''\n@fake write api/a.txt a\n@fake write web/shared.txt from fast\n@fake marker\n'''\n\
         [[tasks]]\nid = \"slow\"\ntitle = \"Slow\"\nprompt = '''\n@fake sleep 0.6\n@fake write api/b.txt b\n@fake write web/shared.txt from slow\n@fake marker\n'''\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let run = weft.fails(&["run", "--isolated"], 1);
    let s = statuses(&weft);
    assert_eq!(s["fast"], "completed", "{}", run.stdout);
    assert_eq!(s["slow"], "conflicted", "{}", run.stdout);
    let json = weft.status_json();
    let reason = json["plan"]["tasks"][1]["verdict"]["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(reason.contains("web/shared.txt"), "{reason}");
    let (_, branches) = git_in(
        &weft,
        "api",
        &[
            "branch",
            "--list",
            "weft/*/integration",
            "--format=%(refname:short)",
        ],
    );
    let integration = branches.trim().to_owned();
    // fast landed in both; slow's api part was rolled back when web conflicted.
    assert!(git_in(&weft, "api", &["show", &format!("{integration}:a.txt")]).0);
    assert!(
        git_in(
            &weft,
            "web",
            &["show", &format!("{integration}:shared.txt")]
        )
        .1 == "from fast"
    );
    assert!(
        !git_in(&weft, "api", &["show", &format!("{integration}:b.txt")]).0,
        "slow's api work landed alone"
    );

    // One repository failing its preflight stops the merge everywhere.
    weft.write("web/shared.txt", "my uncommitted edit\n");
    let api_head = git_in(&weft, "api", &["rev-parse", "HEAD"]).1;
    let refused = weft.fails(&["handoff", "merge", "--yes"], 1);
    assert!(refused.stderr.contains("web: "), "{}", refused.stderr);
    assert!(
        refused.stderr.contains("nothing was merged"),
        "{}",
        refused.stderr
    );
    assert_eq!(git_in(&weft, "api", &["rev-parse", "HEAD"]).1, api_head);
    git_in(&weft, "web", &["checkout", "--", "shared.txt"]);
    let review = weft.ok(&["handoff", "review", "--stat"]).stdout;
    assert!(
        review.contains("== api ==") && review.contains("== web =="),
        "{review}"
    );
    weft.ok(&["handoff", "merge", "--yes"]);
    assert_eq!(read(&weft.work().join("api/a.txt")), "a");
    assert_eq!(read(&weft.work().join("web/shared.txt")), "from fast");
}

#[test]
fn a_repair_that_leaves_conflict_markers_is_conflicted_again_and_retry_drops_kept_worktrees() {
    let weft = Weft::with_agents();
    weft.write("shared.txt", "original\n");
    weft.commit_all("shared");
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"claude-code\"\n\
         [[tasks]]\nid = \"fast\"\ntitle = \"Fast edit\"\nprompt = '''\n@fake write shared.txt from fast\n@fake marker\n'''\n\
         [[tasks]]\nid = \"slow\"\ntitle = \"Slow edit\"\nprompt = '''\n@fake sleep 0.6\n@fake write shared.txt from slow\n@fake marker\n'''\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    weft.fails(&["run", "--isolated"], 1);
    assert_eq!(statuses(&weft)["slow"], "conflicted");
    weft.ok(&["repair", "slow"]);
    // This repair agent resolves nothing: it only claims success.
    weft.ok(&["task", "edit", "slow", "--prompt", "@fake marker"]);
    weft.fails(&["run", "--isolated"], 1);
    assert_eq!(statuses(&weft)["slow"], "conflicted");
    let json = weft.status_json();
    let reason = json["plan"]["tasks"][1]["verdict"]["reason"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        reason.contains("conflict markers are still in shared.txt"),
        "{reason}"
    );
    let id = run_id(&weft);
    assert_eq!(
        weft.git(&["show", &format!("weft/{id}/integration:shared.txt")]),
        "from fast",
        "markers reached the integration branch"
    );

    // A retry drops the worktrees kept for inspection and starts from a fresh cut.
    let kept = weft
        .work()
        .join(format!(".weft/worktrees/{id}/2-slow-edit"));
    assert!(kept.exists());
    let retry = weft.ok(&["retry", "slow"]);
    assert!(
        retry.stdout.contains("removed its kept worktree"),
        "{}",
        retry.stdout
    );
    assert!(!kept.exists());
    weft.ok(&[
        "task",
        "edit",
        "slow",
        "--prompt",
        "@fake write shared.txt from fast\n@fake marker",
    ]);
    weft.ok(&["run", "--isolated"]);
    assert!(statuses(&weft).values().all(|s| s == "completed"));
}

/// `repos` in weft.toml names the group's repositories; others are left alone.
#[test]
fn a_group_uses_the_repositories_weft_toml_lists() {
    let weft = Weft::with_agents();
    std::fs::remove_dir_all(weft.work().join(".git")).unwrap();
    for repo in ["api", "other"] {
        weft_testkit::TestRepo::init(&weft.work().join(repo), &weft.env);
    }
    weft.write("weft.toml", "repos = [\"api\"]\n");
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"claude-code\"\n[[tasks]]\ntitle = \"Api\"\nprompt = '''\n@fake write api/x.txt x\n@fake marker\n'''\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    weft.ok(&["run", "--isolated"]);
    let (_, api) = git_in(
        &weft,
        "api",
        &["branch", "--list", "weft/*", "--format=%(refname:short)"],
    );
    assert!(api.contains("/integration"), "{api}");
    let (_, other) = git_in(&weft, "other", &["branch", "--list", "weft/*"]);
    assert_eq!(
        other.trim(),
        "",
        "a repository weft.toml does not list was touched"
    );
}

/// The checks gate has no way around it: an agent that printed its marker and then ran
/// into its time limit still owes its checks. A failing check fails the task and nothing
/// lands; a passing one lets it land.
#[test]
fn a_marker_then_a_timeout_still_runs_the_checks_before_anything_lands() {
    let weft = Weft::with_agents();
    weft.write(
        "plan.toml",
        r#"goal = "g"
runner = "claude-code"

[[tasks]]
id = "claims"
title = "Claims success then hangs"
prompt = '''
@fake write out/claimed.txt claimed
@fake marker
@fake hang
'''
checks = ["echo the tests failed; exit 3"]

[[tasks]]
id = "honest"
title = "Really done then hangs"
prompt = '''
@fake write out/honest.txt honest
@fake marker
@fake hang
'''
checks = ["test -f out/honest.txt"]
"#,
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    let run = weft.fails(&["-c", "task_timeout=3s", "run", "--isolated"], 1);
    let json = weft.status_json();
    let task = |id: &str| {
        json["plan"]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap()
            .clone()
    };
    let claims = task("claims");
    assert_eq!(claims["status"], "failed", "{}", run.stdout);
    let verdict = &claims["verdict"];
    assert_eq!(verdict["outcome"], "fail");
    assert!(
        verdict["reason"]
            .as_str()
            .unwrap()
            .contains("echo the tests failed; exit 3"),
        "{verdict}"
    );
    let checks = verdict["checks"].as_array().unwrap();
    let named = |name: &str| checks.iter().find(|c| c["name"] == name).cloned();
    assert_eq!(named("completion_marker").unwrap()["passed"], true);
    assert_eq!(named("timeout").unwrap()["skipped"], true);
    assert_eq!(
        named("check:echo the tests failed; exit 3").unwrap()["passed"],
        false
    );
    assert_eq!(task("honest")["status"], "completed", "{}", run.stdout);
    let integration = format!("weft/{}/integration", run_id(&weft));
    let landed = weft.git(&["ls-tree", "-r", "--name-only", &integration]);
    assert!(landed.contains("out/honest.txt"), "{landed}");
    assert!(!landed.contains("out/claimed.txt"), "{landed}");
}

/// Issue 12, failure 7: with git missing from PATH weft said "not a git repository" and
/// continued an isolated run in the user's checkout; a repository without commits ran
/// shared with a note. Isolation never silently degrades now.
#[test]
fn isolation_never_silently_degrades_when_git_is_missing_or_the_repository_has_no_commits() {
    let weft = Weft::new();
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"exec\"\n[[tasks]]\ntitle = \"Flaky\"\nprompt = '''\nprintf 'x\\n' > x.txt\nexit 3\n'''\n",
    );
    weft.commit_all("plan");
    weft.ok(&["plan", "--file", "plan.toml"]);
    weft.fails(&["run"], 1);
    let id = run_id(&weft);
    assert!(!weft.work().join("x.txt").exists());

    // git is missing from PATH (sh is still there): refused, and nothing ran here.
    let bin = weft.env.root().join("no-git-bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink("/bin/sh", bin.join("sh")).unwrap();
    let args = ["run", "--retry-failed"];
    let mut command = weft.command(&args);
    command.env("PATH", &bin);
    let run = weft.run_command(&args, command);
    assert_eq!(run.code, 1, "{}", weft.show(&run));
    assert!(
        run.stderr
            .contains("cannot run isolated: git was not found on PATH"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("not a git repository"),
        "{}",
        run.stderr
    );
    assert!(
        !weft.work().join("x.txt").exists(),
        "the run went on in the checkout"
    );

    // Asked to continue that isolated run shared: refused by the engine too.
    let shared = weft.fails(&["run", "--retry-failed", "--without-isolation"], 1);
    assert!(
        shared
            .stderr
            .contains(&format!("run {id} started isolated")),
        "{}",
        shared.stderr
    );
    assert!(
        !weft.work().join("x.txt").exists(),
        "the run went on in the checkout"
    );

    // A repository without commits refuses an isolated run by default, with the hint.
    let unborn = Weft::bare();
    unborn.git(&["init", "-q", "-b", "main"]);
    unborn.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"exec\"\n[[tasks]]\ntitle = \"T\"\nprompt = \"true\"\n",
    );
    unborn.ok(&["plan", "--file", "plan.toml"]);
    let refused = unborn.fails(&["run"], 1);
    assert!(
        refused.stderr.contains("no commits yet")
            && refused.stderr.contains("make a first commit")
            && refused.stderr.contains("--without-isolation"),
        "{}",
        refused.stderr
    );
    assert!(
        !refused.stderr.contains("running without isolation"),
        "{}",
        refused.stderr
    );
    unborn.ok(&["run", "--without-isolation"]);
}
