//! Secret masking for research results and log summaries: the one masker of
//! [`weft_core::secrets`] (known values and their base64, token shapes, URL passwords,
//! PEM private keys, bearer tokens and secret-named assignments such as `API_KEY=…`,
//! `export TOKEN="…"`, `"password": "…"`), plus the cut-tail rule below, which only a
//! byte-capped research result needs. The name of an assignment is kept, so the model still
//! sees *that* a key is configured.

use weft_core::secrets::{MASK, Masker};

/// The exact values to mask, longest first (so a secret containing another is masked whole),
/// without duplicates and without values shorter than
/// [`weft_core::secrets::MIN_SECRET_LEN`] (masking `1` everywhere would destroy the text
/// and hide nothing).
pub fn prepare_secrets(values: &[String]) -> Vec<String> {
    weft_core::secrets::prepare(values)
}

/// `text` with the exact `secrets` (prepared by [`prepare_secrets`]) and secret-looking
/// values masked.
pub fn mask_text(text: &str, secrets: &[String]) -> String {
    Masker::new(secrets).mask(text).into_owned()
}

/// `text` with the secret shapes (no known values) masked: the values of secret-named
/// assignments, bearer tokens, URL passwords, private key bodies, token shapes.
pub fn mask_assignments(text: &str) -> String {
    Masker::default().mask(text).into_owned()
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
