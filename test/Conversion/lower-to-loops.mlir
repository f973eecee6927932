// RUN: tfc-opt %s -tfc-lower-to-loops=vector-width=8 | FileCheck %s
// RUN: tfc-opt %s -tfc-lower-to-loops=vector-width=8 -canonicalize | FileCheck %s --check-prefix=SIZE
// RUN: tfc-opt %s -tfc-lower-to-loops | FileCheck %s --check-prefix=VL16
// RUN: tfc-opt %s -tfc-lower-to-loops | FileCheck %s --check-prefix=MSG
// Model functions become NAME_forward (argument checks, then loops over the
// caller's workspace) and NAME_workspace_size; the model functions are gone.

// CHECK-NOT: func.func @mini(
// CHECK-NOT: func.func @lm(
// CHECK-NOT: func.func @dec(

// The messages of the argument checks: function, argument, value.
// MSG-DAG: llvm.func @tfc_rt_error(i32, !llvm.ptr, ...) -> i32
// MSG-DAG: llvm.func @tfc_rt_check_finite(i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, !llvm.ptr, !llvm.ptr, i64) -> i32
// MSG-DAG: @mini_forward.str{{[0-9]+}}("mini_forward: params is NULL\00")
// MSG-DAG: @mini_forward.str{{[0-9]+}}("mini_forward: x is NULL\00")
// MSG-DAG: @mini_forward.str{{[0-9]+}}("mini_forward: y is NULL\00")
// MSG-DAG: @mini_forward.str{{[0-9]+}}("mini_forward: workspace is NULL\00")
// MSG-DAG: @mini_forward.str{{[0-9]+}}("mini_forward: batch = %lld is outside [1, 4]\00")
// MSG-DAG: @mini_forward.str{{[0-9]+}}("mini_forward: seq = %lld is outside [1, 16]\00")
// MSG-DAG: @mini_forward.str{{[0-9]+}}("mini_forward: workspace 0x%llx is not 64-byte aligned\00")
// MSG-DAG: @mini_forward.str{{[0-9]+}}("mini_forward: workspace_bytes = %lld is below mini_workspace_size(batch, seq) = %lld\00")
// MSG-DAG: @lm_forward.str{{[0-9]+}}("lm_forward: tokens[%lld] = %lld is outside [0, 16)\00")
// MSG-DAG: @lm_forward.str{{[0-9]+}}("lm_forward: targets is NULL\00")
// MSG-DAG: @dec_forward.str{{[0-9]+}}("dec_forward: enc_seq = %lld is outside [1, 8]\00")
// MSG-DAG: @dec_forward.str{{[0-9]+}}("dec_forward: workspace_bytes = %lld is below dec_workspace_size(batch, seq, enc_seq) = %lld\00")

