//===- tfc.cpp - The tfc compiler driver ------------------------*- C++ -*-===//
//
//   tfc spec.toml -o model.o     writes model.o and model.h
//   tfc spec.toml --emit=KIND    one stage's output (see --help)
//
// The command line and the stages are the driver library's
// (tools/driver/Driver.cpp); tfc takes them as they are.
//
//===----------------------------------------------------------------------===//

#include "tools/driver/Driver.h"
#include "tools/driver/ImportCommand.h"

#include <cstring>

int main(int argc, char **argv) {
  // `tfc import config.json ...`: a command of its own.
  if (argc > 1 && std::strcmp(argv[1], "import") == 0)
    return tfc::runImport(argc - 1, argv + 1);
  tfc::DriverConfig config;
  config.overview =
      "tfc: compiles a Transformer spec (TOML) to an object file and a C "
      "header\n\n  tfc spec.toml -o model.o   writes model.o and model.h\n"
      "  tfc spec.toml --emit=tfc   prints the tfc dialect IR\n"
      "  tfc import config.json     a Hugging Face config.json as a spec\n"
      "                             (tfc import --help)\n\n"
      "MLIR's IR-printing flags work too (--mlir-print-ir-after-all,\n"
      "--mlir-print-ir-before=tfc-lower-to-loops, ...; see --help-hidden).\n"
      "\n"
      "Limits (docs/limits.md): the spec file is at most 1 MiB, nests at most\n"
      "32 '[' and '{', and no dotted key has more than 32 parts; d_model,\n"
      "d_ff and n_heads * head_dim <= 65536, head_dim (default d_model /\n"
      "n_heads) <= 256, n_kv_heads divides n_heads, depth <= 4096, max_seq <=\n"
      "2^20, max_batch <= 65536, vocab <= 2^22, parameters <= 2^34 floats,\n"
      "workspace bound <= 1 TiB. Within them tfc itself needs under 2 GiB of\n"
      "address space and 60 s.\n";
  return tfc::runDriver(argc, argv, config);
}
