module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<10x10xf32>) -> (tensor<10x10xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.iota dim = 0 : tensor<100xf32>
    %1 = stablehlo.reshape %0 : (tensor<100xf32>) -> tensor<10x10xf32>
    %2 = stablehlo.add %arg0, %1 : tensor<10x10xf32>
    return %2 : tensor<10x10xf32>
  }
}
