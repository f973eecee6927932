//===- TfcOps.td - tfc operations --------------------------*- tablegen -*-===//
//
// The forward computation of a Transformer block, one op per step of the
// math in docs/abi.md. Activations are [batch, seq, width] f32 tensors (batch
// and seq dynamic); attention's per-head tensors are [batch, heads, seq, dh].
// Type rules live in traits and verifiers; ops carry no layout decisions.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_OPS_TD
#define TFC_OPS_TD

include "tfc/Dialect/TfcDialect.td"
include "tfc/Dialect/TfcEnums.td"
include "tfc/Dialect/TfcInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/IR/OpBase.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Tfc_F32Tensor : RankedTensorOf<[F32]>;
def Tfc_TokenTensor : RankedTensorOf<[I32]>;
// The valid length of each sequence of a right-padded batch: [batch] i32.
def Tfc_LengthsTensor : 1DTensorOf<[I32]>;
// A sliding attention window in keys; 0: none.
def Tfc_WindowAttr : DefaultValuedAttr<ConfinedAttr<I64Attr, [IntNonNegative]>,
                                       "0">;

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

def Tfc_ParamOp : Tfc_Op<"param", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "a parameter tensor read from the flat parameter buffer";
  let description = [{
    Views `numel(result)` floats of the flat buffer `params` starting at
    `offset + layer * layer_stride` as a row-major tensor. Parameters of the
    block body take the depth loop's induction variable as `layer`; global
    parameters (embeddings, final norm, head) have none.

    ```mlir
    %w = tfc.param %params[%layer] {name = "attn.wq.weight", offset = 1536 : i64,
                                    layer_stride = 7087872 : i64}
        : tensor<?xf32> -> tensor<768x768xf32>
    ```
  }];
  let arguments = (ins 1DTensorOf<[F32]>:$params, Optional<Index>:$layer,
                       StrAttr:$name, I64Attr:$offset,
                       DefaultValuedAttr<I64Attr, "0">:$layer_stride);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $params (`[` $layer^ `]`)? attr-dict `:` type($params) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Linear layers and norms
//===----------------------------------------------------------------------===//

def Tfc_LinearOp : Tfc_Op<"linear", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "x @ W (+ b) over the last axis";
  let description = [{
    `result[..., n] = sum_k input[..., k] * W[k, n] + bias[n]`. The weight is
    stored `[in, out]`; with `transpose_weight` it is stored `[out, in]` and
    used transposed (a head tied to the embedding table).
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_F32Tensor:$weight,
                       Optional<Tfc_F32Tensor>:$bias,
                       UnitAttr:$transpose_weight);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $bias^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Input and output widths, read from the weight.
    int64_t getInFeatures();
    int64_t getOutFeatures();
  }];
}

