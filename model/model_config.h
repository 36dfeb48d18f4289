#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace atlas {

// Bounds on config values (see model_config.cpp); beyond them a key is ignored with a warning.
inline constexpr std::int64_t kMaxConfigLayers = 100'000;
inline constexpr std::int64_t kMaxConfigMtpLayers = 64;
inline constexpr std::int64_t kMaxConfigExperts = 65'536;
inline constexpr std::int64_t kMaxConfigDim = 1 << 20;
inline constexpr std::int64_t kMaxConfigPositions = std::int64_t(1) << 40;

// One compressed-tensors config group: the bits of the weights it packs and which modules it targets
// ("Linear", or "re:" and a regular expression on the module name).
struct QuantGroup
{
    std::string name;
    int numBits = 0; // 0: not given
    int groupSize = 0;
    bool symmetric = true;
    std::string type; // "int", "float"
    std::vector<std::string> targets;
};

struct QuantizationConfig
{
    std::string method; // quant_method: "fp8", "compressed-tensors", "modelopt", "mxfp4", "awq", "gptq", ...
    int bits = 0;       // AWQ / GPTQ
    std::vector<QuantGroup> groups;
    std::vector<std::string> ignore;
    // How the routed experts are declared stored, when a file says it apart from the method: DeepSeek's
    // expert_dtype ("fp4", at the top of config.json or in quantization_config), ModelOpt's
    // hf_quant_config.json (moe_quant_algo, or the algorithm of the experts in quantized_layers).
    std::string expertFormat;
    std::string expertFormatFrom; // "expert_dtype", "quantization_config.expert_dtype", "hf_quant_config.json"
    // ModelOpt's sibling hf_quant_config.json (NVFP4 checkpoints may declare only fp8 in config.json):
    // its quant_algo, group_size and KV-cache algorithm, as the file says them.
    std::string modelOptAlgo, modelOptKvCacheAlgo;
    int modelOptGroupSize = 0;
    // MLX (config.json "quantization": {bits, group_size} and per-module overrides): U32 words holding
    // 32 / bits values each, .scales and .biases per group.
    int mlxBits = 0, mlxGroupSize = 0;
    std::map<std::string, int> mlxModuleBits; // module -> its bits (0: left unquantised)
};

