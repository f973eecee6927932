//===- HeaderEmitter.h - The C header and layout JSON -----------*- C++ -*-===//

#ifndef TFC_ABI_HEADEREMITTER_H
#define TFC_ABI_HEADEREMITTER_H

#include "abi/EntrySignature.h"
#include "abi/ParamLayout.h"
#include "spec/Spec.h"

#include <string>

namespace tfc {

/// 64-bit FNV-1a of the resolved spec (printSpec, so whitespace, comments and
/// defaults spelled out or not give the same value) without its [target]:
/// where a model runs does not change its parameters, so a checkpoint moves
/// between CPU and CUDA builds of one spec. NAME_SPEC_HASH and the model
/// descriptor's spec_hash.
uint64_t specHash(const spec::Spec &spec);

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
