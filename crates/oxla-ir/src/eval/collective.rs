//! Collective ops (`all_reduce`, `all_gather`, `reduce_scatter`, `all_to_all`,
//! `collective_permute`, `collective_broadcast`), `replica_id` / `partition_id`, and the
//! per-device view of `sdy.manual_computation`.
//!
//! The evaluator knows nothing of threads or devices: whoever runs it supplies a
//! [`Collectives`], whose one communication primitive is [`Collectives::exchange`]: every
//! member of a process group contributes its operands and gets back the contributions of all
//! members, in group order. Everything else (reduction with the op's body, splitting,
//! concatenation, picking a permutation source) is computed here from the exchanged values,
//! so all members compute the same result in the same order.
//!
//! Process groups follow the StableHLO spec: `replica_groups`, `channel_id` and
//! `use_global_device_ids` choose between the cross_replica, cross_partition,
//! cross_replica_and_partition and flattened_ids modes.
//!
//! `sdy.manual_computation` is evaluated as a program running on one device: its operands are
//! that device's shards already (the caller passes per-device arguments), so the body runs on
//! them directly and its `sdy.return` values are the op's results. The same holds for the
//! sharding custom calls of programs lowered without Shardy (`@Sharding`,
//! `@SPMDFullToShardShape`, `@SPMDShardToFullShape`): on one device they forward their operand.

use super::body::{classify, region};
use super::context::{extents, OpCx};
use super::{operand, Frame, Interp, Value};
use crate::{Attribute, ElementType, IrError, Literal, Op, OpKind, TensorType};

/// One process of the StableHLO process grid: a replica and a partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProcessId {
    /// The replica id.
    pub replica: u32,
    /// The partition id.
    pub partition: u32,
}

/// What an [`Collectives::exchange`] call is part of.
#[derive(Clone, Copy, Debug)]
pub struct Exchange<'a> {
    /// The op's name (`stablehlo.all_reduce`, ...), for matching and error messages.
    pub op: &'a str,
    /// How many collective ops this evaluation executed before this one: every member of a
    /// group reaches the same collective with the same number.
    pub sequence: u64,
    /// The process group, in the order contributions are returned; includes the caller.
    pub group: &'a [ProcessId],
}

/// The communication an evaluation with collective ops needs, supplied by whoever runs it.
pub trait Collectives {
    /// Number of replicas of the launch.
    fn num_replicas(&self) -> usize;
    /// Number of partitions of the launch.
    fn num_partitions(&self) -> usize;
    /// The process this evaluation runs as.
    fn process(&self) -> ProcessId;
    /// Whether every partition runs the whole program on whole values, meeting only in
    /// the bodies of `sdy.manual_computation` regions. Host calls outside those bodies then
    /// run once, on partition 0, which hands their results to the others (as XLA places
    /// such a callback on the first device).
    fn whole_program_on_every_partition(&self) -> bool {
        false
    }
    /// Contributes `contribution` to the collective `request` and returns the contributions of
    /// every member of `request.group`, in group order. Must fail (never block forever) when
    /// a member cannot arrive.
    fn exchange(
        &self,
        request: &Exchange<'_>,
        contribution: Vec<Literal>,
    ) -> Result<Vec<Vec<Literal>>, IrError>;
}

/// One device alone: replica 0, partition 0, where a group of one is the identity.
#[derive(Clone, Copy, Debug, Default)]
pub struct SingleDevice;

impl Collectives for SingleDevice {
    fn num_replicas(&self) -> usize {
        1
    }

    fn num_partitions(&self) -> usize {
        1
    }

    fn process(&self) -> ProcessId {
        ProcessId {
            replica: 0,
            partition: 0,
        }
    }

    fn exchange(
        &self,
        request: &Exchange<'_>,
        contribution: Vec<Literal>,
    ) -> Result<Vec<Vec<Literal>>, IrError> {
        if request.group == [self.process()] {
            Ok(vec![contribution])
        } else {
            Err(IrError::Eval {
                detail: format!(
                    "{} needs a group of {} processes, but this evaluation runs on one device",
                    request.op,
                    request.group.len()
                ),
            })
        }
    }
}

const MANUAL_COMPUTATION: &str = "sdy.manual_computation";
/// The unit attribute that marks an `sdy.manual_computation` of a program run per device on
/// shards: its results stay this device's shards. (Its result types cannot tell when a
/// shard has the whole value's shape: replicated and unreduced results.)
pub const PER_DEVICE_REGION: &str = "oxla.per_device";
const SDY_RETURN: &str = "sdy.return";

