//! Marker evidence: every view, every split, the things that must never match, and the
//! memory bound.

use memchr::memmem;
use proptest::prelude::*;
use weft_agents::evidence::{
    MarkerScanner, ScanOptions, View, Views, flatten, text_contains_marker,
};
use weft_core::marker::is_ignorable;

const TOKEN: &str = "WEFT_DONE_0123456789abcdef";
const OTHER: &str = "WEFT_DONE_fedcba9876543210";

const RAW: Views = Views {
    raw: true,
    flattened: false,
    rendered: false,
};
const FLAT: Views = Views {
    raw: false,
    flattened: true,
    rendered: false,
};
const RENDERED: Views = Views {
    raw: false,
    flattened: false,
    rendered: true,
};

/// Feeds `chunks` then flushes; the view that saw the marker.
fn scan_chunks(token: &str, views: Views, chunks: &[&[u8]]) -> Option<View> {
    let mut scanner = MarkerScanner::with_views(token, views);
    for chunk in chunks {
        scanner.feed(chunk);
    }
    scanner.flush()
}

fn scan(views: Views, bytes: &[u8]) -> Option<View> {
    scan_chunks(TOKEN, views, &[bytes])
}

/// The flattened view spelled out byte by byte, independently of the implementation's
/// fast paths: the documented rules and nothing else.
fn naive_flatten(bytes: &[u8]) -> Vec<u8> {
    #[derive(Clone, Copy)]
    enum S {
        Ground,
        Esc,
        Inter(usize),
        Csi(usize),
        Str(usize),
        StrEsc,
    }
    // Which characters are invisible has one definition, weft-core's; what this spells
    // out independently is the escape parsing and the byte handling.
    let invisible = is_ignorable;
    let mut out = Vec::new();
    let mut s = S::Ground;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let mut next = i + 1;
        s = match s {
            S::Ground => match b {
                0x1B => S::Esc,
                0x21..=0x7E => {
                    out.push(b);
                    S::Ground
                }
                0x00..=0x7F => S::Ground,
                0xC2..=0xF4 => {
                    let need = if b < 0xE0 {
                        2
                    } else if b < 0xF0 {
                        3
                    } else {
                        4
                    };
                    let mut len = 1;
                    while len < need && bytes.get(i + len).is_some_and(|c| c & 0xC0 == 0x80) {
                        len += 1;
                    }
                    let seq = &bytes[i..i + len];
                    let drop = len == need
                        && std::str::from_utf8(seq)
                            .ok()
                            .and_then(|t| t.chars().next())
                            .is_some_and(invisible);
                    if !drop {
                        // Visible, invalid, or cut short: kept as it is.
                        out.extend_from_slice(seq);
                    }
                    next = i + len;
                    S::Ground
                }
                _ => {
                    out.push(b);
                    S::Ground
                }
            },
            S::Esc => match b {
                b'[' => S::Csi(0),
                b']' | b'P' | b'X' | b'^' | b'_' => S::Str(0),
                0x20..=0x2F => S::Inter(1),
                0x30..=0x7E | 0x18 | 0x1A => S::Ground,
                0x00..=0x1F | 0x7F => S::Esc,
                _ => {
                    next = i;
                    S::Ground
                }
            },
            S::Inter(n) => match b {
                0x20..=0x2F if n + 1 > 8 => S::Ground,
                0x20..=0x2F => S::Inter(n + 1),
                0x30..=0x7E | 0x18 | 0x1A => S::Ground,
                0x1B => S::Esc,
                0x00..=0x1F | 0x7F => S::Inter(n),
                _ => {
                    next = i;
                    S::Ground
                }
            },
            S::Csi(n) => match b {
                0x20..=0x3F if n >= 64 => {
                    next = i;
                    S::Ground
                }
                0x20..=0x3F => S::Csi(n + 1),
                0x40..=0x7E | 0x18 | 0x1A => S::Ground,
                0x1B => S::Esc,
                0x00..=0x1F | 0x7F => S::Csi(n),
                _ => {
                    next = i;
                    S::Ground
                }
            },
            S::Str(n) if n >= 4096 => {
                next = i;
                S::Ground
            }
            S::Str(n) => match b {
                0x07 => S::Ground,
                0x1B => S::StrEsc,
                _ => S::Str(n + 1),
            },
            S::StrEsc => {
                if b == b'\\' {
                    S::Ground
                } else {
                    next = i;
                    S::Esc
                }
            }
        };
        i = next;
    }
    out
}

