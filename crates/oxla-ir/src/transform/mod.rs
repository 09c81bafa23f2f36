//! Program transforms that run once, at compile time, before the evaluator plans the
//! program. Inlining changes how a program is laid out, never what it computes; the
//! division rewrites change how divisions round, to XLA's way.

mod division;
mod inline;

pub use division::rewrite_divisions;
pub use inline::inline_calls;
