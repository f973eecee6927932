//===- HyperConnectionGradients.cpp - Reverse-mode rules of the HC ops ----===//
//
// Expanding and merging the streams are each other's transposes, and so
// are splitting and joining them; the sub-layer's read and write have one
// gradient op each, and the maps' gradients come per token (biases, static
// maps, gates) and are summed over the tokens by tfc.reduce_rows, the way
// a linear layer's bias gradient is.
//
//===----------------------------------------------------------------------===//

#include "tfc/Dialect/TfcDialect.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::tfc;

namespace {

/// [b, t, width] (f32), the per-token gradient rows of a parameter.
RankedTensorType perToken(OpBuilder &b, int64_t width) {
  return RankedTensorType::get(
      {ShapedType::kDynamic, ShapedType::kDynamic, width}, b.getF32Type());
}

/// Adds the per-token `rows` summed over the tokens to `param`'s gradient.
void addSummed(OpBuilder &b, Location loc, GradientContext &context,
               Value param, Value rows) {
  int64_t width = cast<RankedTensorType>(rows.getType()).getDimSize(2);
  auto type = RankedTensorType::get({width}, b.getF32Type());
  context.addOperandGrad(param, ReduceRowsOp::create(b, loc, type, rows));
}

} // namespace

LogicalResult HcExpandOp::buildGradients(OpBuilder &b,
                                         GradientContext &context) {
  if (Value dy = context.resultGrad(0))
    context.addGrad(getInput(),
                    HcMergeOp::create(b, getLoc(), getInput().getType(), dy,
                                      getStreamsAttr()));
  return success();
}

LogicalResult HcMergeOp::buildGradients(OpBuilder &b,
                                        GradientContext &context) {
  if (Value dy = context.resultGrad(0))
    context.addGrad(getInput(),
                    HcExpandOp::create(b, getLoc(), getInput().getType(), dy,
                                       getStreamsAttr()));
  return success();
}

LogicalResult SplitStreamsOp::buildGradients(OpBuilder &b,
                                             GradientContext &context) {
  if (Value dy = context.resultGrad(0))
    context.addGrad(getInput(),
                    JoinStreamsOp::create(b, getLoc(), getInput().getType(), dy,
                                          getStreamsAttr()));
  return success();
}

LogicalResult JoinStreamsOp::buildGradients(OpBuilder &b,
                                            GradientContext &context) {
  if (Value dy = context.resultGrad(0))
    context.addGrad(getInput(),
                    SplitStreamsOp::create(b, getLoc(), getInput().getType(),
                                           dy, getStreamsAttr()));
  return success();
}

LogicalResult HcAggregateOp::buildGradients(OpBuilder &b,
                                            GradientContext &context) {
  Value dy = context.resultGrad(0);
  if (!dy)
    return success();
  // The input's gradient so far (the stream mixing's, from hc_distribute_grad)
  // is added in the sweep that writes this one.
  Value init = context.takeGrad(getInput());
  auto grads = HcAggregateGradOp::create(
      b, getLoc(), getInput().getType(), getMaps().getType(),
      context.primal(getInput()), context.primal(getMaps()), dy, init,
      getStreamsAttr());
  context.addGrad(getInput(), grads.getInputGrad());
  context.addGrad(getMaps(), grads.getMapsGrad());
  return success();
}

LogicalResult HcDistributeOp::buildGradients(OpBuilder &b,
                                             GradientContext &context) {
  Value dy = context.resultGrad(0);
  if (!dy)
    return success();
  auto grads = HcDistributeGradOp::create(
      b, getLoc(), getInput().getType(), getBranch().getType(),
      getMaps().getType(), context.primal(getInput()),
      context.primal(getBranch()), context.primal(getMaps()), dy,
      getStreamsAttr(), getAlphaAttr());
  context.addGrad(getInput(), grads.getInputGrad());
  context.addGrad(getBranch(), grads.getBranchGrad());
  context.addGrad(getMaps(), grads.getMapsGrad());
  return success();
}

LogicalResult MhcMapsOp::buildGradients(OpBuilder &b,
                                        GradientContext &context) {
  Value dy = context.resultGrad(0);
  if (!dy)
    return success();
  Location loc = getLoc();
  Value init = context.takeGrad(getInput());
  auto grads = MhcMapsGradOp::create(
      b, loc, getInput().getType(), getProj().getType(), perToken(b, 3),
      getProj().getType(), context.primal(getInput()),
      context.primal(getProj()), context.primal(getAlpha()),
      context.primal(getBias()), dy, init, getStreamsAttr(),
      getSinkhornItersAttr(), getEpsilonAttr());
  context.addGrad(getInput(), grads.getInputGrad());
  context.addGrad(getProj(), grads.getProjGrad());
  addSummed(b, loc, context, getAlpha(), grads.getAlphaGrad());
  addSummed(b, loc, context, getBias(), grads.getBiasGrad());
  return success();
}

LogicalResult HcMapsOp::buildGradients(OpBuilder &b, GradientContext &context) {
  Value dy = context.resultGrad(0);
  if (!dy)
    return success();
  Location loc = getLoc();
  int64_t n = getStreams();
  Value init = context.takeGrad(getInput());
  auto grads = HcMapsGradOp::create(
      b, loc, getInput().getType(), getAlphaProj().getType(),
      getBetaProj().getType(), perToken(b, n * (n + 1)), perToken(b, n),
      perToken(b, 1), perToken(b, 1), context.primal(getInput()),
      context.primal(getAlphaProj()), context.primal(getBetaProj()),
      context.primal(getAlphaScale()), context.primal(getBetaScale()), dy, init,
      getStreamsAttr(), getEpsilonAttr());
  context.addGrad(getInput(), grads.getInputGrad());
  context.addGrad(getAlphaProj(), grads.getAlphaProjGrad());
  context.addGrad(getBetaProj(), grads.getBetaProjGrad());
  addSummed(b, loc, context, getStaticAlpha(), grads.getStaticAlphaGrad());
  addSummed(b, loc, context, getStaticBeta(), grads.getStaticBetaGrad());
  addSummed(b, loc, context, getAlphaScale(), grads.getAlphaScaleGrad());
  addSummed(b, loc, context, getBetaScale(), grads.getBetaScaleGrad());
  return success();
}
