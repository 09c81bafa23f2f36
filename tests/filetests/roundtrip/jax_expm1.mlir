module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xf32>) -> (tensor<3xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.exponential_minus_one %arg0 : tensor<3xf32>
    %1 = stablehlo.log_plus_one %arg0 : tensor<3xf32>
    %2 = stablehlo.add %0, %1 : tensor<3xf32>
    %3 = stablehlo.tan %arg0 : tensor<3xf32>
    %4 = stablehlo.add %2, %3 : tensor<3xf32>
    %5 = stablehlo.atan2 %arg0, %arg0 : tensor<3xf32>
    %6 = stablehlo.add %4, %5 : tensor<3xf32>
    %7 = call @round(%arg0) : (tensor<3xf32>) -> tensor<3xf32>
    %8 = stablehlo.add %6, %7 : tensor<3xf32>
    %9 = stablehlo.sign %arg0 : tensor<3xf32>
    %10 = stablehlo.add %8, %9 : tensor<3xf32>
    %11 = stablehlo.floor %arg0 : tensor<3xf32>
    %12 = stablehlo.add %10, %11 : tensor<3xf32>
    %13 = stablehlo.ceil %arg0 : tensor<3xf32>
    %14 = stablehlo.add %12, %13 : tensor<3xf32>
    return %14 : tensor<3xf32>
  }
  func.func private @round(%arg0: tensor<3xf32>) -> tensor<3xf32> {
    %0 = stablehlo.round_nearest_even %arg0 : tensor<3xf32>
    return %0 : tensor<3xf32>
  }
}
