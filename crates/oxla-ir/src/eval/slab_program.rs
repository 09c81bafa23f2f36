//! Row groups compiled to slab programs.
//!
//! A row group ([`super::rows`]) runs one slab of rows at a time. Through the interpreter
//! each slab pays the per-op dispatch, copies its input rows out and materialises every
//! value in a fresh buffer. A [`SlabProgram`] resolves that once per group: an f32 chain
//! (with `i1` masks, held as 0.0/1.0: from compares, or arguments and results the caller
//! converts) becomes a flat list of steps over a few buffers, input rows are read in
//! place, constants are computed once, and a buffer is reused as soon as its value dies,
//! so a slab's working set stays in cache.
//!
//! Elementwise steps run the fused kernel's tile instructions, broadcasts its strided
//! loads, and reductions the fold the op-by-op path uses ([`fold_float_block`]), so a
//! program computes the interpreter's bits. A group with any other op or element type
//! keeps the interpreter.

use super::context::{extents, OpCx};
use super::fused::{classify, find_groups, load, tensor_of, FusedKernel, Inst, Member, Source};
use super::reduce::{fold_float_block, simple_body};
use super::tile_code::KernelCode;
use super::typed;
use crate::{ElementType, Function, OpKind};
use smallvec::SmallVec;
use std::borrow::Cow;

/// Where a value's elements live while a slab runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Loc {
    /// Argument `k` of the slab function, read in place.
    Arg(usize),
    /// Constant `k` of the program.
    Const(usize),
    /// Buffer `k` of the working set.
    Buf(usize),
    /// Output `k`, written in place (no step reads it).
    Out(usize),
}

/// One step; operands and destinations are value numbers of the slab function.
#[derive(Clone, Debug)]
enum Step {
    /// An elementwise tile instruction over whole values of one shape.
    Elem(Inst, usize),
    /// `dst` is `src` read as `shape` with `src`'s stride along each dimension (a broadcast
    /// or a transpose).
    Broadcast {
        src: usize,
        dst: usize,
        shape: Vec<usize>,
        strides: Vec<usize>,
    },
    /// `dst[o, i]` folds `src[o, r, i]` over `r`, starting from `init`'s single element.
    Reduce {
        kind: OpKind,
        src: usize,
        init: usize,
        dst: usize,
        reduced: usize,
        inner: usize,
    },
    /// `dst` is the padding value `value` with `src` (of `shape`'s leading extents) placed
    /// at `lo + index * step` along each dimension.
    Pad {
        src: usize,
        value: usize,
        dst: usize,
        pad: Box<PadShape>,
    },
    /// Fused group `kernel` of the program, reading `args` and writing `dsts`, tile by tile;
    /// with `sum`, also a row sum of one of its outputs (a reduction merged into it).
    Fused {
        kernel: usize,
        args: Vec<usize>,
        dsts: Vec<usize>,
        sum: Option<Box<RowSum>>,
    },
}

/// Where a [`Step::Pad`] puts its operand: per dimension, the operand's extent, the
/// result's, the first position and the step between positions (non-negative padding).
#[derive(Clone, Debug)]
struct PadShape {
    src: Vec<usize>,
    dst: Vec<usize>,
    lo: Vec<usize>,
    step: Vec<usize>,
}

impl PadShape {
    /// Fills `out` with `value`, then places `src` (rows of the last dimension at a time).
    fn exec(&self, src: &[f32], value: f32, out: &mut [f32]) -> Result<(), String> {
        let fits = src.len() == self.src.iter().product::<usize>()
            && out.len() == self.dst.iter().product::<usize>();
        let (Some(&n), true) = (self.src.last(), fits) else {
            return Err("a pad's values do not fit it".to_string());
        };
        out.fill(value);
        if n == 0 {
            return Ok(());
        }
        let dst_strides = super::context::strides(&self.dst);
        let rank = self.src.len();
        let (last_lo, last_step) = (self.lo[rank - 1], self.step[rank - 1]);
        let mut index = vec![0usize; rank - 1];
        for row in src.chunks_exact(n) {
            let base: usize = (0..rank - 1)
                .map(|d| (self.lo[d] + index[d] * self.step[d]) * dst_strides[d])
                .sum::<usize>()
                + last_lo;
            if last_step == 1 {
                out[base..base + n].copy_from_slice(row);
            } else {
                for (j, &v) in row.iter().enumerate() {
                    out[base + j * last_step] = v;
                }
            }
            // The next row's index, last dimension fastest.
            for d in (0..rank - 1).rev() {
                index[d] += 1;
                if index[d] < self.src[d] {
                    break;
                }
                index[d] = 0;
            }
        }
        Ok(())
    }
}

