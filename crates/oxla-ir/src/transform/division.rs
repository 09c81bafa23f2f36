//! Divisions written the way XLA's cpu backend computes them, so that a JAX program gives
//! the same bits on oxla as on JAX's `cpu`.
//!
//! XLA's algebraic simplifier turns some float divisions into products before it compiles,
//! whatever the optimization level; each trades the division's single rounding for two
//! (the reciprocal's, then the product's), so the results differ from a plain `divide` in
//! the last place now and then. `jnp.mean` (a sum divided by a count), `jax.nn.softmax`
//! (divided by a broadcast sum) and `x / jnp.sqrt(v)` all meet one of them. The rewrites
//! here are the ones XLA makes on the CPU, for `f16`, `bf16`, `f32` and `f64` (complex
//! divisions are left as they are):
//!
//! - `a / c`, `c` a constant or a broadcast of one and `a` not a constant: `a * (1 / c)`,
//!   the reciprocal computed per element in the element type (for `f16`, in f32 then
//!   rounded). In f32 and f64 a denormal divisor reads as zero and a denormal reciprocal
//!   is flushed to its signed zero, as in XLA's compiler thread.
//! - `a / broadcast(b)`, the broadcast used only there: `a * broadcast(1 / b)`, one division
//!   per element of `b` instead of one per element of `a`.
//! - `a / sqrt(b)` and `a / rsqrt(b)`, the root used only there: `a * rsqrt(b)` and
//!   `a * sqrt(b)`; `1 / sqrt(b)` from the previous rule becomes `rsqrt(b)` alone.
//!
//! XLA computes `bf16` arithmetic in f32 (it converts around each op), so there the
//! reciprocal stays an f32 value and the product is computed in f32 on the converted
//! operand, then rounded once to `bf16`; the root rules do not apply to `bf16` (a root's
//! result is rounded to `bf16` before the division sees it).
//!
//! Ops a rewrite leaves unread (the old divisor and its broadcast) are dropped.
//!
//! Left out: `a / 1` (XLA drops the division, which keeps a denormal `a`), the regrouping of
//! chained divisions (`(a / b) / c` into `a / (b * c)`) and `a / pow(b, c)`.

use crate::attrs::{Attribute, ElementsAttr};
use crate::module::{Function, Module, Op, Region, ValueId};
use crate::ops::OpKind;
use crate::types::{ElementType, TensorType, Type};
use std::collections::HashMap;

/// Rewrites the divisions of every function of `module` (see the module doc); returns how
/// many it rewrote.
pub fn rewrite_divisions(module: &mut Module) -> usize {
    module.functions.iter_mut().map(rewrite_function).sum()
}

/// What a rewrite needs to know of the op defining a value.
#[derive(Clone)]
enum Def {
    Constant(ElementsAttr),
    Broadcast {
        operand: ValueId,
        attributes: Vec<(String, Attribute)>,
    },
    Sqrt(ValueId),
    Rsqrt(ValueId),
    Other,
}

/// A constant divisor and, when it reaches the division through a `broadcast_in_dim`, that
/// broadcast's attributes.
type ConstantDivisor = (ElementsAttr, Option<Vec<(String, Attribute)>>);

struct Rewriter {
    defs: HashMap<ValueId, Def>,
    uses: HashMap<ValueId, usize>,
    rewritten: usize,
}

fn rewrite_function(function: &mut Function) -> usize {
    let mut rewriter = Rewriter {
        defs: HashMap::new(),
        uses: HashMap::new(),
        rewritten: 0,
    };
    rewriter.scan(&function.body);
    let mut body = std::mem::take(&mut function.body);
    rewriter.rewrite_region(function, &mut body);
    if rewriter.rewritten > 0 {
        // A rewritten division leaves its divisor's broadcast (and constant) unread; left
        // in, a broadcast no fused group takes would still be built in full on every call.
        super::dead::drop_unread(&mut body, &super::counters::pure);
    }
    function.body = body;
    rewriter.rewritten
}