/// What the views must say for `bytes` fed whole: raw first, then flattened.
fn reference(bytes: &[u8], token: &str) -> Option<View> {
    if memmem::find(bytes, token.as_bytes()).is_some() {
        Some(View::Raw)
    } else if memmem::find(&naive_flatten(bytes), &naive_flatten(token.as_bytes())).is_some() {
        Some(View::Flattened)
    } else {
        None
    }
}

#[test]
fn view_names() {
    assert_eq!(View::Raw.as_str(), "raw");
    assert_eq!(View::Flattened.as_str(), "flattened");
    assert_eq!(View::Rendered.as_str(), "rendered");
    assert_eq!(View::Rendered.to_string(), "rendered");
}

#[test]
fn scanner_is_send() {
    fn assert_send<T: Send>() {}
    assert_send::<MarkerScanner>();
}

#[test]
fn plain_marker_is_raw_in_every_split() {
    let sample = format!("working...\nAll done: {TOKEN}\nbye\n");
    let bytes = sample.as_bytes();
    for a in 0..=bytes.len() {
        for b in a..=bytes.len() {
            let chunks = [&bytes[..a], &bytes[a..b], &bytes[b..]];
            assert_eq!(
                scan_chunks(TOKEN, Views::ALL, &chunks),
                Some(View::Raw),
                "split at {a}/{b}"
            );
        }
    }
}

#[test]
fn byte_at_a_time() {
    let sample = "\x1b[32mok\x1b[0m WEFT_DO\x1b[1mNE_\x1b[0m0123456789\nabcdef done";
    let mut scanner = MarkerScanner::with_views(TOKEN, Views::LINEAR);
    let mut seen = None;
    for b in sample.as_bytes() {
        seen = scanner.feed(std::slice::from_ref(b));
    }
    assert_eq!(seen, Some(View::Flattened));
}

#[test]
fn ansi_interleaved_marker_is_flattened_in_every_split() {
    let samples: [&[u8]; 5] = [
        b"WEFT_DO\x1b[1mNE_0123456789abcdef",
        b"\x1b[38;5;208mWEFT\x1b[0m_\x1b[1;4mDONE_\x1b[0m0123456789abcdef\x1b[0m",
        b"WEFT_DONE_\x1b]8;;https://example.com\x1b\\0123456789\x1b]8;;\x1b\\abcdef",
        b"WEFT_DONE_01\x1b]0;window title\x0723456789abcdef",
        b"WEFT_\x1b(BDONE_\x1b7\x1b80123456789abcdef",
    ];
    for sample in samples {
        assert_eq!(scan(RAW, sample), None);
        for a in 0..=sample.len() {
            let chunks = [&sample[..a], &sample[a..]];
            assert_eq!(
                scan_chunks(TOKEN, Views::LINEAR, &chunks),
                Some(View::Flattened),
                "{:?} split at {a}",
                String::from_utf8_lossy(sample)
            );
        }
    }
}

#[test]
fn escape_just_before_the_marker() {
    // ESC W is a complete escape sequence: the flattened view loses the W, the raw view
    // still has the marker.
    let bytes = b"\x1bWEFT_DONE_0123456789abcdef";
    assert_eq!(scan(Views::LINEAR, bytes), Some(View::Raw));
    assert_eq!(scan(FLAT, bytes), None);
    assert_eq!(reference(bytes, TOKEN), Some(View::Raw));
}

#[test]
fn whitespace_split_and_wrapped_markers_are_flattened() {
    let samples: [&[u8]; 5] = [
        b"WEFT_DONE_\n0123456789abcdef",
        b"WEFT_DONE_01234\r\n56789abcdef\r\n",
        b"  WEFT _ DONE _ 0123 4567 89ab cdef  ",
        b"WEFT_DONE_0123\t456789abcdef",
        "WEFT_DONE_\u{a0}0123456789\u{200b}abcdef".as_bytes(),
    ];
    for sample in samples {
        assert_eq!(scan(Views::ALL, sample), Some(View::Flattened));
        assert_eq!(scan(FLAT, sample), Some(View::Flattened));
    }
}

