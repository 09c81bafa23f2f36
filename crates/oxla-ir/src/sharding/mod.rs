//! Shardy shardings: where each partition's shard of a value lies.
//!
//! `jax.jit` over arrays sharded across several devices lowers to one global program whose
//! arguments (and sometimes results) carry shardings (`#sdy.sharding<@mesh, [{"x"}, {}]>`
//! over `sdy.mesh @mesh = <["x"=4]>`); `shard_map` regions (`sdy.manual_computation`) name
//! the shardings of their operands and results the same way. oxla's devices share one host,
//! so such programs run on whole values: a [`Tiling`] says where each partition's shard lies,
//! [`assemble`] builds the whole value from the shards and [`shard_of`] cuts one out.
//! A value with unreduced axes (`unreduced={"x"}`) is the sum of the shards along them:
//! assembling adds those shards up, and cutting one out gives the whole shard to the first
//! partition along them and zeros to the others.
//!
//! Reads the shardings' text (the bytecode reader decodes Shardy's encoding into it).
//! Errors are descriptions of a sharding oxla cannot honour (shards of unequal size, a mesh of
//! the wrong size).

mod propagation;

use crate::{Attribute, Function, Module, OpKind, TensorType, Type};

/// Where the shards of one value lie: its whole type, each partition's shard type, and
/// the index of each partition's shard's first element in the whole value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tiling {
    /// The whole value's type.
    pub global: TensorType,
    /// The type of one partition's shard (every shard has it).
    pub local: TensorType,
    /// `origins[p]`: the start of partition `p`'s shard in the whole value.
    pub origins: Vec<Vec<i64>>,
    /// For a value with unreduced axes, `summands[p]`: partition `p`'s position along them
    /// (the shards at one origin with different positions add up to that part of the
    /// value); empty for a value without.
    pub summands: Vec<usize>,
}

impl Tiling {
    /// Every partition holds the whole value.
    pub fn replicated(ty: &TensorType, partitions: usize) -> Tiling {
        Tiling {
            global: ty.clone(),
            local: ty.clone(),
            origins: vec![vec![0; ty.rank()]; partitions],
            summands: Vec::new(),
        }
    }

    /// True when every partition holds the whole value.
    pub fn is_replicated(&self) -> bool {
        self.global == self.local && self.summands.is_empty()
    }

    /// The tiling over the partitions `group` only (the `k`th of them is partition `k`).
    pub fn restricted(&self, group: &[usize]) -> Tiling {
        Tiling {
            global: self.global.clone(),
            local: self.local.clone(),
            origins: group.iter().map(|&p| self.origins[p].clone()).collect(),
            summands: group
                .iter()
                .filter_map(|&p| self.summands.get(p).copied())
                .collect(),
        }
    }

    /// The number of shards along each dimension.
    pub fn tiles_per_dim(&self) -> Vec<i64> {
        self.global
            .shape
            .iter()
            .zip(&self.local.shape)
            .map(|(&g, &l)| if l == 0 { 1 } else { g / l })
            .collect()
    }

    /// The number of shards summed along the unreduced axes (1 when there are none).
    pub fn summand_count(&self) -> usize {
        self.summands.iter().max().map_or(1, |&s| s + 1)
    }

    /// Which partition holds what, as an HLO tile assignment lists it: the partitions in the
    /// order of the shards they hold (row-major over [`Tiling::tiles_per_dim`]), then of
    /// their summand, each group's holders in partition order; `None` when groups have
    /// different numbers of holders.
    pub fn tile_assignment(&self) -> Option<TileAssignment> {
        let tiles = self.tiles_per_dim();
        let summands = self.summand_count();
        let count = usize::try_from(tiles.iter().product::<i64>()).ok()?;
        let mut holders: Vec<Vec<i64>> = vec![Vec::new(); count.checked_mul(summands)?];
        for (p, origin) in self.origins.iter().enumerate() {
            let mut index = 0i64;
            for ((&o, &l), &t) in origin.iter().zip(&self.local.shape).zip(&tiles) {
                let coordinate = if l == 0 { 0 } else { o / l };
                index = index * t + coordinate;
            }
            let summand = self.summands.get(p).copied().unwrap_or(0);
            let group = usize::try_from(index).ok()? * summands + summand;
            holders.get_mut(group)?.push(p as i64);
        }
        let replicas = holders.first().map_or(0, Vec::len);
        if replicas == 0 || holders.iter().any(|h| h.len() != replicas) {
            return None;
        }
        Some(TileAssignment {
            devices: holders.concat(),
            summands,
            replicas,
        })
    }
}

/// A [`Tiling`]'s partitions in the order an HLO tile assignment lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TileAssignment {
    /// The partitions, row-major over the tiles, then the summands, then the replicas.
    pub devices: Vec<i64>,
    /// Shards summed for each tile (1 when the value has no unreduced axes).
    pub summands: usize,
    /// Partitions holding each (tile, summand).
    pub replicas: usize,
}

/// The tilings of an entry function's arguments and results.
#[derive(Clone, Debug)]
pub struct EntryTilings {
    /// One per argument.
    pub inputs: Vec<Tiling>,
    /// One per result.
    pub outputs: Vec<Tiling>,
}

/// A device mesh: its axes (name and size, major first) and the partition at each position.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Mesh {
    axes: Vec<(String, i64)>,
    device_ids: Vec<i64>,
}

/// One mesh axis, or a part of one (`"x":(pre)size`: the axis reshaped into
/// `[pre, size, rest]`, the middle dimension).
#[derive(Clone, Debug, PartialEq, Eq)]
struct AxisRef {
    name: String,
    sub: Option<(i64, i64)>,
}

/// A parsed `#sdy.sharding`: the mesh it is over, the axes sharding each dimension (major
/// first), and its unreduced axes (the value is the sum of the shards along them).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Sharding {
    mesh: MeshRef,
    dims: Vec<Vec<AxisRef>>,
    /// `open[d]`: dimension `d` is open (`{"x", ?}`): propagation may shard it further.
    open: Vec<bool>,
    unreduced: Vec<AxisRef>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum MeshRef {
    Named(String),
    Inline(Mesh),
}

/// The sharding attribute among `attrs`, as text: an `sdy.sharding` (`#sdy.sharding<...>`)
/// or an `mhlo.sharding` (an HLO sharding string, `{devices=[2,1]<=[2]}`, as modules
/// exported without Shardy carry).
pub fn sharding_text(attrs: &[(String, Attribute)]) -> Option<&str> {
    attrs
        .iter()
        .find_map(|(name, value)| match (name.as_str(), value) {
            ("sdy.sharding", Attribute::Opaque(text)) => Some(text.as_str()),
            ("mhlo.sharding", Attribute::String(text)) => Some(text.as_str()),
            _ => None,
        })
}

/// True when the entry function of a program over several partitions names shardings.
pub fn is_annotated(entry: &Function) -> bool {
    entry
        .arg_attrs
        .iter()
        .chain(&entry.res_attrs)
        .any(|attrs| sharding_text(attrs).is_some())
}

