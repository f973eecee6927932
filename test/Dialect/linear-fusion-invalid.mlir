// RUN: tfc-opt %s -split-input-file -verify-diagnostics
// One case per verifier rule of TfcLinearFusionOps.cpp; the valid forms are
// in linear-fusion-ops.mlir.

func.func @linear_act_pre_used(%x: tensor<?x?x16xf32>, %w: tensor<16x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfc.linear_act' op pre is read by backward only and must have no uses}}
  %y, %pre = tfc.linear_act #tfc.activation<relu> %x, %w : (tensor<?x?x16xf32>, tensor<16x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %pre : tensor<?x?x32xf32>
}

// -----

func.func @linear_act_width(%x: tensor<?x?x8xf32>, %w: tensor<16x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfc.linear_act' op input width (8) does not match the input width of weight (16)}}
  %y, %pre = tfc.linear_act #tfc.activation<relu> %x, %w : (tensor<?x?x8xf32>, tensor<16x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %y : tensor<?x?x32xf32>
}

// -----

func.func @linear_act_bias(%x: tensor<?x?x16xf32>, %w: tensor<16x32xf32>, %b: tensor<16xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfc.linear_act' op bias must be a vector of 32 elements (the output width of weight), got 'tensor<16xf32>'}}
  %y, %pre = tfc.linear_act #tfc.activation<relu> %x, %w, %b : (tensor<?x?x16xf32>, tensor<16x32xf32>, tensor<16xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %y : tensor<?x?x32xf32>
}

// -----

func.func @linear_act_weight_rank(%x: tensor<?x?x16xf32>, %w: tensor<16xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfc.linear_act' op weight must have rank 2, got rank 1}}
  %y, %pre = tfc.linear_act #tfc.activation<relu> %x, %w : (tensor<?x?x16xf32>, tensor<16xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %y : tensor<?x?x32xf32>
}

// -----

func.func @merged_one_weight(%x: tensor<?x?x16xf32>, %w: tensor<16x16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.merged_linear' op needs at least two weights, got 1}}
  %q = tfc.merged_linear %x weights(%w) : (tensor<?x?x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %q : tensor<?x?x16xf32>
}

// -----

func.func @merged_result_count(%x: tensor<?x?x16xf32>, %w: tensor<16x16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.merged_linear' op has 1 results, expected one per weight (2)}}
  %q = tfc.merged_linear %x weights(%w, %w) : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %q : tensor<?x?x16xf32>
}

// -----

func.func @merged_bias_count(%x: tensor<?x?x16xf32>, %w: tensor<16x16xf32>, %b: tensor<16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.merged_linear' op has 1 biases, expected none or one per weight (2)}}
  %q:2 = tfc.merged_linear %x weights(%w, %w) biases(%b) : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>)
  return %q#0 : tensor<?x?x16xf32>
}

// -----

func.func @merged_part_width(%x: tensor<?x?x16xf32>, %w: tensor<16x16xf32>, %w2: tensor<16x8xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.merged_linear' op result 1 width (16) does not match the output width of weight 1 (8)}}
  %q:2 = tfc.merged_linear %x weights(%w, %w2) : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x8xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>)
  return %q#0 : tensor<?x?x16xf32>
}

// -----

