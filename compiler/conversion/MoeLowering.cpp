//===- MoeLowering.cpp - The routed FFN's ops -----------------------------===//
//
// TfcMoeOps.td's ops on flat buffers. Routing is one parallel iteration per
// token (softmax and top-k over its E logits) and then one serial scan (a
// one-iteration parallel loop: a kernel on CUDA) that counts the tokens per
// expert, gives each (token, choice) its row in token order within its
// expert, and sums the load-balancing loss in row order: the same rows and
// the same sums whatever the thread count. Each expert's matmul is the
// target's matmul over its own rows, one after the other (a host loop over
// the experts, reading their offsets), so an expert computes only for the
// tokens routed to it.
//
//===----------------------------------------------------------------------===//

#include "conversion/OpLowering.h"
#include "kernels/Elementwise.h"
#include "kernels/Math.h"
#include "kernels/TargetKernels.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::tfc;

namespace {

Value i32Constant(Lowering &l, int64_t v) {
  return arith::ConstantOp::create(l.b, l.loc, l.b.getI32IntegerAttr(v));
}

/// Element `i` of an i32 buffer as an index.
Value loadIndex(Lowering &l, Value flat, Value i) {
  return arith::IndexCastOp::create(l.b, l.loc, l.b.getIndexType(),
                                    l.load(flat, i));
}

Value cmpI(Lowering &l, arith::CmpIPredicate predicate, Value a, Value c) {
  return arith::CmpIOp::create(l.b, l.loc, predicate, a, c);
}

Value cmpF(Lowering &l, arith::CmpFPredicate predicate, Value a, Value c) {
  return arith::CmpFOp::create(l.b, l.loc, predicate, a, c);
}

Value select(Lowering &l, Value condition, Value a, Value c) {
  return arith::SelectOp::create(l.b, l.loc, condition, a, c);
}

/// Runs `then` where `condition` holds.
void ifThen(Lowering &l, Value condition, function_ref<void()> then) {
  auto op = scf::IfOp::create(l.b, l.loc, condition, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(l.b);
  l.b.setInsertionPointToStart(&op.getThenRegion().front());
  then();
}

/// The softmax of one token's logits, recomputed wherever it is needed:
/// the max, 1 / sum of exp(l - max), and p(e).
struct RouterSoftmax {
  Lowering &l;
  Value logits, base, max, invSum;

  RouterSoftmax(Lowering &l, Value logits, Value base, int64_t experts)
      : l(l), logits(logits), base(base) {
    Value width = l.index(experts);
    max = l.forLoop(
        l.index(0), width, {l.f32(-std::numeric_limits<double>::infinity())},
        [&](Value e, ValueRange acc) -> SmallVector<Value> {
          return {arith::MaximumFOp::create(l.b, l.loc, acc[0], logit(e))};
        })[0];
    Value sum = l.forLoop(
        l.index(0), width, {l.f32(0.0)},
        [&](Value e, ValueRange acc) -> SmallVector<Value> {
          return {arith::AddFOp::create(l.b, l.loc, acc[0], unnormalised(e))};
        })[0];
    invSum = arith::DivFOp::create(l.b, l.loc, l.f32(1.0), sum);
  }
  Value logit(Value e) { return l.load(logits, l.add(base, e)); }
  Value unnormalised(Value e) {
    return math::ExpOp::create(
        l.b, l.loc, arith::SubFOp::create(l.b, l.loc, logit(e), max));
  }
  Value p(Value e) {
    return arith::MulFOp::create(l.b, l.loc, unnormalised(e), invSum);
  }
};

/// The experts' first rows [E + 1] (an i32 buffer) at expert `e`: its
/// first row and its row count, as indices.
std::pair<Value, Value> expertRows(Lowering &l, Value offsets, Value e) {
  Value first = loadIndex(l, offsets, e);
  Value end = loadIndex(l, offsets, l.add(e, l.index(1)));
  return {first, l.sub(end, first)};
}

//===----------------------------------------------------------------------===//
// Routing
//===----------------------------------------------------------------------===//

struct MoeRouteLowering : TfcOpLowering<MoeRouteLowering, MoeRouteOp> {
  LogicalResult plan(MoeRouteOp op, Lowering &l) const {
    Buffer logits = l.lookup(op.getLogits());
    int64_t k = op.getTopK(), experts = op.getNumExperts();
    SmallVector<Value> choices{logits.dims[0], logits.dims[1], l.allocIndex(k)};
    l.allocateResult(op.getGates(), choices);
    l.allocateResult(op.getExperts(), choices);
    l.allocateResult(op.getSlots(), choices);
    l.allocateResult(op.getOffsets(), {l.allocIndex(experts + 1)});
    l.allocateResult(op.getAux(), {});
    // Each token's p (for the loss's means; padded tokens' are 0).
    if (hasAux(op))
      l.allocate(l.b.getF32Type(), logits.dims);
    return success();
  }
  LogicalResult emit(MoeRouteOp op, Lowering &l) const;

private:
  static bool hasAux(MoeRouteOp op) {
    return op.getAuxLoss().convertToDouble() > 0.0;
  }
  /// Phase 1: each token's experts and gates (and p).
  void emitSelection(MoeRouteOp op, Lowering &l, Value probs) const;
  /// Phase 2: the rows per expert, each choice's row, the loss.
  void emitScan(MoeRouteOp op, Lowering &l, Value probs) const;
};

LogicalResult MoeRouteLowering::emit(MoeRouteOp op, Lowering &l) const {
  Value probs = hasAux(op) ? l.takeScratch().flat : Value();
  emitSelection(op, l, probs);
  emitScan(op, l, probs);
  return success();
}

void MoeRouteLowering::emitSelection(MoeRouteOp op, Lowering &l,
                                     Value probs) const {
  Buffer logits = l.lookup(op.getLogits());
  Value gates = l.lookup(op.getGates()).flat;
  Value experts = l.lookup(op.getExperts()).flat;
  Value lengths = l.flatOf(op.getLengths());
  int64_t k = op.getTopK(), numExperts = op.getNumExperts();
  bool renormalize = op.getRenormalize();
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value width = l.index(numExperts);
  Value inf = l.f32(std::numeric_limits<double>::infinity());

  l.parallelFor(rowCount(l, logits), [&](Value n) {
    RouterSoftmax softmax(l, logits.flat, l.mul(n, width), numExperts);
    Value routed = arith::ConstantOp::create(b, loc, b.getBoolAttr(true));
    if (lengths)
      routed = arith::XOrIOp::create(
          b, loc, isPaddedRow(l, n, logits.dims[1], lengths), routed);
    if (probs)
      l.forLoop(l.index(0), width, [&](Value e) {
        l.store(select(l, routed, softmax.p(e), l.f32(0.0)), probs,
                l.add(l.mul(n, width), e));
      });
    // Choice j is the largest logit after choice j - 1 in the order (logit
    // descending, index ascending): no set of taken experts to keep.
    Value first = l.mul(n, l.index(k));
    Value minusOne = l.index(-1);
    SmallVector<Value> picked = l.forLoop(
        l.index(0), l.index(k), {inf, minusOne, l.f32(0.0)},
        [&](Value j, ValueRange prev) -> SmallVector<Value> {
          SmallVector<Value> best = l.forLoop(
              l.index(0), width, {l.f32(0.0), minusOne},
              [&](Value e, ValueRange acc) -> SmallVector<Value> {
                Value x = softmax.logit(e);
                Value after = arith::OrIOp::create(
                    b, loc, cmpF(l, arith::CmpFPredicate::OLT, x, prev[0]),
                    arith::AndIOp::create(
                        b, loc, cmpF(l, arith::CmpFPredicate::OEQ, x, prev[0]),
                        cmpI(l, arith::CmpIPredicate::sgt, e, prev[1])));
                // The first candidate, or a larger logit (ties keep the
                // lower index).
                Value better = arith::OrIOp::create(
                    b, loc, cmpI(l, arith::CmpIPredicate::eq, acc[1], minusOne),
                    cmpF(l, arith::CmpFPredicate::OGT, x, acc[0]));
                Value take = arith::AndIOp::create(b, loc, after, better);
                return {select(l, take, x, acc[0]), select(l, take, e, acc[1])};
              });
          Value p = softmax.p(best[1]);
          Value at = l.add(first, j);
          Value expert =
              arith::IndexCastOp::create(b, loc, b.getI32Type(), best[1]);
          l.store(select(l, routed, expert, i32Constant(l, -1)), experts, at);
          l.store(select(l, routed, p, l.f32(0.0)), gates, at);
          return {best[0], best[1], arith::AddFOp::create(b, loc, prev[2], p)};
        });
    if (!renormalize)
      return;
    Value scale = arith::DivFOp::create(b, loc, l.f32(1.0), picked[2]);
    l.forLoop(l.index(0), l.index(k), [&](Value j) {
      Value at = l.add(first, j);
      l.store(arith::MulFOp::create(b, loc, l.load(gates, at), scale), gates,
              at);
    });
  });
}

void MoeRouteLowering::emitScan(MoeRouteOp op, Lowering &l, Value probs) const {
  Buffer choices = l.lookup(op.getExperts());
  Value experts = choices.flat;
  Value slots = l.lookup(op.getSlots()).flat;
  Value offsets = l.lookup(op.getOffsets()).flat;
  Value aux = l.lookup(op.getAux()).flat;
  int64_t k = op.getTopK(), numExperts = op.getNumExperts();
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value width = l.index(numExperts);
  Value assignments = l.product(choices.dims);
  Value zero = l.index(0), one = l.index(1);

  l.parallelFor(one, [&](Value) {
    // Counts in offsets[e + 1]; each choice's rank within its expert.
    l.forLoop(zero, l.add(width, one),
              [&](Value e) { l.store(i32Constant(l, 0), offsets, e); });
    l.forLoop(zero, assignments, [&](Value a) {
      Value e = l.load(experts, a);
      Value routed = cmpI(l, arith::CmpIPredicate::sge, e, i32Constant(l, 0));
      l.store(i32Constant(l, -1), slots, a);
      ifThen(l, routed, [&] {
        Value at =
            l.add(arith::IndexCastOp::create(b, loc, b.getIndexType(), e), one);
        Value count = l.load(offsets, at);
        l.store(count, slots, a);
        l.store(arith::AddIOp::create(b, loc, count, i32Constant(l, 1)),
                offsets, at);
      });
    });
    // Counts to first rows, then ranks to rows.
    l.forLoop(zero, width, [&](Value e) {
      Value next = l.add(e, one);
      l.store(arith::AddIOp::create(b, loc, l.load(offsets, next),
                                    l.load(offsets, e)),
              offsets, next);
    });
    l.forLoop(zero, assignments, [&](Value a) {
      Value e = l.load(experts, a);
      Value routed = cmpI(l, arith::CmpIPredicate::sge, e, i32Constant(l, 0));
      ifThen(l, routed, [&] {
        Value first = l.load(
            offsets, arith::IndexCastOp::create(b, loc, b.getIndexType(), e));
        l.store(arith::AddIOp::create(b, loc, l.load(slots, a), first), slots,
                a);
      });
    });
    if (!probs) {
      l.store(l.f32(0.0), aux, zero);
      return;
    }
    // aux = alpha * E * sum_e f_e * P_e = alpha * E / T^2 * sum_e count_e *
    // sum_n p[n, e], over the T routed tokens; sums in double, rows in
    // order.
    Type f64 = b.getF64Type();
    auto toF64 = [&](Value index) {
      Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
      return arith::SIToFPOp::create(b, loc, f64, i64).getResult();
    };
    Value rows = arith::DivUIOp::create(b, loc, assignments, l.index(k));
    Value routedRows = arith::DivUIOp::create(
        b, loc, loadIndex(l, offsets, width), l.index(k));
    Value zeroF64 =
        arith::ConstantOp::create(b, loc, b.getF64FloatAttr(0.0)).getResult();
    Value weighted = l.forLoop(
        zero, width, {zeroF64},
        [&](Value e, ValueRange acc) -> SmallVector<Value> {
          Value column = l.forLoop(
              zero, rows, {zeroF64},
              [&](Value n, ValueRange sum) -> SmallVector<Value> {
                Value p = arith::ExtFOp::create(
                    b, loc, f64, l.load(probs, l.add(l.mul(n, width), e)));
                return {arith::AddFOp::create(b, loc, sum[0], p)};
              })[0];
          Value count = toF64(expertRows(l, offsets, e).second);
          return {arith::AddFOp::create(
              b, loc, acc[0], arith::MulFOp::create(b, loc, count, column))};
        })[0];
    Value t = toF64(l.maxIdx(routedRows, one));
    Value scale = arith::DivFOp::create(
        b, loc,
        arith::ConstantOp::create(
            b, loc,
            b.getF64FloatAttr(op.getAuxLoss().convertToDouble() * numExperts)),
        arith::MulFOp::create(b, loc, t, t));
    Value value = arith::MulFOp::create(b, loc, scale, weighted);
    l.store(arith::TruncFOp::create(b, loc, b.getF32Type(), value), aux, zero);
  });
}

struct MoeRouteGradLowering
    : ShapePreservingLowering<MoeRouteGradLowering, MoeRouteGradOp> {
  LogicalResult emit(MoeRouteGradOp op, Lowering &l) const;
};

LogicalResult MoeRouteGradLowering::emit(MoeRouteGradOp op, Lowering &l) const {
  Buffer logits = l.lookup(op.getLogits());
  Buffer choices = l.lookup(op.getExperts());
  Value experts = choices.flat;
  Value offsets = l.lookup(op.getOffsets()).flat;
  Value gatesGrad = l.flatOf(op.getGatesGrad());
  Value auxGrad = l.flatOf(op.getAuxGrad());
  Value out = l.lookup(op.getResult()).flat;
  auto type = cast<RankedTensorType>(op.getLogits().getType());
  int64_t numExperts = type.getDimSize(2);
  int64_t k = cast<RankedTensorType>(op.getExperts().getType()).getDimSize(2);
  double alpha = op.getAuxLoss().convertToDouble();
  bool renormalize = op.getRenormalize();
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value width = l.index(numExperts);
  Value zero = l.index(0);

  l.parallelFor(rowCount(l, logits), [&](Value n) {
    // The loss's d p[n, e] = d aux * alpha * E * count_e / T^2, the same
    // for every routed token (T of them).
    Value auxScale;
    if (auxGrad && alpha > 0.0) {
      Value tokens = arith::DivUIOp::create(
          b, loc, loadIndex(l, offsets, width), l.index(k));
      Value t = l.indexToF32(l.maxIdx(tokens, l.index(1)));
      auxScale = arith::DivFOp::create(
          b, loc,
          arith::MulFOp::create(b, loc, l.load(auxGrad, zero),
                                l.f32(alpha * numExperts)),
          arith::MulFOp::create(b, loc, t, t));
    }
    Value base = l.mul(n, width);
    Value first = l.mul(n, l.index(k));
    RouterSoftmax softmax(l, logits.flat, base, numExperts);
    Value routed = cmpI(l, arith::CmpIPredicate::sge, l.load(experts, first),
                        i32Constant(l, 0));
    // d p into the output row first, then the softmax's gradient in place.
    l.forLoop(zero, width, [&](Value e) {
      Value dp = l.f32(0.0);
      if (auxScale)
        dp = arith::MulFOp::create(
            b, loc, auxScale, l.indexToF32(expertRows(l, offsets, e).second));
      l.store(dp, out, l.add(base, e));
    });
    if (gatesGrad) {
      auto expertAt = [&](Value j) {
        return loadIndex(l, experts, l.add(first, j));
      };
      // Renormalised: g_j = p_j / S; d p_i = (d g_i - sum_j d g_j g_j) / S.
      Value invS, dot;
      if (renormalize) {
        Value s = l.forLoop(
            zero, l.index(k), {l.f32(0.0)},
            [&](Value j, ValueRange acc) -> SmallVector<Value> {
              return {arith::AddFOp::create(
                  b, loc, acc[0], softmax.p(l.maxIdx(expertAt(j), zero)))};
            })[0];
        invS = arith::DivFOp::create(b, loc, l.f32(1.0), s);
        dot = l.forLoop(
            zero, l.index(k), {l.f32(0.0)},
            [&](Value j, ValueRange acc) -> SmallVector<Value> {
              Value g = arith::MulFOp::create(
                  b, loc, softmax.p(l.maxIdx(expertAt(j), zero)), invS);
              Value dg = l.load(gatesGrad, l.add(first, j));
              return {arith::AddFOp::create(
                  b, loc, acc[0], arith::MulFOp::create(b, loc, dg, g))};
            })[0];
      }
      ifThen(l, routed, [&] {
        l.forLoop(zero, l.index(k), [&](Value j) {
          Value at = l.add(base, expertAt(j));
          Value dp = l.load(gatesGrad, l.add(first, j));
          if (renormalize)
            dp = arith::MulFOp::create(
                b, loc, arith::SubFOp::create(b, loc, dp, dot), invS);
          l.store(arith::AddFOp::create(b, loc, l.load(out, at), dp), out, at);
        });
      });
    }
    // d logit_e = p_e (d p_e - sum_i p_i d p_i); 0 for a padded token.
    Value sum =
        l.forLoop(zero, width, {l.f32(0.0)},
                  [&](Value e, ValueRange acc) -> SmallVector<Value> {
                    Value pd = arith::MulFOp::create(
                        b, loc, softmax.p(e), l.load(out, l.add(base, e)));
                    return {arith::AddFOp::create(b, loc, acc[0], pd)};
                  })[0];
    l.forLoop(zero, width, [&](Value e) {
      Value at = l.add(base, e);
      Value grad = arith::MulFOp::create(
          b, loc, softmax.p(e),
          arith::SubFOp::create(b, loc, l.load(out, at), sum));
      l.store(select(l, routed, grad, l.f32(0.0)), out, at);
    });
  });
  return success();
}

//===----------------------------------------------------------------------===//
// Dispatch, combine
//===----------------------------------------------------------------------===//

struct MoeDispatchLowering : TfcOpLowering<MoeDispatchLowering, MoeDispatchOp> {
  LogicalResult plan(MoeDispatchOp op, Lowering &l) const {
    Buffer slots = l.lookup(op.getSlots());
    l.allocateResult(op.getResult(),
                     {l.product(slots.dims), l.lookup(op.getInput()).dims[2]});
    return success();
  }
  LogicalResult emit(MoeDispatchOp op, Lowering &l) const {
    Buffer slots = l.lookup(op.getSlots());
    Value input = l.lookup(op.getInput()).flat;
    Buffer out = l.lookup(op.getResult());
    Value gates = l.flatOf(op.getGates());
    Value width = out.dims[1];
    Value k = slots.dims[2];
    l.parallelFor(l.product(slots.dims), [&](Value a) {
      Value slot = l.load(slots.flat, a);
      ifThen(
          l, cmpI(l, arith::CmpIPredicate::sge, slot, i32Constant(l, 0)), [&] {
            Value from = l.mul(arith::DivUIOp::create(l.b, l.loc, a, k), width);
            Value to = l.mul(arith::IndexCastOp::create(
                                 l.b, l.loc, l.b.getIndexType(), slot),
                             width);
            Value gate = gates ? l.load(gates, a) : Value();
            l.forLoop(l.index(0), width, [&](Value c) {
              Value x = l.load(input, l.add(from, c));
              if (gate)
                x = arith::MulFOp::create(l.b, l.loc, x, gate);
              l.store(x, out.flat, l.add(to, c));
            });
          });
    });
    return success();
  }
};

struct MoeCombineLowering : TfcOpLowering<MoeCombineLowering, MoeCombineOp> {
  LogicalResult plan(MoeCombineOp op, Lowering &l) const {
    Buffer slots = l.lookup(op.getSlots());
    l.allocateResult(op.getResult(), {slots.dims[0], slots.dims[1],
                                      l.lookup(op.getInput()).dims[1]});
    return success();
  }
  LogicalResult emit(MoeCombineOp op, Lowering &l) const {
    Buffer slots = l.lookup(op.getSlots());
    Value input = l.lookup(op.getInput()).flat;
    Buffer out = l.lookup(op.getResult());
    Value gates = l.flatOf(op.getGates());
    Value base = l.flatOf(op.getBase());
    Value width = out.dims[2];
    Value k = slots.dims[2];
    Value zero = l.index(0);
    l.parallelFor(rowCount(l, out), [&](Value n) {
      Value row = l.mul(n, width);
      l.forLoop(zero, width, [&](Value c) {
        Value at = l.add(row, c);
        l.store(base ? l.load(base, at) : l.f32(0.0), out.flat, at);
      });
      l.forLoop(zero, k, [&](Value j) {
        Value choice = l.add(l.mul(n, k), j);
        Value slot = l.load(slots.flat, choice);
        ifThen(l, cmpI(l, arith::CmpIPredicate::sge, slot, i32Constant(l, 0)),
               [&] {
                 Value from = l.mul(arith::IndexCastOp::create(
                                        l.b, l.loc, l.b.getIndexType(), slot),
                                    width);
                 Value gate = gates ? l.load(gates, choice) : Value();
                 l.forLoop(zero, width, [&](Value c) {
                   Value x = l.load(input, l.add(from, c));
                   if (gate)
                     x = arith::MulFOp::create(l.b, l.loc, x, gate);
                   Value at = l.add(row, c);
                   l.store(arith::AddFOp::create(l.b, l.loc,
                                                 l.load(out.flat, at), x),
                           out.flat, at);
                 });
               });
      });
    });
    return success();
  }
};

struct MoeGateGradLowering : TfcOpLowering<MoeGateGradLowering, MoeGateGradOp> {
  LogicalResult plan(MoeGateGradOp op, Lowering &l) const {
    l.allocateLike(op.getResult(), op.getSlots());
    return success();
  }
  LogicalResult emit(MoeGateGradOp op, Lowering &l) const {
    Buffer slots = l.lookup(op.getSlots());
    Buffer input = l.lookup(op.getInput());
    Value grad = l.lookup(op.getGrad()).flat;
    Value out = l.lookup(op.getResult()).flat;
    Value width = input.dims[1];
    Value k = slots.dims[2];
    l.parallelFor(l.product(slots.dims), [&](Value a) {
      Value slot = l.load(slots.flat, a);
      Value routed =
          cmpI(l, arith::CmpIPredicate::sge, slot, i32Constant(l, 0));
      Value from = l.mul(l.maxIdx(arith::IndexCastOp::create(
                                      l.b, l.loc, l.b.getIndexType(), slot),
                                  l.index(0)),
                         width);
      Value row = l.mul(arith::DivUIOp::create(l.b, l.loc, a, k), width);
      Value dot = l.forLoop(
          l.index(0), width, {l.f32(0.0)},
          [&](Value c, ValueRange acc) -> SmallVector<Value> {
            Value product = arith::MulFOp::create(
                l.b, l.loc, l.load(input.flat, l.add(from, c)),
                l.load(grad, l.add(row, c)));
            return {arith::AddFOp::create(l.b, l.loc, acc[0], product)};
          })[0];
      l.store(select(l, routed, dot, l.f32(0.0)), out, a);
    });
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Grouped matmuls
//===----------------------------------------------------------------------===//

/// Runs `body(e, first, rows)` for each expert e in turn (a host loop),
/// `first` and `rows` its rows, skipping experts without rows unless
/// `alsoEmpty`.
void forEachExpert(Lowering &l, Value offsets, int64_t experts,
                   function_ref<void(Value, Value, Value)> body,
                   function_ref<void(Value)> empty = nullptr) {
  l.forLoop(l.index(0), l.index(experts), [&](Value e) {
    auto [first, rows] = expertRows(l, offsets, e);
    Value some = cmpI(l, arith::CmpIPredicate::ugt, rows, l.index(0));
    auto op = scf::IfOp::create(l.b, l.loc, some, /*withElse=*/bool(empty));
    OpBuilder::InsertionGuard guard(l.b);
    l.b.setInsertionPointToStart(&op.getThenRegion().front());
    body(e, first, rows);
    if (empty) {
      l.b.setInsertionPointToStart(&op.getElseRegion().front());
      empty(e);
    }
  });
}

struct GroupedLinearLowering
    : TfcOpLowering<GroupedLinearLowering, GroupedLinearOp> {
  LogicalResult plan(GroupedLinearOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput());
    l.allocateResult(op.getResult(),
                     {in.dims[0], l.allocIndex(op.getOutFeatures())});
    // The matmul's scratch for the most rows an expert can have: all.
    l.kernels().planFusedMatmul(
        l, fusedMatmulOf(problem(op, l, Value(), l.index(0), in.dims[0])));
    return success();
  }
  LogicalResult emit(GroupedLinearOp op, Lowering &l) const {
    Value offsets = l.lookup(op.getOffsets()).flat;
    Value out = l.lookup(op.getResult()).flat;
    Value bias = l.flatOf(op.getBias());
    int64_t experts = op.getWeight().getType().getDimSize(0);
    Value n = l.allocIndex(op.getOutFeatures());
    forEachExpert(l, offsets, experts, [&](Value e, Value first, Value rows) {
      l.kernels().emitFusedMatmul(
          l, fusedMatmulOf(problem(op, l, e, first, rows)));
      if (!bias)
        return;
      // The expert's bias on its rows.
      l.parallelFor(rows, [&](Value r) {
        Value row = l.mul(l.add(first, r), n);
        l.forLoop(l.index(0), n, [&](Value c) {
          Value at = l.add(row, c);
          Value sum = arith::AddFOp::create(
              l.b, l.loc, l.load(out, at), l.load(bias, l.add(l.mul(e, n), c)));
          l.store(sum, out, at);
        });
      });
    });
    return success();
  }

private:
  /// Expert e's product over rows [first, first + rows) (e null: the plan's
  /// stand-in, expert 0).
  static MatmulProblem problem(GroupedLinearOp op, Lowering &l, Value e,
                               Value first, Value rows) {
    Value in = l.lookup(op.getInput()).flat;
    Value w = l.lookup(op.getWeight()).flat;
    Value out = l.lookup(op.getResult()).flat;
    MatmulProblem p;
    p.bf16Operands = l.bf16Linear;
    p.batch = l.allocIndex(1);
    p.m = rows;
    p.n = l.allocIndex(op.getOutFeatures());
    p.k = l.allocIndex(op.getInFeatures());
    Value zero = l.index(0), one = l.index(1);
    Value weightBase = e ? l.mul(e, l.mul(p.n, p.k)) : zero;
    p.a = MatrixRef{in, l.mul(first, p.k), zero, p.k, one};
    // [E, in, out] read by rows; transposed, [E, out, in] by columns.
    p.bMat = op.getTransposeWeight() ? MatrixRef{w, weightBase, zero, one, p.k}
                                     : MatrixRef{w, weightBase, zero, p.n, one};
    p.c = MatrixRef{out, l.mul(first, p.n), zero, p.n, one};
    return p;
  }
};

struct GroupedWeightGradLowering
    : TfcOpLowering<GroupedWeightGradLowering, GroupedWeightGradOp> {
  LogicalResult plan(GroupedWeightGradOp op, Lowering &l) const {
    l.allocateResult(
        op.getResult(),
        l.shapeOf(op.getResult().getType(), [](unsigned) { return Value(); }));
    Buffer in = l.lookup(op.getInput());
    l.kernels().planFusedMatmul(
        l, fusedMatmulOf(problem(op, l, Value(), l.index(0), in.dims[0])));
    return success();
  }
  LogicalResult emit(GroupedWeightGradOp op, Lowering &l) const {
    Value offsets = l.lookup(op.getOffsets()).flat;
    Buffer out = l.lookup(op.getResult());
    auto type = op.getResult().getType();
    int64_t experts = type.getDimSize(0);
    Value size = l.allocIndex(type.getDimSize(1) * type.getDimSize(2));
    forEachExpert(
        l, offsets, experts,
        [&](Value e, Value first, Value rows) {
          l.kernels().emitFusedMatmul(
              l, fusedMatmulOf(problem(op, l, e, first, rows)));
        },
        [&](Value e) {
          // No rows: no gradient.
          Value base = l.mul(e, size);
          forEachElement(l, size, [&](Value i) {
            l.store(l.f32(0.0), out.flat, l.add(base, i));
          });
        });
    return success();
  }

private:
  /// dW_e = x_e^T dy_e: the expert's rows are the contraction.
  static MatmulProblem problem(GroupedWeightGradOp op, Lowering &l, Value e,
                               Value first, Value rows) {
    Value x = l.lookup(op.getInput()).flat;
    Value dy = l.lookup(op.getGrad()).flat;
    Value out = l.lookup(op.getResult()).flat;
    auto type = op.getResult().getType();
    MatmulProblem p;
    p.bf16Operands = l.bf16Linear;
    p.batch = l.allocIndex(1);
    p.m = l.allocIndex(type.getDimSize(1));
    p.n = l.allocIndex(type.getDimSize(2));
    p.k = rows;
    Value zero = l.index(0), one = l.index(1);
    p.a = MatrixRef{x, l.mul(first, p.m), zero, one, p.m};
    p.bMat = MatrixRef{dy, l.mul(first, p.n), zero, p.n, one};
    p.c = MatrixRef{out, e ? l.mul(e, l.mul(p.m, p.n)) : zero, zero, p.n, one};
    return p;
  }
};

struct GroupedReduceRowsLowering
    : TfcOpLowering<GroupedReduceRowsLowering, GroupedReduceRowsOp> {
  LogicalResult plan(GroupedReduceRowsOp op, Lowering &l) const {
    l.allocateResult(
        op.getResult(),
        l.shapeOf(op.getResult().getType(), [](unsigned) { return Value(); }));
    return success();
  }
  LogicalResult emit(GroupedReduceRowsOp op, Lowering &l) const {
    Value in = l.lookup(op.getInput()).flat;
    Value offsets = l.lookup(op.getOffsets()).flat;
    Buffer out = l.lookup(op.getResult());
    Value width = out.dims[1];
    // One iteration per (expert, column), its rows summed in order.
    l.parallelFor(l.product(out.dims), [&](Value t) {
      Value e = arith::DivUIOp::create(l.b, l.loc, t, width);
      Value c = arith::RemUIOp::create(l.b, l.loc, t, width);
      auto [first, rows] = expertRows(l, offsets, e);
      Value sum = l.forLoop(
          first, l.add(first, rows), {l.f32(0.0)},
          [&](Value r, ValueRange acc) -> SmallVector<Value> {
            return {arith::AddFOp::create(
                l.b, l.loc, acc[0], l.load(in, l.add(l.mul(r, width), c)))};
          })[0];
      l.store(sum, out.flat, t);
    });
    return success();
  }
};

struct ExpertCountsLowering
    : TfcOpLowering<ExpertCountsLowering, ExpertCountsOp> {
  LogicalResult plan(ExpertCountsOp op, Lowering &l) const {
    l.allocateLike(op.getResult(), op.getCounts());
    return success();
  }
  LogicalResult emit(ExpertCountsOp op, Lowering &l) const {
    Buffer counts = l.lookup(op.getCounts());
    Buffer out = l.lookup(op.getResult());
    Value offsets = l.lookup(op.getOffsets()).flat;
    Value experts = counts.dims[1];
    if (counts.flat != out.flat)
      emitCopy(l, counts.flat, out.flat, l.product(out.dims));
    Value row = l.mul(l.scalar(op.getLayer()), experts);
    l.parallelFor(experts, [&](Value e) {
      Value next = l.add(e, l.index(1));
      Value count = arith::SubIOp::create(l.b, l.loc, l.load(offsets, next),
                                          l.load(offsets, e));
      l.store(count, out.flat, l.add(row, e));
    });
    return success();
  }
};

} // namespace

void mlir::tfc::populateMoeLowerings(OpLoweringSet &set) {
  set.add<MoeRouteLowering, MoeRouteGradLowering, MoeDispatchLowering,
          MoeCombineLowering, MoeGateGradLowering, GroupedLinearLowering,
          GroupedWeightGradLowering, GroupedReduceRowsLowering,
          ExpertCountsLowering>();
}
