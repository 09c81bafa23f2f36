//! `reduce_window` and `select_and_scatter`: windowed reductions over padded, dilated inputs.
//!
//! A window position maps to an input element only when it falls on a real element of the
//! base-dilated, padded input; positions on padding or dilation holes are skipped, which
//! equals the spec's padding with the init value whenever the init value is the body's
//! identity (as XLA CPU does). The accumulation itself is the wave machinery of
//! [`super::body`]: one pass per window position over all outputs at once, the outputs'
//! sources listed one position at a time.
//!
//! One input with a simple body (`add`, `maximum`, ... on f32, f64, f16, bf16 or integers)
//! skips the waves: [`loops`] folds each output's window directly in the same order, and a
//! window spanning a whole dimension (a cumulative sum) runs as [`scan`]'s O(n) tree in the
//! order XLA's CPU backend rewrites it to. `select_and_scatter` selecting with one plain
//! `compare` and scattering with a simple body (a max pool's gradient) picks each window's
//! element with the same loops and scatters in window order, as the waves do.

mod element_fn;
mod loops;
mod scan;
#[cfg(test)]
mod typed_tests;

use super::body::{classify, region, take, BodyKind};
use super::context::{extents, strides, OpCx};
use super::plan::ScaledWindow;
use super::reduce::lane_safe;
use super::typed::{build_overwritten, view_bytes, Plain};
use super::{tensor_operand, Frame, Interp, Value};
use crate::attrs::{ComparisonDirection, ComparisonType};
use crate::{Attribute, Block, ElementType, IrError, Literal, OpKind, Region, TensorType};

/// Window geometry of one op, validated against the input shape.
struct Geometry {
    in_ext: Vec<usize>,
    window: Vec<usize>,
    strides: Vec<usize>,
    base_dil: Vec<usize>,
    win_dil: Vec<usize>,
    pad_lo: Vec<i64>,
    pad_hi: Vec<i64>,
    out_ext: Vec<usize>,
    /// Every position any output can reach fits an `i64` with room to spare.
    small: bool,
}

fn positive(cx: OpCx<'_>, name: &str, v: Vec<i64>, rank: usize) -> Result<Vec<usize>, IrError> {
    if v.len() != rank {
        return Err(cx.invalid(format!("`{name}` must have {rank} entries")));
    }
    v.iter()
        .map(|&x| {
            usize::try_from(x)
                .ok()
                .filter(|&x| x > 0)
                .ok_or_else(|| cx.invalid(format!("`{name}` holds {x}, must be positive")))
        })
        .collect()
}

fn geometry(cx: OpCx<'_>, in_shape: &[i64], dilations: bool) -> Result<Geometry, IrError> {
    let rank = in_shape.len();
    let in_ext = extents(in_shape);
    let window = positive(cx, "window_dimensions", cx.i64s("window_dimensions")?, rank)?;
    let ones = vec![1i64; rank];
    let strides = positive(
        cx,
        "window_strides",
        cx.i64s_or("window_strides", ones.clone())?,
        rank,
    )?;
    let (base_dil, win_dil) = if dilations {
        (
            positive(
                cx,
                "base_dilations",
                cx.i64s_or("base_dilations", ones.clone())?,
                rank,
            )?,
            positive(
                cx,
                "window_dilations",
                cx.i64s_or("window_dilations", ones)?,
                rank,
            )?,
        )
    } else {
        (vec![1; rank], vec![1; rank])
    };
    let padding = cx.i64s_or("padding", vec![0; 2 * rank])?;
    if padding.len() != 2 * rank {
        return Err(cx.invalid(format!("`padding` must have {rank} pairs")));
    }
    let mut out_ext = Vec::with_capacity(rank);
    let mut pad_lo = Vec::with_capacity(rank);
    let mut pad_hi = Vec::with_capacity(rank);
    for d in 0..rank {
        let (lo, hi) = (padding[2 * d], padding[2 * d + 1]);
        // In i128 so that no attribute value can overflow.
        let dilated = if in_ext[d] == 0 {
            0
        } else {
            (in_ext[d] as i128 - 1) * base_dil[d] as i128 + 1
        };
        let padded = dilated + i128::from(lo) + i128::from(hi);
        let span = (window[d] as i128 - 1) * win_dil[d] as i128 + 1;
        let size = if padded < span {
            0
        } else {
            (padded - span) / strides[d] as i128 + 1
        };
        out_ext.push(usize::try_from(size).map_err(|_| cx.invalid("the output is too large"))?);
        pad_lo.push(lo);
        pad_hi.push(hi);
    }
    const LIMIT: i128 = 1 << 40;
    let small = (0..rank).all(|d| {
        let reach = [
            in_ext[d] as i128 * base_dil[d] as i128,
            out_ext[d] as i128 * strides[d] as i128,
            window[d] as i128 * win_dil[d] as i128,
            i128::from(padding[2 * d]).abs(),
            i128::from(padding[2 * d + 1]).abs(),
        ];
        reach.iter().all(|&r| r < LIMIT)
    });
    Ok(Geometry {
        in_ext,
        window,
        strides,
        base_dil,
        win_dil,
        pad_lo,
        pad_hi,
        out_ext,
        small,
    })
}

