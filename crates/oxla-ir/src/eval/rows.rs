//! Row tiling: a block's row-local ops run one slab of rows at a time.
//!
//! Softmax, layer norm and their gradients are chains of elementwise ops, reductions
//! along the trailing dimensions and broadcasts back, all over one leading dimension.
//! Op by op, every step streams the whole matrix through memory. [`find_row_groups`]
//! picks such chains (ops that never mix rows: each result row depends only on the same
//! row of its row operands, plus whole "invariant" operands such as scalars or a gain
//! vector broadcast along the rows), and [`RowKernel`] runs the chain as a small function
//! on slabs of [`RowKernel::rows`] rows that stay in cache, the slabs split over threads.
//!
//! Inside a slab the usual evaluator runs (fused groups included), and every output
//! element is computed by the same kernels in the same order as without tiling: a
//! reduction over trailing dimensions folds each row alone, whatever the row count.

use super::fused::{collect_uses, narrow_mask, tensor_of, widen_mask_into, widened_mask};
use super::pool;
use super::slab_program::{Scratch, SlabProgram};
use super::threads;
use super::{Collectives, EvalOptions, Interp, PlanCache, SingleDevice, Value};
use crate::{
    Block, ElementType, Function, FunctionType, IrError, Literal, Op, OpKind, Region, TensorType,
    Type, ValueId, Visibility,
};
use std::borrow::Cow;
use std::collections::HashMap;

/// Groups whose row-local values hold fewer elements in all run op by op: tiling pays a
/// function call per slab.
const MIN_ELEMENTS: usize = 1 << 16;

/// About this many elements per slab of the widest value: a slab's values stay in the
/// second cache level.
const SLAB_ELEMENTS: usize = 1 << 15;

/// How an op reads an operand inside a row group.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    /// Row `r` of the result reads row `r` of the operand (its leading extent is the
    /// group's row count).
    Row,
    /// The whole operand, the same for every row.
    Whole,
}

/// Whether `t` is row-indexed by `rows`: rank one or more with that leading extent.
fn has_rows(t: &TensorType, rows: i64) -> bool {
    t.shape.first() == Some(&rows)
}

/// Whether a reduce body is plain scalar ops (no calls, regions or effects) reading only
/// its own values.
fn plain_body(region: &Region) -> bool {
    region.blocks.iter().all(|b| {
        let mut known: Vec<ValueId> = b.arguments.clone();
        b.ops.iter().all(|op| {
            let plain = op.regions.is_empty()
                && super::is_supported(&op.kind)
                && !matches!(
                    op.kind,
                    OpKind::Call | OpKind::Composite | OpKind::CustomCall
                )
                && !super::collective::handles(&op.kind)
                && op.operands.iter().all(|v| known.contains(v));
            known.extend_from_slice(&op.results);
            plain
        })
    })
}

