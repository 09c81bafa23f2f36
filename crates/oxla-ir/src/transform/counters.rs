//! The 64-bit counters of `jax.random`, narrowed to what they hold.
//!
//! JAX's threefry sampler numbers the values it draws with a 64-bit `iota`, multiplies it by
//! a constant 1, and splits it into its high and low 32-bit words (`shift_right_logical` by
//! 32, then two `convert`s to `ui32`). Run as written, that is four passes over 8-byte
//! elements before the hash itself starts: for a million values, more memory traffic than
//! the whole fused hash. The integer identities below give the same values:
//!
//! - `x * 1` (the 1 a constant, or a broadcast of one) is `x`;
//! - `iota >> k`, logically, is zero when every index along the iota's dimension is below
//!   `2^k` (or `k` is at least the width);
//! - `convert(iota)` to another integer type is an `iota` of that type when every index
//!   fits it, and the conversion of a one-value integer constant is a constant;
//!
//! One boolean identity rides along, for the sign tests of JAX's integer `%` and `//`:
//!
//! - a boolean compared for equality with a boolean constant (or a broadcast of one) is
//!   itself or its negation: `x != false` is `x`, `x == false` is `not x`;
//!
//! and the ops these leave unread (and other pure ops nothing reads) are dropped. Only
//! integer and boolean values are touched.

use crate::attrs::{Attribute, ComparisonDirection, ElementsAttr};
use crate::module::{Block, Function, Module, Op, Region, ValueId};
use crate::ops::OpKind;
use crate::types::{ElementType, TensorType, Type};
use std::collections::HashMap;

/// Simplifies the counters of every function of `module` (see the module doc); returns how
/// many ops it rewrote or dropped.
pub fn simplify_counters(module: &mut Module) -> usize {
    module.functions.iter_mut().map(simplify_function).sum()
}

/// What the rules need to know of a value's definition.
#[derive(Clone, Copy)]
enum Known {
    /// An integer `iota` whose indices along its dimension run below `extent`.
    Iota { dim: i64, extent: u64 },
    /// An integer with this value everywhere.
    Splat(i128),
}

fn simplify_function(function: &mut Function) -> usize {
    let mut body = std::mem::take(&mut function.body);
    let mut known = HashMap::new();
    let mut changed = simplify_region(function, &mut body, &mut known);
    changed += super::dead::drop_unread(&mut body, &pure);
    function.body = body;
    changed
}

fn simplify_region(
    function: &Function,
    region: &mut Region,
    known: &mut HashMap<ValueId, Known>,
) -> usize {
    let mut changed = 0;
    let mut subst: HashMap<ValueId, ValueId> = HashMap::new();
    for block in &mut region.blocks {
        changed += simplify_block(function, block, known, &mut subst);
    }
    changed
}

fn rename(op: &mut Op, subst: &HashMap<ValueId, ValueId>) {
    for v in &mut op.operands {
        if let Some(&to) = subst.get(v) {
            *v = to;
        }
    }
    for region in &mut op.regions {
        for block in &mut region.blocks {
            for inner in &mut block.ops {
                rename(inner, subst);
            }
        }
    }
}

