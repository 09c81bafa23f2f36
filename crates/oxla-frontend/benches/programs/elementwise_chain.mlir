module @jit_chain attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1048576xf32>) -> (tensor<1048576xf32> {jax.result_info = "result"}) {
    %cst = stablehlo.constant dense<1.500000e+00> : tensor<f32>
    %0 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f32>) -> tensor<1048576xf32>
    %1 = stablehlo.multiply %arg0, %0 : tensor<1048576xf32>
    %cst_0 = stablehlo.constant dense<2.500000e-01> : tensor<f32>
    %2 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f32>) -> tensor<1048576xf32>
    %3 = stablehlo.add %1, %2 : tensor<1048576xf32>
    %4 = stablehlo.tanh %3 : tensor<1048576xf32>
    %cst_1 = stablehlo.constant dense<-5.000000e-01> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %cst_1, dims = [] : (tensor<f32>) -> tensor<1048576xf32>
    %6 = stablehlo.multiply %5, %arg0 : tensor<1048576xf32>
    %7 = stablehlo.multiply %6, %arg0 : tensor<1048576xf32>
    %8 = stablehlo.exponential %7 : tensor<1048576xf32>
    %9 = stablehlo.multiply %4, %8 : tensor<1048576xf32>
    %10 = stablehlo.sine %arg0 : tensor<1048576xf32>
    %cst_2 = stablehlo.constant dense<1.000000e-01> : tensor<f32>
    %11 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f32>) -> tensor<1048576xf32>
    %12 = stablehlo.multiply %10, %11 : tensor<1048576xf32>
    %13 = stablehlo.add %9, %12 : tensor<1048576xf32>
    %14 = stablehlo.abs %arg0 : tensor<1048576xf32>
    %cst_3 = stablehlo.constant dense<0.00999999977> : tensor<f32>
    %15 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f32>) -> tensor<1048576xf32>
    %16 = stablehlo.multiply %14, %15 : tensor<1048576xf32>
    %17 = stablehlo.subtract %13, %16 : tensor<1048576xf32>
    %cst_4 = stablehlo.constant dense<-5.000000e-01> : tensor<f32>
    %18 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f32>) -> tensor<1048576xf32>
    %19 = stablehlo.maximum %17, %18 : tensor<1048576xf32>
    %20 = stablehlo.multiply %arg0, %arg0 : tensor<1048576xf32>
    %cst_5 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %21 = stablehlo.broadcast_in_dim %cst_5, dims = [] : (tensor<f32>) -> tensor<1048576xf32>
    %22 = stablehlo.add %21, %20 : tensor<1048576xf32>
    %23 = stablehlo.divide %19, %22 : tensor<1048576xf32>
    %24 = stablehlo.multiply %23, %23 : tensor<1048576xf32>
    %cst_6 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %25 = stablehlo.broadcast_in_dim %cst_6, dims = [] : (tensor<f32>) -> tensor<1048576xf32>
    %26 = stablehlo.add %24, %25 : tensor<1048576xf32>
    %27 = stablehlo.sqrt %26 : tensor<1048576xf32>
    %28 = stablehlo.abs %23 : tensor<1048576xf32>
    %29 = stablehlo.log_plus_one %28 : tensor<1048576xf32>
    %30 = stablehlo.add %27, %29 : tensor<1048576xf32>
    return %30 : tensor<1048576xf32>
  }
}
