//! The approval policy (DESIGN §11): one test per rule, then a property test over random
//! sequences of requests, answers, resets, expiries and ended attempts.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use weft_core::approval::{
    ApprovalError, ApprovalPolicy, AskId, Asker, Decision, Mode, Outcome, PLANNER_ASK_TTL, Request,
    Scope, Settlement, Source, Subject, WaiterId,
};

const T0: i64 = 1_700_000_000_000;

fn scope(text: &str) -> Scope {
    Scope::parse(text).unwrap()
}

fn cmd(line: &str) -> String {
    Scope::for_command(line).to_string()
}

fn read(path: &str, asker: Asker) -> Request {
    Request::new(
        Subject::Read {
            path: path.to_owned(),
        },
        asker,
    )
}

fn run(line: &str, asker: Asker) -> Request {
    Request::new(
        Subject::Command {
            line: line.to_owned(),
        },
        asker,
    )
}

fn runner(attempt: &str) -> Asker {
    Asker::Runner {
        attempt: attempt.to_owned(),
    }
}

fn asking(pre: &[&str]) -> ApprovalPolicy {
    let mut policy = ApprovalPolicy::new(Mode::Ask, pre.iter().map(|s| scope(s)).collect());
    policy.set_channel(true);
    policy
}

fn decided(outcome: Outcome) -> Decision {
    match outcome {
        Outcome::Decided(decision) => decision,
        other => panic!("expected a decision, got {other:?}"),
    }
}

fn pending(outcome: Outcome) -> (AskId, WaiterId) {
    match outcome {
        Outcome::Pending { ask, waiter } => (ask, waiter),
        other => panic!("expected a pending ask, got {other:?}"),
    }
}

