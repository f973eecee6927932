// RUN: tfc-opt %s -tfc-lower-to-loops=vector-width=8 --split-input-file | FileCheck %s
// RUN: tfc-opt %s -tfc-lower-to-loops --split-input-file | FileCheck %s --check-prefix=VL16
// The structure of every matmul the lowering emits (MatmulLowering.cpp and
// the fused linears of FusedLinearLowering.cpp): B packed into zero-padded
// panels of NR = 2 * VL columns by one parallel loop, then one parallel
// iteration per MR x NR tile of C whose k loop carries MR * NR / VL vector
// accumulators (6 x 16 with VL = 8: 12 accumulators, 2 panel loads, 6
// broadcasts, 12 FMAs per k), and an epilogue that stores each of the MR rows
// under an scf.if (row tails); column tails use masks. Both parallel loops
// carry the op's name as tfc.kernel. A forward problem of at most MR rows
// (a decoding step) skips the packing: its one row block reads B in place.

// A full panel (n = 16): plain vector loads and stores, no masks; the bias
// is two vector loads added to every row of the tile.
// CHECK-LABEL: func.func @linear_bias_forward(
// CHECK:         %[[P:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// CHECK:         %[[WS:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi8>
// CHECK:         %[[X:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// CHECK:         %[[Y:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// The packed panels are the only workspace buffer.
// CHECK:         %[[PACKED:.*]] = memref.view %[[WS]][%{{.*}}][%{{.*}}] : memref<?xi8> to memref<?xf32>
// CHECK-NOT:     memref.view
// CHECK:         %[[W:.*]] = memref.subview %[[P]][%{{.*}}] [128] [1]
// CHECK:         %[[B:.*]] = memref.subview %[[P]][%{{.*}}] [16] [1]
// At most MR = 6 rows (decoding: a row per sequence) the tiles read W in
// place, no packing; more rows take the packed path below.
// CHECK:         %[[FEW:.*]] = arith.cmpi ule, %{{.*}}, %{{.*}} : index
// CHECK:         scf.if %[[FEW]] {
// CHECK:           scf.parallel
// CHECK-NOT:         memref.view
// CHECK:             scf.for {{.*}} -> (vector<8xf32>
// CHECK:               vector.load %[[W]][%{{.*}}] : memref<128xf32, strided<[1], offset: ?>>, vector<8xf32>
// CHECK:           } {tfc.kernel = "linear"}
// CHECK-NEXT:    } else {
// Packing: per k, two vector loads of W's row into the panel.
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK-NOT:       vector.maskedload
// CHECK:           scf.for
// CHECK:             %[[R0:.*]] = vector.load %[[W]][%{{.*}}] : memref<128xf32, strided<[1], offset: ?>>, vector<8xf32>
// CHECK:             vector.store %[[R0]], %[[PACKED]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK:             %[[R1:.*]] = vector.load %[[W]][%{{.*}}] : memref<128xf32, strided<[1], offset: ?>>, vector<8xf32>
// CHECK:             vector.store %[[R1]], %[[PACKED]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.reduce
// CHECK-NEXT:    } {tfc.kernel = "linear"}
// The tiles (ceil(rows / 6) per panel, counted with the plan's sizes); A
// rows clamped to the last row. Before the k loop, a write prefetch of the
// line of each of the tile's 6 rows of y that each of its 2 vectors stores
// (rows and columns clamped to the last).
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%{{.*}}) {
// CHECK-COUNT-12:  memref.prefetch %[[Y]][%{{.*}}], write, locality<3>, data : memref<?xf32>
// CHECK-NOT:       memref.prefetch
// CHECK-COUNT-6:   arith.minsi
// CHECK:           %[[ACC:.*]]:12 = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK:             %[[B0:.*]] = vector.load %[[PACKED]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK:             %[[B1:.*]] = vector.load %[[PACKED]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK:             %[[A0:.*]] = memref.load %[[X]][%{{.*}}] : memref<?xf32>
// CHECK-NEXT:        %[[AV0:.*]] = vector.broadcast %[[A0]] : f32 to vector<8xf32>
// CHECK-NEXT:        vector.fma %[[AV0]], %[[B0]], %{{.*}} : vector<8xf32>
// CHECK-NEXT:        vector.fma %[[AV0]], %[[B1]], %{{.*}} : vector<8xf32>
// CHECK-COUNT-10:    vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-NOT:         vector.fma
// CHECK:             scf.yield {{.*}} : vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>
// CHECK-NEXT:      }
// CHECK:           %[[BIAS0:.*]] = vector.load %[[B]][%{{.*}}] : memref<16xf32, strided<[1], offset: ?>>, vector<8xf32>
// CHECK-NEXT:      %[[BIAS1:.*]] = vector.load %[[B]][%{{.*}}] : memref<16xf32, strided<[1], offset: ?>>, vector<8xf32>
// CHECK-NEXT:      %[[T0:.*]] = arith.addf %[[ACC]]#0, %[[BIAS0]] : vector<8xf32>
// CHECK-NEXT:      %[[T1:.*]] = arith.addf %[[ACC]]#1, %[[BIAS1]] : vector<8xf32>
// CHECK-NOT:       vector.maskedstore
// CHECK:           scf.if %{{.*}} {
// CHECK:             vector.store %[[T0]], %[[Y]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK:             vector.store %[[T1]], %[[Y]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK-NEXT:      }
// CHECK-COUNT-5:   scf.if %{{.*}} {
// CHECK-NOT:       vector.maskedstore
// CHECK:           scf.reduce
// CHECK-NEXT:    } {tfc.kernel = "linear"}
// The numerical guard on y.
// CHECK:         llvm.call @tfc_rt_check_finite(
// CHECK-LABEL: func.func @linear_bias_workspace_size(
// CHECK-NOT:     memref.view

// With the default vector width (16, AVX-512) the tile is 8 x 32: 16
// accumulators and 16 FMAs per k.
// VL16-LABEL: func.func @linear_bias_forward(
// VL16:         scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// VL16-COUNT-2:   vector.load %{{.*}} : memref<?xf32>, vector<16xf32>
// VL16-COUNT-16:  vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<16xf32>
// VL16-NOT:       vector.fma
// VL16:           scf.yield
// Bias width 16 < NR = 32: masked bias loads and masked stores.
// VL16:         vector.maskedload
// VL16:         vector.maskedstore
// VL16:         } {tfc.kernel = "linear"}
// A linear layer with a bias, out width 16 = one full panel at vector width 8.
func.func @linear_bias(%params: tensor<?xf32> {tfc.role = "params"},
                       %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x16xf32> {tfc.role = "y"})
    attributes {tfc.model = "linear_bias", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 144 : i64, tfc.vocab = 0 : i64} {
  %w = tfc.param %params {name = "w", offset = 0 : i64} : tensor<?xf32> -> tensor<8x16xf32>
  %b = tfc.param %params {name = "b", offset = 128 : i64} : tensor<?xf32> -> tensor<16xf32>
  %y = tfc.linear %x, %w, %b : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}

// -----

// n = 12, not a multiple of NR = 16: lane masks for the column tail, in the
// packing (masked loads, zero-filled) and in the stores.
// CHECK-LABEL: func.func @linear_tail_forward(
// CHECK:         %[[PACKED:.*]] = memref.view
// CHECK:         %[[W:.*]] = memref.subview
// CHECK:         scf.if %{{.*}} {
// CHECK:           scf.parallel
// CHECK:             scf.for {{.*}} -> (vector<8xf32>
// CHECK:               vector.maskedload %[[W]]
// CHECK:           } {tfc.kernel = "linear"}
// CHECK-NEXT:    } else {
// CHECK:         scf.parallel
// CHECK:           %[[M0:.*]] = vector.create_mask %{{.*}} : vector<8xi1>
// CHECK:           %[[M1:.*]] = vector.create_mask %{{.*}} : vector<8xi1>
// CHECK:           scf.for
// CHECK:             %[[R0:.*]] = vector.maskedload %[[W]][%{{.*}}], %[[M0]], %{{.*}} : memref<96xf32, strided<[1], offset: ?>>, vector<8xi1>, vector<8xf32> into vector<8xf32>
// CHECK:             vector.store %[[R0]], %[[PACKED]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK:             vector.maskedload %[[W]][%{{.*}}], %[[M1]], %{{.*}}
// CHECK:         } {tfc.kernel = "linear"}
// CHECK:         scf.parallel
// CHECK:           %[[ACC:.*]]:12 = scf.for
// CHECK-COUNT-12:    vector.fma
// CHECK:           }
// CHECK:           %[[S0:.*]] = vector.create_mask %{{.*}} : vector<8xi1>
// CHECK:           %[[S1:.*]] = vector.create_mask %{{.*}} : vector<8xi1>
// CHECK:           scf.if
// CHECK:             vector.maskedstore %{{.*}}[%{{.*}}], %[[S0]], %[[ACC]]#0 : memref<?xf32>, vector<8xi1>, vector<8xf32>
// CHECK:             vector.maskedstore %{{.*}}[%{{.*}}], %[[S1]], %[[ACC]]#1 : memref<?xf32>, vector<8xi1>, vector<8xf32>
// CHECK-COUNT-5:   scf.if
// CHECK-NOT:       vector.store
// CHECK:         } {tfc.kernel = "linear"}
func.func @linear_tail(%params: tensor<?xf32> {tfc.role = "params"},
                       %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x12xf32> {tfc.role = "y"})
    attributes {tfc.model = "linear_tail", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 96 : i64, tfc.vocab = 0 : i64} {
  %w = tfc.param %params {name = "w", offset = 0 : i64} : tensor<?xf32> -> tensor<8x12xf32>
  %y = tfc.linear %x, %w : (tensor<?x?x8xf32>, tensor<8x12xf32>) -> tensor<?x?x12xf32>
  return %y : tensor<?x?x12xf32>
}

// -----

// A tied (transposed) weight has a column stride of 8 and its k contiguous:
// each block of 8 panel rows is 8 vector loads along k, one per column
// (columns past n read the last one), transposed by 24 shuffles, zeroed past
// n and stored row by row; the rows past the last whole block (none here)
// go element by element, columns past n clamped and zeroed, then one
// vector store.
// CHECK-LABEL: func.func @linear_tied_forward(
// CHECK:         %[[PACKED:.*]] = memref.view
// CHECK:         %[[E:.*]] = memref.subview
// CHECK:         scf.if %{{.*}} {
// CHECK:           scf.parallel
// CHECK:             scf.for {{.*}} -> (vector<8xf32>
// CHECK:               memref.load %[[E]]
// CHECK:           } {tfc.kernel = "linear"}
// CHECK-NEXT:    } else {
// CHECK:         scf.parallel
// CHECK:           %[[MASK:.*]] = vector.create_mask %{{.*}} : vector<8xi1>
// CHECK:           scf.for
// CHECK-COUNT-8:     vector.load %[[E]][%{{.*}}] : memref<96xf32, strided<[1], offset: ?>>, vector<8xf32>
// CHECK-COUNT-24:    vector.shuffle
// CHECK:             %[[ROW0:.*]] = arith.select %[[MASK]], %{{.*}}, %{{.*}} : vector<8xi1>, vector<8xf32>
// CHECK:             vector.store %[[ROW0]], %[[PACKED]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK:           scf.for
// CHECK-NOT:         vector.load
// CHECK-NOT:         vector.maskedload
// CHECK:             %[[L:.*]] = memref.load %[[E]][%{{.*}}] : memref<96xf32, strided<[1], offset: ?>>
// CHECK-NEXT:        %[[IN:.*]] = arith.cmpi slt, %{{.*}}, %{{.*}} : index
// CHECK-NEXT:        arith.select %[[IN]], %[[L]], %{{.*}} : f32
// CHECK:             %[[ROW:.*]] = vector.from_elements %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:             vector.store %[[ROW]], %[[PACKED]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK:             vector.from_elements
// CHECK:           scf.reduce
// CHECK-NEXT:    } {tfc.kernel = "linear"}
// CHECK:         scf.parallel
// CHECK:           scf.for {{.*}} -> (vector<8xf32>
// CHECK:           vector.maskedstore
// CHECK:         } {tfc.kernel = "linear"}
func.func @linear_tied(%params: tensor<?xf32> {tfc.role = "params"},
                       %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x12xf32> {tfc.role = "y"})
    attributes {tfc.model = "linear_tied", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 96 : i64, tfc.vocab = 0 : i64} {
  %e = tfc.param %params {name = "e", offset = 0 : i64} : tensor<?xf32> -> tensor<12x8xf32>
  %y = tfc.linear %x, %e {transpose_weight} : (tensor<?x?x8xf32>, tensor<12x8xf32>) -> tensor<?x?x12xf32>
  return %y : tensor<?x?x12xf32>
}

// -----

// Two batched matmuls over batch * heads: S = A B^T, a pack (K read
// transposed, element by element) and a tile loop, its panels the only
// workspace view; and T = A^T B, whose B rows are read in place (masked:
// n = 4; a transposed A: a weight gradient's shape).
// CHECK-LABEL: func.func @batch_matmul_forward(
// CHECK:         %[[P1:.*]] = memref.view
// CHECK-NOT:     memref.view
// CHECK:         scf.parallel
// CHECK:           vector.from_elements
// CHECK:           vector.store %{{.*}}, %[[P1]][
// CHECK:         } {tfc.kernel = "batch_matmul"}
// CHECK:         scf.parallel
// CHECK:           scf.for {{.*}} -> (vector<8xf32>
// CHECK:             vector.load %[[P1]][
// CHECK-COUNT-12:    vector.fma
// CHECK:           vector.maskedstore
// CHECK:         } {tfc.kernel = "batch_matmul"}
// CHECK:         scf.parallel
// CHECK:           scf.for {{.*}} -> (vector<8xf32>
// CHECK:             vector.maskedload
// CHECK-COUNT-12:    vector.fma
// CHECK:           vector.maskedstore
// CHECK:         } {tfc.kernel = "batch_matmul"}
// CHECK:         llvm.call @tfc_rt_check_finite(
// CHECK:         llvm.call @tfc_rt_check_finite(
func.func @batch_matmul(%params: tensor<?xf32> {tfc.role = "params"},
                        %a: tensor<?x2x?x4xf32> {tfc.role = "x"},
                        %b: tensor<?x2x?x4xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x?xf32> {tfc.role = "y"}, tensor<?x2x4x4xf32> {tfc.role = "y"})
    attributes {tfc.model = "batch_matmul", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %s = tfc.batch_matmul %a, %b {transpose_b} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %t = tfc.batch_matmul %a, %b {transpose_a} : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x4x4xf32>
  return %s, %t : tensor<?x2x?x?xf32>, tensor<?x2x4x4xf32>
}

// -----

// dW = x^T dy contracts over the rows (the k loop runs to batch * seq) and
// the bias gradient is a column sum (reduce_rows: one parallel iteration per
// chunk of 32 columns, rows outside, columns inside, in row order).
// A large dW [512, 320] (640 KiB) packs both operands once per matmul: dy
// into panels (its rows read in place would put a tile's every k a whole
// row of dy apart: GPT-2's fc1 dW took 1.6x as long) and A = x^T (per k, a
// tile's MR rows of A, MR contiguous elements of a row of x), eight row
// blocks per parallel iteration, k by k across them (runs of 8 * MR floats
// of each row of x), into slices of 1,024 k. The tiles then run K-blocked:
// the blocks of k in order (an scf.for around the tiles' parallel loop),
// each tile's sums over its block from zero, added to dW so far after the
// loop (none in the first block: a select). m = 512 is static: no
// matrix-vector branch.
// CHECK-LABEL: func.func @weight_grad_forward(
// CHECK:         %[[PANELS:.*]] = memref.view
// CHECK:         %[[APACKED:.*]] = memref.view
// CHECK-NOT:     memref.view
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             %[[DYROW:.*]] = vector.load
// CHECK:             vector.store %[[DYROW]], %[[PANELS]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK:         } {tfc.kernel = "linear_weight_grad"}
// CHECK:         scf.parallel
// CHECK-COUNT-8:   vector.create_mask %{{.*}} : vector<6xi1>
// CHECK:           scf.for
// CHECK-COUNT-8:     vector.store %{{.*}}, %[[APACKED]][%{{.*}}] : memref<?xf32>, vector<6xf32>
// CHECK-NOT:         vector.store
// CHECK:         } {tfc.kernel = "linear_weight_grad"}
// CHECK-NOT:     scf.parallel
// CHECK:         scf.for
// CHECK:           scf.parallel
// CHECK:             %[[SUMS:.*]]:12 = scf.for {{.*}} -> (vector<8xf32>
// CHECK:               vector.load %[[PANELS]][
// CHECK:               memref.load %[[APACKED]]
// CHECK-COUNT-12:      vector.fma
// CHECK:             }
// CHECK:             %[[FIRST:.*]] = arith.cmpi eq
// CHECK:             %[[SOFAR:.*]] = vector.load
// CHECK:             %[[ADDED:.*]] = arith.addf %[[SOFAR]], %[[SUMS]]#0 : vector<8xf32>
// CHECK:             arith.select %[[FIRST]], %[[SUMS]]#0, %[[ADDED]] : vector<8xf32>
// CHECK:           } {tfc.kernel = "linear_weight_grad"}
// A small dW [8, 40] (three panels of 16) runs K-blocked: the blocks of k
// in order (an scf.for around the tiles' parallel loop), each tile starting
// from dW so far (0 in the first block: a select), A = x^T broadcast from x
// in place and dy's rows read in place (40 columns: masked); nothing packed.
// Each k prefetches x's and dy's rows 16 tokens ahead (clamped to the last):
// one line of x, one of dy per vector of the tile's row.
// CHECK:         scf.for
// CHECK:           scf.parallel
// CHECK-NOT:         %[[APACKED]]
// CHECK-NOT:         %[[PANELS]]
// CHECK:             arith.select
// CHECK:             scf.for {{.*}} -> (vector<8xf32>
// CHECK:               %[[AHEAD:.*]] = arith.addi %{{.*}}, %c16{{.*}} : index
// CHECK:               arith.minsi %[[AHEAD]],
// CHECK-COUNT-3:       memref.prefetch %{{.*}}[%{{.*}}], read, locality<3>, data
// CHECK-NOT:           memref.prefetch
// CHECK:               vector.maskedload
// CHECK-COUNT-12:      vector.fma
// CHECK:             vector.maskedstore
// CHECK:           } {tfc.kernel = "linear_weight_grad"}
// The transposed weight gradient [40, 8]: n = 8 (masked), one panel: all of
// k at once, A = dy^T broadcast from dy and B = x read in place.
// CHECK-NOT:     %[[APACKED]]
// CHECK:         scf.parallel
// CHECK-NOT:       arith.select
// CHECK:           scf.for {{.*}} -> (vector<8xf32>
// CHECK:             vector.maskedload
// CHECK:             memref.load
// CHECK-COUNT-2:     vector.fma
// CHECK:           vector.maskedstore
// CHECK:         } {tfc.kernel = "linear_weight_grad"}
// CHECK-NOT:     %[[APACKED]]
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             memref.store
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK:               %[[V:.*]] = memref.load
// CHECK-NEXT:          %[[OLD:.*]] = memref.load
// CHECK:               %[[SUM:.*]] = arith.addf %[[OLD]], %[[V]] : f32
// CHECK-NEXT:          memref.store %[[SUM]]
// CHECK:         } {tfc.kernel = "reduce_rows"}
func.func @weight_grad(%params: tensor<?xf32> {tfc.role = "params"},
                       %xl: tensor<?x?x512xf32> {tfc.role = "x"},
                       %dyl: tensor<?x?x320xf32> {tfc.role = "x"},
                       %x: tensor<?x?x8xf32> {tfc.role = "x"},
                       %dy: tensor<?x?x40xf32> {tfc.role = "x"})
    -> (tensor<512x320xf32> {tfc.role = "y"}, tensor<8x40xf32> {tfc.role = "y"},
        tensor<40x8xf32> {tfc.role = "y"}, tensor<40xf32> {tfc.role = "y"})
    attributes {tfc.model = "weight_grad", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %dwl = tfc.linear_weight_grad %xl, %dyl : (tensor<?x?x512xf32>, tensor<?x?x320xf32>) -> tensor<512x320xf32>
  %dw = tfc.linear_weight_grad %x, %dy : (tensor<?x?x8xf32>, tensor<?x?x40xf32>) -> tensor<8x40xf32>
  %dwt = tfc.linear_weight_grad %x, %dy {transpose_weight} : (tensor<?x?x8xf32>, tensor<?x?x40xf32>) -> tensor<40x8xf32>
  %db = tfc.reduce_rows %dy : tensor<?x?x40xf32> -> tensor<40xf32>
  return %dwl, %dw, %dwt, %db : tensor<512x320xf32>, tensor<8x40xf32>, tensor<40x8xf32>, tensor<40xf32>
}

// -----

// The activation epilogue on the register tile: bias, then the saved
// pre-activation (a per-slot workspace view) and gelu(pre) stored per row.
// CHECK-LABEL: func.func @linear_act_forward(
// CHECK:         %[[PACKED:.*]] = memref.view
// CHECK:         %[[PRE:.*]] = memref.view
// CHECK:         } {tfc.kernel = "linear_act"}
// CHECK:         scf.parallel
// CHECK:           %[[ACC:.*]]:12 = scf.for
// CHECK:           %[[BIAS0:.*]] = vector.load %{{.*}} : memref<16xf32, strided<[1], offset: ?>>, vector<8xf32>
// CHECK:           %[[T0:.*]] = arith.addf %[[ACC]]#0, %[[BIAS0]] : vector<8xf32>
// CHECK:           %[[SCALED:.*]] = arith.mulf %[[T0]], %{{.*}} : vector<8xf32>
// CHECK-NEXT:      %[[ERF:.*]] = math.erf %[[SCALED]] : vector<8xf32>
// CHECK:           %[[ONE_ERF:.*]] = arith.addf %[[ERF]], %{{.*}} : vector<8xf32>
// CHECK:           %[[HALF:.*]] = arith.mulf %[[T0]], %{{.*}} : vector<8xf32>
// CHECK-NEXT:      %[[G0:.*]] = arith.mulf %[[HALF]], %[[ONE_ERF]] : vector<8xf32>
// CHECK-COUNT-11:  math.erf
// CHECK:           scf.if
// CHECK:             vector.store %[[T0]], %[[PRE]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK:             vector.store %[[G0]], %{{.*}}[%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK:         } {tfc.kernel = "linear_act"}
func.func @linear_act(%params: tensor<?xf32> {tfc.role = "params"},
                      %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x16xf32> {tfc.role = "y"})
    attributes {tfc.model = "linear_act", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 144 : i64, tfc.vocab = 0 : i64} {
  %w = tfc.param %params {name = "w", offset = 0 : i64} : tensor<?xf32> -> tensor<8x16xf32>
  %b = tfc.param %params {name = "b", offset = 128 : i64} : tensor<?xf32> -> tensor<16xf32>
  %y, %pre = tfc.linear_act #tfc.activation<gelu> %x, %w, %b {tfc.save_results = array<i64: -1, 0>} : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>)
  return %y : tensor<?x?x16xf32>
}

// -----

// Two parts share the panels: the pack and the epilogue pick a part's
// weight and output by an scf.index_switch on the panel.
// CHECK-LABEL: func.func @merged_linear_forward(
// CHECK:         %[[WQ:.*]] = memref.subview
// CHECK:         %[[WK:.*]] = memref.subview
// CHECK:         scf.parallel
// CHECK:           scf.index_switch
// CHECK-NEXT:      case 0 {
// CHECK:             scf.for
// CHECK:               vector.load %[[WQ]][
// CHECK:           default {
// CHECK:             scf.for
// CHECK:               vector.load %[[WK]][
// CHECK:         } {tfc.kernel = "merged_linear"}
// CHECK:         scf.parallel
// CHECK:           %[[ACC:.*]]:12 = scf.for
// CHECK-COUNT-12:    vector.fma
// CHECK:           scf.index_switch
// CHECK-NEXT:      case 0 {
// CHECK:             vector.store %[[ACC]]#0, %[[Q:.*]][%{{.*}}]
// CHECK:           default {
// CHECK-NOT:         vector.store %{{.*}}, %[[Q]][
// CHECK:             vector.store %[[ACC]]#0, %{{.*}}[%{{.*}}]
// CHECK:         } {tfc.kernel = "merged_linear"}
func.func @merged_linear(%params: tensor<?xf32> {tfc.role = "params"},
                         %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x16xf32> {tfc.role = "y"}, tensor<?x?x16xf32> {tfc.role = "y"})
    attributes {tfc.model = "merged_linear", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 256 : i64, tfc.vocab = 0 : i64} {
  %wq = tfc.param %params {name = "wq", offset = 0 : i64} : tensor<?xf32> -> tensor<8x16xf32>
  %wk = tfc.param %params {name = "wk", offset = 128 : i64} : tensor<?xf32> -> tensor<8x16xf32>
  %q, %k = tfc.merged_linear %x weights(%wq, %wk) : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>)
  return %q, %k : tensor<?x?x16xf32>, tensor<?x?x16xf32>
}

