//===- RowLoops.cpp - Loops over the columns of independent rows ----------===//

#include "kernels/RowLoops.h"
#include "kernels/Math.h"
#include "kernels/TargetKernels.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <limits>

using namespace mlir;
using namespace mlir::tfc;

namespace {
constexpr int64_t kWarpSize = 32;
constexpr int64_t kWarps = RowLoops::kGpuThreads / kWarpSize;
} // namespace

void RowLoops::forEachRow(KernelBuilder &l, Value rows,
                          function_ref<void(RowLoops &, Value)> body) {
  l.kernels().forEachRow(l, rows, body);
}

void RowLoops::forEachColumn(Value width, function_ref<void(Value)> fn) {
  if (!thread) {
    l.forLoop(l.index(0), width, fn);
    return;
  }
  auto loop =
      scf::ForOp::create(l.b, l.loc, thread, width, l.index(kGpuThreads));
  OpBuilder::InsertionGuard guard(l.b);
  l.b.setInsertionPoint(loop.getBody()->getTerminator());
  fn(loop.getInductionVar());
}

Value RowLoops::combine(Combine kind, Value a, Value c) {
  if (kind == Combine::Max)
    return arith::MaximumFOp::create(l.b, l.loc, a, c);
  return reassocAdd(l, a, c);
}

SmallVector<Value>
RowLoops::reduce(Combine kind, Value width, int64_t count,
                 function_ref<SmallVector<Value>(Value)> terms) {
  assert(count >= 1 && count <= kMaxSums && "too many reductions at once");
  double identity =
      kind == Combine::Max ? -std::numeric_limits<double>::infinity() : 0.0;
  SmallVector<Value> init(count, l.f32(identity));
  auto accumulate = [&](Value i, ValueRange acc) -> SmallVector<Value> {
    SmallVector<Value> next;
    for (auto [a, t] : llvm::zip_equal(acc, terms(i)))
      next.push_back(combine(kind, a, t));
    return next;
  };
  if (!thread)
    return l.forLoop(l.index(0), width, init, accumulate);
  auto loop = scf::ForOp::create(
      l.b, l.loc, thread, width, l.index(kGpuThreads), init,
      [&](OpBuilder &nested, Location loc, Value i, ValueRange acc) {
        OpBuilder::InsertionGuard guard(l.b);
        l.b.setInsertionPoint(nested.getInsertionBlock(),
                              nested.getInsertionPoint());
        scf::YieldOp::create(l.b, loc, accumulate(i, acc));
      });
  return reduceAcrossBlock(kind, loop.getResults());
}

SmallVector<Value>
RowLoops::sum(Value width, int64_t count,
              function_ref<SmallVector<Value>(Value)> terms) {
  return reduce(Combine::Add, width, count, terms);
}

Value RowLoops::max(Value width, function_ref<Value(Value)> term) {
  return reduce(Combine::Max, width, 1,
                [&](Value i) -> SmallVector<Value> { return {term(i)}; })[0];
}

Value RowLoops::sum(Value width, function_ref<Value(Value)> term) {
  return sum(width, 1,
             [&](Value i) -> SmallVector<Value> { return {term(i)}; })[0];
}

void RowLoops::onFirstThread(function_ref<void()> fn) {
  if (!thread) {
    fn();
    return;
  }
  Value first = arith::CmpIOp::create(l.b, l.loc, arith::CmpIPredicate::eq,
                                      thread, l.index(0));
  auto ifOp = scf::IfOp::create(l.b, l.loc, first, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(l.b);
  l.b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  fn();
}

RowLoops::NormStatistics
RowLoops::normStatistics(int64_t width, double eps, bool subtractMean,
                         function_ref<Value(Value)> load, Value sum) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value w = l.index(width);
  Value invWidth = l.f32(1.0 / double(width));
  Value mean = l.f32(0.0);
  if (subtractMean)
    mean =
        arith::MulFOp::create(b, loc, sum ? sum : this->sum(w, load), invWidth);
  Value sq = this->sum(w, [&](Value i) -> Value {
    Value d = arith::SubFOp::create(b, loc, load(i), mean);
    return arith::MulFOp::create(b, loc, d, d);
  });
  Value var = arith::MulFOp::create(b, loc, sq, invWidth);
  Value rstd = math::RsqrtOp::create(
      b, loc, arith::AddFOp::create(b, loc, var, l.f32(eps)));
  return {mean, rstd};
}

/// A butterfly over each warp (every lane ends with its warp's result), the
/// warps' results through shared memory, then every thread combines them in
/// warp order. The second barrier lets the next reduction reuse the scratch.
SmallVector<Value> RowLoops::reduceAcrossBlock(Combine kind,
                                               ValueRange partials) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  SmallVector<Value> warpSums;
  for (Value v : partials) {
    for (int32_t offset = kWarpSize / 2; offset > 0; offset /= 2) {
      auto shuffle = gpu::ShuffleOp::create(b, loc, v, offset, kWarpSize,
                                            gpu::ShuffleMode::XOR);
      v = combine(kind, v, shuffle.getShuffleResult());
    }
    warpSums.push_back(v);
  }
  Value lane = arith::RemUIOp::create(b, loc, thread, l.index(kWarpSize));
  Value warp = arith::DivUIOp::create(b, loc, thread, l.index(kWarpSize));
  Value firstLane =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, lane, l.index(0));
  auto ifOp = scf::IfOp::create(b, loc, firstLane, /*withElseRegion=*/false);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    Value base = l.mul(warp, l.index(kMaxSums));
    for (auto [k, v] : llvm::enumerate(warpSums))
      memref::StoreOp::create(b, loc, v, scratch,
                              ValueRange{l.add(base, l.index(k))});
  }
  gpu::BarrierOp::create(b, loc);
  SmallVector<Value> totals;
  for (int64_t k = 0; k < int64_t(warpSums.size()); ++k) {
    Value total;
    for (int64_t w = 0; w < kWarps; ++w) {
      Value v = memref::LoadOp::create(b, loc, scratch,
                                       ValueRange{l.index(w * kMaxSums + k)});
      total = total ? combine(kind, total, v) : v;
    }
    totals.push_back(total);
  }
  gpu::BarrierOp::create(b, loc);
  return totals;
}

RowLoops::NormGradTerms
RowLoops::normGradTerms(int64_t width, bool subtractMean,
                        function_ref<Value(Value)> g,
                        function_ref<Value(Value)> xhat) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value invWidth = l.f32(1.0 / double(width));
  SmallVector<Value> sums =
      sum(l.index(width), 2, [&](Value i) -> SmallVector<Value> {
        Value gi = g(i);
        return {gi, arith::MulFOp::create(b, loc, gi, xhat(i))};
      });
  NormGradTerms terms;
  if (subtractMean)
    terms.meanG = arith::MulFOp::create(b, loc, sums[0], invWidth);
  terms.meanGX = arith::MulFOp::create(b, loc, sums[1], invWidth);
  return terms;
}

Value RowLoops::normInputGrad(const NormGradTerms &terms, Value rstd, Value g,
                              Value xhat) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value v = g;
  if (terms.meanG)
    v = arith::SubFOp::create(b, loc, v, terms.meanG);
  v = arith::SubFOp::create(b, loc, v,
                            arith::MulFOp::create(b, loc, xhat, terms.meanGX));
  return arith::MulFOp::create(b, loc, rstd, v);
}