/// The row count and per-operand modes of `op` when it is row-local; `None` otherwise.
fn row_local(func: &Function, op: &Op) -> Option<(i64, Vec<Mode>)> {
    use super::elementwise::{is_binary, is_unary};
    use OpKind as K;
    let first = tensor_of(func, *op.results.first()?)?;
    let rows = *first.shape.first()?;
    // A single row is no group; such an op (a row vector made `1xN` for a broadcast, say)
    // must not close one either.
    if rows < 2 {
        return None;
    }
    for &r in &op.results {
        if !has_rows(tensor_of(func, r)?, rows) {
            return None;
        }
    }
    let operand = |i: usize| op.operands.get(i).and_then(|&v| tensor_of(func, v));
    let cx = super::OpCx { op, func };
    let modes = match &op.kind {
        k if is_unary(k)
            || is_binary(k)
            || matches!(
                k,
                K::Compare | K::Select | K::Clamp | K::Convert | K::ReducePrecision
            ) =>
        {
            if op.results.len() != 1 || !op.regions.is_empty() {
                return None;
            }
            let mut modes = Vec::with_capacity(op.operands.len());
            for i in 0..op.operands.len() {
                let t = operand(i)?;
                if t.rank() == 0 {
                    modes.push(Mode::Whole);
                } else if t.shape == first.shape {
                    modes.push(Mode::Row);
                } else {
                    return None;
                }
            }
            modes
        }
        K::BroadcastInDim => {
            let t = operand(0)?;
            let dims = cx.i64s("broadcast_dimensions").ok()?;
            if op.operands.len() != 1 || dims.len() != t.rank() {
                return None;
            }
            match dims.iter().position(|&d| d == 0) {
                None => vec![Mode::Whole],
                Some(0) if has_rows(t, rows) => vec![Mode::Row],
                // A leading unit dimension broadcast over the rows: every row reads it all.
                Some(0) if t.shape.first() == Some(&1) => vec![Mode::Whole],
                Some(_) => return None,
            }
        }
        K::Reshape => {
            let t = operand(0)?;
            if op.operands.len() != 1 || !has_rows(t, rows) {
                return None;
            }
            vec![Mode::Row]
        }
        K::Transpose => {
            let t = operand(0)?;
            let perm = cx.i64s("permutation").ok()?;
            if op.operands.len() != 1 || !has_rows(t, rows) || perm.first() != Some(&0) {
                return None;
            }
            vec![Mode::Row]
        }
        // A pad that leaves the rows as they are (the gradient of `x[:, 0]`, say).
        K::Pad => {
            let (t, value) = (operand(0)?, operand(1)?);
            let unpadded = |name: &str| cx.i64s(name).ok()?.first().map(|&p| p == 0);
            let rows_kept = unpadded("edge_padding_low")?
                && unpadded("edge_padding_high")?
                && unpadded("interior_padding").unwrap_or(true);
            if op.operands.len() != 2 || !has_rows(t, rows) || value.rank() != 0 || !rows_kept {
                return None;
            }
            vec![Mode::Row, Mode::Whole]
        }
        K::Reduce => {
            let n = op.results.len();
            let dims = cx.i64s("dimensions").ok()?;
            if n == 0
                || op.operands.len() != 2 * n
                || dims.contains(&0)
                || op.regions.len() != 1
                || !plain_body(&op.regions[0])
            {
                return None;
            }
            let mut modes = Vec::with_capacity(2 * n);
            for i in 0..2 * n {
                let t = operand(i)?;
                match i < n {
                    true if has_rows(t, rows) && t.rank() >= 1 => modes.push(Mode::Row),
                    false if t.rank() == 0 => modes.push(Mode::Whole),
                    _ => return None,
                }
            }
            modes
        }
        _ => return None,
    };
    Some((rows, modes))
}

/// The row groups of one block.
pub(crate) struct RowGroups {
    /// Per op of the block: whether a row group holds it.
    pub in_group: Vec<bool>,
    /// Per group: its kernel and the index of its last op, where it runs.
    pub kernels: Vec<(RowKernel, usize)>,
}

/// A row group being collected.
struct Open {
    rows: i64,
    /// Its ops, each with how it reads its operands.
    ops: Vec<(usize, Vec<Mode>)>,
    values: Vec<ValueId>,
}