#[test]
fn box_drawn_marker_is_flattened() {
    let panel = "╭──────────────────╮\n│ All done:        │\n│ WEFT_DONE_012345 │\n│ 6789abcdef       │\n╰──────────────────╯\n";
    assert_eq!(scan(Views::ALL, panel.as_bytes()), Some(View::Flattened));
    let blocks = "WEFT_DONE_▌0123456789▐abcdef█";
    assert_eq!(scan(Views::ALL, blocks.as_bytes()), Some(View::Flattened));
    // Every split, including inside the three-byte box characters.
    let bytes = panel.as_bytes();
    for a in 0..=bytes.len() {
        assert_eq!(
            scan_chunks(TOKEN, FLAT, &[&bytes[..a], &bytes[a..]]),
            Some(View::Flattened),
            "split at {a}"
        );
    }
}

#[test]
fn cursor_positioned_marker_is_seen() {
    let first = b"\x1b[2J\x1b[5;10HWEFT_DONE_";
    let second = b"\x1b[5;20H0123456789abcdef\x1b[24;1H";
    // The flattened view drops the cursor move between the halves: it sees it first.
    assert_eq!(
        scan_chunks(TOKEN, Views::ALL, &[first, second]),
        Some(View::Flattened)
    );

    // The rendered view alone, in two chunks: the second is small, so it is read at the
    // flush.
    let mut scanner = MarkerScanner::with_views(TOKEN, RENDERED);
    assert_eq!(scanner.feed(first), None);
    scanner.feed(second);
    assert_eq!(scanner.flush(), Some(View::Rendered));
    assert_eq!(scanner.found(), Some(View::Rendered));

    // In one chunk: the first dirty chunk is read at once.
    let mut whole = first.to_vec();
    whole.extend_from_slice(second);
    let mut scanner = MarkerScanner::with_views(TOKEN, RENDERED);
    assert_eq!(scanner.feed(&whole), Some(View::Rendered));
}

#[test]
fn painted_out_of_order_is_rendered_in_every_split() {
    // A TUI painting the second half first, then the first half before it.
    let bytes = b"\x1b[3;21H456789abcdef\x1b[3;7HWEFT_DONE_0123\x1b[10;1H";
    assert_eq!(scan(Views::LINEAR, bytes), None);
    for a in 0..=bytes.len() {
        for b in a..=bytes.len() {
            let chunks = [&bytes[..a], &bytes[a..b], &bytes[b..]];
            assert_eq!(
                scan_chunks(TOKEN, Views::ALL, &chunks),
                Some(View::Rendered),
                "split at {a}/{b}"
            );
        }
    }
}

#[test]
fn backspace_and_carriage_return_overwrites_are_rendered() {
    let backspaced = b"WEFT_DONE_01XX\x08\x0823456789abcdef\n";
    assert_eq!(scan(Views::LINEAR, backspaced), None);
    assert_eq!(scan(Views::ALL, backspaced), Some(View::Rendered));

    let rewritten = b"xxxx_DONE_0123456789abcdef\rWEFT\n";
    assert_eq!(scan(Views::LINEAR, rewritten), None);
    assert_eq!(scan(Views::ALL, rewritten), Some(View::Rendered));
}

#[test]
fn marker_wrapped_by_the_terminal_is_rendered() {
    // Painted at the last columns of a 250-column row, wrapping onto the next.
    let bytes = b"\x1b[1;244HWEFT_DONE_0123456789abcdef";
    assert_eq!(scan(RENDERED, bytes), Some(View::Rendered));
}

#[test]
fn other_tokens_never_match() {
    let never: [&[u8]; 10] = [
        OTHER.as_bytes(),
        b"WEFT-DONE-",
        b"print WEFT-DONE- when done",
        b"WEFT_DONE_",
        b"0123456789abcdef",
        b"WEFT_DONE_ then 0123456789abcdef",
        b"WEFT_DONE_0123456789abcde",
        b"WEFT_DONE_0123456789abcdeg",
        b"\x1b[5;30H0123456789abcdef\x1b[6;1HWEFT_DONE_",
        b"WEFT_DONE_\x1b]0;0123456789abcdef\x07",
    ];
    for sample in never {
        assert_eq!(
            scan(Views::ALL, sample),
            None,
            "{:?}",
            String::from_utf8_lossy(sample)
        );
        assert_eq!(
            text_contains_marker(&String::from_utf8_lossy(sample), TOKEN),
            None
        );
    }
    // Our own marker is not another task's.
    assert_eq!(scan_chunks(OTHER, Views::ALL, &[TOKEN.as_bytes()]), None);
}

