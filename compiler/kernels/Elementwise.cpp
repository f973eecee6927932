//===- Elementwise.cpp - Loops over every element or row ------------------===//

#include "kernels/Elementwise.h"

using namespace mlir;
using namespace mlir::tfc;

Value mlir::tfc::rowCount(KernelBuilder &l, const Buffer &buffer) {
  return l.product(ArrayRef<Value>(buffer.dims).drop_back());
}

Value mlir::tfc::rowCount(KernelBuilder &l, const Buffer &buffer,
                          int64_t groups) {
  Value rows = rowCount(l, buffer);
  return groups == 1 ? rows : l.mul(rows, l.index(groups));
}

void mlir::tfc::emitElementwise(KernelBuilder &l, ArrayRef<Value> inputs,
                                const Buffer &out,
                                function_ref<Value(ValueRange)> fn) {
  Value width = out.dims.back();
  l.parallelFor(rowCount(l, out), [&](Value row) {
    Value base = l.mul(row, width);
    l.forLoop(l.index(0), width, [&](Value i) {
      Value idx = l.add(base, i);
      SmallVector<Value> args;
      for (Value in : inputs)
        args.push_back(l.load(in, idx));
      l.store(fn(args), out.flat, idx);
    });
  });
}

void mlir::tfc::forEachElement(KernelBuilder &l, Value numel,
                               function_ref<void(Value)> body) {
  // Chunks of 4096 elements: enough work per iteration, enough iterations
  // to split across threads.
  constexpr int64_t chunk = 4096;
  l.parallelFor(l.divUp(numel, chunk), [&](Value c) {
    Value begin = l.mul(c, l.index(chunk));
    Value end = l.minIdx(l.add(begin, l.index(chunk)), numel);
    l.forLoop(begin, end, body);
  });
}

void mlir::tfc::emitCopy(KernelBuilder &l, Value src, Value dst, Value numel) {
  forEachElement(l, numel, [&](Value i) { l.store(l.load(src, i), dst, i); });
}

void mlir::tfc::emitMaskCopy(KernelBuilder &l, const Buffer &in,
                             const Buffer &out, const AttentionMask &mask,
                             double fill) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value queries = in.dims[in.dims.size() - 2];
  Value keys = in.dims.back();
  Value fillValue = l.f32(fill);
  Value rows = rowCount(l, in);
  // A padded batch's rows of one batch entry: rows / batch.
  Value rowsPerBatch =
      mask.lengths ? arith::DivUIOp::create(b, loc, rows, in.dims[0]) : Value();
  l.parallelFor(rows, [&](Value row) {
    Value i = arith::RemUIOp::create(b, loc, row, queries);
    Value base = l.mul(row, keys);
    Value keyLen =
        mask.lengths
            ? mask.keyLength(
                  l, arith::DivUIOp::create(b, loc, row, rowsPerBatch), keys)
            : Value();
    l.forLoop(l.index(0), keys, [&](Value j) {
      Value x = l.load(in.flat, l.add(base, j));
      Value hidden;
      auto hide = [&](Value cond) {
        hidden = hidden ? arith::OrIOp::create(b, loc, hidden, cond) : cond;
      };
      if (std::optional<int64_t> above = mask.above())
        hide(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, j,
                                   l.add(i, l.index(*above))));
      if (std::optional<int64_t> below = mask.below())
        hide(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                   l.add(j, l.index(*below)), i));
      if (keyLen)
        hide(arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, j,
                                   keyLen));
      if (hidden)
        x = arith::SelectOp::create(b, loc, hidden, fillValue, x);
      l.store(x, out.flat, l.add(base, j));
    });
  });
}

void mlir::tfc::emitPaddedFill(KernelBuilder &l, const Buffer &in,
                               const Buffer &out, Value lengths, Value fill) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value seq = in.dims[1];
  Value width = l.product(ArrayRef<Value>(in.dims).drop_front(2));
  l.parallelFor(l.mul(in.dims[0], seq), [&](Value row) {
    Value padded = isPaddedRow(l, row, seq, lengths);
    Value base = l.mul(row, width);
    l.forLoop(l.index(0), width, [&](Value k) {
      Value idx = l.add(base, k);
      l.store(
          arith::SelectOp::create(b, loc, padded, fill, l.load(in.flat, idx)),
          out.flat, idx);
    });
  });
}

Value mlir::tfc::isPaddedRow(KernelBuilder &l, Value row, Value seq,
                             Value lengths) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  Value batch = arith::DivUIOp::create(b, loc, row, seq);
  Value position = arith::RemUIOp::create(b, loc, row, seq);
  Value length = arith::IndexCastOp::create(b, loc, b.getIndexType(),
                                            l.load(lengths, batch));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, position,
                               length);
}

void mlir::tfc::emitOrderedMean(KernelBuilder &l, Value pairs, Value rows,
                                Value out, Value index, Value first) {
  OpBuilder &b = l.b;
  Location loc = l.loc;
  l.parallelFor(l.index(1), [&](Value) {
    auto f64 = b.getF64Type();
    Value zero64 = arith::ConstantOp::create(b, loc, b.getF64FloatAttr(0.0));
    SmallVector<Value> totals = l.forLoop(
        l.index(0), rows, ValueRange{zero64, zero64},
        [&](Value row, ValueRange acc) -> SmallVector<Value> {
          Value at = l.mul(first ? l.add(first, row) : row, l.index(2));
          Value value = arith::ExtFOp::create(b, loc, f64, l.load(pairs, at));
          Value count = arith::ExtFOp::create(
              b, loc, f64, l.load(pairs, l.add(at, l.index(1))));
          return {arith::AddFOp::create(b, loc, acc[0], value),
                  arith::AddFOp::create(b, loc, acc[1], count)};
        });
    Value one64 = arith::ConstantOp::create(b, loc, b.getF64FloatAttr(1.0));
    Value mean = arith::DivFOp::create(
        b, loc, totals[0], arith::MaximumFOp::create(b, loc, totals[1], one64));
    l.store(arith::TruncFOp::create(b, loc, b.getF32Type(), mean), out, index);
  });
}
