// RUN: tfc-opt %s -tfc-lower-to-loops --split-input-file | FileCheck %s
// Embedding, positions and their gradients (EmbeddingLowering.cpp,
// GradLowering.cpp): a token-id scan (a one-iteration parallel loop, its
// result in a workspace word) gates the compute; the gather clamps ids into
// the table; table gradients are column-chunk loops that add rows in token
// order (no atomics).

// CHECK-LABEL: func.func @embedding_forward(
// CHECK:         %[[TOK:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi32>
// CHECK:         %[[SLOT:.*]] = memref.view %{{.*}}[%{{.*}}][%{{.*}}] : memref<?xi8> to memref<?xi64>
// CHECK:         %[[H:.*]] = memref.view %{{.*}}[%{{.*}}][%{{.*}}] : memref<?xi8> to memref<?xf32>
// CHECK:         scf.parallel
// CHECK:           %[[FIRST:.*]] = scf.for {{.*}} -> (i64) {
// CHECK:             memref.load %[[TOK]][
// CHECK:           memref.store %[[FIRST]], %[[SLOT]][
// CHECK:         } {tfc.kernel = "token_check"}
// CHECK:         memref.load %[[SLOT]][
// CHECK:         scf.if
// CHECK:           %[[TABLE:.*]] = memref.subview %{{.*}}[%{{.*}}] [128] [1]
// CHECK:           %[[POS:.*]] = memref.subview %{{.*}}[%{{.*}}] [64] [1]
// The gather: one row per iteration, the id clamped to [0, vocab - 1].
// CHECK:           scf.parallel (%[[ROW:.*]]) = {{.*}} {
// CHECK-NEXT:        %[[ID:.*]] = memref.load %[[TOK]][%[[ROW]]] : memref<?xi32>
// CHECK-NEXT:        %[[IDX:.*]] = arith.index_cast %[[ID]] : i32 to index
// CHECK:             %[[LO:.*]] = arith.minsi %[[IDX]], %{{.*}} : index
// CHECK-NEXT:        arith.maxsi %[[LO]], %{{.*}} : index
// CHECK:             scf.for
// CHECK:               %[[E:.*]] = memref.load %[[TABLE]][
// CHECK-NEXT:          memref.store %[[E]], %[[H]][
// CHECK:           } {tfc.kernel = "embedding"}
// Learned positions: row % seq indexes the table.
// CHECK:           scf.parallel (%[[ROW2:.*]]) = {{.*}} {
// CHECK-NEXT:        arith.remui %[[ROW2]], %{{.*}} : index
// CHECK:             scf.for
// CHECK:               %[[PE:.*]] = memref.load %[[POS]][
// CHECK:               %[[X:.*]] = memref.load %[[H]][
// CHECK:               %[[S:.*]] = arith.addf %[[X]], %[[PE]] : f32
// CHECK-NEXT:          memref.store %[[S]]
// CHECK:           } {tfc.kernel = "add_positions"}
// A bad id: status 3.
// CHECK:         } else {
// CHECK:           llvm.call @tfc_rt_error(
func.func @embedding(%params: tensor<?xf32> {tfc.role = "params"},
                     %tokens: tensor<?x?xi32> {tfc.role = "tokens"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "embedding", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 192 : i64, tfc.vocab = 16 : i64} {
  %table = tfc.param %params {name = "embed.tokens", offset = 0 : i64} : tensor<?xf32> -> tensor<16x8xf32>
  %pos = tfc.param %params {name = "embed.positions", offset = 128 : i64} : tensor<?xf32> -> tensor<8x8xf32>
  %h = tfc.embedding %tokens, %table : (tensor<?x?xi32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
  %h1 = tfc.add_positions #tfc.positions<learned> %h, %pos : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  return %h1 : tensor<?x?x8xf32>
}

// -----

// Sinusoidal positions are computed in f64: exp of the pair's exponent, then
// sin and cos of the angle, the column's parity picks one.
// CHECK-LABEL: func.func @sinusoidal_forward(
// CHECK-NOT:     memref.view
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             math.exp %{{.*}} : f64
// CHECK:             %[[ANGLE:.*]] = arith.mulf %{{.*}}, %{{.*}} : f64
// CHECK-NEXT:        %[[SIN:.*]] = math.sin %[[ANGLE]] : f64
// CHECK-NEXT:        %[[COS:.*]] = math.cos %[[ANGLE]] : f64
// CHECK-NEXT:        %[[PE:.*]] = arith.select %{{.*}}, %[[COS]], %[[SIN]] : f64
// CHECK-NEXT:        %[[PE32:.*]] = arith.truncf %[[PE]] : f64 to f32
// CHECK:             arith.addf %{{.*}}, %[[PE32]] : f32
// CHECK:         } {tfc.kernel = "add_positions"}
func.func @sinusoidal(%params: tensor<?xf32> {tfc.role = "params"},
                      %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "sinusoidal", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %y = tfc.add_positions #tfc.positions<sinusoidal> %x : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// embedding_grad: the table zeroed in 4096-element chunks, then per chunk of
// 32 columns every token's row added in order (ids clamped); positions_grad:
// one iteration per position, rows past seq stay zero.
// CHECK-LABEL: func.func @embedding_grads_forward(
// CHECK:         } {tfc.kernel = "token_check"}
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK-NEXT:        memref.store
// CHECK:         } {tfc.kernel = "embedding_grad"}
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             memref.load %{{.*}} : memref<?xi32>
// CHECK:             arith.minsi
// CHECK:             arith.maxsi
// CHECK:             scf.for
// CHECK:               %[[D:.*]] = memref.load
// CHECK-NEXT:          %[[OLD:.*]] = memref.load
// CHECK-NEXT:          %[[S:.*]] = arith.addf %[[OLD]], %[[D]] : f32
// CHECK-NEXT:          memref.store %[[S]]
// CHECK:         } {tfc.kernel = "embedding_grad"}
// CHECK:         scf.parallel (%[[P:.*]]) = (%{{.*}}) to (%{{.*}}) step
// CHECK:           scf.for
// CHECK:             memref.store
// CHECK:           %[[USED:.*]] = arith.cmpi ult, %[[P]], %{{.*}} : index
// CHECK:           %[[N:.*]] = arith.select %[[USED]], %{{.*}}, %{{.*}} : index
// CHECK:           scf.for %{{.*}} = %{{.*}} to %[[N]] step
// CHECK:             scf.for
// CHECK:               arith.addf
// CHECK:         } {tfc.kernel = "positions_grad"}
func.func @embedding_grads(%params: tensor<?xf32> {tfc.role = "params"},
                           %tokens: tensor<?x?xi32> {tfc.role = "tokens"},
                           %dy: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<16x8xf32> {tfc.role = "y"}, tensor<8x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "embedding_grads", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 16 : i64} {
  %de = tfc.embedding_grad %tokens, %dy : (tensor<?x?xi32>, tensor<?x?x8xf32>) -> tensor<16x8xf32>
  %dp = tfc.positions_grad %dy : tensor<?x?x8xf32> -> tensor<8x8xf32>
  return %de, %dp : tensor<16x8xf32>, tensor<8x8xf32>
}
