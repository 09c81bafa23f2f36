//! Inlining of `func.call`: the callee's ops replace the call, so that the planner sees
//! across function boundaries (JAX wraps `jnp.where`, `jnp.tril`, `clip` and friends in
//! private functions, which would otherwise run as separate blocks with their results
//! stored in between, outside every fused group).
//!
//! A call is inlined when its callee is a one-block function of the module that (after its
//! own calls were inlined) holds no custom call, collective or dialect op oxla does not
//! model (`sdy.manual_computation` and the like keep their function boundaries, which
//! partitioning and the per-device evaluation rely on), the call carries no attribute but
//! its callee, and the module stays within a growth budget. Calls inside nested regions
//! (loop bodies, branches) are inlined too. Functions that are no longer called stay in
//! the module.

use crate::attrs::Attribute;
use crate::module::{Block, Function, Module, Op, Region, ValueId};
use crate::ops::OpKind;
use std::collections::HashMap;

/// Ops the module may gain by inlining, beyond its own size: enough for every program JAX
/// emits, and a bound for call graphs whose full expansion would be exponential.
const GROWTH_BUDGET: usize = 50_000;

/// Inlines every inlinable call in `module` (see the module doc); returns how many calls it
/// replaced.
pub fn inline_calls(module: &mut Module) -> usize {
    let order = match callee_first_order(module) {
        Some(order) => order,
        // A recursive call graph: leave the module as it is.
        None => return 0,
    };
    let mut budget = GROWTH_BUDGET.max(count_ops(module));
    let mut inlined = 0;
    for index in order {
        // Callees come first, so every function this one calls is already in its final form.
        let mut function = std::mem::take(&mut module.functions[index]);
        let mut body = std::mem::take(&mut function.body);
        let mut replaced = HashMap::new();
        inlined += inline_in_region(module, &mut function, &mut body, &mut replaced, &mut budget);
        if !replaced.is_empty() {
            rename_uses(&mut body, &replaced);
        }
        function.body = body;
        module.functions[index] = function;
    }
    inlined
}

/// Function indices ordered so that every function comes after the functions it calls;
/// `None` when the calls form a cycle.
fn callee_first_order(module: &Module) -> Option<Vec<usize>> {
    let index: HashMap<&str, usize> = module
        .functions
        .iter()
        .enumerate()
        .map(|(i, f)| (f.name.as_str(), i))
        .collect();
    let callees: Vec<Vec<usize>> = module
        .functions
        .iter()
        .map(|f| {
            let mut out = Vec::new();
            visit_ops(&f.body, &mut |op| {
                if let Some(&i) = call_target(op).and_then(|name| index.get(name)) {
                    out.push(i);
                }
            });
            out
        })
        .collect();
    // Iterative depth-first search: 0 unvisited, 1 on the stack, 2 done.
    let mut state = vec![0u8; callees.len()];
    let mut order = Vec::with_capacity(callees.len());
    for root in 0..callees.len() {
        if state[root] != 0 {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        state[root] = 1;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if let Some(&child) = callees[node].get(*next) {
                *next += 1;
                match state[child] {
                    0 => {
                        state[child] = 1;
                        stack.push((child, 0));
                    }
                    1 => return None,
                    _ => {}
                }
            } else {
                state[node] = 2;
                order.push(node);
                stack.pop();
            }
        }
    }
    Some(order)
}

/// The name `op` calls, when it is a `func.call`.
pub(crate) fn call_target(op: &Op) -> Option<&str> {
    if op.kind != OpKind::Call {
        return None;
    }
    match op.attr("callee")? {
        Attribute::SymbolRef(s) | Attribute::String(s) => Some(s.trim_start_matches('@')),
        _ => None,
    }
}

/// Calls `f` on every op of `region`, nested regions included (iteratively).
fn visit_ops<'a>(region: &'a Region, f: &mut impl FnMut(&'a Op)) {
    let mut stack = vec![region];
    while let Some(region) = stack.pop() {
        for op in region.blocks.iter().flat_map(|b| &b.ops) {
            f(op);
            stack.extend(&op.regions);
        }
    }
}

fn count_ops(module: &Module) -> usize {
    let mut n = 0;
    for f in &module.functions {
        visit_ops(&f.body, &mut |_| n += 1);
    }
    n
}

/// The callee of `op` when the call may be inlined: a one-block function whose ops are all
/// ones inlining keeps the meaning of, called with no attribute but its callee.
fn inlinable_callee<'m>(module: &'m Module, op: &Op) -> Option<&'m Function> {
    let name = call_target(op)?;
    if op.attributes.len() != 1 {
        return None;
    }
    let callee = module.function(name)?;
    let [block] = callee.body.blocks.as_slice() else {
        return None;
    };
    if block.arguments.len() != op.operands.len()
        || block.ops.last().map(|op| &op.kind) != Some(&OpKind::FuncReturn)
        || block.ops.last()?.operands.len() != op.results.len()
    {
        return None;
    }
    let mut plain = true;
    visit_ops(&callee.body, &mut |op| {
        plain &= !matches!(
            op.kind,
            OpKind::CustomCall | OpKind::Other(_) | OpKind::Call
        ) && !crate::eval::is_collective(&op.kind);
    });
    plain.then_some(callee)
}