// -----

// A head-split part (Q as [b, 2, s, 8]): its tiles store each row of the
// output into its sequence's rows of each head. A tile's first row finds
// its sequence by one division by s, for the prefetches before the k loop
// and again for the stores; the next rows are a row stride apart when the
// tile's rows lie in one sequence, else step from it (to the next
// sequence's first row at s), so no row divides. The columns divide by
// the head width, a constant. (The few-rows path, first; the packed
// path's tiles have the same epilogue.)
// CHECK-LABEL: func.func @merged_heads_forward(
// CHECK:         scf.index_switch
// CHECK-NEXT:    case 0 {
// CHECK:           arith.divui %{{.*}}, %[[S:.*]] : index
// CHECK-NOT:       arith.divui %{{.*}}, %[[S]] : index
// CHECK:           %[[ACC:.*]]:12 = scf.for
// CHECK:           arith.divui %{{.*}}, %[[S]] : index
// CHECK-NOT:       arith.divui %{{.*}}, %[[S]] : index
// CHECK:           arith.cmpi eq, %{{.*}}, %[[S]] : index
// CHECK-NOT:       arith.divui %{{.*}}, %[[S]] : index
// CHECK:           arith.divui %{{.*}}, %c8{{.*}} : index
// CHECK-NOT:       arith.divui %{{.*}}, %[[S]] : index
// CHECK:           vector.store %[[ACC]]#0, %{{.*}}[%{{.*}}]
// CHECK-NOT:       arith.divui %{{.*}}, %[[S]] : index
// CHECK:         default {
func.func @merged_heads(%params: tensor<?xf32> {tfc.role = "params"},
                        %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x8xf32> {tfc.role = "y"}, tensor<?x?x16xf32> {tfc.role = "y"})
    attributes {tfc.model = "merged_heads", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 256 : i64, tfc.vocab = 0 : i64} {
  %wq = tfc.param %params {name = "wq", offset = 0 : i64} : tensor<?xf32> -> tensor<8x16xf32>
  %wk = tfc.param %params {name = "wk", offset = 128 : i64} : tensor<?xf32> -> tensor<8x16xf32>
  %q, %k = tfc.merged_linear %x weights(%wq, %wk) : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x?x16xf32>)
  return %q, %k : tensor<?x2x?x8xf32>, tensor<?x?x16xf32>
}

