//! Maps the generic op tree of a StableHLO portable artifact (VHLO ops, builtin module) to an
//! oxla-ir [`Module`]: `vhlo.X_vN` becomes `stablehlo.X`, `vhlo.func_v1` a [`Function`],
//! and attributes are decoded from native properties and normalised to the spec's names
//! and shapes, whatever the op version.
//!
//! Ops of other dialects keep their full names and their attribute dictionaries.

use super::attrs_types::{Attr, Tables};
use super::ir::{GenericBlock, GenericOp, GenericRegion, Properties, ValueNum};
use super::reader::{error, Cursor, Result};
use super::sections::Sections;
use oxla_ir::attrs::ComparisonType;
use oxla_ir::{
    Attribute, Block, Function, Module, NamedAttribute, Op, OpKind, Region, Type, ValueId,
    Visibility,
};
use std::collections::HashMap;

/// The attributes of every VHLO op, in declaration order (from `VhloOps.td`).
const OP_ATTRIBUTES: &[(&str, &[&str])] = &[
    ("abs_v1", &[]),
    ("add_v1", &[]),
    ("after_all_v1", &[]),
    (
        "all_gather_v1",
        &[
            "all_gather_dim",
            "replica_groups",
            "channel_id",
            "use_global_device_ids",
        ],
    ),
    (
        "all_gather_v2",
        &[
            "all_gather_dim",
            "replica_groups",
            "channel_id",
            "use_global_device_ids",
        ],
    ),
    (
        "all_reduce_v1",
        &["replica_groups", "channel_id", "use_global_device_ids"],
    ),
    (
        "all_reduce_v2",
        &["replica_groups", "channel_id", "use_global_device_ids"],
    ),
    (
        "all_to_all_v1",
        &[
            "split_dimension",
            "concat_dimension",
            "split_count",
            "replica_groups",
            "channel_id",
        ],
    ),
    (
        "all_to_all_v2",
        &[
            "split_dimension",
            "concat_dimension",
            "split_count",
            "replica_groups",
            "channel_id",
        ],
    ),
    ("and_v1", &[]),
    ("async_done_v1", &[]),
    ("async_start_v1", &[]),
    ("atan2_v1", &[]),
    ("batch_norm_grad_v1", &["epsilon", "feature_index"]),
    ("batch_norm_inference_v1", &["epsilon", "feature_index"]),
    ("batch_norm_training_v1", &["epsilon", "feature_index"]),
    ("bitcast_convert_v1", &[]),
    ("broadcast_in_dim_v1", &["broadcast_dimensions"]),
    ("broadcast_v1", &["broadcast_sizes"]),
    ("call_v1", &["callee"]),
    ("case_v1", &[]),
    ("cbrt_v1", &[]),
    ("cbrt_v2", &["result_accuracy"]),
    ("ceil_v1", &[]),
    ("cholesky_v1", &["lower"]),
    ("clamp_v1", &[]),
    ("collective_broadcast_v1", &["replica_groups", "channel_id"]),
    (
        "collective_broadcast_v2",
        &["replica_groups", "channel_id", "has_dynamic_root"],
    ),
    (
        "collective_permute_v1",
        &["source_target_pairs", "channel_id"],
    ),
    (
        "collective_reduce_v1",
        &[
            "replica_groups",
            "channel_id",
            "use_global_device_ids",
            "has_dynamic_root",
        ],
    ),
    ("compare_v1", &["comparison_direction", "compare_type"]),
    ("complex_v1", &[]),
    (
        "composite_v1",
        &["name", "composite_attributes", "decomposition", "version"],
    ),
    (
        "composite_v2",
        &["name", "composite_attributes", "decomposition", "version"],
    ),
    ("concatenate_v1", &["dimension"]),
    ("constant_v1", &["value"]),
    ("convert_v1", &[]),
    (
        "convolution_v1",
        &[
            "window_strides",
            "padding",
            "lhs_dilation",
            "rhs_dilation",
            "window_reversal",
            "input_batch_dimension",
            "input_feature_dimension",
            "input_spatial_dimensions",
            "kernel_input_feature_dimension",
            "kernel_output_feature_dimension",
            "kernel_spatial_dimensions",
            "output_batch_dimension",
            "output_feature_dimension",
            "output_spatial_dimensions",
            "feature_group_count",
            "batch_group_count",
            "precision_config",
        ],
    ),
    ("cosine_v1", &[]),
    ("cosine_v2", &["result_accuracy"]),
    ("count_leading_zeros_v1", &[]),
    ("create_token_v1", &[]),
    (
        "custom_call_v1",
        &[
            "call_target_name",
            "has_side_effect",
            "backend_config",
            "api_version",
            "called_computations",
            "operand_layouts",
            "result_layouts",
            "output_operand_aliases",
        ],
    ),
    (
        "custom_call_v2",
        &[
            "call_target_name",
            "has_side_effect",
            "backend_config",
            "api_version",
            "called_computations",
            "operand_layouts",
            "result_layouts",
            "output_operand_aliases",
            "result_tilings",
        ],
    ),
    ("divide_v1", &[]),
    (
        "dot_general_v1",
        &[
            "lhs_batching_dimensions",
            "rhs_batching_dimensions",
            "lhs_contracting_dimensions",
            "rhs_contracting_dimensions",
            "precision_config",
        ],
    ),
    (
        "dot_general_v2",
        &[
            "lhs_batching_dimensions",
            "rhs_batching_dimensions",
            "lhs_contracting_dimensions",
            "rhs_contracting_dimensions",
            "precision_config",
            "lhs_precision_type",
            "rhs_precision_type",
            "accumulation_type",
            "lhs_component_count",
            "rhs_component_count",
            "num_primitive_operations",
            "allow_imprecise_accumulation",
        ],
    ),
    ("dot_v1", &[]),
    (
        "dynamic_broadcast_in_dim_v1",
        &[
            "broadcast_dimensions",
            "known_expanding_dimensions",
            "known_nonexpanding_dimensions",
        ],
    ),
    (
        "dynamic_conv_v1",
        &[
            "window_strides",
            "padding",
            "lhs_dilation",
            "rhs_dilation",
            "window_reversal",
            "input_batch_dimension",
            "input_feature_dimension",
            "input_spatial_dimensions",
            "kernel_input_feature_dimension",
            "kernel_output_feature_dimension",
            "kernel_spatial_dimensions",
            "output_batch_dimension",
            "output_feature_dimension",
            "output_spatial_dimensions",
            "feature_group_count",
            "batch_group_count",
            "precision_config",
        ],
    ),
    (
        "dynamic_conv_v2",
        &[
            "window_strides",
            "lhs_dilation",
            "rhs_dilation",
            "window_reversal",
            "input_batch_dimension",
            "input_feature_dimension",
            "input_spatial_dimensions",
            "kernel_input_feature_dimension",
            "kernel_output_feature_dimension",
            "kernel_spatial_dimensions",
            "output_batch_dimension",
            "output_feature_dimension",
            "output_spatial_dimensions",
            "feature_group_count",
            "batch_group_count",
            "precision_config",
        ],
    ),
    (
        "dynamic_gather_v1",
        &[
            "offset_dims",
            "collapsed_slice_dims",
            "start_index_map",
            "index_vector_dim",
            "indices_are_sorted",
        ],
    ),
    (
        "dynamic_gather_v2",
        &[
            "offset_dims",
            "collapsed_slice_dims",
            "operand_batching_dims",
            "start_indices_batching_dims",
            "start_index_map",
            "index_vector_dim",
            "indices_are_sorted",
        ],
    ),
    ("dynamic_iota_v1", &["iota_dimension"]),
    ("dynamic_pad_v1", &[]),
    ("dynamic_reshape_v1", &[]),
    ("dynamic_slice_v1", &["slice_sizes"]),
    ("dynamic_update_slice_v1", &[]),
    ("einsum_v1", &["einsum_config"]),
    ("exponential_minus_one_v1", &[]),
    ("exponential_minus_one_v2", &["result_accuracy"]),
    ("exponential_v1", &[]),
    ("exponential_v2", &["result_accuracy"]),
    ("fft_v1", &["fft_type", "fft_length"]),
    ("floor_v1", &[]),
    (
        "func_v1",
        &[
            "sym_name",
            "function_type",
            "sym_visibility",
            "arg_attrs",
            "res_attrs",
        ],
    ),
    (
        "gather_v1",
        &[
            "offset_dims",
            "collapsed_slice_dims",
            "start_index_map",
            "index_vector_dim",
            "slice_sizes",
            "indices_are_sorted",
        ],
    ),
    (
        "gather_v2",
        &[
            "offset_dims",
            "collapsed_slice_dims",
            "operand_batching_dims",
            "start_indices_batching_dims",
            "start_index_map",
            "index_vector_dim",
            "slice_sizes",
            "indices_are_sorted",
        ],
    ),
    ("get_dimension_size_v1", &["dimension"]),
    ("get_tuple_element_v1", &["index"]),
    ("if_v1", &[]),
    ("imag_v1", &[]),
    ("infeed_v1", &["infeed_config", "layout"]),
    ("iota_v1", &["iota_dimension"]),
    ("is_finite_v1", &[]),
    ("log_plus_one_v1", &[]),
    ("log_plus_one_v2", &["result_accuracy"]),
    ("log_v1", &[]),
    ("log_v2", &["result_accuracy"]),
    ("logistic_v1", &[]),
    ("logistic_v2", &["result_accuracy"]),
    ("map_v1", &["dimensions"]),
    ("maximum_v1", &[]),
    ("minimum_v1", &[]),
    ("multiply_v1", &[]),
    ("negate_v1", &[]),
    ("not_v1", &[]),
    ("optimization_barrier_v1", &[]),
    ("or_v1", &[]),
    ("outfeed_v1", &["outfeed_config"]),
    (
        "pad_v1",
        &["edge_padding_low", "edge_padding_high", "interior_padding"],
    ),
    ("partition_id_v1", &[]),
    ("popcnt_v1", &[]),
    ("power_v1", &[]),
    ("real_dynamic_slice_v1", &[]),
    ("real_v1", &[]),
    (
        "recv_v1",
        &["channel_id", "channel_type", "is_host_transfer"],
    ),
    (
        "recv_v2",
        &[
            "channel_id",
            "channel_type",
            "is_host_transfer",
            "source_target_pairs",
        ],
    ),
    ("reduce_precision_v1", &["exponent_bits", "mantissa_bits"]),
    (
        "reduce_scatter_v1",
        &[
            "scatter_dimension",
            "replica_groups",
            "channel_id",
            "use_global_device_ids",
        ],
    ),
    ("reduce_v1", &["dimensions"]),
    (
        "reduce_window_v1",
        &[
            "window_dimensions",
            "window_strides",
            "base_dilations",
            "window_dilations",
            "padding",
        ],
    ),
    ("remainder_v1", &[]),
    ("replica_id_v1", &[]),
    ("reshape_v1", &[]),
    ("return_v1", &[]),
    ("reverse_v1", &["dimensions"]),
    ("rng_bit_generator_v1", &["rng_algorithm"]),
    ("rng_v1", &["rng_distribution"]),
    ("round_nearest_afz_v1", &[]),
    ("round_nearest_even_v1", &[]),
    ("rsqrt_v1", &[]),
    ("rsqrt_v2", &["result_accuracy"]),
    (
        "scatter_v1",
        &[
            "update_window_dims",
            "inserted_window_dims",
            "scatter_dims_to_operand_dims",
            "index_vector_dim",
            "indices_are_sorted",
            "unique_indices",
        ],
    ),
    (
        "scatter_v2",
        &[
            "update_window_dims",
            "inserted_window_dims",
            "input_batching_dims",
            "scatter_indices_batching_dims",
            "scatter_dims_to_operand_dims",
            "index_vector_dim",
            "indices_are_sorted",
            "unique_indices",
        ],
    ),
    (
        "select_and_scatter_v1",
        &["window_dimensions", "window_strides", "padding"],
    ),
    ("select_v1", &[]),
    (
        "send_v1",
        &["channel_id", "channel_type", "is_host_transfer"],
    ),
    (
        "send_v2",
        &[
            "channel_id",
            "channel_type",
            "is_host_transfer",
            "source_target_pairs",
        ],
    ),
    ("set_dimension_size_v1", &["dimension"]),
    ("shift_left_v1", &[]),
    ("shift_right_arithmetic_v1", &[]),
    ("shift_right_logical_v1", &[]),
    ("sign_v1", &[]),
    ("sine_v1", &[]),
    ("sine_v2", &["result_accuracy"]),
    ("slice_v1", &["start_indices", "limit_indices", "strides"]),
    ("sort_v1", &["dimension", "is_stable"]),
    ("sqrt_v1", &[]),
    ("sqrt_v2", &["result_accuracy"]),
    ("subtract_v1", &[]),
    ("tan_v1", &[]),
    ("tan_v2", &["result_accuracy"]),
    ("tanh_v1", &[]),
    ("tanh_v2", &["result_accuracy"]),
    ("torch_index_select_v1", &["dim", "batch_dims"]),
    ("transpose_v1", &["permutation"]),
    (
        "triangular_solve_v1",
        &["left_side", "lower", "unit_diagonal", "transpose_a"],
    ),
    ("tuple_v1", &[]),
    ("unary_einsum_v1", &["einsum_config"]),
    ("uniform_dequantize_v1", &[]),
    ("uniform_quantize_v1", &[]),
    ("while_v1", &[]),
    ("xor_v1", &[]),
];

