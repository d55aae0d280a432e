//! Multi-literal search: Teddy (SIMD) where the CPU has it, else Aho-Corasick.
//!
//! Teddy verifies its candidates itself, which is several times faster than going through
//! the automaton on text as dense in triggers as agent logs (`token` on every usage line).

use aho_corasick::{AhoCorasick, Input, MatchKind, packed};

/// Finds the leftmost match of any of a few literals.
#[derive(Debug, Clone)]
pub(super) enum Finder {
    Packed(packed::Searcher),
    Automaton(AhoCorasick),
}

impl Finder {
    /// `longest`: leftmost-longest, else leftmost-first (earlier patterns win).
    pub(super) fn new<P: AsRef<[u8]>>(patterns: &[P], longest: bool) -> Self {
        let mut config = packed::Config::new();
        config.match_kind(if longest {
            packed::MatchKind::LeftmostLongest
        } else {
            packed::MatchKind::LeftmostFirst
        });
        if let Some(searcher) = config.builder().extend(patterns).build() {
            return Finder::Packed(searcher);
        }
        let automaton = AhoCorasick::builder()
            .match_kind(if longest {
                MatchKind::LeftmostLongest
            } else {
                MatchKind::LeftmostFirst
            })
            .build(patterns)
            .expect("literal patterns always build");
        Finder::Automaton(automaton)
    }

    /// The leftmost match starting at or after `from`: (pattern index, start, end).
    pub(super) fn find(&self, buf: &[u8], from: usize) -> Option<(usize, usize, usize)> {
        if from >= buf.len() {
            return None;
        }
        let m = match self {
            Finder::Packed(searcher) => {
                searcher.find_in(buf, aho_corasick::Span::from(from..buf.len()))
            }
            Finder::Automaton(automaton) => automaton.find(Input::new(buf).span(from..buf.len())),
        }?;
        Some((m.pattern().as_usize(), m.start(), m.end()))
    }
}
