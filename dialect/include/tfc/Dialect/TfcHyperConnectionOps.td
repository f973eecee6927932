//===- TfcHyperConnectionOps.td - Residual streams, mixed -*- tablegen -*-===//
//
// Hyper-connections (docs/hyper_connections.md): with `[residual] streams =
// n > 1` the residual stream is n streams, held per token as one row of
// n * d (stream-major: `x[t, i * d + c]` is stream i's element c). Each
// sub-layer computes its maps `[b, t, n^2 + 2n]` = (H_pre | H_post | H_res,
// H_res row-major) from the streams (tfc.mhc_maps or tfc.hc_maps, fed by
// ordinary tfc.linear projections), reads u = sum_i H_pre[i] x_i
// (tfc.hc_aggregate) and writes x'_i = alpha sum_j H_res[i, j] x_j +
// H_post[i] y (tfc.hc_distribute). The embedding's output is copied to the
// n streams (tfc.hc_expand) and they are summed before the final norm
// (tfc.hc_merge). tfc.split_streams views the streams as rows of d for the
// per-stream linears and norms.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_HYPER_CONNECTION_OPS_TD
#define TFC_HYPER_CONNECTION_OPS_TD

def Tfc_StreamsAttr : ConfinedAttr<I64Attr, [IntPositive]>;

//===----------------------------------------------------------------------===//
// The streams' shape
//===----------------------------------------------------------------------===//

