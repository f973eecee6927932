//===- MemoryReport.h - The workspace split by tensor, at one size -*- C++ -*-//
//
// `tfc --emit=memory-report` (tfc-lower-to-loops' memory-report option):
// NAME_workspace_size's plan, with a ledger of its reservations
// (kernels/WorkspaceLedger.h), evaluated at one batch and seq into the
// module attribute `tfc.memory_report`, which the driver prints as text.
//
// The attribute (one per module, of its model):
//   {model, sizes = [batch, seq(, enc_seq)], param_count, workspace (bytes,
//    = NAME_workspace_size(sizes)), phases = [{name, bytes}],
//    entries = [{phase, kind, name, shape, dtype, bytes, layers}]}
// kind is "saved", "result", "scratch" or "other"; bytes are aligned and
// cover all `layers` copies of a slot saved per layer.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_CONVERSION_MEMORYREPORT_H
#define TFC_CONVERSION_MEMORYREPORT_H

#include "kernels/WorkspaceLedger.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/Support/LLVM.h"

#include <string>

namespace mlir::tfc {

inline constexpr StringLiteral kMemoryReportAttrName = "tfc.memory_report";

/// What the plan of one model function recorded, to evaluate.
struct MemoryPlan {
  StringRef model;
  int64_t paramCount = 0;
  const WorkspaceLedger *ledger = nullptr;
  /// The size function's batch, seq (, enc_seq) arguments and their values.
  ArrayRef<Value> sizeArgs;
  ArrayRef<int64_t> sizes;
  /// Where the plan ends: the workspace's size (index or i64).
  Value total;
};

/// The report attribute, or an error on `at` where a size does not fold to
/// a constant or the reservations do not add up to the total.
FailureOr<DictionaryAttr> evaluateMemoryPlan(Operation *at,
                                             const MemoryPlan &plan);

/// The report as text: the parameters, then the workspace by phase and
/// kind, the saved values per layer by tensor first.
std::string formatMemoryReport(DictionaryAttr report);

} // namespace mlir::tfc

#endif // TFC_CONVERSION_MEMORYREPORT_H
