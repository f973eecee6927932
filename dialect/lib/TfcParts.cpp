//===- TfcParts.cpp - The part of the model an op comes from --------------===//

#include "tfc/Dialect/TfcParts.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;

SmallVector<StringRef> tfc::partNames(Location loc) {
  SmallVector<StringRef> names;
  loc->walk([&](Location inner) {
    if (auto named = dyn_cast<NameLoc>(inner))
      if (!llvm::is_contained(names, named.getName().getValue()))
        names.push_back(named.getName().getValue());
    return WalkResult::advance();
  });
  return names;
}

std::string tfc::partLabel(Location loc) {
  return llvm::join(partNames(loc), "+");
}
