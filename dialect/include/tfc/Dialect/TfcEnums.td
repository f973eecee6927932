//===- TfcEnums.td - tfc enum attributes -------------------*- tablegen -*-===//
//
// Kinds that parameterise ops, printed as words: #tfc.mask<causal>.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_ENUMS_TD
#define TFC_ENUMS_TD

include "tfc/Dialect/TfcDialect.td"
include "mlir/IR/EnumAttr.td"

def Tfc_MaskKind : I32EnumAttr<"MaskKind", "attention mask", [
    I32EnumAttrCase<"causal", 0>,
    I32EnumAttrCase<"bidirectional", 1>]> {
  let cppNamespace = "::mlir::tfc";
  let genSpecializedAttr = 0;
}
def Tfc_MaskKindAttr : EnumAttr<Tfc_Dialect, Tfc_MaskKind, "mask"> {
  let assemblyFormat = "`<` $value `>`";
}

def Tfc_NormKind : I32EnumAttr<"NormKind", "normalisation", [
    I32EnumAttrCase<"layernorm", 0>,
    I32EnumAttrCase<"rmsnorm", 1>]> {
  let cppNamespace = "::mlir::tfc";
  let genSpecializedAttr = 0;
}
def Tfc_NormKindAttr : EnumAttr<Tfc_Dialect, Tfc_NormKind, "norm"> {
  let assemblyFormat = "`<` $value `>`";
}

// Pointwise activations; a gated unit names the one it applies to its gate.
def Tfc_ActivationKind : I32EnumAttr<"ActivationKind", "pointwise activation", [
    I32EnumAttrCase<"relu", 0>,
    I32EnumAttrCase<"gelu", 1>,
    I32EnumAttrCase<"gelu_tanh", 2>,
    I32EnumAttrCase<"silu", 3>]> {
  let cppNamespace = "::mlir::tfc";
  let genSpecializedAttr = 0;
}
def Tfc_ActivationKindAttr
    : EnumAttr<Tfc_Dialect, Tfc_ActivationKind, "activation"> {
  let assemblyFormat = "`<` $value `>`";
}

def Tfc_PositionKind : I32EnumAttr<"PositionKind", "position encoding", [
    I32EnumAttrCase<"learned", 0>,
    I32EnumAttrCase<"sinusoidal", 1>]> {
  let cppNamespace = "::mlir::tfc";
  let genSpecializedAttr = 0;
}
def Tfc_PositionKindAttr
    : EnumAttr<Tfc_Dialect, Tfc_PositionKind, "positions"> {
  let assemblyFormat = "`<` $value `>`";
}

// Which dims of a head rotate together under tfc.rope.
def Tfc_RopeStyle : I32EnumAttr<"RopeStyle", "rotary dim pairing", [
    I32EnumAttrCase<"half", 0>,
    I32EnumAttrCase<"interleaved", 1>]> {
  let cppNamespace = "::mlir::tfc";
  let genSpecializedAttr = 0;
}
def Tfc_RopeStyleAttr : EnumAttr<Tfc_Dialect, Tfc_RopeStyle, "rope_style"> {
  let assemblyFormat = "`<` $value `>`";
}

#endif // TFC_ENUMS_TD
