//! Finding the landing that broke verification: which tip to verify next.
//!
//! Contract. The landings since the last green tip are numbered `1..=n`; tip `i` is the
//! integration tip right after landing `i`, tip `0` is the last green tip (it passed) and
//! tip `n` is the red one (it failed, twice). [`next_step`] is given the results so far
//! (each a tip and whether verification passed there) and answers either the tip to
//! verify next, or the culprit: the landing `k` whose tip failed while tip `k - 1` passed.
//!
//! - **Bound**: with results only from the tips it named, it names the culprit after at
//!   most [`max_runs`]`(n)` = ⌈log2 n⌉ verifications (a binary search between the
//!   highest passing tip below the lowest failing one, and that failing one). For
//!   `n = 1` it needs none: the one landing is the culprit.
//! - **Never** asks for tip `0` or tip `n` (their results are known), nor for a tip it
//!   already has a result for.
//! - **Whatever the results** (a flaky verification can make them contradict each
//!   other), it ends: the lowest failing tip `hi` (tip `n` if none lower failed) and the
//!   highest passing tip `lo` below it (tip `0` if none) close in on each other by at
//!   least half each step, and the culprit is `hi` once `hi = lo + 1`.
//!
//! Pure: the engine runs each verification and keeps the results; a crash loses them at
//! worst, and the search starts again from the same two known tips.

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Verify tip `i` (the tip right after landing `i`).
    Verify(usize),
    /// Landing `k` broke verification: tip `k` fails and tip `k - 1` passes.
    Culprit(usize),
}

/// The next step of the search among `n` landings (`n >= 1`) given `results`
/// (tip, passed). Results for tips outside `1..n` are ignored: tip 0 passed, tip `n`
/// failed.
pub fn next_step(n: usize, results: &[(usize, bool)]) -> Step {
    let n = n.max(1);
    let hi = results
        .iter()
        .filter(|&&(tip, passed)| !passed && tip > 0 && tip < n)
        .map(|&(tip, _)| tip)
        .min()
        .unwrap_or(n);
    let lo = results
        .iter()
        .filter(|&&(tip, passed)| passed && tip > 0 && tip < hi)
        .map(|&(tip, _)| tip)
        .max()
        .unwrap_or(0);
    if hi - lo <= 1 {
        Step::Culprit(hi)
    } else {
        Step::Verify(lo + (hi - lo) / 2)
    }
}

/// The most verifications [`next_step`] needs among `n` landings: ⌈log2 n⌉.
pub fn max_runs(n: usize) -> u32 {
    match n {
        0 | 1 => 0,
        n => usize::BITS - (n - 1).leading_zeros(),
    }
}

/// Run the whole search against `passes` (whether tip `i` passes): the culprit and the
/// tips verified, in order. For tests and benchmarks.
pub fn search(n: usize, mut passes: impl FnMut(usize) -> bool) -> (usize, Vec<usize>) {
    let mut results: Vec<(usize, bool)> = Vec::new();
    loop {
        match next_step(n, &results) {
            Step::Culprit(k) => return (k, results.iter().map(|&(t, _)| t).collect()),
            Step::Verify(tip) => results.push((tip, passes(tip))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_batch_of_8_with_the_5th_broken_takes_3_verifications() {
        let (culprit, verified) = search(8, |tip| tip < 5);
        assert_eq!(culprit, 5);
        assert_eq!(verified.len(), 3, "{verified:?}");
        assert_eq!(max_runs(8), 3);
    }

    #[test]
    fn one_landing_is_the_culprit_without_a_verification() {
        assert_eq!(next_step(1, &[]), Step::Culprit(1));
        assert_eq!(max_runs(1), 0);
    }

    #[test]
    fn max_runs_is_the_ceiling_of_log2() {
        let expected = [
            (2, 1),
            (3, 2),
            (4, 2),
            (5, 3),
            (8, 3),
            (9, 4),
            (16, 4),
            (32, 5),
        ];
        for (n, runs) in expected {
            assert_eq!(max_runs(n), runs, "n = {n}");
        }
    }

    proptest! {
        #[test]
        fn one_culprit_is_found_within_the_bound(n in 1usize..200, at in 0usize..200) {
            let culprit = 1 + at % n;
            let (found, verified) = search(n, |tip| tip < culprit);
            prop_assert_eq!(found, culprit);
            prop_assert!(verified.len() as u32 <= max_runs(n), "{} runs for n = {}", verified.len(), n);
        }

        #[test]
        fn any_results_end_within_the_bound_at_a_red_tip_after_a_green_one(
            n in 1usize..200,
            outcomes in proptest::collection::vec(any::<bool>(), 200),
        ) {
            let (found, verified) = search(n, |tip| outcomes[tip]);
            prop_assert!(verified.len() as u32 <= max_runs(n));
            prop_assert!((1..=n).contains(&found));
            // Never a known tip, never one twice.
            let mut seen = verified.clone();
            seen.sort_unstable();
            seen.dedup();
            prop_assert_eq!(seen.len(), verified.len());
            prop_assert!(verified.iter().all(|&t| t > 0 && t < n));
            // The culprit's tip failed (or is the red one) and the one before passed (or
            // is the green one).
            prop_assert!(found == n || verified.contains(&found) && !outcomes[found]);
            prop_assert!(found == 1 || verified.contains(&(found - 1)) && outcomes[found - 1]);
        }
    }
}
