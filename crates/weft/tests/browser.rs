//! The dashboard in a real browser: headless Chromium driven over WebDriver
//! (`chromedriver`), against a real `weft serve` in a real git repository, with the fake
//! agent standing in for Claude Code. What a person does is done by clicking and typing;
//! what it changed is read back with the CLI, from the store.
//!
//! Where Chromium or chromedriver is not installed the tests print SKIPPED and pass,
//! unless `CI` or `WEFT_REQUIRE_BROWSER=1` is set (`.ci/run` installs both and sets it).
//! Screenshots go to `target/browser-screenshots/`.

#![allow(
    clippy::print_stderr,
    reason = "the tests report skips and figures on stderr"
)]

#[path = "browser/serve.rs"]
mod serve;
#[path = "browser/webdriver.rs"]
mod webdriver;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use serve::{Workspace, screenshot_dir};
use webdriver::{Browser, WdResult};

const WAIT: Duration = Duration::from_secs(30);

/// A browser, or `None` (and a loud SKIPPED) where none is installed and none is required.
fn browser_or_skip(test: &str) -> Option<Browser> {
    let required = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false")
        || std::env::var("WEFT_REQUIRE_BROWSER").is_ok_and(|v| v == "1");
    match Browser::start() {
        Ok(Some(browser)) => Some(browser),
        Ok(None) if !required => {
            eprintln!(
                "\n*** SKIPPED {test}: chromium and chromedriver are not installed \
                 (apt-get install chromium chromium-driver; CI or WEFT_REQUIRE_BROWSER=1 makes this a failure) ***\n"
            );
            None
        }
        Ok(None) => panic!("{test}: chromium and chromedriver are required here but not installed"),
        Err(e) => panic!("{test}: the browser did not start: {e}"),
    }
}

/// Fail with what the page logged, which is usually the reason.
fn check<T>(browser: &Browser, step: &str, result: WdResult<T>) -> T {
    result.unwrap_or_else(|e| {
        let _ = browser.screenshot(&screenshot_dir().join("failure.png"));
        panic!(
            "{step}: {e}\npage console:\n{}",
            browser.console().join("\n")
        )
    })
}

fn shot(browser: &Browser, name: &str) {
    let path = screenshot_dir().join(name);
    check(browser, "screenshot", browser.screenshot(&path));
    eprintln!("screenshot: {}", path.display());
}

/// The status classes the graph shows, by task order.
fn graph_statuses(browser: &Browser) -> WdResult<Value> {
    browser.js(
        "const out = {}; for (const n of document.querySelectorAll('#graph .node')) \
         out[n.dataset.order] = n.dataset.status; return out;",
        json!([]),
    )
}

fn wait_graph(browser: &Browser, what: &str, want: impl Fn(&Value) -> bool) -> Value {
    check(
        browser,
        what,
        browser.wait(what, WAIT, || {
            let now = graph_statuses(browser)?;
            Ok(want(&now).then_some(now))
        }),
    )
}

/// Click what `css` selects, once it is there; notices a person would have dismissed first.
fn click(browser: &Browser, css: &str) {
    let el = check(browser, &format!("find {css}"), browser.wait_for(css, WAIT));
    let dismissed = browser.js(
        "document.querySelectorAll('#toasts .toast').forEach(t => t.remove())",
        json!([]),
    );
    check(browser, "dismiss the notices", dismissed);
    check(browser, &format!("click {css}"), browser.click(&el));
}

const PLAN: &str = r#"
goal = "Greet, then say goodbye"
runner = "claude-code"

[[tasks]]
id = "greeting"
title = "Write the greeting"
prompt = '''
Write the greeting.
@fake append greeting.txt hello
@fake say wrote greeting.txt
@fake marker
'''

[[tasks]]
id = "farewell"
title = "Write the farewell"
runner = "exec"
prompt = "printf 'bye\n' > farewell.txt"
dependencies = ["greeting"]

[[tasks]]
id = "look"
title = "Look around first"
mode = "ask"
prompt = '''
List the files, with permission.
@fake ask Bash {"command":"ls -la"}
@fake marker
'''
"#;

