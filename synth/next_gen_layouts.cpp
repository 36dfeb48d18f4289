// Header-faithful layouts of the checkpoints engineers open in 2026 (domain.md section 12): the tensor
// names, shapes and dtypes of the published files, from their config values. Sources: DeepSeek's V4
// reference inference/model.py and vLLM models/deepseek_v4.py (names, compressor and indexer shapes,
// FP4 experts in I8 pairs); SGLang models/glm5_next.py and layers/attention/dsa/dsa_indexer_kpool.py
// (GLM-5.3-Flash); vLLM models/kimi_linear.py and layers/kda.py (Kimi-Linear).
#include "synthetic_layout.h"
#include "tensor_list.h"

namespace atlas::synth {

namespace {

using namespace build;

// ---------------------------------------------------------------------------------------------- DeepSeek-V4

struct V4
{
    std::string name;
    std::uint64_t D, L, H, Rq, G, E, I;
    std::int64_t indexTopk;
    double scaling;
    int shards;
    std::vector<std::int64_t> ratios; // one per layer, then the MTP block's
    static constexpr std::uint64_t hd = 512, Ro = 1024, IH = 64, Id = 128, V = 129280, K = 6, hc = 4, hashLayers = 3;
};

// One block (a decoder layer or the MTP block) under `p` ("layers.7." or "mtp.0.").
void v4Block(Tensors &t, const V4 &s, const std::string &p, std::int64_t ratio, bool hash)
{
    const std::uint64_t D = s.D, mix = (2 + V4::hc) * V4::hc;
    t.bf16(p + "attn_norm.weight", {D});
    t.f32(p + "attn.attn_sink", {s.H});
    t.fp8E8m0(p + "attn.wq_a", s.Rq, D);
    t.bf16(p + "attn.q_norm.weight", {s.Rq});
    t.fp8E8m0(p + "attn.wq_b", s.H * V4::hd, s.Rq);
    t.fp8E8m0(p + "attn.wkv", V4::hd, D);
    t.bf16(p + "attn.kv_norm.weight", {V4::hd});
    t.fp8E8m0(p + "attn.wo_a", s.G * V4::Ro, s.H * V4::hd / s.G);
    t.fp8E8m0(p + "attn.wo_b", D, s.G * V4::Ro);
    if (ratio > 0) {
        // The compressor: ratio 4 overlaps its windows (twice the width), ratio 128 does not.
        const std::uint64_t r = static_cast<std::uint64_t>(ratio), coff = ratio == 4 ? 2 : 1;
        t.f32(p + "attn.compressor.ape", {r, coff * V4::hd});
        t.bf16(p + "attn.compressor.wkv.weight", {coff * V4::hd, D});
        t.bf16(p + "attn.compressor.wgate.weight", {coff * V4::hd, D});
        t.bf16(p + "attn.compressor.norm.weight", {V4::hd});
        if (ratio == 4) {
            t.fp8E8m0(p + "attn.indexer.wq_b", V4::IH * V4::Id, s.Rq);
            t.bf16(p + "attn.indexer.weights_proj.weight", {V4::IH, D});
            t.f32(p + "attn.indexer.compressor.ape", {4, 2 * V4::Id});
            t.bf16(p + "attn.indexer.compressor.wkv.weight", {2 * V4::Id, D});
            t.bf16(p + "attn.indexer.compressor.wgate.weight", {2 * V4::Id, D});
            t.bf16(p + "attn.indexer.compressor.norm.weight", {V4::Id});
        }
    }
    t.bf16(p + "ffn_norm.weight", {D});
    t.bf16(p + "ffn.gate.weight", {s.E, D});
    if (hash)
        t.add(p + "ffn.gate.tid2eid", Dtype::I64, {V4::V, V4::K});
    else
        t.f32(p + "ffn.gate.bias", {s.E});
    for (std::uint64_t e = 0; e < s.E; ++e) {
        const std::string x = p + "ffn.experts." + str(static_cast<std::int64_t>(e)) + ".";
        t.fp4Pairs(x + "w1", s.I, D);
        t.fp4Pairs(x + "w2", D, s.I);
        t.fp4Pairs(x + "w3", s.I, D);
    }
    t.fp8E8m0(p + "ffn.shared_experts.w1", s.I, D);
    t.fp8E8m0(p + "ffn.shared_experts.w2", D, s.I);
    t.fp8E8m0(p + "ffn.shared_experts.w3", s.I, D);
    for (const char *where : {"attn", "ffn"}) {
        t.f32(p + "hc_" + where + "_fn", {mix, V4::hc * D});
        t.f32(p + "hc_" + where + "_base", {mix});
        t.f32(p + "hc_" + where + "_scale", {3});
    }
}

WrittenLayout deepseekV4(const V4 &s)
{
    Tensors t;
    t.bf16("embed.weight", {V4::V, s.D});
    for (std::uint64_t i = 0; i < s.L; ++i)
        v4Block(t, s, "layers." + str(static_cast<std::int64_t>(i)) + ".", s.ratios[i], i < V4::hashLayers);
    t.bf16("head.weight", {V4::V, s.D});
    t.bf16("norm.weight", {s.D});
    auto hcHead = [&](const std::string &p) {
        t.f32(p + "hc_head_fn", {V4::hc, V4::hc * s.D});
        t.f32(p + "hc_head_base", {V4::hc});
        t.f32(p + "hc_head_scale", {1});
    };
    hcHead("");
    // The MTP block: a window-only, score-routed block with its own projections of the embedding and
    // the hidden state; it shares the embedding and the head.
    v4Block(t, s, "mtp.0.", s.ratios[s.L], false);
    t.fp8E8m0("mtp.0.e_proj", s.D, s.D);
    t.fp8E8m0("mtp.0.h_proj", s.D, s.D);
    t.bf16("mtp.0.enorm.weight", {s.D});
    t.bf16("mtp.0.hnorm.weight", {s.D});
    t.bf16("mtp.0.norm.weight", {s.D});
    hcHead("mtp.0.");

    nlohmann::ordered_json c;
    c["architectures"] = {"DeepseekV4ForCausalLM"};
    c["model_type"] = "deepseek_v4";
    c["hidden_size"] = s.D;
    c["num_hidden_layers"] = s.L;
    c["num_attention_heads"] = s.H;
    c["num_key_value_heads"] = 1;
    c["head_dim"] = V4::hd;
    c["q_lora_rank"] = s.Rq;
    c["qk_rope_head_dim"] = 64;
    c["o_groups"] = s.G;
    c["o_lora_rank"] = V4::Ro;
    c["index_n_heads"] = V4::IH;
    c["index_head_dim"] = V4::Id;
    c["index_topk"] = s.indexTopk;
    c["sliding_window"] = 128;
    c["compress_ratios"] = s.ratios;
    c["compress_rope_theta"] = 160000;
    c["hc_mult"] = V4::hc;
    c["hc_sinkhorn_iters"] = 20;
    c["num_hash_layers"] = V4::hashLayers;
    c["n_routed_experts"] = s.E;
    c["n_shared_experts"] = 1;
    c["moe_intermediate_size"] = s.I;
    c["num_experts_per_tok"] = V4::K;
    c["scoring_func"] = "sqrtsoftplus";
    c["topk_method"] = "noaux_tc";
    c["norm_topk_prob"] = true;
    c["routed_scaling_factor"] = s.scaling;
    c["swiglu_limit"] = 10.0;
    c["expert_dtype"] = "fp4";
    c["vocab_size"] = V4::V;
    c["max_position_embeddings"] = 1048576;
    c["num_nextn_predict_layers"] = 1;
    c["tie_word_embeddings"] = false;
    c["quantization_config"] = {{"activation_scheme", "dynamic"},
                                {"fmt", "e4m3"},
                                {"quant_method", "fp8"},
                                {"scale_fmt", "ue8m0"},
                                {"weight_block_size", {128, 128}}};
    c["ckpt_atlas_synthetic"] = true;
    return {s.name, std::move(t.out), std::move(c), s.shards, static_cast<std::int64_t>(s.E), 0x5eed4};
}

// ------------------------------------------------------------------------------------------ GLM-5.3-Flash

constexpr std::uint64_t kGlmH = 4096, kGlmV = 154880, kGlmE = 288, kGlmLayers = 45;

bool glmDsaLayer(std::uint64_t i)
{
    return i % 4 == 3;
}

void glmKda(Tensors &t, const std::string &p)
{
    constexpr std::uint64_t H = kGlmH, P = 64 * 128, dk = 128;
    for (const char *x : {"q", "k", "v"})
        t.bf16(p + "self_attn." + x + "_proj.weight", {P, H});
    for (const char *x : {"q", "k", "v"})
        t.bf16(p + "self_attn." + x + "_conv1d.weight", {P, 1, 4});
    t.f32(p + "self_attn.A_log", {64});
    t.f32(p + "self_attn.dt_bias", {P});
    t.bf16(p + "self_attn.f_a_proj.weight", {dk, H});
    t.bf16(p + "self_attn.f_b_proj.weight", {P, dk});
    t.bf16(p + "self_attn.g_a_proj.weight", {dk, H});
    t.bf16(p + "self_attn.g_b_proj.weight", {P, dk});
    t.bf16(p + "self_attn.b_proj.weight", {64, H});
    t.bf16(p + "self_attn.o_norm.weight", {dk});
    t.bf16(p + "self_attn.o_proj.weight", {H, P});
}

// MLA without RoPE (qk_rope_head_dim 0) and a DSA indexer whose keys are pooled over index_kpool tokens.
void glmDsa(Tensors &t, const std::string &p)
{
    constexpr std::uint64_t H = kGlmH, heads = 64, nope = 256, vDim = 256, qr = 1536, kvr = 512;
    t.fp8ScaleInv(p + "self_attn.q_a_proj", qr, H);
    t.bf16(p + "self_attn.q_a_layernorm.weight", {qr});
    t.fp8ScaleInv(p + "self_attn.q_b_proj", heads * nope, qr);
    t.fp8ScaleInv(p + "self_attn.kv_a_proj_with_mqa", kvr, H);
    t.bf16(p + "self_attn.kv_a_layernorm.weight", {kvr});
    t.bf16(p + "self_attn.kv_b_proj.weight", {heads * (nope + vDim), kvr});
    t.fp8ScaleInv(p + "self_attn.o_proj", H, heads * vDim);
    t.bf16(p + "self_attn.indexer.wq_b.weight", {32 * 128, qr});
    t.bf16(p + "self_attn.indexer.wk.weight", {128, H});
    t.bf16(p + "self_attn.indexer.k_norm.weight", {128});
    t.bf16(p + "self_attn.indexer.k_norm.bias", {128});
    t.bf16(p + "self_attn.indexer.weights_proj.weight", {32, H});
    t.bf16(p + "self_attn.indexer.index_kpool_compress_gate", {128, H});
    t.bf16(p + "self_attn.indexer.index_kpool_compress_ape", {4, 128});
}

void glmMoe(Tensors &t, const std::string &p)
{
    constexpr std::uint64_t H = kGlmH, I = 2048;
    t.bf16(p + "mlp.gate.weight", {kGlmE, H});
    t.f32(p + "mlp.gate.e_score_correction_bias", {kGlmE});
    t.fp8ScaleInv(p + "mlp.shared_experts.gate_proj", I, H);
    t.fp8ScaleInv(p + "mlp.shared_experts.up_proj", I, H);
    t.fp8ScaleInv(p + "mlp.shared_experts.down_proj", H, I);
    for (std::uint64_t e = 0; e < kGlmE; ++e) {
        const std::string x = p + "mlp.experts." + str(static_cast<std::int64_t>(e)) + ".";
        t.fp8ScaleInv(x + "gate_proj", I, H);
        t.fp8ScaleInv(x + "up_proj", I, H);
        t.fp8ScaleInv(x + "down_proj", H, I);
    }
}

void glmVision(Tensors &t)
{
    const std::string v = "model.visual.";
    t.bf16(v + "patch_embed.proj.weight", {1024, 3, 2, 14, 14});
    t.bf16(v + "patch_embed.proj.bias", {1024});
    for (int b = 0; b < 24; ++b) {
        const std::string p = v + "blocks." + str(b) + ".";
        t.bf16(p + "norm1.weight", {1024});
        t.bf16(p + "norm2.weight", {1024});
        t.bf16(p + "attn.qkv.weight", {3072, 1024});
        t.bf16(p + "attn.qkv.bias", {3072});
        t.bf16(p + "attn.proj.weight", {1024, 1024});
        t.bf16(p + "attn.proj.bias", {1024});
        t.bf16(p + "attn.q_norm.weight", {64});
        t.bf16(p + "attn.k_norm.weight", {64});
        t.bf16(p + "mlp.gate_proj.weight", {4096, 1024});
        t.bf16(p + "mlp.gate_proj.bias", {4096});
        t.bf16(p + "mlp.up_proj.weight", {4096, 1024});
        t.bf16(p + "mlp.up_proj.bias", {4096});
        t.bf16(p + "mlp.down_proj.weight", {1024, 4096});
        t.bf16(p + "mlp.down_proj.bias", {1024});
    }
    t.bf16(v + "post_layernorm.weight", {1024});
    t.bf16(v + "downsample.weight", {4096, 1024, 2, 2});
    t.bf16(v + "downsample.bias", {4096});
    t.bf16(v + "merger.proj.weight", {4096, 4096});
    t.bf16(v + "merger.post_projection_norm.weight", {4096});
    t.bf16(v + "merger.post_projection_norm.bias", {4096});
    t.bf16(v + "merger.gate_proj.weight", {10240, 4096});
    t.bf16(v + "merger.up_proj.weight", {10240, 4096});
    t.bf16(v + "merger.down_proj.weight", {4096, 10240});
}

} // namespace

WrittenLayout deepseekV4Flash()
{
    V4 s{"deepseek-v4-flash", 4096, 43, 64, 1024, 8, 256, 2048, 512, 1.5, 46, {}};
    s.ratios = {0, 0};
    for (int i = 2; i < 43; ++i)
        s.ratios.push_back(i % 2 == 0 ? 4 : 128);
    s.ratios.push_back(0); // the MTP block
    return deepseekV4(s);
}

WrittenLayout deepseekV4Pro()
{
    V4 s{"deepseek-v4-pro", 7168, 61, 128, 1536, 16, 384, 3072, 1024, 2.5, 64, {}};
    s.ratios = {128, 128};
    for (int i = 2; i < 61; ++i)
        s.ratios.push_back(i % 2 == 0 ? 4 : 128);
    s.ratios.push_back(0);
    return deepseekV4(s);
}

WrittenLayout glm53Flash()
{
    Tensors t;
    constexpr std::uint64_t H = kGlmH, mix = 24;
    const std::string m = "model.language_model.";
    t.bf16(m + "embed_tokens.weight", {kGlmV, H});
    for (std::uint64_t i = 0; i <= kGlmLayers; ++i) { // layer 45 is the MTP block
        const std::string p = m + "layers." + str(static_cast<std::int64_t>(i)) + ".";
        const bool mtp = i == kGlmLayers;
        if (mtp) {
            t.bf16(p + "enorm.weight", {H});
            t.bf16(p + "hnorm.weight", {H});
            t.bf16(p + "eh_proj.weight", {H, 2 * H});
            t.bf16(p + "shared_head.norm.weight", {H});
        }
        t.bf16(p + "input_layernorm.weight", {H});
        t.bf16(p + "post_attention_layernorm.weight", {H});
        if (!mtp)
            for (const char *where : {"attn", "ffn"}) {
                t.bf16(p + "hc_" + where + "_fn", {mix, 4 * H});
                t.f32(p + "hc_" + where + "_base", {mix});
                t.f32(p + "hc_" + where + "_scale", {3});
            }
        if (mtp || glmDsaLayer(i))
            glmDsa(t, p);
        else
            glmKda(t, p);
        if (i < 3) {
            t.fp8ScaleInv(p + "mlp.gate_proj", 12288, H);
            t.fp8ScaleInv(p + "mlp.up_proj", 12288, H);
            t.fp8ScaleInv(p + "mlp.down_proj", H, 12288);
        } else {
            glmMoe(t, p);
        }
    }
    t.bf16(m + "norm.weight", {H});
    t.bf16("lm_head.weight", {kGlmV, H});
    glmVision(t);

    nlohmann::ordered_json text;
    text["model_type"] = "glm5_next_text";
    text["hidden_size"] = H;
    text["num_hidden_layers"] = kGlmLayers;
    text["num_attention_heads"] = 64;
    text["num_key_value_heads"] = 64;
    text["q_lora_rank"] = 1536;
    text["kv_lora_rank"] = 512;
    text["qk_nope_head_dim"] = 256;
    text["qk_rope_head_dim"] = 0;
    text["v_head_dim"] = 256;
    text["mla_use_nope"] = true;
    text["index_n_heads"] = 32;
    text["index_head_dim"] = 128;
    text["index_topk"] = 2048;
    text["index_kpool"] = 4;
    text["indexer_types"] = std::vector<std::string>(kGlmLayers, "full");
    std::vector<std::string> types, mlp;
    std::vector<std::int64_t> kda, full;
    for (std::uint64_t i = 0; i < kGlmLayers; ++i) {
        types.push_back(glmDsaLayer(i) ? "deepseek_sparse_attention" : "linear_attention");
        (glmDsaLayer(i) ? full : kda).push_back(static_cast<std::int64_t>(i)); // 0-based in GLM
        mlp.push_back(i < 3 ? "dense" : "sparse");
    }
    text["layer_types"] = types;
    text["mlp_layer_types"] = mlp;
    text["linear_attn_config"] = {{"num_heads", 64},     {"head_dim", 128}, {"short_conv_kernel_size", 4},
                                  {"kda_layers", kda},   {"full_attn_layers", full}};
    text["n_routed_experts"] = kGlmE;
    text["num_experts_per_tok"] = 8;
    text["n_shared_experts"] = 1;
    text["moe_intermediate_size"] = 2048;
    text["intermediate_size"] = 12288;
    text["first_k_dense_replace"] = 3;
    text["scoring_func"] = "sigmoid";
    text["topk_method"] = "noaux_tc";
    text["n_group"] = 1;
    text["topk_group"] = 1;
    text["norm_topk_prob"] = true;
    text["routed_scaling_factor"] = 2.5;
    text["moe_router_dtype"] = "float32";
    text["vocab_size"] = kGlmV;
    text["max_position_embeddings"] = 1048576;
    text["mhc"] = true;
    text["hc_mult"] = 4;
    text["num_nextn_predict_layers"] = 1;
    text["tie_word_embeddings"] = false;
    nlohmann::ordered_json c;
    c["architectures"] = {"Glm5NextForConditionalGeneration"};
    c["model_type"] = "glm5_next";
    c["text_config"] = text;
    c["vision_config"] = {{"model_type", "glm5_next_vision"}, {"depth", 24}, {"hidden_size", 1024}};
    c["quantization_config"] = {{"quant_method", "fp8"},
                                {"fmt", "e4m3"},
                                {"activation_scheme", "dynamic"},
                                {"weight_block_size", {128, 128}}};
    c["ckpt_atlas_synthetic"] = true;
    return {"glm-5.3-flash-fp8", std::move(t.out), std::move(c), 62, static_cast<std::int64_t>(kGlmE), 0x5eed53};
}

WrittenLayout kimiLinear48B()
{
    Tensors t;
    constexpr std::uint64_t H = 2304, V = 163840, P = 32 * 128, dk = 128, E = 256, I = 1024, L = 27;
    const std::vector<std::int64_t> kda = {1, 2, 3, 5, 6, 7, 9, 10, 11, 13, 14, 15, 17, 18, 19, 21, 22, 23, 25, 26};
    const std::vector<std::int64_t> full = {4, 8, 12, 16, 20, 24, 27}; // 1-based, as Kimi writes them
    t.bf16("model.embed_tokens.weight", {V, H});
    for (std::uint64_t i = 0; i < L; ++i) {
        const std::string p = "model.layers." + str(static_cast<std::int64_t>(i)) + ".";
        t.bf16(p + "input_layernorm.weight", {H});
        t.bf16(p + "post_attention_layernorm.weight", {H});
        if (std::find(full.begin(), full.end(), static_cast<std::int64_t>(i + 1)) != full.end()) {
            t.bf16(p + "self_attn.q_proj.weight", {32 * (128 + 64), H});
            t.bf16(p + "self_attn.kv_a_proj_with_mqa.weight", {512 + 64, H});
            t.bf16(p + "self_attn.kv_a_layernorm.weight", {512});
            t.bf16(p + "self_attn.kv_b_proj.weight", {32 * (128 + 128), 512});
            t.bf16(p + "self_attn.o_proj.weight", {H, 32 * 128});
        } else {
            for (const char *x : {"q", "k", "v"})
                t.bf16(p + "self_attn." + x + "_proj.weight", {P, H});
            for (const char *x : {"q", "k", "v"})
                t.bf16(p + "self_attn." + x + "_conv1d.weight", {P, 1, 4});
            t.f32(p + "self_attn.A_log", {1, 1, 32, 1});
            t.f32(p + "self_attn.dt_bias", {P});
            t.bf16(p + "self_attn.f_a_proj.weight", {dk, H});
            t.bf16(p + "self_attn.f_b_proj.weight", {P, dk});
            t.bf16(p + "self_attn.g_a_proj.weight", {dk, H});
            t.bf16(p + "self_attn.g_b_proj.weight", {P, dk});
            t.bf16(p + "self_attn.b_proj.weight", {32, H});
            t.bf16(p + "self_attn.o_norm.weight", {dk});
            t.bf16(p + "self_attn.o_proj.weight", {H, P});
        }
        if (i == 0) {
            t.bf16(p + "mlp.gate_proj.weight", {9216, H});
            t.bf16(p + "mlp.up_proj.weight", {9216, H});
            t.bf16(p + "mlp.down_proj.weight", {H, 9216});
            continue;
        }
        t.bf16(p + "block_sparse_moe.gate.weight", {E, H});
        t.bf16(p + "block_sparse_moe.gate.e_score_correction_bias", {E}); // BF16 on disk
        for (std::uint64_t e = 0; e < E; ++e) {
            const std::string x = p + "block_sparse_moe.experts." + str(static_cast<std::int64_t>(e)) + ".";
            t.bf16(x + "w1.weight", {I, H});
            t.bf16(x + "w2.weight", {H, I});
            t.bf16(x + "w3.weight", {I, H});
        }
        t.bf16(p + "block_sparse_moe.shared_experts.gate_proj.weight", {I, H});
        t.bf16(p + "block_sparse_moe.shared_experts.up_proj.weight", {I, H});
        t.bf16(p + "block_sparse_moe.shared_experts.down_proj.weight", {H, I});
    }
    t.bf16("model.norm.weight", {H});
    t.bf16("lm_head.weight", {V, H});

    nlohmann::ordered_json c;
    c["architectures"] = {"KimiLinearForCausalLM"};
    c["model_type"] = "kimi_linear";
    c["hidden_size"] = H;
    c["num_hidden_layers"] = L;
    c["num_attention_heads"] = 32;
    c["num_key_value_heads"] = 32;
    c["head_dim"] = 72;
    c["kv_lora_rank"] = 512;
    c["q_lora_rank"] = nullptr;
    c["qk_nope_head_dim"] = 128;
    c["qk_rope_head_dim"] = 64;
    c["v_head_dim"] = 128;
    c["mla_use_nope"] = true;
    c["intermediate_size"] = 9216;
    c["moe_intermediate_size"] = I;
    c["num_experts"] = E;
    c["num_experts_per_token"] = 8;
    c["num_shared_experts"] = 1;
    c["first_k_dense_replace"] = 1;
    c["moe_layer_freq"] = 1;
    c["moe_router_activation_func"] = "sigmoid";
    c["moe_renormalize"] = true;
    c["routed_scaling_factor"] = 2.446;
    c["use_grouped_topk"] = true;
    c["num_expert_group"] = 1;
    c["topk_group"] = 1;
    c["vocab_size"] = V;
    c["tie_word_embeddings"] = false;
    c["num_nextn_predict_layers"] = 0;
    c["model_max_length"] = 1048576;
    c["linear_attn_config"] = {{"num_heads", 32},   {"head_dim", 128},        {"short_conv_kernel_size", 4},
                               {"kda_layers", kda}, {"full_attn_layers", full}};
    c["torch_dtype"] = "bfloat16";
    c["ckpt_atlas_synthetic"] = true;
    return {"kimi-linear-48b-a3b", std::move(t.out), std::move(c), 20, static_cast<std::int64_t>(E), 0x5eedc1};
}

} // namespace atlas::synth
