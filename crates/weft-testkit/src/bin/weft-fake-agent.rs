//! The fake coding agent for weft's tests; see `weft_testkit::fake`.

fn main() {
    std::process::exit(weft_testkit::fake::main());
}