def Tfc_HcExpandOp : Tfc_Op<"hc_expand", [Pure,
    DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "copies each token's row to the n streams: [b, t, d] -> [b, t, n*d]";
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_StreamsAttr:$streams);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfc_HcMergeOp : Tfc_Op<"hc_merge", [Pure,
    DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "sums the n streams: [b, t, n*d] -> [b, t, d]";
  let description = [{
    `result[t, c] = sum_i input[t, i * d + c]`, i in order (HC Algorithm 1
    line 11). The gradient of tfc.hc_expand, and its transpose.
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_StreamsAttr:$streams);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfc_SplitStreamsOp : Tfc_Op<"split_streams", [Pure,
    DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "each stream its own row: [b, t, n*d] -> [b, t*n, d]";
  let description = [{
    The same elements in the same order, one row per (token, stream): what
    a per-stream linear (HC's dynamic maps) or norm (post-norm's N on each
    stream) reads. The inverse of tfc.join_streams.
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_StreamsAttr:$streams);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Tfc_JoinStreamsOp : Tfc_Op<"join_streams", [Pure,
    DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "a token's n stream rows as one: [b, t*n, w] -> [b, t, n*w]";
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_StreamsAttr:$streams);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// A sub-layer's hyper-connection
//===----------------------------------------------------------------------===//

def Tfc_MhcMapsOp : Tfc_Op<"mhc_maps", [Pure,
    DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "mHC's H_pre, H_post and H_res (Sinkhorn-Knopp) per token";
  let description = [{
    mHC (Xie et al. 2025) Eqs. 7-9 for each token's streams `input` `[b, t,
    n*d]`, given `proj = input @ phi` `[b, t, n^2 + 2n]` (a tfc.linear):
    with `r = sqrt(mean(input[t]^2) + epsilon)` and `q = proj / r`,
    `H_pre = sigmoid(alpha[0] q[0:n] + bias[0:n])`,
    `H_post = 2 sigmoid(alpha[1] q[n:2n] + bias[n:2n])`,
    `H_res = Sinkhorn-Knopp(alpha[2] q[2n:] + bias[2n:])` as an n x n
    row-major matrix: exp (each column's max subtracted first), then
    `sinkhorn_iters` times columns then rows scaled to sum 1. The result
    is `[H_pre | H_post | H_res]`. The gradient differentiates every
    Sinkhorn iteration.
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_F32Tensor:$proj,
                       1DTensorOf<[F32]>:$alpha, 1DTensorOf<[F32]>:$bias,
                       Tfc_StreamsAttr:$streams,
                       ConfinedAttr<I64Attr, [IntPositive]>:$sinkhorn_iters,
                       F64Attr:$epsilon);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $proj `,` $alpha `,` $bias attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfc_HcMapsOp : Tfc_Op<"hc_maps", [Pure,
    DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "dynamic hyper-connections' maps per token (HC Eqs. 10-13)";
  let description = [{
    Zhu et al. (2024) for each token's streams `input` `[b, t, n*d]`, given
    each stream's projections (tfc.linear of tfc.split_streams)
    `alpha_proj = x_i @ dynamic_alpha_fn` `[b, t*n, n+1]` and
    `beta_proj = x_i @ dynamic_beta_fn` `[b, t*n, 1]`: with
    `r_i = sqrt(mean(x_i^2) + epsilon)`,
    `A[i] = alpha_scale tanh(alpha_proj[i] / r_i) + static_alpha[i]`,
    `B[i] = beta_scale tanh(beta_proj[i] / r_i) + static_beta[i]`;
    the result is `H_pre[i] = A[i, 0]`, `H_post[i] = B[i]`,
    `H_res[j, i] = A[i, 1 + j]` (`A_r` transposed), laid out as
    tfc.mhc_maps's.
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_F32Tensor:$alpha_proj,
                       Tfc_F32Tensor:$beta_proj,
                       2DTensorOf<[F32]>:$static_alpha,
                       1DTensorOf<[F32]>:$static_beta,
                       1DTensorOf<[F32]>:$alpha_scale,
                       1DTensorOf<[F32]>:$beta_scale,
                       Tfc_StreamsAttr:$streams, F64Attr:$epsilon);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $alpha_proj `,` $beta_proj `,` $static_alpha `,` $static_beta
    `,` $alpha_scale `,` $beta_scale attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfc_HcAggregateOp : Tfc_Op<"hc_aggregate", [Pure,
    DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "the sub-layer's input u = sum_i H_pre[i] x_i";
  let description = [{
    `result[t, c] = sum_i maps[t, i] * input[t, i * d + c]`, i in order:
    `[b, t, n*d]` streams and `[b, t, n^2 + 2n]` maps to `[b, t, d]`.
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_F32Tensor:$maps,
                       Tfc_StreamsAttr:$streams);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $maps attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfc_HcDistributeOp : Tfc_Op<"hc_distribute", [Pure,
    DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "the new streams x'_i = alpha sum_j H_res[i, j] x_j + H_post[i] y";
  let description = [{
    Streams `input` `[b, t, n*d]`, the sub-layer's output `branch` `[b, t,
    d]`, maps `[b, t, n^2 + 2n]`; `alpha` is DeepNorm's (1 otherwise). The
    mixed skip path and the branch written to every stream (mHC Eq. 3).
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_F32Tensor:$branch,
                       Tfc_F32Tensor:$maps, Tfc_StreamsAttr:$streams,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $branch `,` $maps attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

def Tfc_HcAggregateGradOp : Tfc_Op<"hc_aggregate_grad", [Pure,
    AllTypesMatch<["input", "input_grad"]>,
    AllTypesMatch<["maps", "maps_grad"]>]> {
  let summary = "gradients of tfc.hc_aggregate: the streams' and H_pre's";
  let description = [{
    `input_grad[t, i * d + c] = init[t, i * d + c] + maps[t, i] * grad[t,
    c]` (`init`: the gradient of the input's other uses, optional),
    `maps_grad[t, i] = sum_c input[t, i * d + c] * grad[t, c]` for i < n,
    0 past them.
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_F32Tensor:$maps,
                       Tfc_F32Tensor:$grad, Optional<Tfc_F32Tensor>:$init,
                       Tfc_StreamsAttr:$streams);
  let results = (outs Tfc_F32Tensor:$input_grad, Tfc_F32Tensor:$maps_grad);
  let assemblyFormat = [{
    $input `,` $maps `,` $grad (`init` $init^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfc_HcDistributeGradOp : Tfc_Op<"hc_distribute_grad", [Pure,
    AllTypesMatch<["input", "input_grad"]>,
    AllTypesMatch<["branch", "branch_grad"]>,
    AllTypesMatch<["maps", "maps_grad"]>]> {
  let summary = "gradients of tfc.hc_distribute: streams, branch, H_post, H_res";
  let description = [{
    With `g_i` the result gradient's stream i:
    `input_grad_j = alpha sum_i H_res[i, j] g_i`,
    `branch_grad = sum_i H_post[i] g_i`,
    `maps_grad = (0 | <branch, g_i> | alpha <x_j, g_i> at (i, j))`.
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_F32Tensor:$branch,
                       Tfc_F32Tensor:$maps, Tfc_F32Tensor:$grad,
                       Tfc_StreamsAttr:$streams,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha);
  let results = (outs Tfc_F32Tensor:$input_grad, Tfc_F32Tensor:$branch_grad,
                      Tfc_F32Tensor:$maps_grad);
  let assemblyFormat = [{
    $input `,` $branch `,` $maps `,` $grad attr-dict `:`
    functional-type(operands, results)
  }];
}

def Tfc_MhcMapsGradOp : Tfc_Op<"mhc_maps_grad", [Pure,
    AllTypesMatch<["input", "input_grad"]>,
    AllTypesMatch<["proj", "proj_grad", "bias_grad"]>]> {
  let summary = "gradients of tfc.mhc_maps, Sinkhorn-Knopp unrolled";
  let description = [{
    From the maps' gradient `grad`: `input_grad` (through r only; proj's
    own path is the linear's), `proj_grad`, and per token the gating
    factors' `alpha_grad` `[b, t, 3]` and the biases' `bias_grad` `[b, t,
    n^2 + 2n]` (summed over tokens by tfc.reduce_rows). The Sinkhorn
    iterations are recomputed from the logits and differentiated one by
    one, last first. `init` (optional): the gradient of the input's other
    uses, which `input_grad` adds its own to.
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_F32Tensor:$proj,
                       1DTensorOf<[F32]>:$alpha, 1DTensorOf<[F32]>:$bias,
                       Tfc_F32Tensor:$grad, Optional<Tfc_F32Tensor>:$init,
                       Tfc_StreamsAttr:$streams,
                       ConfinedAttr<I64Attr, [IntPositive]>:$sinkhorn_iters,
                       F64Attr:$epsilon);
  let results = (outs Tfc_F32Tensor:$input_grad, Tfc_F32Tensor:$proj_grad,
                      Tfc_F32Tensor:$alpha_grad, Tfc_F32Tensor:$bias_grad);
  let assemblyFormat = [{
    $input `,` $proj `,` $alpha `,` $bias `,` $grad (`init` $init^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfc_HcMapsGradOp : Tfc_Op<"hc_maps_grad", [Pure,
    AllTypesMatch<["input", "input_grad"]>,
    AllTypesMatch<["alpha_proj", "alpha_proj_grad"]>,
    AllTypesMatch<["beta_proj", "beta_proj_grad"]>]> {
  let summary = "gradients of tfc.hc_maps";
  let description = [{
    From the maps' gradient `grad`: `input_grad` (through each stream's r
    only), the projections' gradients, and per token the static maps'
    (`[b, t, n*(n+1)]`, `[b, t, n]`) and the two scales' (`[b, t, 1]`
    each), summed over tokens by tfc.reduce_rows. `init` (optional): the
    gradient of the input's other uses, which `input_grad` adds its own to.
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_F32Tensor:$alpha_proj,
                       Tfc_F32Tensor:$beta_proj,
                       1DTensorOf<[F32]>:$alpha_scale,
                       1DTensorOf<[F32]>:$beta_scale, Tfc_F32Tensor:$grad,
                       Optional<Tfc_F32Tensor>:$init,
                       Tfc_StreamsAttr:$streams, F64Attr:$epsilon);
  let results = (outs Tfc_F32Tensor:$input_grad,
                      Tfc_F32Tensor:$alpha_proj_grad,
                      Tfc_F32Tensor:$beta_proj_grad,
                      Tfc_F32Tensor:$static_alpha_grad,
                      Tfc_F32Tensor:$static_beta_grad,
                      Tfc_F32Tensor:$alpha_scale_grad,
                      Tfc_F32Tensor:$beta_scale_grad);
  let assemblyFormat = [{
    $input `,` $alpha_proj `,` $beta_proj `,` $alpha_scale `,` $beta_scale
    `,` $grad (`init` $init^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif // TFC_HYPER_CONNECTION_OPS_TD
