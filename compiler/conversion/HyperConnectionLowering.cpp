//===- HyperConnectionLowering.cpp - Residual streams, mixed --------------===//
//
// TfcHyperConnectionOps.td's ops on flat buffers: one parallel iteration
// per token, whose loops run over its n streams of d and its n^2 + 2n maps;
// mHC's Sinkhorn iterations run for a vector's width of tokens at once
// (TokenLanes). The maps' projections are tfc.linear ops lowered as every
// other matmul; what is left per token is O(n^2 d) for the streams and
// O(sinkhorn_iters n^2) for the maps.
//
//===----------------------------------------------------------------------===//

#include "conversion/OpLowering.h"
#include "kernels/Elementwise.h"
#include "kernels/Math.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::tfc;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// The scalar float arithmetic the per-token kernels are written in.
struct Arith {
  Lowering &l;
  Value add(Value a, Value c) {
    return arith::AddFOp::create(l.b, l.loc, a, c);
  }
  Value sub(Value a, Value c) {
    return arith::SubFOp::create(l.b, l.loc, a, c);
  }
  Value mul(Value a, Value c) {
    return arith::MulFOp::create(l.b, l.loc, a, c);
  }
  Value div(Value a, Value c) {
    return arith::DivFOp::create(l.b, l.loc, a, c);
  }
  /// 1 / a: the per-token kernels divide many values by one sum, and a
  /// division is several multiplications' time on the critical path.
  /// A vector `a` (TokenLanes) gets a splat of 1.
  Value recip(Value a) {
    auto vec = dyn_cast<VectorType>(a.getType());
    Value one = vec ? arith::ConstantOp::create(
                          l.b, l.loc,
                          DenseElementsAttr::get(vec, l.b.getF32FloatAttr(1.0)))
                          .getResult()
                    : l.f32(1.0);
    return div(one, a);
  }
  Value neg(Value a) { return arith::NegFOp::create(l.b, l.loc, a); }
  Value exp(Value a) { return math::ExpOp::create(l.b, l.loc, a); }
  Value tanh(Value a) { return math::TanhOp::create(l.b, l.loc, a); }
  Value sqrt(Value a) { return math::SqrtOp::create(l.b, l.loc, a); }
  Value max(Value a, Value c) {
    return arith::MaximumFOp::create(l.b, l.loc, a, c);
  }
  Value sigmoid(Value a) {
    return div(l.f32(1.0), add(l.f32(1.0), exp(neg(a))));
  }
  /// sum over i in [0, count) of term(i), in order.
  Value sum(int64_t count, function_ref<Value(Value)> term) {
    return sum(l.index(count), term);
  }
  Value sum(Value count, function_ref<Value(Value)> term) {
    return l.forLoop(l.index(0), count, {l.f32(0.0)},
                     [&](Value i, ValueRange acc) -> SmallVector<Value> {
                       return {add(acc[0], term(i))};
                     })[0];
  }
  /// sum over c < width of a[aFirst + c] * b[bFirst + c]: a row's dot
  /// product, reassociable so that LLVM vectorizes it (in a fixed order).
  Value dot(Value a, Value aFirst, Value b, Value bFirst, int64_t width) {
    return l.forLoop(l.index(0), l.index(width), {l.f32(0.0)},
                     [&](Value c, ValueRange acc) -> SmallVector<Value> {
                       Value term = mul(l.load(a, l.add(aFirst, c)),
                                        l.load(b, l.add(bFirst, c)));
                       return {reassocAdd(l, acc[0], term)};
                     })[0];
  }
  /// out[outFirst + c] = sum_k coef(k) * in[rowOf(k) + c] for c < width,
  /// k in [0, count) in order: row by row, so the inner loops run over
  /// contiguous columns.
  void combineRows(Value out, Value outFirst, int64_t count, int64_t width,
                   function_ref<Value(Value)> coef, Value in,
                   function_ref<Value(Value)> rowOf) {
    Value w = l.index(width);
    Value c0 = coef(l.index(0)), r0 = rowOf(l.index(0));
    l.forLoop(l.index(0), w, [&](Value c) {
      l.store(mul(c0, l.load(in, l.add(r0, c))), out, l.add(outFirst, c));
    });
    l.forLoop(l.index(1), l.index(count), [&](Value k) {
      Value ck = coef(k), rk = rowOf(k);
      l.forLoop(l.index(0), w, [&](Value c) {
        Value at = l.add(outFirst, c);
        l.store(add(l.load(out, at), mul(ck, l.load(in, l.add(rk, c)))), out,
                at);
      });
    });
  }
  /// sqrt(mean(x[first + c]^2 over c < width) + eps), the squares summed
  /// as `dot` does: an in-order sum over n * d elements was a quarter of
  /// mhc_maps' time.
  Value rms(Value x, Value first, int64_t width, double eps) {
    Value squares = dot(x, first, x, first, width);
    return sqrt(add(div(squares, l.f32(double(width))), l.f32(eps)));
  }
};

int64_t streamsWidth(Value streams) {
  return cast<RankedTensorType>(streams.getType()).getDimSize(2);
}

/// `init[at] + v` when the gradient op has an init (the input's gradient so
/// far, tfc-derive-backward's takeGrad), else `v`: the order of the tfc.add
/// it replaces, so the sum is the same bits.
Value withInit(Lowering &l, Value init, Value at, Value v) {
  if (!init)
    return v;
  return arith::AddFOp::create(l.b, l.loc, l.load(init, at), v);
}

/// Where the maps of a token start, and their parts (the .td's layout).
struct MapsLayout {
  int64_t n;
  int64_t width() const { return n * n + 2 * n; }
  int64_t pre(int64_t i) const { return i; }
  int64_t post() const { return n; }
  int64_t res() const { return 2 * n; }
};

