//! Two f32 arithmetic instructions of a fused tile in one pass.
//!
//! A fused group runs each instruction over a whole tile, so each instruction stores its
//! tile and the next one loads it again; for cheap arithmetic (`(x - mean) * rstd * g + b`)
//! the stores, not the arithmetic, bound the speed. When an arithmetic instruction's result
//! is read only by the next one, also arithmetic, the two run as one loop that keeps the
//! intermediate value in a register: `second(first(a, b), c)`. Each loop is compiled for
//! one pair of operations ([`find_pairs`] marks the pairs once per kernel, [`run`] picks the
//! loop), and each operand is either a slice or one value for the whole tile.
//!
//! Every element goes through the same IEEE operations, with the same operand order, as
//! instruction by instruction, so a pair computes the same bits.

use super::elementwise::{max_op, min_op};
use super::fused::{BinaryKind, Inst};

/// Elements per step of a pair's loop: one AVX-512 vector, two AVX2 vectors.
const LANES: usize = 16;

/// An operand of a pair: a slice of the tile's length, or one value for every element.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Operand<'a> {
    Slice(&'a [f32]),
    Splat(f32),
}

/// How the second instruction reads the first one's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Feed {
    /// As its first operand: `second(t, c)`.
    First,
    /// As its second operand: `second(c, t)`.
    Second,
    /// As both operands: `second(t, t)` (a square, say).
    Both,
}

/// Per instruction of a kernel, whether it starts a pair with the next one: both are
/// `+ - * / max min`, the second reads the first one's register, and nothing else reads
/// that value (no later instruction before the register is written again, and no output
/// lives in it). Pairs do not overlap.
pub(crate) fn find_pairs(insts: &[(Inst, usize)], outputs: &[usize]) -> Vec<bool> {
    let arith =
        |inst: &Inst| matches!(inst, Inst::Binary(kind, ..) if BinaryKind::of(kind).is_some());
    let feeds_only_next = |k: usize| -> bool {
        let (_, r) = insts[k];
        let Some((next, _)) = insts.get(k + 1) else {
            return false;
        };
        if !next.sources().contains(&r) {
            return false;
        }
        for (inst, dst) in &insts[k + 2..] {
            if inst.sources().contains(&r) {
                return false;
            }
            if *dst == r {
                return true;
            }
        }
        !outputs.contains(&r)
    };
    let mut pairs = vec![false; insts.len()];
    let mut k = 0;
    while k + 1 < insts.len() {
        if arith(&insts[k].0) && arith(&insts[k + 1].0) && feeds_only_next(k) {
            pairs[k] = true;
            k += 2;
        } else {
            k += 1;
        }
    }
    pairs
}

/// How instruction `second` reads register `first_dst`, and its other operand register
/// (`None` when it reads the first result twice).
pub(crate) fn feed(second: &Inst, first_dst: usize) -> Option<(Feed, Option<usize>)> {
    let Inst::Binary(_, a, b) = *second else {
        return None;
    };
    match (a == first_dst, b == first_dst) {
        (true, true) => Some((Feed::Both, None)),
        (true, false) => Some((Feed::First, Some(b))),
        (false, true) => Some((Feed::Second, Some(a))),
        (false, false) => None,
    }
}

/// `out = second(first(a, b), c)` with the result fed as `feed` says (`c` unused for
/// [`Feed::Both`]). Returns false, writing nothing, when a slice operand's length is not
/// `out`'s or an instruction is not `+ - * / max min`.
pub(crate) fn run(
    first: BinaryKind,
    second: BinaryKind,
    feed: Feed,
    a: Operand<'_>,
    b: Operand<'_>,
    c: Operand<'_>,
    out: &mut [f32],
) -> bool {
    let n = out.len();
    let fits = |o: &Operand<'_>| match o {
        Operand::Slice(s) => s.len() == n,
        Operand::Splat(_) => true,
    };
    if !(fits(&a) && fits(&b) && fits(&c)) {
        return false;
    }
    use BinaryKind as B;
    match first {
        B::Add => with_first::<Add>(second, feed, &a, &b, &c, out),
        B::Subtract => with_first::<Sub>(second, feed, &a, &b, &c, out),
        B::Multiply => with_first::<Mul>(second, feed, &a, &b, &c, out),
        B::Divide => with_first::<Div>(second, feed, &a, &b, &c, out),
        B::Maximum => with_first::<Max>(second, feed, &a, &b, &c, out),
        B::Minimum => with_first::<Min>(second, feed, &a, &b, &c, out),
    }
    true
}

