//===- TfcInterfaces.td - tfc op interfaces ----------------*- tablegen -*-===//

#ifndef TFC_INTERFACES_TD
#define TFC_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Tfc_GradientOpInterface : OpInterface<"GradientOpInterface"> {
  let description = [{
    A differentiable tfc op: given the gradients of its results, it builds
    the ops that compute the gradients of its operands (reverse mode). The
    `GradientContext` gives the backward-side value of any forward value the
    rule needs (saved by forward, or a parameter) and collects the operand
    gradients; tfc-derive-backward drives it.
  }];
  let cppNamespace = "::mlir::tfc";
  let methods = [
    InterfaceMethod<[{
        Builds the operand gradients of this op at the builder's insertion
        point. Results without a gradient have a null resultGrad.
      }],
      "::mlir::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::tfc::GradientContext &":$context)>
  ];
}

#endif // TFC_INTERFACES_TD