/// [b, t*n, w] (or [b, t, n*w] for `join`) from [b, t, n*w] ([b, t*n, w]).
void allocateRegrouped(Lowering &l, Value result, Value input, int64_t n,
                       bool split) {
  Buffer in = l.lookup(input);
  int64_t width = cast<RankedTensorType>(result.getType()).getDimSize(2);
  Value middle;
  l.atAllocationPoint([&] {
    middle = split ? l.mul(in.dims[1], l.index(n))
                   : arith::DivUIOp::create(l.b, l.loc, in.dims[1], l.index(n))
                         .getResult();
  });
  l.allocateResult(result, {in.dims[0], middle, l.allocIndex(width)});
}

//===----------------------------------------------------------------------===//
// The streams' shape
//===----------------------------------------------------------------------===//

struct HcExpandLowering : TfcOpLowering<HcExpandLowering, HcExpandOp> {
  LogicalResult plan(HcExpandOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput());
    l.allocateResult(
        op.getResult(),
        {in.dims[0], in.dims[1], l.allocIndex(streamsWidth(op.getResult()))});
    return success();
  }
  LogicalResult emit(HcExpandOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput());
    Value out = l.lookup(op.getResult()).flat;
    int64_t n = op.getStreams(), d = streamsWidth(op.getInput());
    l.parallelFor(rowCount(l, in), [&](Value t) {
      Value from = l.mul(t, l.index(d)), to = l.mul(t, l.index(n * d));
      l.forLoop(l.index(0), l.index(n), [&](Value i) {
        Value stream = l.add(to, l.mul(i, l.index(d)));
        l.forLoop(l.index(0), l.index(d), [&](Value c) {
          l.store(l.load(in.flat, l.add(from, c)), out, l.add(stream, c));
        });
      });
    });
    return success();
  }
};

struct HcMergeLowering : TfcOpLowering<HcMergeLowering, HcMergeOp> {
  LogicalResult plan(HcMergeOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput());
    l.allocateResult(
        op.getResult(),
        {in.dims[0], in.dims[1], l.allocIndex(streamsWidth(op.getResult()))});
    return success();
  }
  LogicalResult emit(HcMergeOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput());
    Value out = l.lookup(op.getResult()).flat;
    int64_t n = op.getStreams(), d = streamsWidth(op.getResult());
    Arith f{l};
    l.parallelFor(rowCount(l, in), [&](Value t) {
      Value from = l.mul(t, l.index(n * d));
      f.combineRows(
          out, l.mul(t, l.index(d)), n, d, [&](Value) { return l.f32(1.0); },
          in.flat, [&](Value i) { return l.add(from, l.mul(i, l.index(d))); });
    });
    return success();
  }
};

/// split_streams and join_streams: the same elements, another shape.
template <typename Derived, typename OpT, bool Split>
struct RegroupLowering : TfcOpLowering<Derived, OpT> {
  LogicalResult plan(OpT op, Lowering &l) const {
    allocateRegrouped(l, op.getResult(), op.getInput(), op.getStreams(), Split);
    return success();
  }
  LogicalResult emit(OpT op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput());
    emitCopy(l, in.flat, l.lookup(op.getResult()).flat, l.product(in.dims));
    return success();
  }
};
struct SplitStreamsLowering
    : RegroupLowering<SplitStreamsLowering, SplitStreamsOp, true> {};
struct JoinStreamsLowering
    : RegroupLowering<JoinStreamsLowering, JoinStreamsOp, false> {};

//===----------------------------------------------------------------------===//
// The sub-layer's read and write
//===----------------------------------------------------------------------===//

struct HcAggregateLowering : TfcOpLowering<HcAggregateLowering, HcAggregateOp> {
  LogicalResult plan(HcAggregateOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput());
    l.allocateResult(
        op.getResult(),
        {in.dims[0], in.dims[1], l.allocIndex(streamsWidth(op.getResult()))});
    return success();
  }
  LogicalResult emit(HcAggregateOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput());
    Value maps = l.lookup(op.getMaps()).flat;
    Value out = l.lookup(op.getResult()).flat;
    MapsLayout m{static_cast<int64_t>(op.getStreams())};
    int64_t n = m.n, d = streamsWidth(op.getResult());
    Arith f{l};
    l.parallelFor(rowCount(l, in), [&](Value t) {
      Value x = l.mul(t, l.index(n * d)), h = l.mul(t, l.index(m.width()));
      f.combineRows(
          out, l.mul(t, l.index(d)), n, d,
          [&](Value i) { return l.load(maps, l.add(h, i)); }, in.flat,
          [&](Value i) { return l.add(x, l.mul(i, l.index(d))); });
    });
    return success();
  }
};

struct HcDistributeLowering
    : ShapePreservingLowering<HcDistributeLowering, HcDistributeOp> {
  LogicalResult emit(HcDistributeOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput());
    Value y = l.lookup(op.getBranch()).flat;
    Value maps = l.lookup(op.getMaps()).flat;
    Value out = l.lookup(op.getResult()).flat;
    MapsLayout m{static_cast<int64_t>(op.getStreams())};
    int64_t n = m.n, d = streamsWidth(op.getBranch());
    Value alpha = l.f32(op.getAlpha().convertToDouble());
    Arith f{l};
    l.parallelFor(rowCount(l, in), [&](Value t) {
      Value x = l.mul(t, l.index(n * d)), h = l.mul(t, l.index(m.width()));
      Value yRow = l.mul(t, l.index(d));
      l.forLoop(l.index(0), l.index(n), [&](Value i) {
        Value post = l.load(maps, l.add(h, l.add(l.index(m.post()), i)));
        Value resRow = l.add(h, l.add(l.index(m.res()), l.mul(i, l.index(n))));
        // alpha sum_j H_res[i, j] x_j + H_post[i] y, the sum in j order.
        Value stream = l.add(x, l.mul(i, l.index(d)));
        f.combineRows(
            out, stream, n, d,
            [&](Value j) { return l.load(maps, l.add(resRow, j)); }, in.flat,
            [&](Value j) { return l.add(x, l.mul(j, l.index(d))); });
        l.forLoop(l.index(0), l.index(d), [&](Value c) {
          Value at = l.add(stream, c);
          l.store(f.add(f.mul(alpha, l.load(out, at)),
                        f.mul(post, l.load(y, l.add(yRow, c)))),
                  out, at);
        });
      });
    });
    return success();
  }
};

