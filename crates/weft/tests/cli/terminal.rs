//! Terminal safety (issue 11 §5): an agent's control sequences never reach a terminal
//! through `weft log`, `weft status`, `weft events`, `weft prompt` or `weft manual`;
//! `weft log --raw` keeps the bytes.

use std::io::Read;
use std::process::{Command, Stdio};

use crate::harness::Weft;

/// What an agent prints: an OSC 52 clipboard write, a screen clear, a cursor move, a
/// mode change, colour, and a progress redraw with a lone `\r`.
const HOSTILE: &str = r"printf 'before\033]52;c;aGk=\007mid\033[2J\033[10;1H\033[?1049h\033[31mred\033[0m 50%%\r100%%\nafter\n'";

/// Run `command` with stdout and stderr on a fresh pseudo-terminal; its exit code and
/// everything it wrote there (with the terminal's `\r\n` turned back into `\n`).
fn on_a_pty(mut command: Command) -> (i32, Vec<u8>) {
    let pty = nix::pty::openpty(None, None).expect("a pty can be opened");
    let slave = std::fs::File::from(pty.slave);
    command
        .stdin(Stdio::null())
        .stdout(slave.try_clone().unwrap())
        .stderr(slave);
    let mut child = command.spawn().expect("weft can be started");
    // The command holds the pty's other end until dropped; then EOF ends the read.
    drop(command);
    let mut master = std::fs::File::from(pty.master);
    let mut out = Vec::new();
    let mut buffer = [0u8; 8192];
    loop {
        match master.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buffer[..n]),
            // Linux answers EIO once the last writer has closed the terminal.
            Err(e) if e.raw_os_error() == Some(nix::errno::Errno::EIO as i32) => break,
            Err(e) => panic!("reading the pty: {e}"),
        }
    }
    let code = child.wait().unwrap().code().unwrap_or(-1);
    let mut text = Vec::with_capacity(out.len());
    let mut i = 0;
    while i < out.len() {
        if out[i..].starts_with(b"\r\n") {
            i += 1;
            continue;
        }
        text.push(out[i]);
        i += 1;
    }
    (code, text)
}

/// Every escape sequence in `bytes` that is not SGR colour (`ESC [ digits ; : m`), and
/// every other control byte but `\n` and `\t`.
fn unsafe_controls(bytes: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == 0x1b {
            let params = bytes[i + 1..]
                .strip_prefix(b"[")
                .map(|rest| {
                    rest.iter()
                        .take_while(|c| c.is_ascii_digit() || **c == b';' || **c == b':')
                        .count()
                })
                .filter(|&n| bytes.get(i + 2 + n) == Some(&b'm'));
            match params {
                Some(n) => i += 3 + n,
                None => {
                    let end = (i + 8).min(bytes.len());
                    found.push(format!("{:?}", String::from_utf8_lossy(&bytes[i..end])));
                    i += 1;
                }
            }
            continue;
        }
        if (b < 0x20 && b != b'\n' && b != b'\t') || b == 0x7f {
            found.push(format!("byte {b:#04x}"));
        }
        i += 1;
    }
    found
}

fn hostile_plan(weft: &Weft) {
    weft.write(
        "plan.toml",
        &format!(
            "goal = \"g\"\nrunner = \"exec\"\n[[tasks]]\ntitle = \"Hostile\"\nprompt = '''\n{HOSTILE}\n'''\n"
        ),
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    weft.ok(&["run"]);
}

#[test]
fn weft_log_on_a_terminal_shows_an_agents_osc_52_and_screen_clear_escaped_and_raw_keeps_them() {
    let weft = Weft::with_agents();
    hostile_plan(&weft);

    // A terminal with colour allowed: the colour stays, nothing else gets through.
    let mut coloured = weft.command(&["log", "1"]);
    coloured.env_remove("NO_COLOR");
    let (code, shown) = on_a_pty(coloured);
    let text = String::from_utf8_lossy(&shown);
    assert_eq!(code, 0, "{text}");
    assert_eq!(unsafe_controls(&shown), Vec::<String>::new(), "{text:?}");
    for expected in [
        r"before\x1b]52;c;aGk=\x07mid",
        r"\x1b[2J\x1b[10;1H\x1b[?1049h",
        "\x1b[31mred\x1b[0m 50%\n100%\nafter",
    ] {
        assert!(text.contains(expected), "{expected:?} in {text:?}");
    }

    // NO_COLOR: not even colour.
    let (_, plain) = on_a_pty(weft.command(&["log", "1"]));
    assert!(
        !plain.contains(&0x1b),
        "{:?}",
        String::from_utf8_lossy(&plain)
    );
    // Colour is removed, not shown escaped.
    assert!(String::from_utf8_lossy(&plain).contains("mid\\x1b[2J"));
    assert!(String::from_utf8_lossy(&plain).contains("red 50%\n100%"));
    assert!(String::from_utf8_lossy(&plain).contains(r"\x1b]52;c;aGk=\x07"));

    // Piped, the same as a terminal without colour (the bytes may reach one later).
    let piped = weft.ok(&["log", "1"]);
    assert!(!piped.stdout.contains('\u{1b}'), "{:?}", piped.stdout);
    assert!(piped.stdout.contains(r"\x1b[2J"), "{:?}", piped.stdout);

    // --raw: the stored bytes, byte for byte, on a terminal too.
    let log = std::fs::read_dir(weft.work().join(".weft/logs"))
        .unwrap()
        .flat_map(|run| std::fs::read_dir(run.unwrap().path()).unwrap())
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|e| e == "log"))
        .expect("the attempt's log");
    let stored = std::fs::read(&log).unwrap();
    assert!(
        stored
            .windows(b"\x1b]52;c;aGk=\x07".len())
            .any(|w| w == b"\x1b]52;c;aGk=\x07"),
        "the agent's bytes are stored as written"
    );
    let raw = weft.command(&["log", "1", "--raw"]).output().unwrap();
    assert_eq!(raw.stdout, stored);
    let (_, raw_on_pty) = on_a_pty(weft.command(&["log", "1", "--raw"]));
    let text = String::from_utf8_lossy(&raw_on_pty);
    assert!(text.contains("\x1b]52;c;aGk=\x07mid\x1b[2J"), "{text:?}");
}