fn sources(settled: &[Settlement]) -> Vec<(WaiterId, bool, Source)> {
    settled
        .iter()
        .map(|s| (s.waiter, s.decision.allowed, s.decision.source))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Scope derivation
// ---------------------------------------------------------------------------------------

#[test]
fn a_read_path_grants_its_directory() {
    assert_eq!(Scope::for_read("/etc/hosts").to_string(), "path:/etc/*");
    assert_eq!(
        Scope::for_read("/tmp/foo/a.log").to_string(),
        "path:/tmp/foo/*"
    );
    assert_eq!(Scope::for_read("/hosts").to_string(), "path:/*");
    assert_eq!(
        Scope::for_read("/srv/app/.env").to_string(),
        "path:/srv/app/*"
    );
}

#[test]
fn a_listed_directory_is_its_own_scope() {
    assert_eq!(Scope::for_list("/etc").to_string(), "path:/etc/*");
    assert_eq!(Scope::for_list("/etc/").to_string(), "path:/etc/*");
    assert_eq!(Scope::for_list("/").to_string(), "path:/*");
}

#[test]
fn paths_are_normalised_lexically() {
    assert_eq!(
        Scope::for_read("/etc//ssl/./../hosts").to_string(),
        "path:/etc/*"
    );
    assert_eq!(
        Scope::for_read("/../../etc/hosts").to_string(),
        "path:/etc/*"
    );
    assert_eq!(Scope::for_read(".env").to_string(), "path:./*");
    assert_eq!(Scope::for_read("../other/x").to_string(), "path:../other/*");
    assert_eq!(Scope::for_read("..").to_string(), "path:../../*");
}

#[test]
fn a_command_grants_its_family() {
    assert_eq!(cmd("git log --oneline"), "command:git log");
    assert_eq!(cmd("az group list"), "command:az group");
    assert_eq!(cmd("ls -la"), "command:ls");
    assert_eq!(cmd("cat hosts"), "command:cat");
    assert_eq!(cmd("git"), "command:git");
    assert_eq!(cmd("git --version"), "command:git");
    assert_eq!(cmd("cargo +nightly build --release"), "command:cargo build");
}

#[test]
fn global_options_before_a_subcommand_are_skipped() {
    assert_eq!(cmd("git -C /repo log -3"), "command:git log");
    assert_eq!(
        cmd("git --no-pager -c core.pager=cat show HEAD"),
        "command:git show"
    );
    assert_eq!(cmd("kubectl -n prod get pods"), "command:kubectl get");
    assert_eq!(cmd("git -C /repo"), "command:git");
}

#[test]
fn assignments_and_transparent_wrappers_are_stripped() {
    assert_eq!(cmd("FOO=1 BAR='a b' git status"), "command:git status");
    assert_eq!(cmd("env -u HOME FOO=1 az group list"), "command:az group");
    assert_eq!(cmd("nohup nice -n 5 cargo test"), "command:cargo test");
    assert_eq!(cmd("timeout -s KILL 10 git fetch"), "command:git fetch");
    assert_eq!(cmd("env"), "command:env");
    assert_eq!(cmd("FOO=1"), "command:FOO=1");
}

#[test]
fn sudo_is_kept_as_a_prefix() {
    assert_eq!(cmd("sudo apt list --installed"), "command:sudo apt list");
    assert_eq!(cmd("sudo az group list"), "command:sudo az group");
    assert_eq!(
        cmd("sudo -u postgres psql -c 'select 1'"),
        "command:sudo psql"
    );
    assert_eq!(cmd("sudo"), "command:sudo");
    assert_ne!(cmd("sudo cat /etc/shadow"), cmd("cat /etc/shadow"));
}

#[test]
fn a_program_is_kept_as_written() {
    assert_eq!(cmd("/usr/bin/git log"), "command:/usr/bin/git");
    assert_eq!(cmd("./git log"), "command:./git");
}

#[test]
fn splitting_is_quote_aware() {
    assert_eq!(cmd("\"git\" 'log' --format='%H %s'"), "command:git log");
    assert_eq!(cmd("grep 'a | b; c && d' file"), "command:grep");
    assert_eq!(cmd("echo \"x && rm -rf /\""), "command:echo");
    assert_eq!(cmd("echo a\\;b"), "command:echo");
}

#[test]
fn pipelines_and_lists_give_one_combined_scope() {
    assert_eq!(cmd("git log | head -5"), "command:git log + head");
    assert_eq!(
        cmd("cd /x && ls; ls -l || true &"),
        "command:cd + ls + true"
    );
    assert_eq!(
        cmd("find . -name '*.rs' | xargs -n 1 rm"),
        "command:find + rm"
    );
    assert_eq!(cmd("(cd sub && make test)"), "command:cd + make test");
}

#[test]
fn shell_scripts_and_substitutions_contribute_their_commands() {
    assert_eq!(cmd("sh -c 'git log | head'"), "command:git log + head");
    assert_eq!(cmd("bash -lc \"az group list\""), "command:az group");
    assert_eq!(cmd("bash script.sh"), "command:bash");
    assert_eq!(cmd("echo $(rm -rf /tmp/x)"), "command:echo + rm");
    assert_eq!(cmd("echo \"`whoami`\""), "command:echo + whoami");
    assert_eq!(cmd("$(echo git) log"), "command:$(echo git) + echo");
}

#[test]
fn redirections_comments_and_keywords_are_ignored() {
    assert_eq!(cmd("cat a 2>/dev/null > out.txt"), "command:cat");
    assert_eq!(cmd("cat < in.txt &> log 2>&1"), "command:cat");
    assert_eq!(cmd("ls # and then rm"), "command:ls");
    assert_eq!(cmd("if true; then ls; fi"), "command:true + ls");
    assert_eq!(cmd("for f in *; do cat $f; done"), "command:cat");
}

#[test]
fn scopes_parse_display_and_serialize_as_text() {
    for text in [
        "path:/etc/*",
        "path:/*",
        "command:git log",
        "command:git log + head",
    ] {
        let parsed = scope(text);
        assert_eq!(parsed.to_string(), text);
        let json = serde_json::to_string(&parsed).unwrap();
        assert_eq!(json, format!("\"{text}\""));
        assert_eq!(serde_json::from_str::<Scope>(&json).unwrap(), parsed);
    }
    assert_eq!(scope("path:/etc").to_string(), "path:/etc/*");
    assert_eq!(scope("command:  git   log ").to_string(), "command:git log");
    for bad in [
        "",
        "/etc/*",
        "path:",
        "command:",
        "command:a +  + b",
        "url:x",
    ] {
        let error = Scope::parse(bad).unwrap_err();
        assert!(error.to_string().contains("expected path:DIR/*"), "{error}");
    }
    assert!(serde_json::from_str::<Scope>("\"nope\"").is_err());
}

#[test]
fn ask_ids_display_short_and_parse_with_or_without_hash() {
    assert_eq!(AskId(3).to_string(), "3");
    assert_eq!("3".parse::<AskId>().unwrap(), AskId(3));
    assert_eq!("#12".parse::<AskId>().unwrap(), AskId(12));
    assert!("x".parse::<AskId>().is_err());
}

// ---------------------------------------------------------------------------------------
// Modes and the pre-approved list
// ---------------------------------------------------------------------------------------

#[test]
fn mode_allow_and_deny_decide_with_source_mode_and_are_not_remembered() {
    let mut policy = ApprovalPolicy::new(Mode::Allow, vec![]);
    let decision = decided(policy.request(read("/etc/hosts", Asker::Planner), T0));
    assert!(decision.allowed);
    assert_eq!(decision.source, Source::Mode);
    assert_eq!(decision.scope, scope("path:/etc/*"));
    assert!(policy.remembered().is_empty());

    policy.set_mode(Mode::Deny);
    let decision = decided(policy.request(read("/etc/hosts", Asker::Planner), T0));
    assert!(!decision.allowed);
    assert_eq!(decision.source, Source::Mode);
    assert_eq!(decision.decided_at, T0);
}

#[test]
fn mode_ask_opens_a_question() {
    let mut policy = asking(&[]);
    let (ask, _) = pending(policy.request(run("az group list", runner("a1")), T0));
    let open = policy.open_asks();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].id, ask);
    assert_eq!(open[0].scope, scope("command:az group"));
}

