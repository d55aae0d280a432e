//! Ctrl-C and SIGTERM for commands that run agents: the first signal raises a flag the
//! engine and the planner watch (they stop their agents' process groups and save what they
//! have); a second one ends weft at once with the conventional status.

use std::sync::OnceLock;

use signal_hook::consts::{SIGINT, SIGTERM};
use signal_hook::flag;
use weft_engine::Interrupt;

/// The process's interrupt flag, with the handlers installed on first use.
pub fn install() -> Interrupt {
    static FLAG: OnceLock<Interrupt> = OnceLock::new();
    FLAG.get_or_init(|| {
        let interrupt = Interrupt::new();
        for (signal, status) in [(SIGINT, 130), (SIGTERM, 143)] {
            // Order matters: the exit check runs before the flag is set, so only a second
            // signal ends the process.
            let _ = flag::register_conditional_shutdown(signal, status, interrupt.flag());
            let _ = flag::register(signal, interrupt.flag());
        }
        interrupt
    })
    .clone()
}