/// Attributes that StableHLO types as `array<i64>` (VHLO keeps them as i64 tensors).
const I64_LIST_ATTRS: &[&str] = &[
    "base_dilations",
    "broadcast_dimensions",
    "broadcast_sizes",
    "collapsed_slice_dims",
    "dimensions",
    "edge_padding_high",
    "edge_padding_low",
    "fft_length",
    "input_batching_dims",
    "input_spatial_dimensions",
    "inserted_window_dims",
    "interior_padding",
    "kernel_spatial_dimensions",
    "known_expanding_dimensions",
    "known_nonexpanding_dimensions",
    "lhs_batching_dimensions",
    "lhs_contracting_dimensions",
    "lhs_dilation",
    "limit_indices",
    "offset_dims",
    "operand_batching_dims",
    "output_spatial_dimensions",
    "permutation",
    "rhs_batching_dimensions",
    "rhs_contracting_dimensions",
    "rhs_dilation",
    "scatter_dims_to_operand_dims",
    "scatter_indices_batching_dims",
    "slice_sizes",
    "start_index_map",
    "start_indices",
    "start_indices_batching_dims",
    "strides",
    "update_window_dims",
    "window_dilations",
    "window_dimensions",
    "window_strides",
];

/// Attributes that StableHLO types as `array<i1>`.
const BOOL_LIST_ATTRS: &[&str] = &["window_reversal"];

