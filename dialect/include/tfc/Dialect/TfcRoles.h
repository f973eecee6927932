//===- TfcRoles.h - What a model function's arguments are -------*- C++ -*-===//
//
// A `tfc.model` function and its gradient `@NAME_grad` say what each
// argument and result is with a `tfc.role` string: "params", "tokens", "x",
// "lengths", "enc", "targets" in, "logits", "y", "loss" out, and the probes
// ("hidden_norms"), outputs that watch the model and have no gradient; the
// gradient function takes "d_" + an output's role (a probe's aside) and
// returns "d_" + an input's role, and "d_params" both ways. A role is also the
// C name of the entry point's argument (docs/abi.md) and the name error
// messages use. The dialect verifies roles
// (TfcDialect::verifyRegionArgAttribute); these read them.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_DIALECT_TFCROLES_H
#define TFC_DIALECT_TFCROLES_H

#include "mlir/Interfaces/FunctionInterfaces.h"

#include <string>

namespace mlir::tfc {

/// The attribute name: `{tfc.role = "x"}` on an argument or result.
inline constexpr llvm::StringLiteral kRoleAttrName = "tfc.role";

/// The tfc.role of argument `index` of `func`; "" when it has none.
StringRef getArgRole(FunctionOpInterface func, unsigned index);
/// The tfc.role of result `index` of `func`; "" when it has none.
StringRef getResultRole(FunctionOpInterface func, unsigned index);

/// Whether `role` is a probe's: an output backward takes no gradient of.
bool isProbeRole(StringRef role);

/// The role of the gradient of a value with `role`: "d_" + role.
std::string gradientRole(StringRef role);

/// How a model function's gradient function `@NAME_grad` connects to it
/// (docs/abi.md "Backward"). @NAME_grad takes (params, each passed argument,
/// d_<output> for each seeded result, d_params) and returns (d_params,
/// d_<input> for each differentiated argument), in these orders.
struct GradientInterface {
  /// The model's "params" argument.
  unsigned paramsArg = 0;
  /// Arguments backward takes again, under their own role, rather than
  /// reading forward's copy: a padded batch's "lengths".
  SmallVector<unsigned> passedArgs;
  /// Results whose gradient is an argument: every result but the probes, or
  /// none when one is the "loss" (backward starts from the loss alone).
  SmallVector<unsigned> seededResults;
  /// Results with role "loss": their gradient is 1, not an argument.
  SmallVector<unsigned> lossResults;
  /// Arguments whose gradient backward returns: roles "x" and "enc" (token
  /// ids have none).
  SmallVector<unsigned> differentiatedArgs;
};

/// The gradient interface of `model` (a function with a "params" argument).
GradientInterface getGradientInterface(FunctionOpInterface model);

} // namespace mlir::tfc

#endif // TFC_DIALECT_TFCROLES_H
