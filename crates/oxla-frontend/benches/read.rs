//! Reading a program: the `read` phase of every compile, on the corpus's bytecode files
//! (`tests/corpus/*.v1.17.0.mlirbc`, what jaxlib 0.10.2 sends for the current version).

use criterion::{black_box, criterion_group, criterion_main, Criterion};

fn read(c: &mut Criterion) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus");
    let mut group = c.benchmark_group("read");
    for name in [
        "elementwise",
        "reduce",
        "cholesky",
        "cond",
        "large_constant",
    ] {
        let path = format!("{dir}/{name}.v1.17.0.mlirbc");
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        oxla_frontend::read_program(&bytes).expect("corpus file reads");
        group.bench_function(name, |b| {
            b.iter(|| oxla_frontend::read_program(black_box(&bytes)).unwrap())
        });
    }
    group.finish();
}

criterion_group!(benches, read);
criterion_main!(benches);
