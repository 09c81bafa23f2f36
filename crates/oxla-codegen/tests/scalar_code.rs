//! Generated scalar loops compute what the same operations compute in Rust: wrapping
//! integer and IEEE float arithmetic over many iterations, IEEE comparisons with NaN and
//! signed zeros, element reads and writes at clamped and skipped indices; and programs
//! that could touch memory outside their arena are refused.

use oxla_codegen::{
    scalar_available, Cmp, Element, FloatOp, FloatType, Index, IntOp, IntType, OutOfRange,
    ScalarCode, ScalarLoop, ScalarOp,
};

/// An arena of `words` 8-byte words, written and read by byte offset.
struct Arena(Vec<u8>);

impl Arena {
    fn new(words: usize) -> Arena {
        Arena(vec![0; 8 * words])
    }
    fn put<const N: usize>(&mut self, at: usize, v: [u8; N]) {
        self.0[at..at + N].copy_from_slice(&v);
    }
    fn get<const N: usize>(&self, at: usize) -> [u8; N] {
        self.0[at..at + N].try_into().expect("in the arena")
    }
    /// Runs `code` on the arena (as the little-endian words it takes).
    fn run(&mut self, code: &ScalarCode) {
        let mut words: Vec<u64> = (self.0.chunks_exact(8))
            .map(|w| u64::from_le_bytes(w.try_into().expect("a word")))
            .collect();
        code.run(&mut words).expect("runs");
        self.0 = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    }
}

/// A loop that runs `body` once: byte 0 is the flag it tests and the body clears.
fn once(arena: usize, body: Vec<ScalarOp>) -> ScalarLoop {
    let mut body = body;
    // Byte 1 is always zero.
    body.push(ScalarOp::Copy {
        src: 1,
        dst: 0,
        bytes: 1,
    });
    ScalarLoop {
        arena,
        cond: Vec::new(),
        cond_result: 0,
        body,
    }
}

#[test]
fn counted_loops_compute_rusts_wrapping_and_ieee_results() {
    if !scalar_available() {
        return;
    }
    // i: s64 at 0, n at 8, one at 16, acc: u32 at 24, k at 28, f: f64 at 32, x at 40,
    // the condition at 48.
    let program = ScalarLoop {
        arena: 56,
        cond: vec![ScalarOp::CompareInt(Cmp::Lt, IntType::S64, 0, 8, 48)],
        cond_result: 48,
        body: vec![
            ScalarOp::Int(IntOp::Multiply, IntType::U32, 24, 28, 24),
            ScalarOp::Int(IntOp::Add, IntType::U32, 24, 28, 24),
            ScalarOp::Int(IntOp::Xor, IntType::U32, 24, 0, 24),
            ScalarOp::Float(FloatOp::Multiply, FloatType::F64, 32, 40, 32),
            ScalarOp::Float(FloatOp::Subtract, FloatType::F64, 32, 40, 32),
            ScalarOp::Float(FloatOp::Divide, FloatType::F64, 32, 40, 32),
            ScalarOp::Int(IntOp::Add, IntType::S64, 0, 16, 0),
        ],
    };
    let code = ScalarCode::compile(&program).expect("compiles");
    for (n, k, x) in [
        (1000i64, 2_654_435_761u32, 1.000_001f64),
        (0, 3, 2.0),
        (-5, 7, 0.1),
    ] {
        let mut arena = Arena::new(7);
        arena.put(8, n.to_le_bytes());
        arena.put(16, 1i64.to_le_bytes());
        arena.put(24, 17u32.to_le_bytes());
        arena.put(28, k.to_le_bytes());
        arena.put(32, 0.5f64.to_le_bytes());
        arena.put(40, x.to_le_bytes());
        arena.run(&code);
        let (mut acc, mut f, mut i) = (17u32, 0.5f64, 0i64);
        while i < n {
            acc = acc.wrapping_mul(k).wrapping_add(k) ^ (i as u32);
            f = (f * x - x) / x;
            i += 1;
        }
        assert_eq!(i64::from_le_bytes(arena.get(0)), i);
        assert_eq!(u32::from_le_bytes(arena.get(24)), acc);
        assert_eq!(f64::from_le_bytes(arena.get(32)).to_bits(), f.to_bits());
    }
}

