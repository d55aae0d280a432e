//! Properties of the terminal sanitizer: no escape reaches the terminal except kept
//! colour, sanitizing is idempotent, printable text is unchanged, chunking changes
//! nothing.

use proptest::prelude::*;
use weft_core::terminal::{Keep, Sanitizer, sanitize, sanitize_str};

/// Bytes rich in escape sequences, control bytes and broken UTF-8.
fn hostile() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        "[ -~]{0,12}".prop_map(String::into_bytes),
        Just(b"\x1b".to_vec()),
        Just(b"\x1b[".to_vec()),
        Just(b"\x1b]52;c;".to_vec()),
        Just(b"\x1b[31m".to_vec()),
        Just(b"\x1b[2J".to_vec()),
        Just(b"\x1b[?1049h".to_vec()),
        Just(b"\x1bP".to_vec()),
        Just(b"\x1b\\".to_vec()),
        Just(b"\x07".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"\n".to_vec()),
        Just("é日🎉\u{9b}".as_bytes().to_vec()),
        prop::collection::vec(any::<u8>(), 0..6),
    ];
    prop::collection::vec(piece, 0..20).prop_map(|p| p.concat())
}

fn keep() -> impl Strategy<Value = Keep> {
    prop_oneof![Just(Keep::Colour), Just(Keep::Nothing)]
}

/// Whether a kept SGR sequence starts at `at`.
fn sgr_at(out: &[u8], at: usize) -> bool {
    let rest = &out[at..];
    if !rest.starts_with(b"\x1b[") {
        return false;
    }
    let params = rest[2..]
        .iter()
        .take_while(|b| b.is_ascii_digit() || **b == b';' || **b == b':')
        .count();
    rest.get(2 + params) == Some(&b'm')
}

fn streamed(bytes: &[u8], keep: Keep, cuts: &[usize]) -> Vec<u8> {
    let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    let mut s = Sanitizer::new(keep);
    let mut out = Vec::new();
    let mut at = 0;
    for cut in cuts {
        s.push(&bytes[at..cut], &mut out);
        at = cut;
    }
    s.push(&bytes[at..], &mut out);
    s.finish(&mut out);
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    #[test]
    fn no_escape_reaches_the_terminal_except_kept_colour(bytes in hostile(), keep in keep()) {
        let out = sanitize(&bytes, keep);
        for (at, b) in out.iter().enumerate() {
            if *b == 0x1b {
                prop_assert!(keep == Keep::Colour && sgr_at(&out, at), "{:?}", String::from_utf8_lossy(&out));
            } else if *b == b'\r' {
                prop_assert_eq!(out.get(at + 1), Some(&b'\n'));
            } else {
                prop_assert!(*b >= 0x20 && *b != 0x7f || *b == b'\n' || *b == b'\t');
            }
        }
        // Output is valid UTF-8 without C1 controls.
        let text = std::str::from_utf8(&out);
        prop_assert!(text.is_ok());
        let c1 = text.unwrap().chars().any(|c| ('\u{80}'..'\u{a0}').contains(&c));
        prop_assert!(!c1, "a C1 control came out");
    }

    #[test]
    fn sanitizing_twice_changes_nothing_more(bytes in hostile(), keep in keep()) {
        let once = sanitize(&bytes, keep).into_owned();
        let twice = sanitize(&once, keep).into_owned();
        prop_assert_eq!(twice, once);
    }

    #[test]
    fn printable_text_is_unchanged(text in "[^\\p{Cc}]{0,60}", keep in keep()) {
        let with_lines = format!("{text}\n\t{text}");
        prop_assert_eq!(sanitize_str(&with_lines, keep), with_lines.as_str());
    }

    #[test]
    fn chunking_changes_nothing(
        bytes in hostile(),
        keep in keep(),
        cuts in prop::collection::vec(any::<usize>(), 0..10),
    ) {
        let whole = sanitize(&bytes, keep).into_owned();
        prop_assert_eq!(streamed(&bytes, keep, &cuts), whole);
    }
}