fn simplify_block(
    function: &Function,
    block: &mut Block,
    known: &mut HashMap<ValueId, Known>,
    subst: &mut HashMap<ValueId, ValueId>,
) -> usize {
    let mut changed = 0;
    for op in &mut block.ops {
        rename(op, subst);
        for region in &mut op.regions {
            changed += simplify_region(function, region, known);
        }
        let [result] = op.results[..] else {
            continue;
        };
        let Type::Tensor(ty) = function.value_type(result).clone() else {
            continue;
        };
        let operand = |k: usize| op.operands.get(k).and_then(|v| known.get(v)).copied();
        if ty.element_type.is_pred() {
            // Compares of integers give booleans too; both operands of a compare have one type.
            let of_booleans = |&(x, _): &(ValueId, bool)| match function.value_type(x) {
                Type::Tensor(t) => t.element_type.is_pred(),
                _ => false,
            };
            match boolean_compare(op, operand(0), operand(1)).filter(of_booleans) {
                Some((x, false)) => {
                    subst.insert(result, x);
                    changed += 1;
                }
                Some((x, true)) => {
                    let mut not = Op::new(OpKind::Not, vec![x], vec![result]);
                    not.location = op.location.clone();
                    *op = not;
                    changed += 1;
                }
                None => {
                    if let Some(k) = knowledge(op, &ty, known) {
                        known.insert(result, k);
                    }
                }
            }
            continue;
        }
        if !ty.element_type.is_int() {
            continue;
        }
        match op.kind {
            OpKind::Multiply => {
                // `x * 1`: reads of the product read `x`.
                let keep = match (operand(0), operand(1)) {
                    (_, Some(Known::Splat(1))) => Some(op.operands[0]),
                    (Some(Known::Splat(1)), _) => Some(op.operands[1]),
                    _ => None,
                };
                if let Some(x) = keep {
                    subst.insert(result, x);
                    if let Some(k) = known.get(&x).copied() {
                        known.insert(result, k);
                    }
                    changed += 1;
                    continue;
                }
            }
            OpKind::ShiftRightLogical => {
                if let (Some(Known::Iota { extent, .. }), Some(Known::Splat(k))) =
                    (operand(0), operand(1))
                {
                    let bits = ty.element_type.bit_width() as i128;
                    let below = k >= bits || (0..64).contains(&k) && (extent - 1) >> k == 0;
                    if k >= 0 && below {
                        *op = splat_constant(result, &ty, 0, op);
                        known.insert(result, Known::Splat(0));
                        changed += 1;
                        continue;
                    }
                }
            }
            OpKind::Convert => {
                let whole_bytes = ty.element_type.bit_width() % 8 == 0;
                if let (Some(Known::Splat(v)), true) = (operand(0), whole_bytes) {
                    // Integer conversions keep the low bits (two's complement).
                    *op = splat_constant(result, &ty, v as u64, op);
                    known.insert(result, Known::Splat(wrapped(v, ty.element_type)));
                    changed += 1;
                    continue;
                }
                if let Some(Known::Iota { dim, extent }) = operand(0) {
                    if fits(extent - 1, ty.element_type) {
                        let mut iota = Op::new(OpKind::Iota, Vec::new(), vec![result]);
                        iota.attributes.push((
                            "iota_dimension".to_string(),
                            Attribute::Integer {
                                value: i128::from(dim),
                                ty: Some(ElementType::S64),
                            },
                        ));
                        iota.location = op.location.clone();
                        *op = iota;
                        changed += 1;
                    }
                }
            }
            _ => {}
        }
        if let Some(k) = knowledge(op, &ty, known) {
            known.insert(result, k);
        }
    }
    changed
}

/// For an equality compare of two booleans, one of them a known constant (`a` and `b` are
/// what is known of the operands): the other operand, and whether the result is its
/// negation.
fn boolean_compare(op: &Op, a: Option<Known>, b: Option<Known>) -> Option<(ValueId, bool)> {
    if op.kind != OpKind::Compare {
        return None;
    }
    let equal = match op.attr("comparison_direction")? {
        Attribute::ComparisonDirection(ComparisonDirection::Eq) => true,
        Attribute::ComparisonDirection(ComparisonDirection::Ne) => false,
        _ => return None,
    };
    let (x, c) = match (a, b) {
        (_, Some(Known::Splat(c))) => (op.operands[0], c != 0),
        (Some(Known::Splat(c)), _) => (*op.operands.get(1)?, c != 0),
        _ => return None,
    };
    // `x == true` and `x != false` are `x`; `x == false` and `x != true` are `not x`.
    Some((x, equal != c))
}