/// A sum along the rows of a fused group's output `src`, from `init`, into `dst`: one
/// [`Step::Reduce`] folded into the group's generated code, so the values are summed while
/// they are in registers (and not stored at all when nothing else reads them).
#[derive(Clone, Debug)]
struct RowSum {
    src: usize,
    init: usize,
    dst: usize,
    /// Elements per row.
    reduced: usize,
    /// The group with the sum as generated code, and the outputs that code writes.
    code: KernelCode,
    kept: Vec<usize>,
}

impl Step {
    fn dsts(&self) -> Vec<usize> {
        match self {
            Step::Elem(_, d) => vec![*d],
            Step::Broadcast { dst, .. } | Step::Reduce { dst, .. } | Step::Pad { dst, .. } => {
                vec![*dst]
            }
            Step::Fused { dsts, sum, .. } => {
                let mut all = dsts.clone();
                all.extend(sum.as_ref().map(|s| s.dst));
                all
            }
        }
    }

    fn sources(&self) -> Vec<usize> {
        match self {
            Step::Elem(inst, _) => inst.sources().to_vec(),
            Step::Broadcast { src, .. } => vec![*src],
            Step::Reduce { src, init, .. } => vec![*src, *init],
            Step::Pad { src, value, .. } => vec![*src, *value],
            Step::Fused { args, sum, .. } => {
                let mut all = args.clone();
                all.extend(sum.as_ref().map(|s| s.init));
                all
            }
        }
    }
}

/// A slab function compiled to steps over buffers.
#[derive(Debug)]
pub(crate) struct SlabProgram {
    /// Per value of the slab function: where it lives (`None`: not a tensor the program
    /// computes) and its element count.
    locs: Vec<Option<Loc>>,
    lens: Vec<usize>,
    consts: Vec<Vec<f32>>,
    kernels: Vec<FusedKernel>,
    /// The element count of each buffer.
    bufs: Vec<usize>,
    steps: Vec<Step>,
    /// Per step: its destinations and its sources (resolved once: slabs run every step).
    step_values: Vec<(Vec<usize>, Vec<usize>)>,
    /// The values the function returns.
    outputs: Vec<usize>,
    /// The element count of each argument.
    args: Vec<usize>,
}

/// A slab's buffers, allocated once per thread and reused for every slab. Dropped, they go
/// to the thread's [`SPARE`] buffers, for the next run of a program on that thread.
pub(crate) struct Scratch(Vec<Vec<f32>>);

impl Drop for Scratch {
    fn drop(&mut self) {
        let bufs = std::mem::take(&mut self.0);
        // A thread being torn down has no spare list; the buffers are then simply freed.
        let _ = SPARE.try_with(|spare| {
            let mut spare = spare.borrow_mut();
            for buf in bufs {
                spare.push(buf);
                while spare.len() > MAX_SPARE
                    || spare.iter().map(Vec::len).sum::<usize>() > MAX_SPARE_ELEMENTS
                {
                    spare.remove(0);
                }
            }
        });
    }
}

thread_local! {
    /// Scratch buffers of slab programs that ran on this thread, oldest first. A fresh
    /// buffer would be zeroed (and, when large, faulted in page by page) on every run of a
    /// row group; programs write each buffer before reading it, so a stale one serves.
    static SPARE: std::cell::RefCell<Vec<Vec<f32>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The most spare scratch buffers a thread keeps.
const MAX_SPARE: usize = 16;
/// The most elements a thread's spare scratch buffers hold in all (16 MiB).
const MAX_SPARE_ELEMENTS: usize = 4 << 20;

/// Builds a [`SlabProgram`]: values are first numbered steps, then packed into buffers.
struct Builder<'f> {
    func: &'f Function,
    /// Per value: the value whose elements it shares (itself unless it is a reshape or an
    /// identity broadcast or conversion of another).
    root: Vec<usize>,
    /// A value a step computes holds `Loc::Buf(0)` until [`Builder::pack`] gives it its
    /// buffer (or the caller's rows, `Loc::Out`).
    locs: Vec<Option<Loc>>,
    lens: Vec<usize>,
    consts: Vec<Vec<f32>>,
    kernels: Vec<FusedKernel>,
    steps: Vec<Step>,
}

