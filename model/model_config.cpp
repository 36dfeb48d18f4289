#include "model_config.h"

#include "errors.h"
#include "untrusted_text.h"

#include <algorithm>
#include <cmath>

namespace atlas {

namespace {

// Every integer a config can carry is bounded before anything sizes memory, indexes an array or
// loops with it. The limits sit far above any published model (DeepSeek-V3: 61 layers, 256 experts,
// 163,840 positions) and far below what would overflow the arithmetic that uses them.
struct IntLimit
{
    std::int64_t min;
    std::int64_t max;
};

void readInt(const nlohmann::json &doc, const char *key, std::optional<std::int64_t> &out, ModelConfig &cfg,
             IntLimit limit)
{
    auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) return;
    const std::string k(key);
    if (!it->is_number_integer()) {
        cfg.warnings.push_back(k + " is not an integer; ignored");
        return;
    }
    if (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(limit.max)) {
        cfg.warnings.push_back(k + " is " + std::to_string(it->get<std::uint64_t>()) + ", above the limit " +
                               std::to_string(limit.max) + "; ignored");
        return;
    }
    const std::int64_t v = it->get<std::int64_t>();
    if (v < limit.min) {
        cfg.warnings.push_back(k + " is " + std::to_string(v) + (v < 0 ? " (negative)" : "") +
                               ", below the minimum " + std::to_string(limit.min) + "; ignored");
        return;
    }
    if (v > limit.max) {
        cfg.warnings.push_back(k + " is " + std::to_string(v) + ", above the limit " +
                               std::to_string(limit.max) + "; ignored");
        return;
    }
    out = v;
}

// A list with one string per layer ("full_attention", "sparse", ...); a non-string entry reads as "".
void readLayerList(const nlohmann::json &doc, const char *key, std::vector<std::string> &out)
{
    auto it = doc.find(key);
    if (it == doc.end() || !it->is_array() || it->size() > static_cast<std::size_t>(kMaxConfigLayers)) return;
    for (const auto &v : *it)
        out.push_back(v.is_string() ? v.get<std::string>() : std::string());
}

// quantization_config: the method, the bits of AWQ / GPTQ, and compressed-tensors' groups.
void readQuantization(const nlohmann::json &q, ModelConfig &cfg)
{
    QuantizationConfig &out = cfg.quantization;
    if (auto it = q.find("quant_method"); it != q.end() && it->is_string())
        out.method = it->get<std::string>();
    if (auto it = q.find("bits"); it != q.end() && it->is_number_integer()) {
        const auto bits = it->get<std::int64_t>();
        if (bits == 2 || bits == 3 || bits == 4 || bits == 8)
            out.bits = static_cast<int>(bits);
        else
            cfg.warnings.push_back("quantization_config.bits is " + std::to_string(bits) + "; ignored");
    }
    if (auto it = q.find("ignore"); it != q.end() && it->is_array())
        for (const auto &v : *it)
            if (v.is_string() && out.ignore.size() < 4096) out.ignore.push_back(v.get<std::string>());
    auto groups = q.find("config_groups");
    if (groups == q.end() || !groups->is_object()) return;
    for (const auto &[name, g] : groups->items()) {
        if (!g.is_object() || out.groups.size() >= 64) continue;
        QuantGroup group;
        group.name = name;
        if (auto w = g.find("weights"); w != g.end() && w->is_object()) {
            if (auto b = w->find("num_bits"); b != w->end() && b->is_number_integer()) {
                const auto bits = b->get<std::int64_t>();
                if (bits >= 1 && bits <= 32 && 32 % bits == 0) group.numBits = static_cast<int>(bits);
            }
            if (auto gs = w->find("group_size"); gs != w->end() && gs->is_number_integer())
                group.groupSize =
                    static_cast<int>(std::clamp<std::int64_t>(gs->get<std::int64_t>(), 0, 1 << 20));
            if (auto sym = w->find("symmetric"); sym != w->end() && sym->is_boolean())
                group.symmetric = sym->get<bool>();
            if (auto t = w->find("type"); t != w->end() && t->is_string()) group.type = t->get<std::string>();
        }
        if (auto t = g.find("targets"); t != g.end() && t->is_array())
            for (const auto &v : *t)
                if (v.is_string() && v.get_ref<const std::string &>().size() <= 256)
                    group.targets.push_back(v.get<std::string>());
        if (group.numBits == 0)
            cfg.warnings.push_back(
                "quantization_config.config_groups." + name +
                ": weights.num_bits is missing or does not divide 32; its packed weights are "
                "counted as stored");
        out.groups.push_back(std::move(group));
    }
}

// A list of integers (one per layer, or layer numbers); nullopt when the key is absent or not such a list.
std::optional<std::vector<std::int64_t>> readIntList(const nlohmann::json &doc, const char *key, ModelConfig &cfg,
                                                     IntLimit limit)
{
    auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) return std::nullopt;
    std::vector<std::int64_t> out;
    bool ok = it->is_array() && it->size() <= static_cast<std::size_t>(kMaxConfigLayers + kMaxConfigMtpLayers);
    if (ok)
        for (const auto &v : *it) {
            if (!v.is_number_integer() || v.get<std::int64_t>() < limit.min || v.get<std::int64_t>() > limit.max) {
                ok = false;
                break;
            }
            out.push_back(v.get<std::int64_t>());
        }
    if (!ok) {
        cfg.warnings.push_back(std::string(key) + " is not a list of integers from " + std::to_string(limit.min) +
                               " to " + std::to_string(limit.max) + "; ignored");
        return std::nullopt;
    }
    return out;
}

