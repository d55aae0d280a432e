//! A helper thread that starts at once, on another CPU than the thread that spawns it:
//! what the split read of a large outline runs its second reader on (`rows::load_outline`),
//! and what a caller that splits other work in two can use too ([`spawn`]).
//!
//! Why: a helper is only worth its start-up when it runs while the caller does, and the
//! kernel does not always let it. On the 2-vCPU virtual machine weft was measured on in
//! 2026-12 (CI's machines have 2 cores too), the scheduler packs threads onto as few vCPUs
//! as it can: a new thread was
//! queued on its parent's CPU and ran only when the load balancer moved it, 0.1 to 4 ms
//! later (up to a scheduler tick), or shared that CPU with its parent meanwhile. The split
//! read of a 10,000-task outline, 4.0–4.2 ms when the helper ran at once, took 4.3–7.6 ms
//! (median ~5.5 ms), and `weft status` varied by as much.
//!
//! How: a thread inherits its parent's CPU affinity, and narrowing a running thread's
//! affinity to CPUs it is not on moves it at once. So the caller narrows its own affinity
//! to every CPU it may use but the first of them (it moves off that one if it was on it),
//! spawns the helper (which keeps that mask, and so never runs on the first CPU), then
//! moves itself to the first CPU and restores its own affinity exactly as it was. ~70 µs
//! in all. The first CPU rather than the one the caller is on: asking which one that is
//! (`sched_getcpu`, through the vDSO) crashed under valgrind, which profiles weft. The
//! helper's narrower mask lasts as long as the helper, which is why this is for
//! short-lived helpers only.
//!
//! Contract: best effort, never an error. When the caller may run on one CPU only, when
//! the affinity cannot be read or set, or on a system without affinity (not Linux), the
//! helper is spawned as any scoped thread is. Before [`spawn`] returns, the caller's
//! affinity is set back to what it was (a mask the kernel accepted a moment before), and
//! the caller is left on the first CPU, free to move on.

use std::thread::{Scope, ScopedJoinHandle};

/// Spawn `work` in `scope` on a thread that starts at once on another CPU than the caller
/// when the caller may use more than one (see the module docs).
pub fn spawn<'scope, 'env, T: Send + 'scope>(
    scope: &'scope Scope<'scope, 'env>,
    work: impl FnOnce() -> T + Send + 'scope,
) -> ScopedJoinHandle<'scope, T> {
    let moved = Moved::elsewhere();
    let helper = scope.spawn(work);
    drop(moved);
    helper
}

/// Run `first` on a helper spawned as [`spawn`] does and `second` on the caller, and
/// return when both have: the fork and join a caller that splits work in two hands to
/// weft-core (which starts no threads), as `weft plan --file` does to parse a large
/// workflow file in two halves. A panic of either is raised on the caller once both have
/// ended.
pub fn join(first: &mut (dyn FnMut() + Send), second: &mut dyn FnMut()) {
    std::thread::scope(|scope| {
        let helper = spawn(scope, first);
        second();
        if let Err(panic) = helper.join() {
            std::panic::resume_unwind(panic);
        }
    });
}

/// The caller moved off the first CPU it may use; dropping it moves the caller there and
/// restores its affinity.
struct Moved {
    #[cfg(target_os = "linux")]
    back: Option<(usize, rustix::thread::CpuSet)>,
}

#[cfg(target_os = "linux")]
impl Moved {
    fn elsewhere() -> Moved {
        use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};
        let back = (|| {
            let original = sched_getaffinity(None).ok()?;
            if original.count() < 2 {
                return None;
            }
            let first = (0..CpuSet::MAX_CPU).find(|&cpu| original.is_set(cpu))?;
            let mut others = original;
            others.unset(first);
            sched_setaffinity(None, &others).ok()?;
            Some((first, original))
        })();
        Moved { back }
    }
}

