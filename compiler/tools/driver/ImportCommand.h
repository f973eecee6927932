//===- ImportCommand.h - `tfc import`: config.json -> spec -------*- C++
//-*-===//

#ifndef TFC_TOOLS_DRIVER_IMPORTCOMMAND_H
#define TFC_TOOLS_DRIVER_IMPORTCOMMAND_H

namespace tfc {

/// `tfc import CONFIG.json [-o SPEC.toml] [--name NAME] [--max-seq N]
/// [--max-batch N]`, argv[0] being "import"; returns the exit code.
int runImport(int argc, char **argv);

} // namespace tfc

#endif // TFC_TOOLS_DRIVER_IMPORTCOMMAND_H