// The families that write no layer_types say the same with a schedule of their own (domain.md section 12).
// Each becomes layer_types' words, so that everything downstream reads one schedule.
void scheduleFromFamilyKeys(const nlohmann::json &doc, ModelConfig &cfg)
{
    const std::int64_t L = cfg.numHiddenLayers.value_or(0);
    // DeepSeek-V4.1 (CSA2): the layers whose compressed rows (kv_source_layer_ids) and top-k selection
    // (index_source_layer_ids) the layers after them reuse (ROCm/ATOM build_attention_topology).
    if (const auto kv = readIntList(doc, "kv_source_layer_ids", cfg, {0, kMaxConfigLayers})) cfg.kvSourceLayers = *kv;
    if (const auto ix = readIntList(doc, "index_source_layer_ids", cfg, {0, kMaxConfigLayers}))
        cfg.indexSourceLayers = *ix;
    // DeepSeek-V4: compress_ratios, one per layer and then the MTP block (0 window, 4 CSA, 128 HCA).
    // A ratio beyond 2^20 tokens per row is no model's; the bound keeps the state arithmetic in 64 bits.
    if (auto ratios = readIntList(doc, "compress_ratios", cfg, {0, 1 << 20})) {
        cfg.compressRatios = *ratios;
        if (cfg.layerTypes.empty() && L > 0 && static_cast<std::int64_t>(ratios->size()) >= L) {
            for (std::int64_t i = 0; i < L; ++i) {
                const std::int64_t r = (*ratios)[static_cast<std::size_t>(i)];
                // V4.1's ratios 1 and 2 are all sparse (the selection is computed or reused on each).
                const bool csa2 = !cfg.indexSourceLayers.empty();
                cfg.layerTypes.push_back(r == 0             ? "sliding_attention"
                                         : r == 4 || csa2 ? "compressed_sparse_attention"
                                                          : "heavily_compressed_attention");
            }
            cfg.layerTypesFrom = "compress_ratios";
        } else if (L > 0 && static_cast<std::int64_t>(ratios->size()) < L) {
            cfg.warnings.push_back("compress_ratios has " + std::to_string(ratios->size()) +
                                   " entries for " + std::to_string(L) + " layers; ignored");
            cfg.compressRatios.clear();
        }
    } else if (!cfg.layerTypes.empty()) {
        // transformers' DeepSeek-V4 layer_types carry the ratio in the kind (compress_rates).
        std::int64_t csa = 4, hca = 128;
        if (auto it = doc.find("compress_rates"); it != doc.end() && it->is_object()) {
            auto rate = [&](const char *k, std::int64_t &out) {
                if (auto r = it->find(k); r != it->end() && r->is_number_integer() && r->get<std::int64_t>() > 0 &&
                                          r->get<std::int64_t>() <= (1 << 20))
                    out = r->get<std::int64_t>();
            };
            rate("compressed_sparse_attention", csa);
            rate("heavily_compressed_attention", hca);
        }
        const bool v4 = std::any_of(cfg.layerTypes.begin(), cfg.layerTypes.end(), [](const std::string &t) {
            return t == "compressed_sparse_attention" || t == "heavily_compressed_attention";
        });
        if (v4)
            for (const auto &t : cfg.layerTypes)
                cfg.compressRatios.push_back(t == "compressed_sparse_attention"    ? csa
                                             : t == "heavily_compressed_attention" ? hca
                                                                                   : 0);
    }
    const auto linearConfig = doc.find("linear_attn_config");
    const bool hasLinearConfig = linearConfig != doc.end() && linearConfig->is_object();
    if (hasLinearConfig) {
        readInt(*linearConfig, "num_heads", cfg.kdaNumHeads, cfg, {1, kMaxConfigExperts});
        readInt(*linearConfig, "head_dim", cfg.kdaHeadDim, cfg, {1, kMaxConfigDim});
        readInt(*linearConfig, "short_conv_kernel_size", cfg.kdaConvKernel, cfg, {1, 1024});
    }
    // CSA2's sources must be main layers that compress (a ratio above 0): any other is named and dropped.
    if (!cfg.kvSourceLayers.empty() && L > 0) {
        std::vector<std::int64_t> kept;
        for (const auto n : cfg.kvSourceLayers) {
            if (n < L && static_cast<std::size_t>(n) < cfg.compressRatios.size() && cfg.compressRatios[static_cast<std::size_t>(n)] > 0)
                kept.push_back(n);
            else if (cfg.warnings.size() < 64)
                cfg.warnings.push_back("kv_source_layer_ids names layer " + std::to_string(n) +
                                       ", which is not a compressed main layer; dropped");
        }
        cfg.kvSourceLayers = std::move(kept);
    }
    // MiniMax-M3: sparse_attention_config.sparse_attention_freq, 1 for a MiniMax Sparse Attention layer
    // (transformers MiniMaxM3VLTextConfig.__post_init__: "minimax_m3_sparse" if f else "full_attention";
    // vLLM minimax_m3 _sparse_attention_layer_ids); one index key of sparse_index_dim per token, top
    // sparse_topk_blocks blocks of sparse_block_size tokens read.
    if (auto sac = doc.find("sparse_attention_config"); sac != doc.end() && sac->is_object()) {
        if (const auto freq = readIntList(*sac, "sparse_attention_freq", cfg, {0, 1}); freq && cfg.layerTypes.empty() && L > 0) {
            if (static_cast<std::int64_t>(freq->size()) == L) {
                for (const auto f : *freq)
                    cfg.layerTypes.push_back(f ? "minimax_m3_sparse" : "full_attention");
                cfg.layerTypesFrom = "sparse_attention_config";
            } else {
                cfg.warnings.push_back("sparse_attention_config.sparse_attention_freq has " + std::to_string(freq->size()) +
                                       " entries for " + std::to_string(L) + " layers; ignored");
            }
        }
        if (!cfg.indexHeadDim) readInt(*sac, "sparse_index_dim", cfg.indexHeadDim, cfg, {1, kMaxConfigDim});
        std::optional<std::int64_t> blocks, block;
        readInt(*sac, "sparse_topk_blocks", blocks, cfg, {1, 1 << 20});
        readInt(*sac, "sparse_block_size", block, cfg, {1, 1 << 20});
        if (blocks && block && !cfg.indexTopk) cfg.indexTopk = *blocks * *block;
    }
    // Qwen3.8-Flash-Next: its Qwen Sparse Attention layers are written "full_attention" in layer_types;
    // the indexer keys (indexer_budget, indexer_head_dim) make them sparse, as every runtime reads them
    // (vllm.cpp kQwenSparseAttention; transformers modeling_qwen4_exp.py Qwen4ExpTextQSAIndexer).
    if (auto ib = doc.find("indexer_budget"); ib != doc.end() && ib->is_number_integer()) {
        if (!cfg.indexHeadDim) readInt(doc, "indexer_head_dim", cfg.indexHeadDim, cfg, {1, kMaxConfigDim});
        if (!cfg.indexTopk) readInt(doc, "indexer_budget", cfg.indexTopk, cfg, {1, kMaxConfigPositions});
        for (auto &t : cfg.layerTypes)
            if (t == "full_attention") t = "qwen_sparse_attention";
    }
    // Inkling: local_layer_ids are the sliding layers, the rest global (TensorRT-LLM InklingConfig).
    if (const auto local = readIntList(doc, "local_layer_ids", cfg, {0, kMaxConfigLayers});
        local && cfg.layerTypes.empty() && L > 0) {
        std::vector<std::string> types(static_cast<std::size_t>(L), "full_attention");
        bool ok = true;
        for (const auto n : *local) {
            if (n >= L) {
                cfg.warnings.push_back("local_layer_ids names layer " + std::to_string(n) + ", beyond the " +
                                       std::to_string(L) + " layers; ignored");
                ok = false;
                break;
            }
            types[static_cast<std::size_t>(n)] = "sliding_attention";
        }
        if (ok) {
            cfg.layerTypes = std::move(types);
            cfg.layerTypesFrom = "local_layer_ids";
        }
    }
    if (!cfg.layerTypes.empty()) {
        if (cfg.layerTypesFrom.empty()) cfg.layerTypesFrom = "layer_types";
        return;
    }
    if (L <= 0) return;
    // linear_attn_config.kda_layers / full_attn_layers: Kimi numbers them from 1 (vLLM kimi_linear:
    // (layer_idx + 1) in kda_layers), GLM-5.3-Flash from 0 (SGLang glm5_next: layer_idx in kda_layers).
    // A list that names layer 0 counts from 0; otherwise from 1.
    if (hasLinearConfig) {
        const auto it = linearConfig;
        const auto kda = readIntList(*it, "kda_layers", cfg, {0, kMaxConfigLayers});
        const auto full = readIntList(*it, "full_attn_layers", cfg, {0, kMaxConfigLayers});
        if (kda || full) {
            // A list naming layer 0 counts from 0, one naming layer L from 1; with neither, the family
            // decides (GLM counts from 0, Kimi from 1) and a warning says it was a guess.
            std::int64_t base = 1;
            bool zero = false, last = false;
            for (const auto *list : {&kda, &full})
                if (*list) {
                    zero = zero || std::find((*list)->begin(), (*list)->end(), 0) != (*list)->end();
                    last = last || std::find((*list)->begin(), (*list)->end(), L) != (*list)->end();
                }
            if (zero && !last)
                base = 0;
            else if (!zero && !last) {
                base = cfg.modelType.starts_with("glm") ? 0 : 1;
                cfg.warnings.push_back("linear_attn_config names neither layer 0 nor layer " + std::to_string(L) +
                                       ": its lists are read from " + std::to_string(base) + " as " +
                                       (base ? "Kimi" : "GLM") + " writes them");
            }
            std::vector<std::string> types(static_cast<std::size_t>(L), kda ? "full_attention" : "linear_attention");
            bool ok = true;
            for (const auto *list : {&kda, &full}) {
                if (!*list || !ok) continue;
                for (std::int64_t n : **list) {
                    if (n < base || n - base >= L) {
                        cfg.warnings.push_back(std::string("linear_attn_config.") +
                                               (list == &kda ? "kda_layers" : "full_attn_layers") + " names layer " +
                                               std::to_string(n) + ", outside " + std::to_string(base) + ".." +
                                               std::to_string(L - 1 + base) + "; the schedule is ignored");
                        ok = false;
                        break;
                    }
                    types[static_cast<std::size_t>(n - base)] = list == &kda ? "linear_attention" : "full_attention";
                }
            }
            if (ok) {
                cfg.layerTypes = std::move(types);
                cfg.layerTypesFrom = "linear_attn_config";
                return;
            }
        }
    }
    // Nemotron-H: hybrid_override_pattern, one letter per layer (M Mamba-2, * attention, - MLP, E MoE).
    if (auto it = doc.find("hybrid_override_pattern"); it != doc.end() && it->is_string()) {
        const auto &p = it->get_ref<const std::string &>();
        if (static_cast<std::int64_t>(p.size()) == L &&
            p.find_first_not_of("M*-E") == std::string::npos) {
            for (char c : p)
                cfg.layerTypes.push_back(c == 'M' ? "mamba" : c == '*' ? "full_attention" : "none");
            cfg.layerTypesFrom = "hybrid_override_pattern";
        } else {
            cfg.warnings.push_back("hybrid_override_pattern is not one of M, *, -, E per layer (" +
                                   std::to_string(L) + " layers); ignored");
        }
        return;
    }
    // MiMo-V2: hybrid_layer_pattern, 1 for a sliding-window layer, 0 for full attention.
    if (auto pattern = readIntList(doc, "hybrid_layer_pattern", cfg, {0, 1})) {
        if (static_cast<std::int64_t>(pattern->size()) == L) {
            for (std::int64_t v : *pattern)
                cfg.layerTypes.push_back(v ? "sliding_attention" : "full_attention");
            cfg.layerTypesFrom = "hybrid_layer_pattern";
        } else {
            cfg.warnings.push_back("hybrid_layer_pattern has " + std::to_string(pattern->size()) + " entries for " +
                                   std::to_string(L) + " layers; ignored");
        }
    }
}

} // namespace