// A linear layer: y = x W + b.
func.func @mini(%params: tensor<?xf32> {tfc.role = "params"},
                %x: tensor<?x?x8xf32> {tfc.role = "x"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "mini", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 72 : i64, tfc.vocab = 0 : i64} {
  %w = tfc.param %params {name = "w", offset = 0 : i64} : tensor<?xf32> -> tensor<8x8xf32>
  %b = tfc.param %params {name = "b", offset = 64 : i64} : tensor<?xf32> -> tensor<8xf32>
  %y = tfc.linear %x, %w, %b : (tensor<?x?x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// rt, params, x, y, workspace, workspace_bytes, batch, seq.
// CHECK-LABEL: func.func @mini_forward(
// CHECK-SAME:      %[[RT:[a-z0-9]+]]: !llvm.ptr, %[[P:[a-z0-9]+]]: !llvm.ptr, %[[X:[a-z0-9]+]]: !llvm.ptr, %[[Y:[a-z0-9]+]]: !llvm.ptr, %[[WS:[a-z0-9]+]]: !llvm.ptr,
// CHECK-SAME:      %[[WSB:[a-z0-9]+]]: i64, %[[B:[a-z0-9]+]]: i64, %[[S:[a-z0-9]+]]: i64) -> i32 attributes {tfc.runtime_handle} {
// A NULL params, input, output or workspace pointer is status 1 (rt may be NULL)...
// CHECK:         %[[NULL:.*]] = llvm.mlir.zero : !llvm.ptr
// CHECK-NOT:     llvm.icmp "eq" %[[RT]]
// CHECK:         %[[NP:.*]] = llvm.icmp "eq" %[[P]], %[[NULL]] : !llvm.ptr
// CHECK:         llvm.icmp "eq" %[[X]], %[[NULL]] : !llvm.ptr
// CHECK:         llvm.icmp "eq" %[[Y]], %[[NULL]] : !llvm.ptr
// CHECK:         llvm.icmp "eq" %[[WS]], %[[NULL]] : !llvm.ptr
// ...batch or seq outside [1, max] is 2...
// CHECK:         arith.cmpi slt, %[[B]], %{{.*}} : i64
// CHECK:         %[[MAXB:.*]] = arith.constant 4 : i64
// CHECK:         arith.cmpi sgt, %[[B]], %[[MAXB]] : i64
// CHECK:         arith.cmpi slt, %[[S]], %{{.*}} : i64
// CHECK:         %[[MAXS:.*]] = arith.constant 16 : i64
// CHECK:         arith.cmpi sgt, %[[S]], %[[MAXS]] : i64
// ...a misaligned workspace (any of the low 6 bits set) is 5...
// CHECK:         %[[WSI:.*]] = llvm.ptrtoint %[[WS]] : !llvm.ptr to i64
// CHECK:         %[[C63:.*]] = arith.constant 63 : i64
// CHECK:         %[[LOW:.*]] = arith.andi %[[WSI]], %[[C63]] : i64
// CHECK:         %[[MIS:.*]] = arith.cmpi ne, %[[LOW]], %{{.*}} : i64
// ...and so is workspace_bytes below what NAME_workspace_size asks for.
// CHECK:         %[[NEED:.*]] = call @mini_workspace_size(%[[B]], %[[S]]) : (i64, i64) -> i64
// CHECK:         %[[SMALL:.*]] = arith.cmpi slt, %[[WSB]], %[[NEED]] : i64
// The checks fold, lowest priority first, into the status, the message and
// its values of the first failing one.
// CHECK:         %[[C5:.*]] = arith.constant 5 : i32
// CHECK:         %[[ST1:.*]] = arith.select %[[SMALL]], %[[C5]], %{{.*}} : i32
// CHECK:         llvm.mlir.addressof @mini_forward.str0 : !llvm.ptr
// CHECK:         arith.select %[[SMALL]], %[[WSB]], %{{.*}} : i64
// CHECK:         arith.select %[[SMALL]], %[[NEED]], %{{.*}} : i64
// CHECK:         arith.select %[[MIS]], %{{.*}}, %[[ST1]] : i32
// CHECK:         arith.select %[[MIS]], %[[WSI]], %{{.*}} : i64
// CHECK:         %[[CODE:.*]] = arith.select %[[NP]], %{{.*}}, %{{.*}} : i32
// CHECK:         %[[FMT:.*]] = llvm.select %[[NP]], %{{.*}}, %{{.*}} : i1, !llvm.ptr
// CHECK:         %[[ISOK:.*]] = arith.cmpi eq, %[[CODE]], %{{.*}} : i32
// CHECK:         %[[RES:.*]] = scf.if %[[ISOK]] -> (i32) {
// The params buffer has tfc.param_count floats; the workspace is carved with
// memref.view.
// CHECK:           %[[NPARAMS:.*]] = arith.constant 72 : index
// CHECK:           arith.index_cast %[[NPARAMS]] : index to i64
// CHECK:           llvm.insertvalue %[[P]], %{{.*}}[0]
// CHECK:           builtin.unrealized_conversion_cast %{{.*}} to memref<?xf32>
// CHECK:           llvm.insertvalue %[[WS]], %{{.*}}[0]
// CHECK:           %[[WSM:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi8>
// CHECK:           %[[PACKED:.*]] = memref.view %[[WSM]][%{{.*}}][%{{.*}}] : memref<?xi8> to memref<?xf32>
// The profile (runtime.h): the whole call, then each op, is timed.
// CHECK:           %[[CALL_T0:.*]] = llvm.call @tfc_rt_profile_begin(%[[RT]]) : (!llvm.ptr) -> i64
// CHECK:           llvm.call @tfc_rt_profile_begin(%[[RT]]) : (!llvm.ptr) -> i64
// The matmul: B packed into panels (rows of unit column stride with masked
// vector loads), then the register-blocked micro-kernel.
// CHECK:           scf.parallel
// CHECK:             vector.maskedload
// CHECK:             vector.store %{{.*}}, %[[PACKED]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK:           scf.parallel
// CHECK:             scf.for {{.*}} -> (vector<8xf32>
// CHECK:               vector.load %[[PACKED]][%{{.*}}] : memref<?xf32>, vector<8xf32>
// CHECK:               vector.broadcast %{{.*}} : f32 to vector<8xf32>
// CHECK:               vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK:             vector.maskedstore
// CHECK:           llvm.call @tfc_rt_profile_end(%[[RT]], %{{.*}}, %{{.*}}) : (!llvm.ptr, !llvm.ptr, i64) -> ()
// The numerical guard: a chained runtime call per output (a no-op unless on).
// CHECK:             %[[FIN:.*]] = llvm.call @tfc_rt_check_finite(%{{.*}}, %[[RT]], %{{.*}}, %{{.*}}, %[[Y]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) : (i32, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, i64, !llvm.ptr, !llvm.ptr, i64) -> i32
// CHECK-NEXT:        scf.yield %[[FIN]] : i32
// Without tokens the token check is a constant true (it folds away).
// CHECK:           } else {
// CHECK-NEXT:        %[[C3:.*]] = arith.constant 3 : i32
// CHECK-NEXT:        scf.yield %[[C3]] : i32
// CHECK-NEXT:      }
// CHECK-NEXT:      llvm.mlir.addressof @mini_forward.profile{{[0-9]+}} : !llvm.ptr
// CHECK-NEXT:      %[[CALL_NAME:.*]] = llvm.getelementptr
// CHECK-NEXT:      llvm.call @tfc_rt_profile_end(%[[RT]], %[[CALL_NAME]], %[[CALL_T0]])
// CHECK-NEXT:      scf.yield %{{.*}} : i32
// A failing check records its message (one call for all of them).
// CHECK-NEXT:    } else {
// CHECK-NEXT:      %[[ERR:.*]] = llvm.call @tfc_rt_error(%[[CODE]], %[[FMT]], %{{.*}}, %{{.*}}) vararg(!llvm.func<i32 (i32, ptr, ...)>) : (i32, !llvm.ptr, i64, i64) -> i32
// CHECK-NEXT:      scf.yield %[[ERR]] : i32
// CHECK-NEXT:    }
// CHECK-NEXT:    return %[[RES]] : i32

// CHECK-LABEL: func.func @mini_workspace_size(
// CHECK-SAME:      %[[B:[a-z0-9]+]]: i64, %[[S:[a-z0-9]+]]: i64) -> i64 {
// CHECK:         arith.cmpi sgt, %[[B]], %{{.*}} : i64
// CHECK:         arith.cmpi sgt, %[[S]], %{{.*}} : i64
// CHECK:         scf.if %{{.*}} -> (i64) {
// CHECK-NEXT:      %[[M1:.*]] = arith.constant -1 : i64
// CHECK-NEXT:      scf.yield %[[M1]] : i64
// CHECK-NEXT:    } else {
// CHECK-NOT:       memref.view
// CHECK:           %[[BYTES:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK-NEXT:      scf.yield %[[BYTES]] : i64

// One panel of 8 x 16 floats: 512 bytes.
// SIZE-LABEL: func.func @mini_workspace_size(
// SIZE-DAG:     %[[SIZE:.*]] = arith.constant 512 : i64
// SIZE-DAG:     %[[M1:.*]] = arith.constant -1 : i64
// SIZE:         %[[R:.*]] = arith.select %{{.*}}, %[[M1]], %[[SIZE]] : i64
// SIZE:         return %[[R]] : i64

// The default vector width is 16 (AVX-512).
// VL16-LABEL: func.func @mini_forward(
// VL16:         vector.fma %{{.*}}, %{{.*}}, %{{.*}} : vector<16xf32>

// Tokens in, logits and loss out: embedding, learned positions, a head tied
// to the embedding table, cross-entropy.
func.func @lm(%params: tensor<?xf32> {tfc.role = "params"},
              %tokens: tensor<?x?xi32> {tfc.role = "tokens"},
              %targets: tensor<?x?xi32> {tfc.role = "targets"})
    -> (tensor<?x?x16xf32> {tfc.role = "logits"}, tensor<f32> {tfc.role = "loss"})
    attributes {tfc.model = "lm", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 192 : i64, tfc.vocab = 16 : i64} {
  %table = tfc.param %params {name = "embed.tokens", offset = 0 : i64} : tensor<?xf32> -> tensor<16x8xf32>
  %pos = tfc.param %params {name = "embed.positions", offset = 128 : i64} : tensor<?xf32> -> tensor<8x8xf32>
  %h = tfc.embedding %tokens, %table : (tensor<?x?xi32>, tensor<16x8xf32>) -> tensor<?x?x8xf32>
  %h1 = tfc.add_positions #tfc.positions<learned> %h, %pos : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
  %logits = tfc.linear %h1, %table {transpose_weight} : (tensor<?x?x8xf32>, tensor<16x8xf32>) -> tensor<?x?x16xf32>
  %loss = tfc.cross_entropy %logits, %targets : (tensor<?x?x16xf32>, tensor<?x?xi32>) -> tensor<f32>
  return %logits, %loss : tensor<?x?x16xf32>, tensor<f32>
}

// rt, params, tokens, targets, logits, loss, workspace, workspace_bytes,
// batch, seq.
// CHECK-LABEL: func.func @lm_forward(
// CHECK-SAME:      %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %[[TOK:[a-z0-9]+]]: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr,
// CHECK-SAME:      %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64) -> i32 attributes {tfc.runtime_handle} {
// CHECK:         arith.constant 2 : i64
// CHECK:         arith.constant 8 : i64
// CHECK:         scf.if %{{.*}} -> (i32) {
// CHECK:           llvm.insertvalue %[[TOK]], %{{.*}}[0]
// CHECK:           %[[TOKM:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?xi32>
// Every token id must lie in [0, vocab) before any compute, else status 3
// with a message naming the first bad one (-1: none). The scan is a
// one-iteration parallel loop (a kernel on CUDA) that leaves its result in
// a workspace word the host reads.
// CHECK:           %[[LAST:.*]] = arith.constant 15 : i32
// CHECK:           %[[NONE:.*]] = arith.constant -1 : i64
// CHECK:           scf.parallel
// CHECK:             %[[SCAN:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %[[NONE]]) -> (i64) {
// CHECK:               %[[ID:.*]] = memref.load %[[TOKM]][%{{.*}}] : memref<?xi32>
// CHECK-DAG:           arith.cmpi sge, %[[ID]], %{{.*}} : i32
// CHECK-DAG:           arith.cmpi sle, %[[ID]], %[[LAST]] : i32
// CHECK:             memref.store %[[SCAN]], %[[SLOT:.*]][%{{.*}}] : memref<?xi64>
// CHECK:           %[[FIRST:.*]] = memref.load %[[SLOT]][%{{.*}}] : memref<?xi64>
// CHECK:           %[[ALL:.*]] = arith.cmpi eq, %[[FIRST]], %[[NONE]] : i64
// CHECK:           %[[INNER:.*]] = scf.if %[[ALL]] -> (i32) {
// CHECK:             scf.parallel
// CHECK:             math.exp
// CHECK:             math.log
// CHECK:             llvm.call @tfc_rt_check_finite
// CHECK:             llvm.call @tfc_rt_check_finite
// CHECK:           } else {
// CHECK:             %[[BAD:.*]] = memref.load %[[TOKM]][%{{.*}}] : memref<?xi32>
// CHECK:             %[[BAD64:.*]] = arith.extsi %[[BAD]] : i32 to i64
// CHECK:             %[[C3:.*]] = arith.constant 3 : i32
// CHECK:             %[[TERR:.*]] = llvm.call @tfc_rt_error(%[[C3]], %{{.*}}, %[[FIRST]], %[[BAD64]]) vararg
// CHECK-NEXT:        scf.yield %[[TERR]] : i32
// CHECK-NEXT:      }
// CHECK-NEXT:      llvm.mlir.addressof @lm_forward.profile{{[0-9]+}} : !llvm.ptr
// CHECK-NEXT:      llvm.getelementptr
// CHECK-NEXT:      llvm.call @tfc_rt_profile_end(
// CHECK-NEXT:      scf.yield %[[INNER]] : i32
// CHECK-LABEL: func.func @lm_workspace_size(
// CHECK-SAME:      %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64) -> i64

// Cross-attention on an encoder output, inside a depth loop of two layers.
func.func @dec(%params: tensor<?xf32> {tfc.role = "params"},
               %x: tensor<?x?x8xf32> {tfc.role = "x"},
               %enc: tensor<?x?x8xf32> {tfc.role = "enc"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "dec", tfc.max_batch = 2 : i64, tfc.max_seq = 8 : i64,
                tfc.param_count = 144 : i64, tfc.vocab = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c1 = arith.constant 1 : index
  %out = scf.for %layer = %c0 to %c2 step %c1 iter_args(%h = %x) -> (tensor<?x?x8xf32>) {
    %wq = tfc.param %params[%layer] {name = "cross.wq.weight", offset = 0 : i64, layer_stride = 72 : i64} : tensor<?xf32> -> tensor<8x8xf32>
    %g = tfc.param %params[%layer] {name = "cross_norm.weight", offset = 64 : i64, layer_stride = 72 : i64} : tensor<?xf32> -> tensor<8xf32>
    %n = tfc.rms_norm %h, %g {epsilon = 1.0e-6 : f64} : (tensor<?x?x8xf32>, tensor<8xf32>) -> tensor<?x?x8xf32>
    %q0 = tfc.linear %n, %wq : (tensor<?x?x8xf32>, tensor<8x8xf32>) -> tensor<?x?x8xf32>
    %q = tfc.split_heads %q0 : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
    %k = tfc.split_heads %enc : tensor<?x?x8xf32> -> tensor<?x2x?x4xf32>
    %s = tfc.attention_scores %q, %k : (tensor<?x2x?x4xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x?xf32>
    %s1 = tfc.scale %s by 0.5 : tensor<?x2x?x?xf32>
    %p = tfc.softmax %s1 : tensor<?x2x?x?xf32>
    %o = tfc.attention_context %p, %k : (tensor<?x2x?x?xf32>, tensor<?x2x?x4xf32>) -> tensor<?x2x?x4xf32>
    %m = tfc.merge_heads %o : tensor<?x2x?x4xf32> -> tensor<?x?x8xf32>
    %r = tfc.residual_add %h, %m : tensor<?x?x8xf32>
    scf.yield %r : tensor<?x?x8xf32>
  }
  return %out : tensor<?x?x8xf32>
}

// rt, params, x, enc, y, workspace, batch, seq, enc_seq; enc_seq has the
// range of seq.
// CHECK-LABEL: func.func @dec_forward(
// CHECK-SAME:      %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %[[ENC:[a-z0-9]+]]: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr,
// CHECK-SAME:      %{{[a-z0-9]+}}: i64, %[[B:[a-z0-9]+]]: i64, %[[S:[a-z0-9]+]]: i64, %[[ES:[a-z0-9]+]]: i64) -> i32 attributes {tfc.runtime_handle} {
// CHECK:         arith.cmpi sgt, %[[B]], %{{.*}} : i64
// CHECK:         arith.cmpi sgt, %[[S]], %{{.*}} : i64
// CHECK:         arith.cmpi slt, %[[ES]], %{{.*}} : i64
// CHECK:         %[[MAXES:.*]] = arith.constant 8 : i64
// CHECK:         arith.cmpi sgt, %[[ES]], %[[MAXES]] : i64
// CHECK:         scf.if
// CHECK:           %[[BI:.*]] = arith.index_cast %[[B]] : i64 to index
// CHECK:           arith.index_cast %[[S]] : i64 to index
// CHECK:           %[[ESI:.*]] = arith.index_cast %[[ES]] : i64 to index
// The encoder output is [batch, enc_seq, 8].
// CHECK:           %[[ROWS:.*]] = arith.muli %[[BI]], %[[ESI]] : index
// CHECK:           %[[N:.*]] = arith.muli %[[ROWS]], %{{.*}} : index
// CHECK:           %[[N64:.*]] = arith.index_cast %[[N]] : index to i64
// CHECK:           llvm.insertvalue %[[ENC]], %{{.*}}[0]
// CHECK:           llvm.insertvalue %[[N64]], %{{.*}}[3, 0]
// x is copied into the buffer the depth loop carries; the loop survives as
// an scf.for around the block's parallel loops, and layer parameters sit at
// offset + layer * layer_stride.
// CHECK:           scf.parallel
// CHECK:             scf.for
// CHECK:               memref.load
// CHECK:               memref.store
// CHECK:             scf.reduce
// CHECK-NEXT:      }
// CHECK:           scf.for %[[L:[a-z0-9]+]] = %{{[a-z0-9_]+}} to %{{[a-z0-9_]+}} step %{{[a-z0-9_]+}} {
// CHECK:             %[[STRIDE:.*]] = arith.constant 72 : index
// CHECK:             arith.muli %[[L]], %[[STRIDE]] : index
// CHECK:             scf.parallel
// CHECK:               math.rsqrt
// CHECK:             scf.parallel
// CHECK:               math.exp
// CHECK-LABEL: func.func @dec_workspace_size(
// CHECK-SAME:      %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64) -> i64
