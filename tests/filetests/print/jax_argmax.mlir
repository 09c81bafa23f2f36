// test: print
// A JAX program prints back in the form MLIR itself prints (value names aside).
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32>) -> (tensor<2xi32> {jax.result_info = "result"}) {
    %0 = call @argmax(%arg0) : (tensor<2x3xf32>) -> tensor<2xi32>
    return %0 : tensor<2xi32>
  }
  func.func private @argmax(%arg0: tensor<2x3xf32>) -> tensor<2xi32> {
    %0 = stablehlo.iota dim = 1 : tensor<2x3xi32>
    %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1:2 = stablehlo.reduce(%arg0 init: %cst), (%0 init: %c) across dimensions = [1] : (tensor<2x3xf32>, tensor<2x3xi32>, tensor<f32>, tensor<i32>) -> (tensor<2xf32>, tensor<2xi32>)
     reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
      %2 = stablehlo.compare GT, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %3 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %4 = stablehlo.or %2, %3 : tensor<i1>
      %5 = stablehlo.compare EQ, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %6 = stablehlo.compare LT, %arg2, %arg4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %7 = stablehlo.and %5, %6 : tensor<i1>
      %8 = stablehlo.or %4, %7 : tensor<i1>
      %9 = stablehlo.select %4, %arg1, %arg3 : tensor<i1>, tensor<f32>
      %10 = stablehlo.select %8, %arg2, %arg4 : tensor<i1>, tensor<i32>
      stablehlo.return %9, %10 : tensor<f32>, tensor<i32>
    }
    return %1#1 : tensor<2xi32>
  }
}

// ----- expected -----
// module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
//   func.func public @main(%arg0: tensor<2x3xf32>) -> (tensor<2xi32> {jax.result_info = "result"}) {
//     %0 = call @argmax(%arg0) : (tensor<2x3xf32>) -> tensor<2xi32>
//     return %0 : tensor<2xi32>
//   }
//   func.func private @argmax(%arg0: tensor<2x3xf32>) -> tensor<2xi32> {
//     %0 = stablehlo.iota dim = 1 : tensor<2x3xi32>
//     %1 = stablehlo.constant dense<0xFF800000> : tensor<f32>
//     %2 = stablehlo.constant dense<0> : tensor<i32>
//     %3:2 = stablehlo.reduce(%arg0 init: %1),(%0 init: %2) across dimensions = [1] : (tensor<2x3xf32>, tensor<2x3xi32>, tensor<f32>, tensor<i32>) -> (tensor<2xf32>, tensor<2xi32>)
//      reducer(%arg1: tensor<f32>, %arg2: tensor<f32>) (%arg3: tensor<i32>, %arg4: tensor<i32>)  {
//       %4 = stablehlo.compare GT, %arg1, %arg2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
//       %5 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
//       %6 = stablehlo.or %4, %5 : tensor<i1>
//       %7 = stablehlo.compare EQ, %arg1, %arg2, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
//       %8 = stablehlo.compare LT, %arg3, %arg4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
//       %9 = stablehlo.and %7, %8 : tensor<i1>
//       %10 = stablehlo.or %6, %9 : tensor<i1>
//       %11 = stablehlo.select %6, %arg1, %arg2 : tensor<i1>, tensor<f32>
//       %12 = stablehlo.select %10, %arg3, %arg4 : tensor<i1>, tensor<i32>
//       stablehlo.return %11, %12 : tensor<f32>, tensor<i32>
//     }
//     return %3#1 : tensor<2xi32>
//   }
// }
