#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace atlas {

// How llama.cpp's converter names a safetensors tensor (convert_hf_to_gguf.py with gguf-py's
// tensor_mapping.py; names in src/llama-arch.cpp LLM_TENSOR_NAMES), per name inside a decoder layer, and
// the few outside: the one table the GGUF writer of the tests, the diff against the origin and the
// absent-part check all read.
enum class GgufNaming {
    Same,    // one tensor to one tensor
    Stacked, // every expert's tensor ("mlp.experts.N.gate_proj") into one ("ffn_gate_exps"), experts leading
    SplitK,  // kv_b_proj's K half, per head: attn_k_b (DeepseekV2Model.modify_tensors)
    SplitV,  // kv_b_proj's V half, per head: attn_v_b
};

struct GgufNameRow
{
    bool inLayer;                // after "model.layers.N." / "blk.N.", else a whole name
    std::string_view safetensors; // "*" stands for the expert number
    std::string_view gguf;
    GgufNaming naming;
};
std::span<const GgufNameRow> ggufNameTable();

// A safetensors name to the GGUF names its data may end up in ("model.layers.3.mlp.experts.17.gate_proj.weight"
// -> "blk.3.ffn_gate_exps.weight"): kv_b_proj gives its two halves and the legacy whole, a post-attention norm
// both families' names; any one of them present means the tensor was kept. Empty when the converter has no
// name for it (block scales, which the converter folds into the quantised blocks).
std::vector<std::string> ggufNamesOf(std::string_view safetensorsName);
// The other way: the safetensors name a GGUF tensor came from, "*" for the stacked experts' number
// ("blk.3.ffn_gate_exps.weight" -> "model.layers.3.mlp.experts.*.gate_proj.weight"); nullopt for a name
// the table lacks.
std::optional<std::string> safetensorsNameOf(std::string_view ggufName);
// The row that decides a GGUF name, or nullptr.
const GgufNameRow *ggufNameRow(std::string_view ggufName);

} // namespace atlas
