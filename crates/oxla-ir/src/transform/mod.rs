//! Program transforms that run once, at compile time, before the evaluator plans the
//! program. Inlining changes how a program is laid out, never what it computes; the
//! division rewrites change how divisions round, to XLA's way; folding computes small
//! integer results on constants ahead of time, with the evaluator's own bits; the counter
//! rules narrow `jax.random`'s 64-bit counters by integer identities. `ApproxTopK` calls
//! become a sort and slices, which is how they run. Ops whose results nothing reads, and
//! whose running has no other effect, are removed. Transposes read only by a product become
//! part of the product's dimension numbers.

mod approx_top_k;
mod counters;
mod dead;
mod division;
mod dot_transposes;
mod fold;
mod inline;

pub use approx_top_k::{lower_approx_top_k, APPROX_TOP_K};
pub use counters::simplify_counters;
pub use dead::remove_dead_ops;
pub use division::rewrite_divisions;
pub use dot_transposes::fold_transposes_into_dots;
pub use fold::fold_integer_constants;
pub(crate) use inline::call_target;
pub use inline::inline_calls;
