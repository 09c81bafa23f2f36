// Every elementwise op family in its pretty form.
module @elementwise {
  func.func public @unary(%x: tensor<4xf32>, %i: tensor<4xi32>, %p: tensor<4xi1>, %c: tensor<4xcomplex<f32>>) -> tensor<4xf32> {
    %0 = stablehlo.abs %x : tensor<4xf32>
    %1 = stablehlo.cbrt %0 : tensor<4xf32>
    %2 = stablehlo.ceil %1 : tensor<4xf32>
    %3 = stablehlo.cosine %2 : tensor<4xf32>
    %4 = stablehlo.exponential %3 : tensor<4xf32>
    %5 = stablehlo.exponential_minus_one %4 : tensor<4xf32>
    %6 = stablehlo.floor %5 : tensor<4xf32>
    %7 = stablehlo.log %6 : tensor<4xf32>
    %8 = stablehlo.log_plus_one %7 : tensor<4xf32>
    %9 = stablehlo.logistic %8 : tensor<4xf32>
    %10 = stablehlo.negate %9 : tensor<4xf32>
    %11 = stablehlo.round_nearest_afz %10 : tensor<4xf32>
    %12 = stablehlo.round_nearest_even %11 : tensor<4xf32>
    %13 = stablehlo.rsqrt %12 : tensor<4xf32>
    %14 = stablehlo.sign %13 : tensor<4xf32>
    %15 = stablehlo.sine %14 : tensor<4xf32>
    %16 = stablehlo.sqrt %15 : tensor<4xf32>
    %17 = stablehlo.tan %16 : tensor<4xf32>
    %18 = stablehlo.tanh %17 : tensor<4xf32>
    %19 = stablehlo.not %i : tensor<4xi32>
    %20 = stablehlo.popcnt %19 : tensor<4xi32>
    %21 = stablehlo.count_leading_zeros %20 : tensor<4xi32>
    %22 = stablehlo.not %p : tensor<4xi1>
    %23 = stablehlo.is_finite %18 : (tensor<4xf32>) -> tensor<4xi1>
    %24 = stablehlo.real %c : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
    %25 = stablehlo.imag %c : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
    %26 = stablehlo.convert %21 : (tensor<4xi32>) -> tensor<4xf32>
    %27 = stablehlo.bitcast_convert %26 : (tensor<4xf32>) -> tensor<4xi32>
    %28 = stablehlo.reduce_precision %18, format = e5m10 : tensor<4xf32>
    %29 = stablehlo.exponential %28 {result_accuracy = #stablehlo.result_accuracy<ulps = 1, mode = #stablehlo.result_accuracy_mode<TOLERANCE>>} : tensor<4xf32>
    return %29 : tensor<4xf32>
  }
  func.func public @binary(%a: tensor<2x2xf32>, %b: tensor<2x2xf32>, %i: tensor<2x2xui32>, %j: tensor<2x2xui32>) -> (tensor<2x2xf32>, tensor<2x2xui32>, tensor<2x2xcomplex<f32>>) {
    %0 = stablehlo.add %a, %b : tensor<2x2xf32>
    %1 = stablehlo.subtract %0, %b : tensor<2x2xf32>
    %2 = stablehlo.multiply %1, %b : tensor<2x2xf32>
    %3 = stablehlo.divide %2, %b : tensor<2x2xf32>
    %4 = stablehlo.maximum %3, %b : tensor<2x2xf32>
    %5 = stablehlo.minimum %4, %b : tensor<2x2xf32>
    %6 = stablehlo.power %5, %b : tensor<2x2xf32>
    %7 = stablehlo.remainder %6, %b : tensor<2x2xf32>
    %8 = stablehlo.atan2 %7, %b : tensor<2x2xf32>
    %9 = stablehlo.and %i, %j : tensor<2x2xui32>
    %10 = stablehlo.or %9, %j : tensor<2x2xui32>
    %11 = stablehlo.xor %10, %j : tensor<2x2xui32>
    %12 = stablehlo.shift_left %11, %j : tensor<2x2xui32>
    %13 = stablehlo.shift_right_arithmetic %12, %j : tensor<2x2xui32>
    %14 = stablehlo.shift_right_logical %13, %j : tensor<2x2xui32>
    %15 = stablehlo.complex %8, %b : tensor<2x2xcomplex<f32>>
    %16 = stablehlo.compare  EQ, %8, %b,  FLOAT : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xi1>
    %17 = stablehlo.compare  NE, %14, %j : (tensor<2x2xui32>, tensor<2x2xui32>) -> tensor<2x2xi1>
    %18 = stablehlo.compare  GE, %i, %j,  UNSIGNED : (tensor<2x2xui32>, tensor<2x2xui32>) -> tensor<2x2xi1>
    %19 = stablehlo.and %16, %17 : tensor<2x2xi1>
    %20 = stablehlo.or %19, %18 : tensor<2x2xi1>
    %21 = stablehlo.select %20, %8, %b : tensor<2x2xi1>, tensor<2x2xf32>
    %cst = stablehlo.constant dense<0.0> : tensor<f32>
    %cst_0 = stablehlo.constant dense<1.0> : tensor<f32>
    %22 = stablehlo.clamp %cst, %21, %cst_0 : (tensor<f32>, tensor<2x2xf32>, tensor<f32>) -> tensor<2x2xf32>
    %23 = stablehlo.clamp %a, %22, %b : tensor<2x2xf32>
    %p = stablehlo.constant dense<true> : tensor<i1>
    %24 = stablehlo.select %p, %23, %a : (tensor<i1>, tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
    return %24, %14, %15 : tensor<2x2xf32>, tensor<2x2xui32>, tensor<2x2xcomplex<f32>>
  }
}
