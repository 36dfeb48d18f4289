#pragma once

#include "dtype.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace atlas::synth {

// How a layout decides which layers own an indexer.
enum class IndexerPolicy {
    None,         // no DSA at all (DeepSeek-V3-like)
    IndexerTypes, // config.json lists indexer_types
    Formula,      // config.json gives index_topk_freq / index_skip_topk_offset only
    Pattern,      // config.json gives index_topk_pattern ("FSSS...") only
    EveryLayer,   // no key: every layer owns one (DeepSeek-V3.2)
};

// How the quantized linear layers are stored (domain.md section 10); the logical parameters are the
// same in every packing.
enum class Packing {
    Bf16,     // plain BF16
    Fp8Block, // F8_E4M3 + F32 weight_scale_inv per 128x128 (DeepSeek, GLM)
    Nvfp4,    // ModelOpt: U8 [out, in/2] + F8_E4M3 weight_scale per 16 + F32 weight_scale_2
    Int4,     // compressed-tensors pack-quantized: I32 weight_packed [out, in/8] + BF16 scale per 64 + shape
    Awq,      // AWQ: I32 qweight [in, out/8] + qzeros + BF16 scales per 128
};
const char *packingName(Packing p); // "bf16", "fp8", "nvfp4", "int4", "awq"

// The architecture knobs of the DeepSeek-V3 / GLM-MoE-DSA family. Every tensor shape follows from these.
struct LayoutSpec
{
    std::string name;
    std::string modelType = "glm_moe_dsa";
    std::string architecture = "GlmMoeDsaForCausalLM";
    std::int64_t hidden = 6144;
    std::int64_t layers = 78;
    std::int64_t firstDense = 3;
    std::int64_t mtpLayers = 1;
    std::int64_t heads = 64;
    std::int64_t qLoraRank = 2048;
    std::int64_t kvLoraRank = 512;
    std::int64_t ropeDim = 64;
    std::int64_t nopeDim = 192;
    std::int64_t vDim = 256;
    std::int64_t vocab = 154880;
    std::int64_t denseInter = 12288;
    std::int64_t moeInter = 2048;
    std::int64_t experts = 256;
    std::int64_t topk = 8;
    std::int64_t sharedExperts = 1;
    std::int64_t nGroup = 1;
    std::int64_t topkGroup = 1;
    double routedScaling = 2.5;
    bool normTopkProb = true;
    std::int64_t indexHeads = 32;
    std::int64_t indexHeadDim = 128;
    std::int64_t indexTopk = 2048;
    IndexerPolicy indexer = IndexerPolicy::IndexerTypes;
    std::int64_t indexFreq = 4;   // full every indexFreq layers ...
    std::int64_t indexOffset = 3; // ... after index_skip_topk_offset
    std::string moeRouterDtype;   // written as moe_router_dtype when set ("float32" in GLM-5.3)
    bool writeIndexOffset = true; // false: leave the key out (then indexOffset must be 2, the default)
    std::int64_t maxPosition = 1048576;
    Packing packing = Packing::Fp8Block;
    bool correctionBias = true;
    bool mtpEmbedAndHead = false; // DeepSeek-V3 style MTP layer with its own embed_tokens / shared_head.head
    int shards = 141;
    std::uint64_t biasSeed = 0x5eed;
};

struct SynthTensor
{
    std::string name;
    Dtype dtype;
    std::vector<std::uint64_t> shape;
    std::uint64_t bytes = 0;
};

// The transformers rule for which layers own an indexer (domain.md section 6).
bool formulaFull(std::int64_t layer, std::int64_t freq, std::int64_t offset);

std::vector<SynthTensor> layoutTensors(const LayoutSpec &spec);
nlohmann::ordered_json layoutConfig(const LayoutSpec &spec);

// Deterministic F32 correction-bias values for one layer: a narrow band at an offset, as real ones sit.
std::vector<float> syntheticBias(const LayoutSpec &spec, std::int64_t layer);

// Presets.
LayoutSpec glm5Fp8();     // GLM-5.2-FP8: 78 + 1 layers, 141 shards
LayoutSpec deepseekV32(); // DeepSeek-V3.2-like: 61 + 1 layers, every layer indexed, 8 expert groups
LayoutSpec smallLayout(); // a few layers, quick to write and read

struct WriteResult
{
    std::uint64_t tensors = 0;
    std::uint64_t tensorBytes = 0;
    int shards = 0;
};

// Any layout as written: its tensors in file order, its config.json, how many shards.
struct WrittenLayout
{
    std::string name;
    std::vector<SynthTensor> tensors;
    nlohmann::ordered_json config;
    int shards = 1;
    std::int64_t experts = 0;     // values per correction bias
    std::uint64_t biasSeed = 0x5eed;
};
WriteResult writeLayout(const WrittenLayout &layout, const std::filesystem::path &dir);
std::vector<float> syntheticBias(std::int64_t experts, std::uint64_t seed, std::int64_t layer);

// The next generation (domain.md section 12), header-faithful at full scale (synth/next_gen_layouts.cpp).
WrittenLayout deepseekV4Flash(); // 43 layers + MTP, FP4 experts in I8 pairs, 46 shards
WrittenLayout deepseekV4Pro();   // 61 layers + MTP, 64 shards
WrittenLayout glm53Flash();      // glm5_next FP8: 34 KDA + 11 DSA layers, MTP, vision tower, 62 shards
WrittenLayout kimiLinear48B();   // kimi_linear BF16: 20 KDA + 7 MLA layers, BF16 correction biases, 20 shards
// The checkpoints of autumn 2026 (domain.md section 18; synth/autumn_layouts.cpp), at full scale.
WrittenLayout hy4Preview();       // hy_v4: 78 gated-MLA + DSA layers with IndexCache, MTP, 131 shards
WrittenLayout minimaxM3();        // minimax_m3_vl: 3 dense + 57 sparse-attention layers, vision, 59 shards
WrittenLayout inkling();          // inkling_mm_model: 55 sliding + 11 global GQA layers, 8 MTP depths, 108 shards
WrittenLayout qwen38FlashNext();  // qwen4_exp: 36 Gated DeltaNet + 12 sparse layers, an n-gram table, 131 shards
WrittenLayout deepseekV41Flash(); // deepseek_v41: CSA2, Engram on layers 1 and 14, DSpark, vision, 48 shards
WrittenLayout kimiK3();           // kimi_k3: 69 KDA + 24 gated MLA layers, 896 MXFP4 experts, 497,220 tensors
// By name: "deepseek-v4-flash", "deepseek-v4-pro", "glm-5.3-flash", "kimi-linear", "glm-5.2-fp8",
// "deepseek-v3.2", "small"; nullopt for any other.
std::optional<WrittenLayout> layoutNamed(std::string_view name);
std::vector<std::string> layoutNames();

// Writes config.json, model.safetensors.index.json and the shards (data regions are sparse holes,
// correction biases hold real values). Overwrites files in dir.
WriteResult writeCheckpoint(const LayoutSpec &spec, const std::filesystem::path &dir);

} // namespace atlas::synth
