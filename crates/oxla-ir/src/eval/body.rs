//! Calling an op's region from a kernel: body classification and batched application.
//!
//! Scatter, reduce_window and select_and_scatter all combine values into accumulators with a
//! region. They describe the work as a list of `(destination, source)` element pairs; this
//! module groups the pairs into *waves* in which every destination appears at most once (so
//! the pairs of one wave are independent) and applies each wave in one step: a byte copy for
//! a body that just returns its update, one elementwise op for a body like `add`, one region
//! call on rows for an elementwise body, and one region call per pair otherwise.
//!
//! It also dispatches the ops implemented in `sort`, `gather_scatter`, `window`, `conv`,
//! `rng`, `linalg`, `fft` and `topk` ([`handles`], `Interp::exec_body_op`).

use super::context::OpCx;
use super::element::{decode, encode_bytes};
use super::elementwise::binary_arrays;
use super::reduce::{lane_safe, simple_body};
use super::{conv, fft, gather_scatter, linalg, rng, tensor_operand, topk, Frame, Interp, Value};
use crate::{IrError, Literal, OpKind, Region, TensorType};

/// A combining region and how it is applied.
pub(crate) struct Body<'m> {
    /// The region.
    pub region: &'m Region,
    /// The fastest way to apply it.
    pub kind: BodyKind,
}

/// How a combining region is applied.
pub(crate) enum BodyKind {
    /// The body returns its update arguments unchanged (`return %arg_n, ...`).
    Replace,
    /// The body is one commutative binary op of its two arguments.
    Simple(OpKind),
    /// Any other body; `lanes` when it is purely elementwise and may run on rows.
    General { lanes: bool },
}

/// Classifies a region taking `n` accumulators followed by `n` updates.
pub(crate) fn classify(region: &Region, n: usize) -> Body<'_> {
    let kind = classify_kind(region, n);
    Body { region, kind }
}

fn classify_kind(region: &Region, n: usize) -> BodyKind {
    if let [block] = region.blocks.as_slice() {
        if let [ret] = block.ops.as_slice() {
            if block.arguments.len() == 2 * n
                && matches!(ret.kind, OpKind::Return | OpKind::FuncReturn)
                && ret.operands == block.arguments[n..]
            {
                return BodyKind::Replace;
            }
        }
    }
    if n == 1 {
        if let Some(kind) = simple_body(region) {
            return BodyKind::Simple(kind);
        }
    }
    BodyKind::General {
        lanes: lane_safe(region),
    }
}

/// The region `i` of the op.
pub(crate) fn region<'m>(cx: OpCx<'m>, i: usize) -> Result<&'m Region, IrError> {
    cx.op
        .regions
        .get(i)
        .ok_or_else(|| cx.invalid(format!("missing region {i}")))
}

/// The elements of `lit` at flat positions `idxs`, as a rank-1 literal (rank 0 when
/// `scalar`).
pub(crate) fn take(lit: &Literal, idxs: &[usize], scalar: bool) -> Literal {
    let esize = lit.ty.element_type.byte_size();
    let mut data = Vec::with_capacity(idxs.len() * esize);
    for &i in idxs {
        data.extend_from_slice(&lit.data[i * esize..(i + 1) * esize]);
    }
    let shape = if scalar {
        Vec::new()
    } else {
        vec![idxs.len() as i64]
    };
    Literal {
        ty: TensorType::new(shape, lit.ty.element_type),
        data: data.into(),
    }
}

/// Writes the elements of `vals` (one per index, or one for all) to flat positions `idxs`.
pub(crate) fn put(lit: &mut Literal, idxs: &[usize], vals: &[u8]) {
    let esize = lit.ty.element_type.byte_size();
    let broadcast = vals.len() == esize && idxs.len() != 1;
    for (k, &i) in idxs.iter().enumerate() {
        let src = if broadcast { 0 } else { k * esize };
        lit.data_mut()[i * esize..(i + 1) * esize].copy_from_slice(&vals[src..src + esize]);
    }
}

/// Groups pair indices so that each group holds every destination at most once, keeping
/// the order of pairs with the same destination.
pub(crate) fn waves(dsts: &[usize], n_dst: usize) -> Vec<Vec<usize>> {
    let mut seen = vec![0usize; n_dst];
    let mut res: Vec<Vec<usize>> = Vec::new();
    for (p, &d) in dsts.iter().enumerate() {
        let w = seen[d];
        seen[d] += 1;
        if res.len() <= w {
            res.push(Vec::new());
        }
        res[w].push(p);
    }
    res
}

