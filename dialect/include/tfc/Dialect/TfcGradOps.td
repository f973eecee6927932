//===- TfcGradOps.td - Ops of derived backward blocks ------*- tablegen -*-===//
//
// What tfc-derive-backward emits: saved-activation reads, parameter-gradient
// accumulation, and the gradient computations of the forward ops. Each is
// one step of the chain rule for one forward op, fine-grained like the
// forward ops so the fusion passes can rewrite backward chains too.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_GRAD_OPS_TD
#define TFC_GRAD_OPS_TD

//===----------------------------------------------------------------------===//
// Plumbing
//===----------------------------------------------------------------------===//

def Tfc_SavedOp : Tfc_Op<"saved", [Pure]> {
  let summary = "a forward value saved in the workspace for backward";
  let description = [{
    Reads the value that `NAME_forward` saved in slot `slot` (the forward
    value carries `tfc.save = slot`), at layer `layer` for values inside
    the depth loop. Backward runs on the workspace forward filled.

    ```mlir
    %x = tfc.saved 3 [%layer] : tensor<?x?x768xf32>
    ```
  }];
  let arguments = (ins I64Attr:$slot, Optional<Index>:$layer);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $slot (`[` $layer^ `]`)? attr-dict `:` type($result)
  }];
}

def Tfc_ParamGradOp : Tfc_Op<"param_grad", [Pure,
    AllTypesMatch<["grads", "result"]>]> {
  let summary = "accumulates a parameter's gradient into the flat buffer";
  let description = [{
    Returns `grads` with `grad` added at the place `tfc.param` with the same
    `offset`, `layer_stride` and layer reads from the parameter buffer.
    Lowered in place: every version of `grads` is the caller's d_params.
  }];
  let arguments = (ins 1DTensorOf<[F32]>:$grads, Optional<Index>:$layer,
                       Tfc_F32Tensor:$grad, I64Attr:$offset,
                       DefaultValuedAttr<I64Attr, "0">:$layer_stride);
  let results = (outs 1DTensorOf<[F32]>:$result);
  let assemblyFormat = [{
    $grads (`[` $layer^ `]`)? `,` $grad attr-dict `:` type($grads) `,` type($grad)
  }];
  let hasVerifier = 1;
}

