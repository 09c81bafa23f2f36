//! Collectives between the in-process devices of one launch.
//!
//! [`Rendezvous`] is shared by the device executions of one [`crate::LoadedExecutable`]
//! launch; each execution talks to it through a [`DeviceCollectives`], the
//! [`oxla_ir::eval::Collectives`] the evaluator calls. An exchange is keyed by its sequence
//! number and process group: every member deposits its contribution, waits until all have,
//! and takes a copy of all of them; the last reader frees the slot.
//!
//! Nothing waits forever: a failed execution cancels the launch (every waiting and later
//! exchange fails with its error), an execution that finishes while a group still waits for
//! it fails that group, a group naming a process outside the launch fails at once, and every
//! wait ends after the launch's timeout.
//!
//! Programs partitioned over several devices (`jax.pmap`, `shard_map`: JAX sends
//! `sdy.manual_computation` ops whose bodies are per-device programs) run per device: each
//! device gets its shards of the arguments and returns its shards of the results.
//! [`localize`] finds those per-device types from the manual computations' bodies.

use crate::error::{ClientError, Result};
use oxla_ir::eval::{
    is_collective, is_manual_computation, reaches_manual_computation, sharding_call_target,
    Collectives, Exchange, ProcessId, PER_DEVICE_REGION,
};
use oxla_ir::{Function, IrError, Literal, Module, OpKind, Region, TensorType, Type, ValueId};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long an exchange waits for the rest of its group by default.
pub const DEFAULT_COLLECTIVE_TIMEOUT: Duration = Duration::from_secs(120);

/// One exchange in progress.
struct Slot {
    op: String,
    contributions: Vec<Option<Vec<Literal>>>,
    readers_left: usize,
}

#[derive(Default)]
struct State {
    slots: HashMap<(u64, Vec<ProcessId>), Slot>,
    cancelled: Option<String>,
    finished: Vec<ProcessId>,
    /// Threads waiting in an exchange: a change nobody waits for wakes nobody (waking is a
    /// system call, and every execution finishes).
    waiters: usize,
}

/// The meeting point of the device executions of one launch.
pub struct Rendezvous {
    num_replicas: usize,
    num_partitions: usize,
    participants: Vec<ProcessId>,
    timeout: Duration,
    state: Mutex<State>,
    changed: Condvar,
}

fn eval_error(detail: String) -> IrError {
    IrError::Eval { detail }
}

fn describe(p: ProcessId) -> String {
    format!("(replica {}, partition {})", p.replica, p.partition)
}

