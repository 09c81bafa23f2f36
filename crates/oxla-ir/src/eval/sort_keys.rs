//! Sorting by typed keys, for the sort comparators JAX emits and for `top_k`.
//!
//! JAX's comparator is a lexicographic "less than" over the first `num_keys` operands,
//! `lt(k0) or (eq(k0) and (lt(k1) or ...))`, where a float key is first canonicalized (a
//! zero becomes +0, every NaN one NaN) and compared in total order. Interpreted once per
//! comparison it costs microseconds, and a million elements need twenty million
//! comparisons. Instead, [`lexicographic_comparator`] reads the keys off the region, each key
//! operand becomes once an unsigned integer per element in the same order (canonicalized
//! as the region would, with the same float compares), and every row is sorted natively
//! by (keys, position). For such a comparator (a strict weak order) that is exactly the
//! stable order the general path produces, so equal keys keep their input order whether or
//! not the op asks for stability.
//!
//! Only comparators of that exact shape are taken, and float keys only when compared in
//! total order (an IEEE `<` with a NaN is no strict weak order); anything else stays on
//! the general path.

use super::element::{decode, Array};
use super::elementwise::ordering_matches;
use crate::attrs::{ComparisonDirection, ComparisonType};
use crate::{Attribute, Block, Literal, Op, OpKind, Region, TensorType, ValueId};

/// Which part of an operand a key reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    Whole,
    Real,
    Imag,
}

/// A test on the key value `x` before comparing: `x dir x` (with `NE`, "is NaN") or a
/// comparison with a scalar constant, IEEE in both cases.
#[derive(Clone, Debug, PartialEq)]
struct Test {
    dir: ComparisonDirection,
    /// The constant compared with, `None` for `x` itself.
    constant: Option<Literal>,
    constant_first: bool,
}

/// `select(test(x), value, ...)`: the key becomes `value` where `test` holds.
#[derive(Clone, Debug, PartialEq)]
struct Replace {
    test: Test,
    value: Literal,
}

/// What the comparator computes from one of its arguments before comparing.
#[derive(Clone, Debug, PartialEq)]
struct KeyExpr {
    operand: usize,
    part: Part,
    /// Replacements from the outermost select in; the first whose test holds applies.
    replace: Vec<Replace>,
}

/// One key of a lexicographic comparator.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SortKey {
    expr: KeyExpr,
    descending: bool,
    /// Compared in total order (`compare_type = TOTALORDER`).
    total: bool,
}

/// The ops of a one-block region, looked up by the values they define, and the values it
/// reads from outside (JAX hoists the comparator's constants out of it).
struct Defs<'r> {
    block: &'r Block,
    outer: &'r dyn Fn(ValueId) -> Option<Literal>,
}

