//! Elementwise fusion and row tiling are invisible in results: random elementwise programs,
//! row-local chains (layer norm, softmax) and the golden JAX programs under
//! `tests/filetests/roundtrip` give bit-identical outputs with fusion on and off (NaN payloads aside: which NaN a float op returns is unspecified, as in XLA) (`EvalOptions::fuse`), on inputs full of NaN, infinities, signed zeros and
//! denormals; and the random programs do form fused groups. Products summed into the value
//! they are added to (`x + dot(a, b)` as one product) agree with the two ops up to rounding.

mod common;

use common::{
    args_for, assert_same_outcome, golden_programs, literal, main_args, run, same_bits, Rng,
};
use oxla_frontend::parse_text;
use oxla_ir::eval::{
    compiled_loops, counted_loop_work, fused_groups, generated_groups, generated_loops,
    loop_register_runs, row_group_merged_sums, row_group_programs, row_groups, run_function_cached,
    run_function_with_options, tile_code, EvalOptions, PlanCache, SingleDevice,
};
use oxla_ir::{ElementType, Literal, Module, OpKind, TensorType, Type};

/// Runs `main` fused and unfused and requires the same bits (or both failing).
fn assert_fusion_invisible(module: &Module, args: &[Literal], what: &str) {
    assert_same_outcome(
        &run(module, args, false),
        &run(module, args, true),
        &format!("{what}: unfused and fused"),
    );
}

fn shape_text(shape: &[i64]) -> String {
    shape.iter().map(|d| format!("{d}x")).collect()
}

/// A random elementwise program over `shape`: unary and binary f32 ops, compares, selects,
/// clamps, boolean ops, converts, broadcasts of a row, a column (one value per row) and a
/// scalar, and a `reverse` (not fusible) in the middle; several values are returned, some
/// of which later ops also read.
fn random_program(rng: &mut Rng, shape: &[i64]) -> String {
    let t = format!("tensor<{}f32>", shape_text(shape));
    let m = format!("tensor<{}i1>", shape_text(shape));
    let rank = shape.len();
    let row = format!("tensor<{}xf32>", shape[rank - 1]);
    let col = format!("tensor<{}xf32>", shape[0]);
    let mut body = String::new();
    let mut floats: Vec<String> = vec!["%a".into(), "%b".into()];
    let mut masks: Vec<String> = vec!["%p".into()];
    let mut n = 0;
    let fresh = |n: &mut usize| {
        *n += 1;
        format!("%v{n}")
    };
    let all_dims = (0..rank)
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ");
    let bcast_row = fresh(&mut n);
    body += &format!(
        "    {bcast_row} = stablehlo.broadcast_in_dim %r, dims = [{}] : ({row}) -> {t}\n",
        rank - 1
    );
    floats.push(bcast_row);
    // A per-row value: one value along each tile that stays inside a row.
    let bcast_col = fresh(&mut n);
    body +=
        &format!("    {bcast_col} = stablehlo.broadcast_in_dim %c, dims = [0] : ({col}) -> {t}\n");
    floats.push(bcast_col);
    let bcast_scalar = fresh(&mut n);
    body += &format!(
        "    {bcast_scalar} = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> {t}\n"
    );
    floats.push(bcast_scalar);
    let bcast_same = fresh(&mut n);
    body += &format!(
        "    {bcast_same} = stablehlo.broadcast_in_dim %a, dims = [{all_dims}] : ({t}) -> {t}\n"
    );
    floats.push(bcast_same);
    let unary = [
        "abs",
        "negate",
        "exponential",
        "exponential_minus_one",
        "log",
        "log_plus_one",
        "logistic",
        "tanh",
        "sine",
        "cosine",
        "sqrt",
        "rsqrt",
        "floor",
        "ceil",
        "round_nearest_even",
        "round_nearest_afz",
        "sign",
    ];
    let binary = [
        "add", "subtract", "multiply", "divide", "maximum", "minimum", "power",
    ];
    let dirs = ["EQ", "NE", "LT", "LE", "GT", "GE"];
    let steps = 4 + rng.below(14);
    for step in 0..steps {
        let v = fresh(&mut n);
        let pick = |rng: &mut Rng, from: &[String]| from[rng.below(from.len())].clone();
        if step == steps / 2 {
            let x = pick(rng, &floats);
            body += &format!("    {v} = stablehlo.reverse {x}, dims = [0] : {t}\n");
            floats.push(v);
            continue;
        }
        match rng.below(10) {
            0..=2 => {
                let op = unary[rng.below(unary.len())];
                let x = pick(rng, &floats);
                body += &format!("    {v} = stablehlo.{op} {x} : {t}\n");
                floats.push(v);
            }
            3..=5 => {
                let op = binary[rng.below(binary.len())];
                let (x, y) = (pick(rng, &floats), pick(rng, &floats));
                body += &format!("    {v} = stablehlo.{op} {x}, {y} : {t}\n");
                floats.push(v);
            }
            6 => {
                let dir = dirs[rng.below(dirs.len())];
                let kind = if rng.below(4) == 0 {
                    "TOTALORDER"
                } else {
                    "FLOAT"
                };
                let (x, y) = (pick(rng, &floats), pick(rng, &floats));
                body += &format!(
                    "    {v} = stablehlo.compare {dir}, {x}, {y}, {kind} : ({t}, {t}) -> {m}\n"
                );
                masks.push(v);
            }
            7 => {
                let p = pick(rng, &masks);
                let (x, y) = (pick(rng, &floats), pick(rng, &floats));
                body += &format!("    {v} = stablehlo.select {p}, {x}, {y} : {m}, {t}\n");
                floats.push(v);
            }
            8 => {
                let (lo, x, hi) = (pick(rng, &floats), pick(rng, &floats), pick(rng, &floats));
                body += &format!("    {v} = stablehlo.clamp {lo}, {x}, {hi} : {t}\n");
                floats.push(v);
            }
            _ => match rng.below(4) {
                0 => {
                    let p = pick(rng, &masks);
                    body += &format!("    {v} = stablehlo.not {p} : {m}\n");
                    masks.push(v);
                }
                1 => {
                    let (p, q) = (pick(rng, &masks), pick(rng, &masks));
                    let op = if rng.below(2) == 0 { "and" } else { "or" };
                    body += &format!("    {v} = stablehlo.{op} {p}, {q} : {m}\n");
                    masks.push(v);
                }
                _ => {
                    let p = pick(rng, &masks);
                    body += &format!("    {v} = stablehlo.convert {p} : ({m}) -> {t}\n");
                    floats.push(v);
                }
            },
        }
    }
    // Return the last float and mask, and one earlier float (also read by later ops).
    let results = [
        floats[floats.len() - 1].clone(),
        floats[floats.len() / 2].clone(),
        masks[masks.len() - 1].clone(),
    ];
    format!(
        "func.func @main(%a: {t}, %b: {t}, %p: {m}, %r: {row}, %c: {col}, %s: tensor<f32>) -> ({t}, {t}, {m}) {{\n{body}    return {}, {}, {} : {t}, {t}, {m}\n}}\n",
        results[0], results[1], results[2]
    )
}

