//! Which environment values are secrets: never shown in logs, events or previews.

/// Name fragments that mark a variable's value as secret.
const SECRET_NAME_PARTS: [&str; 4] = ["KEY", "TOKEN", "SECRET", "PASSWORD"];

pub fn is_secret_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_NAME_PARTS.iter().any(|part| upper.contains(part))
}

/// The values to mask among `vars` (short values are skipped: masking "1" everywhere
/// would destroy logs and hide nothing).
pub fn secret_values<'a>(vars: impl IntoIterator<Item = (&'a str, &'a str)>) -> Vec<String> {
    let mut values: Vec<String> = vars
        .into_iter()
        .filter(|(name, value)| is_secret_name(name) && value.len() >= 4)
        .map(|(_, value)| value.to_owned())
        .collect();
    // Longest first, so a secret containing another is masked whole; equal values next
    // to each other, so `dedup` drops every repeat.
    values.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    values.dedup();
    values
}

/// `text` with every secret value replaced by `****`.
pub fn mask(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_owned();
    for secret in secrets {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), "****");
        }
    }
    out
}

/// How an environment variable is shown: its value, or `****` for secrets.
pub fn shown_value(name: &str, value: &str) -> String {
    if is_secret_name(name) {
        "****".into()
    } else {
        value.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            mask("key=sk-abcdefgh and sk-abcdef", &secrets),
            "key=**** and ****"
        );
        assert_eq!(shown_value("API_KEY", "x"), "****");
    }
}
