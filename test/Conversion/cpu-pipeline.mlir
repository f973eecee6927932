// RUN: tfc-opt %s -tfc-cpu-pipeline=vector-width=8 | FileCheck %s
// RUN: tfc-opt %s -tfc-cpu-pipeline=vector-width=8 | FileCheck %s --check-prefix=NOT
// The whole pipeline, model function to LLVM dialect: nothing but llvm ops
// is left, parallel loops call the runtime, f32 exp/log are polynomials.

// NOT-NOT: {{^ *(%[^=]*= )?(arith|scf|cf|memref|vector|math|func|affine|index|tfc)\.}}
// NOT-NOT: unrealized_conversion_cast
// NOT-NOT: llvm.call @{{(exp|log|tanh|erf)f?}}(

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

// CHECK:       llvm.func @tfc_rt_parallel_for(!llvm.ptr, i64, !llvm.ptr, !llvm.ptr)
// CHECK-LABEL: llvm.func @lm_forward(
// CHECK-SAME:      %[[RT:[a-z0-9]+]]: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: !llvm.ptr,
// CHECK-SAME:      %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64) -> i32
// CHECK-DAG:     %[[BODY:.*]] = llvm.mlir.addressof @lm_forward_par0 : !llvm.ptr
// CHECK-DAG:     llvm.alloca %{{.*}} x !llvm.struct<
// CHECK:         llvm.call @tfc_rt_parallel_for(%[[RT]], %{{.*}}, %[[BODY]], %{{.*}}) : (!llvm.ptr, i64, !llvm.ptr, !llvm.ptr) -> ()
// CHECK:         llvm.return %{{.*}} : i32
// The outlined bodies take (ctx, begin, end); the micro-kernel's FMAs are
// 8-lane vectors.
// CHECK:       llvm.func internal @lm_forward_par{{[0-9]+}}(%{{[a-z0-9]+}}: !llvm.ptr, %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64)
// CHECK:         llvm.intr.fmuladd(%{{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-LABEL: llvm.func @lm_workspace_size(
// CHECK-SAME:      %{{[a-z0-9]+}}: i64, %{{[a-z0-9]+}}: i64) -> i64
// CHECK:         llvm.mlir.constant(-1 : i64) : i64
// CHECK:         llvm.return %{{.*}} : i64