impl Rewriter {
    /// Records every op's definition and counts the uses of every value.
    fn scan(&mut self, region: &Region) {
        for block in &region.blocks {
            for op in &block.ops {
                for &v in &op.operands {
                    *self.uses.entry(v).or_default() += 1;
                }
                if let [result] = op.results.as_slice() {
                    self.defs.insert(*result, definition(op));
                }
                for nested in &op.regions {
                    self.scan(nested);
                }
            }
        }
    }

    fn rewrite_region(&mut self, function: &mut Function, region: &mut Region) {
        for block in &mut region.blocks {
            let ops = std::mem::take(&mut block.ops);
            let mut out = Vec::with_capacity(ops.len());
            for mut op in ops {
                for nested in &mut op.regions {
                    self.rewrite_region(function, nested);
                }
                if op.kind == OpKind::Divide && self.rewrite_divide(function, &op, &mut out) {
                    self.rewritten += 1;
                } else {
                    out.push(op);
                }
            }
            block.ops = out;
        }
    }

    fn def(&self, v: ValueId) -> &Def {
        self.defs.get(&v).unwrap_or(&Def::Other)
    }

    fn used_once(&self, v: ValueId) -> bool {
        self.uses.get(&v) == Some(&1)
    }

    /// Appends the ops computing `divide` the XLA way to `out`; false (appending nothing)
    /// when no rule applies.
    fn rewrite_divide(&self, function: &mut Function, divide: &Op, out: &mut Vec<Op>) -> bool {
        let ([a, b], [result]) = (divide.operands.as_slice(), divide.results.as_slice()) else {
            return false;
        };
        let (a, b, result) = (*a, *b, *result);
        let Some(ty) = tensor(function, result) else {
            return false;
        };
        let et = ty.element_type;
        if !matches!(
            et,
            ElementType::F16 | ElementType::BF16 | ElementType::F32 | ElementType::F64
        ) {
            return false;
        }
        let mut emit = Emitter {
            function,
            out,
            location: divide.location.clone(),
        };
        // `a / c`: a product with the reciprocal constant.
        if let Some((constant, broadcast)) = self.constant_divisor(b) {
            if matches!(self.def(a), Def::Constant(_)) || is_all_ones(&constant) {
                return false;
            }
            let Some(reciprocal) = reciprocal(&constant) else {
                return false;
            };
            let r = emit.constant(reciprocal);
            let r = match broadcast {
                Some(attributes) => emit.broadcast(r, &ty, attributes),
                None => r,
            };
            emit.product(a, r, result, &ty);
            return true;
        }
        // `a / broadcast(b)`: the reciprocal of `b`, broadcast.
        if let Def::Broadcast {
            operand,
            attributes,
        } = self.def(b)
        {
            if !self.used_once(b) {
                return false;
            }
            let operand = *operand;
            let Some(small) = tensor(emit.function, operand) else {
                return false;
            };
            let r = self.reciprocal_of(&mut emit, operand, &small);
            let r = emit.broadcast(r, &ty, attributes.clone());
            emit.product(a, r, result, &ty);
            return true;
        }
        // `a / sqrt(b)` and `a / rsqrt(b)`.
        if et != ElementType::BF16 && self.used_once(b) {
            let inverted = match self.def(b) {
                Def::Sqrt(x) => Some((OpKind::Rsqrt, *x)),
                Def::Rsqrt(x) => Some((OpKind::Sqrt, *x)),
                _ => None,
            };
            if let Some((kind, x)) = inverted {
                let root = emit.op(kind, vec![x], Type::Tensor(ty.clone()));
                emit.push(Op::new(OpKind::Multiply, vec![a, root], vec![result]));
                return true;
            }
        }
        false
    }