impl Builder<'_> {
    /// The element count of `v`, an f32 or `i1` tensor of static shape.
    fn len_of(&self, v: crate::ValueId) -> Option<usize> {
        let t = tensor_of(self.func, v)?;
        matches!(t.element_type, ElementType::F32 | ElementType::Pred)
            .then(|| t.num_elements())
            .flatten()
    }

    /// Makes `result` share `src`'s elements.
    fn alias(&mut self, result: usize, src: usize) -> Option<()> {
        self.locs.get(src).copied().flatten()?;
        if self.lens[src] != self.lens[result] {
            return None;
        }
        self.root[result] = self.root[src];
        self.locs[result] = self.locs[src];
        Some(())
    }

    /// Adds the steps of `op` (not a constant or the terminator).
    fn op(&mut self, op: &crate::Op) -> Option<()> {
        let [result] = op.results.as_slice() else {
            return None;
        };
        let r = result.index();
        self.lens[r] = self.len_of(*result)?;
        let operands: Vec<usize> = op.operands.iter().map(|v| v.index()).collect();
        // Every operand is a value the program knows.
        for &o in &operands {
            self.locs.get(o).copied().flatten()?;
        }
        if op.kind == OpKind::Reshape {
            let [src] = operands.as_slice() else {
                return None;
            };
            let same_type = tensor_of(self.func, op.operands[0])?.element_type
                == tensor_of(self.func, *result)?.element_type;
            return same_type.then(|| self.alias(r, *src)).flatten();
        }
        if op.kind == OpKind::Reduce {
            return self.reduce(op, r, &operands);
        }
        if op.kind == OpKind::Transpose {
            return self.transpose(op, r, &operands);
        }
        if op.kind == OpKind::Pad {
            return self.pad(op, r, &operands);
        }
        let (shape, member) = classify(self.func, op)?;
        let src = |i: usize| operands.get(i).copied();
        let inst = match member {
            Member::Identity => return self.alias(r, src(0)?),
            Member::Broadcast { identity: true, .. } => return self.alias(r, src(0)?),
            Member::Broadcast { strides, .. } => {
                self.locs[r] = Some(Loc::Buf(0));
                self.steps.push(Step::Broadcast {
                    src: src(0)?,
                    dst: r,
                    shape: extents(&shape),
                    strides,
                });
                return Some(());
            }
            Member::Unary(kind) => Inst::Unary(kind, src(0)?),
            Member::Binary(kind) => Inst::Binary(kind, src(0)?, src(1)?),
            Member::Compare { dir, total } => Inst::Compare(dir, total, src(0)?, src(1)?),
            Member::Select => Inst::Select(src(0)?, src(1)?, src(2)?),
            Member::Clamp => Inst::Clamp(src(0)?, src(1)?, src(2)?),
            Member::Not => Inst::Not(src(0)?),
            Member::IsFinite => Inst::IsFinite(src(0)?),
            Member::And => Inst::And(src(0)?, src(1)?),
            Member::Or => Inst::Or(src(0)?, src(1)?),
            // Slab programs hold f32 values and masks only.
            Member::Xor
            | Member::IntUnary(..)
            | Member::IntBinary(..)
            | Member::IntCompare { .. }
            | Member::Convert(_)
            | Member::Splat(_) => return None,
        };
        // Same-shape operands (checked by `classify`) have the result's element count.
        if inst.sources().iter().any(|&s| self.lens[s] != self.lens[r]) {
            return None;
        }
        self.locs[r] = Some(Loc::Buf(0));
        self.steps.push(Step::Elem(inst, r));
        Some(())
    }

    /// A transpose: a strided load of the operand, which walks it in the result's order.
    fn transpose(&mut self, op: &crate::Op, r: usize, operands: &[usize]) -> Option<()> {
        let [src] = operands else {
            return None;
        };
        let input = tensor_of(self.func, op.operands[0])?;
        let result = tensor_of(self.func, op.results[0])?;
        if input.element_type != result.element_type || self.lens[*src] != self.lens[r] {
            return None;
        }
        let cx = OpCx {
            op,
            func: self.func,
        };
        let perm = cx
            .dims("permutation", &cx.i64s("permutation").ok()?, input.rank())
            .ok()?;
        let ext = extents(&input.shape);
        let in_strides = super::context::strides(&ext);
        let shape: Vec<usize> = perm
            .iter()
            .map(|&p| ext.get(p).copied())
            .collect::<Option<_>>()?;
        if perm.len() != ext.len() || shape != extents(&result.shape) {
            return None;
        }
        self.locs[r] = Some(Loc::Buf(0));
        self.steps.push(Step::Broadcast {
            src: *src,
            dst: r,
            shape,
            strides: perm.iter().map(|&p| in_strides[p]).collect(),
        });
        Some(())
    }

    /// An f32 pad without negative edge padding (which crops; left to the interpreter).
    fn pad(&mut self, op: &crate::Op, r: usize, operands: &[usize]) -> Option<()> {
        let [src, value] = operands else {
            return None;
        };
        let input = tensor_of(self.func, op.operands[0])?;
        let result = tensor_of(self.func, op.results[0])?;
        if input.element_type != ElementType::F32
            || result.element_type != ElementType::F32
            || self.lens[*value] != 1
        {
            return None;
        }
        let cx = OpCx {
            op,
            func: self.func,
        };
        let rank = input.rank();
        let non_negative = |name: &str| -> Option<Vec<usize>> {
            let v = cx.i64s(name).ok()?;
            (v.len() == rank).then_some(())?;
            v.iter().map(|&p| usize::try_from(p).ok()).collect()
        };
        let lo = non_negative("edge_padding_low")?;
        let hi = non_negative("edge_padding_high")?;
        let interior = match cx.i64s("interior_padding") {
            Ok(_) => non_negative("interior_padding")?,
            Err(_) => vec![0; rank],
        };
        let src_shape = extents(&input.shape);
        let dst_shape = extents(&result.shape);
        // The result's extents are what the padding gives (the op was typed so).
        let consistent = (0..rank).all(|d| {
            let n = src_shape[d];
            lo[d] + hi[d] + n + n.saturating_sub(1) * interior[d] == dst_shape[d]
        });
        if rank == 0 || dst_shape.len() != rank || !consistent {
            return None;
        }
        self.locs[r] = Some(Loc::Buf(0));
        self.steps.push(Step::Pad {
            src: *src,
            value: *value,
            dst: r,
            pad: Box::new(PadShape {
                src: src_shape,
                dst: dst_shape,
                lo,
                step: interior.iter().map(|&i| i + 1).collect(),
            }),
        });
        Some(())
    }

    /// A fused group: its f32 outputs get buffers, its inputs are read where they live.
    fn fused(&mut self, kernel: FusedKernel) -> Option<()> {
        if !kernel.writes_only_f32() {
            return None;
        }
        let args: Vec<usize> = kernel.input_values().iter().map(|v| v.index()).collect();
        for &a in &args {
            self.locs.get(a).copied().flatten()?;
        }
        let mut dsts = Vec::new();
        for v in kernel.output_values() {
            let d = v.index();
            *self.lens.get_mut(d)? = self.len_of(v)?;
            self.locs[d] = Some(Loc::Buf(0));
            dsts.push(d);
        }
        self.kernels.push(kernel);
        self.steps.push(Step::Fused {
            kernel: self.kernels.len() - 1,
            args,
            dsts,
            sum: None,
        });
        Some(())
    }

    /// An f32 add/max/min/multiply reduction over adjacent dimensions, folded as the
    /// op-by-op path folds it.
    fn reduce(&mut self, op: &crate::Op, r: usize, operands: &[usize]) -> Option<()> {
        let ([src, init], [region]) = (operands, op.regions.as_slice()) else {
            return None;
        };
        let kind = simple_body(region)?;
        use OpKind as K;
        if !matches!(kind, K::Add | K::Maximum | K::Minimum | K::Multiply) {
            return None;
        }
        let input = tensor_of(self.func, op.operands[0])?;
        let f32s = [op.operands[0], op.operands[1], op.results[0]]
            .iter()
            .all(|&v| tensor_of(self.func, v).map(|t| t.element_type) == Some(ElementType::F32));
        if !f32s || self.lens[*init] != 1 {
            return None;
        }
        let cx = OpCx {
            op,
            func: self.func,
        };
        let mut dims = cx
            .dims("dimensions", &cx.i64s("dimensions").ok()?, input.rank())
            .ok()?;
        dims.sort_unstable();
        let (&first, &last) = (dims.first()?, dims.last()?);
        if last - first + 1 != dims.len() {
            return None;
        }
        let ext = extents(&input.shape);
        let outer: usize = ext[..first].iter().product();
        let reduced: usize = ext[first..=last].iter().product();
        let inner: usize = ext[last + 1..].iter().product();
        if outer * inner != self.lens[r] || outer * reduced * inner != self.lens[*src] {
            return None;
        }
        self.locs[r] = Some(Loc::Buf(0));
        self.steps.push(Step::Reduce {
            kind,
            src: *src,
            init: *init,
            dst: r,
            reduced,
            inner,
        });
        Some(())
    }

    /// Folds each sum along the rows of a fused group's output ([`Step::Reduce`] of an add
    /// over the last dimension, from a constant or argument) into that group's step, where
    /// the group has generated code with the sum.
    fn merge_row_sums(&mut self, outputs: &[usize]) {
        let mut j = 0;
        while j < self.steps.len() {
            if let Some((i, sum)) = self.row_sum_of(j, outputs) {
                if let Step::Fused { sum: slot, .. } = &mut self.steps[i] {
                    *slot = Some(Box::new(sum));
                    self.steps.remove(j);
                    continue;
                }
            }
            j += 1;
        }
    }

    /// The fused step before step `j` that step `j`'s row sum can join, and the sum.
    fn row_sum_of(&self, j: usize, outputs: &[usize]) -> Option<(usize, RowSum)> {
        let Step::Reduce {
            kind: OpKind::Add,
            src,
            init,
            dst,
            reduced,
            inner: 1,
        } = &self.steps[j]
        else {
            return None;
        };
        let (src, init, dst, reduced) = (*src, *init, *dst, *reduced);
        if self.root[src] != src || !matches!(self.locs[init], Some(Loc::Const(_) | Loc::Arg(_))) {
            return None;
        }
        let i = (0..j)
            .rev()
            .find(|&i| self.steps[i].dsts().contains(&src))?;
        let Step::Fused {
            kernel, sum: None, ..
        } = &self.steps[i]
        else {
            return None;
        };
        let kernel = &self.kernels[*kernel];
        if kernel.shape().last() != Some(&reduced) {
            return None;
        }
        // The group still writes `src` when anything but the sum reads it.
        let read_elsewhere = outputs.iter().any(|&o| self.root[o] == src)
            || self
                .steps
                .iter()
                .enumerate()
                .any(|(k, step)| k != j && step.sources().iter().any(|&s| self.root[s] == src));
        let value = crate::ValueId(u32::try_from(src).ok()?);
        let (code, kept) = kernel.row_sum_code(value, read_elsewhere)?;
        Some((
            i,
            RowSum {
                src,
                init,
                dst,
                reduced,
                code,
                kept,
            },
        ))
    }

    /// Gives every step's destination a buffer, reusing those whose values are dead.
    fn pack(&mut self, outputs: &[usize]) -> Vec<usize> {
        let n = self.locs.len();
        // Per root: the last step that reads it (outputs live to the end).
        let mut last_use = vec![0usize; n];
        for (i, step) in self.steps.iter().enumerate() {
            for d in step.dsts() {
                last_use[self.root[d]] = i;
            }
        }
        for (i, step) in self.steps.iter().enumerate() {
            for s in step.sources() {
                last_use[self.root[s]] = i;
            }
        }
        for &o in outputs {
            last_use[self.root[o]] = usize::MAX;
        }
        let mut bufs: Vec<usize> = Vec::new();
        let mut free: Vec<usize> = Vec::new();
        let mut dying: Vec<Vec<usize>> = vec![Vec::new(); self.steps.len()];
        for (i, step) in self.steps.iter().enumerate() {
            for d in step.dsts() {
                if matches!(self.locs[d], Some(Loc::Out(_))) {
                    continue;
                }
                let len = self.lens[d];
                let b = match free.iter().position(|&b| bufs[b] == len) {
                    Some(k) => free.swap_remove(k),
                    None => {
                        bufs.push(len);
                        bufs.len() - 1
                    }
                };
                self.locs[d] = Some(Loc::Buf(b));
                if let Some(list) = dying.get_mut(last_use[d]) {
                    list.push(b);
                }
            }
            // Buffers are freed after the step that last reads them, so a destination is
            // never one of its step's sources.
            free.append(&mut dying[i]);
        }
        // Aliases take their root's buffer.
        for v in 0..n {
            if self.locs[v].is_some() {
                self.locs[v] = self.locs[self.root[v]];
            }
        }
        bufs
    }
}