/// Picks the row groups of `block`.
///
/// Row-local ops over one row count join the open group; a group closes when an op outside
/// it reads one of its values (so it can run at the place of its last op), or when a
/// member would need a group value whole. Groups without a reduction, with fewer than
/// three ops (two, when the reduction reads the other op's result) or under
/// [`MIN_ELEMENTS`] elements are dropped: they gain nothing over fused groups.
pub(crate) fn find_row_groups(func: &Function, block: &Block) -> RowGroups {
    let n_ops = block.ops.len();
    let mut uses_of_op: Vec<Vec<ValueId>> = Vec::with_capacity(n_ops);
    for op in &block.ops {
        let mut uses = Vec::new();
        collect_uses(op, &mut uses);
        uses_of_op.push(uses);
    }
    let mut closed: Vec<Open> = Vec::new();
    let mut open: Option<Open> = None;
    for (i, op) in block.ops.iter().enumerate() {
        let cand = row_local(func, op);
        if let (Some(g), Some((rows, modes))) = (open.as_mut(), &cand) {
            let joins = *rows == g.rows
                && op
                    .operands
                    .iter()
                    .zip(modes)
                    .all(|(v, m)| *m == Mode::Row || !g.values.contains(v));
            if joins {
                g.ops.push((i, modes.clone()));
                g.values.extend_from_slice(&op.results);
                continue;
            }
        }
        let reads_group = open
            .as_ref()
            .is_some_and(|g| uses_of_op[i].iter().any(|v| g.values.contains(v)));
        if reads_group || cand.is_some() {
            if let Some(g) = open.take() {
                closed.push(g);
            }
        }
        if let Some((rows, modes)) = cand {
            open = Some(Open {
                rows,
                ops: vec![(i, modes)],
                values: op.results.clone(),
            });
        }
    }
    closed.extend(open);

    let mut in_group = vec![false; n_ops];
    let mut kernels = Vec::new();
    for g in closed {
        let reduces = g
            .ops
            .iter()
            .any(|(i, _)| block.ops[*i].kind == OpKind::Reduce);
        let elements: usize = g
            .values
            .iter()
            .filter_map(|&v| tensor_of(func, v)?.num_elements())
            .sum();
        // Two ops gain over running apart only when the reduction reads the other's
        // result, which the group then never stores whole (`sum(x * x)`).
        let reduces_group_value = g.ops.iter().any(|(i, _)| {
            let op = &block.ops[*i];
            op.kind == OpKind::Reduce && op.operands.iter().any(|v| g.values.contains(v))
        });
        let enough_ops = g.ops.len() >= 3 || (g.ops.len() == 2 && reduces_group_value);
        if !reduces || !enough_ops || elements < MIN_ELEMENTS || g.rows < 2 {
            continue;
        }
        let outputs: Vec<ValueId> = g
            .values
            .iter()
            .copied()
            .filter(|v| {
                uses_of_op
                    .iter()
                    .enumerate()
                    .any(|(j, uses)| !g.ops.iter().any(|(i, _)| *i == j) && uses.contains(v))
            })
            .collect();
        if outputs.is_empty() {
            continue;
        }
        let ops: Vec<(&Op, &[Mode])> = g
            .ops
            .iter()
            .map(|(i, modes)| (&block.ops[*i], modes.as_slice()))
            .collect();
        if let Some(kernel) = RowKernel::build(func, &ops, &outputs, g.rows) {
            for &(i, _) in &g.ops {
                in_group[i] = true;
            }
            kernels.push((kernel, g.ops.last().map_or(0, |(i, _)| *i)));
        }
    }
    RowGroups { in_group, kernels }
}

/// A value read from outside the group.
#[derive(Debug)]
struct Input {
    ty: TensorType,
    mode: Mode,
}

/// A row group compiled to a function over a slab of rows.
#[derive(Debug)]
pub(crate) struct RowKernel {
    rows: usize,
    /// Rows per slab.
    slab: usize,
    /// The group as a function of `slab` rows, and of the remaining rows when `slab` does
    /// not divide `rows`.
    full: Function,
    rest: Option<Function>,
    /// `full` and `rest` as slab programs, where they compile.
    full_program: Option<SlabProgram>,
    rest_program: Option<SlabProgram>,
    inputs: Vec<Input>,
    input_values: Vec<ValueId>,
    outputs: Vec<TensorType>,
    output_values: Vec<ValueId>,
    num_ops: usize,
}

/// Renumbers the values of a group into a function of their own.
struct Renumber<'f> {
    func: &'f Function,
    ids: HashMap<ValueId, ValueId>,
    values: Vec<Type>,
    /// Values whose leading extent is the row count.
    row_values: Vec<bool>,
}