impl Rendezvous {
    /// A rendezvous for a launch over `participants` of a `num_replicas` x `num_partitions`
    /// grid, whose exchanges wait at most `timeout`.
    pub fn new(
        num_replicas: usize,
        num_partitions: usize,
        participants: Vec<ProcessId>,
        timeout: Duration,
    ) -> Arc<Rendezvous> {
        Arc::new(Rendezvous {
            num_replicas,
            num_partitions,
            participants,
            timeout,
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Fails every waiting and later exchange with `reason` (the first reason wins).
    pub fn cancel(&self, reason: &str) {
        let mut state = self.lock();
        if state.cancelled.is_none() {
            state.cancelled = Some(reason.to_string());
        }
        if state.waiters > 0 {
            self.changed.notify_all();
        }
    }

    /// Records that `process` finished its execution: it joins no more exchanges.
    pub fn finish(&self, process: ProcessId) {
        let mut state = self.lock();
        state.finished.push(process);
        if state.waiters > 0 {
            self.changed.notify_all();
        }
    }

    /// The [`Collectives`] of `process` in this launch.
    pub fn device(self: &Arc<Self>, process: ProcessId) -> DeviceCollectives {
        DeviceCollectives {
            rendezvous: self.clone(),
            process,
            whole_program: false,
        }
    }

    fn exchange(
        &self,
        me: ProcessId,
        request: &Exchange<'_>,
        contribution: Vec<Literal>,
    ) -> std::result::Result<Vec<Vec<Literal>>, IrError> {
        let group = request.group;
        let index = group.iter().position(|&p| p == me).ok_or_else(|| {
            eval_error(format!("{} is not in its own process group", describe(me)))
        })?;
        if let Some(absent) = group.iter().find(|p| !self.participants.contains(p)) {
            return Err(eval_error(format!(
                "{} needs process {}, which this launch does not run",
                request.op,
                describe(*absent)
            )));
        }
        let key = (request.sequence, group.to_vec());
        let deadline = Instant::now() + self.timeout;
        let mut state = self.lock();
        if let Some(reason) = &state.cancelled {
            return Err(eval_error(format!("{} cancelled: {reason}", request.op)));
        }
        let slot = state.slots.entry(key.clone()).or_insert_with(|| Slot {
            op: request.op.to_string(),
            contributions: vec![None; group.len()],
            readers_left: group.len(),
        });
        if slot.op != request.op {
            let reason = format!(
                "collective #{} is {} on {} but {} on another member of its group",
                request.sequence,
                request.op,
                describe(me),
                slot.op
            );
            drop(state);
            self.cancel(&reason);
            return Err(eval_error(reason));
        }
        if slot.contributions[index].is_some() {
            return Err(eval_error(format!(
                "{} contributed twice to collective #{}",
                describe(me),
                request.sequence
            )));
        }
        slot.contributions[index] = Some(contribution);
        if state.waiters > 0 {
            self.changed.notify_all();
        }
        loop {
            if let Some(reason) = &state.cancelled {
                return Err(eval_error(format!("{} cancelled: {reason}", request.op)));
            }
            let slot = state
                .slots
                .get(&key)
                .ok_or_else(|| eval_error(format!("{} lost its exchange", request.op)))?;
            let missing: Vec<ProcessId> = group
                .iter()
                .zip(&slot.contributions)
                .filter(|(_, c)| c.is_none())
                .map(|(p, _)| *p)
                .collect();
            if missing.is_empty() {
                break;
            }
            if let Some(gone) = missing.iter().find(|p| state.finished.contains(p)) {
                let reason = format!(
                    "{} (collective #{}): process {} finished without joining it",
                    request.op,
                    request.sequence,
                    describe(*gone)
                );
                drop(state);
                self.cancel(&reason);
                return Err(eval_error(reason));
            }
            let now = Instant::now();
            if now >= deadline {
                let reason = format!(
                    "{} (collective #{}) timed out after {:?} waiting for {}",
                    request.op,
                    request.sequence,
                    self.timeout,
                    missing
                        .iter()
                        .map(|p| describe(*p))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                drop(state);
                self.cancel(&reason);
                return Err(eval_error(reason));
            }
            state.waiters += 1;
            state = self
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
            state.waiters -= 1;
        }
        let slot = state
            .slots
            .get_mut(&key)
            .ok_or_else(|| eval_error(format!("{} lost its exchange", request.op)))?;
        let all: Vec<Vec<Literal>> = slot.contributions.iter().flatten().cloned().collect();
        slot.readers_left -= 1;
        if slot.readers_left == 0 {
            state.slots.remove(&key);
        }
        Ok(all)
    }
}

/// One device's view of a [`Rendezvous`].
pub struct DeviceCollectives {
    rendezvous: Arc<Rendezvous>,
    process: ProcessId,
    /// See [`Collectives::whole_program_on_every_partition`].
    whole_program: bool,
}

impl DeviceCollectives {
    /// This view, for a program every partition runs whole (its host calls outside manual
    /// regions run on partition 0 alone).
    pub fn running_whole_program(self) -> DeviceCollectives {
        DeviceCollectives {
            whole_program: true,
            ..self
        }
    }
}

impl Collectives for DeviceCollectives {
    fn num_replicas(&self) -> usize {
        self.rendezvous.num_replicas
    }

    fn num_partitions(&self) -> usize {
        self.rendezvous.num_partitions
    }

    fn process(&self) -> ProcessId {
        self.process
    }

    fn whole_program_on_every_partition(&self) -> bool {
        self.whole_program
    }

    fn exchange(
        &self,
        request: &Exchange<'_>,
        contribution: Vec<Literal>,
    ) -> std::result::Result<Vec<Vec<Literal>>, IrError> {
        self.rendezvous
            .exchange(self.process, request, contribution)
    }
}

/// True when a region (or one nested in it) holds a collective op.
fn region_has_collectives(region: &Region) -> bool {
    region.blocks.iter().any(|block| {
        block
            .ops
            .iter()
            .any(|op| is_collective(&op.kind) || op.regions.iter().any(region_has_collectives))
    })
}

/// True when some function of `module` holds a collective op: its device executions must then
/// run at the same time.
pub(crate) fn uses_collectives(module: &Module) -> bool {
    module
        .functions
        .iter()
        .any(|f| region_has_collectives(&f.body))
}

/// True when `entry` holds per-device regions (`sdy.manual_computation`, or the sharding
/// custom calls of a manual region lowered without Shardy).
pub(crate) fn has_manual_regions(entry: &Function) -> bool {
    entry.body.blocks.iter().flat_map(|b| &b.ops).any(|op| {
        is_manual_computation(&op.kind) || sharding_call_target(op) == Some("SPMDFullToShardShape")
    })
}

/// True when some function of `module` holds a manual region (an `sdy.manual_computation`
/// or GSPMD's `SPMDFullToShardShape`), at any depth.
pub(crate) fn has_any_manual_regions(module: &Module) -> bool {
    fn in_region(region: &Region) -> bool {
        region.blocks.iter().flat_map(|b| &b.ops).any(|op| {
            is_manual_computation(&op.kind)
                || sharding_call_target(op) == Some("SPMDFullToShardShape")
                || op.regions.iter().any(in_region)
        })
    }
    module.functions.iter().any(|f| in_region(&f.body))
}

/// True when some function of `module` holds an `sdy.manual_computation` region, at any
/// depth.
pub(crate) fn has_sdy_manual_regions(module: &Module) -> bool {
    fn in_region(region: &Region) -> bool {
        region
            .blocks
            .iter()
            .flat_map(|b| &b.ops)
            .any(|op| is_manual_computation(&op.kind) || op.regions.iter().any(in_region))
    }
    module.functions.iter().any(|f| in_region(&f.body))
}

/// A partitioned program as each device runs it.
pub(crate) struct Localized {
    /// The module with the entry function's signature in per-device types.
    pub module: Module,
    /// Per-device argument types.
    pub inputs: Vec<TensorType>,
    /// Per-device result types.
    pub outputs: Vec<TensorType>,
}

fn tensor_of(func: &Function, id: ValueId) -> Option<TensorType> {
    match func.values.get(id.index()) {
        Some(Type::Tensor(t)) if t.is_static() => Some(t.clone()),
        _ => None,
    }
}

/// For a program over `num_partitions > 1` devices: the per-device signature, read from the
/// `sdy.manual_computation` ops of the entry function (their bodies' argument and result
/// types are the shards' types). Outside manual computations the entry function may only
/// forward values (casts, sharding constraints): oxla does not partition programs itself.
/// A program without manual computations or sharding annotations is per-device as written.
pub(crate) fn localize(
    module: &Module,
    entry: &Function,
    num_partitions: usize,
) -> Result<Option<Localized>> {
    if num_partitions <= 1 {
        return Ok(None);
    }
    let unpartitioned = |what: String| {
        ClientError::Unimplemented(format!(
            "{what}: programs over {num_partitions} partitions run on oxla only as \
             per-device sdy.manual_computation bodies (jax.pmap, shard_map over all mesh \
             axes); oxla does not partition programs itself"
        ))
    };
    let block = entry
        .body
        .blocks
        .first()
        .ok_or_else(|| unpartitioned(format!("@{} has no body", entry.name)))?;
    let has_manual = has_manual_regions(entry);
    let annotated = module.declarations.iter().any(|d| d.contains("sdy.mesh"))
        || entry
            .arg_attrs
            .iter()
            .chain(&entry.res_attrs)
            .flatten()
            .any(|(name, _)| name == "sdy.sharding" || name == "mhlo.sharding");
    if !has_manual && !annotated {
        // No sharding anywhere: the program is per-device already (every device runs it as
        // written, as after partitioning).
        return Ok(None);
    }
    // Each value's root (through forwarding ops), each root's per-device type, and the
    // values that are per-device already (shards inside a manual region, constants).
    let mut root: HashMap<ValueId, ValueId> = HashMap::new();
    let mut local: HashMap<ValueId, TensorType> = HashMap::new();
    let mut shard_results: Vec<(ValueId, TensorType)> = Vec::new();
    let mut per_device: HashSet<ValueId> = HashSet::new();
    let find = |root: &HashMap<ValueId, ValueId>, v: ValueId| root.get(&v).copied().unwrap_or(v);
    let set_local =
        |local: &mut HashMap<ValueId, TensorType>, r: ValueId, ty: TensorType| match local
            .insert(r, ty.clone())
        {
            Some(previous) if previous != ty => Err(unpartitioned(format!(
                "a value is used as shards of {previous} and of {ty}"
            ))),
            _ => Ok(()),
        };
    let mut outputs = None;
    for op in &block.ops {
        let target = sharding_call_target(op);
        let forwards = matches!(
            op.kind,
            OpKind::UnrealizedConversionCast
                | OpKind::SdyShardingConstraint
                | OpKind::OptimizationBarrier
        ) || target == Some("Sharding");
        match &op.kind {
            _ if forwards && op.operands.len() == op.results.len() => {
                for (&operand, &result) in op.operands.iter().zip(&op.results) {
                    let r = find(&root, operand);
                    root.insert(result, r);
                    if per_device.contains(&operand) {
                        per_device.insert(result);
                    }
                }
            }
            _ if target == Some("SPMDFullToShardShape") => {
                let (Some(&operand), Some(&result)) = (op.operands.first(), op.results.first())
                else {
                    return Err(unpartitioned("a malformed SPMDFullToShardShape".into()));
                };
                let ty = tensor_of(entry, result)
                    .ok_or_else(|| unpartitioned("a shard is not a static tensor".into()))?;
                set_local(&mut local, find(&root, operand), ty)?;
                per_device.insert(result);
            }
            _ if target == Some("SPMDShardToFullShape") => {
                let (Some(&operand), Some(&result)) = (op.operands.first(), op.results.first())
                else {
                    return Err(unpartitioned("a malformed SPMDShardToFullShape".into()));
                };
                let ty = tensor_of(entry, operand)
                    .filter(|_| per_device.contains(&operand))
                    .ok_or_else(|| {
                        unpartitioned(format!(
                            "SPMDShardToFullShape at {} takes no shard",
                            op.location
                        ))
                    })?;
                local.insert(result, ty);
            }
            kind if is_manual_computation(kind) => {
                let body = op
                    .regions
                    .first()
                    .and_then(|r| r.blocks.first())
                    .ok_or_else(|| unpartitioned("a manual computation has no body".into()))?;
                for (k, &operand) in op.operands.iter().enumerate() {
                    let ty = body
                        .arguments
                        .get(k)
                        .and_then(|&a| tensor_of(entry, a))
                        .ok_or_else(|| {
                            unpartitioned(format!(
                                "manual computation operand {k} has no body argument"
                            ))
                        })?;
                    set_local(&mut local, find(&root, operand), ty)?;
                }
                let ret = body
                    .ops
                    .last()
                    .ok_or_else(|| unpartitioned("a manual computation body is empty".into()))?;
                for (j, &result) in op.results.iter().enumerate() {
                    let ty = ret
                        .operands
                        .get(j)
                        .and_then(|&v| tensor_of(entry, v))
                        .ok_or_else(|| {
                            unpartitioned(format!(
                                "manual computation result {j} has no body value"
                            ))
                        })?;
                    local.insert(result, ty.clone());
                    shard_results.push((result, ty));
                }
            }
            OpKind::FuncReturn | OpKind::Return => {
                outputs = Some(
                    op.operands
                        .iter()
                        .map(|&v| {
                            let r = find(&root, v);
                            local
                                .get(&r)
                                .cloned()
                                .or_else(|| tensor_of(entry, v))
                                .ok_or_else(|| unpartitioned("a result is not a tensor".into()))
                        })
                        .collect::<Result<Vec<_>>>()?,
                );
            }
            // Code on shards only (a manual region lowered without Shardy), or constants:
            // the same on every device. (Not a call of a function holding a region: its
            // results are whole values, put together from every device's shards.)
            _ if op.operands.iter().all(|v| per_device.contains(v))
                && !reaches_manual_computation(module, op) =>
            {
                per_device.extend(op.results.iter().copied());
            }
            other => {
                return Err(unpartitioned(format!(
                    "op {} at {} is outside any sdy.manual_computation",
                    other.name(),
                    op.location
                )))
            }
        }
    }
    let outputs = outputs.ok_or_else(|| unpartitioned(format!("@{} has no return", entry.name)))?;
    let args = &block.arguments;
    let inputs = args
        .iter()
        .map(|&a| {
            local
                .get(&a)
                .cloned()
                .or_else(|| tensor_of(entry, a))
                .ok_or_else(|| unpartitioned("an argument is not a tensor".into()))
        })
        .collect::<Result<Vec<_>>>()?;
    let mut module = module.clone();
    if let Some(func) = module.functions.iter_mut().find(|f| f.name == entry.name) {
        func.ty.inputs = inputs.iter().cloned().map(Type::Tensor).collect();
        func.ty.results = outputs.iter().cloned().map(Type::Tensor).collect();
        // Each device's manual computations yield its shards: their results take the shard
        // types, and a mark tells the evaluator the region runs per device (whole values
        // would be put together from every device's shards; the types alone cannot tell
        // for replicated and unreduced results, whose shards have the whole value's type).
        for (value, ty) in shard_results {
            if let Some(slot) = func.values.get_mut(value.index()) {
                *slot = Type::Tensor(ty);
            }
        }
        for block in &mut func.body.blocks {
            for op in block
                .ops
                .iter_mut()
                .filter(|op| is_manual_computation(&op.kind))
            {
                op.attributes
                    .push((PER_DEVICE_REGION.to_string(), oxla_ir::Attribute::Unit));
            }
        }
    }
    Ok(Some(Localized {
        module,
        inputs,
        outputs,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Buffer, Client, ClientOptions, CompileOptions, ExecuteOptions, LoadedExecutable};

    fn client(n: usize) -> Client {
        Client::new(&ClientOptions {
            num_devices: n,
            ..ClientOptions::default()
        })
        .unwrap()
    }

    fn compile(
        client: &Client,
        text: &str,
        replicas: usize,
        partitions: usize,
    ) -> LoadedExecutable {
        let options = CompileOptions {
            num_replicas: replicas,
            num_partitions: partitions,
            ..CompileOptions::default()
        };
        client.compile(text.as_bytes(), options).unwrap()
    }

    /// Runs `exe` with one f32 argument per device; returns each device's outputs.
    fn run_f32(
        client: &Client,
        exe: &LoadedExecutable,
        shape: &[i64],
        args: &[Vec<f32>],
    ) -> crate::Result<Vec<Vec<Literal>>> {
        let lists: Vec<Vec<Buffer>> = args
            .iter()
            .zip(exe.addressable_devices())
            .map(|(values, device)| {
                let lit = Literal::from_f32(shape, values).unwrap();
                vec![client
                    .buffer_from_bytes(device, lit.ty.clone(), lit.into_data())
                    .unwrap()]
            })
            .collect();
        let res = exe.execute(&lists, &ExecuteOptions::default())?;
        for done in &res.completions {
            done.wait()?;
        }
        res.outputs
            .iter()
            .map(|outs| outs.iter().map(|b| b.to_literal()).collect())
            .collect()
    }

    fn f32s(lit: &Literal) -> Vec<f32> {
        lit.to_f32_vec().unwrap()
    }

    fn u32_of(lit: &Literal) -> u32 {
        u32::from_le_bytes(lit.data[..4].try_into().unwrap())
    }

    const REDUCE_ADD: &str = "({
      ^bb0(%a: tensor<f32>, %b: tensor<f32>):
        %s = stablehlo.add %a, %b : tensor<f32>
        stablehlo.return %s : tensor<f32>
      })";

    #[test]
    fn all_reduce_over_replicas_and_groups() {
        let client = client(4);
        // A general body (max through compare + select) and two operands, groups of two.
        let text = format!(
            r#"func.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<ui32>) {{
  %0 = "stablehlo.all_reduce"(%x) <{{replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}}> {REDUCE_ADD} : (tensor<3xf32>) -> tensor<3xf32>
  %1:2 = "stablehlo.all_reduce"(%x, %0) <{{replica_groups = dense<[[0, 2], [3, 1]]> : tensor<2x2xi64>}}> ({{
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %c = stablehlo.compare GT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %m = stablehlo.select %c, %a, %b : tensor<i1>, tensor<f32>
    stablehlo.return %m : tensor<f32>
  }}) : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  %r = stablehlo.replica_id : tensor<ui32>
  return %0, %1#0, %1#1, %r : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<ui32>
}}"#
        );
        let exe = compile(&client, &text, 4, 1);
        let args: Vec<Vec<f32>> = (0..4)
            .map(|d| vec![d as f32, 10.0 * d as f32, -(d as f32)])
            .collect();
        let out = run_f32(&client, &exe, &[3], &args).unwrap();
        for (d, outs) in out.iter().enumerate() {
            assert_eq!(f32s(&outs[0]), vec![6.0, 60.0, -6.0]);
            let partner = [2, 3, 0, 1][d];
            let max: Vec<f32> = (0..3).map(|i| args[d][i].max(args[partner][i])).collect();
            assert_eq!(f32s(&outs[1]), max);
            assert_eq!(f32s(&outs[2]), vec![6.0, 60.0, -6.0]);
            assert_eq!(u32_of(&outs[3]), d as u32);
        }
    }

    #[test]
    fn gather_scatter_permute_broadcast_all_to_all_over_partitions() {
        let client = client(4);
        // Flattened ids (channel + use_global_device_ids) over 1 replica x 4 partitions.
        let ch = "channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>";
        let text = format!(
            r#"func.func @main(%x: tensor<4xf32>) -> (tensor<4x4xf32>, tensor<1xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<ui32>, tensor<8xf32>) {{
  %b = stablehlo.broadcast_in_dim %x, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
  %0 = "stablehlo.all_gather"(%b) <{{all_gather_dim = 0 : i64, {ch}, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}}> : (tensor<1x4xf32>) -> tensor<4x4xf32>
  %1 = "stablehlo.reduce_scatter"(%x) <{{{ch}, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, scatter_dimension = 0 : i64, use_global_device_ids}}> {REDUCE_ADD} : (tensor<4xf32>) -> tensor<1xf32>
  %2 = "stablehlo.collective_permute"(%x) <{{{ch}, source_target_pairs = dense<[[0, 1], [1, 2], [2, 0]]> : tensor<3x2xi64>}}> : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "stablehlo.all_to_all"(%x) <{{{ch}, concat_dimension = 0 : i64, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, split_count = 4 : i64, split_dimension = 0 : i64}}> : (tensor<4xf32>) -> tensor<4xf32>
  %4 = "stablehlo.collective_broadcast"(%x) <{{{ch}, replica_groups = dense<[[2, 0, 1]]> : tensor<1x3xi64>}}> : (tensor<4xf32>) -> tensor<4xf32>
  %5 = stablehlo.partition_id : tensor<ui32>
  %6 = "stablehlo.all_gather"(%x) <{{all_gather_dim = 0 : i64, {ch}, replica_groups = dense<[[3, 0], [1, 2]]> : tensor<2x2xi64>, use_global_device_ids}}> : (tensor<4xf32>) -> tensor<8xf32>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<4x4xf32>, tensor<1xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<ui32>, tensor<8xf32>
}}"#
        );
        let exe = compile(&client, &text, 1, 4);
        let args: Vec<Vec<f32>> = (0..4)
            .map(|d| (0..4).map(|i| (4 * d + i) as f32).collect())
            .collect();
        let out = run_f32(&client, &exe, &[4], &args).unwrap();
        let gathered: Vec<f32> = args.concat();
        for (d, outs) in out.iter().enumerate() {
            assert_eq!(f32s(&outs[0]), gathered, "all_gather on {d}");
            let column_sum: f32 = (0..4).map(|s| args[s][d]).sum();
            assert_eq!(f32s(&outs[1]), vec![column_sum], "reduce_scatter on {d}");
            let permuted = match d {
                1 => args[0].clone(),
                2 => args[1].clone(),
                0 => args[2].clone(),
                _ => vec![0.0; 4],
            };
            assert_eq!(f32s(&outs[2]), permuted, "collective_permute on {d}");
            let transposed: Vec<f32> = (0..4).map(|s| args[s][d]).collect();
            assert_eq!(f32s(&outs[3]), transposed, "all_to_all on {d}");
            let broadcast = if d == 3 {
                vec![0.0; 4]
            } else {
                args[2].clone()
            };
            assert_eq!(f32s(&outs[4]), broadcast, "collective_broadcast on {d}");
            assert_eq!(u32_of(&outs[5]), d as u32);
            let pair = if d == 0 || d == 3 {
                [args[3].clone(), args[0].clone()].concat()
            } else {
                [args[1].clone(), args[2].clone()].concat()
            };
            assert_eq!(f32s(&outs[6]), pair, "all_gather in groups on {d}");
        }
    }

