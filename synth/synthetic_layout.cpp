#include "synthetic_layout.h"

#include "analysis.h"
#include "bf16.h"
#include "bias_audit.h"
#include "roles.h"
#include "errors.h"
#include "splitmix64.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <unistd.h>

namespace atlas::synth {

static_assert(std::endian::native == std::endian::little,
              "the writer stores little-endian values as they are");

namespace {

std::uint64_t ceilDiv(std::uint64_t a, std::uint64_t b)
{
    return (a + b - 1) / b;
}

class TensorList
{
public:
    explicit TensorList(const LayoutSpec &spec) : m_spec(spec) {}

    void add(std::string name, Dtype dtype, std::vector<std::uint64_t> shape)
    {
        std::uint64_t numel = 1;
        for (auto d : shape)
            numel *= d;
        const std::uint64_t bytes = numel * dtypeBits(dtype) / 8;
        m_out.push_back({std::move(name), dtype, std::move(shape), bytes});
    }
    // A linear layer in the layout's packing (quantized layers only), or BF16.
    void linear(const std::string &module, std::int64_t rows, std::int64_t cols, bool quantized = true)
    {
        const auto r = static_cast<std::uint64_t>(rows), c = static_cast<std::uint64_t>(cols);
        switch (quantized ? m_spec.packing : Packing::Bf16) {
        case Packing::Bf16:
            add(module + ".weight", Dtype::BF16, {r, c});
            break;
        case Packing::Fp8Block:
            add(module + ".weight", Dtype::F8_E4M3, {r, c});
            add(module + ".weight_scale_inv", Dtype::F32, {ceilDiv(r, 128), ceilDiv(c, 128)});
            break;
        case Packing::Nvfp4:
            add(module + ".weight", Dtype::U8, {r, ceilDiv(c, 2)});
            add(module + ".weight_scale", Dtype::F8_E4M3, {r, ceilDiv(c, 16)});
            add(module + ".weight_scale_2", Dtype::F32, {});
            break;
        case Packing::Int4:
            add(module + ".weight_packed", Dtype::I32, {r, ceilDiv(c, 8)});
            add(module + ".weight_scale", Dtype::BF16, {r, ceilDiv(c, 64)});
            add(module + ".weight_shape", Dtype::I64, {2});
            break;
        case Packing::Awq:
            add(module + ".qweight", Dtype::I32, {c, ceilDiv(r, 8)});
            add(module + ".qzeros", Dtype::I32, {ceilDiv(c, 128), ceilDiv(r, 8)});
            add(module + ".scales", Dtype::BF16, {ceilDiv(c, 128), r});
            break;
        }
    }
    void norm(const std::string &name, std::int64_t width)
    {
        add(name, Dtype::BF16, {static_cast<std::uint64_t>(width)});
    }
    std::vector<SynthTensor> take() { return std::move(m_out); }

private:
    const LayoutSpec &m_spec;
    std::vector<SynthTensor> m_out;
};

bool layerOwnsIndexer(const LayoutSpec &s, std::int64_t i)
{
    if (i >= s.layers) return s.indexer != IndexerPolicy::None; // the MTP layer carries its own
    switch (s.indexer) {
    case IndexerPolicy::None:
        return false;
    case IndexerPolicy::EveryLayer:
        return true;
    case IndexerPolicy::IndexerTypes:
    case IndexerPolicy::Formula:
    case IndexerPolicy::Pattern:
        return formulaFull(i, s.indexFreq, s.indexOffset);
    }
    return false;
}

double unit(std::uint64_t &state)
{
    return static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
}

} // namespace

bool formulaFull(std::int64_t layer, std::int64_t freq, std::int64_t offset)
{
    return std::max<std::int64_t>(layer - offset + 1, 0) % freq == 0;
}

std::vector<SynthTensor> layoutTensors(const LayoutSpec &s)
{
    TensorList t(s);
    const auto H = s.hidden;
    t.add("model.embed_tokens.weight", Dtype::BF16,
          {static_cast<std::uint64_t>(s.vocab), static_cast<std::uint64_t>(H)});
    for (std::int64_t i = 0; i < s.layers + s.mtpLayers; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        const bool mtp = i >= s.layers;
        if (mtp) {
            t.linear(p + "eh_proj", H, 2 * H, false);
            t.norm(p + "enorm.weight", H);
            t.norm(p + "hnorm.weight", H);
            t.norm(p + "shared_head.norm.weight", H);
            if (s.mtpEmbedAndHead) {
                t.add(p + "embed_tokens.weight", Dtype::BF16,
                      {static_cast<std::uint64_t>(s.vocab), static_cast<std::uint64_t>(H)});
                t.add(p + "shared_head.head.weight", Dtype::BF16,
                      {static_cast<std::uint64_t>(s.vocab), static_cast<std::uint64_t>(H)});
            }
        }
        t.norm(p + "input_layernorm.weight", H);
        t.norm(p + "post_attention_layernorm.weight", H);
        const std::string a = p + "self_attn.";
        t.linear(a + "q_a_proj", s.qLoraRank, H);
        t.norm(a + "q_a_layernorm.weight", s.qLoraRank);
        t.linear(a + "q_b_proj", s.heads * (s.nopeDim + s.ropeDim), s.qLoraRank);
        t.linear(a + "kv_a_proj_with_mqa", s.kvLoraRank + s.ropeDim, H);
        t.norm(a + "kv_a_layernorm.weight", s.kvLoraRank);
        t.linear(a + "kv_b_proj", s.heads * (s.nopeDim + s.vDim), s.kvLoraRank);
        t.linear(a + "o_proj", H, s.heads * s.vDim);
        if (layerOwnsIndexer(s, i)) {
            t.linear(a + "indexer.wq_b", s.indexHeads * s.indexHeadDim, s.qLoraRank);
            t.linear(a + "indexer.wk", s.indexHeadDim, H);
            t.linear(a + "indexer.weights_proj", s.indexHeads, H, false);
            t.norm(a + "indexer.k_norm.weight", s.indexHeadDim);
            t.norm(a + "indexer.k_norm.bias", s.indexHeadDim);
        }
        if (i < s.firstDense && !mtp) {
            t.linear(p + "mlp.gate_proj", s.denseInter, H);
            t.linear(p + "mlp.up_proj", s.denseInter, H);
            t.linear(p + "mlp.down_proj", H, s.denseInter);
            continue;
        }
        t.add(p + "mlp.gate.weight", Dtype::BF16,
              {static_cast<std::uint64_t>(s.experts), static_cast<std::uint64_t>(H)});
        if (s.correctionBias)
            t.add(p + "mlp.gate.e_score_correction_bias", Dtype::F32,
                  {static_cast<std::uint64_t>(s.experts)});
        for (std::int64_t e = 0; e < s.experts; ++e) {
            const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
            t.linear(x + "gate_proj", s.moeInter, H);
            t.linear(x + "up_proj", s.moeInter, H);
            t.linear(x + "down_proj", H, s.moeInter);
        }
        if (s.sharedExperts > 0) {
            const std::int64_t w = s.moeInter * s.sharedExperts;
            t.linear(p + "mlp.shared_experts.gate_proj", w, H);
            t.linear(p + "mlp.shared_experts.up_proj", w, H);
            t.linear(p + "mlp.shared_experts.down_proj", H, w);
        }
    }
    t.norm("model.norm.weight", H);
    t.add("lm_head.weight", Dtype::BF16,
          {static_cast<std::uint64_t>(s.vocab), static_cast<std::uint64_t>(H)});
    return t.take();
}

nlohmann::ordered_json layoutConfig(const LayoutSpec &s)
{
    nlohmann::ordered_json c;
    c["ckpt_atlas_synthetic"] = true;
    c["_comment"] = "SYNTHETIC checkpoint written by ckpt-atlas: header-faithful layout, no real weights";
    c["architectures"] = {s.architecture};
    c["model_type"] = s.modelType;
    c["hidden_size"] = s.hidden;
    c["num_hidden_layers"] = s.layers;
    c["num_nextn_predict_layers"] = s.mtpLayers;
    c["num_attention_heads"] = s.heads;
    c["q_lora_rank"] = s.qLoraRank;
    c["kv_lora_rank"] = s.kvLoraRank;
    c["qk_rope_head_dim"] = s.ropeDim;
    c["qk_nope_head_dim"] = s.nopeDim;
    c["v_head_dim"] = s.vDim;
    c["vocab_size"] = s.vocab;
    c["intermediate_size"] = s.denseInter;
    c["moe_intermediate_size"] = s.moeInter;
    c["first_k_dense_replace"] = s.firstDense;
    c["n_routed_experts"] = s.experts;
    c["num_experts_per_tok"] = s.topk;
    c["n_shared_experts"] = s.sharedExperts;
    c["n_group"] = s.nGroup;
    c["topk_group"] = s.topkGroup;
    c["topk_method"] = "noaux_tc";
    c["scoring_func"] = "sigmoid";
    if (!s.moeRouterDtype.empty()) c["moe_router_dtype"] = s.moeRouterDtype;
    c["norm_topk_prob"] = s.normTopkProb;
    c["routed_scaling_factor"] = s.routedScaling;
    c["max_position_embeddings"] = s.maxPosition;
    c["torch_dtype"] = "bfloat16";
    if (s.indexer != IndexerPolicy::None) {
        c["index_n_heads"] = s.indexHeads;
        c["index_head_dim"] = s.indexHeadDim;
        c["index_topk"] = s.indexTopk;
    }
    if (s.indexer == IndexerPolicy::IndexerTypes || s.indexer == IndexerPolicy::Formula) {
        c["index_topk_freq"] = s.indexFreq;
        if (s.writeIndexOffset) c["index_skip_topk_offset"] = s.indexOffset;
    }
    if (s.indexer == IndexerPolicy::Pattern) {
        std::string pattern;
        for (std::int64_t i = 0; i < s.layers; ++i)
            pattern += formulaFull(i, s.indexFreq, s.indexOffset) ? 'F' : 'S';
        c["index_topk_pattern"] = pattern;
    }
    if (s.indexer == IndexerPolicy::IndexerTypes) {
        auto types = nlohmann::ordered_json::array();
        for (std::int64_t i = 0; i < s.layers; ++i)
            types.push_back(formulaFull(i, s.indexFreq, s.indexOffset) ? "full" : "shared");
        c["indexer_types"] = types;
    }
    switch (s.packing) {
    case Packing::Bf16:
        break;
    case Packing::Fp8Block:
        c["quantization_config"] = {{"quant_method", "fp8"},
                                    {"fmt", "e4m3"},
                                    {"activation_scheme", "dynamic"},
                                    {"weight_block_size", {128, 128}}};
        break;
    case Packing::Nvfp4:
        c["quantization_config"] = {{"quant_method", "modelopt"}, {"quant_algo", "NVFP4"}, {"group_size", 16}};
        break;
    case Packing::Int4:
        c["quantization_config"] = {
            {"quant_method", "compressed-tensors"},
            {"format", "pack-quantized"},
            {"config_groups",
             {{"group_0",
               {{"weights",
                 {{"num_bits", 4}, {"group_size", 64}, {"symmetric", true}, {"type", "int"}, {"strategy", "group"}}},
                {"targets", {"Linear"}}}}}},
            {"ignore", {"lm_head"}}};
        break;
    case Packing::Awq:
        c["quantization_config"] = {{"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}, {"zero_point", true}};
        break;
    }
    return c;
}

const char *packingName(Packing p)
{
    switch (p) {
    case Packing::Bf16:
        return "bf16";
    case Packing::Fp8Block:
        return "fp8";
    case Packing::Nvfp4:
        return "nvfp4";
    case Packing::Int4:
        return "int4";
    case Packing::Awq:
        return "awq";
    }
    return "";
}

std::vector<float> syntheticBias(const LayoutSpec &spec, std::int64_t layer)
{
    std::uint64_t state = spec.biasSeed * 1000003ULL + static_cast<std::uint64_t>(layer);
    // Real correction biases sit in narrow bands far from zero (near 7, 8, 34 ...).
    static constexpr double centres[] = {6.94, 8.08, 34.30, 16.25, 3.61, 7.52};
    const double centre = centres[splitmix64(state) % std::size(centres)];
    const double width = 0.20 + 0.45 * unit(state);
    const double step = width / (300.0 + 500.0 * unit(state)); // some values repeat, as they do
    std::vector<float> v(static_cast<std::size_t>(spec.experts));
    for (auto &x : v) {
        const double u = (unit(state) + unit(state) + unit(state)) / 3.0 - 0.5;
        x = static_cast<float>(centre + std::round(u * width / step) * step);
    }
    return v;
}

LayoutSpec glm5Fp8()
{
    LayoutSpec s;
    s.name = "glm5-fp8";
    return s;
}

LayoutSpec deepseekV32()
{
    LayoutSpec s;
    s.name = "deepseek-v3.2";
    s.modelType = "deepseek_v32";
    s.architecture = "DeepseekV32ForCausalLM";
    s.hidden = 7168;
    s.layers = 61;
    s.heads = 128;
    s.qLoraRank = 1536;
    s.nopeDim = 128;
    s.vDim = 128;
    s.vocab = 129280;
    s.denseInter = 18432;
    s.nGroup = 8;
    s.topkGroup = 4;
    s.indexHeads = 64;
    s.indexer = IndexerPolicy::EveryLayer;
    s.maxPosition = 163840;
    s.mtpEmbedAndHead = true;
    s.shards = 163;
    return s;
}

LayoutSpec smallLayout()
{
    LayoutSpec s;
    s.name = "small";
    s.hidden = 256;
    s.layers = 6;
    s.firstDense = 1;
    s.heads = 4;
    s.qLoraRank = 128;
    s.kvLoraRank = 64;
    s.ropeDim = 32;
    s.nopeDim = 32;
    s.vDim = 32;
    s.vocab = 1000;
    s.denseInter = 512;
    s.moeInter = 96;
    s.experts = 24;
    s.topk = 4;
    s.indexHeads = 4;
    s.indexHeadDim = 64;
    s.indexTopk = 256;
    s.indexFreq = 2;
    s.indexOffset = 2;
    s.maxPosition = 8192;
    s.shards = 3;
    return s;
}

WriteResult writeCheckpoint(const LayoutSpec &spec, const std::filesystem::path &dir)
{
    return writeLayout({spec.name, layoutTensors(spec), layoutConfig(spec), spec.shards, spec.experts, spec.biasSeed},
                       dir);
}

std::vector<float> syntheticBias(std::int64_t experts, std::uint64_t seed, std::int64_t layer)
{
    LayoutSpec spec;
    spec.experts = experts;
    spec.biasSeed = seed;
    return syntheticBias(spec, layer);
}

namespace {

// The layer a correction bias belongs to (MTP blocks named mtp.N follow the decoder layers).
int biasLayer(const WrittenLayout &layout, std::string_view name)
{
    if (const auto block = mtpBlockPlace(name))
        return static_cast<int>(layout.config.value("num_hidden_layers", 0)) + block->layer;
    return placeOf(name).layer;
}

} // namespace

WriteResult writeLayout(const WrittenLayout &layout, const std::filesystem::path &dir)
{
    namespace fs = std::filesystem;
    fs::create_directories(dir);
    const std::vector<SynthTensor> &tensors = layout.tensors;
    std::uint64_t total = 0;
    for (const auto &t : tensors)
        total += t.bytes;

    // Split in order into shards of about equal size.
    const int wanted = std::max(1, layout.shards);
    std::vector<int> shardOf(tensors.size());
    std::uint64_t before = 0;
    int used = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        int s = static_cast<int>(static_cast<unsigned __int128>(before) * static_cast<unsigned>(wanted) /
                                 (total ? total : 1));
        s = std::min(s, wanted - 1);
        shardOf[i] = s;
        used = std::max(used, s + 1);
        before += tensors[i].bytes;
    }
    // Renumber so that shards with no tensor leave no gap in the names.
    std::vector<int> renumber(static_cast<std::size_t>(used), -1);
    int count = 0;
    for (int s : shardOf)
        if (renumber[static_cast<std::size_t>(s)] < 0) renumber[static_cast<std::size_t>(s)] = count++;
    auto fileName = [&](int s) {
        char buf[64];
        if (count == 1) return std::string("model.safetensors");
        std::snprintf(buf, sizeof buf, "model-%05d-of-%05d.safetensors", s + 1, count);
        return std::string(buf);
    };

    WriteResult result;
    result.shards = count;
    nlohmann::json weightMap = nlohmann::json::object(); // sorted, as real index files are
    std::size_t i = 0;
    for (int s = 0; s < count; ++s) {
        std::string header = "{\"__metadata__\":{\"format\":\"pt\",\"ckpt_atlas\":\"synthetic\"}";
        std::uint64_t offset = 0;
        struct BiasWrite
        {
            std::uint64_t offset;
            std::vector<float> values;
            bool bf16 = false;
        };
        std::vector<BiasWrite> biases;
        const std::string file = fileName(s);
        for (; i < tensors.size() && renumber[static_cast<std::size_t>(shardOf[i])] == s; ++i) {
            const auto &t = tensors[i];
            header +=
                ",\"" + t.name + "\":{\"dtype\":\"" + std::string(dtypeName(t.dtype)) + "\",\"shape\":[";
            for (std::size_t d = 0; d < t.shape.size(); ++d)
                header += (d ? "," : "") + std::to_string(t.shape[d]);
            header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
                      std::to_string(offset + t.bytes) + "]}";
            // Correction biases hold values (F32, or BF16 as Kimi-Linear stores them); the rest are holes.
            if (const int layer = biasLayer(layout, t.name);
                isCorrectionBias(t.name) && layer >= 0 && (t.dtype == Dtype::F32 || t.dtype == Dtype::BF16) &&
                t.shape.size() == 1 && static_cast<std::int64_t>(t.shape[0]) == layout.experts)
                biases.push_back({offset, syntheticBias(layout.experts, layout.biasSeed, layer),
                                  t.dtype == Dtype::BF16});
            weightMap[t.name] = file;
            offset += t.bytes;
            ++result.tensors;
        }
        header += "}";
        while ((8 + header.size()) % 8 != 0)
            header += ' ';

        const fs::path path = dir / file;
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0)
            throw AtlasError(ErrorKind::Source, path.string() + ": cannot create: " + std::strerror(errno));
        std::string prefix(8, '\0');
        std::uint64_t n = header.size();
        std::memcpy(prefix.data(), &n, 8);
        prefix += header;
        const std::uint64_t dataStart = prefix.size();
        bool ok = ::write(fd, prefix.data(), prefix.size()) == static_cast<ssize_t>(prefix.size()) &&
                  ::ftruncate(fd, static_cast<off_t>(dataStart + offset)) == 0;
        for (const auto &b : biases) {
            std::vector<std::uint16_t> half;
            const void *data = b.values.data();
            auto len = static_cast<ssize_t>(b.values.size() * sizeof(float));
            if (b.bf16) {
                for (float v : b.values)
                    half.push_back(bf16Bits(v));
                data = half.data();
                len = static_cast<ssize_t>(half.size() * sizeof(std::uint16_t));
            }
            ok = ok && ::pwrite(fd, data, static_cast<std::size_t>(len), static_cast<off_t>(dataStart + b.offset)) == len;
        }
        ::close(fd);
        if (!ok)
            throw AtlasError(ErrorKind::Source, path.string() + ": write failed: " + std::strerror(errno));
        result.tensorBytes += offset;
    }

    nlohmann::json index;
    index["metadata"] = {{"total_size", result.tensorBytes}, {"ckpt_atlas", "synthetic"}};
    index["weight_map"] = weightMap;
    if (count > 1) {
        std::ofstream(dir / "model.safetensors.index.json") << index.dump(2) << "\n";
    }
    std::ofstream(dir / "config.json") << layout.config.dump(2) << "\n";
    std::ofstream(dir / "SYNTHETIC.txt")
        << "This checkpoint was written by ckpt-atlas (layout '" << layout.name
        << "'). Its headers follow a real architecture; its tensor data are sparse holes, except the\n"
           "router correction biases, which hold synthetic values. It contains no real weights.\n";
    return result;
}

namespace {

WrittenLayout written(const LayoutSpec &spec)
{
    return {spec.name, layoutTensors(spec), layoutConfig(spec), spec.shards, spec.experts, spec.biasSeed};
}

} // namespace

std::optional<WrittenLayout> layoutNamed(std::string_view name)
{
    if (name == "deepseek-v4-flash") return deepseekV4Flash();
    if (name == "deepseek-v4-pro") return deepseekV4Pro();
    if (name == "glm-5.3-flash") return glm53Flash();
    if (name == "kimi-linear") return kimiLinear48B();
    if (name == "glm-5.2-fp8") return written(glm5Fp8());
    if (name == "deepseek-v3.2") return written(deepseekV32());
    if (name == "small") return written(smallLayout());
    if (name == "deepseek-v4.1-flash") return deepseekV41Flash();
    if (name == "qwen3.8-flash-next") return qwen38FlashNext();
    if (name == "hy4-preview") return hy4Preview();
    if (name == "inkling") return inkling();
    if (name == "minimax-m3") return minimaxM3();
    if (name == "kimi-k3") return kimiK3();
    return std::nullopt;
}

std::vector<std::string> layoutNames()
{
    return {"glm-5.2-fp8",         "deepseek-v3.2",      "deepseek-v4-flash", "deepseek-v4-pro", "glm-5.3-flash",
            "kimi-linear",         "deepseek-v4.1-flash", "qwen3.8-flash-next", "hy4-preview",   "inkling",
            "minimax-m3",          "kimi-k3",             "small"};
}

} // namespace atlas::synth