def Tfc_LayerNormOp : Tfc_Op<"layer_norm", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "(x - mean) / sqrt(var + eps) * gamma + beta over the last axis";
  let description = [{
    With `groups` = n > 1 the last axis is n consecutive groups of its
    width / n (gamma's and beta's size), each normalised on its own with
    the same weights: QK-norm's per-head norm read from the projection's
    [b, s, heads * dh] rows (groups = heads) instead of the [b, heads, s,
    dh] heads.
  }];
  let arguments = (ins Tfc_F32Tensor:$input, 1DTensorOf<[F32]>:$gamma,
                       1DTensorOf<[F32]>:$beta, F64Attr:$epsilon,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma `,` $beta attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfc_RMSNormOp : Tfc_Op<"rms_norm", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "x / sqrt(mean(x^2) + eps) * gamma over the last axis";
  let description = [{
    `groups` as for tfc.layer_norm: n > 1 normalises each of the last
    axis's n groups on its own.
  }];
  let arguments = (ins Tfc_F32Tensor:$input, 1DTensorOf<[F32]>:$gamma,
                       F64Attr:$epsilon,
                       DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $gamma attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention's pieces
//===----------------------------------------------------------------------===//

def Tfc_SplitHeadsOp : Tfc_Op<"split_heads", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "[batch, seq, heads*dh] -> [batch, heads, seq, dh]";
  let arguments = (ins Tfc_F32Tensor:$input);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tfc_MergeHeadsOp : Tfc_Op<"merge_heads", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "[batch, heads, seq, dh] -> [batch, seq, heads*dh]";
  let arguments = (ins Tfc_F32Tensor:$input);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tfc_RepeatHeadsOp : Tfc_Op<"repeat_heads", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "grouped-query K/V for every query head: [b, g, t, dh] -> [b, h, t, dh]";
  let description = [{
    Result head `i` is input head `i / (h / g)`: each of the `g` key/value
    heads serves `h / g` consecutive query heads (`h` a multiple of `g`), as
    in grouped-query attention (`g = 1`: multi-query). The unfused path's
    copy; fused attention reads the shared heads in place.
  }];
  let arguments = (ins Tfc_F32Tensor:$input);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tfc_SumHeadGroupsOp : Tfc_Op<"sum_head_groups", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "the gradient of tfc.repeat_heads: [b, h, t, dh] -> [b, g, t, dh]";
  let description = [{
    Result head `j` is the sum of input heads `j * (h / g)` to
    `(j + 1) * (h / g) - 1`, added in that order (the result does not depend
    on the thread count).
  }];
  let arguments = (ins Tfc_F32Tensor:$input);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Tfc_RopeOp : Tfc_Op<"rope", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>, AllTypesMatch<["input", "result"]>]> {
  let summary = "rotary position embedding of q or k heads [b, h, t, dh]";
  let description = [{
    Rotates each pair of the first `rotary_dim` dims of every head by the
    angle `p * theta^(-2i / rotary_dim)` for pair `i` at position
    `p = offset + t` (Su et al. 2021), plus `positions[b]` ([b] i32) when
    given (decoding: each sequence's rows start at its own position); the
    other dims pass through. `half`
    pairs dims `(i, i + rotary_dim / 2)` as Hugging Face's LLaMA does,
    `interleaved` pairs `(2i, 2i + 1)` as GPT-J does:
    `(x1, x2) -> (x1 cos - x2 sin, x2 cos + x1 sin)`. `inverse` rotates by
    the negative angle: the transpose, which is the gradient. Angles are
    formed and reduced modulo 2 pi in f64 so that long sequences keep f32
    accuracy.
  }];
  let arguments = (ins Tfc_F32Tensor:$input, F64Attr:$theta,
                       I64Attr:$rotary_dim, Tfc_RopeStyleAttr:$style,
                       DefaultValuedAttr<I64Attr, "0">:$offset,
                       UnitAttr:$inverse,
                       Optional<Tfc_LengthsTensor>:$positions);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    qualified($style) $input (`at` $positions^ `:` type($positions))?
    `theta` $theta `rotary_dim` $rotary_dim attr-dict `:` type($input)
  }];
  let hasVerifier = 1;
}

def Tfc_AttentionScoresOp : Tfc_Op<"attention_scores", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "Q K^T per head: [b, h, s, dh] x [b, h, t, dh] -> [b, h, s, t]";
  let arguments = (ins Tfc_F32Tensor:$query, Tfc_F32Tensor:$key);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $query `,` $key attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfc_ScaleOp : Tfc_Op<"scale", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>, SameOperandsAndResultType]> {
  let summary = "multiplies every element by a constant";
  let arguments = (ins Tfc_F32Tensor:$input, F64Attr:$factor);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = "$input `by` $factor attr-dict `:` type($input)";
}

def Tfc_AlibiOp : Tfc_Op<"alibi", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>, SameOperandsAndResultType]> {
  let summary = "adds ALiBi's linear distance bias to attention scores [b, h, s, t]";
  let description = [{
    `scores[b, h, i, j] - m_h * |i - j|` (Press et al. 2022) with the
    published slopes for H = dim 1 heads: `m_h = 2^(-8 (h + 1) / H)` when H
    is a power of two; otherwise, with P the largest power of two below H,
    the P slopes of P heads followed by every other slope of 2P heads
    (`2^(-8 (2 (h - P) + 1) / (2 P))` for h >= P). Under a causal mask
    (`j <= i`) that is the paper's `-m_h (i - j)`; bidirectional attention
    is biased by the distance either way. The gradient passes through.

    ```mlir
    %0 = tfc.alibi %s : tensor<?x12x?x?xf32>
    ```
  }];
  let arguments = (ins Tfc_F32Tensor:$input);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
  let hasVerifier = 1;
}

