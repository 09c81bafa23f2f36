module @jit_fori attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<16xf32>) -> (tensor<16xf32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i32>, tensor<16xf32>
    cond {
      %c_1 = stablehlo.constant dense<1000> : tensor<i32>
      %1 = stablehlo.compare LT, %iterArg, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1 = func.call @closed_call(%iterArg_0) : (tensor<16xf32>) -> tensor<16xf32>
      %c_1 = stablehlo.constant dense<1> : tensor<i32>
      %2 = stablehlo.add %iterArg, %c_1 : tensor<i32>
      stablehlo.return %2, %1 : tensor<i32>, tensor<16xf32>
    }
    return %0#1 : tensor<16xf32>
  }
  func.func private @closed_call(%arg0: tensor<16xf32>) -> tensor<16xf32> {
    %cst = stablehlo.constant dense<9.900000e-01> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<16xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<16xf32>
    %2 = stablehlo.sine %arg0 : tensor<16xf32>
    %cst_0 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %3 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<16xf32>
    %4 = stablehlo.multiply %2, %3 : tensor<16xf32>
    %5 = stablehlo.add %1, %4 : tensor<16xf32>
    return %5 : tensor<16xf32>
  }
}