#[test]
fn random_elementwise_programs_fuse_without_changing_bits() {
    let shapes: [&[i64]; 7] = [
        &[7, 5],
        &[1, 9],
        &[3, 1],
        &[2, 3, 4],
        &[40, 1037],
        &[8],
        &[3, 2048],
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut fused_programs = 0;
    for case in 0..240 {
        let shape = shapes[case % shapes.len()];
        let text = random_program(&mut rng, shape);
        let module = parse_text(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        if !fused_groups(&module, "main").is_empty() {
            fused_programs += 1;
        }
        let args = main_args(&mut rng, &module);
        assert_fusion_invisible(&module, &args, &format!("case {case}:\n{text}"));
    }
    // Every program has a broadcast feeding later ops; most must fuse something.
    assert!(
        fused_programs > 150,
        "only {fused_programs} of 240 programs formed a fused group"
    );
}

/// An integer argument value: often an edge (0, ±1, the extremes, shift amounts around
/// the bit width), else small or any bit pattern.
fn int_bits(rng: &mut Rng) -> u32 {
    match rng.below(12) {
        0 => 0,
        1 => 1,
        2 => u32::MAX,
        3 => 1 << 31,
        4 => i32::MAX as u32,
        5 => [31, 32, 33, 64][rng.below(4)],
        6 | 7 => rng.next() as u32,
        _ => (rng.below(200) as i32 - 100) as u32,
    }
}

/// Arguments for `main` of `module`: f32 and i1 as `main_args` makes them, s32 and u32 from
/// [`int_bits`].
fn int_program_args(rng: &mut Rng, module: &Module) -> Vec<Literal> {
    let func = module.function("main").expect("main");
    func.ty
        .inputs
        .iter()
        .map(|ty| match ty {
            Type::Tensor(t) if matches!(t.element_type, ElementType::S32 | ElementType::U32) => {
                let n: usize = t.shape.iter().map(|&d| d as usize).product();
                let data = (0..n).flat_map(|_| int_bits(rng).to_le_bytes()).collect();
                Literal::new(t.clone(), data).expect("sized literal")
            }
            Type::Tensor(t) => literal(rng, t),
            other => panic!("unexpected argument type {other}"),
        })
        .collect()
}

/// A random elementwise program mixing s32, u32, f32 and i1 values over `shape`: integer
/// arithmetic (shifts by amounts past the bit width, division and remainder by zero and of
/// `MIN` by -1), integer unary ops and compares, selects, converts among the four types,
/// `bitcast_convert`s between u32 and f32 (from f32 arguments only: a NaN's payload, which
/// fusion may change, would show in its bits), mask compares and xors, and broadcasts of
/// integer scalars and rows, with a `reverse` (not fusible) in the middle.
fn random_integer_program(rng: &mut Rng, shape: &[i64]) -> String {
    let dims = shape_text(shape);
    let ty = |et: &str| format!("tensor<{dims}{et}>");
    let rank = shape.len();
    let last = shape[rank - 1];
    let mut body = String::new();
    // Values by type: s32, u32, f32, i1.
    let mut vals: [Vec<String>; 4] = [
        vec!["%a".into(), "%b".into()],
        vec!["%u".into()],
        vec!["%f".into()],
        vec!["%p".into()],
    ];
    let names = ["i32", "ui32", "f32", "i1"];
    let mut n = 0;
    let mut fresh = || {
        n += 1;
        format!("%v{n}")
    };
    let v = fresh();
    body += &format!(
        "    {v} = stablehlo.broadcast_in_dim %k, dims = [] : (tensor<ui32>) -> {}\n",
        ty("ui32")
    );
    vals[1].push(v);
    let v = fresh();
    body += &format!(
        "    {v} = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<i32>) -> {}\n",
        ty("i32")
    );
    vals[0].push(v);
    let v = fresh();
    body += &format!(
        "    {v} = stablehlo.broadcast_in_dim %r, dims = [{}] : (tensor<{last}xi32>) -> {}\n",
        rank - 1,
        ty("i32")
    );
    vals[0].push(v);
    let v = fresh();
    body += &format!(
        "    {v} = stablehlo.bitcast_convert %f : ({}) -> {}\n",
        ty("f32"),
        ty("ui32")
    );
    vals[1].push(v);
    // Splat constants of every type.
    for (k, (et, value)) in [
        ("i32", format!("{}", int_bits(rng) as i32)),
        ("ui32", format!("{}", int_bits(rng))),
        ("f32", "-2.5".to_string()),
        ("i1", "true".to_string()),
    ]
    .into_iter()
    .enumerate()
    {
        let v = fresh();
        body += &format!("    {v} = stablehlo.constant dense<{value}> : {}\n", ty(et));
        vals[k].push(v);
    }
    let binary = [
        "add",
        "subtract",
        "multiply",
        "divide",
        "remainder",
        "maximum",
        "minimum",
        "and",
        "or",
        "xor",
        "shift_left",
        "shift_right_logical",
        "shift_right_arithmetic",
    ];
    let unary = [
        "abs",
        "negate",
        "not",
        "sign",
        "popcnt",
        "count_leading_zeros",
    ];
    let dirs = ["EQ", "NE", "LT", "LE", "GT", "GE"];
    let steps = 6 + rng.below(16);
    for step in 0..steps {
        let v = fresh();
        let pick = |rng: &mut Rng, from: &Vec<String>| from[rng.below(from.len())].clone();
        // An integer type: s32 or u32.
        let it = rng.below(2);
        if step == steps / 2 {
            let x = pick(rng, &vals[it]);
            let t = ty(names[it]);
            body += &format!("    {v} = stablehlo.reverse {x}, dims = [0] : {t}\n");
            vals[it].push(v);
            continue;
        }
        match rng.below(12) {
            0..=3 => {
                let op = binary[rng.below(binary.len())];
                let (x, y) = (pick(rng, &vals[it]), pick(rng, &vals[it]));
                body += &format!("    {v} = stablehlo.{op} {x}, {y} : {}\n", ty(names[it]));
                vals[it].push(v);
            }
            4 => {
                let op = unary[rng.below(unary.len())];
                let x = pick(rng, &vals[it]);
                body += &format!("    {v} = stablehlo.{op} {x} : {}\n", ty(names[it]));
                vals[it].push(v);
            }
            5 => {
                let dir = dirs[rng.below(dirs.len())];
                // Integers, or masks.
                let ct = if rng.below(4) == 0 { 3 } else { it };
                let (x, y) = (pick(rng, &vals[ct]), pick(rng, &vals[ct]));
                let kind = match ct {
                    0 => "SIGNED",
                    _ => "UNSIGNED",
                };
                let t = ty(names[ct]);
                body += &format!(
                    "    {v} = stablehlo.compare {dir}, {x}, {y}, {kind} : ({t}, {t}) -> {}\n",
                    ty("i1")
                );
                vals[3].push(v);
            }
            6 => {
                let st = rng.below(4);
                let p = pick(rng, &vals[3]);
                let (x, y) = (pick(rng, &vals[st]), pick(rng, &vals[st]));
                let t = ty(names[st]);
                body += &format!(
                    "    {v} = stablehlo.select {p}, {x}, {y} : {}, {t}\n",
                    ty("i1")
                );
                vals[st].push(v);
            }
            7 | 8 => {
                let (from, to) = (rng.below(4), rng.below(4));
                if from == 3 && to == 2 && rng.below(2) == 0 {
                    // A mask xor now and then instead.
                    let (x, y) = (pick(rng, &vals[3]), pick(rng, &vals[3]));
                    body += &format!("    {v} = stablehlo.xor {x}, {y} : {}\n", ty("i1"));
                    vals[3].push(v);
                    continue;
                }
                let x = pick(rng, &vals[from]);
                body += &format!(
                    "    {v} = stablehlo.convert {x} : ({}) -> {}\n",
                    ty(names[from]),
                    ty(names[to])
                );
                vals[to].push(v);
            }
            9 => {
                // The mantissa trick of `jax.random.uniform`: bits to a float in [1, 2).
                let x = pick(rng, &vals[1]);
                let (s, o, f) = (fresh(), fresh(), fresh());
                let u = ty("ui32");
                body += &format!(
                    "    {s} = stablehlo.shift_right_logical {x}, {} : {u}\n",
                    vals[1][1]
                );
                body += &format!("    {o} = stablehlo.or {s}, {} : {u}\n", vals[1][1]);
                body += &format!(
                    "    {f} = stablehlo.bitcast_convert {o} : ({u}) -> {}\n",
                    ty("f32")
                );
                body += &format!(
                    "    {v} = stablehlo.subtract {f}, {} : {}\n",
                    pick(rng, &vals[2]),
                    ty("f32")
                );
                vals[2].push(v);
            }
            _ => {
                let op = ["add", "multiply", "maximum", "divide"][rng.below(4)];
                let (x, y) = (pick(rng, &vals[2]), pick(rng, &vals[2]));
                body += &format!("    {v} = stablehlo.{op} {x}, {y} : {}\n", ty("f32"));
                vals[2].push(v);
            }
        }
    }
    // Return the last value of each type and an earlier s32 (also read by later ops).
    let results = [
        vals[0][vals[0].len() - 1].clone(),
        vals[1][vals[1].len() - 1].clone(),
        vals[2][vals[2].len() - 1].clone(),
        vals[3][vals[3].len() - 1].clone(),
        vals[0][vals[0].len() / 2].clone(),
    ];
    let (s, u, f, m) = (ty("i32"), ty("ui32"), ty("f32"), ty("i1"));
    format!(
        "func.func @main(%a: {s}, %b: {s}, %u: {u}, %f: {f}, %p: {m}, %k: tensor<ui32>, %z: tensor<i32>, %r: tensor<{last}xi32>) -> ({s}, {u}, {f}, {m}, {s}) {{\n{body}    return {}, {}, {}, {}, {} : {s}, {u}, {f}, {m}, {s}\n}}\n",
        results[0], results[1], results[2], results[3], results[4]
    )
}

#[test]
fn random_integer_programs_fuse_without_changing_bits() {
    let shapes: [&[i64]; 6] = [&[7, 5], &[1, 9], &[2, 3, 4], &[40, 1037], &[8], &[3, 2048]];
    let mut rng = Rng(0x5851_f42d_4c95_7f2d);
    let (mut fused_programs, mut generated_programs) = (0, 0);
    for case in 0..240 {
        let shape = shapes[case % shapes.len()];
        let text = random_integer_program(&mut rng, shape);
        let module = parse_text(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        if !fused_groups(&module, "main").is_empty() {
            fused_programs += 1;
        }
        if generated_groups(&module, "main").contains(&true) {
            generated_programs += 1;
        }
        let args = int_program_args(&mut rng, &module);
        assert_fusion_invisible(&module, &args, &format!("case {case}:\n{text}"));
    }
    assert!(
        fused_programs > 150,
        "only {fused_programs} of 240 programs formed a fused group"
    );
    // The large shapes run integer members in generated code, unless a division,
    // remainder, population count or leading-zero count keeps them on the tile loops.
    if tile_code::available() {
        assert!(
            generated_programs > 15,
            "only {generated_programs} programs ran generated code"
        );
    }
}

/// JAX's threefry hash and its uniform and integer tails (as `jax.random.uniform` and
/// `randint` lower them) fuse into groups of integer and float members, with the bits of
/// the op-by-op path.
const THREEFRY_ROUND: &str = "func.func @main(%x0: tensor<64x300xui32>, %x1: tensor<64x300xui32>, %k: tensor<ui32>, %rot: tensor<4xui32>) -> (tensor<64x300xf32>, tensor<64x300xi32>) {
  %c32 = stablehlo.constant dense<32> : tensor<ui32>
  %kb = stablehlo.broadcast_in_dim %k, dims = [] : (tensor<ui32>) -> tensor<64x300xui32>
  %s0 = stablehlo.slice %rot [0:1] : (tensor<4xui32>) -> tensor<1xui32>
  %r0 = stablehlo.reshape %s0 : (tensor<1xui32>) -> tensor<ui32>
  %a0 = stablehlo.add %x0, %x1 : tensor<64x300xui32>
  %b0 = stablehlo.broadcast_in_dim %r0, dims = [] : (tensor<ui32>) -> tensor<64x300xui32>
  %l0 = stablehlo.shift_left %x1, %b0 : tensor<64x300xui32>
  %n0 = stablehlo.subtract %c32, %r0 : tensor<ui32>
  %m0 = stablehlo.broadcast_in_dim %n0, dims = [] : (tensor<ui32>) -> tensor<64x300xui32>
  %h0 = stablehlo.shift_right_logical %x1, %m0 : tensor<64x300xui32>
  %o0 = stablehlo.or %l0, %h0 : tensor<64x300xui32>
  %y0 = stablehlo.xor %a0, %o0 : tensor<64x300xui32>
  %z0 = stablehlo.add %y0, %kb : tensor<64x300xui32>
  %w = stablehlo.xor %a0, %z0 : tensor<64x300xui32>
  %c9 = stablehlo.constant dense<9> : tensor<ui32>
  %n9 = stablehlo.broadcast_in_dim %c9, dims = [] : (tensor<ui32>) -> tensor<64x300xui32>
  %sh = stablehlo.shift_right_logical %w, %n9 : tensor<64x300xui32>
  %cone = stablehlo.constant dense<1065353216> : tensor<ui32>
  %one = stablehlo.broadcast_in_dim %cone, dims = [] : (tensor<ui32>) -> tensor<64x300xui32>
  %or = stablehlo.or %sh, %one : tensor<64x300xui32>
  %fl = stablehlo.bitcast_convert %or : (tensor<64x300xui32>) -> tensor<64x300xf32>
  %cf = stablehlo.constant dense<1.0> : tensor<f32>
  %fone = stablehlo.broadcast_in_dim %cf, dims = [] : (tensor<f32>) -> tensor<64x300xf32>
  %u = stablehlo.subtract %fl, %fone : tensor<64x300xf32>
  %c100 = stablehlo.constant dense<100> : tensor<ui32>
  %span = stablehlo.broadcast_in_dim %c100, dims = [] : (tensor<ui32>) -> tensor<64x300xui32>
  %rem = stablehlo.remainder %w, %span : tensor<64x300xui32>
  %int = stablehlo.convert %rem : (tensor<64x300xui32>) -> tensor<64x300xi32>
  return %u, %int : tensor<64x300xf32>, tensor<64x300xi32>
}
";

#[test]
fn threefry_rounds_fuse_integer_and_float_members() {
    let module = parse_text(THREEFRY_ROUND).unwrap();
    let groups = fused_groups(&module, "main");
    assert!(
        groups.iter().any(|&ops| ops >= 15),
        "the hash and its tails did not fuse: {groups:?}"
    );
    let mut rng = Rng(7);
    for _ in 0..4 {
        let args = int_program_args(&mut rng, &module);
        assert_fusion_invisible(&module, &args, "threefry round");
    }
    // Without the remainder (`randint`'s), the hash and the uniform tail run as
    // generated code.
    let uniform = THREEFRY_ROUND
        .replace(
            "  %rem = stablehlo.remainder %w, %span : tensor<64x300xui32>\n",
            "  %rem = stablehlo.xor %w, %span : tensor<64x300xui32>\n",
        )
        .replace("64x300", "128x300");
    let module = parse_text(&uniform).unwrap();
    if tile_code::available() {
        assert!(generated_groups(&module, "main").contains(&true));
    }
    for _ in 0..4 {
        let args = int_program_args(&mut rng, &module);
        assert_fusion_invisible(&module, &args, "threefry round in generated code");
    }
}

/// A chain over `shape` reading more one-value inputs than generated code has registers:
/// scalar arguments and scalar constants broadcast into shifts, adds and float steps (as
/// JAX's unrolled threefry hash reads its rotation amounts and key words).
fn many_scalars_program(shape: &str, scalars: usize) -> String {
    let mut body = String::new();
    let ty = format!("tensor<{shape}xui32>");
    let mut last = "%x".to_string();
    for k in 0..scalars {
        // Scalar arguments are added; constants are shift amounts below the width and odd
        // factors, so every step's value reaches the result.
        let (source, op) = match k % 3 {
            0 => (format!("%s{}", k / 3), "add"),
            1 => (format!("%c{k}"), "shift_left"),
            _ => (format!("%c{k}"), "multiply"),
        };
        let value = if k % 3 == 1 { 1 + k % 29 } else { 2 * k + 1 };
        if k % 3 != 0 {
            body += &format!("    %c{k} = stablehlo.constant dense<{value}> : tensor<ui32>\n");
        }
        body += &format!(
            "    %b{k} = stablehlo.broadcast_in_dim {source}, dims = [] : (tensor<ui32>) -> {ty}\n"
        );
        body += &format!("    %v{k} = stablehlo.{op} {last}, %b{k} : {ty}\n");
        body += &format!("    %w{k} = stablehlo.xor %v{k}, {last} : {ty}\n");
        last = format!("%w{k}");
    }
    let args: String = (0..scalars.div_ceil(3))
        .map(|k| format!(", %s{k}: tensor<ui32>"))
        .collect();
    format!(
        "func.func @main(%x: {ty}{args}) -> ({ty}, tensor<{shape}xf32>) {{\n{body}    %f = stablehlo.convert {last} : ({ty}) -> tensor<{shape}xf32>\n    return {last}, %f : {ty}, tensor<{shape}xf32>\n}}\n"
    )
}

#[test]
fn groups_with_more_one_value_inputs_than_registers_run_generated_code() {
    for scalars in [10, 40, 90] {
        let text = many_scalars_program("64x300", scalars);
        let module = parse_text(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        if tile_code::available() {
            assert_eq!(generated_groups(&module, "main"), vec![true], "{scalars}");
        }
        let mut rng = Rng(scalars as u64);
        for _ in 0..3 {
            let args = int_program_args(&mut rng, &module);
            assert_fusion_invisible(&module, &args, &format!("{scalars} scalars"));
        }
    }
}

/// A chain of `+ - * / max min` where each op reads the previous result (as its first
/// operand, its second, or both) and, for the other operand, an argument, a broadcast row,
/// a per-row value or a scalar: scalar operands, one-value instructions and direct
/// outputs in every order.
fn arithmetic_chain(rng: &mut Rng, shape: &[i64]) -> String {
    let kinds = [
        "add", "subtract", "multiply", "divide", "maximum", "minimum",
    ];
    chain_of(rng, shape, &kinds, &[])
}

/// [`arithmetic_chain`] over binary ops `kinds`, with a unary op of `unary` applied to the
/// running value now and then.
fn chain_of(rng: &mut Rng, shape: &[i64], kinds: &[&str], unary: &[&str]) -> String {
    let t = format!("tensor<{}f32>", shape_text(shape));
    let rank = shape.len();
    let row = format!("tensor<{}xf32>", shape[rank - 1]);
    let col = format!("tensor<{}xf32>", shape[0]);
    let mut body = String::new();
    body += &format!(
        "    %row = stablehlo.broadcast_in_dim %r, dims = [{}] : ({row}) -> {t}\n",
        rank - 1
    );
    body += &format!("    %col = stablehlo.broadcast_in_dim %c, dims = [0] : ({col}) -> {t}\n");
    body +=
        &format!("    %one = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> {t}\n");
    let others = ["%a", "%b", "%row", "%col", "%one"];
    let mut prev = "%a".to_string();
    for k in 0..2 + rng.below(6) {
        if !unary.is_empty() && rng.below(3) == 0 {
            let kind = unary[rng.below(unary.len())];
            body += &format!("    %u{k} = stablehlo.{kind} {prev} : {t}\n");
            prev = format!("%u{k}");
        }
        // With unary ops, now and then a compare feeding a select, or a clamp.
        if !unary.is_empty() && rng.below(4) == 0 {
            let other = others[rng.below(others.len())];
            let m = t.replace("f32>", "i1>");
            let dir = ["EQ", "NE", "LT", "LE", "GT", "GE"][rng.below(6)];
            body += &format!(
                "    %p{k} = stablehlo.compare {dir}, {prev}, {other}, FLOAT : ({t}, {t}) -> {m}\n"
            );
            body += &format!("    %s{k} = stablehlo.select %p{k}, {prev}, {other} : {m}, {t}\n");
            prev = format!("%s{k}");
        } else if !unary.is_empty() && rng.below(6) == 0 {
            let (lo, hi) = (
                others[rng.below(others.len())],
                others[rng.below(others.len())],
            );
            body += &format!("    %c{k} = stablehlo.clamp {lo}, {prev}, {hi} : {t}\n");
            prev = format!("%c{k}");
        }
        let kind = kinds[rng.below(kinds.len())];
        let other = others[rng.below(others.len())];
        let (x, y) = match rng.below(3) {
            0 => (prev.as_str(), other),
            1 => (other, prev.as_str()),
            _ => (prev.as_str(), prev.as_str()),
        };
        body += &format!("    %v{k} = stablehlo.{kind} {x}, {y} : {t}\n");
        prev = format!("%v{k}");
    }
    format!(
        "func.func @main(%a: {t}, %b: {t}, %r: {row}, %c: {col}, %s: tensor<f32>) -> {t} {{\n{body}    return {prev} : {t}\n}}\n"
    )
}

#[test]
fn arithmetic_chains_fuse_without_changing_bits() {
    let shapes: [&[i64]; 4] = [&[7, 5], &[3, 1037], &[40, 1024], &[2, 3, 20]];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for case in 0..300 {
        let shape = shapes[case % shapes.len()];
        let text = arithmetic_chain(&mut rng, shape);
        let module = parse_text(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(
            !fused_groups(&module, "main").is_empty(),
            "case {case} did not fuse:\n{text}"
        );
        let args = main_args(&mut rng, &module);
        assert_fusion_invisible(&module, &args, &format!("case {case}:\n{text}"));
    }
}

#[test]
fn generated_code_gives_the_interpreters_bits() {
    // Rows of 1037 and of 5 (masked tails), rows of 1024, and three dimensions, all of at
    // least the 8192 elements below which kernels keep the tile loops; the operands read
    // whole, as a row, one value per row and one value.
    let shapes: [&[i64]; 5] = [
        &[1700, 5],
        &[9, 1037],
        &[40, 1024],
        &[200, 3, 20],
        &[70, 1000],
    ];
    let kinds = [
        "add", "subtract", "multiply", "divide", "maximum", "minimum",
    ];
    let unary = [
        "negate",
        "abs",
        "sqrt",
        "rsqrt",
        "exponential",
        "exponential_minus_one",
        "log",
        "log_plus_one",
        "tanh",
        "logistic",
        "sine",
        "cosine",
        "floor",
        "ceil",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for case in 0..200 {
        let shape = shapes[case % shapes.len()];
        let text = chain_of(&mut rng, shape, &kinds, &unary);
        let module = parse_text(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        // Over three dimensions `%col` varies along the first alone: neither a row nor one
        // value per row, which generated code does not read.
        let reads_col = text.contains("%col,") || text.contains(", %col");
        if tile_code::available() && (shape.len() == 2 || !reads_col) {
            assert_eq!(
                generated_groups(&module, "main"),
                vec![true],
                "case {case} has no generated code:\n{text}"
            );
        }
        let args = main_args(&mut rng, &module);
        assert_fusion_invisible(&module, &args, &format!("case {case}:\n{text}"));
    }
}

#[test]
fn generated_sine_hands_arguments_beyond_its_reduction_to_the_tile_loops() {
    // sin(x * 3) + cos(x): generated code stops at a chunk holding an argument it does
    // not reduce (beyond 65536 in magnitude, or NaN); the tile loops compute a block from
    // there, and the code goes on. Few such arguments, many, and none.
    let text = "func.func @main(%x: tensor<300x517xf32>) -> tensor<300x517xf32> {
  %c = stablehlo.constant dense<3.0> : tensor<f32>
  %cb = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<300x517xf32>
  %y = stablehlo.multiply %x, %cb : tensor<300x517xf32>
  %s = stablehlo.sine %y : tensor<300x517xf32>
  %k = stablehlo.cosine %x : tensor<300x517xf32>
  %r = stablehlo.add %s, %k : tensor<300x517xf32>
  return %r : tensor<300x517xf32>
}
";
    let module = parse_text(text).expect("parses");
    if tile_code::available() {
        assert_eq!(generated_groups(&module, "main"), vec![true]);
    }
    let mut rng = Rng(5);
    let n = 300 * 517;
    for every in [n + 1, 5000, 700, 37, 1] {
        let values: Vec<f32> = (0..n)
            .map(|i| {
                if i % every == every / 2 {
                    [1e5, -3e4, f32::NAN, f32::INFINITY][i % 4]
                } else {
                    (rng.below(20_001) as f32 - 10_000.0) / 97.0
                }
            })
            .collect();
        let x = Literal::from_f32(&[300, 517], &values).expect("literal");
        assert_fusion_invisible(&module, &[x], &format!("one in {every} beyond"));
    }
}

/// `erf_inv` as JAX sends it to a plugin (CHLO decomposed, with its coefficients folded
/// into splat constants of the full shape), over `SHAPE`.
fn erf_inv_program(shape: &str) -> String {
    let body = ERF_INV_BODY.replace("1048576x", &format!("{shape}x"));
    format!(
        "func.func @main(%arg0: tensor<{shape}xf32>) -> tensor<{shape}xf32> {{\n{body}    return %61 : tensor<{shape}xf32>\n}}\n"
    )
}

const ERF_INV_BODY: &str = "    %0 = stablehlo.constant dense<0x7F800000> : tensor<1048576xf32>
    %1 = stablehlo.constant dense<1.000000e+00> : tensor<1048576xf32>
    %2 = stablehlo.constant dense<2.8329768e+00> : tensor<1048576xf32>
    %3 = stablehlo.constant dense<1.5014094e+00> : tensor<1048576xf32>
    %4 = stablehlo.constant dense<1.001674e+00> : tensor<1048576xf32>
    %5 = stablehlo.constant dense<2.4664073e-01> : tensor<1048576xf32>
    %6 = stablehlo.constant dense<9.4388705e-03> : tensor<1048576xf32>
    %7 = stablehlo.constant dense<-4.1776816e-03> : tensor<1048576xf32>
    %8 = stablehlo.constant dense<-7.6224613e-03> : tensor<1048576xf32>
    %9 = stablehlo.constant dense<-1.253725e-03> : tensor<1048576xf32>
    %10 = stablehlo.constant dense<5.7395077e-03> : tensor<1048576xf32>
    %11 = stablehlo.constant dense<2.1858087e-04> : tensor<1048576xf32>
    %12 = stablehlo.constant dense<-3.6734284e-03> : tensor<1048576xf32>
    %13 = stablehlo.constant dense<-4.3915065e-06> : tensor<1048576xf32>
    %14 = stablehlo.constant dense<1.3493432e-03> : tensor<1048576xf32>
    %15 = stablehlo.constant dense<-3.5233877e-06> : tensor<1048576xf32>
    %16 = stablehlo.constant dense<1.0095056e-04> : tensor<1048576xf32>
    %17 = stablehlo.constant dense<3.4327394e-07> : tensor<1048576xf32>
    %18 = stablehlo.constant dense<-2.0021426e-04> : tensor<1048576xf32>
    %19 = stablehlo.constant dense<2.8102264e-08> : tensor<1048576xf32>
    %20 = stablehlo.constant dense<3.000000e+00> : tensor<1048576xf32>
    %21 = stablehlo.constant dense<2.500000e+00> : tensor<1048576xf32>
    %22 = stablehlo.constant dense<5.000000e+00> : tensor<1048576xf32>
    %23 = stablehlo.negate %arg0 : tensor<1048576xf32>
    %24 = stablehlo.multiply %arg0, %23 : tensor<1048576xf32>
    %25 = stablehlo.log_plus_one %24 : tensor<1048576xf32>
    %26 = stablehlo.negate %25 : tensor<1048576xf32>
    %27 = stablehlo.compare LT, %26, %22 : (tensor<1048576xf32>, tensor<1048576xf32>) -> tensor<1048576xi1>
    %28 = stablehlo.subtract %26, %21 : tensor<1048576xf32>
    %29 = stablehlo.sqrt %26 : tensor<1048576xf32>
    %30 = stablehlo.subtract %29, %20 : tensor<1048576xf32>
    %31 = stablehlo.select %27, %28, %30 : tensor<1048576xi1>, tensor<1048576xf32>
    %32 = stablehlo.select %27, %19, %18 : tensor<1048576xi1>, tensor<1048576xf32>
    %33 = stablehlo.select %27, %17, %16 : tensor<1048576xi1>, tensor<1048576xf32>
    %34 = stablehlo.multiply %32, %31 : tensor<1048576xf32>
    %35 = stablehlo.add %33, %34 : tensor<1048576xf32>
    %36 = stablehlo.select %27, %15, %14 : tensor<1048576xi1>, tensor<1048576xf32>
    %37 = stablehlo.multiply %35, %31 : tensor<1048576xf32>
    %38 = stablehlo.add %36, %37 : tensor<1048576xf32>
    %39 = stablehlo.select %27, %13, %12 : tensor<1048576xi1>, tensor<1048576xf32>
    %40 = stablehlo.multiply %38, %31 : tensor<1048576xf32>
    %41 = stablehlo.add %39, %40 : tensor<1048576xf32>
    %42 = stablehlo.select %27, %11, %10 : tensor<1048576xi1>, tensor<1048576xf32>
    %43 = stablehlo.multiply %41, %31 : tensor<1048576xf32>
    %44 = stablehlo.add %42, %43 : tensor<1048576xf32>
    %45 = stablehlo.select %27, %9, %8 : tensor<1048576xi1>, tensor<1048576xf32>
    %46 = stablehlo.multiply %44, %31 : tensor<1048576xf32>
    %47 = stablehlo.add %45, %46 : tensor<1048576xf32>
    %48 = stablehlo.select %27, %7, %6 : tensor<1048576xi1>, tensor<1048576xf32>
    %49 = stablehlo.multiply %47, %31 : tensor<1048576xf32>
    %50 = stablehlo.add %48, %49 : tensor<1048576xf32>
    %51 = stablehlo.select %27, %5, %4 : tensor<1048576xi1>, tensor<1048576xf32>
    %52 = stablehlo.multiply %50, %31 : tensor<1048576xf32>
    %53 = stablehlo.add %51, %52 : tensor<1048576xf32>
    %54 = stablehlo.select %27, %3, %2 : tensor<1048576xi1>, tensor<1048576xf32>
    %55 = stablehlo.multiply %53, %31 : tensor<1048576xf32>
    %56 = stablehlo.add %54, %55 : tensor<1048576xf32>
    %57 = stablehlo.multiply %56, %arg0 : tensor<1048576xf32>
    %58 = stablehlo.abs %arg0 : tensor<1048576xf32>
    %59 = stablehlo.compare EQ, %58, %1 : (tensor<1048576xf32>, tensor<1048576xf32>) -> tensor<1048576xi1>
    %60 = stablehlo.multiply %arg0, %0 : tensor<1048576xf32>
    %61 = stablehlo.select %59, %60, %57 : tensor<1048576xi1>, tensor<1048576xf32>
";

#[test]
fn splat_constants_join_groups_as_one_value_registers() {
    // A few splat constants in generated code, which reads them as one-value inputs.
    let text =
        "func.func @main(%x: tensor<128x100xf32>) -> (tensor<128x100xf32>, tensor<128x100xf32>) {
  %three = stablehlo.constant dense<3.0> : tensor<128x100xf32>
  %half = stablehlo.constant dense<-0.5> : tensor<128x100xf32>
  %y = stablehlo.multiply %x, %three : tensor<128x100xf32>
  %z = stablehlo.add %y, %half : tensor<128x100xf32>
  %m = stablehlo.maximum %z, %three : tensor<128x100xf32>
  return %m, %half : tensor<128x100xf32>, tensor<128x100xf32>
}
";
    let module = parse_text(text).expect("parses");
    assert_eq!(fused_groups(&module, "main"), vec![5]);
    if tile_code::available() {
        assert_eq!(generated_groups(&module, "main"), vec![true]);
    }
    let mut rng = Rng(3);
    let args = main_args(&mut rng, &module);
    assert_fusion_invisible(&module, &args, "splat constants in generated code");
    // The same over the tile loops, and JAX's `erf_inv` with 22 coefficients as splat
    // constants (more registers than generated code has) over 12800 and 45 elements: the
    // group holds them instead of reading materialised ones, with the same bits.
    let small = parse_text(&text.replace("128x100", "5x9")).expect("parses");
    assert_fusion_invisible(&small, &main_args(&mut rng, &small), "splat constants");
    for shape in ["128x100", "5x9"] {
        let module = parse_text(&erf_inv_program(shape)).expect("parses");
        assert_eq!(fused_groups(&module, "main"), vec![62], "{shape}");
        let mut rng = Rng(11);
        for _ in 0..3 {
            let args = main_args(&mut rng, &module);
            assert_fusion_invisible(&module, &args, &format!("erf_inv over {shape}"));
            // Values inside (-1, 1) too.
            let inside: Vec<Literal> = args
                .iter()
                .map(|a| {
                    let v: Vec<f32> = a
                        .data
                        .chunks_exact(4)
                        .map(|c| (f32::from_le_bytes([c[0], c[1], c[2], c[3]]) / 11.0).sin())
                        .collect();
                    Literal::from_f32(&a.ty.shape, &v).expect("literal")
                })
                .collect();
            assert_fusion_invisible(&module, &inside, &format!("erf_inv inside over {shape}"));
        }
    }
}

#[test]
fn extrema_with_constant_bounds_give_the_interpreters_bits() {
    // `jnp.clip` (a scalar converted, then broadcast), `relu` (a zero splat constant) and
    // bounds on either side of zero, in both operand orders: generated code picks shorter
    // sequences for these; the inputs hold every edge around each bound.
    let bounds = [
        "0.000000e+00",
        "-0.000000e+00",
        "5.000000e-01",
        "-5.000000e-01",
        "0x00000003",
        "0x80000003",
        "0x7F800000",
        "0xFF800000",
        "0x7FC00000",
        "1.17549435E-38",
    ];
    let mut edges: Vec<f32> = vec![
        0.0,
        -0.0,
        0.5,
        -0.5,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::from_bits(3),
        f32::from_bits(0x8000_0003),
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        0.25,
        -7.0,
    ];
    for v in edges.clone() {
        edges.push(f32::from_bits(v.to_bits().wrapping_add(1)));
        edges.push(f32::from_bits(v.to_bits().wrapping_sub(1)));
    }
    let values: Vec<f32> = (0..128 * 100)
        .map(|i| edges[(i * 7 + i / 100) % edges.len()])
        .collect();
    let x = Literal::from_f32(&[128, 100], &values).expect("literal");
    for bound in bounds {
        for (first, second) in [("maximum", "minimum"), ("minimum", "maximum")] {
            let text = format!(
                "func.func @main(%x: tensor<128x100xf32>) -> (tensor<128x100xf32>, tensor<128x100xf32>) {{
  %c = stablehlo.constant dense<{bound}> : tensor<f32>
  %cc = stablehlo.convert %c : tensor<f32>
  %b = stablehlo.broadcast_in_dim %cc, dims = [] : (tensor<f32>) -> tensor<128x100xf32>
  %s = stablehlo.constant dense<{bound}> : tensor<128x100xf32>
  %half = stablehlo.constant dense<5.000000e-01> : tensor<128x100xf32>
  %y = stablehlo.{first} %b, %x : tensor<128x100xf32>
  %z = stablehlo.{second} %y, %half : tensor<128x100xf32>
  %w = stablehlo.{first} %x, %s : tensor<128x100xf32>
  %v = stablehlo.{second} %s, %w : tensor<128x100xf32>
  return %z, %v : tensor<128x100xf32>, tensor<128x100xf32>
}}
"
            );
            let module = parse_text(&text).expect("parses");
            if tile_code::available() {
                assert_eq!(generated_groups(&module, "main"), vec![true], "{bound}");
            }
            assert_fusion_invisible(
                &module,
                std::slice::from_ref(&x),
                &format!("{first} with {bound}"),
            );
        }
    }
}

#[test]
fn integer_division_by_constants_gives_the_interpreters_bits() {
    // JAX's `x // c` (a quotient and a remainder of the same operands, and signs) and
    // `x % c` (the divisor guarded by `select(c == 0, 1, c)`, which folding turns into a
    // constant), for signed and unsigned lanes, over dividends at and around multiples of
    // each divisor and the extremes.
    let divisors: [i64; 12] = [
        7,
        -7,
        1,
        -1,
        0,
        2,
        3,
        -1000,
        1_000_003,
        65536,
        i32::MAX as i64,
        i32::MIN as i64,
    ];
    for (et, signed) in [("i32", true), ("ui32", false)] {
        for c in divisors {
            let c = if signed { c } else { c as u32 as i64 };
            let mut xs: Vec<u32> = vec![0, 1, u32::MAX, 0x8000_0000, 0x7fff_ffff, 0x8000_0001];
            for k in 0..(128 * 64 - 6) as i64 {
                let base = (k - 4096) * 524_287;
                let m = if c == 0 { base } else { base - base % c };
                xs.push(m.wrapping_add(k % 3 - 1) as u32);
            }
            let lit = Literal::new(
                TensorType::new(
                    vec![128, 64],
                    if signed {
                        ElementType::S32
                    } else {
                        ElementType::U32
                    },
                ),
                xs.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>(),
            )
            .expect("literal");
            let cmp = if signed { "SIGNED" } else { "UNSIGNED" };
            let text = format!(
                "func.func @main(%x: tensor<128x64x{et}>) -> (tensor<128x64x{et}>, tensor<128x64x{et}>, tensor<128x64x{et}>) {{
  %c = stablehlo.constant dense<{c}> : tensor<{et}>
  %one = stablehlo.constant dense<1> : tensor<{et}>
  %zero = stablehlo.constant dense<0> : tensor<{et}>
  %b = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<{et}>) -> tensor<128x64x{et}>
  %q = stablehlo.divide %x, %b : tensor<128x64x{et}>
  %sx = stablehlo.sign %x : tensor<128x64x{et}>
  %sc = stablehlo.sign %c : tensor<{et}>
  %bsc = stablehlo.broadcast_in_dim %sc, dims = [] : (tensor<{et}>) -> tensor<128x64x{et}>
  %ne = stablehlo.compare NE, %sx, %bsc, {cmp} : (tensor<128x64x{et}>, tensor<128x64x{et}>) -> tensor<128x64xi1>
  %b2 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<{et}>) -> tensor<128x64x{et}>
  %r = stablehlo.remainder %x, %b2 : tensor<128x64x{et}>
  %bz = stablehlo.broadcast_in_dim %zero, dims = [] : (tensor<{et}>) -> tensor<128x64x{et}>
  %nz = stablehlo.compare NE, %r, %bz, {cmp} : (tensor<128x64x{et}>, tensor<128x64x{et}>) -> tensor<128x64xi1>
  %both = stablehlo.and %ne, %nz : tensor<128x64xi1>
  %b1 = stablehlo.broadcast_in_dim %one, dims = [] : (tensor<{et}>) -> tensor<128x64x{et}>
  %qm = stablehlo.subtract %q, %b1 : tensor<128x64x{et}>
  %floor = stablehlo.select %both, %qm, %q : tensor<128x64xi1>, tensor<128x64x{et}>
  %isz = stablehlo.compare EQ, %c, %zero, {cmp} : (tensor<{et}>, tensor<{et}>) -> tensor<i1>
  %d = stablehlo.select %isz, %one, %c : tensor<i1>, tensor<{et}>
  %bd = stablehlo.broadcast_in_dim %d, dims = [] : (tensor<{et}>) -> tensor<128x64x{et}>
  %m = stablehlo.remainder %x, %bd : tensor<128x64x{et}>
  %mm = stablehlo.multiply %m, %b2 : tensor<128x64x{et}>
  return %floor, %mm, %r : tensor<128x64x{et}>, tensor<128x64x{et}>, tensor<128x64x{et}>
}}
"
            );
            let mut module = parse_text(&text).expect("parses");
            assert!(oxla_ir::transform::fold_integer_constants(&mut module) >= 3);
            if tile_code::available() {
                assert_eq!(generated_groups(&module, "main"), vec![true], "{et} by {c}");
            }
            assert_fusion_invisible(&module, std::slice::from_ref(&lit), &format!("{et} by {c}"));
        }
    }
}