#[test]
fn the_pre_approved_list_is_honoured_in_every_mode() {
    for mode in Mode::ALL {
        for channel in [false, true] {
            let mut policy =
                ApprovalPolicy::new(mode, vec![scope("path:/etc/*"), scope("command:git log")]);
            policy.set_channel(channel);
            for request in [
                read("/etc/hosts", Asker::Planner),
                read("/etc/ssl/certs/ca.pem", runner("a")),
                run("git log --oneline", Asker::Planner),
            ] {
                let decision = decided(policy.request(request, T0));
                assert!(decision.allowed, "{mode}");
                assert_eq!(decision.source, Source::PreApproved);
            }
        }
    }
}

#[test]
fn a_pre_approved_command_is_a_word_prefix_and_a_path_its_subtree() {
    let mut policy = ApprovalPolicy::new(
        Mode::Deny,
        vec![
            scope("command:git"),
            scope("command:head"),
            scope("path:/data/*"),
        ],
    );
    for line in ["git push", "git log | head", "git"] {
        assert_eq!(
            decided(policy.request(run(line, Asker::Planner), T0)).source,
            Source::PreApproved,
            "{line}"
        );
    }
    for line in ["gitk", "git log | tail", "sudo git log"] {
        let decision = decided(policy.request(run(line, Asker::Planner), T0));
        assert_eq!(
            (decision.allowed, decision.source),
            (false, Source::Mode),
            "{line}"
        );
    }
    assert!(decided(policy.request(read("/data/a/b/c", Asker::Planner), T0)).allowed);
    assert!(!decided(policy.request(read("/database/x", Asker::Planner), T0)).allowed);
    assert!(!decided(policy.request(read("/x", Asker::Planner), T0)).allowed);
}

#[test]
fn with_no_channel_ask_mode_denies_with_source_no_channel_not_remembered() {
    let mut policy = ApprovalPolicy::new(Mode::Ask, vec![]);
    assert!(!policy.channel(), "no channel until a front end says so");
    let decision = decided(policy.request(read("/etc/hosts", Asker::Planner), T0));
    assert_eq!(
        (decision.allowed, decision.source),
        (false, Source::NoChannel)
    );
    assert!(policy.remembered().is_empty());
    assert!(policy.open_asks().is_empty());
    policy.set_channel(true);
    pending(policy.request(read("/etc/hosts", Asker::Planner), T0));
}

#[test]
fn no_channel_still_honours_remembered_answers() {
    let mut policy = asking(&[]);
    let (ask, _) = pending(policy.request(read("/etc/hosts", Asker::Planner), T0));
    policy.answer(ask, true, None, T0 + 1).unwrap();
    policy.set_channel(false);
    let decision = decided(policy.request(read("/etc/passwd", Asker::Planner), T0 + 2));
    assert_eq!(
        (decision.allowed, decision.source),
        (true, Source::Remembered)
    );
}

// ---------------------------------------------------------------------------------------
// Answers
// ---------------------------------------------------------------------------------------

#[test]
fn a_yes_is_remembered_for_the_scope() {
    let mut policy = asking(&[]);
    let (ask, waiter) = pending(policy.request(read("/tmp/foo/a.log", Asker::Planner), T0));
    let settled = policy.answer(ask, true, None, T0 + 5).unwrap();
    assert_eq!(sources(&settled), vec![(waiter, true, Source::Asked)]);
    assert_eq!(settled[0].decision.decided_at, T0 + 5);
    assert_eq!(settled[0].request, read("/tmp/foo/a.log", Asker::Planner));

    for path in ["/tmp/foo/b.log", "/tmp/foo/sub/c.log"] {
        let decision = decided(policy.request(read(path, Asker::Planner), T0 + 6));
        assert_eq!(
            (decision.allowed, decision.source),
            (true, Source::Remembered)
        );
    }
    pending(policy.request(read("/tmp/bar/x", Asker::Planner), T0 + 7));
}