    #[test]
    fn manual_computation_runs_per_device_on_shards() {
        let client = client(4);
        // What jax.pmap(lambda x: x + psum(x)) sends: the entry has global types, the
        // manual computation's body the shards'.
        let text = format!(
            r#"func.func public @main(%arg0: tensor<4xf32>) -> tensor<4xf32> {{
  %0 = "builtin.unrealized_conversion_cast"(%arg0) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "sdy.manual_computation"(%0) ({{
  ^bb0(%a: tensor<1xf32>):
    %2 = stablehlo.reshape %a : (tensor<1xf32>) -> tensor<f32>
    %3 = "stablehlo.all_reduce"(%2) <{{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}}> {REDUCE_ADD} : (tensor<f32>) -> tensor<f32>
    %4 = stablehlo.add %2, %3 : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<f32>) -> tensor<1xf32>
    "sdy.return"(%5) : (tensor<1xf32>) -> ()
  }}) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}}"#
        );
        let exe = compile(&client, &text, 1, 4);
        assert_eq!(exe.executable().input_types()[0].shape, vec![1]);
        assert_eq!(exe.executable().output_types()[0].shape, vec![1]);
        let args: Vec<Vec<f32>> = (0..4).map(|d| vec![d as f32]).collect();
        let out = run_f32(&client, &exe, &[1], &args).unwrap();
        let got: Vec<f32> = out.iter().map(|o| f32s(&o[0])[0]).collect();
        assert_eq!(got, vec![6.0, 7.0, 8.0, 9.0]);

        // The same program lowered without Shardy: sharding custom calls around a call.
        let text = format!(
            r#"func.func public @main(%arg0: tensor<4xf32> {{mhlo.sharding = "{{devices=[4]<=[4]}}"}}) -> tensor<4xf32> {{
  %0 = stablehlo.custom_call @Sharding(%arg0) {{mhlo.sharding = "{{devices=[4]<=[4]}}"}} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {{mhlo.sharding = "{{manual}}"}} : (tensor<4xf32>) -> tensor<1xf32>
  %2 = call @body(%1) : (tensor<1xf32>) -> tensor<1xf32>
  %3 = stablehlo.custom_call @Sharding(%2) {{mhlo.sharding = "{{manual}}"}} : (tensor<1xf32>) -> tensor<1xf32>
  %4 = stablehlo.custom_call @SPMDShardToFullShape(%3) {{mhlo.sharding = "{{devices=[4]<=[4]}}"}} : (tensor<1xf32>) -> tensor<4xf32>
  return %4 : tensor<4xf32>
}}
func.func private @body(%a: tensor<1xf32>) -> tensor<1xf32> {{
  %0 = "stablehlo.all_reduce"(%a) <{{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}}> {REDUCE_ADD} : (tensor<1xf32>) -> tensor<1xf32>
  %1 = stablehlo.add %a, %0 : tensor<1xf32>
  return %1 : tensor<1xf32>
}}"#
        );
        let exe = compile(&client, &text, 1, 4);
        assert_eq!(exe.executable().input_types()[0].shape, vec![1]);
        let out = run_f32(&client, &exe, &[1], &args).unwrap();
        let got: Vec<f32> = out.iter().map(|o| f32s(&o[0])[0]).collect();
        assert_eq!(got, vec![6.0, 7.0, 8.0, 9.0]);

        // Without a manual computation or a collective, a program sharded by HLO sharding
        // strings runs on whole values, each device holding the shard its string names.
        let outside = "func.func @main(%x: tensor<4xf32> {mhlo.sharding = \"{devices=[4]3,2,1,0}\"}) -> (tensor<4xf32> {mhlo.sharding = \"{devices=[4]<=[4]}\"}) {
  %0 = stablehlo.add %x, %x : tensor<4xf32>
  return %0 : tensor<4xf32>
}";
        let exe = compile(&client, outside, 1, 4);
        assert_eq!(exe.executable().input_types()[0].shape, vec![1]);
        // Device d holds element 3 - d of the argument and element d of the result.
        let args: Vec<Vec<f32>> = (0..4).map(|d| vec![(3 - d) as f32]).collect();
        let out = run_f32(&client, &exe, &[1], &args).unwrap();
        let got: Vec<f32> = out.iter().map(|o| f32s(&o[0])[0]).collect();
        assert_eq!(got, vec![0.0, 2.0, 4.0, 6.0]);
    }

    #[test]
    fn a_program_sharded_by_annotation_runs_whole() {
        let client = client(4);
        // What `jax.jit` of a row sum over a (4, 2) array sharded along its rows over a mesh
        // of devices in reverse order sends: a global program, shardings on its signature.
        let text = r#"module {
  sdy.mesh @mesh = <["x"=4], device_ids=[3,2,1,0]>
  func.func public @main(%x: tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> (tensor<2xf32>, tensor<4x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}, {"x":(1)2}]>}) {
    %zero = stablehlo.constant dense<0.0> : tensor<f32>
    %0 = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<4x2xf32>, tensor<f32>) -> tensor<2xf32>
    %1 = stablehlo.multiply %x, %x : tensor<4x2xf32>
    return %0, %1 : tensor<2xf32>, tensor<4x2xf32>
  }
}"#;
        let exe = compile(&client, text, 1, 4);
        assert_eq!(exe.executable().input_types()[0].shape, vec![1, 2]);
        assert_eq!(exe.executable().output_types()[0].shape, vec![2]);
        assert_eq!(exe.executable().output_types()[1].shape, vec![4, 1]);
        // Partition p is mesh position 3 - p, so it holds row 3 - p.
        let rows: Vec<Vec<f32>> = (0..4)
            .map(|r| vec![r as f32 + 1.0, 10.0 * (r as f32 + 1.0)])
            .collect();
        let args: Vec<Vec<f32>> = (0..4).map(|p| rows[3 - p].clone()).collect();
        let out = run_f32(&client, &exe, &[1, 2], &args).unwrap();
        for (p, outs) in out.iter().enumerate() {
            // The unannotated sum is replicated; the square's columns go to the halves of
            // the mesh axis (positions 0 and 1 hold column 0).
            assert_eq!(f32s(&outs[0]), vec![10.0, 100.0], "sum on {p}");
            let column = usize::from(3 - p >= 2);
            let expect: Vec<f32> = rows.iter().map(|r| r[column] * r[column]).collect();
            assert_eq!(f32s(&outs[1]), expect, "square on {p}");
        }
        // A sharding oxla cannot honour fails the compile, naming it.
        let uneven = text.replace("4x2xf32", "3x2xf32");
        let options = CompileOptions {
            num_partitions: 4,
            ..CompileOptions::default()
        };
        let err = client.compile(uneven.as_bytes(), options).unwrap_err();
        assert_eq!(err.code(), crate::ErrorCode::Unimplemented, "{err}");
        assert!(err.message().contains("does not split evenly"), "{err}");
    }

    #[test]
    fn manual_regions_among_other_ops_run_on_whole_values_everywhere() {
        let client = client(4);
        // jax.jit(lambda x: sin(shard_map(f)(x)) + 1) with f = v * 2 + psum(v): a region
        // over an argument without a sharding, which it takes in (as XLA's propagation
        // gives it), then ops on the whole result, sharded as the region's result is.
        let text = format!(
            r#"module {{
  sdy.mesh @mesh = <["x"=4]>
  func.func public @main(%arg0: tensor<4x2xf32>) -> tensor<2x2xf32> {{
    %0 = "sdy.manual_computation"(%arg0) <{{in_shardings = #sdy.sharding_per_value<[<@mesh, [{{"x"}}, {{}}]>]>, manual_axes = #sdy<manual_axes{{"x"}}>, out_shardings = #sdy.sharding_per_value<[<@mesh, [{{}}, {{"x":(2)2}}]>]>}}> ({{
    ^bb0(%a: tensor<1x2xf32>):
      %1 = "stablehlo.all_reduce"(%a) <{{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>, use_global_device_ids}}> {REDUCE_ADD} : (tensor<1x2xf32>) -> tensor<1x2xf32>
      %2 = stablehlo.add %a, %1 : tensor<1x2xf32>
      %3 = stablehlo.transpose %2, dims = [1, 0] : (tensor<1x2xf32>) -> tensor<2x1xf32>
      "sdy.return"(%3) : (tensor<2x1xf32>) -> ()
    }}) : (tensor<4x2xf32>) -> tensor<2x2xf32>
    %4 = stablehlo.multiply %0, %0 : tensor<2x2xf32>
    return %4 : tensor<2x2xf32>
  }}
}}"#
        );
        let exe = compile(&client, &text, 1, 4);
        assert_eq!(exe.executable().input_types()[0].shape, vec![1, 2]);
        let x: Vec<f32> = (0..8).map(|i| i as f32).collect();
        let rows: Vec<Vec<f32>> = x.chunks(2).map(<[f32]>::to_vec).collect();
        let out = run_f32(&client, &exe, &[1, 2], &rows).unwrap();
        // Device p computes row p plus the column sums (12 and 16), transposed to 2x1; the
        // sub-axis "x":(2)2 is the minor half of the axis, so devices 0 and 2 hold column 0
        // of the whole result and devices 1 and 3 column 1.
        let column = |p: usize| [x[2 * p] + 12.0, x[2 * p + 1] + 16.0];
        let (c0, c1) = (column(0), column(1));
        let whole = [c0[0], c1[0], c0[1], c1[1]].map(|v| v * v);
        // The square, without a sharding of its own, is sharded as the region's result it
        // is computed from: device p holds column p % 2 of it.
        for (p, outs) in out.iter().enumerate() {
            let column = vec![whole[p % 2], whole[2 + p % 2]];
            assert_eq!(f32s(&outs[0]), column, "device {p}");
        }
    }

    #[test]
    fn region_results_shaped_like_the_whole_value_stay_per_device_or_are_whole() {
        let client = client(2);
        // Run per device: a region over a constant (cut into this device's shard) and an
        // argument's shard whose result is unreduced: a shard with the whole value's type.
        // Each device keeps its own summand (they were summed on every device).
        let text = r#"module {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%arg0: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}], unreduced={"x"}>}) {
    %0 = stablehlo.iota dim = 0 : tensor<4xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{"x"}]> : tensor<4xf32>
    %2 = "sdy.manual_computation"(%1, %arg0) <{in_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}]>, <@mesh, [{"x"}]>]>, manual_axes = #sdy<manual_axes{"x"}>, out_shardings = #sdy.sharding_per_value<[<@mesh, [{}], unreduced={"x"}>]>}> ({
    ^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
      %3 = stablehlo.multiply %a, %b : tensor<2xf32>
      "sdy.return"(%3) : (tensor<2xf32>) -> ()
    }) : (tensor<4xf32>, tensor<4xf32>) -> tensor<2xf32>
    return %2 : tensor<2xf32>
  }
}"#;
        let exe = compile(&client, text, 1, 2);
        let args = vec![vec![10.0, 20.0], vec![30.0, 40.0]];
        let out = run_f32(&client, &exe, &[2], &args).unwrap();
        assert_eq!(f32s(&out[0][0]), vec![0.0, 20.0]);
        assert_eq!(f32s(&out[1][0]), vec![60.0, 120.0]);

        // Run on whole values (a value made unreduced outside the region): a region whose
        // operand and result have the whole value's type still hands the unreduced operand
        // to one device and zeros to the other, so the sum inside counts it once.
        let text = format!(
            r#"module {{
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%arg0: tensor<2xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{}}]>}}) -> (tensor<2xf32> {{sdy.sharding = #sdy.sharding<@mesh, [{{}}]>}}) {{
    %0 = stablehlo.multiply %arg0, %arg0 : tensor<2xf32>
    %1 = sdy.sharding_constraint %0 <@mesh, [{{}}], unreduced={{"x"}}> : tensor<2xf32>
    %2 = "sdy.manual_computation"(%1) <{{in_shardings = #sdy.sharding_per_value<[<@mesh, [{{}}], unreduced={{"x"}}>]>, manual_axes = #sdy<manual_axes{{"x"}}>, out_shardings = #sdy.sharding_per_value<[<@mesh, [{{}}]>]>}}> ({{
    ^bb0(%a: tensor<2xf32>):
      %3 = "stablehlo.all_reduce"(%a) <{{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>, use_global_device_ids}}> {REDUCE_ADD} : (tensor<2xf32>) -> tensor<2xf32>
      "sdy.return"(%3) : (tensor<2xf32>) -> ()
    }}) : (tensor<2xf32>) -> tensor<2xf32>
    return %2 : tensor<2xf32>
  }}
}}"#
        );
        let exe = compile(&client, &text, 1, 2);
        let args = vec![vec![3.0, -4.0], vec![3.0, -4.0]];
        let out = run_f32(&client, &exe, &[2], &args).unwrap();
        for (p, outs) in out.iter().enumerate() {
            assert_eq!(f32s(&outs[0]), vec![9.0, 16.0], "device {p}");
        }
    }

    #[test]
    fn host_calls_outside_regions_of_a_program_run_whole_run_once() {
        use oxla_ir::eval::{register_host_call, unregister_host_call, HostCall};
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        let client = client(2);
        // A host call beside a region: the program runs whole on both devices, the call
        // runs on the first, and both get its result.
        let text = r#"module {
  sdy.mesh @mesh = <["x"=2]>
  func.func public @main(%arg0: tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> (tensor<4xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}, tensor<f32> {sdy.sharding = #sdy.sharding<@mesh, []>}) {
    %0 = stablehlo.custom_call @oxla_test_sum_once(%arg0) {has_side_effect = true} : (tensor<4xf32>) -> tensor<f32>
    %1 = "sdy.manual_computation"(%arg0) <{in_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>, manual_axes = #sdy<manual_axes{"x"}>, out_shardings = #sdy.sharding_per_value<[<@mesh, [{"x"}]>]>}> ({
    ^bb0(%a: tensor<2xf32>):
      %2 = stablehlo.custom_call @oxla_test_sum_once(%a) {has_side_effect = true} : (tensor<2xf32>) -> tensor<f32>
      %3 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<f32>) -> tensor<2xf32>
      "sdy.return"(%3) : (tensor<2xf32>) -> ()
    }) : (tensor<4xf32>) -> tensor<4xf32>
    return %1, %0 : tensor<4xf32>, tensor<f32>
  }
}"#;
        let calls = Arc::new(AtomicUsize::new(0));
        let counter = calls.clone();
        register_host_call(
            "oxla_test_sum_once",
            Arc::new(move |call: &HostCall<'_>| {
                counter.fetch_add(1, Ordering::SeqCst);
                let sum: f32 = call.args[0].to_f32_vec().unwrap().iter().sum();
                Ok(vec![Literal::from_f32(&[], &[sum]).unwrap()])
            }),
        );
        let exe = compile(&client, text, 1, 2);
        let out = run_f32(&client, &exe, &[2], &[vec![1.0, 2.0], vec![3.0, 4.0]]);
        // Inside the region each device calls it on its shard: two more calls.
        let calls_made = calls.load(Ordering::SeqCst);
        register_host_call(
            "oxla_test_sum_once",
            Arc::new(|_: &HostCall<'_>| Err("the host refused".to_string())),
        );
        let refused = run_f32(&client, &exe, &[2], &[vec![0.0; 2], vec![0.0; 2]]);
        unregister_host_call("oxla_test_sum_once");
        let out = out.unwrap();
        assert_eq!(calls_made, 3);
        assert_eq!(f32s(&out[0][0]), vec![3.0, 3.0]);
        assert_eq!(f32s(&out[1][0]), vec![7.0, 7.0]);
        for (p, outs) in out.iter().enumerate() {
            assert_eq!(f32s(&outs[1]), vec![10.0], "device {p}");
        }
        // A failed call fails every device (the others do not wait for its result).
        let err = refused.unwrap_err();
        assert!(err.message().contains("the host refused"), "{err}");
    }

    #[test]
    fn a_failed_device_cancels_the_others() {
        let client = client(4);
        let text = format!(
            r#"func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {{
  %0 = "stablehlo.all_reduce"(%x) <{{replica_groups = dense<[[0, 1, 2, 3]]> : tensor<1x4xi64>}}> {REDUCE_ADD} : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}}"#
        );
        let exe = compile(&client, &text, 4, 1);
        let ty = TensorType::new(vec![2], oxla_ir::ElementType::F32);
        let lists: Vec<Vec<Buffer>> = exe
            .addressable_devices()
            .iter()
            .enumerate()
            .map(|(d, device)| {
                let buffer = if d == 2 {
                    let (buffer, _) = client
                        .buffer_from_producer(device, ty.clone(), || {
                            Err(ClientError::Internal("the host transfer broke".into()))
                        })
                        .unwrap();
                    buffer
                } else {
                    client
                        .buffer_from_bytes(device, ty.clone(), vec![0; 8])
                        .unwrap()
                };
                vec![buffer]
            })
            .collect();
        let res = exe.execute(&lists, &ExecuteOptions::default()).unwrap();
        for (d, done) in res.completions.iter().enumerate() {
            let err = done.wait().unwrap_err();
            if d != 2 {
                assert!(err.message().contains("cancelled"), "device {d}: {err}");
                assert!(err.message().contains("the host transfer broke"), "{err}");
            }
        }
        // Running on one device of four: the group names processes the launch lacks.
        let device = exe.addressable_devices()[1].clone();
        let arg = client
            .buffer_from_bytes(&device, ty.clone(), vec![0; 8])
            .unwrap();
        let options = ExecuteOptions {
            execute_device: Some(device),
            ..ExecuteOptions::default()
        };
        let res = exe.execute(&[vec![arg]], &options).unwrap();
        let err = res.completions[0].wait().unwrap_err();
        assert!(err.message().contains("does not run"), "{err}");
    }

    fn pid(partition: u32) -> ProcessId {
        ProcessId {
            replica: 0,
            partition,
        }
    }

    #[test]
    fn exchanges_time_out_or_fail_when_a_member_is_gone() {
        let group = [pid(0), pid(1)];
        let request = Exchange {
            op: "stablehlo.all_gather",
            sequence: 0,
            group: &group,
        };
        let lit = Literal::from_f32(&[1], &[1.0]).unwrap();
        // Nobody else comes: the wait ends at the timeout.
        let rv = Rendezvous::new(1, 2, group.to_vec(), Duration::from_millis(50));
        let err = rv.device(pid(0)).exchange(&request, vec![lit.clone()]);
        assert!(err.unwrap_err().to_string().contains("timed out"));
        // The other member finished without joining: the waiter fails at once.
        let rv = Rendezvous::new(1, 2, group.to_vec(), Duration::from_secs(600));
        let waiter = {
            let (rv, lit) = (rv.clone(), lit.clone());
            std::thread::spawn(move || {
                let group = [pid(0), pid(1)];
                let request = Exchange {
                    op: "stablehlo.all_gather",
                    sequence: 0,
                    group: &group,
                };
                rv.device(pid(0)).exchange(&request, vec![lit]).map(|_| ())
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        rv.finish(pid(1));
        let err = waiter.join().unwrap().unwrap_err();
        assert!(
            err.to_string().contains("finished without joining"),
            "{err}"
        );
        // Two members: both get both contributions, in group order.
        let rv = Rendezvous::new(1, 2, group.to_vec(), Duration::from_secs(600));
        let other = {
            let rv = rv.clone();
            std::thread::spawn(move || {
                let group = [pid(0), pid(1)];
                let request = Exchange {
                    op: "stablehlo.all_gather",
                    sequence: 0,
                    group: &group,
                };
                let two = Literal::from_f32(&[1], &[2.0]).unwrap();
                rv.device(pid(1)).exchange(&request, vec![two])
            })
        };
        let mine = rv.device(pid(0)).exchange(&request, vec![lit]).unwrap();
        let theirs = other.join().unwrap().unwrap();
        assert_eq!(mine, theirs);
        assert_eq!(mine[1][0].to_f32_vec().unwrap(), vec![2.0]);
        assert!(rv.lock().slots.is_empty());
    }
}