#[test]
fn generated_code_reads_and_writes_masks() {
    // `i1` arguments (one read in place, one broadcast along the rows) reach generated
    // code widened to 0.0/1.0, and `i1` results leave it narrowed to bytes, also when
    // the sine stops the code and the tile loops compute a block in between.
    let text = "func.func @main(%x: tensor<64x300xf32>, %p: tensor<64x300xi1>, %q: tensor<300xi1>) -> (tensor<64x300xf32>, tensor<64x300xi1>, tensor<64x300xi1>) {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %zb = stablehlo.broadcast_in_dim %zero, dims = [] : (tensor<f32>) -> tensor<64x300xf32>
  %s = stablehlo.sine %x : tensor<64x300xf32>
  %gt = stablehlo.compare GT, %s, %zb, FLOAT : (tensor<64x300xf32>, tensor<64x300xf32>) -> tensor<64x300xi1>
  %qb = stablehlo.broadcast_in_dim %q, dims = [1] : (tensor<300xi1>) -> tensor<64x300xi1>
  %a = stablehlo.and %gt, %p : tensor<64x300xi1>
  %o = stablehlo.or %a, %qb : tensor<64x300xi1>
  %sel = stablehlo.select %o, %s, %x : tensor<64x300xi1>, tensor<64x300xf32>
  %n = stablehlo.not %gt : tensor<64x300xi1>
  return %sel, %o, %n : tensor<64x300xf32>, tensor<64x300xi1>, tensor<64x300xi1>
}
";
    let module = parse_text(text).expect("parses");
    if tile_code::available() {
        assert_eq!(generated_groups(&module, "main"), vec![true]);
    }
    let n = 64 * 300;
    for (seed, every) in [(1, n + 1), (2, 3001), (3, 97), (4, 5)] {
        let mut rng = Rng(seed);
        let values: Vec<f32> = (0..n)
            .map(|i| {
                if i % every == every / 2 {
                    [1e5, f32::NAN, -3e4, f32::NEG_INFINITY][i % 4]
                } else {
                    (rng.below(20_001) as f32 - 10_000.0) / 97.0
                }
            })
            .collect();
        let mut args = main_args(&mut rng, &module);
        args[0] = Literal::from_f32(&[64, 300], &values).expect("literal");
        assert_fusion_invisible(&module, &args, &format!("masks, one in {every} stopping"));
    }
}

