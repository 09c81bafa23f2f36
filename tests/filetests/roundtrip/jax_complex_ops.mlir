module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3xcomplex<f32>>) -> (tensor<3xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.real %arg0 : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    %1 = stablehlo.imag %arg0 : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    %2 = stablehlo.add %0, %1 : tensor<3xf32>
    %3 = stablehlo.abs %arg0 : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    %4 = stablehlo.add %2, %3 : tensor<3xf32>
    %5 = stablehlo.real %arg0 : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    %6 = stablehlo.imag %arg0 : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    %7 = stablehlo.complex %5, %6 : tensor<3xcomplex<f32>>
    %8 = stablehlo.real %7 : (tensor<3xcomplex<f32>>) -> tensor<3xf32>
    %9 = stablehlo.add %4, %8 : tensor<3xf32>
    return %9 : tensor<3xf32>
  }
}
