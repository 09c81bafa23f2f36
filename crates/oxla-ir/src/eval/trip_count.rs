//! Trip counts of counted `while` loops, known before they run.
//!
//! `jax.lax.fori_loop` with constant bounds lowers to a `while` whose condition compares one
//! loop-carried integer (started at a constant) with a constant, and whose body returns
//! that integer plus a constant. [`static_trip_count`] recognises that shape and computes
//! how many times the body runs; anything else (a data-dependent condition, a counter the
//! body changes otherwise, a count the counter would overflow reaching) is unknown.

use crate::attrs::ComparisonDirection;
use crate::{Attribute, ElementType, Function, Op, OpKind, Type, ValueId};

/// A `while` whose trip count is known before it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CountedLoop {
    /// How many times the body runs.
    pub trips: u64,
    /// The position of the counter among the loop-carried values.
    pub counter: usize,
    /// The counter's final value (the first that fails the condition, or its start when
    /// the body never runs).
    pub end: i128,
}

/// The trip count of `op` (a `while` of `func`) when its condition is a counter compared
/// with a constant bound and its body steps the counter by a constant.
pub(crate) fn counted_loop(func: &Function, op: &Op) -> Option<CountedLoop> {
    let [cond, body] = op.regions.as_slice() else {
        return None;
    };
    let ([cond], [body]) = (cond.blocks.as_slice(), body.blocks.as_slice()) else {
        return None;
    };
    // The condition: `compare DIR, a, b` returned, one side a carried value, one a constant
    // (defined outside the loop or in the condition itself).
    let ops: Vec<&Op> = cond
        .ops
        .iter()
        .filter(|o| o.kind != OpKind::Constant)
        .collect();
    let [compare, ret] = ops.as_slice() else {
        return None;
    };
    if compare.kind != OpKind::Compare
        || !ret.kind.is_terminator()
        || ret.operands.as_slice() != compare.results.as_slice()
    {
        return None;
    }
    let Some(Attribute::ComparisonDirection(dir)) = compare.attr("comparison_direction") else {
        return None;
    };
    let [a, b] = compare.operands.as_slice() else {
        return None;
    };
    let carried = |v: &ValueId| cond.arguments.iter().position(|arg| arg == v);
    let (index, bound, dir) = match (carried(a), carried(b)) {
        (Some(k), None) => (k, *b, *dir),
        (None, Some(k)) => (k, *a, flipped(*dir)),
        _ => return None,
    };
    let et = scalar_integer(func, *op.operands.get(index)?)?;
    let bound = integer_constant(func, &[&cond.ops], bound)?;
    let start = integer_constant(func, &[], *op.operands.get(index)?)?;
    // The body: the counter's new value is `counter + step` with a constant step.
    let next = *body.ops.last()?.operands.get(index)?;
    let counter = *body.arguments.get(index)?;
    let add = body
        .ops
        .iter()
        .find(|o| o.results.first() == Some(&next) && o.kind == OpKind::Add)?;
    let step = match add.operands.as_slice() {
        [x, s] | [s, x] if *x == counter && *s != counter => {
            integer_constant(func, &[&body.ops], *s)?
        }
        _ => return None,
    };
    let (trips, end) = count(start, bound, step, dir, et)?;
    Some(CountedLoop {
        trips,
        counter: index,
        end,
    })
}

/// The direction of `b DIR a` given `a DIR b`.
fn flipped(dir: ComparisonDirection) -> ComparisonDirection {
    use ComparisonDirection as D;
    match dir {
        D::Lt => D::Gt,
        D::Le => D::Ge,
        D::Gt => D::Lt,
        D::Ge => D::Le,
        other => other,
    }
}

/// The element type of `v` when it is a 0-d tensor of an integer type.
fn scalar_integer(func: &Function, v: ValueId) -> Option<ElementType> {
    match func.values.get(v.index())? {
        Type::Tensor(t) if t.shape.is_empty() && signedness(t.element_type).is_some() => {
            Some(t.element_type)
        }
        _ => None,
    }
}

/// Whether integers of type `et` are signed; `None` for other types (and the sub-byte
/// integers, whose loops are left alone).
fn signedness(et: ElementType) -> Option<bool> {
    use ElementType as E;
    match et {
        E::S8 | E::S16 | E::S32 | E::S64 => Some(true),
        E::U8 | E::U16 | E::U32 | E::U64 => Some(false),
        _ => None,
    }
}