// -----

// A gated pair: each panel holds VL columns of gate and VL of up; the
// epilogue stores silu(gate) * up, and neither pre-activation (no save).
// CHECK-LABEL: func.func @glu_linear_forward(
// CHECK:         %[[WG:.*]] = memref.subview
// CHECK:         %[[WU:.*]] = memref.subview
// CHECK:         scf.parallel
// CHECK-NOT:       scf.index_switch
// CHECK:           scf.for
// CHECK:             vector.load %[[WG]][
// CHECK:             vector.load %[[WU]][
// CHECK:         } {tfc.kernel = "glu_linear"}
// CHECK:         scf.parallel
// CHECK:           %[[ACC:.*]]:12 = scf.for
// CHECK-COUNT-12:    vector.fma
// CHECK:           }
// CHECK:           math.exp
// CHECK:           %[[SIG:.*]] = arith.divf %[[ACC]]#0, %{{.*}} : vector<8xf32>
// CHECK-NEXT:      %[[OUT:.*]] = arith.mulf %[[SIG]], %[[ACC]]#1 : vector<8xf32>
// CHECK:           scf.if
// CHECK-NEXT:        arith.muli
// CHECK:             vector.store %[[OUT]], %{{.*}}[%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK-NOT:         vector.store
// CHECK:           }
// CHECK:         } {tfc.kernel = "glu_linear"}
func.func @glu_linear(%params: tensor<?xf32> {tfc.role = "params"},
                      %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x16xf32> {tfc.role = "y"})
    attributes {tfc.model = "glu_linear", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 256 : i64, tfc.vocab = 0 : i64} {
  %wg = tfc.param %params {name = "wg", offset = 0 : i64} : tensor<?xf32> -> tensor<8x16xf32>
  %wu = tfc.param %params {name = "wu", offset = 128 : i64} : tensor<?xf32> -> tensor<8x16xf32>
  %y, %gate, %up = tfc.glu_linear #tfc.activation<silu> %x, %wg, %wu : (tensor<?x?x8xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>)
  return %y : tensor<?x?x16xf32>
}

