//! Ids and branch-name pieces derived from titles.

use foldhash::{HashMap, HashSet};

/// Longest slug weft derives from a title.
pub const MAX_SLUG_LEN: usize = 40;

/// Lowercase ASCII letters and digits joined by single hyphens, at most 40 characters.
/// A title with nothing usable gives `"task"`; an all-digit slug is prefixed with `task-`
/// so it never reads as an order number.
pub fn slugify(title: &str) -> String {
    let mut slug = String::with_capacity(title.len().min(MAX_SLUG_LEN));
    let mut pending_hyphen = false;
    for c in title.chars() {
        if c.is_ascii_alphanumeric() {
            if pending_hyphen && !slug.is_empty() {
                slug.push('-');
            }
            pending_hyphen = false;
            slug.push(c.to_ascii_lowercase());
        } else {
            pending_hyphen = true;
        }
        if slug.len() >= MAX_SLUG_LEN {
            break;
        }
    }
    slug.truncate(MAX_SLUG_LEN);
    while slug.ends_with('-') {
        slug.pop();
    }
    if slug.is_empty() {
        return "task".to_owned();
    }
    if slug.bytes().all(|b| b.is_ascii_digit()) {
        slug.insert_str(0, "task-");
        slug.truncate(MAX_SLUG_LEN);
    }
    slug
}

/// `base`, or `base-2`, `base-3`, ... : the first one `taken` says is free.
pub fn unique_id(base: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(base) {
        return base.to_owned();
    }
    (2u32..)
        .map(|n| format!("{base}-{n}"))
        .find(|candidate| !taken(candidate))
        .unwrap_or_else(|| base.to_owned())
}

/// Derives the ids of many new tasks at once (a workflow file's tasks without an id): each
/// id is exactly what [`unique_id`] gives for the slug of its title, against the ids fixed
/// beforehand and every id derived before it.
///
/// Why not call [`unique_id`] in a loop: a title repeated k times would try `base`,
/// `base-2`, … `base-k` for its k-th copy, O(k²) in all (100,000 tasks titled "Test" is
/// 5·10⁹ lookups). Here the next suffix to try is kept per slug. That gives the same ids:
/// every smaller suffix was taken when it was tried, and the taken set only grows.
#[derive(Debug, Default)]
pub struct IdDeriver<'a> {
    fixed: HashSet<&'a str>,
    derived: HashSet<String>,
    next_suffix: HashMap<String, u64>,
}

impl<'a> IdDeriver<'a> {
    /// `fixed`: ids already in use (the explicit ids of the file).
    pub fn new(fixed: impl IntoIterator<Item = &'a str>) -> Self {
        // Sized for the most ids the iterator may give (a file's explicit ids are a
        // filter of its tasks, whose lower bound is 0): growing a set of 100,000 ids
        // rehashed it seventeen times.
        let fixed = fixed.into_iter();
        let mut set = HashSet::with_capacity_and_hasher(
            fixed.size_hint().1.unwrap_or(0).min(1 << 20),
            Default::default(),
        );
        set.extend(fixed);
        IdDeriver {
            fixed: set,
            ..IdDeriver::default()
        }
    }

    fn taken(&self, candidate: &str) -> bool {
        self.fixed.contains(candidate) || self.derived.contains(candidate)
    }

    /// The id for a new task titled `title`; it counts as taken from now on.
    pub fn derive(&mut self, title: &str) -> String {
        let base = slugify(title);
        let id = if self.taken(&base) {
            let mut suffix = self.next_suffix.get(&base).copied().unwrap_or(2);
            let id = loop {
                let candidate = format!("{base}-{suffix}");
                if !self.taken(&candidate) {
                    break candidate;
                }
                suffix += 1;
            };
            self.next_suffix.insert(base, suffix + 1);
            id
        } else {
            base
        };
        self.derived.insert(id.clone());
        id
    }
}

/// Why an id is not acceptable, if it is not.
pub fn id_problem(id: &str) -> Option<&'static str> {
    if id.is_empty() {
        return Some("it is empty");
    }
    if id.len() > 100 {
        return Some("it is longer than 100 characters");
    }
    if id.bytes().all(|b| b.is_ascii_digit()) {
        return Some("it is all digits, which reads as an order number");
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Some("only ASCII letters, digits, '-', '_' and '.' are allowed");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_lowercase_hyphenated_and_bounded() {
        assert_eq!(
            slugify("Add a token-bucket limiter!"),
            "add-a-token-bucket-limiter"
        );
        assert_eq!(slugify("  --Ünïcode  Title--  "), "n-code-title");
        assert_eq!(slugify("!!!"), "task");
        assert_eq!(slugify("2024"), "task-2024");
        let long = slugify(&"word ".repeat(30));
        assert!(long.len() <= MAX_SLUG_LEN, "{long}");
        assert!(!long.ends_with('-'));
    }

    #[test]
    fn unique_ids_append_a_counter() {
        let taken = ["a", "a-2"];
        assert_eq!(unique_id("a", |c| taken.contains(&c)), "a-3");
        assert_eq!(unique_id("b", |c| taken.contains(&c)), "b");
    }

    #[test]
    fn id_rules() {
        assert!(id_problem("limiter").is_none());
        assert!(id_problem("task-1.2_x").is_none());
        assert!(id_problem("").is_some());
        assert!(id_problem("12").is_some());
        assert!(id_problem("has space").is_some());
        assert!(id_problem("#3").is_some());
    }
}
