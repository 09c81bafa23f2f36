// test: print
// Dense literals: splats, nested lists, hex, special floats, small types.
func.func @main() -> tensor<3xf32> {
  %0 = stablehlo.constant dense<[1.0, 1.0, 1.0]> : tensor<3xf32>
  %1 = stablehlo.constant dense<[0.1, 1.41421354, -0.99999994, 1.0e-30, 3.0e+38]> : tensor<5xf32>
  %2 = stablehlo.constant dense<"0x0000C07F0000807F000080FF00000080"> : tensor<4xf32>
  %3 = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %4 = stablehlo.constant dense<[0.1, 0.2]> : tensor<2xf64>
  %5 = stablehlo.constant dense<[0.1, 1.0e+4]> : tensor<2xf16>
  %6 = stablehlo.constant dense<[0.1, 3.0]> : tensor<2xbf16>
  %7 = stablehlo.constant dense<[true, false]> : tensor<2xi1>
  %8 = stablehlo.constant dense<[4294967295, 0]> : tensor<2xui32>
  %9 = stablehlo.constant dense<4294967295> : tensor<i32>
  %10 = stablehlo.constant dense<(0.5, -1.5)> : tensor<2xcomplex<f64>>
  %11 = stablehlo.constant dense<[1.0, 0.5]> : tensor<2xf8E4M3FN>
  return %0 : tensor<3xf32>
}

// ----- expected -----
// module {
//   func.func public @main() -> tensor<3xf32> {
//     %0 = stablehlo.constant dense<1.000000e+00> : tensor<3xf32>
//     %1 = stablehlo.constant dense<[1.000000e-01, 1.4142135e+00, -9.9999994e-01, 1.000000e-30, 3.000000e+38]> : tensor<5xf32>
//     %2 = stablehlo.constant dense<[0x7FC00000, 0x7F800000, 0xFF800000, -0.000000e+00]> : tensor<4xf32>
//     %3 = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
//     %4 = stablehlo.constant dense<[1.000000e-01, 2.000000e-01]> : tensor<2xf64>
//     %5 = stablehlo.constant dense<[9.997559e-02, 1.000000e+04]> : tensor<2xf16>
//     %6 = stablehlo.constant dense<[1.000977e-01, 3.000000e+00]> : tensor<2xbf16>
//     %7 = stablehlo.constant dense<[true, false]> : tensor<2xi1>
//     %8 = stablehlo.constant dense<[4294967295, 0]> : tensor<2xui32>
//     %9 = stablehlo.constant dense<-1> : tensor<i32>
//     %10 = stablehlo.constant dense<(5.000000e-01,-1.500000e+00)> : tensor<2xcomplex<f64>>
//     %11 = stablehlo.constant dense<[0x38, 0x30]> : tensor<2xf8E4M3FN>
//     return %0 : tensor<3xf32>
//   }
// }
