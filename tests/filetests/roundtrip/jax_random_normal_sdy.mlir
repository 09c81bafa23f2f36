module @jit__normal attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  sdy.mesh @empty_mesh = <[]> {stablehlo.mesh = {axes = []}}
  func.func public @main(%arg0: tensor<2xui32>) -> (tensor<3xf32> {jax.result_info = "result"}) {
    %0 = "sdy.sharding_constraint"(%arg0) <{sharding = #sdy.sharding<@empty_mesh, [{}]>}> : (tensor<2xui32>) -> tensor<2xui32>
    %1 = call @_normal_real(%0) : (tensor<2xui32>) -> tensor<3xf32>
    return %1 : tensor<3xf32>
  }
  func.func private @_normal_real(%arg0: tensor<2xui32>) -> tensor<3xf32> {
    %0 = stablehlo.constant dense<-9.9999994e-01> : tensor<f32>
    %1 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %2 = call @_uniform(%arg0, %0, %1) : (tensor<2xui32>, tensor<f32>, tensor<f32>) -> tensor<3xf32>
    %3 = chlo.erf_inv %2 : tensor<3xf32> -> tensor<3xf32>
    %4 = stablehlo.constant dense<1.4142135e+00> : tensor<f32>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %6 = stablehlo.multiply %5, %3 : tensor<3xf32>
    return %6 : tensor<3xf32>
  }
  func.func private @_uniform(%arg0: tensor<2xui32>, %arg1: tensor<f32>, %arg2: tensor<f32>) -> tensor<3xf32> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %1 = stablehlo.broadcast_in_dim %arg2, dims = [] : (tensor<f32>) -> tensor<1xf32>
    %2 = stablehlo.slice %arg0 [0:1] : (tensor<2xui32>) -> tensor<1xui32>
    %3 = stablehlo.reshape %2 : (tensor<1xui32>) -> tensor<ui32>
    %4 = stablehlo.slice %arg0 [1:2] : (tensor<2xui32>) -> tensor<1xui32>
    %5 = stablehlo.reshape %4 : (tensor<1xui32>) -> tensor<ui32>
    %6 = stablehlo.iota dim = 0 : tensor<3xui64>
    %7 = stablehlo.constant dense<1> : tensor<ui64>
    %8 = stablehlo.broadcast_in_dim %7, dims = [] : (tensor<ui64>) -> tensor<3xui64>
    %9 = stablehlo.multiply %8, %6 : tensor<3xui64>
    %10 = stablehlo.constant dense<32> : tensor<ui64>
    %11 = stablehlo.broadcast_in_dim %10, dims = [] : (tensor<ui64>) -> tensor<3xui64>
    %12 = stablehlo.shift_right_logical %9, %11 : tensor<3xui64>
    %13 = stablehlo.convert %9 : (tensor<3xui64>) -> tensor<3xui32>
    %14 = stablehlo.convert %12 : (tensor<3xui64>) -> tensor<3xui32>
    %15:2 = call @threefry2x32(%3, %5, %14, %13) : (tensor<ui32>, tensor<ui32>, tensor<3xui32>, tensor<3xui32>) -> (tensor<3xui32>, tensor<3xui32>)
    %16 = stablehlo.xor %15#0, %15#1 : tensor<3xui32>
    %17 = stablehlo.constant dense<9> : tensor<ui32>
    %18 = stablehlo.broadcast_in_dim %17, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %19 = stablehlo.shift_right_logical %16, %18 : tensor<3xui32>
    %20 = stablehlo.constant dense<1065353216> : tensor<ui32>
    %21 = stablehlo.broadcast_in_dim %20, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %22 = stablehlo.or %19, %21 : tensor<3xui32>
    %23 = stablehlo.bitcast_convert %22 : (tensor<3xui32>) -> tensor<3xf32>
    %24 = stablehlo.constant dense<1.000000e+00> : tensor<f32>
    %25 = stablehlo.broadcast_in_dim %24, dims = [] : (tensor<f32>) -> tensor<3xf32>
    %26 = stablehlo.subtract %23, %25 : tensor<3xf32>
    %27 = stablehlo.subtract %1, %0 : tensor<1xf32>
    %28 = stablehlo.broadcast_in_dim %27, dims = [0] : (tensor<1xf32>) -> tensor<3xf32>
    %29 = stablehlo.multiply %26, %28 : tensor<3xf32>
    %30 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<1xf32>) -> tensor<3xf32>
    %31 = stablehlo.add %29, %30 : tensor<3xf32>
    %32 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<1xf32>) -> tensor<3xf32>
    %33 = stablehlo.maximum %32, %31 : tensor<3xf32>
    return %33 : tensor<3xf32>
  }
  func.func private @threefry2x32(%arg0: tensor<ui32>, %arg1: tensor<ui32>, %arg2: tensor<3xui32>, %arg3: tensor<3xui32>) -> (tensor<3xui32>, tensor<3xui32>) {
    %0 = stablehlo.xor %arg0, %arg1 : tensor<ui32>
    %1 = stablehlo.constant dense<466688986> : tensor<ui32>
    %2 = stablehlo.xor %0, %1 : tensor<ui32>
    %3 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %4 = stablehlo.add %arg2, %3 : tensor<3xui32>
    %5 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %6 = stablehlo.add %arg3, %5 : tensor<3xui32>
    %7 = stablehlo.add %4, %6 : tensor<3xui32>
    %8 = stablehlo.constant dense<13> : tensor<ui32>
    %9 = stablehlo.broadcast_in_dim %8, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %10 = stablehlo.shift_left %6, %9 : tensor<3xui32>
    %11 = stablehlo.constant dense<19> : tensor<ui32>
    %12 = stablehlo.broadcast_in_dim %11, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %13 = stablehlo.shift_right_logical %6, %12 : tensor<3xui32>
    %14 = stablehlo.or %10, %13 : tensor<3xui32>
    %15 = stablehlo.xor %7, %14 : tensor<3xui32>
    %16 = stablehlo.add %7, %15 : tensor<3xui32>
    %17 = stablehlo.constant dense<15> : tensor<ui32>
    %18 = stablehlo.broadcast_in_dim %17, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %19 = stablehlo.shift_left %15, %18 : tensor<3xui32>
    %20 = stablehlo.constant dense<17> : tensor<ui32>
    %21 = stablehlo.broadcast_in_dim %20, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %22 = stablehlo.shift_right_logical %15, %21 : tensor<3xui32>
    %23 = stablehlo.or %19, %22 : tensor<3xui32>
    %24 = stablehlo.xor %16, %23 : tensor<3xui32>
    %25 = stablehlo.add %16, %24 : tensor<3xui32>
    %26 = stablehlo.constant dense<26> : tensor<ui32>
    %27 = stablehlo.broadcast_in_dim %26, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %28 = stablehlo.shift_left %24, %27 : tensor<3xui32>
    %29 = stablehlo.constant dense<6> : tensor<ui32>
    %30 = stablehlo.broadcast_in_dim %29, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %31 = stablehlo.shift_right_logical %24, %30 : tensor<3xui32>
    %32 = stablehlo.or %28, %31 : tensor<3xui32>
    %33 = stablehlo.xor %25, %32 : tensor<3xui32>
    %34 = stablehlo.add %25, %33 : tensor<3xui32>
    %35 = stablehlo.constant dense<6> : tensor<ui32>
    %36 = stablehlo.broadcast_in_dim %35, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %37 = stablehlo.shift_left %33, %36 : tensor<3xui32>
    %38 = stablehlo.constant dense<26> : tensor<ui32>
    %39 = stablehlo.broadcast_in_dim %38, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %40 = stablehlo.shift_right_logical %33, %39 : tensor<3xui32>
    %41 = stablehlo.or %37, %40 : tensor<3xui32>
    %42 = stablehlo.xor %34, %41 : tensor<3xui32>
    %43 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %44 = stablehlo.add %34, %43 : tensor<3xui32>
    %45 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %46 = stablehlo.add %42, %45 : tensor<3xui32>
    %47 = stablehlo.constant dense<1> : tensor<ui32>
    %48 = stablehlo.broadcast_in_dim %47, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %49 = stablehlo.add %46, %48 : tensor<3xui32>
    %50 = stablehlo.add %44, %49 : tensor<3xui32>
    %51 = stablehlo.constant dense<17> : tensor<ui32>
    %52 = stablehlo.broadcast_in_dim %51, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %53 = stablehlo.shift_left %49, %52 : tensor<3xui32>
    %54 = stablehlo.constant dense<15> : tensor<ui32>
    %55 = stablehlo.broadcast_in_dim %54, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %56 = stablehlo.shift_right_logical %49, %55 : tensor<3xui32>
    %57 = stablehlo.or %53, %56 : tensor<3xui32>
    %58 = stablehlo.xor %50, %57 : tensor<3xui32>
    %59 = stablehlo.add %50, %58 : tensor<3xui32>
    %60 = stablehlo.constant dense<29> : tensor<ui32>
    %61 = stablehlo.broadcast_in_dim %60, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %62 = stablehlo.shift_left %58, %61 : tensor<3xui32>
    %63 = stablehlo.constant dense<3> : tensor<ui32>
    %64 = stablehlo.broadcast_in_dim %63, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %65 = stablehlo.shift_right_logical %58, %64 : tensor<3xui32>
    %66 = stablehlo.or %62, %65 : tensor<3xui32>
    %67 = stablehlo.xor %59, %66 : tensor<3xui32>
    %68 = stablehlo.add %59, %67 : tensor<3xui32>
    %69 = stablehlo.constant dense<16> : tensor<ui32>
    %70 = stablehlo.broadcast_in_dim %69, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %71 = stablehlo.shift_left %67, %70 : tensor<3xui32>
    %72 = stablehlo.constant dense<16> : tensor<ui32>
    %73 = stablehlo.broadcast_in_dim %72, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %74 = stablehlo.shift_right_logical %67, %73 : tensor<3xui32>
    %75 = stablehlo.or %71, %74 : tensor<3xui32>
    %76 = stablehlo.xor %68, %75 : tensor<3xui32>
    %77 = stablehlo.add %68, %76 : tensor<3xui32>
    %78 = stablehlo.constant dense<24> : tensor<ui32>
    %79 = stablehlo.broadcast_in_dim %78, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %80 = stablehlo.shift_left %76, %79 : tensor<3xui32>
    %81 = stablehlo.constant dense<8> : tensor<ui32>
    %82 = stablehlo.broadcast_in_dim %81, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %83 = stablehlo.shift_right_logical %76, %82 : tensor<3xui32>
    %84 = stablehlo.or %80, %83 : tensor<3xui32>
    %85 = stablehlo.xor %77, %84 : tensor<3xui32>
    %86 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %87 = stablehlo.add %77, %86 : tensor<3xui32>
    %88 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %89 = stablehlo.add %85, %88 : tensor<3xui32>
    %90 = stablehlo.constant dense<2> : tensor<ui32>
    %91 = stablehlo.broadcast_in_dim %90, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %92 = stablehlo.add %89, %91 : tensor<3xui32>
    %93 = stablehlo.add %87, %92 : tensor<3xui32>
    %94 = stablehlo.constant dense<13> : tensor<ui32>
    %95 = stablehlo.broadcast_in_dim %94, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %96 = stablehlo.shift_left %92, %95 : tensor<3xui32>
    %97 = stablehlo.constant dense<19> : tensor<ui32>
    %98 = stablehlo.broadcast_in_dim %97, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %99 = stablehlo.shift_right_logical %92, %98 : tensor<3xui32>
    %100 = stablehlo.or %96, %99 : tensor<3xui32>
    %101 = stablehlo.xor %93, %100 : tensor<3xui32>
    %102 = stablehlo.add %93, %101 : tensor<3xui32>
    %103 = stablehlo.constant dense<15> : tensor<ui32>
    %104 = stablehlo.broadcast_in_dim %103, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %105 = stablehlo.shift_left %101, %104 : tensor<3xui32>
    %106 = stablehlo.constant dense<17> : tensor<ui32>
    %107 = stablehlo.broadcast_in_dim %106, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %108 = stablehlo.shift_right_logical %101, %107 : tensor<3xui32>
    %109 = stablehlo.or %105, %108 : tensor<3xui32>
    %110 = stablehlo.xor %102, %109 : tensor<3xui32>
    %111 = stablehlo.add %102, %110 : tensor<3xui32>
    %112 = stablehlo.constant dense<26> : tensor<ui32>
    %113 = stablehlo.broadcast_in_dim %112, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %114 = stablehlo.shift_left %110, %113 : tensor<3xui32>
    %115 = stablehlo.constant dense<6> : tensor<ui32>
    %116 = stablehlo.broadcast_in_dim %115, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %117 = stablehlo.shift_right_logical %110, %116 : tensor<3xui32>
    %118 = stablehlo.or %114, %117 : tensor<3xui32>
    %119 = stablehlo.xor %111, %118 : tensor<3xui32>
    %120 = stablehlo.add %111, %119 : tensor<3xui32>
    %121 = stablehlo.constant dense<6> : tensor<ui32>
    %122 = stablehlo.broadcast_in_dim %121, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %123 = stablehlo.shift_left %119, %122 : tensor<3xui32>
    %124 = stablehlo.constant dense<26> : tensor<ui32>
    %125 = stablehlo.broadcast_in_dim %124, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %126 = stablehlo.shift_right_logical %119, %125 : tensor<3xui32>
    %127 = stablehlo.or %123, %126 : tensor<3xui32>
    %128 = stablehlo.xor %120, %127 : tensor<3xui32>
    %129 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %130 = stablehlo.add %120, %129 : tensor<3xui32>
    %131 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %132 = stablehlo.add %128, %131 : tensor<3xui32>
    %133 = stablehlo.constant dense<3> : tensor<ui32>
    %134 = stablehlo.broadcast_in_dim %133, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %135 = stablehlo.add %132, %134 : tensor<3xui32>
    %136 = stablehlo.add %130, %135 : tensor<3xui32>
    %137 = stablehlo.constant dense<17> : tensor<ui32>
    %138 = stablehlo.broadcast_in_dim %137, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %139 = stablehlo.shift_left %135, %138 : tensor<3xui32>
    %140 = stablehlo.constant dense<15> : tensor<ui32>
    %141 = stablehlo.broadcast_in_dim %140, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %142 = stablehlo.shift_right_logical %135, %141 : tensor<3xui32>
    %143 = stablehlo.or %139, %142 : tensor<3xui32>
    %144 = stablehlo.xor %136, %143 : tensor<3xui32>
    %145 = stablehlo.add %136, %144 : tensor<3xui32>
    %146 = stablehlo.constant dense<29> : tensor<ui32>
    %147 = stablehlo.broadcast_in_dim %146, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %148 = stablehlo.shift_left %144, %147 : tensor<3xui32>
    %149 = stablehlo.constant dense<3> : tensor<ui32>
    %150 = stablehlo.broadcast_in_dim %149, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %151 = stablehlo.shift_right_logical %144, %150 : tensor<3xui32>
    %152 = stablehlo.or %148, %151 : tensor<3xui32>
    %153 = stablehlo.xor %145, %152 : tensor<3xui32>
    %154 = stablehlo.add %145, %153 : tensor<3xui32>
    %155 = stablehlo.constant dense<16> : tensor<ui32>
    %156 = stablehlo.broadcast_in_dim %155, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %157 = stablehlo.shift_left %153, %156 : tensor<3xui32>
    %158 = stablehlo.constant dense<16> : tensor<ui32>
    %159 = stablehlo.broadcast_in_dim %158, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %160 = stablehlo.shift_right_logical %153, %159 : tensor<3xui32>
    %161 = stablehlo.or %157, %160 : tensor<3xui32>
    %162 = stablehlo.xor %154, %161 : tensor<3xui32>
    %163 = stablehlo.add %154, %162 : tensor<3xui32>
    %164 = stablehlo.constant dense<24> : tensor<ui32>
    %165 = stablehlo.broadcast_in_dim %164, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %166 = stablehlo.shift_left %162, %165 : tensor<3xui32>
    %167 = stablehlo.constant dense<8> : tensor<ui32>
    %168 = stablehlo.broadcast_in_dim %167, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %169 = stablehlo.shift_right_logical %162, %168 : tensor<3xui32>
    %170 = stablehlo.or %166, %169 : tensor<3xui32>
    %171 = stablehlo.xor %163, %170 : tensor<3xui32>
    %172 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %173 = stablehlo.add %163, %172 : tensor<3xui32>
    %174 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %175 = stablehlo.add %171, %174 : tensor<3xui32>
    %176 = stablehlo.constant dense<4> : tensor<ui32>
    %177 = stablehlo.broadcast_in_dim %176, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %178 = stablehlo.add %175, %177 : tensor<3xui32>
    %179 = stablehlo.add %173, %178 : tensor<3xui32>
    %180 = stablehlo.constant dense<13> : tensor<ui32>
    %181 = stablehlo.broadcast_in_dim %180, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %182 = stablehlo.shift_left %178, %181 : tensor<3xui32>
    %183 = stablehlo.constant dense<19> : tensor<ui32>
    %184 = stablehlo.broadcast_in_dim %183, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %185 = stablehlo.shift_right_logical %178, %184 : tensor<3xui32>
    %186 = stablehlo.or %182, %185 : tensor<3xui32>
    %187 = stablehlo.xor %179, %186 : tensor<3xui32>
    %188 = stablehlo.add %179, %187 : tensor<3xui32>
    %189 = stablehlo.constant dense<15> : tensor<ui32>
    %190 = stablehlo.broadcast_in_dim %189, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %191 = stablehlo.shift_left %187, %190 : tensor<3xui32>
    %192 = stablehlo.constant dense<17> : tensor<ui32>
    %193 = stablehlo.broadcast_in_dim %192, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %194 = stablehlo.shift_right_logical %187, %193 : tensor<3xui32>
    %195 = stablehlo.or %191, %194 : tensor<3xui32>
    %196 = stablehlo.xor %188, %195 : tensor<3xui32>
    %197 = stablehlo.add %188, %196 : tensor<3xui32>
    %198 = stablehlo.constant dense<26> : tensor<ui32>
    %199 = stablehlo.broadcast_in_dim %198, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %200 = stablehlo.shift_left %196, %199 : tensor<3xui32>
    %201 = stablehlo.constant dense<6> : tensor<ui32>
    %202 = stablehlo.broadcast_in_dim %201, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %203 = stablehlo.shift_right_logical %196, %202 : tensor<3xui32>
    %204 = stablehlo.or %200, %203 : tensor<3xui32>
    %205 = stablehlo.xor %197, %204 : tensor<3xui32>
    %206 = stablehlo.add %197, %205 : tensor<3xui32>
    %207 = stablehlo.constant dense<6> : tensor<ui32>
    %208 = stablehlo.broadcast_in_dim %207, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %209 = stablehlo.shift_left %205, %208 : tensor<3xui32>
    %210 = stablehlo.constant dense<26> : tensor<ui32>
    %211 = stablehlo.broadcast_in_dim %210, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %212 = stablehlo.shift_right_logical %205, %211 : tensor<3xui32>
    %213 = stablehlo.or %209, %212 : tensor<3xui32>
    %214 = stablehlo.xor %206, %213 : tensor<3xui32>
    %215 = stablehlo.broadcast_in_dim %2, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %216 = stablehlo.add %206, %215 : tensor<3xui32>
    %217 = stablehlo.broadcast_in_dim %arg0, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %218 = stablehlo.add %214, %217 : tensor<3xui32>
    %219 = stablehlo.constant dense<5> : tensor<ui32>
    %220 = stablehlo.broadcast_in_dim %219, dims = [] : (tensor<ui32>) -> tensor<3xui32>
    %221 = stablehlo.add %218, %220 : tensor<3xui32>
    return %216, %221 : tensor<3xui32>, tensor<3xui32>
  }
}

