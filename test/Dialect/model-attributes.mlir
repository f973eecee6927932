// RUN: tfc-opt %s | tfc-opt | FileCheck %s
// The tfc.* attributes of a model, its gradient function and the ops inside,
// in the forms the tfc dialect accepts (model-attributes-invalid.mlir has
// one case per rule it rejects).

// A language model: every role of forward, the sizes, the linear dtype and
// the parameter table; a forward argument saved for backward.
// CHECK-LABEL: func.func @lm(
// CHECK-SAME:      {tfc.role = "params"}
// CHECK-SAME:      {tfc.role = "tokens"}
// CHECK-SAME:      {tfc.role = "targets"}
// CHECK-SAME:      -> (tensor<?x?x5xf32> {tfc.role = "logits"}, tensor<f32> {tfc.role = "loss"})
// CHECK-SAME:      tfc.param_names = ["embed.tokens"], tfc.param_ranges = array<i64: 0, 40>
func.func @lm(%params: tensor<?xf32> {tfc.role = "params"},
              %tokens: tensor<?x?xi32> {tfc.role = "tokens"},
              %targets: tensor<?x?xi32> {tfc.role = "targets"})
    -> (tensor<?x?x5xf32> {tfc.role = "logits"}, tensor<f32> {tfc.role = "loss"})
    attributes {tfc.model = "lm", tfc.max_batch = 4 : i64, tfc.max_seq = 16 : i64,
                tfc.param_count = 40 : i64, tfc.vocab = 5 : i64, tfc.linear_dtype = "bf16",
                tfc.param_names = ["embed.tokens"], tfc.param_ranges = array<i64: 0, 40>} {
  %e = tfc.param %params {name = "embed.tokens", offset = 0 : i64} : tensor<?xf32> -> tensor<5x8xf32>
  %h = tfc.embedding %tokens, %e {tfc.save = 0 : i64} : (tensor<?x?xi32>, tensor<5x8xf32>) -> tensor<?x?x8xf32>
  %l, %loss, %dl = tfc.loss_head %h, %e, %targets {tfc.fused = "loss-head", tfc.save_results = array<i64: -1, -1, 1>, transpose_weight} : (tensor<?x?x8xf32>, tensor<5x8xf32>, tensor<?x?xi32>) -> (tensor<?x?x5xf32>, tensor<f32>, tensor<?x?x5xf32>)
  return %l, %loss : tensor<?x?x5xf32>, tensor<f32>
}

// A block over an encoder output with a depth loop whose input is saved.
// CHECK-LABEL: func.func @dec(
// CHECK-SAME:      {tfc.role = "x", tfc.save = 0 : i64}
// CHECK:         scf.for
// CHECK:         } {tfc.save_iter_arg = 1 : i64}
func.func @dec(%params: tensor<?xf32> {tfc.role = "params"},
               %x: tensor<?x?x8xf32> {tfc.role = "x", tfc.save = 0 : i64},
               %enc: tensor<?x?x8xf32> {tfc.role = "enc"})
    -> (tensor<?x?x8xf32> {tfc.role = "y"})
    attributes {tfc.model = "dec", tfc.max_batch = 1 : i64, tfc.max_seq = 1 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%h = %x) -> (tensor<?x?x8xf32>) {
    %s = tfc.residual_add %h, %enc : tensor<?x?x8xf32>
    scf.yield %s : tensor<?x?x8xf32>
  } {tfc.save_iter_arg = 1 : i64}
  return %r : tensor<?x?x8xf32>
}

// Its gradient function, as tfc-derive-backward builds it.
// CHECK-LABEL: func.func @dec_grad(
// CHECK-SAME:      attributes {tfc.backward_of = "dec", tfc.max_batch = 1 : i64
func.func @dec_grad(%params: tensor<?xf32> {tfc.role = "params"},
                    %d_y: tensor<?x?x8xf32> {tfc.role = "d_y"},
                    %d_params: tensor<?xf32> {tfc.role = "d_params"})
    -> (tensor<?xf32> {tfc.role = "d_params"}, tensor<?x?x8xf32> {tfc.role = "d_x"},
        tensor<?x?x8xf32> {tfc.role = "d_enc"})
    attributes {tfc.backward_of = "dec", tfc.max_batch = 1 : i64, tfc.max_seq = 1 : i64,
                tfc.param_count = 0 : i64, tfc.vocab = 0 : i64} {
  return %d_params, %d_y, %d_y : tensor<?xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>
}

// A lowered entry point and a kernel's name.
// CHECK-LABEL: func.func @lowered(
// CHECK-SAME:      attributes {tfc.runtime_handle}
// CHECK:         arith.constant {tfc.kernel = "token_check"} 0 : index
func.func @lowered(%rt: !llvm.ptr) -> i32 attributes {tfc.runtime_handle} {
  %c = arith.constant {tfc.kernel = "token_check"} 0 : index
  %ok = arith.constant 0 : i32
  return %ok : i32
}
