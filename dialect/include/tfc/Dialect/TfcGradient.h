//===- TfcGradient.h - What gradient rules see ------------------*- C++ -*-===//
//
// The bridge between a forward op's gradient rule (GradientOpInterface) and
// the autodiff driver (tfc-derive-backward). Rules never look at the
// backward function directly: they ask for forward values and hand back
// gradients of forward values.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_DIALECT_TFCGRADIENT_H
#define TFC_DIALECT_TFCGRADIENT_H

#include "mlir/IR/Value.h"

namespace mlir::tfc {

class ParamOp;

class GradientContext {
public:
  virtual ~GradientContext() = default;

  /// The backward-side value of `forward` (an operand or result of the op
  /// being differentiated): a saved activation, or a parameter view.
  virtual Value primal(Value forward) = 0;

  /// The gradient of result `index` of the op being differentiated; null if
  /// that result does not influence the outputs.
  virtual Value resultGrad(unsigned index) = 0;

  /// Adds `grad` to the gradient of the forward value `forward` (an operand
  /// of the op being differentiated). Gradients of non-differentiable values
  /// (token ids) must not be added.
  virtual void addGrad(Value forward, Value grad) = 0;

  /// The gradient added to `forward` so far, taken out of the sum: a rule
  /// whose gradient op adds it in the sweep that writes its own (an `init`
  /// operand: no separate tfc.add over the tensor) hands the total back
  /// with addGrad. Null when nothing was added yet.
  virtual Value takeGrad(Value forward) = 0;

  /// Accumulates `grad` into the parameter gradient buffer at the place of
  /// `param` (same offset, same layer).
  virtual void addParamGrad(ParamOp param, Value grad) = 0;

  /// Adds `grad` for an operand of the op being differentiated: into
  /// d_params where the operand is a tfc.param view (addParamGrad), else to
  /// the operand's gradient (addGrad).
  void addOperandGrad(Value operand, Value grad);
};

} // namespace mlir::tfc

#endif // TFC_DIALECT_TFCGRADIENT_H
