//===- FusedMatmul.h - Matmuls with several parts and epilogues -*- C++ -*-===//
//
// The general form of the packed matmul (MatmulLowering.cpp) that fused
// linear layers use; emitMatmul is its one-part case.
//
// C's columns come in parts, each with its own B, C and bias (Q, K and V:
// three weights, three results); each part is padded to whole NR-column
// panels so no register tile straddles two parts. The contraction comes in
// segments, each with its own A and its own B rows (dx = sum_i dy_i W_i^T:
// A_i = dy_i, B_i = W_i^T), accumulated in registers in segment order.
//
// The output loop (epilogue) adds the bias and then stores the tile
// (Store), stores act(tile) and optionally the tile itself (Activation), or,
// for two parts of equal width packed side by side in every panel (vector
// 0 of a panel row from part 0, vector 1 from part 1: GatedPair), stores
// act(part 0) * part 1 and optionally both parts.
//
// The packing of B may sum B's columns over k (a bias gradient; one
// segment) and may first multiply B by act'(X) for an X laid out as B,
// writing the product out (d_pre = dy * act'(pre)).
//
//===----------------------------------------------------------------------===//

#ifndef TFC_CONVERSION_FUSEDMATMUL_H
#define TFC_CONVERSION_FUSEDMATMUL_H

#include "conversion/Lowering.h"
#include "tfc/Dialect/TfcDialect.h"

namespace mlir::tfc {

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
  /// goes, both laid out as B (row stride n, column stride 1).
  MatrixRef actInput, actOutput;
};

/// A block of the contraction: k columns of A, and the matching k rows of
/// every part's B (MatmulPart::b[segment]).
struct MatmulSegment {
  Value k;
  MatrixRef a;
};

enum class MatmulEpilogue { Store, Activation, GatedPair };

struct FusedMatmulProblem {
  Value batch, m;
  SmallVector<MatmulSegment> segments;
  SmallVector<MatmulPart> parts;
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

/// Reserves the matmul's scratch (Lowering::Phase::Plan): the packed panels
/// of B on the CPU, planGpuMatmul's on the CUDA target. The problem's
/// shapes and flags must be those emitFusedMatmul gets; its flat buffers
/// may be null.
void planFusedMatmul(Lowering &l, const FusedMatmulProblem &problem);
/// Emits the packing of B and the register-blocked micro-kernel with its
/// epilogue, into the scratch planFusedMatmul reserved. On the CUDA target
/// (Lowering::gpu) emits emitGpuMatmul instead.
void emitFusedMatmul(Lowering &l, const FusedMatmulProblem &problem);

/// The CUDA target's matmul: a shared-memory tiled kernel (GpuMatmul.cpp).
/// Its only scratch is the partial column sums of each part with
/// columnSums.
void planGpuMatmul(Lowering &l, const FusedMatmulProblem &problem);
void emitGpuMatmul(Lowering &l, const FusedMatmulProblem &problem);

} // namespace mlir::tfc

#endif // TFC_CONVERSION_FUSEDMATMUL_H