    /// `1 / b` as XLA leaves it: `rsqrt(x)` for `b = sqrt(x)` used only by the division
    /// (`sqrt(x)` for `rsqrt`), else a division (in f32 for `bf16`).
    fn reciprocal_of(&self, emit: &mut Emitter, b: ValueId, ty: &TensorType) -> ValueId {
        if ty.element_type != ElementType::BF16 && self.used_once(b) {
            let inverted = match self.def(b) {
                Def::Sqrt(x) => Some((OpKind::Rsqrt, *x)),
                Def::Rsqrt(x) => Some((OpKind::Sqrt, *x)),
                _ => None,
            };
            if let Some((kind, x)) = inverted {
                return emit.op(kind, vec![x], Type::Tensor(ty.clone()));
            }
        }
        let wide = arithmetic_type(ty);
        let b = emit.widened(b, ty);
        let one = emit.constant(ones(&wide));
        emit.op(OpKind::Divide, vec![one, b], Type::Tensor(wide))
    }

    /// The constant `b` is, directly or through one `broadcast_in_dim`, with the
    /// broadcast's attributes in the second case.
    fn constant_divisor(&self, b: ValueId) -> Option<ConstantDivisor> {
        match self.def(b) {
            Def::Constant(c) => Some((c.clone(), None)),
            Def::Broadcast {
                operand,
                attributes,
            } => match self.def(*operand) {
                Def::Constant(c) => Some((c.clone(), Some(attributes.clone()))),
                _ => None,
            },
            _ => None,
        }
    }
}

fn definition(op: &Op) -> Def {
    match op.kind {
        OpKind::Constant => match op.attr("value") {
            Some(Attribute::Elements(e)) => Def::Constant(e.clone()),
            _ => Def::Other,
        },
        OpKind::BroadcastInDim if op.operands.len() == 1 => Def::Broadcast {
            operand: op.operands[0],
            attributes: op.attributes.clone(),
        },
        OpKind::Sqrt if op.operands.len() == 1 => Def::Sqrt(op.operands[0]),
        OpKind::Rsqrt if op.operands.len() == 1 => Def::Rsqrt(op.operands[0]),
        _ => Def::Other,
    }
}

fn tensor(function: &Function, v: ValueId) -> Option<TensorType> {
    match function.values.get(v.index())? {
        Type::Tensor(t) => Some(t.clone()),
        _ => None,
    }
}

/// The type XLA's cpu backend computes arithmetic on values of `ty` in: f32 for `bf16`.
fn arithmetic_type(ty: &TensorType) -> TensorType {
    match ty.element_type {
        ElementType::BF16 => TensorType::new(ty.shape.clone(), ElementType::F32),
        _ => ty.clone(),
    }
}

/// Appends new ops (with fresh values of the function) to the block being rebuilt.
struct Emitter<'a> {
    function: &'a mut Function,
    out: &'a mut Vec<Op>,
    location: crate::module::Location,
}

impl Emitter<'_> {
    fn push(&mut self, mut op: Op) {
        op.location = self.location.clone();
        self.out.push(op);
    }

    fn op(&mut self, kind: OpKind, operands: Vec<ValueId>, ty: Type) -> ValueId {
        let v = self.function.new_value(ty);
        self.push(Op::new(kind, operands, vec![v]));
        v
    }

    fn constant(&mut self, value: ElementsAttr) -> ValueId {
        let v = self.function.new_value(Type::Tensor(value.ty.clone()));
        let mut op = Op::new(OpKind::Constant, Vec::new(), vec![v]);
        op.attributes
            .push(("value".to_string(), Attribute::Elements(value)));
        self.push(op);
        v
    }

    /// `broadcast_in_dim` of `v` (of `ty`'s element type, or f32 for `bf16`) to `ty`'s
    /// shape, with the original broadcast's attributes.
    fn broadcast(
        &mut self,
        v: ValueId,
        ty: &TensorType,
        attributes: Vec<(String, Attribute)>,
    ) -> ValueId {
        let element_type = match self.function.value_type(v) {
            Type::Tensor(t) => t.element_type,
            _ => ty.element_type,
        };
        let out = self.function.new_value(Type::Tensor(TensorType::new(
            ty.shape.clone(),
            element_type,
        )));
        let mut op = Op::new(OpKind::BroadcastInDim, vec![v], vec![out]);
        op.attributes = attributes;
        self.push(op);
        out
    }

    /// `v` (of `ty`) converted to the type its arithmetic runs in.
    fn widened(&mut self, v: ValueId, ty: &TensorType) -> ValueId {
        if ty.element_type == ElementType::BF16 {
            self.op(OpKind::Convert, vec![v], Type::Tensor(arithmetic_type(ty)))
        } else {
            v
        }
    }

    /// `result = a * r` with `r` in the arithmetic type of `ty` (`result`'s type): for
    /// `bf16`, computed in f32 on the converted `a` and rounded once.
    fn product(&mut self, a: ValueId, r: ValueId, result: ValueId, ty: &TensorType) {
        if ty.element_type == ElementType::BF16 {
            let wide = self.widened(a, ty);
            let p = self.op(
                OpKind::Multiply,
                vec![wide, r],
                Type::Tensor(arithmetic_type(ty)),
            );
            self.push(Op::new(OpKind::Convert, vec![p], vec![result]));
        } else {
            self.push(Op::new(OpKind::Multiply, vec![a, r], vec![result]));
        }
    }
}