impl<'r> Defs<'r> {
    fn op(&self, v: ValueId) -> Option<&'r Op> {
        self.block.ops.iter().find(|o| o.results.contains(&v))
    }

    fn op_of(&self, v: ValueId, kind: OpKind) -> Option<&'r Op> {
        self.op(v)
            .filter(|o| o.kind == kind && o.regions.is_empty() && o.results.len() == 1)
    }

    fn arg(&self, v: ValueId) -> Option<usize> {
        self.block.arguments.iter().position(|&a| a == v)
    }

    /// `(dir, lhs, rhs, total)` of the `compare` defining `v`.
    fn compare(&self, v: ValueId) -> Option<(ComparisonDirection, ValueId, ValueId, bool)> {
        let op = self.op_of(v, OpKind::Compare)?;
        let [a, b] = op.operands[..] else {
            return None;
        };
        let Some(Attribute::ComparisonDirection(dir)) = op.attr("comparison_direction") else {
            return None;
        };
        let total = matches!(
            op.attr("compare_type"),
            Some(Attribute::ComparisonType(ComparisonType::TotalOrder))
        );
        Some((*dir, a, b, total))
    }

    /// The scalar constant defining `v`, or the scalar value `v` names outside the region.
    fn constant(&self, v: ValueId) -> Option<Literal> {
        if self.arg(v).is_none() && self.op(v).is_none() {
            return (self.outer)(v).filter(|lit| lit.ty.shape.is_empty());
        }
        let op = self.op_of(v, OpKind::Constant)?;
        let Some(Attribute::Elements(e)) = op.attr("value") else {
            return None;
        };
        if !e.ty.shape.is_empty() {
            return None;
        }
        let size = e.ty.element_type.byte_size();
        let data = e.data.get(..size)?.to_vec();
        Literal::new(TensorType::new(Vec::new(), e.ty.element_type), data).ok()
    }

    /// The two operands of the binary op of `kind` defining `v`.
    fn pair(&self, v: ValueId, kind: OpKind) -> Option<[ValueId; 2]> {
        let op = self.op_of(v, kind)?;
        op.operands.as_slice().try_into().ok()
    }

    /// The key expression `v` computes, and which argument of its pair (0: the first
    /// element compared, 1: the second) it reads.
    fn key_expr(&self, v: ValueId) -> Option<(usize, KeyExpr)> {
        let mut selects = Vec::new();
        let mut cur = v;
        while let Some(op) = self.op_of(cur, OpKind::Select) {
            let [pred, value, rest] = op.operands[..] else {
                return None;
            };
            selects.push((pred, self.constant(value)?));
            cur = rest;
        }
        let base = cur;
        let (arg, part) = match self.arg(base) {
            Some(i) => (i, Part::Whole),
            None => {
                let op = self.op(base)?;
                let part = match op.kind {
                    OpKind::Real => Part::Real,
                    OpKind::Imag => Part::Imag,
                    _ => return None,
                };
                let [x] = op.operands[..] else {
                    return None;
                };
                (self.arg(x)?, part)
            }
        };
        let mut replace = Vec::with_capacity(selects.len());
        for (pred, value) in selects {
            let (dir, a, b, total) = self.compare(pred)?;
            if total {
                return None;
            }
            let test = if a == base && b == base {
                Test {
                    dir,
                    constant: None,
                    constant_first: false,
                }
            } else if a == base {
                Test {
                    dir,
                    constant: Some(self.constant(b)?),
                    constant_first: false,
                }
            } else if b == base {
                Test {
                    dir,
                    constant: Some(self.constant(a)?),
                    constant_first: true,
                }
            } else {
                return None;
            };
            replace.push(Replace { test, value });
        }
        let expr = KeyExpr {
            operand: arg / 2,
            part,
            replace,
        };
        Some((arg % 2, expr))
    }

    /// The key of a strict comparison `lt`/`gt` of one key expression of both elements.
    fn strict_key(&self, v: ValueId) -> Option<SortKey> {
        let (dir, a, b, total) = self.compare(v)?;
        let greater = match dir {
            ComparisonDirection::Lt => false,
            ComparisonDirection::Gt => true,
            _ => return None,
        };
        let (side_a, expr) = self.key_expr(a)?;
        let (side_b, expr_b) = self.key_expr(b)?;
        if side_a == side_b || expr != expr_b {
            return None;
        }
        Some(SortKey {
            expr,
            // `a` reads the first element: `lt` sorts ascending, `gt` descending.
            descending: greater != (side_a == 1),
            total,
        })
    }

    /// True when `v` is `eq` of the same key expression of both elements as `key`.
    fn is_equal_key(&self, v: ValueId, key: &SortKey) -> bool {
        let Some((ComparisonDirection::Eq, a, b, total)) = self.compare(v) else {
            return false;
        };
        match (self.key_expr(a), self.key_expr(b)) {
            (Some((sa, ea)), Some((sb, eb))) => {
                total == key.total && sa != sb && ea == key.expr && eb == key.expr
            }
            _ => false,
        }
    }

    /// The keys of the lexicographic comparison `v` computes, most significant first.
    fn lex_keys(&self, v: ValueId) -> Option<Vec<SortKey>> {
        if let Some(key) = self.strict_key(v) {
            return Some(vec![key]);
        }
        let [l, r] = self.pair(v, OpKind::Or)?;
        for (strict, tie) in [(l, r), (r, l)] {
            let Some(key) = self.strict_key(strict) else {
                continue;
            };
            let Some([p, q]) = self.pair(tie, OpKind::And) else {
                continue;
            };
            for (eq, rest) in [(p, q), (q, p)] {
                if !self.is_equal_key(eq, &key) {
                    continue;
                }
                if let Some(more) = self.lex_keys(rest) {
                    let mut keys = vec![key];
                    keys.extend(more);
                    return Some(keys);
                }
            }
        }
        None
    }
}

/// The keys of a comparator that is a lexicographic strict comparison of key expressions of
/// its operands (JAX's `_sort_lt_comparator`, ascending or descending per key), most
/// significant first. `outer` gives the values of the scalars it reads from outside.
pub(crate) fn lexicographic_comparator(
    region: &Region,
    outer: &dyn Fn(ValueId) -> Option<Literal>,
) -> Option<Vec<SortKey>> {
    let [block] = region.blocks.as_slice() else {
        return None;
    };
    let ret = block.ops.last()?;
    if !matches!(ret.kind, OpKind::Return | OpKind::FuncReturn) {
        return None;
    }
    let [result] = ret.operands[..] else {
        return None;
    };
    let keys = Defs { block, outer }.lex_keys(result)?;
    let n_args = block.arguments.len();
    keys.iter()
        .all(|k| 2 * k.expr.operand + 1 < n_args)
        .then_some(keys)
}

