// dot_general, dot and convolution in their pretty forms.
module {
  func.func @main(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>, %m: tensor<3x4xf32>, %v: tensor<4xf32>, %img: tensor<1x8x8x3xf32>, %k: tensor<3x3x3x16xf32>, %img2: tensor<2x4x6x6xbf16>, %k2: tensor<8x2x3x3xbf16>) -> tensor<2x3x5xf32> {
    %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1], precision = [HIGHEST, HIGH] : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
    %1 = stablehlo.dot_general %m, %v, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
    %2 = stablehlo.dot %m, %v : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
    %3 = stablehlo.dot %m, %v, precision = [DEFAULT, DEFAULT] : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
    %4 = stablehlo.dot_general %m, %v, contracting_dims = [1] x [0], algorithm = <lhs_precision_type = f32, rhs_precision_type = f32, accumulation_type = f32, lhs_component_count = 1, rhs_component_count = 1, num_primitive_operations = 1, allow_imprecise_accumulation = false> : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3xf32>
    %5 = stablehlo.convolution(%img, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 2], pad = [[1, 1], [0, 1]], lhs_dilate = [1, 1], rhs_dilate = [2, 1], reverse = [false, true]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x8x8x3xf32>, tensor<3x3x3x16xf32>) -> tensor<1x3x4x16xf32>
    %6 = stablehlo.convolution(%img2, %k2) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<2x4x6x6xbf16>, tensor<8x2x3x3xbf16>) -> tensor<2x8x4x4xbf16>
    return %0 : tensor<2x3x5xf32>
  }
}
