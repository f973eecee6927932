// RUN: tfc-opt %s -tfc-lower-to-loops=vector-width=8 --split-input-file | FileCheck %s
// mHC's maps (HyperConnectionLowering.cpp): one parallel iteration per
// group of 8 tokens (the vector width), ceil(tokens / 8) of them. Each
// token's logits are gathered into lane j of one vector per H_res entry
// (the lane's token clamped to the last); Sinkhorn-Knopp runs on the 2 x 2
// matrix of vectors the iteration loop carries, a reciprocal per column and
// per row, no memory in the loop; the lanes are scattered back per token.
// H_pre and H_post are stored in the gather loop, from the same r.

// CHECK-LABEL: func.func @mhc_maps_forward(
// CHECK:         %[[GROUPS:.*]] = arith.ceildivui %{{.*}}, %c8
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[GROUPS]])
// CHECK:           scf.for %[[LANE:.*]] = %{{.*}} to %c8{{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK:             arith.minsi
// CHECK:             math.sqrt %{{.*}} : f32
// CHECK-NOT:         math.sqrt
// CHECK:             math.exp %{{.*}} : f32
// CHECK:             vector.insert %{{.*}}, %{{.*}} [%[[LANE]]] : f32 into vector<8xf32>
// CHECK:           math.exp %{{.*}} : vector<8xf32>
// CHECK:           scf.for {{.*}} = %c0{{.*}} to %c5{{.*}} iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-NOT:         memref.load
// CHECK-NOT:         memref.store
// CHECK-COUNT-4:     arith.divf %cst{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:             scf.yield
// CHECK:           scf.for %[[OUT:.*]] = %{{.*}} to %c8
// CHECK:             vector.extract %{{.*}}[%[[OUT]]] : f32 from vector<8xf32>
// CHECK:             memref.store
// CHECK-NOT:       math.sqrt
// CHECK:         } {tfc.kernel = "mhc_maps"}
func.func @mhc_maps(%params: tensor<?xf32> {tfc.role = "params"},
                    %x: tensor<?x?x16xf32> {tfc.role = "x"},
                    %p: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "mhc_maps", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 11 : i64, tfc.vocab = 0 : i64} {
  %alpha = tfc.param %params {name = "hc.alpha", offset = 0 : i64} : tensor<?xf32> -> tensor<3xf32>
  %b = tfc.param %params {name = "hc.bias", offset = 3 : i64} : tensor<?xf32> -> tensor<8xf32>
  %m = tfc.mhc_maps %x, %p, %alpha, %b {streams = 2 : i64, sinkhorn_iters = 5 : i64, epsilon = 1.0e-5 : f64}
      : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<3xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %m : tensor<?x?x8xf32>
}

// -----

// The gradient: the iterations replayed on the lanes, each one's C, c and r
// stored as vectors to the group's tape (its own per group: ceil(tokens / 8)
// groups of 5 iterations x (4 + 2 + 2) entries x 8 lanes); the reverse sweep
// carries d H_res as vectors and reads the tape back with vector loads; then
// the gates and r per token.
// CHECK-LABEL: func.func @mhc_maps_grad_forward(
// CHECK:         arith.ceildivui %{{.*}}, %c8
// CHECK:         %[[TAPE:.*]] = memref.view
// CHECK:         %[[GROUPS:.*]] = arith.ceildivui %{{.*}}, %c8
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%[[GROUPS]])
// CHECK:           scf.for {{.*}} to %c5{{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-COUNT-8:     vector.store %{{.*}}, %[[TAPE]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK:           scf.for {{.*}} to %c5{{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-NOT:         memref.store
// CHECK:             vector.load %[[TAPE]]
// CHECK:             scf.yield
// CHECK:           vector.extract
// CHECK:           memref.store
// CHECK:           scf.for
// CHECK:             math.sqrt %{{.*}} : f32
// CHECK:         } {tfc.kernel = "mhc_maps_grad"}
func.func @mhc_maps_grad(%params: tensor<?xf32> {tfc.role = "params"},
                         %x: tensor<?x?x16xf32> {tfc.role = "x"},
                         %p: tensor<?x?x8xf32> {tfc.role = "x"},
                         %g: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x16xf32> {tfc.role = "y"}, tensor<?x?x8xf32> {tfc.role = "y"},
        tensor<?x?x3xf32> {tfc.role = "y"}, tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "mhc_maps_grad", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 11 : i64, tfc.vocab = 0 : i64} {
  %alpha = tfc.param %params {name = "hc.alpha", offset = 0 : i64} : tensor<?xf32> -> tensor<3xf32>
  %b = tfc.param %params {name = "hc.bias", offset = 3 : i64} : tensor<?xf32> -> tensor<8xf32>
  %dx, %dp, %da, %db = tfc.mhc_maps_grad %x, %p, %alpha, %b, %g {streams = 2 : i64, sinkhorn_iters = 5 : i64, epsilon = 1.0e-5 : f64}
      : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<3xf32>, tensor<8xf32>, tensor<?x?x8xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x3xf32>, tensor<?x?x8xf32>)
  return %dx, %dp, %da, %db : tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x3xf32>, tensor<?x?x8xf32>
}

// -----

// With init (the streams' gradient so far), the input gradient's sweep loads
// it and adds the stream's own term to it, in the order of the tfc.add it
// replaces (init first).
// CHECK-LABEL: func.func @aggregate_grad_init_forward(
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             scf.for
// CHECK:               %[[OWN:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK-NEXT:          %[[INIT:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<?xf32>
// CHECK-NEXT:          %[[SUM:.*]] = arith.addf %[[INIT]], %[[OWN]] : f32
// CHECK-NEXT:          memref.store %[[SUM]]
// CHECK:         } {tfc.kernel = "hc_aggregate_grad"}
func.func @aggregate_grad_init(%params: tensor<?xf32> {tfc.role = "params"},
                               %x: tensor<?x?x16xf32> {tfc.role = "x"},
                               %m: tensor<?x?x8xf32> {tfc.role = "x"},
                               %g: tensor<?x?x8xf32> {tfc.role = "x"},
                               %init: tensor<?x?x16xf32> {tfc.role = "x"})
    -> (tensor<?x?x16xf32> {tfc.role = "y"}, tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "aggregate_grad_init", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %dx, %dm = tfc.hc_aggregate_grad %x, %m, %g init %init {streams = 2 : i64}
      : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x16xf32>) -> (tensor<?x?x16xf32>, tensor<?x?x8xf32>)
  return %dx, %dm : tensor<?x?x16xf32>, tensor<?x?x8xf32>
}
