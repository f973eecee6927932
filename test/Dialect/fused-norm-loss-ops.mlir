// RUN: tfc-opt %s | tfc-opt | FileCheck %s
// The ops of the residual-norm and loss-head fusions round-trip; their
// verifier rules are in fused-norm-loss-invalid.mlir.

// CHECK-LABEL: func.func @residual_norm
// CHECK:       tfc.residual_norm #tfc.norm<layernorm> %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {alpha = 2.000000e+00 : f64, epsilon = 1.000000e-05 : f64} : tensor<?x?x8xf32>, tensor<8xf32>
// CHECK:       tfc.residual_norm #tfc.norm<rmsnorm> %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64} : tensor<?x?x8xf32>, tensor<8xf32>
func.func @residual_norm(%x: tensor<?x?x8xf32>, %f: tensor<?x?x8xf32>, %g: tensor<8xf32>,
                         %b: tensor<8xf32>) -> (tensor<?x?x8xf32>, tensor<?x?x8xf32>) {
  %s, %n = tfc.residual_norm #tfc.norm<layernorm> %x, %f, %g, %b {alpha = 2.0 : f64, epsilon = 1.0e-5 : f64} : tensor<?x?x8xf32>, tensor<8xf32>
  %s2, %n2 = tfc.residual_norm #tfc.norm<rmsnorm> %s, %n, %g {epsilon = 1.0e-5 : f64} : tensor<?x?x8xf32>, tensor<8xf32>
  return %s2, %n2 : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// Optional pieces: the incoming gradient of the sum, residual_grad (alpha
// != 1), beta_grad (layernorm).
// CHECK-LABEL: func.func @residual_norm_grad
// CHECK:       = tfc.residual_norm_grad #tfc.norm<layernorm> %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {alpha = 2.000000e+00 : f64, epsilon = 1.000000e-05 : f64} : tensor<?x?x8xf32>, tensor<8xf32> residual_grad tensor<?x?x8xf32> beta_grad tensor<8xf32>
// CHECK:       = tfc.residual_norm_grad #tfc.norm<rmsnorm> %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64} : tensor<?x?x8xf32>, tensor<8xf32>{{$}}
func.func @residual_norm_grad(%s: tensor<?x?x8xf32>, %g: tensor<8xf32>, %dy: tensor<?x?x8xf32>,
                              %ds: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %a:4 = tfc.residual_norm_grad #tfc.norm<layernorm> %s, %g, %dy, %ds {alpha = 2.0 : f64, epsilon = 1.0e-5 : f64} : tensor<?x?x8xf32>, tensor<8xf32> residual_grad tensor<?x?x8xf32> beta_grad tensor<8xf32>
  %b:2 = tfc.residual_norm_grad #tfc.norm<rmsnorm> %s, %g, %a#1 {epsilon = 1.0e-5 : f64} : tensor<?x?x8xf32>, tensor<8xf32>
  return %b#0 : tensor<?x?x8xf32>
}

// CHECK-LABEL: func.func @loss_head
// CHECK:       tfc.loss_head %{{.*}}, %{{.*}}, %{{.*}} bias %{{.*}} : (tensor<?x?x8xf32>, tensor<8x5xf32>, tensor<?x?xi32>, tensor<5xf32>) -> (tensor<?x?x5xf32>, tensor<f32>, tensor<?x?x5xf32>)
// CHECK:       tfc.loss_head %{{.*}}, %{{.*}}, %{{.*}} {transpose_weight} : (tensor<?x?x8xf32>, tensor<5x8xf32>, tensor<?x?xi32>) -> (tensor<?x?x5xf32>, tensor<f32>, tensor<?x?x5xf32>)
// CHECK:       tfc.scale_by %{{.*}} by %{{.*}} : tensor<?x?x5xf32>, tensor<f32>
func.func @loss_head(%x: tensor<?x?x8xf32>, %w: tensor<8x5xf32>, %e: tensor<5x8xf32>,
                     %bias: tensor<5xf32>, %t: tensor<?x?xi32>) -> tensor<?x?x5xf32> {
  %l, %loss, %dl = tfc.loss_head %x, %w, %t bias %bias : (tensor<?x?x8xf32>, tensor<8x5xf32>, tensor<?x?xi32>, tensor<5xf32>) -> (tensor<?x?x5xf32>, tensor<f32>, tensor<?x?x5xf32>)
  %l2, %loss2, %dl2 = tfc.loss_head %x, %e, %t {transpose_weight} : (tensor<?x?x8xf32>, tensor<5x8xf32>, tensor<?x?xi32>) -> (tensor<?x?x5xf32>, tensor<f32>, tensor<?x?x5xf32>)
  %scaled = tfc.scale_by %dl2 by %loss : tensor<?x?x5xf32>, tensor<f32>
  return %scaled : tensor<?x?x5xf32>
}
