//! The pretty forms of StableHLO, CHLO and `func` ops, and the regrouping of flattened
//! structured attributes for the generic form.
//!
//! Each pretty printer checks that the op has the operands, results and attribute kinds
//! its form needs; when it does not, it returns `false` and the generic form is used.

use super::attrs::{precision_name, write_dict, write_string, write_symbol};
use super::{write_types, Printer};
use crate::attrs::{Attribute, NamedAttribute};
use crate::module::Op;
use crate::ops::OpKind;
use crate::types::{ElementType, TensorType, Type};
use std::fmt::Write;

const GATHER_LISTS: [&str; 5] = [
    "offset_dims",
    "collapsed_slice_dims",
    "operand_batching_dims",
    "start_indices_batching_dims",
    "start_index_map",
];
const SCATTER_LISTS: [&str; 5] = [
    "update_window_dims",
    "inserted_window_dims",
    "input_batching_dims",
    "scatter_indices_batching_dims",
    "scatter_dims_to_operand_dims",
];
const DOT_LISTS: [&str; 4] = [
    "lhs_batching_dimensions",
    "rhs_batching_dimensions",
    "lhs_contracting_dimensions",
    "rhs_contracting_dimensions",
];
const CONV_FIELDS: [&str; 9] = [
    "input_batch_dimension",
    "input_feature_dimension",
    "input_spatial_dimensions",
    "kernel_input_feature_dimension",
    "kernel_output_feature_dimension",
    "kernel_spatial_dimensions",
    "output_batch_dimension",
    "output_feature_dimension",
    "output_spatial_dimensions",
];

fn get<'a>(op: &'a Op, name: &str) -> Option<&'a Attribute> {
    op.attr(name)
}

fn i64s<'a>(op: &'a Op, name: &str) -> Option<&'a [i64]> {
    match get(op, name)? {
        Attribute::DenseI64Array(v) => Some(v),
        _ => None,
    }
}

fn int(op: &Op, name: &str) -> Option<i64> {
    match get(op, name)? {
        Attribute::Integer { value, .. } => i64::try_from(*value).ok(),
        _ => None,
    }
}

fn write_list(out: &mut String, values: &[i64]) {
    out.push('[');
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{v}");
    }
    out.push(']');
}

/// Formats `<a = [..], b = n>` with MLIR's struct rules (empty lists and zeros omitted).
fn struct_body(fields: &[(&str, StructField)]) -> String {
    let mut out = String::from("<");
    let mut first = true;
    for (name, field) in fields {
        let text = match field {
            StructField::List(v) if !v.is_empty() => {
                let mut s = String::new();
                write_list(&mut s, v);
                s
            }
            StructField::Int(v) if *v != 0 => v.to_string(),
            _ => continue,
        };
        if !first {
            out.push_str(", ");
        }
        first = false;
        let _ = write!(out, "{name} = {text}");
    }
    out.push('>');
    out
}

enum StructField {
    List(Vec<i64>),
    Int(i64),
}

/// Prints convolution dimension numbers as `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`.
fn conv_dims_text(op: &Op) -> Option<String> {
    let one = |batch: &str, feature: &str, spatial: &str, b: char, f: char| -> Option<String> {
        let batch = int(op, batch)?;
        let feature = int(op, feature)?;
        let spatial = i64s(op, spatial)?;
        let rank = spatial.len() + 2;
        let mut labels: Vec<Option<String>> = vec![None; rank];
        let mut put = |pos: i64, label: String| -> Option<()> {
            let slot = labels.get_mut(usize::try_from(pos).ok()?)?;
            if slot.is_some() {
                return None;
            }
            *slot = Some(label);
            Some(())
        };
        put(batch, b.to_string())?;
        put(feature, f.to_string())?;
        for (i, &p) in spatial.iter().enumerate() {
            put(p, i.to_string())?;
        }
        let labels: Option<Vec<String>> = labels.into_iter().collect();
        Some(format!("[{}]", labels?.join(", ")))
    };
    let input = one(
        "input_batch_dimension",
        "input_feature_dimension",
        "input_spatial_dimensions",
        'b',
        'f',
    )?;
    let kernel = one(
        "kernel_input_feature_dimension",
        "kernel_output_feature_dimension",
        "kernel_spatial_dimensions",
        'i',
        'o',
    )?;
    let output = one(
        "output_batch_dimension",
        "output_feature_dimension",
        "output_spatial_dimensions",
        'b',
        'f',
    )?;
    Some(format!("{input}x{kernel}->{output}"))
}

