//! The environment a contained process gets: an allow-list, never weft's whole
//! environment.
//!
//! A process weft starts for a run gets only the variables of weft's environment whose
//! names match one of these patterns, and then the variables weft sets for it (the
//! manifest's `[env]`, `WEFT_PROMPT`, the git variables of an attempt, `TMPDIR`), which are
//! never filtered:
//!
//! - [`BASE`], which every process gets: what any program needs to find itself, the
//!   user and the terminal (`PATH`, `HOME`, `USER`, `LOGNAME`, `SHELL`, `LANG`,
//!   `LANGUAGE`, `LC_*`, `TERM`, `COLORTERM`, `NO_COLOR`, `TZ`, `TMPDIR`), weft's own
//!   `WEFT_*`, and where git's configuration and identity come from (`GIT_CONFIG_GLOBAL`,
//!   `GIT_CONFIG_SYSTEM`, `GIT_CONFIG_NOSYSTEM`, `GIT_AUTHOR_*`, `GIT_COMMITTER_*`); never
//!   a `GIT_DIR`-like redirection;
//! - the runner manifest's `env_pass` (the built-in agents declare their CLI's own
//!   variables; the `exec` runner declares the common build toolchains' and is also what
//!   checks and ops tasks get);
//! - the user's `env_pass` setting. A pattern `*` passes everything (weft's old
//!   behaviour).
//!
//! A pattern is a variable name in which `*` stands for any run of characters (`LC_*`,
//! `*_API_KEY`); names are compared case-sensitively, so the lower-case proxy variables
//! are named separately.

use std::ffi::{OsStr, OsString};

/// What every contained process gets from weft's environment.
pub const BASE: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "COLORTERM",
    "NO_COLOR",
    "TZ",
    "TMPDIR",
    "WEFT_*",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
];

/// The variables a process gets from weft's environment. Its `Debug` shows the names
/// only: values may be secrets.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Passed(pub Vec<(String, OsString)>);

impl std::fmt::Debug for Passed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.0.iter().map(|(name, _)| name))
            .finish()
    }
}

/// Whether `name` matches `pattern` (`*`: any run of characters, possibly empty).
pub fn matches(pattern: &str, name: &str) -> bool {
    // No allocation: every launch matches each variable against every pattern.
    let Some((first, tail)) = pattern.split_once('*') else {
        // No `*`: the whole name.
        return pattern == name;
    };
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    // `tail` is what follows the first `*`: its last part ends the name, the parts
    // before it appear in order.
    let (middle, last) = tail.rsplit_once('*').unwrap_or(("", tail));
    for part in middle.split('*').filter(|part| !part.is_empty()) {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Why an `env_pass` pattern is refused: it names no variable a shell could set.
pub fn check_pattern(pattern: &str) -> Result<(), String> {
    if pattern.is_empty() {
        return Err("an empty pattern passes nothing".into());
    }
    match pattern
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '*'))
    {
        Some(c) => Err(format!(
            "`{c}` cannot be part of a variable name (a pattern is a name in which `*` stands for any characters)"
        )),
        None => Ok(()),
    }
}

/// The variables of `env` whose names match [`BASE`] or one of `patterns`, in `env`'s
/// order.
pub fn filter<'a, P: AsRef<str>>(
    env: impl IntoIterator<Item = (&'a str, &'a OsStr)>,
    patterns: &[P],
) -> Passed {
    let passes = |name: &str| {
        BASE.iter().any(|p| matches(p, name)) || patterns.iter().any(|p| matches(p.as_ref(), name))
    };
    env.into_iter()
        .filter(|(name, _)| passes(name))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect::<Vec<_>>()
        .into()
}

impl From<Vec<(String, OsString)>> for Passed {
    fn from(vars: Vec<(String, OsString)>) -> Passed {
        Passed(vars)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_is_a_name_with_stars_for_any_characters() {
        assert!(matches("PATH", "PATH"));
        assert!(!matches("PATH", "PATHS"));
        assert!(!matches("PATH", "XPATH"));
        assert!(matches("LC_*", "LC_ALL"));
        assert!(matches("LC_*", "LC_"));
        assert!(!matches("LC_*", "LANG"));
        assert!(matches("*_API_KEY", "OPENAI_API_KEY"));
        assert!(!matches("*_API_KEY", "OPENAI_API_KEYS"));
        assert!(matches("*", "ANYTHING"));
        assert!(matches("A*B*C", "AxxBxxC"));
        assert!(matches("A*B*C", "ABC"));
        assert!(!matches("A*B*C", "AC"));
        assert!(!matches("AB*BA", "ABA"), "the two ends may not overlap");
        assert!(!matches("http_proxy", "HTTP_PROXY"), "case-sensitive");
    }

    #[test]
    fn only_the_base_and_the_patterns_pass() {
        let env: Vec<(&str, &OsStr)> = [
            "PATH",
            "HOME",
            "LC_ALL",
            "WEFT_FAKE_SCRIPT",
            "AWS_SECRET_ACCESS_KEY",
            "DATABASE_URL",
            "ANTHROPIC_API_KEY",
            "GIT_DIR",
        ]
        .iter()
        .map(|n| (*n, OsStr::new("v")))
        .collect();
        let names = |patterns: &[&str]| -> Vec<String> {
            filter(env.iter().copied(), patterns)
                .0
                .into_iter()
                .map(|(n, _)| n)
                .collect()
        };
        assert_eq!(names(&[]), ["PATH", "HOME", "LC_ALL", "WEFT_FAKE_SCRIPT"]);
        assert_eq!(
            names(&["ANTHROPIC_*"]),
            [
                "PATH",
                "HOME",
                "LC_ALL",
                "WEFT_FAKE_SCRIPT",
                "ANTHROPIC_API_KEY"
            ]
        );
        assert_eq!(names(&["*"]).len(), env.len());
    }

    /// The plain definition: `*` stands for any characters (backtracking).
    fn glob(pattern: &[u8], name: &[u8]) -> bool {
        match pattern.split_first() {
            None => name.is_empty(),
            Some((b'*', rest)) => (0..=name.len()).any(|at| glob(rest, &name[at..])),
            Some((c, rest)) => name.first() == Some(c) && glob(rest, &name[1..]),
        }
    }

    proptest::proptest! {
        #[test]
        fn a_pattern_matches_exactly_what_its_definition_matches(
            pattern in "[AB_*]{0,8}",
            name in "[AB_]{0,10}",
        ) {
            proptest::prop_assert_eq!(
                matches(&pattern, &name),
                glob(pattern.as_bytes(), name.as_bytes()),
                "{} against {}", pattern, name
            );
        }
    }

    #[test]
    fn patterns_must_be_variable_names() {
        assert!(check_pattern("ANTHROPIC_*").is_ok());
        assert!(check_pattern("*").is_ok());
        assert!(check_pattern("").is_err());
        assert!(check_pattern("A B").is_err());
        assert!(check_pattern("A=B").is_err());
    }
}
