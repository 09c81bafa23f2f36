//! Dead code: ops whose results nothing reads and whose running has no effect beyond them.
//!
//! JAX's lowering rules sometimes compute more than the program keeps: `lax.linalg.lu`
//! always builds the row permutation from the pivots in a `while` loop, which
//! `jnp.linalg.det` and `slogdet` never read. Here such ops go, loops and branches with
//! them when everything inside them is free of effects. Kept whatever their results:
//! custom calls and composites (host callbacks, FFI targets), calls, token and host
//! communication, collectives (every device must meet in them), `rng` (whose state lives
//! outside the program) and ops of dialects oxla does not know.

use crate::module::{Block, Module, Op, Region, ValueId};
use crate::ops::OpKind;
use std::collections::HashSet;

/// Removes the dead ops of every function of `module`; returns how many went (nested ops
/// of a removed op not counted).
pub fn remove_dead_ops(module: &mut Module) -> usize {
    module
        .functions
        .iter_mut()
        .map(|f| drop_unread(&mut f.body, &removable))
        .sum()
}

/// Whether running an op of this kind has no effect beyond its results (the ops in its
/// regions are checked apart).
fn effect_free(kind: &OpKind) -> bool {
    use OpKind as K;
    !matches!(
        kind,
        K::Func
            | K::Call
            | K::FuncReturn
            | K::Return
            | K::CustomCall
            | K::Composite
            | K::Rng
            | K::AfterAll
            | K::CreateToken
            | K::Infeed
            | K::Outfeed
            | K::Send
            | K::Recv
            | K::AllGather
            | K::AllReduce
            | K::AllToAll
            | K::ReduceScatter
            | K::CollectivePermute
            | K::CollectiveBroadcast
            | K::SdyShardingConstraint
            | K::SdyShardingGroup
            | K::Other(_)
    )
}

/// Whether `op` and everything nested in it may go when its results are not read.
fn removable(op: &Op) -> bool {
    effect_free(&op.kind)
        && op.regions.iter().all(|region| {
            region.blocks.iter().all(|block| {
                block
                    .ops
                    .iter()
                    .all(|inner| inner.kind.is_terminator() || removable(inner))
            })
        })
}

/// Drops, innermost first, the ops of `region` that `droppable` allows and whose results
/// nothing reads (terminators stay); nested regions of the kept ops are swept too. Returns
/// how many went. The other transforms sweep with narrower rules for what they leave
/// behind.
pub(super) fn drop_unread(region: &mut Region, droppable: &dyn Fn(&Op) -> bool) -> usize {
    region
        .blocks
        .iter_mut()
        .map(|block| sweep_block(block, droppable))
        .sum()
}

/// Walks `block` backwards from its terminator: every read of a value comes before its
/// definition.
fn sweep_block(block: &mut Block, droppable: &dyn Fn(&Op) -> bool) -> usize {
    let mut read: HashSet<ValueId> = HashSet::new();
    let mut keep = vec![true; block.ops.len()];
    let mut removed = 0;
    for (i, op) in block.ops.iter_mut().enumerate().rev() {
        let live = op.kind.is_terminator()
            || op.results.iter().any(|r| read.contains(r))
            || !droppable(op);
        if !live {
            keep[i] = false;
            removed += 1;
            continue;
        }
        for region in &mut op.regions {
            removed += drop_unread(region, droppable);
        }
        read.extend(op.operands.iter().copied());
        collect_reads(&op.regions, &mut read);
    }
    let mut flags = keep.into_iter();
    block.ops.retain(|_| flags.next().unwrap_or(true));
    removed
}

