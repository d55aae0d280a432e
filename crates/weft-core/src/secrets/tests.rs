//! Examples of each rule, both sides of each boundary.

use super::*;

fn shapes(text: &str) -> String {
    Masker::default().mask(text).into_owned()
}

fn stream(masker: &Masker, chunks: &[&[u8]]) -> String {
    let mut s = StreamMasker::default();
    let mut out = Vec::new();
    for chunk in chunks {
        s.push(masker, chunk, &mut out);
    }
    s.finish(masker, &mut out);
    String::from_utf8(out).unwrap()
}

const GHP: &str = "ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5";
const JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";

#[test]
fn names_and_values() {
    assert!(is_secret_name("ANTHROPIC_API_KEY"));
    assert!(is_secret_name("github_token"));
    assert!(is_secret_name("DB_PASSWORD"));
    assert!(!is_secret_name("PATH"));
    let secrets = secret_values([
        ("API_KEY", "sk-abcdef"),
        ("X_TOKEN", "sk-abcdefgh"),
        ("PATH", "/bin"),
        ("SHORT_KEY", "1"),
    ]);
    assert_eq!(secrets, ["sk-abcdefgh", "sk-abcdef"]);
    assert_eq!(
        mask("got sk-abcdefgh and sk-abcdef", &secrets),
        "got **** and ****"
    );
    assert_eq!(shown_value("API_KEY", "x"), "****");
}

