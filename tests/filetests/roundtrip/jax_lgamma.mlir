module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32>) -> (tensor<3xf32> {jax.result_info = "result"}) {
    %0 = chlo.lgamma %arg0 : tensor<3xf32> -> tensor<3xf32>
    %1 = chlo.digamma %arg0 : tensor<3xf32> -> tensor<3xf32>
    %2 = stablehlo.add %0, %1 : tensor<3xf32>
    %3 = chlo.atanh %arg0 : tensor<3xf32> -> tensor<3xf32>
    %4 = stablehlo.add %2, %3 : tensor<3xf32>
    %5 = chlo.sinh %arg0 : tensor<3xf32> -> tensor<3xf32>
    %6 = stablehlo.add %4, %5 : tensor<3xf32>
    return %6 : tensor<3xf32>
  }
}
