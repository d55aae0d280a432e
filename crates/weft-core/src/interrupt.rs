//! The user's "stop": a flag a front end raises (from its Ctrl-C handler) and long waits
//! in the engine and the planner look at, so they can end their agents and save state.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(Debug, Clone, Default)]
pub struct Interrupt(Arc<AtomicBool>);

impl Interrupt {
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// The flag itself, for a signal handler to set.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0)
    }

    pub fn raise(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    pub fn is_raised(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }

    /// Whether an optional interrupt was raised.
    pub fn raised(interrupt: Option<&Interrupt>) -> bool {
        interrupt.is_some_and(Interrupt::is_raised)
    }
}

/// Two handles are equal when they share one flag.
impl PartialEq for Interrupt {
    fn eq(&self, other: &Interrupt) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Interrupt {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_the_flag() {
        let a = Interrupt::new();
        let b = a.clone();
        assert!(!Interrupt::raised(Some(&b)));
        a.raise();
        assert!(b.is_raised());
        assert_eq!(a, b);
        assert_ne!(a, Interrupt::new());
        assert!(!Interrupt::raised(None));
    }
}