#[test]
fn found_is_sticky() {
    let mut scanner = MarkerScanner::new(TOKEN);
    assert_eq!(scanner.feed(b"nothing yet\n"), None);
    assert_eq!(scanner.found(), None);
    assert_eq!(
        scanner.feed(format!("{TOKEN}\n").as_bytes()),
        Some(View::Raw)
    );
    assert_eq!(scanner.feed(b"more output"), Some(View::Raw));
    assert_eq!(scanner.flush(), Some(View::Raw));
    assert_eq!(scanner.found(), Some(View::Raw));
    assert_eq!(scanner.retained_bytes(), 0);
}

#[test]
fn empty_token_is_never_found() {
    let mut scanner = MarkerScanner::new("");
    assert_eq!(scanner.feed(b"anything at all"), None);
    assert_eq!(scanner.flush(), None);
    assert_eq!(text_contains_marker("anything", ""), None);
}

#[test]
fn token_with_spaces_is_flattened_too() {
    // Odd tokens still work: the flattened views look for the flattened token.
    assert_eq!(
        text_contains_marker("say DONE NOW", "DONE NOW"),
        Some(View::Raw)
    );
    assert_eq!(
        text_contains_marker("say DONE\nNOW", "DONE NOW"),
        Some(View::Flattened)
    );
    assert_eq!(text_contains_marker("é DONE é", "é DONE"), Some(View::Raw));
    assert_eq!(
        text_contains_marker("é\nDONE é", "é DONE"),
        Some(View::Flattened)
    );
}

#[test]
fn text_contains_marker_on_texts() {
    assert_eq!(
        text_contains_marker(&format!("All done. {TOKEN}"), TOKEN),
        Some(View::Raw)
    );
    assert_eq!(
        text_contains_marker("All done. WEFT_DONE_\n0123456789abcdef", TOKEN),
        Some(View::Flattened)
    );
    assert_eq!(text_contains_marker("All done.", TOKEN), None);
    // A long text with the marker at the very end.
    let mut long = "lorem ipsum dolor sit amet ".repeat(100_000);
    long.push_str(TOKEN);
    assert_eq!(text_contains_marker(&long, TOKEN), Some(View::Raw));
}

/// 50 MB of noise: ANSI colours and cursor moves, UTF-8 and box drawing, partial
/// markers, binary bytes, unterminated sequences.
fn noise(len: usize) -> Vec<u8> {
    let pieces: [&[u8]; 12] = [
        b"compiling crate v0.1.0 (/work/x)\n",
        b"\x1b[32mok\x1b[0m ",
        b"\x1b[12;40H",
        "│ résumé ─── ▌ ".as_bytes(),
        b"WEFT_DONE_",
        b"0123456789abcde",
        b"W",
        b"\xff\xfe\x00\x80\xc3",
        b"\r",
        b"\x1b]0;title",
        b"\x1b[",
        b"\x08",
    ];
    let mut out = Vec::with_capacity(len + 64);
    let mut x: u64 = 0x1234_5678_9abc_def1;
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(pieces[(x % pieces.len() as u64) as usize]);
    }
    out
}

#[test]
fn memory_stays_bounded() {
    let data = noise(50 << 20);
    assert_eq!(
        reference(&data, TOKEN),
        None,
        "the noise must not hold the marker"
    );
    let options = ScanOptions::default();
    let bound = 64 * 1024 + usize::from(options.rows) * usize::from(options.cols) * 4;
    let mut scanner = MarkerScanner::new(TOKEN);
    let mut max = 0;
    for (k, chunk) in data.chunks(61_441).enumerate() {
        assert_eq!(scanner.feed(chunk), None);
        if k % 16 == 0 {
            max = max.max(scanner.retained_bytes());
        }
    }
    assert_eq!(scanner.flush(), None);
    max = max.max(scanner.retained_bytes());
    assert!(max < bound, "retained {max} bytes, bound {bound}");
    assert!(scanner.screen_reads() > 0);

    // The linear views alone, in one 8 MB chunk.
    let mut linear = MarkerScanner::with_views(TOKEN, Views::LINEAR);
    assert_eq!(linear.feed(&data[..8 << 20]), None);
    assert!(
        linear.retained_bytes() < 64 * 1024,
        "{}",
        linear.retained_bytes()
    );
}