struct HcAggregateGradLowering
    : TfcOpLowering<HcAggregateGradLowering, HcAggregateGradOp> {
  LogicalResult plan(HcAggregateGradOp op, Lowering &l) const {
    l.allocateLike(op.getInputGrad(), op.getInput());
    l.allocateLike(op.getMapsGrad(), op.getMaps());
    return success();
  }
  LogicalResult emit(HcAggregateGradOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput());
    Value maps = l.lookup(op.getMaps()).flat;
    Value g = l.lookup(op.getGrad()).flat;
    Value dx = l.lookup(op.getInputGrad()).flat;
    Value init = l.flatOf(op.getInit());
    Value dmaps = l.lookup(op.getMapsGrad()).flat;
    MapsLayout m{static_cast<int64_t>(op.getStreams())};
    int64_t n = m.n, d = streamsWidth(op.getGrad());
    Arith f{l};
    l.parallelFor(rowCount(l, in), [&](Value t) {
      Value x = l.mul(t, l.index(n * d)), h = l.mul(t, l.index(m.width()));
      Value gRow = l.mul(t, l.index(d));
      l.forLoop(l.index(0), l.index(n), [&](Value i) {
        Value stream = l.add(x, l.mul(i, l.index(d)));
        Value pre = l.load(maps, l.add(h, i));
        l.forLoop(l.index(0), l.index(d), [&](Value c) {
          Value at = l.add(stream, c);
          l.store(withInit(l, init, at, f.mul(pre, l.load(g, l.add(gRow, c)))),
                  dx, at);
        });
        l.store(f.dot(in.flat, stream, g, gRow, d), dmaps, l.add(h, i));
      });
      l.forLoop(l.index(n), l.index(m.width()),
                [&](Value k) { l.store(l.f32(0.0), dmaps, l.add(h, k)); });
    });
    return success();
  }
};

struct HcDistributeGradLowering
    : TfcOpLowering<HcDistributeGradLowering, HcDistributeGradOp> {
  LogicalResult plan(HcDistributeGradOp op, Lowering &l) const {
    l.allocateLike(op.getInputGrad(), op.getInput());
    l.allocateLike(op.getBranchGrad(), op.getBranch());
    l.allocateLike(op.getMapsGrad(), op.getMaps());
    return success();
  }
  LogicalResult emit(HcDistributeGradOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput());
    Value y = l.lookup(op.getBranch()).flat;
    Value maps = l.lookup(op.getMaps()).flat;
    Value g = l.lookup(op.getGrad()).flat;
    Value dx = l.lookup(op.getInputGrad()).flat;
    Value dy = l.lookup(op.getBranchGrad()).flat;
    Value dmaps = l.lookup(op.getMapsGrad()).flat;
    MapsLayout m{static_cast<int64_t>(op.getStreams())};
    int64_t n = m.n, d = streamsWidth(op.getBranch());
    Value alpha = l.f32(op.getAlpha().convertToDouble());
    Arith f{l};
    Value dIdx = l.index(d), nIdx = l.index(n);
    l.parallelFor(rowCount(l, in), [&](Value t) {
      Value x = l.mul(t, l.index(n * d)), h = l.mul(t, l.index(m.width()));
      Value yRow = l.mul(t, dIdx);
      auto at = [&](Value stream, Value c) {
        return l.add(x, l.add(l.mul(stream, dIdx), c));
      };
      auto res = [&](Value i, Value j) {
        return l.add(h, l.add(l.index(m.res()), l.add(l.mul(i, nIdx), j)));
      };
      auto post = [&](Value i) {
        return l.add(h, l.add(l.index(m.post()), i));
      };
      auto stream = [&](Value i) { return at(i, l.index(0)); };
      // dx_j = alpha sum_i H_res[i, j] g_i; dy = sum_i H_post[i] g_i.
      l.forLoop(l.index(0), nIdx, [&](Value j) {
        f.combineRows(
            dx, stream(j), n, d,
            [&](Value i) { return l.load(maps, res(i, j)); }, g, stream);
        l.forLoop(l.index(0), dIdx, [&](Value c) {
          Value a = at(j, c);
          l.store(f.mul(alpha, l.load(dx, a)), dx, a);
        });
      });
      f.combineRows(
          dy, yRow, n, d, [&](Value i) { return l.load(maps, post(i)); }, g,
          stream);
      l.forLoop(l.index(0), nIdx, [&](Value i) {
        l.store(l.f32(0.0), dmaps, l.add(h, i));
        l.store(f.dot(y, yRow, g, stream(i), d), dmaps, post(i));
        l.forLoop(l.index(0), nIdx, [&](Value j) {
          l.store(f.mul(alpha, f.dot(in.flat, stream(j), g, stream(i), d)),
                  dmaps, res(i, j));
        });
      });
    });
    return success();
  }
};

//===----------------------------------------------------------------------===//
// mHC's maps
//===----------------------------------------------------------------------===//

/// One token's mHC coefficients (tfc.mhc_maps): r, q = proj / r, and the
/// pre-activation logits alpha_g q + bias of each part.
struct MhcToken {
  Lowering &l;
  Arith f;
  Value proj, alpha, bias;
  MapsLayout m;
  Value projRow, r, invR;

