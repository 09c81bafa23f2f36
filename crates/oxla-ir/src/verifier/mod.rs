//! The IR verifier: checks that a [`Module`] is well formed before anything runs it.
//!
//! [`verify_module`] walks every function with an explicit worklist (no recursion, so deeply
//! nested regions cannot overflow the stack) and collects *all* problems it finds, each tied to
//! the op (by name) and the source location where it occurs.
//!
//! # Structural invariants
//!
//! - Function names are unique within the module.
//! - Every function has a body of exactly one block, whose arguments match the signature's
//!   inputs in number and type.
//! - The function body ends with `func.return`, whose operand types equal the signature's
//!   results; `func.return` appears nowhere else.
//! - Every region of a known op has exactly one block, which ends with `stablehlo.return`;
//!   `stablehlo.return` appears nowhere else. Regions of unknown ops are walked for
//!   dominance but their terminators are not checked.
//! - Every [`crate::ValueId`] an op or block names is in range of [`crate::Function::values`].
//! - Every value is defined exactly once (as a block argument or an op result).
//! - Every operand is defined before its use, in the same block or in an enclosing block
//!   (a region may use values from outside it; an op's regions may not use its own results;
//!   values of one region are not visible outside it).
//! - `func.call` names an existing function, with operand and result types equal to its
//!   signature.
//!
//! # Per-op invariants
//!
//! Each known op is checked against the "Constraints" of its StableHLO spec entry, as far as
//! `rules.rs` and `compute.rs` implement them: operand and result counts, operand and result
//! types (ranks, shapes, element types), required attributes and their ranges, and the
//! signatures of nested regions. A [`crate::DYNAMIC`] extent is compatible with any extent.
//! The module docs of `rules.rs` and `compute.rs` list the ops and rules.
//!
//! # Not checked
//!
//! - Ops outside oxla's vocabulary ([`crate::OpKind::Other`]): later stages reject them as
//!   unsupported. Their operands are still checked for dominance.
//! - Per-op rules of an op that has an operand or result of opaque type (quantized types),
//!   which oxla does not support anyway.
//! - Ops the rules do not cover (collectives, host communication, custom calls, composites,
//!   RNG, FFT, batch norm, dynamic-shape ops, most CHLO ops beyond shape agreement) are only
//!   checked structurally.
//! - Attributes the rules do not read (`precision_config`, `compare_type`, layouts,
//!   frontend attributes) and the element-type pairing of mixed-precision ops
//!   (`dot_general`, `convolution`, `convert`).
//! - Types and locations are compared and printed with their derived, recursive
//!   implementations; the reader bounds their nesting.

mod compute;
mod rules;
#[cfg(test)]
mod tests;

use crate::module::{Block, Function, Location, Module, Op};
use crate::ops::OpKind;
use std::collections::HashSet;
use std::fmt;

/// One broken invariant: which op, where, and what rule it breaks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifierError {
    /// The op's full name (`stablehlo.add`), or `func.func @name` for function-level errors.
    pub op: String,
    /// The op's source location.
    pub location: Location,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for VerifierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {}: {}", self.op, self.location, self.message)
    }
}

/// Every error the verifier found in a module, in program order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct VerifierErrors(pub Vec<VerifierError>);

impl VerifierErrors {
    /// True when no error was found.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Number of errors.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// The errors.
    pub fn errors(&self) -> &[VerifierError] {
        &self.0
    }

    /// The first `max` errors, one per line, plus a line counting the rest (for user-facing
    /// messages that should stay short).
    pub fn summary(&self, max: usize) -> String {
        let mut lines: Vec<String> = self.0.iter().take(max).map(|e| e.to_string()).collect();
        if self.0.len() > max {
            lines.push(format!("... and {} more errors", self.0.len() - max));
        }
        lines.join("\n")
    }
}

impl fmt::Display for VerifierErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (idx, err) in self.0.iter().enumerate() {
            if idx > 0 {
                f.write_str("\n")?;
            }
            err.fmt(f)?;
        }
        Ok(())
    }
}

impl std::error::Error for VerifierErrors {}

