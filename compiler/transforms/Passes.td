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

def TfcFuseProjections : Pass<"tfc-fuse-projections", "ModuleOp"> {
  let summary = "Merges linear layers of one input into one matmul";
  let description = [{
    Q, K and V of one attention input (K and V of the encoder in
    cross-attention) become one `tfc.merged_linear`, whose matmul packs its
    right-hand side from the separate weights; a gated FFN's gate and up
    projections become one `tfc.glu_linear`, whose output loop applies the
    gate. Backward (the ops' gradient rules) computes the input gradient as
    one matmul over the concatenated parts and the weight and bias gradients
    as one more. Only tfc.linear ops without `transpose_weight` are merged.

    Before:
    ```mlir
    %q = tfc.linear %u, %wq, %bq : ...
    %k = tfc.linear %u, %wk, %bk : ...
    %v = tfc.linear %u, %wv, %bv : ...
    %g = tfc.linear %z, %wg : ...
    %up = tfc.linear %z, %wu : ...
    %h = tfc.glu #tfc.activation<silu> %g, %up : ...
    ```
    After:
    ```mlir
    %q, %k, %v = tfc.merged_linear %u weights(%wq, %wk, %wv)
                                      biases(%bq, %bk, %bv) {tfc.fused = "projections"} : ...
    %h, %gate, %up = tfc.glu_linear #tfc.activation<silu> %z, %wg, %wu
                                      {tfc.fused = "projections"} : ...
    ```
  }];
  let dependentDialects = ["::mlir::tfc::TfcDialect"];
}

def TfcFuseEpilogue : Pass<"tfc-fuse-epilogue", "ModuleOp"> {
  let summary = "Applies an activation in its linear layer's output loop";
  let description = [{
    `tfc.activation` of a `tfc.linear` (whose only use it is) becomes one
    `tfc.linear_act`: bias and activation are applied to the matmul's
    register tiles before they are stored, and the pre-activation is stored
    only when backward reads it. Its gradient computes `dy * act'(pre)` and
    the bias gradient while the weight gradient's matmul packs them.

    Before:
    ```mlir
    %pre = tfc.linear %x, %w, %b : ...
    %y = tfc.activation #tfc.activation<gelu_tanh> %pre : tensor<?x?x3072xf32>
    ```
    After:
    ```mlir
    %y, %pre = tfc.linear_act #tfc.activation<gelu_tanh> %x, %w, %b
        {tfc.fused = "epilogue"} : ...
    ```
  }];
  let dependentDialects = ["::mlir::tfc::TfcDialect"];
}

#endif // TFC_TRANSFORMS_PASSES_TD