  MhcToken(Lowering &l, Value x, Value proj, Value alpha, Value bias, int64_t n,
           int64_t d, double eps, Value t)
      : l(l), f{l}, proj(proj), alpha(alpha), bias(bias), m{n} {
    projRow = l.mul(t, l.index(m.width()));
    r = f.rms(x, l.mul(t, l.index(n * d)), n * d, eps);
    invR = f.recip(r);
  }
  Value q(Value k) { return f.mul(l.load(proj, l.add(projRow, k)), invR); }
  /// The gating factor of entry k's part: 0 pre, 1 post, 2 res.
  Value gate(int64_t part) { return l.load(alpha, l.index(part)); }
  Value logit(int64_t part, Value k) {
    return f.add(f.mul(gate(part), q(k)), l.load(bias, k));
  }
};

/// Tokens in vector lanes: the Sinkhorn iterations of `lanes` tokens run
/// as one, lane j holding token first + j. One token's iterations are a
/// chain of dependent sums, reciprocals and products that leaves the
/// arithmetic units idle; the lanes fill them. Lanes past the last token
/// compute the last token again and store the same values again.
struct TokenLanes {
  Lowering &l;
  int64_t lanes;
  Value first, last;
  VectorType type;

  TokenLanes(Lowering &l, int64_t lanes, Value group, Value tokens)
      : l(l), lanes(lanes), first(l.mul(group, l.index(lanes))),
        last(l.sub(tokens, l.index(1))),
        type(VectorType::get({lanes}, l.b.getF32Type())) {}
  static Value groups(Lowering &l, int64_t lanes, Value tokens) {
    return l.divUp(tokens, lanes);
  }
  Value token(Value lane) { return l.minIdx(l.add(first, lane), last); }
  Value splat(double v) {
    return arith::ConstantOp::create(
        l.b, l.loc, DenseElementsAttr::get(type, l.b.getF32FloatAttr(v)));
  }
  /// `count` vectors, lane j of vector k the k-th scalar `each` gives for
  /// lane j's token.
  SmallVector<Value>
  gather(int64_t count, function_ref<SmallVector<Value>(Value token)> each) {
    SmallVector<Value> init(count, splat(0.0));
    return l.forLoop(
        l.index(0), l.index(lanes), init,
        [&](Value lane, ValueRange acc) -> SmallVector<Value> {
          SmallVector<Value> scalars = each(token(lane));
          SmallVector<Value> next;
          for (int64_t k = 0; k < count; ++k)
            next.push_back(vector::InsertOp::create(
                l.b, l.loc, scalars[k], acc[k], OpFoldResult(lane)));
          return next;
        });
  }
  /// `each` with lane j's token and lane j of every vector.
  void scatter(ArrayRef<Value> vectors,
               function_ref<void(Value token, ArrayRef<Value>)> each) {
    l.forLoop(l.index(0), l.index(lanes), [&](Value lane) {
      SmallVector<Value> scalars;
      for (Value v : vectors)
        scalars.push_back(
            vector::ExtractOp::create(l.b, l.loc, v, OpFoldResult(lane)));
      each(token(lane), scalars);
    });
  }
  /// For every lane's token in turn (the per-token work around the
  /// iterations).
  void forEachToken(function_ref<void(Value token)> body) {
    l.forLoop(l.index(0), l.index(lanes),
              [&](Value lane) { body(token(lane)); });
  }
  Value load(Value flat, Value index) {
    return vector::LoadOp::create(l.b, l.loc, type, flat, ValueRange{index});
  }
  void store(Value v, Value flat, Value index) {
    vector::StoreOp::create(l.b, l.loc, v, flat, ValueRange{index});
  }
};

/// The lanes' n x n Sinkhorn matrices, row-major, one vector per entry,
/// held in SSA values (the iteration loops carry them): in memory, every
/// step's loads waited on the previous step's stores, which may alias them.
/// The code grows as n^2 per iteration, bounded by the spec's 16 streams.
struct Square {
  int64_t n;
  SmallVector<Value> v;
  Value &at(int64_t i, int64_t j) { return v[i * n + j]; }
  /// The entry at `line`, `k` along it: (k, line) for columns.
  Value &along(bool columns, int64_t line, int64_t k) {
    return columns ? at(k, line) : at(line, k);
  }
};

/// The logits of H~_res for every lane's token; `alsoPerToken` sees each
/// token's coefficients too (its r is a sum over n d: computed once).
Square resLogits(TokenLanes &lanes, Lowering &l, Value x, Value proj,
                 Value alpha, Value bias, int64_t n, int64_t d, double eps,
                 function_ref<void(MhcToken &)> alsoPerToken = nullptr) {
  MapsLayout m{n};
  return Square{n, lanes.gather(n * n, [&](Value t) {
                  MhcToken tok(l, x, proj, alpha, bias, n, d, eps, t);
                  if (alsoPerToken)
                    alsoPerToken(tok);
                  SmallVector<Value> logits;
                  for (int64_t k = 0; k < n * n; ++k)
                    logits.push_back(tok.logit(2, l.index(m.res() + k)));
                  return logits;
                })};
}

/// Lane j of each of the n^2 `entries` into H_res's place in the maps row
/// of lane j's token in `maps`.
void scatterRes(TokenLanes &lanes, Lowering &l, int64_t n,
                ArrayRef<Value> entries, Value maps) {
  MapsLayout m{n};
  lanes.scatter(entries, [&](Value t, ArrayRef<Value> lane) {
    Value row = l.mul(t, l.index(m.width()));
    for (int64_t k = 0; k < n * n; ++k)
      l.store(lane[k], maps, l.add(row, l.index(m.res() + k)));
  });
}

