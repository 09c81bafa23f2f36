module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32>) -> (tensor<2x3xbf16> {jax.result_info = "result"}) {
    %0 = stablehlo.convert %arg0 : (tensor<2x3xf32>) -> tensor<2x3xbf16>
    %cst = stablehlo.constant dense<2.000000e+00> : tensor<bf16>
    %1 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<bf16>) -> tensor<2x3xbf16>
    %2 = stablehlo.multiply %0, %1 : tensor<2x3xbf16>
    return %2 : tensor<2x3xbf16>
  }
}
