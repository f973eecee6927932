// RUN: tfc-opt %s -tfc-lower-to-loops=vector-width=8 --split-input-file | FileCheck %s
// Attention's pieces (AttentionLowering.cpp, GradLowering.cpp) and the fused
// flash attention (FlashAttentionLowering.cpp, kernels/cpu/FlashAttention*.cpp,
// FlashAttentionTiles.cpp) at vector width 8: per-op parallel loops named
// after the op, Q K^T and P V through the shared matmul, row-wise softmax
// with a max sweep, an exp-and-sum sweep (reassoc) and a scaling sweep; the
// flash kernels pack K (Q, dO) transposed, then sweep key (query) tiles with
// score tiles in registers, vector reductions (max: nnan nsz; add: reassoc)
// and an online softmax whose causal tail tiles are masked.

// Head transposes: a row loop, heads inside, through a workspace copy
// [b, h, s, dh]; a head's dh = 4 columns (less than a vector) element by
// element.
// CHECK-LABEL: func.func @heads_forward(
// CHECK:         %[[SPLIT:.*]] = memref.view
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK-NOT:         scf.for
// CHECK:             memref.load
// CHECK-NEXT:        memref.store %{{.*}}, %[[SPLIT]][
// CHECK:         } {tfc.kernel = "split_heads"}
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK-NOT:         scf.for
// CHECK:             memref.load %[[SPLIT]][
// CHECK-NEXT:        memref.store
// CHECK:         } {tfc.kernel = "merge_heads"}
func.func @heads(%params: tensor<?xf32> {tfc.role = "params"},
                 %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "heads", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %h = tfc.split_heads %x : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
  %y = tfc.merge_heads %h : tensor<?x2x?x4xf32> -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

// A head of 20 columns at vector width 8: two vector copies and the last 4
// columns element by element, each way.
// CHECK-LABEL: func.func @wide_heads_forward(
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK-COUNT-2:     vector.store
// CHECK-COUNT-4:     memref.store
// CHECK-NOT:         memref.store
// CHECK:         } {tfc.kernel = "split_heads"}
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK-COUNT-2:     vector.store
// CHECK-COUNT-4:     memref.store
// CHECK-NOT:         memref.store
// CHECK:         } {tfc.kernel = "merge_heads"}
func.func @wide_heads(%params: tensor<?xf32> {tfc.role = "params"},
                      %x: tensor<?x?x40xf32> {tfc.role = "x"})
    -> (tensor<?x?x40xf32> {tfc.role = "y"})
    attributes {tfc.model = "wide_heads", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %h = tfc.split_heads %x : tensor<?x?x40xf32> -> tensor<?x2x?x20xf32>
  %y = tfc.merge_heads %h : tensor<?x2x?x20xf32> -> tensor<?x?x40xf32>
  return %y : tensor<?x?x40xf32>
}

// -----

// Grouped-query K/V: repeat_heads copies each result row [b, 6, t, 4] from
// the input head h / (6 / 2) that serves it (a workspace view; 4 columns,
// less than a vector: element by element, unrolled); its
// gradient sums each group of 3 heads in head order, a sequential loop
// carrying the sum.
// CHECK-LABEL: func.func @head_groups_forward(
// CHECK:         %[[R:.*]] = memref.view
// CHECK:         %[[G:.*]] = arith.divui %c6, %c2
// CHECK:         scf.parallel
// CHECK:           arith.divui %{{.*}}, %[[G]] : index
// CHECK-NOT:       scf.for
// CHECK:           memref.load
// CHECK-NEXT:      memref.store %{{.*}}, %[[R]][
// CHECK:         } {tfc.kernel = "repeat_heads"}
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             scf.for {{.*}} iter_args(%[[ACC:.*]] = %{{.*}}) -> (f32) {
// CHECK:               %[[X:.*]] = memref.load %[[R]][
// CHECK-NEXT:          arith.addf %[[ACC]], %[[X]] : f32
// CHECK:         } {tfc.kernel = "sum_head_groups"}
func.func @head_groups(%params: tensor<?xf32> {tfc.role = "params"},
                       %x: tensor<?x2x?x4xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x4xf32> {tfc.role = "y"})
    attributes {tfc.model = "head_groups", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %r = tfc.repeat_heads %x : tensor<?x2x?x4xf32> -> tensor<?x6x?x4xf32>
  %y = tfc.sum_head_groups %r : tensor<?x6x?x4xf32> -> tensor<?x2x?x4xf32>
  return %y : tensor<?x2x?x4xf32>
}

// -----

// Every intermediate [b, h, s, t] is a workspace view: scores, scaled,
// masked, probabilities, and the two matmuls' panels.
// CHECK-LABEL: func.func @attention_forward(
// CHECK-COUNT-6: memref.view
// CHECK-NOT:     memref.view
// Q K^T: K is read transposed (element by element) into the panels.
// CHECK:         scf.parallel
// CHECK:           vector.from_elements
// CHECK:         } {tfc.kernel = "attention_scores"}
// CHECK:         scf.parallel
// CHECK:           scf.for {{.*}} -> (vector<8xf32>
// CHECK-COUNT-12:    vector.fma
// CHECK:           vector.maskedstore
// CHECK:         } {tfc.kernel = "attention_scores"}
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK:         } {tfc.kernel = "scale"}
// Causal: key j > query i is -inf.
// CHECK:         scf.parallel (%[[ROW:.*]]) = {{.*}} {
// CHECK:           %[[I:.*]] = arith.remui %[[ROW]], %{{.*}} : index
// CHECK:           scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:             %[[FUT:.*]] = arith.cmpi ugt, %[[J]], %[[I]] : index
// CHECK-NEXT:        arith.select %[[FUT]], %{{.*}}, %{{.*}} : f32
// CHECK:         } {tfc.kernel = "mask"}
// Softmax: max (0 for a row the mask hid entirely), then exp(x - max)
// stored and summed (reassoc), then scaled by 1 / sum (0 for an empty row).
// CHECK:         scf.parallel
// CHECK:           %[[MAX:.*]] = scf.for {{.*}} -> (f32) {
// CHECK:             arith.maximumf
// CHECK:           %[[EMPTY:.*]] = arith.cmpf oeq, %[[MAX]], %{{.*}} : f32
// CHECK:           %[[REF:.*]] = arith.select %[[EMPTY]], %{{.*}}, %[[MAX]] : f32
// CHECK:           %[[SUM:.*]] = scf.for {{.*}} -> (f32) {
// CHECK:             %[[D:.*]] = arith.subf %{{.*}}, %[[REF]] : f32
// CHECK-NEXT:        %[[E:.*]] = math.exp %[[D]] : f32
// CHECK:             memref.store %[[E]]
// CHECK-NEXT:        arith.addf %{{.*}}, %[[E]] fastmath<reassoc> : f32
// CHECK:           %[[DIV:.*]] = arith.divf %{{.*}}, %[[SUM]] : f32
// CHECK:           %[[NONE:.*]] = arith.cmpf oeq, %[[SUM]], %{{.*}} : f32
// CHECK:           %[[INV:.*]] = arith.select %[[NONE]], %{{.*}}, %[[DIV]] : f32
// CHECK:           scf.for
// CHECK:             arith.mulf %{{.*}}, %[[INV]] : f32
// CHECK:         } {tfc.kernel = "softmax"}
// P V: V by rows, masked (dh = 4).
// CHECK:         scf.parallel
// CHECK:           vector.maskedload
// CHECK:         } {tfc.kernel = "attention_context"}
// CHECK:         scf.parallel
// CHECK-COUNT-12:    vector.fma
// CHECK:         } {tfc.kernel = "attention_context"}
func.func @attention(%params: tensor<?xf32> {tfc.role = "params"},
                     %q: tensor<?x2x?x4xf32> {tfc.role = "x"},
                     %k: tensor<?x2x?x4xf32> {tfc.role = "x"},
                     %v: tensor<?x2x?x4xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x4xf32> {tfc.role = "y"})
    attributes {tfc.model = "attention", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %s = tfc.attention_scores %q, %k : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
  %t = tfc.scale %s by 0.5 : tensor<?x2x?x?xf32>
  %m = tfc.mask #tfc.mask<causal> %t : tensor<?x2x?x?xf32>
  %p = tfc.softmax %m : tensor<?x2x?x?xf32>
  %o = tfc.attention_context %p, %v : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
  return %o : tensor<?x2x?x4xf32>
}

// -----

// dx = p * (dp - sum(dp * p)); the mask's gradient zeroes the future.
// CHECK-LABEL: func.func @attention_grads_forward(
// CHECK:         scf.parallel
// CHECK:           %[[DOT:.*]] = scf.for {{.*}} -> (f32) {
// CHECK:             arith.addf %{{.*}}, %{{.*}} fastmath<reassoc> : f32
// CHECK:           scf.for
// CHECK:             arith.subf %{{.*}}, %[[DOT]] : f32
// CHECK:         } {tfc.kernel = "softmax_grad"}
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             arith.cmpi ugt
// CHECK-NEXT:        arith.select
// CHECK:         } {tfc.kernel = "mask_grad"}
func.func @attention_grads(%params: tensor<?xf32> {tfc.role = "params"},
                           %p: tensor<?x2x?x?xf32> {tfc.role = "x"},
                           %dp: tensor<?x2x?x?xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x?xf32> {tfc.role = "y"})
    attributes {tfc.model = "attention_grads", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %ds = tfc.softmax_grad %p, %dp : tensor<?x2x?x?xf32>
  %dm = tfc.mask_grad #tfc.mask<causal> %ds : tensor<?x2x?x?xf32>
  return %dm : tensor<?x2x?x?xf32>
}

// -----

// Pack K transposed (8 x 8 blocks transposed in registers: 3 stages of 8
// two-source shuffles, stored as vectors), then per (batch * head, block of
// queries) tiles of 6 queries: an unmasked sweep over the key tiles below
// the diagonal and a masked one (lanes past the row's last key are -inf),
// each with a 6 x 16 score tile (12 FMAs per k), row max and exp-sum by
// vector reductions, the running (m, l) in two vectors; out = O / l and
// lse = m + log l per row.
// CHECK-LABEL: func.func @flash_attention_forward(
// CHECK:         %[[PK:.*]] = memref.view
// CHECK:         %[[SCRATCH:.*]] = memref.view
// CHECK-NOT:     memref.view
// CHECK:         scf.parallel
// CHECK-NOT:       memref.store
// CHECK-COUNT-24:  vector.shuffle
// CHECK-NOT:       memref.store
// CHECK:           vector.store %{{.*}}, %[[PK]][
// CHECK:         } {tfc.kernel = "flash_attention"}
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             vector.store %{{.*}}, %[[SCRATCH]][
// CHECK:             %[[ML:.*]]:2 = scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>) {
// CHECK:               scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK:                 vector.load %[[PK]][
// CHECK-COUNT-12:        vector.fma
// CHECK:               }
// CHECK-NOT:           arith.select
// CHECK:               arith.maximumf %{{.*}}, %{{.*}} fastmath<nnan,nsz> : vector<8xf32>
// CHECK-NEXT:          vector.reduction <maximumf>, %{{.*}} fastmath<nnan,nsz> : vector<8xf32> into f32
// CHECK:               math.exp %{{.*}} : vector<8xf32>
// CHECK:               vector.store %{{.*}}, %[[SCRATCH]][
// CHECK:               vector.reduction <add>, %{{.*}} fastmath<reassoc> : vector<8xf32> into f32
// The P V accumulation into the scratch rows.
// CHECK:               scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK:             %[[ML2:.*]]:2 = scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%{{.*}} = %[[ML]]#0, %{{.*}} = %[[ML]]#1) -> (vector<8xf32>, vector<8xf32>) {
// CHECK:               scf.for {{.*}} -> (vector<8xf32>
// CHECK-COUNT-12:        vector.fma
// CHECK:               %[[OUT:.*]] = arith.cmpi sgt, %{{.*}}, %{{.*}} : vector<8xi32>
// CHECK-NEXT:          arith.select %[[OUT]], %{{.*}}, %{{.*}} : vector<8xi1>, vector<8xf32>
// CHECK:               vector.reduction <maximumf>
// CHECK:               vector.reduction <add>, %{{.*}} fastmath<reassoc>
// CHECK:             math.log %[[ML2]]#1 : vector<8xf32>
// CHECK-COUNT-6:     arith.divf
// CHECK-COUNT-6:     scf.if
// The lse rows (returned here, so stored).
// CHECK-COUNT-6:     scf.if
// CHECK:         } {tfc.kernel = "flash_attention"}
// CHECK-NOT:     scf.parallel
func.func @flash_attention(%params: tensor<?xf32> {tfc.role = "params"},
                           %q: tensor<?x2x?x8xf32> {tfc.role = "x"},
                           %k: tensor<?x2x?x8xf32> {tfc.role = "x"},
                           %v: tensor<?x2x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x8xf32> {tfc.role = "y"}, tensor<?x2x?xf32> {tfc.role = "y"})
    attributes {tfc.model = "flash_attention", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %o, %lse = tfc.flash_attention #tfc.mask<causal> %q, %k, %v scale 0.35355339059327373 : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x2x?xf32>)
  return %o, %lse : tensor<?x2x?x8xf32>, tensor<?x2x?xf32>
}

// -----

// O and dO packed transposed, D = rowsum(dO * O) from the panels with one
// FMA per d in the dP^T tile's order (two lanes of queries, masked stores),
// Q packed where O was, then one sweep per (batch * head) over key tiles:
// dQ zeroed, per query tile P^T and dP^T recomputed in registers (two score
// tiles), P^T masked where a query precedes the key or is past the end.
// CHECK-LABEL: func.func @flash_attention_grad_forward(
// CHECK:         %[[PQ:.*]] = memref.view
// CHECK:         %[[PDO:.*]] = memref.view
// CHECK:         %[[DELTA:.*]] = memref.view
// CHECK:         %[[SCRATCH:.*]] = memref.view
// CHECK-NOT:     memref.view
// CHECK:         scf.parallel
// CHECK-COUNT-24:  vector.shuffle
// CHECK:           vector.store %{{.*}}, %[[PQ]][
// CHECK:         } {tfc.kernel = "flash_attention_grad"}
// CHECK:         scf.parallel
// CHECK-COUNT-24:  vector.shuffle
// CHECK:           vector.store %{{.*}}, %[[PDO]][
// CHECK:         } {tfc.kernel = "flash_attention_grad"}
// CHECK:         scf.parallel
// CHECK:           scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>)
// CHECK:             %[[O0:.*]] = vector.load %[[PQ]][
// CHECK:             %[[DO0:.*]] = vector.load %[[PDO]][
// CHECK:             vector.fma %[[O0]], %[[DO0]]
// CHECK:             %[[O1:.*]] = vector.load %[[PQ]][
// CHECK:             %[[DO1:.*]] = vector.load %[[PDO]][
// CHECK:             vector.fma %[[O1]], %[[DO1]]
// CHECK:           vector.create_mask
// CHECK:           vector.maskedstore %[[DELTA]][
// CHECK:           vector.create_mask
// CHECK:           vector.maskedstore %[[DELTA]][
// CHECK:         } {tfc.kernel = "flash_attention_grad"}
// CHECK:         scf.parallel
// CHECK-COUNT-24:  vector.shuffle
// CHECK:           vector.store %{{.*}}, %[[PQ]][
// CHECK:         } {tfc.kernel = "flash_attention_grad"}
// CHECK:         scf.parallel
// CHECK:           scf.for
// CHECK:             vector.store
// CHECK:           scf.for
// Three sweeps over query tiles: masked (before the diagonal), full, tail.
// CHECK:             scf.for
// CHECK:               scf.for {{.*}} -> (vector<8xf32>
// CHECK:                 vector.load %[[PQ]][
// CHECK-COUNT-12:        vector.fma
// CHECK:               vector.maskedload %{{.*}}
// CHECK:               math.exp
// CHECK:               arith.ori
// CHECK:               scf.for {{.*}} -> (vector<8xf32>
// CHECK:                 vector.load %[[PDO]][
// CHECK:               vector.maskedload
// CHECK:             scf.for
// CHECK-NOT:           vector.maskedload
// CHECK:               scf.for {{.*}} -> (vector<8xf32>
// CHECK:                 vector.load %[[PQ]][
// CHECK-NOT:           vector.maskedload
// CHECK:               scf.for {{.*}} -> (vector<8xf32>
// CHECK:                 vector.load %[[PDO]][
// CHECK:             scf.for
// CHECK:               vector.maskedload
// CHECK:         } {tfc.kernel = "flash_attention_grad"}
// CHECK-NOT:     scf.parallel
func.func @flash_attention_grad(%params: tensor<?xf32> {tfc.role = "params"},
                                %q: tensor<?x2x?x8xf32> {tfc.role = "x"},
                                %k: tensor<?x2x?x8xf32> {tfc.role = "x"},
                                %v: tensor<?x2x?x8xf32> {tfc.role = "x"},
                                %o: tensor<?x2x?x8xf32> {tfc.role = "x"},
                                %lse: tensor<?x2x?xf32> {tfc.role = "x"},
                                %do: tensor<?x2x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x2x?x8xf32> {tfc.role = "y"}, tensor<?x2x?x8xf32> {tfc.role = "y"},
        tensor<?x2x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "flash_attention_grad", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 1 : i64, tfc.vocab = 0 : i64} {
  %dq, %dk, %dv = tfc.flash_attention_grad #tfc.mask<causal> %q, %k, %v, %o, %lse, %do scale 0.35355339059327373 : (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?xf32>, tensor<?x2x?x8xf32>) -> (tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>)
  return %dq, %dk, %dv : tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>, tensor<?x2x?x8xf32>
}
