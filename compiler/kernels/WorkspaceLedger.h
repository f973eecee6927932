//===- WorkspaceLedger.h - What each reservation of the workspace holds -===//
//
// The workspace plan is index arithmetic on (batch, seq): every reservation
// advances a running offset, and NAME_workspace_size is where it ends. For
// `tfc --emit=memory-report` a plan can also keep a ledger: each reservation
// with what it holds (a tensor, a slot saved for backward, an op's scratch)
// and its size as an index value at the allocation point. Evaluating those
// values at one batch and seq splits the workspace by tensor, and their sum
// is the offset's end by construction (KernelBuilder::reserve records every
// advance).
//
//===----------------------------------------------------------------------===//

#ifndef TFC_KERNELS_WORKSPACELEDGER_H
#define TFC_KERNELS_WORKSPACELEDGER_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"

#include <string>
#include <vector>

namespace mlir::tfc {

/// One advance of the workspace's running offset.
struct Reservation {
  enum class Kind {
    Result,  // A tensor's buffer (forward's activations, backward's
             // gradients), reused by every layer of the depth loop.
    Saved,   // A value forward keeps for backward (per layer in the loop).
    Scratch, // An op's (or its kernels') working memory.
    Other,   // Argument-check words, the depth loop's carries.
  };
  Kind kind = Kind::Other;
  /// Result and Saved: the tensor (a model or backward value); Saved slots
  /// of a function argument or the loop's carry name that value.
  Value tensor;
  /// Scratch: the op it belongs to (null outside ops).
  Operation *op = nullptr;
  /// Other (and Scratch outside ops): what it is.
  std::string label;
  /// The tensor's shape and element type (empty for raw scratch bytes).
  SmallVector<Value> dims;
  Type elementType;
  /// Aligned bytes of the reservation (all layers of a saved slot).
  Value bytes;
  /// A saved slot of the depth loop: its layers (the loop's trip count).
  Value layers;
  /// Which plan made it (ledger.phases).
  unsigned phase = 0;
};

class WorkspaceLedger {
public:
  /// Later reservations belong to plan `name` ("forward", "backward", ...).
  void beginPhase(StringRef name) {
    phases.push_back(name.str());
    current = phases.size() - 1;
  }
  void record(Reservation reservation) {
    reservation.phase = current;
    entries.push_back(std::move(reservation));
  }

  std::vector<std::string> phases{"plan"};
  std::vector<Reservation> entries;

private:
  unsigned current = 0;
};

} // namespace mlir::tfc

#endif // TFC_KERNELS_WORKSPACELEDGER_H