/// What `op` (with one integer or boolean result of type `ty`) is known to compute.
fn knowledge(op: &Op, ty: &TensorType, known: &HashMap<ValueId, Known>) -> Option<Known> {
    match op.kind {
        OpKind::Iota => {
            let dim = op.attr("iota_dimension")?.as_int()?;
            let dim = i64::try_from(dim).ok()?;
            let extent = *ty.shape.get(usize::try_from(dim).ok()?)?;
            let extent = u64::try_from(extent).ok().filter(|&e| e > 0)?;
            Some(Known::Iota { dim, extent })
        }
        OpKind::Constant => {
            let Some(Attribute::Elements(e)) = op.attr("value") else {
                return None;
            };
            splat_value(e)
        }
        // A broadcast of a known splat is that splat.
        OpKind::BroadcastInDim => match known.get(op.operands.first()?)? {
            k @ Known::Splat(_) => Some(*k),
            Known::Iota { .. } => None,
        },
        _ => None,
    }
}

/// The value of an integer constant that holds one value everywhere.
fn splat_value(e: &ElementsAttr) -> Option<Known> {
    let et = e.ty.element_type;
    let size = et.byte_size();
    if !(et.is_int() || et.is_pred()) || size == 0 || size > 8 {
        return None;
    }
    let first = e.data.get(..size)?;
    if !e.splat && e.data.chunks(size).any(|c| c != first) {
        return None;
    }
    let mut raw = [0u8; 8];
    raw[..size].copy_from_slice(first);
    let bits = u64::from_le_bytes(raw);
    let value = if et.is_signed_int() {
        let shift = 64 - 8 * size as u32;
        i128::from(((bits << shift) as i64) >> shift)
    } else {
        i128::from(bits)
    };
    Some(Known::Splat(value))
}

/// `v` as the integer type `et` holds it: its low bits, sign-extended when `et` is signed.
fn wrapped(v: i128, et: ElementType) -> i128 {
    let bits = et.bit_width();
    if bits >= 64 {
        return if et.is_signed_int() {
            i128::from(v as i64)
        } else {
            i128::from(v as u64)
        };
    }
    let low = (v as u64) & ((1u64 << bits) - 1);
    if et.is_signed_int() && low >> (bits - 1) == 1 {
        i128::from(low as i64 - (1i64 << bits))
    } else {
        i128::from(low)
    }
}

/// Whether `v` is representable in the integer type `et`.
fn fits(v: u64, et: ElementType) -> bool {
    let bits = et.bit_width();
    if !et.is_int() || bits == 0 {
        return false;
    }
    let positive_bits = if et.is_signed_int() { bits - 1 } else { bits };
    positive_bits >= 64 || v >> positive_bits == 0
}

/// A constant of type `ty` holding `value` (its low bytes) everywhere, replacing `op`.
fn splat_constant(result: ValueId, ty: &TensorType, value: u64, op: &Op) -> Op {
    let size = ty.element_type.byte_size();
    let mut constant = Op::new(OpKind::Constant, Vec::new(), vec![result]);
    constant.attributes.push((
        "value".to_string(),
        Attribute::Elements(ElementsAttr {
            ty: ty.clone(),
            data: value.to_le_bytes()[..size].to_vec().into(),
            splat: true,
        }),
    ));
    constant.location = op.location.clone();
    constant
}

/// Whether dropping `op` when nothing reads its results changes nothing else (the ops
/// these rules leave behind and their like; [`super::dead`] knows every kind).
pub(super) fn pure(op: &Op) -> bool {
    use OpKind as K;
    op.regions.is_empty()
        && matches!(
            op.kind,
            K::Constant
                | K::Iota
                | K::BroadcastInDim
                | K::Convert
                | K::Reshape
                | K::Add
                | K::Subtract
                | K::Multiply
                | K::ShiftLeft
                | K::ShiftRightLogical
                | K::ShiftRightArithmetic
                | K::And
                | K::Or
                | K::Xor
                | K::Not
                | K::Compare
                | K::Sqrt
                | K::Rsqrt
        )
}
