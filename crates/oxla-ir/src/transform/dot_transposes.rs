//! Transposes read only by a `dot_general` become part of the product's dimension numbers.
//!
//! JAX writes `a @ b.T` as `transpose(b)` followed by a `dot_general` of the copy. The
//! product can read `b` where it lies instead: operand dimension `d` of the transposed value
//! is dimension `permutation[d]` of `b`, so the batching and contracting lists are mapped
//! through the permutation and the copy goes. That keeps the result's layout only when the
//! free dimensions (neither batching nor contracting), which the result lists in operand
//! order, keep their order through the permutation; other transposes stay. The product's
//! kernels then read the operand through strides (`eval/dot.rs`) and choose the cheapest
//! copy they make, if any (`eval/gemm.rs`). As XLA's own folding of such transposes, this
//! can change how float sums round: the kernels for small products pick their summation
//! order by the operands' layout (large ones sum in the same order either way).

use crate::attrs::Attribute;
use crate::module::{Block, Module, Op, Region, ValueId};
use crate::ops::OpKind;
use std::collections::{HashMap, HashSet};

/// Folds into its product every transpose of `module` read only once, by a `dot_general`
/// of the same block, whose permutation keeps the product's free dimensions in order;
/// returns how many went.
pub fn fold_transposes_into_dots(module: &mut Module) -> usize {
    module
        .functions
        .iter_mut()
        .map(|function| {
            let mut uses = HashMap::new();
            count_uses(&function.body, &mut uses);
            fold_region(&mut function.body, &uses)
        })
        .sum()
}

/// How many times each value is read in `region`, nested regions included.
fn count_uses(region: &Region, uses: &mut HashMap<ValueId, usize>) {
    for block in &region.blocks {
        for op in &block.ops {
            for v in &op.operands {
                *uses.entry(*v).or_default() += 1;
            }
            for inner in &op.regions {
                count_uses(inner, uses);
            }
        }
    }
}

fn fold_region(region: &mut Region, uses: &HashMap<ValueId, usize>) -> usize {
    region
        .blocks
        .iter_mut()
        .map(|block| fold_block(block, uses))
        .sum()
}

fn fold_block(block: &mut Block, uses: &HashMap<ValueId, usize>) -> usize {
    let mut folded = 0;
    for op in &mut block.ops {
        for region in &mut op.regions {
            folded += fold_region(region, uses);
        }
    }
    // The transposes of this block: result -> (input, permutation).
    let transposes: HashMap<ValueId, (ValueId, Vec<i64>)> = block
        .ops
        .iter()
        .filter(|op| op.kind == OpKind::Transpose)
        .filter_map(|op| match (op.operands.as_slice(), op.results.as_slice()) {
            ([input], [result]) => {
                let perm = op.attr("permutation")?.as_i64_list()?;
                Some((*result, (*input, perm)))
            }
            _ => None,
        })
        .collect();
    if transposes.is_empty() {
        return folded;
    }
    let mut gone: HashSet<ValueId> = HashSet::new();
    for op in &mut block.ops {
        if op.kind != OpKind::DotGeneral || op.operands.len() != 2 {
            continue;
        }
        for (side, prefix) in [(0, "lhs"), (1, "rhs")] {
            let value = op.operands[side];
            let Some((input, perm)) = transposes.get(&value) else {
                continue;
            };
            if uses.get(&value) != Some(&1) {
                continue;
            }
            let batching = format!("{prefix}_batching_dimensions");
            let contracting = format!("{prefix}_contracting_dimensions");
            let list = |name: &str| match op.attr(name) {
                None => Some(Vec::new()),
                Some(a) => a.as_i64_list(),
            };
            let (Some(b), Some(c)) = (list(&batching), list(&contracting)) else {
                continue;
            };
            let Some((b, c)) = through_permutation(perm, &b, &c) else {
                continue;
            };
            set_list(op, &batching, b);
            set_list(op, &contracting, c);
            op.operands[side] = *input;
            gone.insert(value);
            folded += 1;
        }
    }
    block.ops.retain(|op| {
        !(op.kind == OpKind::Transpose && op.results.iter().any(|r| gone.contains(r)))
    });
    folded
}

/// The batching and contracting lists of a product operand read before `perm` transposed
/// it, when `perm` is a permutation, the lists are in range and the free dimensions keep
/// their order.
fn through_permutation(
    perm: &[i64],
    batching: &[i64],
    contracting: &[i64],
) -> Option<(Vec<i64>, Vec<i64>)> {
    let rank = perm.len();
    let mut seen = vec![false; rank];
    for &p in perm {
        let p = usize::try_from(p).ok().filter(|&p| p < rank)?;
        if std::mem::replace(&mut seen[p], true) {
            return None;
        }
    }
    let mut named = vec![false; rank];
    let mut map = |dims: &[i64]| -> Option<Vec<i64>> {
        dims.iter()
            .map(|&d| {
                let d = usize::try_from(d).ok().filter(|&d| d < rank)?;
                if std::mem::replace(&mut named[d], true) {
                    return None;
                }
                Some(perm[d])
            })
            .collect()
    };
    let (b, c) = (map(batching)?, map(contracting)?);
    let free: Vec<i64> = (0..rank).filter(|&d| !named[d]).map(|d| perm[d]).collect();
    free.windows(2).all(|w| w[0] < w[1]).then_some((b, c))
}

/// Sets (or, for an empty list, drops) the dimension list `name` of `op`.
fn set_list(op: &mut Op, name: &str, dims: Vec<i64>) {
    op.attributes.retain(|(n, _)| n != name);
    if !dims.is_empty() {
        op.attributes
            .push((name.to_string(), Attribute::DenseI64Array(dims)));
    }
}

#[cfg(test)]
mod tests {
    use super::through_permutation;

    #[test]
    fn lists_map_through_the_permutation_when_free_dimensions_keep_their_order() {
        // `b.T` as a right-hand side contracting its dimension 0: `b`'s dimension 1.
        assert_eq!(
            through_permutation(&[1, 0], &[], &[0]),
            Some((vec![], vec![1]))
        );
        // A batched operand with its last two dimensions swapped.
        assert_eq!(
            through_permutation(&[0, 2, 1], &[0], &[2]),
            Some((vec![0], vec![1]))
        );
        // Two free dimensions that swap would reorder the result.
        assert_eq!(through_permutation(&[1, 0, 2], &[], &[2]), None);
        // Not a permutation, a dimension out of range, a dimension named twice.
        assert_eq!(through_permutation(&[0, 0], &[], &[0]), None);
        assert_eq!(through_permutation(&[1, 0], &[], &[2]), None);
        assert_eq!(through_permutation(&[1, 0], &[0], &[0]), None);
    }
}
