//===- TfcDialect.td - The tfc dialect ---------------------*- tablegen -*-===//
//
// tfc: the Transformer-block dialect. Ops mirror the math of a block at the
// granularity fusion passes rewrite (norms, linear layers, attention's pieces,
// activations, residual adds), on f32 tensors whose leading dimensions
// (batch, sequence) are dynamic and whose widths are static.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_DIALECT_TD
#define TFC_DIALECT_TD

include "mlir/IR/OpBase.td"

def Tfc_Dialect : Dialect {
  let name = "tfc";
  let summary = "Transformer blocks as fine-grained tensor ops";
  let description = [{
    The `tfc` dialect is what the `tfc` frontend builds from a TOML spec: one
    straight-line block body inside a depth loop, with parameters read from a
    flat buffer. Fusion passes rewrite chains of its ops; the lowering turns
    them into loops over memrefs in the caller's workspace.
  }];
  let cppNamespace = "::mlir::tfc";
  let useDefaultAttributePrinterParser = 1;
  // The discardable tfc.* attributes (the model's sizes, roles, save slots,
  // ...) are verified by the dialect: TfcModelAttributes.cpp.
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
}

class Tfc_Op<string mnemonic, list<Trait> traits = []>
    : Op<Tfc_Dialect, mnemonic, traits>;

#endif // TFC_DIALECT_TD
