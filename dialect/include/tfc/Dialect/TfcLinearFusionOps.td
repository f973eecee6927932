//===- TfcLinearFusionOps.td - Fused linear layers ---------*- tablegen -*-===//
//
// What the "projections" and "epilogue" fusions make of linear layers, and
// the backward ops their gradient rules build. Every forward op here is one
// packed matmul (MatmulLowering.cpp) whose output loop does what separate
// ops did before: add the bias, apply the activation, gate a GLU. Results
// that only backward reads (pre-activations) have no uses in the forward
// function; without a save slot (inference) they are neither computed nor
// stored.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_LINEAR_FUSION_OPS_TD
#define TFC_LINEAR_FUSION_OPS_TD

//===----------------------------------------------------------------------===//
// Forward
//===----------------------------------------------------------------------===//

def Tfc_LinearActOp : Tfc_Op<"linear_act", [Pure,
    DeclareOpInterfaceMethods<Tfc_GradientOpInterface>,
    AllTypesMatch<["result", "pre"]>]> {
  let summary = "act(x @ W + b): a linear layer with its activation";
  let description = [{
    `pre = x W (+ b)` and `result = act(pre)`, computed in the matmul's
    output loop. `pre` is what the activation's gradient reads (relu's reads
    `result`: relu'(pre) = relu'(result), so `pre` has no use and is not
    written); it must have no uses in the forward function (backward reads it
    from its save slot).

    ```mlir
    %y, %pre = tfc.linear_act #tfc.activation<gelu_tanh> %x, %w, %b
        : (tensor<?x?x768xf32>, tensor<768x3072xf32>, tensor<3072xf32>)
          -> (tensor<?x?x3072xf32>, tensor<?x?x3072xf32>)
    ```
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_F32Tensor:$weight,
                       Optional<Tfc_F32Tensor>:$bias,
                       Tfc_ActivationKindAttr:$kind);
  let results = (outs Tfc_F32Tensor:$result, Tfc_F32Tensor:$pre);
  let assemblyFormat = [{
    qualified($kind) $input `,` $weight (`,` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfc_MergedLinearOp : Tfc_Op<"merged_linear", [Pure,
    DeclareOpInterfaceMethods<Tfc_GradientOpInterface>,
    AttrSizedOperandSegments]> {
  let summary = "several linear layers of one input as one matmul";
  let description = [{
    `results[i] = x W_i (+ b_i)`: Q, K and V of one attention input. The
    weights stay where the parameter layout puts them (each its own
    `[in, out_i]` tensor); the matmul packs its right-hand side from all of
    them, each part padded to whole panels so no register tile straddles two
    results. `biases` is empty or has one bias per weight.

    A result may be head-split: for an input [batch, seq, in], result i is
    then [batch, heads, seq, dh] with heads x dh its weight's output width,
    the split_heads of its rows, which the matmul's output loop stores in
    that layout (tfc-fuse-projections folds the split in; no copy).

    ```mlir
    %q, %k, %v = tfc.merged_linear %x weights(%wq, %wk, %wv)
                                      biases(%bq, %bk, %bv) : ...
    ```
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Variadic<Tfc_F32Tensor>:$weights,
                       Variadic<Tfc_F32Tensor>:$biases);
  let results = (outs Variadic<Tfc_F32Tensor>:$results);
  let assemblyFormat = [{
    $input `weights` `(` $weights `)` (`biases` `(` $biases^ `)`)? attr-dict
    `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// Whether result `i` is head-split, [batch, heads, seq, dh], rather
    /// than rows shaped like the input.
    bool isHeadSplit(unsigned i);
    /// Result `i` as rows: its type, or for a head-split result the
    /// [batch, seq, heads x dh] it splits.
    RankedTensorType getRowsType(unsigned i);
  }];
  let hasVerifier = 1;
}

def Tfc_GLULinearOp : Tfc_Op<"glu_linear", [Pure,
    DeclareOpInterfaceMethods<Tfc_GradientOpInterface>,
    AllTypesMatch<["result", "gate", "up"]>]> {
  let summary = "act(x W_gate + b_gate) * (x W_up + b_up) as one matmul";
  let description = [{
    The gate and up projections of a gated FFN, computed together: each
    register tile holds the gate and the up columns of the same outputs, so
    the output loop applies the gate and stores `act(gate) * up` only.
    `gate` and `up` (the pre-activations `glu_grad` reads) must have no uses
    in the forward function. `biases` is empty or `(b_gate, b_up)`.

    ```mlir
    %h, %gate, %up = tfc.glu_linear #tfc.activation<silu> %x, %wg, %wu : ...
    ```
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_F32Tensor:$gate_weight,
                       Tfc_F32Tensor:$up_weight,
                       Variadic<Tfc_F32Tensor>:$biases,
                       Tfc_ActivationKindAttr:$kind);
  let results = (outs Tfc_F32Tensor:$result, Tfc_F32Tensor:$gate,
                      Tfc_F32Tensor:$up);
  let assemblyFormat = [{
    qualified($kind) $input `,` $gate_weight `,` $up_weight
    (`biases` `(` $biases^ `)`)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Backward
//===----------------------------------------------------------------------===//

def Tfc_MergedInputGradOp : Tfc_Op<"merged_input_grad", [Pure,
    AttrSizedOperandSegments]> {
  let summary = "dx = (sum_i dy_i W_i^T) [* act'(a)] as one matmul";
  let description = [{
    The input gradient of several linear layers of one input: one matmul
    whose contraction runs over the concatenated output widths, so the sum
    is accumulated in registers in a fixed order (no tfc.add sweeps).

    With `act`, the input came from an activation `act` of `a` (`a` is its
    input, or for relu its output, as for tfc.linear_act_weight_grad): the
    output loop multiplies each tile by act'(a) and the result is the
    gradient of the activation's input (tfc-fuse-activation-grad).

    ```mlir
    %d_pre = tfc.merged_input_grad grads(%dy) weights(%w2)
        act(#tfc.activation<relu>, %h)
        : (tensor<?x?x128xf32>, tensor<512x128xf32>, tensor<?x?x512xf32>)
          -> tensor<?x?x512xf32>
    ```
  }];
  let arguments = (ins Variadic<Tfc_F32Tensor>:$grads,
                       Variadic<Tfc_F32Tensor>:$weights,
                       Optional<Tfc_F32Tensor>:$act_input,
                       OptionalAttr<Tfc_ActivationKindAttr>:$kind);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    `grads` `(` $grads `)` `weights` `(` $weights `)`
    (`act` `(` qualified($kind)^ `,` $act_input `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfc_MergedWeightGradOp : Tfc_Op<"merged_weight_grad", [Pure,
    AttrSizedResultSegments]> {
  let summary = "dW_i = x^T dy_i and db_i = column sums of dy_i, one matmul";
  let description = [{
    The weight gradients of several linear layers of one input as one
    matmul, and their bias gradients summed while the matmul packs `dy_i`
    (rows in order, as tfc.reduce_rows). `bias_grads` is empty or has one
    result per grad.
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Variadic<Tfc_F32Tensor>:$grads);
  let results = (outs Variadic<Tfc_F32Tensor>:$weight_grads,
                      Variadic<1DTensorOf<[F32]>>:$bias_grads);
  let assemblyFormat = [{
    $input `grads` `(` $grads `)` attr-dict `:` type($input) `,` `(`
    type($grads) `)` `->` `weights` `(` type($weight_grads) `)`
    (`biases` `(` type($bias_grads)^ `)`)?
  }];
  let hasVerifier = 1;
}

def Tfc_LinearActWeightGradOp : Tfc_Op<"linear_act_weight_grad", [Pure,
    AllTypesMatch<["pre", "grad", "pre_grad"]>]> {
  let summary = "d_pre = dy * act'(pre), dW = x^T d_pre, db = sums of d_pre";
  let description = [{
    The backward of tfc.linear_act but its input gradient: the matmul
    computes `d_pre` while it packs it, writes it out (the input gradient's
    matmul reads it) and sums its columns for the bias gradient (optional)
    in the same sweep. `pre` is the activation's input, or for relu its
    output (the same derivative, read from the value the forward keeps
    anyway).
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_F32Tensor:$pre,
                       Tfc_F32Tensor:$grad, Tfc_ActivationKindAttr:$kind);
  let results = (outs Tfc_F32Tensor:$weight_grad, Tfc_F32Tensor:$pre_grad,
                      Optional<1DTensorOf<[F32]>>:$bias_grad);
  let assemblyFormat = [{
    qualified($kind) $input `,` $pre `,` $grad attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // TFC_LINEAR_FUSION_OPS_TD