#[test]
fn unterminated_sequences_do_not_hide_the_marker() {
    // A stray OSC opener followed by megabytes of text: the views give up on the
    // sequence and still see the marker at the end, with bounded memory.
    for opener in [&b"\x1b]"[..], b"\x1bP", b"\x1b_", b"\x1b["] {
        let mut data = opener.to_vec();
        data.extend(std::iter::repeat_n(b'x', 3 << 20));
        data.extend_from_slice(b"\nWEFT_DONE_\n0123456789abcdef\n");
        for views in [FLAT, RENDERED] {
            let mut scanner = MarkerScanner::with_views(TOKEN, views);
            let mut seen = None;
            let mut max = 0;
            for chunk in data.chunks(4096) {
                seen = scanner.feed(chunk);
                max = max.max(scanner.retained_bytes());
            }
            let seen = seen.or_else(|| scanner.flush());
            assert!(seen.is_some(), "{views:?} after {opener:?}");
            assert!(max < 512 * 1024, "{max}");
        }
    }
}

/// Pieces that exercise the flattened view's skipping: token fragments, escape
/// sequences, whitespace, UTF-8, box drawing, controls, stray bytes.
fn piece() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(b"WEFT_DONE_0123456789abcdef".to_vec()),
        Just(b"WEFT_".to_vec()),
        Just(b"DONE_".to_vec()),
        Just(b"W".to_vec()),
        Just(b"WEFT_DONE_0123".to_vec()),
        Just(b"456789abcdef".to_vec()),
        Just(b"0123456789abcdef".to_vec()),
        Just(b"\x1b[1m".to_vec()),
        Just(b"\x1b[38;5;208m".to_vec()),
        Just(b"\x1b]0;W title\x07".to_vec()),
        Just(b"\x1b]8;;http://x\x1b\\".to_vec()),
        Just(b"\x1b".to_vec()),
        Just(b"\x1b[".to_vec()),
        Just(b"\x1b(B".to_vec()),
        Just(b"\x1bW".to_vec()),
        Just(b" ".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\t".to_vec()),
        Just("│".as_bytes().to_vec()),
        Just("é".as_bytes().to_vec()),
        Just("\u{200b}".as_bytes().to_vec()),
        Just("╭──╮ ▌ \u{a0}\u{3000}\u{feff}\u{85}".as_bytes().to_vec()),
        Just("日本語 e\u{301}".as_bytes().to_vec()),
        Just(b"\xe0\x80\x80\xed\xa0\x80\xf4\x90\x80\x80\xc0\xaf".to_vec()),
        Just(b"\xe2\x94".to_vec()),
        Just(b"\xe2".to_vec()),
        Just(b"\x07".to_vec()),
        Just(b"\x00".to_vec()),
        // Over-long sequences, abandoned after their bound (the W's inside are candidates
        // the flattened view must not take for text until then).
        Just([&b"\x1b]0;"[..], &[b'W'; 4100][..]].concat()),
        Just([&b"\x1b["[..], &[b'1'; 70][..], b"W"].concat()),
        "[a-zA-Z_ ]{0,12}".prop_map(String::into_bytes),
        proptest::collection::vec(any::<u8>(), 0..8),
    ]
}

/// Sorted split points within `len`.
fn splits(len: usize, points: &[usize]) -> Vec<usize> {
    let mut cuts: Vec<usize> = points.iter().map(|p| p % (len + 1)).collect();
    cuts.sort_unstable();
    cuts
}

