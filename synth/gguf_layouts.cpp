// GGUF copies of the DeepSeek-V3 / GLM-MoE-DSA layouts, as llama.cpp's converter and llama-quantize write
// them (domain.md section 20): names from src/llama-arch.cpp LLM_TENSOR_NAMES, shapes as the converter's
// DeepseekV2Model / GlmMoeDsaModel modify_tensors leaves them, types per tensor from a recipe with
// llama-quantize's rules (1-D tensors, norms and ffn_gate_inp stay F32; a row that does not fill a 256-value
// block falls back as llama_tensor_get_type's convert_incompatible_tensor does). Data regions are sparse holes;
// the correction biases hold their values.
#include "gguf_layouts.h"

#include "bf16.h"
#include "errors.h"
#include "gguf.h"

#include <bit>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace atlas::synth {

namespace {

bool ownsIndexer(const LayoutSpec &s, std::int64_t i)
{
    if (i >= s.layers) return s.indexer != IndexerPolicy::None;
    switch (s.indexer) {
    case IndexerPolicy::None: return false;
    case IndexerPolicy::EveryLayer: return true;
    default: return formulaFull(i, s.indexFreq, s.indexOffset);
    }
}

// llama-quant.cpp tensor_type_fallback: a k- or i-quant needs rows of 256 values.
Dtype fitted(Dtype want, std::uint64_t rowValues)
{
    if (rowValues % dtypeBlock(want).elements == 0) return want;
    Dtype fallback = Dtype::F16;
    switch (want) {
    case Dtype::Q4_K: fallback = Dtype::Q5_0; break;
    case Dtype::Q5_K: fallback = Dtype::Q5_1; break;
    case Dtype::Q6_K: fallback = Dtype::Q8_0; break;
    default:
        if (dtypeBlock(want).elements == 256) fallback = Dtype::IQ4_NL;
        break;
    }
    return rowValues % dtypeBlock(fallback).elements == 0 ? fallback : Dtype::F16;
}

class GgufList
{
public:
    GgufList(const GgufRecipe &r) : m_r(r) {}
    // A weight stored as `want`, its row-major shape (the last dimension the row, GGUF's ne[0]).
    void weight(std::string name, Dtype want, std::vector<std::uint64_t> shape, int layer = -1)
    {
        const std::uint64_t row = shape.empty() ? 1 : shape.back();
        add(std::move(name), fitted(want, row), std::move(shape), layer);
    }
    void f32(std::string name, std::vector<std::uint64_t> shape, int layer = -1)
    {
        add(std::move(name), Dtype::F32, std::move(shape), layer);
    }
    void add(std::string name, Dtype dtype, std::vector<std::uint64_t> shape, int layer)
    {
        std::uint64_t numel = 1;
        for (auto d : shape)
            numel *= d;
        const DtypeBlock b = dtypeBlock(dtype);
        m_out.push_back({std::move(name), dtype, std::move(shape), numel / b.elements * b.bytes, layer});
    }
    std::vector<GgufTensor> take() { return std::move(m_out); }
    const GgufRecipe &recipe() const { return m_r; }

private:
    const GgufRecipe &m_r;
    std::vector<GgufTensor> m_out;
};

// Little-endian GGUF header bytes.
class HeaderWriter
{
public:
    void u8(std::uint8_t v) { raw(&v, 1); }
    void u16(std::uint16_t v) { raw(&v, 2); }
    void u32(std::uint32_t v) { raw(&v, 4); }
    void i32(std::int32_t v) { raw(&v, 4); }
    void u64(std::uint64_t v) { raw(&v, 8); }
    void f32(float v) { raw(&v, 4); }
    void str(std::string_view s)
    {
        u64(s.size());
        m_bytes.append(s);
    }
    void key(std::string_view k, GgufType t)
    {
        str(k);
        u32(static_cast<std::uint32_t>(t));
        ++m_keys;
    }
    void kvU32(std::string_view k, std::uint32_t v) { key(k, GgufType::U32), u32(v); }
    void kvF32(std::string_view k, float v) { key(k, GgufType::F32), f32(v); }
    void kvBool(std::string_view k, bool v) { key(k, GgufType::Bool), u8(v ? 1 : 0); }
    void kvStr(std::string_view k, std::string_view v) { key(k, GgufType::String), str(v); }
    std::string &out() { return m_bytes; }
    std::uint64_t keys() const { return m_keys; }

private:
    void raw(const void *p, std::size_t n) { m_bytes.append(static_cast<const char *>(p), n); }
    std::string m_bytes;
    std::uint64_t m_keys = 0;
};

std::string archOf(const LayoutSpec &s)
{
    if (s.modelType == "glm_moe_dsa") return "glm-dsa";
    if (s.modelType == "deepseek_v32") return "deepseek32";
    return "deepseek2";
}

} // namespace

