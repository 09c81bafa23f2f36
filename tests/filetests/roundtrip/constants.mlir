// Every dense literal form.
module {
  func.func @main() -> tensor<f32> {
    %0 = stablehlo.constant dense<1.500000e+00> : tensor<f32>
    %1 = stablehlo.constant dense<[[1.0, -2.5], [3.25, 4.0e+10]]> : tensor<2x2xf32>
    %2 = stablehlo.constant dense<[0x7FC00000, 0x7F800000, 0xFF800000, -0.0]> : tensor<4xf32>
    %3 = stablehlo.constant dense<"0x0000803F00000040"> : tensor<2xf32>
    %4 = stablehlo.constant dense<"0x0000C03F"> : tensor<3xf32>
    %5 = stablehlo.constant dense<[true, false, true]> : tensor<3xi1>
    %6 = stablehlo.constant dense<false> : tensor<2x2xi1>
    %7 = stablehlo.constant dense<[(1.0, 2.0), (-3.0, 0.5)]> : tensor<2xcomplex<f32>>
    %8 = stablehlo.constant dense<(1.0, -1.0)> : tensor<complex<f64>>
    %9 = stablehlo.constant dense<[1.0, 65504.0, 0x7E00, 5.96e-08]> : tensor<4xf16>
    %10 = stablehlo.constant dense<[1.0, -3.5, 0x7FC0]> : tensor<3xbf16>
    %11 = stablehlo.constant dense<[1.0, 448.0, -0.5]> : tensor<3xf8E4M3FN>
    %12 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf8E5M2>
    %13 = stablehlo.constant dense<[-8, 7, -1]> : tensor<3xi4>
    %14 = stablehlo.constant dense<[0, 15]> : tensor<2xui4>
    %15 = stablehlo.constant dense<[-128, 127]> : tensor<2xi8>
    %16 = stablehlo.constant dense<[0, 255]> : tensor<2xui8>
    %17 = stablehlo.constant dense<[-9223372036854775808, 9223372036854775807]> : tensor<2xi64>
    %18 = stablehlo.constant dense<18446744073709551615> : tensor<ui64>
    %19 = stablehlo.constant dense<> : tensor<0xf32>
    %20 = stablehlo.constant dense<> : tensor<2x0xi32>
    %21 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf64>
    %22 = stablehlo.constant dense<3.1415926535897931> : tensor<f64>
    %23 = stablehlo.constant dense<[[[1, 2]], [[3, 4]]]> : tensor<2x1x2xi16>
    %24 = stablehlo.constant dense<1.0> : tensor<2x3xf32>
    %25 = stablehlo.constant dense<[1, 1, 1]> : tensor<3xi32>
    %26 = stablehlo.constant dense<1.0e-45> : tensor<f32>
    %27 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf8E4M3FNUZ>
    %28 = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf8E5M2FNUZ>
    %29 = stablehlo.constant dense<[0.5, 6.0]> : tensor<2xf4E2M1FN>
    return %0 : tensor<f32>
  }
}
