module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xi32>) -> (tensor<3xi32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<2> : tensor<i32>
    %0 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %1 = stablehlo.shift_left %arg0, %0 : tensor<3xi32>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %2 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %3 = stablehlo.shift_right_arithmetic %arg0, %2 : tensor<3xi32>
    %4 = stablehlo.xor %1, %3 : tensor<3xi32>
    %c_1 = stablehlo.constant dense<1> : tensor<i32>
    %5 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %6 = stablehlo.shift_right_logical %arg0, %5 : tensor<3xi32>
    %7 = stablehlo.or %4, %6 : tensor<3xi32>
    return %7 : tensor<3xi32>
  }
}
