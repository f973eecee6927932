//===- HyperConnectionOps.cpp - Verifiers of the hyper-connection ops -----===//
//
// The shapes TfcHyperConnectionOps.td states: streams [b, t, n*d], maps
// [b, t, n^2 + 2n], a sub-layer's rows [b, t, d], per-stream rows
// [b, t*n, w]. The lowering needs n and the widths static.
//
//===----------------------------------------------------------------------===//

#include "ShapeChecks.h"
#include "tfc/Dialect/TfcDialect.h"

using namespace mlir;
using namespace mlir::tfc;
using namespace mlir::tfc::shape;

namespace {

int64_t mapsWidth(int64_t n) { return n * n + 2 * n; }

/// `v` is [b, t, w] with a static w; returns w (0 on failure).
FailureOr<int64_t> staticRows(Operation *op, Value v, StringRef name) {
  if (failed(verifyRank(op, v, name, 3)))
    return failure();
  int64_t w = tensorType(v).getDimSize(2);
  if (ShapedType::isDynamic(w))
    return op->emitOpError() << name << " must have a static last dimension";
  return w;
}

/// `v` holds `n` streams per token: [b, t, n*d]; returns d.
FailureOr<int64_t> streamWidth(Operation *op, Value v, StringRef name,
                               int64_t n) {
  FailureOr<int64_t> w = staticRows(op, v, name);
  if (failed(w))
    return failure();
  if (*w % n)
    return op->emitOpError() << name << " width " << *w
                             << " is not a multiple of streams (" << n << ")";
  return *w / n;
}

/// `v` is [b, t, expected] with the token dimensions of `tokens`.
LogicalResult verifyPerToken(Operation *op, Value v, StringRef name,
                             int64_t expected, StringRef what, Value tokens,
                             StringRef tokensName) {
  FailureOr<int64_t> w = staticRows(op, v, name);
  if (failed(w) || failed(verifyLeadingDims(op, tensorType(v), name,
                                            tensorType(tokens), tokensName, 2)))
    return failure();
  if (*w != expected)
    return op->emitOpError() << name << " has width " << *w << ", expected "
                             << expected << " (" << what << ")";
  return success();
}

/// `v` is [b, ?, expected]: one row per (token, stream).
LogicalResult verifyPerStream(Operation *op, Value v, StringRef name,
                              int64_t expected, StringRef what) {
  FailureOr<int64_t> w = staticRows(op, v, name);
  if (failed(w))
    return failure();
  if (*w != expected)
    return op->emitOpError() << name << " has width " << *w << ", expected "
                             << expected << " (" << what << ")";
  return success();
}

/// `result` is `input` with its last dimension `width` and its middle
/// one `middle` (dynamic unless both are static).
LogicalResult verifyReshaped(Operation *op, Value input, Value result,
                             int64_t width, int64_t middleFactor,
                             bool multiply) {
  auto in = tensorType(input), out = tensorType(result);
  if (failed(verifyRank(op, result, "result", 3)))
    return failure();
  if (out.getDimSize(2) != width)
    return op->emitOpError() << "result width " << dimStr(out.getDimSize(2))
                             << " must be " << width;
  if (!dimsAgree(in.getDimSize(0), out.getDimSize(0)))
    return op->emitOpError("result batch ")
           << dimStr(out.getDimSize(0)) << " does not match the input's "
           << dimStr(in.getDimSize(0));
  int64_t t = in.getDimSize(1);
  int64_t expected = ShapedType::isDynamic(t) ? t
                     : multiply               ? t * middleFactor
                                              : t / middleFactor;
  if (!dimsAgree(out.getDimSize(1), expected))
    return op->emitOpError("result dimension 1 is ")
           << dimStr(out.getDimSize(1)) << ", expected " << dimStr(expected);
  return success();
}

} // namespace

LogicalResult HcExpandOp::verify() {
  FailureOr<int64_t> d = staticRows(*this, getInput(), "input");
  if (failed(d))
    return failure();
  return verifyPerToken(*this, getResult(), "result", *d * getStreams(),
                        "streams times the input's width", getInput(), "input");
}

LogicalResult HcMergeOp::verify() {
  FailureOr<int64_t> d = streamWidth(*this, getInput(), "input", getStreams());
  if (failed(d))
    return failure();
  return verifyPerToken(*this, getResult(), "result", *d,
                        "one stream of the input", getInput(), "input");
}

