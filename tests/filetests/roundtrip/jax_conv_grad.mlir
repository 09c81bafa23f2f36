module @jit_convnet attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<3x3x2x4xf32>, %arg1: tensor<1x8x8x2xf32>) -> (tensor<3x3x2x4xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.convolution(%arg1, %arg0) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[0, 1], [0, 1]], lhs_dilate = [1, 1], rhs_dilate = [1, 1], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>) -> tensor<1x4x4x4xf32>
    %1 = stablehlo.multiply %0, %0 : tensor<1x4x4x4xf32>
    %2 = stablehlo.multiply %1, %0 : tensor<1x4x4x4xf32>
    %3 = stablehlo.multiply %0, %0 : tensor<1x4x4x4xf32>
    %cst = stablehlo.constant dense<3.000000e+00> : tensor<f32>
    %4 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1x4x4x4xf32>
    %5 = stablehlo.multiply %4, %3 : tensor<1x4x4x4xf32>
    %cst_0 = stablehlo.constant dense<4.471500e-02> : tensor<f32>
    %6 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<1x4x4x4xf32>
    %7 = stablehlo.multiply %6, %2 : tensor<1x4x4x4xf32>
    %8 = stablehlo.add %0, %7 : tensor<1x4x4x4xf32>
    %cst_1 = stablehlo.constant dense<0.797884583> : tensor<f32>
    %9 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<1x4x4x4xf32>
    %10 = stablehlo.multiply %9, %8 : tensor<1x4x4x4xf32>
    %11 = stablehlo.tanh %10 : tensor<1x4x4x4xf32>
    %cst_2 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %12 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<1x4x4x4xf32>
    %13 = stablehlo.subtract %12, %11 : tensor<1x4x4x4xf32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<1x4x4x4xf32>
    %15 = stablehlo.add %14, %11 : tensor<1x4x4x4xf32>
    %cst_4 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %16 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<1x4x4x4xf32>
    %17 = stablehlo.multiply %16, %15 : tensor<1x4x4x4xf32>
    %cst_5 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %18 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<1x4x4x4xf32>
    %19 = stablehlo.multiply %0, %18 : tensor<1x4x4x4xf32>
    %20 = stablehlo.multiply %18, %17 : tensor<1x4x4x4xf32>
    %cst_6 = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %21 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<1x4x4x4xf32>
    %22 = stablehlo.multiply %21, %19 : tensor<1x4x4x4xf32>
    %23 = stablehlo.multiply %22, %13 : tensor<1x4x4x4xf32>
    %24 = stablehlo.multiply %23, %11 : tensor<1x4x4x4xf32>
    %25 = stablehlo.add %23, %24 : tensor<1x4x4x4xf32>
    %cst_7 = stablehlo.constant dense<0.797884583> : tensor<f32>
    %26 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<1x4x4x4xf32>
    %27 = stablehlo.multiply %26, %25 : tensor<1x4x4x4xf32>
    %28 = stablehlo.add %20, %27 : tensor<1x4x4x4xf32>
    %cst_8 = stablehlo.constant dense<4.471500e-02> : tensor<f32>
    %29 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<1x4x4x4xf32>
    %30 = stablehlo.multiply %29, %27 : tensor<1x4x4x4xf32>
    %31 = stablehlo.multiply %30, %5 : tensor<1x4x4x4xf32>
    %32 = stablehlo.add %28, %31 : tensor<1x4x4x4xf32>
    %33 = stablehlo.convolution(%arg1, %32) dim_numbers = [f, 0, 1, b]x[i, 0, 1, o]->[0, 1, b, f], window = {stride = [1, 1], pad = [[0, 1], [0, 1]], lhs_dilate = [1, 1], rhs_dilate = [2, 2], reverse = [false, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x8x8x2xf32>, tensor<1x4x4x4xf32>) -> tensor<3x3x2x4xf32>
    return %33 : tensor<3x3x2x4xf32>
  }
}
