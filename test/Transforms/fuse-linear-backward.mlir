// RUN: tfc-opt %s -tfc-fuse-projections -tfc-fuse-epilogue -tfc-derive-backward -split-input-file | FileCheck %s
// The gradient rules of the fused linears: forward saves the
// pre-activations (tfc.save_results), backward computes the activation's
// gradient, the weight and the bias gradients in one
// tfc.linear_act_weight_grad; merged parts get one tfc.merged_input_grad
// (no tfc.add) and one tfc.merged_weight_grad with the bias gradients.

// y = W_down gelu_tanh(W_up x + b).
// CHECK-LABEL: func.func @ffn(
// CHECK-SAME:      %{{[a-z0-9]+}}: tensor<?x?x8xf32> {tfc.role = "x", tfc.save = 1 : i64})
// CHECK:         %[[H:.*]], %{{.*}} = tfc.linear_act #tfc.activation<gelu_tanh> {{.*}} {tfc.fused = "epilogue", tfc.save_results = array<i64: 0, 2>}
// CHECK-LABEL: func.func @ffn_grad(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK:         %[[DH:.*]] = tfc.linear %[[DY]], %{{.*}} {transpose_weight}
// CHECK:         %[[X:.*]] = tfc.saved 1 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[PRE:.*]] = tfc.saved 2 : tensor<?x?x32xf32>
// CHECK-NEXT:    %[[DW:.*]], %[[DPRE:.*]], %[[DB:.*]] = tfc.linear_act_weight_grad #tfc.activation<gelu_tanh> %[[X]], %[[PRE]], %[[DH]] {tfc.fused = "epilogue"} : (tensor<?x?x8xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>) -> (tensor<8x32xf32>, tensor<?x?x32xf32>, tensor<32xf32>)
// CHECK-NEXT:    %[[W:.*]] = tfc.param %[[P]] {name = "w_up.weight", offset = 0 : i64}
// CHECK-NEXT:    %[[DX:.*]] = tfc.linear %[[DPRE]], %[[W]] {transpose_weight}
// CHECK-NEXT:    %[[DP1:.*]] = tfc.param_grad %{{.*}}, %[[DW]] {offset = 0 : i64}
// CHECK-NEXT:    %[[DP2:.*]] = tfc.param_grad %[[DP1]], %[[DB]] {offset = 256 : i64}
// CHECK-NEXT:    return %[[DP2]], %[[DX]]
func.func @ffn(%params: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "ffn", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 1000 : i64, tfc.vocab = 0 : i64} {
  %w1 = tfc.param %params {name = "w_up.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<8x32xf32>
  %b1 = tfc.param %params {name = "w_up.bias", offset = 256 : i64} : tensor<?xf32> -> tensor<32xf32>
  %w2 = tfc.param %params {name = "w_down.weight", offset = 288 : i64} : tensor<?xf32> -> tensor<32x8xf32>
  %pre = tfc.linear %x, %w1, %b1 : (tensor<?x?x8xf32>, tensor<8x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %h = tfc.activation #tfc.activation<gelu_tanh> %pre : tensor<?x?x32xf32>
  %y = tfc.linear %h, %w2 : (tensor<?x?x32xf32>, tensor<32x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// relu: relu'(pre) = relu'(h), so the gradient reads h (saved for w_down's
// weight gradient anyway) and pre is not saved (tfc.save_results: -1).
// CHECK-LABEL: func.func @relu_ffn(
// CHECK:         %[[H:.*]], %{{.*}} = tfc.linear_act #tfc.activation<relu> {{.*}} {tfc.fused = "epilogue", tfc.save_results = array<i64: 0, -1>}
// CHECK-LABEL: func.func @relu_ffn_grad(
// CHECK-NEXT:    %[[HS:.*]] = tfc.saved 0 : tensor<?x?x32xf32>
// CHECK:         %[[DH:.*]] = tfc.linear %{{.*}}, %{{.*}} {transpose_weight}
// CHECK:         %[[X:.*]] = tfc.saved 1 : tensor<?x?x8xf32>
// CHECK-NEXT:    %{{.*}}, %{{.*}}, %{{.*}} = tfc.linear_act_weight_grad #tfc.activation<relu> %[[X]], %[[HS]], %[[DH]]
// CHECK-NOT:     tfc.saved
func.func @relu_ffn(%params: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "relu_ffn", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 1000 : i64, tfc.vocab = 0 : i64} {
  %w1 = tfc.param %params {name = "w_up.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<8x32xf32>
  %b1 = tfc.param %params {name = "w_up.bias", offset = 256 : i64} : tensor<?xf32> -> tensor<32xf32>
  %w2 = tfc.param %params {name = "w_down.weight", offset = 288 : i64} : tensor<?xf32> -> tensor<32x8xf32>
  %pre = tfc.linear %x, %w1, %b1 : (tensor<?x?x8xf32>, tensor<8x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %h = tfc.activation #tfc.activation<relu> %pre : tensor<?x?x32xf32>
  %y = tfc.linear %h, %w2 : (tensor<?x?x32xf32>, tensor<32x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// y = q + k + v of one input x: dx is one matmul over the three parts.
// CHECK-LABEL: func.func @qkv_grad(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[WQ:.*]] = tfc.param %[[P]] {name = "wq.weight"
// CHECK-NEXT:    %[[WK:.*]] = tfc.param %[[P]] {name = "wk.weight"
// CHECK-NEXT:    %[[WV:.*]] = tfc.param %[[P]] {name = "wv.weight"
// CHECK-NEXT:    %[[DX:.*]] = tfc.merged_input_grad grads(%[[DY]], %[[DY]], %[[DY]]) weights(%[[WQ]], %[[WK]], %[[WV]]) {tfc.fused = "projections"}
// CHECK-NEXT:    %[[X:.*]] = tfc.saved 0 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DW:.*]]:3, %[[DB:.*]]:3 = tfc.merged_weight_grad %[[X]] grads(%[[DY]], %[[DY]], %[[DY]]) {tfc.fused = "projections"} : tensor<?x?x8xf32>, (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> weights(tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) biases(tensor<8xf32>, tensor<8xf32>, tensor<8xf32>)
// CHECK-NEXT:    tfc.param_grad %[[DP]], %[[DW]]#0 {offset = 0 : i64}
// CHECK-NEXT:    tfc.param_grad %{{.*}}, %[[DW]]#1 {offset = 72 : i64}
// CHECK-NEXT:    tfc.param_grad %{{.*}}, %[[DW]]#2 {offset = 144 : i64}
// CHECK-NEXT:    tfc.param_grad %{{.*}}, %[[DB]]#0 {offset = 64 : i64}
// CHECK-NEXT:    tfc.param_grad %{{.*}}, %[[DB]]#1 {offset = 136 : i64}
// CHECK-NEXT:    %[[DPN:.*]] = tfc.param_grad %{{.*}}, %[[DB]]#2 {offset = 208 : i64}
// CHECK-NEXT:    return %[[DPN]], %[[DX]]
func.func @qkv(%params: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "qkv", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 216 : i64, tfc.vocab = 0 : i64} {
  %wq = tfc.param %params {name = "wq.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<8x8xf32>
  %bq = tfc.param %params {name = "wq.bias", offset = 64 : i64} : tensor<?xf32> -> tensor<8xf32>
  %wk = tfc.param %params {name = "wk.weight", offset = 72 : i64} : tensor<?xf32> -> tensor<8x8xf32>
  %bk = tfc.param %params {name = "wk.bias", offset = 136 : i64} : tensor<?xf32> -> tensor<8xf32>
  %wv = tfc.param %params {name = "wv.weight", offset = 144 : i64} : tensor<?xf32> -> tensor<8x8xf32>
  %bv = tfc.param %params {name = "wv.bias", offset = 208 : i64} : tensor<?xf32> -> tensor<8xf32>
  %q = tfc.linear %x, %wq, %bq : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %k = tfc.linear %x, %wk, %bk : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %v = tfc.linear %x, %wv, %bv : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %qk = tfc.residual_add %q, %k : tensor<?x?x8xf32>
  %y = tfc.residual_add %qk, %v : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// A SwiGLU without biases: glu_grad on the saved gate and up, then the two
// merged matmuls.
// CHECK-LABEL: func.func @glu(
// CHECK:         tfc.glu_linear #tfc.activation<silu> {{.*}} {tfc.fused = "projections", tfc.save_results = array<i64: -1, 0, 1>}
// CHECK-LABEL: func.func @glu_grad(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x16xf32> {tfc.role = "d_y"}, %[[DP:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "d_params"})
// CHECK-NEXT:    %[[G:.*]] = tfc.saved 0 : tensor<?x?x16xf32>
// CHECK-NEXT:    %[[U:.*]] = tfc.saved 1 : tensor<?x?x16xf32>
// CHECK-NEXT:    %[[DG:.*]], %[[DU:.*]] = tfc.glu_grad #tfc.activation<silu> %[[G]], %[[U]], %[[DY]] {tfc.fused = "projections"}
// CHECK-NEXT:    %[[WG:.*]] = tfc.param %[[P]] {name = "w_gate.weight"
// CHECK-NEXT:    %[[WU:.*]] = tfc.param %[[P]] {name = "w_up.weight"
// CHECK-NEXT:    %[[DX:.*]] = tfc.merged_input_grad grads(%[[DG]], %[[DU]]) weights(%[[WG]], %[[WU]]) {tfc.fused = "projections"}
// CHECK-NEXT:    %[[X:.*]] = tfc.saved 2 : tensor<?x?x8xf32>
// CHECK-NEXT:    %[[DW:.*]]:2 = tfc.merged_weight_grad %[[X]] grads(%[[DG]], %[[DU]]) {tfc.fused = "projections"} : tensor<?x?x8xf32>, (tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> weights(tensor<8x16xf32>, tensor<8x16xf32>){{$}}
// CHECK-NEXT:    tfc.param_grad %[[DP]], %[[DW]]#0 {offset = 0 : i64}
// CHECK-NEXT:    %[[DPN:.*]] = tfc.param_grad %{{.*}}, %[[DW]]#1 {offset = 128 : i64}
// CHECK-NEXT:    return %[[DPN]], %[[DX]]
func.func @glu(%params: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x16xf32> {tfc.role = "y"})
    attributes {tfc.model = "glu", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 256 : i64, tfc.vocab = 0 : i64} {
  %wg = tfc.param %params {name = "w_gate.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<8x16xf32>
  %wu = tfc.param %params {name = "w_up.weight", offset = 128 : i64} : tensor<?xf32> -> tensor<8x16xf32>
  %up = tfc.linear %x, %wu : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  %gate = tfc.linear %x, %wg : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  %h = tfc.glu #tfc.activation<silu> %gate, %up : tensor<?x?x16xf32>
  return %h : tensor<?x?x16xf32>
}