/// The op's attributes with flattened structured attributes regrouped into their
/// StableHLO attribute (`dimension_numbers = #stablehlo.gather<...>`, ...).
pub(crate) fn regroup_attributes(op: &Op) -> Vec<NamedAttribute> {
    let mut attrs = op.attributes.clone();
    let mut group = |names: &[&str], target: &str, text: Option<String>| {
        if let Some(text) = text {
            attrs.retain(|(n, _)| !names.contains(&n.as_str()));
            attrs.push((target.to_string(), Attribute::Opaque(text)));
        }
    };
    let lists = |names: &[&'static str]| -> Option<Vec<(&'static str, StructField)>> {
        names
            .iter()
            .map(|n| Some((*n, StructField::List(i64s(op, n)?.to_vec()))))
            .collect()
    };
    match op.kind {
        OpKind::Gather | OpKind::DynamicGather => {
            let text = lists(&GATHER_LISTS).and_then(|mut fields| {
                fields.push((
                    "index_vector_dim",
                    StructField::Int(int(op, "index_vector_dim")?),
                ));
                Some(format!("#stablehlo.gather{}", struct_body(&fields)))
            });
            let mut names = GATHER_LISTS.to_vec();
            names.push("index_vector_dim");
            group(&names, "dimension_numbers", text);
        }
        OpKind::Scatter => {
            let text = lists(&SCATTER_LISTS).and_then(|mut fields| {
                fields.push((
                    "index_vector_dim",
                    StructField::Int(int(op, "index_vector_dim")?),
                ));
                Some(format!("#stablehlo.scatter{}", struct_body(&fields)))
            });
            let mut names = SCATTER_LISTS.to_vec();
            names.push("index_vector_dim");
            group(&names, "scatter_dimension_numbers", text);
        }
        OpKind::DotGeneral => {
            let text =
                lists(&DOT_LISTS).map(|fields| format!("#stablehlo.dot{}", struct_body(&fields)));
            group(&DOT_LISTS, "dot_dimension_numbers", text);
        }
        OpKind::Convolution | OpKind::DynamicConv => {
            let text = conv_dims_text(op).map(|d| format!("#stablehlo.conv<{d}>"));
            group(&CONV_FIELDS, "dimension_numbers", text);
        }
        _ => {}
    }
    if let (Some(handle), Some(ty)) = (int(op, "channel_id"), int(op, "channel_type")) {
        group(
            &["channel_id", "channel_type"],
            "channel_handle",
            Some(format!(
                "#stablehlo.channel_handle<handle = {handle}, type = {ty}>"
            )),
        );
    }
    attrs
}

/// Ops whose pretty form is `operands attr-dict : same-type-or-functional`.
fn is_same_type_elementwise(kind: &OpKind) -> bool {
    use OpKind::*;
    matches!(
        kind,
        Abs | Cbrt
            | Ceil
            | Convert
            | CountLeadingZeros
            | Cosine
            | Exponential
            | ExponentialMinusOne
            | Floor
            | Imag
            | Log
            | LogPlusOne
            | Logistic
            | Negate
            | Not
            | PopulationCount
            | Real
            | RoundNearestAfz
            | RoundNearestEven
            | Rsqrt
            | Sign
            | Sine
            | Sqrt
            | Tan
            | Tanh
            | UniformQuantize
            | UniformDequantize
            | Add
            | And
            | Atan2
            | Divide
            | Maximum
            | Minimum
            | Multiply
            | Or
            | Power
            | Remainder
            | ShiftLeft
            | ShiftRightArithmetic
            | ShiftRightLogical
            | Subtract
            | Xor
            | Clamp
            | AfterAll
    )
}

/// The number of operands of a fixed-arity elementwise op.
fn elementwise_arity(kind: &OpKind) -> Option<usize> {
    use OpKind::*;
    match kind {
        Add | And | Atan2 | Divide | Maximum | Minimum | Multiply | Or | Power | Remainder
        | ShiftLeft | ShiftRightArithmetic | ShiftRightLogical | Subtract | Xor | Complex => {
            Some(2)
        }
        Clamp => Some(3),
        AfterAll => None,
        _ => Some(1),
    }
}

/// Ops whose pretty form is `operands attr-dict : functional-type`.
fn is_functional(kind: &OpKind) -> bool {
    use OpKind::*;
    matches!(
        kind,
        BitcastConvert
            | Reshape
            | DynamicUpdateSlice
            | DynamicReshape
            | RealDynamicSlice
            | DynamicPad
            | IsFinite
    )
}

