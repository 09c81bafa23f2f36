//! Program transforms that run once, at compile time, before the evaluator plans the
//! program: they change how a program is laid out, never what it computes.

mod inline;

pub use inline::inline_calls;