#[test]
fn softmax_fuses_into_one_group_per_shape() {
    // jax.nn.softmax over the last axis, as JAX lowers it.
    let text = "func.func @main(%x: tensor<4x300xf32>) -> tensor<4x300xf32> {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %max = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<4x300xf32>, tensor<f32>) -> tensor<4xf32>
  %bmax = stablehlo.broadcast_in_dim %max, dims = [0] : (tensor<4xf32>) -> tensor<4x300xf32>
  %sub = stablehlo.subtract %x, %bmax : tensor<4x300xf32>
  %exp = stablehlo.exponential %sub : tensor<4x300xf32>
  %sum = stablehlo.reduce(%exp init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<4x300xf32>, tensor<f32>) -> tensor<4xf32>
  %bsum = stablehlo.broadcast_in_dim %sum, dims = [0] : (tensor<4xf32>) -> tensor<4x300xf32>
  %div = stablehlo.divide %exp, %bsum : tensor<4x300xf32>
  return %div : tensor<4x300xf32>
}
";
    let module = parse_text(text).expect("parses");
    // broadcast + subtract + exponential, then broadcast + divide.
    assert_eq!(fused_groups(&module, "main"), vec![3, 2]);
    let mut rng = Rng(7);
    let ty = TensorType::new(vec![4, 300], ElementType::F32);
    let x = literal(&mut rng, &ty);
    assert_fusion_invisible(&module, &[x], "softmax");
}

/// Layer norm with gain and bias and a row softmax, as JAX lowers them, over 300 rows of
/// 517: the rows split into slabs with a shorter last one.
const LAYER_NORM_SOFTMAX: &str = "func.func @main(%x: tensor<300x517xf32>, %g: tensor<517xf32>, %b: tensor<517xf32>) -> (tensor<300x517xf32>, tensor<300x517xf32>) {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %n = stablehlo.constant dense<517.0> : tensor<f32>
  %eps = stablehlo.constant dense<1.0e-5> : tensor<f32>
  %sum = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<300x517xf32>, tensor<f32>) -> tensor<300xf32>
  %sum1 = stablehlo.broadcast_in_dim %sum, dims = [0] : (tensor<300xf32>) -> tensor<300x1xf32>
  %nb = stablehlo.broadcast_in_dim %n, dims = [] : (tensor<f32>) -> tensor<300x1xf32>
  %mean = stablehlo.divide %sum1, %nb : tensor<300x1xf32>
  %meanb = stablehlo.broadcast_in_dim %mean, dims = [0, 1] : (tensor<300x1xf32>) -> tensor<300x517xf32>
  %d = stablehlo.subtract %x, %meanb : tensor<300x517xf32>
  %sq = stablehlo.multiply %d, %d : tensor<300x517xf32>
  %ss = stablehlo.reduce(%sq init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<300x517xf32>, tensor<f32>) -> tensor<300xf32>
  %ss1 = stablehlo.broadcast_in_dim %ss, dims = [0] : (tensor<300xf32>) -> tensor<300x1xf32>
  %var = stablehlo.divide %ss1, %nb : tensor<300x1xf32>
  %epsb = stablehlo.broadcast_in_dim %eps, dims = [] : (tensor<f32>) -> tensor<300x1xf32>
  %ve = stablehlo.add %var, %epsb : tensor<300x1xf32>
  %rs = stablehlo.rsqrt %ve : tensor<300x1xf32>
  %rsb = stablehlo.broadcast_in_dim %rs, dims = [0, 1] : (tensor<300x1xf32>) -> tensor<300x517xf32>
  %y = stablehlo.multiply %d, %rsb : tensor<300x517xf32>
  %g1 = stablehlo.broadcast_in_dim %g, dims = [1] : (tensor<517xf32>) -> tensor<1x517xf32>
  %gb = stablehlo.broadcast_in_dim %g1, dims = [0, 1] : (tensor<1x517xf32>) -> tensor<300x517xf32>
  %yg = stablehlo.multiply %y, %gb : tensor<300x517xf32>
  %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<517xf32>) -> tensor<300x517xf32>
  %ln = stablehlo.add %yg, %bb : tensor<300x517xf32>
  %max = stablehlo.reduce(%ln init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<300x517xf32>, tensor<f32>) -> tensor<300xf32>
  %bmax = stablehlo.broadcast_in_dim %max, dims = [0] : (tensor<300xf32>) -> tensor<300x517xf32>
  %sub = stablehlo.subtract %ln, %bmax : tensor<300x517xf32>
  %exp = stablehlo.exponential %sub : tensor<300x517xf32>
  %esum = stablehlo.reduce(%exp init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<300x517xf32>, tensor<f32>) -> tensor<300xf32>
  %bsum = stablehlo.broadcast_in_dim %esum, dims = [0] : (tensor<300xf32>) -> tensor<300x517xf32>
  %sm = stablehlo.divide %exp, %bsum : tensor<300x517xf32>
  return %ln, %sm : tensor<300x517xf32>, tensor<300x517xf32>
}
";