/// Function attributes that become fields of [`Function`].
const FUNC_FIELDS: &[&str] = &[
    "sym_name",
    "function_type",
    "sym_visibility",
    "arg_attrs",
    "res_attrs",
];

/// Builds the module from the top-level ops of the IR section.
pub(crate) fn build_module<'s, 'a>(
    sections: &'s Sections<'a>,
    tables: &mut Tables<'s, 'a>,
    top_level: Vec<GenericOp<'a>>,
    value_types: Vec<Option<Type>>,
) -> Result<Module> {
    let mut builder = Builder {
        sections,
        tables,
        value_types,
    };
    let mut module = Module::default();
    let mut top_level = top_level;
    let body_ops = match top_level.len() {
        1 if builder.op_name(&top_level[0]) == "builtin.module" => {
            let mut module_op = top_level.remove(0);
            let attributes = builder.op_attributes(&mut module_op)?;
            for (name, value) in attributes {
                match (name.as_str(), value) {
                    ("sym_name", Attribute::String(s)) => module.name = Some(s),
                    ("sym_visibility", _) => {}
                    (_, value) => module.attributes.push((name, value)),
                }
            }
            module.location = module_op.location;
            let region = module_op.regions.into_iter().next().unwrap_or_default();
            region.blocks.into_iter().flat_map(|b| b.ops).collect()
        }
        _ => top_level,
    };
    for op in body_ops {
        let name = builder.op_name(&op).to_string();
        if name == "vhlo.func_v1" || name == "func.func" {
            module.functions.push(builder.function(op)?);
        } else if name == "sdy.mesh" {
            // A device mesh that sharding attributes name: kept as the text declaration the
            // text reader keeps (`sdy.mesh @name = <["x"=4]>`).
            let mut op = op;
            let attributes = builder.op_attributes(&mut op)?;
            // The name is the `sym_name` property; a `sym_visibility` string (a mesh made
            // private when `jax.export` inlines an exported module) may come before it.
            let symbol = attributes.iter().find_map(|(n, a)| match a {
                Attribute::String(s) if n == "sym_name" => Some(s.clone()),
                _ => None,
            });
            let mesh = attributes
                .iter()
                .find_map(|(_, a)| super::sdy::mesh_body(a));
            if let (Some(symbol), Some(mesh)) = (symbol, mesh) {
                module
                    .declarations
                    .push(format!("sdy.mesh @{symbol} = {mesh}"));
            }
        }
        // Other module-level ops carry nothing oxla runs.
    }
    Ok(module)
}