impl Renumber<'_> {
    fn id(&mut self, v: ValueId, row: bool) -> Option<ValueId> {
        if let Some(&id) = self.ids.get(&v) {
            return Some(id);
        }
        let id = ValueId(u32::try_from(self.values.len()).ok()?);
        self.values.push(self.func.values.get(v.index())?.clone());
        self.row_values.push(row);
        self.ids.insert(v, id);
        Some(id)
    }

    /// `op` with its values renumbered; its results (and regions' values) are new.
    fn op(&mut self, op: &Op, results_are_rows: bool) -> Option<Op> {
        let mut out = op.clone();
        for v in &mut out.operands {
            // Operands are inputs or earlier results, numbered already; region values are
            // numbered on first sight.
            *v = self.id(*v, false)?;
        }
        for v in &mut out.results {
            *v = self.id(*v, results_are_rows)?;
        }
        for region in &mut out.regions {
            for block in &mut region.blocks {
                for a in &mut block.arguments {
                    *a = self.id(*a, false)?;
                }
                let ops = std::mem::take(&mut block.ops);
                block.ops = ops
                    .iter()
                    .map(|inner| self.op(inner, false))
                    .collect::<Option<_>>()?;
            }
        }
        Some(out)
    }

    /// The group's function for `rows` rows.
    fn function(&self, name: &str, args: &[ValueId], body: &[Op], rows: i64) -> Function {
        let values: Vec<Type> = self
            .values
            .iter()
            .zip(&self.row_values)
            .map(|(ty, &row)| match ty {
                Type::Tensor(t) if row => {
                    let mut t = t.clone();
                    t.shape[0] = rows;
                    Type::Tensor(t)
                }
                other => other.clone(),
            })
            .collect();
        let ret = body
            .last()
            .map(|op| op.operands.clone())
            .unwrap_or_default();
        Function {
            name: name.to_string(),
            visibility: Visibility::Private,
            ty: FunctionType {
                inputs: args.iter().map(|a| values[a.index()].clone()).collect(),
                results: ret.iter().map(|r| values[r.index()].clone()).collect(),
            },
            arg_attrs: Vec::new(),
            res_attrs: Vec::new(),
            attributes: Vec::new(),
            body: Region {
                blocks: vec![Block {
                    arguments: args.to_vec(),
                    ops: body.to_vec(),
                }],
            },
            values,
            location: crate::Location::Unknown,
        }
    }
}