#[test]
fn a_sum_of_one_op_runs_in_that_ops_generated_code() {
    // `jnp.linalg.norm(x, axis=1)`: the square is a single op, outside any fused group; it
    // becomes a kernel of its own so the row sum runs in its generated code, with the
    // bits of the square stored and folded. A maximum of one op keeps its separate fold.
    let text = "func.func @main(%x: tensor<300x517xf32>) -> (tensor<300xf32>, tensor<300xf32>) {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %sq = stablehlo.multiply %x, %x : tensor<300x517xf32>
  %s = stablehlo.reduce(%sq init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<300x517xf32>, tensor<f32>) -> tensor<300xf32>
  %n = stablehlo.sqrt %s : tensor<300xf32>
  %e = stablehlo.exponential %x : tensor<300x517xf32>
  %m = stablehlo.reduce(%e init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<300x517xf32>, tensor<f32>) -> tensor<300xf32>
  return %n, %m : tensor<300xf32>, tensor<300xf32>
}
";
    let module = parse_text(text).expect("parses");
    assert_eq!(row_group_programs(&module, "main"), vec![true]);
    let mut rng = Rng(5);
    let x = literal(&mut rng, &TensorType::new(vec![300, 517], ElementType::F32));
    assert_fusion_invisible(&module, std::slice::from_ref(&x), "norm");
    if tile_code::available() {
        assert_eq!(row_group_merged_sums(&module, "main"), vec![1]);
        tile_code::set_enabled(false);
        assert_fusion_invisible(&module, std::slice::from_ref(&x), "norm, no generated code");
        tile_code::set_enabled(true);
    }
}

#[test]
fn a_sum_of_squares_alone_is_a_row_group_and_a_mean_is_not() {
    // `jnp.sum(x * x, axis=1)`: two ops, the sum reading the product, so the group keeps the
    // product out of memory; `jnp.mean(x, axis=1)` (a sum of the argument, then a divide)
    // gains nothing from a group and runs op by op.
    let squares = "func.func @main(%x: tensor<300x517xf32>) -> tensor<300xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %sq = stablehlo.multiply %x, %x : tensor<300x517xf32>
  %s = stablehlo.reduce(%sq init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<300x517xf32>, tensor<f32>) -> tensor<300xf32>
  return %s : tensor<300xf32>
}
";
    let module = parse_text(squares).expect("parses");
    assert_eq!(row_groups(&module, "main"), vec![2]);
    let mut rng = Rng(7);
    let x = literal(&mut rng, &TensorType::new(vec![300, 517], ElementType::F32));
    assert_fusion_invisible(&module, std::slice::from_ref(&x), "sum of squares");
    if tile_code::available() {
        assert_eq!(row_group_merged_sums(&module, "main"), vec![1]);
    }
    let mean = "func.func @main(%x: tensor<300x517xf32>) -> tensor<300xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %n = stablehlo.constant dense<517.0> : tensor<300xf32>
  %s = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<300x517xf32>, tensor<f32>) -> tensor<300xf32>
  %m = stablehlo.divide %s, %n : tensor<300xf32>
  return %m : tensor<300xf32>
}
";
    let module = parse_text(mean).expect("parses");
    assert!(row_groups(&module, "main").is_empty());
}

#[test]
fn row_groups_tile_layer_norm_and_softmax_without_changing_bits() {
    let text = LAYER_NORM_SOFTMAX;
    let module = parse_text(text).expect("parses");
    // Everything but the four scalar constants and the row vector made `1x517` is one row
    // group.
    assert_eq!(row_groups(&module, "main"), vec![26]);
    let mut rng = Rng(11);
    let args: Vec<Literal> = [vec![300, 517], vec![517], vec![517]]
        .into_iter()
        .map(|shape| literal(&mut rng, &TensorType::new(shape, ElementType::F32)))
        .collect();
    assert_fusion_invisible(&module, &args, "layer norm and softmax");
    // The variance's sum of squares and softmax's sum of exponentials run inside the
    // generated code of the groups computing their operands (the squares are not stored);
    // with generated code off, the same steps fold separately, to the same bits.
    if tile_code::available() {
        assert_eq!(row_group_merged_sums(&module, "main"), vec![2]);
        tile_code::set_enabled(false);
        assert_fusion_invisible(&module, &args, "layer norm and softmax, no generated code");
        tile_code::set_enabled(true);
    }

    // Sums over the leading dimension mix rows: no row group.
    let columns = "func.func @main(%x: tensor<300x517xf32>) -> tensor<517xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %e = stablehlo.exponential %x : tensor<300x517xf32>
  %l = stablehlo.log %e : tensor<300x517xf32>
  %s = stablehlo.reduce(%l init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<300x517xf32>, tensor<f32>) -> tensor<517xf32>
  return %s : tensor<517xf32>
}
";
    let module = parse_text(columns).expect("parses");
    assert!(row_groups(&module, "main").is_empty());
}

/// A rank-3 row group over 67 rows (two slabs of different heights) with every kind of
/// step a slab program has: max, min-over-two-dimensions and product reductions, a mask
/// from a compare feeding a select, a clamp, broadcasts of a per-row value, a row vector
/// and a scalar argument, a reshape, and outputs that later steps read (`%e`, `%mn`), that
/// alias another value (`%r`) or that nothing else reads (`%pr`).
const SLAB_STEPS: &str = "func.func @main(%x: tensor<67x8x33xf32>, %g: tensor<33xf32>, %s: tensor<f32>) -> (tensor<67x8x33xf32>, tensor<67x8xf32>, tensor<67xf32>, tensor<67x264xf32>) {
  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %pinf = stablehlo.constant dense<0x7F800000> : tensor<f32>
  %m = stablehlo.reduce(%x init: %ninf) applies stablehlo.maximum across dimensions = [2] : (tensor<67x8x33xf32>, tensor<f32>) -> tensor<67x8xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0, 1] : (tensor<67x8xf32>) -> tensor<67x8x33xf32>
  %d = stablehlo.subtract %x, %mb : tensor<67x8x33xf32>
  %gb = stablehlo.broadcast_in_dim %g, dims = [2] : (tensor<33xf32>) -> tensor<67x8x33xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<67x8x33xf32>
  %gt = stablehlo.compare GT, %d, %gb, FLOAT : (tensor<67x8x33xf32>, tensor<67x8x33xf32>) -> tensor<67x8x33xi1>
  %t = stablehlo.multiply %d, %sb : tensor<67x8x33xf32>
  %sel = stablehlo.select %gt, %t, %gb : tensor<67x8x33xi1>, tensor<67x8x33xf32>
  %mn = stablehlo.reduce(%sel init: %pinf) applies stablehlo.minimum across dimensions = [1, 2] : (tensor<67x8x33xf32>, tensor<f32>) -> tensor<67xf32>
  %mnb = stablehlo.broadcast_in_dim %mn, dims = [0] : (tensor<67xf32>) -> tensor<67x8x33xf32>
  %c = stablehlo.clamp %mnb, %sel, %gb : tensor<67x8x33xf32>
  %e = stablehlo.tanh %c : tensor<67x8x33xf32>
  %pr = stablehlo.reduce(%e init: %one) applies stablehlo.multiply across dimensions = [2] : (tensor<67x8x33xf32>, tensor<f32>) -> tensor<67x8xf32>
  %r = stablehlo.reshape %c : (tensor<67x8x33xf32>) -> tensor<67x264xf32>
  return %e, %pr, %mn, %r : tensor<67x8x33xf32>, tensor<67x8xf32>, tensor<67xf32>, tensor<67x264xf32>
}
";

#[test]
fn slab_programs_give_the_interpreters_bits() {
    let module = parse_text(SLAB_STEPS).expect("parses");
    assert_eq!(row_groups(&module, "main"), vec![14]);
    assert_eq!(row_group_programs(&module, "main"), vec![true]);
    for seed in 0..6 {
        let mut rng = Rng(100 + seed);
        // Ordinary numbers (a NaN in `%g` would make every row NaN), some of them equal.
        let args: Vec<Literal> = [vec![67, 8, 33], vec![33], vec![]]
            .into_iter()
            .map(|shape| {
                let n: usize = shape.iter().map(|&d| d as usize).product();
                let v: Vec<f32> = (0..n)
                    .map(|_| (rng.below(2001) as f32 - 1000.0) / 317.0)
                    .collect();
                Literal::from_f32(&shape, &v).expect("sized")
            })
            .collect();
        // Mostly ordinary numbers, so a wrong fold or a clobbered buffer shows.
        for out in run(&module, &args, false).expect("runs") {
            let v = out.to_f32_vec().expect("f32");
            let normal = v.iter().filter(|x| x.is_normal()).count();
            assert!(normal * 2 > v.len(), "seed {seed}: {normal} of {}", v.len());
        }
        assert_fusion_invisible(&module, &args, &format!("slab steps, seed {seed}"));
    }
    // The layer norm and softmax chain compiles too (its last slab is shorter).
    let module = parse_text(LAYER_NORM_SOFTMAX).expect("parses");
    assert_eq!(row_group_programs(&module, "main"), vec![true]);

    // `i1` arguments (read by rows or whole, as a causal mask is), `i1` results and
    // transposes compile too; a two-result reduction (an argmax) is left to the
    // interpreter, which still tiles the rows.
    for (what, text, compiles) in [
        (
            "mask argument",
            "func.func @main(%x: tensor<300x517xf32>, %p: tensor<300x517xi1>) -> tensor<300xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %e = stablehlo.exponential %x : tensor<300x517xf32>
  %s = stablehlo.select %p, %e, %x : tensor<300x517xi1>, tensor<300x517xf32>
  %r = stablehlo.reduce(%s init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<300x517xf32>, tensor<f32>) -> tensor<300xf32>
  return %r : tensor<300xf32>
}
",
            true,
        ),
        (
            "whole mask, mask results",
            "func.func @main(%x: tensor<300x517xf32>, %p: tensor<517xi1>) -> (tensor<300x517xf32>, tensor<300x517xi1>, tensor<300x517xi1>) {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %big = stablehlo.constant dense<-1.0e+09> : tensor<f32>
  %pb = stablehlo.broadcast_in_dim %p, dims = [1] : (tensor<517xi1>) -> tensor<300x517xi1>
  %bb = stablehlo.broadcast_in_dim %big, dims = [] : (tensor<f32>) -> tensor<300x517xf32>
  %s = stablehlo.select %pb, %x, %bb : tensor<300x517xi1>, tensor<300x517xf32>
  %m = stablehlo.reduce(%s init: %ninf) applies stablehlo.maximum across dimensions = [1] : (tensor<300x517xf32>, tensor<f32>) -> tensor<300xf32>
  %mb = stablehlo.broadcast_in_dim %m, dims = [0] : (tensor<300xf32>) -> tensor<300x517xf32>
  %d = stablehlo.subtract %s, %mb : tensor<300x517xf32>
  %e = stablehlo.exponential %d : tensor<300x517xf32>
  %gt = stablehlo.compare GT, %e, %x, FLOAT : (tensor<300x517xf32>, tensor<300x517xf32>) -> tensor<300x517xi1>
  return %e, %pb, %gt : tensor<300x517xf32>, tensor<300x517xi1>, tensor<300x517xi1>
}
",
            true,
        ),
        (
            "transpose",
            "func.func @main(%x: tensor<300x20x30xf32>) -> tensor<300x30xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %e = stablehlo.exponential %x : tensor<300x20x30xf32>
  %t = stablehlo.transpose %e, dims = [0, 2, 1] : (tensor<300x20x30xf32>) -> tensor<300x30x20xf32>
  %r = stablehlo.reduce(%t init: %zero) applies stablehlo.add across dimensions = [2] : (tensor<300x30x20xf32>, tensor<f32>) -> tensor<300x30xf32>
  return %r : tensor<300x30xf32>
}
",
            true,
        ),
        (
            // The gradient of `x[:, 0]` is a pad of a column; pads with interior and edge
            // padding along the trailing dimensions join the group too.
            "pads",
            "func.func @main(%x: tensor<300x517xf32>, %v: tensor<300x3x7xf32>) -> (tensor<300x517xf32>, tensor<300x5x21xf32>) {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %c = stablehlo.constant dense<2.5> : tensor<f32>
  %e = stablehlo.exponential %x : tensor<300x517xf32>
  %s = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<300x517xf32>, tensor<f32>) -> tensor<300xf32>
  %sr = stablehlo.reshape %s : (tensor<300xf32>) -> tensor<300x1xf32>
  %p = stablehlo.pad %sr, %zero, low = [0, 0], high = [0, 516], interior = [0, 0] : (tensor<300x1xf32>, tensor<f32>) -> tensor<300x517xf32>
  %y = stablehlo.multiply %p, %e : tensor<300x517xf32>
  %q = stablehlo.pad %v, %c, low = [0, 1, 2], high = [0, 1, 0], interior = [0, 0, 2] : (tensor<300x3x7xf32>, tensor<f32>) -> tensor<300x5x21xf32>
  %qe = stablehlo.exponential %q : tensor<300x5x21xf32>
  return %y, %qe : tensor<300x517xf32>, tensor<300x5x21xf32>
}
",
            true,
        ),
        (
            // Negative padding crops: the interpreter runs those slabs.
            "cropping pad",
            "func.func @main(%x: tensor<300x517xf32>) -> tensor<300x518xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %e = stablehlo.exponential %x : tensor<300x517xf32>
  %s = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [1] : (tensor<300x517xf32>, tensor<f32>) -> tensor<300xf32>
  %sb = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<300xf32>) -> tensor<300x517xf32>
  %d = stablehlo.divide %e, %sb : tensor<300x517xf32>
  %p = stablehlo.pad %d, %zero, low = [0, -1], high = [0, 2], interior = [0, 0] : (tensor<300x517xf32>, tensor<f32>) -> tensor<300x518xf32>
  return %p : tensor<300x518xf32>
}
",
            false,
        ),
        (
            "two-result reduction",
            "func.func @main(%x: tensor<300x517xf32>, %i: tensor<300x517xi32>) -> (tensor<300x517xf32>, tensor<300xi32>) {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %c = stablehlo.constant dense<0> : tensor<i32>
  %e = stablehlo.exponential %x : tensor<300x517xf32>
  %r:2 = stablehlo.reduce(%e init: %ninf), (%i init: %c) across dimensions = [1] : (tensor<300x517xf32>, tensor<300x517xi32>, tensor<f32>, tensor<i32>) -> (tensor<300xf32>, tensor<300xi32>)
   reducer(%a: tensor<f32>, %b: tensor<f32>) (%ia: tensor<i32>, %ib: tensor<i32>)  {
    %gt = stablehlo.compare GT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %m = stablehlo.select %gt, %a, %b : tensor<i1>, tensor<f32>
    %im = stablehlo.select %gt, %ia, %ib : tensor<i1>, tensor<i32>
    stablehlo.return %m, %im : tensor<f32>, tensor<i32>
  }
  %y = stablehlo.multiply %e, %e : tensor<300x517xf32>
  return %y, %r#1 : tensor<300x517xf32>, tensor<300xi32>
}
",
            false,
        ),
    ] {
        let module = parse_text(text).expect("parses");
        assert_eq!(row_group_programs(&module, "main"), vec![compiles], "{what}");
        if what == "pads" {
            // One group from the exponential to the last pad's consumer.
            assert_eq!(row_groups(&module, "main"), vec![7]);
        }
        for seed in 0..3 {
            let mut rng = Rng(5 + seed);
            let args = main_args(&mut rng, &module);
            assert_fusion_invisible(&module, &args, what);
        }
    }
}

