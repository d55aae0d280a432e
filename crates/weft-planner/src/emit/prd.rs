//! The PRD block a planner may write in any reply:
//! `<!-- WEFT_PRD_START slug="feature-slug" -->` markdown `<!-- WEFT_PRD_END -->`.
//!
//! The slug becomes a directory name, so it is sanitised here to a single safe path
//! component whatever the model wrote.

use std::sync::LazyLock;

use regex::Regex;

/// The opening marker as the prompt teaches it; the slug attribute follows.
pub const PRD_START: &str = "<!-- WEFT_PRD_START";
/// The closing marker.
pub const PRD_END: &str = "<!-- WEFT_PRD_END -->";

/// Longest slug kept.
const MAX_SLUG_LEN: usize = 80;

/// Used when neither the block nor the caller gives a usable slug.
const LAST_RESORT_SLUG: &str = "prd";

static START: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?s)<!--\s*WEFT_PRD_START\b(.*?)-->").expect("the PRD start pattern is valid")
});
static END: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"<!--\s*WEFT_PRD_END\s*-->").expect("the PRD end pattern is valid")
});
static SLUG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"slug\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"']+))"#)
        .expect("the slug pattern is valid")
});

/// A PRD the planner wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prd {
    /// Safe as one path component: `[a-z0-9_-]`, 1 to 80 characters.
    pub slug: String,
    /// Trimmed, with one trailing newline.
    pub markdown: String,
}

/// One complete block: its byte range in the text, the start marker's attributes and body.
#[derive(Debug)]
struct Block<'a> {
    start: usize,
    end: usize,
    attributes: &'a str,
    body: &'a str,
}

fn block_from(text: &str, from: usize) -> Option<Block<'_>> {
    let start = START.captures_at(text, from)?;
    let whole = start.get(0)?;
    let attributes = start.get(1).map_or("", |m| m.as_str());
    let end = END.find_at(text, whole.end())?;
    Some(Block {
        start: whole.start(),
        end: end.end(),
        attributes,
        body: &text[whole.end()..end.start()],
    })
}

/// The first complete PRD block, with its slug sanitised (`fallback_slug` when the block
/// has none usable). `None` when there is no block, it is unclosed ([`prd_unclosed`] tells
/// that apart) or it is empty.
pub fn extract_prd(text: &str, fallback_slug: &str) -> Option<Prd> {
    let block = block_from(text, 0)?;
    let markdown = block.body.trim();
    if markdown.is_empty() {
        return None;
    }
    let written = SLUG
        .captures(block.attributes)
        .and_then(|c| c.get(1).or_else(|| c.get(2)).or_else(|| c.get(3)))
        .map_or("", |m| m.as_str());
    let mut slug = sanitize_slug(written);
    if slug.is_empty() {
        slug = sanitize_slug(fallback_slug);
    }
    if slug.is_empty() {
        slug = LAST_RESORT_SLUG.to_owned();
    }
    Some(Prd {
        slug,
        markdown: format!("{markdown}\n"),
    })
}

/// Whether the reply opens a PRD block it never closes (the model was cut off, or forgot
/// the end marker): the caller should say the PRD was not saved.
pub fn prd_unclosed(text: &str) -> bool {
    let Some(opened) = text.find("WEFT_PRD_START") else {
        return false;
    };
    let marker_start = text[..opened].rfind("<!--").unwrap_or(opened);
    block_from(text, marker_start).is_none()
}

/// The reply without its complete PRD blocks, for display.
pub fn strip_prd(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut from = 0;
    while let Some(block) = block_from(text, from) {
        join(&mut out, &text[from..block.start]);
        from = block.end;
    }
    join(&mut out, &text[from..]);
    out.trim().to_owned()
}

/// Append a piece, leaving one blank line where a block was cut out.
fn join(out: &mut String, piece: &str) {
    if out.trim().is_empty() {
        out.clear();
        out.push_str(piece.trim_start());
    } else if !piece.trim().is_empty() {
        let kept = out.trim_end().len();
        out.truncate(kept);
        out.push_str("\n\n");
        out.push_str(piece.trim_start());
    }
}

/// Lowercase ASCII letters, digits, `-` and `_`; anything else becomes a hyphen, runs of
/// hyphens collapse, separators are trimmed from both ends, at most 80 characters. Never
/// `.`, `..` or a path separator; may be empty.
pub fn sanitize_slug(raw: &str) -> String {
    let mut slug = String::with_capacity(raw.len().min(MAX_SLUG_LEN));
    for c in raw.chars() {
        let c = c.to_ascii_lowercase();
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' {
            c
        } else {
            '-'
        };
        if c == '-' && slug.ends_with('-') {
            continue;
        }
        slug.push(c);
        if slug.len() > MAX_SLUG_LEN {
            break;
        }
    }
    slug.truncate(MAX_SLUG_LEN);
    slug.trim_matches(['-', '_']).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_single_safe_components() {
        assert_eq!(sanitize_slug("../etc"), "etc");
        assert_eq!(sanitize_slug("Rate Limiting!!"), "rate-limiting");
        assert_eq!(sanitize_slug("a/b\\c"), "a-b-c");
        assert_eq!(sanitize_slug(".."), "");
        assert_eq!(sanitize_slug("snake_case--x"), "snake_case-x");
        assert_eq!(sanitize_slug(&"x".repeat(200)).len(), MAX_SLUG_LEN);
        let long = sanitize_slug(&format!("{}-{}", "a".repeat(79), "b".repeat(10)));
        assert_eq!(long, "a".repeat(79));
    }

    #[test]
    fn markers_match_the_constants() {
        let text = format!("{PRD_START} slug=\"x\" -->\nbody\n{PRD_END}");
        assert_eq!(extract_prd(&text, "f").unwrap().slug, "x");
    }
}
