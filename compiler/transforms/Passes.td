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
    accumulated into the d_params tensor with `tfc.param_grad`. Arguments
    backward takes again (a padded batch's `tfc.role = "lengths"`) follow
    `params` in `@NAME_grad`'s signature and are read there directly.

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
    A merged result that only `tfc.split_heads` reads becomes head-split
    (`[b, h, s, dh]`, stored per head by the output loop: no copy), unless
    the heads go on to RoPE or a norm (tfc-fuse-attention folds that split
    into `tfc.split_heads_rope`) or dh is not a multiple of 16.

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

def TfcFuseResidualNorm : Pass<"tfc-fuse-residual-norm", "ModuleOp"> {
  let summary = "Fuses a residual add and the norm of its sum (residual-norm)";
  let description = [{
    Rewrites `tfc.residual_add` followed by a `tfc.layer_norm` or
    `tfc.rms_norm` of its sum into one `tfc.residual_norm` that produces the
    sum and the normed value in one sweep per row (the row is read once, not
    written by the add and read back twice by the norm). Post-LN and
    DeepNorm (`alpha` carried over): every sub-layer, LN(alpha x + f(x)).
    Pre-LN: the attention's add and ffn_norm (with cross-attention: the
    attention's add and cross_norm, the cross add and ffn_norm); the sum
    stays a result, since the next add reads it. The fused op's gradient
    rule builds one `tfc.residual_norm_grad`: the norm's input gradient plus
    what the sum's other uses send back, split into residual (alpha times)
    and branch, and gamma / beta summed over rows, in one pass per row.

    Before:
    ```mlir
    %h = tfc.residual_add %x, %attn : tensor<?x?x16xf32>
    %n = tfc.layer_norm %h, %g, %b {epsilon = 1.0e-05 : f64}
        : (tensor<?x?x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x?x16xf32>
    ```
    After:
    ```mlir
    %h, %n = tfc.residual_norm #tfc.norm<layernorm> %x, %attn, %g, %b
        {alpha = 1.0 : f64, epsilon = 1.0e-05 : f64, tfc.fused = "residual-norm"}
        : tensor<?x?x16xf32>, tensor<16xf32>
    ```

    Not fused: the pre-LN pair across the block boundary (the FFN's add
    that ends layer i and the attn_norm that starts layer i+1, or the final
    norm after the last layer). The depth loop's back edge sits between
    them, and fusing them means rotating the loop: carrying the normed
    value beside the residual stream, peeling layer 0's attn_norm before the
    loop and the last layer's add after it, and reading layer i+1's norm
    weights in iteration i. tfc-derive-backward and the lowering rely on a
    depth loop that carries one tensor and reads only its own layer's
    parameters (save slots are per layer; backward reverses the loop), so
    rotation would change both for one elementwise pass per layer, while
    each layer's matmuls move d_model times as much data. Within a block
    the pass removes that pass for every post-LN sub-layer and for all but
    one add of a pre-LN block.
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

def TfcFuseActivationGrad : Pass<"tfc-fuse-activation-grad", "ModuleOp"> {
  let summary = "Applies act' in the output loop of the next linear's input "
                "gradient (the epilogue fusion's backward half, CPU)";
  let description = [{
    Runs after tfc-derive-backward. The input gradient of the linear after
    a `tfc.linear_act` (the FFN's second linear), whose only use is that
    layer's `tfc.linear_act_weight_grad`, becomes a `tfc.merged_input_grad`
    that multiplies its tiles by act'(pre) before storing them: its result
    is d_pre, and the weight gradient is a plain `tfc.merged_weight_grad`
    of d_pre. The CPU's weight gradient reads dY in place, so the pack-time
    product was a sweep of its own that read dY and pre and wrote d_pre;
    now pre is read by the tiles that make d_pre and dY is never stored.
    The same floating-point operations in the same order: the gradients
    are bit-identical. Only for relu: GELU's and SiLU's derivatives cost
    tens of operations a vector, hidden in the weight gradient's
    memory-bound pack but not in a compute-bound output loop (the GPT-2
    block's backward 1.5% slower). (The CUDA target applies act' while it
    stages dY, and does not run this pass.)

    Before:
    ```mlir
    %g = tfc.linear %dy, %w2 {transpose_weight} : ...
    %dw, %d_pre, %db = tfc.linear_act_weight_grad #tfc.activation<relu>
        %x, %h, %g {tfc.fused = "epilogue"} : ...
    ```
    After:
    ```mlir
    %d_pre = tfc.merged_input_grad grads(%dy) weights(%w2)
        act(#tfc.activation<relu>, %h) {tfc.fused = "epilogue"} : ...
    %dw, %db = tfc.merged_weight_grad %x grads(%d_pre) biases(...)
        {tfc.fused = "epilogue"} : ...
    ```
  }];
  let dependentDialects = ["::mlir::tfc::TfcDialect"];
}

def TfcFuseBiasGrad : Pass<"tfc-fuse-bias-grad", "ModuleOp"> {
  let summary = "Sums a linear's bias gradient in its weight gradient (the "
                "epilogue fusion's backward, CPU)";
  let description = [{
    Runs after tfc-derive-backward. A `tfc.reduce_rows` of dy (a bias
    gradient, from tfc.linear's rule) and a `tfc.linear_weight_grad` (of a
    weight stored [in, out]) that reads the same dy become one
    `tfc.merged_weight_grad` with the bias gradient: the CPU's weight
    gradient reads dy in place, K block by K block, and sums the columns in
    the first row block's tiles from the rows they load anyway, where the
    reduction swept dy again (the FFN's second linear and the attention's
    output projection: the layers no forward fusion merged). The same
    additions in the same order: the gradients are bit-identical.

    Before:
    ```mlir
    %dw = tfc.linear_weight_grad %x, %dy : ...
    %db = tfc.reduce_rows %dy : tensor<?x?x128xf32> -> tensor<128xf32>
    ```
    After:
    ```mlir
    %dw, %db = tfc.merged_weight_grad %x grads(%dy) {tfc.fused = "epilogue"}
        : ... -> weights(tensor<512x128xf32>) biases(tensor<128xf32>)
    ```
  }];
  let dependentDialects = ["::mlir::tfc::TfcDialect"];
}

def TfcFuseLossHead : Pass<"tfc-fuse-loss-head", "ModuleOp"> {
  let summary = "Fuses the head's matmul and the cross-entropy loss (loss-head)";
  let description = [{
    Rewrites the `tfc.linear` whose logits `tfc.cross_entropy` reads into
    one `tfc.loss_head` producing the logits (still a model output), the
    loss, and the logits' gradient for d_loss = 1. After the matmul, one
    parallel sweep per row computes the row's max and sum of exponentials
    once, the row's loss from the log-sum-exp, and (only in training
    builds, where backward saves it) `(softmax - onehot) / count` straight
    into the gradient buffer: probabilities are never stored, the logits are
    not saved for backward, and backward does not sweep them again. The
    gradient rule reads the saved gradient (directly when d_loss is the seed
    1, scaled otherwise) and continues as tfc.linear's rule (dx, dW).

    Before:
    ```mlir
    %logits = tfc.linear %h, %w : (tensor<?x?x16xf32>, tensor<16x50xf32>)
        -> tensor<?x?x50xf32>
    %loss = tfc.cross_entropy %logits, %targets
        : (tensor<?x?x50xf32>, tensor<?x?xi32>) -> tensor<f32>
    ```
    After:
    ```mlir
    %logits, %loss, %dlogits = tfc.loss_head %h, %w, %targets
        {tfc.fused = "loss-head"}
        : (tensor<?x?x16xf32>, tensor<16x50xf32>, tensor<?x?xi32>)
        -> (tensor<?x?x50xf32>, tensor<f32>, tensor<?x?x50xf32>)
    ```

    The loss sweep runs after the matmul, not inside its parallel
    iterations: the shared matmul (emitMatmul) hands out MR x NR tiles,
    panel-major, so no iteration ever holds a whole row of logits, and the
    loss needs whole rows (max and sum over the vocabulary). Running it per
    row block inside the matmul would mean restructuring that emitter, or
    calling it once per row block and repacking the whole weight each time
    (the weight is vocab x d_model; the packing would cost more than the
    second read of the logits it saves).
  }];
  let dependentDialects = ["::mlir::tfc::TfcDialect"];
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

    RoPE joins the head split: `rope(split_heads(x))` becomes
    `split_heads_rope(x)`, and under QK-norm `rope(norm(split_heads(x)))`
    becomes `split_heads_rope(norm(x) {groups = heads})`, the per-head norm
    read from the projection's rows, so q and k take no sweep for RoPE.

    The head merge joins the output: a `tfc.merge_heads` that is the fused
    op's only reader of `out` goes, and `out` becomes merged (`[b, s, h *
    dh]`), each row stored where the output projection reads it. Backward
    then gets dO merged too, read in place (no `split_heads` of it).

    Before:
    ```mlir
    %s = tfc.attention_scores %q, %k : (...) -> tensor<?x12x?x?xf32>
    %t = tfc.scale %s by 1.250000e-01 : tensor<?x12x?x?xf32>
    %m = tfc.mask #tfc.mask<causal> %t : tensor<?x12x?x?xf32>
    %p = tfc.softmax %m : tensor<?x12x?x?xf32>
    %o = tfc.attention_context %p, %v : (...) -> tensor<?x12x?x64xf32>
    %y = tfc.merge_heads %o : tensor<?x12x?x64xf32> -> tensor<?x?x768xf32>
    ```
    After:
    ```mlir
    %y, %lse = tfc.flash_attention #tfc.mask<causal> %q, %k, %v
        scale 1.250000e-01 {tfc.fused = "attention"}
        : (...) -> (tensor<?x?x768xf32>, tensor<?x12x?xf32>)
    ```
  }];
  let dependentDialects = ["::mlir::tfc::TfcDialect"];
}

def TfcFuseAttentionGrad : Pass<"tfc-fuse-attention-grad", "ModuleOp"> {
  let summary = "Stores fused attention's dQ, dK and dV merged (the attention "
                "fusion's backward half)";
  let description = [{
    Runs after tfc-derive-backward. A `tfc.merge_heads` that is the only
    reader of a `tfc.flash_attention_grad` result (dV always; dQ and dK
    unless RoPE's `rope_merge_heads` reads them) goes, and the result
    becomes merged, `[b, s, h * dh]`: the sweep stores each row where the
    projections' gradients read it, not a sweep of its own. The same sums:
    the gradients are bit-identical.

    Before:
    ```mlir
    %dq, %dk, %dv = tfc.flash_attention_grad #tfc.mask<causal> ...
        : (...) -> (tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>)
    %m = tfc.merge_heads %dv : tensor<?x12x?x64xf32> -> tensor<?x?x768xf32>
    ```
    After:
    ```mlir
    %dq, %dk, %m = tfc.flash_attention_grad #tfc.mask<causal> ...
        : (...) -> (tensor<?x12x?x64xf32>, tensor<?x12x?x64xf32>, tensor<?x?x768xf32>)
    ```
  }];
  let dependentDialects = ["::mlir::tfc::TfcDialect"];
}

#endif // TFC_TRANSFORMS_PASSES_TD