impl Geometry {
    /// Calls `visit` with, for each window position in row-major order, the flat input
    /// index each output (row-major) reads at it, if it falls on a real element.
    fn for_each_position(
        &self,
        mut visit: impl FnMut(&[Option<usize>]) -> Result<(), IrError>,
    ) -> Result<(), IrError> {
        let rank = self.in_ext.len();
        let in_str = strides(&self.in_ext);
        let n_out: usize = self.out_ext.iter().product();
        let n_win: usize = self.window.iter().product();
        let mut per_out = Vec::with_capacity(n_out);
        let mut k = vec![0usize; rank];
        for _ in 0..n_win {
            per_out.clear();
            let mut o = vec![0usize; rank];
            for _ in 0..n_out {
                let mut flat = Some(0usize);
                for d in 0..rank {
                    match self.source(d, o[d], k[d]) {
                        Some(i) => flat = flat.map(|f| f + i * in_str[d]),
                        None => {
                            flat = None;
                            break;
                        }
                    }
                }
                per_out.push(flat);
                advance(&mut o, &self.out_ext);
            }
            visit(&per_out)?;
            advance(&mut k, &self.window);
        }
        Ok(())
    }

    /// The input index along `d` that output index `o` reads at window index `k`, unless
    /// that falls on padding or a base-dilation hole.
    #[inline]
    fn source(&self, d: usize, o: usize, k: usize) -> Option<usize> {
        // In i128 so that no attribute value can overflow.
        let pos = o as i128 * self.strides[d] as i128 + k as i128 * self.win_dil[d] as i128
            - i128::from(self.pad_lo[d]);
        let bd = self.base_dil[d] as i128;
        if pos < 0 || pos % bd != 0 || pos / bd >= self.in_ext[d] as i128 {
            return None;
        }
        Some((pos / bd) as usize)
    }

    /// Calls `visit` with the input index along `d` of each window position of output
    /// index `o` that falls on a real element, in order.
    #[inline]
    fn for_each_source(&self, d: usize, o: usize, mut visit: impl FnMut(usize)) {
        if self.base_dil[d] == 1 && self.small {
            // Without holes the real positions are the ones inside the input.
            let start = (o * self.strides[d]) as i64 - self.pad_lo[d];
            let step = self.win_dil[d] as i64;
            let n = self.in_ext[d] as i64;
            for k in 0..self.window[d] as i64 {
                let pos = start + k * step;
                if (0..n).contains(&pos) {
                    visit(pos as usize);
                }
            }
        } else {
            for k in 0..self.window[d] {
                if let Some(i) = self.source(d, o, k) {
                    visit(i);
                }
            }
        }
    }

    /// True when the window leaves dimension `d` alone: size 1, stride 1, no padding or
    /// base dilation, so output and input agree along it.
    fn untouched(&self, d: usize) -> bool {
        self.window[d] == 1
            && self.strides[d] == 1
            && self.pad_lo[d] == 0
            && self.pad_hi[d] == 0
            && self.base_dil[d] == 1
            && self.win_dil[d] == 1
    }
}

/// Row-major increment of a multi-index.
fn advance(idx: &mut [usize], ext: &[usize]) {
    for d in (0..idx.len()).rev() {
        idx[d] += 1;
        if idx[d] < ext[d] {
            return;
        }
        idx[d] = 0;
    }
}

