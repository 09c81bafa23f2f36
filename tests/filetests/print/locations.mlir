// test: print
// options: locations
// Location aliases resolve; locations print inline.
#loc1 = loc("x")
module @m attributes {mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<f32> loc("x")) -> tensor<f32> {
    %0 = stablehlo.sine %arg0 : tensor<f32> loc(#loc3)
    %1 = stablehlo.cosine %0 : tensor<f32> loc(fused["a", "b":1:2])
    return %1 : tensor<f32> loc(#loc2)
  } loc(#loc2)
} loc(#loc)
#loc = loc(unknown)
#loc2 = loc("file.py":10:5 to :20)
#loc3 = loc("jit(f)/sin"(callsite("f"(#loc2) at #loc2)))

// ----- expected -----
// module @m attributes {mhlo.num_replicas = 1 : i32} {
//   func.func public @main(%arg0: tensor<f32>) -> tensor<f32> {
//     %0 = stablehlo.sine %arg0 : tensor<f32> loc("jit(f)/sin"(callsite("f"("file.py":10:5) at "file.py":10:5)))
//     %1 = stablehlo.cosine %0 : tensor<f32> loc(fused["a", "b":1:2])
//     return %1 : tensor<f32> loc("file.py":10:5)
//   } loc("file.py":10:5)
// } loc(unknown)