/// True for the op kinds [`Interp::exec_collective`] evaluates.
pub(crate) fn handles(kind: &OpKind) -> bool {
    use OpKind as K;
    match kind {
        K::AllReduce
        | K::AllGather
        | K::ReduceScatter
        | K::AllToAll
        | K::CollectivePermute
        | K::CollectiveBroadcast
        | K::ReplicaId
        | K::PartitionId => true,
        K::Other(name) => name == MANUAL_COMPUTATION,
        _ => false,
    }
}

/// True for terminators of regions this module evaluates (`sdy.return`).
pub(crate) fn is_region_return(kind: &OpKind) -> bool {
    matches!(kind, OpKind::Other(name) if name == SDY_RETURN)
}

/// True for ops that communicate between devices.
pub fn is_collective(kind: &OpKind) -> bool {
    use OpKind as K;
    matches!(
        kind,
        K::AllReduce
            | K::AllGather
            | K::ReduceScatter
            | K::AllToAll
            | K::CollectivePermute
            | K::CollectiveBroadcast
    )
}

/// True for `sdy.manual_computation`.
pub fn is_manual_computation(kind: &OpKind) -> bool {
    matches!(kind, OpKind::Other(name) if name == MANUAL_COMPUTATION)
}

/// Whether `op` is or holds an `sdy.manual_computation`, in its regions or in the functions
/// it calls, at any depth.
pub fn reaches_manual_computation(module: &crate::Module, op: &crate::Op) -> bool {
    let mut called = std::collections::HashSet::new();
    let mut stack = vec![op];
    while let Some(op) = stack.pop() {
        if is_manual_computation(&op.kind) {
            return true;
        }
        stack.extend(
            op.regions
                .iter()
                .flat_map(|r| &r.blocks)
                .flat_map(|b| &b.ops),
        );
        if let Some(callee) = crate::transform::call_target(op) {
            if called.insert(callee) {
                if let Some(f) = module.function(callee) {
                    stack.extend(f.body.blocks.iter().flat_map(|b| &b.ops));
                }
            }
        }
    }
    false
}

/// The target of a sharding custom call (`Sharding`, `SPMDFullToShardShape`,
/// `SPMDShardToFullShape`), if `op` is one.
pub fn sharding_call_target(op: &Op) -> Option<&str> {
    if op.kind != OpKind::CustomCall {
        return None;
    }
    super::call_target(op).filter(|t| {
        matches!(
            *t,
            "Sharding" | "SPMDFullToShardShape" | "SPMDShardToFullShape"
        )
    })
}

/// How process groups are formed (the spec's `cross_replica`, ... functions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    CrossReplica,
    CrossPartition,
    CrossReplicaAndPartition,
    FlattenedIds,
}

/// A rank-2 integer attribute (`replica_groups`, `source_target_pairs`) as rows; ids of `-1`
/// pad uneven groups and are dropped. Absent means no rows.
fn rows_attr(cx: OpCx<'_>, name: &str) -> Result<Vec<Vec<i64>>, IrError> {
    let Some(attr) = cx.op.attr(name) else {
        return Ok(Vec::new());
    };
    let values = attr
        .as_i64_list()
        .ok_or_else(|| cx.invalid(format!("attribute `{name}` is not a tensor of i64")))?;
    let width = match attr {
        Attribute::Elements(e) => match e.ty.shape.as_slice() {
            [_, w] => usize::try_from(*w).unwrap_or(0),
            [] | [_] => values.len(),
            _ => return Err(cx.invalid(format!("attribute `{name}` must have rank 2"))),
        },
        _ => values.len(),
    };
    if width == 0 {
        return Ok(Vec::new());
    }
    Ok(values
        .chunks(width)
        .map(|row| row.iter().copied().filter(|&v| v != -1).collect::<Vec<_>>())
        .filter(|row| !row.is_empty())
        .collect())
}

fn channel_id(cx: OpCx<'_>) -> i64 {
    cx.op
        .attr("channel_id")
        .and_then(Attribute::as_int)
        .and_then(|v| i64::try_from(v).ok())
        .unwrap_or(0)
}

