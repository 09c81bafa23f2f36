//! Whole programs through the evaluator, as the plugin runs them after compiling: the
//! programs JAX lowers for some of `bench/jax_bench.py`'s workloads (`benches/programs/`,
//! JAX's StableHLO text, which keeps constants inside the regions that use them where the
//! bytecode the plugin receives has them at the top), read once and called repeatedly
//! with one kept plan cache, so fusion, row groups and compiled loops are all in the
//! measurement, and JAX and the plugin's dispatch are not.
//!
//! `cargo bench -p oxla-frontend --bench programs` runs them all; append a filter
//! (`-- layer_norm`) for some. `RAYON_NUM_THREADS=1` measures one evaluator thread. Where
//! the CPU runs generated code, each program is measured a second time (`NAME/interpreted`)
//! with fused kernels kept on the tile interpreter.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use oxla_ir::eval::{run_function_cached, tile_code, EvalOptions, PlanCache, SingleDevice};
use oxla_ir::{ElementType, Literal, Module, Type};
use std::path::Path;

/// Deterministic f32 values in [-1, 1).
fn values(n: usize, seed: u32) -> Vec<f32> {
    let mut state = 0x2545_f491_u32 ^ seed;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

fn load(name: &str) -> (Module, Vec<Literal>) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("benches/programs")
        .join(format!("{name}.mlir"));
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let module = oxla_frontend::parse_text(&text).expect("a program JAX lowered");
    let func = module.function("main").expect("main");
    let args = func
        .ty
        .inputs
        .iter()
        .enumerate()
        .map(|(k, ty)| match ty {
            Type::Tensor(t) if t.element_type == ElementType::F32 => {
                let n = t.num_elements().expect("a static shape");
                Literal::from_f32(&t.shape, &values(n, k as u32)).expect("literal")
            }
            other => panic!("{name}: no generator for an argument of type {other}"),
        })
        .collect();
    (module, args)
}

fn programs(c: &mut Criterion) {
    let mut group = c.benchmark_group("program");
    group.sample_size(30);
    for name in [
        "layer_norm",
        "softmax",
        "logsumexp",
        "sumsq",
        "elementwise_chain",
        "fori_loop",
        // `v.at[i].set(v[i - 1] * 0.5 + 1.0)` for i in 1..1024: `op_sweep.py`'s `fori_set_1k`.
        "fori_set",
    ] {
        let (module, args) = load(name);
        let cache = PlanCache::new();
        let call = || {
            run_function_cached(
                &module,
                "main",
                &args,
                &SingleDevice,
                EvalOptions::default(),
                &cache,
            )
            .expect("the program runs")
        };
        // Results go back to the evaluator's buffer cache when dropped, as the plugin's
        // device buffers give theirs back, so a call reuses the last call's result memory
        // instead of zeroing fresh pages.
        let call_and_return = || {
            for result in black_box(call()) {
                if let Ok(bytes) = std::sync::Arc::try_unwrap(result.data) {
                    oxla_ir::eval::return_buffer(bytes);
                }
            }
        };
        call_and_return();
        group.bench_function(name, |bench| bench.iter(call_and_return));
        // The same program with fused kernels kept on the tile interpreter.
        if tile_code::available() {
            tile_code::set_enabled(false);
            call_and_return();
            group.bench_function(format!("{name}/interpreted"), |bench| {
                bench.iter(call_and_return)
            });
            tile_code::set_enabled(true);
        }
    }
    group.finish();
}

criterion_group!(benches, programs);
criterion_main!(benches);
