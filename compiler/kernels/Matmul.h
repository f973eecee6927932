//===- Matmul.h - The matmul problems kernels solve ------------*- C++ -*-===//
//
// A matmul as the kernels take it (TargetKernels::planFusedMatmul and
// emitFusedMatmul; kernels/cpu/Matmul.cpp, kernels/cuda/Matmul.cpp). A
// plain MatmulProblem is the one-part, one-segment FusedMatmulProblem.
//
// C's columns come in parts, each with its own B, C and bias (Q, K and V:
// three weights, three results); each part is padded to whole NR-column
// panels so no register tile straddles two parts. The contraction comes in
// segments, each with its own A and its own B rows (dx = sum_i dy_i W_i^T:
// A_i = dy_i, B_i = W_i^T), accumulated in registers in segment order.
//
// The output loop (epilogue) adds the bias and then stores the tile
// (Store), stores act(tile) and optionally the tile itself (Activation),
// stores tile * act'(X) for an X laid out as C (ActivationGrad: the
// gradient of an activation's input from the next linear's), or,
// for two parts of equal width packed side by side in every panel (vector
// 0 of a panel row from part 0, vector 1 from part 1: GatedPair), stores
// act(part 0) * part 1 and optionally both parts.
//
// The packing of B may sum B's columns over k (a bias gradient; one
// segment) and may first multiply B by act'(X) for an X laid out as B,
// writing the product out (d_pre = dy * act'(pre)).
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_MATMUL_H
#define TFC_KERNELS_MATMUL_H

#include "kernels/KernelBuilder.h"
#include "tfc/Dialect/TfcDialect.h"

namespace mlir::tfc {

/// A row-major matrix operand of a batched matmul, as strides into a flat
/// buffer: element (batch, row, col) is at
/// `base + batch * batchStride + row * rowStride + col * colStride`.
///
/// Rows and columns may come in groups (null rowGroup / colGroup: they do
/// not): a head-split [b, h, s, dh] tensor seen as its rows [b * s, h * dh]
/// has rows in groups of s (a sequence), rowGroupStride = h * s * dh apart,
/// and columns in groups of dh (a head), colGroupStride = s * dh apart; row
/// r is row r % rowGroup of group r / rowGroup, and likewise a column.
struct MatrixRef {
  Value flat;
  Value base;
  Value batchStride;
  Value rowStride;
  Value colStride;
  Value rowGroup, rowGroupStride;
  Value colGroup, colGroupStride;
};

/// The index of element (bt, row, col) of `ref` in its flat buffer.
Value elementIndex(KernelBuilder &l, const MatrixRef &ref, Value bt, Value row,
                   Value col);
/// The same with row's part of it given (rowOffset or rowOffsets).
Value elementIndexAt(KernelBuilder &l, const MatrixRef &ref, Value bt,
                     Value rowOffset, Value col);
/// What row `row` adds to an element's index.
Value rowOffset(KernelBuilder &l, const MatrixRef &ref, Value row);
/// rowOffset of rows first, first + 1, ..., `count` of them, rows past
/// `last` taken as `last`, for a `ref` with row groups: one division for
/// the first row,
/// then a row stride apart when all lie in its group, else a step per row
/// (a division per row cost a register tile's output loop more than the
/// rows' stores; the steps, when every tile's rows lie in one group, 4-6%
/// of the copy task's QKV product).
SmallVector<Value> rowOffsets(KernelBuilder &l, const MatrixRef &ref,
                              Value first, int64_t count, Value last);
/// Whether `width` consecutive elements of a row from a column that is a
/// multiple of `width` are consecutive in memory (one vector load or store).
bool vectorsAreContiguous(KernelBuilder &l, const MatrixRef &ref,
                          int64_t width);

/// C[bt, m, n] = sum_k A[bt, m, k] * B[bt, k, n] (+ bias[n]) for bt < batch.
/// C is contiguous along n (colStride 1). `n` and `k` may be dynamic.
struct MatmulProblem {
  Value batch, m, n, k;
  MatrixRef a, bMat, c;
  Value bias; // Optional flat buffer of n floats.
  /// Round A and B to bf16 (nearest even), accumulate in f32.
  bool bf16Operands = false;
};

/// One block of columns of B and C.
struct MatmulPart {
  Value n;                  // Columns.
  SmallVector<MatrixRef> b; // B's rows for each contraction segment.
  MatrixRef c;              // Where the epilogue stores; flat null: nowhere.
  Value bias;               // Optional flat buffer of n floats.
  /// Activation epilogue: the tile before the activation (flat null: not
  /// stored).
  MatrixRef pre;
  /// Optional flat buffer of n floats: B's columns summed over k, in order.
  Value columnSums;
  /// With FusedMatmulProblem::packActivationGrad: X and where B * act'(X)
  /// goes, both laid out as B (row stride n, column stride 1). With the
  /// ActivationGrad epilogue: X, laid out as C.
  MatrixRef actInput, actOutput;
};

/// A block of the contraction: k columns of A, and the matching k rows of
/// every part's B (MatmulPart::b[segment]).
struct MatmulSegment {
  Value k;
  MatrixRef a;
};

enum class MatmulEpilogue { Store, Activation, ActivationGrad, GatedPair };

struct FusedMatmulProblem {
  Value batch, m;
  SmallVector<MatmulSegment> segments;
  SmallVector<MatmulPart, 2> parts;
  MatmulEpilogue epilogue = MatmulEpilogue::Store;
  ActivationKind activation = ActivationKind::relu;
  bool packActivationGrad = false;
  MatrixRef gated; // GatedPair: act(part 0) * part 1.
  /// Round A and B to bf16 (nearest even) and accumulate in f32: the
  /// column sums and B * act'(X) still see B unrounded.
  bool bf16Operands = false;
};

/// A plain matmul as the one-part, one-segment fused problem.
FusedMatmulProblem fusedMatmulOf(const MatmulProblem &problem);

/// The target's matmul on a plain problem: its scratch (Plan), then the
/// kernel (Emit).
void planMatmul(KernelBuilder &l, const MatmulProblem &problem);
void emitMatmul(KernelBuilder &l, const MatmulProblem &problem);

} // namespace mlir::tfc

#endif // TFC_KERNELS_MATMUL_H