/// exp(H~_res) with each column's max subtracted: Sinkhorn's M_0 up to
/// column scales, which its first column normalisation cancels.
Square sinkhornStart(Arith &f, Square m) {
  for (int64_t j = 0; j < m.n; ++j) {
    Value max = m.at(0, j);
    for (int64_t i = 1; i < m.n; ++i)
      max = f.max(max, m.at(i, j));
    for (int64_t i = 0; i < m.n; ++i)
      m.at(i, j) = f.exp(f.sub(m.at(i, j), max));
  }
  return m;
}

/// Divides each column (or row) of `m` by its sum (a multiplication by its
/// reciprocal); returns the sums.
SmallVector<Value> normalise(Arith &f, Square &m, bool columns) {
  SmallVector<Value> sums;
  for (int64_t line = 0; line < m.n; ++line) {
    Value total = m.along(columns, line, 0);
    for (int64_t k = 1; k < m.n; ++k)
      total = f.add(total, m.along(columns, line, k));
    Value inv = f.recip(total);
    for (int64_t k = 0; k < m.n; ++k)
      m.along(columns, line, k) = f.mul(m.along(columns, line, k), inv);
    sums.push_back(total);
  }
  return sums;
}

/// `iters` Sinkhorn-Knopp iterations from `m` (Eq. 9: columns, then rows),
/// `each` seeing iteration `it`'s column-normalised matrix and both sums.
Square sinkhorn(Lowering &l, Arith &f, TokenLanes &lanes, Square m,
                int64_t iters,
                function_ref<void(Value it, const Square &columnsNormalised,
                                  ArrayRef<Value> c, ArrayRef<Value> r)>
                    each = nullptr) {
  m.v = l.forLoop(l.index(0), l.index(iters), m.v,
                  [&](Value it, ValueRange acc) -> SmallVector<Value> {
                    Square s{m.n, SmallVector<Value>(acc)};
                    SmallVector<Value> c = normalise(f, s, /*columns=*/true);
                    Square columnsNormalised = s;
                    SmallVector<Value> r = normalise(f, s, /*columns=*/false);
                    if (each)
                      each(it, columnsNormalised, c, r);
                    return s.v;
                  });
  return m;
}

/// Tokens per group of lanes: the target's vector width.
int64_t sinkhornLanes(Lowering &l) { return l.vectorWidth; }

struct MhcMapsLowering : TfcOpLowering<MhcMapsLowering, MhcMapsOp> {
  LogicalResult plan(MhcMapsOp op, Lowering &l) const {
    l.allocateLike(op.getResult(), op.getProj());
    return success();
  }
  LogicalResult emit(MhcMapsOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput());
    Value proj = l.lookup(op.getProj()).flat;
    Value alpha = l.lookup(op.getAlpha()).flat;
    Value bias = l.lookup(op.getBias()).flat;
    Value out = l.lookup(op.getResult()).flat;
    int64_t n = op.getStreams(), d = streamsWidth(op.getInput()) / n;
    double eps = op.getEpsilon().convertToDouble();
    int64_t iters = op.getSinkhornIters();
    int64_t lanes = sinkhornLanes(l);
    Value tokens = rowCount(l, in);
    l.parallelFor(TokenLanes::groups(l, lanes, tokens), [&](Value group) {
      TokenLanes tl(l, lanes, group, tokens);
      Arith f{l};
      // Eq. 8: H_pre = sigmoid, H_post = 2 sigmoid, token by token.
      auto gates = [&](MhcToken &tok) {
        Value row = tok.projRow;
        l.forLoop(l.index(0), l.index(n), [&](Value i) {
          l.store(f.sigmoid(tok.logit(0, i)), out, l.add(row, i));
          Value k = l.add(l.index(n), i);
          l.store(f.mul(l.f32(2.0), f.sigmoid(tok.logit(1, k))), out,
                  l.add(row, k));
        });
      };
      // Eq. 9: Sinkhorn-Knopp, t_max times, on the lanes.
      Square logits =
          resLogits(tl, l, in.flat, proj, alpha, bias, n, d, eps, gates);
      Square hRes = sinkhorn(l, f, tl, sinkhornStart(f, logits), iters);
      scatterRes(tl, l, n, hRes.v, out);
    });
    return success();
  }
};

/// The Sinkhorn iterates one group of lanes' backward keeps, a vector per
/// entry: per iteration the column-normalised matrix C (n^2), its column
/// sums c (n) and C's row sums r (n).
struct SinkhornTape {
  int64_t n, iters, lanes;
  int64_t perIteration() const { return n * n + 2 * n; }
  /// The floats of one group's tape.
  int64_t perGroup() const { return iters * perIteration() * lanes; }
  Value mat(Lowering &l, Value base, Value iteration, int64_t k) const {
    return l.add(base, l.mul(l.add(l.mul(iteration, l.index(perIteration())),
                                   l.index(k)),
                             l.index(lanes)));
  }
  Value c(Lowering &l, Value base, Value iteration, int64_t j) const {
    return mat(l, base, iteration, n * n + j);
  }
  Value r(Lowering &l, Value base, Value iteration, int64_t i) const {
    return mat(l, base, iteration, n * n + n + i);
  }
};

struct MhcMapsGradLowering : TfcOpLowering<MhcMapsGradLowering, MhcMapsGradOp> {
  LogicalResult plan(MhcMapsGradOp op, Lowering &l) const {
    l.allocateLike(op.getInputGrad(), op.getInput());
    l.allocateLike(op.getProjGrad(), op.getProj());
    Buffer proj = l.lookup(op.getProj());
    l.allocateResult(op.getAlphaGrad(),
                     {proj.dims[0], proj.dims[1], l.allocIndex(3)});
    l.allocateLike(op.getBiasGrad(), op.getProj());
    // The Sinkhorn tape, per group of lanes.
    int64_t lanes = sinkhornLanes(l);
    SinkhornTape tape{static_cast<int64_t>(op.getStreams()),
                      static_cast<int64_t>(op.getSinkhornIters()), lanes};
    Value groups;
    l.atAllocationPoint([&] {
      groups = TokenLanes::groups(l, lanes, l.mul(proj.dims[0], proj.dims[1]));
    });
    l.allocate(l.b.getF32Type(), {groups, l.allocIndex(tape.perGroup())});
    return success();
  }
  LogicalResult emit(MhcMapsGradOp op, Lowering &l) const;
};