/// Inlines the calls in `region` (a region of `function`, taken out of it) and in the
/// regions nested inside; records each call result's replacement in `replaced`.
fn inline_in_region(
    module: &Module,
    function: &mut Function,
    region: &mut Region,
    replaced: &mut HashMap<ValueId, ValueId>,
    budget: &mut usize,
) -> usize {
    let mut inlined = 0;
    for block in &mut region.blocks {
        let ops = std::mem::take(&mut block.ops);
        let mut out = Vec::with_capacity(ops.len());
        for mut op in ops {
            for nested in &mut op.regions {
                inlined += inline_in_region(module, function, nested, replaced, budget);
            }
            let Some(callee) = inlinable_callee(module, &op) else {
                out.push(op);
                continue;
            };
            let mut total = 0;
            visit_ops(&callee.body, &mut |_| total += 1);
            if total > *budget {
                out.push(op);
                continue;
            }
            *budget -= total;
            inlined += 1;
            splice(function, callee, &op, &mut out, replaced);
        }
        block.ops = out;
    }
    inlined
}

/// Appends copies of `callee`'s ops (all but its return) to `out`, with fresh values in
/// `function`, and records that the call's results are the returned values.
fn splice(
    function: &mut Function,
    callee: &Function,
    call: &Op,
    out: &mut Vec<Op>,
    replaced: &mut HashMap<ValueId, ValueId>,
) {
    let mut map: Vec<Option<ValueId>> = vec![None; callee.values.len()];
    let block = &callee.body.blocks[0];
    for (&arg, &operand) in block.arguments.iter().zip(&call.operands) {
        map[arg.index()] = Some(operand);
    }
    let (ret, body) = block.ops.split_last().expect("checked: ends with a return");
    for op in body {
        out.push(copy_op(function, callee, op, &mut map));
    }
    for (&result, &value) in call.results.iter().zip(&ret.operands) {
        replaced.insert(result, renamed(function, callee, value, &mut map));
    }
}

/// `value` of `callee` as a value of `function` (a fresh one on first sight).
fn renamed(
    function: &mut Function,
    callee: &Function,
    value: ValueId,
    map: &mut [Option<ValueId>],
) -> ValueId {
    match map.get(value.index()) {
        Some(Some(v)) => *v,
        Some(None) => {
            let v = function.new_value(callee.value_type(value).clone());
            map[value.index()] = Some(v);
            v
        }
        // A value outside the callee's arena cannot come from a verified module; keep it
        // out of range so the evaluator reports it rather than reading another value.
        None => ValueId(u32::MAX),
    }
}

/// A copy of `callee`'s `op` (nested regions included) with its values renamed into
/// `function` through `map` (fresh values on first sight).
pub(super) fn copy_op(
    function: &mut Function,
    callee: &Function,
    op: &Op,
    map: &mut [Option<ValueId>],
) -> Op {
    let mut rename = |v: ValueId| renamed(function, callee, v, map);
    let operands = op.operands.iter().map(|&v| rename(v)).collect();
    let results = op.results.iter().map(|&v| rename(v)).collect();
    let regions = op
        .regions
        .iter()
        .map(|r| Region {
            blocks: r
                .blocks
                .iter()
                .map(|b| Block {
                    arguments: b
                        .arguments
                        .iter()
                        .map(|&v| renamed(function, callee, v, map))
                        .collect(),
                    ops: b
                        .ops
                        .iter()
                        .map(|op| copy_op(function, callee, op, map))
                        .collect(),
                })
                .collect(),
        })
        .collect();
    Op {
        kind: op.kind.clone(),
        operands,
        results,
        attributes: op.attributes.clone(),
        regions,
        location: op.location.clone(),
    }
}

/// Rewrites every use of a replaced value in `region` (chains followed: an inlined callee
/// may return the result of an earlier inlined call).
fn rename_uses(region: &mut Region, replaced: &HashMap<ValueId, ValueId>) {
    let resolve = |mut v: ValueId| {
        // At most one hop per replaced value, so a chain cannot loop.
        for _ in 0..=replaced.len() {
            match replaced.get(&v) {
                Some(&next) => v = next,
                None => break,
            }
        }
        v
    };
    let mut stack = vec![region];
    while let Some(region) = stack.pop() {
        for op in region.blocks.iter_mut().flat_map(|b| &mut b.ops) {
            for v in &mut op.operands {
                *v = resolve(*v);
            }
            stack.extend(&mut op.regions);
        }
    }
}