/// A fori_loop as JAX lowers it (counter, call, broadcast constants, a bound read from the
/// enclosing function), with state that swaps, passes through, selects and compares.
const FORI_LOOP: &str = "func.func @main(%x: tensor<16xf32>, %y: tensor<16xf32>, %n: tensor<i64>) -> (tensor<16xf32>, tensor<16xf32>, tensor<i64>) {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %lim = stablehlo.constant dense<37> : tensor<i32>
  %r:4 = stablehlo.while(%i = %c0, %a = %x, %b = %y, %m = %n) : tensor<i32>, tensor<16xf32>, tensor<16xf32>, tensor<i64>
  cond {
    %p = stablehlo.compare LT, %i, %lim, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %s = func.call @step(%a, %b) : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j0 = stablehlo.add %i, %one : tensor<i32>
    %two = stablehlo.constant dense<2> : tensor<i32>
    %j1 = stablehlo.multiply %j0, %two : tensor<i32>
    %j = stablehlo.subtract %j1, %j0 : tensor<i32>
    %gt = stablehlo.compare GT, %s, %b, TOTALORDER : (tensor<16xf32>, tensor<16xf32>) -> tensor<16xi1>
    %sel = stablehlo.select %gt, %s, %b : tensor<16xi1>, tensor<16xf32>
    %k = stablehlo.constant dense<3> : tensor<i64>
    %m2 = stablehlo.multiply %m, %k : tensor<i64>
    stablehlo.return %j, %sel, %a, %m2 : tensor<i32>, tensor<16xf32>, tensor<16xf32>, tensor<i64>
  }
  return %r#1, %r#2, %r#3 : tensor<16xf32>, tensor<16xf32>, tensor<i64>
}
func.func private @step(%a: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<16xf32> {
  %c = stablehlo.constant dense<0.99> : tensor<f32>
  %cb = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<f32>) -> tensor<16xf32>
  %t = stablehlo.multiply %a, %cb : tensor<16xf32>
  %s = stablehlo.sine %b : tensor<16xf32>
  %e = stablehlo.exponential %s : tensor<16xf32>
  %u = stablehlo.subtract %t, %e : tensor<16xf32>
  %v = stablehlo.maximum %u, %s : tensor<16xf32>
  %w = stablehlo.divide %v, %cb : tensor<16xf32>
  %z = stablehlo.add %w, %t : tensor<16xf32>
  return %z : tensor<16xf32>
}
";

#[test]
fn small_loops_compile_without_changing_bits() {
    // The fori_loop compiles; other loops must stay interpreted.
    let fori = FORI_LOOP;
    let module = parse_text(fori).expect("parses");
    assert_eq!(compiled_loops(&module, "main"), vec![true]);
    let mut rng = Rng(5);
    let ty = TensorType::new(vec![16], ElementType::F32);
    let n = Literal::new(
        TensorType::new(vec![], ElementType::S64),
        7i64.to_le_bytes().to_vec(),
    )
    .expect("sized literal");
    for _ in 0..20 {
        let args = [literal(&mut rng, &ty), literal(&mut rng, &ty), n.clone()];
        assert_fusion_invisible(&module, &args, "compiled fori_loop");
    }

    // A reduction in the body and a loop over a large value stay interpreted.
    let other = "func.func @main(%x: tensor<16xf32>, %z: tensor<4096xf32>) -> (tensor<16xf32>, tensor<4096xf32>) {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %a = %x) : tensor<i32>, tensor<16xf32>
  cond {
    %lim = stablehlo.constant dense<3> : tensor<i32>
    %p = stablehlo.compare LT, %i, %lim, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %zero = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%a init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<16xf32>, tensor<f32>) -> tensor<f32>
    %sb = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> tensor<16xf32>
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %j, %sb : tensor<i32>, tensor<16xf32>
  }
  %q:2 = stablehlo.while(%i = %c0, %b = %z) : tensor<i32>, tensor<4096xf32>
  cond {
    %lim = stablehlo.constant dense<3> : tensor<i32>
    %p = stablehlo.compare LT, %i, %lim, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %e = stablehlo.exponential %b : tensor<4096xf32>
    stablehlo.return %j, %e : tensor<i32>, tensor<4096xf32>
  }
  return %r#1, %q#1 : tensor<16xf32>, tensor<4096xf32>
}
";
    let module = parse_text(other).expect("parses");
    assert_eq!(compiled_loops(&module, "main"), vec![false, false]);
    let args = [
        literal(&mut rng, &ty),
        literal(&mut rng, &TensorType::new(vec![4096], ElementType::F32)),
    ];
    assert_fusion_invisible(&module, &args, "interpreted loops");
}

/// A loop that moves elements as JAX's LU-pivots-to-permutation loop does (dynamic slices
/// of the state at the counter and at a pivot read from a captured value, single-element
/// scatters that replace or add, some pivots out of bounds), plus a two-dimensional
/// dynamic slice and update at clamped starts and a scatter at a two-entry index vector
/// mapped to the operand's dimensions in reverse order.
const MOVING_LOOP: &str = r#"func.func @main(%perm: tensor<8xi32>, %piv: tensor<8xi32>, %m: tensor<4x6xf32>, %v: tensor<2x3xf32>, %rc: tensor<2xi32>) -> (tensor<8xi32>, tensor<4x6xf32>, tensor<i32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>) {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:7 = stablehlo.while(%i = %c0, %p = %perm, %x = %m, %acc = %c0, %h = %perm, %g = %perm, %z = %perm) : tensor<i32>, tensor<8xi32>, tensor<4x6xf32>, tensor<i32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>
  cond {
    %lim = stablehlo.constant dense<8> : tensor<i32>
    %q = stablehlo.compare LT, %i, %lim, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %q : tensor<i1>
  } do {
    %pi = stablehlo.dynamic_slice %piv, %i, sizes = [1] : (tensor<8xi32>, tensor<i32>) -> tensor<1xi32>
    %pis = stablehlo.reshape %pi : (tensor<1xi32>) -> tensor<i32>
    %cv = stablehlo.convert %pis : tensor<i32>
    %a1 = stablehlo.dynamic_slice %p, %i, sizes = [1] : (tensor<8xi32>, tensor<i32>) -> tensor<1xi32>
    %a = stablehlo.reshape %a1 : (tensor<1xi32>) -> tensor<i32>
    %b1 = stablehlo.dynamic_slice %p, %cv, sizes = [1] : (tensor<8xi32>, tensor<i32>) -> tensor<1xi32>
    %b = stablehlo.reshape %b1 : (tensor<1xi32>) -> tensor<i32>
    %ib = stablehlo.broadcast_in_dim %i, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %p1 = "stablehlo.scatter"(%p, %ib, %b) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0]>, unique_indices = true}> ({
    ^bb0(%u0: tensor<i32>, %u1: tensor<i32>):
      stablehlo.return %u1 : tensor<i32>
    }) : (tensor<8xi32>, tensor<1xi32>, tensor<i32>) -> tensor<8xi32>
    %cb = stablehlo.broadcast_in_dim %cv, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %p2 = "stablehlo.scatter"(%p1, %cb, %a) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0]>, unique_indices = true}> ({
    ^bb0(%u0: tensor<i32>, %u1: tensor<i32>):
      stablehlo.return %u1 : tensor<i32>
    }) : (tensor<8xi32>, tensor<1xi32>, tensor<i32>) -> tensor<8xi32>
    %h2 = "stablehlo.scatter"(%h, %cb, %a) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0]>}> ({
    ^bb0(%u0: tensor<i32>, %u1: tensor<i32>):
      %s = stablehlo.add %u0, %u1 : tensor<i32>
      stablehlo.return %s : tensor<i32>
    }) : (tensor<8xi32>, tensor<1xi32>, tensor<i32>) -> tensor<8xi32>
    %w = stablehlo.dynamic_slice %x, %cv, %i, sizes = [2, 3] : (tensor<4x6xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
    %w2 = stablehlo.add %w, %v : tensor<2x3xf32>
    %x2 = stablehlo.dynamic_update_slice %x, %w2, %i, %cv : (tensor<4x6xf32>, tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<4x6xf32>
    %e1 = stablehlo.dynamic_slice %w2, %c0, %c0, sizes = [1, 1] : (tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x1xf32>
    %e = stablehlo.reshape %e1 : (tensor<1x1xf32>) -> tensor<f32>
    %x3 = "stablehlo.scatter"(%x2, %rc, %e) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [1, 0]>}> ({
    ^bb0(%u0: tensor<f32>, %u1: tensor<f32>):
      %s = stablehlo.multiply %u0, %u1 : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<4x6xf32>, tensor<2xi32>, tensor<f32>) -> tensor<4x6xf32>
    %neg = stablehlo.compare LT, %pis, %c0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %eight = stablehlo.constant dense<8> : tensor<i32>
    %wrapped = stablehlo.add %pis, %eight : tensor<i32>
    %cvw = stablehlo.select %neg, %wrapped, %pis : tensor<i1>, tensor<i32>
    %late1 = stablehlo.dynamic_slice %p, %cvw, sizes = [1] : (tensor<8xi32>, tensor<i32>) -> tensor<1xi32>
    %late = stablehlo.reshape %late1 : (tensor<1xi32>) -> tensor<i32>
    %g2 = "stablehlo.scatter"(%perm, %ib, %acc) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0]>}> ({
    ^bb0(%u0: tensor<i32>, %u1: tensor<i32>):
      stablehlo.return %u1 : tensor<i32>
    }) : (tensor<8xi32>, tensor<1xi32>, tensor<i32>) -> tensor<8xi32>
    %z2 = "stablehlo.scatter"(%z, %ib, %b) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0]>}> ({
    ^bb0(%u0: tensor<i32>, %u1: tensor<i32>):
      stablehlo.return %u1 : tensor<i32>
    }) : (tensor<8xi32>, tensor<1xi32>, tensor<i32>) -> tensor<8xi32>
    %zs1 = stablehlo.dynamic_slice %z2, %cv, sizes = [1] : (tensor<8xi32>, tensor<i32>) -> tensor<1xi32>
    %zs = stablehlo.reshape %zs1 : (tensor<1xi32>) -> tensor<i32>
    %acc1 = stablehlo.add %acc, %a : tensor<i32>
    %acc3 = stablehlo.add %acc1, %late : tensor<i32>
    %acc2 = stablehlo.add %acc3, %zs : tensor<i32>
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %h3 = stablehlo.dynamic_update_slice %h2, %a1, %cv : (tensor<8xi32>, tensor<1xi32>, tensor<i32>) -> tensor<8xi32>
    stablehlo.return %j, %p2, %x3, %acc2, %h3, %g2, %z : tensor<i32>, tensor<8xi32>, tensor<4x6xf32>, tensor<i32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>
  }
  return %r#1, %r#2, %r#3, %r#4, %r#5, %r#6 : tensor<8xi32>, tensor<4x6xf32>, tensor<i32>, tensor<8xi32>, tensor<8xi32>, tensor<8xi32>
}
"#;

#[test]
fn loops_that_move_elements_compile_without_changing_results() {
    let module = parse_text(MOVING_LOOP).expect("parses");
    assert_eq!(compiled_loops(&module, "main"), vec![true]);
    let ints = |shape: Vec<i64>, v: &[i32]| {
        let bytes = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        Literal::new(TensorType::new(shape, ElementType::S32), bytes).expect("sized literal")
    };
    let mut rng = Rng(11);
    let perm = ints(vec![8], &[3, 1, 4, 0, 7, 5, 2, 6]);
    // Pivots inside the state and out of it on both sides; index vectors inside the matrix
    // (row 2 of 4, column 5 of 6: reversed, (5, 2) names it) and out of it. Updates whose
    // operand nothing reads after them update it in place; the others (an operand read
    // later in the body, captured from outside the loop, or passed on as the next state)
    // must copy it.
    for (piv, rc) in [
        ([7, 1, 5, 3, 6, 5, 7, 7], [5, 2]),
        ([-3, 9, 2, 100, 0, -1, 8, 4], [2, 5]),
        ([0, 0, 0, 0, 0, 0, 0, 0], [-1, 0]),
    ] {
        let args = [
            perm.clone(),
            ints(vec![8], &piv),
            literal(&mut rng, &TensorType::new(vec![4, 6], ElementType::F32)),
            literal(&mut rng, &TensorType::new(vec![2, 3], ElementType::F32)),
            ints(vec![2], &rc),
        ];
        assert_fusion_invisible(&module, &args, "compiled moving loop");
    }
}

