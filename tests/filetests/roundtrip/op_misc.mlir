// Random numbers, FFT, linear algebra, batch norm, tokens and collectives.
module {
  func.func @main(%state: tensor<2xui64>, %x: tensor<4x4xf32>, %c: tensor<8xcomplex<f32>>, %r: tensor<8xf32>, %lo: tensor<f32>, %shape: tensor<2xi64>, %bn: tensor<2x3x4xf32>, %scale: tensor<3xf32>) -> tensor<4x4xf32> {
    %0:2 = stablehlo.rng_bit_generator %state, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4x4xui32>)
    %1:2 = stablehlo.rng_bit_generator %state, algorithm = PHILOX : (tensor<2xui64>) -> (tensor<2xui64>, tensor<8xui64>)
    %2 = stablehlo.rng %lo, %lo, %shape, distribution = UNIFORM : (tensor<f32>, tensor<f32>, tensor<2xi64>) -> tensor<4x4xf32>
    %3 = stablehlo.rng %lo, %lo, %shape, distribution = NORMAL : (tensor<f32>, tensor<f32>, tensor<2xi64>) -> tensor<4x4xf32>
    %4 = stablehlo.fft %c, type = FFT, length = [8] : (tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>>
    %5 = stablehlo.fft %r, type = RFFT, length = [8] : (tensor<8xf32>) -> tensor<5xcomplex<f32>>
    %6 = stablehlo.fft %5, type = IRFFT, length = [8] : (tensor<5xcomplex<f32>>) -> tensor<8xf32>
    %7 = stablehlo.cholesky %x, lower = true : tensor<4x4xf32>
    %8 = stablehlo.cholesky %x : tensor<4x4xf32>
    %9 = "stablehlo.triangular_solve"(%x, %x) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %10 = "stablehlo.batch_norm_inference"(%bn, %scale, %scale, %scale, %scale) <{epsilon = 1.000000e-03 : f32, feature_index = 1 : i64}> : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) -> tensor<2x3x4xf32>
    %11:3 = "stablehlo.batch_norm_training"(%bn, %scale, %scale) <{epsilon = 1.000000e-03 : f32, feature_index = 1 : i64}> : (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>) -> (tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32>)
    %12 = stablehlo.create_token : !stablehlo.token
    %13 = stablehlo.after_all %12, %12 : !stablehlo.token
    %14 = stablehlo.replica_id : tensor<ui32>
    %15 = stablehlo.partition_id : tensor<ui32>
    %16 = "stablehlo.all_reduce"(%x) <{channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>, replica_groups = dense<[[0]]> : tensor<1x1xi64>, use_global_device_ids}> ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %s = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %s : tensor<f32>
    }) : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %17 = "stablehlo.all_gather"(%x) <{all_gather_dim = 0 : i64, replica_groups = dense<[[0]]> : tensor<1x1xi64>}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %18 = "stablehlo.collective_permute"(%x) <{source_target_pairs = dense<[[0, 0]]> : tensor<1x2xi64>}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %19 = "stablehlo.all_to_all"(%x) <{concat_dimension = 1 : i64, replica_groups = dense<[[0]]> : tensor<1x1xi64>, split_count = 1 : i64, split_dimension = 0 : i64}> : (tensor<4x4xf32>) -> tensor<4x4xf32>
    %20:2 = "stablehlo.infeed"(%12) <{infeed_config = "", layout = [[1, 0]]}> : (!stablehlo.token) -> (tensor<4x4xf32>, !stablehlo.token)
    %21 = "stablehlo.outfeed"(%x, %13) <{outfeed_config = ""}> : (tensor<4x4xf32>, !stablehlo.token) -> !stablehlo.token
    return %9 : tensor<4x4xf32>
  }
}
