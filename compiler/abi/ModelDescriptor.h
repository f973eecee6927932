//===- ModelDescriptor.h - NAME_model(): the model as data ------*- C++ -*-===//
//
// The descriptor every object exports (tfc/runtime.h, "Model descriptor"):
// a constant `tfc_model` with the sizes, the parameter table and each entry
// point's arrays, plus a generic thunk per entry point that unpacks an array
// of pointers into the typed call. Built on the translated LLVM IR, where
// the tables are plain constant aggregates: as MLIR insertvalue chains, a
// depth-1000 model's table would fold in quadratic time.
//
//   @gpt2.model = internal constant %tfc_model { 1, 2, ptr @.., ... }
//   define ptr @gpt2_model() { ret ptr @gpt2.model }
//   define internal i32 @gpt2_forward.generic(ptr %ctx, ptr %arrays, ...)
//     ; arrays == NULL -> tfc_rt_error; else load each array, call
//     ; @gpt2_forward(ctx, a0, a1, ..., workspace, bytes, batch, seq)
//
//===----------------------------------------------------------------------===//

#ifndef TFC_ABI_MODELDESCRIPTOR_H
#define TFC_ABI_MODELDESCRIPTOR_H

#include "abi/EntrySignature.h"
#include "abi/ParamLayout.h"
#include "spec/Spec.h"

#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Module.h"

#include <string>

namespace tfc {

/// The LLVM struct types of the descriptor's C structs, laid out as
/// tfc/runtime.h declares them (the unit tests compare every field offset
/// with offsetof under the host's data layout).
struct DescriptorTypes {
  llvm::StructType *paramInfo; // tfc_param_info
  llvm::StructType *arrayInfo; // tfc_array_info
  llvm::StructType *entryInfo; // tfc_entry_info
  llvm::StructType *model;     // tfc_model
  static DescriptorTypes get(llvm::LLVMContext &context);
};

/// Adds the descriptor of the model `entries` describes, `NAME_model()`,
/// and with `shared` also `tfc_shared_model()`, to `module`, which must
/// define the typed entry points. False (and `error`) when one is missing.
bool emitModelDescriptor(llvm::Module &module, const spec::Spec &spec,
                         const ParamLayout &layout,
                         const mlir::tfc::abi::EntrySignature &entries,
                         bool shared, std::string &error);

} // namespace tfc

#endif // TFC_ABI_MODELDESCRIPTOR_H