#[test]
fn weft_log_judges_a_sequence_split_across_two_reads_whole() {
    let weft = Weft::with_agents();
    // 65,535 bytes, then the sequence: its ESC is the last byte of the first 64 KiB read.
    weft.write(
        "plan.toml",
        r#"goal = "g"
runner = "exec"
[[tasks]]
title = "Split"
prompt = '''
head -c 65535 /dev/zero | tr '\0' a; printf '\033]52;c;aGk=\007\033[2Jz\n'
'''
"#,
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    weft.ok(&["run"]);
    let raw = weft.command(&["log", "1", "--raw"]).output().unwrap();
    assert_eq!(
        raw.stdout.len(),
        65535 + 18,
        "the agent's output is stored whole"
    );
    for args in [&["log", "1"][..], &["log", "1", "--follow"]] {
        let mut command = weft.command(args);
        command.env_remove("NO_COLOR");
        let (code, shown) = on_a_pty(command);
        assert_eq!(code, 0);
        assert_eq!(unsafe_controls(&shown), Vec::<String>::new());
        let text = String::from_utf8_lossy(&shown);
        assert!(
            text.ends_with("a\\x1b]52;c;aGk=\\x07\\x1b[2Jz\n"),
            "{args:?}: ...{:?}",
            &text[text.len().saturating_sub(60)..]
        );
    }
}

#[test]
fn weft_status_and_events_show_a_title_and_a_verdict_with_control_sequences_escaped() {
    let weft = Weft::with_agents();
    // A title, a goal and a check (which the verdict's reason names) carrying sequences,
    // as a planner could write them.
    weft.write(
        "plan.toml",
        "goal = \"g\\u001b]0;pwned\\u0007\"\nrunner = \"exec\"\n[[tasks]]\ntitle = \"T\\u001b]52;c;aGk=\\u0007\\u001b[2J\"\nprompt = \"true\"\nchecks = [\"printf '\\\\033[2J'; echo '\\u001b[H'; false\"]\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    weft.fails(&["run"], 1);
    let json = weft.status_json();
    let task = &json["plan"]["tasks"][0];
    assert_eq!(task["status"], "failed", "{json}");
    let reason = task["verdict"]["reason"].as_str().unwrap();
    assert!(
        reason.contains('\u{1b}'),
        "the reason quotes the check: {reason:?}"
    );

    for args in [&["status"][..], &["events"]] {
        let mut command = weft.command(args);
        command.env_remove("NO_COLOR");
        let (code, shown) = on_a_pty(command);
        let text = String::from_utf8_lossy(&shown);
        assert_eq!(code, 0, "{text}");
        assert_eq!(
            unsafe_controls(&shown),
            Vec::<String>::new(),
            "{args:?}: {text:?}"
        );
        assert!(
            text.contains(r"T\x1b]52;c;aGk=\x07\x1b[2J"),
            "{args:?}: {text}"
        );
    }
    let status = weft.ok(&["status"]).stdout;
    assert!(status.contains(r"goal: g\x1b]0;pwned\x07"), "{status}");
    assert!(
        status.contains(r"\x1b[H"),
        "the verdict's reason, escaped: {status}"
    );
    assert!(!status.contains('\u{1b}'), "{status:?}");
}

#[test]
fn weft_prompt_and_weft_manual_show_a_plans_control_sequences_escaped() {
    let weft = Weft::with_agents();
    // A prompt and a manual task's steps as a planner could write them.
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"exec\"\n[[tasks]]\ntitle = \"T\"\nprompt = \"echo \\u001b]52;c;aGk=\\u0007 \\u001b[2J\"\n[[tasks]]\ntitle = \"Check\"\nkind = \"manual\"\nsteps = [\"Look \\u001b[2J\\u001b]0;pwned\\u0007\"]\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    for (args, shown) in [
        (&["prompt", "1"][..], r"echo \x1b]52;c;aGk=\x07 \x1b[2J"),
        (&["manual", "2"][..], r"Look \x1b[2J\x1b]0;pwned\x07"),
    ] {
        let mut command = weft.command(args);
        command.env_remove("NO_COLOR");
        let (code, out) = on_a_pty(command);
        let text = String::from_utf8_lossy(&out);
        assert_eq!(code, 0, "{args:?}: {text}");
        assert_eq!(
            unsafe_controls(&out),
            Vec::<String>::new(),
            "{args:?}: {text:?}"
        );
        assert!(text.contains(shown), "{args:?}: {text}");
    }
    // `--json` carries the text as stored (JSON escapes it).
    let json = weft.ok(&["prompt", "1", "--json"]).stdout;
    assert!(json.contains(r"\u001b]52"), "{json}");
}
