//! Modules, functions, regions, blocks and ops: the structure of a program.
//!
//! SSA values live in one arena per function ([`Function::values`]); a [`ValueId`] indexes it.
//! Nested regions (while bodies, reduce bodies, sort comparators) use the same arena, so a
//! region can name values defined outside it, as StableHLO's `while`/`if`/`case` allow.

use crate::attrs::{find_attr, Attribute, NamedAttribute};
use crate::ops::OpKind;
use crate::types::{FunctionType, Type};
use std::fmt;
use std::sync::Arc;

/// Index of an SSA value in its function's value arena.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId(pub u32);

impl ValueId {
    /// The arena index.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Where an op or function came from in the user's source (MLIR locations).
///
/// The parts are shared (`Arc`): JAX gives every op a call-site chain of its Python
/// traceback, and many ops share most of it, so cloning a location is a few reference
/// counts, not a copy of the chain.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub enum Location {
    /// No location.
    #[default]
    Unknown,
    /// `"file":line:col`.
    FileLineCol {
        /// File name.
        file: Arc<str>,
        /// 1-based line.
        line: u32,
        /// 1-based column.
        col: u32,
    },
    /// `"name"(child)`: a named location, as JAX uses for op names.
    Name {
        /// The name.
        name: Arc<str>,
        /// The location it wraps, if any.
        child: Option<Arc<Location>>,
    },
    /// `callsite(callee at caller)`.
    CallSite {
        /// The callee location.
        callee: Arc<Location>,
        /// The caller location.
        caller: Arc<Location>,
    },
    /// `fused[...]`.
    Fused(Arc<[Location]>),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Unknown => f.write_str("unknown"),
            Location::FileLineCol { file, line, col } => write!(f, "{file:?}:{line}:{col}"),
            Location::Name { name, child: None } => write!(f, "{name:?}"),
            Location::Name {
                name,
                child: Some(child),
            } => write!(f, "{name:?}({child})"),
            Location::CallSite { callee, caller } => write!(f, "callsite({callee} at {caller})"),
            Location::Fused(locs) => {
                f.write_str("fused[")?;
                for (i, l) in locs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    l.fmt(f)?;
                }
                f.write_str("]")
            }
        }
    }
}

/// One operation.
#[derive(Clone, Debug, PartialEq)]
pub struct Op {
    /// What the op is.
    pub kind: OpKind,
    /// Operand values, in order.
    pub operands: Vec<ValueId>,
    /// Result values, in order.
    pub results: Vec<ValueId>,
    /// Attributes (structured StableHLO attributes flattened, see [`crate::attrs`]).
    pub attributes: Vec<NamedAttribute>,
    /// Nested regions (bodies, branches, comparators).
    pub regions: Vec<Region>,
    /// Source location.
    pub location: Location,
}

impl Op {
    /// An op with no attributes, regions or location.
    pub fn new(kind: OpKind, operands: Vec<ValueId>, results: Vec<ValueId>) -> Op {
        Op {
            kind,
            operands,
            results,
            attributes: Vec::new(),
            regions: Vec::new(),
            location: Location::Unknown,
        }
    }

    /// The attribute called `name`, if present.
    pub fn attr(&self, name: &str) -> Option<&Attribute> {
        find_attr(&self.attributes, name)
    }
}

/// A basic block: arguments plus a list of ops, the last of which is a terminator.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Block {
    /// Block arguments.
    pub arguments: Vec<ValueId>,
    /// Ops in order.
    pub ops: Vec<Op>,
}

/// A region: a list of blocks (StableHLO regions have exactly one).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Region {
    /// The blocks.
    pub blocks: Vec<Block>,
}

/// Function visibility.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Visibility {
    /// Callable from outside the module (JAX's `@main`).
    #[default]
    Public,
    /// Only callable within the module.
    Private,
    /// Declared, possibly not defined, but not callable from outside.
    Nested,
}

/// A `func.func`.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Function {
    /// Symbol name, without `@`.
    pub name: String,
    /// Visibility.
    pub visibility: Visibility,
    /// Signature.
    pub ty: FunctionType,
    /// Per-argument attributes (`jax.buffer_donor`, `mhlo.sharding`, ...).
    pub arg_attrs: Vec<Vec<NamedAttribute>>,
    /// Per-result attributes.
    pub res_attrs: Vec<Vec<NamedAttribute>>,
    /// Other function attributes.
    pub attributes: Vec<NamedAttribute>,
    /// The body; its entry block's arguments are the function's arguments.
    pub body: Region,
    /// Types of every SSA value in this function, indexed by [`ValueId`].
    pub values: Vec<Type>,
    /// Source location.
    pub location: Location,
}

impl Function {
    /// Adds a value of type `ty` to the arena and returns its id.
    pub fn new_value(&mut self, ty: Type) -> ValueId {
        let id = ValueId(u32::try_from(self.values.len()).expect("fewer than 2^32 values"));
        self.values.push(ty);
        id
    }

    /// The type of `value`.
    pub fn value_type(&self, value: ValueId) -> &Type {
        &self.values[value.index()]
    }
}

/// A whole program: a `builtin.module` with its functions.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Module {
    /// `sym_name` of the module, if any (JAX uses `@jit_f`).
    pub name: Option<String>,
    /// Module attributes (`mhlo.num_replicas`, `mhlo.num_partitions`, ...), kept as data.
    pub attributes: Vec<NamedAttribute>,
    /// Functions in order.
    pub functions: Vec<Function>,
    /// Module-level ops other than functions (such as `sdy.mesh` declarations), kept verbatim
    /// as text: oxla does not interpret them, but printing keeps the program valid.
    pub declarations: Vec<String>,
    /// Source location.
    pub location: Location,
}

impl Module {
    /// The function called `name`.
    pub fn function(&self, name: &str) -> Option<&Function> {
        self.functions.iter().find(|f| f.name == name)
    }

    /// The entry function: `main` if present, else the only public function.
    pub fn entry_function(&self) -> Option<&Function> {
        self.function("main").or_else(|| {
            let mut public = self
                .functions
                .iter()
                .filter(|f| f.visibility == Visibility::Public);
            match (public.next(), public.next()) {
                (Some(f), None) => Some(f),
                _ => None,
            }
        })
    }

    /// The attribute called `name`, if present.
    pub fn attr(&self, name: &str) -> Option<&Attribute> {
        find_attr(&self.attributes, name)
    }
}