def Tfc_MaskOp : Tfc_Op<"mask", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>, AllTypesMatch<["input", "result"]>]> {
  let summary = "masks attention scores [b, h, s, t]";
  let description = [{
    `causal` sets `scores[..., i, j] = -inf` where `j > i`; `bidirectional`
    leaves every score as it is. A sliding `window` w > 0 also hides the keys
    a window leaves out: `j <= i - w` and, when bidirectional, `j >= i + w`
    (query i sees i - w < j <= i, or |i - j| < w). With `lengths` ([b] i32,
    a right-padded batch) the keys `j >= lengths[b]` of batch row b are
    hidden too.

    ```mlir
    %0 = tfc.mask #tfc.mask<causal> %s window 256 : tensor<?x8x?x?xf32>
    %1 = tfc.mask #tfc.mask<bidirectional> %s lengths %len
        : tensor<?x8x?x?xf32>, tensor<?xi32>
    ```
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_MaskKindAttr:$kind,
                       Tfc_WindowAttr:$window,
                       Optional<Tfc_LengthsTensor>:$lengths);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    qualified($kind) $input (`lengths` $lengths^)? (`window` $window^)?
    attr-dict `:` type($input) (`,` type($lengths)^)?
  }];
  let hasVerifier = 1;
}

def Tfc_ZeroPaddingOp : Tfc_Op<"zero_padding", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>, AllTypesMatch<["input", "result"]>]> {
  let summary = "zeroes the padded positions of [b, s, ...]";
  let description = [{
    `result[b, i, ...] = i < lengths[b] ? input[b, i, ...] : 0`: a
    right-padded batch's output is defined (zero) where the sequence has
    ended. Its gradient is the same op on the gradient.

    ```mlir
    %0 = tfc.zero_padding %h, %len : tensor<?x?x768xf32>, tensor<?xi32>
    ```
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_LengthsTensor:$lengths);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input `,` $lengths attr-dict `:` type($input) `,` type($lengths)
  }];
  let hasVerifier = 1;
}

def Tfc_IgnorePaddingOp : Tfc_Op<"ignore_padding", [Pure, AllTypesMatch<["targets", "result"]>]> {
  let summary = "marks the targets [b, s] at padded positions ignored (-1)";
  let description = [{
    `result[b, i] = i < lengths[b] ? targets[b, i] : -1`: the loss of a
    right-padded batch counts its valid positions only. Token ids have no
    gradient.

    ```mlir
    %0 = tfc.ignore_padding %targets, %len : tensor<?x?xi32>, tensor<?xi32>
    ```
  }];
  let arguments = (ins Tfc_TokenTensor:$targets, Tfc_LengthsTensor:$lengths);
  let results = (outs Tfc_TokenTensor:$result);
  let assemblyFormat = [{
    $targets `,` $lengths attr-dict `:` type($targets) `,` type($lengths)
  }];
  let hasVerifier = 1;
}

def Tfc_HiddenNormOp : Tfc_Op<"hidden_norm", [Pure, AllTypesMatch<["probes", "result"]>]> {
  let summary = "records the mean L2 norm of a hidden state's rows in a probe";
  let description = [{
    Returns `probes` with element `index` replaced by the mean over the
    rows `[b, i]` of `input` `[batch, seq, d]` of `sqrt(sum_j input[b, i,
    j]^2)`: with `lengths`, over the rows `i < lengths[b]` only (0 when
    there are none). The probe `hidden_norms` (`[probes] hidden_norms`)
    records it before the first block and after each block. It watches the
    model and has no gradient: backward never reaches it.

    With `streams` n > 1 the input is n residual streams `[batch, seq,
    n*d]` and `probes` is `[probes, n]`: row `index` gets each stream's
    mean row norm (the `stream_norms` probe of hyper-connections).

    ```mlir
    %p1 = tfc.hidden_norm %h into %p0[%i] : tensor<?x?x64xf32>, tensor<25xf32>
    ```
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_F32Tensor:$probes,
                       Index:$index, Optional<Tfc_LengthsTensor>:$lengths,
                       DefaultValuedAttr<ConfinedAttr<I64Attr, [IntPositive]>,
                                         "1">:$streams);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $input `into` $probes `[` $index `]` (`lengths` $lengths^)? attr-dict `:`
    type($input) `,` type($probes) (`,` type($lengths)^)?
  }];
  let hasVerifier = 1;
}

