//! Per-block execution plans: the steps a block runs (single ops, or fused groups of
//! elementwise ops at the place of their last op), and when each value dies.

use super::fused::{collect_uses, find_groups, FusedKernel};
use super::rows::{find_row_groups, RowKernel};
use crate::{Block, Function, Op, OpKind, Type, ValueId};
use std::collections::HashMap;

/// One step of a block.
pub(crate) enum Step {
    /// The op at this index of the block.
    Op(usize),
    /// A fused group of elementwise ops.
    Fused(Box<FusedKernel>),
    /// A row group, run slab by slab.
    Rows(Box<RowKernel>),
    /// A 2-D `dot_general` whose only use is a `transpose` by `[1, 0]`, as one product with
    /// its operands swapped that writes the transpose's result (this op).
    SwappedDot(Box<Op>),
    /// An f32 or f64 `add` of a value and a product (`x + dot(a, b)`, or the product's
    /// `[1, 0]` transpose), as one product that sums into the value's buffer.
    AccumulatedDot(Box<AccumulatedDot>),
    /// A `reduce_window` whose only use is a product with a one-value factor, as one
    /// window fold that scales each output as it is written (this product's result).
    ScaledWindow(Box<ScaledWindow>),
}

/// A one-input f32 `reduce_window` followed by `result = window * broadcast(scale)` (or
/// `broadcast(scale) * window`): an average pool, whose `/ 4` `rewrite_divisions` turned
/// into a product with a broadcast constant. The window's value and the broadcast are never
/// stored; each output is the same product of the same two floats.
pub(crate) struct ScaledWindow {
    /// The index of the `reduce_window` in its block.
    pub window: usize,
    /// The product's result, which the step writes.
    pub result: ValueId,
    /// The one-element f32 value the product broadcasts.
    pub scale: ValueId,
}

/// `result = add(addend, dot_general(a, b))` (either operand order), the product read only
/// by the add, directly or through a `[1, 0]` transpose (whose only reader is the add): the
/// product's kernels start from the addend's values instead of zeros, so the product is
/// never stored and the add makes no pass of its own. The addend's buffer becomes the
/// result's when this is its last use.
pub(crate) struct AccumulatedDot {
    /// The product, its operands and dimension attributes swapped when it folds a
    /// transpose, its result the add's.
    pub product: Op,
    /// The add, run on the stored product when the accumulating kernels do not apply.
    pub add: Op,
    /// The add's operand that the product (or its transpose) defines.
    pub summand: ValueId,
    /// The add's other operand.
    pub addend: ValueId,
}

/// How many times each value is read in `block`, nested regions included.
fn use_counts(block: &Block) -> HashMap<ValueId, usize> {
    let mut uses: HashMap<ValueId, usize> = HashMap::new();
    for op in &block.ops {
        let mut u = Vec::new();
        collect_uses(op, &mut u);
        for v in u {
            *uses.entry(v).or_default() += 1;
        }
    }
    uses
}

/// The `reduce_window`s of `block` that [`Step::ScaledWindow`] can replace: `(window index,
/// product index, broadcast index, step)`.
fn scaled_windows(func: &Function, block: &Block) -> Vec<(usize, usize, usize, ScaledWindow)> {
    let uses = use_counts(block);
    let f32_tensor = |v: &ValueId| match func.values.get(v.index()) {
        Some(Type::Tensor(t)) if t.element_type == crate::ElementType::F32 => Some(t),
        _ => None,
    };
    let defined_at = definitions(block);
    let mut found = Vec::new();
    for (j, product) in block.ops.iter().enumerate() {
        let ([a, b], [result]) = (product.operands.as_slice(), product.results.as_slice()) else {
            continue;
        };
        if product.kind != OpKind::Multiply || f32_tensor(result).is_none() {
            continue;
        }
        for (w, f) in [(a, b), (b, a)] {
            let (Some(&i), Some(&k)) = (defined_at.get(w), defined_at.get(f)) else {
                continue;
            };
            let (window, broadcast) = (&block.ops[i], &block.ops[k]);
            let single_use = |v: &ValueId| uses.get(v) == Some(&1);
            let one_f32 = |v: &ValueId| f32_tensor(v).is_some_and(|t| t.num_elements() == Some(1));
            let fits = window.kind == OpKind::ReduceWindow
                && window.operands.len() == 2
                && window.results.len() == 1
                && window.regions.len() == 1
                && broadcast.kind == OpKind::BroadcastInDim
                && broadcast.operands.len() == 1
                && a != b
                && single_use(w)
                && single_use(f)
                && one_f32(&broadcast.operands[0])
                && f32_tensor(w) == f32_tensor(result);
            if fits {
                let step = ScaledWindow {
                    window: i,
                    result: *result,
                    scale: broadcast.operands[0],
                };
                found.push((i, j, k, step));
                break;
            }
        }
    }
    found
}