#[test]
fn a_person_runs_a_plan_from_the_dashboard_from_login_to_handoff() {
    let Some(browser) = browser_or_skip("a_person_runs_a_plan_from_the_dashboard") else {
        return;
    };
    let ws = Workspace::new();
    ws.write("plan.toml", PLAN);
    ws.repo.commit_all(&ws.env, "the plan");
    ws.weft(&["plan", "--file", "plan.toml"]);
    let server = ws.serve();

    // Login: the one-time code sets the session cookie and lands on the dashboard.
    check(&browser, "open the login URL", browser.goto(&server.login));
    let titles = check(
        &browser,
        "the graph's titles",
        browser.wait("three task nodes", WAIT, || {
            let nodes = browser.find_all("#graph .node .title")?;
            if nodes.len() < 3 {
                return Ok(None);
            }
            nodes
                .iter()
                .map(|n| browser.text(n))
                .collect::<WdResult<Vec<_>>>()
                .map(Some)
        }),
    );
    assert_eq!(
        titles,
        [
            "Write the greeting",
            "Write the farewell",
            "Look around first"
        ]
    );
    assert!(
        !check(&browser, "url", browser.url()).contains("code="),
        "the login code is not left in the address bar"
    );
    // Set on the page; a reload would lose it.
    check(
        &browser,
        "mark the page",
        browser.js("window.__sameDocument = 42", json!([])),
    );
    shot(&browser, "01-plan-graph.png");

    // Click a task, edit its prompt: stored like `weft task edit`.
    click(&browser, "#graph .node[data-order='2']");
    let prompt = check(
        &browser,
        "the prompt field",
        browser.wait("the prompt loaded", WAIT, || {
            let fields = browser.find_all("#panel textarea[name='prompt']")?;
            let Some(field) = fields.into_iter().next() else {
                return Ok(None);
            };
            let value = browser.js("return arguments[0].value", json!([field.arg()]))?;
            Ok((value.as_str() == Some("printf 'bye\n' > farewell.txt")).then_some(field))
        }),
    );
    // A dependency on a later task is refused by the server with the CLI's own words.
    let deps = check(
        &browser,
        "the deps field",
        browser.wait_for("#panel input[name='deps']", WAIT),
    );
    check(&browser, "clear the deps", browser.clear(&deps));
    check(&browser, "type a later task", browser.type_text(&deps, "3"));
    click(&browser, "#save-task");
    let shown = check(
        &browser,
        "the refusal in the form",
        browser.wait("the form's error", WAIT, || {
            let el = browser.find_all("#panel .form-error")?;
            let text = match el.first() {
                Some(el) => browser.text(el)?,
                None => String::new(),
            };
            Ok((!text.is_empty()).then_some(text))
        }),
    );
    let cli = ws.refused(&["task", "deps", "2", "3"]);
    assert!(
        shown.starts_with(cli["error"].as_str().unwrap()),
        "the page says {shown:?}, the CLI {cli}"
    );
    check(&browser, "clear the deps", browser.clear(&deps));
    check(
        &browser,
        "type the deps back",
        browser.type_text(&deps, "1"),
    );
    check(&browser, "clear the prompt", browser.clear(&prompt));
    check(
        &browser,
        "type the prompt",
        browser.type_text(&prompt, "printf 'goodbye\\n' > farewell.txt"),
    );
    click(&browser, "#save-task");
    check(
        &browser,
        "the edit reaches the store",
        browser.wait("the new prompt in the store", WAIT, || {
            let preview = ws.json(&["prompt", "2"]);
            Ok((preview["prompt"] == "printf 'goodbye\\n' > farewell.txt").then_some(()))
        }),
    );
    shot(&browser, "02-task-edited.png");

    // Start a run; statuses change on the page without a reload.
    click(&browser, "#run-start");
    // The asking task waits for a person: the inbox shows the question; allow it.
    check(
        &browser,
        "the approvals badge",
        browser.wait_for("#approvals-count:not(.hidden)", WAIT),
    );
    click(&browser, "#tabs .tab[data-view='approvals']");
    let subject = check(
        &browser,
        "the question",
        browser.wait_for(".ask .ask-subject", WAIT),
    );
    let subject = check(&browser, "its text", browser.text(&subject));
    assert!(subject.contains("ls -la"), "{subject}");
    shot(&browser, "03-approval.png");
    click(&browser, ".ask button.allow");
    click(&browser, "#tabs .tab[data-view='graph']");
    let done = wait_graph(&browser, "every task completed", |s| {
        ["1", "2", "3"].iter().all(|o| s[o] == "completed")
    });
    assert_eq!(done["2"], "completed");
    assert_eq!(
        check(
            &browser,
            "same document",
            browser.js("return window.__sameDocument", json!([]))
        ),
        json!(42),
        "the statuses changed without a reload"
    );
    assert!(ws.statuses().iter().all(|(_, s)| s == "completed"));
    shot(&browser, "04-run-completed.png");

    // Review: comment on a line of task 1's diff and request changes; the task is re-armed
    // with the comment in its prompt.
    click(&browser, "#graph .node[data-order='1']");
    click(&browser, "#panel table.patch tr.line.add");
    let comment = check(
        &browser,
        "the comment box",
        browser.wait_for("#panel .comment-text", WAIT),
    );
    check(
        &browser,
        "type a comment",
        browser.type_text(&comment, "Say hello to the world, not just hello."),
    );
    click(&browser, "#panel .add-comment");
    shot(&browser, "05-review-comment.png");
    click(&browser, "#request-changes");
    check(
        &browser,
        "the task re-armed with the comment",
        browser.wait("task 1 pending with the review note", WAIT, || {
            let preview = ws.json(&["prompt", "1"]);
            let prompt = preview["prompt"].as_str().unwrap_or_default().to_owned();
            let pending = ws.statuses()[0].1 == "pending";
            Ok((pending
                && prompt.contains("Say hello to the world, not just hello.")
                && prompt.contains("greeting.txt"))
            .then_some(()))
        }),
    );
    wait_graph(&browser, "task 1 shown pending", |s| s["1"] == "pending");
    check(
        &browser,
        "the panel shows the review note",
        browser.wait("the prompt field with the note", WAIT, || {
            let v = browser.js(
                "const f = document.querySelector('#panel textarea[name=prompt]'); return f ? f.value : ''",
                json!([]),
            )?;
            Ok(v.as_str().is_some_and(|p| p.contains("not just hello")).then_some(()))
        }),
    );

    // Run again: the re-armed task runs with the note and lands.
    click(&browser, "#run-start");
    wait_graph(&browser, "every task completed again", |s| {
        ["1", "2", "3"].iter().all(|o| s[o] == "completed")
    });

    // Handoff: review the diff by file, merge behind a confirmation.
    click(&browser, "#tabs .tab[data-view='handoff']");
    let files = check(
        &browser,
        "the handoff's files",
        browser.wait("the file list", WAIT, || {
            let items = browser.find_all("#view-handoff ul.filelist li a")?;
            if items.len() < 2 {
                return Ok(None);
            }
            items
                .iter()
                .map(|i| browser.text(i))
                .collect::<WdResult<Vec<_>>>()
                .map(Some)
        }),
    );
    assert!(files.contains(&"greeting.txt".to_owned()), "{files:?}");
    assert!(files.contains(&"farewell.txt".to_owned()), "{files:?}");
    shot(&browser, "06-handoff.png");
    click(&browser, "#handoff-merge");
    click(&browser, "#modal-confirm");
    check(
        &browser,
        "the run merged into the branch",
        browser.wait("farewell.txt on main", WAIT, || {
            Ok((ws.show("main:farewell.txt").as_deref() == Some("goodbye\n")).then_some(()))
        }),
    );
    assert_eq!(
        ws.show("main:greeting.txt").as_deref(),
        Some("hellohello"),
        "the reviewed attempt added its line"
    );
    shot(&browser, "07-merged.png");
    drop(server);
}