/// A counted loop over two f32 states of `len` elements whose body is a random chain of the
/// f32 ops compiled loops evaluate in registers; with `split`, broken in the middle by a
/// compare and a select (so values cross from one register run to the next, and some are
/// read after), else one register run iterated in registers (the next states may also be
/// the current ones, passed through or trading places).
fn random_loop(rng: &mut Rng, len: usize, split: bool, bound_inside: bool) -> String {
    random_loop_of(rng, len, (split, bound_inside), (&UNARY, &BINARY), 3)
}

/// The f32 ops compiled loops evaluate in registers.
const UNARY: [&str; 14] = [
    "abs",
    "negate",
    "sqrt",
    "rsqrt",
    "ceil",
    "floor",
    "exponential",
    "exponential_minus_one",
    "log",
    "log_plus_one",
    "logistic",
    "tanh",
    "sine",
    "cosine",
];
const BINARY: [&str; 7] = [
    "add", "subtract", "multiply", "divide", "maximum", "minimum", "power",
];

/// [`random_loop`] over the ops `unary` and `binary`, iterating `trips` times.
fn random_loop_of(
    rng: &mut Rng,
    len: usize,
    (split, bound_inside): (bool, bool),
    (unary, binary): (&[&str], &[&str]),
    trips: u32,
) -> String {
    let t = format!("tensor<{len}xf32>");
    let mut body = String::new();
    let mut values = vec!["%a".to_string(), "%b".to_string()];
    let steps = 6 + rng.below(20);
    for k in 0..steps {
        let pick = |rng: &mut Rng, values: &[String]| values[rng.below(values.len())].clone();
        let v = format!("%v{k}");
        if split && k == steps / 2 {
            let (x, y) = (pick(rng, &values), pick(rng, &values));
            body += &format!(
                "    %g{k} = stablehlo.compare GT, {x}, {y}, TOTALORDER : ({t}, {t}) -> tensor<{len}xi1>\n"
            );
            body +=
                &format!("    {v} = stablehlo.select %g{k}, {x}, {y} : tensor<{len}xi1>, {t}\n");
        } else if rng.below(2) == 0 {
            let op = unary[rng.below(unary.len())];
            body += &format!("    {v} = stablehlo.{op} {} : {t}\n", pick(rng, &values));
        } else {
            let op = binary[rng.below(binary.len())];
            let (x, y) = (pick(rng, &values), pick(rng, &values));
            body += &format!("    {v} = stablehlo.{op} {x}, {y} : {t}\n");
        }
        values.push(v);
    }
    let first = values[values.len() - 1].clone();
    let second = if split {
        values[2 + rng.below(steps)].clone()
    } else {
        values[rng.below(values.len())].clone()
    };
    // JAX's text puts the bound inside the condition; its bytecode, outside the loop.
    let bound = format!("%lim = stablehlo.constant dense<{trips}> : tensor<i32>");
    let (outside, inside) = if bound_inside {
        (String::new(), bound)
    } else {
        (bound, String::new())
    };
    format!(
        "func.func @main(%x: {t}, %y: {t}) -> ({t}, {t}) {{
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  {outside}
  %r:3 = stablehlo.while(%i = %c0, %a = %x, %b = %y) : tensor<i32>, {t}, {t}
  cond {{
    {inside}
    %p = stablehlo.compare LT, %i, %lim, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
{body}    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %j, {first}, {second} : tensor<i32>, {t}, {t}
  }}
  return %r#1, %r#2 : {t}, {t}
}}
"
    )
}

#[test]
fn register_runs_in_compiled_loops_compute_the_interpreters_bits() {
    let mut rng = Rng(11);
    let mut runs = 0;
    // Lengths below, at, between and past whole chunks of 16.
    for len in [1, 3, 16, 37, 100, 1024] {
        for k in 0..24 {
            let text = random_loop(&mut rng, len, k % 2 == 0, k % 4 < 2);
            let module = parse_text(&text).expect("parses");
            assert_eq!(compiled_loops(&module, "main"), vec![true], "{text}");
            let main = module.function("main").expect("main");
            let while_op = main.body.blocks[0]
                .ops
                .iter()
                .find(|o| o.kind == OpKind::While)
                .expect("a while");
            assert!(
                counted_loop_work(&module, main, while_op).is_some(),
                "not counted:\n{text}"
            );
            runs += loop_register_runs(&module, "main")[0];
            let ty = TensorType::new(vec![len as i64], ElementType::F32);
            let args = [literal(&mut rng, &ty), literal(&mut rng, &ty)];
            assert_fusion_invisible(&module, &args, &text);
        }
    }
    // Split bodies mostly hold two runs (before and after the select), the others one.
    assert!(runs > 6 * 24, "only {runs} register runs");
}

#[test]
fn generated_loops_compute_the_interpreters_bits() {
    // Counted loops of many iterations whose body is one register run of ops with a
    // generated form. Random chains soon reach infinities and NaN, whose sine stops the
    // generated loop: the register run then finishes that chunk.
    const UNARY: [&str; 9] = [
        "abs",
        "negate",
        "sqrt",
        "rsqrt",
        "exponential",
        "logistic",
        "tanh",
        "sine",
        "cosine",
    ];
    const BINARY: [&str; 6] = [
        "add", "subtract", "multiply", "divide", "maximum", "minimum",
    ];
    let mut rng = Rng(17);
    for len in [1, 3, 16, 37, 100] {
        for k in 0..16 {
            let shape = (false, k % 2 == 0);
            let text = random_loop_of(&mut rng, len, shape, (&UNARY, &BINARY), 300);
            let module = parse_text(&text).expect("parses");
            assert_eq!(compiled_loops(&module, "main"), vec![true], "{text}");
            if tile_code::loops_available() {
                assert_eq!(generated_loops(&module, "main"), vec![true], "{text}");
            }
            let ty = TensorType::new(vec![len as i64], ElementType::F32);
            for _ in 0..3 {
                // Small arguments, so that chains stay finite for a while, and random ones.
                let small: Vec<f32> = (0..len)
                    .map(|_| (rng.below(2001) as f32 - 1000.0) / 4000.0)
                    .collect();
                let x = Literal::from_f32(&[len as i64], &small).expect("literal");
                let args = [x, literal(&mut rng, &ty)];
                assert_fusion_invisible(&module, &args, &text);
            }
        }
    }
}

#[test]
fn transposed_products_fold_without_changing_bits() {
    // Weight gradients as JAX lowers them: a product over the batch dimension, then a
    // transpose; and one whose product is also returned, which must not fold.
    let text = "func.func @main(%g: tensor<64x48xf32>, %x: tensor<64x80xf32>, %w: tensor<80x48xf32>) -> (tensor<80x48xf32>, tensor<48x64xf32>, tensor<64x48xf32>) {
  %d = stablehlo.dot_general %g, %x, contracting_dims = [0] x [0] : (tensor<64x48xf32>, tensor<64x80xf32>) -> tensor<48x80xf32>
  %t = stablehlo.transpose %d, dims = [1, 0] : (tensor<48x80xf32>) -> tensor<80x48xf32>
  %e = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<64x80xf32>, tensor<80x48xf32>) -> tensor<64x48xf32>
  %u = stablehlo.transpose %e, dims = [1, 0] : (tensor<64x48xf32>) -> tensor<48x64xf32>
  return %t, %u, %e : tensor<80x48xf32>, tensor<48x64xf32>, tensor<64x48xf32>
}
";
    let module = parse_text(text).expect("parses");
    let mut rng = Rng(13);
    for _ in 0..5 {
        let args: Vec<Literal> = [vec![64, 48], vec![64, 80], vec![80, 48]]
            .into_iter()
            .map(|shape| literal(&mut rng, &TensorType::new(shape, ElementType::F32)))
            .collect();
        assert_fusion_invisible(&module, &args, "transposed products");
    }
}

#[test]
fn products_added_to_a_value_match_the_ops_run_apart() {
    // An RNN step's weight-gradient accumulator as JAX lowers it (`acc + transpose(dz^T h)`)
    // and a residual connection over 300 summed terms whose addend stays live: each runs as
    // one product summing into the addend, which adds the addend before the kernels' last
    // partial sums instead of after them, so the results agree up to rounding.
    let text = "func.func @main(%acc: tensor<40x96xf32>, %dz: tensor<16x96xf32>, %h: tensor<16x40xf32>, %x: tensor<16x300xf32>, %w: tensor<300x40xf32>, %r: tensor<16x40xf32>) -> (tensor<40x96xf32>, tensor<16x40xf32>, tensor<16x40xf32>) {
  %d = stablehlo.dot_general %dz, %h, contracting_dims = [0] x [0] : (tensor<16x96xf32>, tensor<16x40xf32>) -> tensor<96x40xf32>
  %t = stablehlo.transpose %d, dims = [1, 0] : (tensor<96x40xf32>) -> tensor<40x96xf32>
  %s = stablehlo.add %acc, %t : tensor<40x96xf32>
  %e = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<16x300xf32>, tensor<300x40xf32>) -> tensor<16x40xf32>
  %y = stablehlo.add %e, %r : tensor<16x40xf32>
  %z = stablehlo.multiply %r, %r : tensor<16x40xf32>
  return %s, %y, %z : tensor<40x96xf32>, tensor<16x40xf32>, tensor<16x40xf32>
}
";
    let module = parse_text(text).expect("parses");
    let mut rng = Rng(29);
    for _ in 0..3 {
        let args: Vec<Literal> = module.functions[0]
            .ty
            .inputs
            .iter()
            .map(|ty| {
                let Type::Tensor(ty) = ty else {
                    panic!("tensor arguments")
                };
                let n: usize = ty.shape.iter().map(|&d| d as usize).product();
                let data = (0..n)
                    .flat_map(|_| (rng.below(2001) as f32 / 1000.0 - 1.0).to_le_bytes())
                    .collect();
                Literal::new(ty.clone(), data).expect("sized literal")
            })
            .collect();
        let apart = run(&module, &args, false).expect("runs unfused");
        let together = run(&module, &args, true).expect("runs fused");
        for (want, got) in apart.iter().zip(&together) {
            assert_eq!(want.ty, got.ty);
            let floats = |lit: &Literal| -> Vec<f32> {
                lit.data
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect()
            };
            for (w, g) in floats(want).iter().zip(floats(got)) {
                // At most 300 terms of magnitude below 1: the two orders differ by a few
                // units in the last place of sums below 300.
                assert!((w - g).abs() <= 1e-4, "{w} against {g}");
            }
        }
    }
}

#[test]
fn golden_jax_programs_give_the_same_bits_fused() {
    let mut rng = Rng(42);
    let mut compared = 0;
    for (path, text) in golden_programs() {
        let Ok(module) = parse_text(&text) else {
            continue;
        };
        let Some(args) = args_for(&mut rng, &module) else {
            continue;
        };
        assert_fusion_invisible(&module, &args, &path.display().to_string());
        compared += 1;
    }
    assert!(compared >= 10, "only {compared} golden programs compared");
}

/// Two NHWC convolutions of different shapes (a strided, padded 3x3 and a 1x1), whose
/// kept plans must not mix.
const TWO_CONVOLUTIONS: &str = "func.func @main(%x: tensor<2x9x9x3xf32>, %w: tensor<3x3x3x4xf32>, %v: tensor<1x1x4x5xf32>) -> tensor<2x5x5x5xf32> {
  %a = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x9x9x3xf32>, tensor<3x3x3x4xf32>) -> tensor<2x5x5x4xf32>
  %b = stablehlo.convolution(%a, %v) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[0, 0], [0, 0]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x5x5x4xf32>, tensor<1x1x4x5xf32>) -> tensor<2x5x5x5xf32>
  return %b : tensor<2x5x5x5xf32>
}
";

#[test]
fn kept_plans_give_the_same_bits_across_calls_modules_and_threads() {
    // One cache serves calls of a row-group module and a compiled-loop module in turn (each
    // switch starts it over), then two threads at once: every result matches a call with
    // a fresh cache.
    let rows = parse_text(LAYER_NORM_SOFTMAX).expect("parses");
    let fori = parse_text(FORI_LOOP).expect("parses");
    let convs = parse_text(TWO_CONVOLUTIONS).expect("parses");
    let mut rng = Rng(23);
    let conv_args: Vec<Literal> = [vec![2, 9, 9, 3], vec![3, 3, 3, 4], vec![1, 1, 4, 5]]
        .into_iter()
        .map(|shape| literal(&mut rng, &TensorType::new(shape, ElementType::F32)))
        .collect();
    let row_args: Vec<Literal> = [vec![300, 517], vec![517], vec![517]]
        .into_iter()
        .map(|shape| literal(&mut rng, &TensorType::new(shape, ElementType::F32)))
        .collect();
    let ty = TensorType::new(vec![16], ElementType::F32);
    let n = Literal::new(
        TensorType::new(vec![], ElementType::S64),
        5i64.to_le_bytes().to_vec(),
    )
    .expect("sized literal");
    let fori_args = [literal(&mut rng, &ty), literal(&mut rng, &ty), n];
    let options = EvalOptions { fuse: true };
    let fresh = |module: &Module, args: &[Literal]| {
        run_function_with_options(module, "main", args, &SingleDevice, options).expect("runs")
    };
    let (want_rows, want_fori) = (fresh(&rows, &row_args), fresh(&fori, &fori_args));
    let want_convs = fresh(&convs, &conv_args);
    let same = |got: &[Literal], want: &[Literal]| {
        got.len() == want.len() && got.iter().zip(want).all(|(a, b)| same_bits(a, b))
    };
    let cache = PlanCache::new();
    let cached = |module: &Module, args: &[Literal]| {
        run_function_cached(module, "main", args, &SingleDevice, options, &cache).expect("runs")
    };
    cache.prepare(&rows, "main", options);
    for round in 0..3 {
        assert!(
            same(&cached(&rows, &row_args), &want_rows),
            "rows, round {round}"
        );
        assert!(
            same(&cached(&rows, &row_args), &want_rows),
            "rows again, round {round}"
        );
        assert!(
            same(&cached(&fori, &fori_args), &want_fori),
            "loop, round {round}"
        );
        for again in 0..2 {
            assert!(
                same(&cached(&convs, &conv_args), &want_convs),
                "convolutions, round {round}, call {again}"
            );
        }
    }
    std::thread::scope(|s| {
        let a = s.spawn(|| cached(&rows, &row_args));
        let b = s.spawn(|| cached(&rows, &row_args));
        for handle in [a, b] {
            assert!(
                same(&handle.join().expect("no panic"), &want_rows),
                "threads"
            );
        }
    });
}