fn with_first<F: Op>(
    second: BinaryKind,
    feed: Feed,
    a: &Operand<'_>,
    b: &Operand<'_>,
    c: &Operand<'_>,
    out: &mut [f32],
) {
    use BinaryKind as B;
    // Addition and multiplication give the same value with their operands swapped.
    match (second, feed) {
        (B::Add, Feed::First | Feed::Second) => pass::<F, Add>(a, b, c, out),
        (B::Multiply, Feed::First | Feed::Second) => pass::<F, Mul>(a, b, c, out),
        (B::Subtract, Feed::First) => pass::<F, Sub>(a, b, c, out),
        (B::Subtract, Feed::Second) => pass::<F, Rev<Sub>>(a, b, c, out),
        (B::Divide, Feed::First) => pass::<F, Div>(a, b, c, out),
        (B::Divide, Feed::Second) => pass::<F, Rev<Div>>(a, b, c, out),
        (B::Maximum, Feed::First) => pass::<F, Max>(a, b, c, out),
        (B::Maximum, Feed::Second) => pass::<F, Rev<Max>>(a, b, c, out),
        (B::Minimum, Feed::First) => pass::<F, Min>(a, b, c, out),
        (B::Minimum, Feed::Second) => pass::<F, Rev<Min>>(a, b, c, out),
        (B::Add, Feed::Both) => pass::<F, Twice<Add>>(a, b, c, out),
        (B::Subtract, Feed::Both) => pass::<F, Twice<Sub>>(a, b, c, out),
        (B::Multiply, Feed::Both) => pass::<F, Twice<Mul>>(a, b, c, out),
        (B::Divide, Feed::Both) => pass::<F, Twice<Div>>(a, b, c, out),
        (B::Maximum, Feed::Both) => pass::<F, Twice<Max>>(a, b, c, out),
        (B::Minimum, Feed::Both) => pass::<F, Twice<Min>>(a, b, c, out),
    }
}

impl Operand<'_> {
    /// Elements `at..at + LANES`.
    #[inline(always)]
    fn chunk(&self, at: usize) -> [f32; LANES] {
        match self {
            // `run` checked the slice lengths, so a whole chunk is always there.
            Operand::Slice(s) => s
                .get(at..at + LANES)
                .and_then(|c| <[f32; LANES]>::try_from(c).ok())
                .unwrap_or([0.0; LANES]),
            Operand::Splat(v) => [*v; LANES],
        }
    }

    /// Element `at`.
    #[inline(always)]
    fn one(&self, at: usize) -> f32 {
        match self {
            Operand::Slice(s) => s.get(at).copied().unwrap_or(0.0),
            Operand::Splat(v) => *v,
        }
    }
}

/// One element function, as [`super::fused::Inst`]'s execution applies it.
trait Op {
    fn apply(x: f32, y: f32) -> f32;
}

struct Add;
struct Sub;
struct Mul;
struct Div;
struct Max;
struct Min;
/// `O` with its operands swapped: the fed value is the second operand.
struct Rev<O>(std::marker::PhantomData<O>);
/// `O` of the fed value with itself.
struct Twice<O>(std::marker::PhantomData<O>);

impl Op for Add {
    #[inline(always)]
    fn apply(x: f32, y: f32) -> f32 {
        x + y
    }
}
impl Op for Sub {
    #[inline(always)]
    fn apply(x: f32, y: f32) -> f32 {
        x - y
    }
}
impl Op for Mul {
    #[inline(always)]
    fn apply(x: f32, y: f32) -> f32 {
        x * y
    }
}
impl Op for Div {
    #[inline(always)]
    fn apply(x: f32, y: f32) -> f32 {
        x / y
    }
}
impl Op for Max {
    #[inline(always)]
    fn apply(x: f32, y: f32) -> f32 {
        max_op(x, y)
    }
}
impl Op for Min {
    #[inline(always)]
    fn apply(x: f32, y: f32) -> f32 {
        min_op(x, y)
    }
}
impl<O: Op> Op for Rev<O> {
    #[inline(always)]
    fn apply(x: f32, y: f32) -> f32 {
        O::apply(y, x)
    }
}
impl<O: Op> Op for Twice<O> {
    #[inline(always)]
    fn apply(x: f32, _: f32) -> f32 {
        O::apply(x, x)
    }
}

/// `out[i] = S(F(a[i], b[i]), c[i])`, on the widest vectors the CPU has.
fn pass<F: Op, S: Op>(a: &Operand<'_>, b: &Operand<'_>, c: &Operand<'_>, out: &mut [f32]) {
    oxla_simd::vectorized(
        #[inline(always)]
        || {
            let mut chunks = out.chunks_exact_mut(LANES);
            let mut at = 0;
            for chunk in &mut chunks {
                let (x, y, z) = (a.chunk(at), b.chunk(at), c.chunk(at));
                for k in 0..LANES {
                    chunk[k] = S::apply(F::apply(x[k], y[k]), z[k]);
                }
                at += LANES;
            }
            for (k, o) in chunks.into_remainder().iter_mut().enumerate() {
                let i = at + k;
                *o = S::apply(F::apply(a.one(i), b.one(i)), c.one(i));
            }
        },
    );
}
