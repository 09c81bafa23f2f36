// Ops written in MLIR's generic syntax.
module {
  func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<3x4xf32>) -> tensor<2x4xf32> {
    %0 = "stablehlo.constant"() <{value = dense<1.000000e+00> : tensor<2x3xf32>}> : () -> tensor<2x3xf32>
    %1 = "stablehlo.add"(%arg0, %0) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %2 = "stablehlo.compare"(%1, %0) <{compare_type = #stablehlo<comparison_type FLOAT>, comparison_direction = #stablehlo<comparison_direction GT>}> : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    %3 = "stablehlo.select"(%2, %1, %0) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    %4 = "stablehlo.dot_general"(%3, %arg1) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]}> : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %5 = "stablehlo.broadcast_in_dim"(%4) <{broadcast_dimensions = array<i64: 0, 1>}> : (tensor<2x4xf32>) -> tensor<2x4xf32>
    %z = "stablehlo.constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
    %6 = "stablehlo.reduce"(%5, %z) <{dimensions = array<i64: 1>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = "stablehlo.add"(%a, %b) : (tensor<f32>, tensor<f32>) -> tensor<f32>
      "stablehlo.return"(%s) : (tensor<f32>) -> ()
    }) : (tensor<2x4xf32>, tensor<f32>) -> tensor<2xf32>
    %7 = "stablehlo.slice"(%arg0) {limit_indices = array<i64: 2, 3>, start_indices = array<i64: 0, 1>, strides = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x2xf32>
    %8 = "stablehlo.convolution"(%arg0, %arg1) <{batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<raw input_batch_dimension = 0, input_feature_dimension = 1, input_spatial_dimensions = [], kernel_input_feature_dimension = 0, kernel_output_feature_dimension = 1, kernel_spatial_dimensions = [], output_batch_dimension = 0, output_feature_dimension = 1, output_spatial_dimensions = []>, feature_group_count = 1 : i64}> : (tensor<2x3xf32>, tensor<3x4xf32>) -> tensor<2x4xf32>
    %9 = "stablehlo.while"(%4) ({
    ^bb0(%c: tensor<2x4xf32>):
      %t = "stablehlo.constant"() <{value = dense<false> : tensor<i1>}> : () -> tensor<i1>
      "stablehlo.return"(%t) : (tensor<i1>) -> ()
    }, {
    ^bb0(%c: tensor<2x4xf32>):
      "stablehlo.return"(%c) : (tensor<2x4xf32>) -> ()
    }) : (tensor<2x4xf32>) -> tensor<2x4xf32>
    "func.return"(%9) : (tensor<2x4xf32>) -> ()
  }
}