#[test]
fn float_compares_follow_ieee() {
    if !scalar_available() {
        return;
    }
    let cmps = [Cmp::Eq, Cmp::Ne, Cmp::Lt, Cmp::Le, Cmp::Gt, Cmp::Ge];
    // a: f32 at 8, b at 12, results at 16..22.
    let body = cmps
        .iter()
        .enumerate()
        .map(|(k, &c)| ScalarOp::CompareFloat(c, FloatType::F32, 8, 12, 16 + k as u32))
        .collect();
    let code = ScalarCode::compile(&once(24, body)).expect("compiles");
    let values = [
        f32::NAN,
        1.0,
        2.0,
        -0.0,
        0.0,
        f32::INFINITY,
        f32::MIN_POSITIVE / 4.0,
    ];
    for a in values {
        for b in values {
            let mut arena = Arena::new(3);
            arena.put(0, [1u8]);
            arena.put(8, a.to_le_bytes());
            arena.put(12, b.to_le_bytes());
            arena.run(&code);
            let want = [a == b, a != b, a < b, a <= b, a > b, a >= b];
            let got: [u8; 6] = arena.get(16);
            assert_eq!(got, want.map(u8::from), "{a} vs {b}");
        }
    }
}

#[test]
fn element_accesses_clamp_or_skip_out_of_range_indices() {
    if !scalar_available() {
        return;
    }
    // A 3x4 i32 array at 32; row index (s32) at 8, column index (u64) at 16; the load's
    // result at 24, the stored value at 28.
    let indices = |out_of_range| Element {
        array: 32,
        indices: vec![
            Index {
                at: 8,
                ty: IntType::S32,
                extent: 3,
                stride: 4,
            },
            Index {
                at: 16,
                ty: IntType::U64,
                extent: 4,
                stride: 1,
            },
        ],
        size: 4,
        out_of_range,
    };
    let body = vec![
        ScalarOp::Load(indices(OutOfRange::Clamp), 24),
        ScalarOp::Store(indices(OutOfRange::Skip), 28),
    ];
    let code = ScalarCode::compile(&once(80, body)).expect("compiles");
    let rows = [-7i32, 0, 1, 2, 3, i32::MIN, i32::MAX];
    let cols = [0u64, 3, 4, u64::MAX, 1 << 63];
    for row in rows {
        for col in cols {
            let mut arena = Arena::new(10);
            arena.put(0, [1u8]);
            arena.put(8, row.to_le_bytes());
            arena.put(16, col.to_le_bytes());
            arena.put(28, (-1i32).to_le_bytes());
            for e in 0..12 {
                arena.put(32 + 4 * e, (e as i32 * 10).to_le_bytes());
            }
            arena.run(&code);
            let (r, c) = (row.clamp(0, 2) as usize, col.min(3) as usize);
            assert_eq!(i32::from_le_bytes(arena.get(24)), (4 * r + c) as i32 * 10);
            let inside = (0..3).contains(&row) && col < 4;
            for e in 0..12 {
                let written = inside && e == 4 * row as usize + col as usize;
                let want = if written { -1 } else { e as i32 * 10 };
                assert_eq!(
                    i32::from_le_bytes(arena.get(32 + 4 * e)),
                    want,
                    "{row} {col}"
                );
            }
        }
    }
}

#[test]
fn programs_that_could_leave_their_arena_are_refused() {
    let element = |extent: u64| Element {
        array: 16,
        indices: vec![Index {
            at: 8,
            ty: IntType::S32,
            extent,
            stride: 1,
        }],
        size: 8,
        out_of_range: OutOfRange::Clamp,
    };
    let compiles = |op: ScalarOp| ScalarCode::compile(&once(64, vec![op])).is_some();
    // Six 8-byte elements from 16 end at 64; seven would not.
    assert_eq!(compiles(ScalarOp::Load(element(6), 8)), scalar_available());
    assert!(!compiles(ScalarOp::Load(element(7), 8)));
    assert!(!compiles(ScalarOp::Load(element(0), 8)));
    assert!(!compiles(ScalarOp::Int(
        IntOp::Add,
        IntType::S64,
        8,
        16,
        60
    )));
    assert!(!compiles(ScalarOp::Int(
        IntOp::Add,
        IntType::Pred,
        8,
        9,
        10
    )));
    assert!(!compiles(ScalarOp::Copy {
        src: 0,
        dst: 32,
        bytes: 33
    }));
    let select = |size| ScalarOp::Select {
        pred: 0,
        on_true: 8,
        on_false: 16,
        dst: 24,
        size,
    };
    assert_eq!(compiles(select(8)), scalar_available());
    assert!(!compiles(select(2)));
    if let Some(code) = ScalarCode::compile(&once(64, Vec::new())) {
        assert!(code.run(&mut [0u64; 7]).is_none());
        assert!(code.run(&mut [0u64; 8]).is_some());
    }
}