#[test]
fn a_no_is_remembered_for_the_scope() {
    let mut policy = asking(&[]);
    let (ask, _) = pending(policy.request(run("az group list", Asker::Planner), T0));
    let settled = policy.answer(ask, false, None, T0).unwrap();
    assert_eq!(settled[0].decision.source, Source::Asked);
    assert!(!settled[0].decision.allowed);
    let decision = decided(policy.request(run("az group show -n x", runner("a")), T0));
    assert_eq!(
        (decision.allowed, decision.source),
        (false, Source::Remembered)
    );
    assert!(policy.open_asks().is_empty());
}

#[test]
fn a_remembered_command_family_is_matched_exactly() {
    let mut policy = asking(&[]);
    let (ask, _) = pending(policy.request(run("git --version", Asker::Planner), T0));
    policy.answer(ask, true, None, T0).unwrap();
    // Allowing `git` (no subcommand) does not allow every git subcommand.
    pending(policy.request(run("git push", Asker::Planner), T0));
}

#[test]
fn the_most_specific_remembered_path_wins() {
    let mut policy = asking(&[]);
    let (inner, _) = pending(policy.request(read("/srv/secret/key", Asker::Planner), T0));
    policy.answer(inner, false, None, T0).unwrap();
    let (outer, _) = pending(policy.request(read("/srv/a", Asker::Planner), T0));
    policy.answer(outer, true, None, T0).unwrap();
    assert!(!decided(policy.request(read("/srv/secret/deep/x", Asker::Planner), T0)).allowed);
    assert!(decided(policy.request(read("/srv/other/x", Asker::Planner), T0)).allowed);
}

#[test]
fn a_combined_scope_is_one_answer_but_its_parts_answers_apply_to_it() {
    let mut policy = asking(&[]);
    let (ask, _) = pending(policy.request(run("git log | head", Asker::Planner), T0));
    policy.answer(ask, false, None, T0).unwrap();
    // The no was about the combination: each part alone still asks.
    pending(policy.request(run("git log", Asker::Planner), T0));
    let (head, _) = pending(policy.request(run("head -3 f", Asker::Planner), T0));
    policy.answer(head, false, None, T0).unwrap();
    // A no to a part denies any combination containing it.
    let decision = decided(policy.request(run("cat x | head", Asker::Planner), T0));
    assert_eq!(
        (decision.allowed, decision.source),
        (false, Source::Remembered)
    );

    let mut policy = asking(&[]);
    for line in ["git log", "wc -l"] {
        let (ask, _) = pending(policy.request(run(line, Asker::Planner), T0));
        policy.answer(ask, true, None, T0).unwrap();
    }
    let decision = decided(policy.request(run("git log | wc -l", Asker::Planner), T0));
    assert_eq!(
        (decision.allowed, decision.source),
        (true, Source::Remembered)
    );
}

#[test]
fn an_answer_may_widen_the_scope_it_remembers() {
    let mut policy = asking(&[]);
    let (ask, _) = pending(policy.request(run("git log", Asker::Planner), T0));
    let (other, other_waiter) = pending(policy.request(run("git show HEAD", runner("a")), T0));
    let settled = policy
        .answer(ask, true, Some(scope("command:git")), T0)
        .unwrap();
    // The widened grant also settles the other open ask it now covers.
    assert_eq!(settled.len(), 2);
    assert_eq!(settled[1].ask, other);
    assert_eq!(
        (settled[1].waiter, settled[1].decision.source),
        (other_waiter, Source::Remembered)
    );
    assert!(decided(policy.request(run("git push", Asker::Planner), T0)).allowed);
    assert!(policy.remembered()[0].wide);
}

#[test]
fn an_answer_scope_that_does_not_cover_the_ask_is_refused() {
    let mut policy = asking(&[]);
    let (ask, _) = pending(policy.request(read("/etc/hosts", Asker::Planner), T0));
    let before = policy.clone();
    for narrow in ["path:/etc/ssl/*", "command:cat", "path:/var/*"] {
        let error = policy
            .answer(ask, true, Some(scope(narrow)), T0)
            .unwrap_err();
        assert!(matches!(error, ApprovalError::ScopeTooNarrow { .. }));
        assert!(
            error.to_string().contains("does not cover path:/etc/*"),
            "{error}"
        );
        assert_eq!(policy, before);
    }
    policy
        .answer(ask, true, Some(scope("path:/*")), T0)
        .unwrap();
}

#[test]
fn concurrent_asks_for_one_scope_collapse_and_one_answer_settles_all() {
    let mut policy = asking(&[]);
    let (first, w1) = pending(policy.request(read("/etc/hosts", Asker::Planner), T0));
    let (second, w2) = pending(policy.request(read("/etc/passwd", Asker::Planner), T0 + 1));
    let (third, w3) = pending(policy.request(read("/etc/group", runner("a")), T0 + 2));
    assert_eq!(first, second);
    assert_eq!(first, third);
    let open = policy.open_asks();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].waiters.len(), 3);
    assert_eq!(
        open[0].subject,
        Subject::Read {
            path: "/etc/hosts".into()
        }
    );

    let settled = policy.answer(first, true, None, T0 + 3).unwrap();
    assert_eq!(
        sources(&settled),
        vec![
            (w1, true, Source::Asked),
            (w2, true, Source::Asked),
            (w3, true, Source::Asked)
        ]
    );
    assert!(policy.open_asks().is_empty());
}

