module @jit_running attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1024xf32>) -> (tensor<1024xf32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %0:3 = stablehlo.while(%iterArg = %c_0, %iterArg_1 = %c, %iterArg_2 = %arg0) : tensor<i32>, tensor<i32>, tensor<1024xf32>
    cond {
      %c_3 = stablehlo.constant dense<1023> : tensor<i32>
      %1 = stablehlo.compare LT, %iterArg, %c_3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %1:2 = func.call @closed_call(%iterArg_1, %iterArg_2) : (tensor<i32>, tensor<1024xf32>) -> (tensor<i32>, tensor<1024xf32>)
      %c_3 = stablehlo.constant dense<1> : tensor<i32>
      %2 = stablehlo.add %iterArg, %c_3 : tensor<i32>
      stablehlo.return %2, %1#0, %1#1 : tensor<i32>, tensor<i32>, tensor<1024xf32>
    }
    return %0#2 : tensor<1024xf32>
  }
  func.func private @closed_call(%arg0: tensor<i32>, %arg1: tensor<1024xf32>) -> (tensor<i32>, tensor<1024xf32>) {
    %c = stablehlo.constant dense<1> : tensor<i32>
    %0 = stablehlo.add %arg0, %c : tensor<i32>
    %c_0 = stablehlo.constant dense<1> : tensor<i32>
    %1 = stablehlo.subtract %arg0, %c_0 : tensor<i32>
    %c_1 = stablehlo.constant dense<0> : tensor<i32>
    %2 = stablehlo.compare LT, %1, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %3 = stablehlo.convert %1 : tensor<i32>
    %c_2 = stablehlo.constant dense<1024> : tensor<i32>
    %4 = stablehlo.add %3, %c_2 : tensor<i32>
    %5 = stablehlo.select %2, %4, %1 : tensor<i1>, tensor<i32>
    %6 = stablehlo.dynamic_slice %arg1, %5, sizes = [1] : (tensor<1024xf32>, tensor<i32>) -> tensor<1xf32>
    %7 = stablehlo.reshape %6 : (tensor<1xf32>) -> tensor<f32>
    %cst = stablehlo.constant dense<5.000000e-01> : tensor<f32>
    %8 = stablehlo.multiply %7, %cst : tensor<f32>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %9 = stablehlo.add %8, %cst_3 : tensor<f32>
    %c_4 = stablehlo.constant dense<0> : tensor<i32>
    %10 = stablehlo.compare LT, %arg0, %c_4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_5 = stablehlo.constant dense<1024> : tensor<i32>
    %11 = stablehlo.add %arg0, %c_5 : tensor<i32>
    %12 = stablehlo.select %10, %11, %arg0 : tensor<i1>, tensor<i32>
    %13 = stablehlo.convert %12 : tensor<i32>
    %14 = stablehlo.broadcast_in_dim %13, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %15 = "stablehlo.scatter"(%arg1, %14, %9) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0]>, unique_indices = true}> ({
    ^bb0(%arg2: tensor<f32>, %arg3: tensor<f32>):
      stablehlo.return %arg3 : tensor<f32>
    }) : (tensor<1024xf32>, tensor<1xi32>, tensor<f32>) -> tensor<1024xf32>
    return %0, %15 : tensor<i32>, tensor<1024xf32>
  }
}
