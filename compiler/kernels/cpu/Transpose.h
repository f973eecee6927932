//===- Transpose.h - A square block of vectors transposed -------*- C++ -*-===//
//
// The CPU's packs that turn rows into columns (flash attention's K, Q and
// dO panels; a matmul's transposed B) load vl rows of vl lanes, transpose
// them in registers and store vl columns: element by element, one row's
// loads or stores went to vl different cache lines.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_CPU_TRANSPOSE_H
#define TFC_KERNELS_CPU_TRANSPOSE_H

#include "mlir/IR/Builders.h"

namespace mlir::tfc::cpu {

/// The transpose of `rows.size()` (a power of two) vectors of as many lanes:
/// result c holds lane c of every input, in input order (n log2 n
/// two-source shuffles).
SmallVector<Value> transposeSquare(OpBuilder &b, Location loc,
                                   ArrayRef<Value> rows);

} // namespace mlir::tfc::cpu

#endif // TFC_KERNELS_CPU_TRANSPOSE_H
