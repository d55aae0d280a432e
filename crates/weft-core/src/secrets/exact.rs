//! Known secret values and their base64 forms, found with one Aho-Corasick automaton.

use super::MIN_BASE64_SECRET_LEN;
use super::finder::Finder;
use super::shapes::{Repl, Span};

/// The patterns for a set of known values.
#[derive(Debug, Default)]
pub(super) struct Exact {
    /// Longest first; never empty when `finder` is set.
    patterns: Vec<Vec<u8>>,
    finder: Option<Finder>,
    values: usize,
}

impl Exact {
    /// `values` are prepared (long enough, deduplicated).
    pub(super) fn new(values: &[String]) -> Self {
        let mut patterns: Vec<Vec<u8>> = Vec::new();
        for value in values {
            patterns.push(value.as_bytes().to_vec());
            if value.len() >= MIN_BASE64_SECRET_LEN {
                patterns.extend(base64_forms(value.as_bytes()));
            }
        }
        patterns.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        patterns.dedup();
        let finder = (!patterns.is_empty()).then(|| Finder::new(&patterns, true));
        Self {
            patterns,
            finder,
            values: values.len(),
        }
    }

    pub(super) fn values(&self) -> usize {
        self.values
    }

    /// The longest pattern's length.
    pub(super) fn longest(&self) -> usize {
        self.patterns.first().map_or(0, Vec::len)
    }

    /// Every occurrence starting at or after `from`, overlapping ones included.
    pub(super) fn find(&self, buf: &[u8], from: usize, out: &mut Vec<Span>) {
        let Some(finder) = &self.finder else {
            return;
        };
        let mut from = from;
        while let Some((_, start, end)) = finder.find(buf, from) {
            // Overlapping occurrences too (`abcd` and `bcdefg` in `abcdefg`): masks are
            // merged, and no part of a secret may stay visible.
            from = start + 1;
            out.push(Span {
                start,
                end,
                repl: Repl::Mask,
                // Not found by the shape scan.
                trigger: usize::MAX,
            });
        }
    }

    /// Where the longest suffix of `buf` that is a proper prefix of a pattern starts
    /// (`buf.len()` when there is none): those bytes may become a secret.
    pub(super) fn hold(&self, buf: &[u8]) -> usize {
        let Some(&last) = buf.last() else {
            return 0;
        };
        let mut best = 0;
        for pattern in &self.patterns {
            let proper = &pattern[..pattern.len() - 1];
            // Candidate prefix lengths end on a byte equal to the buffer's last one.
            for j in memchr::memrchr_iter(last, proper) {
                let len = j + 1;
                if len <= best {
                    break;
                }
                if len <= buf.len() && buf.ends_with(&pattern[..len]) {
                    best = len;
                    break;
                }
            }
        }
        buf.len() - best
    }
}

const STANDARD: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64 of `data` without padding.
pub(crate) fn base64(data: &[u8], alphabet: &[u8; 64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(data.len().div_ceil(3) * 4);
    for group in data.chunks(3) {
        let b = [
            group[0],
            group.get(1).copied().unwrap_or(0),
            group.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = group.len() + 1;
        for i in 0..chars {
            out.push(alphabet[((n >> (18 - 6 * i)) & 63) as usize]);
        }
    }
    out
}

/// The characters of the base64 of `secret` that depend on the secret alone, for each of
/// the three alignments it can have inside longer data and both alphabets: with `k` bytes
/// before it in its first group, the first `ceil(8k/6)` characters mix in earlier bytes and
/// the characters after `floor(8(k+len)/6)` mix in later ones (or are padding).
pub(crate) fn base64_forms(secret: &[u8]) -> Vec<Vec<u8>> {
    let mut forms = Vec::with_capacity(6);
    for k in 0..3 {
        let mut data = vec![0u8; k];
        data.extend_from_slice(secret);
        let skip = (8 * k).div_ceil(6);
        let keep = 8 * (k + secret.len()) / 6;
        for alphabet in [STANDARD, URL_SAFE] {
            let encoded = base64(&data, alphabet);
            forms.push(encoded[skip..keep].to_vec());
        }
    }
    forms.sort();
    forms.dedup();
    forms
}

/// Base64 of `data` with padding, in the standard or URL-safe alphabet (for tests and
/// benchmarks that need an encoded secret).
pub fn encode_base64(data: &[u8], url_safe: bool) -> String {
    let mut out = base64(data, if url_safe { URL_SAFE } else { STANDARD });
    while !out.len().is_multiple_of(4) {
        out.push(b'=');
    }
    String::from_utf8(out).expect("base64 is ASCII")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_standard_encoding() {
        assert_eq!(encode_base64(b"", false), "");
        assert_eq!(encode_base64(b"f", false), "Zg==");
        assert_eq!(encode_base64(b"fo", false), "Zm8=");
        assert_eq!(encode_base64(b"foo", false), "Zm9v");
        assert_eq!(encode_base64(b"foobar", false), "Zm9vYmFy");
        assert_eq!(encode_base64(&[0xfb, 0xff], false), "+/8=");
        assert_eq!(encode_base64(&[0xfb, 0xff], true), "-_8=");
    }

    #[test]
    fn each_alignment_form_is_inside_the_encoding_of_longer_data() {
        let secret = b"hunter2-is-secret";
        let forms = base64_forms(secret);
        for before in 0..3 {
            for after in 0..3 {
                let mut data = vec![b'x'; before];
                data.extend_from_slice(secret);
                data.extend(std::iter::repeat_n(b'y', after));
                let encoded = encode_base64(&data, false);
                assert!(
                    forms
                        .iter()
                        .any(|f| encoded.as_bytes().windows(f.len()).any(|w| w == f)),
                    "{before} {after} {encoded}"
                );
            }
        }
    }

    #[test]
    fn the_held_suffix_is_the_longest_prefix_of_a_pattern() {
        let exact = Exact::new(&["abcabd-secret".to_owned()]);
        assert_eq!(exact.hold(b"xx abcab"), 3);
        assert_eq!(exact.hold(b"xx abc"), 3);
        assert_eq!(exact.hold(b"xx abd"), 6);
        assert_eq!(exact.hold(b""), 0);
    }
}
