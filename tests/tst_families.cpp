// A new checkpoint, counted right: other MoE families' naming and packed formats. Each layout is
// header-faithful (the real names, dtypes and shapes; sparse data) and every expected figure is
// worked out here from the config's numbers, then checked against the published anchors.
#include "analysis.h"
#include "byte_source.h"
#include "cache_budget.h"
#include "report.h"
#include "capacity_plan.h"
#include "checkpoint_reader.h"
#include "explain.h"
#include "fixture_writer.h"
#include "layout_arithmetic.h"
#include "cli_run.h"

#include <QFileInfo>
#include <fstream>
#include <bit>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

using namespace atlas;
using fixture::Tensor;
using cli::figuresRender;
using cli::inspectJson;

namespace {

CheckpointAnalysis open(const QString &dir, Checkpoint *out = nullptr)
{
    LocalDirectorySource source(dir.toStdString());
    Checkpoint ckpt = readCheckpoint(source);
    CheckpointAnalysis a = analyze(ckpt);
    if (out) *out = std::move(ckpt);
    return a;
}

std::uint64_t category(const CheckpointAnalysis &a, Category c)
{
    return a.budget.byCategory[static_cast<std::size_t>(c)];
}

std::string formatOf(const CheckpointAnalysis &a, Category c)
{
    for (const auto &row : a.quantLayout)
        if (row.category == c) return row.format;
    return {};
}

} // namespace

class TestFamilies : public QObject
{
    Q_OBJECT

private slots:
    void mixtral8x7b()
    {
        // Mixtral-8x7B: block_sparse_moe.experts.N.w1/w2/w3 and block_sparse_moe.gate, GQA attention.
        const std::uint64_t h = 4096, layers = 32, experts = 8, k = 2, inter = 14336, vocab = 32000,
                            kvHeads = 8, headDim = 128;
        nlohmann::json config = {{"model_type", "mixtral"},     {"hidden_size", h},
                                 {"num_hidden_layers", layers}, {"num_local_experts", experts},
                                 {"num_experts_per_tok", k},    {"intermediate_size", inter},
                                 {"num_attention_heads", 32},   {"num_key_value_heads", kvHeads},
                                 {"vocab_size", vocab}};
        std::vector<Tensor> t;
        for (std::uint64_t l = 0; l < layers; ++l) {
            const std::string p = "model.layers." + std::to_string(l) + ".";
            t.push_back({p + "self_attn.q_proj.weight", "BF16", {h, h}});
            t.push_back({p + "self_attn.k_proj.weight", "BF16", {kvHeads * headDim, h}});
            t.push_back({p + "self_attn.v_proj.weight", "BF16", {kvHeads * headDim, h}});
            t.push_back({p + "self_attn.o_proj.weight", "BF16", {h, h}});
            t.push_back({p + "block_sparse_moe.gate.weight", "BF16", {experts, h}});
            for (std::uint64_t e = 0; e < experts; ++e) {
                const std::string x = p + "block_sparse_moe.experts." + std::to_string(e) + ".";
                t.push_back({x + "w1.weight", "BF16", {inter, h}});
                t.push_back({x + "w2.weight", "BF16", {h, inter}});
                t.push_back({x + "w3.weight", "BF16", {inter, h}});
            }
            t.push_back({p + "input_layernorm.weight", "BF16", {h}});
            t.push_back({p + "post_attention_layernorm.weight", "BF16", {h}});
        }
        t.push_back({"model.embed_tokens.weight", "BF16", {vocab, h}});
        t.push_back({"model.norm.weight", "BF16", {h}});
        t.push_back({"lm_head.weight", "BF16", {vocab, h}});
        QTemporaryDir dir;
        fixture::writeCheckpoint(dir.path().toStdString(), config, t);
        const CheckpointAnalysis a = open(dir.path());

        const std::uint64_t routed = layers * experts * 3 * inter * h;
        const std::uint64_t attention = layers * (2 * h * h + 2 * kvHeads * headDim * h);
        const std::uint64_t router = layers * experts * h;
        const std::uint64_t rest = attention + router + layers * 2 * h + 2 * vocab * h + h;
        QCOMPARE(category(a, Category::RoutedExperts), routed);
        QCOMPARE(category(a, Category::Router), router);
        QCOMPARE(category(a, Category::Other), std::uint64_t(0));
        QCOMPARE(a.budget.total, routed + rest);
        QCOMPARE(*a.budget.activatedPerToken, rest + routed * k / experts);
        // The published anchors: 46.7 B total, 12.9 B active.
        QCOMPARE(qRound64(double(a.budget.total) / 1e8), qint64(467));
        QCOMPARE(qRound64(double(*a.budget.activatedPerToken) / 1e8), qint64(129));
        for (const auto &l : a.layers) {
            QCOMPARE(l.kind, LayerKind::Moe);
            QCOMPARE(l.routedExperts, int(experts));
        }
        // GQA: K and V of 8 heads x 128 per layer, in BF16; no sliding window, no indexer.
        Checkpoint ckpt;
        open(dir.path(), &ckpt);
        CacheOptions opt;
        opt.contextTokens = 32768;
        const CacheBudget c = computeCacheBudget(ckpt, a, opt);
        QVERIFY2(c.available, c.reason.c_str());
        QCOMPARE(c.bytesPerToken, layers * 2 * kvHeads * headDim * 2);
        QCOMPARE(c.totalBytes, c.bytesPerToken * 32768);
        QCOMPARE(c.attention.size(), std::size_t(1));
        QCOMPARE(c.attention[0].kind, AttentionKind::Full);
        opt.kvDtype = KvDtype::FP8;
        QCOMPARE(computeCacheBudget(ckpt, a, opt).bytesPerToken, layers * 2 * kvHeads * headDim);
        opt.kvDtype = KvDtype::FP8_DS_MLA; // MLA's layout: it does not apply, and says why
        const CacheBudget misfit = computeCacheBudget(ckpt, a, opt);
        QVERIFY(misfit.kvDtypeMisfit && !misfit.available);
        QVERIFY(misfit.reason.find("GQA") != std::string::npos);
        QByteArray err;
        QVERIFY2(figuresRender(dir.path(), &err), err.constData());

        // The router has no bias: softmax routing (no scoring_func), every MoE layer simulated, and the
        // bias variants equal the reference.
        const auto report = inspectJson(dir.path(), {QStringLiteral("--simulate"), QStringLiteral("--tokens"),
                                                     QStringLiteral("512")}, &err);
        QVERIFY2(report.is_object(), err.constData());
        QCOMPARE(report["biases"]["kind"].get<std::string>(), std::string("none"));
        QCOMPARE(report["biases"]["tensors"].get<int>(), 0);
        const auto &routing = report["routing"];
        QCOMPARE(routing["router"]["scoring"].get<std::string>(), std::string("softmax"));
        QCOMPARE(routing["router"]["bias"].get<std::string>(), std::string("none"));
        QCOMPARE(routing["router"]["experts"].get<int>(), int(experts));
        QCOMPARE(routing["router"]["topk"].get<int>(), int(k));
        QCOMPARE(routing["layers"].size(), std::size_t(layers));
        double logitsChanged = 0;
        for (const auto &l : routing["layers"]) {
            QCOMPARE(l["changed_set_fraction"]["bias_bf16"].get<double>(), 0.0);
            QCOMPARE(l["weight_l1"]["bias_bf16"].get<double>(), 0.0);
            QCOMPARE(l["changed_set_fraction"]["both_bf16"].get<double>(),
                     l["changed_set_fraction"]["logits_bf16"].get<double>());
            logitsChanged += l["changed_set_fraction"]["logits_bf16"].get<double>();
        }
        QVERIFY(logitsChanged > 0); // BF16 logits do move some tokens, bias or not
    }

    void qwen3Moe30bA3b()
    {
        // Qwen3-30B-A3B: mlp.experts.N.{gate,up,down}_proj, mlp.gate, GQA with q/k norms, untied head.
        const std::uint64_t h = 2048, layers = 48, experts = 128, k = 8, inter = 768, vocab = 151936,
                            heads = 32, kvHeads = 4, headDim = 128;
        nlohmann::json config = {{"model_type", "qwen3_moe"},    {"hidden_size", h},
                                 {"num_hidden_layers", layers},  {"num_experts", experts},
                                 {"num_experts_per_tok", k},     {"moe_intermediate_size", inter},
                                 {"num_attention_heads", heads}, {"num_key_value_heads", kvHeads},
                                 {"head_dim", headDim},          {"vocab_size", vocab},
                                 {"decoder_sparse_step", 1},     {"mlp_only_layers", nlohmann::json::array()},
                                 {"norm_topk_prob", true}};
        std::vector<Tensor> t;
        for (std::uint64_t l = 0; l < layers; ++l) {
            const std::string p = "model.layers." + std::to_string(l) + ".";
            t.push_back({p + "self_attn.q_proj.weight", "BF16", {heads * headDim, h}});
            t.push_back({p + "self_attn.k_proj.weight", "BF16", {kvHeads * headDim, h}});
            t.push_back({p + "self_attn.v_proj.weight", "BF16", {kvHeads * headDim, h}});
            t.push_back({p + "self_attn.o_proj.weight", "BF16", {h, heads * headDim}});
            t.push_back({p + "self_attn.q_norm.weight", "BF16", {headDim}});
            t.push_back({p + "self_attn.k_norm.weight", "BF16", {headDim}});
            t.push_back({p + "mlp.gate.weight", "BF16", {experts, h}});
            for (std::uint64_t e = 0; e < experts; ++e) {
                const std::string x = p + "mlp.experts." + std::to_string(e) + ".";
                t.push_back({x + "gate_proj.weight", "BF16", {inter, h}});
                t.push_back({x + "up_proj.weight", "BF16", {inter, h}});
                t.push_back({x + "down_proj.weight", "BF16", {h, inter}});
            }
            t.push_back({p + "input_layernorm.weight", "BF16", {h}});
            t.push_back({p + "post_attention_layernorm.weight", "BF16", {h}});
        }
        t.push_back({"model.embed_tokens.weight", "BF16", {vocab, h}});
        t.push_back({"model.norm.weight", "BF16", {h}});
        t.push_back({"lm_head.weight", "BF16", {vocab, h}});
        QTemporaryDir dir;
        fixture::writeCheckpoint(dir.path().toStdString(), config, t);
        Checkpoint ckpt;
        const CheckpointAnalysis a = open(dir.path(), &ckpt);
        const std::uint64_t routed = layers * experts * 3 * inter * h;
        const std::uint64_t attention =
            layers * (2 * heads * headDim * h + 2 * kvHeads * headDim * h + 2 * headDim);
        const std::uint64_t rest = attention + layers * (experts * h + 2 * h) + 2 * vocab * h + h;
        QCOMPARE(category(a, Category::Other), std::uint64_t(0));
        QCOMPARE(a.budget.total, routed + rest);
        QCOMPARE(*a.budget.activatedPerToken, rest + routed * k / experts);
        // The published anchors: 30.5 B total, 3.3 B active (3,353,032,704: the card truncates).
        QCOMPARE(qRound64(double(a.budget.total) / 1e8), qint64(305));
        QCOMPARE(*a.budget.activatedPerToken / 100000000, std::uint64_t(33));
        for (const auto &w : a.warnings) // decoder_sparse_step 1: every layer MoE, as on disk
            QVERIFY2(w.find("disagree with the tensors") == std::string::npos, w.c_str());
        // GQA cache: 48 layers x K and V of 4 heads x 128 in BF16.
        QCOMPARE(computeCacheBudget(ckpt, a, {}).bytesPerToken, layers * 2 * kvHeads * headDim * 2);
    }