/// The value of `v` when a `stablehlo.constant` among `local` ops or anywhere in `func`
/// (the loop's regions read constants of the enclosing function) defines it as an integer
/// scalar.
fn integer_constant(func: &Function, local: &[&[Op]], v: ValueId) -> Option<i128> {
    let et = scalar_integer(func, v)?;
    let defining = local
        .iter()
        .flat_map(|ops| ops.iter())
        .find(|o| o.results.contains(&v))
        .or_else(|| find_def(&func.body, v))?;
    if defining.kind != OpKind::Constant {
        return None;
    }
    let Some(Attribute::Elements(e)) = defining.attr("value") else {
        return None;
    };
    let size = et.byte_size();
    let bytes: [u8; 8] = {
        let mut b = [0u8; 8];
        b[..size].copy_from_slice(e.data.get(..size)?);
        b
    };
    let raw = u64::from_le_bytes(bytes);
    let bits = 8 * size as u32;
    Some(if signedness(et)? {
        // Sign-extend from the element's width.
        i128::from((raw << (64 - bits)) as i64 >> (64 - bits))
    } else {
        i128::from(raw)
    })
}

/// The op in `region` (or a region nested in it) that defines `v`.
fn find_def(region: &crate::Region, v: ValueId) -> Option<&Op> {
    region.blocks.iter().flat_map(|b| &b.ops).find_map(|op| {
        if op.results.contains(&v) {
            Some(op)
        } else {
            op.regions.iter().find_map(|r| find_def(r, v))
        }
    })
}

/// Iterations of `for (i = start; i DIR bound; i += step)` over integers of type `et`, and
/// the counter's final value; `None` when the counter would wrap (the loop's length then depends on overflow) or the
/// direction is not an ordering.
fn count(
    start: i128,
    bound: i128,
    step: i128,
    dir: ComparisonDirection,
    et: ElementType,
) -> Option<(u64, i128)> {
    use ComparisonDirection as D;
    let bits = 8 * et.byte_size() as u32;
    let (min, max) = if signedness(et)? {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    // The range the counter runs over, as `lo <= i < hi` or `hi < i <= lo` with the step's
    // direction.
    let (last_exclusive, up) = match dir {
        D::Lt => (bound, true),
        D::Le => (bound + 1, true),
        D::Gt => (bound, false),
        D::Ge => (bound - 1, false),
        _ => return None,
    };
    let trips = if up {
        if start >= last_exclusive {
            return Some((0, start));
        }
        if step <= 0 {
            return None;
        }
        (last_exclusive - start + step - 1) / step
    } else {
        if start <= last_exclusive {
            return Some((0, start));
        }
        if step >= 0 {
            return None;
        }
        (start - last_exclusive + (-step) - 1) / (-step)
    };
    // The counter's final value, the first that fails the condition, must not wrap.
    let end = start + trips * step;
    if end < min || end > max {
        return None;
    }
    Some((u64::try_from(trips).ok()?, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ComparisonDirection as D;
    use ElementType as E;

    #[test]
    fn counted_ranges() {
        assert_eq!(count(0, 1000, 1, D::Lt, E::S32), Some((1000, 1000)));
        assert_eq!(count(0, 1000, 1, D::Le, E::S32), Some((1001, 1001)));
        assert_eq!(count(0, 10, 3, D::Lt, E::S32), Some((4, 12)));
        assert_eq!(count(5, 5, 1, D::Lt, E::S32), Some((0, 5)));
        assert_eq!(count(10, 0, -2, D::Gt, E::S64), Some((5, 0)));
        assert_eq!(count(10, 0, -2, D::Ge, E::S64), Some((6, -2)));
        // Steps away from the bound never end.
        assert_eq!(count(0, 10, -1, D::Lt, E::S32), None);
        assert_eq!(count(0, 10, 0, D::Lt, E::S32), None);
        // A counter that would wrap past the type's maximum.
        assert_eq!(count(0, i32::MAX as i128, 2, D::Le, E::S32), None);
        assert_eq!(count(250, 255, 1, D::Le, E::U8), None);
        assert_eq!(count(250, 255, 1, D::Lt, E::U8), Some((5, 255)));
        assert_eq!(count(0, 10, 1, D::Ne, E::S32), None);
    }
}
