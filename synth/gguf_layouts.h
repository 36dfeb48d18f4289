#pragma once

// GGUF copies of the synthetic layouts (synth/gguf_layouts.cpp): header-faithful at full scale.
#include "synthetic_layout.h"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace atlas::synth {

// What a quantisation stores each part as (llama-quantize's --tensor-type choices, per role).
struct GgufRecipe
{
    std::string name = "Q4_K_M";
    std::uint32_t fileType = 15;            // general.file_type (LlamaFileType)
    Dtype expertsGateUp = Dtype::Q4_K;      // ffn_gate_exps, ffn_up_exps
    Dtype expertsDown = Dtype::Q4_K;        // ffn_down_exps ...
    Dtype expertsDownMore = Dtype::Q6_K;    // ... in the layers llama-quant's use_more_bits picks
    Dtype shared = Dtype::Q4_K;             // ffn_{gate,up}_shexp
    Dtype sharedDown = Dtype::Q6_K;
    Dtype attention = Dtype::Q4_K;          // attn_q_a, attn_q_b, attn_kv_a_mqa, attn_k_b, attn_v_b, nextn.eh_proj
    Dtype attentionOut = Dtype::Q4_K;       // attn_output
    Dtype dense = Dtype::Q4_K;              // leading dense blocks' ffn_gate, ffn_up
    Dtype denseDown = Dtype::Q6_K;
    Dtype embedding = Dtype::Q4_K;          // token_embd
    Dtype head = Dtype::Q6_K;               // output
    Dtype indexer = Dtype::Q8_0;            // indexer.attn_q_b, indexer.attn_k
    Dtype bias = Dtype::F32;                // exp_probs_b (llama-quantize leaves 1-D tensors as converted)
    bool keepMtp = true;                    // false: converted with --no-mtp
    bool keepIndexer = true;                // false: a converter that drops the indexer
    int files = 1;                          // split into this many files (llama-gguf-split)
};
GgufRecipe ggufQ4KM();    // one file; ffn_down Q6_K in the use_more_bits layers, Q4_K elsewhere
GgufRecipe ggufUdQ2KXL(); // six files; Q2_K / Q3_K experts, attention kept at 4-5 bits

LayoutSpec deepseekV3(); // DeepSeek-V3: the V3.2 shapes without the indexer (61 + 1 layers)

struct GgufTensor
{
    std::string name;
    Dtype dtype;
    std::vector<std::uint64_t> shape; // row-major (GGUF's ne reversed)
    std::uint64_t bytes = 0;
    int layer = -1;
};
std::vector<GgufTensor> ggufTensors(const LayoutSpec &spec, const GgufRecipe &recipe);

struct GgufWriteResult
{
    std::vector<std::string> files;
    std::uint64_t tensors = 0;
    std::uint64_t tensorBytes = 0; // without the alignment padding
    std::uint64_t headerBytes = 0; // up to each file's data section, summed
};
// STEM.gguf, or STEM-0000K-of-0000N.gguf for a split recipe. Overwrites files in dir.
GgufWriteResult writeGguf(const LayoutSpec &spec, const GgufRecipe &recipe, const std::filesystem::path &dir,
                          const std::string &stem);

// By name: "glm-5.2-gguf-q4_k_m", "glm-5.2-gguf-ud-q2_k_xl", "deepseek-v3-gguf-q4_k_m", "deepseek-v3-gguf-ud-q2_k_xl";
// nullopt for any other.
std::vector<std::string> ggufLayoutNames();
std::optional<GgufWriteResult> writeGgufNamed(std::string_view name, const std::filesystem::path &dir);

} // namespace atlas::synth
