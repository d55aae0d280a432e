//! The per-attempt supervisor on its own, for weft-agents' tests (the weft binary is the
//! supervisor in use: `weft __contain …`). See `weft_agents::contain`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    match args.next() {
        Some(first) if first == weft_agents::contain::SUPERVISOR_ARG => {
            weft_agents::contain::supervisor_main(args)
        }
        _ => {
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "usage: weft-supervisor {} [options] -- PROGRAM ARGS…",
                weft_agents::contain::SUPERVISOR_ARG
            );
            ExitCode::from(2)
        }
    }
}