/// The mode of all_reduce, all_gather and reduce_scatter.
fn reduction_mode(cx: OpCx<'_>) -> Result<Mode, IrError> {
    let global = cx.flag("use_global_device_ids", false)?;
    match (channel_id(cx) > 0, global) {
        (false, false) => Ok(Mode::CrossReplica),
        (true, false) => Ok(Mode::CrossReplicaAndPartition),
        (true, true) => Ok(Mode::FlattenedIds),
        (false, true) => {
            Err(cx.invalid("use_global_device_ids needs a channel_handle with a positive handle"))
        }
    }
}

/// The mode of all_to_all, collective_permute and collective_broadcast.
fn channel_mode(cx: OpCx<'_>) -> Mode {
    if channel_id(cx) > 0 {
        Mode::CrossPartition
    } else {
        Mode::CrossReplica
    }
}

fn id_in(cx: OpCx<'_>, id: i64, bound: usize, what: &str) -> Result<u32, IrError> {
    u32::try_from(id)
        .ok()
        .filter(|&v| (v as usize) < bound)
        .ok_or_else(|| {
            cx.invalid(format!(
                "{what} id {id} is out of range (there are {bound})"
            ))
        })
}

/// The process groups of `mode` over `groups` (an empty list means one group of every id).
fn process_groups(
    cx: OpCx<'_>,
    mode: Mode,
    groups: &[Vec<i64>],
    num_replicas: usize,
    num_partitions: usize,
) -> Result<Vec<Vec<ProcessId>>, IrError> {
    let all = |n: usize| vec![(0..n as i64).collect::<Vec<i64>>()];
    let default_range = match mode {
        Mode::CrossReplica | Mode::CrossReplicaAndPartition => num_replicas,
        Mode::CrossPartition => num_partitions,
        Mode::FlattenedIds => num_replicas * num_partitions,
    };
    let groups = if groups.is_empty() {
        all(default_range)
    } else {
        groups.to_vec()
    };
    let pid = |replica: u32, partition: u32| ProcessId { replica, partition };
    let mut out = Vec::new();
    match mode {
        Mode::CrossReplica => {
            for p in 0..num_partitions as u32 {
                for g in &groups {
                    let ids = g.iter().map(|&r| id_in(cx, r, num_replicas, "replica"));
                    out.push(
                        ids.map(|r| r.map(|r| pid(r, p)))
                            .collect::<Result<_, _>>()?,
                    );
                }
            }
        }
        Mode::CrossPartition => {
            for r in 0..num_replicas as u32 {
                for g in &groups {
                    let ids = g.iter().map(|&p| id_in(cx, p, num_partitions, "partition"));
                    out.push(
                        ids.map(|p| p.map(|p| pid(r, p)))
                            .collect::<Result<_, _>>()?,
                    );
                }
            }
        }
        Mode::CrossReplicaAndPartition => {
            for g in &groups {
                let mut group = Vec::new();
                for &r in g {
                    let r = id_in(cx, r, num_replicas, "replica")?;
                    group.extend((0..num_partitions as u32).map(|p| pid(r, p)));
                }
                out.push(group);
            }
        }
        Mode::FlattenedIds => {
            let total = num_replicas * num_partitions;
            for g in &groups {
                let group = g
                    .iter()
                    .map(|&id| {
                        let id = id_in(cx, id, total, "device")?;
                        let np = num_partitions as u32;
                        Ok(pid(id / np, id % np))
                    })
                    .collect::<Result<_, IrError>>()?;
                out.push(group);
            }
        }
    }
    Ok(out)
}

/// The group holding `me` and `me`'s position in it.
fn find_group(groups: Vec<Vec<ProcessId>>, me: ProcessId) -> Option<(Vec<ProcessId>, usize)> {
    groups
        .into_iter()
        .find_map(|g| g.iter().position(|&p| p == me).map(|i| (g, i)))
}

/// `(outer, n, inner_bytes)` for splitting `ty` along `dim`.
fn dim_layout(ty: &TensorType, dim: usize) -> (usize, usize, usize) {
    let ext = extents(&ty.shape);
    let outer: usize = ext[..dim].iter().product();
    let inner: usize = ext[dim + 1..].iter().product();
    (outer, ext[dim], inner * ty.element_type.byte_size())
}

