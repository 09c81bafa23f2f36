//! The op vocabulary: one [`OpKind`] per StableHLO, `func` and CHLO op oxla knows by name.
//!
//! An op oxla does not know keeps its full name in [`OpKind::Other`]; later stages reject it
//! with an error that names it, so reading a program never fails just because of an unknown op.

macro_rules! op_kinds {
    ($($variant:ident => $name:literal,)*) => {
        /// The kind of an op, named after its StableHLO / MLIR spelling.
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        #[allow(missing_docs)]
        pub enum OpKind {
            $($variant,)*
            /// An op outside oxla's vocabulary, by full name (`dialect.op`).
            Other(String),
        }

        impl OpKind {
            /// Every known op kind.
            pub const KNOWN: &'static [OpKind] = &[$(OpKind::$variant,)*];

            /// The full op name (`stablehlo.add`, `func.return`).
            pub fn name(&self) -> &str {
                match self {
                    $(OpKind::$variant => $name,)*
                    OpKind::Other(name) => name,
                }
            }

            /// The kind for a full op name; unknown names become [`OpKind::Other`].
            pub fn from_name(name: &str) -> OpKind {
                match name {
                    $($name => OpKind::$variant,)*
                    other => OpKind::Other(other.to_string()),
                }
            }

            /// True for the ops that end a block: `func.return`, `stablehlo.return` and
            /// Shardy's `sdy.return`.
            pub fn is_terminator(&self) -> bool {
                match self {
                    OpKind::FuncReturn | OpKind::Return => true,
                    OpKind::Other(name) => name == "sdy.return",
                    _ => false,
                }
            }
        }
    };
}