LogicalResult MhcMapsGradLowering::emit(MhcMapsGradOp op, Lowering &l) const {
  Value tapes = l.takeScratch().flat;
  Buffer in = l.lookup(op.getInput());
  Value proj = l.lookup(op.getProj()).flat;
  Value alpha = l.lookup(op.getAlpha()).flat;
  Value bias = l.lookup(op.getBias()).flat;
  Value g = l.lookup(op.getGrad()).flat;
  Value dx = l.lookup(op.getInputGrad()).flat;
  Value init = l.flatOf(op.getInit());
  Value dproj = l.lookup(op.getProjGrad()).flat;
  Value dalpha = l.lookup(op.getAlphaGrad()).flat;
  Value dbias = l.lookup(op.getBiasGrad()).flat;
  int64_t n = op.getStreams(), d = streamsWidth(op.getInput()) / n;
  int64_t iters = op.getSinkhornIters();
  double eps = op.getEpsilon().convertToDouble();
  int64_t lanes = sinkhornLanes(l);
  SinkhornTape tape{n, iters, lanes};
  MapsLayout m{n};
  Value nIdx = l.index(n);
  Value tokens = rowCount(l, in);

  l.parallelFor(TokenLanes::groups(l, lanes, tokens), [&](Value group) {
    TokenLanes tl(l, lanes, group, tokens);
    Arith f{l};
    Value base = l.mul(group, l.index(tape.perGroup()));

    // Forward again, keeping each iteration's C, c and r.
    sinkhorn(l, f, tl,
             sinkhornStart(
                 f, resLogits(tl, l, in.flat, proj, alpha, bias, n, d, eps)),
             iters,
             [&](Value it, const Square &columnsNormalised, ArrayRef<Value> c,
                 ArrayRef<Value> r) {
               for (int64_t k = 0; k < n * n; ++k)
                 tl.store(columnsNormalised.v[k], tapes,
                          tape.mat(l, base, it, k));
               for (int64_t k = 0; k < n; ++k) {
                 tl.store(c[k], tapes, tape.c(l, base, it, k));
                 tl.store(r[k], tapes, tape.r(l, base, it, k));
               }
             });

    // Backward through the iterations, last first, from G = d H_res.
    Square grad{n, tl.gather(n * n, [&](Value t) {
                  Value row = l.mul(t, l.index(m.width()));
                  SmallVector<Value> entries;
                  for (int64_t k = 0; k < n * n; ++k)
                    entries.push_back(
                        l.load(g, l.add(row, l.index(m.res() + k))));
                  return entries;
                })};
    grad.v = l.forLoop(
        l.index(0), l.index(iters), grad.v,
        [&](Value back, ValueRange acc) -> SmallVector<Value> {
          Square dm{n, SmallVector<Value>(acc)};
          Value it = l.sub(l.index(iters - 1), back);
          auto columnsNormalised = [&](int64_t i, int64_t j) {
            return tl.load(tapes, tape.mat(l, base, it, i * n + j));
          };
          // Rows: R = C / r, dC = (dR - sum_l dR R) / r.
          for (int64_t i = 0; i < n; ++i) {
            Value inv = f.recip(tl.load(tapes, tape.r(l, base, it, i)));
            Value dot = tl.splat(0.0);
            for (int64_t j = 0; j < n; ++j)
              dot = f.add(
                  dot, f.mul(dm.at(i, j), f.mul(columnsNormalised(i, j), inv)));
            for (int64_t j = 0; j < n; ++j)
              dm.at(i, j) = f.mul(f.sub(dm.at(i, j), dot), inv);
          }
          // Columns: C = M / c, dM = (dC - sum_k dC C) / c.
          for (int64_t j = 0; j < n; ++j) {
            Value inv = f.recip(tl.load(tapes, tape.c(l, base, it, j)));
            Value dot = tl.splat(0.0);
            for (int64_t i = 0; i < n; ++i)
              dot = f.add(dot, f.mul(dm.at(i, j), columnsNormalised(i, j)));
            for (int64_t i = 0; i < n; ++i)
              dm.at(i, j) = f.mul(f.sub(dm.at(i, j), dot), inv);
          }
          return dm.v;
        });
    // exp: d H~_res = dM_0 * M_0, M_0 = C_0 c_0 (column-max shifted).
    Value first = l.index(0);
    SmallVector<Value> dLogits;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j) {
        Value m0 = f.mul(tl.load(tapes, tape.mat(l, base, first, i * n + j)),
                         tl.load(tapes, tape.c(l, base, first, j)));
        dLogits.push_back(f.mul(grad.at(i, j), m0));
      }
    scatterRes(tl, l, n, dLogits, dbias);

    tl.forEachToken([&](Value t) {
      MhcToken tok(l, in.flat, proj, alpha, bias, n, d, eps, t);
      Value row = tok.projRow;
      // H_pre = sigmoid(z): dz = g s (1 - s); H_post = 2 sigmoid(z): dz = g
      // p (1 - p / 2).
      l.forLoop(l.index(0), nIdx, [&](Value i) {
        Value s = f.sigmoid(tok.logit(0, i));
        Value at = l.add(row, i);
        l.store(f.mul(l.load(g, at), f.mul(s, f.sub(l.f32(1.0), s))), dbias,
                at);
        Value k = l.add(nIdx, i);
        Value p = f.sigmoid(tok.logit(1, k));
        Value atPost = l.add(row, k);
        l.store(f.mul(l.load(g, atPost),
                      f.mul(l.f32(2.0), f.mul(p, f.sub(l.f32(1.0), p)))),
                dbias, atPost);
      });
      // Through q = proj / r: d alpha_g = sum dz q, dq = alpha_g dz,
      // d proj = dq / r, dr = -sum dq q / r.
      Value alphaRow = l.mul(t, l.index(3));
      Value dr = l.f32(0.0);
      for (int64_t part = 0; part < 3; ++part) {
        int64_t lo = part == 0 ? 0 : part == 1 ? n : 2 * n;
        int64_t hi = part == 0 ? n : part == 1 ? 2 * n : n * n + 2 * n;
        Value gate = tok.gate(part);
        SmallVector<Value> sums =
            l.forLoop(l.index(lo), l.index(hi), {l.f32(0.0), dr},
                      [&](Value k, ValueRange acc) -> SmallVector<Value> {
                        Value dz = l.load(dbias, l.add(row, k));
                        Value q = tok.q(k);
                        Value dq = f.mul(gate, dz);
                        l.store(f.mul(dq, tok.invR), dproj, l.add(row, k));
                        return {f.add(acc[0], f.mul(dz, q)),
                                f.sub(acc[1], f.mul(f.mul(dq, q), tok.invR))};
                      });
        l.store(sums[0], dalpha, l.add(alphaRow, l.index(part)));
        dr = sums[1];
      }
      // r = sqrt(mean(x^2) + eps): dx = dr x / (n d r).
      Value scale = f.div(dr, f.mul(l.f32(double(n * d)), tok.r));
      Value x = l.mul(t, l.index(n * d));
      l.forLoop(l.index(0), l.index(n * d), [&](Value c) {
        Value at = l.add(x, c);
        l.store(withInit(l, init, at, f.mul(scale, l.load(in.flat, at))), dx,
                at);
      });
    });
  });
  return success();
}