ModelConfig parseModelConfig(std::string_view file, std::string_view text)
{
    std::size_t nonFinite = 0;
    const std::optional<std::string> guarded = guardJsonText(file, text, &nonFinite);
    const std::string_view source = guarded ? std::string_view(*guarded) : text;
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(source.begin(), source.end());
    } catch (const nlohmann::json::parse_error &e) {
        // nlohmann's text without its "[json.exception.parse_error.101] " tag.
        std::string what = e.what();
        if (const auto tag = what.find("] "); what.starts_with("[json.exception") && tag != std::string::npos)
            what.erase(0, tag + 2);
        throw AtlasError(ErrorKind::Invalid, std::string(file) + ": not valid JSON: " + what);
    } catch (const nlohmann::json::exception &e) {
        throw AtlasError(ErrorKind::Invalid, std::string(file) + ": not valid JSON");
    }
    if (!doc.is_object()) throw AtlasError(ErrorKind::Invalid, std::string(file) + ": not a JSON object");
    nlohmann::json raw = doc;
    // Multimodal wrappers nest the language model's keys under text_config: what the top level does
    // not say, text_config does.
    if (auto it = doc.find("text_config"); it != doc.end() && it->is_object())
        for (const auto &[key, value] : it->items())
            if (!doc.contains(key)) doc[key] = value;

    ModelConfig cfg;
    cfg.raw = std::move(raw);
    if (nonFinite)
        cfg.warnings.push_back(std::to_string(nonFinite) +
                               " NaN or Infinity value(s), which Python's json writes and reads; read as null");
    if (auto it = doc.find("model_type"); it != doc.end() && it->is_string())
        cfg.modelType = it->get<std::string>();
    for (auto [key, out] :
         {std::pair{"moe_router_dtype", &cfg.moeRouterDtype}, std::pair{"topk_method", &cfg.topkMethod},
          std::pair{"scoring_func", &cfg.scoringFunc}}) {
        if (auto it = doc.find(key); it != doc.end() && !it->is_null()) {
            if (it->is_string() && it->get_ref<const std::string &>().size() <= 64)
                *out = it->get<std::string>();
            else
                cfg.warnings.push_back(std::string(key) + " is not a short string; ignored");
        }
    }
    // Kimi names its router function moe_router_activation_func, Inkling gate_activation.
    for (const char *key : {"moe_router_activation_func", "gate_activation"})
        if (auto it = doc.find(key);
            cfg.scoringFunc.empty() && it != doc.end() && it->is_string() && it->get_ref<const std::string &>().size() <= 64)
            cfg.scoringFunc = it->get<std::string>();
    if (auto it = doc.find("architectures"); it != doc.end() && it->is_array())
        for (const auto &a : *it)
            if (a.is_string()) cfg.architectures.push_back(a.get<std::string>());
    readInt(doc, "num_hidden_layers", cfg.numHiddenLayers, cfg, {1, kMaxConfigLayers});
    readInt(doc, "hidden_size", cfg.hiddenSize, cfg, {1, kMaxConfigDim});
    readInt(doc, "n_routed_experts", cfg.nRoutedExperts, cfg, {1, kMaxConfigExperts});
    if (!cfg.nRoutedExperts) readInt(doc, "num_experts", cfg.nRoutedExperts, cfg, {1, kMaxConfigExperts});
    if (!cfg.nRoutedExperts)
        readInt(doc, "num_local_experts", cfg.nRoutedExperts, cfg, {1, kMaxConfigExperts});
    readInt(doc, "num_experts_per_tok", cfg.numExpertsPerTok, cfg, {1, kMaxConfigExperts});
    if (!cfg.numExpertsPerTok)
        readInt(doc, "experts_per_token", cfg.numExpertsPerTok, cfg, {1, kMaxConfigExperts});
    if (!cfg.numExpertsPerTok) // Kimi
        readInt(doc, "num_experts_per_token", cfg.numExpertsPerTok, cfg, {1, kMaxConfigExperts});
    readInt(doc, "n_shared_experts", cfg.nSharedExperts, cfg, {0, kMaxConfigExperts});
    if (!cfg.nSharedExperts) readInt(doc, "num_shared_experts", cfg.nSharedExperts, cfg, {0, kMaxConfigExperts});
    readInt(doc, "first_k_dense_replace", cfg.firstKDenseReplace, cfg, {0, kMaxConfigLayers});
    readInt(doc, "n_group", cfg.nGroup, cfg, {1, kMaxConfigExperts});
    readInt(doc, "topk_group", cfg.topkGroup, cfg, {1, kMaxConfigExperts});
    readInt(doc, "kv_lora_rank", cfg.kvLoraRank, cfg, {1, kMaxConfigDim});
    readInt(doc, "num_attention_heads", cfg.numAttentionHeads, cfg, {1, kMaxConfigExperts});
    readInt(doc, "num_key_value_heads", cfg.numKeyValueHeads, cfg, {1, kMaxConfigExperts});
    readInt(doc, "head_dim", cfg.headDim, cfg, {1, kMaxConfigDim});
    readInt(doc, "v_head_dim", cfg.vHeadDim, cfg, {1, kMaxConfigDim});
    readInt(doc, "swa_num_key_value_heads", cfg.swaNumKeyValueHeads, cfg, {1, kMaxConfigExperts});
    readInt(doc, "swa_head_dim", cfg.swaHeadDim, cfg, {1, kMaxConfigDim});
    readInt(doc, "swa_v_head_dim", cfg.swaVHeadDim, cfg, {1, kMaxConfigDim});
    readInt(doc, "sliding_window", cfg.slidingWindow, cfg, {1, kMaxConfigPositions});
    if (!cfg.slidingWindow) readInt(doc, "sliding_window_size", cfg.slidingWindow, cfg, {1, kMaxConfigPositions});
    if (auto it = doc.find("mla_use_nope"); it != doc.end() && it->is_boolean()) cfg.mlaUseNope = it->get<bool>();
    readInt(doc, "linear_num_key_heads", cfg.linearNumKeyHeads, cfg, {1, kMaxConfigExperts});
    readInt(doc, "linear_num_value_heads", cfg.linearNumValueHeads, cfg, {1, kMaxConfigExperts});
    readInt(doc, "linear_key_head_dim", cfg.linearKeyHeadDim, cfg, {1, kMaxConfigDim});
    readInt(doc, "linear_value_head_dim", cfg.linearValueHeadDim, cfg, {1, kMaxConfigDim});
    readInt(doc, "linear_conv_kernel_dim", cfg.linearConvKernelDim, cfg, {1, 1024});
    readInt(doc, "decoder_sparse_step", cfg.decoderSparseStep, cfg, {1, kMaxConfigLayers});
    readLayerList(doc, "mlp_layer_types", cfg.mlpLayerTypes);
    if (auto it = doc.find("mlp_only_layers");
        it != doc.end() && it->is_array() && it->size() <= static_cast<std::size_t>(kMaxConfigLayers))
        for (const auto &v : *it)
            if (v.is_number_integer()) cfg.mlpOnlyLayers.push_back(v.get<std::int64_t>());
    if (auto it = doc.find("use_sliding_window"); it != doc.end() && it->is_boolean())
        cfg.useSlidingWindow = it->get<bool>();
    readLayerList(doc, "layer_types", cfg.layerTypes);
    readInt(doc, "qk_rope_head_dim", cfg.qkRopeHeadDim, cfg, {0, kMaxConfigDim});
    readInt(doc, "max_position_embeddings", cfg.maxPositionEmbeddings, cfg, {1, kMaxConfigPositions});
    // The MTP layers a config declares, by whichever key its family uses.
    // MiniMax-M3 writes both num_mtp_modules (7) and num_nextn_predict_layers (1): the larger is said.
    for (const char *key : {"num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules"}) {
        std::optional<std::int64_t> n;
        readInt(doc, key, n, cfg, {0, kMaxConfigMtpLayers});
        if (n && (!cfg.numNextnPredictLayers || *n > *cfg.numNextnPredictLayers)) {
            cfg.numNextnPredictLayers = n;
            cfg.mtpCountKey = key;
        }
    }
    readInt(doc, "index_topk", cfg.indexTopk, cfg, {1, kMaxConfigPositions});
    readInt(doc, "index_head_dim", cfg.indexHeadDim, cfg, {1, kMaxConfigDim});
    readInt(doc, "index_topk_freq", cfg.indexTopkFreq, cfg, {1, kMaxConfigLayers});
    readInt(doc, "index_skip_topk_offset", cfg.indexSkipTopkOffset, cfg, {0, kMaxConfigLayers});
    if (auto it = doc.find("norm_topk_prob"); it != doc.end() && it->is_boolean())
        cfg.normTopkProb = it->get<bool>();
    if (auto it = doc.find("routed_scaling_factor"); it != doc.end() && !it->is_null()) {
        const double v = it->is_number() ? it->get<double>() : NAN;
        if (std::isfinite(v) && v > 0 && v <= 1e6)
            cfg.routedScalingFactor = v;
        else
            cfg.warnings.push_back("routed_scaling_factor is not a positive number up to 1e6; ignored");
    }
    if (auto it = doc.find("indexer_types"); it != doc.end() && !it->is_null()) {
        bool ok = it->is_array();
        std::vector<std::string> types;
        if (ok)
            for (const auto &t : *it) {
                if (!t.is_string() || (t != "full" && t != "shared")) {
                    ok = false;
                    break;
                }
                types.push_back(t.get<std::string>());
            }
        if (ok)
            cfg.indexerTypes = std::move(types);
        else
            cfg.warnings.push_back("indexer_types is not a list of \"full\"/\"shared\"; ignored");
    }
    if (auto it = doc.find("index_topk_pattern"); it != doc.end() && !it->is_null()) {
        if (it->is_string() &&
            it->get_ref<const std::string &>().size() <= static_cast<std::size_t>(kMaxConfigLayers))
            cfg.indexTopkPattern = it->get<std::string>();
        else
            cfg.warnings.push_back("index_topk_pattern is not a string of up to " +
                                   std::to_string(kMaxConfigLayers) + " letters; ignored");
    }
    readInt(doc, "index_kpool", cfg.indexKpool, cfg, {1, 1 << 16});
    readInt(doc, "mamba_num_heads", cfg.mambaNumHeads, cfg, {1, kMaxConfigExperts});
    readInt(doc, "mamba_head_dim", cfg.mambaHeadDim, cfg, {1, kMaxConfigDim});
    readInt(doc, "ssm_state_size", cfg.ssmStateSize, cfg, {1, kMaxConfigDim});
    readInt(doc, "n_groups", cfg.mambaGroups, cfg, {1, kMaxConfigExperts});
    readInt(doc, "conv_kernel", cfg.mambaConvKernel, cfg, {1, 1024});
    if (auto it = doc.find("mamba_ssm_cache_dtype"); it != doc.end() && it->is_string() &&
                                                     it->get_ref<const std::string &>().size() <= 32)
        cfg.mambaSsmCacheDtype = it->get<std::string>();
    // Rows a token reads from a host-resident n-gram memory: Qwen3.8-Flash-Next's n-gram embedding hashes
    // the last 2..ngram_size tokens, heads_per_ngram rows each (transformers modeling_qwen4_exp.py
    // Qwen4ExpTextNGramEmbedding.forward: (ngram_size - 1) x heads_per_ngram rows, concatenated).
    {
        std::optional<std::int64_t> ngram, heads;
        readInt(doc, "ngram_size", ngram, cfg, {2, 64});
        readInt(doc, "heads_per_ngram", heads, cfg, {1, 4096});
        if (ngram && heads) {
            cfg.hostRowsPerToken = (*ngram - 1) * *heads;
            cfg.hostRowsFrom = "(ngram_size " + std::to_string(*ngram) + " - 1) x heads_per_ngram " +
                               std::to_string(*heads);
        }
        // DeepSeek-V4.1's Engram: one row per n-gram order 2..engram_max_ngram_size and head (fastllm
        // deepseekv41.cpp V41ComputeEngramHashes: cols = (maxNgram - 1) * heads).
        std::optional<std::int64_t> maxNgram, engramHeads;
        readInt(doc, "engram_max_ngram_size", maxNgram, cfg, {2, 64});
        readInt(doc, "engram_n_heads", engramHeads, cfg, {1, 4096});
        if (!cfg.hostRowsPerToken && maxNgram && engramHeads) {
            cfg.hostRowsPerToken = (*maxNgram - 1) * *engramHeads;
            cfg.hostRowsFrom = "(engram_max_ngram_size " + std::to_string(*maxNgram) + " - 1) x engram_n_heads " +
                               std::to_string(*engramHeads);
        }
    }
    if (auto it = doc.find("use_sconv"); it != doc.end() && it->is_boolean() && it->get<bool>()) {
        readInt(doc, "sconv_kernel_size", cfg.shortConvKernel, cfg, {2, 1024});
        if (!cfg.shortConvKernel) readInt(doc, "conv_kernel_size", cfg.shortConvKernel, cfg, {2, 1024});
    }
    scheduleFromFamilyKeys(doc, cfg);
    // DeepSeek-V4: the first num_hash_layers layers choose experts by token id (mlp_layer_types hash_moe).
    readInt(doc, "num_hash_layers", cfg.numHashLayers, cfg, {0, kMaxConfigLayers});
    if (cfg.mlpLayerTypes.empty() && cfg.numHashLayers && cfg.numHiddenLayers && cfg.nRoutedExperts &&
        !cfg.firstKDenseReplace) {
        for (std::int64_t i = 0; i < *cfg.numHiddenLayers; ++i)
            cfg.mlpLayerTypes.push_back(i < *cfg.numHashLayers ? "hash_moe" : "moe");
    }
    if (const auto hashed = std::count(cfg.mlpLayerTypes.begin(), cfg.mlpLayerTypes.end(), "hash_moe");
        !cfg.numHashLayers && hashed > 0)
        cfg.numHashLayers = hashed;
    if (auto it = doc.find("quantization_config"); it != doc.end() && it->is_object())
        readQuantization(*it, cfg);
    // DeepSeek declares its FP4 experts apart: expert_dtype at the top (V4's reference config) or inside
    // quantization_config (V4.1).
    auto expertDtype = [&](const nlohmann::json &obj, const char *from) {
        if (auto it = obj.find("expert_dtype"); cfg.quantization.expertFormat.empty() && it != obj.end() &&
                                                it->is_string() && it->get_ref<const std::string &>().size() <= 32) {
            cfg.quantization.expertFormat = it->get<std::string>();
            cfg.quantization.expertFormatFrom = from;
        }
    };
    expertDtype(doc, "expert_dtype");
    if (auto q = doc.find("quantization_config"); q != doc.end() && q->is_object())
        expertDtype(*q, "quantization_config.expert_dtype");
    // MLX: "quantization": {"group_size": 64, "bits": 4, "<module>": {"bits": 8, ...} or false}.
    if (auto it = doc.find("quantization"); it != doc.end() && it->is_object()) {
        auto &q = cfg.quantization;
        auto bitsOf = [](const nlohmann::json &o) {
            auto b = o.find("bits");
            if (b == o.end() || !b->is_number_integer()) return 0;
            // mlx.core.quantize packs 2, 3, 4, 5, 6 or 8 bits into U32 words (mlx-community publishes 3- and
            // 6-bit checkpoints): a weight of n words holds n x 32 / bits values.
            const auto v = b->get<std::int64_t>();
            return v >= 1 && v <= 8 ? static_cast<int>(v) : -1;
        };
        q.mlxBits = bitsOf(*it);
        if (q.mlxBits < 0) {
            cfg.warnings.push_back("quantization.bits is not 1 to 8; MLX weights are counted as stored");
            q.mlxBits = 0;
        }
        if (auto g = it->find("group_size"); g != it->end() && g->is_number_integer())
            q.mlxGroupSize = static_cast<int>(std::clamp<std::int64_t>(g->get<std::int64_t>(), 0, 1 << 20));
        for (const auto &[module, v] : it->items()) {
            if (q.mlxModuleBits.size() >= 100000) break;
            if (v.is_boolean() && !v.get<bool>()) q.mlxModuleBits[module] = 0;
            else if (v.is_object() && bitsOf(v) > 0) q.mlxModuleBits[module] = bitsOf(v);
            else if (v.is_object() && bitsOf(v) < 0 && cfg.warnings.size() < 64)
                cfg.warnings.push_back("quantization." + printableLine(module.substr(0, 120)) +
                                       ".bits is not 1 to 8; the module is counted at the config's bits");
        }
        if (q.mlxBits && q.method.empty()) q.method = "mlx";
    }
    if (auto it = doc.find("ckpt_atlas_synthetic"); it != doc.end() && it->is_boolean())
        cfg.synthetic = it->get<bool>();
    return cfg;
}