/// Verifies `module`, returning every broken invariant (see the module doc for the list).
pub fn verify_module(module: &Module) -> Result<(), VerifierErrors> {
    let mut errors = Vec::new();
    let mut names = HashSet::new();
    for function in &module.functions {
        if !names.insert(function.name.as_str()) {
            errors.push(function_error(
                function,
                "function name is defined more than once",
            ));
        }
        verify_function(module, function, &mut errors);
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(VerifierErrors(errors))
    }
}

fn function_error(function: &Function, message: impl Into<String>) -> VerifierError {
    VerifierError {
        op: format!("func.func @{}", function.name),
        location: function.location.clone(),
        message: message.into(),
    }
}

/// Where a value stands during the walk.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ValueState {
    /// Not defined yet.
    Undefined,
    /// Defined and visible at the current point.
    Live,
    /// Defined in a block the walk has left: not visible any more.
    OutOfScope,
}

/// Which terminator a block must end with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Terminator {
    /// The function body: `func.return`.
    FuncReturn,
    /// A region of a known op: `stablehlo.return`.
    StablehloReturn,
    /// A region of an unknown op: anything.
    Any,
}

/// One step of the walk.
enum Task<'a> {
    /// Define a block's arguments, then walk its ops (the op owning the block's region, if any).
    EnterBlock(&'a Block, Terminator, Option<&'a Op>),
    /// Check the op at this index of the block, then go on with the next.
    Op(&'a Block, usize, Terminator),
    /// Define an op's results (after its regions have been walked).
    DefineResults(&'a Op),
    /// Take a block's values out of scope.
    LeaveBlock(&'a Block),
}

struct Walker<'a, 'e> {
    module: &'a Module,
    function: &'a Function,
    states: Vec<ValueState>,
    errors: &'e mut Vec<VerifierError>,
}

fn verify_function(module: &Module, function: &Function, errors: &mut Vec<VerifierError>) {
    let entry = match function.body.blocks.as_slice() {
        [entry] => entry,
        blocks => {
            errors.push(function_error(
                function,
                format!(
                    "function body must have exactly one block, found {}",
                    blocks.len()
                ),
            ));
            return;
        }
    };
    let mut walker = Walker {
        module,
        function,
        states: vec![ValueState::Undefined; function.values.len()],
        errors,
    };
    if entry.arguments.len() != function.ty.inputs.len() {
        walker.errors.push(function_error(
            function,
            format!(
                "entry block has {} arguments but the signature has {} inputs",
                entry.arguments.len(),
                function.ty.inputs.len()
            ),
        ));
    } else {
        for (idx, (arg, expected)) in entry.arguments.iter().zip(&function.ty.inputs).enumerate() {
            if let Some(actual) = function.values.get(arg.index()) {
                if actual != expected {
                    walker.errors.push(function_error(
                        function,
                        format!(
                            "entry block argument #{idx} has type {actual} but the signature says {expected}"
                        ),
                    ));
                }
            }
        }
    }
    walker.run(entry);
}

impl<'a> Walker<'a, '_> {
    fn run(&mut self, entry: &'a Block) {
        let mut tasks = vec![Task::EnterBlock(entry, Terminator::FuncReturn, None)];
        while let Some(task) = tasks.pop() {
            match task {
                Task::EnterBlock(block, terminator, parent) => {
                    if block.ops.is_empty() {
                        self.empty_block(terminator, parent);
                    }
                    for &arg in &block.arguments {
                        self.define(arg, "block argument", None);
                    }
                    tasks.push(Task::LeaveBlock(block));
                    tasks.push(Task::Op(block, 0, terminator));
                }
                Task::Op(block, idx, terminator) => {
                    let Some(op) = block.ops.get(idx) else {
                        continue;
                    };
                    self.check_placement(op, idx + 1 == block.ops.len(), terminator);
                    let operands_ok = self.check_operands(op);
                    if operands_ok && self.results_in_range(op) {
                        let mut cx = rules::OpCx {
                            module: self.module,
                            function: self.function,
                            op,
                            errors: self.errors,
                        };
                        rules::check_op(&mut cx);
                    }
                    tasks.push(Task::Op(block, idx + 1, terminator));
                    tasks.push(Task::DefineResults(op));
                    let region_terminator = match op.kind {
                        OpKind::Other(_) => Terminator::Any,
                        _ => Terminator::StablehloReturn,
                    };
                    for (region_idx, region) in op.regions.iter().enumerate().rev() {
                        if region_terminator != Terminator::Any && region.blocks.len() != 1 {
                            self.op_error(
                                op,
                                format!(
                                    "region #{region_idx} must have exactly one block, found {}",
                                    region.blocks.len()
                                ),
                            );
                        }
                        for block in region.blocks.iter().rev() {
                            tasks.push(Task::EnterBlock(block, region_terminator, Some(op)));
                        }
                    }
                }
                Task::DefineResults(op) => {
                    for &result in &op.results {
                        self.define(result, "op result", Some(op));
                    }
                }
                Task::LeaveBlock(block) => {
                    let values = block
                        .arguments
                        .iter()
                        .chain(block.ops.iter().flat_map(|op| op.results.iter()));
                    for value in values {
                        if let Some(state) = self.states.get_mut(value.index()) {
                            *state = ValueState::OutOfScope;
                        }
                    }
                }
            }
        }
    }

    fn op_error(&mut self, op: &Op, message: impl Into<String>) {
        self.errors.push(VerifierError {
            op: op.kind.name().to_string(),
            location: op.location.clone(),
            message: message.into(),
        });
    }

    fn define(&mut self, value: crate::ValueId, what: &str, op: Option<&Op>) {
        let message = match self.states.get_mut(value.index()) {
            None => format!(
                "{what} %{} is out of range (the function has {} values)",
                value.0,
                self.function.values.len()
            ),
            Some(state @ ValueState::Undefined) => {
                *state = ValueState::Live;
                return;
            }
            Some(_) => format!("{what} %{} is defined more than once", value.0),
        };
        match op {
            Some(op) => self.op_error(op, message),
            None => self.errors.push(function_error(self.function, message)),
        }
    }

    fn check_operands(&mut self, op: &Op) -> bool {
        let mut all_ok = true;
        for (idx, value) in op.operands.iter().enumerate() {
            let problem = match self.states.get(value.index()) {
                None => format!(
                    "is out of range (the function has {} values)",
                    self.function.values.len()
                ),
                Some(ValueState::Live) => continue,
                Some(ValueState::Undefined) => "is used before it is defined".to_string(),
                Some(ValueState::OutOfScope) => {
                    "is defined in a region that does not enclose this use".to_string()
                }
            };
            // An out-of-range id breaks the type lookups of the per-op rules; an undefined one
            // still has a type, so the rules can run.
            if self.states.get(value.index()).is_none() {
                all_ok = false;
            }
            self.op_error(op, format!("operand #{idx} (%{}) {problem}", value.0));
        }
        all_ok
    }

    fn results_in_range(&self, op: &Op) -> bool {
        op.results
            .iter()
            .all(|value| value.index() < self.function.values.len())
    }

    fn check_placement(&mut self, op: &Op, is_last: bool, terminator: Terminator) {
        let expected = match terminator {
            Terminator::FuncReturn => OpKind::FuncReturn,
            Terminator::StablehloReturn => OpKind::Return,
            Terminator::Any => return,
        };
        let misplaced = match op.kind {
            OpKind::FuncReturn | OpKind::Return if op.kind != expected => Some(match terminator {
                Terminator::FuncReturn => "may only end a region of a StableHLO op",
                _ => "may only end a function body",
            }),
            OpKind::FuncReturn | OpKind::Return if !is_last => {
                Some("must be the last op of its block")
            }
            _ => None,
        };
        if let Some(message) = misplaced {
            self.op_error(op, message);
        }
        if is_last && op.kind != expected {
            let where_ = match terminator {
                Terminator::FuncReturn => "a function body",
                _ => "a region",
            };
            self.op_error(
                op,
                format!("the last op of {where_} must be {}", expected.name()),
            );
        }
    }

    fn empty_block(&mut self, terminator: Terminator, parent: Option<&Op>) {
        match (terminator, parent) {
            (Terminator::Any, _) => {}
            (_, Some(op)) => {
                self.op_error(op, "a region is empty; it must end with stablehlo.return")
            }
            (_, None) => self.errors.push(function_error(
                self.function,
                "the function body is empty; it must end with func.return",
            )),
        }
    }
}