def Tfc_AddOp : Tfc_Op<"add", [Pure, Commutative, SameOperandsAndResultType,
    DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "elementwise sum (gradients; the loss plus the aux losses)";
  let arguments = (ins Tfc_F32Tensor:$lhs, Tfc_F32Tensor:$rhs);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Tfc_ZerosLikeOp : Tfc_Op<"zeros_like", [Pure, SameOperandsAndResultType]> {
  let summary = "a zero tensor of the shape of its operand";
  let arguments = (ins Tfc_F32Tensor:$input);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Gradients of matmuls
//===----------------------------------------------------------------------===//

def Tfc_LinearWeightGradOp : Tfc_Op<"linear_weight_grad", [Pure]> {
  let summary = "dW = x^T dy summed over all rows";
  let description = [{
    `result[k, n] = sum over rows r of input[r, k] * grad[r, n]`; with
    `transpose_weight` the result is `[n, k]` (a weight stored `[out, in]`).
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_F32Tensor:$grad,
                       UnitAttr:$transpose_weight);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfc_ReduceRowsOp : Tfc_Op<"reduce_rows", [Pure]> {
  let summary = "sums all leading dimensions: [..., n] -> [n] (bias gradient)";
  let arguments = (ins Tfc_F32Tensor:$input);
  let results = (outs 1DTensorOf<[F32]>:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tfc_BatchMatmulOp : Tfc_Op<"batch_matmul", [Pure]> {
  let summary = "per-head matmul with optional transposes";
  let description = [{
    `[b, h, m, k] x [b, h, k, n] -> [b, h, m, n]`, where `transpose_a` reads
    the left operand as `[b, h, k, m]` and `transpose_b` the right as
    `[b, h, n, k]`. The gradients of Q K^T and P V.
  }];
  let arguments = (ins Tfc_F32Tensor:$lhs, Tfc_F32Tensor:$rhs,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradients of norms, softmax, mask, activations
//===----------------------------------------------------------------------===//

def Tfc_LayerNormGradOp : Tfc_Op<"layer_norm_grad", [Pure]> {
  let summary = "gradients of layer_norm: dx, dgamma, dbeta";
  let arguments = (ins Tfc_F32Tensor:$input, 1DTensorOf<[F32]>:$gamma,
                       Tfc_F32Tensor:$grad, F64Attr:$epsilon,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Tfc_F32Tensor:$input_grad,
                      1DTensorOf<[F32]>:$gamma_grad,
                      1DTensorOf<[F32]>:$beta_grad);
  let assemblyFormat = [{
    $input `,` $gamma `,` $grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfc_RMSNormGradOp : Tfc_Op<"rms_norm_grad", [Pure]> {
  let summary = "gradients of rms_norm: dx, dgamma";
  let arguments = (ins Tfc_F32Tensor:$input, 1DTensorOf<[F32]>:$gamma,
                       Tfc_F32Tensor:$grad, F64Attr:$epsilon,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Tfc_F32Tensor:$input_grad,
                      1DTensorOf<[F32]>:$gamma_grad);
  let assemblyFormat = [{
    $input `,` $gamma `,` $grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfc_SoftmaxGradOp
    : Tfc_Op<"softmax_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "p * (dp - sum(dp * p)) over the last axis";
  let arguments = (ins Tfc_F32Tensor:$probs, Tfc_F32Tensor:$grad);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = "$probs `,` $grad attr-dict `:` type($result)";
}

def Tfc_MaskGradOp : Tfc_Op<"mask_grad", [Pure, AllTypesMatch<["grad", "result"]>]> {
  let summary = "the gradient of tfc.mask: zero where the mask wrote -inf";
  let arguments = (ins Tfc_F32Tensor:$grad, Tfc_MaskKindAttr:$kind,
                       Tfc_WindowAttr:$window,
                       Optional<Tfc_LengthsTensor>:$lengths);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    qualified($kind) $grad (`lengths` $lengths^)? (`window` $window^)?
    attr-dict `:` type($result) (`,` type($lengths)^)?
  }];
}

def Tfc_ActivationGradOp
    : Tfc_Op<"activation_grad", [Pure, SameOperandsAndResultType]> {
  let summary = "act'(x) * dy";
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_F32Tensor:$grad,
                       Tfc_ActivationKindAttr:$kind);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    qualified($kind) $input `,` $grad attr-dict `:` type($result)
  }];
}

def Tfc_GLUGradOp : Tfc_Op<"glu_grad", [Pure,
    AllTypesMatch<["gate", "up", "grad", "gate_grad", "up_grad"]>]> {
  let summary = "gradients of act(gate) * up: dgate, dup";
  let arguments = (ins Tfc_F32Tensor:$gate, Tfc_F32Tensor:$up,
                       Tfc_F32Tensor:$grad, Tfc_ActivationKindAttr:$kind);
  let results = (outs Tfc_F32Tensor:$gate_grad, Tfc_F32Tensor:$up_grad);
  let assemblyFormat = [{
    qualified($kind) $gate `,` $up `,` $grad attr-dict `:` type($grad)
  }];
}

//===----------------------------------------------------------------------===//
// Gradients of embedding, positions, loss
//===----------------------------------------------------------------------===//

def Tfc_EmbeddingGradOp : Tfc_Op<"embedding_grad", [Pure]> {
  let summary = "scatter-adds dy rows into a [vocab, d] table gradient";
  let arguments = (ins Tfc_TokenTensor:$tokens, Tfc_F32Tensor:$grad);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $tokens `,` $grad attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfc_PositionsGradOp : Tfc_Op<"positions_grad", [Pure]> {
  let summary = "sums dy over the batch into a [max_seq, d] table gradient";
  let description = [{ Rows at positions >= seq are zero. }];
  let arguments = (ins Tfc_F32Tensor:$grad);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = "$grad attr-dict `:` type($grad) `->` type($result)";
  let hasVerifier = 1;
}

def Tfc_CrossEntropyGradOp : Tfc_Op<"cross_entropy_grad", [Pure]> {
  let summary = "dlogits = dloss * (softmax(logits) - onehot) / count";
  let description = [{
    Rows whose target is ignored get zero; `count` is the number of targets
    in `[0, vocab)`, as in the forward mean.
  }];
  let arguments = (ins Tfc_F32Tensor:$logits, Tfc_TokenTensor:$targets,
                       0DTensorOf<[F32]>:$grad);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $logits `,` $targets `,` $grad attr-dict `:` functional-type(operands, results)
  }];
}

#endif // TFC_GRAD_OPS_TD