/// Part `index` of `count` equal parts of `lit` along `dim`.
fn split_part(
    cx: OpCx<'_>,
    lit: &Literal,
    dim: usize,
    count: usize,
    index: usize,
) -> Result<Literal, IrError> {
    if dim >= lit.ty.rank() {
        return Err(cx.invalid(format!("dimension {dim} is out of range for {}", lit.ty)));
    }
    let (outer, n, inner) = dim_layout(&lit.ty, dim);
    if count == 0 || n % count != 0 {
        return Err(cx.invalid(format!(
            "dimension {dim} of {} does not split into {count} equal parts",
            lit.ty
        )));
    }
    let part = n / count;
    let mut data = Vec::with_capacity(outer * part * inner);
    for o in 0..outer {
        let start = (o * n + index * part) * inner;
        data.extend_from_slice(&lit.data[start..start + part * inner]);
    }
    let mut shape = lit.ty.shape.clone();
    shape[dim] = part as i64;
    Literal::new(TensorType::new(shape, lit.ty.element_type), data)
}

/// `parts` concatenated along `dim`.
fn concat(cx: OpCx<'_>, parts: &[Literal], dim: usize) -> Result<Literal, IrError> {
    let first = parts
        .first()
        .ok_or_else(|| cx.invalid("nothing to concatenate"))?;
    if dim >= first.ty.rank() {
        return Err(cx.invalid(format!("dimension {dim} is out of range for {}", first.ty)));
    }
    let mut total = 0i64;
    for p in parts {
        let same_other_dims = p.ty.rank() == first.ty.rank()
            && p.ty.element_type == first.ty.element_type
            && (0..p.ty.rank()).all(|d| d == dim || p.ty.shape[d] == first.ty.shape[d]);
        if !same_other_dims {
            return Err(cx.invalid(format!(
                "cannot concatenate {} and {} along dimension {dim}",
                first.ty, p.ty
            )));
        }
        total += p.ty.shape[dim];
    }
    let (outer, _, _) = dim_layout(&first.ty, dim);
    let mut data = Vec::with_capacity(parts.iter().map(|p| p.data.len()).sum());
    for o in 0..outer {
        for p in parts {
            let (_, n, inner) = dim_layout(&p.ty, dim);
            data.extend_from_slice(&p.data[o * n * inner..(o + 1) * n * inner]);
        }
    }
    let mut shape = first.ty.shape.clone();
    shape[dim] = total;
    Literal::new(TensorType::new(shape, first.ty.element_type), data)
}

/// Checks `lit` against result `i`'s declared type.
fn check_result(cx: OpCx<'_>, i: usize, lit: Literal) -> Result<Value, IrError> {
    let ty = cx.result_tensor(i)?;
    if &lit.ty != ty {
        return Err(cx.invalid(format!("computed {} for result {i}, declared {ty}", lit.ty)));
    }
    Ok(Value::Tensor(lit))
}

fn dim_attr(cx: OpCx<'_>, name: &str) -> Result<usize, IrError> {
    let v = cx.int(name)?;
    usize::try_from(v).map_err(|_| cx.invalid(format!("`{name}` is negative: {v}")))
}