/// Checks that `init` is one element of `ty`'s element type.
fn check_init(cx: OpCx<'_>, init: &Literal, ty: &TensorType) -> Result<(), IrError> {
    if init.ty.num_elements() != Some(1) || init.ty.element_type != ty.element_type {
        return Err(cx.invalid(format!(
            "init value {} must be a scalar of {}",
            init.ty, ty.element_type
        )));
    }
    Ok(())
}

/// A literal of `ty` filled with the single element of `init`.
fn filled(cx: OpCx<'_>, init: &Literal, ty: &TensorType) -> Result<Literal, IrError> {
    check_init(cx, init, ty)?;
    let n = ty.num_elements().unwrap_or(0);
    Literal::new(ty.clone(), init.data.repeat(n))
}

/// `reduce_window` of one input with a simple body on typed elements, or `None` when the
/// element type or the geometry has no typed loop.
fn typed_reduce_window(
    geo: &Geometry,
    kind: &OpKind,
    input: &Literal,
    init: &Literal,
    out_ty: TensorType,
    scale: Option<Scale>,
) -> Option<Result<Literal, IrError>> {
    let et = input.ty.element_type;
    if init.ty.element_type != et
        || out_ty.element_type != et
        || !geo.small
        || geo.in_ext.is_empty()
        || (scale.is_some() && et != ElementType::F32)
    {
        return None;
    }
    if !typed_paths_enabled() {
        return None;
    }
    struct Work<'a> {
        geo: &'a Geometry,
        input: &'a Literal,
        init: &'a Literal,
        out_ty: TensorType,
        scale: Option<Scale>,
    }
    impl element_fn::Visit for Work<'_> {
        type Out = Result<Literal, IrError>;
        fn visit<T: Plain + PartialOrd + Send + Sync, F: Fn(T, T) -> T + Copy + Send + Sync>(
            self,
            f: F,
        ) -> Self::Out {
            let x = view_bytes::<T>(&self.input.data);
            let init = view_bytes::<T>(&self.init.data)[0];
            let n = self.out_ty.num_elements().unwrap_or(0);
            // Only f32 windows are given a scale (checked above).
            let scale = self.scale.filter(|_| T::ET == ElementType::F32);
            let finish = |out: &mut [T]| {
                if let Some(scale) = scale {
                    scale.apply(bytemuck::cast_slice_mut(out));
                }
            };
            build_overwritten(self.out_ty, n, |out: &mut [T]| {
                match scan::scan_of(self.geo) {
                    Some(s) => {
                        scan::scan(&s, &x, init, f, out);
                        finish(out);
                    }
                    None => {
                        let fold = loops::Reduce { x: &x, init, f };
                        loops::fold_windows(self.geo, &fold, out, finish);
                    }
                }
            })
        }
    }
    let work = Work {
        geo,
        input,
        init,
        out_ty,
        scale,
    };
    element_fn::with_element_fn(kind, et, work)
}

/// The product a [`ScaledWindow`] applies to each f32 output (on either side of the
/// product: only a NaN's payload could tell, and the op-by-op product does not fix the
/// order either).
#[derive(Clone, Copy)]
struct Scale {
    factor: f32,
}

impl Scale {
    #[inline(always)]
    fn apply(self, out: &mut [f32]) {
        let s = self.factor;
        out.iter_mut().for_each(|v| *v *= s);
    }
}

