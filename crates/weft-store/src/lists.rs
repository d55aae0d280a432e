//! A task's JSON list columns (`checks`, `dependencies`, `steps`, `steps_done`) read back:
//! what the full load and the outline both read them with.
//!
//! Contract: [`parse_strings`] gives what `serde_json` gives for any text, and refuses what
//! it refuses, naming the task and the list. The lists weft writes (compact, nothing to
//! escape) are split without a parse ([`plain_list_items`]); anything else goes through
//! `serde_json`. Pure: no SQLite here.

use crate::rows::Checked;

/// A JSON list column: `[]`, what almost every task stores, costs no parse.
pub(crate) fn parse_list<T: serde::de::DeserializeOwned>(
    text: &str,
    what: &str,
    task: &str,
) -> Checked<Vec<T>> {
    if text == "[]" {
        Ok(Vec::new())
    } else {
        crate::rows::parse_json(text, what, task)
    }
}

/// A JSON list of strings. What [`crate::rows::write_tasks`] stores for ids (`["a","b-2"]`: compact,
/// no escapes, since ids are ASCII letters, digits, `-`, `_` and `.`) is split here
/// directly; anything else (spaces, escapes, damage) goes through `serde_json`, so the
/// answer is the same for every input. A dependency list is the one list nearly every
/// task has, and a general parse of it cost a sixth of loading a large plan.
pub(crate) fn parse_strings(text: &str, what: &str, task: &str) -> Checked<Vec<String>> {
    if let Some(list) = split_plain_strings(text) {
        return Ok(list);
    }
    parse_list(text, what, task)
}

/// `["a","b"]` with nothing between the items but `,` and no `"`, `\\` or control
/// character inside them; `None` for any other text. One pass over the whole list checks
/// the bytes (what the compiler vectorizes), then each `"` found must be a `","`.
fn split_plain_strings(text: &str) -> Option<Vec<String>> {
    let Some(items) = plain_list_items(text)? else {
        return Some(Vec::new());
    };
    Some(
        weft_core::Strings::Joined(Some(items))
            .iter()
            .map(str::to_owned)
            .collect(),
    )
}

/// The items of a list [`split_plain_strings`] answers for, borrowed as they are stored:
/// `Some(None)` for `[]`, `Some(Some("a\",\"b"))` for `["a","b"]` (the text between the
/// outer `["` and `"]`, what [`weft_core::Strings::Joined`] holds); `None` for any text
/// it leaves to `serde_json`.
pub(crate) fn plain_list_items(text: &str) -> Option<Option<&str>> {
    // Byte tests, not `strip_prefix('[')`: a char pattern cost ~90 instructions a call.
    let bytes = text.as_bytes();
    if bytes.len() < 2 || bytes[0] != b'[' || bytes[bytes.len() - 1] != b']' {
        return None;
    }
    if bytes.len() == 2 {
        return Some(None);
    }
    let plain = bytes
        .iter()
        .fold(true, |ok, &b| ok & (b >= 0x20 && b != b'\\'));
    if !plain || bytes.len() < 4 || bytes[1] != b'"' || bytes[bytes.len() - 2] != b'"' {
        return None;
    }
    // Between `["` and `"]`, all ASCII: on char boundaries.
    let items = text.get(2..text.len() - 2)?;
    // Every `"` between the items is one of a `","`.
    let bytes = items.as_bytes();
    let mut at = 0;
    while let Some(quote) = next_quote(bytes, at) {
        if bytes.get(quote..quote + 3) != Some(b"\",\"") {
            return None;
        }
        at = quote + 3;
    }
    Some(Some(items))
}

/// Where the next `"` from `at` on is in `bytes`, looked for 8 bytes at a time: these
/// lists are a few dozen bytes, where a byte loop (~4.5 instructions a byte, two thirds of
/// reading a task's lists) and a `memchr` call per quote both cost more.
fn next_quote(bytes: &[u8], mut at: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    while let Some(word) = bytes.get(at..at + 8) {
        let word = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        // A zero byte where `word` has a `"`: the lowest flag is the first one exactly
        // (a borrow can only flag bytes above a zero).
        let quotes = word ^ (ONES * u64::from(b'"'));
        let found = quotes.wrapping_sub(ONES) & !quotes & (ONES << 7);
        if found != 0 {
            return Some(at + (found.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    bytes
        .get(at..)?
        .iter()
        .position(|&b| b == b'"')
        .map(|offset| at + offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shortcut gives what `serde_json` gives whenever it answers, and leaves every
    /// other text to it.
    #[test]
    fn plain_string_lists_split_exactly_as_json_parses_them() {
        let answered = [
            r#"[]"#,
            r#"[""]"#,
            r#"["a"]"#,
            r#"["task-00001","b.2","c_3"]"#,
            r#"["cargo test --workspace","ünïcode ok"]"#,
            r#"["a,b"]"#,
            r#"["a,b","c",""]"#,
            r#"["","x"]"#,
        ];
        for text in answered {
            let expected: Vec<String> = serde_json::from_str(text).unwrap();
            assert_eq!(split_plain_strings(text), Some(expected), "{text}");
        }
        let left_to_json = [
            r#"["]"#,
            r#"["a" ,"b"]"#,
            r#"["a","b" ]"#,
            r#"["a","b\"c"]"#,
            r#"["a\\b"]"#,
            r#"["a", "b"]"#,
            r#"[ "a"]"#,
            r#"["a",]"#,
            r#"[,]"#,
            r#"["a""b"]"#,
            "[\"tab\there\"]",
            r#"{"a":1}"#,
            r#"["a"#,
            "",
        ];
        for text in left_to_json {
            assert_eq!(split_plain_strings(text), None, "{text}");
        }
        // Whatever the shortcut leaves, the full parse still reads or refuses.
        assert_eq!(
            parse_strings(r#"["a,b", "c\"d"]"#, "checks list", "t"),
            Ok(vec!["a,b".to_owned(), "c\"d".to_owned()])
        );
        assert!(parse_strings(r#"["a",]"#, "checks list", "t").is_err());
    }

    proptest::proptest! {
        /// Over texts made of the characters that matter (quotes, commas, brackets,
        /// escapes, control characters) and items longer than a word, the shortcut agrees
        /// with `serde_json` whenever it answers, and answers for every list of items
        /// with nothing to escape (of any other characters, multi-byte ones too).
        #[test]
        fn any_list_splits_as_json_parses_it(
            text in "\\[?(\"[a-z,\"\\\\\t \\]é]{0,20}\"(,)?){0,4}\\]?",
            items in proptest::collection::vec("[^\"\\\\\\x00-\\x1f]{0,30}", 0..5),
        ) {
            if let Some(split) = split_plain_strings(&text) {
                let parsed: Result<Vec<String>, _> = serde_json::from_str(&text);
                proptest::prop_assert_eq!(Ok(split), parsed.map_err(|_| ()), "{}", text);
            }
            let plain = serde_json::to_string(&items).unwrap();
            proptest::prop_assert_eq!(split_plain_strings(&plain), Some(items));
        }
    }
}