fn chlo_unary(kind: &OpKind) -> bool {
    use OpKind::*;
    matches!(
        kind,
        ChloErf
            | ChloErfInv
            | ChloErfc
            | ChloLgamma
            | ChloDigamma
            | ChloBesselI1e
            | ChloAcos
            | ChloAcosh
            | ChloAsin
            | ChloAsinh
            | ChloAtan
            | ChloAtanh
            | ChloCosh
            | ChloSinh
            | ChloTan
            | ChloConj
            | ChloIsInf
            | ChloIsNegInf
            | ChloIsPosInf
            | ChloSquare
    )
}

/// The scalar tensor type of the element type of `t`.
fn scalar_of(t: &Type) -> Option<Type> {
    Some(Type::Tensor(TensorType::scalar(
        t.as_tensor()?.element_type,
    )))
}

/// The real counterpart of a complex tensor type.
fn real_of(t: &Type) -> Option<Type> {
    let t = t.as_tensor()?;
    let et = match t.element_type {
        ElementType::C64 => ElementType::F32,
        ElementType::C128 => ElementType::F64,
        _ => return None,
    };
    Some(Type::Tensor(TensorType::new(t.shape.clone(), et)))
}

impl Printer<'_> {
    fn name_str(&self, op: &Op) -> String {
        op.kind.name().to_string()
    }

    /// `: T` when every operand has the result's type, else the functional type.
    fn write_same_type(&mut self, op: &Op) {
        self.out.push_str(" : ");
        let result = self.ty(op.results[0]);
        if op.operands.iter().all(|&v| self.ty(v) == result) {
            let _ = write!(self.out, "{result}");
        } else {
            self.write_op_function_type(op);
        }
    }

    fn write_functional(&mut self, op: &Op) {
        self.out.push_str(" : ");
        self.write_op_function_type(op);
    }

    /// Prints `op` in its pretty form; `false` when it has none or does not fit it.
    pub(crate) fn print_pretty(&mut self, op: &Op, level: usize, in_func_body: bool) -> bool {
        use OpKind::*;
        let n_in = op.operands.len();
        let n_out = op.results.len();
        if !op.regions.is_empty() && !matches!(op.kind, While | Reduce) {
            return false;
        }
        let name = self.name_str(op);
        let kind = &op.kind;
        if is_same_type_elementwise(kind) {
            if n_out != 1 || elementwise_arity(kind).is_some_and(|a| a != n_in) {
                return false;
            }
            self.out.push_str(&name);
            if !op.operands.is_empty() {
                self.out.push(' ');
                self.write_operands(&op.operands);
            }
            self.write_attr_dict_except(&op.attributes, &[]);
            self.write_same_type(op);
            return true;
        }
        if is_functional(kind) {
            if n_out != 1 {
                return false;
            }
            let _ = write!(self.out, "{name} ");
            self.write_operands(&op.operands);
            self.write_attr_dict_except(&op.attributes, &[]);
            self.write_functional(op);
            return true;
        }
        if chlo_unary(kind) || matches!(kind, ChloNextAfter | ChloPolygamma | ChloZeta) {
            let arity = if chlo_unary(kind) { 1 } else { 2 };
            if n_in != arity || n_out != 1 {
                return false;
            }
            let _ = write!(self.out, "{name} ");
            self.write_operands(&op.operands);
            self.write_attr_dict_except(&op.attributes, &[]);
            self.out.push_str(" : ");
            let ins = self.types(&op.operands);
            write_types(&mut self.out, &ins);
            let _ = write!(self.out, " -> {}", self.ty(op.results[0]));
            return true;
        }
        match kind {
            Complex => {
                if n_in != 2 || n_out != 1 {
                    return false;
                }
                let _ = write!(self.out, "{name} ");
                self.write_operands(&op.operands);
                self.write_attr_dict_except(&op.attributes, &[]);
                let result = self.ty(op.results[0]);
                let real = real_of(result);
                if op
                    .operands
                    .iter()
                    .all(|&v| Some(self.ty(v)) == real.as_ref())
                {
                    let _ = write!(self.out, " : {result}");
                } else {
                    self.write_functional(op);
                }
                true
            }
            Constant => {
                let Some(value @ Attribute::Elements(e)) = get(op, "value") else {
                    return false;
                };
                if n_in != 0 || n_out != 1 || Type::Tensor(e.ty.clone()) != *self.ty(op.results[0])
                {
                    return false;
                }
                let _ = write!(self.out, "{name}");
                self.write_attr_dict_except(&op.attributes, &["value"]);
                self.out.push(' ');
                self.write_attr(value);
                true
            }
            Compare => {
                let (Some(Attribute::ComparisonDirection(d)), 2, 1) =
                    (get(op, "comparison_direction"), n_in, n_out)
                else {
                    return false;
                };
                let compare_type = match get(op, "compare_type") {
                    None => None,
                    Some(Attribute::ComparisonType(t)) => Some(*t),
                    Some(_) => return false,
                };
                let _ = write!(self.out, "{name} {}, ", super::attrs::direction_name(*d));
                self.write_operands(&op.operands);
                if let Some(t) = compare_type {
                    let _ = write!(self.out, ", {}", super::attrs::comparison_type_name(t));
                }
                self.write_attr_dict_except(
                    &op.attributes,
                    &["comparison_direction", "compare_type"],
                );
                self.write_functional(op);
                true
            }
            Select => {
                if n_in != 3 || n_out != 1 {
                    return false;
                }
                let _ = write!(self.out, "{name} ");
                self.write_operands(&op.operands);
                self.write_attr_dict_except(&op.attributes, &[]);
                let result = self.ty(op.results[0]);
                if self.ty(op.operands[1]) == result && self.ty(op.operands[2]) == result {
                    let _ = write!(self.out, " : {}, {result}", self.ty(op.operands[0]));
                } else {
                    self.write_functional(op);
                }
                true
            }
            BroadcastInDim | Transpose | Reverse | Broadcast | DynamicBroadcastInDim => {
                let (attr, kw, expected_in) = match kind {
                    BroadcastInDim => ("broadcast_dimensions", "dims", 1),
                    Transpose => ("permutation", "dims", 1),
                    Reverse => ("dimensions", "dims", 1),
                    Broadcast => ("broadcast_sizes", "sizes", 1),
                    _ => ("broadcast_dimensions", "dims", 2),
                };
                let Some(dims) = i64s(op, attr) else {
                    return false;
                };
                if n_in != expected_in || n_out != 1 {
                    return false;
                }
                let _ = write!(self.out, "{name} ");
                self.write_operands(&op.operands);
                let _ = write!(self.out, ", {kw} = ");
                write_list(&mut self.out, dims);
                self.write_attr_dict_except(&op.attributes, &[attr]);
                if *kind == Reverse {
                    self.write_same_type(op);
                } else {
                    self.write_functional(op);
                }
                true
            }
            Iota | DynamicIota | Concatenate | GetDimensionSize | SetDimensionSize => {
                let attr = if matches!(kind, Iota | DynamicIota) {
                    "iota_dimension"
                } else {
                    "dimension"
                };
                let Some(dim) = int(op, attr) else {
                    return false;
                };
                let expected_in = match kind {
                    Iota => Some(0),
                    DynamicIota | GetDimensionSize => Some(1),
                    SetDimensionSize => Some(2),
                    _ => None,
                };
                if n_out != 1
                    || expected_in.is_some_and(|e| e != n_in)
                    || n_in == 0 && *kind == Concatenate
                {
                    return false;
                }
                let _ = write!(self.out, "{name} ");
                self.write_operands(&op.operands);
                if n_in > 0 {
                    self.out.push_str(", ");
                }
                let _ = write!(self.out, "dim = {dim}");
                self.write_attr_dict_except(&op.attributes, &[attr]);
                if *kind == Iota {
                    let _ = write!(self.out, " : {}", self.ty(op.results[0]));
                } else {
                    self.write_functional(op);
                }
                true
            }
            Slice => {
                let (Some(start), Some(limit), Some(strides)) = (
                    i64s(op, "start_indices"),
                    i64s(op, "limit_indices"),
                    i64s(op, "strides"),
                ) else {
                    return false;
                };
                if n_in != 1
                    || n_out != 1
                    || start.len() != limit.len()
                    || start.len() != strides.len()
                {
                    return false;
                }
                let _ = write!(self.out, "{name} ");
                self.write_operands(&op.operands);
                self.out.push_str(" [");
                for i in 0..start.len() {
                    if i > 0 {
                        self.out.push_str(", ");
                    }
                    let _ = write!(self.out, "{}:{}", start[i], limit[i]);
                    if strides[i] != 1 {
                        let _ = write!(self.out, ":{}", strides[i]);
                    }
                }
                self.out.push(']');
                self.write_attr_dict_except(
                    &op.attributes,
                    &["start_indices", "limit_indices", "strides"],
                );
                self.write_functional(op);
                true
            }
            DynamicSlice => {
                let Some(sizes) = i64s(op, "slice_sizes") else {
                    return false;
                };
                if n_in == 0 || n_out != 1 {
                    return false;
                }
                let _ = write!(self.out, "{name} ");
                self.write_operands(&op.operands);
                self.out.push_str(", sizes = ");
                write_list(&mut self.out, sizes);
                self.write_attr_dict_except(&op.attributes, &["slice_sizes"]);
                self.write_functional(op);
                true
            }
            Pad => {
                let (Some(low), Some(high), Some(interior)) = (
                    i64s(op, "edge_padding_low"),
                    i64s(op, "edge_padding_high"),
                    i64s(op, "interior_padding"),
                ) else {
                    return false;
                };
                if n_in != 2 || n_out != 1 {
                    return false;
                }
                let _ = write!(self.out, "{name} ");
                self.write_operands(&op.operands);
                self.out.push_str(", low = ");
                write_list(&mut self.out, low);
                self.out.push_str(", high = ");
                write_list(&mut self.out, high);
                self.out.push_str(", interior = ");
                write_list(&mut self.out, interior);
                self.write_attr_dict_except(
                    &op.attributes,
                    &["edge_padding_low", "edge_padding_high", "interior_padding"],
                );
                self.write_functional(op);
                true
            }
            DotGeneral | Dot => self.print_dot(op, &name),
            Convolution => self.print_convolution(op, &name),
            Reduce => self.print_reduce(op, &name, level),
            While => self.print_while(op, &name, level),
            CustomCall => {
                let Some(Attribute::String(target)) = get(op, "call_target_name") else {
                    return false;
                };
                let _ = write!(self.out, "{name} ");
                write_symbol(&mut self.out, target);
                self.out.push('(');
                self.write_operands(&op.operands);
                self.out.push(')');
                self.write_attr_dict_except(&op.attributes, &["call_target_name"]);
                self.write_functional(op);
                true
            }
            Call => {
                let Some(Attribute::SymbolRef(callee)) = get(op, "callee") else {
                    return false;
                };
                self.out
                    .push_str(if in_func_body { "call " } else { "func.call " });
                let mut callee_text = String::new();
                super::attrs::write_attribute(
                    &mut callee_text,
                    &Attribute::SymbolRef(callee.clone()),
                );
                self.out.push_str(&callee_text);
                self.out.push('(');
                self.write_operands(&op.operands);
                self.out.push(')');
                self.write_attr_dict_except(&op.attributes, &["callee"]);
                self.write_functional(op);
                true
            }
            Return | FuncReturn | OptimizationBarrier => {
                if *kind == OptimizationBarrier {
                    let ins = self.types(&op.operands);
                    let outs = self.types(&op.results);
                    if ins != outs {
                        return false;
                    }
                } else if n_out != 0 {
                    return false;
                }
                let keyword = match kind {
                    FuncReturn if in_func_body => "return".to_string(),
                    _ => name,
                };
                self.out.push_str(&keyword);
                if op.operands.is_empty() && *kind == OptimizationBarrier {
                    self.write_attr_dict_except(&op.attributes, &[]);
                    self.out.push_str("()");
                    return true;
                }
                if !op.operands.is_empty() {
                    self.out.push(' ');
                    self.write_operands(&op.operands);
                }
                self.write_attr_dict_except(&op.attributes, &[]);
                if !op.operands.is_empty() {
                    self.out.push_str(" : ");
                    let ins = self.types(&op.operands);
                    write_types(&mut self.out, &ins);
                }
                true
            }
            Tuple => {
                if n_out != 1 {
                    return false;
                }
                self.out.push_str(&name);
                if !op.operands.is_empty() {
                    self.out.push(' ');
                    self.write_operands(&op.operands);
                }
                self.write_attr_dict_except(&op.attributes, &[]);
                let _ = write!(self.out, " : {}", self.ty(op.results[0]));
                true
            }
            GetTupleElement => {
                let (Some(index), 1, 1) = (int(op, "index"), n_in, n_out) else {
                    return false;
                };
                let _ = write!(self.out, "{name} ");
                self.write_operands(&op.operands);
                let _ = write!(self.out, "[{index}]");
                self.write_attr_dict_except(&op.attributes, &["index"]);
                self.write_functional(op);
                true
            }
            CreateToken | ReplicaId | PartitionId => {
                if n_in != 0 || n_out != 1 {
                    return false;
                }
                self.out.push_str(&name);
                self.write_attr_dict_except(&op.attributes, &[]);
                let _ = write!(self.out, " : {}", self.ty(op.results[0]));
                true
            }
            Fft => {
                let (Some(Attribute::FftType(t)), Some(length)) =
                    (get(op, "fft_type"), i64s(op, "fft_length"))
                else {
                    return false;
                };
                if n_in != 1 || n_out != 1 {
                    return false;
                }
                let _ = write!(self.out, "{name} ");
                self.write_operands(&op.operands);
                let _ = write!(
                    self.out,
                    ", type = {}, length = ",
                    super::attrs::fft_type_name(*t)
                );
                write_list(&mut self.out, length);
                self.write_attr_dict_except(&op.attributes, &["fft_type", "fft_length"]);
                self.write_functional(op);
                true
            }
            RngBitGenerator => {
                let (Some(Attribute::RngAlgorithm(a)), 1) = (get(op, "rng_algorithm"), n_in) else {
                    return false;
                };
                let _ = write!(self.out, "{name} ");
                self.write_operands(&op.operands);
                let _ = write!(
                    self.out,
                    ", algorithm = {}",
                    super::attrs::rng_algorithm_name(*a)
                );
                self.write_attr_dict_except(&op.attributes, &["rng_algorithm"]);
                self.write_functional(op);
                true
            }
            Rng => {
                let (Some(Attribute::RngDistribution(d)), 3, 1) =
                    (get(op, "rng_distribution"), n_in, n_out)
                else {
                    return false;
                };
                let _ = write!(self.out, "{name} ");
                self.write_operands(&op.operands);
                let _ = write!(
                    self.out,
                    ", distribution = {}",
                    super::attrs::rng_distribution_name(*d)
                );
                self.write_attr_dict_except(&op.attributes, &["rng_distribution"]);
                self.write_functional(op);
                true
            }
            Cholesky => {
                let lower = match get(op, "lower") {
                    None => None,
                    Some(Attribute::Bool(b)) => Some(*b),
                    Some(_) => return false,
                };
                if n_in != 1 || n_out != 1 {
                    return false;
                }
                let _ = write!(self.out, "{name} ");
                self.write_operands(&op.operands);
                if let Some(b) = lower {
                    let _ = write!(self.out, ", lower = {b}");
                }
                self.write_attr_dict_except(&op.attributes, &["lower"]);
                self.write_same_type(op);
                true
            }
            ReducePrecision => {
                let (Some(e), Some(m), 1, 1) = (
                    int(op, "exponent_bits"),
                    int(op, "mantissa_bits"),
                    n_in,
                    n_out,
                ) else {
                    return false;
                };
                let _ = write!(self.out, "{name} ");
                self.write_operands(&op.operands);
                let _ = write!(self.out, ", format = e{e}m{m}");
                self.write_attr_dict_except(&op.attributes, &["exponent_bits", "mantissa_bits"]);
                self.write_same_type(op);
                true
            }
            Composite => {
                let Some(Attribute::String(composite_name)) = get(op, "name") else {
                    return false;
                };
                let _ = write!(self.out, "{name} ");
                write_string(&mut self.out, composite_name);
                if !op.operands.is_empty() {
                    self.out.push(' ');
                    self.write_operands(&op.operands);
                }
                self.write_attr_dict_except(&op.attributes, &["name"]);
                self.write_functional(op);
                true
            }
            ChloTopK => {
                let (Some(k), 1, 2) = (int(op, "k"), n_in, n_out) else {
                    return false;
                };
                let is_stable = match get(op, "is_stable") {
                    None => None,
                    Some(Attribute::Bool(b)) => Some(*b),
                    Some(_) => return false,
                };
                let _ = write!(self.out, "{name}(");
                self.write_operands(&op.operands);
                let _ = write!(self.out, ", k = {k}");
                if let Some(b) = is_stable {
                    let _ = write!(self.out, ", is_stable = {b}");
                }
                self.out.push(')');
                self.write_attr_dict_except(&op.attributes, &["k", "is_stable"]);
                let _ = write!(
                    self.out,
                    " : {} -> ({}, {})",
                    self.ty(op.operands[0]),
                    self.ty(op.results[0]),
                    self.ty(op.results[1])
                );
                true
            }
            _ => false,
        }
    }

    fn write_precision(&mut self, op: &Op) -> Option<()> {
        match get(op, "precision_config") {
            None => Some(()),
            Some(Attribute::Array(items)) => {
                let names: Option<Vec<&str>> = items
                    .iter()
                    .map(|a| match a {
                        Attribute::Precision(p) => Some(precision_name(*p)),
                        _ => None,
                    })
                    .collect();
                let _ = write!(self.out, ", precision = [{}]", names?.join(", "));
                Some(())
            }
            Some(_) => None,
        }
    }

    fn print_dot(&mut self, op: &Op, name: &str) -> bool {
        if op.operands.len() != 2 || op.results.len() != 1 {
            return false;
        }
        let _ = write!(self.out, "{name} ");
        self.write_operands(&op.operands);
        let mut consumed = vec!["precision_config"];
        if op.kind == OpKind::DotGeneral {
            let (Some(lb), Some(rb), Some(lc), Some(rc)) = (
                i64s(op, DOT_LISTS[0]),
                i64s(op, DOT_LISTS[1]),
                i64s(op, DOT_LISTS[2]),
                i64s(op, DOT_LISTS[3]),
            ) else {
                return false;
            };
            if !lb.is_empty() || !rb.is_empty() {
                self.out.push_str(", batching_dims = ");
                write_list(&mut self.out, lb);
                self.out.push_str(" x ");
                write_list(&mut self.out, rb);
            }
            self.out.push_str(", contracting_dims = ");
            write_list(&mut self.out, lc);
            self.out.push_str(" x ");
            write_list(&mut self.out, rc);
            consumed.extend(DOT_LISTS);
        }
        if self.write_precision(op).is_none() {
            return false;
        }
        if op.kind == OpKind::DotGeneral {
            match get(op, "algorithm") {
                None => {}
                Some(Attribute::Opaque(text)) => {
                    match text.strip_prefix("#stablehlo.dot_algorithm") {
                        Some(body) => {
                            let _ = write!(self.out, ", algorithm = {body}");
                            consumed.push("algorithm");
                        }
                        None => return false,
                    }
                }
                Some(_) => return false,
            }
        }
        self.write_attr_dict_except(&op.attributes, &consumed);
        self.write_functional(op);
        true
    }

    fn print_convolution(&mut self, op: &Op, name: &str) -> bool {
        let Some(dims) = conv_dims_text(op) else {
            return false;
        };
        if op.operands.len() != 2 || op.results.len() != 1 {
            return false;
        }
        let mut window = Vec::new();
        let mut consumed: Vec<&str> = CONV_FIELDS.to_vec();
        for (attr, kw) in [
            ("window_strides", "stride"),
            ("padding", "pad"),
            ("lhs_dilation", "lhs_dilate"),
            ("rhs_dilation", "rhs_dilate"),
            ("window_reversal", "reverse"),
        ] {
            let Some(value) = get(op, attr) else {
                continue;
            };
            let text = match (attr, value) {
                ("padding", Attribute::Elements(e)) => {
                    let (Some(values), [_, 2]) = (
                        Attribute::Elements(e.clone()).as_i64_list(),
                        e.ty.shape.as_slice(),
                    ) else {
                        return false;
                    };
                    let pairs: Vec<String> = values
                        .chunks(2)
                        .map(|p| format!("[{}, {}]", p[0], p[1]))
                        .collect();
                    format!("[{}]", pairs.join(", "))
                }
                ("window_reversal", Attribute::DenseBoolArray(v)) => {
                    let items: Vec<&str> = v
                        .iter()
                        .map(|b| if *b { "true" } else { "false" })
                        .collect();
                    format!("[{}]", items.join(", "))
                }
                (_, Attribute::DenseI64Array(v))
                    if attr != "padding" && attr != "window_reversal" =>
                {
                    let mut s = String::new();
                    write_list(&mut s, v);
                    s
                }
                _ => return false,
            };
            window.push(format!("{kw} = {text}"));
            consumed.push(attr);
        }
        let _ = write!(self.out, "{name}(");
        self.write_operands(&op.operands);
        let _ = write!(
            self.out,
            ") dim_numbers = {dims}, window = {{{}}}",
            window.join(", ")
        );
        self.write_attr_dict_except(&op.attributes, &consumed);
        self.write_functional(op);
        true
    }

    /// True when a reduce body is `op(%a, %b)` + return, printable as `applies op`.
    fn reduce_is_compact(&self, op: &Op) -> Option<OpKind> {
        let region = op.regions.first()?;
        let [block] = region.blocks.as_slice() else {
            return None;
        };
        let [inner, ret] = block.ops.as_slice() else {
            return None;
        };
        let commutative = matches!(
            inner.kind,
            OpKind::Add
                | OpKind::Multiply
                | OpKind::Maximum
                | OpKind::Minimum
                | OpKind::And
                | OpKind::Or
                | OpKind::Xor
        );
        let expected = scalar_of(self.ty(*op.operands.first()?))?;
        let all_expected = inner
            .operands
            .iter()
            .chain(inner.results.iter())
            .all(|&v| *self.ty(v) == expected);
        let ok = commutative
            && op.operands.len() == 2
            && inner.regions.is_empty()
            && inner.attributes.is_empty()
            && inner.results.len() == 1
            && all_expected
            && block.arguments == inner.operands
            && matches!(ret.kind, OpKind::Return | OpKind::FuncReturn)
            && ret.operands == inner.results
            && ret.attributes.is_empty();
        ok.then(|| inner.kind.clone())
    }

    fn print_reduce(&mut self, op: &Op, name: &str, level: usize) -> bool {
        let Some(dims) = i64s(op, "dimensions") else {
            return false;
        };
        let n = op.operands.len();
        if n == 0 || !n.is_multiple_of(2) || op.regions.len() != 1 {
            return false;
        }
        let pairs = n / 2;
        let compact = self.reduce_is_compact(op);
        if compact.is_none() {
            let [block] = op.regions[0].blocks.as_slice() else {
                return false;
            };
            if block.arguments.len() != n {
                return false;
            }
        }
        let _ = write!(self.out, "{name}");
        for i in 0..pairs {
            if i > 0 {
                self.out.push(',');
            }
            let input = self.name(op.operands[i]);
            let init = self.name(op.operands[i + pairs]);
            let _ = write!(self.out, "({input} init: {init})");
        }
        if let Some(inner) = &compact {
            let _ = write!(self.out, " applies {}", inner.name());
        }
        self.out.push_str(" across dimensions = ");
        write_list(&mut self.out, dims);
        self.write_attr_dict_except(&op.attributes, &["dimensions"]);
        self.write_functional(op);
        if compact.is_none() {
            let block = &op.regions[0].blocks[0];
            self.out.push('\n');
            self.indent_pub(level);
            self.out.push_str(" reducer");
            for i in 0..pairs {
                let a = block.arguments[i];
                let b = block.arguments[i + pairs];
                let a_name = self.name_arg(a);
                let b_name = self.name_arg(b);
                let _ = write!(
                    self.out,
                    "({a_name}: {}, {b_name}: {}) ",
                    self.ty(a),
                    self.ty(b)
                );
            }
            self.out.push(' ');
            self.write_region(&op.regions[0], level, false);
        }
        true
    }

    fn print_while(&mut self, op: &Op, name: &str, level: usize) -> bool {
        let n = op.operands.len();
        if op.regions.len() != 2 || op.results.len() != n {
            return false;
        }
        let operand_types = self.types(&op.operands);
        if self.types(&op.results) != operand_types {
            return false;
        }
        for region in &op.regions {
            let [block] = region.blocks.as_slice() else {
                return false;
            };
            if self.types(&block.arguments) != operand_types {
                return false;
            }
        }
        let names: Vec<String> = (0..n).map(|_| self.name_iter_arg()).collect();
        for region in &op.regions {
            for (&arg, name) in region.blocks[0].arguments.iter().zip(&names) {
                self.set_name(arg, name.clone());
            }
        }
        let _ = write!(self.out, "{name}(");
        for (i, (name, &v)) in names.iter().zip(&op.operands).enumerate() {
            if i > 0 {
                self.out.push_str(", ");
            }
            let operand = self.name(v);
            let _ = write!(self.out, "{name} = {operand}");
        }
        self.out.push(')');
        if n > 0 {
            self.out.push_str(" : ");
            write_types(&mut self.out, &operand_types);
        }
        if !op.attributes.is_empty() {
            self.out.push_str(" attributes ");
            write_dict(&mut self.out, &op.attributes);
        }
        self.out.push('\n');
        self.indent_pub(level);
        self.out.push_str("cond ");
        self.write_region(&op.regions[0], level, false);
        self.out.push_str(" do ");
        self.write_region(&op.regions[1], level, false);
        true
    }
}
