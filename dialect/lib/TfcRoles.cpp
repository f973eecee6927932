//===- TfcRoles.cpp - What a model function's arguments are ---------------===//

#include "tfc/Dialect/TfcRoles.h"

using namespace mlir;

StringRef tfc::getArgRole(FunctionOpInterface func, unsigned index) {
  auto role = func.getArgAttrOfType<StringAttr>(index, kRoleAttrName);
  return role ? role.getValue() : "";
}

StringRef tfc::getResultRole(FunctionOpInterface func, unsigned index) {
  auto role = func.getResultAttrOfType<StringAttr>(index, kRoleAttrName);
  return role ? role.getValue() : "";
}

bool tfc::isProbeRole(StringRef role) {
  return role == "hidden_norms" || role == "stream_norms" ||
         role == "expert_counts";
}

std::string tfc::gradientRole(StringRef role) { return ("d_" + role).str(); }

tfc::GradientInterface tfc::getGradientInterface(FunctionOpInterface model) {
  GradientInterface iface;
  for (unsigned i = 0, e = model.getNumArguments(); i < e; ++i) {
    StringRef role = getArgRole(model, i);
    if (role == "params")
      iface.paramsArg = i;
    else if (role == "x" || role == "enc")
      iface.differentiatedArgs.push_back(i);
    else if (role == "lengths")
      iface.passedArgs.push_back(i);
  }
  for (unsigned i = 0, e = model.getNumResults(); i < e; ++i)
    if (getResultRole(model, i) == "loss")
      iface.lossResults.push_back(i);
  if (iface.lossResults.empty())
    for (unsigned i = 0, e = model.getNumResults(); i < e; ++i)
      if (!isProbeRole(getResultRole(model, i)))
        iface.seededResults.push_back(i);
  return iface;
}