/// True when an `sdy.sharding_constraint` outside every `shard_map` region of `module` makes a
/// value unreduced. Run per device, the value is whole on every device there; made unreduced,
/// one device holds it and the others zeros, which only a program on whole values does (on
/// entering the region that takes it).
pub fn makes_unreduced(module: &Module) -> bool {
    fn unreduced(op: &crate::Op) -> bool {
        op.kind == OpKind::SdyShardingConstraint
            && constraint_sharding(op)
                .and_then(parse_sharding)
                .is_some_and(|s| !s.unreduced.is_empty())
    }
    fn in_region(region: &crate::Region) -> bool {
        region.blocks.iter().flat_map(|b| &b.ops).any(|op| {
            unreduced(op)
                || (!crate::eval::is_manual_computation(&op.kind)
                    && op.regions.iter().any(in_region))
        })
    }
    module.functions.iter().any(|f| in_region(&f.body))
}

/// The meshes `module` declares, by name.
fn meshes(module: &Module) -> Vec<(String, Mesh)> {
    module
        .declarations
        .iter()
        .filter_map(|d| parse_mesh_declaration(d))
        .collect()
}

/// The tiling of a `ty` value sharded as `text` says (`#sdy.sharding<...>`, or the same
/// without its `#sdy.sharding` prefix as inside a per-value list) over `partitions`.
pub fn tiling_of(
    module: &Module,
    text: &str,
    ty: &TensorType,
    partitions: usize,
) -> Result<Tiling, String> {
    tiling_in(&meshes(module), text, ty, partitions)
}

fn tiling_in(
    meshes: &[(String, Mesh)],
    text: &str,
    ty: &TensorType,
    partitions: usize,
) -> Result<Tiling, String> {
    if text.starts_with('{') {
        return hlo_tiling(text, ty, partitions);
    }
    let (sharding, mesh) = resolve(meshes, text)?;
    tile(ty, &sharding, &mesh, partitions)
}

/// The Shardy sharding `text` says (with or without its `#sdy.sharding` prefix) and the mesh
/// it is over.
fn resolve<'a>(
    meshes: &'a [(String, Mesh)],
    text: &str,
) -> Result<(Sharding, std::borrow::Cow<'a, Mesh>), String> {
    let sharding = parse_sharding(text).ok_or_else(|| format!("cannot read `{text}`"))?;
    let mesh = mesh_of(meshes, &sharding.mesh)?;
    Ok((sharding, mesh))
}

/// The mesh `mesh` names among `meshes` (or holds inline).
fn mesh_of<'a>(
    meshes: &'a [(String, Mesh)],
    mesh: &MeshRef,
) -> Result<std::borrow::Cow<'a, Mesh>, String> {
    match mesh {
        MeshRef::Inline(mesh) => Ok(std::borrow::Cow::Owned(mesh.clone())),
        MeshRef::Named(name) => meshes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, m)| std::borrow::Cow::Borrowed(m))
            .ok_or_else(|| format!("mesh @{name} is not declared")),
    }
}

/// The partitions holding the same values as `partition` around a `shard_map` region over
/// the `manual` axes (`#sdy<manual_axes{"x", "y"}>`) of the mesh its sharding `text` names:
/// those at its coordinates along the mesh's other axes, in partition order. Inside an outer
/// region over other axes, these are the partitions whose shards make one value.
pub fn manual_group(
    module: &Module,
    text: &str,
    manual: &str,
    partitions: usize,
    partition: usize,
) -> Result<Vec<usize>, String> {
    let meshes = meshes(module);
    let (_, mesh) = resolve(&meshes, text)?;
    let manual: Vec<&str> = manual.split('"').skip(1).step_by(2).collect();
    // Each partition's coordinates along the axes that are not manual.
    let free: Vec<Vec<i64>> = partition_coordinates(&mesh, partitions)?
        .into_iter()
        .map(|coordinates| {
            coordinates
                .into_iter()
                .zip(&mesh.axes)
                .filter(|(_, (name, _))| !manual.contains(&name.as_str()))
                .map(|(c, _)| c)
                .collect()
        })
        .collect();
    let mine = free
        .get(partition)
        .ok_or_else(|| format!("partition {partition}"))?;
    Ok((0..partitions).filter(|&p| &free[p] == mine).collect())
}

/// The shardings of a `#sdy.sharding_per_value<[<...>, <...>]>` attribute, each as
/// `<...>` text.
pub fn per_value(attr: &Attribute) -> Option<Vec<String>> {
    let Attribute::Opaque(text) = attr else {
        return None;
    };
    let inner = text
        .strip_prefix("#sdy.sharding_per_value<[")?
        .strip_suffix("]>")?;
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, None);
    for (i, c) in inner.char_indices() {
        match c {
            '<' => {
                if depth == 0 {
                    start = Some(i);
                }
                depth += 1;
            }
            '>' => {
                depth -= 1;
                if depth == 0 {
                    out.push(inner[start?..=i].to_string());
                }
            }
            _ => {}
        }
    }
    Some(out)
}

/// The tilings of `entry`'s arguments and results over `partitions` partitions; a value
/// without a sharding is replicated.
pub fn entry_tilings(
    module: &Module,
    entry: &Function,
    partitions: usize,
) -> Result<EntryTilings, String> {
    let meshes = meshes(module);
    let tiling = |ty: &Type, attrs: Option<&Vec<(String, Attribute)>>, what: &str| {
        let ty = match ty {
            Type::Tensor(t) if t.is_static() => t,
            // A runtime token (an ordered effect's) holds nothing to split: every partition
            // has it, as the empty buffer it travels as.
            Type::Token => {
                return Ok(Tiling::replicated(
                    &crate::eval::token_literal().ty,
                    partitions,
                ))
            }
            other => return Err(format!("{what} is {other}")),
        };
        match attrs.and_then(|a| sharding_text(a)) {
            None => Ok(Tiling::replicated(ty, partitions)),
            Some(text) => {
                tiling_in(&meshes, text, ty, partitions).map_err(|e| format!("{what}: {e}"))
            }
        }
    };
    let mut inputs = entry
        .ty
        .inputs
        .iter()
        .enumerate()
        .map(|(i, ty)| tiling(ty, entry.arg_attrs.get(i), &format!("argument {i}")))
        .collect::<Result<Vec<_>, _>>()?;
    // An argument without a sharding takes the one of the `shard_map` region or constraint
    // it goes to, as XLA's sharding propagation gives it.
    for (i, input) in inputs.iter_mut().enumerate() {
        let annotated = entry.arg_attrs.get(i).and_then(|a| sharding_text(a));
        let token = matches!(entry.ty.inputs.get(i), Some(Type::Token));
        if annotated.is_none() && !token {
            if let Some(text) = taken_sharding(entry, i) {
                let ty = input.global.clone();
                *input = tiling_in(&meshes, &text, &ty, partitions)
                    .map_err(|e| format!("argument {i}: {e}"))?;
            }
        }
    }
    let mut outputs = entry
        .ty
        .results
        .iter()
        .enumerate()
        .map(|(i, ty)| tiling(ty, entry.res_attrs.get(i), &format!("result {i}")))
        .collect::<Result<Vec<_>, _>>()?;
    // A result without a sharding takes the one XLA's sharding propagation would give it
    // ([`propagation`]): that of the constraint, region or called function's signature it is
    // returned from (what `jax.export`'s `call` leaves), or one carried to it from the
    // shardings of the values it is computed from. Else a sharding propagation does not
    // read (an HLO sharding string) passed to it or to the argument it is computed from
    // elementwise; otherwise it is replicated.
    let mut propagation = propagation::Propagation::new(module, entry, &meshes);
    for (i, out) in outputs.iter_mut().enumerate() {
        let annotated = entry
            .res_attrs
            .get(i)
            .and_then(|a| sharding_text(a))
            .is_some();
        let token = matches!(entry.ty.results.get(i), Some(Type::Token));
        if !annotated && !token {
            let returned = entry
                .body
                .blocks
                .first()
                .and_then(|b| b.ops.last())
                .and_then(|ret| ret.operands.get(i).copied());
            // A propagated sharding that does not split the value evenly is left out (one
            // named on the way fails below).
            let propagated = returned
                .and_then(|v| propagation.sharding(v))
                .and_then(|(sharding, mesh)| tile(&out.global, &sharding, &mesh, partitions).ok());
            if let Some(tiling) = propagated {
                *out = tiling;
            } else if let Some(text) = returned.and_then(|v| passed_sharding(module, entry, v)) {
                let ty = out.global.clone();
                *out = tiling_in(&meshes, &text, &ty, partitions)
                    .map_err(|e| format!("result {i}: {e}"))?;
            } else if let Some(arg) = elementwise_source(entry, i) {
                let from = &inputs[arg];
                if from.global.shape == out.global.shape {
                    let mut local = out.global.clone();
                    local.shape = from.local.shape.clone();
                    *out = Tiling {
                        global: out.global.clone(),
                        local,
                        origins: from.origins.clone(),
                        // Partial sums do not survive elementwise ops in general.
                        summands: Vec::new(),
                    };
                }
            }
        }
    }
    Ok(EntryTilings { inputs, outputs })
}