#[test]
fn values_computed_before_a_store_are_read_correctly_after_it() {
    if !scalar_available() {
        return;
    }
    // x: s32 at 8, y at 12, a 4-element array at 16, its index at 32, x + y at 40, and
    // (x + y) + x at 36; the store writes y at the index, or nothing when out of range.
    let element = Element {
        array: 16,
        indices: vec![Index {
            at: 32,
            ty: IntType::S32,
            extent: 4,
            stride: 1,
        }],
        size: 4,
        out_of_range: OutOfRange::Skip,
    };
    let body = vec![
        ScalarOp::Int(IntOp::Add, IntType::S32, 8, 12, 40),
        ScalarOp::Store(element, 12),
        ScalarOp::Int(IntOp::Add, IntType::S32, 40, 8, 36),
    ];
    let code = ScalarCode::compile(&once(48, body)).expect("compiles");
    for index in [2i32, 9] {
        let mut arena = Arena::new(6);
        arena.put(0, [1u8]);
        arena.put(8, 5i32.to_le_bytes());
        arena.put(12, 1000i32.to_le_bytes());
        arena.put(32, index.to_le_bytes());
        arena.run(&code);
        assert_eq!(i32::from_le_bytes(arena.get(36)), 1010, "index {index}");
        let stored = i32::from_le_bytes(arena.get(16 + 4 * 2));
        assert_eq!(stored, if index == 2 { 1000 } else { 0 });
    }
}

#[test]
fn floats_convert_to_integers_as_rust_casts_do() {
    if !scalar_available() {
        return;
    }
    use oxla_codegen::Num;
    // f32 at 8, f64 at 16; results: s32 from f32 at 24, s64 from f32 at 32, s32 from f64
    // at 40, s64 from f64 at 48.
    let (f32_, f64_) = (Num::Float(FloatType::F32), Num::Float(FloatType::F64));
    let (s32, s64) = (Num::Int(IntType::S32), Num::Int(IntType::S64));
    let body = vec![
        ScalarOp::Convert(f32_, s32, 8, 24),
        ScalarOp::Convert(f32_, s64, 8, 32),
        ScalarOp::Convert(f64_, s32, 16, 40),
        ScalarOp::Convert(f64_, s64, 16, 48),
    ];
    let code = ScalarCode::compile(&once(56, body)).expect("compiles");
    let values = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.0,
        -0.0,
        2.5,
        -2.5,
        2_147_483_647.0,
        2_147_483_647.9,
        2_147_483_648.0,
        -2_147_483_648.0,
        -2_147_483_648.9,
        -2_147_483_649.0,
        3e9,
        -3e9,
        9.2e18,
        9_223_372_036_854_775_807.0,
        -9_223_372_036_854_775_808.0,
        1e19,
        -1e19,
        1e-40,
    ];
    for x in values {
        let mut arena = Arena::new(7);
        arena.put(0, [1u8]);
        arena.put(8, (x as f32).to_le_bytes());
        arena.put(16, x.to_le_bytes());
        arena.run(&code);
        assert_eq!(i32::from_le_bytes(arena.get(24)), x as f32 as i32, "{x}");
        assert_eq!(i64::from_le_bytes(arena.get(32)), x as f32 as i64, "{x}");
        assert_eq!(i32::from_le_bytes(arena.get(40)), x as i32, "{x}");
        assert_eq!(i64::from_le_bytes(arena.get(48)), x as i64, "{x}");
    }
    // No unsigned targets: their saturation is another sequence.
    let to_unsigned = ScalarOp::Convert(f32_, Num::Int(IntType::U32), 8, 24);
    assert!(ScalarCode::compile(&once(56, vec![to_unsigned])).is_none());
}