#[test]
fn token_shapes_are_masked_keeping_their_prefix() {
    let cases = [
        (
            "key sk-ant-api03-AbCdEf0123456789xyzXYZ end",
            "key sk-**** end",
        ),
        ("sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12", "sk-****"),
        (&format!("token {GHP}."), "token ghp_****."),
        ("gho_ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", "gho_****"),
        (
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
            "github_pat_****",
        ),
        ("glpat-aBcDeFgHiJkLmNoPqRsT", "glpat-****"),
        (
            "slack xoxb-123456789012-abcdefABCDEF ok",
            "slack xoxb-**** ok",
        ),
        ("id AKIAIOSFODNN7EXAMPLE ok", "id AKIA**** ok"),
        ("id ASIAIOSFODNN7EXAMPL2", "id ASIA****"),
        (&format!("jwt={JWT};"), "jwt=****;"),
        (
            "Authorization: Bearer abcdefgh12345",
            "Authorization: Bearer ****",
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(shapes(input), expected, "{input}");
    }
}

#[test]
fn ordinary_text_is_left_alone() {
    let cases = [
        "commit 3f2a9c1d8e7b6a5f4e3d2c1b0a9f8e7d6c5b4a39",
        "id 123e4567-e89b-12d3-a456-426614174000",
        "/home/user/.ssh/id_rsa and ~/.config/weft/config.toml",
        "desk-top task-runner-for-the-long-hyphenated-words-2 risk-0123456789abcdefghij",
        "sk-learn is a library; sk-abc is short",
        "sk-this-is-a-long-hyphenated-name-without-digits",
        "ghp_short gho_ ghp-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        "AKIAIOSFODNN7EXAMPLE0 is too long, AKIA1234 too short, XAKIAIOSFODNN7EXAMPLE",
        "eyJust a word. eyJhbGciOiJIUzI1NiJ9 alone",
        "https://example.com:8080/path?q=1 ssh://git@host/repo git@github.com:org/r.git",
        "http://[::1]:8080/ user@example.com mailto:a@b.c",
        "WEFT_DONE_0123456789abcdef",
        "Completion token: WEFT_DONE_0123456789abcdef",
        "the monkey ate the key, keys are on the table",
        "let token = get_token();",
        "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
        "Bearer of bad news",
    ];
    for input in cases {
        assert_eq!(shapes(input), input);
    }
}

#[test]
fn url_passwords_keep_scheme_user_and_host() {
    let cases = [
        (
            "DATABASE_URL=postgres://admin:pw@db/x",
            "DATABASE_URL=postgres://admin:****@db/x",
        ),
        ("redis://:s3cret@cache:6379/0", "redis://:****@cache:6379/0"),
        (
            "git+https://me:tok%2Fen@host/r.git",
            "git+https://me:****@host/r.git",
        ),
        (
            r#"{"url":"mysql://root:hunter2@localhost:3306/app"}"#,
            r#"{"url":"mysql://root:****@localhost:3306/app"}"#,
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(shapes(input), expected, "{input}");
    }
}

/// A shape whose bytes read on into a private key's `-----BEGIN` (a JWT, a token, an END
/// line then a BEGIN line, where `KEY-----…` reads as a name) does not hide the key:
/// whole and streamed at every cut, its body is masked.
#[test]
fn a_private_key_right_after_another_shape_is_still_masked() {
    let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEsecret\n-----END RSA PRIVATE KEY-----";
    let cases = [
        (
            format!("{JWT}{key}"),
            format!("****{}", key.replace("MIIEsecret", "****")),
        ),
        (
            format!("{GHP}{key}"),
            format!("ghp_****{}", key.replace("MIIEsecret", "****")),
        ),
        (
            format!("{key}{key}"),
            key.replace("MIIEsecret", "****").repeat(2),
        ),
        (
            format!("-----END RSA PRIVATE KEY-----x{key}"),
            format!(
                "-----END RSA PRIVATE KEY-----x{}",
                key.replace("MIIEsecret", "****")
            ),
        ),
    ];
    let masker = Masker::default();
    for (text, expected) in &cases {
        assert_eq!(shapes(text), *expected, "whole: {text}");
        let bytes = text.as_bytes();
        for cut in 1..bytes.len() {
            let (a, b) = bytes.split_at(cut);
            assert_eq!(stream(&masker, &[a, b]), *expected, "cut at {cut}: {text}");
        }
    }
    // A key's body keeps its mask whole when a BEGIN line is inside it.
    let nested =
        "-----BEGIN RSA PRIVATE KEY-----\nab-----BEGIN x\ncd\n-----END RSA PRIVATE KEY-----";
    assert_eq!(
        shapes(nested),
        "-----BEGIN RSA PRIVATE KEY-----\n****\n-----END RSA PRIVATE KEY-----"
    );
}

#[test]
fn pem_bodies_are_masked_between_their_marker_lines() {
    let pem = "x\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabcd\n-----END RSA PRIVATE KEY-----\ny";
    assert_eq!(
        shapes(pem),
        "x\n-----BEGIN RSA PRIVATE KEY-----\n****\n-----END RSA PRIVATE KEY-----\ny"
    );
    let cut = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Bl";
    assert_eq!(shapes(cut), "-----BEGIN OPENSSH PRIVATE KEY-----\n****\n");
    // Inside a JSON string the line breaks stay escaped: the line stays one valid line.
    let json = r#"{"text":"-----BEGIN PRIVATE KEY-----\nMIIE\nabcd\n-----END PRIVATE KEY-----\n"}"#;
    let masked = shapes(json);
    assert_eq!(
        masked,
        r#"{"text":"-----BEGIN PRIVATE KEY-----\n****\n-----END PRIVATE KEY-----\n"}"#
    );
}

#[test]
fn secret_named_assignments_are_masked_and_code_is_not() {
    let cases = [
        ("API_KEY=abc123", "API_KEY=****"),
        ("export TOKEN=\"s3cr3t value\"", "export TOKEN=\"****\""),
        (
            "  DB_PASSWORD = hunter22  # prod",
            "  DB_PASSWORD = ****  # prod",
        ),
        (
            r#"{"password": "pa55", "user": "bob"}"#,
            r#"{"password": "****", "user": "bob"}"#,
        ),
        ("secret_key: abcdef", "secret_key: ****"),
        (
            "FOO_TOKEN=a BAR_KEY=b cmd",
            "FOO_TOKEN=**** BAR_KEY=**** cmd",
        ),
        (
            "curl https://x/?api_key=abc&x=1",
            "curl https://x/?api_key=****&x=1",
        ),
        // JSON-escaped quotes stay escapes.
        (
            r#"{"cmd":"export API_KEY=\"abc\" && run"}"#,
            r#"{"cmd":"export API_KEY=\"****\" && run"}"#,
        ),
        (
            r#"{"cmd":"echo \"API_KEY=abc\""}"#,
            r#"{"cmd":"echo \"API_KEY=****\""}"#,
        ),
        (
            r#"{"t":"password: hunter2\nnext"}"#,
            r#"{"t":"password: ****\nnext"}"#,
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(shapes(input), expected, "{input}");
    }
    for code in [
        "api_key = os.environ[\"API_KEY\"]",
        "    api_key: String,",
        "if password == expected {",
        "TOKEN=$GITHUB_TOKEN",
        "TOKEN=${GITHUB_TOKEN}",
        "const PASSWORD_MIN: usize = 8;",
        "use_keyring: true",
        "password = \"\"",
        "marker=WEFT_DONE_0123456789abcdef",
    ] {
        assert_eq!(shapes(code), code);
    }
}

#[test]
fn base64_of_a_known_value_is_masked_at_every_alignment() {
    let secret = "correct-horse-battery";
    let masker = Masker::new(&[secret.to_owned()]);
    for url_safe in [false, true] {
        for before in ["", "x", "xy"] {
            let encoded = encode_base64(format!("{before}{secret}!").as_bytes(), url_safe);
            let masked = masker.mask(&format!("blob {encoded} end")).into_owned();
            assert!(masked.contains(MASK), "{masked}");
            assert!(!masked.contains(&encoded[4..encoded.len() - 4]), "{masked}");
        }
    }
    // A short value's base64 is not looked for.
    let short = Masker::new(&["abcdef".to_owned()]);
    let encoded = encode_base64(b"abcdef", false);
    assert_eq!(short.mask(&encoded), encoded);
}

#[test]
fn a_stream_masks_what_straddles_chunks() {
    let masker = Masker::new(&["hunter22".to_owned()]);
    assert_eq!(stream(&masker, &[b"pw=hun", b"ter22!"]), "pw=****!");
    assert_eq!(stream(&masker, &[b"h", b"u", b"n", b"ter22"]), "****");
    assert_eq!(stream(&masker, &[b"hunte", b"x hunter2"]), "huntex hunter2");
    let plain = Masker::default();
    let token = GHP.as_bytes();
    assert_eq!(
        stream(&plain, &[b"x ", &token[..10], &token[10..], b" y"]),
        "x ghp_**** y"
    );
    let url = b"postgres://admin:pw@db/x";
    for cut in 0..url.len() {
        assert_eq!(
            stream(&plain, &[&url[..cut], &url[cut..]]),
            "postgres://admin:****@db/x",
            "cut at {cut}"
        );
    }
}

#[test]
fn a_stream_passes_ordinary_output_through_at_once() {
    let masker = Masker::new(&["sekrit-value".to_owned()]);
    let mut s = StreamMasker::default();
    let mut out = Vec::new();
    s.push(&masker, b"hello world\n", &mut out);
    assert_eq!(out, b"hello world\n");
    s.push(&masker, b"tail sek", &mut out);
    assert_eq!(out, b"hello world\ntail ");
}

#[test]
fn an_overlong_candidate_is_masked_from_its_start_and_dropped_to_its_end() {
    let masker = Masker::default();
    let body = "QUJD".repeat(3 * HOLD / 4 / 4 + 1000);
    let pem = format!("a\n-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\nb\n");
    let mut s = StreamMasker::default();
    let mut out = Vec::new();
    let mut max_held = 0;
    for chunk in pem.as_bytes().chunks(1000) {
        s.push(&masker, chunk, &mut out);
        max_held = max_held.max(s.held());
    }
    s.finish(&masker, &mut out);
    assert!(max_held <= masker.hold_bound() + 1000, "{max_held}");
    let expected = "a\n-----BEGIN PRIVATE KEY-----\n****\n-----END PRIVATE KEY-----\nb\n";
    assert_eq!(String::from_utf8(out).unwrap(), expected);
    assert_eq!(masker.mask(&pem), expected);
    // A token longer than the bound is masked whole too.
    let token = format!("sk-1{}", "a".repeat(2 * HOLD));
    let text = format!("x {token} y");
    let chunks: Vec<&[u8]> = text.as_bytes().chunks(777).collect();
    assert_eq!(stream(&masker, &chunks), "x sk-**** y");
}

/// A run of token bytes longer than the hold bound is masked from its start and dropped
/// to its end; `-` and letters are token bytes, so the run read on into a private key's
/// BEGIN line right after it, and the key's body came out whole. It stops where the
/// BEGIN line starts, as masking the whole text does, wherever the stream is cut.
#[test]
fn an_overlong_run_right_before_a_key_leaves_the_key_to_be_masked() {
    let masker = Masker::default();
    let key = "-----BEGIN PRIVATE KEY-----\nQUJDREVG\n-----END PRIVATE KEY-----\n";
    for run in [
        format!("ghp_{}", "a".repeat(2 * HOLD)),
        format!("sk-1{}", "-".repeat(3 * HOLD)),
        format!(
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOjF9.A0a_A0a__AAaaaAa{}",
            "-".repeat(4 * HOLD)
        ),
    ] {
        let text = format!("x {run}{key}y\n");
        let whole = masker.mask(&text).into_owned();
        assert!(!whole.contains("QUJD"), "{whole}");
        // Cuts everywhere in and around the BEGIN line, and plain chunk sizes.
        let begin = 2 + run.len();
        for cut in begin - 12..begin + 12 {
            let (a, b) = text.as_bytes().split_at(cut);
            assert_eq!(
                stream(&masker, &[a, b]),
                whole,
                "cut at {cut}, BEGIN at {begin}"
            );
        }
        for size in [1000, 777, 4096] {
            let chunks: Vec<&[u8]> = text.as_bytes().chunks(size).collect();
            assert_eq!(stream(&masker, &chunks), whole, "chunks of {size}");
        }
    }
}