struct Builder<'s, 't, 'a> {
    sections: &'s Sections<'a>,
    tables: &'t mut Tables<'s, 'a>,
    value_types: Vec<Option<Type>>,
}

/// The value arena of the function being built.
struct FunctionValues {
    ids: HashMap<ValueNum, ValueId>,
}

impl<'s, 't, 'a> Builder<'s, 't, 'a> {
    fn op_name(&self, op: &GenericOp<'_>) -> &'s str {
        self.sections
            .op_names
            .get(op.name)
            .map_or("", |n| n.full_name.as_str())
    }

    /// The op's attributes: its dictionary plus its decoded native properties.
    fn op_attributes(&mut self, op: &mut GenericOp<'a>) -> Result<Vec<NamedAttribute>> {
        let mut attributes = std::mem::take(&mut op.attributes);
        let Properties::Native(mut cursor) = op.properties.clone() else {
            return Ok(attributes);
        };
        let name = self.op_name(op);
        if let Some(mnemonic) = name.strip_prefix("vhlo.") {
            let Ok(i) = OP_ATTRIBUTES.binary_search_by(|(n, _)| n.cmp(&mnemonic)) else {
                return Err(crate::FrontendError::Unsupported {
                    detail: format!(
                        "VHLO op {name} at byte {} (written by a newer StableHLO?)",
                        op.offset
                    ),
                });
            };
            // Properties are encoded in the lexical order of the attribute names.
            let mut names = OP_ATTRIBUTES[i].1.to_vec();
            names.sort_unstable();
            for attr_name in names {
                let value = self.tables.read_attr(&mut cursor)?;
                attributes.push((attr_name.to_string(), self.attr_value(value)));
            }
            if !cursor.is_empty() {
                return Err(cursor.err(format!("unexpected trailing properties of {name}")));
            }
        } else if name == "builtin.module" {
            // Optional `sym_name` then optional `sym_visibility`.
            for attr_name in ["sym_name", "sym_visibility"] {
                if cursor.is_empty() {
                    break;
                }
                if let Some(value) = self.read_optional_attr(&mut cursor)? {
                    attributes.push((attr_name.to_string(), value));
                }
            }
        } else if name == "sdy.mesh" || name == "sdy.manual_computation" {
            // All required: a mesh's `mesh` and `sym_name`; a manual computation's
            // `in_shardings`, `manual_axes` and `out_shardings` (the shardings in that order).
            // Each is named by what it decodes to.
            let mut shardings = ["in_shardings", "out_shardings"].into_iter();
            while !cursor.is_empty() {
                let value = self.tables.read_attr(&mut cursor)?.into_value();
                let attr_name = match &value {
                    Attribute::String(_) => "sym_name",
                    Attribute::Opaque(t) if t.starts_with("#sdy.sharding_per_value") => {
                        shardings.next().unwrap_or("shardings")
                    }
                    Attribute::Opaque(t) if t.starts_with("#sdy<manual_axes") => "manual_axes",
                    _ => "mesh",
                };
                attributes.push((attr_name.to_string(), value));
            }
        } else if name == "sdy.sharding_constraint" || name == "sdy.sharding_group" {
            // One property: a constraint's `sharding`, a group's `group_id`.
            let attr_name = match name {
                "sdy.sharding_group" => "group_id",
                _ => "sharding",
            };
            while !cursor.is_empty() {
                let value = self.tables.read_attr(&mut cursor)?.into_value();
                attributes.push((attr_name.to_string(), value));
            }
        } else if matches!(name.split('.').next(), Some("stablehlo" | "func" | "chlo")) {
            return Err(crate::FrontendError::Unsupported {
                detail: format!(
                    "native properties of {name} at byte {} (plain StableHLO bytecode; send a portable artifact)",
                    op.offset
                ),
            });
        }
        Ok(attributes)
    }

    fn read_optional_attr(&mut self, cursor: &mut Cursor<'a>) -> Result<Option<Attribute>> {
        let at = cursor.offset();
        let (index, present) = cursor.varint_flag()?;
        if !present {
            return Ok(None);
        }
        let value = self.tables.attr(index, at)?;
        Ok(Some(self.attr_value(value)))
    }

    fn attr_value(&self, attr: Attr) -> Attribute {
        attr.into_value()
    }

    fn value(&self, values: &mut FunctionValues, func: &mut Function, num: ValueNum) -> ValueId {
        if let Some(&id) = values.ids.get(&num) {
            return id;
        }
        let ty = self
            .value_types
            .get(num as usize)
            .cloned()
            .flatten()
            .unwrap_or(Type::Opaque("<undefined>".into()));
        let id = func.new_value(ty);
        values.ids.insert(num, id);
        id
    }

    fn function(&mut self, mut op: GenericOp<'a>) -> Result<Function> {
        let offset = op.offset;
        let attributes = self.op_attributes(&mut op)?;
        let mut func = Function {
            location: op.location.clone(),
            ..Function::default()
        };
        let find = |name: &str| {
            attributes
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, a)| a.clone())
        };
        func.name = match find("sym_name") {
            Some(Attribute::String(s)) => s,
            _ => return Err(error(offset, "function without a string sym_name")),
        };
        func.visibility = match find("sym_visibility") {
            Some(Attribute::String(s)) if s == "private" => Visibility::Private,
            Some(Attribute::String(s)) if s == "nested" => Visibility::Nested,
            _ => Visibility::Public,
        };
        func.ty = match find("function_type") {
            Some(Attribute::Type(Type::Opaque(text))) => {
                self.tables.function_type(&text).cloned().ok_or_else(|| {
                    error(
                        offset,
                        format!("function_type {text} is not a function type"),
                    )
                })?
            }
            other => {
                return Err(error(
                    offset,
                    format!(
                        "function {} has no function_type (found {other:?})",
                        func.name
                    ),
                ))
            }
        };
        func.arg_attrs = per_item_dicts(find("arg_attrs"), func.ty.inputs.len());
        func.res_attrs = per_item_dicts(find("res_attrs"), func.ty.results.len());
        func.attributes = attributes
            .into_iter()
            .filter(|(n, _)| !FUNC_FIELDS.contains(&n.as_str()))
            .collect();
        let mut values = FunctionValues {
            ids: HashMap::new(),
        };
        if let Some(region) = op.regions.into_iter().next() {
            func.body = self.region(region, &mut values, &mut func, true)?;
        }
        Ok(func)
    }

    fn region(
        &mut self,
        region: GenericRegion<'a>,
        values: &mut FunctionValues,
        func: &mut Function,
        is_function_body: bool,
    ) -> Result<Region> {
        let mut out = Region::default();
        for block in region.blocks {
            out.blocks
                .push(self.block(block, values, func, is_function_body)?);
        }
        Ok(out)
    }

    fn block(
        &mut self,
        block: GenericBlock<'a>,
        values: &mut FunctionValues,
        func: &mut Function,
        is_function_body: bool,
    ) -> Result<Block> {
        let mut out = Block {
            arguments: block
                .arguments
                .iter()
                .map(|&n| self.value(values, func, n))
                .collect(),
            ops: Vec::with_capacity(block.ops.len()),
        };
        for op in block.ops {
            out.ops.push(self.op(op, values, func, is_function_body)?);
        }
        Ok(out)
    }

    fn op(
        &mut self,
        mut op: GenericOp<'a>,
        values: &mut FunctionValues,
        func: &mut Function,
        in_function_body: bool,
    ) -> Result<Op> {
        let name = self.op_name(&op);
        let kind = op_kind(name, in_function_body);
        let mut attributes = self.op_attributes(&mut op)?;
        if name.starts_with("vhlo.") {
            attributes = normalize(&kind, attributes);
        }
        let operands = op
            .operands
            .iter()
            .map(|&n| self.value(values, func, n))
            .collect();
        let results = op
            .results
            .iter()
            .map(|&n| self.value(values, func, n))
            .collect();
        let mut regions = Vec::with_capacity(op.regions.len());
        for region in std::mem::take(&mut op.regions) {
            regions.push(self.region(region, values, func, false)?);
        }
        Ok(Op {
            kind,
            operands,
            results,
            attributes,
            regions,
            location: std::mem::take(&mut op.location),
        })
    }
}