// The config.json keys the analysis uses. Every key is optional: an unknown model
// still gets a generic layer tree and budget.
struct ModelConfig
{
    nlohmann::json raw; // config.json's top-level object as read (what `diff` compares)
    std::string modelType;
    std::string moeRouterDtype; // "float32" declares FP32 routing; empty when absent
    std::string topkMethod;     // "noaux_tc", "greedy", ...
    std::string scoringFunc;    // "sigmoid", "softmax"
    std::vector<std::string> architectures;
    std::optional<std::int64_t> numHiddenLayers;
    std::optional<std::int64_t> hiddenSize;
    std::optional<std::int64_t> nRoutedExperts;
    std::optional<std::int64_t> numExpertsPerTok;
    std::optional<std::int64_t> nSharedExperts;
    std::optional<std::int64_t> firstKDenseReplace;
    std::optional<std::int64_t> nGroup;
    std::optional<std::int64_t> topkGroup;
    std::optional<bool> normTopkProb;
    std::optional<double> routedScalingFactor;
    std::optional<std::int64_t> numAttentionHeads;
    std::optional<std::int64_t> numKeyValueHeads;
    std::optional<std::int64_t> headDim;
    // V's head dim when it differs from K's (MiMo-V2: head_dim 192 for q and k, v_head_dim 128).
    std::optional<std::int64_t> vHeadDim;
    // Sliding-window layers with heads of their own (MiMo-V2: swa_num_key_value_heads, swa_head_dim,
    // swa_v_head_dim; the full layers use num_key_value_heads, head_dim, v_head_dim).
    std::optional<std::int64_t> swaNumKeyValueHeads, swaHeadDim, swaVHeadDim;
    std::optional<std::int64_t> slidingWindow; // sliding_window, or sliding_window_size
    // MLA without rotary positions (Kimi-Linear: mla_use_nope true; the qk_rope_head_dim values, where the
    // weights have them, are cached but never rotated).
    bool mlaUseNope = false;
    std::optional<bool> useSlidingWindow;
    // Linear-attention (Gated DeltaNet) layers: heads and head dims of the recurrent state, conv kernel.
    std::optional<std::int64_t> linearNumKeyHeads, linearNumValueHeads, linearKeyHeadDim, linearValueHeadDim,
        linearConvKernelDim;
    // One attention kind per main layer: "full_attention", "sliding_attention", "linear_attention",
    // "deepseek_sparse_attention", "compressed_sparse_attention", "heavily_compressed_attention",
    // "mamba", "none". From layer_types, or else from the schedule the family writes instead
    // (layerTypesFrom names it): compress_ratios, linear_attn_config, hybrid_override_pattern,
    // hybrid_layer_pattern.
    std::vector<std::string> layerTypes;
    std::string layerTypesFrom;
    // DeepSeek-V4: tokens per compressed row of each layer (0: window only), then the MTP blocks'.
    std::vector<std::int64_t> compressRatios;
    // DeepSeek-V4.1 (CSA2): the layers that store compressed rows, and those that compute a selection;
    // every other compressed layer reads its source's rows and reuses the latest selection.
    std::vector<std::int64_t> kvSourceLayers, indexSourceLayers;
    // Inkling: short causal convolutions on K, V and both residual branches (use_sconv, sconv_kernel_size),
    // their last kernel - 1 inputs kept per sequence.
    std::optional<std::int64_t> shortConvKernel;
    std::vector<std::string> mlpLayerTypes; // "dense" / "sparse", or "moe" / "hash_moe", per layer
    std::optional<std::int64_t> numHashLayers; // DeepSeek-V4: the first layers route by token id
    // Kimi-Linear KDA heads (linear_attn_config.num_heads / head_dim / short_conv_kernel_size).
    std::optional<std::int64_t> kdaNumHeads, kdaHeadDim, kdaConvKernel;
    // Mamba-2 mixers (Nemotron-H): mamba_num_heads, mamba_head_dim, ssm_state_size, n_groups, conv_kernel,
    // and the dtype the engines keep the SSM state in when the config says (mamba_ssm_cache_dtype).
    std::optional<std::int64_t> mambaNumHeads, mambaHeadDim, ssmStateSize, mambaGroups, mambaConvKernel;
    std::string mambaSsmCacheDtype;
    // DeepSeek-V4: one shared K=V head of head_dim; compressor and indexer widths.
    std::optional<std::int64_t> indexKpool; // GLM-5.3-Flash: index keys pooled over this many tokens
    std::optional<std::int64_t> decoderSparseStep;
    std::vector<std::int64_t> mlpOnlyLayers;
    std::optional<std::int64_t> kvLoraRank;
    std::optional<std::int64_t> qkRopeHeadDim;
    std::optional<std::int64_t> maxPositionEmbeddings;
    std::optional<std::int64_t> numNextnPredictLayers; // or mtp_num_hidden_layers (Qwen3-Next), num_mtp_modules (MiniMax)
    std::string mtpCountKey;                           // the key that gave it, for what is said of it
    std::optional<std::int64_t> indexTopk;
    std::optional<std::int64_t> indexHeadDim;
    std::optional<std::int64_t> indexTopkFreq;
    std::optional<std::int64_t> indexSkipTopkOffset;
    std::optional<std::vector<std::string>> indexerTypes;
    std::optional<std::string> indexTopkPattern; // "FSSS...", one letter per main layer
    // Rows a token reads from each host-resident table (Engram: n-gram orders x hash heads), when the
    // config says; the active parameters of a host table are these rows, not the table.
    std::optional<std::int64_t> hostRowsPerToken;
    std::string hostRowsFrom; // the keys that gave it
    QuantizationConfig quantization;
    bool synthetic = false;            // written by ckpt-atlas's own checkpoint writer
    std::vector<std::string> warnings; // keys present with the wrong type or out of bounds
};

// Throws AtlasError(Invalid) only when the text is not a JSON object.
ModelConfig parseModelConfig(std::string_view file, std::string_view json);
// ModelOpt's hf_quant_config.json beside config.json, into cfg.quantization; a file that does not parse or
// is not ModelOpt's is returned as a warning and otherwise ignored. Throws AtlasError(Invalid) naming the
// file when it nests past kMaxJsonDepth.
std::optional<std::string> readHfQuantConfig(std::string_view json, ModelConfig &cfg);

} // namespace atlas