/// A constant of ones of `ty` (a splat).
fn ones(ty: &TensorType) -> ElementsAttr {
    let data = match ty.element_type {
        ElementType::F16 => half::f16::ONE.to_le_bytes().to_vec(),
        ElementType::F64 => 1.0f64.to_le_bytes().to_vec(),
        _ => 1.0f32.to_le_bytes().to_vec(),
    };
    ElementsAttr {
        ty: ty.clone(),
        data: data.into(),
        splat: true,
    }
}

/// Every element of `c` as an f64 (`None` for other element types or malformed data).
fn values(c: &ElementsAttr) -> Option<Vec<f64>> {
    let size = c.ty.element_type.byte_size();
    if size == 0 || !c.data.len().is_multiple_of(size) {
        return None;
    }
    let chunks = c.data.chunks_exact(size);
    Some(match c.ty.element_type {
        ElementType::F16 => chunks
            .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f64())
            .collect(),
        ElementType::BF16 => chunks
            .map(|b| half::bf16::from_le_bytes([b[0], b[1]]).to_f64())
            .collect(),
        ElementType::F32 => chunks
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64)
            .collect(),
        ElementType::F64 => chunks
            .map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect(),
        _ => return None,
    })
}

fn is_all_ones(c: &ElementsAttr) -> bool {
    values(c).is_some_and(|v| !v.is_empty() && v.iter().all(|&x| x == 1.0))
}

/// `1 / x` in f32 with denormals read and written as signed zeros.
fn reciprocal_f32(x: f32) -> f32 {
    let flush = |v: f32| {
        if v.is_subnormal() {
            0.0f32.copysign(v)
        } else {
            v
        }
    };
    flush(1.0 / flush(x))
}

/// `1 / x` in f64 with denormals read and written as signed zeros.
fn reciprocal_f64(x: f64) -> f64 {
    let flush = |v: f64| {
        if v.is_subnormal() {
            0.0f64.copysign(v)
        } else {
            v
        }
    };
    flush(1.0 / flush(x))
}

/// The elementwise reciprocal of the constant `c`, in the type XLA computes it in: the
/// element type, except f32 for `bf16`. Keeps `c`'s shape and splat form.
fn reciprocal(c: &ElementsAttr) -> Option<ElementsAttr> {
    let values = values(c)?;
    let et = c.ty.element_type;
    let mut data = Vec::new();
    for &x in &values {
        match et {
            ElementType::F16 => {
                // An f16 division runs in f32 (where no f16 value or reciprocal of one is
                // a denormal) and rounds once to f16.
                let r = half::f16::from_f32(1.0 / (x as f32));
                data.extend_from_slice(&r.to_le_bytes());
            }
            ElementType::BF16 | ElementType::F32 => {
                data.extend_from_slice(&reciprocal_f32(x as f32).to_le_bytes())
            }
            ElementType::F64 => data.extend_from_slice(&reciprocal_f64(x).to_le_bytes()),
            _ => return None,
        }
    }
    Some(ElementsAttr {
        ty: arithmetic_type(&c.ty),
        data: data.into(),
        splat: c.splat,
    })
}
