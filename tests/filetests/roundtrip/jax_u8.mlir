module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xui8>) -> (tensor<3xui8> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<2> : tensor<ui8>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<ui8>) -> tensor<3xui8>
    %1 = stablehlo.shift_right_logical %arg0, %0 : tensor<3xui8>
    return %1 : tensor<3xui8>
  }
}
