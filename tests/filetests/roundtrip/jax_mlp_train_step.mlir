module @jit_train_step attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<8x16xf32>, %arg1: tensor<16xf32>, %arg2: tensor<16x4xf32>, %arg3: tensor<4xf32>, %arg4: tensor<5x8xf32>, %arg5: tensor<5x4xf32>) -> (tensor<8x16xf32> {jax.result_info = "result[0][0]"}, tensor<16xf32> {jax.result_info = "result[0][1]"}, tensor<16x4xf32> {jax.result_info = "result[1][0]"}, tensor<4xf32> {jax.result_info = "result[1][1]"}) {
    %0 = stablehlo.dot_general %arg4, %arg0, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<5x8xf32>, tensor<8x16xf32>) -> tensor<5x16xf32>
    %1 = stablehlo.broadcast_in_dim %arg1, dims = [1] : (tensor<16xf32>) -> tensor<1x16xf32>
    %2 = stablehlo.broadcast_in_dim %1, dims = [0, 1] : (tensor<1x16xf32>) -> tensor<5x16xf32>
    %3 = stablehlo.add %0, %2 : tensor<5x16xf32>
    %4 = call @relu(%3) : (tensor<5x16xf32>) -> tensor<5x16xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<5x16xf32>
    %6 = stablehlo.compare GT, %3, %5, FLOAT : (tensor<5x16xf32>, tensor<5x16xf32>) -> tensor<5x16xi1>
    %7 = stablehlo.dot_general %4, %arg2, contracting_dims = [1] x [0], precision = [DEFAULT, DEFAULT] : (tensor<5x16xf32>, tensor<16x4xf32>) -> tensor<5x4xf32>
    %8 = stablehlo.broadcast_in_dim %arg3, dims = [1] : (tensor<4xf32>) -> tensor<1x4xf32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [0, 1] : (tensor<1x4xf32>) -> tensor<5x4xf32>
    %10 = stablehlo.add %7, %9 : tensor<5x4xf32>
    %11:2 = call @log_softmax(%10) : (tensor<5x4xf32>) -> (tensor<5x4xf32>, tensor<5x1xf32>)
    %cst_0 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %12 = stablehlo.negate %cst_0 : tensor<f32>
    %cst_1 = stablehlo.constant dense<5.000000e+00> : tensor<f32>
    %13 = stablehlo.divide %12, %cst_1 : tensor<f32>
    %14 = stablehlo.broadcast_in_dim %13, dims = [] : (tensor<f32>) -> tensor<5xf32>
    %15 = stablehlo.broadcast_in_dim %14, dims = [0] : (tensor<5xf32>) -> tensor<5x4xf32>
    %16 = stablehlo.multiply %15, %arg5 : tensor<5x4xf32>
    %17 = call @log_softmax_0(%11#0, %11#1, %16) : (tensor<5x4xf32>, tensor<5x1xf32>, tensor<5x4xf32>) -> tensor<5x4xf32>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %18 = stablehlo.reduce(%17 init: %cst_2) applies stablehlo.add across dimensions = [0] : (tensor<5x4xf32>, tensor<f32>) -> tensor<4xf32>
    %19 = stablehlo.reshape %18 : (tensor<4xf32>) -> tensor<1x4xf32>
    %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %20 = stablehlo.reduce(%19 init: %cst_3) applies stablehlo.add across dimensions = [0] : (tensor<1x4xf32>, tensor<f32>) -> tensor<4xf32>
    %21 = stablehlo.dot_general %17, %4, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<5x4xf32>, tensor<5x16xf32>) -> tensor<4x16xf32>
    %22 = stablehlo.transpose %21, dims = [1, 0] : (tensor<4x16xf32>) -> tensor<16x4xf32>
    %23 = stablehlo.dot_general %17, %arg2, contracting_dims = [1] x [1], precision = [DEFAULT, DEFAULT] : (tensor<5x4xf32>, tensor<16x4xf32>) -> tensor<5x16xf32>
    %cst_4 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %24 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<5x16xf32>
    %25 = stablehlo.select %6, %23, %24 : tensor<5x16xi1>, tensor<5x16xf32>
    %cst_5 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %26 = stablehlo.reduce(%25 init: %cst_5) applies stablehlo.add across dimensions = [0] : (tensor<5x16xf32>, tensor<f32>) -> tensor<16xf32>
    %27 = stablehlo.reshape %26 : (tensor<16xf32>) -> tensor<1x16xf32>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %28 = stablehlo.reduce(%27 init: %cst_6) applies stablehlo.add across dimensions = [0] : (tensor<1x16xf32>, tensor<f32>) -> tensor<16xf32>
    %29 = stablehlo.dot_general %25, %arg4, contracting_dims = [0] x [0], precision = [DEFAULT, DEFAULT] : (tensor<5x16xf32>, tensor<5x8xf32>) -> tensor<16x8xf32>
    %30 = stablehlo.transpose %29, dims = [1, 0] : (tensor<16x8xf32>) -> tensor<8x16xf32>
    %cst_7 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %31 = stablehlo.broadcast_in_dim %cst_7, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
    %32 = stablehlo.multiply %31, %30 : tensor<8x16xf32>
    %33 = stablehlo.subtract %arg0, %32 : tensor<8x16xf32>
    %cst_8 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %34 = stablehlo.broadcast_in_dim %cst_8, dims = [] : (tensor<f32>) -> tensor<16xf32>
    %35 = stablehlo.multiply %34, %28 : tensor<16xf32>
    %36 = stablehlo.subtract %arg1, %35 : tensor<16xf32>
    %cst_9 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %37 = stablehlo.broadcast_in_dim %cst_9, dims = [] : (tensor<f32>) -> tensor<16x4xf32>
    %38 = stablehlo.multiply %37, %22 : tensor<16x4xf32>
    %39 = stablehlo.subtract %arg2, %38 : tensor<16x4xf32>
    %cst_10 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %40 = stablehlo.broadcast_in_dim %cst_10, dims = [] : (tensor<f32>) -> tensor<4xf32>
    %41 = stablehlo.multiply %40, %20 : tensor<4xf32>
    %42 = stablehlo.subtract %arg3, %41 : tensor<4xf32>
    return %33, %36, %39, %42 : tensor<8x16xf32>, tensor<16xf32>, tensor<16x4xf32>, tensor<4xf32>
  }
  func.func private @relu(%arg0: tensor<5x16xf32>) -> tensor<5x16xf32> {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<5x16xf32>
    %1 = stablehlo.maximum %arg0, %0 : tensor<5x16xf32>
    return %1 : tensor<5x16xf32>
  }
  func.func private @log_softmax(%arg0: tensor<5x4xf32>) -> (tensor<5x4xf32>, tensor<5x1xf32>) {
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.maximum across dimensions = [1] : (tensor<5x4xf32>, tensor<f32>) -> tensor<5xf32>
    %cst_0 = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %1 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<5xf32>
    %2 = stablehlo.maximum %1, %0 : tensor<5xf32>
    %3 = stablehlo.broadcast_in_dim %2, dims = [0] : (tensor<5xf32>) -> tensor<5x1xf32>
    %4 = stablehlo.broadcast_in_dim %3, dims = [0, 1] : (tensor<5x1xf32>) -> tensor<5x4xf32>
    %5 = stablehlo.subtract %arg0, %4 : tensor<5x4xf32>
    %6 = stablehlo.exponential %5 : tensor<5x4xf32>
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %7 = stablehlo.reduce(%6 init: %cst_1) applies stablehlo.add across dimensions = [1] : (tensor<5x4xf32>, tensor<f32>) -> tensor<5xf32>
    %8 = stablehlo.broadcast_in_dim %7, dims = [0] : (tensor<5xf32>) -> tensor<5x1xf32>
    return %6, %8 : tensor<5x4xf32>, tensor<5x1xf32>
  }
  func.func private @log_softmax_0(%arg0: tensor<5x4xf32>, %arg1: tensor<5x1xf32>, %arg2: tensor<5x4xf32>) -> tensor<5x4xf32> {
    %0 = stablehlo.negate %arg2 : tensor<5x4xf32>
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<5x4xf32>, tensor<f32>) -> tensor<5xf32>
    %2 = stablehlo.reshape %1 : (tensor<5xf32>) -> tensor<5x1xf32>
    %3 = stablehlo.divide %2, %arg1 : tensor<5x1xf32>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %4 = stablehlo.reduce(%3 init: %cst_0) applies stablehlo.add across dimensions = [1] : (tensor<5x1xf32>, tensor<f32>) -> tensor<5xf32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<5xf32>) -> tensor<5x4xf32>
    %6 = stablehlo.multiply %5, %arg0 : tensor<5x4xf32>
    %7 = stablehlo.add %arg2, %6 : tensor<5x4xf32>
    return %7 : tensor<5x4xf32>
  }
}
