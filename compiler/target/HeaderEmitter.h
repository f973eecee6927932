//===- HeaderEmitter.h - The C header and layout JSON -----------*- C++ -*-===//

#ifndef TFC_TARGET_HEADEREMITTER_H
#define TFC_TARGET_HEADEREMITTER_H

#include "frontend/ParamLayout.h"
#include "spec/Spec.h"

#include <string>

namespace tfc {

/// `NAME.h`: sizes as macros, the parameter table, and the prototypes of
/// the generated functions (docs/abi.md); NAME_backward if `backward`. With
/// `cuda` the entry points take a stream instead of the runtime handle and
/// device pointers.
std::string emitHeader(const spec::Spec &spec, const ParamLayout &layout,
                       bool backward, bool cuda = false);

/// The same parameter table as JSON, for tools and the PyTorch oracle.
std::string emitLayoutJson(const spec::Spec &spec, const ParamLayout &layout);

} // namespace tfc

#endif // TFC_TARGET_HEADEREMITTER_H