op_kinds! {
    // func dialect
    Func => "func.func",
    Call => "func.call",
    FuncReturn => "func.return",
    // stablehlo: elementwise unary
    Abs => "stablehlo.abs",
    Cbrt => "stablehlo.cbrt",
    Ceil => "stablehlo.ceil",
    Convert => "stablehlo.convert",
    BitcastConvert => "stablehlo.bitcast_convert",
    CountLeadingZeros => "stablehlo.count_leading_zeros",
    Cosine => "stablehlo.cosine",
    Exponential => "stablehlo.exponential",
    ExponentialMinusOne => "stablehlo.exponential_minus_one",
    Floor => "stablehlo.floor",
    Imag => "stablehlo.imag",
    IsFinite => "stablehlo.is_finite",
    Log => "stablehlo.log",
    LogPlusOne => "stablehlo.log_plus_one",
    Logistic => "stablehlo.logistic",
    Negate => "stablehlo.negate",
    Not => "stablehlo.not",
    PopulationCount => "stablehlo.popcnt",
    Real => "stablehlo.real",
    ReducePrecision => "stablehlo.reduce_precision",
    RoundNearestAfz => "stablehlo.round_nearest_afz",
    RoundNearestEven => "stablehlo.round_nearest_even",
    Rsqrt => "stablehlo.rsqrt",
    Sign => "stablehlo.sign",
    Sine => "stablehlo.sine",
    Sqrt => "stablehlo.sqrt",
    Tan => "stablehlo.tan",
    Tanh => "stablehlo.tanh",
    // stablehlo: elementwise binary / ternary
    Add => "stablehlo.add",
    And => "stablehlo.and",
    Atan2 => "stablehlo.atan2",
    Complex => "stablehlo.complex",
    Divide => "stablehlo.divide",
    Maximum => "stablehlo.maximum",
    Minimum => "stablehlo.minimum",
    Multiply => "stablehlo.multiply",
    Or => "stablehlo.or",
    Power => "stablehlo.power",
    Remainder => "stablehlo.remainder",
    ShiftLeft => "stablehlo.shift_left",
    ShiftRightArithmetic => "stablehlo.shift_right_arithmetic",
    ShiftRightLogical => "stablehlo.shift_right_logical",
    Subtract => "stablehlo.subtract",
    Xor => "stablehlo.xor",
    Compare => "stablehlo.compare",
    Select => "stablehlo.select",
    Clamp => "stablehlo.clamp",
    // stablehlo: data movement and shape
    Constant => "stablehlo.constant",
    Iota => "stablehlo.iota",
    BroadcastInDim => "stablehlo.broadcast_in_dim",
    Broadcast => "stablehlo.broadcast",
    Reshape => "stablehlo.reshape",
    Transpose => "stablehlo.transpose",
    Slice => "stablehlo.slice",
    DynamicSlice => "stablehlo.dynamic_slice",
    DynamicUpdateSlice => "stablehlo.dynamic_update_slice",
    Concatenate => "stablehlo.concatenate",
    Pad => "stablehlo.pad",
    Reverse => "stablehlo.reverse",
    Gather => "stablehlo.gather",
    Scatter => "stablehlo.scatter",
    Sort => "stablehlo.sort",
    GetTupleElement => "stablehlo.get_tuple_element",
    Tuple => "stablehlo.tuple",
    GetDimensionSize => "stablehlo.get_dimension_size",
    SetDimensionSize => "stablehlo.set_dimension_size",
    DynamicBroadcastInDim => "stablehlo.dynamic_broadcast_in_dim",
    DynamicReshape => "stablehlo.dynamic_reshape",
    DynamicIota => "stablehlo.dynamic_iota",
    DynamicPad => "stablehlo.dynamic_pad",
    DynamicGather => "stablehlo.dynamic_gather",
    DynamicConv => "stablehlo.dynamic_conv",
    RealDynamicSlice => "stablehlo.real_dynamic_slice",
    // stablehlo: compute
    DotGeneral => "stablehlo.dot_general",
    Dot => "stablehlo.dot",
    Convolution => "stablehlo.convolution",
    Reduce => "stablehlo.reduce",
    ReduceWindow => "stablehlo.reduce_window",
    SelectAndScatter => "stablehlo.select_and_scatter",
    Fft => "stablehlo.fft",
    Cholesky => "stablehlo.cholesky",
    TriangularSolve => "stablehlo.triangular_solve",
    Rng => "stablehlo.rng",
    RngBitGenerator => "stablehlo.rng_bit_generator",
    BatchNormInference => "stablehlo.batch_norm_inference",
    BatchNormTraining => "stablehlo.batch_norm_training",
    BatchNormGrad => "stablehlo.batch_norm_grad",
    // stablehlo: control flow and structure
    While => "stablehlo.while",
    If => "stablehlo.if",
    Case => "stablehlo.case",
    Return => "stablehlo.return",
    OptimizationBarrier => "stablehlo.optimization_barrier",
    Composite => "stablehlo.composite",
    CustomCall => "stablehlo.custom_call",
    Map => "stablehlo.map",
    // stablehlo: distribution and host communication
    AfterAll => "stablehlo.after_all",
    CreateToken => "stablehlo.create_token",
    Infeed => "stablehlo.infeed",
    Outfeed => "stablehlo.outfeed",
    Send => "stablehlo.send",
    Recv => "stablehlo.recv",
    ReplicaId => "stablehlo.replica_id",
    PartitionId => "stablehlo.partition_id",
    AllGather => "stablehlo.all_gather",
    AllReduce => "stablehlo.all_reduce",
    AllToAll => "stablehlo.all_to_all",
    ReduceScatter => "stablehlo.reduce_scatter",
    CollectivePermute => "stablehlo.collective_permute",
    CollectiveBroadcast => "stablehlo.collective_broadcast",
    // stablehlo: quantization
    UniformQuantize => "stablehlo.uniform_quantize",
    UniformDequantize => "stablehlo.uniform_dequantize",
    // chlo ops JAX may emit
    ChloErf => "chlo.erf",
    ChloErfInv => "chlo.erf_inv",
    ChloErfc => "chlo.erfc",
    ChloLgamma => "chlo.lgamma",
    ChloDigamma => "chlo.digamma",
    ChloPolygamma => "chlo.polygamma",
    ChloZeta => "chlo.zeta",
    ChloBesselI1e => "chlo.bessel_i1e",
    ChloAcos => "chlo.acos",
    ChloAcosh => "chlo.acosh",
    ChloAsin => "chlo.asin",
    ChloAsinh => "chlo.asinh",
    ChloAtan => "chlo.atan",
    ChloAtanh => "chlo.atanh",
    ChloCosh => "chlo.cosh",
    ChloSinh => "chlo.sinh",
    ChloTan => "chlo.tan",
    ChloConj => "chlo.conj",
    ChloIsInf => "chlo.is_inf",
    ChloIsNegInf => "chlo.is_neg_inf",
    ChloIsPosInf => "chlo.is_pos_inf",
    ChloNextAfter => "chlo.next_after",
    ChloTopK => "chlo.top_k",
    ChloSquare => "chlo.square",
    ChloConstantLike => "chlo.constant_like",
    // ops around sharding annotations; on one device they forward their operands
    UnrealizedConversionCast => "builtin.unrealized_conversion_cast",
    SdyShardingConstraint => "sdy.sharding_constraint",
    SdyShardingGroup => "sdy.sharding_group",
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for kind in OpKind::KNOWN {
            assert!(
                seen.insert(kind.name()),
                "duplicate op name {}",
                kind.name()
            );
            assert_eq!(&OpKind::from_name(kind.name()), kind);
        }
        assert_eq!(
            OpKind::from_name("mydialect.frob"),
            OpKind::Other("mydialect.frob".to_string())
        );
    }
}