/// `select_and_scatter` whose select region is `compare(dir, selected, candidate)` and
/// whose scatter region is simple, on typed elements of one plain type, or `None`.
fn typed_select_and_scatter(
    geo: &Geometry,
    select: &Region,
    kind: &OpKind,
    args: [&Literal; 3],
    out_ty: TensorType,
) -> Option<Result<Literal, IrError>> {
    let et = out_ty.element_type;
    let plain = !matches!(et, ElementType::F16 | ElementType::BF16);
    if !plain
        || args.iter().any(|a| a.ty.element_type != et)
        || !geo.small
        || geo.in_ext.is_empty()
        || !typed_paths_enabled()
    {
        return None;
    }
    let dir = plain_comparison(select)?;
    struct Work<'a> {
        geo: &'a Geometry,
        dir: ComparisonDirection,
        args: [&'a Literal; 3],
        out_ty: TensorType,
    }
    impl element_fn::Visit for Work<'_> {
        type Out = Result<Literal, IrError>;
        fn visit<T: Plain + PartialOrd + Send + Sync, F: Fn(T, T) -> T + Copy + Send + Sync>(
            self,
            f: F,
        ) -> Self::Out {
            use ComparisonDirection as D;
            let x = view_bytes::<T>(&self.args[0].data);
            let mut selected = vec![loops::NONE; self.geo.out_ext.iter().product()];
            fn select<T: Copy + Sync, P: Fn(T, T) -> bool + Sync>(
                geo: &Geometry,
                x: &[T],
                keep: P,
                selected: &mut [usize],
            ) {
                loops::fold_windows(geo, &loops::Select { x, keep }, selected, |_| {});
            }
            let (geo, s) = (self.geo, &mut selected);
            match self.dir {
                D::Ge => select(geo, &x, |a: T, b: T| a >= b, s),
                D::Gt => select(geo, &x, |a: T, b: T| a > b, s),
                D::Le => select(geo, &x, |a: T, b: T| a <= b, s),
                D::Lt => select(geo, &x, |a: T, b: T| a < b, s),
                D::Eq => select(geo, &x, |a: T, b: T| a == b, s),
                D::Ne => select(geo, &x, |a: T, b: T| a != b, s),
            }
            let source = view_bytes::<T>(&self.args[1].data);
            let init = view_bytes::<T>(&self.args[2].data)[0];
            let n = self.out_ty.num_elements().unwrap_or(0);
            // In the order of the windows, as the general path's waves combine them.
            build_overwritten(self.out_ty, n, |out: &mut [T]| {
                out.fill(init);
                for (&s, &v) in selected.iter().zip(source.iter()) {
                    if s != loops::NONE {
                        out[s] = f(out[s], v);
                    }
                }
            })
        }
    }
    let work = Work {
        geo,
        dir,
        args,
        out_ty,
    };
    element_fn::with_element_fn(kind, et, work)
}

/// The direction of a region `return compare(dir, %arg0, %arg1)` on IEEE order (not total
/// order), or `None`.
fn plain_comparison(region: &Region) -> Option<ComparisonDirection> {
    let [block] = region.blocks.as_slice() else {
        return None;
    };
    let [cmp, ret] = block.ops.as_slice() else {
        return None;
    };
    let total = matches!(
        cmp.attr("compare_type"),
        Some(Attribute::ComparisonType(ComparisonType::TotalOrder))
    );
    if cmp.kind != OpKind::Compare
        || total
        || !matches!(ret.kind, OpKind::Return | OpKind::FuncReturn)
        || ret.operands != cmp.results
        || block.arguments.len() != 2
        || cmp.operands != block.arguments
    {
        return None;
    }
    match cmp.attr("comparison_direction")? {
        Attribute::ComparisonDirection(d) => Some(*d),
        _ => None,
    }
}