/// `arg_attrs` / `res_attrs`: an array of dictionaries, one per item; absent means none.
fn per_item_dicts(attr: Option<Attribute>, n_items: usize) -> Vec<Vec<NamedAttribute>> {
    let mut out = vec![Vec::new(); n_items];
    if let Some(Attribute::Array(items)) = attr {
        for (slot, item) in out.iter_mut().zip(items) {
            if let Attribute::Dictionary(entries) = item {
                *slot = entries;
            }
        }
    }
    out
}

/// The op kind for a full op name: `vhlo.X_vN` is `stablehlo.X`, with the `func` ops apart.
fn op_kind(name: &str, in_function_body: bool) -> OpKind {
    let Some(mnemonic) = name.strip_prefix("vhlo.") else {
        return OpKind::from_name(name);
    };
    let base = match mnemonic.rfind("_v") {
        Some(i)
            if mnemonic.len() > i + 2 && mnemonic[i + 2..].bytes().all(|b| b.is_ascii_digit()) =>
        {
            &mnemonic[..i]
        }
        _ => mnemonic,
    };
    match base {
        "return" if in_function_body => OpKind::FuncReturn,
        "call" => OpKind::Call,
        "func" => OpKind::Func,
        _ => OpKind::from_name(&format!("stablehlo.{base}")),
    }
}