std::optional<std::string> readHfQuantConfig(std::string_view json, ModelConfig &cfg)
{
    // Untrusted as config.json is: its depth is bounded before a DOM is built (throws, naming the file).
    std::size_t nonFinite = 0;
    const std::optional<std::string> rewritten = guardJsonText("hf_quant_config.json", json, &nonFinite);
    if (rewritten) json = *rewritten;
    nlohmann::json doc = nlohmann::json::parse(json.begin(), json.end(), nullptr, false);
    auto q = doc.is_object() ? doc.find("quantization") : doc.end();
    if (!doc.is_object() || q == doc.end() || !q->is_object())
        return std::string("hf_quant_config.json: not ModelOpt's (no \"quantization\" object); ignored");
    auto text = [&](const char *key) {
        auto it = q->find(key);
        return it != q->end() && it->is_string() && it->get_ref<const std::string &>().size() <= 64 ? it->get<std::string>()
                                                                                                    : std::string();
    };
    QuantizationConfig &out = cfg.quantization;
    out.modelOptAlgo = text("quant_algo");
    out.modelOptKvCacheAlgo = text("kv_cache_quant_algo");
    if (auto g = q->find("group_size"); g != q->end() && g->is_number_integer())
        out.modelOptGroupSize = static_cast<int>(std::clamp<std::int64_t>(g->get<std::int64_t>(), 0, 1 << 20));
    // The experts' algorithm: moe_quant_algo (sglang #25820: DeepSeek-V4-NVFP4 declares fp8 in config.json),
    // else that of the first quantized layer naming experts (MIXED_PRECISION), else the whole file's.
    std::string experts = text("moe_quant_algo");
    if (auto layers = q->find("quantized_layers"); experts.empty() && layers != q->end() && layers->is_object())
        for (const auto &[name, v] : layers->items())
            if (name.find("experts") != std::string::npos && v.is_object())
                if (auto a = v.find("quant_algo"); a != v.end() && a->is_string() && a->get_ref<const std::string &>().size() <= 64) {
                    experts = a->get<std::string>();
                    break;
                }
    if (experts.empty() && out.modelOptAlgo != "MIXED_PRECISION") experts = out.modelOptAlgo;
    if (!experts.empty()) {
        out.expertFormat = experts;
        out.expertFormatFrom = "hf_quant_config.json";
    }
    if (out.method.empty()) out.method = "modelopt";
    return std::nullopt;
}

} // namespace atlas