#[cfg(target_os = "linux")]
impl Drop for Moved {
    fn drop(&mut self) {
        use rustix::thread::{CpuSet, sched_setaffinity};
        if let Some((first, original)) = self.back.take() {
            // To the first CPU, where the helper may not run (restoring the mask alone
            // could leave the caller where the helper is), then its own mask as it was.
            let mut only_first = CpuSet::new();
            only_first.set(first);
            let _ = sched_setaffinity(None, &only_first);
            let _ = sched_setaffinity(None, &original);
        }
    }
}

#[cfg(not(target_os = "linux"))]
impl Moved {
    fn elsewhere() -> Moved {
        Moved {}
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use rustix::thread::{CpuSet, sched_getaffinity, sched_getcpu, sched_setaffinity};

    fn cpus(set: &CpuSet) -> Vec<usize> {
        (0..CpuSet::MAX_CPU)
            .filter(|&cpu| set.is_set(cpu))
            .collect()
    }

    /// Each test runs on a thread of its own, whose affinity it may change freely.
    fn on_own_thread<T: Send>(test: impl FnOnce() -> T + Send) -> T {
        std::thread::scope(|scope| scope.spawn(test).join().unwrap())
    }

    #[test]
    fn the_helper_never_shares_the_callers_cpu_and_the_caller_keeps_its_affinity() {
        on_own_thread(|| {
            let original = sched_getaffinity(None).unwrap();
            // CI and every machine weft is measured on have two CPUs or more; with one, the
            // helper is an ordinary thread (the next test).
            if original.count() < 2 {
                return;
            }
            let first = cpus(&original)[0];
            let mut caller_on_first = 0;
            for _ in 0..20 {
                let (caller_cpu, helper_cpus, helper_ran_on) = std::thread::scope(|scope| {
                    let helper = spawn(scope, || {
                        (cpus(&sched_getaffinity(None).unwrap()), sched_getcpu())
                    });
                    let caller_cpu = sched_getcpu();
                    let (helper_cpus, ran_on) = helper.join().unwrap();
                    (caller_cpu, helper_cpus, ran_on)
                });
                // Where it was moved to; the scheduler may move it on at once, but rarely.
                caller_on_first += usize::from(caller_cpu == first);
                let mut expected = cpus(&original);
                expected.retain(|&cpu| cpu != first);
                assert_eq!(helper_cpus, expected, "every CPU but the first");
                assert_ne!(helper_ran_on, first);
                assert_eq!(
                    cpus(&sched_getaffinity(None).unwrap()),
                    cpus(&original),
                    "the caller's affinity is as it was"
                );
            }
            assert!(
                caller_on_first >= 15,
                "the caller was moved to the first CPU: {caller_on_first} of 20"
            );
        });
    }

    #[test]
    fn join_runs_both_halves_the_first_on_a_helper_and_raises_its_panic() {
        let caller = std::thread::current().id();
        let (mut first_on, mut second_on) = (None, None);
        join(
            &mut || first_on = Some(std::thread::current().id()),
            &mut || second_on = Some(std::thread::current().id()),
        );
        assert_eq!(second_on, Some(caller));
        assert!(first_on.is_some_and(|id| id != caller), "{first_on:?}");

        let mut second_ran = false;
        let raised = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            join(&mut || panic!("the first half"), &mut || second_ran = true);
        }));
        let message = raised.unwrap_err();
        assert_eq!(message.downcast_ref::<&str>(), Some(&"the first half"));
        assert!(second_ran);
    }

    #[test]
    fn a_caller_on_one_cpu_spawns_its_helper_as_any_thread() {
        on_own_thread(|| {
            let here = sched_getcpu();
            let mut one = CpuSet::new();
            one.set(here);
            sched_setaffinity(None, &one).unwrap();
            let helper_cpus = std::thread::scope(|scope| {
                spawn(scope, || cpus(&sched_getaffinity(None).unwrap()))
                    .join()
                    .unwrap()
            });
            assert_eq!(helper_cpus, vec![here], "it inherits the caller's one CPU");
            assert_eq!(cpus(&sched_getaffinity(None).unwrap()), vec![here]);
        });
    }
}
