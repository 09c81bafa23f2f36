module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<i32>, %arg1: tensor<2x3xf32>) -> (tensor<2x3xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.convert %arg0 : tensor<i32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %c_0 = stablehlo.constant dense<2> : tensor<i32>
    %1 = stablehlo.clamp %c, %0, %c_0 : tensor<i32>
    %2 = "stablehlo.case"(%1) ({
      %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
      %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
      %4 = stablehlo.add %arg1, %3 : tensor<2x3xf32>
      stablehlo.return %4 : tensor<2x3xf32>
    }, {
      %cst = stablehlo.constant dense<2.000000e+00> : tensor<f32>
      %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
      %4 = stablehlo.multiply %arg1, %3 : tensor<2x3xf32>
      stablehlo.return %4 : tensor<2x3xf32>
    }, {
      %cst = stablehlo.constant dense<3.000000e+00> : tensor<f32>
      %3 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
      %4 = stablehlo.subtract %arg1, %3 : tensor<2x3xf32>
      stablehlo.return %4 : tensor<2x3xf32>
    }) : (tensor<i32>) -> tensor<2x3xf32>
    return %2 : tensor<2x3xf32>
  }
}
