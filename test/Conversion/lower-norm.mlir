// RUN: tfc-opt %s -tfc-lower-to-loops --split-input-file | FileCheck %s
// RUN: tfc-opt %s -tfc-lower-to-loops=host-memory=false --split-input-file | FileCheck %s --check-prefix=GPU
// The norms and their gradients (NormLowering.cpp, GradLowering.cpp,
// ResidualNormLowering.cpp, RowLoops.cpp): one parallel iteration per row
// (per block of 16 rows for residual_norm_grad), scalar loops over the
// columns whose sums carry fastmath<reassoc> (so LLVM vectorises them, in a
// fixed order); parameter gradients are column sums in row order without
// reassoc. With host-memory=false (CUDA) each row is one gpu.launch block of
// 128 threads: a strided column loop per thread, a warp butterfly of
// gpu.shuffle xor, the 4 warps' partials through workgroup memory between
// two barriers.

// Three sweeps of the row: sum (mean), sum of squares (variance), output.
// CHECK-LABEL: func.func @layer_norm_forward(
// A forward that needs no workspace buffer keeps no view of the workspace.
// CHECK:         %[[P:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// CHECK-NOT:     to memref<?xi8>
// CHECK:         %[[X:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// CHECK:         %[[Y:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// CHECK-NOT:     memref.view
// CHECK:         %[[G:.*]] = memref.subview %[[P]][%{{.*}}] [8] [1]
// CHECK:         %[[B:.*]] = memref.subview %[[P]][%{{.*}}] [8] [1]
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK:           %[[SUM:.*]] = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK:             %[[XV:.*]] = memref.load %[[X]][%{{.*}}] : memref<?xf32>
// CHECK-NEXT:        %[[NEXT:.*]] = arith.addf %[[ACC]], %[[XV]] fastmath<reassoc> : f32
// CHECK-NEXT:        scf.yield %[[NEXT]] : f32
// CHECK:           %[[MEAN:.*]] = arith.mulf %[[SUM]], %{{.*}} : f32
// CHECK:           %[[SQ:.*]] = scf.for {{.*}} -> (f32) {
// CHECK:             %[[D:.*]] = arith.subf %{{.*}}, %[[MEAN]] : f32
// CHECK-NEXT:        %[[D2:.*]] = arith.mulf %[[D]], %[[D]] : f32
// CHECK-NEXT:        arith.addf %{{.*}}, %[[D2]] fastmath<reassoc> : f32
// CHECK:           %[[VAR:.*]] = arith.mulf %[[SQ]], %{{.*}} : f32
// CHECK:           %[[VEPS:.*]] = arith.addf %[[VAR]], %{{.*}} : f32
// CHECK-NEXT:      %[[RSTD:.*]] = math.rsqrt %[[VEPS]] : f32
// CHECK:           scf.for
// CHECK:             %[[C:.*]] = arith.subf %{{.*}}, %[[MEAN]] : f32
// CHECK-NEXT:        %[[N:.*]] = arith.mulf %[[C]], %[[RSTD]] : f32
// CHECK-NEXT:        %[[GV:.*]] = memref.load %[[G]][%{{.*}}]
// CHECK-NEXT:        %[[NG:.*]] = arith.mulf %[[N]], %[[GV]] : f32
// CHECK-NEXT:        %[[BV:.*]] = memref.load %[[B]][%{{.*}}]
// CHECK-NEXT:        %[[OUT:.*]] = arith.addf %[[NG]], %[[BV]] : f32
// CHECK:             memref.store %[[OUT]], %[[Y]][%{{.*}}] : memref<?xf32>
// CHECK:           scf.reduce
// CHECK-NEXT:    } {tfc.kernel = "layer_norm"}
// CHECK-NOT:     scf.parallel
// CHECK:         llvm.call @tfc_rt_check_finite(