/// True for the op kinds [`Interp::exec_body_op`] evaluates.
pub(crate) fn handles(kind: &OpKind) -> bool {
    use OpKind as K;
    matches!(
        kind,
        K::Gather
            | K::Scatter
            | K::ReduceWindow
            | K::SelectAndScatter
            | K::Sort
            | K::Convolution
            | K::RngBitGenerator
            | K::Cholesky
            | K::TriangularSolve
            | K::Fft
            | K::ChloTopK
    )
}

impl<'m> Interp<'m> {
    /// Evaluates one op of the kinds [`handles`] accepts; `scatter` may move its inputs in
    /// `moves` (last uses) out of the table and update them in place.
    pub(super) fn exec_body_op(
        &mut self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
        moves: &[crate::ValueId],
    ) -> Result<Vec<Value>, IrError> {
        use OpKind as K;
        let tensors = |frame: &Frame<'m>, n: usize| -> Result<Vec<Literal>, IrError> {
            cx.expect_operands(n)?;
            cx.op
                .operands
                .iter()
                .map(|&id| tensor_operand(frame, cx, id).cloned())
                .collect()
        };
        let single = |lit: Literal| vec![Value::Tensor(lit)];
        Ok(match &cx.op.kind {
            K::Gather => {
                let a = tensors(frame, 2)?;
                single(gather_scatter::gather(cx, &a[0], &a[1])?)
            }
            K::Scatter => self.exec_scatter(frame, cx, moves)?,
            K::Sort => self.exec_sort(frame, cx)?,
            K::ChloTopK => {
                let a = tensors(frame, 1)?;
                topk::top_k(cx, &a[0])?
                    .into_iter()
                    .map(Value::Tensor)
                    .collect()
            }
            K::Cholesky => {
                let a = tensors(frame, 1)?;
                single(linalg::cholesky(cx, &a[0])?)
            }
            K::TriangularSolve => {
                let a = tensors(frame, 2)?;
                single(linalg::triangular_solve(cx, &a[0], &a[1])?)
            }
            K::Fft => {
                let a = tensors(frame, 1)?;
                single(fft::fft(cx, &a[0])?)
            }
            K::RngBitGenerator => {
                let a = tensors(frame, 1)?;
                rng::rng_bit_generator(cx, &a[0])?
                    .into_iter()
                    .map(Value::Tensor)
                    .collect()
            }
            K::Convolution => {
                let a = tensors(frame, 2)?;
                let (lhs, rhs) = (&a[0].ty, &a[1].ty);
                let plan = self
                    .cache
                    .conv_plan(cx.op, lhs, rhs, || conv::plan_for(cx, lhs, rhs))?;
                single(conv::convolution_with(cx, &a[0], &a[1], &plan.2)?)
            }
            K::ReduceWindow => self.exec_reduce_window(frame, cx)?,
            K::SelectAndScatter => self.exec_select_and_scatter(frame, cx)?,
            _ => return Err(cx.unsupported("the reference evaluator does not implement this op")),
        })
    }

    /// Evaluates `region` on tensor arguments and returns its tensor results.
    pub(super) fn call_region(
        &mut self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
        region: &'m Region,
        args: Vec<Literal>,
    ) -> Result<Vec<Literal>, IrError> {
        let values = args.into_iter().map(Value::Tensor).collect();
        self.exec_region(frame, region, values)?
            .into_iter()
            .map(|v| match v {
                Value::Tensor(lit) => Ok(lit),
                _ => Err(cx.invalid("a region returned a non-tensor value")),
            })
            .collect()
    }

    /// Evaluates a predicate region (sort comparator, select) on `args` holding `len`
    /// lanes each, returning one boolean per lane.
    pub(super) fn call_predicate(
        &mut self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
        region: &'m Region,
        args: Vec<Literal>,
        len: usize,
    ) -> Result<Vec<bool>, IrError> {
        let out = self.call_region(frame, cx, region, args)?;
        match out.as_slice() {
            [lit] if lit.ty.element_type == crate::ElementType::Pred => {
                let n = lit.data.len();
                if n == len {
                    Ok(lit.data.iter().map(|&b| b != 0).collect())
                } else if n == 1 {
                    Ok(vec![lit.data[0] != 0; len])
                } else {
                    Err(cx.invalid(format!("a predicate region returned {n} values for {len}")))
                }
            }
            _ => Err(cx.invalid("a predicate region must return one i1 value")),
        }
    }

    /// Applies `body` to the pairs `(dsts[p], srcs[p])` for every `p` in `pairs`:
    /// `acc[k][dst] = body(acc[0][dst].., src[0][src]..)[k]`. Destinations must be distinct.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn combine_wave(
        &mut self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
        body: &Body<'m>,
        acc: &mut [Literal],
        src: &[Literal],
        dsts: &[usize],
        srcs: &[usize],
    ) -> Result<(), IrError> {
        let n = acc.len();
        match &body.kind {
            BodyKind::Replace => {
                for k in 0..n {
                    if src[k].ty.element_type != acc[k].ty.element_type {
                        return Err(cx.invalid("update and operand element types differ"));
                    }
                    let vals = take(&src[k], srcs, false);
                    put(&mut acc[k], dsts, &vals.data);
                }
                return Ok(());
            }
            BodyKind::Simple(kind) if src[0].ty.element_type == acc[0].ty.element_type => {
                let et = acc[0].ty.element_type;
                let a = decode(&take(&acc[0], dsts, false));
                let b = decode(&take(&src[0], srcs, false));
                let out = binary_arrays(kind, a, b, et.bit_width() as u32).ok_or_else(|| {
                    cx.invalid(format!(
                        "{} is not defined on element type {et}",
                        kind.name()
                    ))
                })?;
                put(&mut acc[0], dsts, &encode_bytes(&out, et));
                return Ok(());
            }
            _ => {}
        }
        // General bodies (and simple ones on mixed types) run the region.
        let region = body.region;
        let lanes = matches!(body.kind, BodyKind::General { lanes: true });
        let mut run = |this: &mut Self,
                       acc: &mut [Literal],
                       d: &[usize],
                       s: &[usize],
                       scalar: bool|
         -> Result<(), IrError> {
            let mut args: Vec<Literal> = acc.iter().map(|a| take(a, d, scalar)).collect();
            args.extend(src.iter().map(|x| take(x, s, scalar)));
            let out = this.call_region(frame, cx, region, args)?;
            if out.len() != n {
                return Err(cx.invalid(format!("body returned {} values, expected {n}", out.len())));
            }
            for (a, v) in acc.iter_mut().zip(out) {
                let len = v.ty.num_elements().unwrap_or(0);
                if v.ty.element_type != a.ty.element_type || (len != d.len() && len != 1) {
                    return Err(cx.invalid(format!(
                        "body returned {}, expected {} values of {}",
                        v.ty,
                        d.len(),
                        a.ty.element_type
                    )));
                }
                put(a, d, &v.data);
            }
            Ok(())
        };
        if lanes {
            run(self, acc, dsts, srcs, false)
        } else {
            for (&d, &s) in dsts.iter().zip(srcs) {
                run(self, acc, &[d], &[s], true)?;
            }
            Ok(())
        }
    }

    /// Applies `body` to all pairs in order, wave by wave.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn combine_all(
        &mut self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
        body: &Body<'m>,
        acc: &mut [Literal],
        src: &[Literal],
        dsts: &[usize],
        srcs: &[usize],
    ) -> Result<(), IrError> {
        let n_dst = acc.first().map_or(0, |a| a.ty.num_elements().unwrap_or(0));
        for wave in waves(dsts, n_dst) {
            let d: Vec<usize> = wave.iter().map(|&p| dsts[p]).collect();
            let s: Vec<usize> = wave.iter().map(|&p| srcs[p]).collect();
            self.combine_wave(frame, cx, body, acc, src, &d, &s)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waves_keep_destinations_distinct_and_ordered() {
        // Destinations 3, 1, 3, 3, 1: first occurrences form wave 0, second ones wave 1, ...
        let w = waves(&[3, 1, 3, 3, 1], 4);
        assert_eq!(w, vec![vec![0, 1], vec![2, 4], vec![3]]);
    }
}