/// Unsigned keys ordered as the elements of `arr` (floats in total order, `false < true`),
/// and how many low bits they use; `None` for complex numbers.
pub(crate) fn order_keys(arr: &Array) -> Option<(Vec<u64>, u32)> {
    fn map<T: Copy>(v: &[T], f: impl Fn(T) -> u64) -> Vec<u64> {
        v.iter().map(|&x| f(x)).collect()
    }
    Some(match arr {
        Array::Pred(v) => (map(v, u64::from), 1),
        Array::S8(v) => (map(v, |x| u64::from(x as u8 ^ 0x80)), 8),
        Array::S16(v) => (map(v, |x| u64::from(x as u16 ^ 0x8000)), 16),
        Array::S32(v) => (map(v, |x| u64::from(x as u32 ^ 0x8000_0000)), 32),
        Array::S64(v) => (map(v, |x| x as u64 ^ (1 << 63)), 64),
        Array::U8(v) => (map(v, u64::from), 8),
        Array::U16(v) => (map(v, u64::from), 16),
        Array::U32(v) => (map(v, u64::from), 32),
        Array::U64(v) => (v.clone(), 64),
        Array::F32(v) => (map(v, |x| u64::from(total_key32(x))), 32),
        Array::F64(v) => (map(v, total_key64), 64),
        Array::C64(_) | Array::C128(_) => return None,
    })
}

/// The bits of `x` as an unsigned integer in `f32::total_cmp`'s order.
pub(crate) fn total_key32(x: f32) -> u32 {
    let b = x.to_bits();
    if b >> 31 == 1 {
        !b
    } else {
        b | 1 << 31
    }
}

/// The bits of `x` as an unsigned integer in `f64::total_cmp`'s order.
pub(crate) fn total_key64(x: f64) -> u64 {
    let b = x.to_bits();
    if b >> 63 == 1 {
        !b
    } else {
        b | 1 << 63
    }
}

/// `a dir b` as an IEEE comparison (as the `compare` op evaluates floats).
fn ieee<T: PartialOrd>(dir: ComparisonDirection, a: T, b: T) -> bool {
    ordering_matches(dir, a.partial_cmp(&b))
}

/// Applies `replace` to float values of type `T` (the decoded type of the key).
fn replaced<T: Copy + PartialOrd>(
    v: &mut [T],
    replace: &[Replace],
    scalar: impl Fn(&Literal) -> Option<T>,
) -> Option<()> {
    let rules: Vec<(ComparisonDirection, Option<T>, bool, T)> = replace
        .iter()
        .map(|r| {
            let c = match &r.test.constant {
                Some(c) => Some(scalar(c)?),
                None => None,
            };
            Some((r.test.dir, c, r.test.constant_first, scalar(&r.value)?))
        })
        .collect::<Option<_>>()?;
    for x in v.iter_mut() {
        for &(dir, c, constant_first, value) in &rules {
            let holds = match c {
                None => ieee(dir, *x, *x),
                Some(c) if constant_first => ieee(dir, c, *x),
                Some(c) => ieee(dir, *x, c),
            };
            if holds {
                *x = value;
                break;
            }
        }
    }
    Some(())
}

/// The keys of `key` over the decoded operand `arr`, ascending in the sort's order, and
/// their width in bits; `None` when the key is not one this module orders natively.
pub(crate) fn key_column(arr: &Array, key: &SortKey) -> Option<(Vec<u64>, u32)> {
    let part = |re: bool| match arr {
        Array::C64(v) => Some(Array::F32(
            v.iter().map(|c| if re { c.re } else { c.im }).collect(),
        )),
        Array::C128(v) => Some(Array::F64(
            v.iter().map(|c| if re { c.re } else { c.im }).collect(),
        )),
        _ => None,
    };
    let owned;
    let values = match key.expr.part {
        Part::Whole => arr,
        Part::Real => {
            owned = part(true)?;
            &owned
        }
        Part::Imag => {
            owned = part(false)?;
            &owned
        }
    };
    let is_float = matches!(values, Array::F32(_) | Array::F64(_));
    if is_float && !key.total || !is_float && !key.expr.replace.is_empty() {
        return None;
    }
    let (mut keys, bits) = if key.expr.replace.is_empty() {
        order_keys(values)?
    } else {
        let replace = &key.expr.replace;
        match values {
            Array::F32(v) => {
                let mut v = v.clone();
                replaced(&mut v, replace, |c| match decode(c) {
                    Array::F32(c) => c.first().copied(),
                    _ => None,
                })?;
                order_keys(&Array::F32(v))?
            }
            Array::F64(v) => {
                let mut v = v.clone();
                replaced(&mut v, replace, |c| match decode(c) {
                    Array::F64(c) => c.first().copied(),
                    _ => None,
                })?;
                order_keys(&Array::F64(v))?
            }
            _ => return None,
        }
    };
    if key.descending {
        let max = u64::MAX >> (64 - bits);
        keys.iter_mut().for_each(|k| *k = max - *k);
    }
    Some((keys, bits))
}

