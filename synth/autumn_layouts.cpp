// Header-faithful layouts of the checkpoints of autumn 2026 (domain.md section 18): the tensor names,
// shapes and dtypes of the published files, from their config values. Sources, per family below: the
// runtimes' modeling code and the published header censuses they were checked against.
#include "synthetic_layout.h"
#include "tensor_list.h"

#include <algorithm>

namespace atlas::synth {

namespace {

using namespace build;

std::string at(const std::string &prefix, std::uint64_t i)
{
    return prefix + std::to_string(i) + ".";
}

nlohmann::ordered_json fp8Block(std::int64_t block)
{
    return {{"quant_method", "fp8"}, {"activation_scheme", "dynamic"}, {"weight_block_size", {block, block}}};
}

} // namespace

// ------------------------------------------------------------------------------------------ Tencent Hy4
// transformers models/hy_v4 and vLLM hy_v4.py (HYV4ForCausalLM): gated MLA (self_attn.linear_gate) with
// learnable sinks, a DSA indexer on the layers indexer_types calls full (IndexCache: the shared layers
// reuse the nearest earlier full layer's selection), hyper-connections hc_attn_layer / hc_mlp_layer /
// hc_head (F32), fused experts, one MTP layer under model.mtp_layers.0 with its own indexer.
WrittenLayout hy4Preview()
{
    Tensors t;
    constexpr std::uint64_t H = 6144, V = 120832, L = 78, NH = 64, Q = 2048, KV = 512, R = 64, NOPE = 192, VD = 256,
                            E = 256, I = 2048, ID = 18432, C = 4, IH = 32, IDIM = 128;
    auto full = [](std::uint64_t i) { return i == 0 || (i - 1) % 4 == 0; };
    t.bf16("model.embed_tokens.weight", {V, H});
    auto attention = [&](const std::string &p, bool sinkF32) {
        t.bf16(p + "self_attn.q_a_proj.weight", {Q, H});
        t.bf16(p + "self_attn.q_a_layernorm.weight", {Q});
        t.bf16(p + "self_attn.q_b_proj.weight", {NH * (NOPE + R), Q});
        t.bf16(p + "self_attn.kv_a_proj_with_mqa.weight", {KV + R, H});
        t.bf16(p + "self_attn.kv_a_layernorm.weight", {KV});
        t.bf16(p + "self_attn.kv_b_proj.weight", {NH * (NOPE + VD), KV});
        t.bf16(p + "self_attn.o_proj.weight", {H, NH * VD});
        t.bf16(p + "self_attn.linear_gate.weight", {NH * VD, H});
        t.add(p + "self_attn.learnable_sink_param", sinkF32 ? Dtype::F32 : Dtype::BF16, {NH});
    };
    auto indexer = [&](const std::string &p) {
        t.bf16(p + "self_attn.indexer.wq_b.weight", {IH * IDIM, Q});
        t.bf16(p + "self_attn.indexer.wk.weight", {IDIM, H});
        t.bf16(p + "self_attn.indexer.weights_proj.weight", {IH, H});
        t.bf16(p + "self_attn.indexer.k_norm.weight", {IDIM});
        t.bf16(p + "self_attn.indexer.k_norm.bias", {IDIM});
    };
    auto moe = [&](const std::string &p, bool biasF32) {
        t.bf16(p + "mlp.gate.weight", {E, H});
        t.add(p + "mlp.gate.e_score_correction_bias", biasF32 ? Dtype::F32 : Dtype::BF16, {E});
        t.bf16(p + "mlp.experts.gate_up_proj", {E, 2 * I, H});
        t.bf16(p + "mlp.experts.down_proj", {E, H, I});
        t.bf16(p + "mlp.shared_experts.gate_proj.weight", {I, H});
        t.bf16(p + "mlp.shared_experts.up_proj.weight", {I, H});
        t.bf16(p + "mlp.shared_experts.down_proj.weight", {H, I});
    };
    for (std::uint64_t i = 0; i < L; ++i) {
        const std::string p = at("model.layers.", i);
        t.bf16(p + "input_layernorm.weight", {H});
        t.bf16(p + "post_attention_layernorm.weight", {H});
        for (const char *b : {"hc_attn_layer", "hc_mlp_layer"}) {
            t.f32(p + b + ".hc_pre.hc_fn", {2 * C, C * H});
            t.f32(p + b + ".hc_pre.hc_base", {2 * C});
            t.f32(p + b + ".hc_pre.hc_scale", {2});
        }
        attention(p, true);
        if (full(i)) indexer(p);
        if (i == 0) {
            t.bf16(p + "mlp.gate_proj.weight", {ID, H});
            t.bf16(p + "mlp.up_proj.weight", {ID, H});
            t.bf16(p + "mlp.down_proj.weight", {H, ID});
        } else {
            moe(p, true);
        }
    }
    const std::string m = "model.mtp_layers.0.";
    t.bf16(m + "enorm.weight", {H});
    t.bf16(m + "hnorm.weight", {H});
    t.bf16(m + "eh_proj.weight", {H, 2 * H});
    t.bf16(m + "final_layernorm.weight", {H});
    t.bf16(m + "input_layernorm.weight", {H});
    t.bf16(m + "post_attention_layernorm.weight", {H});
    attention(m, false);
    indexer(m);
    moe(m, false);
    t.bf16("model.norm.weight", {H});
    t.f32("model.hc_head.hc_head_fn", {C, C * H});
    t.f32("model.hc_head.hc_head_base", {C});
    t.f32("model.hc_head.hc_head_scale", {1});
    t.bf16("lm_head.weight", {V, H});

    nlohmann::ordered_json c;
    c["architectures"] = {"HYV4ForCausalLM"};
    c["model_type"] = "hy_v4";
    c["hidden_size"] = H;
    c["num_hidden_layers"] = L;
    c["vocab_size"] = V;
    c["intermediate_size"] = ID;
    c["moe_intermediate_size"] = I;
    c["num_attention_heads"] = NH;
    c["num_key_value_heads"] = 8;
    c["head_dim"] = R;
    c["q_lora_rank"] = Q;
    c["kv_lora_rank"] = KV;
    c["qk_nope_head_dim"] = NOPE;
    c["qk_rope_head_dim"] = R;
    c["v_head_dim"] = VD;
    c["gated_mla"] = true;
    c["learnable_sink"] = true;
    c["layer_types"] = std::vector<std::string>(L, "deepseek_sparse_attention");
    c["index_topk"] = 2048;
    c["index_n_heads"] = IH;
    c["index_head_dim"] = IDIM;
    std::vector<std::string> types, mlp;
    for (std::uint64_t i = 0; i < L; ++i) {
        types.push_back(full(i) ? "full" : "shared");
        mlp.push_back(i == 0 ? "dense" : "sparse");
    }
    c["indexer_types"] = types;
    c["mlp_layer_types"] = mlp;
    c["first_k_dense_replace"] = 1;
    c["n_routed_experts"] = E;
    c["n_shared_experts"] = 1;
    c["num_experts_per_tok"] = 8;
    c["norm_topk_prob"] = true;
    c["routed_scaling_factor"] = 2.827;
    c["n_group"] = 1;
    c["topk_group"] = 1;
    c["hc_mult"] = C;
    c["num_nextn_predict_layers"] = 1;
    c["max_position_embeddings"] = 1048576;
    c["tie_word_embeddings"] = false;
    c["ckpt_atlas_synthetic"] = true;
    return {"hy4-preview", std::move(t.out), std::move(c), 131, static_cast<std::int64_t>(E), 0x5eed44};
}

// ------------------------------------------------------------------------------------------- MiniMax-M3
// vLLM models/minimax_m3 (MiniMaxM3SparseAttention: index_q_proj / index_k_proj with their norms, no index
// value or output projection; MiniMaxM3Model) and transformers MiniMaxM3VLTextConfig: 3 dense-attention
// layers with dense MLPs, 57 sparse ones with 128 experts (4 + 1 shared), F32 router; a CLIP vision tower.
// The config names 7 MTP modules; the released weights hold none.
WrittenLayout minimaxM3()
{
    Tensors t;
    constexpr std::uint64_t H = 6144, V = 200064, L = 60, NH = 64, KVH = 4, HD = 128, E = 128, I = 3072, DI = 12288,
                            IDX = 128, IDXH = 4, VH = 1280;
    const std::string lm = "language_model.model.";
    t.bf16(lm + "embed_tokens.weight", {V, H});
    for (std::uint64_t i = 0; i < L; ++i) {
        const std::string p = at(lm + "layers.", i);
        const bool sparse = i >= 3;
        t.bf16(p + "input_layernorm.weight", {H});
        t.bf16(p + "post_attention_layernorm.weight", {H});
        t.bf16(p + "self_attn.q_proj.weight", {NH * HD, H});
        t.bf16(p + "self_attn.k_proj.weight", {KVH * HD, H});
        t.bf16(p + "self_attn.v_proj.weight", {KVH * HD, H});
        t.bf16(p + "self_attn.o_proj.weight", {H, NH * HD});
        t.bf16(p + "self_attn.q_norm.weight", {HD});
        t.bf16(p + "self_attn.k_norm.weight", {HD});
        if (sparse) {
            t.bf16(p + "self_attn.index_q_proj.weight", {IDXH * IDX, H});
            t.bf16(p + "self_attn.index_k_proj.weight", {IDX, H});
            t.bf16(p + "self_attn.index_q_norm.weight", {IDX});
            t.bf16(p + "self_attn.index_k_norm.weight", {IDX});
            t.f32(p + "block_sparse_moe.gate.weight", {E, H});
            t.f32(p + "block_sparse_moe.e_score_correction_bias", {E});
            for (std::uint64_t e = 0; e < E; ++e) {
                const std::string x = at(p + "block_sparse_moe.experts.", e);
                t.bf16(x + "w1.weight", {I, H});
                t.bf16(x + "w2.weight", {H, I});
                t.bf16(x + "w3.weight", {I, H});
            }
            t.bf16(p + "block_sparse_moe.shared_experts.gate_proj.weight", {I, H});
            t.bf16(p + "block_sparse_moe.shared_experts.up_proj.weight", {I, H});
            t.bf16(p + "block_sparse_moe.shared_experts.down_proj.weight", {H, I});
        } else {
            t.bf16(p + "mlp.gate_proj.weight", {DI, H});
            t.bf16(p + "mlp.up_proj.weight", {DI, H});
            t.bf16(p + "mlp.down_proj.weight", {H, DI});
        }
    }
    t.bf16(lm + "norm.weight", {H});
    t.bf16("language_model.lm_head.weight", {V, H});
    for (const char *proj : {"multi_modal_projector", "patch_merge_mlp"}) {
        const std::string p = proj;
        t.bf16(p + ".linear_1.weight", {H, p == "patch_merge_mlp" ? 4 * H : VH});
        t.bf16(p + ".linear_1.bias", {H});
        t.bf16(p + ".linear_2.weight", {H, H});
        t.bf16(p + ".linear_2.bias", {H});
    }
    const std::string v = "vision_tower.vision_model.";
    t.f32(v + "embeddings.patch_embedding.weight", {VH, 3, 2, 14, 14});
    t.bf16(v + "pre_layrnorm.weight", {VH});
    t.bf16(v + "pre_layrnorm.bias", {VH});
    for (std::uint64_t j = 0; j < 32; ++j) {
        const std::string p = at(v + "encoder.layers.", j);
        for (const char *x : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
            t.bf16(p + "self_attn." + x + ".weight", {VH, VH});
            t.bf16(p + "self_attn." + x + ".bias", {VH});
        }
        for (const char *n : {"layer_norm1", "layer_norm2"}) {
            t.bf16(p + n + ".weight", {VH});
            t.bf16(p + n + ".bias", {VH});
        }
        t.bf16(p + "mlp.fc1.weight", {4 * VH, VH});
        t.bf16(p + "mlp.fc1.bias", {4 * VH});
        t.bf16(p + "mlp.fc2.weight", {VH, 4 * VH});
        t.bf16(p + "mlp.fc2.bias", {VH});
    }

    nlohmann::ordered_json text;
    text["architectures"] = {"MiniMaxM3SparseForCausalLM"};
    text["hidden_size"] = H;
    text["intermediate_size"] = I;
    text["num_hidden_layers"] = L;
    text["num_attention_heads"] = NH;
    text["num_key_value_heads"] = KVH;
    text["head_dim"] = HD;
    text["vocab_size"] = V;
    text["max_position_embeddings"] = 1048576;
    text["rotary_dim"] = 64;
    text["dense_intermediate_size"] = DI;
    text["shared_intermediate_size"] = I;
    text["num_local_experts"] = E;
    text["num_experts_per_tok"] = 4;
    text["n_shared_experts"] = 1;
    text["scoring_func"] = "sigmoid";
    text["use_routing_bias"] = true;
    text["routed_scaling_factor"] = 2.0;
    std::vector<int> freq(L, 1);
    std::fill_n(freq.begin(), 3, 0);
    text["moe_layer_freq"] = freq;
    text["num_mtp_modules"] = 7;
    text["num_nextn_predict_layers"] = 1;
    text["sparse_attention_config"] = {{"use_sparse_attention", true},
                                       {"sparse_index_dim", IDX},
                                       {"sparse_num_index_heads", IDXH},
                                       {"sparse_topk_blocks", 16},
                                       {"sparse_block_size", 128},
                                       {"sparse_disable_index_value", freq},
                                       {"sparse_score_type", "max"},
                                       {"sparse_init_block", 0},
                                       {"sparse_local_block", 1},
                                       {"sparse_attention_freq", freq}};
    text["tie_word_embeddings"] = false;
    nlohmann::ordered_json c;
    c["architectures"] = {"MiniMaxM3SparseForConditionalGeneration"};
    c["model_type"] = "minimax_m3_vl";
    c["text_config"] = text;
    c["vision_config"] = {{"model_type", "clip_vision_model"}, {"hidden_size", VH}, {"num_hidden_layers", 32}};
    c["ckpt_atlas_synthetic"] = true;
    return {"minimax-m3", std::move(t.out), std::move(c), 59, static_cast<std::int64_t>(E), 0x5eed33};
}

// -------------------------------------------------------------------------------------------------- Inkling
// TensorRT-LLM and vLLM inkling (InklingConfig, InklingAttention, InklingMultiTokenPredictor): 66 layers,
// 5 sliding (512 tokens, 16 KV heads) to 1 global (8 KV heads), a learned relative-position bias
// (rel_logits_proj) and no RoPE, short convolutions on K, V and the two residual branches, fused experts
// (256 routed + 2 shared, the router scoring both), 8 MTP depths with dense MLPs, an encoder-free hMLP
// vision stem and a dMel audio embedding.
WrittenLayout inkling()
{
    Tensors t;
    constexpr std::uint64_t H = 6144, V = 201024, L = 66, HD = 128, NH = 64, KVG = 8, KVL = 16, DREL = 16,
                            EXTG = 1024, WIN = 512, K = 4, ID = 24576, IM = 3072, E = 256, S = 2, MTP = 8;
    auto global = [](std::uint64_t i) { return (i + 1) % 6 == 0; };
    auto block = [&](const std::string &p, bool isGlobal, bool dense) {
        const std::uint64_t kv = (isGlobal ? KVG : KVL) * HD, ext = isGlobal ? EXTG : WIN;
        t.bf16(p + "attn.wq_du.weight", {NH * HD, H});
        t.bf16(p + "attn.wk_dv.weight", {kv, H});
        t.bf16(p + "attn.wv_dv.weight", {kv, H});
        t.bf16(p + "attn.wr_du.weight", {NH * DREL, H});
        t.bf16(p + "attn.wo_ud.weight", {H, NH * HD});
        t.bf16(p + "attn.q_norm.weight", {HD});
        t.bf16(p + "attn.k_norm.weight", {HD});
        t.bf16(p + "attn.k_sconv.weight", {kv, 1, K});
        t.bf16(p + "attn.v_sconv.weight", {kv, 1, K});
        t.bf16(p + "attn.rel_logits_proj.proj", {DREL, ext});
        t.bf16(p + "attn_norm.weight", {H});
        t.bf16(p + "mlp_norm.weight", {H});
        t.bf16(p + "attn_sconv.weight", {H, 1, K});
        t.bf16(p + "mlp_sconv.weight", {H, 1, K});
        if (dense) {
            t.bf16(p + "mlp.w13_dn.weight", {2 * ID, H});
            t.bf16(p + "mlp.w2_md.weight", {H, ID});
            t.bf16(p + "mlp.global_scale", {1});
        } else {
            t.bf16(p + "mlp.gate.weight", {E + S, H});
            t.f32(p + "mlp.gate.bias", {E});
            t.f32(p + "mlp.gate.global_scale", {1});
            t.bf16(p + "mlp.shared_experts.shared_w13_weight", {S, 2 * IM, H});
            t.bf16(p + "mlp.shared_experts.shared_w2_weight", {S, H, IM});
            t.bf16(p + "mlp.experts.w13_weight", {E, 2 * IM, H});
            t.bf16(p + "mlp.experts.w2_weight", {E, H, IM});
        }
    };
    t.bf16("model.llm.embed.weight", {V, H});
    t.bf16("model.llm.embed_norm.weight", {H});
    for (std::uint64_t i = 0; i < L; ++i)
        block(at("model.llm.layers.", i), global(i), i < 2);
    t.bf16("model.llm.norm.weight", {H});
    t.bf16("model.llm.unembed.weight", {V, H});
    const std::vector<std::uint64_t> mtpLocal = {0, 2, 4, 5, 6, 7};
    for (std::uint64_t d = 0; d < MTP; ++d) {
        const std::string p = at("model.mtp.layers.", d);
        t.bf16(p + "embed_norm.weight", {H});
        t.bf16(p + "hidden_norm.weight", {H});
        t.bf16(p + "input_proj.weight", {H, 2 * H});
        block(p + "transformer_block.", std::find(mtpLocal.begin(), mtpLocal.end(), d) == mtpLocal.end(), true);
    }
    // The hMLP vision stem (TensorRT-LLM plan_out_scales: patch 40, 4 layers) and the dMel audio embedding.
    const std::uint64_t in[4] = {75, 512, 5120, 9600}, out[4] = {128, 320, 4800, H};
    for (std::uint64_t k = 0; k < 4; ++k) {
        t.bf16("model.visual.layers.linear_" + std::to_string(k) + ".weight", {out[k], in[k]});
        if (k < 3) t.bf16("model.visual.layers.norm_" + std::to_string(k) + ".weight", {out[k]});
    }
    t.bf16("model.visual.final_norm.weight", {H});
    t.bf16("model.audio.encoder.weight", {80 * 16, H});
    t.bf16("model.audio.final_norm.weight", {H});

    nlohmann::ordered_json text;
    text["model_type"] = "inkling_text";
    text["hidden_size"] = H;
    text["num_hidden_layers"] = L;
    text["vocab_size"] = V;
    text["num_attention_heads"] = NH;
    text["num_key_value_heads"] = KVG;
    text["head_dim"] = HD;
    text["swa_num_attention_heads"] = NH;
    text["swa_num_key_value_heads"] = KVL;
    text["swa_head_dim"] = HD;
    text["sliding_window_size"] = WIN;
    std::vector<std::uint64_t> local;
    for (std::uint64_t i = 0; i < L; ++i)
        if (!global(i)) local.push_back(i);
    text["local_layer_ids"] = local;
    text["d_rel"] = DREL;
    text["rel_extent"] = EXTG;
    text["use_sconv"] = true;
    text["sconv_kernel_size"] = K;
    text["dense_mlp_idx"] = 2;
    text["dense_intermediate_size"] = ID;
    text["intermediate_size"] = IM;
    text["n_routed_experts"] = E;
    text["num_experts_per_tok"] = 6;
    text["n_shared_experts"] = S;
    text["route_scale"] = 8.0;
    text["gate_activation"] = "sigmoid";
    text["max_position_embeddings"] = 1048576;
    text["tie_word_embeddings"] = false;
    nlohmann::ordered_json c;
    c["architectures"] = {"InklingForConditionalGeneration"};
    c["model_type"] = "inkling_mm_model";
    c["text_config"] = text;
    c["vision_config"] = {{"vision_encoder_type", "hmlp"}, {"patch_size", 40}, {"n_layers", 4}};
    c["audio_config"] = {{"audio_mode", "dmel"}, {"n_mel_bins", 80}, {"mel_vocab_size", 16}};
    c["mtp_config"] = {{"num_nextn_predict_layers", MTP}, {"local_layer_ids", mtpLocal}};
    c["ckpt_atlas_synthetic"] = true;
    return {"inkling", std::move(t.out), std::move(c), 108, static_cast<std::int64_t>(E), 0x5eed66};
}

// ---------------------------------------------------------------------------------- Qwen3.8-Flash-Next
// transformers models/qwen4_exp (Qwen4ExpTextDecoderLayer, Qwen4ExpTextGatedResidual, Qwen4ExpTextQSAIndexer,
// Qwen4ExpTextNGramEmbedding): 36 Gated DeltaNet + 12 Qwen Sparse Attention layers (every fourth), a 4-stream
// gated residual instead of norms, 512 fused experts top-10 + a shared one, a 320 M-row n-gram embedding at
// layer 1 in 128 tensors (kept in host memory), one MTP layer, a Qwen3-VL vision tower.
WrittenLayout qwen38FlashNext()
{
    Tensors t;
    constexpr std::uint64_t H = 2560, HC = 4 * H, R = 320, E = 512, I = 640, V = 248320, L = 48, VH = 1152;
    const std::string m = "model.language_model.";
    auto residual = [&](const std::string &p) {
        for (const char *x : {"attn_hyper_connection", "mlp_hyper_connection"}) {
            t.bf16(p + x + ".hc_norm.weight", {HC});
            t.bf16(p + x + ".input_mix_weight_down.weight", {R, HC});
            t.bf16(p + x + ".input_mix_weight_up.weight", {HC, R});
            t.bf16(p + x + ".block_inject_weight.weight", {4, HC});
        }
    };
    auto moe = [&](const std::string &p) {
        t.bf16(p + "mlp.gate.weight", {E, H});
        t.bf16(p + "mlp.experts.gate_up_proj", {E, 2 * I, H});
        t.bf16(p + "mlp.experts.down_proj", {E, H, I});
        t.bf16(p + "mlp.shared_expert.gate_proj.weight", {I, H});
        t.bf16(p + "mlp.shared_expert.up_proj.weight", {I, H});
        t.bf16(p + "mlp.shared_expert.down_proj.weight", {H, I});
        t.bf16(p + "mlp.shared_expert_gate.weight", {1, H});
    };
    auto sparseAttention = [&](const std::string &p) {
        t.bf16(p + "self_attn.q_proj.weight", {24 * 512, H});
        t.bf16(p + "self_attn.k_proj.weight", {2 * 256, H});
        t.bf16(p + "self_attn.v_proj.weight", {2 * 256, H});
        t.bf16(p + "self_attn.o_proj.weight", {H, 24 * 256});
        t.bf16(p + "self_attn.q_norm.weight", {256});
        t.bf16(p + "self_attn.k_norm.weight", {256});
        t.bf16(p + "self_attn.indexer.index_qk_proj.weight", {(4 + 1) * 128, H});
        t.bf16(p + "self_attn.indexer.q_layernorm.weight", {128});
        t.bf16(p + "self_attn.indexer.k_layernorm.weight", {128});
    };
    t.bf16(m + "embed_tokens.weight", {V, H});
    for (std::uint64_t i = 0; i < L; ++i) {
        const std::string p = at(m + "layers.", i);
        residual(p);
        if (i % 4 == 3) {
            sparseAttention(p);
        } else {
            const std::string a = p + "linear_attn.";
            t.bf16(a + "in_proj_qkv.weight", {10240, H});
            t.bf16(a + "in_proj_z.weight", {48 * 128, H});
            t.bf16(a + "in_proj_b.weight", {48, H});
            t.bf16(a + "in_proj_a.weight", {48, H});
            t.bf16(a + "conv1d.weight", {10240, 1, 4});
            t.bf16(a + "A_log", {48});
            t.bf16(a + "dt_bias", {48});
            t.bf16(a + "norm.weight", {128});
            t.bf16(a + "out_proj.weight", {H, 48 * 128});
        }
        moe(p);
        if (i == 1) {
            const std::string e = p + "ple.";
            for (std::uint64_t k = 0; k < 128; ++k)
                t.bf16(e + "ple_embedding.ngram_embedding.shard_" + std::to_string(k) + ".weight", {2500012, 160});
            t.add(e + "ple_embedding.layer_multipliers", Dtype::I64, {3});
            t.add(e + "ple_embedding.ngram_heads_offsets", Dtype::I64, {16});
            t.add(e + "ple_embedding.ngram_heads_vocab_sizes", Dtype::I64, {16});
            t.bf16(e + "key_proj.weight", {HC, H});
            t.bf16(e + "value_proj.weight", {H, H});
            for (const char *n : {"norm_key", "norm_query", "norm_conv"})
                t.bf16(e + n + ".weight", {HC});
            t.bf16(e + "conv1d.weight", {HC, 1, 4});
        }
    }
    for (const char *x : {"hc_norm.weight", "input_mix_weight_down.weight", "input_mix_weight_up.weight"})
        t.bf16(m + "hyper_connection_mixer." + x,
               std::string(x).starts_with("hc_norm") ? Shape{HC} : std::string(x).find("down") != std::string::npos
                                                                       ? Shape{R, HC}
                                                                       : Shape{HC, R});
    t.bf16("lm_head.weight", {V, H});
    t.bf16("mtp.fc_embedding.weight", {H, H});
    t.bf16("mtp.fc_hidden.weight", {H, H});
    t.bf16("mtp.pre_fc_norm_embedding.weight", {H});
    t.bf16("mtp.pre_fc_norm_hidden.weight", {HC});
    t.bf16("mtp.hyper_connection_mixer.hc_norm.weight", {HC});
    t.bf16("mtp.hyper_connection_mixer.input_mix_weight_down.weight", {R, HC});
    t.bf16("mtp.hyper_connection_mixer.input_mix_weight_up.weight", {HC, R});
    residual("mtp.layers.0.");
    sparseAttention("mtp.layers.0.");
    moe("mtp.layers.0.");
    const std::string v = "model.visual.";
    t.bf16(v + "patch_embed.proj.weight", {VH, 3, 2, 16, 16});
    t.bf16(v + "patch_embed.proj.bias", {VH});
    t.bf16(v + "pos_embed.weight", {2304, VH});
    for (std::uint64_t b = 0; b < 27; ++b) {
        const std::string p = at(v + "blocks.", b);
        t.bf16(p + "attn.qkv.weight", {3 * VH, VH});
        t.bf16(p + "attn.qkv.bias", {3 * VH});
        t.bf16(p + "attn.proj.weight", {VH, VH});
        t.bf16(p + "attn.proj.bias", {VH});
        t.bf16(p + "mlp.linear_fc1.weight", {4304, VH});
        t.bf16(p + "mlp.linear_fc1.bias", {4304});
        t.bf16(p + "mlp.linear_fc2.weight", {VH, 4304});
        t.bf16(p + "mlp.linear_fc2.bias", {VH});
        for (const char *n : {"norm1", "norm2"}) {
            t.bf16(p + n + ".weight", {VH});
            t.bf16(p + n + ".bias", {VH});
        }
    }
    t.bf16(v + "merger.norm.weight", {VH});
    t.bf16(v + "merger.norm.bias", {VH});
    t.bf16(v + "merger.linear_fc1.weight", {4 * VH, 4 * VH});
    t.bf16(v + "merger.linear_fc1.bias", {4 * VH});
    t.bf16(v + "merger.linear_fc2.weight", {H, 4 * VH});
    t.bf16(v + "merger.linear_fc2.bias", {H});

    nlohmann::ordered_json text;
    text["model_type"] = "qwen4_exp_text";
    text["hidden_size"] = H;
    text["num_hidden_layers"] = L;
    std::vector<std::string> types;
    for (std::uint64_t i = 0; i < L; ++i)
        types.push_back(i % 4 == 3 ? "full_attention" : "linear_attention");
    text["layer_types"] = types;
    text["full_attention_interval"] = 4;
    text["num_attention_heads"] = 24;
    text["num_key_value_heads"] = 2;
    text["head_dim"] = 256;
    text["linear_conv_kernel_dim"] = 4;
    text["linear_key_head_dim"] = 128;
    text["linear_value_head_dim"] = 128;
    text["linear_num_key_heads"] = 16;
    text["linear_num_value_heads"] = 48;
    text["mamba_ssm_dtype"] = "float32";
    text["num_experts"] = E;
    text["num_experts_per_tok"] = 10;
    text["moe_intermediate_size"] = I;
    text["shared_expert_intermediate_size"] = I;
    text["hc_count"] = 4;
    text["hc_lowrank"] = R;
    text["indexer_n_heads"] = 4;
    text["indexer_kv_heads"] = 1;
    text["indexer_head_dim"] = 128;
    text["indexer_budget"] = 2048;
    text["indexer_compress_ratio"] = 4;
    text["ple_layer_ids"] = {2};
    text["ple_embed_dim"] = H;
    text["ngram_size"] = 3;
    text["heads_per_ngram"] = 8;
    text["ngram_vocab_size_base"] = 20000000;
    text["split_ngram_parts"] = 128;
    text["mtp_num_hidden_layers"] = 1;
    text["vocab_size"] = V;
    text["max_position_embeddings"] = 262144;
    text["tie_word_embeddings"] = false;
    nlohmann::ordered_json c;
    c["architectures"] = {"Qwen4ExpForConditionalGeneration"};
    c["model_type"] = "qwen4_exp";
    c["text_config"] = text;
    c["vision_config"] = {{"depth", 27}, {"hidden_size", VH}, {"out_hidden_size", H}};
    c["tie_word_embeddings"] = false;
    c["ckpt_atlas_synthetic"] = true;
    return {"qwen3.8-flash-next", std::move(t.out), std::move(c), 131, static_cast<std::int64_t>(E), 0x5eed38};
}

// --------------------------------------------------------------------------------- DeepSeek-V4.1-Flash
// fastllm deepseekv41.cpp (GetTensorMap), ROCm/ATOM build_attention_topology and ik_llama.cpp deepseek41:
// 40 layers (20 encoder + 20 decoder) with CSA2 (compress ratios 0 / 2 / 1; only the kv_source layers
// compress, the index_source layers select, every other compressed layer reuses both), lagged
// hyper-connections (no hc_head), Engram on layers 1 and 14 (FP8 tables with row scales, in host memory),
// FP4 routed experts in I8 pairs with 32-wide E8M0 scales, FP8 32 x 32 elsewhere, 3 DSpark draft stages
// (mtp.0-2, 128 experts), a 32-layer vision tower and its aligner.
WrittenLayout deepseekV41Flash()
{
    Tensors t;
    constexpr std::uint64_t H = 5120, L = 40, NH = 64, HD = 512, QR = 1280, OG = 8, OR = 1024, E = 384, I = 2304,
                            V = 129280, HC = 4, MIX = (2 + HC) * HC, IH = 32, IHD = 128, ME = 128;
    const std::vector<std::uint64_t> kvSource = {2, 8, 14, 20}, indexSource = {2, 8, 14, 20, 24, 28, 32, 36};
    auto in = [](const std::vector<std::uint64_t> &v, std::uint64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); };
    auto fp8 = [&](const std::string &n, std::uint64_t r, std::uint64_t c) {
        t.add(n + ".weight", Dtype::F8_E4M3, {r, c});
        t.add(n + ".scale", Dtype::F8_E8M0, {ceilDiv(r, 32), ceilDiv(c, 32)});
    };
    auto fp4 = [&](const std::string &n, std::uint64_t r, std::uint64_t c) {
        t.add(n + ".weight", Dtype::I8, {r, c / 2});
        t.add(n + ".scale", Dtype::F8_E8M0, {r, c / 32});
    };
    auto block = [&](const std::string &p, std::uint64_t experts, std::int64_t layer) {
        fp8(p + "attn.wq_a", QR, H);
        fp8(p + "attn.wq_b", NH * HD, QR);
        fp8(p + "attn.wkv", HD, H);
        fp8(p + "attn.wo_a", OG * OR, NH * HD / OG);
        fp8(p + "attn.wo_b", H, OG * OR);
        t.bf16(p + "attn.q_norm.weight", {QR});
        t.bf16(p + "attn.kv_norm.weight", {HD});
        t.f32(p + "attn.attn_sink", {NH});
        t.bf16(p + "attn_norm.weight", {H});
        t.bf16(p + "ffn_norm.weight", {H});
        for (const char *s : {"attn", "ffn"}) {
            t.f32(p + "hc_" + s + "_fn", {MIX, HC * H});
            t.f32(p + "hc_" + s + "_base", {MIX});
            t.f32(p + "hc_" + s + "_scale", {3});
        }
        t.bf16(p + "ffn.gate.weight", {experts, H});
        t.f32(p + "ffn.gate.bias", {experts});
        t.f32(p + "ffn.gate.bias_vl", {experts});
        for (std::uint64_t e = 0; e < experts; ++e) {
            const std::string x = at(p + "ffn.experts.", e);
            fp4(x + "w1", I, H);
            fp4(x + "w2", H, I);
            fp4(x + "w3", I, H);
        }
        fp8(p + "ffn.shared_experts.w1", I, H);
        fp8(p + "ffn.shared_experts.w2", H, I);
        fp8(p + "ffn.shared_experts.w3", I, H);
        if (layer >= 0 && in(kvSource, static_cast<std::uint64_t>(layer))) {
            t.bf16(p + "attn.compressor.wkv.weight", {HD, H});
            t.bf16(p + "attn.compressor.norm.weight", {HD});
            if (layer != 20) t.bf16(p + "attn.compressor.wgate.weight", {HD, H}); // ratio 2; ratio 1 has none
            t.bf16(p + "attn.indexer.wk.weight", {IHD, HD});
            t.bf16(p + "attn.indexer.k_norm.weight", {IHD});
        }
        if (layer >= 0 && in(indexSource, static_cast<std::uint64_t>(layer))) {
            fp8(p + "attn.indexer.wq_b", IH * IHD, QR);
            t.bf16(p + "attn.indexer.weights_proj.weight", {IH, H});
        }
    };
    // The vision tower and its aligner.
    t.bf16("vision.patch_embed.proj.weight", {1024, 588});
    t.bf16("vision.patch_embed.proj.bias", {1024});
    t.bf16("vision.norm.weight", {1024});
    for (std::uint64_t b = 0; b < 32; ++b) {
        const std::string q = at("vision.blocks.", b);
        t.bf16(q + "attn.wqkv.weight", {3072, 1024});
        t.bf16(q + "attn.wqkv.bias", {3072});
        t.bf16(q + "attn.wo.weight", {1024, 1024});
        t.bf16(q + "attn.wo.bias", {1024});
        t.bf16(q + "mlp.w1.weight", {5632, 1024});
        t.bf16(q + "mlp.w2.weight", {1024, 2816});
        t.bf16(q + "norm1.weight", {1024});
        t.bf16(q + "norm2.weight", {1024});
    }
    t.bf16("aligner.w1.weight", {H, 9216});
    t.bf16("aligner.w1.bias", {H});
    t.bf16("aligner.w2.weight", {H, H});
    t.bf16("aligner.w2.bias", {H});
    t.bf16("embed.weight", {V, H});
    for (const char *n : {"image_start", "image_end", "image_newline"})
        t.bf16(n, {H});
    for (std::uint64_t l = 0; l < L; ++l)
        block(at("layers.", l), E, static_cast<std::int64_t>(l));
    t.bf16("head.weight", {V, H});
    t.bf16("norm.weight", {H});
    for (std::uint64_t d = 0; d < 3; ++d) {
        const std::string p = at("mtp.", d);
        block(p, ME, -1);
        if (d == 0) {
            fp8("mtp.0.main_proj", H, 3 * H);
            t.bf16("mtp.0.main_norm.weight", {H});
        }
        if (d == 2) {
            t.bf16("mtp.2.norm.weight", {H});
            t.bf16("mtp.2.markov_head.embed.weight", {V, 256});
            t.bf16("mtp.2.markov_head.head.weight", {V, 256});
            t.bf16("mtp.2.confidence_head.proj.weight", {1, H + 256});
        }
    }
    // Engram: a table of rows (each the sum of 24 primes above engram_vocab_size, fastllm BuildEngramPrimes).
    for (const auto &[layer, rows] : {std::pair<std::uint64_t, std::uint64_t>{1, 384006168}, {14, 384016682}}) {
        const std::string p = at("layers.", layer) + "engram.";
        t.add(p + "embed.weight", Dtype::F8_E4M3, {rows, 256});
        t.add(p + "embed.scale", Dtype::F8_E8M0, {rows, 8});
        t.bf16(p + "k_weight", {HC, H});
        t.bf16(p + "q_weight", {HC, H});
        fp8(p + "wkv", (HC + 1) * H, 24 * 256);
    }

