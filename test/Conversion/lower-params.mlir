// RUN: tfc-opt %s -tfc-lower-to-loops | FileCheck %s
// Parameters, parameter gradients, saved activations and the depth loop
// (LowerToLoops.cpp, EmbeddingLowering.cpp, Lowering.cpp). The input is
// tfc-derive-backward's output for a two-layer stack of rms_norm, silu and a
// residual add (tfc.save / tfc.save_iter_arg marked), so that both entry
// points are lowered: layer parameters are subviews of params at offset +
// layer * layer_stride, the loop stays an scf.for around the block's
// parallel loops, the loop-carried stream's layer inputs are saved, so each
// layer reads its input from its saved copy and writes its output into the
// next layer's (the last layer's into the carry, copied out at the end);
// saved values get
// one workspace copy per layer (a view at base + layer * bytes, in the saved
// arena at the start of the workspace), and the
// backward reads them at the reversed layer and adds parameter gradients
// into d_params in place.

// CHECK-LABEL: func.func @stack_forward(
// CHECK:         %[[P:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// CHECK:         %[[WS:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi8>
// CHECK:         %[[X:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// CHECK:         %[[Y:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// CHECK:         %[[CARRY:.*]] = memref.view %[[WS]][
// CHECK:         %[[ACT:.*]] = memref.view %[[WS]][
// CHECK:         %[[SUM:.*]] = memref.view %[[WS]][
// x into the first layer's saved input (slot 1, tfc.save_iter_arg: the
// first of the saved arena, at the start of the workspace).
// CHECK:         %[[IN0:.*]] = memref.view %[[WS]][
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK-NEXT:        %[[V:.*]] = memref.load %[[X]][
// CHECK-NEXT:        memref.store %[[V]], %[[IN0]][
// CHECK:         } {tfc.kernel = "for"}
// CHECK:         scf.for %[[L:.*]] = %{{.*}} to %[[DEPTH:.*]] step %{{.*}} {
// The layer reads its input where it is saved, its layer's copy: no copy
// at the top of the layer.
// CHECK:           %[[IN_AT:.*]] = arith.muli %[[L]], %{{.*}} : index
// CHECK-NEXT:      %[[IN_SAVE:.*]] = memref.view %[[WS]][%[[IN_AT]]][%{{.*}}] : memref<?xi8> to memref<?xf32>
// CHECK:           %[[G_AT:.*]] = arith.muli %[[L]], %{{.*}} : index
// CHECK-NEXT:      %[[G:.*]] = memref.subview %[[P]][%[[G_AT]]] [8] [1]
// rms_norm's result is saved (slot 0): its own per-layer view.
// CHECK:           %[[N_AT:.*]] = arith.muli %[[L]], %{{.*}} : index
// CHECK-NEXT:      %[[N_OFF:.*]] = arith.addi %{{.*}}, %[[N_AT]] : index
// CHECK-NEXT:      %[[N:.*]] = memref.view %[[WS]][%[[N_OFF]]][%{{.*}}] : memref<?xi8> to memref<?xf32>
// CHECK-NOT:       tfc.kernel = "for"
// CHECK:           scf.parallel
// CHECK:             memref.load %[[IN_SAVE]][
// CHECK:             memref.load %[[G]][
// CHECK:             memref.store %{{.*}}, %[[N]][
// CHECK:           } {tfc.kernel = "rms_norm"}
// CHECK:           scf.parallel
// CHECK:             memref.load %[[N]][
// CHECK:             memref.store %{{.*}}, %[[ACT]][
// CHECK:           } {tfc.kernel = "activation"}
// CHECK:           scf.parallel
// CHECK:             memref.load %[[IN_SAVE]][
// CHECK-NEXT:        memref.load %[[ACT]][
// CHECK:             memref.store %{{.*}}, %[[SUM]][
// CHECK:           } {tfc.kernel = "residual_add"}
// The yield copies the sum into the next layer's saved input, the last
// layer's into the carry (the loop's result).
// CHECK:           %[[NEXT:.*]] = arith.addi %[[L]], %{{.*}} : index
// CHECK-NEXT:      %[[MORE:.*]] = arith.cmpi ult, %[[NEXT]], %[[DEPTH]] : index
// CHECK-NEXT:      scf.if %[[MORE]] {
// CHECK:             %[[NEXT_AT:.*]] = arith.muli %[[NEXT]], %{{.*}} : index
// CHECK-NEXT:        %[[IN_NEXT:.*]] = memref.view %[[WS]][%[[NEXT_AT]]][%{{.*}}] : memref<?xi8> to memref<?xf32>
// CHECK:             scf.parallel
// CHECK:               memref.load %[[SUM]][
// CHECK-NEXT:          memref.store %{{.*}}, %[[IN_NEXT]][
// CHECK:           } else {
// CHECK:             scf.parallel
// CHECK:               memref.load %[[SUM]][
// CHECK-NEXT:          memref.store %{{.*}}, %[[CARRY]][
// CHECK:             scf.reduce
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// The loop's result out to y.
// CHECK:         scf.parallel
// CHECK:           memref.load %[[CARRY]][
// CHECK-NEXT:      memref.store %{{.*}}, %[[Y]][
// CHECK:         llvm.call @tfc_rt_check_finite(

// rt, params, d_y, d_x, d_params, workspace, workspace_bytes, batch, seq.
// CHECK-LABEL: func.func @stack_backward(
// CHECK:         %[[P:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// CHECK:         %[[WS:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi8>
// CHECK:         %[[DY:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// CHECK:         %[[DX:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// CHECK:         %[[DP:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// d_params is updated in place; d_h gets a carry.
// CHECK:         %[[DH:.*]] = memref.view %[[WS]][
// CHECK:         scf.parallel
// CHECK:           memref.load %[[DY]][
// CHECK-NEXT:      memref.store %{{.*}}, %[[DH]][
// CHECK:         } {tfc.kernel = "for"}
// CHECK:         scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// The reversed layer: last - j.
// CHECK:           %[[JL:.*]] = arith.subi %[[J]], %{{.*}} : index
// CHECK-NEXT:      %[[LAYER:.*]] = arith.subi %{{.*}}, %[[JL]] : index
// CHECK:           %[[S0_AT:.*]] = arith.muli %[[LAYER]], %{{.*}} : index
// CHECK-NEXT:      %[[S0_OFF:.*]] = arith.addi %{{.*}}, %[[S0_AT]] : index
// CHECK-NEXT:      %[[S0:.*]] = memref.view %[[WS]][%[[S0_OFF]]][%{{.*}}] : memref<?xi8> to memref<?xf32>
// CHECK:           scf.parallel
// CHECK:             memref.load %[[S0]][
// CHECK-NEXT:        memref.load %[[DH]][
// CHECK:           } {tfc.kernel = "activation_grad"}
// CHECK:           %[[G_AT:.*]] = arith.muli %[[LAYER]], %{{.*}} : index
// CHECK-NEXT:      memref.subview %[[P]][%[[G_AT]]] [8] [1]
// CHECK:           %[[S1_AT:.*]] = arith.muli %[[LAYER]], %{{.*}} : index
// CHECK-NEXT:      %[[S1:.*]] = memref.view %[[WS]][%[[S1_AT]]][%{{.*}}] : memref<?xi8> to memref<?xf32>
// CHECK:           scf.parallel
// CHECK:             memref.load %[[S1]][
// CHECK:           } {tfc.kernel = "rms_norm_grad"}
// CHECK:           } {tfc.kernel = "rms_norm_grad"}
// CHECK:           } {tfc.kernel = "add"}
// param_grad: d_params[offset + layer * stride + i] += dgamma[i], in chunks
// (offset 0 here).
// CHECK:           %[[PG_OFF:.*]] = arith.muli %[[LAYER]], %{{.*}} : index
// CHECK:           scf.parallel
// CHECK:             scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT:          %[[AT:.*]] = arith.addi %[[PG_OFF]], %[[I]] : index
// CHECK-NEXT:          %[[D:.*]] = memref.load %{{.*}}[%[[I]]] : memref<?xf32>
// CHECK-NEXT:          %[[OLD:.*]] = memref.load %[[DP]][%[[AT]]] : memref<?xf32>
// CHECK-NEXT:          %[[NEW:.*]] = arith.addf %[[OLD]], %[[D]] : f32
// CHECK-NEXT:          memref.store %[[NEW]], %[[DP]][%[[AT]]] : memref<?xf32>
// CHECK:           } {tfc.kernel = "param_grad"}
// d_h back into its carry at the yield.
// CHECK:           scf.parallel
// CHECK:             memref.store %{{.*}}, %[[DH]][
// CHECK:             scf.reduce
// CHECK-NEXT:      }
// CHECK-NEXT:    }
// CHECK:         scf.parallel
// CHECK:           memref.load %[[DH]][
// CHECK-NEXT:      memref.store %{{.*}}, %[[DX]][
// CHECK:         llvm.call @tfc_rt_check_finite(
// CHECK:         llvm.call @tfc_rt_check_finite(

// One size for both entry points.
// CHECK-LABEL: func.func @stack_workspace_size(
// CHECK-NOT:     func.func @stack_grad(

func.func @stack(%arg0: tensor<?xf32> {tfc.role = "params"}, %arg1: tensor<?x?x8xf32> {tfc.role = "x"}) -> (tensor<?x?x8xf32> {tfc.role = "y"}) attributes {tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64, tfc.model = "stack", tfc.param_count = 16 : i64, tfc.vocab = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %0 = scf.for %arg2 = %c0 to %c2 step %c1 iter_args(%arg3 = %arg1) -> (tensor<?x?x8xf32>) {
    %1 = tfc.param %arg0[%arg2] {layer_stride = 8 : i64, name = "norm.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<8xf32>
    %2 = tfc.rms_norm %arg3, %1 {epsilon = 9.9999999999999995E-7 : f64, tfc.save = 0 : i64} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
    %3 = tfc.activation #tfc.activation<silu> %2 : tensor<?x?x8xf32>
    %4 = tfc.residual_add %arg3, %3 : tensor<?x?x8xf32>
    scf.yield %4 : tensor<?x?x8xf32>
  } {tfc.save_iter_arg = 1 : i64}
  return %0 : tensor<?x?x8xf32>
}
func.func @stack_grad(%arg0: tensor<?xf32> {tfc.role = "params"}, %arg1: tensor<?x?x8xf32> {tfc.role = "d_y"}, %arg2: tensor<?xf32> {tfc.role = "d_params"}) -> (tensor<?xf32> {tfc.role = "d_params"}, tensor<?x?x8xf32> {tfc.role = "d_x"}) attributes {tfc.backward_of = "stack", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64, tfc.param_count = 16 : i64, tfc.vocab = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %0:2 = scf.for %arg3 = %c0 to %c2 step %c1 iter_args(%arg4 = %arg1, %arg5 = %arg2) -> (tensor<?x?x8xf32>, tensor<?xf32>) {
    %c1_0 = arith.constant 1 : index
    %1 = arith.subi %c2, %c0 : index
    %2 = arith.subi %1, %c1_0 : index
    %3 = arith.divui %2, %c1 : index
    %4 = arith.muli %3, %c1 : index
    %5 = arith.addi %c0, %4 : index
    %6 = arith.subi %arg3, %c0 : index
    %7 = arith.subi %5, %6 : index
    %8 = tfc.saved 0[%7] : tensor<?x?x8xf32>
    %9 = tfc.activation_grad #tfc.activation<silu> %8, %arg4 : tensor<?x?x8xf32>
    %10 = tfc.param %arg0[%7] {layer_stride = 8 : i64, name = "norm.weight", offset = 0 : i64} : tensor<?xf32> -> tensor<8xf32>
    %11 = tfc.saved 1[%7] : tensor<?x?x8xf32>
    %input_grad, %gamma_grad = tfc.rms_norm_grad %11, %10, %9 {epsilon = 9.9999999999999995E-7 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<8xf32>)
    %12 = tfc.add %arg4, %input_grad : tensor<?x?x8xf32>
    %13 = tfc.param_grad %arg5[%7], %gamma_grad {layer_stride = 8 : i64, offset = 0 : i64} : tensor<?xf32>, tensor<8xf32>
    scf.yield %12, %13 : tensor<?x?x8xf32>, tensor<?xf32>
  }
  return %0#1, %0#0 : tensor<?xf32>, tensor<?x?x8xf32>
}
