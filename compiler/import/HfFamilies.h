//===- HfFamilies.h - One importer per Hugging Face model family -*- C++
//-*-===//
//
// Each reads the keys its family's transformers config class defines (with
// that class's defaults) and writes the spec. The architecture facts a
// config does not spell out (LLaMA's RMSNorm and SwiGLU, Qwen3's QK-norm,
// GPT-2's tied head) are written with the family as their source.
//
//===----------------------------------------------------------------------===//

#ifndef TFC_IMPORT_HFFAMILIES_H
#define TFC_IMPORT_HFFAMILIES_H

#include "import/ConfigReader.h"
#include "import/HfImport.h"
#include "import/SpecWriter.h"

namespace tfc::import {

/// llama, qwen2, qwen3, mistral: pre-norm RMSNorm, gated FFN, RoPE.
void importLlamaFamily(ConfigReader &config, llvm::StringRef modelType,
                       const ImportOptions &options, SpecWriter &out);
/// gpt2: pre-norm LayerNorm, learned positions, tied head.
void importGpt2(ConfigReader &config, const ImportOptions &options,
                SpecWriter &out);
/// bert: post-norm LayerNorm encoder, learned positions, no head.
void importBert(ConfigReader &config, const ImportOptions &options,
                SpecWriter &out);

/// The keys of every config that do not change the model's math.
void markCommonKeys(ConfigReader &config);

} // namespace tfc::import

#endif // TFC_IMPORT_HFFAMILIES_H