GgufRecipe ggufQ4KM()
{
    GgufRecipe r;
    r.name = "Q4_K_M";
    r.fileType = 15; // LLAMA_FTYPE_MOSTLY_Q4_K_M
    return r;
}

GgufRecipe ggufUdQ2KXL()
{
    GgufRecipe r;
    r.name = "UD-Q2_K_XL";
    r.fileType = 10; // LLAMA_FTYPE_MOSTLY_Q2_K
    r.expertsGateUp = Dtype::Q2_K;
    r.expertsDown = Dtype::Q3_K;
    r.expertsDownMore = Dtype::Q4_K;
    r.shared = Dtype::Q5_K;
    r.attention = Dtype::Q4_K;
    r.attentionOut = Dtype::Q5_K;
    r.dense = Dtype::Q4_K;
    r.embedding = Dtype::Q4_K;
    r.head = Dtype::Q6_K;
    r.indexer = Dtype::Q8_0;
    r.files = 6;
    return r;
}

LayoutSpec deepseekV3()
{
    LayoutSpec s = deepseekV32();
    s.name = "deepseek-v3";
    s.modelType = "deepseek_v3";
    s.architecture = "DeepseekV3ForCausalLM";
    s.indexer = IndexerPolicy::None;
    return s;
}

std::vector<GgufTensor> ggufTensors(const LayoutSpec &s, const GgufRecipe &r)
{
    using U = std::uint64_t;
    GgufList t(r);
    const U H = U(s.hidden), E = U(s.experts), heads = U(s.heads), nope = U(s.nopeDim), rope = U(s.ropeDim),
            v = U(s.vDim), kv = U(s.kvLoraRank), qa = U(s.qLoraRank);
    t.weight("token_embd.weight", r.embedding, {U(s.vocab), H});
    // DeepseekV2Model drops the MTP blocks (skip_mtp); GlmMoeDsaModel and DeepseekV32Model keep them last.
    const bool mtp = r.keepMtp && archOf(s) != "deepseek2";
    const std::int64_t blocks = s.layers + (mtp ? s.mtpLayers : 0);
    for (std::int64_t i = 0; i < blocks; ++i) {
        const std::string b = "blk." + std::to_string(i) + ".";
        const int L = static_cast<int>(i);
        t.f32(b + "attn_norm.weight", {H}, L);
        t.weight(b + "attn_q_a.weight", r.attention, {qa, H}, L);
        t.f32(b + "attn_q_a_norm.weight", {qa}, L);
        t.weight(b + "attn_q_b.weight", r.attention, {heads * (nope + rope), qa}, L);
        t.weight(b + "attn_kv_a_mqa.weight", r.attention, {kv + rope, H}, L);
        t.f32(b + "attn_kv_a_norm.weight", {kv}, L);
        t.weight(b + "attn_k_b.weight", r.attention, {heads, kv, nope}, L);
        t.weight(b + "attn_v_b.weight", r.attention, {heads, v, kv}, L);
        t.weight(b + "attn_output.weight", r.attentionOut, {H, heads * v}, L);
        if (r.keepIndexer && ownsIndexer(s, i)) {
            t.weight(b + "indexer.attn_q_b.weight", r.indexer, {U(s.indexHeads * s.indexHeadDim), qa}, L);
            t.weight(b + "indexer.attn_k.weight", r.indexer, {U(s.indexHeadDim), H}, L);
            t.f32(b + "indexer.k_norm.weight", {U(s.indexHeadDim)}, L);
            t.f32(b + "indexer.k_norm.bias", {U(s.indexHeadDim)}, L);
            t.weight(b + "indexer.proj.weight", Dtype::F16, {U(s.indexHeads), H}, L);
        }
        t.f32(b + "ffn_norm.weight", {H}, L);
        if (i < s.firstDense) {
            t.weight(b + "ffn_gate.weight", r.dense, {U(s.denseInter), H}, L);
            t.weight(b + "ffn_up.weight", r.dense, {U(s.denseInter), H}, L);
            t.weight(b + "ffn_down.weight", r.denseDown, {H, U(s.denseInter)}, L);
        } else {
            const U inter = U(s.moeInter), sh = U(s.moeInter * s.sharedExperts);
            t.f32(b + "ffn_gate_inp.weight", {E, H}, L);
            if (s.correctionBias) t.add(b + "exp_probs_b.bias", r.bias, {E}, L);
            t.weight(b + "ffn_gate_exps.weight", r.expertsGateUp, {E, inter, H}, L);
            t.weight(b + "ffn_up_exps.weight", r.expertsGateUp, {E, inter, H}, L);
            // llama-quant.cpp use_more_bits: the first and last eighth of the layers, and every third between.
            const std::int64_t n = blocks, q = n / 8;
            const bool more = i < q || i >= 7 * n / 8 || (i - q) % 3 == 2;
            t.weight(b + "ffn_down_exps.weight", more ? r.expertsDownMore : r.expertsDown, {E, H, inter}, L);
            if (sh) {
                t.weight(b + "ffn_gate_shexp.weight", r.shared, {sh, H}, L);
                t.weight(b + "ffn_up_shexp.weight", r.shared, {sh, H}, L);
                t.weight(b + "ffn_down_shexp.weight", r.sharedDown, {H, sh}, L);
            }
        }
        if (i >= s.layers) {
            t.weight(b + "nextn.eh_proj.weight", r.attention, {H, 2 * H}, L);
            t.f32(b + "nextn.enorm.weight", {H}, L);
            t.f32(b + "nextn.hnorm.weight", {H}, L);
            t.f32(b + "nextn.shared_head_norm.weight", {H}, L);
            if (s.mtpEmbedAndHead) {
                t.weight(b + "nextn.embed_tokens.weight", r.embedding, {U(s.vocab), H}, L);
                t.weight(b + "nextn.shared_head_head.weight", r.head, {U(s.vocab), H}, L);
            }
        }
    }
    t.f32("output_norm.weight", {H});
    t.weight("output.weight", r.head, {U(s.vocab), H});
    return t.take();
}