impl SlabProgram {
    /// Compiles `func` (a row group's slab function), or `None` when it holds an op or
    /// element type the program does not cover.
    pub(crate) fn compile(func: &Function) -> Option<SlabProgram> {
        // Buffers view literal bytes as native f32; literal bytes are little-endian.
        if cfg!(target_endian = "big") {
            return None;
        }
        let [block] = func.body.blocks.as_slice() else {
            return None;
        };
        let n = func.values.len();
        let mut b = Builder {
            func,
            root: (0..n).collect(),
            locs: vec![None; n],
            lens: vec![0; n],
            consts: Vec::new(),
            kernels: Vec::new(),
            steps: Vec::new(),
        };
        // An `i1` value the function returns is computed by its own step (a fused group
        // writes only f32), held as 0.0/1.0 like every mask here.
        let returned = block
            .ops
            .last()
            .map_or(&[][..], |op| op.operands.as_slice());
        let mask_outputs: Vec<bool> = block
            .ops
            .iter()
            .map(|op| {
                op.results.iter().any(|r| {
                    returned.contains(r)
                        && tensor_of(func, *r).map(|t| t.element_type) == Some(ElementType::Pred)
                })
            })
            .collect();
        let groups = find_groups(func, block, true, &mask_outputs);
        let mut kernels: Vec<Option<(FusedKernel, usize)>> =
            groups.kernels.into_iter().map(Some).collect();
        let mut args = Vec::new();
        for (k, a) in block.arguments.iter().enumerate() {
            let t = tensor_of(func, *a)?;
            if !matches!(t.element_type, ElementType::F32 | ElementType::Pred) {
                return None;
            }
            let i = a.index();
            b.lens[i] = t.num_elements()?;
            b.locs[i] = Some(Loc::Arg(k));
            args.push(b.lens[i]);
        }
        // Values whose only reader is a `reduce`: an elementwise op outside the groups that
        // writes one runs as a kernel of its own, so the sum can join its generated code
        // (`merge_row_sums`) instead of folding a stored product.
        let mut readers: std::collections::HashMap<crate::ValueId, (usize, bool)> =
            Default::default();
        for op in &block.ops {
            for v in &op.operands {
                let entry = readers.entry(*v).or_insert((0, true));
                entry.0 += 1;
                entry.1 &= op.kind == OpKind::Reduce;
            }
        }
        let summed_only = |op: &crate::Op| match op.results.as_slice() {
            [r] => readers.get(r) == Some(&(1, true)),
            _ => false,
        };
        let mut outputs = None;
        for (i, op) in block.ops.iter().enumerate() {
            let group = groups.of_op.get(i).copied().flatten();
            if group.is_none() && summed_only(op) {
                if let Some(kernel) = FusedKernel::of_one_op(func, op) {
                    if b.fused(kernel).is_some() {
                        continue;
                    }
                }
            }
            if let Some(g) = group {
                // A group runs at its last op, when all of its inputs are known.
                let slot = kernels.get_mut(g)?;
                if slot.as_ref().is_some_and(|(_, last)| *last == i) {
                    b.fused(slot.take()?.0)?;
                }
                continue;
            }
            if op.kind.is_terminator() {
                outputs = Some(op.operands.iter().map(|v| v.index()).collect::<Vec<_>>());
                break;
            }
            if op.kind == OpKind::Constant {
                let [result] = op.results.as_slice() else {
                    return None;
                };
                let lit = super::shape::constant(OpCx { op, func }).ok()?;
                let values = typed::view::<f32>(&lit)?.to_vec();
                let i = result.index();
                b.lens[i] = values.len();
                b.locs[i] = Some(Loc::Const(b.consts.len()));
                b.consts.push(values);
                continue;
            }
            b.op(op)?;
        }
        let outputs = outputs?;
        b.merge_row_sums(&outputs);
        for &o in &outputs {
            let t = tensor_of(func, crate::ValueId(u32::try_from(o).ok()?))?;
            let f32_or_mask = matches!(t.element_type, ElementType::F32 | ElementType::Pred);
            if !f32_or_mask || b.locs.get(o).copied().flatten().is_none() {
                return None;
            }
        }
        // Outputs no step reads are written straight to the caller's rows.
        let read: Vec<usize> = b.steps.iter().flat_map(Step::sources).collect();
        let written: Vec<usize> = b.steps.iter().flat_map(Step::dsts).collect();
        for (k, &o) in outputs.iter().enumerate() {
            let once = outputs.iter().filter(|&&w| w == o).count() == 1;
            if once && b.root[o] == o && written.contains(&o) && !read.contains(&o) {
                b.locs[o] = Some(Loc::Out(k));
            }
        }
        let bufs = b.pack(&outputs);
        let step_values = b.steps.iter().map(|s| (s.dsts(), s.sources())).collect();
        Some(SlabProgram {
            step_values,
            locs: b.locs,
            lens: b.lens,
            consts: b.consts,
            kernels: b.kernels,
            bufs,
            steps: b.steps,
            outputs,
            args,
        })
    }

