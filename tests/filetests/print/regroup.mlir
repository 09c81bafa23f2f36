// test: print
// Flattened structured attributes print regrouped; ops without a pretty form stay generic.
func.func @main(%x: tensor<3x4xf32>, %i: tensor<2x1xi32>, %u: tensor<2x4xf32>, %k: tensor<4x4xf32>) -> tensor<3x4xf32> {
  %0 = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 4>}> : (tensor<3x4xf32>, tensor<2x1xi32>) -> tensor<2x4xf32>
  %1 = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) {mhlo.sharding = "{replicated}"} : (tensor<3x4xf32>, tensor<2x1xi32>, tensor<2x4xf32>) -> tensor<3x4xf32>
  %2 = "stablehlo.all_reduce"(%1) <{channel_handle = #stablehlo.channel_handle<handle = 5, type = 1>, replica_groups = dense<[[0]]> : tensor<1x1xi64>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<3x4xf32>) -> tensor<3x4xf32>
  %3 = "stablehlo.convolution"(%x, %k) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, f]x[i, o]->[b, f]>, feature_group_count = 1 : i64}> : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
  return %3 : tensor<3x4xf32>
}

// ----- expected -----
// module {
//   func.func public @main(%arg0: tensor<3x4xf32>, %arg1: tensor<2x1xi32>, %arg2: tensor<2x4xf32>, %arg3: tensor<4x4xf32>) -> tensor<3x4xf32> {
//     %0 = "stablehlo.gather"(%arg0, %arg1) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 4>}> : (tensor<3x4xf32>, tensor<2x1xi32>) -> tensor<2x4xf32>
//     %1 = "stablehlo.scatter"(%arg0, %arg1, %arg2) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
//     ^bb0(%arg4: tensor<f32>, %arg5: tensor<f32>):
//       %2 = stablehlo.add %arg4, %arg5 : tensor<f32>
//       stablehlo.return %2 : tensor<f32>
//     }) {mhlo.sharding = "{replicated}"} : (tensor<3x4xf32>, tensor<2x1xi32>, tensor<2x4xf32>) -> tensor<3x4xf32>
//     %3 = "stablehlo.all_reduce"(%1) <{channel_handle = #stablehlo.channel_handle<handle = 5, type = 1>, replica_groups = dense<0> : tensor<1x1xi64>}> ({
//     ^bb0(%arg6: tensor<f32>, %arg7: tensor<f32>):
//       %4 = stablehlo.maximum %arg6, %arg7 : tensor<f32>
//       stablehlo.return %4 : tensor<f32>
//     }) : (tensor<3x4xf32>) -> tensor<3x4xf32>
//     %5 = stablehlo.convolution(%arg0, %arg3) dim_numbers = [b, f]x[i, o]->[b, f], window = {} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
//     return %5 : tensor<3x4xf32>
//   }
// }