GgufWriteResult writeGguf(const LayoutSpec &s, const GgufRecipe &r, const std::filesystem::path &dir,
                          const std::string &stem)
{
    namespace fs = std::filesystem;
    fs::create_directories(dir);
    const std::vector<GgufTensor> tensors = ggufTensors(s, r);
    const std::string arch = archOf(s);
    const bool mtp = r.keepMtp && arch != "deepseek2";
    std::uint64_t total = 0;
    for (const auto &t : tensors)
        total += t.bytes;
    const int files = std::max(1, r.files);
    // In order, into files of about equal size (llama-gguf-split --split-max-size).
    std::vector<int> fileOf(tensors.size());
    std::uint64_t before = 0;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        fileOf[i] = std::min(files - 1, static_cast<int>(static_cast<unsigned __int128>(before) * unsigned(files) / total));
        before += tensors[i].bytes;
    }
    GgufWriteResult result;
    constexpr std::uint64_t kAlign = 32;
    for (int f = 0; f < files; ++f) {
        HeaderWriter kv;
        if (f == 0) {
            const std::string p = arch + ".";
            kv.kvStr("general.architecture", arch);
            kv.kvStr("general.name", s.name);
            kv.kvU32("general.file_type", r.fileType);
            kv.kvU32("general.quantization_version", 2);
            kv.kvBool("ckpt_atlas.synthetic", true);
            kv.kvU32(p + "block_count", static_cast<std::uint32_t>(s.layers + (mtp ? s.mtpLayers : 0)));
            kv.kvU32(p + "context_length", static_cast<std::uint32_t>(s.maxPosition));
            kv.kvU32(p + "embedding_length", static_cast<std::uint32_t>(s.hidden));
            kv.kvU32(p + "feed_forward_length", static_cast<std::uint32_t>(s.denseInter));
            kv.kvU32(p + "attention.head_count", static_cast<std::uint32_t>(s.heads));
            // MLA as MQA (DeepseekV2Model.set_gguf_parameters): one KV head of the cached latent and rope.
            kv.kvU32(p + "attention.head_count_kv", 1);
            kv.kvU32(p + "attention.key_length", static_cast<std::uint32_t>(s.kvLoraRank + s.ropeDim));
            kv.kvU32(p + "attention.value_length", static_cast<std::uint32_t>(s.kvLoraRank));
            kv.kvU32(p + "attention.key_length_mla", static_cast<std::uint32_t>(s.nopeDim + s.ropeDim));
            kv.kvU32(p + "attention.value_length_mla", static_cast<std::uint32_t>(s.vDim));
            kv.kvU32(p + "attention.q_lora_rank", static_cast<std::uint32_t>(s.qLoraRank));
            kv.kvU32(p + "attention.kv_lora_rank", static_cast<std::uint32_t>(s.kvLoraRank));
            kv.kvF32(p + "attention.layer_norm_rms_epsilon", 1e-5f);
            kv.kvU32(p + "rope.dimension_count", static_cast<std::uint32_t>(s.ropeDim));
            kv.kvU32(p + "leading_dense_block_count", static_cast<std::uint32_t>(s.firstDense));
            kv.kvU32(p + "expert_feed_forward_length", static_cast<std::uint32_t>(s.moeInter));
            kv.kvU32(p + "expert_count", static_cast<std::uint32_t>(s.experts));
            kv.kvU32(p + "expert_used_count", static_cast<std::uint32_t>(s.topk));
            kv.kvU32(p + "expert_shared_count", static_cast<std::uint32_t>(s.sharedExperts));
            kv.kvU32(p + "expert_group_count", static_cast<std::uint32_t>(s.nGroup));
            kv.kvU32(p + "expert_group_used_count", static_cast<std::uint32_t>(s.topkGroup));
            kv.kvF32(p + "expert_weights_scale", static_cast<float>(s.routedScaling));
            if (s.normTopkProb) kv.kvBool(p + "expert_weights_norm", true);
            kv.kvU32(p + "expert_gating_func", 2); // sigmoid
            kv.kvU32(p + "vocab_size", static_cast<std::uint32_t>(s.vocab));
            if (mtp) kv.kvU32(p + "nextn_predict_layers", static_cast<std::uint32_t>(s.mtpLayers));
            if (s.indexer != IndexerPolicy::None) {
                kv.kvU32(p + "attention.indexer.head_count", static_cast<std::uint32_t>(s.indexHeads));
                kv.kvU32(p + "attention.indexer.key_length", static_cast<std::uint32_t>(s.indexHeadDim));
                kv.kvU32(p + "attention.indexer.top_k", static_cast<std::uint32_t>(s.indexTopk));
            }
            if (s.indexer == IndexerPolicy::IndexerTypes) {
                kv.key(p + "attention.indexer.types", GgufType::Array);
                kv.u32(static_cast<std::uint32_t>(GgufType::Bool));
                kv.u64(static_cast<std::uint64_t>(s.layers));
                for (std::int64_t i = 0; i < s.layers; ++i)
                    kv.u8(formulaFull(i, s.indexFreq, s.indexOffset) ? 1 : 0);
            }
            // A tokenizer as large as the real one: its strings are read and skipped by the reader.
            kv.kvStr("tokenizer.ggml.model", "gpt2");
            kv.key("tokenizer.ggml.tokens", GgufType::Array);
            kv.u32(static_cast<std::uint32_t>(GgufType::String));
            kv.u64(static_cast<std::uint64_t>(s.vocab));
            for (std::int64_t i = 0; i < s.vocab; ++i)
                kv.str("tok" + std::to_string(i));
            kv.key("tokenizer.ggml.token_type", GgufType::Array);
            kv.u32(static_cast<std::uint32_t>(GgufType::I32));
            kv.u64(static_cast<std::uint64_t>(s.vocab));
            for (std::int64_t i = 0; i < s.vocab; ++i)
                kv.i32(1);
            kv.key("tokenizer.ggml.merges", GgufType::Array);
            kv.u32(static_cast<std::uint32_t>(GgufType::String));
            kv.u64(static_cast<std::uint64_t>(s.vocab / 2));
            for (std::int64_t i = 0; i < s.vocab / 2; ++i)
                kv.str("t" + std::to_string(i) + " k" + std::to_string(i));
        }
        if (files > 1) {
            kv.key("split.no", GgufType::U16), kv.u16(static_cast<std::uint16_t>(f));
            kv.key("split.count", GgufType::U16), kv.u16(static_cast<std::uint16_t>(files));
            kv.key("split.tensors.count", GgufType::I32), kv.i32(static_cast<std::int32_t>(tensors.size()));
        }
        HeaderWriter infos;
        std::uint64_t offset = 0, count = 0;
        struct Bias
        {
            std::uint64_t offset;
            std::vector<float> values;
            Dtype dtype;
        };
        std::vector<Bias> biases;
        for (std::size_t i = 0; i < tensors.size(); ++i) {
            if (fileOf[i] != f) continue;
            const GgufTensor &t = tensors[i];
            infos.str(t.name);
            infos.u32(static_cast<std::uint32_t>(t.shape.size()));
            for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d)
                infos.u64(*d); // ne[0] first: the row
            infos.u32(static_cast<std::uint32_t>(ggmlTypeOf(t.dtype)));
            infos.u64(offset);
            if (t.name.ends_with(".exp_probs_b.bias"))
                biases.push_back({offset, syntheticBias(s, t.layer), t.dtype});
            offset += (t.bytes + kAlign - 1) / kAlign * kAlign;
            ++count;
        }
        HeaderWriter head;
        head.out() = "GGUF";
        head.u32(3);
        head.u64(count);
        head.u64(kv.keys());
        std::string bytes = head.out() + kv.out() + infos.out();
        while (bytes.size() % kAlign)
            bytes.push_back('\0');
        const std::uint64_t dataStart = bytes.size();
        char name[64];
        std::snprintf(name, sizeof name, "-%05d-of-%05d.gguf", f + 1, files);
        const std::string file = files > 1 ? stem + name : stem + ".gguf";
        const fs::path path = dir / file;
        const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) throw AtlasError(ErrorKind::Source, path.string() + ": cannot write");
        bool ok = ::pwrite(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size()) &&
                  ::ftruncate(fd, static_cast<off_t>(dataStart + offset)) == 0;
        for (const auto &b : biases) {
            std::string raw;
            for (float x : b.values) {
                if (b.dtype == Dtype::F32) {
                    raw.append(reinterpret_cast<const char *>(&x), 4);
                } else {
                    const std::uint16_t h = b.dtype == Dtype::BF16 ? bf16Bits(x)
                                                                   : std::bit_cast<std::uint16_t>(static_cast<_Float16>(x));
                    raw.append(reinterpret_cast<const char *>(&h), 2);
                }
            }
            ok = ok && ::pwrite(fd, raw.data(), raw.size(), static_cast<off_t>(dataStart + b.offset)) ==
                           static_cast<ssize_t>(raw.size());
        }
        ::close(fd);
        if (!ok) throw AtlasError(ErrorKind::Source, path.string() + ": write failed");
        result.files.push_back(file);
        result.headerBytes += dataStart;
    }
    result.tensors = tensors.size();
    result.tensorBytes = total;
    return result;
}

} // namespace atlas::synth

namespace atlas::synth {

std::vector<std::string> ggufLayoutNames()
{
    return {"glm-5.2-gguf-q4_k_m", "glm-5.2-gguf-ud-q2_k_xl", "deepseek-v3-gguf-q4_k_m", "deepseek-v3-gguf-ud-q2_k_xl"};
}

std::optional<GgufWriteResult> writeGgufNamed(std::string_view name, const std::filesystem::path &dir)
{
    const bool glm = name.starts_with("glm-5.2-gguf-"), ds = name.starts_with("deepseek-v3-gguf-");
    if (!glm && !ds) return std::nullopt;
    const std::string_view quant = name.substr(glm ? 13 : 17);
    if (quant != "q4_k_m" && quant != "ud-q2_k_xl") return std::nullopt;
    const GgufRecipe recipe = quant == "q4_k_m" ? ggufQ4KM() : ggufUdQ2KXL();
    const LayoutSpec spec = glm ? glm5Fp8() : deepseekV3();
    return writeGguf(spec, recipe, dir, (glm ? "GLM-5.2-" : "DeepSeek-V3-") + recipe.name);
}

} // namespace atlas::synth
