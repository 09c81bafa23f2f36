// reduce (compact and region forms), reduce_window, select_and_scatter, sort, map.
module {
  func.func @main(%x: tensor<4x6xf32>, %i: tensor<4x6xi32>, %init: tensor<f32>, %iinit: tensor<i32>) -> (tensor<4xf32>, tensor<6xi32>) {
    %0 = stablehlo.reduce(%x init: %init) applies stablehlo.add across dimensions = [1] : (tensor<4x6xf32>, tensor<f32>) -> tensor<4xf32>
    %1 = stablehlo.reduce(%i init: %iinit) applies stablehlo.maximum across dimensions = [0] : (tensor<4x6xi32>, tensor<i32>) -> tensor<6xi32>
    %2:2 = stablehlo.reduce(%x init: %init), (%i init: %iinit) across dimensions = [0, 1] : (tensor<4x6xf32>, tensor<4x6xi32>, tensor<f32>, tensor<i32>) -> (tensor<f32>, tensor<i32>)
     reducer(%a: tensor<f32>, %b: tensor<f32>) (%c: tensor<i32>, %d: tensor<i32>)  {
      %s = stablehlo.add %a, %b : tensor<f32>
      %t = stablehlo.multiply %c, %d : tensor<i32>
      stablehlo.return %s, %t : tensor<f32>, tensor<i32>
    }
    %3 = stablehlo.reduce(%x init: %init) across dimensions = [0] : (tensor<4x6xf32>, tensor<f32>) -> tensor<6xf32>
     reducer(%a: tensor<f32>, %b: tensor<f32>)  {
      %s = stablehlo.subtract %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }
    %4 = "stablehlo.reduce_window"(%x, %init) <{base_dilations = array<i64: 1, 1>, padding = dense<[[0, 0], [1, 1]]> : tensor<2x2xi64>, window_dilations = array<i64: 1, 2>, window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
    }) : (tensor<4x6xf32>, tensor<f32>) -> tensor<3x6xf32>
    %5 = "stablehlo.select_and_scatter"(%x, %4, %init) <{padding = dense<[[0, 0], [1, 0]]> : tensor<2x2xi64>, window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 1, 1>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.compare  GE, %a, %b,  FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    }, {
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<4x6xf32>, tensor<3x6xf32>, tensor<f32>) -> tensor<4x6xf32>
    %6:2 = "stablehlo.sort"(%x, %i) <{dimension = 1 : i64, is_stable = true}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<i32>, %d: tensor<i32>):
      %lt = stablehlo.compare  LT, %a, %b,  TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    }) : (tensor<4x6xf32>, tensor<4x6xi32>) -> (tensor<4x6xf32>, tensor<4x6xi32>)
    %7 = "stablehlo.map"(%x, %x) <{dimensions = array<i64: 0, 1>}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<4x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
    return %0, %1 : tensor<4xf32>, tensor<6xi32>
  }
}
