// gather and scatter, including batching dimensions.
module {
  func.func @main(%x: tensor<3x4x5xf32>, %idx: tensor<3x2x2xi32>, %upd: tensor<3x2x5xf32>) -> (tensor<3x2x5xf32>, tensor<3x4x5xf32>) {
    %0 = "stablehlo.gather"(%x, %idx) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1, 2], index_vector_dim = 2>, indices_are_sorted = true, slice_sizes = array<i64: 1, 1, 5>}> : (tensor<3x4x5xf32>, tensor<3x2x2xi32>) -> tensor<3x2x5xf32>
    %1 = "stablehlo.scatter"(%x, %idx, %upd) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [2], inserted_window_dims = [1], input_batching_dims = [0], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1, 2], index_vector_dim = 2>, unique_indices = true}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      stablehlo.return %b : tensor<f32>
    }) : (tensor<3x4x5xf32>, tensor<3x2x2xi32>, tensor<3x2x5xf32>) -> tensor<3x4x5xf32>
    return %0, %1 : tensor<3x2x5xf32>, tensor<3x4x5xf32>
  }
}