/// The sharding an `InspectSharding` call (`jax.debug.inspect_array_sharding` in a partitioned
/// program) reports for its operand.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InspectedSharding {
    /// Where the operand's shards lie over the program's partitions.
    Tiled(Tiling),
    /// The operand is inside a `shard_map` region: each device's own value.
    Manual,
}

/// Each `InspectSharding` call of `entry` (in program order, nested regions included) with the
/// sharding it reports: a call in `entry`'s body reports the sharding XLA's propagation gives
/// its operand (see [`entry_tilings`]; replicated where nothing shards it), one inside a
/// `shard_map` region a manual sharding, and one in another region (a loop body, a branch) a
/// replicated one, as propagation is not followed into regions.
pub fn inspected_shardings<'m>(
    module: &'m Module,
    entry: &'m Function,
    partitions: usize,
) -> Vec<(&'m crate::Op, InspectedSharding)> {
    fn nested<'m>(
        ops: &'m [crate::Op],
        manual: bool,
        entry: &'m Function,
        partitions: usize,
        out: &mut Vec<(&'m crate::Op, InspectedSharding)>,
    ) {
        for op in ops {
            if crate::eval::is_inspect_sharding(op) {
                let reported = match manual {
                    true => Some(InspectedSharding::Manual),
                    false => inspected_type(entry, op)
                        .map(|ty| InspectedSharding::Tiled(Tiling::replicated(ty, partitions))),
                };
                out.extend(reported.map(|r| (op, r)));
            }
            let manual = manual || crate::eval::is_manual_computation(&op.kind);
            for block in op.regions.iter().flat_map(|r| &r.blocks) {
                nested(&block.ops, manual, entry, partitions, out);
            }
        }
    }
    let meshes = meshes(module);
    let mut propagation = propagation::Propagation::new(module, entry, &meshes);
    let mut out = Vec::new();
    for op in entry.body.blocks.iter().flat_map(|b| &b.ops) {
        if crate::eval::is_inspect_sharding(op) {
            if let Some(ty) = inspected_type(entry, op) {
                let tiling = propagation
                    .sharding(op.operands[0])
                    .and_then(|(sharding, mesh)| tile(ty, &sharding, &mesh, partitions).ok())
                    .unwrap_or_else(|| Tiling::replicated(ty, partitions));
                out.push((op, InspectedSharding::Tiled(tiling)));
            }
            continue;
        }
        let manual = crate::eval::is_manual_computation(&op.kind);
        for block in op.regions.iter().flat_map(|r| &r.blocks) {
            nested(&block.ops, manual, entry, partitions, &mut out);
        }
    }
    out
}

/// The static tensor type of an `InspectSharding` call's operand.
fn inspected_type<'f>(function: &'f Function, op: &crate::Op) -> Option<&'f TensorType> {
    match function.values.get(op.operands.first()?.index())? {
        Type::Tensor(t) if t.is_static() => Some(t),
        _ => None,
    }
}

/// The sharding `value` of `function`'s body has from where it was made, through casts: an
/// `sdy.sharding_constraint`'s, a `Sharding` custom call's or an `sdy.manual_computation`'s
/// (its `out_shardings`), or a `func.call`'s callee's result sharding (or, for a result the
/// callee returns unchanged, that argument's sharding, or where its operand got one).
fn passed_sharding<'m>(
    module: &'m Module,
    function: &'m Function,
    value: crate::ValueId,
) -> Option<std::borrow::Cow<'m, str>> {
    let (mut function, mut value) = (function, value);
    for _ in 0..64 {
        let block = function.body.blocks.first()?;
        let op = block.ops.iter().find(|op| op.results.contains(&value))?;
        match op.kind {
            OpKind::SdyShardingConstraint => return constraint_sharding(op).map(Into::into),
            OpKind::CustomCall if crate::eval::sharding_call_target(op) == Some("Sharding") => {
                return match op.attr("mhlo.sharding")? {
                    Attribute::String(text) => Some(text.as_str().into()),
                    _ => None,
                };
            }
            ref kind if crate::eval::is_manual_computation(kind) => {
                let index = op.results.iter().position(|&r| r == value)?;
                return region_sharding(op, "out_shardings", index).map(Into::into);
            }
            OpKind::UnrealizedConversionCast if op.operands.len() == 1 => value = op.operands[0],
            OpKind::Call => {
                let callee = module.function(crate::transform::call_target(op)?)?;
                let index = op.results.iter().position(|&r| r == value)?;
                if let Some(text) = callee.res_attrs.get(index).and_then(|a| sharding_text(a)) {
                    return Some(text.into());
                }
                let callee_block = callee.body.blocks.first()?;
                let returned = *callee_block.ops.last()?.operands.get(index)?;
                match callee_block.arguments.iter().position(|&a| a == returned) {
                    Some(arg) => {
                        if let Some(text) = callee.arg_attrs.get(arg).and_then(|a| sharding_text(a))
                        {
                            return Some(text.into());
                        }
                        value = *op.operands.get(arg)?;
                    }
                    None => (function, value) = (callee, returned),
                }
            }
            _ => return None,
        }
    }
    None
}

/// The sharding argument `index` of `entry` is taken in with, through casts, by its first
/// user: an `sdy.manual_computation` (its `in_shardings`) or an `sdy.sharding_constraint`.
fn taken_sharding(entry: &Function, index: usize) -> Option<String> {
    let block = entry.body.blocks.first()?;
    let mut value = *block.arguments.get(index)?;
    for _ in 0..64 {
        let op = block.ops.iter().find(|op| op.operands.contains(&value))?;
        match op.kind {
            OpKind::UnrealizedConversionCast if op.operands.len() == 1 => value = op.results[0],
            OpKind::SdyShardingConstraint => return constraint_sharding(op).map(str::to_string),
            ref kind if crate::eval::is_manual_computation(kind) => {
                let k = op.operands.iter().position(|&v| v == value)?;
                return region_sharding(op, "in_shardings", k);
            }
            _ => return None,
        }
    }
    None
}

