#pragma once

#include "gguf.h"
#include "model_config.h"

#include <nlohmann/json.hpp>

#include <span>
#include <string_view>

namespace atlas {

// A GGUF's ARCH.* keys, read back into the config.json keys its converter took them from
// (convert_hf_to_gguf.py's set_gguf_parameters, run backwards): one table, so that the layer model, the
// cache and the diff against the origin read a GGUF's shape exactly as they read the checkpoint's.
struct GgufConfigRow
{
    std::string_view ggufKey;   // after "ARCH."
    std::string_view configKey; // config.json's
};
std::span<const GgufConfigRow> ggufConfigTable();

// The architecture's model_type ("deepseek2" -> "deepseek_v3" when its experts are gated by sigmoid).
std::string ggufModelType(const GgufHeader &header);

// config.json as the metadata says it, then parsed as config.json is (every bound and warning applies).
// `header` is the file that holds the metadata (a split's first); correctionBias: some file of the set holds
// a blk.N.exp_probs_b tensor.
nlohmann::json ggufConfigJson(const GgufHeader &header, bool correctionBias);
ModelConfig ggufModelConfig(const GgufHeader &header, bool correctionBias);

} // namespace atlas