#[test]
fn different_scopes_get_different_asks() {
    let mut policy = asking(&[]);
    let (a, _) = pending(policy.request(read("/etc/hosts", Asker::Planner), T0));
    let (b, _) = pending(policy.request(read("/var/log/x", Asker::Planner), T0));
    assert_ne!(a, b);
    assert_eq!(policy.open_asks().len(), 2);
}

#[test]
fn an_answer_to_a_settled_or_unknown_ask_is_refused() {
    let mut policy = asking(&[]);
    let (ask, _) = pending(policy.request(read("/etc/hosts", Asker::Planner), T0));
    policy.answer(ask, true, None, T0).unwrap();
    let before = policy.clone();
    assert_eq!(
        policy.answer(ask, false, None, T0),
        Err(ApprovalError::Settled { ask })
    );
    assert_eq!(
        policy.answer(AskId(99), false, None, T0),
        Err(ApprovalError::Unknown { ask: AskId(99) })
    );
    assert_eq!(
        policy.answer(AskId(0), false, None, T0),
        Err(ApprovalError::Unknown { ask: AskId(0) })
    );
    assert_eq!(policy, before);
}

// ---------------------------------------------------------------------------------------
// Reset
// ---------------------------------------------------------------------------------------

#[test]
fn a_reset_drops_grants_and_open_asks() {
    let mut policy = asking(&[]);
    let (granted, _) = pending(policy.request(read("/etc/hosts", Asker::Planner), T0));
    policy.answer(granted, true, None, T0).unwrap();
    let (_, waiter) = pending(policy.request(read("/var/x", runner("a")), T0));

    let settled = policy.reset(T0 + 1);
    assert_eq!(sources(&settled), vec![(waiter, false, Source::Reset)]);
    assert!(policy.open_asks().is_empty());
    assert!(policy.remembered().is_empty());
    assert_eq!(policy.resets(), 1);
    // The grant is gone: the same read asks again.
    pending(policy.request(read("/etc/hosts", Asker::Planner), T0 + 2));
}

#[test]
fn a_late_answer_from_before_a_reset_is_refused_and_changes_nothing() {
    let mut policy = asking(&[]);
    let (old, _) = pending(policy.request(read("/etc/hosts", Asker::Planner), T0));
    policy.reset(T0 + 1);
    // A new ask for the same scope after the reset has a new id.
    let (new, _) = pending(policy.request(read("/etc/hosts", Asker::Planner), T0 + 2));
    assert_ne!(old, new);
    let before = policy.clone();

    let error = policy.answer(old, true, None, T0 + 3).unwrap_err();
    assert_eq!(
        error,
        ApprovalError::Reset {
            ask: old,
            resets: 1
        }
    );
    let message = error.to_string();
    assert!(message.contains(&format!("ask {old}")), "{message}");
    assert!(message.contains("reset"), "{message}");
    assert_eq!(policy, before);
    assert_eq!(policy.open_asks()[0].id, new);
}

// ---------------------------------------------------------------------------------------
// Expiry, ended attempts, withdrawal
// ---------------------------------------------------------------------------------------

#[test]
fn a_planner_ask_expires_as_denied_after_five_minutes() {
    assert_eq!(PLANNER_ASK_TTL, 300_000);
    let mut policy = asking(&[]);
    let (ask, waiter) = pending(policy.request(read("/etc/hosts", Asker::Planner), T0));
    assert_eq!(policy.next_expiry(), Some(T0 + PLANNER_ASK_TTL));
    assert_eq!(policy.open_asks()[0].expires_at, Some(T0 + PLANNER_ASK_TTL));
    assert!(policy.expire(T0 + PLANNER_ASK_TTL - 1).is_empty());

    let settled = policy.expire(T0 + PLANNER_ASK_TTL);
    assert_eq!(sources(&settled), vec![(waiter, false, Source::Expired)]);
    assert_eq!(settled[0].ask, ask);
    assert!(policy.open_asks().is_empty());
    assert_eq!(policy.next_expiry(), None);
    // Nobody said no, so nothing is remembered: the next read asks again.
    assert!(policy.remembered().is_empty());
    pending(policy.request(read("/etc/hosts", Asker::Planner), T0 + PLANNER_ASK_TTL + 1));
    assert_eq!(
        policy.answer(ask, true, None, T0),
        Err(ApprovalError::Settled { ask })
    );
}

