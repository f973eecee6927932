// RUN: tfc-opt %s -tfc-lower-to-loops --split-input-file | FileCheck %s
// The elementwise ops (PointwiseLowering.cpp, GradLowering.cpp): one
// parallel iteration per row with a contiguous scalar loop over the columns
// (LLVM vectorises it), math ops left as math.erf / math.tanh / math.exp for
// tfc-approximate-math; add and zeros_like run over chunks of 4096 elements.
// Each op's loop is named after it; intermediates are workspace views.

// CHECK-LABEL: func.func @activation_forward(
// CHECK:         %[[A:.*]] = memref.view
// CHECK:         %[[B:.*]] = memref.view
// CHECK:         %[[C:.*]] = memref.view
// CHECK-NOT:     memref.view
// relu
// CHECK:         scf.parallel
// CHECK-NEXT:      arith.muli
// CHECK:           scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             %[[X:.*]] = memref.load
// CHECK:             %[[R:.*]] = arith.maximumf %[[X]], %{{.*}} : f32
// CHECK-NEXT:        memref.store %[[R]], %[[A]][
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.reduce
// CHECK-NEXT:    } {tfc.kernel = "activation"}
// gelu: 0.5 x (1 + erf(x / sqrt 2))
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             memref.load %[[A]][
// CHECK:             math.erf %{{.*}} : f32
// CHECK:             memref.store %{{.*}}, %[[B]][
// CHECK:         } {tfc.kernel = "activation"}
// gelu_tanh
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             memref.load %[[B]][
// CHECK:             math.tanh %{{.*}} : f32
// CHECK:             memref.store %{{.*}}, %[[C]][
// CHECK:         } {tfc.kernel = "activation"}
// silu: x / (1 + exp(-x)), into y
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             %[[S:.*]] = memref.load %[[C]][
// CHECK-NEXT:        %[[NEG:.*]] = arith.negf %[[S]] : f32
// CHECK-NEXT:        %[[E:.*]] = math.exp %[[NEG]] : f32
// CHECK:             %[[DEN:.*]] = arith.addf %[[E]], %{{.*}} : f32
// CHECK-NEXT:        %[[Y:.*]] = arith.divf %[[S]], %[[DEN]] : f32
// CHECK-NEXT:        memref.store %[[Y]]
// CHECK:         } {tfc.kernel = "activation"}
// CHECK-NOT:     scf.parallel
// CHECK:         llvm.call @tfc_rt_check_finite(
func.func @activation(%params: tensor<?xf32> {tfc.role = "params"},
                      %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "activation", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %a = tfc.activation #tfc.activation<relu> %x : tensor<?x?x8xf32>
  %b = tfc.activation #tfc.activation<gelu> %a : tensor<?x?x8xf32>
  %c = tfc.activation #tfc.activation<gelu_tanh> %b : tensor<?x?x8xf32>
  %d = tfc.activation #tfc.activation<silu> %c : tensor<?x?x8xf32>
  return %d : tensor<?x?x8xf32>
}

// -----

// CHECK-LABEL: func.func @glu_forward(
// CHECK-NOT:     memref.view
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             %[[G:.*]] = memref.load
// CHECK-NEXT:        %[[U:.*]] = memref.load
// CHECK:             math.exp
// CHECK:             %[[A:.*]] = arith.divf %[[G]], %{{.*}} : f32
// CHECK-NEXT:        %[[Y:.*]] = arith.mulf %[[A]], %[[U]] : f32
// CHECK-NEXT:        memref.store %[[Y]]
// CHECK:         } {tfc.kernel = "glu"}
// CHECK-NOT:     scf.parallel
func.func @glu(%params: tensor<?xf32> {tfc.role = "params"},
               %g: tensor<?x?x8xf32> {tfc.role = "x"},
               %u: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "glu", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %y = tfc.glu #tfc.activation<silu> %g, %u : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// alpha = 1: a plain add; alpha = 2: the residual scaled first.
// CHECK-LABEL: func.func @residual_scale_forward(
// CHECK:         %[[R1:.*]] = memref.view
// CHECK:         %[[R2:.*]] = memref.view
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             %[[X:.*]] = memref.load
// CHECK-NEXT:        %[[F:.*]] = memref.load
// CHECK-NEXT:        %[[S:.*]] = arith.addf %[[X]], %[[F]] : f32
// CHECK-NEXT:        memref.store %[[S]], %[[R1]][
// CHECK:         } {tfc.kernel = "residual_add"}
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             %[[X2:.*]] = memref.load %[[R1]][
// CHECK-NEXT:        %[[F2:.*]] = memref.load
// CHECK:             %[[XA:.*]] = arith.mulf %[[X2]], %{{.*}} : f32
// CHECK-NEXT:        %[[S2:.*]] = arith.addf %[[XA]], %[[F2]] : f32
// CHECK-NEXT:        memref.store %[[S2]], %[[R2]][
// CHECK:         } {tfc.kernel = "residual_add"}
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             memref.load %[[R2]][
// CHECK:             arith.mulf
// CHECK-NEXT:        memref.store
// CHECK:         } {tfc.kernel = "scale"}
func.func @residual_scale(%params: tensor<?xf32> {tfc.role = "params"},
                          %x: tensor<?x?x8xf32> {tfc.role = "x"},
                          %f: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "residual_scale", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %r = tfc.residual_add %x, %f : tensor<?x?x8xf32>
  %r2 = tfc.residual_add %r, %f {alpha = 2.0 : f64} : tensor<?x?x8xf32>
  %y = tfc.scale %r2 by 0.25 : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// Flat loops: ceil(numel / 4096) parallel chunks, each [begin, min(begin +
// 4096, numel)).
// CHECK-LABEL: func.func @add_zeros_forward(
// CHECK:         %[[CHUNKS:.*]] = arith.ceildivui %{{.*}}, %{{.*}} : index
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[CHUNKS]]) step (%{{.*}}) {
// CHECK:           %[[END:.*]] = arith.minsi
// CHECK:           scf.for %[[I:.*]] = %{{.*}} to %[[END]] step %{{.*}} {
// CHECK-NEXT:        %[[U:.*]] = memref.load %{{.*}}[%[[I]]] : memref<?xf32>
// CHECK-NEXT:        %[[X:.*]] = memref.load %{{.*}}[%[[I]]] : memref<?xf32>
// CHECK-NEXT:        %[[S:.*]] = arith.addf %[[X]], %[[U]] : f32
// CHECK-NEXT:        memref.store %[[S]], %{{.*}}[%[[I]]] : memref<?xf32>
// CHECK:         } {tfc.kernel = "add"}
// CHECK:         arith.ceildivui
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK-NEXT:        memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<?xf32>
// CHECK-NEXT:      }
// CHECK:         } {tfc.kernel = "zeros_like"}
func.func @add_zeros(%params: tensor<?xf32> {tfc.role = "params"},
                     %x: tensor<?x?x8xf32> {tfc.role = "x"},
                     %u: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"}, tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "add_zeros", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %s = tfc.add %x, %u : tensor<?x?x8xf32>
  %z = tfc.zeros_like %x : tensor<?x?x8xf32>
  return %s, %z : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// act'(a) * dy: relu' as a select on a > 0; gelu' = Phi(a) + a phi(a).
// CHECK-LABEL: func.func @activation_grad_forward(
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             %[[A:.*]] = memref.load
// CHECK-NEXT:        %[[DY:.*]] = memref.load
// CHECK:             %[[POS:.*]] = arith.cmpf ogt, %[[A]], %{{.*}} : f32
// CHECK:             %[[D:.*]] = arith.select %[[POS]], %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:        %[[G:.*]] = arith.mulf %[[D]], %[[DY]] : f32
// CHECK-NEXT:        memref.store %[[G]]
// CHECK:         } {tfc.kernel = "activation_grad"}
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             math.erf
// CHECK:             math.exp
// CHECK:             memref.store
// CHECK:         } {tfc.kernel = "activation_grad"}
func.func @activation_grad(%params: tensor<?xf32> {tfc.role = "params"},
                           %a: tensor<?x?x8xf32> {tfc.role = "x"},
                           %dy: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"}, tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "activation_grad", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %relu = tfc.activation_grad #tfc.activation<relu> %a, %dy : tensor<?x?x8xf32>
  %gelu = tfc.activation_grad #tfc.activation<gelu> %a, %dy : tensor<?x?x8xf32>
  return %relu, %gelu : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// Both gradients in one sweep over the same loads: dgate = act'(g) dy up,
// dup = act(g) dy.
// CHECK-LABEL: func.func @glu_grad_forward(
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             %[[G:.*]] = memref.load
// CHECK-NEXT:        %[[DY:.*]] = memref.load
// CHECK:             math.tanh
// CHECK:             %[[UP:.*]] = memref.load
// CHECK:             memref.store
// CHECK:             math.tanh
// CHECK:             memref.store
// CHECK-NEXT:      }
// CHECK:         } {tfc.kernel = "glu_grad"}
// CHECK-NOT:     scf.parallel
func.func @glu_grad(%params: tensor<?xf32> {tfc.role = "params"},
                    %g: tensor<?x?x8xf32> {tfc.role = "x"},
                    %u: tensor<?x?x8xf32> {tfc.role = "x"},
                    %dy: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"}, tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "glu_grad", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %dg, %du = tfc.glu_grad #tfc.activation<gelu_tanh> %g, %u, %dy : tensor<?x?x8xf32>
  return %dg, %du : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}
