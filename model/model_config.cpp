#include "model_config.h"

#include "errors.h"

namespace atlas {

namespace {

void readInt(const nlohmann::json &doc, const char *key, std::optional<std::int64_t> &out, ModelConfig &cfg)
{
    auto it = doc.find(key);
    if (it == doc.end() || it->is_null()) return;
    if (it->is_number_integer()) {
        out = it->get<std::int64_t>();
        if (*out < 0) {
            cfg.warnings.push_back(std::string(key) + " is negative; ignored");
            out.reset();
        }
    } else {
        cfg.warnings.push_back(std::string(key) + " is not an integer; ignored");
    }
}

} // namespace

ModelConfig parseModelConfig(std::string_view file, std::string_view text)
{
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception &e) {
        throw AtlasError(ErrorKind::Invalid, std::string(file) + ": not valid JSON: " + e.what());
    }
    if (!doc.is_object()) throw AtlasError(ErrorKind::Invalid, std::string(file) + ": not a JSON object");

    ModelConfig cfg;
    if (auto it = doc.find("model_type"); it != doc.end() && it->is_string())
        cfg.modelType = it->get<std::string>();
    if (auto it = doc.find("architectures"); it != doc.end() && it->is_array())
        for (const auto &a : *it)
            if (a.is_string()) cfg.architectures.push_back(a.get<std::string>());
    readInt(doc, "num_hidden_layers", cfg.numHiddenLayers, cfg);
    readInt(doc, "hidden_size", cfg.hiddenSize, cfg);
    readInt(doc, "n_routed_experts", cfg.nRoutedExperts, cfg);
    if (!cfg.nRoutedExperts) readInt(doc, "num_experts", cfg.nRoutedExperts, cfg);
    readInt(doc, "num_experts_per_tok", cfg.numExpertsPerTok, cfg);
    readInt(doc, "n_shared_experts", cfg.nSharedExperts, cfg);
    readInt(doc, "first_k_dense_replace", cfg.firstKDenseReplace, cfg);
    readInt(doc, "n_group", cfg.nGroup, cfg);
    readInt(doc, "topk_group", cfg.topkGroup, cfg);
    readInt(doc, "kv_lora_rank", cfg.kvLoraRank, cfg);
    readInt(doc, "qk_rope_head_dim", cfg.qkRopeHeadDim, cfg);
    readInt(doc, "max_position_embeddings", cfg.maxPositionEmbeddings, cfg);
    readInt(doc, "num_nextn_predict_layers", cfg.numNextnPredictLayers, cfg);
    readInt(doc, "index_topk", cfg.indexTopk, cfg);
    readInt(doc, "index_head_dim", cfg.indexHeadDim, cfg);
    readInt(doc, "index_topk_freq", cfg.indexTopkFreq, cfg);
    readInt(doc, "index_skip_topk_offset", cfg.indexSkipTopkOffset, cfg);
    if (auto it = doc.find("norm_topk_prob"); it != doc.end() && it->is_boolean())
        cfg.normTopkProb = it->get<bool>();
    if (auto it = doc.find("routed_scaling_factor"); it != doc.end() && it->is_number())
        cfg.routedScalingFactor = it->get<double>();
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
    if (auto it = doc.find("ckpt_atlas_synthetic"); it != doc.end() && it->is_boolean())
        cfg.synthetic = it->get<bool>();
    return cfg;
}

} // namespace atlas