/// The 1,000-task plan: every title is DOM text, and the figures are printed (server time
/// for the plan document, and the page's load-to-render time read from the marker it sets
/// when the graph is drawn). Speed is reported, not asserted.
#[test]
fn a_thousand_task_plan_is_drawn_with_every_title_and_its_render_time_is_printed() {
    let Some(browser) = browser_or_skip("a_thousand_task_plan_is_drawn") else {
        return;
    };
    let ws = Workspace::new();
    let mut text = String::from("goal = \"A thousand tasks\"\nrunner = \"exec\"\n");
    for i in 1..=1000u32 {
        text.push_str(&format!(
            "\n[[tasks]]\nid = \"t{i}\"\ntitle = \"Task {i} of module {}\"\nprompt = \"true\"\n",
            i % 41
        ));
        // A deterministic, layered web: up to three dependencies within the 50 before.
        let deps: Vec<String> = [7u32, 13, 29]
            .iter()
            .filter(|&&k| i > k && (i * k) % 5 != 0)
            .map(|&k| format!("\"t{}\"", i - 1 - (i * k) % (i - 1).min(50)))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        if !deps.is_empty() {
            text.push_str(&format!("dependencies = [{}]\n", deps.join(", ")));
        }
    }
    ws.write("big.toml", &text);
    ws.weft(&["plan", "--file", "big.toml"]);
    let server = ws.serve();

    let mut server_ms = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let body = server.get("/api/plans/current");
        server_ms.push(started.elapsed().as_secs_f64() * 1000.0);
        assert!(body.contains("Task 1000 of module"));
    }
    server_ms.sort_by(f64::total_cmp);

    check(&browser, "open the login URL", browser.goto(&server.login));
    let metrics = check(
        &browser,
        "the graph drawn",
        browser.wait("the graph-drawn marker", Duration::from_secs(60), || {
            let m = browser.js("return window.weftMetrics || null", json!([]))?;
            Ok((!m.is_null()).then_some(m))
        }),
    );
    let titles = check(
        &browser,
        "titles",
        browser.js(
            "return Array.from(document.querySelectorAll('#graph .node .title'), n => n.textContent)",
            json!([]),
        ),
    );
    let titles = titles.as_array().unwrap();
    assert_eq!(titles.len(), 1000);
    assert!(titles.iter().any(|t| t == "Task 1000 of module 16"));
    let edges = check(
        &browser,
        "edges",
        browser.js(
            "return document.querySelectorAll('#graph path.edge').length",
            json!([]),
        ),
    );
    assert!(edges.as_u64().unwrap() > 500, "{edges}");
    // Nodes never overlap: every column keeps its rows apart.
    let overlaps = check(
        &browser,
        "overlaps",
        browser.js(
            "const seen = new Map(); let bad = 0; for (const n of document.querySelectorAll('#graph .node')) { \
             const k = n.style.left; const ys = seen.get(k) || []; const y = parseFloat(n.style.top); \
             if (ys.some(o => Math.abs(o - y) < 58)) bad++; ys.push(y); seen.set(k, ys); } return bad;",
            json!([]),
        ),
    );
    assert_eq!(overlaps, json!(0));
    shot(&browser, "10-thousand-tasks.png");
    click(&browser, "#graph .node[data-order='777']");
    check(
        &browser,
        "the panel",
        browser.wait_for("#panel .ptitle", WAIT),
    );
    shot(&browser, "11-thousand-tasks-selected.png");
    eprintln!(
        "\nbench dashboard, 1,000-task plan: server GET /api/plans/current median {:.1} ms (min {:.1}, max {:.1}); \
         Chromium load-to-render {:.0} ms (fetch {:.0} ms, layout and DOM {:.0} ms), {} edges\n",
        server_ms[2],
        server_ms[0],
        server_ms[4],
        metrics["load_to_render_ms"].as_f64().unwrap_or(f64::NAN),
        metrics["fetch_ms"].as_f64().unwrap_or(f64::NAN),
        metrics["layout_ms"].as_f64().unwrap_or(f64::NAN),
        edges
    );
}