    /// How many reductions run inside a fused group's generated code.
    pub(crate) fn merged_row_sums(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Fused { sum: Some(_), .. }))
            .count()
    }

    /// The buffers one thread needs to run slabs.
    pub(crate) fn scratch(&self) -> Scratch {
        let take = |n: usize| {
            SPARE
                .try_with(|spare| {
                    let mut spare = spare.borrow_mut();
                    let i = spare.iter().rposition(|b| b.len() == n)?;
                    Some(spare.remove(i))
                })
                .ok()
                .flatten()
                .unwrap_or_else(|| vec![0.0; n])
        };
        Scratch(self.bufs.iter().map(|&n| take(n)).collect())
    }

    /// Runs one step into its taken destination buffers.
    fn exec(
        &self,
        step: &Step,
        args: &[&[f32]],
        bufs: &[Vec<f32>],
        dsts: &mut [&mut [f32]],
    ) -> Result<(), String> {
        let read = |r: usize| self.read(r, args, bufs);
        let [out, ..] = dsts else {
            return Err("a step without a destination".to_string());
        };
        match step {
            Step::Elem(inst, _) => inst.exec(&read, out),
            Step::Broadcast {
                src,
                shape,
                strides,
                ..
            } => load(
                &Source::F32(Cow::Borrowed(read(*src))),
                shape,
                strides,
                0,
                out,
            ),
            Step::Reduce {
                kind,
                src,
                init,
                reduced,
                inner,
                ..
            } => fold_float_block(kind, read(*src), out, read(*init)[0], (*reduced, *inner)),
            Step::Pad {
                src, value, pad, ..
            } => {
                let value = *read(*value).first().ok_or("a pad without its value")?;
                pad.exec(read(*src), value, out)?;
            }
            Step::Fused {
                kernel,
                args,
                dsts: kernel_dsts,
                sum: Some(sum),
            } => {
                let inputs: SmallVec<[&[f32]; 8]> = args.iter().map(|&a| read(a)).collect();
                let kernel = self.kernels.get(*kernel).ok_or("no such fused group")?;
                let (outs, rest) = dsts.split_at_mut(kernel_dsts.len());
                let [totals] = rest else {
                    return Err("a row sum without its destination".to_string());
                };
                let init = read(sum.init);
                let code = (&sum.code, sum.kept.as_slice());
                if kernel.run_row_sum(code, &inputs, outs, (init, totals)) {
                    return Ok(());
                }
                // No generated code: the group, then the fold.
                run_group(kernel, &inputs, outs)?;
                let k = kernel_dsts.iter().position(|&d| d == sum.src);
                let src = k
                    .and_then(|k| outs.get(k))
                    .ok_or("a row sum of no output")?;
                let init = *init.first().ok_or("a row sum without its start")?;
                fold_float_block(&OpKind::Add, src, totals, init, (sum.reduced, 1));
            }
            Step::Fused { kernel, args, .. } => {
                let inputs: SmallVec<[&[f32]; 8]> = args.iter().map(|&a| read(a)).collect();
                let kernel = self.kernels.get(*kernel).ok_or("no such fused group")?;
                run_group(kernel, &inputs, dsts)?;
            }
        }
        Ok(())
    }

    /// The elements of value `v`.
    fn read<'a>(&'a self, v: usize, args: &[&'a [f32]], scratch: &'a [Vec<f32>]) -> &'a [f32] {
        match self.locs.get(v).copied().flatten() {
            Some(Loc::Arg(k)) => args.get(k).copied().unwrap_or(&[]),
            Some(Loc::Const(k)) => self.consts.get(k).map_or(&[], |c| c.as_slice()),
            Some(Loc::Buf(k)) => scratch.get(k).map_or(&[], |b| b.as_slice()),
            Some(Loc::Out(_)) | None => &[],
        }
    }

    /// Runs one slab: `args` are the function's arguments (element counts as compiled),
    /// `outs[k]` receives output `k`.
    pub(crate) fn run(
        &self,
        args: &[&[f32]],
        scratch: &mut Scratch,
        outs: &mut [&mut [f32]],
    ) -> Result<(), String> {
        let lens_ok = args.len() == self.args.len()
            && args.iter().zip(&self.args).all(|(a, &n)| a.len() == n)
            && scratch.0.len() == self.bufs.len()
            && outs.len() == self.outputs.len()
            && outs
                .iter()
                .zip(&self.outputs)
                .all(|(o, &v)| o.len() == self.lens[v]);
        if !lens_ok {
            return Err("slab arguments do not match the compiled program".to_string());
        }
        let bufs = &mut scratch.0;
        for (step, (dsts, sources)) in self.steps.iter().zip(&self.step_values) {
            let mut taken: SmallVec<[(usize, Vec<f32>); 4]> = SmallVec::new();
            for &d in dsts {
                if let Some(Some(Loc::Buf(b))) = self.locs.get(d) {
                    taken.push((*b, std::mem::take(&mut bufs[*b])));
                }
            }
            // Every source is whole and none is a destination's buffer (taken above).
            let sources_ok = sources
                .iter()
                .all(|&s| !self.read(s, args, bufs).is_empty() || self.lens[s] == 0);
            let result = {
                let mut rows: SmallVec<[Option<&mut [f32]>; 4]> =
                    outs.iter_mut().map(|o| Some(&mut **o)).collect();
                let mut from_bufs = taken.iter_mut();
                let slices: Option<SmallVec<[&mut [f32]; 4]>> = dsts
                    .iter()
                    .map(|&d| match self.locs.get(d).copied().flatten() {
                        Some(Loc::Out(k)) => rows.get_mut(k)?.take(),
                        Some(Loc::Buf(_)) => from_bufs.next().map(|(_, v)| v.as_mut_slice()),
                        _ => None,
                    })
                    .collect();
                match slices {
                    Some(mut slices)
                        if sources_ok
                            && slices
                                .iter()
                                .zip(dsts)
                                .all(|(o, &d)| o.len() == self.lens[d]) =>
                    {
                        self.exec(step, args, bufs, &mut slices)
                    }
                    _ => Err("a step's values do not fit their buffers".to_string()),
                }
            };
            for (b, out) in taken {
                bufs[b] = out;
            }
            result?;
        }
        for (&v, dst) in self.outputs.iter().zip(outs.iter_mut()) {
            if matches!(self.locs.get(v), Some(Some(Loc::Out(_)))) {
                continue;
            }
            let src = self.read(v, args, bufs);
            if src.len() != dst.len() {
                return Err(format!("output {v} holds {} elements", src.len()));
            }
            dst.copy_from_slice(src);
        }
        Ok(())
    }
}

/// Runs fused group `kernel` on `inputs` into `outs` (f32 values, whole).
fn run_group(
    kernel: &FusedKernel,
    inputs: &[&[f32]],
    outs: &mut [&mut [f32]],
) -> Result<(), String> {
    let mut bytes: SmallVec<[&mut [u8]; 4]> = outs
        .iter_mut()
        .map(|o| bytemuck::cast_slice_mut(o))
        .collect();
    if kernel.run_f32(inputs, &mut bytes) {
        Ok(())
    } else {
        Err("a fused group's values do not fit it".to_string())
    }
}
