//! Secret masking for research results and log summaries.
//!
//! Two layers: the exact values weft knows are secret ([`weft_core::secrets::mask`]), and
//! values that *look* secret in the text itself: the value of an assignment whose name is
//! secret-like ([`weft_core::secrets::is_secret_name`]: `API_KEY=…`, `export TOKEN="…"`,
//! `"password": "…"`, `db_password: …`), a `Bearer` token, the password of a URL
//! (`scheme://user:PASSWORD@host`) and the body of a PEM private key. The name is kept, so
//! the model still sees *that* a key is configured.
//!
//! The assignment layer errs towards leaving code alone: an unquoted value is masked only in
//! the shapes configuration uses (`NAME=value` without spaces, a whole `NAME = value` line,
//! `name: value` ending its line), not when it is followed by a call or an index
//! (`token = get_token()`, `api_key = os.environ["KEY"]`), nor when it is a keyword
//! (`true`, `null`, …) or a variable reference (`$TOKEN`, `${TOKEN}`).

use std::sync::LazyLock;

use regex::Regex;
use weft_core::secrets::{is_secret_name, mask};

/// What a masked value becomes.
const MASK: &str = "****";

/// The exact values to mask, longest first (so a secret containing another is masked whole),
/// without duplicates and without values shorter than
/// [`weft_agents::supervise::MIN_SECRET_LEN`] (masking `1` everywhere would destroy the
/// text and hide nothing).
pub fn prepare_secrets(values: &[String]) -> Vec<String> {
    let mut out: Vec<String> = values
        .iter()
        .filter(|v| v.len() >= weft_agents::supervise::MIN_SECRET_LEN)
        .cloned()
        .collect();
    out.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    out.dedup();
    out
}

/// `text` with the exact `secrets` (prepared by [`prepare_secrets`]) and secret-looking
/// values masked.
pub fn mask_text(text: &str, secrets: &[String]) -> String {
    mask_assignments(&mask(text, secrets))
}

