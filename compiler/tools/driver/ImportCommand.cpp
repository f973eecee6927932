//===- ImportCommand.cpp - `tfc import`: config.json -> spec --------------===//
//
// Its own small argument parser: the compiler's llvm::cl options (a required
// spec path among them) are not this command's.
//
//===----------------------------------------------------------------------===//

#include "tools/driver/ImportCommand.h"

#include "import/HfImport.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/raw_ostream.h"

#include <optional>
#include <string>

using namespace llvm;

namespace {

constexpr const char *kUsage =
    "usage: tfc import CONFIG.json [-o SPEC.toml] [--name NAME] "
    "[--max-seq N] [--max-batch N]\n"
    "\n"
    "Writes the tfc spec of a Hugging Face config.json (model_type llama,\n"
    "qwen2, qwen3, mistral, gpt2, bert), a comment per key saying where it\n"
    "came from. A config key tfc cannot honour, or does not know, is an\n"
    "error naming it.\n"
    "\n"
    "  -o SPEC.toml    output ('-' or none: stdout)\n"
    "  --name NAME     the spec's name, a C identifier (default: model_type)\n"
    "  --max-seq N     model.max_seq (default: max_position_embeddings; for\n"
    "                  RoPE models at most 4096)\n"
    "  --max-batch N   model.max_batch (default 1)\n";

/// Config files are a few KiB; this keeps a wrong path (a checkpoint)
/// from being read whole.
constexpr uint64_t kMaxConfigBytes = 16 << 20;

int fail(const std::string &message) {
  errs() << "tfc import: error: " << message << "\n";
  return 1;
}

std::optional<int64_t> positiveNumber(StringRef text) {
  int64_t v = 0;
  if (text.getAsInteger(10, v) || v < 1)
    return std::nullopt;
  return v;
}

} // namespace

int tfc::runImport(int argc, char **argv) {
  std::string input, output = "-";
  tfc::import::ImportOptions options;
  for (int i = 1; i < argc; ++i) {
    StringRef arg = argv[i];
    auto value = [&]() -> std::optional<StringRef> {
      if (i + 1 >= argc)
        return std::nullopt;
      return StringRef(argv[++i]);
    };
    if (arg == "-h" || arg == "--help") {
      outs() << kUsage;
      return 0;
    }
    if (arg == "-o" || arg == "--name" || arg == "--max-seq" ||
        arg == "--max-batch") {
      std::optional<StringRef> v = value();
      if (!v)
        return fail(arg.str() + " needs a value");
      if (arg == "-o") {
        output = v->str();
      } else if (arg == "--name") {
        options.name = v->str();
      } else {
        std::optional<int64_t> n = positiveNumber(*v);
        if (!n)
          return fail(arg.str() + " '" + v->str() +
                      "' is not a positive integer");
        (arg == "--max-seq" ? options.maxSeq : options.maxBatch) = *n;
      }
      continue;
    }
    if (arg.starts_with("-") && arg != "-")
      return fail("unknown option '" + arg.str() + "' (tfc import --help)");
    if (!input.empty())
      return fail("one config at a time ('" + input + "' and '" + arg.str() +
                  "')");
    input = arg.str();
  }
  if (input.empty())
    return fail("no config.json given (tfc import --help)");

  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFileOrSTDIN(input, /*IsText=*/true);
  if (!buffer)
    return fail("cannot read " + input + ": " + buffer.getError().message());
  if ((*buffer)->getBufferSize() > kMaxConfigBytes)
    return fail(input + " is over 16 MiB: not a config.json");

  tfc::spec::Diagnostic diag;
  std::optional<std::string> spec =
      tfc::import::importHfConfig(input, (*buffer)->getBuffer(), options, diag);
  if (!spec) {
    errs() << diag.str() << "\n";
    return 1;
  }
  std::error_code ec;
  ToolOutputFile out(output, ec, sys::fs::OF_Text);
  if (ec)
    return fail("cannot write " + output + ": " + ec.message());
  out.os() << *spec;
  out.keep();
  return 0;
}
