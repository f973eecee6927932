//===- Transpose.cpp - A square block of vectors transposed ---------------===//

#include "kernels/cpu/Transpose.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

SmallVector<Value> mlir::tfc::cpu::transposeSquare(OpBuilder &b, Location loc,
                                                   ArrayRef<Value> rows) {
  int64_t n = rows.size();
  assert(n > 0 && (n & (n - 1)) == 0 && "a power of two of rows");
  assert(cast<VectorType>(rows.front().getType()).getNumElements() == n &&
         "as many lanes as rows");
  // log2(n) stages; the stage of stride s swaps the off-diagonal s x s
  // blocks of every 2s x 2s block: rows i and i + s (i & s == 0) exchange
  // the lanes whose bit s differs. Each new row is one two-source shuffle.
  SmallVector<Value> cur(rows);
  for (int64_t s = n / 2; s >= 1; s /= 2) {
    SmallVector<int64_t> low, high;
    for (int64_t lane = 0; lane < n; ++lane) {
      bool first = (lane & s) == 0;
      low.push_back(first ? lane : n + lane - s);
      high.push_back(first ? lane + s : n + lane);
    }
    SmallVector<Value> next(cur);
    for (int64_t i = 0; i < n; ++i) {
      if (i & s)
        continue;
      next[i] = vector::ShuffleOp::create(b, loc, cur[i], cur[i + s], low);
      next[i + s] = vector::ShuffleOp::create(b, loc, cur[i], cur[i + s], high);
    }
    cur = std::move(next);
  }
  return cur;
}
