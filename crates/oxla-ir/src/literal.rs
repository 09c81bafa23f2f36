//! Literals: host tensors in oxla's dense layout (row-major, little-endian,
//! [`ElementType::byte_size`](crate::ElementType::byte_size) bytes per element).

use crate::types::{ElementType, TensorType};
use crate::IrError;
use std::sync::Arc;

/// A host tensor value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Literal {
    /// The (static) type.
    pub ty: TensorType,
    /// The elements' bytes; its length is always `ty.byte_size()`. Shared, so cloning a
    /// literal or handing a device buffer to the evaluator copies nothing; writers go
    /// through [`Literal::data_mut`], which copies only while the bytes are shared.
    pub data: Arc<Vec<u8>>,
}

impl Literal {
    /// A literal over `data`, checking that the length matches the type.
    pub fn new(ty: TensorType, data: Vec<u8>) -> Result<Literal, IrError> {
        Literal::from_shared(ty, Arc::new(data))
    }

    /// A literal over shared bytes, checking that the length matches the type.
    pub fn from_shared(ty: TensorType, data: Arc<Vec<u8>>) -> Result<Literal, IrError> {
        let expected = ty.byte_size().ok_or_else(|| IrError::InvalidType {
            detail: format!("{ty} has no static size"),
        })?;
        if data.len() != expected {
            return Err(IrError::InvalidType {
                detail: format!("{ty} needs {expected} bytes, got {}", data.len()),
            });
        }
        Ok(Literal { ty, data })
    }

    /// The bytes for writing: copied first if another literal shares them.
    pub fn data_mut(&mut self) -> &mut Vec<u8> {
        Arc::make_mut(&mut self.data)
    }

    /// The bytes, copied only if another literal shares them.
    pub fn into_data(self) -> Vec<u8> {
        Arc::try_unwrap(self.data).unwrap_or_else(|shared| (*shared).clone())
    }

    /// A zero-filled literal of a static type.
    pub fn zeros(ty: TensorType) -> Result<Literal, IrError> {
        let n = ty.byte_size().ok_or_else(|| IrError::InvalidType {
            detail: format!("{ty} has no static size"),
        })?;
        Ok(Literal {
            ty,
            data: Arc::new(vec![0; n]),
        })
    }

    /// The element type.
    pub fn element_type(&self) -> ElementType {
        self.ty.element_type
    }

    /// A literal from `f32` values.
    pub fn from_f32(shape: &[i64], values: &[f32]) -> Result<Literal, IrError> {
        let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Literal::new(TensorType::new(shape, ElementType::F32), data)
    }

    /// A literal from `i32` values.
    pub fn from_i32(shape: &[i64], values: &[i32]) -> Result<Literal, IrError> {
        let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        Literal::new(TensorType::new(shape, ElementType::S32), data)
    }

    /// The elements as `f32`, if the element type is f32.
    pub fn to_f32_vec(&self) -> Option<Vec<f32>> {
        (self.ty.element_type == ElementType::F32).then(|| {
            self.data
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes(c.try_into().expect("chunk of 4")))
                .collect()
        })
    }

    /// The elements as `i32`, if the element type is si32.
    pub fn to_i32_vec(&self) -> Option<Vec<i32>> {
        (self.ty.element_type == ElementType::S32).then(|| {
            self.data
                .chunks_exact(4)
                .map(|c| i32::from_le_bytes(c.try_into().expect("chunk of 4")))
                .collect()
        })
    }
}
