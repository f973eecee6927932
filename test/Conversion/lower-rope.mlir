// RUN: tfc-opt %s -tfc-lower-to-loops=vector-width=8 --split-input-file | FileCheck %s
// tfc.rope (RopeLowering.cpp): one parallel iteration per (batch,
// position); the pair loop carries the f64 frequency theta^(-2i/rot) as a
// running product, forms the angle in f64, reduces it modulo 2 pi by
// truncation (no f64 transcendental), then takes the f32 cos and sin once
// for every head. Dims past rotary_dim are copied.

// CHECK-LABEL: func.func @rope_forward(
// CHECK:         scf.parallel
// CHECK:           %[[POS:.*]] = arith.sitofp %{{.*}} : i64 to f64
// CHECK:           scf.for {{.*}} = %{{.*}} to %c2{{.*}} iter_args(%[[FREQ:.*]] = %{{.*}}) -> (f64) {
// CHECK:             %[[ANGLE:.*]] = arith.mulf %[[POS]], %[[FREQ]] : f64
// CHECK:             %[[SCALED:.*]] = arith.mulf %[[ANGLE]], %{{.*}} : f64
// CHECK:             %[[TURNS:.*]] = arith.fptosi %[[SCALED]] : f64 to i64
// CHECK:             %[[REDUCED:.*]] = arith.subf %[[ANGLE]], %{{.*}} : f64
// CHECK:             %[[A:.*]] = arith.truncf %[[REDUCED]] : f64 to f32
// CHECK:             %[[COS:.*]] = math.cos %[[A]] : f32
// CHECK:             %[[SIN:.*]] = math.sin %[[A]] : f32
// CHECK-NOT:         arith.negf
// CHECK:             scf.for
// CHECK:               memref.load
// CHECK:               memref.load
// CHECK:               arith.negf %[[SIN]] : f32
// CHECK:               memref.store
// CHECK:               memref.store
// CHECK:             scf.yield %{{.*}} : f64
// CHECK:           scf.for
// CHECK:             scf.for {{.*}} = %c4 to %c8
// CHECK:               memref.load
// CHECK-NEXT:          memref.store
// CHECK:         } {tfc.kernel = "rope"}
func.func @rope(%params: tensor<?xf32> {tfc.role = "params"},
                %x: tensor<?x2x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "rope", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %y = tfc.rope #tfc.rope_style<interleaved> %x theta 10000.0 rotary_dim 4 {offset = 2 : i64} : tensor<?x2x?x8xf32>
  return %y : tensor<?x2x?x8xf32>
}

// -----

// The inverse rotation negates the sine once per pair; a full rotary width
// copies nothing.
// CHECK-LABEL: func.func @rope_inverse_forward(
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             %[[SIN:.*]] = math.sin %{{.*}} : f32
// CHECK-NEXT:        %[[NEG:.*]] = arith.negf %[[SIN]] : f32
// CHECK:             scf.for
// CHECK:               arith.negf %[[NEG]] : f32
// CHECK:             scf.yield %{{.*}} : f64
// CHECK-NEXT:      }
// CHECK-NEXT:      scf.reduce
// CHECK:         } {tfc.kernel = "rope"}
func.func @rope_inverse(%params: tensor<?xf32> {tfc.role = "params"},
                        %x: tensor<?x2x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "rope_inverse", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %y = tfc.rope #tfc.rope_style<half> %x theta 10000.0 rotary_dim 8 {inverse} : tensor<?x2x?x8xf32>
  return %y : tensor<?x2x?x8xf32>
}
