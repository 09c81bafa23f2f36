//! The sharding of an entry result that carries none of its own, propagated forward from the
//! shardings the program names (its arguments', its constraints', its `shard_map` regions')
//! through the ops that compute it, the way XLA's sharding propagation assigns one: ops on
//! values of one shape keep their operands' dimension shardings, `broadcast_in_dim` and
//! `transpose` move them with the dimensions, `dot_general` keeps the batch and free
//! dimensions' and `reduce` the kept dimensions', `slice` those of the dimensions it leaves
//! longer than one, `dynamic_slice` and `gather` those of the dimensions they take whole,
//! and a `reshape` that only adds or drops dimensions of size one those of the others; a
//! value left unsharded takes the sharding of another member of its `sdy.sharding_group`. An
//! axis shards at most one dimension: where two operands would use it twice, the first
//! operand's use wins. Unreduced axes are not propagated (a non-linear op on a partial sum is
//! not a partial sum of the result).
//!
//! Only the placement of the result's shards follows from this: oxla computes whole values,
//! so a propagated sharding never changes a value.

use super::{
    mesh_of, passed_sharding, sharding_text, taken_sharding, AxisRef, Mesh, MeshRef, Sharding,
};
use crate::{Function, Module, Op, OpKind, Type, ValueId};
use std::collections::HashMap;

/// Walks an entry function's body backwards from a result, remembering each value's answer.
pub(super) struct Propagation<'m> {
    module: &'m Module,
    entry: &'m Function,
    meshes: &'m [(String, Mesh)],
    producer: HashMap<ValueId, &'m Op>,
    /// The values of each `sdy.sharding_group` (what `shard_alike` lowers to), by group id.
    groups: HashMap<i128, Vec<ValueId>>,
    known: HashMap<ValueId, Option<Sharding>>,
}