/// A loop of scalar work only: integer (s32, u32, s64), float (f32, f64) and predicate
/// arithmetic, integer maximum and minimum, float negation, absolute value and square root,
/// converts between the integer, predicate and float types (floats to signed integers
/// saturating), IEEE and integer compares, selects, one-element reads and writes at clamped
/// indices (one and two dimensions), replacing scatters at indices in and out of range,
/// updates in place and ones that must copy (operand read later, captured from outside),
/// carried values that trade places, and a value computed once before the loop.
const SCALAR_LOOP: &str = r#"func.func @main(%v: tensor<16xf32>, %m: tensor<3x5xi32>, %x: tensor<f64>, %u: tensor<ui32>, %rc: tensor<2xi32>, %w: tensor<i64>, %lim: tensor<i32>) -> (tensor<i32>, tensor<16xf32>, tensor<3x5xi32>, tensor<f64>, tensor<ui32>, tensor<i64>, tensor<i64>, tensor<i64>, tensor<i1>, tensor<3x5xi32>, tensor<f32>) {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %t = stablehlo.constant dense<true> : tensor<i1>
  %w0 = stablehlo.constant dense<7> : tensor<i64>
  %f0 = stablehlo.constant dense<0.0> : tensor<f32>
  %r:11 = stablehlo.while(%i = %c0, %a = %v, %g = %m, %s = %x, %k = %u, %p = %w, %q = %w0, %o = %w, %b = %t, %h = %m, %z = %f0) : tensor<i32>, tensor<16xf32>, tensor<3x5xi32>, tensor<f64>, tensor<ui32>, tensor<i64>, tensor<i64>, tensor<i64>, tensor<i1>, tensor<3x5xi32>, tensor<f32>
  cond {
    %lt = stablehlo.compare LT, %i, %lim, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %big = stablehlo.constant dense<1.0e300> : tensor<f64>
    %fin = stablehlo.compare LT, %s, %big, FLOAT : (tensor<f64>, tensor<f64>) -> tensor<i1>
    %nan = stablehlo.compare NE, %s, %s, FLOAT : (tensor<f64>, tensor<f64>) -> tensor<i1>
    %ok = stablehlo.or %fin, %nan : tensor<i1>
    %go = stablehlo.and %lt, %ok : tensor<i1>
    stablehlo.return %go : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %two = stablehlo.constant dense<2> : tensor<i32>
    %three = stablehlo.constant dense<3> : tensor<i32>
    %sixteen = stablehlo.constant dense<16> : tensor<i32>
    %im1 = stablehlo.subtract %i, %one : tensor<i32>
    %neg = stablehlo.compare LT, %im1, %c0, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %wrap = stablehlo.add %im1, %sixteen : tensor<i32>
    %idx = stablehlo.select %neg, %wrap, %im1 : tensor<i1>, tensor<i32>
    %e1 = stablehlo.dynamic_slice %a, %idx, sizes = [1] : (tensor<16xf32>, tensor<i32>) -> tensor<1xf32>
    %e = stablehlo.reshape %e1 : (tensor<1xf32>) -> tensor<f32>
    %half = stablehlo.constant dense<0.5> : tensor<f32>
    %h1 = stablehlo.multiply %e, %half : tensor<f32>
    %if = stablehlo.convert %i : (tensor<i32>) -> tensor<f32>
    %hz = stablehlo.add %z, %if : tensor<f32>
    %h2 = stablehlo.add %h1, %hz : tensor<f32>
    %h3 = stablehlo.divide %h2, %e : tensor<f32>
    %h4 = stablehlo.subtract %h3, %half : tensor<f32>
    %gt = stablehlo.compare GE, %h4, %e, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %eq = stablehlo.compare EQ, %h4, %h3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %ha = stablehlo.abs %h4 : tensor<f32>
    %hr = stablehlo.sqrt %ha : tensor<f32>
    %hn = stablehlo.negate %hr : tensor<f32>
    %pick = stablehlo.select %gt, %hn, %h2 : tensor<i1>, tensor<f32>
    %ib = stablehlo.broadcast_in_dim %i, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %a2 = "stablehlo.scatter"(%a, %ib, %pick) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0]>}> ({
    ^bb0(%u0: tensor<f32>, %u1: tensor<f32>):
      stablehlo.return %u1 : tensor<f32>
    }) : (tensor<16xf32>, tensor<1xi32>, tensor<f32>) -> tensor<16xf32>
    %i3 = stablehlo.multiply %i, %three : tensor<i32>
    %h21 = stablehlo.reshape %h2 : (tensor<f32>) -> tensor<1xf32>
    %a3 = stablehlo.dynamic_update_slice %a2, %h21, %i3 : (tensor<16xf32>, tensor<1xf32>, tensor<i32>) -> tensor<16xf32>
    %row = stablehlo.subtract %i, %two : tensor<i32>
    %col = stablehlo.multiply %i, %two : tensor<i32>
    %gv1 = stablehlo.dynamic_slice %g, %row, %col, sizes = [1, 1] : (tensor<3x5xi32>, tensor<i32>, tensor<i32>) -> tensor<1x1xi32>
    %gv = stablehlo.reshape %gv1 : (tensor<1x1xi32>) -> tensor<i32>
    %gi = stablehlo.add %gv, %i : tensor<i32>
    %gm = stablehlo.maximum %gi, %col : tensor<i32>
    %gn = stablehlo.minimum %gm, %gv : tensor<i32>
    %bi = stablehlo.convert %b : (tensor<i1>) -> tensor<i32>
    %gx0 = stablehlo.xor %gn, %col : tensor<i32>
    %fi = stablehlo.convert %h4 : (tensor<f32>) -> tensor<i32>
    %gx1 = stablehlo.add %gx0, %bi : tensor<i32>
    %gx = stablehlo.add %gx1, %fi : tensor<i32>
    %gu1 = stablehlo.reshape %gx : (tensor<i32>) -> tensor<1x1xi32>
    %g2 = stablehlo.dynamic_update_slice %g, %gu1, %col, %row : (tensor<3x5xi32>, tensor<1x1xi32>, tensor<i32>, tensor<i32>) -> tensor<3x5xi32>
    %later1 = stablehlo.dynamic_slice %g, %i, %i, sizes = [1, 1] : (tensor<3x5xi32>, tensor<i32>, tensor<i32>) -> tensor<1x1xi32>
    %later = stablehlo.reshape %later1 : (tensor<1x1xi32>) -> tensor<i32>
    %g3 = "stablehlo.scatter"(%g2, %rc, %later) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0, 1], scatter_dims_to_operand_dims = [1, 0]>}> ({
    ^bb0(%u0: tensor<i32>, %u1: tensor<i32>):
      stablehlo.return %u1 : tensor<i32>
    }) : (tensor<3x5xi32>, tensor<2xi32>, tensor<i32>) -> tensor<3x5xi32>
    %mh = stablehlo.dynamic_update_slice %m, %gu1, %row, %row : (tensor<3x5xi32>, tensor<1x1xi32>, tensor<i32>, tensor<i32>) -> tensor<3x5xi32>
    %ss = stablehlo.constant dense<1.5> : tensor<f64>
    %sa = stablehlo.abs %s : tensor<f64>
    %sr = stablehlo.sqrt %sa : tensor<f64>
    %sn = stablehlo.negate %sr : tensor<f64>
    %s1 = stablehlo.multiply %sn, %ss : tensor<f64>
    %kd = stablehlo.convert %k : (tensor<ui32>) -> tensor<f64>
    %s2 = stablehlo.subtract %s1, %kd : tensor<f64>
    %s3 = stablehlo.divide %s2, %ss : tensor<f64>
    %sl = stablehlo.compare LE, %s3, %s, FLOAT : (tensor<f64>, tensor<f64>) -> tensor<i1>
    %pf = stablehlo.convert %p : (tensor<i64>) -> tensor<f32>
    %pd = stablehlo.convert %pf : (tensor<f32>) -> tensor<f64>
    %sx = stablehlo.add %s3, %pd : tensor<f64>
    %s4 = stablehlo.select %sl, %sx, %s1 : tensor<i1>, tensor<f64>
    %sf = stablehlo.convert %s : (tensor<f64>) -> tensor<f32>
    %zq = stablehlo.add %h4, %sf : tensor<f32>
    %km = stablehlo.constant dense<2654435761> : tensor<ui32>
    %ka = stablehlo.constant dense<40503> : tensor<ui32>
    %k1 = stablehlo.multiply %k, %km : tensor<ui32>
    %kmax = stablehlo.maximum %k1, %ka : tensor<ui32>
    %k2 = stablehlo.add %kmax, %ka : tensor<ui32>
    %kt = stablehlo.constant dense<3000000000> : tensor<ui32>
    %kg = stablehlo.compare GT, %k2, %kt, UNSIGNED : (tensor<ui32>, tensor<ui32>) -> tensor<i1>
    %kx = stablehlo.xor %kg, %eq : tensor<i1>
    %i64 = stablehlo.convert %gi : (tensor<i32>) -> tensor<i64>
    %pq0 = stablehlo.multiply %p, %q : tensor<i64>
    %pq = stablehlo.add %pq0, %i64 : tensor<i64>
    %ku = stablehlo.convert %k2 : (tensor<ui32>) -> tensor<i64>
    %pw0 = stablehlo.add %pq, %o : tensor<i64>
    %di = stablehlo.convert %s : (tensor<f64>) -> tensor<i64>
    %fl = stablehlo.convert %e : (tensor<f32>) -> tensor<i64>
    %pw1 = stablehlo.add %pw0, %ku : tensor<i64>
    %pw2 = stablehlo.add %pw1, %di : tensor<i64>
    %pw = stablehlo.add %pw2, %fl : tensor<i64>
    %dl = stablehlo.convert %s3 : (tensor<f64>) -> tensor<i32>
    %p320 = stablehlo.convert %pw : (tensor<i64>) -> tensor<i32>
    %p32 = stablehlo.add %p320, %dl : tensor<i32>
    %ip = stablehlo.convert %p32 : (tensor<i32>) -> tensor<i1>
    %b3 = stablehlo.xor %b, %kx : tensor<i1>
    %b2 = stablehlo.xor %b3, %ip : tensor<i1>
    %pmin = stablehlo.minimum %pw, %q : tensor<i64>
    %pc = stablehlo.compare GE, %pmin, %p, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    %p2 = stablehlo.select %pc, %pw, %q : tensor<i1>, tensor<i64>
    %j = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %j, %a3, %g3, %s4, %k2, %q, %p, %p2, %b2, %mh, %zq : tensor<i32>, tensor<16xf32>, tensor<3x5xi32>, tensor<f64>, tensor<ui32>, tensor<i64>, tensor<i64>, tensor<i64>, tensor<i1>, tensor<3x5xi32>, tensor<f32>
  }
  return %r#0, %r#1, %r#2, %r#3, %r#4, %r#5, %r#6, %r#7, %r#8, %r#9, %r#10 : tensor<i32>, tensor<16xf32>, tensor<3x5xi32>, tensor<f64>, tensor<ui32>, tensor<i64>, tensor<i64>, tensor<i64>, tensor<i1>, tensor<3x5xi32>, tensor<f32>
}
"#;

#[test]
fn scalar_loops_run_as_generated_code_with_the_interpreters_bits() {
    let module = parse_text(SCALAR_LOOP).expect("parses");
    assert_eq!(compiled_loops(&module, "main"), vec![true]);
    if tile_code::scalar_available() {
        assert_eq!(generated_loops(&module, "main"), vec![true]);
    }
    let ints = |shape: Vec<i64>, et: ElementType, v: &[i64]| {
        let bytes = match et {
            ElementType::S64 => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            _ => v.iter().flat_map(|&x| (x as i32).to_le_bytes()).collect(),
        };
        Literal::new(TensorType::new(shape, et), bytes).expect("sized literal")
    };
    let mut rng = Rng(29);
    // Index vectors inside the matrix (reversed: (4, 2) names row 2, column 4) and out
    // of it; trip counts that stay inside the arrays and ones whose indices clamp.
    for (rc, lim) in [([4, 2], 4), ([2, 4], 9), ([-1, 0], 12), ([0, 3], 0)] {
        for _ in 0..4 {
            let ty = |shape: Vec<i64>, et| TensorType::new(shape, et);
            let args = [
                literal(&mut rng, &ty(vec![16], ElementType::F32)),
                literal(&mut rng, &ty(vec![3, 5], ElementType::S32)),
                literal(&mut rng, &ty(vec![], ElementType::F64)),
                literal(&mut rng, &ty(vec![], ElementType::U32)),
                ints(vec![2], ElementType::S32, &rc),
                literal(&mut rng, &ty(vec![], ElementType::S64)),
                ints(vec![], ElementType::S32, &[lim]),
            ];
            assert_fusion_invisible(&module, &args, "scalar loop");
            // The generated code against the compiled loop's own interpreter.
            tile_code::set_enabled(false);
            let interpreted = run(&module, &args, true);
            tile_code::set_enabled(true);
            assert_same_outcome(&interpreted, &run(&module, &args, true), "scalar loop");
        }
    }
}
