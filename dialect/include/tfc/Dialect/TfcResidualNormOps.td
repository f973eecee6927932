//===- TfcResidualNormOps.td - Residual add + norm, fused ---*- tablegen -*-===//
//
// What the residual-norm fusion (tfc-fuse-residual-norm) makes of a
// `tfc.residual_add` and the `tfc.layer_norm` / `tfc.rms_norm` that reads its
// sum, and the fused backward op its gradient rule builds. One parallel
// iteration per row does the add, the statistics and the normalised row
// while the row stays in the first-level cache.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_RESIDUAL_NORM_OPS_TD
#define TFC_RESIDUAL_NORM_OPS_TD

def Tfc_ResidualNormOp : Tfc_Op<"residual_norm", [Pure,
    DeclareOpInterfaceMethods<Tfc_GradientOpInterface>,
    AllTypesMatch<["residual", "branch", "sum", "result"]>,
    OptionalTypesMatchWith<"beta has gamma's type", "gamma", "beta", "$_self">]> {
  let summary = "sum = alpha * residual + branch, result = norm(sum), one sweep";
  let description = [{
    `tfc.residual_add` followed by the norm of its sum (`kind`: LayerNorm
    with gamma and beta, RMSNorm with gamma only), computed in one pass per
    row. `sum` is the residual stream the sub-layer closes: the pre-LN
    blocks keep using it, and backward reads it as the norm's input. Where
    nothing uses `sum` and backward does not save it (post-LN and DeepNorm
    inference), the lowering does not store it.

    ```mlir
    %h, %n = tfc.residual_norm #tfc.norm<layernorm> %x, %attn, %g, %b
        {alpha = 1.0 : f64, epsilon = 1.0e-05 : f64}
        : tensor<?x?x768xf32>, tensor<768xf32>
    ```
  }];
  let arguments = (ins Tfc_F32Tensor:$residual, Tfc_F32Tensor:$branch,
                       1DTensorOf<[F32]>:$gamma,
                       Optional<1DTensorOf<[F32]>>:$beta,
                       Tfc_NormKindAttr:$kind,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha,
                       F64Attr:$epsilon);
  let results = (outs Tfc_F32Tensor:$sum, Tfc_F32Tensor:$result);
  let assemblyFormat = [{
    qualified($kind) $residual `,` $branch `,` $gamma (`,` $beta^)? attr-dict
    `:` type($result) `,` type($gamma)
  }];
  let hasVerifier = 1;
}

def Tfc_ResidualNormGradOp : Tfc_Op<"residual_norm_grad", [Pure,
    AttrSizedResultSegments,
    AllTypesMatch<["sum", "grad", "branch_grad"]>,
    OptionalTypesMatchWith<"sum_grad has sum's type", "sum", "sum_grad",
                           "$_self">,
    OptionalTypesMatchWith<"residual_grad has sum's type", "sum",
                           "residual_grad", "$_self">,
    AllTypesMatch<["gamma", "gamma_grad"]>,
    OptionalTypesMatchWith<"beta_grad has gamma's type", "gamma", "beta_grad",
                           "$_self">]> {
  let summary = "gradients of tfc.residual_norm, one pass per row";
  let description = [{
    With `d_sum = norm_grad(sum, gamma, grad) + sum_grad` (`sum_grad`: what
    the other uses of the sum sent back, absent when it has none):
    `branch_grad = d_sum` (the branch's gradient, and the residual's when
    alpha is 1), `residual_grad = alpha * d_sum` (only when alpha is not 1),
    `gamma_grad` and, for LayerNorm, `beta_grad` summed over rows in a fixed
    order (independent of the thread count).

    ```mlir
    %ds, %dg, %db = tfc.residual_norm_grad #tfc.norm<layernorm> %h, %g, %dn, %dh
        {alpha = 1.0 : f64, epsilon = 1.0e-05 : f64}
        : tensor<?x?x768xf32>, tensor<768xf32> beta_grad tensor<768xf32>
    ```
  }];
  let arguments = (ins Tfc_F32Tensor:$sum, 1DTensorOf<[F32]>:$gamma,
                       Tfc_F32Tensor:$grad, Optional<Tfc_F32Tensor>:$sum_grad,
                       Tfc_NormKindAttr:$kind,
                       DefaultValuedAttr<F64Attr, "1.0">:$alpha,
                       F64Attr:$epsilon);
  let results = (outs Tfc_F32Tensor:$branch_grad,
                      Optional<Tfc_F32Tensor>:$residual_grad,
                      1DTensorOf<[F32]>:$gamma_grad,
                      Optional<1DTensorOf<[F32]>>:$beta_grad);
  let assemblyFormat = [{
    qualified($kind) $sum `,` $gamma `,` $grad (`,` $sum_grad^)? attr-dict
    `:` type($sum) `,` type($gamma)
    (`residual_grad` type($residual_grad)^)? (`beta_grad` type($beta_grad)^)?
  }];
  let hasVerifier = 1;
}

#endif // TFC_RESIDUAL_NORM_OPS_TD