#[test]
fn a_runner_ask_never_expires() {
    let mut policy = asking(&[]);
    let (ask, waiter) = pending(policy.request(run("az group list", runner("a1")), T0));
    assert_eq!(policy.next_expiry(), None);
    assert_eq!(policy.open_asks()[0].expires_at, None);
    assert!(policy.expire(T0 + 365 * 24 * 3_600_000).is_empty());
    let settled = policy.answer(ask, true, None, T0 + 1).unwrap();
    assert_eq!(sources(&settled), vec![(waiter, true, Source::Asked)]);
}

#[test]
fn expiry_is_per_waiter_so_a_runner_joined_to_a_planner_ask_keeps_waiting() {
    let mut policy = asking(&[]);
    let (ask, planner) = pending(policy.request(read("/etc/hosts", Asker::Planner), T0));
    let (joined, runner_waiter) = pending(policy.request(read("/etc/x", runner("a")), T0 + 10));
    assert_eq!(ask, joined);
    assert_eq!(policy.open_asks()[0].expires_at, None);

    let settled = policy.expire(T0 + PLANNER_ASK_TTL);
    assert_eq!(sources(&settled), vec![(planner, false, Source::Expired)]);
    let open = policy.open_asks();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].waiters.len(), 1);

    let settled = policy
        .answer(ask, true, None, T0 + PLANNER_ASK_TTL + 1)
        .unwrap();
    assert_eq!(
        sources(&settled),
        vec![(runner_waiter, true, Source::Asked)]
    );
}

#[test]
fn a_planner_joining_later_gets_its_own_five_minutes() {
    let mut policy = asking(&[]);
    let (_, first) = pending(policy.request(read("/etc/a", Asker::Planner), T0));
    let (_, second) = pending(policy.request(read("/etc/b", Asker::Planner), T0 + 60_000));
    assert_eq!(
        policy.open_asks()[0].expires_at,
        Some(T0 + 60_000 + PLANNER_ASK_TTL)
    );
    assert_eq!(sources(&policy.expire(T0 + PLANNER_ASK_TTL))[0].0, first);
    assert_eq!(
        sources(&policy.expire(T0 + 60_000 + PLANNER_ASK_TTL)),
        vec![(second, false, Source::Expired)]
    );
}

#[test]
fn open_asks_are_denied_when_their_attempt_ends() {
    let mut policy = asking(&[]);
    let (ask_a, w_a) = pending(policy.request(run("az group list", runner("a1")), T0));
    let (_, w_b) = pending(policy.request(run("az group show", runner("a2")), T0));
    let (_, w_c) = pending(policy.request(read("/etc/hosts", runner("a1")), T0));
    let (_, w_p) = pending(policy.request(read("/etc/x", Asker::Planner), T0));

    let settled = policy.attempt_ended("a1", T0 + 1);
    let mut got = sources(&settled);
    got.sort_by_key(|(waiter, _, _)| *waiter);
    assert_eq!(
        got,
        vec![
            (w_a, false, Source::Withdrawn),
            (w_c, false, Source::Withdrawn)
        ]
    );
    // Attempt a2 and the planner share those scopes and still wait on the same asks.
    let open = policy.open_asks();
    assert_eq!(open.len(), 2);
    assert_eq!(open[0].id, ask_a);
    assert_eq!(open[0].waiters[0].waiter, w_b);
    assert_eq!(open[1].waiters[0].waiter, w_p);
    assert!(policy.remembered().is_empty());
    assert!(policy.attempt_ended("a1", T0 + 2).is_empty());
}

#[test]
fn a_withdrawn_request_is_settled_as_denied() {
    let mut policy = asking(&[]);
    let (_, waiter) = pending(policy.request(run("az group list", runner("a1")), T0));
    let settled = policy.withdraw(waiter, T0 + 1).unwrap();
    assert_eq!(
        (settled.decision.allowed, settled.decision.source),
        (false, Source::Withdrawn)
    );
    assert!(policy.open_asks().is_empty());
    assert_eq!(policy.withdraw(waiter, T0 + 2), None);
}

#[test]
fn stopping_the_planner_denies_only_its_waits() {
    let mut policy = asking(&[]);
    let (_, planner) = pending(policy.request(read("/etc/a", Asker::Planner), T0));
    let (_, run_w) = pending(policy.request(read("/var/a", runner("a")), T0));
    assert_eq!(
        sources(&policy.planner_stopped(T0)),
        vec![(planner, false, Source::Withdrawn)]
    );
    assert_eq!(policy.open_asks()[0].waiters[0].waiter, run_w);
}

// ---------------------------------------------------------------------------------------
// What a front end shows
// ---------------------------------------------------------------------------------------