def Tfc_SoftmaxOp : Tfc_Op<"softmax", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>, SameOperandsAndResultType]> {
  let summary = "softmax over the last axis";
  let description = [{
    A row of only -inf (an attention query whose mask hides every key: a
    padded position under a sliding window) is 0, not NaN.
  }];
  let arguments = (ins Tfc_F32Tensor:$input);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def Tfc_AttentionContextOp : Tfc_Op<"attention_context", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "P V per head: [b, h, s, t] x [b, h, t, dh] -> [b, h, s, dh]";
  let arguments = (ins Tfc_F32Tensor:$probs, Tfc_F32Tensor:$value);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $probs `,` $value attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Pointwise
//===----------------------------------------------------------------------===//

def Tfc_ActivationOp : Tfc_Op<"activation", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>, SameOperandsAndResultType]> {
  let summary = "a pointwise activation";
  let arguments = (ins Tfc_F32Tensor:$input, Tfc_ActivationKindAttr:$kind);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = "qualified($kind) $input attr-dict `:` type($input)";
}

def Tfc_GLUOp : Tfc_Op<"glu", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>, SameOperandsAndResultType]> {
  let summary = "gated unit: act(gate) * up";
  let arguments = (ins Tfc_F32Tensor:$gate, Tfc_F32Tensor:$up,
                       Tfc_ActivationKindAttr:$kind);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    qualified($kind) $gate `,` $up attr-dict `:` type($gate)
  }];
}

def Tfc_ResidualAddOp
    : Tfc_Op<"residual_add", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>, SameOperandsAndResultType]> {
  let summary = "alpha * residual + branch";
  let description = [{
    Closes a sub-layer. `alpha` is 1 except under DeepNorm, which scales the
    residual stream by alpha > 1 before the add.
  }];
  let arguments = (ins Tfc_F32Tensor:$residual, Tfc_F32Tensor:$branch,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = "$residual `,` $branch attr-dict `:` type($result)";
}

//===----------------------------------------------------------------------===//
// Embedding, positions, loss
//===----------------------------------------------------------------------===//

def Tfc_EmbeddingOp : Tfc_Op<"embedding", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "table[tokens]: [b, s] i32 x [vocab, d] -> [b, s, d]";
  let description = [{
    The generated entry point rejects token ids outside `[0, vocab)` before
    any compute; the lowering still clamps them so no id reads out of bounds.
  }];
  let arguments = (ins Tfc_TokenTensor:$tokens, Tfc_F32Tensor:$table);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    $tokens `,` $table attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfc_AddPositionsOp : Tfc_Op<"add_positions", [Pure, AttrSizedOperandSegments, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "adds a position encoding to [b, s, d]";
  let description = [{
    `learned` adds rows `0..s-1` of `table` ([max_seq, d]); `sinusoidal` adds
    sin/cos of pos / 10000^(2i/d) and takes no table. With `positions`
    ([b] i32, decoding) row t of sequence b is at position
    `positions[b] + t`.
  }];
  let arguments = (ins Tfc_F32Tensor:$input, Optional<Tfc_F32Tensor>:$table,
                       Tfc_PositionKindAttr:$kind,
                       Optional<Tfc_LengthsTensor>:$positions);
  let results = (outs Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    qualified($kind) $input (`,` $table^)? (`at` $positions^)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Tfc_CrossEntropyOp : Tfc_Op<"cross_entropy", [Pure, DeclareOpInterfaceMethods<Tfc_GradientOpInterface>]> {
  let summary = "mean cross-entropy of logits [b, s, v] against targets [b, s]";
  let description = [{
    Targets < 0 are ignored; the mean is over the others, and 0 when there
    are none. Targets >= vocab are ignored too (they name no class).
  }];
  let arguments = (ins Tfc_F32Tensor:$logits, Tfc_TokenTensor:$targets);
  let results = (outs 0DTensorOf<[F32]>:$loss);
  let assemblyFormat = [{
    $logits `,` $targets attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

include "tfc/Dialect/TfcGradOps.td"
include "tfc/Dialect/TfcLinearFusionOps.td"
include "tfc/Dialect/TfcResidualNormOps.td"
include "tfc/Dialect/TfcLossHeadOps.td"
include "tfc/Dialect/TfcAttentionOps.td"
include "tfc/Dialect/TfcDecodingOps.td"
include "tfc/Dialect/TfcMoeOps.td"
include "tfc/Dialect/TfcHyperConnectionOps.td"

#endif // TFC_OPS_TD