fn feed_split(token: &str, views: Views, bytes: &[u8], cuts: &[usize]) -> Option<View> {
    let mut scanner = MarkerScanner::with_views(token, views);
    let mut at = 0;
    for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
        scanner.feed(&bytes[at..cut]);
        at = cut;
    }
    scanner.flush()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// The streaming linear views agree with flattening the whole input at once, for any
    /// input and any chunking.
    #[test]
    fn linear_views_agree_with_the_reference(
        pieces in proptest::collection::vec(piece(), 0..40),
        points in proptest::collection::vec(any::<usize>(), 0..6),
    ) {
        let bytes: Vec<u8> = pieces.concat();
        let cuts = splits(bytes.len(), &points);
        let expected = reference(&bytes, TOKEN);
        // Whole, the views answer in order; split, a later chunk may hold the raw marker
        // after an earlier one completed the flattened one.
        prop_assert_eq!(feed_split(TOKEN, Views::LINEAR, &bytes, &[]), expected);
        prop_assert_eq!(
            feed_split(TOKEN, Views::LINEAR, &bytes, &cuts).is_some(),
            expected.is_some()
        );
        let flat_only = feed_split(TOKEN, FLAT, &bytes, &cuts);
        let flat_expected = memmem::find(&naive_flatten(&bytes), TOKEN.as_bytes()).is_some();
        prop_assert_eq!(flat_only.is_some(), flat_expected);
        let text = String::from_utf8_lossy(&bytes);
        prop_assert_eq!(
            text_contains_marker(&text, TOKEN).is_some(),
            reference(text.as_bytes(), TOKEN).is_some()
        );
    }

    /// A marker, possibly cut by escape sequences and whitespace, inside random noise and
    /// split anywhere, is always found.
    #[test]
    fn marker_in_noise_is_found_in_every_split(
        before in proptest::collection::vec(piece(), 0..20),
        after in proptest::collection::vec(piece(), 0..20),
        cut_at in 0usize..TOKEN.len(),
        filler in prop_oneof![
            Just(&b""[..]), Just(&b"\x1b[0m"[..]), Just(&b"\n"[..]), Just(&b" "[..]),
            Just(&b"\x1b]0;x\x07"[..]), Just("│".as_bytes()),
        ],
        points in proptest::collection::vec(any::<usize>(), 0..6),
    ) {
        let mut bytes = before.concat();
        // An unfinished escape sequence in the noise would swallow the marker's start:
        // end any with a harmless final byte first.
        bytes.extend_from_slice(b"\x07\x1b\\m ");
        bytes.extend_from_slice(&TOKEN.as_bytes()[..cut_at]);
        bytes.extend_from_slice(filler);
        bytes.extend_from_slice(&TOKEN.as_bytes()[cut_at..]);
        bytes.extend_from_slice(&after.concat());
        let cuts = splits(bytes.len(), &points);
        prop_assert!(feed_split(TOKEN, Views::LINEAR, &bytes, &cuts).is_some());
        prop_assert!(feed_split(TOKEN, FLAT, &bytes, &cuts).is_some());
    }

    /// The implementation's flattening (fast paths, UTF-8 shortcuts) is the naive one.
    #[test]
    fn flatten_matches_the_naive_rules(pieces in proptest::collection::vec(piece(), 0..60)) {
        let bytes: Vec<u8> = pieces.concat();
        prop_assert_eq!(flatten(&bytes), naive_flatten(&bytes));
    }

    /// Noise never yields another token's marker.
    #[test]
    fn other_token_never_found(
        pieces in proptest::collection::vec(piece(), 0..40),
        points in proptest::collection::vec(any::<usize>(), 0..6),
    ) {
        let bytes: Vec<u8> = pieces.concat();
        let cuts = splits(bytes.len(), &points);
        prop_assert_eq!(feed_split(OTHER, Views::ALL, &bytes, &cuts), None);
    }
}

proptest! {
    // Each case builds a terminal emulator: fewer cases.
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A painted marker is found whatever the chunking.
    #[test]
    fn painted_marker_found_in_any_chunking(
        row in 1u16..50,
        col in 1u16..200,
        points in proptest::collection::vec(any::<usize>(), 0..8),
    ) {
        let bytes = format!(
            "\x1b[{row};{}H456789abcdef\x1b[{row};{col}HWEFT_DONE_0123\x1b[1;1H",
            col + 14
        );
        let cuts = splits(bytes.len(), &points);
        prop_assert_eq!(feed_split(TOKEN, Views::ALL, bytes.as_bytes(), &cuts), Some(View::Rendered));
    }
}

// ---------------------------------------------------------------------------------------
// Defused text (weft-core's `defuse`, what a task is handed of another task's output)
// against every view here.

/// Every character a scan reads past, from weft-core's one definition.
fn ignorable_chars() -> Vec<char> {
    (0..=0xFFFF)
        .filter_map(char::from_u32)
        .filter(|c| is_ignorable(*c))
        .collect()
}