#[test]
fn views_and_decisions_serialize_for_front_ends() {
    let mut policy = asking(&[]);
    pending(policy.request(read("/etc/hosts", runner("a1")), T0));
    let json = serde_json::to_value(policy.open_asks()).unwrap();
    assert_eq!(
        json,
        serde_json::json!([{
            "id": 1,
            "scope": "path:/etc/*",
            "subject": {"kind": "read", "path": "/etc/hosts"},
            "created_at": T0,
            "expires_at": null,
            "waiters": [{
                "waiter": 1,
                "request": {
                    "subject": {"kind": "read", "path": "/etc/hosts"},
                    "asker": {"kind": "runner", "attempt": "a1"}
                },
                "requested_at": T0,
                "expires_at": null
            }]
        }])
    );
    let decision = Decision {
        scope: scope("command:git log"),
        allowed: false,
        source: Source::NoChannel,
        decided_at: T0,
    };
    let json = serde_json::to_value(&decision).unwrap();
    assert_eq!(json["source"], "no-channel");
    assert_eq!(serde_json::from_value::<Decision>(json).unwrap(), decision);
    assert_eq!(
        serde_json::to_value(Source::PreApproved).unwrap(),
        serde_json::json!("pre-approved")
    );
    assert_eq!(Mode::parse("deny"), Some(Mode::Deny));
    assert_eq!(Mode::parse("maybe"), None);
    assert_eq!(serde_json::to_value(Mode::Ask).unwrap(), "ask");
}

// ---------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------

const SUBJECTS: &[(&str, bool)] = &[
    ("/etc/hosts", false),
    ("/etc/passwd", false),
    ("/etc/ssl/cert.pem", false),
    ("/opt/tool/bin", false),
    ("/data/x/y", false),
    ("git log --oneline", true),
    ("git show HEAD", true),
    ("az group list", true),
    ("ls -la", true),
    ("git log | head", true),
];

const PRE_APPROVED: &[&str] = &["path:/opt/*", "command:ls", "command:git show"];

#[derive(Debug, Clone)]
enum Op {
    Request {
        subject: usize,
        runner: Option<u8>,
    },
    Answer {
        pick: usize,
        allow: bool,
        widen: bool,
    },
    Reset,
    Advance(i64),
    Expire,
    AttemptEnded(u8),
    Channel(bool),
    Mode(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..SUBJECTS.len(), prop::option::of(0u8..3))
            .prop_map(|(subject, runner)| Op::Request { subject, runner }),
        3 => (0usize..16, any::<bool>(), any::<bool>())
            .prop_map(|(pick, allow, widen)| Op::Answer { pick, allow, widen }),
        1 => Just(Op::Reset),
        1 => (0i64..200_000).prop_map(Op::Advance),
        1 => Just(Op::Expire),
        1 => (0u8..3).prop_map(Op::AttemptEnded),
        1 => any::<bool>().prop_map(Op::Channel),
        1 => (0u8..3).prop_map(Op::Mode),
    ]
}