//===----------------------------------------------------------------------===//
// HC's maps
//===----------------------------------------------------------------------===//

/// One stream i of one token (tfc.hc_maps): its r_i and the normalised
/// projections alpha_proj / r_i (n + 1) and beta_proj / r_i.
struct HcStream {
  Lowering &l;
  Arith f;
  Value alphaProj, betaProj, alphaRow, betaAt, r;

  HcStream(Lowering &l, Value x, Value alphaProj, Value betaProj, int64_t n,
           int64_t d, double eps, Value t, Value i)
      : l(l), f{l}, alphaProj(alphaProj), betaProj(betaProj) {
    Value row = l.add(l.mul(t, l.index(n)), i); // [t * n + i]
    alphaRow = l.mul(row, l.index(n + 1));
    betaAt = row;
    r = f.rms(x, l.mul(row, l.index(d)), d, eps);
  }
  Value za(Value k) { return f.div(l.load(alphaProj, l.add(alphaRow, k)), r); }
  Value zb() { return f.div(l.load(betaProj, betaAt), r); }
};

struct HcMapsLowering : TfcOpLowering<HcMapsLowering, HcMapsOp> {
  LogicalResult plan(HcMapsOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput());
    int64_t n = op.getStreams();
    l.allocateResult(op.getResult(), {in.dims[0], in.dims[1],
                                      l.allocIndex(MapsLayout{n}.width())});
    return success();
  }
  LogicalResult emit(HcMapsOp op, Lowering &l) const {
    Buffer in = l.lookup(op.getInput());
    Value alphaProj = l.lookup(op.getAlphaProj()).flat;
    Value betaProj = l.lookup(op.getBetaProj()).flat;
    Value staticAlpha = l.lookup(op.getStaticAlpha()).flat;
    Value staticBeta = l.lookup(op.getStaticBeta()).flat;
    Value out = l.lookup(op.getResult()).flat;
    MapsLayout m{static_cast<int64_t>(op.getStreams())};
    int64_t n = m.n, d = streamsWidth(op.getInput()) / n;
    double eps = op.getEpsilon().convertToDouble();
    Value zero = l.index(0), nIdx = l.index(n);
    l.parallelFor(rowCount(l, in), [&](Value t) {
      Value sa = l.load(l.lookup(op.getAlphaScale()).flat, zero);
      Value sb = l.load(l.lookup(op.getBetaScale()).flat, zero);
      Value row = l.mul(t, l.index(m.width()));
      l.forLoop(zero, nIdx, [&](Value i) {
        HcStream s(l, in.flat, alphaProj, betaProj, n, d, eps, t, i);
        Arith &f = s.f;
        Value staticRow = l.mul(i, l.index(n + 1));
        // A[i, k] = s_alpha tanh(za_k) + static_alpha[i, k].
        auto a = [&](Value k) {
          return f.add(f.mul(sa, f.tanh(s.za(k))),
                       l.load(staticAlpha, l.add(staticRow, k)));
        };
        l.store(a(zero), out, l.add(row, i));
        Value b = f.add(f.mul(sb, f.tanh(s.zb())), l.load(staticBeta, i));
        l.store(b, out, l.add(row, l.add(l.index(m.post()), i)));
        // H_res[j, i] = A[i, 1 + j].
        l.forLoop(zero, nIdx, [&](Value j) {
          l.store(
              a(l.add(j, l.index(1))), out,
              l.add(row, l.add(l.index(m.res()), l.add(l.mul(j, nIdx), i))));
        });
      });
    });
    return success();
  }
};

