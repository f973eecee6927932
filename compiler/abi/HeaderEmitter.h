//===- HeaderEmitter.h - The C header and layout JSON -----------*- C++ -*-===//

#ifndef TFC_ABI_HEADEREMITTER_H
#define TFC_ABI_HEADEREMITTER_H

#include "abi/EntrySignature.h"
#include "abi/ParamLayout.h"
#include "spec/Spec.h"

#include <array>
#include <cstdint>
#include <string>

namespace tfc {

/// 64-bit FNV-1a of the resolved spec (printSpec, so whitespace, comments and
/// defaults spelled out or not give the same value) without its [target]:
/// where a model runs does not change its parameters, so a checkpoint moves
/// between CPU and CUDA builds of one spec. NAME_SPEC_HASH and the model
/// descriptor's spec_hash.
uint64_t specHash(const spec::Spec &spec);

/// `t.shape` as tfc_param_info.shape holds it (tfc/runtime.h): all
/// TFC_MAX_PARAM_RANK entries, 1 past the rank, so a rank-1 tensor of n
/// floats is {n, 1, 1}. The header's NAME_tensors and the descriptor's table
/// both write this. A rank outside 1 .. TFC_MAX_PARAM_RANK is a fatal error
/// (the layout made a tensor the ABI cannot describe).
std::array<int64_t, TFC_MAX_PARAM_RANK> paramInfoShape(const ParamTensor &t);

/// `NAME.h`: sizes as macros, the parameter table, and the prototypes of
/// the generated functions `entries` describes (docs/abi.md); on CUDA
/// (`entries.cuda`) they take a stream instead of the runtime handle and
/// device pointers.
std::string emitHeader(const spec::Spec &spec, const ParamLayout &layout,
                       const mlir::tfc::abi::EntrySignature &entries);

/// The same parameter table as JSON, for tools and the PyTorch oracle.
std::string emitLayoutJson(const spec::Spec &spec, const ParamLayout &layout);

} // namespace tfc

#endif // TFC_ABI_HEADEREMITTER_H
