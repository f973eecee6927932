//===- IRFuzzer.cpp - libFuzzer target for parsing and verifying tfc IR ---===//
//
// MLIR text in, parsed and verified as `tfc-opt` does (tfc, func, arith and scf
// registered; the parser verifies the module it built). No input may crash,
// hang or trip a sanitizer, in our verifiers, parsers, printers or in MLIR as
// they drive it. A module that verifies must also round-trip, as
// `tfc-opt --verify-roundtrip` would check: printed in the custom form and in
// the generic form, it parses back, verifies, and prints the same text.
//
//===----------------------------------------------------------------------===//

#include "tfc/Dialect/TfcDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace mlir;

namespace {

[[noreturn]] void fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "tfc-fuzz-ir: %s\n%s\n", what, detail.c_str());
  std::abort();
}

std::string print(ModuleOp module, bool generic) {
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  if (generic)
    flags.printGenericOpForm();
  module->print(os, flags);
  return text;
}

/// Prints `module`, parses the text back in `context` and checks that it
/// verifies and prints the same.
void checkRoundTrip(MLIRContext &context, ModuleOp module, bool generic) {
  std::string printed = print(module, generic);
  std::string errors;
  OwningOpRef<ModuleOp> again;
  {
    ScopedDiagnosticHandler collect(&context, [&](Diagnostic &diag) {
      errors += diag.str() + "\n";
      return success();
    });
    again = parseSourceString<ModuleOp>(printed, ParserConfig(&context));
  }
  if (!again)
    fail(generic ? "generic form does not parse back"
                 : "custom form does not parse back",
         errors + printed);
  if (print(*again, generic) != printed)
    fail(generic ? "generic form is not a fixed point"
                 : "custom form is not a fixed point",
         printed);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static DialectRegistry *registry = [] {
    auto *r = new DialectRegistry;
    r->insert<tfc::TfcDialect, func::FuncDialect, arith::ArithDialect,
              scf::SCFDialect>();
    return r;
  }();
  // A fresh context per input: attributes and types are uniqued in the
  // context for its lifetime, so a shared one would grow with the corpus and
  // make a crash depend on the inputs before it.
  MLIRContext context(*registry, MLIRContext::Threading::DISABLED);
  // The parser's errors are the expected outcome for most inputs.
  ScopedDiagnosticHandler quiet(&context,
                                [](Diagnostic &) { return success(); });

  // std::string: the MLIR lexer reads up to a terminating NUL.
  std::string text(reinterpret_cast<const char *>(data), size);
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(text, ParserConfig(&context));
  if (!module)
    return 0;
  if (failed(verify(*module)))
    fail("a parsed module does not verify a second time", text);
  checkRoundTrip(context, *module, /*generic=*/false);
  checkRoundTrip(context, *module, /*generic=*/true);
  return 0;
}