fn request_for(subject: usize, runner: Option<u8>) -> Request {
    let (text, is_command) = SUBJECTS[subject];
    let asker = match runner {
        None => Asker::Planner,
        Some(n) => Asker::Runner {
            attempt: format!("a{n}"),
        },
    };
    if is_command {
        run(text, asker)
    } else {
        read(text, asker)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_sequences_keep_every_rule(ops in prop::collection::vec(op(), 0..60)) {
        let pre: Vec<Scope> = PRE_APPROVED.iter().map(|s| scope(s)).collect();
        let mut policy = ApprovalPolicy::new(Mode::Ask, pre);
        policy.set_channel(true);
        let mut now = T0;
        // Every ask id ever handed out, and the ids handed out before the latest reset.
        let mut issued: Vec<AskId> = Vec::new();
        let mut before_reset: BTreeSet<AskId> = BTreeSet::new();
        // Waiters still waiting, and the ask each waits on.
        let mut waiting: BTreeMap<WaiterId, AskId> = BTreeMap::new();

        let mut requested_at: BTreeMap<WaiterId, i64> = BTreeMap::new();

        for op in ops {
            match op {
                Op::Request { subject, runner } => {
                    let request = request_for(subject, runner);
                    let pre_approved = policy.is_pre_approved(&request.scope());
                    match policy.request(request, now) {
                        Outcome::Decided(d) => {
                            if pre_approved {
                                prop_assert!(d.allowed);
                                prop_assert_eq!(d.source, Source::PreApproved);
                            }
                        }
                        Outcome::Pending { ask, waiter } => {
                            prop_assert!(!pre_approved, "a pre-approved scope was asked about");
                            prop_assert!(!before_reset.contains(&ask));
                            if !issued.contains(&ask) {
                                issued.push(ask);
                            }
                            waiting.insert(waiter, ask);
                            requested_at.insert(waiter, now);
                        }
                    }
                }
                Op::Answer { pick, allow, widen } => {
                    if issued.is_empty() {
                        continue;
                    }
                    let ask = issued[pick % issued.len()];
                    let widen = widen.then(|| {
                        policy.open_asks().iter().find(|a| a.id == ask).map(|a| match &a.scope {
                            Scope::Path { .. } => scope("path:/*"),
                            Scope::Command { families } => Scope::Command {
                                families: families
                                    .iter()
                                    .map(|f| f.split(' ').next().unwrap_or_default().to_owned())
                                    .collect(),
                            },
                        })
                    }).flatten();
                    let before = policy.clone();
                    match policy.answer(ask, allow, widen, now) {
                        Ok(settled) => {
                            prop_assert!(!before_reset.contains(&ask), "an answer from before a reset took effect");
                            prop_assert!(settled.iter().any(|s| s.ask == ask));
                            for s in &settled {
                                if s.ask == ask {
                                    prop_assert_eq!(s.decision.source, Source::Asked);
                                    prop_assert_eq!(s.decision.allowed, allow);
                                }
                            }
                            settle(&settled, &mut waiting)?;
                        }
                        Err(error) => {
                            prop_assert_eq!(&policy, &before, "a refused answer changed the policy");
                            if before_reset.contains(&ask) {
                                let is_reset = matches!(error, ApprovalError::Reset { .. });
                                prop_assert!(is_reset, "{}", error);
                            }
                        }
                    }
                }
                Op::Reset => {
                    let settled = policy.reset(now);
                    prop_assert!(settled.iter().all(|s| !s.decision.allowed && s.decision.source == Source::Reset));
                    settle(&settled, &mut waiting)?;
                    prop_assert!(waiting.is_empty());
                    before_reset.extend(issued.iter().copied());
                }
                Op::Advance(ms) => now += ms,
                Op::Expire => {
                    let settled = policy.expire(now);
                    for s in &settled {
                        prop_assert_eq!(s.request.asker.clone(), Asker::Planner);
                        prop_assert!(s.decision.decided_at - requested_at[&s.waiter] >= PLANNER_ASK_TTL);
                    }
                    settle(&settled, &mut waiting)?;
                    for a in policy.open_asks() {
                        for w in &a.waiters {
                            prop_assert!(w.expires_at.is_none_or(|at| at > now), "an expired wait is still open");
                        }
                    }
                }
                Op::AttemptEnded(n) => {
                    let attempt = format!("a{n}");
                    let settled = policy.attempt_ended(&attempt, now);
                    for s in &settled {
                        prop_assert_eq!(s.request.asker.clone(), Asker::Runner { attempt: attempt.clone() });
                    }
                    settle(&settled, &mut waiting)?;
                }
                Op::Channel(on) => policy.set_channel(on),
                Op::Mode(n) => policy.set_mode(Mode::ALL[usize::from(n)]),
            }

            // Never two open asks for one scope; every open waiter is one we were told about.
            let open = policy.open_asks();
            let scopes: BTreeSet<&Scope> = open.iter().map(|a| &a.scope).collect();
            prop_assert_eq!(scopes.len(), open.len(), "two open asks for one scope");
            let open_waiters: BTreeMap<WaiterId, AskId> = open
                .iter()
                .flat_map(|a| a.waiters.iter().map(move |w| (w.waiter, a.id)))
                .collect();
            prop_assert_eq!(&open_waiters, &waiting);
            // No planner waits past its deadline once expire has run at or after it.
            for a in &open {
                prop_assert!(!a.waiters.is_empty());
                prop_assert!(!before_reset.contains(&a.id));
            }
        }
    }
}

fn policy_is_pre_approved_scope(scope: &Scope) -> bool {
    ApprovalPolicy::new(
        Mode::Deny,
        PRE_APPROVED
            .iter()
            .map(|s| Scope::parse(s).unwrap())
            .collect(),
    )
    .is_pre_approved(scope)
}

/// Checks settled waiters against the ones we know are waiting: each is settled once, and a
/// pre-approved scope is never denied.
fn settle(
    settled: &[Settlement],
    waiting: &mut BTreeMap<WaiterId, AskId>,
) -> Result<(), TestCaseError> {
    for s in settled {
        prop_assert_eq!(
            waiting.remove(&s.waiter),
            Some(s.ask),
            "settled twice or unknown"
        );
        if policy_is_pre_approved_scope(&s.decision.scope) {
            prop_assert!(s.decision.allowed, "pre-approved scope denied: {:?}", s);
        }
    }
    Ok(())
}