impl<'m> Propagation<'m> {
    pub(super) fn new(
        module: &'m Module,
        entry: &'m Function,
        meshes: &'m [(String, Mesh)],
    ) -> Propagation<'m> {
        let producer: HashMap<ValueId, &Op> = entry
            .body
            .blocks
            .first()
            .into_iter()
            .flat_map(|b| &b.ops)
            .flat_map(|op| op.results.iter().map(move |&r| (r, op)))
            .collect();
        // A group's members are taken back through casts (JAX casts each value it groups).
        let mut groups: HashMap<i128, Vec<ValueId>> = HashMap::new();
        for op in entry.body.blocks.iter().flat_map(|b| &b.ops) {
            if op.kind == OpKind::SdyShardingGroup {
                if let (Some(&v), Some(id)) = (
                    op.operands.first(),
                    op.attr("group_id").and_then(|a| a.as_int()),
                ) {
                    groups.entry(id).or_default().push(uncast(&producer, v));
                }
            }
        }
        Propagation {
            module,
            entry,
            meshes,
            producer,
            groups,
            known: HashMap::new(),
        }
    }

    /// The sharding `value` gets, with the mesh it is over; `None` where nothing shards it
    /// (it is replicated) or the way there is not followed.
    pub(super) fn sharding(&mut self, value: ValueId) -> Option<(Sharding, Mesh)> {
        let sharding = self.of(value, 0)?;
        let mesh = mesh_of(self.meshes, &sharding.mesh).ok()?.into_owned();
        Some((sharding, mesh))
    }

    fn of(&mut self, value: ValueId, depth: usize) -> Option<Sharding> {
        if let Some(known) = self.known.get(&value) {
            return known.clone();
        }
        // Met again on its own way (the members of a sharding group lead to each other), a
        // value counts as unsharded.
        self.known.insert(value, None);
        let sharded =
            |s: &Sharding| s.dims.iter().any(|d| !d.is_empty()) || !s.unreduced.is_empty();
        // The walk is recursive: past 256 ops deep (unrolled loops) it gives up.
        let found = if depth > 256 {
            None
        } else {
            self.compute(value, depth)
                .filter(sharded)
                .or_else(|| self.grouped(value, depth))
        }
        .filter(sharded);
        self.known.insert(value, found.clone());
        found
    }

    /// For a value that gets no sharding of its own: the first one another member of its
    /// sharding group gets (`shard_alike` gives both values the sharding either has).
    fn grouped(&mut self, value: ValueId, depth: usize) -> Option<Sharding> {
        let value = uncast(&self.producer, value);
        let members = self
            .groups
            .values()
            .find(|members| members.contains(&value))?
            .clone();
        members
            .into_iter()
            .filter(|&m| m != value)
            .find_map(|m| self.of(m, depth + 1))
    }

    fn compute(&mut self, value: ValueId, depth: usize) -> Option<Sharding> {
        let block = self.entry.body.blocks.first()?;
        if let Some(i) = block.arguments.iter().position(|&a| a == value) {
            let text = match self.entry.arg_attrs.get(i).and_then(|a| sharding_text(a)) {
                Some(text) => text.to_string(),
                None => taken_sharding(self.entry, i)?,
            };
            return super::parse_sharding(&text);
        }
        let op = *self.producer.get(&value)?;
        match op.kind {
            OpKind::UnrealizedConversionCast if op.operands.len() == 1 => {
                return self.of(op.operands[0], depth + 1);
            }
            // A constraint's open dimensions (`{?}`) take what reaches them.
            OpKind::SdyShardingConstraint => {
                let named = super::parse_sharding(super::constraint_sharding(op)?)?;
                if !named.open.iter().any(|&o| o) {
                    return Some(named);
                }
                let from = self.of(*op.operands.first()?, depth + 1);
                return Some(opened(named, from));
            }
            _ => {}
        }
        if let Some(text) = passed_sharding(self.module, self.entry, value) {
            return super::parse_sharding(&text);
        }
        let shape = |v: ValueId| match self.entry.values.get(v.index()) {
            Some(Type::Tensor(t)) => Some(t.shape.clone()),
            _ => None,
        };
        let result_shape = shape(value)?;
        let ints = |name: &str| op.attr(name).and_then(|a| a.as_i64_list());
        match op.kind {
            OpKind::BroadcastInDim => {
                let dims = ints("broadcast_dimensions")?;
                let from = self.of(*op.operands.first()?, depth + 1)?;
                let operand_shape = shape(op.operands[0])?;
                let mut out = vec![Vec::new(); result_shape.len()];
                for (d, &to) in dims.iter().enumerate() {
                    // A dimension of size one that is broadcast is not split any more.
                    if operand_shape.get(d) == result_shape.get(usize::try_from(to).ok()?) {
                        *out.get_mut(usize::try_from(to).ok()?)? = from.dims.get(d)?.clone();
                    }
                }
                Some(with_dims(from, out))
            }
            OpKind::Transpose => {
                let perm = ints("permutation")?;
                let from = self.of(*op.operands.first()?, depth + 1)?;
                let out = perm
                    .iter()
                    .map(|&p| from.dims.get(usize::try_from(p).ok()?).cloned())
                    .collect::<Option<Vec<_>>>()?;
                Some(with_dims(from, out))
            }
            // A slice keeps its operand's axes on every dimension it leaves longer than one
            // (as XLA does, strided or not; a length that does not divide evenly leaves the
            // result replicated, as any uneven sharding does here). A dynamic slice keeps
            // only those of the dimensions it takes whole.
            OpKind::Slice | OpKind::DynamicSlice => {
                let operand = *op.operands.first()?;
                let from = self.of(operand, depth + 1)?;
                let operand_shape = shape(operand)?;
                let dynamic = op.kind == OpKind::DynamicSlice;
                let out = (0..result_shape.len())
                    .map(|d| {
                        let keep = match dynamic {
                            true => operand_shape.get(d) == Some(&result_shape[d]),
                            false => result_shape[d] > 1,
                        };
                        match keep {
                            true => from.dims.get(d).cloned(),
                            false => Some(Vec::new()),
                        }
                    })
                    .collect::<Option<Vec<_>>>()?;
                Some(with_dims(from, out))
            }
            // A gather's offset dimensions that take a whole operand dimension keep its
            // axes (static indexing of a committed array gathers); the rest come from the
            // indices, which shard nothing here.
            OpKind::Gather => {
                let operand = *op.operands.first()?;
                let from = self.of(operand, depth + 1)?;
                let operand_shape = shape(operand)?;
                let offset_dims = ints("offset_dims").unwrap_or_default();
                let sizes = ints("slice_sizes")?;
                let dropped: Vec<i64> = ints("collapsed_slice_dims")
                    .unwrap_or_default()
                    .into_iter()
                    .chain(ints("operand_batching_dims").unwrap_or_default())
                    .collect();
                let kept = (0..operand_shape.len()).filter(|&d| !dropped.contains(&(d as i64)));
                let mut out = vec![Vec::new(); result_shape.len()];
                for (d, &to) in kept.zip(&offset_dims) {
                    if sizes.get(d) == operand_shape.get(d) {
                        *out.get_mut(usize::try_from(to).ok()?)? = from.dims.get(d)?.clone();
                    }
                }
                Some(with_dims(from, out))
            }
            // A reshape that only adds or removes dimensions of size one keeps the axes of
            // the others.
            OpKind::Reshape => {
                let operand = *op.operands.first()?;
                let from = self.of(operand, depth + 1)?;
                let operand_shape = shape(operand)?;
                let real =
                    |s: &[i64]| -> Vec<usize> { (0..s.len()).filter(|&d| s[d] != 1).collect() };
                let (src, dst) = (real(&operand_shape), real(&result_shape));
                let same = src.len() == dst.len()
                    && src
                        .iter()
                        .zip(&dst)
                        .all(|(&a, &b)| operand_shape[a] == result_shape[b]);
                if !same {
                    return None;
                }
                let mut out = vec![Vec::new(); result_shape.len()];
                for (&a, &b) in src.iter().zip(&dst) {
                    out[b] = from.dims.get(a)?.clone();
                }
                Some(with_dims(from, out))
            }
            OpKind::DotGeneral => {
                let (lhs, rhs) = (*op.operands.first()?, *op.operands.get(1)?);
                let (lhs_rank, rhs_rank) = (shape(lhs)?.len(), shape(rhs)?.len());
                let (lb, rb) = (
                    ints("lhs_batching_dimensions").unwrap_or_default(),
                    ints("rhs_batching_dimensions").unwrap_or_default(),
                );
                let (lc, rc) = (
                    ints("lhs_contracting_dimensions").unwrap_or_default(),
                    ints("rhs_contracting_dimensions").unwrap_or_default(),
                );
                let free = |rank: usize, batch: &[i64], contracting: &[i64]| {
                    (0..rank as i64)
                        .filter(|d| !batch.contains(d) && !contracting.contains(d))
                        .collect::<Vec<_>>()
                };
                let (lf, rf) = (free(lhs_rank, &lb, &lc), free(rhs_rank, &rb, &rc));
                let l = self.of(lhs, depth + 1);
                let r = self.of(rhs, depth + 1);
                let pick = |s: &Option<Sharding>, d: i64| -> Vec<AxisRef> {
                    s.as_ref()
                        .and_then(|s| s.dims.get(usize::try_from(d).ok()?).cloned())
                        .unwrap_or_default()
                };
                // Result dimensions: batch, then the lhs's free ones, then the rhs's; each
                // takes the lhs's axes, else the rhs's (for batch dimensions).
                let mut candidates: Vec<Vec<Vec<AxisRef>>> = Vec::new();
                for (&a, &b) in lb.iter().zip(&rb) {
                    candidates.push(vec![pick(&l, a), pick(&r, b)]);
                }
                candidates.extend(lf.iter().map(|&d| vec![pick(&l, d)]));
                candidates.extend(rf.iter().map(|&d| vec![pick(&r, d)]));
                let mesh = l.as_ref().or(r.as_ref())?.mesh.clone();
                Some(merged(mesh, candidates))
            }
            OpKind::Reduce => {
                let kept: Vec<usize> = {
                    let dims = ints("dimensions")?;
                    let rank = shape(*op.operands.first()?)?.len();
                    (0..rank).filter(|&d| !dims.contains(&(d as i64))).collect()
                };
                let inputs = op.operands.len() / 2;
                let index = op.results.iter().position(|&r| r == value)?;
                let from = self.of(
                    *op.operands.get(index.min(inputs.saturating_sub(1)))?,
                    depth + 1,
                )?;
                let out = kept
                    .iter()
                    .map(|&d| from.dims.get(d).cloned())
                    .collect::<Option<Vec<_>>>()?;
                Some(with_dims(from, out))
            }
            _ if op.regions.is_empty()
                && !op.operands.is_empty()
                && op
                    .operands
                    .iter()
                    .all(|&v| shape(v).is_some_and(|s| s == result_shape || s.is_empty())) =>
            {
                // Elementwise (and other ops on values of the result's shape; scalar
                // operands, as `clamp` takes, shard nothing).
                let mut mesh = None;
                let mut operands = Vec::new();
                for &v in &op.operands {
                    if shape(v).is_some_and(|s| s == result_shape) {
                        if let Some(s) = self.of(v, depth + 1) {
                            mesh.get_or_insert(s.mesh.clone());
                            operands.push(s);
                        }
                    }
                }
                let candidates = (0..result_shape.len())
                    .map(|d| {
                        operands
                            .iter()
                            .filter(|s| Some(&s.mesh) == mesh.as_ref())
                            .map(|s| s.dims.get(d).cloned().unwrap_or_default())
                            .collect()
                    })
                    .collect();
                Some(merged(mesh?, candidates))
            }
            _ => None,
        }
    }
}