    nlohmann::ordered_json text;
    text["model_type"] = "deepseek_v41_text";
    text["vocab_size"] = V;
    text["hidden_size"] = H;
    text["num_hidden_layers"] = L;
    text["num_attention_heads"] = NH;
    text["num_key_value_heads"] = 1;
    text["head_dim"] = HD;
    text["qk_rope_head_dim"] = 64;
    text["q_lora_rank"] = QR;
    text["o_lora_rank"] = OR;
    text["o_groups"] = OG;
    text["max_position_embeddings"] = 1048576;
    text["n_routed_experts"] = E;
    text["n_shared_experts"] = 1;
    text["num_experts_per_tok"] = 6;
    text["moe_intermediate_size"] = I;
    text["scoring_func"] = "sqrtsoftplus";
    text["topk_method"] = "noaux_tc";
    text["norm_topk_prob"] = true;
    text["routed_scaling_factor"] = 1.5;
    text["sliding_window"] = 128;
    std::vector<std::int64_t> ratios = {0, 0};
    for (int i = 0; i < 18; ++i) ratios.push_back(2);
    for (int i = 0; i < 20; ++i) ratios.push_back(1);
    for (int i = 0; i < 3; ++i) ratios.push_back(0);
    text["compress_ratios"] = ratios;
    text["kv_source_layer_ids"] = kvSource;
    text["index_source_layer_ids"] = indexSource;
    text["index_n_heads"] = IH;
    text["index_head_dim"] = IHD;
    text["index_topk"] = 512;
    text["candidate_source_layer_id"] = 20;
    text["hc_mult"] = HC;
    text["engram_layer_ids"] = {1, 14};
    text["engram_num_embeddings"] = {384006168, 384016682};
    text["engram_max_ngram_size"] = 4;
    text["engram_n_heads"] = 8;
    text["engram_head_dim"] = 256;
    text["engram_vocab_size"] = 16000000;
    text["num_nextn_predict_layers"] = 3;
    text["dspark_n_routed_experts"] = ME;
    text["dspark_num_experts_per_tok"] = 3;
    nlohmann::ordered_json c;
    c["architectures"] = {"DeepseekV41ForCausalLM"};
    c["model_type"] = "deepseek_v41";
    c["quantization_config"] = fp8Block(32);
    c["quantization_config"]["scale_fmt"] = "ue8m0";
    c["quantization_config"]["expert_dtype"] = "fp4";
    c["text_config"] = text;
    c["vision_config"] = {{"model_type", "deepseek_v41_vision"}, {"num_hidden_layers", 32}, {"hidden_size", 1024}};
    c["ckpt_atlas_synthetic"] = true;
    return {"deepseek-v4.1-flash", std::move(t.out), std::move(c), 48, static_cast<std::int64_t>(E), 0x5eed41};
}

