module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2xi1>) -> (tensor<2xi1> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<[true, false]> : tensor<2xi1>
    %0 = stablehlo.and %arg0, %c : tensor<2xi1>
    return %0 : tensor<2xi1>
  }
}
