//! oxla-ir: the tensor IR every other oxla crate speaks.
//!
//! It holds types ([`types`]), attributes ([`attrs`]), the op vocabulary ([`ops`]), the program
//! structure ([`module`]), host literals ([`literal`]) and the reference evaluator ([`eval`]).
//! It knows nothing of PJRT, files, MLIR bytecode or threads.

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod attrs;
pub mod error;
pub mod eval;
pub mod literal;
pub mod module;
pub mod ops;
pub mod print;
pub mod sharding;
pub mod transform;
pub mod types;
pub mod verifier;

pub use attrs::{Attribute, ElementsAttr, NamedAttribute};
pub use error::{IrError, Result};
pub use literal::Literal;
pub use module::{Block, Function, Location, Module, Op, Region, ValueId, Visibility};
pub use ops::OpKind;
pub use types::{ElementType, FunctionType, TensorType, Type, DYNAMIC};