    void gptOss120b()
    {
        // gpt-oss-120b: MXFP4 fused experts (*_blocks U8 [E, out, in/32, 16] + *_scales), mlp.router with
        // a bias, attention biases and sinks, text under experts_per_token.
        const std::uint64_t h = 2880, layers = 36, experts = 128, k = 4, inter = 2880, vocab = 201088,
                            heads = 64, kvHeads = 8, headDim = 64;
        nlohmann::json config = {{"model_type", "gpt_oss"},
                                 {"hidden_size", h},
                                 {"num_hidden_layers", layers},
                                 {"num_local_experts", experts},
                                 {"experts_per_token", k},
                                 {"intermediate_size", inter},
                                 {"num_attention_heads", heads},
                                 {"num_key_value_heads", kvHeads},
                                 {"head_dim", headDim},
                                 {"vocab_size", vocab},
                                 {"quantization_config", {{"quant_method", "mxfp4"}}},
                                 {"sliding_window", 128}};
        std::vector<std::string> types;
        for (std::uint64_t l = 0; l < layers; ++l)
            types.push_back(l % 2 == 0 ? "sliding_attention" : "full_attention");
        config["layer_types"] = types;
        std::vector<Tensor> t;
        std::uint64_t scaleTensors = 0;
        for (std::uint64_t l = 0; l < layers; ++l) {
            const std::string p = "model.layers." + std::to_string(l) + ".";
            t.push_back({p + "self_attn.q_proj.weight", "BF16", {heads * headDim, h}});
            t.push_back({p + "self_attn.q_proj.bias", "BF16", {heads * headDim}});
            t.push_back({p + "self_attn.k_proj.weight", "BF16", {kvHeads * headDim, h}});
            t.push_back({p + "self_attn.k_proj.bias", "BF16", {kvHeads * headDim}});
            t.push_back({p + "self_attn.v_proj.weight", "BF16", {kvHeads * headDim, h}});
            t.push_back({p + "self_attn.v_proj.bias", "BF16", {kvHeads * headDim}});
            t.push_back({p + "self_attn.o_proj.weight", "BF16", {h, heads * headDim}});
            t.push_back({p + "self_attn.o_proj.bias", "BF16", {h}});
            t.push_back({p + "self_attn.sinks", "BF16", {heads}});
            t.push_back({p + "mlp.router.weight", "BF16", {experts, h}});
            // The router bias as stored (BF16): 0.5 + e/64, layer by layer a little apart.
            std::string bias;
            for (std::uint64_t e = 0; e < experts; ++e) {
                const float v = 0.5f + float(e) / 64.0f + float(l) / 1024.0f;
                const auto bits = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(v) >> 16);
                bias += char(bits & 0xFF);
                bias += char(bits >> 8);
            }
            t.push_back({p + "mlp.router.bias", "BF16", {experts}, bias});
            t.push_back({p + "mlp.experts.gate_up_proj_blocks", "U8", {experts, 2 * inter, h / 32, 16}});
            t.push_back({p + "mlp.experts.gate_up_proj_scales", "U8", {experts, 2 * inter, h / 32}});
            t.push_back({p + "mlp.experts.gate_up_proj_bias", "BF16", {experts, 2 * inter}});
            t.push_back({p + "mlp.experts.down_proj_blocks", "U8", {experts, h, inter / 32, 16}});
            t.push_back({p + "mlp.experts.down_proj_scales", "U8", {experts, h, inter / 32}});
            t.push_back({p + "mlp.experts.down_proj_bias", "BF16", {experts, h}});
            t.push_back({p + "input_layernorm.weight", "BF16", {h}});
            t.push_back({p + "post_attention_layernorm.weight", "BF16", {h}});
            scaleTensors += 2;
        }
        t.push_back({"model.embed_tokens.weight", "BF16", {vocab, h}});
        t.push_back({"model.norm.weight", "BF16", {h}});
        t.push_back({"lm_head.weight", "BF16", {vocab, h}});
        QTemporaryDir dir;
        fixture::writeCheckpoint(dir.path().toStdString(), config, t);
        const CheckpointAnalysis a = open(dir.path());

        const std::uint64_t perExpert =
            2 * inter * h + 2 * inter + h * inter + h; // weights (2 per byte) + biases
        const std::uint64_t routed = layers * experts * perExpert;
        const std::uint64_t attention =
            layers * (2 * heads * headDim * h + heads * headDim +
                      2 * (kvHeads * headDim * h + kvHeads * headDim) + h + heads);
        const std::uint64_t router = layers * (experts * h + experts);
        const std::uint64_t rest = attention + router + layers * 2 * h + 2 * vocab * h + h;
        QCOMPARE(category(a, Category::RoutedExperts), routed);
        QCOMPARE(category(a, Category::Attention), attention);
        QCOMPARE(category(a, Category::Router), router);
        QCOMPARE(category(a, Category::Other), std::uint64_t(0));
        QCOMPARE(a.budget.total, routed + rest);
        QCOMPARE(a.budget.total, std::uint64_t(116829156672)); // the published 116.83 B
        QCOMPARE(*a.budget.activatedPerToken, rest + routed * k / experts);
        QCOMPARE(a.budget.quantScales.tensors, scaleTensors);
        QCOMPARE(formatOf(a, Category::RoutedExperts), std::string("MXFP4 + BF16")); // blocks, and the biases
        QCOMPARE(formatOf(a, Category::Attention), std::string("BF16"));
        QCOMPARE(a.layers.front().routedExperts, int(experts)); // the fused tensors' leading dimension
        QCOMPARE(a.layers.front().kind, LayerKind::Moe);

        for (std::uint64_t l = 0; l < layers; ++l)
            QCOMPARE(int(a.layers[l].mixer), int(l % 2 == 0 ? MixerKind::Sliding : MixerKind::Full));
        // 18 full + 18 sliding (128-token) layers x 2,048 B: the sliding half stops growing at 128.
        Checkpoint ckpt;
        open(dir.path(), &ckpt);
        const std::uint64_t perLayer = 2 * kvHeads * headDim * 2;
        QCOMPARE(perLayer, std::uint64_t(2048));
        for (const std::uint64_t context : {std::uint64_t(64), std::uint64_t(128), std::uint64_t(131072)}) {
            CacheOptions opt;
            opt.contextTokens = context;
            const CacheBudget c = computeCacheBudget(ckpt, a, opt);
            QVERIFY2(c.available, c.reason.c_str());
            QCOMPARE(c.totalBytes,
                     18 * perLayer * context + 18 * perLayer * std::min<std::uint64_t>(context, 128));
            QCOMPARE(c.attention.size(), std::size_t(2));
            // The headline is what grows at long context: the 18 full layers; the windows apart.
            QCOMPARE(c.bytesPerToken, 18 * perLayer);
            QCOMPARE(c.windowBytes, 18 * perLayer * 128);
            QCOMPARE(c.windowBytesPerToken, double(18 * perLayer));
        }
        {
            // The plan uses the same quantities: the tokens that fit beside one sequence's full windows,
            // at what grows per token (vLLM, TP 1 on H200: the windows no longer halve it).
            CacheOptions opt;
            opt.contextTokens = 131072;
            const CacheBudget c = computeCacheBudget(ckpt, a, opt);
            LoadedCheckpoint l{ckpt, a, c};
            PlanOptions po;
            po.gpus = 1;
            po.gpuName = "H200";
            po.gpuMemory = *gpuMemoryFromName("H200");
            po.context = 131072;
            const CapacityPlan plan = planCapacity(l, po);
            const PlanPerGpu &g = plan.perGpu;
            QVERIFY(g.cacheRoomBytes > 0);
            QCOMPARE(g.cacheBytesPerToken, double(18 * perLayer));
            QCOMPARE(g.maxCachedTokens,
                     std::uint64_t((std::uint64_t(g.cacheRoomBytes) - 18 * perLayer * 128) / (18 * perLayer)));
            // The working, as domain.md section 17 writes it: the full layers grow, the windows apart, and
            // the plan's division shows its remainder.
            const Explanations e = explainReport(ckpt.config, a, c);
            const auto find = [](const Explanations &x, const std::string &path) {
                for (const auto &[p, w] : x)
                    if (p == path) return w.expression;
                return std::string();
            };
            QCOMPARE(find(e, "cache.bytes_per_token"), std::string("18*2048"));
            QCOMPARE(find(e, "cache.window_bytes"), std::string("18*2048*128"));
            QCOMPARE(find(e, "cache.total_bytes"), std::string("18*2048*131072 + 18*2048*min(131072,128)"));
            const Explanations pe = explainPlan(plan);
            const std::uint64_t room = std::uint64_t(g.cacheRoomBytes) - 18 * perLayer * 128;
            QCOMPARE(find(pe, "per_gpu.max_cached_tokens"),
                     "(" + std::to_string(g.usableBytes) + " - " + std::to_string(g.weightBytes) + " - " +
                         std::to_string(18 * perLayer * 128) + " - " + std::to_string(room % (18 * perLayer)) + ")/" +
                         std::to_string(18 * perLayer));
            QVERIFY(!find(pe, "sequences_at_context").empty());
        }
        QByteArray err;
        QVERIFY2(figuresRender(dir.path(), &err), err.constData());

