//! The oxla runtime: loads a program artifact (`.oxla`, written by Python's
//! `oxla.Program`) and runs its procedures, with the program's globals kept between
//! calls, without Python or JAX.
//!
//! ```no_run
//! use oxla_runtime::{Module, Tensor};
//! let mut module = Module::load("trivial.oxla")?;
//! let ones = Tensor::from_f32(&[3, 4], &[1.0; 12])?;
//! let outputs = module.call("run", &[ones])?;
//! println!("{}", oxla_runtime::format_tensor(&outputs[0]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Procedures run through the same compiler and executor as the JAX plugin
//! (`oxla-client`), on one device.

pub mod artifact;
pub mod error;
pub mod module;
pub mod npy;
pub mod tensor;

pub use artifact::{Artifact, FunctionInfo, GlobalInfo, Metadata, ValueInfo};
pub use error::{Result, RuntimeError};
pub use module::Module;
pub use oxla_client::ErrorCode;
pub use oxla_ir::{ElementType, Literal as Tensor, TensorType};
pub use tensor::{format_tensor, parse_tensor_literal};