func.func @merged_part_rows(%x: tensor<2x?x16xf32>, %w: tensor<16x16xf32>) -> tensor<3x?x16xf32> {
  // expected-error @+1 {{'tfc.merged_linear' op result 0 dimension 0 (3) does not match input dimension 0 (2)}}
  %q:2 = tfc.merged_linear %x weights(%w, %w) : (tensor<2x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> (tensor<3x?x16xf32>, tensor<2x?x16xf32>)
  return %q#0 : tensor<3x?x16xf32>
}

// -----

func.func @merged_split_rank(%x: tensor<?x16xf32>, %w: tensor<16x16xf32>) -> tensor<?x2x?x8xf32> {
  // expected-error @+1 {{'tfc.merged_linear' op result 0 rank (4) must equal input rank (2)}}
  %q:2 = tfc.merged_linear %x weights(%w, %w) : (tensor<?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x16xf32>)
  return %q#0 : tensor<?x2x?x8xf32>
}

// -----

func.func @merged_split_heads(%x: tensor<?x?x16xf32>, %w: tensor<16x16xf32>) -> tensor<?x2x?x16xf32> {
  // expected-error @+1 {{'tfc.merged_linear' op width (16) must equal heads (2) x head width (16)}}
  %q:2 = tfc.merged_linear %x weights(%w, %w) : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> (tensor<?x?x16xf32>, tensor<?x2x?x16xf32>)
  return %q#1 : tensor<?x2x?x16xf32>
}

// -----

func.func @merged_split_seq(%x: tensor<?x5x16xf32>, %w: tensor<16x16xf32>) -> tensor<?x2x4x8xf32> {
  // expected-error @+1 {{'tfc.merged_linear' op batch and sequence of rows of result 0 [?, 5] do not match result 0 [?, 4]}}
  %q:2 = tfc.merged_linear %x weights(%w, %w) : (tensor<?x5x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> (tensor<?x2x4x8xf32>, tensor<?x5x16xf32>)
  return %q#0 : tensor<?x2x4x8xf32>
}

// -----

func.func @glu_weights_differ(%x: tensor<?x?x16xf32>, %wg: tensor<16x32xf32>, %wu: tensor<16x16xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfc.glu_linear' op gate weight type 'tensor<16x32xf32>' differs from up weight type 'tensor<16x16xf32>'}}
  %h, %g, %u = tfc.glu_linear #tfc.activation<silu> %x, %wg, %wu : (tensor<?x?x16xf32>, tensor<16x32xf32>, tensor<16x16xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %h : tensor<?x?x32xf32>
}

// -----

func.func @glu_bias_count(%x: tensor<?x?x16xf32>, %w: tensor<16x32xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfc.glu_linear' op has 1 biases, expected none or (gate, up)}}
  %h, %g, %u = tfc.glu_linear #tfc.activation<silu> %x, %w, %w biases(%b) : (tensor<?x?x16xf32>, tensor<16x32xf32>, tensor<16x32xf32>, tensor<32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %h : tensor<?x?x32xf32>
}

// -----

func.func @glu_gate_used(%x: tensor<?x?x16xf32>, %w: tensor<16x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfc.glu_linear' op gate is read by backward only and must have no uses}}
  %h, %g, %u = tfc.glu_linear #tfc.activation<silu> %x, %w, %w : (tensor<?x?x16xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %g : tensor<?x?x32xf32>
}

// -----

func.func @glu_up_used(%x: tensor<?x?x16xf32>, %w: tensor<16x32xf32>) -> tensor<?x?x32xf32> {
  // expected-error @+1 {{'tfc.glu_linear' op up is read by backward only and must have no uses}}
  %h, %g, %u = tfc.glu_linear #tfc.activation<silu> %x, %w, %w : (tensor<?x?x16xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> (tensor<?x?x32xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>)
  return %u : tensor<?x?x32xf32>
}

// -----

func.func @input_grad_counts(%d: tensor<?x?x16xf32>, %w: tensor<16x16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.merged_input_grad' op needs one grad per weight and at least one, got 1 grads and 2 weights}}
  %dx = tfc.merged_input_grad grads(%d) weights(%w, %w) : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %dx : tensor<?x?x16xf32>
}

// -----

func.func @input_grad_width(%d: tensor<?x?x8xf32>, %w: tensor<16x16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.merged_input_grad' op grad 0 width (8) does not match the output width of weight 0 (16)}}
  %dx = tfc.merged_input_grad grads(%d) weights(%w) : (tensor<?x?x8xf32>, tensor<16x16xf32>) -> tensor<?x?x16xf32>
  return %dx : tensor<?x?x16xf32>
}

// -----

func.func @input_grad_result(%d: tensor<?x?x16xf32>, %w: tensor<8x16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.merged_input_grad' op result width (16) does not match the input width of weight 0 (8)}}
  %dx = tfc.merged_input_grad grads(%d) weights(%w) : (tensor<?x?x16xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  return %dx : tensor<?x?x16xf32>
}

// -----

func.func @input_grad_act_type(%d: tensor<?x?x16xf32>, %w: tensor<16x16xf32>, %a: tensor<?x?x8xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.merged_input_grad' op act_input type 'tensor<?x?x8xf32>' must equal the result type 'tensor<?x?x16xf32>'}}
  %dx = tfc.merged_input_grad grads(%d) weights(%w) act(#tfc.activation<relu>, %a) : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<?x?x8xf32>) -> tensor<?x?x16xf32>
  return %dx : tensor<?x?x16xf32>
}

// -----

func.func @input_grad_act_without_kind(%d: tensor<?x?x16xf32>, %w: tensor<16x16xf32>) -> tensor<?x?x16xf32> {
  // expected-error @+1 {{'tfc.merged_input_grad' op needs both an activation kind and its act_input, or neither}}
  %dx = "tfc.merged_input_grad"(%d, %w, %d) <{operandSegmentSizes = array<i32: 1, 1, 1>}> : (tensor<?x?x16xf32>, tensor<16x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  return %dx : tensor<?x?x16xf32>
}

// -----

func.func @input_grad_rows(%d: tensor<2x?x16xf32>, %w: tensor<16x16xf32>) -> tensor<3x?x16xf32> {
  // expected-error @+1 {{'tfc.merged_input_grad' op grad 0 dimension 0 (2) does not match result dimension 0 (3)}}
  %dx = tfc.merged_input_grad grads(%d) weights(%w) : (tensor<2x?x16xf32>, tensor<16x16xf32>) -> tensor<3x?x16xf32>
  return %dx : tensor<3x?x16xf32>
}

// -----

func.func @weight_grad_counts(%x: tensor<?x?x16xf32>, %d: tensor<?x?x16xf32>) {
  // expected-error @+1 {{'tfc.merged_weight_grad' op has 1 bias grads, expected none or one per grad (2)}}
  %dw:2, %db = tfc.merged_weight_grad %x grads(%d, %d) : tensor<?x?x16xf32>, (tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> weights(tensor<16x16xf32>, tensor<16x16xf32>) biases(tensor<16xf32>)
  return
}

// -----

func.func @weight_grad_shape(%x: tensor<?x?x16xf32>, %d: tensor<?x?x8xf32>) {
  // expected-error @+1 {{'tfc.merged_weight_grad' op weight grad 0 must be [16, 8] (input width, grad 0 width), got 'tensor<16x16xf32>'}}
  %dw = tfc.merged_weight_grad %x grads(%d) : tensor<?x?x16xf32>, (tensor<?x?x8xf32>) -> weights(tensor<16x16xf32>)
  return
}

// -----

func.func @weight_grad_bias(%x: tensor<?x?x16xf32>, %d: tensor<?x?x8xf32>) {
  // expected-error @+1 {{'tfc.merged_weight_grad' op bias grad 0 must have 8 elements (grad 0 width), got 'tensor<16xf32>'}}
  %dw, %db = tfc.merged_weight_grad %x grads(%d) : tensor<?x?x16xf32>, (tensor<?x?x8xf32>) -> weights(tensor<16x8xf32>) biases(tensor<16xf32>)
  return
}

// -----

func.func @weight_grad_rows(%x: tensor<2x?x16xf32>, %d: tensor<3x?x8xf32>) {
  // expected-error @+1 {{'tfc.merged_weight_grad' op grad 0 dimension 0 (3) does not match input dimension 0 (2)}}
  %dw = tfc.merged_weight_grad %x grads(%d) : tensor<2x?x16xf32>, (tensor<3x?x8xf32>) -> weights(tensor<16x8xf32>)
  return
}

// -----

func.func @act_weight_grad_shape(%x: tensor<?x?x16xf32>, %d: tensor<?x?x8xf32>) {
  // expected-error @+1 {{'tfc.linear_act_weight_grad' op weight grad must be [16, 8] (input width, grad width), got 'tensor<8x16xf32>'}}
  %dw, %dpre = tfc.linear_act_weight_grad #tfc.activation<relu> %x, %d, %d : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> (tensor<8x16xf32>, tensor<?x?x8xf32>)
  return
}

// -----

func.func @act_weight_grad_rank(%x: tensor<?x?x16xf32>, %d: tensor<?x8xf32>) {
  // expected-error @+1 {{'tfc.linear_act_weight_grad' op grad rank (2) must equal input rank (3)}}
  %dw, %dpre = tfc.linear_act_weight_grad #tfc.activation<relu> %x, %d, %d : (tensor<?x?x16xf32>, tensor<?x8xf32>, tensor<?x8xf32>) -> (tensor<16x8xf32>, tensor<?x8xf32>)
  return
}