/// The sharding an `sdy.sharding_constraint` puts on its operand, as text.
fn constraint_sharding(op: &crate::Op) -> Option<&str> {
    match op.attr("sharding")? {
        Attribute::Opaque(text) => Some(text),
        _ => None,
    }
}

/// Sharding `index` of a `shard_map` region's `in_shardings` or `out_shardings` (`which`).
fn region_sharding(op: &crate::Op, which: &str, index: usize) -> Option<String> {
    per_value(op.attr(which)?)?.into_iter().nth(index)
}

/// The entry argument that result `index` of `entry` is computed from through ops whose
/// operands all have the result's shape (elementwise arithmetic, conversions, copies), if any;
/// the first one found, operands searched in order.
fn elementwise_source(entry: &Function, index: usize) -> Option<usize> {
    let block = entry.body.blocks.first()?;
    let shape_of = |v: crate::ValueId| match entry.values.get(v.index()) {
        Some(Type::Tensor(t)) => Some(&t.shape),
        _ => None,
    };
    let start = *block.ops.last()?.operands.get(index)?;
    let shape = shape_of(start)?;
    let mut stack = vec![start];
    let mut budget = 256;
    while let Some(value) = stack.pop() {
        budget -= 1;
        if budget == 0 {
            return None;
        }
        if let Some(arg) = block.arguments.iter().position(|&a| a == value) {
            return Some(arg);
        }
        let Some(op) = block.ops.iter().find(|op| op.results.contains(&value)) else {
            continue;
        };
        if op.regions.is_empty() && op.operands.iter().all(|&v| shape_of(v) == Some(shape)) {
            stack.extend(op.operands.iter().rev());
        }
    }
    None
}

/// Where `sharding` over `mesh` puts each partition's shard of a `ty` value.
fn tile(
    ty: &TensorType,
    sharding: &Sharding,
    mesh: &Mesh,
    partitions: usize,
) -> std::result::Result<Tiling, String> {
    if sharding.dims.iter().all(Vec::is_empty) && sharding.unreduced.is_empty() {
        return Ok(Tiling::replicated(ty, partitions));
    }
    if sharding.dims.len() != ty.rank() {
        return Err(format!(
            "{} dimension shardings for a rank-{} value",
            sharding.dims.len(),
            ty.rank()
        ));
    }
    let coordinates = partition_coordinates(mesh, partitions)?;
    // Per dimension: the axis references and the number of shards.
    let mut tiles = Vec::with_capacity(ty.rank());
    let mut refs = Vec::with_capacity(ty.rank());
    for dim in &sharding.dims {
        let (dim_refs, count) = resolve_axes(mesh, dim)?;
        tiles.push(count);
        refs.push(dim_refs);
    }
    let (unreduced, _) = resolve_axes(mesh, &sharding.unreduced)?;
    let local = shard_type(ty, &tiles)?;
    let mut origins = Vec::with_capacity(partitions);
    let mut summands = Vec::new();
    for coordinates in &coordinates {
        // The partition's position along a list of (sub-)axes, the first one major.
        let along = |axes: &[AxisPart]| {
            axes.iter().fold(0i64, |acc, a| {
                acc * a.size + (coordinates[a.axis] / a.post) % a.size
            })
        };
        origins.push(
            refs.iter()
                .zip(&local.shape)
                .map(|(dim_refs, &l)| along(dim_refs) * l)
                .collect(),
        );
        if !unreduced.is_empty() {
            summands.push(along(&unreduced) as usize);
        }
    }
    Ok(Tiling {
        global: ty.clone(),
        local,
        origins,
        summands,
    })
}

/// Each partition's coordinates along the axes of `mesh` (the first axis major), by
/// partition; an error unless the mesh places each of `partitions` partitions once.
fn partition_coordinates(mesh: &Mesh, partitions: usize) -> Result<Vec<Vec<i64>>, String> {
    if let Some((name, s)) = mesh
        .axes
        .iter()
        .find(|(_, s)| *s < 1 || *s > partitions as i64)
    {
        return Err(format!("mesh axis {name:?} has size {s}"));
    }
    let size = mesh
        .axes
        .iter()
        .try_fold(1i64, |acc, (_, s)| acc.checked_mul(*s))
        .unwrap_or(i64::MAX);
    if size != partitions as i64 {
        return Err(format!(
            "a mesh of {size} devices for a program over {partitions} partitions"
        ));
    }
    let positions: Vec<i64> = if mesh.device_ids.is_empty() {
        (0..size).collect()
    } else {
        mesh.device_ids.clone()
    };
    let mut sorted = positions.clone();
    sorted.sort_unstable();
    if sorted != (0..size).collect::<Vec<_>>() {
        return Err(format!(
            "mesh device ids {positions:?} are not a permutation"
        ));
    }
    let mut out = vec![Vec::new(); partitions];
    for (position, &partition) in positions.iter().enumerate() {
        let mut coordinates = vec![0i64; mesh.axes.len()];
        let mut rest = position as i64;
        for (a, (_, s)) in mesh.axes.iter().enumerate().rev() {
            coordinates[a] = rest % s;
            rest /= s;
        }
        out[partition as usize] = coordinates;
    }
    Ok(out)
}

/// A (sub-)axis resolved against its mesh: the mesh axis's index, the size of the part of
/// the mesh axis after it, and its own size.
#[derive(Clone, Copy)]
struct AxisPart {
    axis: usize,
    post: i64,
    size: i64,
}

/// Each of `axes` resolved against `mesh`, and the product of their sizes.
fn resolve_axes(mesh: &Mesh, axes: &[AxisRef]) -> Result<(Vec<AxisPart>, i64), String> {
    let mut count = 1i64;
    let mut out = Vec::with_capacity(axes.len());
    for axis in axes {
        let (index, axis_size) = mesh
            .axes
            .iter()
            .enumerate()
            .find(|(_, (n, _))| *n == axis.name)
            .map(|(i, (_, s))| (i, *s))
            .ok_or_else(|| format!("axis {:?} is not in the mesh", axis.name))?;
        let (pre, part) = axis.sub.unwrap_or((1, axis_size));
        if !(1..=axis_size).contains(&pre)
            || !(1..=axis_size).contains(&part)
            || axis_size % (pre * part) != 0
        {
            return Err(format!(
                "sub-axis ({pre}){part} of an axis of size {axis_size}"
            ));
        }
        // The mesh axis reshaped into [pre, part, post]: the sub-axis is the middle one.
        out.push(AxisPart {
            axis: index,
            post: axis_size / (pre * part),
            size: part,
        });
        count = count.saturating_mul(part);
    }
    Ok((out, count))
}

/// The type of one shard of a `ty` value cut into `tiles[d]` shards along each dimension `d`
/// (extra trailing counts, replicas, are ignored).
fn shard_type(ty: &TensorType, tiles: &[i64]) -> Result<TensorType, String> {
    let mut local = ty.clone();
    for (d, (&g, &t)) in ty.shape.iter().zip(tiles).enumerate() {
        if g % t != 0 {
            return Err(format!(
                "dimension {d} of size {g} does not split evenly into {t} shards"
            ));
        }
        local.shape[d] = g / t;
    }
    Ok(local)
}

