//===- TfcMoeOps.td - Mixture-of-experts FFN ops ----------*- tablegen -*-===//
//
// A routed FFN (docs/abi.md "Mixture of experts") as five steps: the router
// picks each token's experts (tfc.moe_route), the tokens are copied into
// one row per (token, choice), grouped by expert (tfc.moe_dispatch), each
// expert multiplies its own rows (tfc.grouped_linear, then the usual
// activation), and each token sums its choices' rows weighted by the gates
// (tfc.moe_combine). Tokens are N = batch * seq rows; a token's k choices
// are A = N * k "assignment" rows [A, width], expert e's rows being
// [offsets[e], offsets[e + 1]) in token order. A padded token (key padding)
// is routed nowhere: its slots are -1 and the rows past offsets[E] belong
// to no expert, are not written and are never read.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_MOE_OPS_TD
#define TFC_MOE_OPS_TD

// The assignment rows' expert-sorted positions, expert indices, offsets:
// i32 tensors.
def Tfc_IndexTensor : RankedTensorOf<[I32]>;

def Tfc_MoeRouteOp : Tfc_Op<"moe_route", [Pure,
    DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "softmax router with top-k selection and the load-balancing loss";
  let description = [{
    For each token n of `logits` `[b, t, E]`: `p = softmax(logits[n])`; its
    `top_k` experts `experts[n, j]` are the k largest p in descending order,
    ties to the lower expert index; `gates[n, j] = p[e_j]`, divided by
    `sum_j p[e_j]` with `renormalize`. `slots[n, j]` is the row of (n, j)
    among the assignment rows sorted by expert, tokens in order within an
    expert; `offsets` `[E + 1]` are the experts' first rows. With `lengths`
    the padded tokens are routed nowhere (experts and slots -1, gates 0).

    `aux` is the layer's load-balancing loss (Switch): `aux_loss * E *
    sum_e f_e * P_e` over the T routed tokens, f_e the fraction of them with
    e among their experts and P_e their mean p[e]. Its gradient reaches the
    logits through P only (f is a count); the selection is not
    differentiated, the gates are.

    ```mlir
    %g, %e, %s, %o, %aux = tfc.moe_route %logits {top_k = 2 : i64,
        renormalize, aux_loss = 0.01 : f64}
        : tensor<?x?x8xf32> -> tensor<?x?x2xf32>, tensor<?x?x2xi32>,
          tensor<?x?x2xi32>, tensor<9xi32>, tensor<f32>
    ```
  }];
  let arguments = (ins Tfc_F32Tensor:$logits,
                       Optional<Tfc_LengthsTensor>:$lengths,
                       ConfinedAttr<I64Attr, [IntPositive]>:$top_k,
                       UnitAttr:$renormalize, F64Attr:$aux_loss);
  let results = (outs Tfc_F32Tensor:$gates, Tfc_IndexTensor:$experts,
                      Tfc_IndexTensor:$slots, Tfc_IndexTensor:$offsets,
                      0DTensorOf<[F32]>:$aux);
  let assemblyFormat = [{
    $logits (`lengths` $lengths^)? attr-dict `:` type($logits)
    (`,` type($lengths)^)? `->` type($gates) `,` type($experts) `,`
    type($slots) `,` type($offsets) `,` type($aux)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getNumExperts();
  }];
}

def Tfc_MoeDispatchOp : Tfc_Op<"moe_dispatch", [Pure,
    DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "copies each token into its assignment rows, grouped by expert";
  let description = [{
    `result[slots[n, j]] = input[n]` (times `gates[n, j]` with `gates`, the
    gradient of tfc.moe_combine) for every token n `[b, t, d]` and choice
    j with a slot; the result is `[b * t * k, d]`.
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_IndexTensor:$slots,
                       Optional<Tfc_F32Tensor>:$gates);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $slots (`gates` $gates^)? attr-dict `:` type($input) `,`
    type($slots) (`,` type($gates)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfc_MoeCombineOp : Tfc_Op<"moe_combine", [Pure, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "sums each token's assignment rows, weighted by its gates";
  let description = [{
    `result[n] = base[n] + sum_j gates[n, j] * input[slots[n, j]]`, j in
    order, over the choices with a slot (`base` 0 and `gates` 1 when
    absent: without gates, the gradient of tfc.moe_dispatch). `input` is
    `[A, d]`, the result `[b, t, d]` like `slots`' leading dimensions.
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_IndexTensor:$slots,
                       Optional<Tfc_F32Tensor>:$gates,
                       Optional<Tfc_F32Tensor>:$base);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $slots (`gates` $gates^)? (`base` $base^)? attr-dict `:`
    type($input) `,` type($slots) (`gates` type($gates)^)?
    (`base` type($base)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfc_GroupedLinearOp : Tfc_Op<"grouped_linear", [Pure,
    DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "each expert's rows times its own weight";
  let description = [{
    Rows `[offsets[e], offsets[e + 1])` of `input` `[A, in]` times
    `weight[e]` `[E, in, out]` (+ `bias[e]`, `[E, out]`): one matmul per
    expert over its rows only; rows of no expert are not written. With
    `transpose_weight` the weight `[E, out, in]` is read transposed (the
    input gradient).
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_IndexTensor:$offsets,
                       Tfc_F32Tensor:$weight, Optional<Tfc_F32Tensor>:$bias,
                       UnitAttr:$transpose_weight);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $offsets `,` $weight (`,` $bias^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    int64_t getInFeatures();
    int64_t getOutFeatures();
  }];
}

def Tfc_ExpertCountsOp : Tfc_Op<"expert_counts", [Pure,
    AllTypesMatch<["counts", "result"]>]> {
  let summary = "records a layer's tokens per expert in the counts probe";
  let description = [{
    Returns `counts` `[depth, E]` with row `layer` replaced by
    `offsets[e + 1] - offsets[e]`: the tokens the layer routed to each
    expert (the `expert_counts` output, `[probes] expert_counts`). No
    gradient.
  }];
  let arguments = (ins Tfc_IndexTensor:$offsets, Tfc_IndexTensor:$counts,
                       Index:$layer);
  let results = (outs Tfc_IndexTensor:$result);
  let assemblyFormat = [{
    $offsets `into` $counts `[` $layer `]` attr-dict `:` type($offsets) `,`
    type($counts)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

def Tfc_MoeRouteGradOp : Tfc_Op<"moe_route_grad", [Pure,
    AttrSizedOperandSegments, AllTypesMatch<["logits", "result"]>]> {
  let summary = "the router logits' gradient: gates and load-balancing loss";
  let description = [{
    `d logits` `[b, t, E]` from the gates' gradient `gates_grad` `[b, t, k]`
    through the selected (and, with `renormalize`, renormalised) softmax
    values, plus `aux_grad * aux_loss * E * f_e / T` on every p[e] of a
    routed token (`aux_grad` the aux result's gradient, absent: 0). p is
    recomputed from `logits`; padded tokens (expert -1) get 0.
  }];
  let arguments = (ins Tfc_F32Tensor:$logits, Tfc_IndexTensor:$experts,
                       Tfc_IndexTensor:$offsets,
                       Optional<Tfc_F32Tensor>:$gates_grad,
                       Optional<0DTensorOf<[F32]>>:$aux_grad,
                       UnitAttr:$renormalize, F64Attr:$aux_loss);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $logits `,` $experts `,` $offsets (`gates` $gates_grad^)?
    (`aux` $aux_grad^)? attr-dict `:` type($logits) `,` type($experts) `,`
    type($offsets) (`gates` type($gates_grad)^)? (`aux` type($aux_grad)^)?
  }];
}

def Tfc_MoeGateGradOp : Tfc_Op<"moe_gate_grad", [Pure]> {
  let summary = "the gates' gradient of tfc.moe_combine";
  let description = [{
    `result[n, j] = sum_c input[slots[n, j], c] * grad[n, c]` (0 without a
    slot): `[b, t, k]`.
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_IndexTensor:$slots,
                       Tfc_F32Tensor:$grad);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $slots `,` $grad attr-dict `:` type($input) `,` type($slots)
    `,` type($grad) `->` type($result)
  }];
}

def Tfc_GroupedWeightGradOp : Tfc_Op<"grouped_weight_grad", [Pure]> {
  let summary = "each expert's weight gradient over its rows";
  let description = [{
    `result[e] = input_e^T grad_e` `[E, in, out]`, input_e and grad_e the
    rows `[offsets[e], offsets[e + 1])` (zero for an expert without rows).
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_F32Tensor:$grad,
                       Tfc_IndexTensor:$offsets);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $grad `,` $offsets attr-dict `:`
    functional-type(operands, results)
  }];
}

def Tfc_GroupedReduceRowsOp : Tfc_Op<"grouped_reduce_rows", [Pure]> {
  let summary = "each expert's rows summed (its bias gradient)";
  let description = [{
    `result[e, c] = sum over rows r of expert e of input[r, c]`, `[E, out]`.
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_IndexTensor:$offsets);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $offsets attr-dict `:` functional-type(operands, results)
  }];
}

#endif // TFC_MOE_OPS_TD
