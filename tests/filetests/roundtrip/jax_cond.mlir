module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<i1>, %arg1: tensor<2x3xf32>) -> (tensor<2x3xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.convert %arg0 : (tensor<i1>) -> tensor<i32>
    %1 = "stablehlo.case"(%0) ({
      %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
      %3 = stablehlo.subtract %arg1, %2 : tensor<2x3xf32>
      stablehlo.return %3 : tensor<2x3xf32>
    }, {
      %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %2 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
      %3 = stablehlo.add %arg1, %2 : tensor<2x3xf32>
      stablehlo.return %3 : tensor<2x3xf32>
    }) : (tensor<i32>) -> tensor<2x3xf32>
    return %1 : tensor<2x3xf32>
  }
}