/// The operand each key reads.
pub(crate) fn key_operand(key: &SortKey) -> usize {
    key.expr.operand
}

/// Rows of at least this many elements are sorted by radix passes.
const RADIX_MIN: usize = 4096;

/// Sorts `v` by its bits `lo..lo + bits` with stable byte-wise radix passes, so elements
/// equal there keep their order.
fn radix_sort_bits(v: &mut Vec<u64>, lo: u32, bits: u32) {
    let mut tmp = vec![0u64; v.len()];
    let mut shift = lo;
    while shift < lo + bits {
        let mut counts = [0usize; 256];
        for &x in v.iter() {
            counts[((x >> shift) & 0xFF) as usize] += 1;
        }
        if counts.contains(&v.len()) {
            shift += 8;
            continue;
        }
        let mut start = 0;
        for c in counts.iter_mut() {
            let n = *c;
            *c = start;
            start += n;
        }
        for &x in v.iter() {
            let b = ((x >> shift) & 0xFF) as usize;
            tmp[counts[b]] = x;
            counts[b] += 1;
        }
        std::mem::swap(v, &mut tmp);
        shift += 8;
    }
}

/// Sorts each row (`len` consecutive positions) by the key columns, most significant
/// first, then by position; returns the flat positions in sorted order.
pub(crate) fn sorted_order(columns: &[(Vec<u64>, u32)], n_rows: usize, len: usize) -> Vec<usize> {
    let total_bits: u32 = columns.iter().map(|c| c.1).sum();
    let mut order = Vec::with_capacity(n_rows * len);
    let packed = |p: usize| -> u128 {
        columns
            .iter()
            .fold(0u128, |acc, (keys, bits)| acc << bits | u128::from(keys[p]))
    };
    let fits_u32 = u32::try_from(len).is_ok();
    for r in 0..n_rows {
        let base = r * len;
        if fits_u32 && total_bits <= 32 {
            let mut row: Vec<u64> = (0..len)
                .map(|i| (packed(base + i) as u64) << 32 | i as u64)
                .collect();
            if len >= RADIX_MIN {
                radix_sort_bits(&mut row, 32, total_bits);
            } else {
                row.sort_unstable();
            }
            order.extend(row.iter().map(|&x| base + (x & 0xFFFF_FFFF) as usize));
        } else if fits_u32 && total_bits <= 96 {
            let mut row: Vec<u128> = (0..len)
                .map(|i| packed(base + i) << 32 | i as u128)
                .collect();
            row.sort_unstable();
            order.extend(row.iter().map(|&x| base + (x & 0xFFFF_FFFF) as usize));
        } else {
            let mut row: Vec<usize> = (base..base + len).collect();
            // A stable sort: equal keys keep their positions' order.
            row.sort_by(|&a, &b| {
                columns
                    .iter()
                    .map(|(keys, _)| keys[a].cmp(&keys[b]))
                    .find(|o| o.is_ne())
                    .unwrap_or(std::cmp::Ordering::Equal)
            });
            order.extend(row);
        }
    }
    order
}

/// The elements of `data` (of `esize` bytes each) at `order`, in that order.
pub(crate) fn gather_elements(data: &[u8], esize: usize, order: &[usize]) -> Vec<u8> {
    fn fixed<const W: usize>(data: &[u8], order: &[usize]) -> Vec<u8> {
        let mut out = vec![0u8; order.len() * W];
        for (o, &i) in out.chunks_exact_mut(W).zip(order) {
            o.copy_from_slice(&data[i * W..i * W + W]);
        }
        out
    }
    match esize {
        1 => order.iter().map(|&i| data[i]).collect(),
        2 => fixed::<2>(data, order),
        4 => fixed::<4>(data, order),
        8 => fixed::<8>(data, order),
        16 => fixed::<16>(data, order),
        _ => {
            let mut out = Vec::with_capacity(order.len() * esize);
            for &i in order {
                out.extend_from_slice(&data[i * esize..(i + 1) * esize]);
            }
            out
        }
    }
}
