//===- OpLowering.h - One lowering pattern per tfc op -----------*- C++ -*-===//
//
// Each tfc op has one OpLowering, registered by the populate*Lowerings
// function of its family and looked up by op name. tfc-lower-to-loops runs
// every entry point in two phases over the same ops (Lowering.h):
//
//   plan(op, l)  reserves the op's results and scratch in the workspace, in
//                program order, and checks what the lowering needs (a
//                static width); it emits no compute.
//   emit(op, l)  writes the op's loops into those buffers (Lowering::lookup
//                for operands and results, takeScratch for scratch, in the
//                order plan reserved it) and reserves nothing.
//
// A new op is one class deriving TfcOpLowering<Derived, OpT> with those two
// methods, added in its family's populate function.
//
// Why not the dialect-conversion driver: a tensor's buffer is fixed by the
// workspace plan before any op is rewritten (a saved slot per layer, the
// caller's output array, a view of the parameters), and backward is planned
// after forward's allocations without emitting forward's code, so there is
// no type conversion for the driver to do, no legality to iterate on (each
// op has exactly one lowering, and its failure is a compiler error), and the
// plan has to run in a function (NAME_workspace_size) where nothing is
// rewritten at all.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_CONVERSION_OPLOWERING_H
#define TFC_CONVERSION_OPLOWERING_H

#include "conversion/Lowering.h"
#include "kernels/AttentionMask.h"
#include "tfc/Dialect/TfcDialect.h"

#include "llvm/ADT/StringMap.h"

#include <memory>

namespace mlir::tfc {

/// The lowering of one kind of op (see the file comment).
class OpLowering {
public:
  virtual ~OpLowering() = default;
  virtual LogicalResult plan(Operation *op, Lowering &l) const = 0;
  virtual LogicalResult emit(Operation *op, Lowering &l) const = 0;
};

/// The typed base: `Derived` defines `plan(OpT, Lowering &)` and
/// `emit(OpT, Lowering &)`.
template <typename Derived, typename OpT>
class TfcOpLowering : public OpLowering {
public:
  using Op = OpT;
  LogicalResult plan(Operation *op, Lowering &l) const final {
    return static_cast<const Derived *>(this)->plan(cast<OpT>(op), l);
  }
  LogicalResult emit(Operation *op, Lowering &l) const final {
    return static_cast<const Derived *>(this)->emit(cast<OpT>(op), l);
  }
};

/// The ops whose every result has the shape of operand `Like` (elementwise
/// ops, norms, softmax): the shared plan().
template <typename Derived, typename OpT, unsigned Like = 0>
class ShapePreservingLowering : public TfcOpLowering<Derived, OpT> {
public:
  LogicalResult plan(OpT op, Lowering &l) const {
    for (Value result : op->getResults())
      l.allocateLike(result, op->getOperand(Like));
    return success();
  }
};

/// The lowerings of one target, by op name.
class OpLoweringSet {
public:
  template <typename... Lowerings> void add() {
    (insert(Lowerings::Op::getOperationName(), std::make_unique<Lowerings>()),
     ...);
  }
  /// Null for an op without a lowering.
  const OpLowering *lookup(Operation *op) const;

private:
  void insert(StringRef opName, std::unique_ptr<OpLowering> lowering);
  llvm::StringMap<std::unique_ptr<OpLowering>> lowerings;
};

// One populate function per family (the files named after them).
void populateParamLowerings(OpLoweringSet &set);
void populatePointwiseLowerings(OpLoweringSet &set);
void populateNormLowerings(OpLoweringSet &set);
void populateAttentionLowerings(OpLoweringSet &set);
void populateEmbeddingLowerings(OpLoweringSet &set);
void populateGradLowerings(OpLoweringSet &set);
void populateFusedLinearLowerings(OpLoweringSet &set);
void populateResidualNormLowerings(OpLoweringSet &set);
void populateLossHeadLowerings(OpLoweringSet &set);
void populateFlashAttentionLowerings(OpLoweringSet &set);
void populateRopeLowerings(OpLoweringSet &set);
void populatePaddingLowerings(OpLoweringSet &set);
void populateProbeLowerings(OpLoweringSet &set);
void populateDecodingLowerings(OpLoweringSet &set);
void populateMoeLowerings(OpLoweringSet &set);
void populateHyperConnectionLowerings(OpLoweringSet &set);

/// Every tfc op's lowering. The lowerings are the same for every target;
/// the kernels they ask for are the target's (Lowering::kernels()).
void populateTfcLowerings(OpLoweringSet &set);

/// Reserves `result` ([b, heads, seq, dh], static heads and dh) for the
/// per-head split of `rows` ([b, seq, heads * dh]): tfc.split_heads and
/// tfc.split_heads_rope.
void allocateSplitHeads(Lowering &l, Value result, Value rows);
/// Reserves `result` ([b, seq, heads * dh]) for the merge of `heads`
/// ([b, heads, seq, dh]): tfc.merge_heads and tfc.rope_merge_heads.
void allocateMergedHeads(Lowering &l, Value result, Value heads);

/// The keys an op's mask kind, sliding window and a padded batch's lengths
/// (null: none) hide, as kernels take it.
inline AttentionMask attentionMaskOf(Lowering &l, MaskKind kind,
                                     uint64_t window, Value lengths) {
  return AttentionMask{kind == MaskKind::causal, static_cast<int64_t>(window),
                       lengths ? l.lookup(lengths).flat : Value()};
}

} // namespace mlir::tfc

#endif // TFC_CONVERSION_OPLOWERING_H
