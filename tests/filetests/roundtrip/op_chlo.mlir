// CHLO ops JAX emits.
module {
  func.func @main(%x: tensor<3xf32>, %m: tensor<2x5xf32>, %c: tensor<3xcomplex<f32>>) -> tensor<3xf32> {
    %0 = chlo.erf %x : tensor<3xf32> -> tensor<3xf32>
    %1 = chlo.erfc %0 : tensor<3xf32> -> tensor<3xf32>
    %2 = chlo.erf_inv %1 : tensor<3xf32> -> tensor<3xf32>
    %3 = chlo.lgamma %2 : tensor<3xf32> -> tensor<3xf32>
    %4 = chlo.digamma %3 : tensor<3xf32> -> tensor<3xf32>
    %5 = chlo.bessel_i1e %4 : tensor<3xf32> -> tensor<3xf32>
    %6 = chlo.acosh %5 : tensor<3xf32> -> tensor<3xf32>
    %7 = chlo.asin %6 : tensor<3xf32> -> tensor<3xf32>
    %8 = chlo.atanh %7 : tensor<3xf32> -> tensor<3xf32>
    %9 = chlo.cosh %8 : tensor<3xf32> -> tensor<3xf32>
    %10 = chlo.sinh %9 : tensor<3xf32> -> tensor<3xf32>
    %11 = chlo.is_inf %10 : tensor<3xf32> -> tensor<3xi1>
    %12 = chlo.next_after %10, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
    %13 = chlo.polygamma %12, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
    %14 = chlo.zeta %13, %x : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
    %15 = chlo.conj %c : tensor<3xcomplex<f32>> -> tensor<3xcomplex<f32>>
    %values, %indices = chlo.top_k(%m, k = 2) : tensor<2x5xf32> -> (tensor<2x2xf32>, tensor<2x2xi32>)
    return %14 : tensor<3xf32>
  }
}
