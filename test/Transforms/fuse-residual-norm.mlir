// RUN: tfc-opt %s -tfc-fuse-residual-norm -split-input-file -mlir-print-debuginfo | FileCheck %s
// residual_add + the norm of its sum -> tfc.residual_norm at the norm, with
// the fused location of both; the sum replaces the add's other uses.

// Post-LN: nothing else reads the sum.
// CHECK-LABEL: func.func @post_ln
// CHECK-NOT:     tfc.residual_add
// CHECK-NOT:     tfc.layer_norm
// CHECK:         %[[S:.*]], %[[N:.*]] = tfc.residual_norm #tfc.norm<layernorm> %arg0, %arg1, %arg2, %arg3 {epsilon = 1.000000e-05 : f64, tfc.fused = "residual-norm"} : tensor<?x?x8xf32>, tensor<8xf32> loc(#[[LOC:.*]])
// CHECK-NEXT:    return %[[N]]
// CHECK-DAG:   #[[ADD:.*]] = loc("attn.residual"
// CHECK-DAG:   #[[NORM:.*]] = loc("attn_norm"
// CHECK:       #[[LOC]] = loc(fused[#[[ADD]], #[[NORM]]])
func.func @post_ln(%x: tensor<?x?x8xf32>, %f: tensor<?x?x8xf32>, %g: tensor<8xf32>,
                   %b: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %h = tfc.residual_add %x, %f : tensor<?x?x8xf32> loc("attn.residual"("m.toml":1:1))
  %n = tfc.layer_norm %h, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32> loc("attn_norm"("m.toml":1:1))
  return %n : tensor<?x?x8xf32>
}

// -----

// Pre-LN: the sum is also the residual stream of the next add; DeepNorm's
// alpha and RMSNorm's kind and epsilon carry over.
// CHECK-LABEL: func.func @pre_rms_alpha
// CHECK:         %[[S:.*]], %[[N:.*]] = tfc.residual_norm #tfc.norm<rmsnorm> %arg0, %arg1, %arg2 {alpha = 2.500000e+00 : f64, epsilon = 1.000000e-03 : f64, tfc.fused = "residual-norm"}
// CHECK-NEXT:    %[[Y:.*]] = tfc.residual_add %[[S]], %[[N]] {alpha = 2.500000e+00 : f64}
// CHECK-NEXT:    return %[[Y]]
func.func @pre_rms_alpha(%x: tensor<?x?x8xf32>, %f: tensor<?x?x8xf32>,
                         %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %h = tfc.residual_add %x, %f {alpha = 2.5 : f64} : tensor<?x?x8xf32>
  %n = tfc.rms_norm %h, %g {epsilon = 1.0e-3 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %y = tfc.residual_add %h, %n {alpha = 2.5 : f64} : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// A chain: the second add reads the first fused op's sum and is fused with
// its own norm.
// CHECK-LABEL: func.func @chain
// CHECK:         %[[S1:.*]], %[[N1:.*]] = tfc.residual_norm #tfc.norm<layernorm> %arg0, %arg1
// CHECK-NEXT:    %[[S2:.*]], %[[N2:.*]] = tfc.residual_norm #tfc.norm<layernorm> %[[S1]], %[[N1]]
// CHECK-NEXT:    return %[[S2]], %[[N2]]
func.func @chain(%x: tensor<?x?x8xf32>, %f: tensor<?x?x8xf32>, %g: tensor<8xf32>,
                 %b: tensor<8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %h = tfc.residual_add %x, %f : tensor<?x?x8xf32>
  %n = tfc.layer_norm %h, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  %h2 = tfc.residual_add %h, %n : tensor<?x?x8xf32>
  %n2 = tfc.layer_norm %h2, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %h2, %n2 : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Not fused: a norm of something that is no residual add.
// CHECK-LABEL: func.func @no_add
// CHECK-NOT:     tfc.residual_norm
// CHECK:         tfc.layer_norm
func.func @no_add(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %a = tfc.activation #tfc.activation<relu> %x : tensor<?x?x8xf32>
  %n = tfc.layer_norm %a, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

// Not fused: the sum is used before the norm (the fused op would sit after
// that use).
// CHECK-LABEL: func.func @used_before_norm
// CHECK-NOT:     tfc.residual_norm
// CHECK:         tfc.residual_add
// CHECK:         tfc.activation
// CHECK:         tfc.rms_norm
func.func @used_before_norm(%x: tensor<?x?x8xf32>, %f: tensor<?x?x8xf32>, %g: tensor<8xf32>)
    -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %h = tfc.residual_add %x, %f : tensor<?x?x8xf32>
  %a = tfc.activation #tfc.activation<relu> %h : tensor<?x?x8xf32>
  %n = tfc.rms_norm %h, %g {epsilon = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %a, %n : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Not fused: the add and the norm on two sides of a loop boundary (the
// depth loop's result and the final norm after it).
// CHECK-LABEL: func.func @across_loop
// CHECK-NOT:     tfc.residual_norm
// CHECK:         tfc.residual_add
// CHECK:         scf.yield
// CHECK:         tfc.rms_norm
func.func @across_loop(%x: tensor<?x?x8xf32>, %g: tensor<8xf32>) -> tensor<?x?x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%h = %x) -> (tensor<?x?x8xf32>) {
    %y = tfc.residual_add %h, %h : tensor<?x?x8xf32>
    scf.yield %y : tensor<?x?x8xf32>
  }
  %n = tfc.rms_norm %r, %g {epsilon = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %n : tensor<?x?x8xf32>
}