// GPU-LABEL: func.func @layer_norm_forward(
// GPU-NOT:     scf.parallel
// GPU:         gpu.launch blocks({{.*}}) in (%{{.*}} = %[[ROWS:.*]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[TX:[a-z0-9]+]], {{.*}}) in (%{{.*}} = %[[C128:.*]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) workgroup(%[[SCRATCH:.*]] : memref<16xf32, #gpu.address_space<workgroup>>) {
// GPU:           %[[PART:.*]] = scf.for %{{.*}} = %[[TX]] to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (f32) {
// GPU:             arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
// GPU:           %[[SH:.*]], %{{.*}} = gpu.shuffle  xor %[[PART]], %{{.*}}, %{{.*}} : f32
// GPU-NEXT:      arith.addf %[[PART]], %[[SH]] fastmath<reassoc> : f32
// GPU-COUNT-4:   gpu.shuffle  xor
// GPU:           scf.if
// GPU:             memref.store %{{.*}}, %[[SCRATCH]][%{{.*}}] : memref<16xf32, #gpu.address_space<workgroup>>
// GPU:           gpu.barrier
// GPU-COUNT-4:   memref.load %[[SCRATCH]]
// GPU:           gpu.barrier
// The variance: the same reduction again.
// GPU:           scf.for %{{.*}} = %[[TX]] to
// GPU-COUNT-5:   gpu.shuffle  xor
// GPU:           gpu.barrier
// GPU:           gpu.barrier
// GPU:           math.rsqrt
// GPU:           scf.for %{{.*}} = %[[TX]] to
// GPU:             memref.store
// GPU:           gpu.terminator
// GPU-NEXT:    } {tfc.kernel = "layer_norm"}
// GPU-NOT:     llvm.call @tfc_rt_check_finite
func.func @layer_norm(%params: tensor<?xf32> {tfc.role = "params"},
                      %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "layer_norm", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 16 : i64, tfc.vocab = 0 : i64} {
  %g = tfc.param %params {name = "g", offset = 0 : i64} : tensor<?xf32> -> tensor<8xf32>
  %b = tfc.param %params {name = "b", offset = 8 : i64} : tensor<?xf32> -> tensor<8xf32>
  %y = tfc.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// RMSNorm: no mean sweep, and no beta.
// CHECK-LABEL: func.func @rms_norm_forward(
// CHECK:         %[[G:.*]] = memref.subview
// CHECK:         scf.parallel
// CHECK:           %[[SQ:.*]] = scf.for {{.*}} -> (f32) {
// CHECK:             arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
// CHECK:           }
// CHECK-NOT:       scf.for {{.*}} -> (f32)
// CHECK:           math.rsqrt
// CHECK:           scf.for
// CHECK:             memref.load %[[G]][
// CHECK-NEXT:        %[[OUT:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NOT:         arith.addf
// CHECK:             memref.store %[[OUT]]
// CHECK:         } {tfc.kernel = "rms_norm"}
func.func @rms_norm(%params: tensor<?xf32> {tfc.role = "params"},
                    %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "rms_norm", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 8 : i64, tfc.vocab = 0 : i64} {
  %g = tfc.param %params {name = "g", offset = 0 : i64} : tensor<?xf32> -> tensor<8xf32>
  %y = tfc.rms_norm %x, %g {epsilon = 1.0e-6 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// As tfc.residual_norm_grad (kernels/NormGrad.h): blocks of 16 rows, each
// zeroing its partial dgamma / dbeta rows, then per row the statistics again,
// the two sums of g and g * xhat in one loop, and one sweep that writes dx
// and adds into the partials; a second loop adds the blocks' partials in
// block order. x and dy are read in the one pass.
// CHECK-LABEL: func.func @layer_norm_grad_forward(
// CHECK:         %[[BLOCKS:.*]] = arith.ceildivui %{{.*}}, %{{.*}} : index
// CHECK:         %[[PART:.*]] = memref.view %{{.*}}[%{{.*}}][%{{.*}}] : memref<?xi8> to memref<?xf32>
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[BLOCKS]]) step (%{{.*}}) {
// CHECK:           scf.for
// CHECK:             memref.store %{{.*}}, %[[PART]][
// CHECK:             memref.store %{{.*}}, %[[PART]][
// CHECK:           scf.for
// CHECK:             %[[MEANSUM:.*]] = scf.for {{.*}} -> (f32) {
// CHECK:             arith.mulf %[[MEANSUM]], %{{.*}} : f32
// CHECK:             scf.for {{.*}} -> (f32) {
// CHECK:             %[[RSTD:.*]] = math.rsqrt
// CHECK:             %[[SUMS:.*]]:2 = scf.for {{.*}} -> (f32, f32) {
// CHECK:               arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
// CHECK-NEXT:          arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
// CHECK:             arith.mulf %[[SUMS]]#0, %{{.*}} : f32
// CHECK:             arith.mulf %[[SUMS]]#1, %{{.*}} : f32
// CHECK:             scf.for
// CHECK:               %[[DX:.*]] = arith.mulf %[[RSTD]], %{{.*}} : f32
// CHECK-NEXT:          memref.store %[[DX]]
// CHECK:               memref.load %[[PART]][
// CHECK:               memref.store %{{.*}}, %[[PART]][
// CHECK:               memref.load %[[PART]][
// CHECK:               memref.store %{{.*}}, %[[PART]][
// CHECK:         } {tfc.kernel = "layer_norm_grad"}
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             memref.store
// CHECK:             memref.store
// CHECK:           scf.for %{{.*}} = %{{.*}} to %[[BLOCKS]] step
// CHECK:             scf.for
// CHECK-NOT:           fastmath
// CHECK:               memref.load %[[PART]][
// CHECK:               memref.load %[[PART]][
// CHECK:         } {tfc.kernel = "layer_norm_grad"}
func.func @layer_norm_grad(%params: tensor<?xf32> {tfc.role = "params"},
                           %x: tensor<?x?x8xf32> {tfc.role = "x"},
                           %dy: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"}, tensor<8xf32> {tfc.role = "y"},
        tensor<8xf32> {tfc.role = "y"})
    attributes {tfc.model = "layer_norm_grad", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 8 : i64, tfc.vocab = 0 : i64} {
  %g = tfc.param %params {name = "g", offset = 0 : i64} : tensor<?xf32> -> tensor<8xf32>
  %dx, %dg, %db = tfc.layer_norm_grad %x, %g, %dy {epsilon = 1.0e-5 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>)
  return %dx, %dg, %db : tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @rms_norm_grad_forward(
// CHECK:         memref.view
// CHECK:         scf.parallel
// CHECK:           scf.for {{.*}} -> (f32) {
// CHECK:           math.rsqrt
// CHECK:           scf.for {{.*}} -> (f32, f32) {
// CHECK:         } {tfc.kernel = "rms_norm_grad"}
// Only dgamma: one column sum.
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             memref.store
// CHECK-NEXT:      }
// CHECK:         } {tfc.kernel = "rms_norm_grad"}
func.func @rms_norm_grad(%params: tensor<?xf32> {tfc.role = "params"},
                         %x: tensor<?x?x8xf32> {tfc.role = "x"},
                         %dy: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"}, tensor<8xf32> {tfc.role = "y"})
    attributes {tfc.model = "rms_norm_grad", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 8 : i64, tfc.vocab = 0 : i64} {
  %g = tfc.param %params {name = "g", offset = 0 : i64} : tensor<?xf32> -> tensor<8xf32>
  %dx, %dg = tfc.rms_norm_grad %x, %g, %dy {epsilon = 1.0e-6 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x8xf32>, tensor<8xf32>)
  return %dx, %dg : tensor<?x?x8xf32>, tensor<8xf32>
}

// -----

// The add (alpha * x + f) stored as the kept sum while it is summed for the
// mean; no workspace.
// CHECK-LABEL: func.func @residual_norm_forward(
// CHECK-NOT:     memref.view
// CHECK:         scf.parallel
// CHECK:           %[[TOTAL:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK:             %[[R:.*]] = memref.load
// CHECK:             %[[RA:.*]] = arith.mulf %[[R]], %{{.*}} : f32
// CHECK-NEXT:        %[[F:.*]] = memref.load
// CHECK-NEXT:        %[[S:.*]] = arith.addf %[[RA]], %[[F]] : f32
// CHECK-NEXT:        memref.store %[[S]], %[[SUM:.*]][%{{.*}}] : memref<?xf32>
// CHECK-NEXT:        arith.addf %[[ACC]], %[[S]] fastmath<reassoc> : f32
// CHECK:           %[[MEAN:.*]] = arith.mulf %[[TOTAL]], %{{.*}} : f32
// CHECK:           scf.for {{.*}} -> (f32) {
// CHECK:             memref.load %[[SUM]][
// CHECK:           math.rsqrt
// CHECK:           scf.for
// CHECK:             memref.load %[[SUM]][
// CHECK:             memref.store
// CHECK:         } {tfc.kernel = "residual_norm"}
// CHECK-NOT:     scf.parallel
func.func @residual_norm(%params: tensor<?xf32> {tfc.role = "params"},
                         %x: tensor<?x?x8xf32> {tfc.role = "x"},
                         %f: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"}, tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "residual_norm", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 16 : i64, tfc.vocab = 0 : i64} {
  %g = tfc.param %params {name = "g", offset = 0 : i64} : tensor<?xf32> -> tensor<8xf32>
  %b = tfc.param %params {name = "b", offset = 8 : i64} : tensor<?xf32> -> tensor<8xf32>
  %s, %n = tfc.residual_norm #tfc.norm<layernorm> %x, %f, %g, %b {alpha = 2.0 : f64, epsilon = 1.0e-5 : f64} : tensor<?x?x8xf32>, tensor<8xf32>
  return %s, %n : tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// -----

// The sum is not kept (no use, no save): the output row holds it.
// CHECK-LABEL: func.func @residual_rms_norm_forward(
// CHECK:         builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// CHECK-NOT:     to memref<?xi8>
// CHECK:         builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// CHECK:         builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// CHECK:         %[[Y:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// CHECK-NOT:     memref.view
// CHECK:         scf.parallel
// CHECK:           scf.for {{.*}} -> (f32) {
// CHECK-NOT:         arith.mulf
// CHECK:             %[[S:.*]] = arith.addf
// CHECK-NEXT:        memref.store %[[S]], %[[Y]][
// CHECK:           scf.for {{.*}} -> (f32) {
// CHECK:             memref.load %[[Y]][
// CHECK:           math.rsqrt
// CHECK:           scf.for
// CHECK:             memref.load %[[Y]][
// CHECK:             memref.store %{{.*}}, %[[Y]][
// CHECK:         } {tfc.kernel = "residual_norm"}
func.func @residual_rms_norm(%params: tensor<?xf32> {tfc.role = "params"},
                             %x: tensor<?x?x8xf32> {tfc.role = "x"},
                             %f: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "residual_rms_norm", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 8 : i64, tfc.vocab = 0 : i64} {
  %g = tfc.param %params {name = "g", offset = 0 : i64} : tensor<?xf32> -> tensor<8xf32>
  %s, %n = tfc.residual_norm #tfc.norm<rmsnorm> %x, %f, %g {epsilon = 1.0e-5 : f64} : tensor<?x?x8xf32>, tensor<8xf32>
  return %n : tensor<?x?x8xf32>
}

// -----

// Blocks of 16 rows: each block zeroes its partial d_gamma / d_beta rows,
// then per row of the block the statistics, the two reassoc sums, and one
// sweep that writes d_sum (+ ds), alpha * d_sum and adds into the partials;
// a second loop adds the blocks' partials in block order.
// CHECK-LABEL: func.func @residual_norm_grad_forward(
// CHECK:         %[[BLOCKS:.*]] = arith.ceildivui %{{.*}}, %{{.*}} : index
// CHECK:         %[[PART:.*]] = memref.view %{{.*}}[%{{.*}}][%{{.*}}] : memref<?xi8> to memref<?xf32>
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[BLOCKS]]) step (%{{.*}}) {
// CHECK:           scf.for
// CHECK:             memref.store %{{.*}}, %[[PART]][
// CHECK:             memref.store %{{.*}}, %[[PART]][
// CHECK:           scf.for %{{.*}} = %[[FIRST:.*]] to %[[LAST:.*]] step
// CHECK:             scf.for {{.*}} -> (f32) {
// CHECK:             scf.for {{.*}} -> (f32) {
// CHECK:             %[[RSTD:.*]] = math.rsqrt
// CHECK:             scf.for {{.*}} -> (f32, f32) {
// CHECK:             scf.for
// CHECK:               %[[DX:.*]] = arith.mulf %[[RSTD]], %{{.*}} : f32
// CHECK-NEXT:          %[[DOTHER:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<?xf32>
// CHECK-NEXT:          %[[DSUM:.*]] = arith.addf %[[DOTHER]], %[[DX]] : f32
// CHECK-NEXT:          memref.store %[[DSUM]], %{{.*}}[%{{.*}}] : memref<?xf32>
// CHECK:               %[[DRES:.*]] = arith.mulf %[[DSUM]], %{{.*}} : f32
// CHECK-NEXT:          memref.store %[[DRES]], %{{.*}}[%{{.*}}] : memref<?xf32>
// CHECK:               memref.load %[[PART]][
// CHECK:               memref.store %{{.*}}, %[[PART]][
// CHECK:               memref.load %[[PART]][
// CHECK:               memref.store %{{.*}}, %[[PART]][
// CHECK:         } {tfc.kernel = "residual_norm_grad"}
// CHECK:         scf.parallel
// CHECK:           scf.for %{{.*}} = %{{.*}} to %[[BLOCKS]] step
// CHECK:             scf.for
// CHECK:               memref.load %[[PART]][
// CHECK:               memref.load %[[PART]][
// CHECK:         } {tfc.kernel = "residual_norm_grad"}
func.func @residual_norm_grad(%params: tensor<?xf32> {tfc.role = "params"},
                              %s: tensor<?x?x8xf32> {tfc.role = "x"},
                              %dy: tensor<?x?x8xf32> {tfc.role = "x"},
                              %ds: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"}, tensor<?x?x8xf32> {tfc.role = "y"},
        tensor<8xf32> {tfc.role = "y"}, tensor<8xf32> {tfc.role = "y"})
    attributes {tfc.model = "residual_norm_grad", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 8 : i64, tfc.vocab = 0 : i64} {
  %g = tfc.param %params {name = "g", offset = 0 : i64} : tensor<?xf32> -> tensor<8xf32>
  %a:4 = tfc.residual_norm_grad #tfc.norm<layernorm> %s, %g, %dy, %ds {alpha = 2.0 : f64, epsilon = 1.0e-5 : f64} : tensor<?x?x8xf32>, tensor<8xf32> residual_grad tensor<?x?x8xf32> beta_grad tensor<8xf32>
  return %a#0, %a#1, %a#2, %a#3 : tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Grouped: each row of 8 is 2 rows of 4 (QK-norm on the projection's rows),
// twice the parallel rows, sums over 4 columns, the mean by 1/4.
// CHECK-LABEL: func.func @rms_norm_groups_forward(
// CHECK:         %[[ROWS:.*]] = arith.muli %{{.*}}, %c2 : index
// CHECK:         scf.parallel (%[[R:.*]]) = (%{{.*}}) to (%[[ROWS]])
// CHECK-NEXT:      arith.muli %[[R]], %c4
// CHECK:           scf.for {{.*}} to %c4{{.*}} -> (f32) {
// CHECK:           arith.mulf %{{.*}}, %cst : f32
// CHECK:         } {tfc.kernel = "rms_norm"}
func.func @rms_norm_groups(%params: tensor<?xf32> {tfc.role = "params"},
                           %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "rms_norm_groups", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 4 : i64, tfc.vocab = 0 : i64} {
  %g = tfc.param %params {name = "g", offset = 0 : i64} : tensor<?xf32> -> tensor<4xf32>
  %y = tfc.rms_norm %x, %g {epsilon = 1.0e-6 : f64, groups = 2 : i64} : (tensor<?x?x8xf32>, tensor<4xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}
