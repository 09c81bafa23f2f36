//! Machine code for loops of scalar work over one block of memory.
//!
//! A `while` whose condition and body work on single integers and floats, and move single
//! elements in and out of small arrays (a `fori_loop` writing `v[i]` from `v[i - 1]`, JAX's
//! loop turning LU pivots into a permutation), spends its time in the interpreter's
//! dispatch, not in arithmetic. [`ScalarCode`] runs such a loop as one generated function
//! over an *arena*: every value of the loop has a fixed byte offset in one buffer, each
//! operation loads its operands from there and stores its result there, and the loop is
//! the condition's operations, a test of its result, the body's operations (which end with
//! the copies that make the next state) and a jump back.
//!
//! The operations are exact: wrapping integer arithmetic, IEEE float arithmetic under the
//! calling thread's floating-point control register, IEEE and integer comparisons, selects,
//! copies, and element loads and stores at indices clamped (`dynamic_slice`,
//! `dynamic_update_slice`) or bounds-checked (`scatter`) as StableHLO defines them. They
//! need only x86-64's base instructions and SSE2.
//!
//! [`ScalarCode::compile`] checks that every byte any operation can touch, for any index
//! value, lies inside the arena; [`ScalarCode::run`] checks the arena's length. That is
//! what makes calling the code sound.

/// An integer type of the loop's values: its width and how its bits read as a number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntType {
    /// One byte holding 0 or 1 (`i1`): only the bitwise operations.
    Pred,
    S32,
    U32,
    S64,
    U64,
}

impl IntType {
    /// Bytes per value.
    pub fn size(self) -> u32 {
        match self {
            IntType::Pred => 1,
            IntType::S32 | IntType::U32 => 4,
            IntType::S64 | IntType::U64 => 8,
        }
    }

    /// Whether the bits read as a signed number.
    pub fn signed(self) -> bool {
        matches!(self, IntType::S32 | IntType::S64)
    }
}

/// A float type of the loop's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatType {
    F32,
    F64,
}

impl FloatType {
    /// Bytes per value.
    pub fn size(self) -> u32 {
        match self {
            FloatType::F32 => 4,
            FloatType::F64 => 8,
        }
    }
}

/// The type of one value: an integer (or predicate) or a float.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Num {
    Int(IntType),
    Float(FloatType),
}

impl Num {
    /// Bytes per value.
    pub fn size(self) -> u32 {
        match self {
            Num::Int(t) => t.size(),
            Num::Float(t) => t.size(),
        }
    }
}

/// Whether [`ScalarOp::Convert`] has a form from `from` to `to`: between integers (low bits
/// kept, sign- or zero-extended by the source's type; a predicate widened from 0/1, or an
/// integer made one by being nonzero), from a signed or 32-bit unsigned integer or a
/// predicate to a float (rounded to nearest), between the floats, and from a float to a
/// signed integer (truncated toward zero, saturated at the type's bounds, NaN to 0, as
/// Rust's `as` and XLA convert).
pub fn convertible(from: Num, to: Num) -> bool {
    use IntType as I;
    match (from, to) {
        (Num::Int(_), Num::Int(_)) | (Num::Float(_), Num::Float(_)) => true,
        (Num::Int(t), Num::Float(_)) => t != I::U64,
        (Num::Float(_), Num::Int(t)) => t.signed(),
    }
}

/// A binary integer operation (wrapping; the larger or smaller by the type's order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntOp {
    Add,
    Subtract,
    Multiply,
    And,
    Or,
    Xor,
    Maximum,
    Minimum,
}

/// A binary float operation (exactly rounded).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatOp {
    Add,
    Subtract,
    Multiply,
    Divide,
}

/// A unary float operation: the sign flipped or cleared (bits, NaN payloads kept), or the
/// exactly rounded square root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatUnary {
    Negate,
    Abs,
    Sqrt,
}

use super::Cmp;

/// One index of an element access: the integer at byte `at` of the arena, of type `ty`, into
/// a dimension of `extent` elements whose consecutive indices lie `stride` elements apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Index {
    pub at: u32,
    pub ty: IntType,
    pub extent: u64,
    pub stride: u64,
}

/// How an element access treats an index outside its dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutOfRange {
    /// Clamped into `0..extent` (`dynamic_slice`, `dynamic_update_slice`).
    Clamp,
    /// The access is skipped (`scatter`).
    Skip,
}

/// One element of the array at byte `array` of the arena: the sum over `indices` of each
/// index times its stride, in elements of `size` bytes (1, 4 or 8).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Element {
    pub array: u32,
    pub indices: Vec<Index>,
    pub size: u32,
    pub out_of_range: OutOfRange,
}

/// One operation of a scalar loop; operands and results are byte offsets in the arena.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScalarOp {
    /// `(op, type, a, b, dst)`; on [`IntType::Pred`] only the bitwise operations.
    Int(IntOp, IntType, u32, u32, u32),
    /// `(op, type, a, b, dst)`.
    Float(FloatOp, FloatType, u32, u32, u32),
    /// `(op, type, a, dst)`.
    FloatUnary(FloatUnary, FloatType, u32, u32),
    /// `(from, to, a, dst)`: the value converted as [`convertible`] says.
    Convert(Num, Num, u32, u32),
    /// `(cmp, type, a, b, dst)`: writes one byte, 1 where the comparison holds, else 0.
    CompareInt(Cmp, IntType, u32, u32, u32),
    CompareFloat(Cmp, FloatType, u32, u32, u32),
    /// `dst` = the `size` bytes (1, 4 or 8) at `on_true` where the byte at `pred` is not
    /// zero, else those at `on_false`.
    Select {
        pred: u32,
        on_true: u32,
        on_false: u32,
        dst: u32,
        size: u32,
    },
    /// `bytes` bytes from `src` to `dst` (the two do not overlap).
    Copy {
        src: u32,
        dst: u32,
        bytes: u32,
    },
    /// `dst` = the element's `size` bytes.
    Load(Element, u32),
    /// The element = the `size` bytes at `src`.
    Store(Element, u32),
}