impl RowKernel {
    /// Compiles the group `ops` (in program order, over `rows` rows) writing `outputs`.
    fn build(
        func: &Function,
        ops: &[(&Op, &[Mode])],
        outputs: &[ValueId],
        rows: i64,
    ) -> Option<Self> {
        let total_rows = usize::try_from(rows).ok()?;
        let mut defined: Vec<ValueId> = Vec::new();
        let mut input_values: Vec<ValueId> = Vec::new();
        let mut inputs: Vec<Input> = Vec::new();
        for &(op, modes) in ops {
            for (&v, &mode) in op.operands.iter().zip(modes) {
                if defined.contains(&v) {
                    continue;
                }
                match input_values.iter().position(|&w| w == v) {
                    // One input read both ways: the group cannot slice it.
                    Some(k) if inputs[k].mode != mode => return None,
                    Some(_) => {}
                    None => {
                        input_values.push(v);
                        inputs.push(Input {
                            ty: tensor_of(func, v)?.clone(),
                            mode,
                        });
                    }
                }
            }
            defined.extend_from_slice(&op.results);
        }
        // Every row-local value must split into whole bytes per row.
        let row_elems = |t: &TensorType| -> Option<usize> {
            t.shape[1..]
                .iter()
                .try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?))
        };
        let mut widest = 1usize;
        for v in input_values
            .iter()
            .zip(&inputs)
            .filter(|(_, i)| i.mode == Mode::Row)
            .map(|(v, _)| *v)
            .chain(defined.iter().copied())
        {
            let elems = row_elems(tensor_of(func, v)?)?;
            if elems == 0 {
                return None;
            }
            widest = widest.max(elems);
        }
        let threads = threads::count().max(1);
        let slab = (SLAB_ELEMENTS / widest)
            .clamp(1, total_rows.div_ceil(threads).max(1))
            .min(total_rows);

        let mut renumber = Renumber {
            func,
            ids: HashMap::new(),
            values: Vec::new(),
            row_values: Vec::new(),
        };
        let args = input_values
            .iter()
            .zip(&inputs)
            .map(|(&v, i)| renumber.id(v, i.mode == Mode::Row))
            .collect::<Option<Vec<_>>>()?;
        let mut body = ops
            .iter()
            .map(|(op, _)| renumber.op(op, true))
            .collect::<Option<Vec<_>>>()?;
        let ret = outputs
            .iter()
            .map(|&v| renumber.ids.get(&v).copied())
            .collect::<Option<Vec<_>>>()?;
        body.push(Op::new(OpKind::FuncReturn, ret, Vec::new()));
        let name = format!("{}.rows", func.name);
        let full = renumber.function(&name, &args, &body, i64::try_from(slab).ok()?);
        let rest = (total_rows % slab != 0)
            .then(|| renumber.function(&name, &args, &body, (total_rows % slab) as i64));
        let full_program = SlabProgram::compile(&full);
        let rest_program = rest.as_ref().and_then(SlabProgram::compile);
        Some(RowKernel {
            rows: total_rows,
            slab,
            full,
            rest,
            full_program,
            rest_program,
            inputs,
            input_values,
            outputs: outputs
                .iter()
                .map(|&v| tensor_of(func, v).cloned())
                .collect::<Option<_>>()?,
            output_values: outputs.to_vec(),
            num_ops: ops.len(),
        })
    }

    /// The values the group reads, in the order [`RowKernel::run`] takes them.
    pub(crate) fn input_values(&self) -> &[ValueId] {
        &self.input_values
    }

    /// The values the group writes, in the order [`RowKernel::run`] returns them.
    pub(crate) fn output_values(&self) -> &[ValueId] {
        &self.output_values
    }

    /// Whether the group's slabs (all of them) run as compiled programs.
    pub(crate) fn compiled(&self) -> bool {
        self.full_program.is_some() && (self.rest.is_none() || self.rest_program.is_some())
    }

    /// How many ops of the block the group covers.
    pub(crate) fn num_ops(&self) -> usize {
        self.num_ops
    }

    /// How many reductions a full slab's program sums inside a fused group's code.
    pub(crate) fn merged_row_sums(&self) -> usize {
        self.full_program
            .as_ref()
            .map_or(0, SlabProgram::merged_row_sums)
    }

    fn error(&self, detail: String) -> IrError {
        IrError::Eval {
            detail: format!("row group of {} ops: {detail}", self.num_ops),
        }
    }

    /// Runs the group on `args` (the values of [`RowKernel::input_values`]), slab by slab,
    /// with the slabs split over threads.
    pub(crate) fn run(
        &self,
        module: &crate::Module,
        cache: &PlanCache,
        args: &[&Literal],
        options: EvalOptions,
    ) -> Result<Vec<Literal>, IrError> {
        if args.len() != self.inputs.len() {
            return Err(self.error(format!(
                "expects {} inputs, got {}",
                self.inputs.len(),
                args.len()
            )));
        }
        for (lit, input) in args.iter().zip(&self.inputs) {
            if lit.ty != input.ty || Some(lit.data.len()) != lit.ty.byte_size() {
                return Err(self.error(format!("input is {}, expected {}", lit.ty, input.ty)));
            }
        }
        let row_bytes = |t: &TensorType| t.byte_size().unwrap_or(0) / self.rows;
        let mut outs: Vec<Vec<u8>> = self
            .outputs
            .iter()
            // The slabs together write every row.
            .map(|t| pool::take_for_overwrite(t.byte_size().unwrap_or(0)))
            .collect();
        let slabs = self.rows.div_ceil(self.slab);
        let threads = threads::count().min(slabs).max(1);
        let per = slabs.div_ceil(threads) * self.slab;
        // Per thread, its rows of every output.
        let mut parts: Vec<Vec<&mut [u8]>> = (0..threads).map(|_| Vec::new()).collect();
        for (out, t) in outs.iter_mut().zip(&self.outputs) {
            let bytes = (per * row_bytes(t)).max(1);
            for (k, chunk) in out.chunks_mut(bytes).enumerate() {
                parts[k].push(chunk);
            }
        }
        let results: Vec<Result<(), IrError>> = if threads <= 1 {
            parts
                .into_iter()
                .map(|mut part| self.run_rows(module, cache, args, options, 0, &mut part))
                .collect()
        } else {
            let mut results: Vec<Result<(), IrError>> = (0..threads).map(|_| Ok(())).collect();
            let jobs = parts.into_iter().zip(&mut results).enumerate();
            threads::for_each(jobs, |(t, (mut part, res))| {
                *res = self.run_rows(module, cache, args, options, t * per, &mut part)
            });
            results
        };
        results.into_iter().collect::<Result<(), _>>()?;
        self.outputs
            .iter()
            .zip(outs)
            .map(|(t, data)| Literal::new(t.clone(), data))
            .collect()
    }

    /// Runs the slabs of rows `first..first + n`, where `outs[k]` holds those rows of
    /// output `k` (and fixes `n`).
    fn run_rows(
        &self,
        module: &crate::Module,
        cache: &PlanCache,
        args: &[&Literal],
        options: EvalOptions,
        first: usize,
        outs: &mut [&mut [u8]],
    ) -> Result<(), IrError> {
        // A thread past the last rows gets no part of the outputs.
        let (Some(out0), Some(part0)) = (self.outputs.first(), outs.first()) else {
            return Ok(());
        };
        let n = part0.len() / (out0.byte_size().unwrap_or(0) / self.rows).max(1);
        let single: &dyn Collectives = &SingleDevice;
        let mut interp = Interp::new(module, cache, single, options);
        interp.row_tiling = false;
        // Whole inputs as f32 (masks as 0.0/1.0), for the slab programs.
        let whole: Vec<Option<Cow<'_, [f32]>>> = self
            .inputs
            .iter()
            .zip(args)
            .map(|(input, lit)| {
                (input.mode == Mode::Whole && self.full_program.is_some())
                    .then(|| program_view(lit.ty.element_type, &lit.data))
                    .flatten()
            })
            .collect();
        let mut scratch: [Option<Scratch>; 2] = [None, None];
        // Programs write f32 rows in place (allocations are aligned; this is a guard).
        let aligned = outs
            .iter()
            .zip(&self.outputs)
            .all(|(o, t)| t.element_type == ElementType::Pred || o.as_ptr().align_offset(4) == 0);
        let mut start = 0;
        while start < n {
            let len = self.slab.min(n - start);
            let (func, program, k) = if len == self.slab {
                (&self.full, self.full_program.as_ref(), 0)
            } else {
                (
                    self.rest.as_ref().unwrap_or(&self.full),
                    self.rest_program.as_ref(),
                    1,
                )
            };
            if let Some(program) = program.filter(|_| aligned) {
                let scratch = scratch[k].get_or_insert_with(|| program.scratch());
                self.run_program(
                    program,
                    scratch,
                    args,
                    &whole,
                    first + start,
                    len,
                    start,
                    outs,
                )?;
                start += len;
                continue;
            }
            let values = self
                .inputs
                .iter()
                .zip(args)
                .zip(&func.ty.inputs)
                .map(|((input, lit), ty)| match (input.mode, ty) {
                    (Mode::Row, Type::Tensor(t)) => {
                        let row = lit.data.len() / self.rows;
                        let from = (first + start) * row;
                        let bytes = lit.data[from..from + len * row].to_vec();
                        Literal::new(t.clone(), bytes).map(Value::Tensor)
                    }
                    _ => Ok(Value::Tensor((*lit).clone())),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let results = interp.call(func, values)?;
            for ((value, out), t) in results.into_iter().zip(outs.iter_mut()).zip(&self.outputs) {
                let Value::Tensor(lit) = value else {
                    return Err(self.error("a slab returned a non-tensor value".to_string()));
                };
                let row = t.byte_size().unwrap_or(0) / self.rows;
                let dst = out
                    .get_mut(start * row..(start + len) * row)
                    .filter(|d| d.len() == lit.data.len())
                    .ok_or_else(|| self.error(format!("a slab returned {}", lit.ty)))?;
                dst.copy_from_slice(&lit.data);
                super::recycle(lit);
            }
            start += len;
        }
        Ok(())
    }

    /// Runs rows `row..row + len` (of the whole input) through `program`, writing them at
    /// row `at` of `outs`.
    #[allow(clippy::too_many_arguments)]
    fn run_program(
        &self,
        program: &SlabProgram,
        scratch: &mut Scratch,
        args: &[&Literal],
        whole: &[Option<Cow<'_, [f32]>>],
        row: usize,
        len: usize,
        at: usize,
        outs: &mut [&mut [u8]],
    ) -> Result<(), IrError> {
        // Row inputs are read in place (copied only when their bytes are not aligned);
        // masks are widened to 0.0/1.0 in buffers of the thread's cache.
        let mut widened: Vec<Vec<u8>> = Vec::new();
        let mut row_bytes_of: Vec<Option<&[u8]>> = Vec::with_capacity(args.len());
        for (input, lit) in self.inputs.iter().zip(args) {
            let bytes = match input.mode {
                Mode::Row => {
                    let row_bytes = lit.data.len() / self.rows;
                    let bytes = lit
                        .data
                        .get(row * row_bytes..(row + len) * row_bytes)
                        .ok_or_else(|| self.error("an input is shorter than its rows".into()))?;
                    if lit.ty.element_type == ElementType::Pred {
                        widened.push(widened_mask(bytes));
                    }
                    Some(bytes)
                }
                Mode::Whole => None,
            };
            row_bytes_of.push(bytes);
        }
        let mut widened_views = widened.iter();
        let mut views: Vec<Cow<'_, [f32]>> = Vec::with_capacity(args.len());
        for ((lit, bytes), whole) in args.iter().zip(row_bytes_of).zip(whole) {
            views.push(match (bytes, lit.ty.element_type) {
                (None, _) => Cow::Borrowed(whole.as_deref().unwrap_or(&[])),
                (Some(_), ElementType::Pred) => widened_views
                    .next()
                    .and_then(|w| bytemuck::try_cast_slice(w).ok())
                    .map(Cow::Borrowed)
                    .ok_or_else(|| self.error("a mask input did not widen".into()))?,
                (Some(bytes), ElementType::F32) => super::typed::view_bytes::<f32>(bytes),
                (Some(_), _) => return Err(self.error(format!("an input is {}", lit.ty))),
            });
        }
        let views: Vec<&[f32]> = views.iter().map(|v| v.as_ref()).collect();
        // Mask outputs are computed as 0.0/1.0 and stored as bytes afterwards.
        let mut masks: Vec<Vec<u8>> = Vec::new();
        let mut rows: Vec<&mut [u8]> = Vec::with_capacity(outs.len());
        for (out, t) in outs.iter_mut().zip(&self.outputs) {
            let row_bytes = t.byte_size().unwrap_or(0) / self.rows;
            let part = out
                .get_mut(at * row_bytes..(at + len) * row_bytes)
                .ok_or_else(|| self.error("an output does not hold its rows".into()))?;
            if t.element_type == ElementType::Pred {
                // The program writes every element.
                masks.push(pool::take_for_overwrite(part.len() * 4));
            }
            rows.push(part);
        }
        let mut mask_parts = masks.iter_mut();
        let mut parts: Vec<&mut [f32]> = Vec::with_capacity(rows.len());
        for (part, t) in rows.iter_mut().zip(&self.outputs) {
            let part = if t.element_type == ElementType::Pred {
                mask_parts
                    .next()
                    .and_then(|m| bytemuck::try_cast_slice_mut(m.as_mut_slice()).ok())
            } else {
                bytemuck::try_cast_slice_mut(part).ok()
            };
            parts.push(part.ok_or_else(|| self.error("an output does not hold its rows".into()))?);
        }
        let result = program
            .run(&views, scratch, &mut parts)
            .map_err(|detail| self.error(detail));
        if result.is_ok() {
            let mut masks = masks.iter();
            for (part, t) in rows.iter_mut().zip(&self.outputs) {
                if t.element_type == ElementType::Pred {
                    let mask: &[f32] = masks
                        .next()
                        .and_then(|m| bytemuck::try_cast_slice(m).ok())
                        .unwrap_or(&[]);
                    narrow_mask(mask, part);
                }
            }
        }
        masks.into_iter().chain(widened).for_each(pool::give);
        result
    }
}

/// A slab program's view of `bytes` of element type `et`: f32 in place (copied only when
/// not aligned), an `i1` mask as 0.0/1.0; `None` for other types.
fn program_view(et: ElementType, bytes: &[u8]) -> Option<Cow<'_, [f32]>> {
    match et {
        ElementType::F32 => Some(super::typed::view_bytes::<f32>(bytes)),
        ElementType::Pred => {
            let mut values = vec![0.0; bytes.len()];
            widen_mask_into(bytes, &mut values);
            Some(Cow::Owned(values))
        }
        _ => None,
    }
}