/// Agent output and task text are hostile: a plan imported from the Plans view whose title
/// and output are markup shows them as text, and none of it runs.
#[test]
fn markup_in_a_title_or_in_agent_output_is_shown_as_text_and_never_runs() {
    let Some(browser) = browser_or_skip("markup_in_a_title_or_in_agent_output") else {
        return;
    };
    let ws = Workspace::new();
    ws.write(
        "first.toml",
        "goal = \"First\"\nrunner = \"exec\"\n[[tasks]]\ntitle = \"Plain\"\nprompt = \"true\"\n",
    );
    ws.weft(&["plan", "--file", "first.toml"]);
    let server = ws.serve();
    check(&browser, "open the login URL", browser.goto(&server.login));
    check(
        &browser,
        "the first plan",
        browser.wait_for("#graph .node", WAIT),
    );

    let title = r#"<img src=x onerror="window.__pwned=1">"#;
    let workflow = format!(
        "goal = \"Hostile\"\nrunner = \"exec\"\n[[tasks]]\nid = \"h\"\ntitle = '{title}'\nprompt = '''printf '<script>window.__pwned=2</script><b>bold</b>\\n' '''\n"
    );
    click(&browser, "#tabs .tab[data-view='plans']");
    let text = check(
        &browser,
        "the import box",
        browser.wait_for("#import-text", WAIT),
    );
    // Typed as a person pastes it (the value set directly: send-keys of a long text is slow).
    check(
        &browser,
        "paste the workflow",
        browser.js(
            "arguments[0].value = arguments[1]",
            json!([text.arg(), workflow]),
        ),
    );
    click(&browser, "#import-plan");
    let shown = check(
        &browser,
        "the imported plan's graph",
        browser.wait("the hostile title as a node", WAIT, || {
            let nodes = browser.find_all("#view-graph.active #graph .node .title")?;
            let Some(node) = nodes.into_iter().next() else {
                return Ok(None);
            };
            let text = browser.text(&node)?;
            Ok((text != "Plain").then_some(text))
        }),
    );
    assert_eq!(shown, title);
    click(&browser, "#run-start");
    wait_graph(&browser, "the task completed", |s| s["1"] == "completed");
    click(&browser, "#graph .node[data-order='1']");
    let output = check(
        &browser,
        "the output",
        browser.wait("the output text", WAIT, || {
            let v = browser.js(
                "const o = document.querySelector('#panel pre.output'); return o ? o.textContent : ''",
                json!([]),
            )?;
            Ok(v.as_str().filter(|t| t.contains("bold")).map(str::to_owned))
        }),
    );
    assert!(
        output.contains("<script>window.__pwned=2</script><b>bold</b>"),
        "{output}"
    );
    let injected = check(
        &browser,
        "what ran",
        browser.js(
            "return [window.__pwned === undefined, document.querySelectorAll('#panel pre.output *, #graph .node img, #graph .node b').length]",
            json!([]),
        ),
    );
    assert_eq!(injected, json!([true, 0]), "markup was parsed");
    shot(&browser, "08-hostile-text.png");
}
