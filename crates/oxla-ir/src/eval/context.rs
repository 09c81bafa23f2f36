//! The view an op kernel gets of its op: attributes, result types and error builders.

use crate::{Attribute, Function, IrError, Op, TensorType, Type};

/// The largest tensor the evaluator will allocate (16 GiB), so that absurd result types
/// give an error instead of aborting on allocation failure.
pub(crate) const MAX_TENSOR_BYTES: usize = 1 << 34;

/// An op being evaluated, with the function that holds its value types.
#[derive(Clone, Copy)]
pub(crate) struct OpCx<'a> {
    pub op: &'a Op,
    pub func: &'a Function,
}

impl<'a> OpCx<'a> {
    /// An `InvalidOp` error for this op.
    pub(crate) fn invalid(&self, detail: impl Into<String>) -> IrError {
        IrError::InvalidOp {
            op: self.op.kind.name().to_string(),
            location: self.op.location.clone(),
            detail: detail.into(),
        }
    }

    /// An `Unsupported` error for this op.
    pub(crate) fn unsupported(&self, detail: impl Into<String>) -> IrError {
        IrError::Unsupported {
            op: self.op.kind.name().to_string(),
            location: self.op.location.clone(),
            detail: detail.into(),
        }
    }

    /// Checks the operand count.
    pub(crate) fn expect_operands(&self, n: usize) -> Result<(), IrError> {
        if self.op.operands.len() != n {
            return Err(self.invalid(format!(
                "expects {n} operands, has {}",
                self.op.operands.len()
            )));
        }
        Ok(())
    }

    /// Checks the result count.
    pub(crate) fn expect_results(&self, n: usize) -> Result<(), IrError> {
        if self.op.results.len() != n {
            return Err(self.invalid(format!(
                "expects {n} results, has {}",
                self.op.results.len()
            )));
        }
        Ok(())
    }

    /// The type of result `i`.
    pub(crate) fn result_type(&self, i: usize) -> Result<&'a Type, IrError> {
        let id = self
            .op
            .results
            .get(i)
            .ok_or_else(|| self.invalid(format!("has no result {i}")))?;
        self.func
            .values
            .get(id.index())
            .ok_or_else(|| self.invalid(format!("result {i} is not in the value table")))
    }

    /// The static tensor type of result `i`.
    pub(crate) fn result_tensor(&self, i: usize) -> Result<&'a TensorType, IrError> {
        match self.result_type(i)? {
            Type::Tensor(t) if t.is_static() => match t.byte_size() {
                Some(n) if n <= MAX_TENSOR_BYTES => Ok(t),
                _ => Err(self.unsupported(format!(
                    "result type {t} exceeds the evaluator's limit of {MAX_TENSOR_BYTES} bytes"
                ))),
            },
            Type::Tensor(t) => Err(self.unsupported(format!("dynamic result type {t}"))),
            other => Err(self.invalid(format!("result {i} has non-tensor type {other}"))),
        }
    }

    /// Attribute `name`, required.
    pub(crate) fn attr(&self, name: &str) -> Result<&'a Attribute, IrError> {
        self.op
            .attr(name)
            .ok_or_else(|| self.invalid(format!("missing attribute `{name}`")))
    }

    /// An i64 list attribute, required.
    pub(crate) fn i64s(&self, name: &str) -> Result<Vec<i64>, IrError> {
        self.attr(name)?
            .as_i64_list()
            .ok_or_else(|| self.invalid(format!("attribute `{name}` is not a list of i64")))
    }

    /// An i64 list attribute, or `default` when absent.
    pub(crate) fn i64s_or(&self, name: &str, default: Vec<i64>) -> Result<Vec<i64>, IrError> {
        match self.op.attr(name) {
            None => Ok(default),
            Some(_) => self.i64s(name),
        }
    }

    /// An integer attribute, required.
    pub(crate) fn int(&self, name: &str) -> Result<i64, IrError> {
        self.attr(name)?
            .as_int()
            .and_then(|v| i64::try_from(v).ok())
            .ok_or_else(|| self.invalid(format!("attribute `{name}` is not an integer")))
    }

    /// A boolean attribute, or `default` when absent.
    #[allow(dead_code)]
    pub(crate) fn flag(&self, name: &str, default: bool) -> Result<bool, IrError> {
        match self.op.attr(name) {
            None => Ok(default),
            Some(Attribute::Bool(b)) => Ok(*b),
            Some(Attribute::Unit) => Ok(true),
            Some(Attribute::Integer { value, .. }) => Ok(*value != 0),
            Some(_) => Err(self.invalid(format!("attribute `{name}` is not a boolean"))),
        }
    }

    /// Converts a list of i64 dimension numbers to indices below `rank`.
    pub(crate) fn dims(
        &self,
        name: &str,
        values: &[i64],
        rank: usize,
    ) -> Result<Vec<usize>, IrError> {
        values
            .iter()
            .map(|&d| {
                usize::try_from(d)
                    .ok()
                    .filter(|&d| d < rank)
                    .ok_or_else(|| {
                        self.invalid(format!("`{name}` holds {d}, out of range for rank {rank}"))
                    })
            })
            .collect()
    }
}

/// Extents of a static shape as `usize`.
pub(crate) fn extents(shape: &[i64]) -> Vec<usize> {
    shape.iter().map(|&d| d.max(0) as usize).collect()
}

/// Row-major strides (in elements) of `extents`.
pub(crate) fn strides(extents: &[usize]) -> Vec<usize> {
    let mut res = vec![1usize; extents.len()];
    for i in (0..extents.len().saturating_sub(1)).rev() {
        res[i] = res[i + 1] * extents[i + 1];
    }
    res
}
