// Dynamic shapes.
module {
  func.func @main(%arg0: tensor<?x3xf32>, %arg1: tensor<2xi64>, %arg2: tensor<1xi32>) -> tensor<?x?xf32> {
    %0 = stablehlo.dynamic_broadcast_in_dim %arg0, %arg1, dims = [0, 1] : (tensor<?x3xf32>, tensor<2xi64>) -> tensor<?x?xf32>
    %1 = stablehlo.dynamic_reshape %0, %arg1 : (tensor<?x?xf32>, tensor<2xi64>) -> tensor<?x?xf32>
    %2 = stablehlo.dynamic_iota %arg2, dim = 0 : (tensor<1xi32>) -> tensor<?xf32>
    %3 = stablehlo.get_dimension_size %arg0, dim = 0 : (tensor<?x3xf32>) -> tensor<i32>
    %4 = stablehlo.set_dimension_size %arg0, %3, dim = 0 : (tensor<?x3xf32>, tensor<i32>) -> tensor<?x3xf32>
    return %1 : tensor<?x?xf32>
  }
}