LogicalResult SplitStreamsOp::verify() {
  FailureOr<int64_t> d = streamWidth(*this, getInput(), "input", getStreams());
  if (failed(d))
    return failure();
  return verifyReshaped(*this, getInput(), getResult(), *d, getStreams(),
                        /*multiply=*/true);
}

LogicalResult JoinStreamsOp::verify() {
  FailureOr<int64_t> w = staticRows(*this, getInput(), "input");
  if (failed(w))
    return failure();
  int64_t t = getInput().getType().getDimSize(1);
  if (!ShapedType::isDynamic(t) && t % getStreams())
    return emitOpError("input dimension 1 (")
           << t << ") is not a multiple of streams (" << getStreams() << ")";
  return verifyReshaped(*this, getInput(), getResult(), *w * getStreams(),
                        getStreams(), /*multiply=*/false);
}

LogicalResult MhcMapsOp::verify() {
  int64_t n = getStreams(), maps = mapsWidth(n);
  if (failed(streamWidth(*this, getInput(), "input", n)) ||
      failed(verifyPerToken(*this, getProj(), "proj", maps, "n^2 + 2n",
                            getInput(), "input")) ||
      failed(
          verifyVector(*this, getAlpha(), "alpha", 3, "pre, post and res")) ||
      failed(verifyVector(*this, getBias(), "bias", maps, "n^2 + 2n")))
    return failure();
  return verifyPerToken(*this, getResult(), "result", maps, "n^2 + 2n",
                        getInput(), "input");
}

LogicalResult HcMapsOp::verify() {
  int64_t n = getStreams();
  FailureOr<int64_t> d = streamWidth(*this, getInput(), "input", n);
  if (failed(d) ||
      failed(verifyPerStream(*this, getAlphaProj(), "alpha_proj", n + 1,
                             "A_m and A_r: n + 1")) ||
      failed(verifyPerStream(*this, getBetaProj(), "beta_proj", 1, "B")) ||
      failed(
          verifyVector(*this, getStaticBeta(), "static_beta", n, "streams")) ||
      failed(
          verifyVector(*this, getAlphaScale(), "alpha_scale", 1, "a scalar")) ||
      failed(verifyVector(*this, getBetaScale(), "beta_scale", 1, "a scalar")))
    return failure();
  auto a = getStaticAlpha().getType();
  if (a.getDimSize(0) != n || a.getDimSize(1) != n + 1)
    return emitOpError("static_alpha must be [")
           << n << ", " << n + 1 << "], got [" << dimStr(a.getDimSize(0))
           << ", " << dimStr(a.getDimSize(1)) << "]";
  return verifyPerToken(*this, getResult(), "result", mapsWidth(n), "n^2 + 2n",
                        getInput(), "input");
}

LogicalResult HcAggregateOp::verify() {
  int64_t n = getStreams();
  FailureOr<int64_t> d = streamWidth(*this, getInput(), "input", n);
  if (failed(d) || failed(verifyPerToken(*this, getMaps(), "maps", mapsWidth(n),
                                         "n^2 + 2n", getInput(), "input")))
    return failure();
  return verifyPerToken(*this, getResult(), "result", *d,
                        "one stream of the input", getInput(), "input");
}

LogicalResult HcDistributeOp::verify() {
  int64_t n = getStreams();
  FailureOr<int64_t> d = streamWidth(*this, getInput(), "input", n);
  if (failed(d) ||
      failed(verifyPerToken(*this, getBranch(), "branch", *d,
                            "one stream of the input", getInput(), "input")) ||
      failed(verifyPerToken(*this, getMaps(), "maps", mapsWidth(n), "n^2 + 2n",
                            getInput(), "input")))
    return failure();
  if (getResult().getType() != getInput().getType())
    return emitOpError("result type must be the input's");
  return success();
}

namespace {
/// A gradient op's optional `init` (the input's gradient so far) has the
/// input's type.
LogicalResult verifyInit(Operation *op, Value init, Value input) {
  if (init && init.getType() != input.getType())
    return op->emitOpError("init must have the input's type ")
           << input.getType() << ", got " << init.getType();
  return success();
}
} // namespace

LogicalResult HcAggregateGradOp::verify() {
  return verifyInit(*this, getInit(), getInput());
}

LogicalResult MhcMapsGradOp::verify() {
  return verifyInit(*this, getInit(), getInput());
}

LogicalResult HcMapsGradOp::verify() {
  return verifyInit(*this, getInit(), getInput());
}
