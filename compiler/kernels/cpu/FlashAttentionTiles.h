//===- FlashAttentionTiles.h - Register tiles of fused attention -*- C++ -*-=//
//
// The building blocks the fused attention kernels (forward and backward)
// share. Per head, with rows of length dh contiguous (dh apart, or for the
// tensors a projection reads or writes merged, heads * dh: HeadRows):
//
// - A *score tile* is `rows` rows of one operand (queries, or keys in the
//   backward's transposed sweep) against `cols` = 2 vectors of the other,
//   computed as `rows x 2` vector accumulators: per d, two vector loads of
//   a panel packed transposed [d][cols] and one broadcast per row, then
//   `rows * 2` FMAs (the matmul micro-kernel's shape; no horizontal dot
//   products). The rows are read where they are, `dh` apart, so one
//   address and constant offsets reach them; only a tile that runs past
//   the last row reads a copy in scratch.
// - A *row accumulator* is `rows` rows of width dh in scratch, updated as
//   acc[r] = acc[r] * rowScale[r] + sum_j coef[r][j] * src[j] with the
//   coefficients (probabilities, or score gradients) stored by the score
//   tile, broadcast from memory, and src rows read where they are.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_CPU_FLASHATTENTIONTILES_H
#define TFC_KERNELS_CPU_FLASHATTENTIONTILES_H

#include "kernels/FlashAttention.h"
#include "kernels/KernelBuilder.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace mlir::tfc::flash {

/// The tiling of one attention problem for a vector width and head width.
struct TileShape {
  TileShape(int64_t vectorWidth, int64_t headDim);

  int64_t vl;        // f32 lanes of a vector.
  int64_t rows;      // Rows of a score tile (register-blocked).
  int64_t cols;      // Columns of a score tile: 2 vectors.
  int64_t blockRows; // Rows of one parallel iteration: several tiles.
  int64_t headDim;   // dh.
  int64_t headVecs;  // ceil(dh / vl): vectors per row.
  /// Vectors of dh a row accumulator updates per pass over the source
  /// rows (rows * this accumulators stay in registers).
  int64_t chunkVecs;

  int64_t paddedHeadDim() const { return headVecs * vl; }
};

/// Emits vector code for one TileShape.
class TileEmitter {
public:
  TileEmitter(KernelBuilder &l, const TileShape &t);

  KernelBuilder &l;
  const TileShape &t;
  VectorType vecType, maskType, laneIdxType;

  /// dst[(g * panels + p) * dh * cols + d * cols + j] = src[row p * cols +
  /// j of group g (srcRows), column d] for every group g < groups (batch *
  /// heads), zero for p * cols + j >= len. One parallel iteration per (g, p).
  void packTransposed(Value src, const HeadRows &srcRows, Value dst,
                      Value groups, Value len, Value panels);

  /// Where the `rows` rows from row `first` of a [len, dh] matrix at
  /// `groupBase` in `src` are: (flat, base) with row r at base + r * dh.
  /// When some are past `len`, a copy at `scratchBase` in `scratch` (dh
  /// apart) whose rows past `len` are 0.
  std::pair<Value, Value> tileRows(Value src, Value groupBase, Value first,
                                   Value len, Value scratch, Value scratchBase);

  /// A score tile: acc[r * 2 + v] = sum_{d < dh} a[aBase + r * dh + d] *
  /// panel[panelBase + d * cols + v * vl + lane], with (a, aBase) from
  /// tileRows.
  SmallVector<Value> scoreTile(Value a, Value aBase, Value panel,
                               Value panelBase);

  /// acc[accBase + r * paddedDh + c] = (rowScale ? acc * rowScale[r] : acc)
  ///   + sum_{j < count} coef[coefBase + r * cols + j] * src[srcBase + j *
  ///   srcStride + c] for c < dh (the padding of acc stays 0).
  void accumulateRows(Value acc, Value accBase, ArrayRef<Value> rowScale,
                      Value coef, Value coefBase, Value src, Value srcBase,
                      int64_t srcStride, Value count);

  /// acc[accBase + c * dh + d] += sum_{r < rows} coef[coefBase + r * cols +
  /// c] * src[srcBase + r * dh + d] for c < count, d < dh: the transposed
  /// update (a tile's columns are the rows it updates), with the `rows`
  /// source rows held in registers.
  void accumulateColumns(Value acc, Value accBase, Value count, Value coef,
                         Value coefBase, Value src, Value srcBase);

  /// Zeroes `rows` accumulator rows at accBase.
  void zeroRows(Value acc, Value accBase);

  /// dst[dstRowBase[r] + c] = acc[accBase + r * paddedDh + c] * factor[r]
  /// for c < dh and rows r with exists[r] (i1).
  void storeRows(Value acc, Value accBase, ArrayRef<Value> factor,
                 ArrayRef<Value> exists, Value dst, ArrayRef<Value> dstRowBase);

  //===--- Vector helpers ---===//

  Value splat(Value scalar);
  Value splatF32(double v);
  /// [first, first + vl) as i32 lanes.
  Value laneIndices(Value first);
  /// The transpose of `vl` vectors of `vl` lanes: result c holds lane c of
  /// every input, in input order (vl log2 vl two-source shuffles).
  SmallVector<Value> transposeSquare(ArrayRef<Value> rows);
  /// The i32 splat of an index value.
  Value splatIndex(Value index);
  Value load(Value flat, Value index);
  void store(Value value, Value flat, Value index);
  /// Loads vector `vec` of a row of dh elements at `base` (masked when it is
  /// the partial last one).
  Value loadHeadVector(Value flat, Value base, int64_t vec);
  /// Same, storing.
  void storeHeadVector(Value value, Value flat, Value base, int64_t vec);
  /// [scalars..., pad...]: one lane per tile row.
  Value fromRows(ArrayRef<Value> scalars, double pad);
  /// Lane `lane` of `v`, as a scalar.
  Value lane(Value v, int64_t lane);
  Value reduceMax(Value v);
  Value reduceAdd(Value v);
  Value exp(Value v);
  Value max(Value a, Value b);
  Value add(Value a, Value b);
  Value sub(Value a, Value b);
  Value mul(Value a, Value b);
  Value fma(Value a, Value b, Value c);
  Value select(Value cond, Value a, Value b);
  Value cmpI(arith::CmpIPredicate pred, Value a, Value b);
  /// s + negSlope * |lanes - at| (ALiBi's bias, kernels/Alibi.h): `lanes`
  /// i32 indices, `negSlope` and `at` f32 splats.
  Value addDistanceBias(Value s, Value negSlope, Value lanes, Value at);
  /// Runs `body` under `cond` (no results).
  void ifThen(Value cond, function_ref<void()> body);
};

} // namespace mlir::tfc::flash

#endif // TFC_KERNELS_CPU_FLASHATTENTIONTILES_H