// -----

// dx = dq Wq^T + dk Wk^T: two segments, each a k loop in the pack (W read
// transposed) and in the tile, the second k loop carrying on the first's
// accumulators.
// CHECK-LABEL: func.func @merged_input_grad_forward(
// CHECK:         %[[WQ:.*]] = memref.subview
// CHECK:         %[[WK:.*]] = memref.subview
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             memref.load %[[WQ]][
// CHECK:           scf.for
// CHECK:             memref.load %[[WK]][
// CHECK:         } {tfc.kernel = "merged_input_grad"}
// CHECK:         scf.parallel
// CHECK:           %[[ACC:.*]]:12 = scf.for {{.*}} iter_args(%{{.*}} = %[[ZERO:[a-z0-9_]+]], {{.*}}) -> (vector<8xf32>
// CHECK-COUNT-12:    vector.fma
// CHECK:           %[[ACC2:.*]]:12 = scf.for {{.*}} iter_args(%{{.*}} = %[[ACC]]#0, %{{.*}} = %[[ACC]]#1, {{.*}}) -> (vector<8xf32>
// CHECK-COUNT-12:    vector.fma
// CHECK:           vector.maskedstore %{{.*}}, %{{.*}}, %[[ACC2]]#0
// CHECK:         } {tfc.kernel = "merged_input_grad"}
func.func @merged_input_grad(%params: tensor<?xf32> {tfc.role = "params"},
                             %dq: tensor<?x?x16xf32> {tfc.role = "x"},
                             %dk: tensor<?x?x16xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "merged_input_grad", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 256 : i64, tfc.vocab = 0 : i64} {
  %wq = tfc.param %params {name = "wq", offset = 0 : i64} : tensor<?xf32> -> tensor<8x16xf32>
  %wk = tfc.param %params {name = "wk", offset = 128 : i64} : tensor<?xf32> -> tensor<8x16xf32>
  %dx = tfc.merged_input_grad grads(%dq, %dk) weights(%wq, %wk) : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<?x?x8xf32>
  return %dx : tensor<?x?x8xf32>
}

// -----

// A weight gradient reads dy where it is (row-major: its rows are the
// panels' rows already, so packing it only copied it). dW being small, the
// tiles run K-blocked (no workspace at all): per block of k, one code path
// per part, dW so far (a select: 0 in the first block), dy's rows in place.
// The first row block's tile of each panel also sums the rows of dy it
// loads into the bias gradient (db so far, 0 in the first block; stored
// after the block's k loop); the other tiles run the plain k loop. No pass
// over dy of its own.
// CHECK-LABEL: func.func @merged_weight_grad_forward(
// CHECK-NOT:     memref.view
// CHECK-NOT:     tfc.kernel = "merged_weight_grad"
// CHECK:         scf.for
// CHECK:           scf.parallel
// CHECK:             scf.index_switch
// CHECK-NEXT:        case 0 {
// CHECK:               arith.select
// CHECK:               %[[FIRST:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK:               %[[HERE:.*]] = arith.cmpi eq, %{{.*}}, %{{.*}} : index
// CHECK-NEXT:          %{{.*}}:12 = scf.if %[[HERE]] -> (vector<8xf32>
// CHECK:                 %[[DB0:.*]] = arith.select %[[FIRST]], %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:                 %[[DB1:.*]] = arith.select %[[FIRST]], %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:                 %[[ACC:.*]]:14 = scf.for {{.*}} iter_args({{.*}}, %[[S0:.*]] = %[[DB0]], %[[S1:.*]] = %[[DB1]]) -> (vector<8xf32>
// CHECK:                   %[[R0:.*]] = vector.load %[[DQ:[0-9a-z_]+]][
// CHECK:                   %[[R1:.*]] = vector.load %[[DQ]][
// CHECK-COUNT-12:          vector.fma
// CHECK-NEXT:              arith.addf %[[S0]], %[[R0]] : vector<8xf32>
// CHECK-NEXT:              arith.addf %[[S1]], %[[R1]] : vector<8xf32>
// CHECK:                 vector.store %[[ACC]]#12, %[[DB:.*]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK:                 vector.store %[[ACC]]#13, %[[DB]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK-NEXT:            scf.yield %[[ACC]]#0,
// CHECK:               } else {
// CHECK:                 scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK:           } {tfc.kernel = "merged_weight_grad"}
func.func @merged_weight_grad(%params: tensor<?xf32> {tfc.role = "params"},
                              %x: tensor<?x?x8xf32> {tfc.role = "x"},
                              %dq: tensor<?x?x16xf32> {tfc.role = "x"},
                              %dk: tensor<?x?x16xf32> {tfc.role = "x"})
    -> (tensor<8x16xf32> {tfc.role = "y"}, tensor<8x16xf32> {tfc.role = "y"},
        tensor<16xf32> {tfc.role = "y"}, tensor<16xf32> {tfc.role = "y"})
    attributes {tfc.model = "merged_weight_grad", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %dwq, %dwk, %dbq, %dbk = tfc.merged_weight_grad %x grads(%dq, %dk) : tensor<?x?x8xf32>, (tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> weights(tensor<8x16xf32>, tensor<8x16xf32>) biases(tensor<16xf32>, tensor<16xf32>)
  return %dwq, %dwk, %dbq, %dbk : tensor<8x16xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// d_pre = dy * relu'(pre) is formed in one pass over dy: stored to d_pre
// (the input gradient reads it) and summed into the bias gradient; the tiles
// read it back from d_pre in place (no panels: no workspace at all).
// CHECK-LABEL: func.func @linear_act_weight_grad_forward(
// CHECK-NOT:     memref.view
// CHECK:         scf.parallel
// CHECK:           %[[SUMS:.*]]:2 = scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>) {
// CHECK:             %[[DY:.*]] = vector.load
// CHECK:             %[[PRE:.*]] = vector.load
// CHECK:             %[[POS:.*]] = arith.cmpf ogt, %[[PRE]], %{{.*}} : vector<8xf32>
// CHECK:             %[[D:.*]] = arith.select %[[POS]], %{{.*}}, %{{.*}} : vector<8xi1>, vector<8xf32>
// CHECK:             %[[DPRE:.*]] = arith.mulf %[[DY]], %[[D]] : vector<8xf32>
// CHECK:             vector.store %[[DPRE]], %[[DPREBUF:[0-9a-z_]+]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK-NEXT:        arith.addf %{{.*}}, %[[DPRE]] : vector<8xf32>
// CHECK:           }
// CHECK-NEXT:      vector.store %[[SUMS]]#0
// CHECK-NEXT:      vector.store %[[SUMS]]#1
// CHECK:         } {tfc.kernel = "linear_act_weight_grad"}
// CHECK:         scf.parallel
// CHECK:           scf.for {{.*}} -> (vector<8xf32>
// CHECK:             vector.load %[[DPREBUF]][
// CHECK-COUNT-12:    vector.fma
// CHECK:         } {tfc.kernel = "linear_act_weight_grad"}
func.func @linear_act_weight_grad(%params: tensor<?xf32> {tfc.role = "params"},
                                  %x: tensor<?x?x8xf32> {tfc.role = "x"},
                                  %pre: tensor<?x?x16xf32> {tfc.role = "x"},
                                  %dy: tensor<?x?x16xf32> {tfc.role = "x"})
    -> (tensor<8x16xf32> {tfc.role = "y"}, tensor<?x?x16xf32> {tfc.role = "y"},
        tensor<16xf32> {tfc.role = "y"})
    attributes {tfc.model = "linear_act_weight_grad", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %dw, %dpre, %db = tfc.linear_act_weight_grad #tfc.activation<relu> %x, %pre, %dy : (tensor<?x?x8xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> (tensor<8x16xf32>, tensor<?x?x16xf32>, tensor<16xf32>)
  return %dw, %dpre, %db : tensor<8x16xf32>, tensor<?x?x16xf32>, tensor<16xf32>
}

// -----

// d_pre = (dy W^T) * relu'(h) (tfc-fuse-activation-grad): the plain input
// gradient's tiles, and in the output loop each accumulator times relu' of
// h's row (the row clamped to the last: rows past m are computed, not
// stored) before the store.
// The lines of h the epilogue reads (and of the output, for writing) are
// prefetched inside the k loop, row (k mod MR) of the tile at each k, none
// before it: the tiles walk down a column panel, rows a row stride apart,
// which no hardware prefetcher follows, and issued all at once before the
// loop they were not all there when the epilogue read them.
// CHECK-LABEL: func.func @input_grad_act_forward(
// CHECK:         scf.parallel
// CHECK-NOT:       memref.prefetch
// CHECK:           %[[ACC:.*]]:12 = scf.for %[[K:[a-z0-9_]+]] = {{.*}} -> (vector<8xf32>
// CHECK-NEXT:        %[[MR:.*]] = arith.constant 6 : index
// CHECK-NEXT:        arith.remui %[[K]], %[[MR]] : index
// CHECK:             memref.prefetch %[[H:[a-z0-9_]+]][%{{.*}}], read, locality<3>, data : memref<?xf32>
// CHECK:             memref.prefetch %[[OUT:[a-z0-9_]+]][%{{.*}}], write, locality<3>, data : memref<?xf32>
// CHECK:             memref.prefetch %[[H]][%{{.*}}], read
// CHECK:             memref.prefetch %[[OUT]][%{{.*}}], write
// CHECK-NOT:         memref.prefetch
// CHECK-COUNT-12:    vector.fma
// CHECK:           %[[ROW:.*]] = arith.minsi
// CHECK:           %[[X:.*]] = vector.load %{{.*}}[%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK-NEXT:      %[[ZERO:.*]] = arith.constant dense<0.000000e+00>
// CHECK-NEXT:      %[[POS:.*]] = arith.cmpf ogt, %[[X]], %[[ZERO]] : vector<8xf32>
// CHECK:           %[[D:.*]] = arith.select %[[POS]], %{{.*}}, %{{.*}} : vector<8xi1>, vector<8xf32>
// CHECK-NEXT:      %[[OUT:.*]] = arith.mulf %[[ACC]]#0, %[[D]] : vector<8xf32>
// CHECK:           scf.if
// CHECK:             vector.store %[[OUT]], %{{.*}}[%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK:         } {tfc.kernel = "merged_input_grad"}
func.func @input_grad_act(%params: tensor<?xf32> {tfc.role = "params"},
                          %dy: tensor<?x?x8xf32> {tfc.role = "x"},
                          %h: tensor<?x?x16xf32> {tfc.role = "x"})
    -> (tensor<?x?x16xf32> {tfc.role = "y"})
    attributes {tfc.model = "input_grad_act", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 256 : i64, tfc.vocab = 0 : i64} {
  %w = tfc.param %params {name = "w_down", offset = 0 : i64} : tensor<?xf32> -> tensor<16x8xf32>
  %dpre = tfc.merged_input_grad grads(%dy) weights(%w) act(#tfc.activation<relu>, %h) : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
  return %dpre : tensor<?x?x16xf32>
}

// -----

// Forward keeps the matrix-vector branch for at most MR rows; backward's
// products always pack (KernelBuilder::fewRowsPath): no branch on the row
// count, one pack and one tile loop.
// CHECK-LABEL: func.func @rows_forward(
// CHECK:         arith.cmpi ule
// CHECK:         scf.if
// CHECK:         } {tfc.kernel = "linear"}
// CHECK:         } {tfc.kernel = "linear"}
// CHECK:         } {tfc.kernel = "linear"}
// CHECK-LABEL: func.func @rows_backward(
// CHECK-NOT:     arith.cmpi ule
// CHECK:         scf.parallel
// CHECK:           vector.store
// CHECK:         } {tfc.kernel = "linear"}
// CHECK-NOT:     arith.cmpi ule
// CHECK:         scf.parallel
// CHECK:           vector.fma
// CHECK:         } {tfc.kernel = "linear"}
// CHECK-NOT:     {tfc.kernel = "linear"}
// CHECK-LABEL: func.func @rows_workspace_size(
func.func @rows(%params: tensor<?xf32> {tfc.role = "params"},
                %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x16xf32> {tfc.role = "y"})
    attributes {tfc.model = "rows", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 128 : i64, tfc.vocab = 0 : i64} {
  %w = tfc.param %params {name = "w", offset = 0 : i64} : tensor<?xf32> -> tensor<8x16xf32>
  %y = tfc.linear %x, %w : (tensor<?x?x8xf32>, tensor<8x16xf32>) -> tensor<?x?x16xf32>
  return %y : tensor<?x?x16xf32>
}
func.func @rows_grad(%params: tensor<?xf32> {tfc.role = "params"},
                     %dy: tensor<?x?x16xf32> {tfc.role = "d_y"},
                     %dp: tensor<?xf32> {tfc.role = "d_params"})
    -> (tensor<?xf32> {tfc.role = "d_params"}, tensor<?x?x8xf32> {tfc.role = "d_x"})
    attributes {tfc.backward_of = "rows", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 128 : i64, tfc.vocab = 0 : i64} {
  %w = tfc.param %params {name = "w", offset = 0 : i64} : tensor<?xf32> -> tensor<8x16xf32>
  %dx = tfc.linear %dy, %w {transpose_weight} : (tensor<?x?x16xf32>, tensor<8x16xf32>) -> tensor<?x?x8xf32>
  return %dp, %dx : tensor<?xf32>, tensor<?x?x8xf32>
}
