//! Micro-benchmarks of the reference evaluator's hottest kernels, each run through
//! `run_function` on a one-op (or few-op) module, so dispatch cost is included.
//!
//! `cargo bench -p oxla-ir --bench eval` runs them all; append a filter (`-- dot`) for some.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use oxla_ir::{
    Attribute, Block, ElementType, Function, FunctionType, Literal, Module, Op, OpKind, Region,
    TensorType, Type, ValueId,
};

fn f32_type(shape: &[i64]) -> Type {
    Type::Tensor(TensorType::new(shape, ElementType::F32))
}

/// Deterministic values in [-1, 1).
fn values(n: usize) -> Vec<f32> {
    let mut state = 0x2545_f491_u32;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            (state >> 8) as f32 / (1u32 << 23) as f32 - 1.0
        })
        .collect()
}

fn literal(shape: &[i64]) -> Literal {
    let n = shape.iter().product::<i64>() as usize;
    Literal::from_f32(shape, &values(n)).expect("literal")
}

/// A tiny builder: one function `main` with the given inputs.
struct Builder {
    func: Function,
    ops: Vec<Op>,
    args: Vec<ValueId>,
}

impl Builder {
    fn new(inputs: &[Type]) -> Builder {
        let mut func = Function {
            name: "main".to_string(),
            ..Function::default()
        };
        let args = inputs.iter().map(|t| func.new_value(t.clone())).collect();
        func.ty.inputs = inputs.to_vec();
        Builder {
            func,
            ops: Vec::new(),
            args,
        }
    }

    fn op(
        &mut self,
        kind: OpKind,
        operands: &[ValueId],
        ty: Type,
        attrs: Vec<(&str, Attribute)>,
        regions: Vec<Region>,
    ) -> ValueId {
        let r = self.func.new_value(ty);
        let mut op = Op::new(kind, operands.to_vec(), vec![r]);
        op.attributes = attrs.into_iter().map(|(n, a)| (n.to_string(), a)).collect();
        op.regions = regions;
        self.ops.push(op);
        r
    }

    fn finish(mut self, result: ValueId) -> Module {
        self.ops
            .push(Op::new(OpKind::FuncReturn, vec![result], Vec::new()));
        self.func.ty = FunctionType {
            inputs: self.func.ty.inputs.clone(),
            results: vec![self.func.value_type(result).clone()],
        };
        self.func.body.blocks.push(Block {
            arguments: self.args.clone(),
            ops: self.ops,
        });
        Module {
            functions: vec![self.func],
            ..Module::default()
        }
    }
}

fn run(module: &Module, args: &[Literal]) -> Vec<Literal> {
    oxla_ir::eval::run_function(module, "main", args).expect("evaluation")
}

fn i64s(v: &[i64]) -> Attribute {
    Attribute::DenseI64Array(v.to_vec())
}

fn dot(c: &mut Criterion) {
    let mut group = c.benchmark_group("dot_general_f32");
    group.sample_size(10);
    for n in [128i64, 512] {
        let ty = f32_type(&[n, n]);
        let mut b = Builder::new(&[ty.clone(), ty.clone()]);
        let (x, y) = (b.args[0], b.args[1]);
        let r = b.op(
            OpKind::DotGeneral,
            &[x, y],
            ty,
            vec![
                ("lhs_contracting_dimensions", i64s(&[1])),
                ("rhs_contracting_dimensions", i64s(&[0])),
            ],
            Vec::new(),
        );
        let module = b.finish(r);
        let args = [literal(&[n, n]), literal(&[n, n])];
        group.throughput(Throughput::Elements((2 * n * n * n) as u64));
        group.bench_with_input(BenchmarkId::from_parameter(n), &args, |bench, args| {
            bench.iter(|| run(&module, black_box(args)))
        });
    }
    group.finish();
}

fn elementwise(c: &mut Criterion) {
    let n = 1i64 << 20;
    let ty = f32_type(&[n]);
    let mut b = Builder::new(&[ty.clone(), ty.clone()]);
    let (x, y) = (b.args[0], b.args[1]);
    let s = b.op(OpKind::Add, &[x, y], ty.clone(), vec![], vec![]);
    let p = b.op(OpKind::Multiply, &[s, x], ty.clone(), vec![], vec![]);
    let e = b.op(OpKind::Exponential, &[p], ty.clone(), vec![], vec![]);
    let r = b.op(OpKind::Add, &[e, y], ty, vec![], vec![]);
    let module = b.finish(r);
    let args = [literal(&[n]), literal(&[n])];
    let mut group = c.benchmark_group("elementwise_f32");
    group.sample_size(20);
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function("add_mul_exp_add_1M", |bench| {
        bench.iter(|| run(&module, black_box(&args)))
    });
    group.finish();
}

fn reduce(c: &mut Criterion) {
    let n = 1024i64;
    let mut group = c.benchmark_group("reduce_f32_1024x1024");
    group.sample_size(20);
    group.throughput(Throughput::Elements((n * n) as u64));
    let cases = [
        (OpKind::Add, "sum", 0i64),
        (OpKind::Add, "sum", 1),
        (OpKind::Maximum, "max", 1),
    ];
    for (kind, name, axis) in cases {
        let mut b = Builder::new(&[f32_type(&[n, n]), f32_type(&[])]);
        let (x, init) = (b.args[0], b.args[1]);
        // The body `return add(a0, a1)` (or max), with its values in the function's table.
        let a0 = b.func.new_value(f32_type(&[]));
        let a1 = b.func.new_value(f32_type(&[]));
        let sum = b.func.new_value(f32_type(&[]));
        let body = Region {
            blocks: vec![Block {
                arguments: vec![a0, a1],
                ops: vec![
                    Op::new(kind, vec![a0, a1], vec![sum]),
                    Op::new(OpKind::Return, vec![sum], Vec::new()),
                ],
            }],
        };
        let r = b.op(
            OpKind::Reduce,
            &[x, init],
            f32_type(&[n]),
            vec![("dimensions", i64s(&[axis]))],
            vec![body],
        );
        let module = b.finish(r);
        let args = [
            literal(&[n, n]),
            Literal::from_f32(&[], &[0.0]).expect("init"),
        ];
        group.bench_with_input(
            BenchmarkId::new(name, format!("axis{axis}")),
            &args,
            |bench, args| bench.iter(|| run(&module, black_box(args))),
        );
    }
    group.finish();
}

criterion_group!(benches, dot, elementwise, reduce);
criterion_main!(benches);