/// Whether `op` is a `dot_general` of two operands without batch dimensions and with a
/// 2-D result: one whose `[1, 0]` transpose is the product with its operands swapped.
fn swappable_dot(func: &Function, op: &Op) -> bool {
    let cx = super::OpCx { op, func };
    let no_batch = |name| cx.i64s_or(name, Vec::new()).is_ok_and(|b| b.is_empty());
    let rank2 =
        |v: &ValueId| matches!(func.values.get(v.index()), Some(Type::Tensor(t)) if t.rank() == 2);
    op.kind == OpKind::DotGeneral
        && op.operands.len() == 2
        && matches!(op.results.as_slice(), [r] if rank2(r))
        && no_batch("lhs_batching_dimensions")
        && no_batch("rhs_batching_dimensions")
}

/// Whether `op` is a one-operand `transpose` by `[1, 0]`.
fn is_matrix_transpose(func: &Function, op: &Op) -> bool {
    let cx = super::OpCx { op, func };
    op.kind == OpKind::Transpose
        && op.operands.len() == 1
        && op.results.len() == 1
        && cx.i64s("permutation").is_ok_and(|p| p == [1, 0])
}

/// `dot` with its operands and its `lhs_`/`rhs_` attributes swapped, writing `results`:
/// the transpose of its product.
fn swapped(dot: &Op, results: &[ValueId]) -> Op {
    let mut op = dot.clone();
    op.operands.swap(0, 1);
    op.results = results.to_vec();
    for (name, _) in &mut op.attributes {
        if let Some(rest) = name.strip_prefix("lhs_") {
            *name = format!("rhs_{rest}");
        } else if let Some(rest) = name.strip_prefix("rhs_") {
            *name = format!("lhs_{rest}");
        }
    }
    op
}

/// The index of the op of `block` that defines each value.
fn definitions(block: &Block) -> HashMap<ValueId, usize> {
    let mut defined_at = HashMap::new();
    for (i, op) in block.ops.iter().enumerate() {
        for &r in &op.results {
            defined_at.insert(r, i);
        }
    }
    defined_at
}

/// The `dot_general`s of `block` that [`Step::SwappedDot`] can replace, with their
/// transposes: `(dot index, transpose index, swapped op)`.
fn swapped_dots(func: &Function, block: &Block) -> Vec<(usize, usize, Op)> {
    let uses = use_counts(block);
    let mut found = Vec::new();
    for (i, dot) in block.ops.iter().enumerate() {
        if !swappable_dot(func, dot) || uses.get(&dot.results[0]) != Some(&1) {
            continue;
        }
        let result = dot.results[0];
        let Some(j) = block.ops[i + 1..]
            .iter()
            .position(|op| op.operands.contains(&result))
            .map(|k| i + 1 + k)
        else {
            continue;
        };
        let t = &block.ops[j];
        if is_matrix_transpose(func, t) {
            found.push((i, j, swapped(dot, &t.results)));
        }
    }
    found
}

/// The adds of `block` that [`Step::AccumulatedDot`] can replace: `(add index, product
/// index, transpose index if any, step)`.
fn accumulated_dots(
    func: &Function,
    block: &Block,
    defined_at: &HashMap<ValueId, usize>,
) -> Vec<(usize, usize, Option<usize>, AccumulatedDot)> {
    let uses = use_counts(block);
    let float_type = |v: &ValueId| match func.values.get(v.index()) {
        Some(Type::Tensor(t))
            if matches!(
                t.element_type,
                crate::ElementType::F32 | crate::ElementType::F64
            ) =>
        {
            Some(t)
        }
        _ => None,
    };
    let single_use = |v: &ValueId| uses.get(v) == Some(&1);
    let mut found = Vec::new();
    for (j, add) in block.ops.iter().enumerate() {
        let ([x, y], [result]) = (add.operands.as_slice(), add.results.as_slice()) else {
            continue;
        };
        let same_type = float_type(result).is_some()
            && float_type(x) == float_type(result)
            && float_type(y) == float_type(result);
        if add.kind != OpKind::Add || x == y || !same_type {
            continue;
        }
        for (summand, addend) in [(y, x), (x, y)] {
            let Some(&i) = defined_at.get(summand) else {
                continue;
            };
            if !single_use(summand) {
                continue;
            }
            let def = &block.ops[i];
            let fits = |dot: &Op| dot.kind == OpKind::DotGeneral && dot.operands.len() == 2;
            let step = |product: Op| AccumulatedDot {
                product,
                add: add.clone(),
                summand: *summand,
                addend: *addend,
            };
            if fits(def) && def.results.len() == 1 {
                let mut product = def.clone();
                product.results = vec![*result];
                found.push((j, i, None, step(product)));
                break;
            }
            if !is_matrix_transpose(func, def) || !single_use(&def.operands[0]) {
                continue;
            }
            let Some(&d) = defined_at.get(&def.operands[0]) else {
                continue;
            };
            let dot = &block.ops[d];
            if swappable_dot(func, dot) {
                found.push((j, d, Some(i), step(swapped(dot, &[*result]))));
                break;
            }
        }
    }
    found
}