struct HcMapsGradLowering : TfcOpLowering<HcMapsGradLowering, HcMapsGradOp> {
  LogicalResult plan(HcMapsGradOp op, Lowering &l) const {
    l.allocateLike(op.getInputGrad(), op.getInput());
    l.allocateLike(op.getAlphaProjGrad(), op.getAlphaProj());
    l.allocateLike(op.getBetaProjGrad(), op.getBetaProj());
    Buffer g = l.lookup(op.getGrad());
    for (Value rows : {op.getStaticAlphaGrad(), op.getStaticBetaGrad(),
                       op.getAlphaScaleGrad(), op.getBetaScaleGrad()})
      l.allocateResult(
          rows, {g.dims[0], g.dims[1], l.allocIndex(streamsWidth(rows))});
    return success();
  }
  LogicalResult emit(HcMapsGradOp op, Lowering &l) const;
};

LogicalResult HcMapsGradLowering::emit(HcMapsGradOp op, Lowering &l) const {
  Buffer in = l.lookup(op.getInput());
  Value alphaProj = l.lookup(op.getAlphaProj()).flat;
  Value betaProj = l.lookup(op.getBetaProj()).flat;
  Value g = l.lookup(op.getGrad()).flat;
  Value dx = l.lookup(op.getInputGrad()).flat;
  Value init = l.flatOf(op.getInit());
  Value dAlphaProj = l.lookup(op.getAlphaProjGrad()).flat;
  Value dBetaProj = l.lookup(op.getBetaProjGrad()).flat;
  Value dStaticAlpha = l.lookup(op.getStaticAlphaGrad()).flat;
  Value dStaticBeta = l.lookup(op.getStaticBetaGrad()).flat;
  Value dAlphaScale = l.lookup(op.getAlphaScaleGrad()).flat;
  Value dBetaScale = l.lookup(op.getBetaScaleGrad()).flat;
  MapsLayout m{static_cast<int64_t>(op.getStreams())};
  int64_t n = m.n, d = streamsWidth(op.getInput()) / n;
  double eps = op.getEpsilon().convertToDouble();
  Value zero = l.index(0), one = l.index(1), nIdx = l.index(n);
  Value aWidth = l.index(n + 1);

  l.parallelFor(rowCount(l, in), [&](Value t) {
    Value sa = l.load(l.lookup(op.getAlphaScale()).flat, zero);
    Value sb = l.load(l.lookup(op.getBetaScale()).flat, zero);
    Value row = l.mul(t, l.index(m.width()));
    Arith f{l};
    SmallVector<Value> scales = l.forLoop(
        zero, nIdx, {l.f32(0.0), l.f32(0.0)},
        [&](Value i, ValueRange acc) -> SmallVector<Value> {
          HcStream s(l, in.flat, alphaProj, betaProj, n, d, eps, t, i);
          // dA[i, 0] = d H_pre[i]; dA[i, 1 + j] = d H_res[j, i].
          auto dA = [&](Value k) -> Value {
            Value isPre = arith::CmpIOp::create(
                l.b, l.loc, arith::CmpIPredicate::eq, k, zero);
            Value j = l.sub(l.maxIdx(k, one), one);
            Value resAt =
                l.add(row, l.add(l.index(m.res()), l.add(l.mul(j, nIdx), i)));
            Value at = arith::SelectOp::create(l.b, l.loc, isPre, l.add(row, i),
                                               resAt);
            return l.load(g, at);
          };
          Value staticRow = l.mul(l.add(l.mul(t, nIdx), i), aWidth);
          SmallVector<Value> a = l.forLoop(
              zero, aWidth, {l.f32(0.0), l.f32(0.0)},
              [&](Value k, ValueRange sums) -> SmallVector<Value> {
                Value grad = dA(k);
                l.store(grad, dStaticAlpha, l.add(staticRow, k));
                Value z = s.za(k), th = f.tanh(z);
                Value dz =
                    f.mul(f.mul(grad, sa), f.sub(l.f32(1.0), f.mul(th, th)));
                l.store(f.div(dz, s.r), dAlphaProj, l.add(s.alphaRow, k));
                return {f.add(sums[0], f.mul(grad, th)),
                        f.add(sums[1], f.mul(dz, z))};
              });
          Value dB = l.load(g, l.add(row, l.add(l.index(m.post()), i)));
          l.store(dB, dStaticBeta, l.add(l.mul(t, nIdx), i));
          Value zb = s.zb(), tb = f.tanh(zb);
          Value dzb = f.mul(f.mul(dB, sb), f.sub(l.f32(1.0), f.mul(tb, tb)));
          l.store(f.div(dzb, s.r), dBetaProj, s.betaAt);
          // r_i = sqrt(mean(x_i^2) + eps): dx_i = dr_i x_i / (d r_i), with
          // dr_i = -(sum_k dza_k za_k + dzb zb) / r_i.
          Value dr = f.neg(f.div(f.add(a[1], f.mul(dzb, zb)), s.r));
          Value scale = f.div(dr, f.mul(l.f32(double(d)), s.r));
          Value x = l.mul(l.add(l.mul(t, nIdx), i), l.index(d));
          l.forLoop(zero, l.index(d), [&](Value c) {
            Value at = l.add(x, c);
            l.store(withInit(l, init, at, f.mul(scale, l.load(in.flat, at))),
                    dx, at);
          });
          return {f.add(acc[0], a[0]), f.add(acc[1], f.mul(dB, tb))};
        });
    l.store(scales[0], dAlphaScale, t);
    l.store(scales[1], dBetaScale, t);
  });
  return success();
}

} // namespace

void mlir::tfc::populateHyperConnectionLowerings(OpLoweringSet &set) {
  set.add<HcExpandLowering, HcMergeLowering, SplitStreamsLowering,
          JoinStreamsLowering, HcAggregateLowering, HcDistributeLowering,
          HcAggregateGradLowering, HcDistributeGradLowering, MhcMapsLowering,
          MhcMapsGradLowering, HcMapsLowering, HcMapsGradLowering>();
}
