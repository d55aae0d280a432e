//! Acceptance 7 (issue 11): secret shapes an agent prints are masked in every place weft
//! keeps or shows them — `weft log`, the files under `.weft/logs`, the raw bytes of the
//! database and its write-ahead log, `weft events --json` — and `.weft/` is `0700`, every
//! file weft writes in it `0600`, whatever the umask.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::engine::statuses;
use crate::harness::Weft;

/// A known secret value: in weft's environment under a secret-like name. Only its base64
/// is printed.
const KNOWN_NAME: &str = "PAYMENTS_SERVICE_TOKEN";
const KNOWN_VALUE: &str = "known-Secret-Value-0123456789";

/// What the agent prints, and the part of it that must never be stored or shown.
fn shapes() -> Vec<(String, String)> {
    let jwt = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    let pem_body = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gunVTLw";
    let known_b64 = base64(KNOWN_VALUE.as_bytes());
    [
        (
            "DATABASE_URL=postgres://admin:Hunter2Hunter2pw@db.internal:5432/app".to_owned(),
            "Hunter2Hunter2pw".to_owned(),
        ),
        (
            "key sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34".to_owned(),
            "Ab12Cd34Ef56Gh78Ij90Kl12Mn34".to_owned(),
        ),
        (
            "token ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5".to_owned(),
            "aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5".to_owned(),
        ),
        (
            "pat github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz".to_owned(),
            "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz".to_owned(),
        ),
        (
            "gitlab glpat-aBcDeFgHiJkLmNoPqRsT".to_owned(),
            "aBcDeFgHiJkLmNoPqRsT".to_owned(),
        ),
        (
            "slack xoxb-123456789012-abcdefABCDEF ok".to_owned(),
            "123456789012-abcdefABCDEF".to_owned(),
        ),
        (
            "aws AKIAIOSFODNN7EXAMPLE ok".to_owned(),
            "IOSFODNN7EXAMPLE".to_owned(),
        ),
        (format!("jwt {jwt}"), jwt[40..].to_owned()),
        (
            format!("-----BEGIN RSA PRIVATE KEY-----\n{pem_body}\n-----END RSA PRIVATE KEY-----"),
            pem_body.to_owned(),
        ),
        (format!("encoded {known_b64}"), known_b64),
    ]
    .into()
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// One Claude Code task (stream JSON: its shell tool's output) and one exec task (plain
/// text) printing every shape. The shapes are in a file they read, not in their prompts:
/// a prompt is stored as the user wrote it (and masked when shown).
fn secret_plan(weft: &Weft) {
    let text: String = shapes()
        .iter()
        .map(|(printed, _)| format!("{printed}\n"))
        .collect();
    weft.write("secrets.txt", &text);
    weft.write(
        "plan.toml",
        "goal = \"g\"\n\
         [[tasks]]\nid = \"agent\"\ntitle = \"agent\"\nrunner = \"claude-code\"\nprompt = '''\n@fake run cat secrets.txt\n@fake marker\n'''\n\
         [[tasks]]\nid = \"shell\"\ntitle = \"shell\"\nrunner = \"exec\"\nprompt = 'cat secrets.txt'\n",
    );
}

/// Runs `args` under `umask`, with the known secret in weft's environment.
fn under_umask(weft: &Weft, umask: &str, args: &[&str]) -> crate::harness::Run {
    let command = weft.command(args);
    let program = command.get_program().to_owned();
    let mut shell = std::process::Command::new("sh");
    shell
        .arg("-c")
        .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
        .arg(program)
        .args(command.get_args());
    shell.env_clear();
    for (name, value) in command.get_envs() {
        if let Some(value) = value {
            shell.env(name, value);
        }
    }
    shell
        .env(KNOWN_NAME, KNOWN_VALUE)
        .current_dir(command.get_current_dir().unwrap_or(&weft.work()))
        .stdin(std::process::Stdio::null());
    weft.run_command(args, shell)
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut found = vec![dir.to_owned()];
    let mut queue = vec![dir.to_owned()];
    while let Some(dir) = queue.pop() {
        for entry in fs_err::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let meta = fs_err::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                queue.push(path.clone());
            }
            found.push(path);
        }
    }
    found
}

