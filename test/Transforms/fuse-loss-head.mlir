// RUN: tfc-opt %s -tfc-fuse-loss-head -split-input-file | FileCheck %s
// The head's linear + the cross-entropy of its logits -> tfc.loss_head at
// the loss; the logits stay a result (the model's output).

// CHECK-LABEL: func.func @untied
// CHECK-NOT:     tfc.linear
// CHECK-NOT:     tfc.cross_entropy
// CHECK:         %[[L:.*]], %[[LOSS:.*]], %{{.*}} = tfc.loss_head %arg0, %arg1, %arg2 {tfc.fused = "loss-head"} : (tensor<?x?x8xf32>, tensor<8x5xf32>, tensor<?x?xi32>) -> (tensor<?x?x5xf32>, tensor<f32>, tensor<?x?x5xf32>)
// CHECK-NEXT:    return %[[L]], %[[LOSS]]
func.func @untied(%h: tensor<?x?x8xf32>, %w: tensor<8x5xf32>, %t: tensor<?x?xi32>)
    -> (tensor<?x?x5xf32>, tensor<f32>) {
  %logits = tfc.linear %h, %w : (tensor<?x?x8xf32>, tensor<8x5xf32>) -> tensor<?x?x5xf32>
  %loss = tfc.cross_entropy %logits, %t : (tensor<?x?x5xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %logits, %loss : tensor<?x?x5xf32>, tensor<f32>
}

// -----

// Tied to the embedding table ([vocab, d], used transposed), with a bias.
// CHECK-LABEL: func.func @tied_bias
// CHECK:         tfc.loss_head %arg0, %arg1, %arg3 bias %arg2 {tfc.fused = "loss-head", transpose_weight} : (tensor<?x?x8xf32>, tensor<5x8xf32>, tensor<?x?xi32>, tensor<5xf32>) -> (tensor<?x?x5xf32>, tensor<f32>, tensor<?x?x5xf32>)
func.func @tied_bias(%h: tensor<?x?x8xf32>, %e: tensor<5x8xf32>, %b: tensor<5xf32>,
                     %t: tensor<?x?xi32>) -> (tensor<?x?x5xf32>, tensor<f32>) {
  %logits = tfc.linear %h, %e, %b {transpose_weight} : (tensor<?x?x8xf32>, tensor<5x8xf32>, tensor<5xf32>) -> tensor<?x?x5xf32>
  %loss = tfc.cross_entropy %logits, %t : (tensor<?x?x5xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %logits, %loss : tensor<?x?x5xf32>, tensor<f32>
}

// -----

// Not fused: logits from something else than a linear.
// CHECK-LABEL: func.func @no_linear
// CHECK-NOT:     tfc.loss_head
// CHECK:         tfc.cross_entropy
func.func @no_linear(%logits: tensor<?x?x5xf32>, %t: tensor<?x?xi32>) -> tensor<f32> {
  %loss = tfc.cross_entropy %logits, %t : (tensor<?x?x5xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Not fused: the logits are used before the loss.
// CHECK-LABEL: func.func @used_before_loss
// CHECK-NOT:     tfc.loss_head
// CHECK:         tfc.linear
// CHECK:         tfc.softmax
// CHECK:         tfc.cross_entropy
func.func @used_before_loss(%h: tensor<?x?x8xf32>, %w: tensor<8x5xf32>, %t: tensor<?x?xi32>)
    -> (tensor<?x?x5xf32>, tensor<f32>) {
  %logits = tfc.linear %h, %w : (tensor<?x?x8xf32>, tensor<8x5xf32>) -> tensor<?x?x5xf32>
  %p = tfc.softmax %logits : tensor<?x?x5xf32>
  %loss = tfc.cross_entropy %logits, %t : (tensor<?x?x5xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %p, %loss : tensor<?x?x5xf32>, tensor<f32>
}
