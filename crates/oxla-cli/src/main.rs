//! The `oxla` command line.
fn main() {}
