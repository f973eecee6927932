// RUN: tfc-opt %s -tfc-fuse-projections -tfc-fuse-epilogue -tfc-derive-backward -tfc-fuse-activation-grad -split-input-file | FileCheck %s
// tfc-fuse-activation-grad: with relu, the input gradient of the FFN's
// second linear (a transposed tfc.linear) whose only use is the first
// linear's tfc.linear_act_weight_grad becomes one tfc.merged_input_grad
// that applies act' in its output loop; the weight and bias gradients
// become a tfc.merged_weight_grad of d_pre.

// GELU: act' stays in the weight gradient's pack (its derivative would
// cost a compute-bound output loop more than the pack's memory-bound sweep).
// CHECK-LABEL: func.func @ffn_grad(
// CHECK:         %[[G:.*]] = tfc.linear %{{.*}}, %{{.*}} {transpose_weight}
// CHECK:         tfc.linear_act_weight_grad #tfc.activation<gelu_tanh> %{{.*}}, %{{.*}}, %[[G]] {tfc.fused = "epilogue"}
// CHECK-NOT:     act(
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

// relu with biases: the input gradient of w_down takes act' (reading h:
// relu'(pre) = relu'(h)); the weight and bias gradients become one
// tfc.merged_weight_grad of d_pre. Both keep the epilogue fusion's name.
// CHECK-LABEL: func.func @relu_bias_ffn_grad(
// CHECK-SAME:      %[[P:[a-z0-9]+]]: tensor<?xf32> {tfc.role = "params"}, %[[DY:[a-z0-9]+]]: tensor<?x?x8xf32> {tfc.role = "d_y"}
// CHECK-NEXT:    %[[H:.*]] = tfc.saved 0 : tensor<?x?x32xf32>
// CHECK-NEXT:    %[[W2:.*]] = tfc.param %[[P]] {name = "w_down.weight", offset = 288 : i64}
// CHECK-NOT:     tfc.linear %[[DY]]
// CHECK:         %[[X:.*]] = tfc.saved 1 : tensor<?x?x8xf32>
// CHECK:         %[[DPRE:.*]] = tfc.merged_input_grad grads(%[[DY]]) weights(%[[W2]]) act(#tfc.activation<relu>, %[[H]]) {tfc.fused = "epilogue"} : (tensor<?x?x8xf32>, tensor<32x8xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
// CHECK-NEXT:    %[[DW:.*]], %[[DB:.*]] = tfc.merged_weight_grad %[[X]] grads(%[[DPRE]]) {tfc.fused = "epilogue"} : tensor<?x?x8xf32>, (tensor<?x?x32xf32>) -> weights(tensor<8x32xf32>) biases(tensor<32xf32>)
// CHECK-NOT:     tfc.linear_act_weight_grad
// CHECK:         tfc.linear %[[DPRE]], %{{.*}} {transpose_weight}
// CHECK:         tfc.param_grad %{{.*}}, %[[DW]] {offset = 0 : i64}
// CHECK-NEXT:    tfc.param_grad %{{.*}}, %[[DB]] {offset = 256 : i64}
func.func @relu_bias_ffn(%params: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "relu_bias_ffn", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 1000 : i64, tfc.vocab = 0 : i64} {
  %w1 = tfc.param %params {name = "w_up.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<8x32xf32>
  %b1 = tfc.param %params {name = "w_up.bias", offset = 256 : i64} : tensor<?xf32> -> tensor<32xf32>
  %w2 = tfc.param %params {name = "w_down.weight", offset = 288 : i64} : tensor<?xf32> -> tensor<32x8xf32>
  %pre = tfc.linear %x, %w1, %b1 : (tensor<?x?x8xf32>, tensor<8x32xf32>, tensor<32xf32>) -> tensor<?x?x32xf32>
  %h = tfc.activation #tfc.activation<relu> %pre : tensor<?x?x32xf32>
  %y = tfc.linear %h, %w2 : (tensor<?x?x32xf32>, tensor<32x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// relu without biases: act' reads h (relu'(pre) = relu'(h)) and the weight
// gradient has no bias gradient.
// CHECK-LABEL: func.func @relu_ffn_grad(
// CHECK:         %[[H:.*]] = tfc.saved 0 : tensor<?x?x32xf32>
// CHECK:         %[[DPRE:.*]] = tfc.merged_input_grad grads(%{{.*}}) weights(%{{.*}}) act(#tfc.activation<relu>, %[[H]]) {tfc.fused = "epilogue"}
// CHECK-NEXT:    %{{.*}} = tfc.merged_weight_grad %{{.*}} grads(%[[DPRE]]) {tfc.fused = "epilogue"} : tensor<?x?x8xf32>, (tensor<?x?x32xf32>) -> weights(tensor<8x32xf32>){{$}}
func.func @relu_ffn(%params: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "relu_ffn", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 1000 : i64, tfc.vocab = 0 : i64} {
  %w1 = tfc.param %params {name = "w_up.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<8x32xf32>
  %w2 = tfc.param %params {name = "w_down.weight", offset = 256 : i64} : tensor<?xf32> -> tensor<32x8xf32>
  %pre = tfc.linear %x, %w1 : (tensor<?x?x8xf32>, tensor<8x32xf32>) -> tensor<?x?x32xf32>
  %h = tfc.activation #tfc.activation<relu> %pre : tensor<?x?x32xf32>
  %y = tfc.linear %h, %w2 : (tensor<?x?x32xf32>, tensor<32x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// The activation's output feeds two linears (merged by the projections
// fusion): their merged input gradient takes act' as well.
// CHECK-LABEL: func.func @two_linears_grad(
// CHECK:         %[[DPRE:.*]] = tfc.merged_input_grad grads(%{{.*}}, %{{.*}}) weights(%{{.*}}, %{{.*}}) act(#tfc.activation<relu>, %{{.*}}) {tfc.fused = "epilogue"}
// CHECK-NEXT:    tfc.merged_weight_grad %{{.*}} grads(%[[DPRE]]) {tfc.fused = "epilogue"}
// CHECK-NOT:     tfc.linear_act_weight_grad
func.func @two_linears(%params: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "two_linears", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 1000 : i64, tfc.vocab = 0 : i64} {
  %w1 = tfc.param %params {name = "w_up.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<8x32xf32>
  %w2 = tfc.param %params {name = "w_down.weight", offset = 256 : i64} : tensor<?xf32> -> tensor<32x8xf32>
  %w3 = tfc.param %params {name = "w_side.weight", offset = 512 : i64} : tensor<?xf32> -> tensor<32x8xf32>
  %pre = tfc.linear %x, %w1 : (tensor<?x?x8xf32>, tensor<8x32xf32>) -> tensor<?x?x32xf32>
  %h = tfc.activation #tfc.activation<relu> %pre : tensor<?x?x32xf32>
  %y1 = tfc.linear %h, %w2 : (tensor<?x?x32xf32>, tensor<32x8xf32>) -> tensor<?x?x8xf32>
  %y2 = tfc.linear %h, %w3 : (tensor<?x?x32xf32>, tensor<32x8xf32>) -> tensor<?x?x8xf32>
  %y = tfc.add %y1, %y2 : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// The activation's output is also read by something other than a linear:
// its gradient is a sum (tfc.add), and act' stays in the weight gradient's
// pack.
// CHECK-LABEL: func.func @other_reader_grad(
// CHECK:         %[[SUM:.*]] = tfc.add
// CHECK:         tfc.linear_act_weight_grad #tfc.activation<relu> %{{.*}}, %{{.*}}, %[[SUM]]
// CHECK-NOT:     act(
func.func @other_reader(%params: tensor<?xf32> {tfc.role = "params"}, %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "other_reader", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64, tfc.param_count = 1000 : i64, tfc.vocab = 0 : i64} {
  %w1 = tfc.param %params {name = "w_up.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<8x32xf32>
  %w2 = tfc.param %params {name = "w_down.weight", offset = 256 : i64} : tensor<?xf32> -> tensor<32x8xf32>
  %pre = tfc.linear %x, %w1 : (tensor<?x?x8xf32>, tensor<8x32xf32>) -> tensor<?x?x32xf32>
  %h = tfc.activation #tfc.activation<relu> %pre : tensor<?x?x32xf32>
  %h2 = tfc.activation #tfc.activation<silu> %h : tensor<?x?x32xf32>
  %s = tfc.add %h, %h2 : tensor<?x?x32xf32>
  %y = tfc.linear %s, %w2 : (tensor<?x?x32xf32>, tensor<32x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}
