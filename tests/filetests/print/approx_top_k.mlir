// test: print
// options: lower
// `jax.lax.approx_max_k(x, 3)` and `approx_min_k(x, 2, reduction_dimension=0,
// aggregate_to_topk=False)` as JAX lowers them: ApproxTopK becomes a stable sort along the
// reduction dimension by the comparator, then a slice to the result shape.
func.func @top_k_gt_f32_comparator(%arg0: tensor<f32>, %arg1: tensor<f32>, %arg2: tensor<i32>, %arg3: tensor<i32>) -> tensor<i1> {
  %0 = stablehlo.compare GT, %arg0, %arg1 : (tensor<f32>, tensor<f32>) -> tensor<i1>
  stablehlo.return %0 : tensor<i1>
}
func.func @top_k_lt_f32_comparator(%arg0: tensor<f32>, %arg1: tensor<f32>, %arg2: tensor<i32>, %arg3: tensor<i32>) -> tensor<i1> {
  %0 = stablehlo.compare LT, %arg0, %arg1 : (tensor<f32>, tensor<f32>) -> tensor<i1>
  stablehlo.return %0 : tensor<i1>
}
func.func public @main(%arg0: tensor<3x10xf32>) -> (tensor<3x3xf32>, tensor<3x3xi32>, tensor<3x10xf32>, tensor<3x10xi32>) {
  %0 = stablehlo.iota dim = 1 : tensor<3x10xi32>
  %c = stablehlo.constant dense<-1> : tensor<i32>
  %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %1:2 = stablehlo.custom_call @ApproxTopK(%arg0, %0, %cst, %c) {backend_config = "", called_computations = [@top_k_gt_f32_comparator], mhlo.backend_config = {aggregate_to_topk = true, is_fallback = true, recall_target = 0.949999988 : f32, reduction_dim = 1 : i64, reduction_input_size_override = -1 : i64, top_k = 3 : i64}} : (tensor<3x10xf32>, tensor<3x10xi32>, tensor<f32>, tensor<i32>) -> (tensor<3x3xf32>, tensor<3x3xi32>)
  %2 = stablehlo.iota dim = 0 : tensor<3x10xi32>
  %cst_0 = stablehlo.constant dense<0x7F800000> : tensor<f32>
  %3:2 = stablehlo.custom_call @ApproxTopK(%arg0, %2, %cst_0, %c) {backend_config = "", called_computations = [@top_k_lt_f32_comparator], mhlo.backend_config = {aggregate_to_topk = false, is_fallback = true, recall_target = 0.949999988 : f32, reduction_dim = 0 : i64, reduction_input_size_override = -1 : i64, top_k = 2 : i64}} : (tensor<3x10xf32>, tensor<3x10xi32>, tensor<f32>, tensor<i32>) -> (tensor<3x10xf32>, tensor<3x10xi32>)
  return %1#0, %1#1, %3#0, %3#1 : tensor<3x3xf32>, tensor<3x3xi32>, tensor<3x10xf32>, tensor<3x10xi32>
}

// ----- expected -----
// module {
//   func.func public @top_k_gt_f32_comparator(%arg0: tensor<f32>, %arg1: tensor<f32>, %arg2: tensor<i32>, %arg3: tensor<i32>) -> tensor<i1> {
//     %0 = stablehlo.compare GT, %arg0, %arg1 : (tensor<f32>, tensor<f32>) -> tensor<i1>
//     return %0 : tensor<i1>
//   }
//   func.func public @top_k_lt_f32_comparator(%arg0: tensor<f32>, %arg1: tensor<f32>, %arg2: tensor<i32>, %arg3: tensor<i32>) -> tensor<i1> {
//     %0 = stablehlo.compare LT, %arg0, %arg1 : (tensor<f32>, tensor<f32>) -> tensor<i1>
//     return %0 : tensor<i1>
//   }
//   func.func public @main(%arg0: tensor<3x10xf32>) -> (tensor<3x3xf32>, tensor<3x3xi32>, tensor<3x10xf32>, tensor<3x10xi32>) {
//     %0 = stablehlo.iota dim = 1 : tensor<3x10xi32>
//     %1 = stablehlo.constant dense<-1> : tensor<i32>
//     %2 = stablehlo.constant dense<0xFF800000> : tensor<f32>
//     %3:2 = "stablehlo.sort"(%arg0, %0) <{dimension = 1 : i64, is_stable = true}> ({
//     ^bb0(%arg1: tensor<f32>, %arg2: tensor<f32>, %arg3: tensor<i32>, %arg4: tensor<i32>):
//       %4 = stablehlo.compare GT, %arg1, %arg2 : (tensor<f32>, tensor<f32>) -> tensor<i1>
//       stablehlo.return %4 : tensor<i1>
//     }) : (tensor<3x10xf32>, tensor<3x10xi32>) -> (tensor<3x10xf32>, tensor<3x10xi32>)
//     %5 = stablehlo.slice %3#0 [0:3, 0:3] : (tensor<3x10xf32>) -> tensor<3x3xf32>
//     %6 = stablehlo.slice %3#1 [0:3, 0:3] : (tensor<3x10xi32>) -> tensor<3x3xi32>
//     %7 = stablehlo.iota dim = 0 : tensor<3x10xi32>
//     %8 = stablehlo.constant dense<0x7F800000> : tensor<f32>
//     %9:2 = "stablehlo.sort"(%arg0, %7) <{dimension = 0 : i64, is_stable = true}> ({
//     ^bb0(%arg5: tensor<f32>, %arg6: tensor<f32>, %arg7: tensor<i32>, %arg8: tensor<i32>):
//       %10 = stablehlo.compare LT, %arg5, %arg6 : (tensor<f32>, tensor<f32>) -> tensor<i1>
//       stablehlo.return %10 : tensor<i1>
//     }) : (tensor<3x10xf32>, tensor<3x10xi32>) -> (tensor<3x10xf32>, tensor<3x10xi32>)
//     %11 = stablehlo.slice %9#0 [0:3, 0:10] : (tensor<3x10xf32>) -> tensor<3x10xf32>
//     %12 = stablehlo.slice %9#1 [0:3, 0:10] : (tensor<3x10xi32>) -> tensor<3x10xi32>
//     return %5, %6, %11, %12 : tensor<3x3xf32>, tensor<3x3xi32>, tensor<3x10xf32>, tensor<3x10xi32>
//   }
// }