/// `value` taken back through the casts it was made by.
fn uncast(producer: &HashMap<ValueId, &Op>, mut value: ValueId) -> ValueId {
    while let Some(op) = producer.get(&value) {
        match (
            op.kind == OpKind::UnrealizedConversionCast,
            op.operands.as_slice(),
        ) {
            (true, [from]) => value = *from,
            _ => break,
        }
    }
    value
}

/// `from` with its dimension shardings replaced by `dims` (all closed).
fn with_dims(from: Sharding, dims: Vec<Vec<AxisRef>>) -> Sharding {
    Sharding {
        mesh: from.mesh,
        open: vec![false; dims.len()],
        dims,
        unreduced: Vec::new(),
    }
}

/// `named` (a constraint's sharding) with each open dimension it leaves unsharded taking the
/// axes `from` (its operand's) shards it with, where `named` does not use them elsewhere.
fn opened(named: Sharding, from: Option<Sharding>) -> Sharding {
    let Some(from) = from.filter(|f| f.mesh == named.mesh) else {
        return with_dims(named.clone(), named.dims);
    };
    let mut used: Vec<String> = named
        .dims
        .iter()
        .flatten()
        .map(|a| a.name.clone())
        .collect();
    let mut dims = named.dims.clone();
    for (d, dim) in dims.iter_mut().enumerate() {
        if !dim.is_empty() || !named.open.get(d).copied().unwrap_or(false) {
            continue;
        }
        let Some(axes) = from.dims.get(d) else {
            continue;
        };
        if axes.iter().all(|a| !used.contains(&a.name)) {
            used.extend(axes.iter().map(|a| a.name.clone()));
            dim.clone_from(axes);
        }
    }
    with_dims(named, dims)
}

/// One sharding from per-dimension candidates (in priority order): each dimension takes its
/// first candidate whose axes no earlier dimension took.
fn merged(mesh: MeshRef, candidates: Vec<Vec<Vec<AxisRef>>>) -> Sharding {
    let mut used: Vec<String> = Vec::new();
    let mut dims = Vec::with_capacity(candidates.len());
    for options in candidates {
        let chosen = options
            .into_iter()
            .find(|axes| !axes.is_empty() && axes.iter().all(|a| !used.contains(&a.name)))
            .unwrap_or_default();
        used.extend(chosen.iter().map(|a| a.name.clone()));
        dims.push(chosen);
    }
    Sharding {
        mesh,
        open: vec![false; dims.len()],
        dims,
        unreduced: Vec::new(),
    }
}