/// The tiling of a `ty` value over `partitions` as an HLO sharding string says:
/// `{replicated}`, or `{devices=[t0,...]D}` with the device at each tile as an explicit list
/// (`0,1,2,3`) or an iota (`<=[8]`, `<=[2,4]T(1,0)`: the iota reshaped, then transposed), an
/// extra last dimension of replicas when `last_tile_dim_replicate` follows.
fn hlo_tiling(text: &str, ty: &TensorType, partitions: usize) -> Result<Tiling, String> {
    let bad = || format!("cannot read the HLO sharding `{text}`");
    let body = text
        .trim()
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .ok_or_else(bad)?
        .trim();
    if body == "replicated" {
        return Ok(Tiling::replicated(ty, partitions));
    }
    let ints = |list: &str| -> Result<Vec<i64>, String> {
        list.split(',')
            .map(|n| n.trim().parse::<i64>().map_err(|_| bad()))
            .collect()
    };
    let rest = body.strip_prefix("devices=[").ok_or_else(|| {
        format!("the HLO sharding `{text}` is not supported (only replicated and tiled ones)")
    })?;
    let (dims, rest) = rest.split_once(']').ok_or_else(bad)?;
    let dims = ints(dims)?;
    let (devices, suffix) = match rest.strip_prefix("<=[") {
        Some(iota) => {
            let (shape, rest) = iota.split_once(']').ok_or_else(bad)?;
            let shape = ints(shape)?;
            let (perm, rest) = match rest.strip_prefix("T(") {
                Some(t) => {
                    let (perm, rest) = t.split_once(')').ok_or_else(bad)?;
                    (ints(perm)?, rest)
                }
                None => ((0..shape.len() as i64).collect(), rest),
            };
            (transposed_iota(&shape, &perm).ok_or_else(bad)?, rest)
        }
        None => {
            let end = rest.find(|c: char| c.is_whitespace()).unwrap_or(rest.len());
            (ints(&rest[..end])?, &rest[end..])
        }
    };
    let replicate = match suffix.trim() {
        "" => false,
        "last_tile_dim_replicate" => true,
        other => {
            return Err(format!(
                "the HLO sharding `{text}` has `{other}`, not supported"
            ))
        }
    };
    let tiled = dims.len() - usize::from(replicate);
    if tiled != ty.rank() {
        return Err(format!(
            "the HLO sharding `{text}` tiles {tiled} dimensions of a rank-{} value",
            ty.rank()
        ));
    }
    let count = dims.iter().try_fold(1i64, |acc, &d| {
        (d >= 1).then(|| acc.checked_mul(d)).flatten()
    });
    let mut sorted = devices.clone();
    sorted.sort_unstable();
    if count != Some(partitions as i64) || sorted != (0..partitions as i64).collect::<Vec<_>>() {
        return Err(format!(
            "the HLO sharding `{text}` does not place each of {partitions} partitions once"
        ));
    }
    let local = shard_type(ty, &dims)?;
    let mut origins = vec![Vec::new(); partitions];
    for (position, &device) in devices.iter().enumerate() {
        // The position's coordinate along each tile dimension (the first one major).
        let mut coordinates = vec![0i64; dims.len()];
        let mut rest = position as i64;
        for (c, &d) in coordinates.iter_mut().zip(&dims).rev() {
            *c = rest % d;
            rest /= d;
        }
        origins[device as usize] = coordinates
            .iter()
            .zip(&local.shape)
            .map(|(&c, &l)| c * l)
            .collect();
    }
    Ok(Tiling {
        global: ty.clone(),
        local,
        origins,
        summands: Vec::new(),
    })
}

/// `0..n` laid out in `shape` (row-major), transposed by `perm` and read out row-major;
/// `None` when `perm` is not a permutation of the dimensions.
fn transposed_iota(shape: &[i64], perm: &[i64]) -> Option<Vec<i64>> {
    let mut seen = vec![false; shape.len()];
    for &p in perm {
        *seen.get_mut(usize::try_from(p).ok()?)? = true;
    }
    if perm.len() != shape.len() || seen.contains(&false) || shape.iter().any(|&d| d < 1) {
        return None;
    }
    let n = shape.iter().try_fold(1i64, |acc, &d| acc.checked_mul(d))?;
    if n > 1 << 20 {
        return None;
    }
    let strides: Vec<i64> = (0..shape.len())
        .map(|d| shape[d + 1..].iter().product())
        .collect();
    let out_shape: Vec<i64> = perm.iter().map(|&p| shape[p as usize]).collect();
    let mut out = Vec::with_capacity(n as usize);
    let mut index = vec![0i64; shape.len()];
    for _ in 0..n {
        out.push(
            index
                .iter()
                .zip(perm)
                .map(|(&i, &p)| i * strides[p as usize])
                .sum(),
        );
        for d in (0..index.len()).rev() {
            index[d] += 1;
            if index[d] < out_shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    Some(out)
}

/// Calls `f(whole_offset, tile_offset, len)` (in bytes) for each contiguous run of the
/// `tile`-shaped box at `origin` of a row-major `whole`-shaped array of `elem`-byte elements.
fn for_each_run(
    whole: &[i64],
    origin: &[i64],
    tile: &[i64],
    elem: usize,
    mut f: impl FnMut(usize, usize, usize),
) {
    let rank = tile.len();
    if tile.iter().any(|&e| e <= 0) {
        return;
    }
    if rank == 0 {
        f(0, 0, elem);
        return;
    }
    let strides = |shape: &[i64]| {
        let mut s = vec![1usize; rank];
        for d in (0..rank - 1).rev() {
            s[d] = s[d + 1] * shape[d + 1] as usize;
        }
        s
    };
    let (whole_strides, tile_strides) = (strides(whole), strides(tile));
    let run = tile[rank - 1] as usize * elem;
    let mut index = vec![0i64; rank - 1];
    loop {
        let mut w = origin[rank - 1] as usize;
        let mut t = 0usize;
        for d in 0..rank - 1 {
            w += (origin[d] + index[d]) as usize * whole_strides[d];
            t += index[d] as usize * tile_strides[d];
        }
        f(w * elem, t * elem, run);
        // Next index over the leading dimensions.
        let mut dim = rank - 1;
        loop {
            if dim == 0 {
                return;
            }
            dim -= 1;
            index[dim] += 1;
            if index[dim] < tile[dim] {
                break;
            }
            index[dim] = 0;
        }
    }
}

/// The whole value from every partition's shard (`shards[p]`); each shard is read once,
/// from its first holder, and the shards of an unreduced value at one origin are added up.
/// `None` when the element type has no addition (an unreduced `pred` or token value) or a
/// shard has the wrong size.
pub fn assemble(tiling: &Tiling, shards: &[&[u8]]) -> Option<Vec<u8>> {
    if tiling.is_replicated() {
        return Some(shards.first().map(|s| s.to_vec()).unwrap_or_default());
    }
    let et = tiling.global.element_type;
    let local_size = tiling.local.byte_size().unwrap_or(0);
    /// One origin's shard: the first holder's, with the other summands' added.
    struct Tile<'a> {
        origin: &'a [i64],
        summands: Vec<usize>,
        data: std::borrow::Cow<'a, [u8]>,
    }
    let mut tiles: Vec<Tile<'_>> = Vec::new();
    for (p, (origin, &shard)) in tiling.origins.iter().zip(shards).enumerate() {
        if shard.len() != local_size {
            return None;
        }
        let summand = tiling.summands.get(p).copied().unwrap_or(0);
        match tiles.iter_mut().find(|t| t.origin == origin) {
            None => tiles.push(Tile {
                origin,
                summands: vec![summand],
                data: shard.into(),
            }),
            Some(tile) if tile.summands.contains(&summand) => {}
            Some(tile) => {
                tile.summands.push(summand);
                tile.data = crate::eval::add_bytes(et, &tile.data, shard)?.into();
            }
        }
    }
    let elem = et.byte_size();
    let mut whole = vec![0u8; tiling.global.byte_size().unwrap_or(0)];
    let (g, l) = (&tiling.global.shape, &tiling.local.shape);
    for tile in &tiles {
        for_each_run(g, tile.origin, l, elem, |w, t, n| {
            whole[w..w + n].copy_from_slice(&tile.data[t..t + n]);
        });
    }
    Some(whole)
}

/// Partition `partition`'s shard of the whole value `whole`; for an unreduced value, zeros
/// unless the partition is the first along the unreduced axes.
pub fn shard_of(tiling: &Tiling, whole: &[u8], partition: usize) -> Vec<u8> {
    if tiling.is_replicated() {
        return whole.to_vec();
    }
    if tiling.summands.get(partition).is_some_and(|&s| s != 0) {
        return vec![0u8; tiling.local.byte_size().unwrap_or(0)];
    }
    let elem = tiling.global.element_type.byte_size();
    let mut shard = vec![0u8; tiling.local.byte_size().unwrap_or(0)];
    let (g, l) = (&tiling.global.shape, &tiling.local.shape);
    for_each_run(g, &tiling.origins[partition], l, elem, |w, t, n| {
        shard[t..t + n].copy_from_slice(&whole[w..w + n]);
    });
    shard
}

// ---------------------------------------------------------------- text

/// A cursor over sharding text.
struct Text<'a> {
    s: &'a str,
}

