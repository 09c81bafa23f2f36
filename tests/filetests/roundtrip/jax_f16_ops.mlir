module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf32>) -> (tensor<4xf16> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<4xf32>
    %2 = stablehlo.convert %1 : (tensor<4xf32>) -> tensor<4xf16>
    %cst_0 = stablehlo.constant dense<7.000000e+00> : tensor<f16>
    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f16>) -> tensor<4xf16>
    %4 = stablehlo.divide %2, %3 : tensor<4xf16>
    return %4 : tensor<4xf16>
  }
}
