module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32>) -> (tensor<2x3xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.tanh %arg0 : tensor<2x3xf32>
    %cst = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %2 = stablehlo.subtract %1, %0 : tensor<2x3xf32>
    %cst_0 = stablehlo.constant dense<2.000000e+00> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %4 = stablehlo.multiply %3, %0 : tensor<2x3xf32>
    %cst_1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<2x3xf32>
    %6 = stablehlo.multiply %5, %4 : tensor<2x3xf32>
    %7 = stablehlo.multiply %6, %2 : tensor<2x3xf32>
    %8 = stablehlo.multiply %7, %0 : tensor<2x3xf32>
    %9 = stablehlo.add %7, %8 : tensor<2x3xf32>
    return %9 : tensor<2x3xf32>
  }
}