/// A name, an optional closing quote (`"password": …`), a separator and a value.
static ASSIGNMENT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?m)\b(?P<name>[A-Za-z_][A-Za-z0-9_.\-]*)["']?(?P<sp1>[ \t]*)(?P<sep>:=|=|:)(?P<sp2>[ \t]*)(?P<val>"(?:[^"\\\n]|\\.)*"|'[^'\n]*'|\$\{[^}\n]*\}|[^\s"'`,;&|(){}\[\]<>]+)"#,
    )
    .expect("the assignment pattern compiles")
});

/// A whole-line assignment: optional `export`/`set`/`declare`, then the name.
static LINE_START: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"^[ \t]*(?:(?:export|set|declare|local|readonly)[ \t]+(?:-[a-zA-Z]+[ \t]+)?)?["']?$"#,
    )
    .expect("the line-start pattern compiles")
});

static BEARER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?P<scheme>Bearer[ \t]+)(?P<token>[A-Za-z0-9\-._~+/]{8,}=*)")
        .expect("the bearer pattern compiles")
});

static URL_PASSWORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*://[^\s:/@]+:)(?P<password>[^\s@/]+)@")
        .expect("the URL pattern compiles")
});

static PRIVATE_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?s)(?P<begin>-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----)(?P<body>.*?)(?P<end>-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)",
    )
    .expect("the private key pattern compiles")
});

/// `text` with the values of secret-named assignments, bearer tokens, URL passwords and
/// private key bodies replaced by `****`.
pub fn mask_assignments(text: &str) -> String {
    let text = PRIVATE_KEY.replace_all(text, |c: &regex::Captures| {
        let end = c.name("end").map_or("", |m| m.as_str());
        format!("{}\n{MASK}\n{end}", &c["begin"])
    });
    let text = BEARER.replace_all(&text, |c: &regex::Captures| {
        format!("{}{MASK}", &c["scheme"])
    });
    let text = URL_PASSWORD.replace_all(&text, |c: &regex::Captures| {
        format!("{}{MASK}@", &c["head"])
    });
    mask_named_values(&text)
}

fn mask_named_values(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut at = 0;
    while let Some(c) = ASSIGNMENT.captures_at(text, at) {
        let (Some(name), Some(sep), Some(value)) = (c.name("name"), c.name("sep"), c.name("val"))
        else {
            break;
        };
        // Continue after the separator, so `A=B=secret` and `KEY=a TOKEN=b` are all seen.
        at = sep.end();
        if !is_secret_name(name.as_str()) || !masks(text, &c) {
            continue;
        }
        let raw = value.as_str();
        let (start, end) = if raw.len() >= 2 && (raw.starts_with('"') || raw.starts_with('\'')) {
            (value.start() + 1, value.end() - 1)
        } else {
            (value.start(), value.end())
        };
        if start >= end || start < copied {
            continue;
        }
        out.push_str(&text[copied..start]);
        out.push_str(MASK);
        copied = end;
        at = value.end();
    }
    out.push_str(&text[copied..]);
    out
}

/// Whether this assignment's value is masked (see the module docs).
fn masks(text: &str, c: &regex::Captures) -> bool {
    let (Some(name), Some(sep), Some(value)) = (c.name("name"), c.name("sep"), c.name("val"))
    else {
        return false;
    };
    let raw = value.as_str();
    let quoted = raw.starts_with('"') || raw.starts_with('\'');
    let inner = if quoted && raw.len() >= 2 {
        &raw[1..raw.len() - 1]
    } else {
        raw
    };
    if inner.is_empty() || inner == MASK || inner.starts_with('=') || is_reference(inner) {
        return false;
    }
    if quoted {
        return true;
    }
    if matches!(
        inner.to_ascii_lowercase().as_str(),
        "true" | "false" | "null" | "none" | "nil" | "undefined" | "yes" | "no"
    ) {
        return false;
    }
    let after = &text[value.end()..];
    let rest_of_line = after.split('\n').next().unwrap_or("");
    // A call or an index: code, not a value.
    if rest_of_line.starts_with(['(', '[']) {
        return false;
    }
    let line_ends = {
        let rest = rest_of_line.trim();
        rest.is_empty() || rest.starts_with('#')
    };
    let spaced = !c["sp1"].is_empty() || !c["sp2"].is_empty();
    match sep.as_str() {
        // `name: value` (YAML, HTTP headers) when the value ends the line.
        ":" => !c["sp2"].is_empty() && line_ends,
        _ if !spaced => true,
        // `NAME = value` as a whole line (ini, .env with spaces, shell `export`).
        _ => {
            let line_start = text[..name.start()].rfind('\n').map_or(0, |i| i + 1);
            line_ends && LINE_START.is_match(&text[line_start..name.start()])
        }
    }
}

/// `$NAME` or `${NAME}`: a reference to a value kept elsewhere.
fn is_reference(value: &str) -> bool {
    let Some(rest) = value.strip_prefix('$') else {
        return false;
    };
    let rest = rest
        .strip_prefix('{')
        .and_then(|r| r.strip_suffix('}'))
        .unwrap_or(rest);
    !rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `text` whose end was cut at a byte cap: a trailing prefix (3 or more bytes) of a secret
/// that was cut in half is masked too, since the exact-value mask cannot see it.
pub(crate) fn mask_cut_tail(text: &str, secrets: &[String]) -> String {
    for secret in secrets {
        for len in (3..secret.len()).rev() {
            if !secret.is_char_boundary(len) {
                continue;
            }
            if let Some(head) = text.strip_suffix(&secret[..len]) {
                return format!("{head}{MASK}");
            }
        }
    }
    text.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_configured_values_longest_first() {
        let secrets = prepare_secrets(&["sk-abc".into(), "sk-abcdef".into(), "1".into()]);
        assert_eq!(secrets, ["sk-abcdef", "sk-abc"]);
        assert_eq!(
            mask_text("a sk-abcdef b sk-abc 1", &secrets),
            "a **** b **** 1"
        );
    }

    #[test]
    fn masks_secret_named_assignments() {
        let cases = [
            ("API_KEY=abc123", "API_KEY=****"),
            ("export TOKEN=\"s3cr3t value\"", "export TOKEN=\"****\""),
            ("export GITHUB_TOKEN=ghp_x1", "export GITHUB_TOKEN=****"),
            (
                "  DB_PASSWORD = hunter22  # prod",
                "  DB_PASSWORD = ****  # prod",
            ),
            (
                r#"{"password": "pa55", "user": "bob"}"#,
                r#"{"password": "****", "user": "bob"}"#,
            ),
            ("api_key: 'abc'", "api_key: '****'"),
            ("secret_key: abcdef", "secret_key: ****"),
            ("X-Api-Key: abcdef", "X-Api-Key: ****"),
            (
                "FOO_TOKEN=a BAR_KEY=b cmd",
                "FOO_TOKEN=**** BAR_KEY=**** cmd",
            ),
            (
                "curl https://x/?api_key=abc&x=1",
                "curl https://x/?api_key=****&x=1",
            ),
            ("run --password=xyz", "run --password=****"),
            (
                "AWS_SECRET_ACCESS_KEY := wJalr",
                "AWS_SECRET_ACCESS_KEY := ****",
            ),
            (
                "AWS_SECRET_ACCESS_KEY:=wJalr",
                "AWS_SECRET_ACCESS_KEY:=****",
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(mask_assignments(input), expected, "{input}");
        }
    }

    #[test]
    fn leaves_code_alone() {
        let cases = [
            "let token = get_token();",
            "api_key = os.environ[\"API_KEY\"]",
            "    api_key: String,",
            "pub fn secret_name(key: &str) -> bool {",
            "if password == expected {",
            "TOKEN=$GITHUB_TOKEN",
            "TOKEN=${GITHUB_TOKEN}",
            "const PASSWORD_MIN: usize = 8;",
            "use_keyring: true",
            "PATH=/usr/bin",
            "password = \"\"",
        ];
        for input in cases {
            assert_eq!(mask_assignments(input), input, "{input}");
        }
    }

    #[test]
    fn masks_tokens_urls_and_keys() {
        assert_eq!(
            mask_assignments("Authorization: Bearer abcdefgh12345"),
            "Authorization: Bearer ****"
        );
        assert_eq!(
            mask_assignments("DATABASE_URL=postgres://app:hunter2@db:5432/x"),
            "DATABASE_URL=postgres://app:****@db:5432/x"
        );
        let pem =
            "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabcd\n-----END RSA PRIVATE KEY-----\ny";
        assert_eq!(
            mask_assignments(pem),
            "x\n-----BEGIN RSA PRIVATE KEY-----\n****\n-----END RSA PRIVATE KEY-----\ny"
        );
        let cut = "-----BEGIN PRIVATE KEY-----\nMIIE";
        assert_eq!(mask_assignments(cut), "-----BEGIN PRIVATE KEY-----\n****\n");
    }

    #[test]
    fn masks_a_secret_cut_at_the_end() {
        let secrets = prepare_secrets(&["sk-abcdef".into()]);
        assert_eq!(mask_cut_tail("out: sk-abc", &secrets), "out: ****");
        assert_eq!(mask_cut_tail("out: sk", &secrets), "out: sk");
    }
}