/// How a block runs.
pub(crate) struct BlockPlan {
    pub steps: Vec<Step>,
    /// Per step: the values to free after it.
    pub frees: Vec<Vec<ValueId>>,
    /// Per step: the operands an op may move out of the table instead of cloning (its last
    /// use, and not read by the op's own regions).
    pub moves: Vec<Vec<ValueId>>,
    /// Per block argument: whether anything in the block reads it.
    pub arg_used: Vec<bool>,
}

/// Plans `block` of `func`: tiles row groups (when `fuse` and `rows`), fuses what it can
/// of the rest (when `fuse`) and computes liveness over the steps.
pub(crate) fn plan_block(func: &Function, block: &Block, fuse: bool, rows: bool) -> BlockPlan {
    let mut row_groups = if fuse && rows {
        find_row_groups(func, block)
    } else {
        super::rows::RowGroups {
            in_group: vec![false; block.ops.len()],
            kernels: Vec::new(),
        }
    };
    // Scaled windows take their product and broadcast out of the fused groups.
    let mut taken = row_groups.in_group.clone();
    let mut scaled: HashMap<usize, ScaledWindow> = HashMap::new();
    let mut folded = vec![false; block.ops.len()];
    if fuse {
        for (i, j, k, step) in scaled_windows(func, block) {
            if [i, j, k].iter().all(|&x| !taken[x]) {
                for x in [i, j, k] {
                    taken[x] = true;
                }
                folded[i] = true;
                folded[k] = true;
                scaled.insert(j, step);
            }
        }
    }
    // Products added to a value sum into it. An add that a fused group holds leaves the
    // group when the group neither computes the addend nor reads the sum (adds of the same
    // shape are grouped though independent); the groups are then picked again without it.
    let mut groups = find_groups(func, block, fuse, &taken);
    let mut accumulated: HashMap<usize, AccumulatedDot> = HashMap::new();
    if fuse {
        let defined_at = definitions(block);
        let mut regroup = false;
        for (j, d, t, step) in accumulated_dots(func, block, &defined_at) {
            let ops = [Some(j), Some(d), t];
            let grouped = |x: &usize| groups.of_op[*x].is_some();
            if ops.iter().flatten().any(|x| taken[*x] || folded[*x])
                || [Some(d), t].iter().flatten().any(grouped)
            {
                continue;
            }
            if let Some(g) = groups.of_op[j] {
                let in_group = |i: &usize| groups.of_op[*i] == Some(g);
                let addend_in_group = defined_at.get(&step.addend).is_some_and(in_group);
                let sum = step.add.results[0];
                let sum_read_in_group = (j + 1..block.ops.len())
                    .any(|i| in_group(&i) && block.ops[i].operands.contains(&sum));
                if addend_in_group || sum_read_in_group {
                    continue;
                }
                regroup = true;
            }
            for x in ops.iter().flatten() {
                folded[*x] = true;
                taken[*x] = true;
            }
            accumulated.insert(j, step);
        }
        if regroup {
            groups = find_groups(func, block, fuse, &taken);
        }
    }
    let mut row_runs_at: HashMap<usize, usize> = HashMap::new();
    for (k, (_, last)) in row_groups.kernels.iter().enumerate() {
        row_runs_at.insert(*last, k);
    }
    let mut row_kernels: Vec<Option<RowKernel>> =
        row_groups.kernels.drain(..).map(|(k, _)| Some(k)).collect();
    let mut kernels: Vec<Option<FusedKernel>> = Vec::new();
    let mut runs_at: HashMap<usize, usize> = HashMap::new();
    for (kernel, last) in groups.kernels {
        runs_at.insert(last, kernels.len());
        kernels.push(Some(kernel));
    }
    // The transposed products that no sum took swap their operands.
    let mut swapped: HashMap<usize, Op> = HashMap::new();
    if fuse {
        for (i, j, op) in swapped_dots(func, block) {
            if !taken[i] && !taken[j] && !folded[i] && !folded[j] && groups.of_op[j].is_none() {
                swapped.insert(i, op);
                folded[j] = true;
            }
        }
    }
    let mut steps = Vec::with_capacity(block.ops.len());
    for (i, &folded) in folded.iter().enumerate() {
        if let Some(step) = accumulated.remove(&i) {
            steps.push(Step::AccumulatedDot(Box::new(step)));
            continue;
        }
        if let Some(op) = swapped.remove(&i) {
            steps.push(Step::SwappedDot(Box::new(op)));
            continue;
        }
        if let Some(step) = scaled.remove(&i) {
            steps.push(Step::ScaledWindow(Box::new(step)));
            continue;
        }
        if folded {
            continue;
        }
        if row_groups.in_group[i] {
            if let Some(kernel) = row_runs_at.get(&i).and_then(|&k| row_kernels[k].take()) {
                steps.push(Step::Rows(Box::new(kernel)));
            }
            continue;
        }
        match groups.of_op[i] {
            None => steps.push(Step::Op(i)),
            Some(_) => {
                if let Some(kernel) = runs_at.get(&i).and_then(|&k| kernels[k].take()) {
                    steps.push(Step::Fused(Box::new(kernel)));
                }
            }
        }
    }

    // Uses and definitions per step.
    let mut uses: Vec<Vec<ValueId>> = Vec::with_capacity(steps.len());
    let mut defs: Vec<Vec<ValueId>> = Vec::with_capacity(steps.len());
    for step in &steps {
        match step {
            Step::Op(i) => {
                let op = &block.ops[*i];
                let mut u = Vec::new();
                collect_uses(op, &mut u);
                uses.push(u);
                defs.push(op.results.clone());
            }
            Step::Fused(k) => {
                uses.push(k.input_values().to_vec());
                defs.push(k.output_values().collect());
            }
            Step::Rows(k) => {
                uses.push(k.input_values().to_vec());
                defs.push(k.output_values().to_vec());
            }
            Step::SwappedDot(op) => {
                uses.push(op.operands.clone());
                defs.push(op.results.clone());
            }
            Step::AccumulatedDot(d) => {
                let mut u = d.product.operands.clone();
                u.push(d.addend);
                uses.push(u);
                defs.push(d.add.results.clone());
            }
            Step::ScaledWindow(w) => {
                let mut u = Vec::new();
                collect_uses(&block.ops[w.window], &mut u);
                u.push(w.scale);
                uses.push(u);
                defs.push(vec![w.result]);
            }
        }
    }
    let mut last_use: HashMap<ValueId, usize> = HashMap::new();
    for (i, (u, d)) in uses.iter().zip(&defs).enumerate() {
        for &r in d {
            last_use.insert(r, i);
        }
        for &v in u {
            last_use.insert(v, i);
        }
    }
    let mut frees = vec![Vec::new(); steps.len()];
    let defined_here = block.arguments.iter().chain(defs.iter().flatten());
    for &v in defined_here {
        if let Some(&i) = last_use.get(&v) {
            if !frees[i].contains(&v) {
                frees[i].push(v);
            }
        }
    }
    let moves = steps
        .iter()
        .zip(&frees)
        .map(|(step, frees)| match step {
            Step::Op(i) => {
                let op = &block.ops[*i];
                let mut inner = Vec::new();
                for region in &op.regions {
                    for block in &region.blocks {
                        for op in &block.ops {
                            collect_uses(op, &mut inner);
                        }
                    }
                }
                frees
                    .iter()
                    .copied()
                    .filter(|v| op.operands.contains(v) && !inner.contains(v))
                    .collect()
            }
            Step::Fused(_)
            | Step::Rows(_)
            | Step::SwappedDot(_)
            | Step::AccumulatedDot(_)
            | Step::ScaledWindow(_) => Vec::new(),
        })
        .collect();
    let arg_used = block
        .arguments
        .iter()
        .map(|v| last_use.contains_key(v))
        .collect();
    BlockPlan {
        steps,
        frees,
        moves,
        arg_used,
    }
}