// ------------------------------------------------------------------------------------------------ Kimi-K3
// vLLM models/kimi_k3 (KimiK3DeltaAttention, MultiHeadLatentAttention with its output gate g_proj) and the
// published header census: 93 layers, Gated MLA where (layer + 1) is in linear_attn_config.full_attn_layers
// (every fourth and the last), KDA elsewhere; a latent MoE (896 experts at width 3584 between
// routed_expert_down_proj and routed_expert_up_proj, top-16, 2 shared); attention residuals; MXFP4 experts
// (compressed-tensors mxfp4-pack-quantized: U8 weight_packed and U8 scales per 32); MoonViT-V2.
WrittenLayout kimiK3()
{
    Tensors t;
    constexpr std::uint64_t H = 7168, V = 163840, L = 93, NH = 96, P = NH * 128, E = 896, I = 3072, LAT = 3584,
                            SI = 6144, DI = 33792;
    std::vector<std::int64_t> fullAttn, kda;
    for (std::uint64_t i = 0; i < L; ++i)
        ((i % 4 == 3 || i == L - 1) ? fullAttn : kda).push_back(static_cast<std::int64_t>(i + 1));
    auto mla = [&](std::uint64_t i) {
        return std::find(fullAttn.begin(), fullAttn.end(), static_cast<std::int64_t>(i + 1)) != fullAttn.end();
    };
    const std::string lm = "language_model.model.";
    for (std::uint64_t i = 0; i < L; ++i) {
        const std::string p = at(lm + "layers.", i);
        for (const char *n : {"input_layernorm", "post_attention_layernorm", "self_attention_res_norm", "mlp_res_norm"})
            t.bf16(p + n + ".weight", {H});
        t.bf16(p + "self_attention_res_proj.weight", {1, H});
        t.bf16(p + "mlp_res_proj.weight", {1, H});
        t.bf16(p + "self_attn.g_proj.weight", {P, H});
        t.bf16(p + "self_attn.o_proj.weight", {H, P});
        if (mla(i)) {
            t.bf16(p + "self_attn.q_a_proj.weight", {1536, H});
            t.bf16(p + "self_attn.q_a_layernorm.weight", {1536});
            t.bf16(p + "self_attn.q_b_proj.weight", {NH * 192, 1536});
            t.bf16(p + "self_attn.kv_a_proj_with_mqa.weight", {576, H});
            t.bf16(p + "self_attn.kv_a_layernorm.weight", {512});
            t.bf16(p + "self_attn.kv_b_proj.weight", {NH * 256, 512});
        } else {
            for (const char *x : {"q", "k", "v"}) {
                t.bf16(p + "self_attn." + x + "_proj.weight", {P, H});
                t.f32(p + "self_attn." + x + "_conv1d.weight", {P, 1, 4});
            }
            t.bf16(p + "self_attn.f_a_proj.weight", {128, H});
            t.bf16(p + "self_attn.f_b_proj.weight", {P, 128});
            t.bf16(p + "self_attn.b_proj.weight", {NH, H});
            t.f32(p + "self_attn.A_log", {128});
            t.f32(p + "self_attn.dt_bias", {P});
            t.f32(p + "self_attn.o_norm.weight", {128});
        }
        if (i == 0) {
            t.bf16(p + "mlp.gate_proj.weight", {DI, H});
            t.bf16(p + "mlp.up_proj.weight", {DI, H});
            t.bf16(p + "mlp.down_proj.weight", {H, DI});
            continue;
        }
        const std::string b = p + "block_sparse_moe.";
        t.bf16(b + "gate.weight", {E, H});
        t.f32(b + "gate.e_score_correction_bias", {E});
        t.bf16(b + "routed_expert_down_proj.weight", {LAT, H});
        t.bf16(b + "routed_expert_up_proj.weight", {H, LAT});
        t.bf16(b + "routed_expert_norm.weight", {LAT});
        t.bf16(b + "shared_experts.gate_proj.weight", {SI, H});
        t.bf16(b + "shared_experts.up_proj.weight", {SI, H});
        t.bf16(b + "shared_experts.down_proj.weight", {H, SI});
        for (std::uint64_t e = 0; e < E; ++e) {
            const std::string x = at(b + "experts.", e);
            for (const auto &[w, rows, cols] : {std::tuple{"w1", I, LAT}, std::tuple{"w2", LAT, I}, std::tuple{"w3", I, LAT}}) {
                t.add(x + w + ".weight_packed", Dtype::U8, {rows, cols / 2});
                t.add(x + w + ".weight_scale", Dtype::U8, {rows, cols / 32});
            }
        }
    }
    t.bf16("language_model.lm_head.weight", {V, H});
    t.bf16(lm + "embed_tokens.weight", {V, H});
    t.bf16(lm + "norm.weight", {H});
    t.bf16(lm + "output_attn_res_norm.weight", {H});
    t.bf16(lm + "output_attn_res_proj.weight", {1, H});
    t.bf16("mm_projector.proj.0.weight", {4096, 4096});
    t.bf16("mm_projector.proj.2.weight", {H, 4096});
    t.bf16("mm_projector.post_norm.weight", {H});
    t.bf16("vision_tower.patch_embed.proj.weight", {1024, 3, 14, 14});
    t.bf16("vision_tower.patch_embed.pos_emb.weight", {64, 64, 1024});
    t.bf16("vision_tower.encoder.final_layernorm.weight", {1024});
    for (std::uint64_t b = 0; b < 27; ++b) {
        const std::string q = at("vision_tower.encoder.blocks.", b);
        t.bf16(q + "wqkv.weight", {4608, 1024});
        t.bf16(q + "wo.weight", {1024, 1536});
        t.bf16(q + "mlp.fc0.weight", {4096, 1024});
        t.bf16(q + "mlp.fc1.weight", {1024, 4096});
        t.bf16(q + "norm0.weight", {1024});
        t.bf16(q + "norm1.weight", {1024});
    }

    nlohmann::ordered_json text;
    text["model_type"] = "kimi_linear";
    text["architectures"] = {"KimiLinearForCausalLM"};
    text["hidden_size"] = H;
    text["num_hidden_layers"] = L;
    text["vocab_size"] = V;
    text["max_position_embeddings"] = 1048576;
    text["num_attention_heads"] = NH;
    text["num_key_value_heads"] = NH;
    text["intermediate_size"] = DI;
    text["first_k_dense_replace"] = 1;
    text["moe_layer_freq"] = 1;
    text["num_experts"] = E;
    text["num_experts_per_token"] = 16;
    text["num_shared_experts"] = 2;
    text["moe_intermediate_size"] = I;
    text["routed_expert_hidden_size"] = LAT;
    text["latent_moe_use_norm"] = true;
    text["moe_router_activation_func"] = "sigmoid";
    text["moe_renormalize"] = true;
    text["routed_scaling_factor"] = 1.0;
    text["topk_method"] = "noaux_tc";
    text["use_grouped_topk"] = true;
    text["num_expert_group"] = 1;
    text["topk_group"] = 1;
    text["q_lora_rank"] = 1536;
    text["kv_lora_rank"] = 512;
    text["qk_nope_head_dim"] = 128;
    text["qk_rope_head_dim"] = 64;
    text["v_head_dim"] = 128;
    text["mla_use_nope"] = true;
    text["mla_use_output_gate"] = true;
    text["num_nextn_predict_layers"] = 0;
    text["linear_attn_config"] = {{"num_heads", NH},          {"head_dim", 128},          {"short_conv_kernel_size", 4},
                                  {"full_attn_layers", fullAttn}, {"kda_layers", kda}};
    nlohmann::ordered_json q;
    q["quant_method"] = "compressed-tensors";
    q["format"] = "mxfp4-pack-quantized";
    q["config_groups"] = {{"group_0",
                           {{"format", "mxfp4-pack-quantized"},
                            {"targets", {"Linear"}},
                            {"weights",
                             {{"num_bits", 4}, {"type", "float"}, {"group_size", 32}, {"strategy", "group"}, {"symmetric", true}}}}}};
    q["ignore"] = {"re:.*self_attn.*", "re:.*shared_experts.*", "re:.*mlp\\.(gate|up|gate_up|down)_proj.*",
                   "re:.*lm_head.*", "re:.*vision_tower.*", "re:.*mm_projector.*"};
    text["quantization_config"] = q;
    nlohmann::ordered_json c;
    c["architectures"] = {"KimiK3ForConditionalGeneration"};
    c["model_type"] = "kimi_k3";
    c["tie_word_embeddings"] = false;
    c["text_config"] = text;
    c["vision_config"] = {{"vt_hidden_size", 1024}, {"vt_num_hidden_layers", 27}, {"patch_size", 14}};
    c["ckpt_atlas_synthetic"] = true;
    return {"kimi-k3", std::move(t.out), std::move(c), 96, static_cast<std::int64_t>(E), 0x5eedc3};
}

} // namespace atlas::synth
