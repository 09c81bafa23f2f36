//! Host calls: `stablehlo.custom_call` targets the embedding program implements (the JAX
//! plugin registers `oxla_python_callback`, which runs Python callbacks such as
//! `jax.debug.print`). The evaluator hands such a call its operands and the declared result
//! types, and checks what comes back.

use crate::{IrError, Literal, TensorType};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};

/// One call of a host target.
#[derive(Debug)]
pub struct HostCall<'a> {
    /// The custom call's `call_target_name`.
    pub target: &'a str,
    /// Its `backend_config` string ("" when absent or not a string).
    pub backend_config: &'a str,
    /// The operands.
    pub args: &'a [Literal],
    /// The declared result types; the handler must return literals of exactly these types.
    pub result_types: &'a [TensorType],
}

/// A host target's implementation; an `Err` becomes the execution's error.
pub type HostCallHandler = dyn Fn(&HostCall<'_>) -> Result<Vec<Literal>, String> + Send + Sync;

fn registry() -> &'static RwLock<HashMap<String, Arc<HostCallHandler>>> {
    static REGISTRY: OnceLock<RwLock<HashMap<String, Arc<HostCallHandler>>>> = OnceLock::new();
    REGISTRY.get_or_init(Default::default)
}

/// Makes custom calls to `target` run `handler` (replacing any earlier handler).
pub fn register_host_call(target: &str, handler: Arc<HostCallHandler>) {
    let mut map = registry().write().unwrap_or_else(|p| p.into_inner());
    map.insert(target.to_string(), handler);
}

/// Removes the handler of `target`; later programs calling it fail to compile.
pub fn unregister_host_call(target: &str) {
    let mut map = registry().write().unwrap_or_else(|p| p.into_inner());
    map.remove(target);
}

/// The handler of `target`, if one is registered.
pub(crate) fn host_call_handler(target: &str) -> Option<Arc<HostCallHandler>> {
    let map = registry().read().unwrap_or_else(|p| p.into_inner());
    map.get(target).cloned()
}

/// Runs `call` through its handler and checks the results against the declared types.
pub(crate) fn run_host_call(
    handler: &HostCallHandler,
    call: &HostCall<'_>,
) -> Result<Vec<Literal>, IrError> {
    let results = handler(call).map_err(|detail| IrError::Eval {
        detail: format!("host call `{}` failed: {detail}", call.target),
    })?;
    if results.len() != call.result_types.len()
        || results
            .iter()
            .zip(call.result_types)
            .any(|(r, t)| &r.ty != t)
    {
        return Err(IrError::Eval {
            detail: format!(
                "host call `{}` returned {} values of the wrong types (expected {})",
                call.target,
                results.len(),
                call.result_types
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        });
    }
    Ok(results)
}

impl<'m> super::Interp<'m> {
    /// Evaluates a custom call whose target has a registered host handler.
    pub(super) fn exec_host_call(
        &mut self,
        frame: &mut super::Frame<'m>,
        cx: super::OpCx<'m>,
        handler: &HostCallHandler,
    ) -> Result<Vec<super::Value>, IrError> {
        let target = super::call_target(cx.op).unwrap_or_default();
        let args = cx
            .op
            .operands
            .iter()
            .map(|&id| super::tensor_operand(frame, cx, id).cloned())
            .collect::<Result<Vec<_>, _>>()?;
        let result_types = (0..cx.op.results.len())
            .map(|i| cx.result_tensor(i).cloned())
            .collect::<Result<Vec<_>, _>>()?;
        let backend_config = match cx.op.attr("backend_config") {
            Some(crate::Attribute::String(s)) => s.as_str(),
            _ => "",
        };
        let call = HostCall {
            target,
            backend_config,
            args: &args,
            result_types: &result_types,
        };
        let collectives = self.collectives;
        let once = collectives.whole_program_on_every_partition()
            && collectives.num_partitions() > 1
            && self.manual_regions == 0;
        let me = collectives.process();
        let results = if once && me.partition != 0 {
            Vec::new()
        } else {
            run_host_call(handler, &call).map_err(|err| cx.invalid(err.to_string()))?
        };
        let results = if once {
            self.share_from_first_partition(cx, results, &result_types)?
        } else {
            results
        };
        Ok(results.into_iter().map(super::Value::Tensor).collect())
    }

    /// Hands partition 0's `results` (the others pass none) to every partition of this
    /// replica, through an exchange all of them reach at the same point of the program.
    fn share_from_first_partition(
        &mut self,
        cx: super::OpCx<'m>,
        results: Vec<Literal>,
        result_types: &[TensorType],
    ) -> Result<Vec<Literal>, IrError> {
        let me = self.collectives.process();
        let group: Vec<super::ProcessId> = (0..self.collectives.num_partitions() as u32)
            .map(|partition| super::ProcessId {
                replica: me.replica,
                partition,
            })
            .collect();
        let request = super::Exchange {
            op: "stablehlo.custom_call",
            sequence: self.collective_sequence,
            group: &group,
        };
        self.collective_sequence += 1;
        let all = self
            .collectives
            .exchange(&request, results)
            .map_err(|e| cx.invalid(e.to_string()))?;
        let count = all.len();
        let first = match all.into_iter().next() {
            Some(first) if count == group.len() => first,
            _ => return Err(cx.invalid("the host call's results did not reach every device")),
        };
        if first.len() != result_types.len()
            || first.iter().zip(result_types).any(|(l, t)| &l.ty != t)
        {
            return Err(cx.invalid("partition 0 handed out host call results of other types"));
        }
        Ok(first)
    }
}