/// `.weft/` and everything weft wrote in it: folders `0700`, files `0600`.
fn assert_private(state: &Path) {
    for path in files_under(state) {
        let meta = fs_err::symlink_metadata(&path).unwrap();
        if meta.file_type().is_symlink() {
            continue;
        }
        let mode = meta.permissions().mode() & 0o777;
        let want = if meta.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode, want, "{} is {mode:o}, not {want:o}", path.display());
    }
}

fn assert_masked(surface: &str, text: &str) {
    for (printed, secret) in shapes() {
        if let Some(at) = text.find(&secret) {
            let from = text.floor_char_boundary(at.saturating_sub(200));
            let to = text.ceil_char_boundary((at + secret.len() + 200).min(text.len()));
            panic!(
                "{surface} shows `{secret}` (printed as `{printed}`): …{}…",
                &text[from..to]
            );
        }
    }
}

#[test]
fn secret_shapes_an_agent_prints_are_masked_in_the_log_the_database_and_the_events() {
    for umask in ["022", "000"] {
        let weft = Weft::with_agents();
        secret_plan(&weft);
        let run = under_umask(&weft, umask, &["plan", "--file", "plan.toml"]);
        assert_eq!(run.code, 0, "{}", weft.show(&run));
        let run = under_umask(&weft, umask, &["run"]);
        assert_eq!(run.code, 0, "umask {umask}: {}", weft.show(&run));
        let s = statuses(&weft);
        assert!(s.values().all(|v| v == "completed"), "{s:?}");
        assert_masked("weft run", &format!("{}{}", run.stdout, run.stderr));

        for task in ["agent", "shell"] {
            let log = weft.ok(&["log", task]).stdout;
            // The log shows that something was there, masked.
            assert!(log.contains("****"), "umask {umask}, {task}:\n{log}");
            assert_masked(&format!("weft log {task}"), &log);
        }
        let state = weft.work().join(".weft");
        for path in files_under(&state.join("logs")) {
            if path.is_file() {
                let bytes = fs_err::read(&path).unwrap();
                assert_masked(
                    &path.display().to_string(),
                    &String::from_utf8_lossy(&bytes),
                );
            }
        }
        let events = weft.ok(&["events", "--json", "--all"]).stdout;
        assert_masked("weft events --json", &events);
        // The database's own bytes, and its write-ahead log's, read before any
        // checkpoint could fold one into the other.
        for name in ["weft.db", "weft.db-wal"] {
            let path = state.join(name);
            if path.exists() {
                let bytes = fs_err::read(&path).unwrap();
                assert_masked(name, &String::from_utf8_lossy(&bytes));
            }
        }
        assert_private(&state);
    }
}

#[test]
fn an_existing_state_folder_and_database_are_made_private_when_weft_opens_them() {
    let weft = Weft::new();
    let state = weft.work().join(".weft");
    weft.write(
        "plan.toml",
        "goal = \"g\"\nrunner = \"exec\"\n[[tasks]]\ntitle = \"t\"\nprompt = 'true'\n",
    );
    weft.ok(&["plan", "--file", "plan.toml"]);
    // As an earlier weft (or a permissive umask) left them.
    for path in files_under(&state) {
        let mode = if path.is_dir() { 0o755 } else { 0o644 };
        fs_err::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }
    weft.ok(&["task", "add", "--title", "u", "--prompt", "p"]);
    let db_mode =
        |name: &str| fs_err::metadata(state.join(name)).map(|m| m.permissions().mode() & 0o777);
    assert_eq!(
        fs_err::metadata(&state).unwrap().permissions().mode() & 0o777,
        0o700
    );
    assert_eq!(db_mode("weft.db").unwrap(), 0o600);
    if let Ok(mode) = db_mode("weft.db-wal") {
        assert_eq!(mode, 0o600);
    }
}
