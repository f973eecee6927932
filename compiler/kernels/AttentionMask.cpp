//===- AttentionMask.cpp - Which keys a query sees ------------------------===//

#include "kernels/AttentionMask.h"

using namespace mlir;
using namespace mlir::tfc;

Value AttentionMask::keyLength(KernelBuilder &l, Value batch,
                               Value keys) const {
  if (!lengths)
    return keys;
  Value length = arith::IndexCastOp::create(l.b, l.loc, l.b.getIndexType(),
                                            l.load(lengths, batch));
  return l.minIdx(keys, length);
}

TileBand mlir::tfc::emitTileBand(KernelBuilder &l, Value first, Value last,
                                 Value len, int64_t cols,
                                 std::optional<int64_t> before,
                                 std::optional<int64_t> after) {
  auto tileOf = [&](Value column) -> Value {
    return arith::DivUIOp::create(l.b, l.loc, column, l.index(cols));
  };
  Value tiles = l.divUp(len, cols);
  TileBand band{l.index(0), l.index(0), tileOf(len), tiles};
  if (after) {
    // Wholly within the first row's reach; up to the last row's.
    band.fullEnd =
        l.minIdx(band.fullEnd, tileOf(l.add(first, l.index(*after + 1))));
    band.end = l.minIdx(
        tiles, l.add(tileOf(l.add(last, l.index(*after))), l.index(1)));
  }
  if (before) {
    // From the first row's first column; wholly within the last row's.
    band.start = tileOf(l.subOrZero(first, l.index(*before)));
    band.fullStart = l.divUp(l.subOrZero(last, l.index(*before)), cols);
  }
  band.start = l.minIdx(band.start, band.end);
  band.fullStart = l.minIdx(band.fullStart, band.end);
  band.fullEnd = l.maxIdx(band.fullEnd, band.fullStart);
  return band;
}
