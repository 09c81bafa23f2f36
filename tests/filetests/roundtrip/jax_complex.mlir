module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2xcomplex<f32>>) -> (tensor<2xcomplex<f32>> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<(1.000000e+00,2.000000e+00)> : tensor<complex<f32>>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<complex<f32>>) -> tensor<2xcomplex<f32>>
    %1 = stablehlo.multiply %arg0, %0 : tensor<2xcomplex<f32>>
    return %1 : tensor<2xcomplex<f32>>
  }
}
