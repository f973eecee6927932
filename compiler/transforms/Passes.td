//===- Passes.td - tfc IR-to-IR passes ---------------------*- tablegen -*-===//

#ifndef TFC_TRANSFORMS_PASSES_TD
#define TFC_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def TfcDeriveBackward : Pass<"tfc-derive-backward", "ModuleOp"> {
  let summary = "Derives the backward function of each tfc model (autodiff)";
  let description = [{
    For every `tfc.model` function `@NAME`, builds `@NAME_grad`: reverse-mode
    differentiation through the ops' GradientOpInterface, with the depth loop
    run in reverse. Forward values a gradient rule needs are marked
    `tfc.save = slot` in the forward function (on the op, the function
    argument, or `tfc.save_iter_arg` on the depth loop) and read back in the
    backward function with `tfc.saved slot [layer]`; parameter gradients are
    accumulated into the d_params tensor with `tfc.param_grad`.

    Before:
    ```mlir
    func.func @m(%p, %x) -> tensor<?x?x8xf32> attributes {tfc.model = "m"} {
      %r = scf.for %i = %c0 to %c2 step %c1 iter_args(%h = %x) {
        %w = tfc.param %p[%i] ...
        %y = tfc.linear %h, %w ...
        scf.yield %y
      }
      return %r
    }
    ```
    After (added):
    ```mlir
    func.func @m_grad(%p, %dy, %dparams) -> (tensor<?xf32>, tensor<?x?x8xf32>)
        attributes {tfc.backward_of = "m"} {
      %r:2 = scf.for %j = %c0 to %c2 step %c1 iter_args(%dh = %dy, %dp = %dparams) {
        %i = arith.subi %c1, %j        // layers in reverse
        %h = tfc.saved 0 [%i]          // the layer's input, saved by forward
        %w = tfc.param %p[%i] ...
        %dx = tfc.linear %dh, %w {transpose_weight}
        %dw = tfc.linear_weight_grad %h, %dh
        %dp2 = tfc.param_grad %dp[%i], %dw ...
        scf.yield %dx, %dp2
      }
      return %r#1, %r#0
    }
    ```
  }];
  let dependentDialects = ["::mlir::tfc::TfcDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::func::FuncDialect"];
}

def TfcFuseAttention : Pass<"tfc-fuse-attention", "ModuleOp"> {
  let summary = "Fuses scores, scale, mask, softmax and context into "
                "tfc.flash_attention";
  let description = [{
    Rewrites attention as the frontend writes it, one op per step of the
    math, into one flash-style op that never materialises the [s, t]
    scores: `attention_context(softmax([mask](scale(attention_scores(q,
    k)))), v)`, where the mask (bidirectional when absent) and the scale
    (1 when absent) are optional and every intermediate has no other use.
    Self- and cross-attention alike (key length t may differ from s). The
    fused op's gradient rule builds `tfc.flash_attention_grad`, so backward
    is fused too once tfc-derive-backward runs.

    Before:
    ```mlir
    %s = tfc.attention_scores %q, %k : (...) -> tensor<?x12x?x?xf32>
    %t = tfc.scale %s by 1.250000e-01 : tensor<?x12x?x?xf32>
    %m = tfc.mask #tfc.mask<causal> %t : tensor<?x12x?x?xf32>
    %p = tfc.softmax %m : tensor<?x12x?x?xf32>
    %o = tfc.attention_context %p, %v : (...) -> tensor<?x12x?x64xf32>
    ```
    After:
    ```mlir
    %o, %lse = tfc.flash_attention #tfc.mask<causal> %q, %k, %v
        scale 1.250000e-01 {tfc.fused = "attention"}
        : (...) -> (tensor<?x12x?x64xf32>, tensor<?x12x?xf32>)
    ```
  }];
  let dependentDialects = ["::mlir::tfc::TfcDialect"];
}

#endif // TFC_TRANSFORMS_PASSES_TD
