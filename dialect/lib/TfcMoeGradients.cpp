//===- TfcMoeGradients.cpp - Reverse-mode rules of the MoE ops ------------===//
//
// The routed FFN's chain rule (TfcMoeOps.td): dispatch and combine are each
// other's transposes (a copy into the assignment rows, a sum out of them),
// a grouped linear's gradients are per-expert matmuls over the same rows,
// and the router's gradient reaches its logits through the selected gates
// and the load-balancing loss.
//
//===----------------------------------------------------------------------===//

#include "tfc/Dialect/TfcDialect.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::tfc;

LogicalResult MoeRouteOp::buildGradients(OpBuilder &b,
                                         GradientContext &context) {
  // Results: gates (0), experts, slots, offsets (integers), aux (4).
  Value gatesGrad = context.resultGrad(0);
  Value auxGrad = context.resultGrad(4);
  if (!gatesGrad && !auxGrad)
    return success();
  Value logitsGrad = MoeRouteGradOp::create(
      b, getLoc(), getLogits().getType(), context.primal(getLogits()),
      context.primal(getExperts()), context.primal(getOffsets()), gatesGrad,
      auxGrad, getRenormalizeAttr(), getAuxLossAttr());
  context.addOperandGrad(getLogits(), logitsGrad);
  return success();
}

LogicalResult MoeDispatchOp::buildGradients(OpBuilder &b,
                                            GradientContext &context) {
  Value dy = context.resultGrad(0);
  if (!dy)
    return success();
  if (getGates())
    return emitOpError("with gates is a gradient and has no gradient rule");
  // Each token's rows summed back: combine without gates.
  context.addGrad(getInput(),
                  MoeCombineOp::create(b, getLoc(), getInput().getType(), dy,
                                       context.primal(getSlots()), Value(),
                                       Value()));
  return success();
}

LogicalResult MoeCombineOp::buildGradients(OpBuilder &b,
                                           GradientContext &context) {
  Value dy = context.resultGrad(0);
  if (!dy)
    return success();
  Location loc = getLoc();
  Value slots = context.primal(getSlots());
  Value gates = getGates() ? context.primal(getGates()) : Value();
  // d input[slots[n, j]] = gates[n, j] * dy[n]: dispatch scaled by the gates.
  context.addGrad(
      getInput(),
      MoeDispatchOp::create(b, loc, getInput().getType(), dy, slots, gates));
  if (getGates())
    context.addGrad(getGates(), MoeGateGradOp::create(
                                    b, loc, getGates().getType(),
                                    context.primal(getInput()), slots, dy));
  if (getBase())
    context.addGrad(getBase(), dy);
  return success();
}

LogicalResult GroupedLinearOp::buildGradients(OpBuilder &b,
                                              GradientContext &context) {
  Value dy = context.resultGrad(0);
  if (!dy)
    return success();
  if (getTransposeWeight())
    return emitOpError("with transpose_weight is a gradient and has no "
                       "gradient rule");
  Location loc = getLoc();
  Value x = context.primal(getInput());
  Value offsets = context.primal(getOffsets());
  // y_e = x_e W_e: dx_e = dy_e W_e^T, dW_e = x_e^T dy_e, db_e = sum dy_e.
  context.addOperandGrad(
      getInput(),
      GroupedLinearOp::create(b, loc, getInput().getType(), dy, offsets,
                              context.primal(getWeight()), Value(),
                              /*transpose_weight=*/true));
  context.addOperandGrad(
      getWeight(), GroupedWeightGradOp::create(b, loc, getWeight().getType(), x,
                                               dy, offsets));
  if (getBias())
    context.addOperandGrad(
        getBias(),
        GroupedReduceRowsOp::create(b, loc, getBias().getType(), dy, offsets));
  return success();
}