#[cfg(test)]
thread_local! {
    /// Set by tests to compare the typed loops with the general path.
    static GENERAL_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// False while a test asks for the general path.
fn typed_paths_enabled() -> bool {
    #[cfg(test)]
    if GENERAL_ONLY.with(|g| g.get()) {
        return false;
    }
    true
}

impl<'m> Interp<'m> {
    /// Evaluates `reduce_window` with any number of inputs.
    pub(super) fn exec_reduce_window(
        &mut self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
    ) -> Result<Vec<Value>, IrError> {
        self.reduce_window(frame, cx, None)
    }

    /// Runs a [`ScaledWindow`] step: the window fold, each output multiplied by the factor
    /// as it is written.
    pub(super) fn exec_scaled_window(
        &mut self,
        frame: &mut Frame<'m>,
        block: &'m Block,
        step: &ScaledWindow,
    ) -> Result<(), IrError> {
        let op = block.ops.get(step.window).ok_or_else(|| IrError::Eval {
            detail: "a scaled window names an op outside its block".to_string(),
        })?;
        let cx = OpCx {
            op,
            func: frame.func,
        };
        let factor = tensor_operand(frame, cx, step.scale)?;
        let factor = match (factor.ty.element_type, factor.data.as_slice()) {
            (ElementType::F32, &[a, b, c, d]) => f32::from_le_bytes([a, b, c, d]),
            _ => return Err(cx.invalid("the scale of a scaled window must be one f32")),
        };
        let scale = Scale { factor };
        let mut results = self.reduce_window(frame, cx, Some(scale))?;
        match results.pop() {
            Some(value) if results.is_empty() => super::set_value(frame, step.result, value),
            _ => Err(cx.invalid("a scaled window has one result")),
        }
    }

    /// `reduce_window`, its single f32 result multiplied by `scale` when given.
    fn reduce_window(
        &mut self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
        scale: Option<Scale>,
    ) -> Result<Vec<Value>, IrError> {
        let n_operands = cx.op.operands.len();
        if n_operands < 2 || !n_operands.is_multiple_of(2) {
            return Err(cx.invalid("needs inputs and as many init values"));
        }
        let n = n_operands / 2;
        cx.expect_results(n)?;
        let mut inputs = Vec::with_capacity(n_operands);
        for &id in &cx.op.operands {
            inputs.push(tensor_operand(frame, cx, id)?.clone());
        }
        let inits = inputs.split_off(n);
        for x in &inputs {
            if x.ty.shape != inputs[0].ty.shape {
                return Err(cx.invalid("inputs must have the same shape"));
            }
        }
        let geo = geometry(cx, &inputs[0].ty.shape, true)?;
        let mut out_tys = Vec::with_capacity(n);
        for (i, init) in inits.iter().enumerate() {
            let ty = cx.result_tensor(i)?;
            if extents(&ty.shape) != geo.out_ext {
                return Err(cx.invalid(format!(
                    "result type {ty} does not match the window shape {:?}",
                    geo.out_ext
                )));
            }
            check_init(cx, init, ty)?;
            out_tys.push(ty);
        }
        if scale.is_some() && (n != 1 || out_tys[0].element_type != ElementType::F32) {
            return Err(cx.invalid("only one f32 window result can be scaled"));
        }
        let body = classify(region(cx, 0)?, n);
        if let ([input], [init], BodyKind::Simple(kind)) = (&inputs[..], &inits[..], &body.kind) {
            let out_ty = out_tys[0].clone();
            if let Some(out) = typed_reduce_window(&geo, kind, input, init, out_ty, scale) {
                return Ok(vec![Value::Tensor(out?)]);
            }
        }
        let mut acc = Vec::with_capacity(n);
        for (init, ty) in inits.iter().zip(out_tys) {
            acc.push(filled(cx, init, ty)?);
        }
        let mut dsts = Vec::new();
        let mut srcs = Vec::new();
        geo.for_each_position(|per_out| {
            dsts.clear();
            srcs.clear();
            for (o, s) in per_out.iter().enumerate() {
                if let Some(s) = s {
                    dsts.push(o);
                    srcs.push(*s);
                }
            }
            if dsts.is_empty() {
                return Ok(());
            }
            self.combine_wave(frame, cx, &body, &mut acc, &inputs, &dsts, &srcs)
        })?;
        if let (Some(scale), [out]) = (scale, &mut acc[..]) {
            let mut values = out
                .to_f32_vec()
                .ok_or_else(|| cx.invalid("a scaled window's result must be f32"))?;
            scale.apply(&mut values);
            *out = Literal::from_f32(&out.ty.shape, &values)?;
        }
        Ok(acc.into_iter().map(Value::Tensor).collect())
    }

    /// Evaluates `select_and_scatter`: picks one element per window with the select region,
    /// then combines each source value into the picked position with the scatter region.
    pub(super) fn exec_select_and_scatter(
        &mut self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
    ) -> Result<Vec<Value>, IrError> {
        cx.expect_operands(3)?;
        cx.expect_results(1)?;
        let operand = tensor_operand(frame, cx, cx.op.operands[0])?.clone();
        let source = tensor_operand(frame, cx, cx.op.operands[1])?.clone();
        let init = tensor_operand(frame, cx, cx.op.operands[2])?.clone();
        let geo = geometry(cx, &operand.ty.shape, false)?;
        if extents(&source.ty.shape) != geo.out_ext {
            return Err(cx.invalid(format!(
                "source shape {:?} does not match the window shape {:?}",
                source.ty.shape, geo.out_ext
            )));
        }
        let out_ty = cx.result_tensor(0)?;
        if out_ty.shape != operand.ty.shape {
            return Err(cx.invalid("the result must have the operand's shape"));
        }
        let select = region(cx, 0)?;
        let scatter = classify(region(cx, 1)?, 1);
        check_init(cx, &init, out_ty)?;
        if let BodyKind::Simple(kind) = &scatter.kind {
            let args = [&operand, &source, &init];
            if let Some(out) = typed_select_and_scatter(&geo, select, kind, args, out_ty.clone()) {
                return Ok(vec![Value::Tensor(out?)]);
            }
        }
        let lanes = lane_safe(select);
        let n_out: usize = geo.out_ext.iter().product();
        let mut selected: Vec<Option<usize>> = vec![None; n_out];
        geo.for_each_position(|per_out| {
            // Windows with a selection compare it with the new candidate; others take it.
            let mut contested = Vec::new();
            for (o, s) in per_out.iter().enumerate() {
                if let Some(s) = *s {
                    match selected[o] {
                        None => selected[o] = Some(s),
                        Some(cur) => contested.push((o, cur, s)),
                    }
                }
            }
            if contested.is_empty() {
                return Ok(());
            }
            let cur: Vec<usize> = contested.iter().map(|c| c.1).collect();
            let cand: Vec<usize> = contested.iter().map(|c| c.2).collect();
            let keep = if lanes {
                let args = vec![take(&operand, &cur, false), take(&operand, &cand, false)];
                self.call_predicate(frame, cx, select, args, cur.len())?
            } else {
                let mut keep = Vec::with_capacity(cur.len());
                for (&a, &b) in cur.iter().zip(&cand) {
                    let args = vec![take(&operand, &[a], true), take(&operand, &[b], true)];
                    keep.push(self.call_predicate(frame, cx, select, args, 1)?[0]);
                }
                keep
            };
            for ((o, _, s), keep) in contested.into_iter().zip(keep) {
                if !keep {
                    selected[o] = Some(s);
                }
            }
            Ok(())
        })?;
        let mut dsts = Vec::new();
        let mut srcs = Vec::new();
        for (o, s) in selected.iter().enumerate() {
            if let Some(s) = s {
                dsts.push(*s);
                srcs.push(o);
            }
        }
        let mut acc = vec![filled(cx, &init, out_ty)?];
        self.combine_all(frame, cx, &scatter, &mut acc, &[source], &dsts, &srcs)?;
        Ok(acc.into_iter().map(Value::Tensor).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::attrs::ComparisonDirection;
    use crate::{Attribute, ElementType, Literal, Module, OpKind, Type};

    /// `reduce_window` of one input with an `add`/`max` body (or `general`: `a + 2*b`).
    fn reduce_window_module(
        body: &str,
        x: &Literal,
        init: &Literal,
        out_shape: &[i64],
        attrs: Vec<(&'static str, Attribute)>,
    ) -> Module {
        let et = x.ty.element_type;
        let (mut b, p) =
            FuncBuilder::new(&[Type::Tensor(x.ty.clone()), Type::Tensor(init.ty.clone())]);
        let s = t(&[], et);
        let region = b.region(&[s.clone(), s.clone()], |b, a| match body {
            "add" => vec![b.op(OpKind::Add, &[a[0], a[1]], s.clone(), vec![])],
            "max" => vec![b.op(OpKind::Maximum, &[a[0], a[1]], s.clone(), vec![])],
            _ => {
                let two = b.constant(&f32s(&[], &[2.0]));
                let m = b.op(OpKind::Multiply, &[a[1], two], s.clone(), vec![]);
                vec![b.op(OpKind::Add, &[a[0], m], s.clone(), vec![])]
            }
        });
        let r = b.op_full(
            OpKind::ReduceWindow,
            &p,
            &[t(out_shape, et)],
            attrs,
            vec![region],
        );
        b.finish(&r)
    }

    fn padding(p: &[i64]) -> Attribute {
        Attribute::Elements(crate::ElementsAttr {
            ty: crate::TensorType::new([p.len() as i64 / 2, 2], ElementType::S64),
            data: p
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<u8>>()
                .into(),
            splat: false,
        })
    }

    #[test]
    fn reduce_window_sum_with_stride_and_padding() {
        // x = [1, 2, 3, 4, 5], window 2, stride 2, padding (1, 0):
        // padded [_, 1, 2, 3, 4, 5] -> windows [_,1], [2,3], [4,5] -> 1, 5, 9.
        let x = f32s(&[5], &[1.0, 2.0, 3.0, 4.0, 5.0]);
        let init = f32s(&[], &[0.0]);
        let attrs = vec![
            ("window_dimensions", i64s(&[2])),
            ("window_strides", i64s(&[2])),
            ("padding", padding(&[1, 0])),
        ];
        for body in ["add", "general"] {
            let m = reduce_window_module(body, &x, &init, &[3], attrs.clone());
            let r = crate::eval::run_function(&m, "main", &[x.clone(), init.clone()]).unwrap();
            // general body a + 2b doubles every element: 2, 10, 18.
            let want = if body == "add" {
                vec![1.0, 5.0, 9.0]
            } else {
                vec![2.0, 10.0, 18.0]
            };
            assert_eq!(to_f32(&r[0]), want);
        }
    }

    #[test]
    fn reduce_window_max_2d_with_dilations() {
        // 3x3 input 0..9; window 2x2 with window dilation 2 in dim 1 picks columns (0, 2);
        // base dilation 1 everywhere. Outputs [2, 1]: max of rows (r, r+1), cols (0, 2).
        let x = f32s(&[3, 3], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]);
        let init = f32s(&[], &[f32::NEG_INFINITY]);
        let attrs = vec![
            ("window_dimensions", i64s(&[2, 2])),
            ("window_dilations", i64s(&[1, 2])),
        ];
        let m = reduce_window_module("max", &x, &init, &[2, 1], attrs);
        let r = crate::eval::run_function(&m, "main", &[x.clone(), init.clone()]).unwrap();
        assert_eq!(to_f32(&r[0]), vec![5.0, 8.0]);
        // Base dilation 2 in dim 0 turns the 3 rows into 5 (holes at 1 and 3); windows of
        // 2 rows x 1 column then see one real row each: output rows 0..4 read rows 0,1,1,2.
        let attrs = vec![
            ("window_dimensions", i64s(&[2, 1])),
            ("base_dilations", i64s(&[2, 1])),
        ];
        let m = reduce_window_module("max", &x, &init, &[4, 3], attrs);
        let r = crate::eval::run_function(&m, "main", &[x, init]).unwrap();
        assert_eq!(
            to_f32(&r[0]),
            vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
        );
    }

    #[test]
    fn select_and_scatter_routes_to_window_maxima() {
        // Max-pool gradient: operand [1, 5, 3, 2, 8, 4], window 2, stride 2; the maxima are
        // at 1, 2 (3 > 2) and 4, so the source values land there.
        let x = f32s(&[6], &[1.0, 5.0, 3.0, 2.0, 8.0, 4.0]);
        let src = f32s(&[3], &[10.0, 20.0, 30.0]);
        let init = f32s(&[], &[0.0]);
        let types: Vec<Type> = [&x, &src, &init]
            .iter()
            .map(|l| Type::Tensor(l.ty.clone()))
            .collect();
        let (mut b, p) = FuncBuilder::new(&types);
        let s = t(&[], ElementType::F32);
        let select = b.region(&[s.clone(), s.clone()], |b, a| {
            vec![b.compare(ComparisonDirection::Ge, a[0], a[1], &[])]
        });
        let scatter = b.region(&[s.clone(), s.clone()], |b, a| {
            vec![b.op(OpKind::Add, &[a[0], a[1]], s.clone(), vec![])]
        });
        let r = b.op_full(
            OpKind::SelectAndScatter,
            &p,
            &[t(&[6], ElementType::F32)],
            vec![
                ("window_dimensions", i64s(&[2])),
                ("window_strides", i64s(&[2])),
            ],
            vec![select, scatter],
        );
        let m = b.finish(&r);
        let r = crate::eval::run_function(&m, "main", &[x, src, init]).unwrap();
        assert_eq!(to_f32(&r[0]), vec![0.0, 10.0, 20.0, 0.0, 30.0, 0.0]);
    }
}