impl<'a> Text<'a> {
    fn ws(&mut self) {
        self.s = self.s.trim_start();
    }

    fn eat(&mut self, token: &str) -> bool {
        self.ws();
        match self.s.strip_prefix(token) {
            Some(rest) => {
                self.s = rest;
                true
            }
            None => false,
        }
    }

    fn expect(&mut self, token: &str) -> Option<()> {
        self.eat(token).then_some(())
    }

    /// A `"..."` string (axis names hold no escapes).
    fn string(&mut self) -> Option<String> {
        self.expect("\"")?;
        let end = self.s.find('"')?;
        let out = self.s[..end].to_string();
        self.s = &self.s[end + 1..];
        Some(out)
    }

    fn int(&mut self) -> Option<i64> {
        self.ws();
        let end = self
            .s
            .char_indices()
            .find(|&(i, c)| !(c.is_ascii_digit() || (i == 0 && c == '-')))
            .map_or(self.s.len(), |(i, _)| i);
        let value = self.s[..end].parse().ok()?;
        self.s = &self.s[end..];
        Some(value)
    }

    /// A symbol name after `@` (bare or quoted).
    fn symbol(&mut self) -> Option<String> {
        self.expect("@")?;
        if self.s.starts_with('"') {
            return self.string();
        }
        let end = self
            .s
            .find(|c: char| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '$' | '-')))
            .unwrap_or(self.s.len());
        let out = self.s[..end].to_string();
        self.s = &self.s[end..];
        (!out.is_empty()).then_some(out)
    }

    /// Items separated by commas up to `close` (already past the opener).
    fn list<T>(
        &mut self,
        close: &str,
        mut item: impl FnMut(&mut Self) -> Option<T>,
    ) -> Option<Vec<T>> {
        let mut out = Vec::new();
        if self.eat(close) {
            return Some(out);
        }
        loop {
            out.push(item(self)?);
            if self.eat(close) {
                return Some(out);
            }
            self.expect(",")?;
        }
    }

    /// `<["x"=4, "y"=2], device_ids=[...]>`.
    fn mesh(&mut self) -> Option<Mesh> {
        self.expect("<")?;
        self.expect("[")?;
        let axes = self.list("]", |t| {
            let name = t.string()?;
            t.expect("=")?;
            Some((name, t.int()?))
        })?;
        let mut device_ids = Vec::new();
        if self.eat(",") {
            self.expect("device_ids")?;
            self.expect("=")?;
            self.expect("[")?;
            device_ids = self.list("]", Text::int)?;
        }
        self.expect(">")?;
        Some(Mesh { axes, device_ids })
    }

    /// `"x"` or `"x":(2)4`.
    fn axis_ref(&mut self) -> Option<AxisRef> {
        let name = self.string()?;
        let sub = if self.eat(":") {
            self.expect("(")?;
            let pre = self.int()?;
            self.expect(")")?;
            Some((pre, self.int()?))
        } else {
            None
        };
        Some(AxisRef { name, sub })
    }

    /// `{"x", "y"}`, `{"x", ?}`, `{?}`, each optionally followed by a priority `p1`.
    /// One dimension's axes, and whether it is open (`?`).
    fn dim(&mut self) -> Option<(Vec<AxisRef>, bool)> {
        self.expect("{")?;
        let (mut axes, mut open) = (Vec::new(), false);
        if !self.eat("}") {
            loop {
                if self.eat("?") {
                    self.expect("}")?;
                    open = true;
                    break;
                }
                axes.push(self.axis_ref()?);
                if self.eat("}") {
                    break;
                }
                self.expect(",")?;
            }
        }
        if self.s.starts_with('p') {
            self.s = &self.s[1..];
            self.int()?;
        }
        Some((axes, open))
    }
}

/// Reads `#sdy.sharding<@mesh, [{"x"}, {}], replicated={...}, unreduced={...}>`, or the same
/// without its prefix as inside a per-value list.
fn parse_sharding(text: &str) -> Option<Sharding> {
    let mut t = Text { s: text };
    // The prefix is left out inside a per-value list.
    t.eat("#sdy.sharding");
    t.expect("<")?;
    let mesh = if t.s.trim_start().starts_with('@') {
        MeshRef::Named(t.symbol()?)
    } else {
        t.expect("mesh")?;
        MeshRef::Inline(t.mesh()?)
    };
    t.expect(",")?;
    t.expect("[")?;
    let (dims, open) = t.list("]", Text::dim)?.into_iter().unzip();
    let mut unreduced = Vec::new();
    while t.eat(",") {
        let key_end = t.s.find('=')?;
        let key = t.s[..key_end].trim().to_string();
        t.s = &t.s[key_end + 1..];
        if key == "reduction" {
            t.int()?;
            continue;
        }
        t.expect("{")?;
        let axes = t.list("}", Text::axis_ref)?;
        if key == "unreduced" {
            unreduced = axes;
        }
    }
    t.expect(">")?;
    Some(Sharding {
        mesh,
        dims,
        open,
        unreduced,
    })
}

