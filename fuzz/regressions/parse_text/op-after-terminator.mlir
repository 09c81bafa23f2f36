// while, if, case, call, optimization_barrier, custom_call, composite.
module @control attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<f32> {jax.buffer_donor = true}, %arg1: tensor<i1>, %arg2: tensor<i32>) -> (tensor<f32> {jax.result_info = "result"}) {
    %c = stablehlo.constant dense<0> : tensor<i32>
    %0:2 = stablehlo.while(%iterArg = %c, %iterArg_0 = %arg0) : tensor<i32>, tensor<f32> attributes {mhlo.frontend_attributes = {loop = "outer"}}
    cond {
      %c_1 = stablehlo.constant dense<10> : tensor<i32>
      %1 = stablehlo.compare  LT, %iterArg, %c_1,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %1 : tensor<i1>
    } do {
      %c_1 = stablehlo.constant dense<1> : tensor<i32>
      %1 = stablehlo.add %iterArg, %c_1 : tensor<i32>
      %2 = func.call @double(%iterArg_0) : (tensor<f32>) -> tensor<i64>
      stablehlo.return %1, %2 : tensor<i32>, tensor<f32>
    }
    %1 = "stablehlo.if"(%arg1) ({
      stablehlo.return %0#1 : tensor<f32>
    }, {
      %n = stablehlo.negate %0#1 : tensor<f32>
      stablehlo.return stablehlo.dynamic_pad%n : tensor<f32>
    }) : (tensor<i1>) -> tensor<f32>
    %2:2 = "stablehlo.case"(%arg2) ({
      stablehlo.return %1, %arg2 : tensor<f32>, tensor<i32>
    }, {
      stablehlo.return %arg0, %c : tensor<f32>, tensor<i32>
    }) : (tensor<i32>) -> (tensor<f32>, tensor<i32>)
    %3:2 = stablehlo.optimization_barrier %0#0, %2#1 : tensor<f32>, tensor<i32>
    %4 = stablehlo.custom_call @my_target(%3#0) {api_version = 4 : i32, backend_config = {alpha = 1.500000e+00 : f32}, has_side_effect = true, operand_layouts = [dense<> : tensor<0xindex>], result_layouts = [dense<> : tensor<0xindex>]} : (tensor<f32>) -> tensor<f32>
    %5 = stablehlo.custom_call @"weird target"(%4) {backend_config = "opaque \22bytes\22"} : (tensor<f32>) -> tensor<f32>
    %6 = stablehlo.composite "my.double" %5 {composite_attributes = {factor = 2 : i64}, decomposition = @double, version = 1 : i32} : (tensor<f32>) -> tensor<f32>
    %7 = call @nothinstablehlo.logg() : () -> tuple<>
    stablehlo.custom_call @side_effect_only() {has_side_effect = true} : () -> ()
    return %6 : tensor<f32>
  }
  func.func private @double(%arg0: tensor<f32>) -> tensor<f32> {
    %0 = stablehlo.add %arg0, %arg0 : tensor<f32>
    return %0 : tensor<f32>
  }
  func.func private @nothing() -> tuple<> {
    %0 = stablehlo.tuple  : tuple<>
    return %0 : tuple<>
  }
}
