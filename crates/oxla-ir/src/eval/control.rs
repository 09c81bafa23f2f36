//! Ops that evaluate regions or other functions: `while`, `if`, `case`, `func.call` and
//! `reduce` (whose body is a region).

use super::context::OpCx;
use super::element::int_at;
use super::reduce;
use super::{operand, take_operands, tensor_operand, Frame, Interp, Value};
use crate::{Attribute, ElementType, IrError, Literal, Region, ValueId};

impl<'m> Interp<'m> {
    fn region(&self, cx: OpCx<'m>, i: usize) -> Result<&'m Region, IrError> {
        cx.op
            .regions
            .get(i)
            .ok_or_else(|| cx.invalid(format!("missing region {i}")))
    }

    /// The operands' values: those in `moves` (last uses) moved out of the table, the others
    /// cloned.
    fn operand_values(
        &self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
        moves: &[ValueId],
    ) -> Result<Vec<Value>, IrError> {
        for &id in &cx.op.operands {
            operand(frame, cx, id)?;
        }
        Ok(take_operands(frame, cx.op, moves))
    }

    /// Evaluates `while`: the condition region, then the body, until the condition is false.
    pub(super) fn exec_while(
        &mut self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
        moves: &[ValueId],
    ) -> Result<Vec<Value>, IrError> {
        let cond = self.region(cx, 0)?;
        let body = self.region(cx, 1)?;
        let mut state = self.operand_values(frame, cx, moves)?;
        if let Some(program) = self.loop_program(frame.func, cx.op) {
            let env = &frame.env;
            let outer = |v: crate::ValueId| env.get(v.index()).and_then(|v| v.as_ref());
            if let Some(res) = program.run(&state, outer) {
                return res;
            }
        }
        // The condition gets clones of the values it reads; the others stay unbound (a
        // token) instead of being copied every iteration.
        let cond_used = self.region_args_used(frame.func, cond);
        loop {
            let cond_args = state
                .iter()
                .enumerate()
                .map(|(i, v)| match cond_used.get(i) {
                    Some(false) => Value::Token,
                    _ => v.clone(),
                })
                .collect();
            let res = self.exec_region(frame, cond, cond_args)?;
            if !scalar_pred(cx, &res)? {
                return Ok(state);
            }
            state = self.exec_region(frame, body, state)?;
            if state.len() != cx.op.operands.len() {
                return Err(cx.invalid("body returns a different number of values"));
            }
        }
    }

    /// Evaluates `if`.
    pub(super) fn exec_if(
        &mut self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
    ) -> Result<Vec<Value>, IrError> {
        cx.expect_operands(1)?;
        let pred = tensor_operand(frame, cx, cx.op.operands[0])?;
        if pred.ty.element_type != ElementType::Pred || pred.ty.num_elements() != Some(1) {
            return Err(cx.invalid("predicate must be a scalar i1"));
        }
        let branch = if pred.data[0] != 0 { 0 } else { 1 };
        let region = self.region(cx, branch)?;
        self.exec_region(frame, region, Vec::new())
    }

    /// Evaluates `case`: an out-of-range index selects the last branch.
    pub(super) fn exec_case(
        &mut self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
    ) -> Result<Vec<Value>, IrError> {
        cx.expect_operands(1)?;
        let index = tensor_operand(frame, cx, cx.op.operands[0])?;
        if index.ty.num_elements() != Some(1) {
            return Err(cx.invalid("index must be a scalar"));
        }
        let i = int_at(index, 0).ok_or_else(|| cx.invalid("index must be an integer"))?;
        let n = cx.op.regions.len();
        if n == 0 {
            return Err(cx.invalid("has no branches"));
        }
        let branch = usize::try_from(i).ok().filter(|&i| i < n).unwrap_or(n - 1);
        let region = self.region(cx, branch)?;
        self.exec_region(frame, region, Vec::new())
    }

    /// Calls the function named by attribute `callee_attr`: `callee` for `func.call`,
    /// `decomposition` for `stablehlo.composite` (which runs its decomposition).
    pub(super) fn exec_call(
        &mut self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
        callee_attr: &str,
        moves: &[ValueId],
    ) -> Result<Vec<Value>, IrError> {
        let callee = match cx.attr(callee_attr)? {
            Attribute::SymbolRef(s) | Attribute::String(s) => s.trim_start_matches('@'),
            _ => return Err(cx.invalid(format!("`{callee_attr}` is not a symbol"))),
        };
        let module = self.module;
        let func = module
            .function(callee)
            .ok_or_else(|| cx.invalid(format!("calls unknown function @{callee}")))?;
        let args = self.operand_values(frame, cx, moves)?;
        if args.len() != func.ty.inputs.len() {
            return Err(cx.invalid(format!(
                "passes {} arguments to @{callee}, which takes {}",
                args.len(),
                func.ty.inputs.len()
            )));
        }
        self.call(func, args)
    }

    /// Evaluates `reduce`.
    pub(super) fn exec_reduce(
        &mut self,
        frame: &mut Frame<'m>,
        cx: OpCx<'m>,
    ) -> Result<Vec<Value>, IrError> {
        let n_operands = cx.op.operands.len();
        if n_operands < 2 || !n_operands.is_multiple_of(2) {
            return Err(cx.invalid("needs inputs and as many init values"));
        }
        let n = n_operands / 2;
        cx.expect_results(n)?;
        let body = self.region(cx, 0)?;
        if n == 1 {
            if let Some(kind) = reduce::simple_body(body) {
                let input = tensor_operand(frame, cx, cx.op.operands[0])?;
                let init = tensor_operand(frame, cx, cx.op.operands[1])?;
                if let Some(res) = reduce::reduce_simple(cx, &kind, input, init)? {
                    return Ok(vec![Value::Tensor(res)]);
                }
            }
        }
        let mut literals = Vec::with_capacity(n_operands);
        for &id in &cx.op.operands {
            literals.push(tensor_operand(frame, cx, id)?.clone());
        }
        let inits = literals.split_off(n);
        if let Some(ext) = reduce::arg_extremum_body(body) {
            if let Some(res) = reduce::reduce_arg_extremum(cx, ext, &literals, &inits)? {
                return Ok(res.into_iter().map(Value::Tensor).collect());
            }
        }
        let lanes = reduce::lane_safe(body);
        let mut call_body = |args: Vec<Literal>| -> Result<Vec<Literal>, IrError> {
            let values = args.into_iter().map(Value::Tensor).collect();
            self.exec_region(frame, body, values)?
                .into_iter()
                .map(|v| match v {
                    Value::Tensor(lit) => Ok(lit),
                    _ => Err(cx.invalid("body returned a non-tensor value")),
                })
                .collect()
        };
        let res = reduce::reduce_general(cx, &literals, &inits, lanes, &mut call_body)?;
        Ok(res.into_iter().map(Value::Tensor).collect())
    }
}

/// The single i1 value a condition region returns.
fn scalar_pred(cx: OpCx<'_>, values: &[Value]) -> Result<bool, IrError> {
    match values {
        [Value::Tensor(lit)]
            if lit.ty.element_type == ElementType::Pred && lit.ty.num_elements() == Some(1) =>
        {
            Ok(lit.data[0] != 0)
        }
        _ => Err(cx.invalid("condition must return one scalar i1")),
    }
}