/// A loop over one arena of `arena` bytes: while the byte at `cond_result` (written by
/// `cond`) is not zero, run `body`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalarLoop {
    pub arena: usize,
    pub cond: Vec<ScalarOp>,
    pub cond_result: u32,
    pub body: Vec<ScalarOp>,
}

/// The largest arena generated code addresses (offsets are 32-bit displacements).
const MAX_ARENA: usize = 1 << 30;

impl ScalarLoop {
    /// Whether every byte an operation may touch, for any index value, lies in the arena,
    /// and every operation is one the generator has (sizes 1, 4 or 8 where it names one,
    /// arithmetic only on numbers).
    fn in_bounds(&self) -> bool {
        let arena = self.arena as u64;
        let within = |at: u32, bytes: u64| u64::from(at) + bytes <= arena;
        let scalar_size = |s: u32| matches!(s, 1 | 4 | 8);
        let element = |e: &Element, value: u32| {
            let last = e.indices.iter().try_fold(0u64, |sum, ix| {
                let step = ix.extent.checked_sub(1)?.checked_mul(ix.stride)?;
                (within(ix.at, u64::from(ix.ty.size())) && ix.ty != IntType::Pred).then_some(())?;
                sum.checked_add(step)
            });
            let size = u64::from(e.size);
            scalar_size(e.size)
                && within(value, size)
                && last
                    .and_then(|l| l.checked_add(1)?.checked_mul(size))
                    .is_some_and(|bytes| within(e.array, bytes))
        };
        let op_ok = |op: &ScalarOp| match *op {
            ScalarOp::Int(kind, ty, a, b, d) => {
                let n = u64::from(ty.size());
                let bitwise = matches!(kind, IntOp::And | IntOp::Or | IntOp::Xor);
                // `Maximum`/`Minimum` on predicates would be `or`/`and`: callers say so.
                (ty != IntType::Pred || bitwise) && within(a, n) && within(b, n) && within(d, n)
            }
            ScalarOp::Float(_, ty, a, b, d) => {
                let n = u64::from(ty.size());
                within(a, n) && within(b, n) && within(d, n)
            }
            ScalarOp::FloatUnary(_, ty, a, d) => {
                let n = u64::from(ty.size());
                within(a, n) && within(d, n)
            }
            ScalarOp::Convert(from, to, a, d) => {
                convertible(from, to)
                    && within(a, u64::from(from.size()))
                    && within(d, u64::from(to.size()))
            }
            ScalarOp::CompareInt(_, ty, a, b, d) => {
                let n = u64::from(ty.size());
                ty != IntType::Pred && within(a, n) && within(b, n) && within(d, 1)
            }
            ScalarOp::CompareFloat(_, ty, a, b, d) => {
                let n = u64::from(ty.size());
                within(a, n) && within(b, n) && within(d, 1)
            }
            ScalarOp::Select {
                pred,
                on_true,
                on_false,
                dst,
                size,
            } => {
                let n = u64::from(size);
                scalar_size(size)
                    && within(pred, 1)
                    && within(on_true, n)
                    && within(on_false, n)
                    && within(dst, n)
            }
            ScalarOp::Copy { src, dst, bytes } => {
                within(src, u64::from(bytes)) && within(dst, u64::from(bytes))
            }
            ScalarOp::Load(ref e, v) | ScalarOp::Store(ref e, v) => element(e, v),
        };
        self.arena <= MAX_ARENA
            && within(self.cond_result, 1)
            && self.cond.iter().chain(&self.body).all(op_ok)
    }
}

/// Generated code for one [`ScalarLoop`].
pub struct ScalarCode {
    #[cfg(target_arch = "x86_64")]
    code: super::x86::Code,
    arena: usize,
}

impl std::fmt::Debug for ScalarCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScalarCode")
            .field("arena", &self.arena)
            .finish_non_exhaustive()
    }
}

/// Whether this machine runs generated scalar loops (any x86-64).
pub fn scalar_available() -> bool {
    cfg!(target_arch = "x86_64")
}

impl ScalarCode {
    /// Compiles `program`; `None` on a machine without the generator, or when an operation
    /// could touch a byte outside the arena or is not one the generator has.
    pub fn compile(program: &ScalarLoop) -> Option<ScalarCode> {
        if !scalar_available() || !program.in_bounds() {
            return None;
        }
        #[cfg(target_arch = "x86_64")]
        {
            Some(ScalarCode {
                code: super::x86_scalar::compile(program)?,
                arena: program.arena,
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
    }

    /// The arena's size in bytes.
    pub fn arena(&self) -> usize {
        self.arena
    }

    /// Runs the loop on `arena` (its values before the first iteration in, after the last
    /// out); `None`, with nothing run, when `arena` is shorter than the program's.
    pub fn run(&self, arena: &mut [u64]) -> Option<()> {
        if std::mem::size_of_val(arena) < self.arena {
            return None;
        }
        #[cfg(target_arch = "x86_64")]
        {
            // SAFETY: `compile` checked that every byte the code reads or writes, for any
            // value of the arena's indices, lies in the program's arena, and `arena` is at
            // least that long and borrowed mutably for the call.
            unsafe { self.code.call_scalar(arena.as_mut_ptr().cast()) };
            Some(())
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            None
        }
    }
}