/// Adds every value the ops in `regions` read (values from outside the regions among
/// them) to `read`.
fn collect_reads(regions: &[Region], read: &mut HashSet<ValueId>) {
    for region in regions {
        for block in &region.blocks {
            for op in &block.ops {
                read.extend(op.operands.iter().copied());
                collect_reads(&op.regions, read);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::module::{Function, Visibility};
    use crate::types::{ElementType, FunctionType, TensorType, Type};

    fn op(kind: OpKind, operands: &[u32], results: &[u32]) -> Op {
        Op::new(
            kind,
            operands.iter().map(|&v| ValueId(v)).collect(),
            results.iter().map(|&v| ValueId(v)).collect(),
        )
    }

    fn block(arguments: &[u32], ops: Vec<Op>) -> Region {
        Region {
            blocks: vec![Block {
                arguments: arguments.iter().map(|&v| ValueId(v)).collect(),
                ops,
            }],
        }
    }

    fn module(ops: Vec<Op>) -> Module {
        let scalar = Type::Tensor(TensorType::new(vec![], ElementType::F32));
        Module {
            functions: vec![Function {
                name: "main".to_string(),
                visibility: Visibility::Public,
                ty: FunctionType {
                    inputs: vec![scalar.clone()],
                    results: vec![scalar.clone()],
                },
                body: block(&[0], ops),
                values: vec![scalar; 32],
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn kinds(m: &Module) -> Vec<&str> {
        m.functions[0].body.blocks[0]
            .ops
            .iter()
            .map(|op| op.kind.name())
            .collect()
    }

    #[test]
    fn unread_ops_go_and_read_ones_stay() {
        let mut m = module(vec![
            op(OpKind::Negate, &[0], &[1]),
            op(OpKind::Exponential, &[1], &[2]),
            op(OpKind::Sine, &[0], &[3]),
            op(OpKind::FuncReturn, &[3], &[]),
        ]);
        assert_eq!(remove_dead_ops(&mut m), 2);
        assert_eq!(kinds(&m), ["stablehlo.sine", "func.return"]);
    }

    #[test]
    fn a_loop_goes_only_when_its_body_has_no_effects() {
        let body = |inner: Op| {
            vec![
                block(&[10], vec![op(OpKind::Return, &[10], &[])]),
                block(&[11], vec![inner, op(OpKind::Return, &[12], &[])]),
            ]
        };
        let mut pure = op(OpKind::While, &[0], &[1]);
        pure.regions = body(op(OpKind::Negate, &[11], &[12]));
        let mut effect = op(OpKind::While, &[0], &[2]);
        effect.regions = body(op(OpKind::CustomCall, &[11], &[12]));
        let mut m = module(vec![pure, effect, op(OpKind::FuncReturn, &[0], &[])]);
        assert_eq!(remove_dead_ops(&mut m), 1);
        assert_eq!(kinds(&m), ["stablehlo.while", "func.return"]);
        let kept = &m.functions[0].body.blocks[0].ops[0];
        assert_eq!(kept.results, [ValueId(2)]);
    }

    #[test]
    fn values_read_inside_a_kept_region_stay() {
        // %1 is read only by the loop body, which reads it from outside.
        let mut looped = op(OpKind::While, &[0], &[2]);
        looped.regions = vec![
            block(&[10], vec![op(OpKind::Return, &[10], &[])]),
            block(
                &[11],
                vec![
                    op(OpKind::Add, &[11, 1], &[12]),
                    op(OpKind::Negate, &[11], &[13]),
                    op(OpKind::Return, &[12], &[]),
                ],
            ),
        ];
        let mut m = module(vec![
            op(OpKind::Exponential, &[0], &[1]),
            looped,
            op(OpKind::FuncReturn, &[2], &[]),
        ]);
        // Only the body's unread negate goes.
        assert_eq!(remove_dead_ops(&mut m), 1);
        assert_eq!(
            kinds(&m),
            ["stablehlo.exponential", "stablehlo.while", "func.return"]
        );
        let body = &m.functions[0].body.blocks[0].ops[1].regions[1].blocks[0];
        assert_eq!(body.ops.len(), 2);
    }

    #[test]
    fn effects_stay_unread() {
        let mut m = module(vec![
            op(OpKind::CustomCall, &[0], &[1]),
            op(OpKind::AllReduce, &[0], &[2]),
            op(OpKind::Other("mydialect.frob".to_string()), &[0], &[3]),
            op(OpKind::FuncReturn, &[0], &[]),
        ]);
        assert_eq!(remove_dead_ops(&mut m), 0);
        assert_eq!(kinds(&m).len(), 4);
    }
}
