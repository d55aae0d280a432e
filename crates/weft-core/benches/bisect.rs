//! Bisect's verify count: for batches of 4, 8, 16 and 32 landings with one culprit, at
//! every position, how many verifications `weft_core::bisect` needs to name it (after the
//! red run and its repeat, which every failed verification costs), against the bound
//! ⌈log2 N⌉.
//!
//! `cargo bench -p weft-core --bench bisect`

#![allow(clippy::print_stdout)]

use weft_core::bisect::{max_runs, search};

fn main() {
    println!(
        "bisect: verifications to name one culprit among N landings (beyond the red run and its repeat)"
    );
    println!(
        "{:>4}  {:>5}  {:>5}  {:>5}  {:>5}  per position (culprit 1..N)",
        "N", "bound", "min", "mean", "max"
    );
    for n in [4usize, 8, 16, 32] {
        let counts: Vec<usize> = (1..=n)
            .map(|culprit| {
                let (found, verified) = search(n, |tip| tip < culprit);
                assert_eq!(found, culprit);
                verified.len()
            })
            .collect();
        let min = counts.iter().min().copied().unwrap_or(0);
        let max = counts.iter().max().copied().unwrap_or(0);
        let mean = counts.iter().sum::<usize>() as f64 / n as f64;
        assert!(max as u32 <= max_runs(n));
        let per: Vec<String> = counts.iter().map(usize::to_string).collect();
        println!(
            "{n:>4}  {:>5}  {min:>5}  {mean:>5.2}  {max:>5}  {}",
            max_runs(n),
            per.join(" ")
        );
    }
    let start = std::time::Instant::now();
    let mut steps = 0usize;
    for _ in 0..10_000 {
        for culprit in 1..=32 {
            steps += search(32, |tip| tip < culprit).1.len() + 1;
        }
    }
    let elapsed = start.elapsed();
    println!(
        "deciding a step: {:.0} ns ({steps} steps in {:.1} ms)",
        elapsed.as_nanos() as f64 / steps as f64,
        elapsed.as_secs_f64() * 1e3
    );
}
