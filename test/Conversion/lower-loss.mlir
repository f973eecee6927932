// RUN: tfc-opt %s -tfc-lower-to-loops --split-input-file | FileCheck %s
// The loss (EmbeddingLowering.cpp, GradLowering.cpp, LossHeadLowering.cpp):
// a row loop per row of logits (max, then exp-sum with reassoc, log-sum-exp),
// per-row losses in the workspace, and the serial parts (valid-target count,
// the mean in f64 in row order) as one-iteration parallel loops, so CUDA runs
// them as kernels.

// CHECK-LABEL: func.func @cross_entropy_forward(
// CHECK:         %[[ROWS:.*]] = memref.view %{{.*}} : memref<?xi8> to memref<?xf32>
// CHECK:         scf.parallel
// CHECK:           %[[T:.*]] = memref.load %{{.*}} : memref<?xi32>
// CHECK:           %[[MAX:.*]] = scf.for {{.*}} -> (f32) {
// CHECK:             arith.maximumf
// CHECK:           %[[SUM:.*]] = scf.for {{.*}} -> (f32) {
// CHECK:             arith.subf %{{.*}}, %[[MAX]] : f32
// CHECK-NEXT:        math.exp
// CHECK-NEXT:        arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
// CHECK:           %[[LOG:.*]] = math.log %[[SUM]] : f32
// CHECK-NEXT:      %[[LSE:.*]] = arith.addf %[[MAX]], %[[LOG]] : f32
// CHECK:           arith.subf %[[LSE]], %{{.*}} : f32
// CHECK:           memref.store %{{.*}}, %[[ROWS]][
// CHECK:           memref.store %{{.*}}, %[[ROWS]][
// CHECK:         } {tfc.kernel = "cross_entropy"}
// The mean over valid targets: one iteration, two f64 sums in row order.
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%c1{{(_[0-9]+)?}}) step (%{{.*}}) {
// CHECK:           %[[TOT:.*]]:2 = scf.for {{.*}} -> (f64, f64) {
// CHECK:             memref.load %[[ROWS]][
// CHECK:             memref.load %[[ROWS]][
// CHECK:             arith.addf %{{.*}}, %{{.*}} : f64
// CHECK-NEXT:        arith.addf %{{.*}}, %{{.*}} : f64
// CHECK:           %[[DEN:.*]] = arith.maximumf %[[TOT]]#1, %{{.*}} : f64
// CHECK-NEXT:      %[[MEAN:.*]] = arith.divf %[[TOT]]#0, %[[DEN]] : f64
// CHECK:           %[[M32:.*]] = arith.truncf %[[MEAN]] : f64 to f32
// CHECK:           memref.store %[[M32]]
// CHECK:         } {tfc.kernel = "cross_entropy"}
// CHECK-NOT:     scf.parallel
func.func @cross_entropy(%params: tensor<?xf32> {tfc.role = "params"},
                         %logits: tensor<?x?x16xf32> {tfc.role = "x"},
                         %targets: tensor<?x?xi32> {tfc.role = "targets"})
    -> (tensor<f32> {tfc.role = "loss"})
    attributes {tfc.model = "cross_entropy", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 16 : i64} {
  %loss = tfc.cross_entropy %logits, %targets : (tensor<?x?x16xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// The valid-target count first (one iteration, into an i64 workspace word),
// then per row softmax minus one-hot, scaled by dloss / max(count, 1).
// CHECK-LABEL: func.func @cross_entropy_grad_forward(
// CHECK:         %[[COUNT:.*]] = memref.view %{{.*}} : memref<?xi8> to memref<?xi64>
// CHECK:         scf.parallel (%{{.*}}) = (%{{.*}}) to (%c1{{(_[0-9]+)?}}) step (%{{.*}}) {
// CHECK:           %[[N:.*]] = scf.for {{.*}} -> (index) {
// CHECK:           %[[N64:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK-NEXT:      memref.store %[[N64]], %[[COUNT]][
// CHECK:         } {tfc.kernel = "cross_entropy_grad"}
// CHECK:         scf.parallel
// CHECK:           memref.load %[[COUNT]][
// CHECK:           scf.for {{.*}} -> (f32) {
// CHECK:             arith.maximumf
// CHECK:           %[[SUM:.*]] = scf.for {{.*}} -> (f32) {
// CHECK:             math.exp
// CHECK:             memref.store
// CHECK-NEXT:        arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
// CHECK:           %[[INV:.*]] = arith.divf %{{.*}}, %[[SUM]] : f32
// CHECK:           scf.for
// CHECK:             arith.mulf %{{.*}}, %[[INV]] : f32
// CHECK:             arith.cmpi eq
// CHECK:             arith.select
// CHECK:             memref.store
// CHECK:         } {tfc.kernel = "cross_entropy_grad"}
// CHECK-NOT:     scf.parallel
func.func @cross_entropy_grad(%params: tensor<?xf32> {tfc.role = "params"},
                              %logits: tensor<?x?x16xf32> {tfc.role = "x"},
                              %targets: tensor<?x?xi32> {tfc.role = "targets"},
                              %dloss: tensor<f32> {tfc.role = "x"})
    -> (tensor<?x?x16xf32> {tfc.role = "y"})
    attributes {tfc.model = "cross_entropy_grad", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 16 : i64} {
  %dl = tfc.cross_entropy_grad %logits, %targets, %dloss : (tensor<?x?x16xf32>, tensor<?x?xi32>, tensor<f32>) -> tensor<?x?x16xf32>
  return %dl : tensor<?x?x16xf32>
}

// -----

// The head matmul (8 x 32 tiles at the default width: 16 accumulators) writes
// the logits; then the count, one sweep per row giving the row's loss and,
// for d_loss = 1, the logits' gradient in the exponentials' buffer; then the
// mean. scale_by multiplies by the loss read before its row loop.
// CHECK-LABEL: func.func @loss_head_forward(
// CHECK:         %[[DL:.*]] = memref.view %{{.*}} : memref<?xi8> to memref<?xf32>
// CHECK:         %[[NLL:.*]] = memref.view %{{.*}} : memref<?xi8> to memref<?xf32>
// CHECK:         %[[COUNT:.*]] = memref.view %{{.*}} : memref<?xi8> to memref<?xi64>
// CHECK:         %[[PACKED:.*]] = memref.view %{{.*}} : memref<?xi8> to memref<?xf32>
// CHECK:         scf.parallel
// CHECK:           vector.from_elements
// CHECK:         } {tfc.kernel = "loss_head"}
// CHECK:         scf.parallel
// CHECK:           scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>) {
// CHECK:             vector.load %[[PACKED]][
// CHECK-COUNT-16:    vector.fma
// CHECK:           vector.maskedstore
// CHECK:         } {tfc.kernel = "loss_head"}
// CHECK:         scf.parallel
// CHECK:           scf.for {{.*}} -> (index) {
// CHECK:           memref.store %{{.*}}, %[[COUNT]][
// CHECK:         } {tfc.kernel = "loss_head"}
// CHECK:         scf.parallel
// CHECK:           scf.for {{.*}} -> (f32) {
// CHECK:             arith.maximumf
// CHECK:           %[[SUM:.*]] = scf.for {{.*}} -> (f32) {
// CHECK:             %[[E:.*]] = math.exp
// CHECK:             memref.store %[[E]], %[[DL]][
// CHECK-NEXT:        arith.addf %{{.*}}, %[[E]] fastmath<reassoc> : f32
// CHECK:           math.log %[[SUM]] : f32
// CHECK:           memref.store %{{.*}}, %[[NLL]][
// CHECK:           memref.load %[[COUNT]][
// CHECK:           scf.for
// CHECK:             memref.load %[[DL]][
// CHECK:             memref.store %{{.*}}, %[[DL]][
// CHECK:         } {tfc.kernel = "loss_head"}
// CHECK:         scf.parallel
// CHECK:           scf.for {{.*}} -> (f64) {
// CHECK:             memref.load %[[NLL]][
// CHECK:           memref.load %[[COUNT]][
// CHECK:           arith.divf %{{.*}}, %{{.*}} : f64
// CHECK:           memref.store %{{.*}}, %[[LOSS:.*]][
// CHECK:         } {tfc.kernel = "loss_head"}
// The factor (a device array on CUDA) is read inside the parallel loop.
// CHECK-NOT:     memref.load %[[LOSS]]
// CHECK:         scf.parallel
// CHECK:           %[[FACTOR:.*]] = memref.load %[[LOSS]][%{{.*}}] : memref<?xf32>
// CHECK:           scf.for
// CHECK:             %[[G:.*]] = memref.load %[[DL]][
// CHECK-NEXT:        %[[S:.*]] = arith.mulf %[[G]], %[[FACTOR]] : f32
// CHECK-NEXT:        memref.store %[[S]]
// CHECK:         } {tfc.kernel = "scale_by"}
// CHECK-COUNT-3: llvm.call @tfc_rt_check_finite(
func.func @loss_head(%params: tensor<?xf32> {tfc.role = "params"},
                     %x: tensor<?x?x8xf32> {tfc.role = "x"},
                     %targets: tensor<?x?xi32> {tfc.role = "targets"})
    -> (tensor<?x?x16xf32> {tfc.role = "logits"}, tensor<f32> {tfc.role = "loss"},
        tensor<?x?x16xf32> {tfc.role = "y"})
    attributes {tfc.model = "loss_head", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 128 : i64, tfc.vocab = 16 : i64} {
  %e = tfc.param %params {name = "embed.tokens", offset = 0 : i64} : tensor<?xf32> -> tensor<16x8xf32>
  %logits, %loss, %dl = tfc.loss_head %x, %e, %targets {transpose_weight} : (tensor<?x?x8xf32>, tensor<16x8xf32>, tensor<?x?xi32>) -> (tensor<?x?x16xf32>, tensor<f32>, tensor<?x?x16xf32>)
  %scaled = tfc.scale_by %dl by %loss : tensor<?x?x16xf32>, tensor<f32>
  return %logits, %loss, %scaled : tensor<?x?x16xf32>, tensor<f32>, tensor<?x?x16xf32>
}