/// Reads `sdy.mesh @name = <...>` (an attribute dictionary may follow).
fn parse_mesh_declaration(text: &str) -> Option<(String, Mesh)> {
    let mut t = Text { s: text };
    t.expect("sdy.mesh")?;
    let name = t.symbol()?;
    t.expect("=")?;
    Some((name, t.mesh()?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ElementType;

    fn f32s(shape: &[i64]) -> TensorType {
        TensorType::new(shape.to_vec(), ElementType::F32)
    }

    #[test]
    fn reads_meshes_and_shardings_as_mlir_prints_them() {
        assert_eq!(
            parse_mesh_declaration(
                r#"sdy.mesh @mesh = <["x"=2, "y"=4], device_ids=[7,6,5,4,3,2,1,0]> {a = 1}"#
            ),
            Some((
                "mesh".into(),
                Mesh {
                    axes: vec![("x".into(), 2), ("y".into(), 4)],
                    device_ids: (0..8).rev().collect(),
                }
            ))
        );
        let s = parse_sharding(
            r#"#sdy.sharding<@mesh, [{"x", "y":(2)2}, {?}p1, {}], replicated={"z"}>"#,
        )
        .unwrap();
        assert_eq!(s.mesh, MeshRef::Named("mesh".into()));
        assert_eq!(s.dims.len(), 3);
        assert_eq!(
            s.dims[0],
            vec![
                AxisRef {
                    name: "x".into(),
                    sub: None
                },
                AxisRef {
                    name: "y".into(),
                    sub: Some((2, 2))
                }
            ]
        );
        assert!(s.dims[1].is_empty() && s.dims[2].is_empty() && s.unreduced.is_empty());
        let s =
            parse_sharding(r#"#sdy.sharding<mesh<["a"=2, "b"=4]>, [{"a"}], unreduced={"b":(2)2}>"#)
                .unwrap();
        assert_eq!(
            s.unreduced,
            vec![AxisRef {
                name: "b".into(),
                sub: Some((2, 2))
            }]
        );
        assert!(parse_sharding(r#"#sdy.sharding<@mesh, [{"x"}"#).is_none());
        assert_eq!(
            parse_sharding(r#"<@mesh, [{"x"}], unreduced={"y"}>"#),
            parse_sharding(r#"#sdy.sharding<@mesh, [{"x"}], unreduced={"y"}>"#)
        );
    }

    #[test]
    fn tiles_follow_the_mesh_order_and_sub_axes() {
        let mesh = Mesh {
            axes: vec![("x".into(), 2), ("y".into(), 2)],
            device_ids: vec![],
        };
        // Rows over "y", columns over "x": position (x, y) holds row block y, column block x.
        let sharding = parse_sharding(r#"#sdy.sharding<@m, [{"y"}, {"x"}]>"#).unwrap();
        let t = tile(&f32s(&[4, 6]), &sharding, &mesh, 4).unwrap();
        assert_eq!(t.local.shape, vec![2, 3]);
        assert_eq!(
            t.origins,
            vec![vec![0, 0], vec![2, 0], vec![0, 3], vec![2, 3]]
        );
        let assignment = |devices: Vec<i64>, summands, replicas| {
            Some(TileAssignment {
                devices,
                summands,
                replicas,
            })
        };
        assert_eq!(t.tile_assignment(), assignment(vec![0, 2, 1, 3], 1, 1));
        // One dimension over "x" only: "y" replicates it.
        let sharding = parse_sharding(r#"#sdy.sharding<@m, [{"x"}, {}]>"#).unwrap();
        let t = tile(&f32s(&[4, 6]), &sharding, &mesh, 4).unwrap();
        assert_eq!(
            t.origins,
            vec![vec![0, 0], vec![0, 0], vec![2, 0], vec![2, 0]]
        );
        assert_eq!(t.tile_assignment(), assignment(vec![0, 1, 2, 3], 1, 2));
        // A reversed device order, and a sub-axis: "x":(1)2 of a size-4 axis is its major half.
        let mesh = Mesh {
            axes: vec![("x".into(), 4)],
            device_ids: vec![3, 2, 1, 0],
        };
        let sharding = parse_sharding(r#"#sdy.sharding<@m, [{"x":(1)2}]>"#).unwrap();
        let t = tile(&f32s(&[8]), &sharding, &mesh, 4).unwrap();
        assert_eq!(t.origins, vec![vec![4], vec![4], vec![0], vec![0]]);
        // Uneven splits and meshes of the wrong size are refused.
        let sharding = parse_sharding(r#"#sdy.sharding<@m, [{"x"}]>"#).unwrap();
        assert!(tile(&f32s(&[6]), &sharding, &mesh, 4).is_err());
        assert!(tile(&f32s(&[8]), &sharding, &mesh, 2).is_err());
    }

    #[test]
    fn hlo_sharding_strings_tile_as_the_same_shardy_shardings() {
        let square = vec![(
            "m".to_string(),
            parse_mesh_declaration(r#"sdy.mesh @m = <["a"=2, "b"=2]>"#)
                .unwrap()
                .1,
        )];
        let reversed = vec![(
            "m".to_string(),
            parse_mesh_declaration(r#"sdy.mesh @m = <["x"=4], device_ids=[3,2,1,0]>"#)
                .unwrap()
                .1,
        )];
        let ty = f32s(&[4, 6]);
        let same = |meshes: &[(String, Mesh)], sdy: &str, hlo: &str| {
            let want = tiling_in(meshes, sdy, &ty, 4).unwrap();
            assert_eq!(hlo_tiling(hlo, &ty, 4).unwrap(), want, "{hlo}");
            assert_eq!(tiling_in(meshes, hlo, &ty, 4).unwrap(), want, "{hlo}");
        };
        same(
            &square,
            r#"#sdy.sharding<@m, [{"a", "b"}, {}]>"#,
            "{devices=[4,1]<=[4]}",
        );
        same(
            &square,
            r#"#sdy.sharding<@m, [{"a"}, {"b"}]>"#,
            "{devices=[2,2]0,1,2,3}",
        );
        // The transposed iota: tile (i, j) on device 2j + i.
        same(
            &square,
            r#"#sdy.sharding<@m, [{"b"}, {"a"}]>"#,
            "{devices=[2,2]<=[2,2]T(1,0)}",
        );
        same(
            &square,
            r#"#sdy.sharding<@m, [{"a"}, {}]>"#,
            "{devices=[2,1,2]0,1,2,3 last_tile_dim_replicate}",
        );
        same(
            &square,
            r#"#sdy.sharding<@m, [{}, {"b"}]>"#,
            "{devices=[1,2,2]<=[2,2]T(1,0) last_tile_dim_replicate}",
        );
        same(
            &reversed,
            r#"#sdy.sharding<@m, [{"x"}, {}]>"#,
            "{devices=[4,1]3,2,1,0}",
        );
        same(&square, r#"#sdy.sharding<@m, [{}, {}]>"#, "{replicated}");
        for bad in [
            "{maximal device=0}",
            "{manual}",
            "{devices=[4,1]<=[4] last_tile_dims={manual}}",
            "{devices=[3,1]<=[3]}",
            "{devices=[4,1]0,1,1,2}",
            "{devices=[4]<=[4]}",
            "{devices=[1,4]<=[4]}",
            "{devices=[2,2]<=[2,2]T(0,0)}",
            "devices=[4,1]<=[4]",
        ] {
            assert!(hlo_tiling(bad, &ty, 4).is_err(), "{bad}");
        }
    }

    #[test]
    fn shards_reassemble_into_the_whole_value() {
        let mesh = Mesh {
            axes: vec![("x".into(), 2), ("y".into(), 3)],
            device_ids: vec![],
        };
        let sharding = parse_sharding(r#"#sdy.sharding<@m, [{"y"}, {}, {"x"}]>"#).unwrap();
        let ty = TensorType::new(vec![3, 2, 4], ElementType::S16);
        let t = tile(&ty, &sharding, &mesh, 6).unwrap();
        let whole: Vec<u8> = (0..t.global.byte_size().unwrap())
            .map(|i| i as u8)
            .collect();
        let shards: Vec<Vec<u8>> = (0..6).map(|p| shard_of(&t, &whole, p)).collect();
        // Partition 4 is mesh position (x=1, y=1): row 1, every column block-1 element.
        let expect: Vec<u8> = [1i64, 1]
            .iter()
            .zip([0i64, 1])
            .flat_map(|(&row, col)| {
                let base = ((row * 2 + col) * 4 + 2) * 2;
                (base..base + 4).map(|b| b as u8)
            })
            .collect();
        assert_eq!(shards[4], expect);
        let refs: Vec<&[u8]> = shards.iter().map(Vec::as_slice).collect();
        assert_eq!(assemble(&t, &refs), Some(whole));
    }

    #[test]
    fn a_region_over_some_axes_groups_the_partitions_at_the_same_other_coordinates() {
        let module = Module {
            declarations: vec![
                r#"sdy.mesh @m = <["i"=2, "j"=2, "k"=2], device_ids=[7,6,5,4,3,2,1,0]>"#.into(),
            ],
            ..Module::default()
        };
        let group = |manual: &str, partition| {
            manual_group(&module, r#"<@m, [{"j"}]>"#, manual, 8, partition).unwrap()
        };
        // Device 7 - p sits at mesh position p = (i, j, k) = (p / 4, p / 2 % 2, p % 2).
        // Over "j": the partitions at the same "i" and "k"; device 0 is position 7.
        assert_eq!(group(r#"#sdy<manual_axes{"j"}>"#, 0), vec![0, 2]);
        assert_eq!(group(r#"#sdy<manual_axes{"j"}>"#, 5), vec![5, 7]);
        // Over "i" and "k": the partitions at the same "j".
        assert_eq!(group(r#"#sdy<manual_axes{"i", "k"}>"#, 1), vec![0, 1, 4, 5]);
        // Over every axis: all of them.
        assert_eq!(
            group(r#"#sdy<manual_axes{"i", "j", "k"}>"#, 3),
            (0..8).collect::<Vec<_>>()
        );
        assert!(manual_group(&module, r#"<@m, [{"j"}]>"#, "", 4, 0).is_err());
        let empty = Module {
            declarations: vec![r#"sdy.mesh @e = <["i"=0, "j"=2]>"#.into()],
            ..Module::default()
        };
        assert!(manual_group(&empty, r#"<@e, [{"j"}]>"#, "", 2, 0).is_err());
        // A tiling kept to a group: its members' origins, in order.
        let mesh = Mesh {
            axes: vec![("i".into(), 2), ("j".into(), 2)],
            device_ids: vec![],
        };
        let sharding = parse_sharding(r#"#sdy.sharding<@m, [{"j"}]>"#).unwrap();
        let t = tile(&f32s(&[4]), &sharding, &mesh, 4).unwrap();
        assert_eq!(t.restricted(&[2, 3]).origins, vec![vec![0], vec![2]]);
    }

    fn f32_bytes(values: impl IntoIterator<Item = f32>) -> Vec<u8> {
        values.into_iter().flat_map(f32::to_le_bytes).collect()
    }

    #[test]
    fn unreduced_shards_add_up_to_the_value_and_it_goes_out_to_the_first_summand() {
        // Mesh x=2, y=2, z=2; rows split over x, summed over y, replicated over z.
        let mesh = Mesh {
            axes: vec![("x".into(), 2), ("y".into(), 2), ("z".into(), 2)],
            device_ids: vec![],
        };
        let sharding =
            parse_sharding(r#"#sdy.sharding<@m, [{"x"}, {}], unreduced={"y"}>"#).unwrap();
        let t = tile(&f32s(&[4, 2]), &sharding, &mesh, 8).unwrap();
        assert!(!t.summands.is_empty() && !t.is_replicated());
        // Partition p is (x, y, z) = (p / 4, p / 2 % 2, p % 2).
        assert_eq!(t.summands, vec![0, 0, 1, 1, 0, 0, 1, 1]);
        assert_eq!(
            t.tile_assignment(),
            Some(TileAssignment {
                devices: (0..8).collect(),
                summands: 2,
                replicas: 2
            })
        );
        assert_eq!(t.origins[6], vec![2, 0]);
        // Each partition's shard: its row block's values times (y + 1); a replica along z
        // holds the same values, read once.
        let shards: Vec<Vec<u8>> = (0..8)
            .map(|p| {
                let (x, y) = (p / 4, p / 2 % 2);
                f32_bytes((0..4).map(|i| ((x * 4 + i) * (y + 1)) as f32))
            })
            .collect();
        let refs: Vec<&[u8]> = shards.iter().map(Vec::as_slice).collect();
        let whole = assemble(&t, &refs).unwrap();
        assert_eq!(whole, f32_bytes((0..8).map(|i| (i * 3) as f32)));
        // Out again: the first partition along y gets the whole shard, the other zeros.
        assert_eq!(shard_of(&t, &whole, 4), f32_bytes([12.0, 15.0, 18.0, 21.0]));
        assert_eq!(shard_of(&t, &whole, 5), f32_bytes([12.0, 15.0, 18.0, 21.0]));
        assert_eq!(shard_of(&t, &whole, 6), f32_bytes([0.0; 4]));
        let outs: Vec<Vec<u8>> = (0..8).map(|p| shard_of(&t, &whole, p)).collect();
        let refs: Vec<&[u8]> = outs.iter().map(Vec::as_slice).collect();
        assert_eq!(assemble(&t, &refs), Some(whole));
        // Unreduced over every axis of a value not split at all; integers wrap.
        let all = parse_sharding(r#"#sdy.sharding<@m, [{}], unreduced={"x", "z"}>"#).unwrap();
        let ty = TensorType::new(vec![2], ElementType::S8);
        let t = tile(&ty, &all, &mesh, 8).unwrap();
        assert_eq!(t.summands, vec![0, 1, 0, 1, 2, 3, 2, 3]);
        let shards: Vec<Vec<u8>> = (0..8).map(|p| vec![100, p as u8]).collect();
        let refs: Vec<&[u8]> = shards.iter().map(Vec::as_slice).collect();
        // Summands 0..4 first held by partitions 0, 1, 4, 5.
        assert_eq!(assemble(&t, &refs), Some(vec![144, 10]));
        assert_eq!(
            assemble(
                &t,
                &refs[..7]
                    .iter()
                    .copied()
                    .chain([&[1u8][..]])
                    .collect::<Vec<_>>()
            ),
            None
        );
    }
}