impl<'m> Interp<'m> {
    /// Evaluates one op of the kinds [`handles`] accepts.
    pub(super) fn exec_collective(
        &mut self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
    ) -> Result<Vec<Value>, IrError> {
        use OpKind as K;
        let me = self.collectives.process();
        match &cx.op.kind {
            K::ReplicaId | K::PartitionId => {
                cx.expect_operands(0)?;
                let id = if cx.op.kind == K::ReplicaId {
                    me.replica
                } else {
                    me.partition
                };
                let ty = cx.result_tensor(0)?;
                if ty.element_type != ElementType::U32 || !ty.shape.is_empty() {
                    return Err(cx.invalid(format!("result must be tensor<ui32>, is {ty}")));
                }
                return Ok(vec![Value::Tensor(Literal::new(
                    ty.clone(),
                    id.to_le_bytes().to_vec(),
                )?)]);
            }
            K::Other(_) => return self.exec_manual_computation(frame, cx),
            K::CustomCall => {
                // A sharding annotation: on one device, the value is this device's shard.
                cx.expect_operands(1)?;
                let value = operand(frame, cx, cx.op.operands[0])?.clone();
                if sharding_call_target(cx.op) == Some("SPMDFullToShardShape") {
                    if let Value::Tensor(lit) = &value {
                        let want = cx.result_tensor(0)?;
                        if &lit.ty != want {
                            return Err(cx.unsupported(format!(
                                "operand is {}, the shard is {want}: oxla runs manual \
                                 computations per device on shards, and does not partition \
                                 programs itself",
                                lit.ty
                            )));
                        }
                    }
                }
                return Ok(vec![value]);
            }
            _ => {}
        }
        let inputs: Vec<Literal> = cx
            .op
            .operands
            .iter()
            .map(|&id| match operand(frame, cx, id)? {
                Value::Tensor(lit) => Ok(lit.clone()),
                _ => Err(cx.invalid(format!("operand %{} is not a tensor", id.0))),
            })
            .collect::<Result<_, _>>()?;
        if inputs.is_empty() {
            return Err(cx.invalid("expects at least one operand"));
        }
        let sequence = self.collective_sequence;
        self.collective_sequence += 1;
        let (nr, np) = (
            self.collectives.num_replicas(),
            self.collectives.num_partitions(),
        );
        let zeros = |cx: OpCx<'m>| -> Result<Vec<Value>, IrError> {
            (0..cx.op.results.len())
                .map(|i| Ok(Value::Tensor(Literal::zeros(cx.result_tensor(i)?.clone())?)))
                .collect()
        };
        let (mode, groups) = match &cx.op.kind {
            K::CollectivePermute => {
                let mode = channel_mode(cx);
                // Everyone along the permuted axis exchanges; the pairs pick the source.
                let (group, my_id, bound) = match mode {
                    Mode::CrossReplica => (
                        (0..nr as u32)
                            .map(|replica| ProcessId {
                                replica,
                                partition: me.partition,
                            })
                            .collect::<Vec<_>>(),
                        me.replica,
                        nr,
                    ),
                    _ => (
                        (0..np as u32)
                            .map(|partition| ProcessId {
                                replica: me.replica,
                                partition,
                            })
                            .collect(),
                        me.partition,
                        np,
                    ),
                };
                let mut source = None;
                let (mut sources, mut targets) = (Vec::new(), Vec::new());
                for pair in rows_attr(cx, "source_target_pairs")? {
                    let [s, t] = pair.as_slice() else {
                        return Err(cx.invalid("source_target_pairs must have two ids per row"));
                    };
                    let (s, t) = (
                        id_in(cx, *s, bound, "source")?,
                        id_in(cx, *t, bound, "target")?,
                    );
                    if sources.contains(&s) || targets.contains(&t) {
                        return Err(cx.invalid("source_target_pairs repeats a source or a target"));
                    }
                    sources.push(s);
                    targets.push(t);
                    if t == my_id {
                        source = Some(s as usize);
                    }
                }
                let request = Exchange {
                    op: cx.op.kind.name(),
                    sequence,
                    group: &group,
                };
                let all = self.checked_exchange(cx, &request, inputs)?;
                return match source {
                    Some(s) => all[s]
                        .iter()
                        .enumerate()
                        .map(|(i, lit)| check_result(cx, i, lit.clone()))
                        .collect(),
                    None => zeros(cx),
                };
            }
            K::AllToAll | K::CollectiveBroadcast => {
                (channel_mode(cx), rows_attr(cx, "replica_groups")?)
            }
            _ => (reduction_mode(cx)?, rows_attr(cx, "replica_groups")?),
        };
        let groups = process_groups(cx, mode, &groups, nr, np)?;
        let Some((group, index)) = find_group(groups, me) else {
            if cx.op.kind == K::CollectiveBroadcast {
                return zeros(cx);
            }
            return Err(cx.invalid(format!(
                "process (replica {}, partition {}) is in none of the replica_groups",
                me.replica, me.partition
            )));
        };
        let request = Exchange {
            op: cx.op.kind.name(),
            sequence,
            group: &group,
        };
        let all = self.checked_exchange(cx, &request, inputs)?;
        let n = all[0].len();
        match &cx.op.kind {
            K::AllReduce => {
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let lit = self.reduce_contributions(frame, cx, &all, i)?;
                    out.push(check_result(cx, i, lit)?);
                }
                Ok(out)
            }
            K::ReduceScatter => {
                let dim = dim_attr(cx, "scatter_dimension")?;
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    let lit = self.reduce_contributions(frame, cx, &all, i)?;
                    let part = split_part(cx, &lit, dim, group.len(), index)?;
                    out.push(check_result(cx, i, part)?);
                }
                Ok(out)
            }
            K::AllGather => {
                let dim = dim_attr(cx, "all_gather_dim")?;
                (0..n)
                    .map(|i| {
                        let parts: Vec<Literal> = all.iter().map(|c| c[i].clone()).collect();
                        check_result(cx, i, concat(cx, &parts, dim)?)
                    })
                    .collect()
            }
            K::AllToAll => {
                let split_dim = dim_attr(cx, "split_dimension")?;
                let concat_dim = dim_attr(cx, "concat_dimension")?;
                let count = dim_attr(cx, "split_count")?;
                if count != group.len() {
                    return Err(cx.invalid(format!(
                        "split_count is {count}, the process group has {} members",
                        group.len()
                    )));
                }
                (0..n)
                    .map(|i| {
                        let parts = all
                            .iter()
                            .map(|c| split_part(cx, &c[i], split_dim, count, index))
                            .collect::<Result<Vec<_>, _>>()?;
                        check_result(cx, i, concat(cx, &parts, concat_dim)?)
                    })
                    .collect()
            }
            K::CollectiveBroadcast => all[0]
                .iter()
                .enumerate()
                .map(|(i, lit)| check_result(cx, i, lit.clone()))
                .collect(),
            _ => Err(cx.unsupported("the reference evaluator does not implement this op")),
        }
    }

    /// Exchanges `inputs` and checks that every member contributed the same types.
    fn checked_exchange(
        &self,
        cx: OpCx<'m>,
        request: &Exchange<'_>,
        inputs: Vec<Literal>,
    ) -> Result<Vec<Vec<Literal>>, IrError> {
        let types: Vec<TensorType> = inputs.iter().map(|l| l.ty.clone()).collect();
        let all = self
            .collectives
            .exchange(request, inputs)
            .map_err(|e| cx.invalid(e.to_string()))?;
        if all.len() != request.group.len() {
            return Err(cx.invalid(format!(
                "the exchange returned {} contributions for a group of {}",
                all.len(),
                request.group.len()
            )));
        }
        for (member, c) in request.group.iter().zip(&all) {
            if c.len() != types.len() || c.iter().zip(&types).any(|(l, t)| &l.ty != t) {
                return Err(cx.invalid(format!(
                    "process (replica {}, partition {}) contributed other operand types",
                    member.replica, member.partition
                )));
            }
        }
        Ok(all)
    }

    /// Operand `i` of every contribution reduced with the op's body, in group order.
    fn reduce_contributions(
        &mut self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
        all: &[Vec<Literal>],
        i: usize,
    ) -> Result<Literal, IrError> {
        let body = classify(region(cx, 0)?, 1);
        let mut acc = vec![all[0][i].clone()];
        let len = acc[0].ty.num_elements().unwrap_or(0);
        if len == 0 {
            return Ok(acc.remove(0));
        }
        let idx: Vec<usize> = (0..len).collect();
        for c in &all[1..] {
            self.combine_wave(frame, cx, &body, &mut acc, &c[i..=i], &idx, &idx)?;
        }
        Ok(acc.remove(0))
    }

    /// Runs a manual computation's body, counted in [`Interp::manual_regions`].
    fn exec_manual_body(
        &mut self,
        frame: &mut Frame<'m>,
        body: &'m crate::Region,
        args: Vec<Value>,
    ) -> Result<Vec<Value>, IrError> {
        self.manual_regions += 1;
        let results = self.exec_region(frame, body, args);
        self.manual_regions -= 1;
        results
    }

    /// `sdy.manual_computation` on one device. In a program run per device on shards (the
    /// op carries [`PER_DEVICE_REGION`]), the operands are this device's shards already, or
    /// values alike on every device (constants) from which its shards are cut: the body runs
    /// on them and returns this device's shards of the results. In a program run on whole
    /// values by every device (the region sits among ops that are not per device), the
    /// operands are whole: this device's shards are cut out as the op's `in_shardings` say,
    /// and the results are put together from every device's shards as its `out_shardings`
    /// say.
    fn exec_manual_computation(
        &mut self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
    ) -> Result<Vec<Value>, IrError> {
        let body = region(cx, 0)?;
        let block = body
            .blocks
            .first()
            .ok_or_else(|| cx.invalid("the body has no block"))?;
        let args = cx
            .op
            .operands
            .iter()
            .map(|&id| operand(frame, cx, id).cloned())
            .collect::<Result<Vec<_>, _>>()?;
        let per_device = cx.op.attr(PER_DEVICE_REGION).is_some();
        let shards_already = || {
            args.iter()
                .zip(&block.arguments)
                .all(|(value, arg)| match value {
                    Value::Tensor(lit) => {
                        frame.func.values.get(arg.index())
                            == Some(&crate::Type::Tensor(lit.ty.clone()))
                    }
                    _ => true,
                })
        };
        if per_device && shards_already() {
            return self.exec_manual_body(frame, body, args);
        }
        let mut args = args;
        let partitions = self.collectives.num_partitions();
        let me = self.collectives.process();
        let shardings = |name: &str| {
            cx.op
                .attr(name)
                .and_then(crate::sharding::per_value)
                .ok_or_else(|| cx.unsupported(format!("a manual computation without `{name}`")))
        };
        let (ins, outs) = (shardings("in_shardings")?, shardings("out_shardings")?);
        if ins.len() != args.len() || outs.len() != cx.op.results.len() {
            return Err(cx.invalid("in_shardings or out_shardings do not match the values"));
        }
        let unsupported = |k: &str, e: String| cx.unsupported(format!("{k}: {e}"));
        for (k, (value, text)) in args.iter_mut().zip(&ins).enumerate() {
            let lit = match value {
                Value::Tensor(lit) => lit,
                // An ordered effect's token goes in as it is.
                Value::Token => continue,
                Value::Tuple(_) => return Err(cx.invalid(format!("operand {k} is a tuple"))),
            };
            let want = block
                .arguments
                .get(k)
                .and_then(|a| frame.func.values.get(a.index()));
            if per_device && want == Some(&crate::Type::Tensor(lit.ty.clone())) {
                continue; // this device's shard already
            }
            let tiling = crate::sharding::tiling_of(self.module, text, &lit.ty, partitions)
                .map_err(|e| unsupported(&format!("operand {k}"), e))?;
            if want != Some(&crate::Type::Tensor(tiling.local.clone())) {
                return Err(cx.unsupported(format!(
                    "operand {k}'s shards are {}, the body takes another type",
                    tiling.local
                )));
            }
            let shard = crate::sharding::shard_of(&tiling, &lit.data, me.partition as usize);
            *value = Value::Tensor(Literal::new(tiling.local, shard)?);
        }
        if per_device {
            return self.exec_manual_body(frame, body, args);
        }
        // Tokens (of ordered effects) come out as they are; the tensors' shards are put
        // together.
        let results = self.exec_manual_body(frame, body, args)?;
        let is_token: Vec<bool> = results.iter().map(|v| matches!(v, Value::Token)).collect();
        let shards = results
            .into_iter()
            .filter(|v| !matches!(v, Value::Token))
            .map(|v| match v {
                Value::Tensor(lit) => Ok(lit),
                _ => Err(cx.invalid("a manual computation result is a tuple")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let sequence = self.collective_sequence;
        self.collective_sequence += 1;
        // The partitions whose shards make this device's values: all of them, or inside a
        // region over other axes, those at this device's coordinates along them.
        let members = match (cx.op.attr("manual_axes"), ins.iter().chain(&outs).next()) {
            (Some(Attribute::Opaque(manual)), Some(text)) => crate::sharding::manual_group(
                self.module,
                text,
                manual,
                partitions,
                me.partition as usize,
            )
            .map_err(|e| unsupported("manual axes", e))?,
            _ => (0..partitions).collect(),
        };
        let group: Vec<ProcessId> = members
            .iter()
            .map(|&partition| ProcessId {
                replica: me.replica,
                partition: partition as u32,
            })
            .collect();
        let request = Exchange {
            op: MANUAL_COMPUTATION,
            sequence,
            group: &group,
        };
        let all = self.checked_exchange(cx, &request, shards)?;
        let mut out = Vec::with_capacity(outs.len());
        let mut tensor = 0;
        for (j, text) in outs.iter().enumerate() {
            if is_token.get(j) == Some(&true) {
                out.push(Value::Token);
                continue;
            }
            let ty = cx.result_tensor(j)?;
            let tiling = crate::sharding::tiling_of(self.module, text, ty, partitions)
                .map_err(|e| unsupported(&format!("result {j}"), e))?
                .restricted(&members);
            if all
                .iter()
                .any(|c| c.get(tensor).map(|l| &l.ty) != Some(&tiling.local))
            {
                return Err(cx.invalid(format!(
                    "result {j}'s shards are not {} on every device",
                    tiling.local
                )));
            }
            let parts: Vec<&[u8]> = all.iter().map(|c| c[tensor].data.as_slice()).collect();
            tensor += 1;
            let data = crate::sharding::assemble(&tiling, &parts).ok_or_else(|| {
                cx.unsupported(format!(
                    "result {j}'s shards cannot be summed over its unreduced axes"
                ))
            })?;
            out.push(Value::Tensor(Literal::new(ty.clone(), data)?));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{f32s, t, to_f32, FuncBuilder};
    use super::*;
    use crate::{ElementsAttr, Type};

    fn groups(rows: &[&[i64]]) -> Attribute {
        let width = rows.first().map_or(0, |r| r.len());
        let data: Vec<u8> = rows
            .iter()
            .flat_map(|r| r.iter())
            .flat_map(|v| v.to_le_bytes())
            .collect();
        Attribute::Elements(ElementsAttr {
            ty: TensorType::new(vec![rows.len() as i64, width as i64], ElementType::S64),
            data: data.into(),
            splat: false,
        })
    }

    /// Partition 1 of two: the other member always contributes `other`.
    struct TwoPartitions {
        other: Vec<Literal>,
    }

    impl Collectives for TwoPartitions {
        fn num_replicas(&self) -> usize {
            1
        }
        fn num_partitions(&self) -> usize {
            2
        }
        fn process(&self) -> ProcessId {
            ProcessId {
                replica: 0,
                partition: 1,
            }
        }
        fn exchange(
            &self,
            request: &Exchange<'_>,
            contribution: Vec<Literal>,
        ) -> Result<Vec<Vec<Literal>>, IrError> {
            Ok(request
                .group
                .iter()
                .map(|p| {
                    if *p == self.process() {
                        contribution.clone()
                    } else {
                        self.other.clone()
                    }
                })
                .collect())
        }
    }

    /// `main(x) = (all_reduce(x) with a `max` body, all_to_all(x), partition_id)` over `rows`.
    fn program(rows: &[&[i64]]) -> crate::Module {
        let ty = t(&[4], ElementType::F32);
        let (mut b, args) = FuncBuilder::new(std::slice::from_ref(&ty));
        let scalar = t(&[], ElementType::F32);
        let body = b.region(&[scalar.clone(), scalar.clone()], |b, a| {
            let c = b.compare(crate::attrs::ComparisonDirection::Gt, a[0], a[1], &[]);
            vec![b.op(OpKind::Select, &[c, a[0], a[1]], scalar.clone(), vec![])]
        });
        let ch = Attribute::Integer {
            value: 1,
            ty: Some(ElementType::S64),
        };
        let reduced = b.op_full(
            OpKind::AllReduce,
            &[args[0]],
            std::slice::from_ref(&ty),
            vec![
                ("replica_groups", groups(rows)),
                ("channel_id", ch.clone()),
                ("use_global_device_ids", Attribute::Unit),
            ],
            vec![body],
        )[0];
        let int = |v: i64| Attribute::Integer {
            value: i128::from(v),
            ty: Some(ElementType::S64),
        };
        let swapped = b.op(
            OpKind::AllToAll,
            &[args[0]],
            ty,
            vec![
                ("replica_groups", groups(rows)),
                ("channel_id", ch),
                ("split_dimension", int(0)),
                ("concat_dimension", int(0)),
                ("split_count", int(rows[0].len() as i64)),
            ],
        );
        let pid = b.op(
            OpKind::PartitionId,
            &[],
            Type::Tensor(TensorType::scalar(ElementType::U32)),
            vec![],
        );
        b.finish(&[reduced, swapped, pid])
    }

    #[test]
    fn collectives_compute_from_exchanged_values() {
        let x = f32s(&[4], &[1.0, 9.0, -3.0, 4.0]);
        let other = f32s(&[4], &[2.0, 5.0, -1.0, 8.0]);
        let module = program(&[&[0, 1]]);
        let cl = TwoPartitions { other: vec![other] };
        let out = super::super::run_function_with(&module, "main", &[x], &cl).unwrap();
        assert_eq!(to_f32(&out[0]), vec![2.0, 9.0, -1.0, 8.0]);
        // Member 1 receives the second halves of member 0's and its own operand.
        assert_eq!(to_f32(&out[1]), vec![-1.0, 8.0, -3.0, 4.0]);
        assert_eq!(*out[2].data, 1u32.to_le_bytes());
    }

    #[test]
    fn one_device_runs_groups_of_one_and_rejects_larger_ones() {
        let x = f32s(&[4], &[1.0, 9.0, -3.0, 4.0]);
        let out = super::super::run_function(&program(&[&[0]]), "main", std::slice::from_ref(&x))
            .unwrap();
        assert_eq!(out[0], x);
        assert_eq!(out[1], x);
        assert_eq!(*out[2].data, 0u32.to_le_bytes());
        let err = super::super::run_function(&program(&[&[0, 1]]), "main", &[x]).unwrap_err();
        assert!(err.to_string().contains("stablehlo.all_reduce"), "{err}");
    }
}
