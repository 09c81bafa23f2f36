module @jit_ln attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1024x1024xf32>, %arg1: tensor<1024xf32>, %arg2: tensor<1024xf32>) -> (tensor<1024x1024xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<1024x1024xf32>, tensor<f32>) -> tensor<1024xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<1024xf32>) -> tensor<1024x1xf32>
    %cst_0 = stablehlo.constant dense<1.024000e+03> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<1024x1xf32>
    %3 = stablehlo.divide %1, %2 : tensor<1024x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<1024x1xf32>) -> tensor<1024x1024xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<1024x1024xf32>
    %6 = stablehlo.multiply %5, %5 : tensor<1024x1024xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [1] : (tensor<1024x1024xf32>, tensor<f32>) -> tensor<1024xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0] : (tensor<1024xf32>) -> tensor<1024x1xf32>
    %cst_2 = stablehlo.constant dense<1.024000e+03> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<1024x1xf32>
    %10 = stablehlo.divide %8, %9 : tensor<1024x1xf32>
    %11 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<1024x1xf32>) -> tensor<1024x1024xf32>
    %12 = stablehlo.subtract %arg0, %11 : tensor<1024x1024xf32>
    %cst_3 = stablehlo.constant dense<9.99999974E-6> : tensor<f32>
    %13 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<1024x1xf32>
    %14 = stablehlo.add %10, %13 : tensor<1024x1xf32>
    %15 = stablehlo.sqrt %14 : tensor<1024x1xf32>
    %cst_4 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<1024x1xf32>
    %17 = stablehlo.divide %16, %15 : tensor<1024x1xf32>
    %18 = stablehlo.broadcast_in_dim %17, dims = [0, 1] : (tensor<1024x1xf32>) -> tensor<1024x1024xf32>
    %19 = stablehlo.multiply %12, %18 : tensor<1024x1024xf32>
    %20 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<1024xf32>) -> tensor<1x1024xf32>
    %21 = stablehlo.broadcast_in_dim %20, dims = [0, 1] : (tensor<1x1024xf32>) -> tensor<1024x1024xf32>
    %22 = stablehlo.multiply %19, %21 : tensor<1024x1024xf32>
    %23 = stablehlo.broadcast_in_dim %arg2, dims = [1] : (tensor<1024xf32>) -> tensor<1x1024xf32>
    %24 = stablehlo.broadcast_in_dim %23, dims = [0, 1] : (tensor<1x1024xf32>) -> tensor<1024x1024xf32>
    %25 = stablehlo.add %22, %24 : tensor<1024x1024xf32>
    return %25 : tensor<1024x1024xf32>
  }
}
