//===- TfcLossHeadOps.td - Head matmul + cross-entropy, fused -*- tablegen -*-//
//
// What the loss-head fusion (tfc-fuse-loss-head) makes of the head's
// `tfc.linear` and the `tfc.cross_entropy` of its logits: the logits, the
// loss and the logits' gradient in one op, so softmax probabilities are
// never stored and backward does not sweep the logits again.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_LOSS_HEAD_OPS_TD
#define TFC_LOSS_HEAD_OPS_TD

def Tfc_LossHeadOp : Tfc_Op<"loss_head", [Pure,
    DeclareOpInterfaceMethods<Tfc_GradientOpInterface>,
    AllTypesMatch<["logits", "logits_grad"]>]> {
  let summary = "logits = x @ W (+ b), their mean cross-entropy and its gradient";
  let description = [{
    `logits` is `tfc.linear` (with `transpose_weight` for a head tied to the
    embedding table), `loss` is `tfc.cross_entropy` of the logits against
    `targets` (targets < 0 or >= vocab ignored, mean over the rest, 0 if
    none), and `logits_grad` is the gradient of the loss with respect to the
    logits for d_loss = 1: `(softmax(logits) - onehot(target)) / count` on
    rows with a valid target, 0 elsewhere. Each row's log-sum-exp is
    computed once and serves the loss and the gradient. `logits_grad` is
    only computed when used or saved for backward (training builds).

    ```mlir
    %logits, %loss, %dlogits = tfc.loss_head %h, %w, %targets
        : (tensor<?x?x128xf32>, tensor<128x64xf32>, tensor<?x?xi32>)
        -> (tensor<?x?x64xf32>, tensor<f32>, tensor<?x?x64xf32>)
    ```
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_F32Tensor:$weight,
                       Tfc_TokenTensor:$targets,
                       Optional<1DTensorOf<[F32]>>:$bias,
                       UnitAttr:$transpose_weight);
  let results = (outs Tfc_F32Tensor:$logits, 0DTensorOf<[F32]>:$loss,
                      Tfc_F32Tensor:$logits_grad);
  let assemblyFormat = [{
    $input `,` $weight `,` $targets (`bias` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Input and output (vocabulary) widths, read from the weight.
    int64_t getInFeatures();
    int64_t getOutFeatures();
  }];
}

def Tfc_ScaleByOp : Tfc_Op<"scale_by", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "multiplies every element by a 0-d tensor";
  let description = [{
    `result = input * factor[]`: a saved gradient scaled by an upstream
    gradient known only at run time (d_loss when it is not the constant
    seed 1).
  }];
  let arguments = (ins Tfc_F32Tensor:$input, 0DTensorOf<[F32]>:$factor);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input `by` $factor attr-dict `:` type($input) `,` type($factor)
  }];
}

#endif // TFC_LOSS_HEAD_OPS_TD