/// What may be inserted into a token: a character a scan reads past, any character at
/// all, whitespace, or an escape sequence or control that a stripped view drops and a
/// terminal interprets (colours, titles, hyperlinks, charsets, erasing, cursor moves and
/// overwrites, saved cursors, openers left unterminated).
fn inserted() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(ignorable_chars()).prop_map(String::from),
        1 => any::<char>().prop_map(String::from),
        1 => prop::sample::select(vec![" ", "\n", "\r\n", "\t", "\u{a0}", "\u{3000}"])
            .prop_map(str::to_owned),
        3 => prop::sample::select(vec![
            "\x1b[0m", "\x1b[1;32m", "\x1b[38;5;208m", "\x1b]0;title\x07",
            "\x1b]8;;http://x\x1b\\", "\x1b(B", "\x1b#8", "\x1b[2K", "\x1b[3C", "\x1b[2D",
            "\x1b[5;10H", "\x1b[1G", "\x1b[1@", "\x1b[1P", "\x1b7", "\x1b8", "\x1bM", "\r",
            "\x08", "\x07", "\x00", "\u{9b}1m", "\x1b", "\x1b[", "\x1b]", "\u{9b}", "\x1bP",
            "\x1b_", "\x1b\\", "\x18", "\x1bc", "\x1b[2J", "\x1b[r", "\x1b[?25l",
        ])
        .prop_map(str::to_owned),
    ]
}

/// `token` with up to three insertions after each of its characters but the last.
fn spliced(token: &'static str) -> impl Strategy<Value = String> {
    let gaps = token.chars().count() - 1;
    prop::collection::vec(
        prop_oneof![4 => Just(Vec::new()), 1 => prop::collection::vec(inserted(), 1..4)],
        gaps,
    )
    .prop_map(move |gaps| {
        let mut out = String::new();
        for (n, c) in token.chars().enumerate() {
            out.push(c);
            if let Some(gap) = gaps.get(n) {
                out.extend(gap.iter().map(String::as_str));
            }
        }
        out
    })
}

/// Text around the tokens: prose, code, other escapes, anything.
fn surrounding() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 ,.:()\n-]{0,24}",
        "\\PC{0,12}",
        inserted(),
        Just(String::new()),
    ]
}

proptest! {
    // Each case builds a terminal emulator for the rendered view.
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// However a marker is spliced with what scans read past (the ignorable characters,
    /// escape sequences, whitespace, controls, cursor moves) and whatever surrounds it,
    /// once defused no view finds it: not raw, not flattened, not rendered, fed whole or in
    /// two chunks; and the flattened view holds no live prefix at all.
    #[test]
    fn defused_text_never_matches_the_marker_in_any_view(
        before in surrounding(),
        first in spliced(TOKEN),
        between in surrounding(),
        second in prop_oneof![Just(String::new()), spliced(TOKEN)],
        after in surrounding(),
        cut in any::<usize>(),
    ) {
        let text = format!("{before}{first}{between}{second}{after}");
        let defused = weft_core::defuse(&text);
        let bytes = defused.as_bytes();
        prop_assert_eq!(
            scan_chunks(TOKEN, Views::ALL, &[bytes]), None,
            "{:?} defused to {:?}", text, defused
        );
        let cut = cut % (bytes.len() + 1);
        prop_assert_eq!(
            scan_chunks(TOKEN, Views::ALL, &[&bytes[..cut], &bytes[cut..]]), None,
            "{:?} defused to {:?}, cut at {}", text, defused, cut
        );
        prop_assert_eq!(text_contains_marker(&defused, TOKEN), None);
        prop_assert!(
            memmem::find(&flatten(bytes), b"WEFT_DONE_").is_none(),
            "{:?} defused to {:?}", text, defused
        );
    }

    /// The same splicing without defusing is found, so the test above is not vacuous: a
    /// token spliced only with what scans read past matches in the flattened view (ESC
    /// aside, which starts a sequence that swallows the character after it).
    #[test]
    fn a_token_spliced_with_ignorable_characters_is_found(
        chars in prop::collection::vec(
            prop::sample::select(ignorable_chars()).prop_filter("not ESC", |&c| c != '\u{1b}'),
            25,
        ),
    ) {
        let mut text = String::new();
        for (c, inserted) in TOKEN.chars().zip(chars.iter().chain(std::iter::once(&'x'))) {
            text.push(c);
            if c != 'f' {
                text.push(*inserted);
            }
        }
        prop_assert!(scan_chunks(TOKEN, FLAT, &[text.as_bytes()]).is_some(), "{:?}", text);
        let defused = weft_core::defuse(&text);
        prop_assert_eq!(scan_chunks(TOKEN, Views::ALL, &[defused.as_bytes()]), None);
    }
}