/// Rewrites VHLO attribute values into the shapes the StableHLO spec gives them.
fn normalize(kind: &OpKind, attributes: Vec<NamedAttribute>) -> Vec<NamedAttribute> {
    let mut out = Vec::with_capacity(attributes.len());
    for (name, value) in attributes {
        let value = match (name.as_str(), value) {
            (n, v) if I64_LIST_ATTRS.contains(&n) => match v.as_i64_list() {
                Some(list) => Attribute::DenseI64Array(list),
                None => v,
            },
            (n, Attribute::Elements(e)) if BOOL_LIST_ATTRS.contains(&n) => {
                Attribute::DenseBoolArray(e.to_dense_bytes().iter().map(|&b| b != 0).collect())
            }
            (n, Attribute::Array(items)) if BOOL_LIST_ATTRS.contains(&n) => {
                Attribute::DenseBoolArray(
                    items
                        .iter()
                        .map(|a| matches!(a, Attribute::Bool(true)))
                        .collect(),
                )
            }
            ("callee" | "decomposition", Attribute::String(s)) => Attribute::SymbolRef(s),
            ("called_computations", Attribute::Array(items)) => Attribute::Array(
                items
                    .into_iter()
                    .map(|a| match a {
                        Attribute::String(s) => Attribute::SymbolRef(s),
                        other => other,
                    })
                    .collect(),
            ),
            ("compare_type", Attribute::ComparisonType(ComparisonType::NotType)) => continue,
            ("result_accuracy", v) if is_default_accuracy(&v) => continue,
            // Unset optional fields (dot algorithm parts) are `none` types in VHLO.
            (_, Attribute::Type(Type::Opaque(t))) if t == "none" => continue,
            (_, v) => v,
        };
        out.push((name, value));
    }
    if *kind == OpKind::DotGeneral {
        // An absent dot algorithm leaves all of its fields unset; drop the leftovers.
        let has_algorithm = out.iter().any(|(n, _)| n == "lhs_precision_type");
        if !has_algorithm {
            out.retain(|(n, _)| {
                !matches!(
                    n.as_str(),
                    "rhs_precision_type"
                        | "accumulation_type"
                        | "lhs_component_count"
                        | "rhs_component_count"
                        | "num_primitive_operations"
                        | "allow_imprecise_accumulation"
                )
            });
        }
    }
    out
}

fn is_default_accuracy(v: &Attribute) -> bool {
    let Attribute::Dictionary(entries) = v else {
        return false;
    };
    entries.iter().all(|(n, a)| match (n.as_str(), a) {
        ("atol" | "rtol", Attribute::Float { value, .. }) => *value == 0.0,
        ("ulps", a) => a.as_int() == Some(0),
        ("mode", Attribute::String(s)) => s == "DEFAULT",
        _ => false,
    })
}