        // The router's linear bias is read (byte-exact) and routes inside the logits; the gpt_oss router
        // takes the softmax after the top-K. A BF16 bias is its own BF16 rounding: nothing changes.
        const auto report = inspectJson(dir.path(), {QStringLiteral("--simulate"), QStringLiteral("--tokens"),
                                                     QStringLiteral("512")}, &err);
        QVERIFY2(report.is_object(), err.constData());
        QCOMPARE(report["biases"]["kind"].get<std::string>(), std::string("logit"));
        QCOMPARE(report["biases"]["tensors"].get<std::uint64_t>(), layers);
        QCOMPARE(report["biases"]["bytes_read"].get<std::uint64_t>(), layers * experts * 2);
        const auto &first = report["biases"]["layers"][0];
        QCOMPARE(first["tensor"].get<std::string>(), std::string("model.layers.0.mlp.router.bias"));
        QCOMPARE(first["min"].get<double>(), 0.5);
        QCOMPARE(first["fp32_distinct"].get<int>(), first["bf16_distinct"].get<int>());
        const auto &routing = report["routing"];
        QCOMPARE(routing["router"]["scoring"].get<std::string>(), std::string("softmax_after_topk"));
        QCOMPARE(routing["router"]["bias"].get<std::string>(), std::string("logit"));
        QCOMPARE(routing["layers"].size(), std::size_t(layers));
        for (const auto &l : routing["layers"])
            QCOMPARE(l["changed_set_fraction"]["bias_bf16"].get<double>(), 0.0);
    }

    // MTP layers are counted as the tensors show them (DeepSeek-V4-Flash-0731: mtp.0-mtp.2 under
    // num_nextn_predict_layers: 1), with one warning; a declared MTP layer with no tensors is named once.
    void mtpLayersAsTheTensorsShowThem()
    {
        const std::uint64_t h = 64, inter = 96;
        const auto block = [&](const std::string &p, std::vector<Tensor> &t) {
            t.push_back({p + "self_attn.q_proj.weight", "BF16", {h, h}});
            t.push_back({p + "self_attn.k_proj.weight", "BF16", {h, h}});
            t.push_back({p + "self_attn.v_proj.weight", "BF16", {h, h}});
            t.push_back({p + "self_attn.o_proj.weight", "BF16", {h, h}});
            t.push_back({p + "mlp.gate_proj.weight", "BF16", {inter, h}});
            t.push_back({p + "mlp.up_proj.weight", "BF16", {inter, h}});
            t.push_back({p + "mlp.down_proj.weight", "BF16", {h, inter}});
            t.push_back({p + "input_layernorm.weight", "BF16", {h}});
        };
        const std::uint64_t perBlock = 4 * h * h + 3 * inter * h + h;
        for (const bool apart : {false, true}) { // layers.2-4, or mtp.0-2 (DeepSeek-V4's naming)
            std::vector<Tensor> t;
            for (int l = 0; l < 2; ++l) block("model.layers." + std::to_string(l) + ".", t);
            for (int m = 0; m < 3; ++m) {
                const std::string p = apart ? "mtp." + std::to_string(m) + "." : "model.layers." + std::to_string(2 + m) + ".";
                block(p, t);
                t.push_back({p + "eh_proj.weight", "BF16", {h, 2 * h}});
            }
            t.push_back({"model.norm.weight", "BF16", {h}});
            const nlohmann::json config = {{"model_type", "llama"},       {"hidden_size", h},
                                           {"num_hidden_layers", 2},      {"num_attention_heads", 4},
                                           {"num_key_value_heads", 4},    {"intermediate_size", inter},
                                           {"num_nextn_predict_layers", 1}};
            QTemporaryDir dir;
            fixture::writeCheckpoint(dir.path().toStdString(), config, t);
            const CheckpointAnalysis a = open(dir.path());
            QCOMPARE(a.mainLayers, 2);
            QCOMPARE(a.layerCount, 5); // three MTP layers, not one holding all three blocks
            for (int l = 2; l < 5; ++l) {
                QCOMPARE(a.layers[std::size_t(l)].kind, LayerKind::Mtp);
                QCOMPARE(a.layers[std::size_t(l)].params.elements, perBlock + 2 * h * h);
            }
            const auto says = std::count_if(a.warnings.begin(), a.warnings.end(), [](const std::string &w) {
                return w.find("holds 3 MTP blocks where num_nextn_predict_layers says 1") != std::string::npos;
            });
            QCOMPARE(says, std::ptrdiff_t(1));
        }
        {
            // Declared, none on disk: said once, and nothing sized for it.
            std::vector<Tensor> t;
            for (int l = 0; l < 2; ++l) block("model.layers." + std::to_string(l) + ".", t);
            const nlohmann::json config = {{"model_type", "llama"},    {"hidden_size", h},
                                           {"num_hidden_layers", 2},   {"num_attention_heads", 4},
                                           {"num_key_value_heads", 4}, {"intermediate_size", inter},
                                           {"num_mtp_modules", 7},     {"use_mtp", true}}; // MiniMax's key
            QTemporaryDir dir;
            fixture::writeCheckpoint(dir.path().toStdString(), config, t);
            const CheckpointAnalysis a = open(dir.path());
            QCOMPARE(a.layerCount, 2);
            const auto says = std::count_if(a.warnings.begin(), a.warnings.end(), [](const std::string &w) {
                return w.find("declares 7 MTP layers (num_mtp_modules); none is on disk") != std::string::npos;
            });
            QCOMPARE(says, std::ptrdiff_t(1));
        }
    }

    // A partial download (one of Qwen3-235B's 118 shards holds layer 0 alone): the missing layers are
    // said once and sized nowhere (no cache, not counted as MoE layers).
    void partialDownloadSizesOnlyWhatIsThere()
    {
        const std::uint64_t h = 64, heads = 4, kv = 2, d = 16, experts = 4, inter = 32, L = 5;
        const nlohmann::json config = {{"model_type", "qwen3_moe"},   {"hidden_size", h},
                                       {"num_hidden_layers", L},      {"num_attention_heads", heads},
                                       {"num_key_value_heads", kv},   {"head_dim", d},
                                       {"num_experts", experts},      {"num_experts_per_tok", 2},
                                       {"moe_intermediate_size", inter}};
        std::vector<Tensor> t;
        const std::string p = "model.layers.0.";
        t.push_back({p + "self_attn.q_proj.weight", "BF16", {heads * d, h}});
        t.push_back({p + "self_attn.k_proj.weight", "BF16", {kv * d, h}});
        t.push_back({p + "self_attn.v_proj.weight", "BF16", {kv * d, h}});
        t.push_back({p + "self_attn.o_proj.weight", "BF16", {h, heads * d}});
        t.push_back({p + "mlp.gate.weight", "BF16", {experts, h}});
        for (std::uint64_t e = 0; e < experts; ++e)
            for (const char *w : {"gate_proj", "up_proj"})
                t.push_back({p + "mlp.experts." + std::to_string(e) + "." + w + ".weight", "BF16", {inter, h}});
        for (std::uint64_t e = 0; e < experts; ++e)
            t.push_back({p + "mlp.experts." + std::to_string(e) + ".down_proj.weight", "BF16", {h, inter}});
        t.push_back({p + "input_layernorm.weight", "BF16", {h}});
        QTemporaryDir dir;
        fixture::writeCheckpoint(dir.path().toStdString(), config, t);
        Checkpoint ckpt;
        const CheckpointAnalysis a = open(dir.path(), &ckpt);
        QCOMPARE(a.mainLayers, int(L));
        QCOMPARE(a.layersWithoutTensors, (std::vector<int>{1, 2, 3, 4}));
        const auto says = std::count_if(a.warnings.begin(), a.warnings.end(), [](const std::string &w) {
            return w == "partial: 4 of 5 layers have no tensors on disk (layers 1–4); nothing is sized for them";
        });
        QCOMPARE(says, std::ptrdiff_t(1));
        for (int i = 1; i < int(L); ++i)
            QCOMPARE(a.layers[std::size_t(i)].mixer, MixerKind::None);
        // The cache holds the one layer on disk: K and V of 2 heads x 16, BF16.
        const CacheBudget c = computeCacheBudget(ckpt, a, {});
        QVERIFY2(c.available, c.reason.c_str());
        QCOMPARE(c.bytesPerToken, std::uint64_t(1 * 2 * kv * d * 2));
        const std::string text = formatSummary(ckpt, a, c);
        QVERIFY2(text.find("5 main (0 dense, 1 MoE, 4 without tensors on disk)") != std::string::npos, text.c_str());
    }

    // Host-resident n-gram memories, as DeepSeek-V4.1 (layers.N.engram.embed, FP8 rows with E8M0 row
    // scales; fastllm deepseekv41.cpp GetTensorMap) and Qwen3.8-Flash-Next (layers.N.ple.ple_embedding.
    // ngram_embedding.shard_K; transformers modeling_qwen4_exp.py Qwen4ExpTextNGramEmbedding) store them:
    // in the total, active only for the rows a token reads, placed in host memory by the plan.
    void hostTablesStayOffTheGpu()
    {
        const std::uint64_t h = 64, heads = 4, kv = 2, d = 16, L = 3, rows = 1000, width = 32, ngram = 4,
                            nh = 2;
        const nlohmann::json config = {{"model_type", "deepseek_v41"}, {"hidden_size", h},
                                       {"num_hidden_layers", L},       {"num_attention_heads", heads},
                                       {"num_key_value_heads", kv},    {"head_dim", d},
                                       {"engram_max_ngram_size", ngram}, {"engram_n_heads", nh},
                                       {"vocab_size", 128}};
        std::vector<Tensor> t;
        t.push_back({"model.embed_tokens.weight", "BF16", {128, h}});
        for (std::uint64_t i = 0; i < L; ++i) {
            const std::string p = "model.layers." + std::to_string(i) + ".";
            for (const char *w : {"q_proj", "o_proj"})
                t.push_back({p + "self_attn." + w + ".weight", "BF16", {heads * d, h}});
            for (const char *w : {"k_proj", "v_proj"})
                t.push_back({p + "self_attn." + w + ".weight", "BF16", {kv * d, h}});
            t.push_back({p + "mlp.up_proj.weight", "BF16", {2 * h, h}});
            t.push_back({p + "input_layernorm.weight", "BF16", {h}});
        }
        // Two memories (layers 0 and 2), the second split in two tensors of the same width.
        t.push_back({"model.layers.0.engram.embed.weight", "F8_E4M3", {rows, width}});
        t.push_back({"model.layers.0.engram.embed.scale", "F8_E8M0", {rows, width / 32}});
        t.push_back({"model.layers.0.engram.wkv.weight", "BF16", {h, width * 6}});
        t.push_back({"model.layers.2.engram.embed.shard_0.weight", "F8_E4M3", {rows / 2, width}});
        t.push_back({"model.layers.2.engram.embed.shard_1.weight", "F8_E4M3", {rows / 2, width}});
        // A tower no row of the encoder table names: numbered blocks of its own beside the decoder's.
        t.push_back({"model.hearing.layers.0.attn.qkv.weight", "BF16", {3 * h, h}});
        t.push_back({"model.hearing.layers.1.attn.qkv.weight", "BF16", {3 * h, h}});
        t.push_back({"model.hearing.proj.weight", "BF16", {h, h}});
        QTemporaryDir dir;
        fixture::writeCheckpoint(dir.path().toStdString(), config, t);
        Checkpoint ckpt;
        const CheckpointAnalysis a = open(dir.path(), &ckpt);
        const auto &b = a.budget;
        QCOMPARE(b.otherTensors.size(), std::size_t(0));
        QCOMPARE(category(a, Category::HostTables), 2 * rows * width); // scales are not parameters
        QCOMPARE(a.hostTables.size(), std::size_t(3));
        QCOMPARE(a.hostTableBytes, 2 * rows * width + rows * (width / 32));
        // A token reads (4 - 1) x 2 rows from each of the two memories.
        const std::uint64_t read = 2 * (ngram - 1) * nh * width;
        QCOMPARE(b.activeByCategory[std::size_t(Category::HostTables)], read);
        QVERIFY2(b.activationNote.find("only the rows a token reads (6 rows each") != std::string::npos,
                 b.activationNote.c_str());
        // The projection runs on the GPU, every token.
        QCOMPARE(b.activeByCategory[std::size_t(Category::Embedding)], 128 * h + h * width * 6);
        // The tower: encoders, not decoder layers 0 and 1, and said once.
        QCOMPARE(category(a, Category::Encoders), 2 * 3 * h * h + h * h);
        QCOMPARE(b.activeByCategory[std::size_t(Category::Encoders)], std::uint64_t(0));
        QCOMPARE(a.layers[0].params.tensors, std::uint64_t(6 + 2)); // + the table and wkv (its scale is a scale)
        QCOMPARE(std::count_if(a.warnings.begin(), a.warnings.end(),
                               [](const std::string &w) { return w.starts_with("model.hearing.* holds numbered"); }),
                 std::ptrdiff_t(1));
        // No routed experts: everything else is active.
        QCOMPARE(*b.activatedPerToken, b.total - category(a, Category::HostTables) - category(a, Category::Encoders) + read);

        // The plan puts the tables in host memory: one GPU holds every other byte.
        const CacheBudget c = computeCacheBudget(ckpt, a, {});
        LoadedCheckpoint l{ckpt, a, c};
        PlanOptions po;
        po.gpus = 1;
        po.gpuMemory = *gpuMemoryFromName("H100");
        po.context = 1000;
        const CapacityPlan plan = planCapacity(l, po);
        QCOMPARE(plan.hostBytes, a.hostTableBytes);
        QCOMPARE(plan.perGpu.weightBytes, ckpt.tensorBytes() - a.hostTableBytes);
        QVERIFY(std::any_of(plan.notes.begin(), plan.notes.end(),
                            [](const std::string &n) { return n.starts_with("Host memory: "); }));
        QByteArray err;
        const nlohmann::json r = inspectJson(dir.path(), {}, &err);
        QVERIFY2(r.is_object(), err.constData());
        const nlohmann::json pj = cli::planJson(dir.path(), {QStringLiteral("--gpu"), QStringLiteral("H100"), QStringLiteral("--gpus"), QStringLiteral("1")}, &err);
        QVERIFY2(pj.is_object(), err.constData());
        QCOMPARE(pj["host_bytes"].get<std::uint64_t>(), a.hostTableBytes);
        QCOMPARE(pj["per_gpu"]["weight_bytes"].get<std::uint64_t>(), ckpt.tensorBytes() - a.hostTableBytes);
        QCOMPARE(r["parameters"]["host_tables"]["parameters"].get<std::uint64_t>(), 2 * rows * width);
        QCOMPARE(r["parameters"]["host_tables"]["active_per_token"].get<std::uint64_t>(), read);
        QCOMPARE(r["parameters"]["host_tables"]["bytes"].get<std::uint64_t>(), a.hostTableBytes);
    }

    // Formats declared outside quantization_config: ModelOpt's sibling hf_quant_config.json (sglang #25820:
    // DeepSeek-V4-NVFP4 says fp8 in config.json and moe_quant_algo NVFP4 beside it), DeepSeek's
    // expert_dtype, and MLX's U32 words with .scales / .biases (mlx_lm "quantization": {bits, group_size}).
    void formatsDeclaredApart()
    {
        const std::uint64_t h = 64, inter = 32, experts = 2;
        auto moeTensors = [&](bool nvfp4) {
            std::vector<Tensor> t;
            const std::string p = "model.layers.0.mlp.";
            t.push_back({p + "gate.weight", "BF16", {experts, h}});
            for (std::uint64_t e = 0; e < experts; ++e) {
                const std::string x = p + "experts." + std::to_string(e) + ".up_proj.";
                if (nvfp4) {
                    t.push_back({x + "weight", "U8", {inter, h / 2}});
                    t.push_back({x + "weight_scale", "F8_E4M3", {inter, h / 16}});
                    t.push_back({x + "weight_scale_2", "F32", {}});
                } else {
                    t.push_back({x + "weight", "BF16", {inter, h}});
                }
            }
            return t;
        };
        const nlohmann::json config = {{"model_type", "deepseek_v3"}, {"hidden_size", h}, {"num_hidden_layers", 1},
                                       {"n_routed_experts", experts},  {"num_experts_per_tok", 1},
                                       {"quantization_config", {{"quant_method", "fp8"}}}};
        const nlohmann::json sidecar = {
            {"producer", {{"name", "modelopt"}}},
            {"quantization",
             {{"quant_algo", "FP8"}, {"moe_quant_algo", "NVFP4"}, {"group_size", 16}, {"kv_cache_quant_algo", "FP8"}}}};
        QByteArray err;
        for (const bool nvfp4 : {true, false}) {
            QTemporaryDir dir;
            fixture::writeCheckpoint(dir.path().toStdString(), config, moeTensors(nvfp4));
            std::ofstream(dir.path().toStdString() + "/hf_quant_config.json") << sidecar.dump();
            const nlohmann::json r = inspectJson(dir.path(), {}, &err);
            QVERIFY2(r.is_object(), err.constData());
            QCOMPARE(r["quantization"]["experts_declared"]["format"].get<std::string>(), std::string("NVFP4"));
            QCOMPARE(r["quantization"]["experts_declared"]["from"].get<std::string>(), std::string("hf_quant_config.json"));
            QCOMPARE(r["quantization"]["hf_quant_config"]["kv_cache_quant_algo"].get<std::string>(), std::string("FP8"));
            QCOMPARE(r["parameters"]["by_category"]["routed_experts"].get<std::uint64_t>(), experts * inter * h);
            const std::string warnings = r["warnings"].dump();
            const bool told = warnings.find("hf_quant_config.json declares the routed experts NVFP4, but their "
                                            "tensors are BF16") != std::string::npos;
            QVERIFY2(told == !nvfp4, warnings.c_str());
        }
        // expert_dtype at the top of config.json (DeepSeek's reference config), against BF16 experts.
        {
            QTemporaryDir dir;
            nlohmann::json c = config;
            c["expert_dtype"] = "fp4";
            fixture::writeCheckpoint(dir.path().toStdString(), c, moeTensors(false));
            const nlohmann::json r = inspectJson(dir.path(), {}, &err);
            QVERIFY2(r.is_object(), err.constData());
            QCOMPARE(r["quantization"]["experts_declared"]["from"].get<std::string>(), std::string("expert_dtype"));
            QVERIFY(r["warnings"].dump().find("expert_dtype declares the routed experts fp4") != std::string::npos);
        }
        // The sibling is optional: nested past the limit, it is named and ignored, never the load's failure.
        {
            QTemporaryDir dir;
            fixture::writeCheckpoint(dir.path().toStdString(), config, moeTensors(true));
            std::ofstream(dir.path().toStdString() + "/hf_quant_config.json")
                << std::string(100000, '[') << std::string(100000, ']');
            const nlohmann::json r = inspectJson(dir.path(), {}, &err);
            QVERIFY2(r.is_object(), err.constData());
            QVERIFY2(r["warnings"].dump().find("hf_quant_config.json: nests objects and arrays more than 512") !=
                         std::string::npos,
                     r["warnings"].dump().c_str());
            QVERIFY(!r["quantization"].contains("hf_quant_config"));
        }
        // MLX: 4 bits in U32 words (8 values a word), one module at 6 (mlx packs across words); scales and
        // biases per 64.
        {
            QTemporaryDir dir;
            const nlohmann::json mlx = {{"model_type", "qwen3"},
                                        {"hidden_size", 256},
                                        {"num_hidden_layers", 1},
                                        {"quantization",
                                         {{"group_size", 64}, {"bits", 4}, {"model.layers.0.mlp.down_proj", {{"group_size", 64}, {"bits", 6}}}}}};
            std::vector<Tensor> t;
            const std::string p = "model.layers.0.";
            for (const auto &[m, bits] : {std::pair{p + "self_attn.q_proj", 4}, std::pair{p + "mlp.down_proj", 6}}) {
                t.push_back({m + ".weight", "U32", {256, 256 * std::uint64_t(bits) / 32}});
                t.push_back({m + ".scales", "BF16", {256, 256 / 64}});
                t.push_back({m + ".biases", "BF16", {256, 256 / 64}});
            }
            fixture::writeCheckpoint(dir.path().toStdString(), mlx, t);
            const CheckpointAnalysis a = open(dir.path());
            QCOMPARE(a.budget.total, std::uint64_t(2 * 256 * 256));
            QCOMPARE(a.budget.quantScales.tensors, std::uint64_t(4));
            QCOMPARE(formatOf(a, Category::Attention), std::string("MLX 4-bit g64"));
            QCOMPARE(formatOf(a, Category::DenseMlp), std::string("MLX 6-bit g64")); // 6 bits across word boundaries
        }
    }

    // The contest the positional tower rule must win: MiniCPM-V's vision tower (vpm.encoder.layers.N, many
    // small tensors) beside its language model (llm.model.layers.N, num_hidden_layers of them) is the tower;
    // an encoder-decoder whose decoder is the smaller half (distil-whisper) is left as it is.
    void towersByPosition()
    {
        const std::uint64_t h = 64, v = 16;
        std::vector<Tensor> t;
        for (int i = 0; i < 3; ++i) {
            const std::string p = "llm.model.layers." + std::to_string(i) + ".";
            for (const char *w : {"q_proj", "k_proj", "v_proj", "o_proj"})
                t.push_back({p + "self_attn." + w + ".weight", "BF16", {h, h}});
            t.push_back({p + "mlp.up_proj.weight", "BF16", {4 * h, h}});
        }
        t.push_back({"llm.model.embed_tokens.weight", "BF16", {128, h}});
        for (int i = 0; i < 6; ++i)
            for (const char *w : {"q", "k", "v", "o", "fc1", "fc2", "ln1", "ln2", "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8"})
                t.push_back({"vpm.encoder.layers." + std::to_string(i) + "." + w + ".weight", "BF16", {v, v}});
        {
            QTemporaryDir dir;
            fixture::writeCheckpoint(dir.path().toStdString(), {{"model_type", "minicpmv"}, {"num_hidden_layers", 3}}, t);
            const CheckpointAnalysis a = open(dir.path());
            QCOMPARE(a.towerPrefixes, (std::vector<std::string>{"vpm.encoder."}));
            QCOMPARE(category(a, Category::Encoders), 6 * 16 * v * v);
            QCOMPARE(a.mainLayers, 3);
            QVERIFY(a.layersWithoutTensors.empty());
        }
        // The decoder is told by its run of layer numbers, read from names that follow one another with the
        // same prefix (findTowerPrefixes reads those from the previous name): "a." has more elements but
        // 4 layers, "b." the 6 that num_hidden_layers says, so "b." is the decoder and "a." (the larger) is
        // no tower. Were b's run misread, "a." would be the decoder by its elements and "b." a tower. A
        // "blocks" word under a's prefix and a name whose number does not parse change nothing.
        {
            std::vector<Tensor> ab;
            for (int i = 0; i < 4; ++i)
                ab.push_back({"a.layers." + std::to_string(i) + ".fc1.weight", "BF16", {8 * h, h}});
            ab.push_back({"a.blocks.0.fc1.weight", "BF16", {v}});
            ab.push_back({"a.layers.final.weight", "BF16", {v}});
            for (int i = 0; i < 6; ++i)
                ab.push_back({"b.layers." + std::to_string(i) + ".fc1.weight", "BF16", {h, h}});
            QTemporaryDir dir;
            fixture::writeCheckpoint(dir.path().toStdString(), {{"model_type", "llama"}, {"num_hidden_layers", 6}}, ab);
            const CheckpointAnalysis a = open(dir.path());
            QVERIFY(a.towerPrefixes.empty());
            QCOMPARE(a.mainLayers, 6);
            QCOMPARE(category(a, Category::Encoders), std::uint64_t(0));
        }
        std::vector<Tensor> w;
        for (int i = 0; i < 4; ++i)
            w.push_back({"model.encoder.layers." + std::to_string(i) + ".fc1.weight", "BF16", {4 * h, h}});
        for (int i = 0; i < 2; ++i)
            w.push_back({"model.decoder.layers." + std::to_string(i) + ".fc1.weight", "BF16", {4 * h, h}});
        {
            QTemporaryDir dir;
            fixture::writeCheckpoint(dir.path().toStdString(), {{"model_type", "whisper"}, {"num_hidden_layers", 4}}, w);
            QVERIFY(open(dir.path()).towerPrefixes.empty());
        }
        // A header naming a hundred "towers" is not a model's: one line, and none is obeyed (every name would
        // otherwise be held against every prefix).
        for (int i = 0; i < 100; ++i) w.push_back({"t" + std::to_string(i) + ".blocks.0.w", "BF16", {4}});
        QTemporaryDir dir;
        fixture::writeCheckpoint(dir.path().toStdString(), {{"model_type", "whisper"}, {"num_hidden_layers", 4}}, w);
        const CheckpointAnalysis many = open(dir.path());
        QVERIFY(many.towerPrefixes.empty());
        QCOMPARE(std::count_if(many.warnings.begin(), many.warnings.end(),
                               [](const std::string &x) { return x.starts_with("100 prefixes hold numbered blocks"); }),
                 std::ptrdiff_t(1));
    }

    void mimoKeysAndValuesOfTheirOwnWidth()
    {
        // MiMo-V2.5-Pro-shaped: head_dim 192 for q and k, v_head_dim 128 for v, as the fused qkv_proj
        // proves (128 x 192 + 8 x 192 + 8 x 128 = 27,136 rows); sliding layers with heads of their own
        // (swa_num_key_value_heads, swa_head_dim, swa_v_head_dim; vLLM mimo_v2_flash.py MiMoV2Attention).
        const std::uint64_t h = 1024, layers = 4, heads = 128, kv = 8, qk = 192, v = 128, swaKv = 16, window = 128;
        nlohmann::json config = {{"model_type", "mimo_v2"},
                                 {"hidden_size", h},
                                 {"num_hidden_layers", layers},
                                 {"num_attention_heads", heads},
                                 {"num_key_value_heads", kv},
                                 {"head_dim", qk},
                                 {"v_head_dim", v},
                                 {"swa_num_attention_heads", heads},
                                 {"swa_num_key_value_heads", swaKv},
                                 {"swa_head_dim", qk},
                                 {"swa_v_head_dim", v},
                                 {"sliding_window", window},
                                 {"hybrid_layer_pattern", {0, 1, 1, 1}}};
        std::vector<Tensor> t;
        for (std::uint64_t l = 0; l < layers; ++l) {
            const std::string p = "model.layers." + std::to_string(l) + ".";
            const std::uint64_t k = l == 0 ? kv : swaKv;
            t.push_back({p + "self_attn.qkv_proj.weight", "BF16", {heads * qk + k * qk + k * v, h}});
            t.push_back({p + "self_attn.o_proj.weight", "BF16", {h, heads * v}});
            t.push_back({p + "input_layernorm.weight", "BF16", {h}});
        }
        t.push_back({"model.norm.weight", "BF16", {h}});
        QCOMPARE(heads * qk + kv * qk + kv * v, std::uint64_t(27136));
        QTemporaryDir dir;
        fixture::writeCheckpoint(dir.path().toStdString(), config, t);
        Checkpoint ckpt;
        const CheckpointAnalysis a = open(dir.path(), &ckpt);
        const CacheBudget c = computeCacheBudget(ckpt, a, {});
        QVERIFY2(c.available, c.reason.c_str());
        const std::uint64_t full = kv * (qk + v) * 2, sliding = swaKv * (qk + v) * 2;
        QCOMPARE(full, std::uint64_t(5120)); // not 6,144: V is 128 wide, not 192
        QCOMPARE(c.bytesPerToken, full);     // one full layer grows
        QCOMPARE(c.windowBytes, 3 * sliding * window);
        QCOMPARE(c.bytesAt(64), full * 64 + 3 * sliding * 64);
        QCOMPARE(c.bytesAt(1000), full * 1000 + 3 * sliding * window);

        // On 16 GPUs each group splits by its own KV heads (vLLM mimo_v2_flash.py MiMoV2Attention builds
        // the sliding layers' attention with swa_num_key_value_heads, and Attention divides a layer's
        // KV heads by the TP size, at least one per rank): the full layer's 8 heads go one to a GPU and
        // are kept twice, the sliding layers' 16 one to a GPU.
        LoadedCheckpoint l{ckpt, a, c};
        PlanOptions po;
        po.gpus = 16;
        po.gpuMemory = *gpuMemoryFromName("H200");
        po.context = 1000;
        const CapacityPlan plan = planCapacity(l, po);
        QCOMPARE(plan.perGpu.cacheBytesPerToken, double(full / kv));
        QCOMPARE(plan.perGpu.windowBytesPerSequence, double(3 * sliding * window / swaKv));
        QCOMPARE(plan.perGpu.bytesPerSequence, double(full / kv * 1000 + 3 * sliding * window / swaKv));
    }

    void glm53FlashShapedHybrid()
    {
        // GLM-5.3-Flash's shape, small: KDA layers keep their projections under self_attn.*, DSA layers
        // are MLA with an indexer, mHC tensors beside each block; indexer_types says "full" everywhere.
        const std::uint64_t h = 64, heads = 4, d = 16, kernel = 4, kv = 32, q = 48;
        const std::vector<std::string> types = {"linear_attention", "linear_attention", "deepseek_sparse_attention",
                                                "linear_attention", "linear_attention", "deepseek_sparse_attention"};
        const nlohmann::json config = {{"model_type", "glm5_next"},   {"num_hidden_layers", 6},
                                       {"hidden_size", h},            {"num_attention_heads", heads},
                                       {"layer_types", types},        {"indexer_types", std::vector<std::string>(6, "full")},
                                       {"index_topk", 8},             {"kv_lora_rank", kv},
                                       {"qk_rope_head_dim", 0},       {"n_routed_experts", 4},
                                       {"num_experts_per_tok", 2}};
        std::vector<Tensor> t;
        std::uint64_t linear = 0, attention = 0, indexer = 0, hyper = 0;
        auto add = [&](const std::string &name, std::vector<std::uint64_t> shape, std::uint64_t &sum) {
            std::uint64_t n = 1;
            for (auto x : shape)
                n *= x;
            sum += n;
            t.push_back({name, "BF16", std::move(shape)});
        };
        for (int l = 0; l < 6; ++l) {
            const std::string p = "model.language_model.layers." + std::to_string(l) + ".";
            if (types[std::size_t(l)] == "linear_attention") {
                for (const char *m : {"q_proj", "k_proj", "v_proj", "o_proj"})
                    add(p + "self_attn." + m + ".weight", {heads * d, h}, linear);
                for (const char *m : {"q_conv1d", "k_conv1d", "v_conv1d"})
                    add(p + "self_attn." + m + ".weight", {heads * d, 1, kernel}, linear);
                add(p + "self_attn.f_a_proj.weight", {d, h}, linear);
                add(p + "self_attn.A_log", {heads}, linear);
                add(p + "self_attn.dt_bias", {heads * d}, linear);
            } else {
                add(p + "self_attn.q_a_proj.weight", {q, h}, attention);
                add(p + "self_attn.kv_a_proj_with_mqa.weight", {kv, h}, attention);
                add(p + "self_attn.kv_a_layernorm.weight", {kv}, attention);
                add(p + "self_attn.o_proj.weight", {h, heads * d}, attention);
                add(p + "self_attn.indexer.wk.weight", {d, h}, indexer);
                add(p + "self_attn.indexer.index_kpool_compress_gate.weight", {d, d}, indexer);
            }
            for (const char *m : {"hc_attn_fn", "hc_attn_base", "hc_ffn_scale"})
                add(p + m, {4, 4}, hyper);
            std::uint64_t other = 0;
            add(p + "mlp.gate.weight", {4, h}, other);
            add(p + "mlp.experts.0.down_proj.weight", {h, 8}, other);
            add(p + "input_layernorm.weight", {h}, other);
        }
        std::uint64_t other = 0;
        add("model.language_model.embed_tokens.weight", {100, h}, other);
        add("lm_head.weight", {100, h}, other);
        add("model.language_model.norm.weight", {h}, other);
        add("model.visual.blocks.0.attn.qkv.weight", {3 * h, h}, other); // a vision tower: encoders
        QTemporaryDir dir;
        fixture::writeCheckpoint(dir.path().toStdString(), config, t);
        const CheckpointAnalysis a = open(dir.path());
        QCOMPARE(a.layerCount, 6); // the tower's layer numbers are not decoder layers
        QCOMPARE(category(a, Category::LinearAttention), linear);
        QCOMPARE(category(a, Category::Attention), attention);
        QCOMPARE(category(a, Category::Indexer), indexer);
        QCOMPARE(category(a, Category::HyperConnections), hyper);
        QCOMPARE(category(a, Category::Encoders), 3 * h * h);
        QCOMPARE(category(a, Category::Other), std::uint64_t(0));
        QVERIFY(a.budget.otherTensors.empty());
        // Only the two DSA layers can own an indexer, whatever indexer_types says of the KDA layers.
        QCOMPARE(a.indexShare.full, (std::vector<int>{2, 5}));
        QVERIFY(a.indexShare.shared.empty());
        QVERIFY2(a.indexShare.mismatches.empty(),
                 a.indexShare.mismatches.empty() ? "" : a.indexShare.mismatches.front().c_str());
        QCOMPARE(a.layers[0].attention, std::string("linear_attention"));
        QCOMPARE(a.layers[2].attention, std::string("deepseek_sparse_attention"));
        QCOMPARE(a.layers[0].indexer, IndexerRole::None);
        // Encoders are in the total, not active per text token.
        QCOMPARE(a.budget.activeByCategory[std::size_t(Category::Encoders)], std::uint64_t(0));
    }

    void mismatchesComeInRuns()
    {
        // Every layer said full, none with indexer weights: one line for all of them.
        const nlohmann::json config = {{"model_type", "deepseek_v32"}, {"num_hidden_layers", 12},
                                       {"hidden_size", 8},             {"num_attention_heads", 1},
                                       {"index_topk", 4}};
        std::vector<Tensor> t;
        for (int l = 0; l < 12; ++l)
            t.push_back({"model.layers." + std::to_string(l) + ".self_attn.q_a_proj.weight", "BF16", {8, 8}});
        QTemporaryDir dir;
        fixture::writeCheckpoint(dir.path().toStdString(), config, t);
        const CheckpointAnalysis a = open(dir.path());
        QCOMPARE(a.indexShare.full.size(), std::size_t(12));
        QCOMPARE(a.indexShare.mismatches.size(), std::size_t(1));
        QCOMPARE(a.indexShare.mismatches.front(),
                 std::string("layers 0\u2013" "11 (12 layers): the map says full, but no self_attn.indexer.* "
                             "tensors are on disk"));
    }

    void scheduleAgainstTheTensors()
    {
        // compress_ratios says ratio 4 for layers 0-2, but only layer 3's attention has a compressor;
        // layer_types would say linear for 4 and 5, but their attention is MLA; layer 1 has a hash table.
        const nlohmann::json config = {{"model_type", "deepseek_v4"}, {"num_hidden_layers", 6},
                                       {"hidden_size", 8},            {"num_attention_heads", 1},
                                       {"n_routed_experts", 2},       {"num_hash_layers", 1},
                                       {"compress_ratios", {4, 4, 4, 0, 0, 0, 0}}};
        std::vector<Tensor> t;
        for (int l = 0; l < 6; ++l) {
            const std::string p = "layers." + std::to_string(l) + ".";
            t.push_back({p + "attn.wq_a.weight", "BF16", {8, 8}});
            t.push_back({p + "ffn.gate.weight", "BF16", {2, 8}});
            t.push_back({p + "ffn.experts.0.w1.weight", "BF16", {8, 8}});
            t.push_back({p + "ffn.experts.1.w1.weight", "BF16", {8, 8}});
        }
        t.push_back({"layers.3.attn.compressor.wkv.weight", "BF16", {8, 8}});
        t.push_back({"layers.1.ffn.gate.tid2eid", "I64", {16, 2}});
        QTemporaryDir dir;
        fixture::writeCheckpoint(dir.path().toStdString(), config, t);
        const CheckpointAnalysis a = open(dir.path());
        QCOMPARE(a.scheduleSource, std::string("compress_ratios"));
        const std::vector<std::string> want{
            "layer 0: hash-routed (hash_moe), but no gate.tid2eid table is on disk",
            "layers 0\u2013" "2 (3 layers): the config compresses 4 tokens per row, but no attn.compressor.* tensors "
            "are on disk",
            "layer 1: a gate.tid2eid table is on disk, but mlp_layer_types routes the layer by scores",
            "layer 3: window only (compress ratio 0), but attn.compressor.* tensors are on disk"};
        QCOMPARE(a.scheduleMismatches, want);
        QVERIFY(a.layers[0].hashRouted);
        QVERIFY(a.layers[1].hashRouted); // the table on disk routes it, whatever the config says

        // A layer declared linear whose attention is MLA, and one declared full with a recurrent mixer.
        const nlohmann::json hybrid = {{"model_type", "kimi_linear"}, {"num_hidden_layers", 2}, {"hidden_size", 8},
                                       {"linear_attn_config", {{"kda_layers", {1}}, {"full_attn_layers", {2}}}}};
        QTemporaryDir dir2;
        fixture::writeCheckpoint(dir2.path().toStdString(), hybrid,
                                 {{"model.layers.0.self_attn.kv_a_proj_with_mqa.weight", "BF16", {8, 8}},
                                  {"model.layers.1.self_attn.A_log", "F32", {4}},
                                  {"model.layers.1.self_attn.q_proj.weight", "BF16", {8, 8}}});
        const CheckpointAnalysis b = open(dir2.path());
        const std::vector<std::string> want2{
            "layer 0: linear_attn_config says linear_attention, but the attention tensors are not a recurrent mixer "
            "(no A_log, dt_bias or conv1d)",
            "layer 1: recurrent-mixer tensors (A_log, dt_bias, conv1d) are on disk, but linear_attn_config says "
            "full_attention"};
        QCOMPARE(b.scheduleMismatches, want2);
    }

    void packedFormatsOfTheNextGeneration()
    {
        // MXFP4 compressed-tensors (Kimi-K3): U8 weight_packed, two values a byte, U8 scales per 32.
        const nlohmann::json ct = {
            {"model_type", "kimi_k3"},
            {"quantization_config",
             {{"quant_method", "compressed-tensors"},
              {"config_groups",
               {{"group_0",
                 {{"targets", {"Linear"}}, {"weights", {{"num_bits", 4}, {"type", "float"}, {"group_size", 32}}}}}}}}}};
        QTemporaryDir dir;
        fixture::writeCheckpoint(dir.path().toStdString(), ct,
                                 {{"model.layers.0.mlp.experts.0.up_proj.weight_packed", "U8", {64, 32}},
                                  {"model.layers.0.mlp.experts.0.up_proj.weight_scale", "U8", {64, 2}}});
        const CheckpointAnalysis a = open(dir.path());
        QCOMPARE(a.budget.total, std::uint64_t(64 * 64));
        QCOMPARE(a.budget.quantScales.tensors, std::uint64_t(1));
        QCOMPARE(formatOf(a, Category::RoutedExperts), std::string("FP4 g32 symmetric"));

        // MXFP8 (MiniMax-M3): FP8 weights, not packed, one U8 E8M0 scale per 32 values of a row.
        QTemporaryDir dir2;
        fixture::writeCheckpoint(dir2.path().toStdString(), {{"model_type", "minimax_m3"}},
                                 {{"model.layers.0.self_attn.q_proj.weight", "F8_E4M3", {64, 128}},
                                  {"model.layers.0.self_attn.q_proj.weight_scale_inv", "U8", {64, 4}}});
        const CheckpointAnalysis b = open(dir2.path());
        QCOMPARE(b.budget.total, std::uint64_t(64 * 128));
        QCOMPARE(formatOf(b, Category::Attention), std::string("MXFP8 (FP8 e4m3, E8M0 per 32)"));

        // DeepSeek-V4's FP4 experts: I8 [out, in/2] with an F8_E8M0 scale [out, in/32]: logical [out, in].
        // An I8 tensor whose scale does not fit that shape is counted as stored.
        QTemporaryDir dir3;
        fixture::writeCheckpoint(dir3.path().toStdString(), {{"model_type", "deepseek_v4"}},
                                 {{"layers.0.ffn.experts.0.w1.weight", "I8", {16, 32}},
                                  {"layers.0.ffn.experts.0.w1.scale", "F8_E8M0", {16, 2}},
                                  {"layers.0.ffn.experts.1.w1.weight", "I8", {16, 32}},
                                  {"layers.0.ffn.experts.1.w1.scale", "F8_E8M0", {16, 1}}});
        const CheckpointAnalysis c = open(dir3.path());
        QCOMPARE(c.budget.total, std::uint64_t(16 * 64 + 16 * 32));

        // A module with two scale tensors: the first met (by name, w.scale before w.weight_scale_inv) gives
        // the blocks, though the other one is the tensor after the weight (analysis.cpp, blockScaleOf).
        QTemporaryDir dir4;
        fixture::writeCheckpoint(dir4.path().toStdString(), {{"model_type", "deepseek_v4"}},
                                 {{"layers.0.attn.wq_a.scale", "F8_E8M0", {2, 1}},
                                  {"layers.0.attn.wq_a.weight", "F8_E4M3", {256, 128}},
                                  {"layers.0.attn.wq_a.weight_scale_inv", "F32", {2, 1}}});
        const CheckpointAnalysis d = open(dir4.path());
        QCOMPARE(formatOf(d, Category::Attention), std::string("FP8 e4m3 128x128 ue8m0"));

        // Block scales away from their weights (every scale in a second shard), so that each is looked up in
        // the sorted table rather than taken as the next tensor: 40 modules find theirs, one has none.
        QTemporaryDir dir5;
        std::vector<Tensor> weights, scales;
        for (int e = 0; e <= 40; ++e) {
            const std::string m = "model.layers.0.mlp.experts." + std::to_string(e) + ".up_proj";
            weights.push_back({m + ".weight", "F8_E4M3", {256, 128}});
            if (e < 40) scales.push_back({m + ".weight_scale_inv", "F32", {2, 1}});
        }
        const std::filesystem::path five = dir5.path().toStdString();
        std::ofstream(five / "config.json") << nlohmann::json{{"model_type", "deepseek_v3"}}.dump();
        fixture::writeSafetensors(five / "model-00001-of-00002.safetensors", weights);
        fixture::writeSafetensors(five / "model-00002-of-00002.safetensors", scales);
        nlohmann::json map;
        for (const auto &t : weights)
            map[t.name] = "model-00001-of-00002.safetensors";
        for (const auto &t : scales)
            map[t.name] = "model-00002-of-00002.safetensors";
        std::ofstream(five / "model.safetensors.index.json") << nlohmann::json{{"weight_map", map}}.dump();
        const CheckpointAnalysis f = open(dir5.path());
        QCOMPARE(f.budget.quantScales.tensors, std::uint64_t(40));
        QVERIFY2(formatOf(f, Category::RoutedExperts) == "FP8 e4m3 128x128 + FP8 e4m3",
                 formatOf(f, Category::RoutedExperts).c_str());
    }

    void linearAttentionState()
    {
        // Qwen3-Next-shaped hybrid: three Gated DeltaNet layers, then one full GQA layer, twelve times.
        const std::uint64_t layers = 48, kvHeads = 2, headDim = 256, vHeads = 32, kHeads = 16, kDim = 128,
                            vDim = 128, kernel = 4, h = 2048;
        std::vector<std::string> types;
        for (std::uint64_t l = 0; l < layers; ++l)
            types.push_back(l % 4 == 3 ? "full_attention" : "linear_attention");
        const nlohmann::json config = {{"model_type", "qwen3_next"},     {"num_hidden_layers", layers},
                                       {"hidden_size", h},               {"num_attention_heads", 16},
                                       {"num_key_value_heads", kvHeads}, {"head_dim", headDim},
                                       {"layer_types", types},           {"linear_num_value_heads", vHeads},
                                       {"linear_num_key_heads", kHeads}, {"linear_key_head_dim", kDim},
                                       {"linear_value_head_dim", vDim},  {"linear_conv_kernel_dim", kernel},
                                       {"num_experts", 4},               {"num_experts_per_tok", 2}};
        std::vector<Tensor> t;
        for (std::uint64_t l = 0; l < layers; ++l) {
            const std::string p = "model.layers." + std::to_string(l) + ".";
            if (l % 4 == 3) {
                t.push_back({p + "self_attn.k_proj.weight", "BF16", {kvHeads * headDim, h}});
            } else {
                t.push_back({p + "linear_attn.A_log", "F32", {vHeads}});
                t.push_back({p + "linear_attn.conv1d.weight", "BF16", {2 * kHeads * kDim + vHeads * vDim, 1, kernel}});
            }
            t.push_back({p + "mlp.gate.weight", "BF16", {4, h}});
        }
        QTemporaryDir dir;
        fixture::writeCheckpoint(dir.path().toStdString(), config, t);
        Checkpoint ckpt;
        const CheckpointAnalysis a = open(dir.path(), &ckpt);
        CacheOptions opt;
        opt.contextTokens = 65536;
        const CacheBudget c = computeCacheBudget(ckpt, a, opt);
        QVERIFY2(c.available, c.reason.c_str());
        // Per token: K and V of the 12 full layers only.
        QCOMPARE(c.bytesPerToken, 12 * 2 * kvHeads * headDim * 2);
        // Per sequence, whatever the context: 36 recurrent states (value heads x key dim x value dim, FP32
        // as vLLM keeps them) and convolution windows ((kernel - 1) x conv width, BF16).
        const std::uint64_t conv = 2 * (kernel - 1) * (2 * kHeads * kDim + vHeads * vDim);
        const std::uint64_t state = 4 * vHeads * kDim * vDim + conv;
        QCOMPARE(state, std::uint64_t(2146304));
        QVERIFY(c.fixedStateBytes);
        QCOMPARE(*c.fixedStateBytes, 36 * state);
        QCOMPARE(c.totalBytes, c.bytesPerToken * 65536 + 36 * state);
        bool listed = false;
        for (const auto &g : c.attention)
            if (g.kind == AttentionKind::GatedDeltaNet) {
                listed = true;
                QCOMPARE(g.layers, std::int64_t(36));
                QCOMPARE(*g.stateBytesPerLayer, state);
                QCOMPARE(g.stateDtype, std::string("fp32"));
            }
        QVERIFY(listed);
        // --state-dtype bf16 halves the recurrent part only.
        opt.stateDtype = StateDtype::BF16;
        const CacheBudget half = computeCacheBudget(ckpt, a, opt);
        QCOMPARE(*half.fixedStateBytes, 36 * (2 * vHeads * kDim * vDim + conv));
        QByteArray err;
        QVERIFY2(figuresRender(dir.path(), &err), err.constData());
    }

    void mamba2State()
    {
        // Nemotron-H-shaped: hybrid_override_pattern M-M*-E; Mamba-2 mixers sized by mamba_num_heads x
        // mamba_head_dim (not expand), n_groups, ssm_state_size, conv_kernel; mamba_ssm_cache_dtype decides
        // the SSM state's dtype unless --state-dtype does.
        const std::uint64_t heads = 128, headDim = 64, groups = 8, n = 128, kernel = 4, kv = 8, hd = 128;
        const nlohmann::json config = {{"model_type", "nemotron_h"},   {"num_hidden_layers", 6},
                                       {"hidden_size", 4096},          {"num_attention_heads", 32},
                                       {"num_key_value_heads", kv},    {"head_dim", hd},
                                       {"hybrid_override_pattern", "M-M*-E"},
                                       {"mamba_num_heads", heads},     {"mamba_head_dim", headDim},
                                       {"n_groups", groups},           {"ssm_state_size", n},
                                       {"conv_kernel", kernel},        {"expand", 2},
                                       {"mamba_ssm_cache_dtype", "bfloat16"}};
        std::vector<Tensor> t;
        for (int l : {0, 2})
            t.push_back({"backbone.layers." + std::to_string(l) + ".mixer.A_log", "F32", {heads}});
        t.push_back({"backbone.layers.3.mixer.k_proj.weight", "BF16", {kv * hd, 4096}});
        for (int l : {1, 4, 5})
            t.push_back({"backbone.layers." + std::to_string(l) + ".mixer.up_proj.weight", "BF16", {16, 4096}});
        QTemporaryDir dir;
        fixture::writeCheckpoint(dir.path().toStdString(), config, t);
        Checkpoint ckpt;
        const CheckpointAnalysis a = open(dir.path(), &ckpt);
        QCOMPARE(a.scheduleSource, std::string("hybrid_override_pattern"));
        CacheOptions opt;
        opt.contextTokens = 1000;
        CacheBudget c = computeCacheBudget(ckpt, a, opt);
        QVERIFY2(c.available, c.reason.c_str());
        QCOMPARE(c.bytesPerToken, 1 * 2 * kv * hd * 2); // the one attention layer
        const std::uint64_t conv = (heads * headDim + 2 * groups * n) * (kernel - 1) * 2;
        QCOMPARE(*c.fixedStateBytes, 2 * (conv + heads * headDim * n * 2)); // BF16, as the config says
        opt.stateDtype = StateDtype::FP32;
        c = computeCacheBudget(ckpt, a, opt);
        QCOMPARE(*c.fixedStateBytes, 2 * (conv + heads * headDim * n * 4));
        QCOMPARE(c.totalBytes, c.bytesPerToken * 1000 + *c.fixedStateBytes);
    }

    void glmRepacked_data()
    {
        QTest::addColumn<QString>("format");
        QTest::addColumn<bool>("fullScale");
        QTest::newRow("NVFP4 (ModelOpt)") << QStringLiteral("nvfp4") << false;
        QTest::newRow("compressed-tensors INT4 g64") << QStringLiteral("int4") << false;
        QTest::newRow("AWQ 4-bit") << QStringLiteral("awq") << false;
        // GLM-5.x at full scale: 753,329,940,480 however it is packed.
        QTest::newRow("GLM-5.x NVFP4, full scale") << QStringLiteral("nvfp4") << true;
        QTest::newRow("GLM-5.x INT4, full scale") << QStringLiteral("int4") << true;
    }
    void glmRepacked()
    {
        // The same GLM-style layout as FP8, repacked by the writer: the logical parameters must not change.
        QFETCH(QString, format);
        QFETCH(bool, fullScale);
        auto spec = fullScale ? synth::glm5Fp8() : synth::smallLayout();
        const auto want = expected::budget(spec);
        // Each FP8 linear (one weight_scale_inv apiece) becomes one packed weight and two scale-like tensors.
        std::uint64_t fp8Linears = 0;
        for (const auto &s : synth::layoutTensors(spec))
            fp8Linears += s.name.ends_with(".weight_scale_inv");
        spec.packing = format == QLatin1String("nvfp4")  ? synth::Packing::Nvfp4
                       : format == QLatin1String("int4") ? synth::Packing::Int4
                                                         : synth::Packing::Awq;
        spec.shards = fullScale ? 141 : 3;
        QTemporaryDir dir;
        synth::writeCheckpoint(spec, dir.path().toStdString());
        Checkpoint ckpt;
        const CheckpointAnalysis a = open(dir.path(), &ckpt);
        QCOMPARE(a.budget.total, want.total);
        QCOMPARE(*a.budget.activatedPerToken, want.active);
        QCOMPARE(category(a, Category::RoutedExperts), want.routed);
        QCOMPARE(category(a, Category::Other), std::uint64_t(0));
        QCOMPARE(a.budget.quantScales.tensors, 2 * fp8Linears);
        for (const auto &w : a.warnings)
            QVERIFY2(w.find("packed") == std::string::npos, w.c_str());
        if (fullScale) QCOMPARE(a.budget.total, std::uint64_t(753329940480));
        const std::string routedFormat = format == QLatin1String("nvfp4")  ? "NVFP4 g16"
                                         : format == QLatin1String("int4") ? "INT4 g64 symmetric"
                                                                           : "INT4 (awq)";
        QCOMPARE(formatOf(a, Category::RoutedExperts), routedFormat);
        if (!fullScale) {
            QByteArray err;
            QVERIFY2(figuresRender(dir.path(), &err), err.constData());
        }
    }

    void packedWeightsWithoutTheirBits()
    {
        // compressed-tensors weights whose group gives no num_bits: counted as stored, and said so.
        nlohmann::json config = {{"num_hidden_layers", 1},
                                 {"quantization_config",
                                  {{"quant_method", "compressed-tensors"},
                                   {"config_groups", {{"group_0", {{"targets", {"Linear"}}}}}}}}};
        QTemporaryDir dir;
        fixture::writeCheckpoint(dir.path().toStdString(), config,
                                 {{"model.layers.0.mlp.gate_proj.weight_packed", "I32", {64, 8}}});
        const CheckpointAnalysis a = open(dir.path());
        QCOMPARE(a.budget.total, std::uint64_t(64 * 8));
        bool said = false;
        for (const auto &w : a.warnings)
            said = said || w.find("model.layers.0.mlp.gate_proj.weight_packed") != std::string::npos;
        QVERIFY(said);
    }

    void layerKindsAgainstTheConfig_data()
    {
        QTest::addColumn<QString>("key");
        QTest::newRow("decoder_sparse_step") << QStringLiteral("decoder_sparse_step");
        QTest::newRow("mlp_layer_types") << QStringLiteral("mlp_layer_types");
        QTest::newRow("first_k_dense_replace") << QStringLiteral("first_k_dense_replace");
    }
    void layerKindsAgainstTheConfig()
    {
        // Four layers, MoE on disk at 1 and 3; each dialect declares 1 and 3 too, then 0 and 1 apart.
        QFETCH(QString, key);
        std::vector<Tensor> t;
        for (int l = 0; l < 4; ++l) {
            const std::string p = "model.layers." + std::to_string(l) + ".";
            if (l % 2 == 1) {
                t.push_back({p + "mlp.gate.weight", "BF16", {4, 8}});
                t.push_back({p + "mlp.experts.0.down_proj.weight", "BF16", {8, 16}});
            } else {
                t.push_back({p + "mlp.down_proj.weight", "BF16", {8, 16}});
            }
        }
        std::vector<LayerKind> kinds;
        auto warningsFor = [&](const nlohmann::json &config) {
            QTemporaryDir dir;
            fixture::writeCheckpoint(dir.path().toStdString(), config, t);
            const CheckpointAnalysis a = open(dir.path());
            kinds.clear();
            for (const auto &l : a.layers)
                kinds.push_back(l.kind);
            return a.warnings;
        };
        nlohmann::json agree = {{"num_hidden_layers", 4}, {"num_experts", 4}};
        nlohmann::json disagree = agree;
        if (key == QLatin1String("decoder_sparse_step")) {
            agree["decoder_sparse_step"] = 2;    // (i + 1) % 2 == 0: layers 1, 3
            disagree["decoder_sparse_step"] = 1; // every layer
            disagree["mlp_only_layers"] = {3};   // but 3: layers 0, 1, 2
        } else if (key == QLatin1String("mlp_layer_types")) {
            agree["mlp_layer_types"] = {"dense", "sparse", "dense", "sparse"};
            disagree["mlp_layer_types"] = {"sparse", "sparse", "sparse", "dense"};
        } else {
            agree = nullptr; // first_k_dense_replace cannot declare 1 and 3 alone: only the disagreement
            disagree["first_k_dense_replace"] = 1;
        }
        if (!agree.is_null())
            for (const auto &w : warningsFor(agree))
                QVERIFY2(w.find("disagree with the tensors") == std::string::npos, w.c_str());
        std::string said;
        for (const auto &w : warningsFor(disagree))
            if (w.find("disagree with the tensors") != std::string::npos) said = w;
        // The kinds are the config's; the tensors only cross-check them.
        const std::vector<LayerKind> declared =
            key == QLatin1String("decoder_sparse_step")
                ? std::vector<LayerKind>{LayerKind::Moe, LayerKind::Moe, LayerKind::Moe, LayerKind::Dense}
            : key == QLatin1String("mlp_layer_types")
                ? std::vector<LayerKind>{LayerKind::Moe, LayerKind::Moe, LayerKind::Moe, LayerKind::Dense}
                : std::vector<LayerKind>{LayerKind::Dense, LayerKind::Moe, LayerKind::Moe, LayerKind::Moe};
        QCOMPARE(kinds, declared);
        QVERIFY(!said.empty());
        QVERIFY2(said.find("0 (dense on disk)") != std::string::npos ||
                     said.find("2 (dense on disk)") != std::string::npos,
                 said.c_str());
    }

    void textConfigAndOtherPrefixes()
    {
        // A multimodal wrapper: keys under text_config, the language model under model.language_model.
        nlohmann::json config = {
            {"model_type", "wrapper"},
            {"text_config", {{"num_hidden_layers", 2}, {"num_experts", 4}, {"num_experts_per_tok", 2}}}};
        std::vector<Tensor> t;
        for (int l = 0; l < 2; ++l) {
            const std::string p = "model.language_model.layers." + std::to_string(l) + ".";
            t.push_back({p + "mlp.gate.weight", "BF16", {4, 8}});
            for (int e = 0; e < 4; ++e)
                t.push_back({p + "mlp.experts." + std::to_string(e) + ".down_proj.weight", "BF16", {8, 16}});
            t.push_back({p + "mlp.shared_expert.down_proj.weight", "BF16", {8, 16}});
            t.push_back({p + "mlp.shared_expert_gate.weight", "BF16", {1, 8}});
        }
        t.push_back({"model.language_model.embed_tokens.weight", "BF16", {100, 8}});
        t.push_back({"model.language_model.norm.weight", "BF16", {8}});
        QTemporaryDir dir;
        fixture::writeCheckpoint(dir.path().toStdString(), config, t);
        Checkpoint ckpt;
        const CheckpointAnalysis a = open(dir.path(), &ckpt);
        QCOMPARE(*ckpt.config.numHiddenLayers, std::int64_t(2));
        QCOMPARE(category(a, Category::RoutedExperts), std::uint64_t(2 * 4 * 8 * 16));
        QCOMPARE(category(a, Category::SharedExperts), std::uint64_t(2 * (8 * 16 + 8)));
        QCOMPARE(category(a, Category::Router), std::uint64_t(2 * 4 * 8));
        QCOMPARE(category(a, Category::Embedding), std::uint64_t(800));
        QCOMPARE(category(a, Category::Norms), std::uint64_t(8));
        QCOMPARE(category(a, Category::Other), std::uint64_t(0));
        QCOMPARE(*a.budget.activatedPerToken, a.budget.total - 2 * 4 * 8 * 16 + 2 * 4 * 8 * 16 * 2 / 4);
    }
};

QTEST_GUILESS_MAIN(TestFamilies)
#include "tst_families.moc"
