// Shape and data-movement ops.
module {
  func.func @main(%arg0: tensor<2x3xf32>, %arg1: tensor<i32>, %arg2: tensor<f32>) -> (tensor<4x3xf32>, tuple<tensor<2x3xf32>, tensor<i32>>) {
    %0 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %1 = stablehlo.broadcast_in_dim %arg0, dims = [1, 2] : (tensor<2x3xf32>) -> tensor<5x2x3xf32>
    %2 = stablehlo.broadcast %arg0, sizes = [4] : (tensor<2x3xf32>) -> tensor<4x2x3xf32>
    %3 = stablehlo.reshape %arg0 : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %4 = stablehlo.transpose %arg0, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %5 = stablehlo.reverse %arg0, dims = [0, 1] : tensor<2x3xf32>
    %6 = stablehlo.slice %arg0 [0:2:2, 0:3:2] : (tensor<2x3xf32>) -> tensor<1x2xf32>
    %7 = stablehlo.slice %arg0 [1:2, 0:3] : (tensor<2x3xf32>) -> tensor<1x3xf32>
    %8 = stablehlo.dynamic_slice %arg0, %arg1, %arg1, sizes = [1, 2] : (tensor<2x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x2xf32>
    %9 = stablehlo.dynamic_update_slice %arg0, %7, %arg1, %arg1 : (tensor<2x3xf32>, tensor<1x3xf32>, tensor<i32>, tensor<i32>) -> tensor<2x3xf32>
    %10 = stablehlo.concatenate %arg0, %9, dim = 0 : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<4x3xf32>
    %11 = stablehlo.pad %arg0, %arg2, low = [1, -1], high = [0, 2], interior = [1, 0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<4x4xf32>
    %12 = stablehlo.iota dim = 1 : tensor<2x3xi64>
    %13 = stablehlo.get_dimension_size %arg0, dim = 1 : (tensor<2x3xf32>) -> tensor<i32>
    %14 = stablehlo.tuple %9, %13 : tuple<tensor<2x3xf32>, tensor<i32>>
    %15 = stablehlo.get_tuple_element %14[0] : (tuple<tensor<2x3xf32>, tensor<i32>>) -> tensor<2x3xf32>
    %16 = stablehlo.tuple %15, %arg1 : tuple<tensor<2x3xf32>, tensor<i32>>
    return %10, %16 : tensor<4x3xf32>, tuple<tensor<2x3xf32>, tensor<i32>>
  }
}
