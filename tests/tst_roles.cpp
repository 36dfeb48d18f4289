// The role table (model/roles.cpp) row by row: a tensor name of each family the row comes from, and
// the role it must get; every row is the deciding row of at least one name, so no row is dead.
#include "analysis.h"
#include "bias_audit.h"
#include "layer_kinds.h"
#include "model_config.h"
#include "roles.h"

#include <QTest>

#include <set>
#include <string>

using namespace atlas;

Q_DECLARE_METATYPE(atlas::Category)

namespace {

// The whole name, as analyze() sees it: placed in a layer or not, then given its role.
Category roleOf(const std::string &name)
{
    return categorize(name, placeOf(name).layer, false);
}

} // namespace

class TestRoles : public QObject
{
    Q_OBJECT

private slots:
    // One row per kind of token mixing, every one named apart; the recurrent rows are exactly those that
    // keep no rows per token, and no recurrent kind grows with the context.
    void aRowPerMixerKind()
    {
        std::set<std::string> names;
        std::set<int> kinds;
        for (const MixerKindRow &r : mixerKinds()) {
            QVERIFY2(names.insert(std::string(r.name)).second, r.name.data());
            QVERIFY(kinds.insert(int(r.kind)).second);
            QCOMPARE(int(mixerKind(r.kind).kind), int(r.kind));
            QVERIFY(!(r.recurrent && r.growsWithContext));
            QVERIFY(!r.label.empty() && !r.tone.empty() && !r.cacheFormula.empty());
            if (r.recurrent) QCOMPARE(int(r.anatomy), int(LayerAttention::Linear));
        }
        QCOMPARE(int(kinds.size()), int(MixerKind::None) + 1); // every enumerator has its row
        QVERIFY(isRecurrentWord("linear_attention") && isRecurrentWord("mamba") && !isRecurrentWord("sliding_attention"));
    }

    void names_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<atlas::Category>("role");
        const std::pair<const char *, Category> rows[] = {
            // GLM-5.x / DeepSeek-V3.2
            {"model.layers.3.mlp.gate.e_score_correction_bias", Category::Router},
            {"model.layers.3.mlp.gate.weight", Category::Router},
            {"model.layers.3.mlp.experts.17.down_proj.weight", Category::RoutedExperts},
            {"model.layers.3.mlp.shared_experts.up_proj.weight_scale_inv", Category::SharedExperts},
            {"model.layers.3.self_attn.indexer.wk.weight", Category::Indexer},
            {"model.layers.3.self_attn.kv_a_proj_with_mqa.weight", Category::Attention},
            {"model.layers.0.mlp.gate_proj.weight", Category::DenseMlp},
            {"model.layers.0.input_layernorm.weight", Category::Norms},
            {"model.embed_tokens.weight", Category::Embedding},
            {"lm_head.weight", Category::Embedding},
            {"model.norm.weight", Category::Norms},
            // llama.cpp's GGUF names (src/llama-arch.cpp LLM_TENSOR_NAMES), each where its original sits
            {"blk.3.exp_probs_b.bias", Category::Router},
            {"blk.3.ffn_gate_inp.weight", Category::Router},
            {"blk.3.ffn_gate_inp_shexp.weight", Category::SharedExperts},
            {"blk.3.indexer.attn_k.weight", Category::Indexer},
            {"blk.3.indexer.k_norm.bias", Category::Indexer},
            {"blk.3.attn_norm.weight", Category::Norms},
            {"blk.3.ffn_norm.weight", Category::Norms},
            {"blk.3.post_attention_norm.weight", Category::Norms},
            {"blk.3.attn_q_a_norm.weight", Category::Attention},
            {"blk.3.attn_kv_a_mqa.weight", Category::Attention},
            {"blk.3.attn_k_b.weight", Category::Attention},
            {"blk.3.attn_q.bias", Category::Attention},
            {"blk.3.ffn_down_exps.weight", Category::RoutedExperts},
            {"blk.3.ffn_up_shexp.weight", Category::SharedExperts},
            {"blk.0.ffn_gate.weight", Category::DenseMlp},
            {"token_embd.weight", Category::Embedding},
            {"output.weight", Category::Embedding},
            {"output_norm.weight", Category::Norms},
            // DeepSeek-V4 (no model. prefix)
            {"embed.weight", Category::Embedding},
            {"head.weight", Category::Embedding},
            {"norm.weight", Category::Norms},
            {"hc_head_fn", Category::HyperConnections},
            {"layers.5.hc_attn_base", Category::HyperConnections},
            {"layers.5.attn.wq_a.weight", Category::Attention},
            {"layers.5.attn.compressor.wkv.weight", Category::Attention},
            {"layers.5.attn.indexer.weights_proj.weight", Category::Indexer},
            {"layers.5.attn_norm.weight", Category::Norms},
            {"layers.5.ffn.gate.bias", Category::Router},
            {"layers.1.ffn.gate.tid2eid", Category::RouterTables},
            {"layers.5.ffn.experts.200.w1.weight", Category::RoutedExperts},
            {"layers.5.ffn.experts.200.w1.scale", Category::RoutedExperts},
            {"layers.5.ffn.shared_experts.w2.weight", Category::SharedExperts},
            {"mtp.0.e_proj.weight", Category::Mtp},
            {"mtp.0.hc_head_fn", Category::Mtp},
            // Qwen3-Next
            {"model.layers.0.linear_attn.in_proj_qkvz.weight", Category::LinearAttention},
            {"mtp.fc.weight", Category::Mtp},
            {"mtp.layers.0.self_attn.q_proj.weight", Category::Mtp},
            {"model.layers.3.mlp.shared_expert_gate.weight", Category::SharedExperts},
            // Nemotron-H
            {"backbone.embeddings.weight", Category::Embedding},
            {"backbone.layers.0.mixer.A_log", Category::LinearAttention},
            {"backbone.layers.0.mixer.D", Category::LinearAttention},
            {"backbone.layers.0.mixer.dt_bias", Category::LinearAttention},
            {"backbone.layers.0.mixer.conv1d.weight", Category::LinearAttention},
            {"backbone.layers.0.mixer.in_proj.weight", Category::LinearAttention},
            {"backbone.layers.0.mixer.out_proj.weight", Category::LinearAttention},
            {"backbone.layers.0.mixer.norm.weight", Category::LinearAttention},
            {"backbone.layers.4.mixer.q_proj.weight", Category::Attention},
            {"backbone.layers.4.mixer.k_proj.weight", Category::Attention},
            {"backbone.layers.4.mixer.v_proj.weight", Category::Attention},
            {"backbone.layers.4.mixer.o_proj.weight", Category::Attention},
            {"backbone.layers.1.mixer.up_proj.weight", Category::DenseMlp},
            {"backbone.layers.2.mixer.experts.3.down_proj.weight", Category::RoutedExperts},
            {"backbone.layers.2.mixer.gate.e_score_correction_bias", Category::Router},
            {"backbone.norm_f.weight", Category::Norms},
            // Mixtral, Kimi, MiniMax
            {"model.layers.1.block_sparse_moe.experts.7.w1.weight", Category::RoutedExperts},
            {"model.layers.1.block_sparse_moe.gate.weight", Category::Router},
            {"model.layers.1.block_sparse_moe.e_score_correction_bias", Category::Router},
            {"model.layers.1.block_sparse_moe.shared_experts.gate_proj.weight", Category::SharedExperts},
            {"model.layers.1.block_sparse_moe.up_proj.weight", Category::DenseMlp},
            {"model.layers.2.self_attn.index_k_proj.weight", Category::Indexer},
            // Kimi-K3's latent MoE: projections every token runs, around the routed experts.
            {"language_model.model.layers.2.mlp.routed_expert_down_proj.weight", Category::DenseMlp},
            {"language_model.model.layers.2.mlp.routed_expert_norm.weight", Category::DenseMlp},
            {"language_model.model.layers.2.mlp.experts.5.down_proj.weight_packed", Category::RoutedExperts},
            {"language_model.model.layers.2.self_attention_res_proj.weight", Category::HyperConnections},
            {"language_model.model.layers.2.self_attention_res_norm.weight", Category::HyperConnections},
            {"language_model.model.layers.2.mlp_res_proj.weight", Category::HyperConnections},
            {"language_model.model.output_attn_res_proj.weight", Category::HyperConnections},
            {"language_model.model.output_attn_res_norm.weight", Category::HyperConnections},
            // gpt-oss, Llama 4, others
            {"model.layers.0.mlp.router.weight", Category::Router},
            {"model.layers.0.mlp.experts.gate_up_proj_blocks", Category::RoutedExperts},
            {"model.layers.0.feed_forward.experts.down_proj", Category::RoutedExperts},
            {"model.layers.0.feed_forward.w1.weight", Category::DenseMlp},
            {"model.layers.0.moe.experts.1.w2.weight", Category::RoutedExperts},
            {"model.layers.0.moe.w2.weight", Category::DenseMlp},
            {"model.layers.0.attention.wqkv.weight", Category::Attention},
            {"transformer.layers.0.self_attention.query_key_value.weight", Category::Attention},
            {"gpt_neox.embed_out.weight", Category::Embedding},
            {"transformer.final_layernorm.weight", Category::Norms},
            {"model.language_model.final_norm.weight", Category::Norms},
            {"model.mamba_layers.0.mamba.A_log", Category::Other},
            {"model.layers.0.mamba.A_log", Category::LinearAttention},
            // Encoders: their own layer numbers are never decoder layers.
            {"vision_tower.encoder.layers.3.mlp.fc1.weight", Category::Encoders},
            {"model.visual.blocks.0.attn.qkv.weight", Category::Encoders},
            {"model.vision_model.layers.0.self_attn.q_proj.weight", Category::Encoders},
            {"vision_encoder.transformer.layers.0.attention.wq.weight", Category::Encoders},
            {"multi_modal_projector.linear_1.weight", Category::Encoders},
            {"mm_projector.0.weight", Category::Encoders},
            {"model.visual.patch_merger.mlp.0.weight", Category::Encoders},
            {"vision_language_adapter.w_in.weight", Category::Encoders},
            {"audio_tower.layers.0.fc1.weight", Category::Encoders},
            {"model.embed_vision.embedding.weight", Category::Encoders},
            {"model.embed_audio.embedding.weight", Category::Encoders},
            {"speech_encoder.conv.weight", Category::Encoders},
            {"audio_encoder.projection.mlp.0.weight", Category::Encoders}, // MiMo-V2.5
            {"model.sam_model.blocks.3.attn.qkv.weight", Category::Encoders}, // DeepSeek-OCR's SAM tower
            {"model.sam_model.neck.0.weight", Category::Encoders},
            {"model.projector.layers.weight", Category::Encoders},
            {"model.image_newline", Category::Encoders},
            {"model.view_seperator", Category::Encoders},
            {"model.language_model.layers.4.layer_scalar", Category::Norms}, // Gemma 4
            // Host-resident n-gram memories: the tables, their hashing constants, the GPU side.
            {"model.language_model.layers.1.ple.ple_embedding.ngram_embedding.shard_127.weight", Category::HostTables},
            {"model.language_model.layers.1.ple.ple_embedding.ngram_heads_vocab_sizes", Category::RouterTables},
            {"model.language_model.layers.1.ple.value_proj.weight", Category::Embedding},
            {"layers.14.engram.embed.weight", Category::HostTables},
            {"layers.14.engram.embed.scale", Category::HostTables},
            {"layers.14.engram.q_weight", Category::Embedding},
            {"model.language_model.layers.3.mlp_hyper_connection.block_inject_weight.weight", Category::HyperConnections},
            {"model.language_model.hyper_connection_mixer.input_mix_weight_down.weight", Category::HyperConnections},
            // Inkling, Tencent Hy4, DeepSeek-V4.1's towers.
            {"model.llm.layers.7.mlp_sconv.weight", Category::HyperConnections},
            {"model.llm.unembed.weight", Category::Embedding},
            {"model.audio.encoder.weight", Category::Encoders},
            {"model.mtp.layers.3.transformer_block.attn.wq_du.weight", Category::Mtp},
            {"model.hc_head.hc_head_base", Category::HyperConnections},
            {"model.mtp_layers.0.eh_proj.weight", Category::Mtp},
            {"vision.blocks.3.attn.wqkv.weight", Category::Encoders},
            {"aligner.w1.weight", Category::Encoders},
            {"image_start", Category::Encoders},
            // No row: position decides (a tensor under experts.N. is a routed expert), then other.
            {"model.layers.4.sparse_block.experts.3.odd_leaf.weight", Category::RoutedExperts},
            {"model.layers.4.something_new.weight", Category::Other},
            {"mystery.weight", Category::Other},
        };
        for (const auto &[name, role] : rows)
            QTest::newRow(name) << QString::fromLatin1(name) << role;
    }

    void names()
    {
        QFETCH(QString, name);
        QFETCH(atlas::Category, role);
        const Category got = roleOf(name.toStdString());
        QVERIFY2(got == role, qPrintable(name + QStringLiteral(": ") +
                                         QString::fromLatin1(categoryName(got).data(), int(categoryName(got).size()))));
    }

    // Ascend W8A8's rotation (rot.weight, at the top and in a layer) is a quantisation aid, apart from
    // the parameters as the scales are; a weight merely named like it is not.
    void rotationsAreQuantisationAids()
    {
        QVERIFY(isQuantScale("rot.weight", Dtype::BF16));
        QVERIFY(isQuantScale("model.layers.78.rot.weight", Dtype::BF16));
        QVERIFY(!isQuantScale("my_rot.weight", Dtype::BF16));
        QVERIFY(!isQuantScale("model.layers.0.self_attn.rotary_emb.weight", Dtype::BF16));
    }

    void everyRowDecidesSomething()
    {
        // The names above, each with the row that decided it: no row of the table is unreachable.
        std::set<int> used;
        const char *const names[] = {
            "model.layers.3.mlp.gate.e_score_correction_bias", "layers.1.ffn.gate.tid2eid", "layers.5.hc_attn_base",
            "layers.2.self_attention_res_proj.weight", "layers.2.mlp_res_norm.weight", "layers.3.self_attn.indexer.wk.weight",
            "layers.5.attn.indexer.wq_b.weight", "layers.2.self_attn.index_k_proj.weight",
            "layers.0.linear_attn.A_log", "layers.0.mamba.A_log", "layers.0.mixer.A_log", "layers.0.mixer.D",
            "layers.0.mixer.dt_bias", "layers.0.mixer.conv1d.weight", "layers.0.mixer.in_proj.weight",
            "layers.0.mixer.out_proj.weight", "layers.0.mixer.norm.weight", "layers.0.self_attn.q_proj.weight",
            "layers.0.attn.wq_a.weight", "layers.0.attention.wqkv.weight", "layers.0.self_attention.dense.weight",
            "layers.0.mixer.q_proj.weight", "layers.0.mixer.k_proj.weight", "layers.0.mixer.v_proj.weight",
            "layers.0.mixer.o_proj.weight", "layers.0.mlp.experts.1.w1.weight",
            "layers.0.block_sparse_moe.experts.1.w1.weight", "layers.0.feed_forward.experts.down_proj",
            "layers.0.moe.experts.1.w1.weight", "layers.0.mixer.experts.1.up_proj.weight",
            "layers.0.ffn.experts.1.w1.weight", "layers.0.mlp.shared_experts.w1.weight", "layers.0.mlp.gate.weight",
            "layers.0.mlp.router.weight", "layers.0.mlp.gate_proj.weight", "layers.0.block_sparse_moe.w1.weight",
            "layers.0.feed_forward.w1.weight", "layers.0.moe.w1.weight", "layers.0.mixer.up_proj.weight",
            "layers.0.ffn.w1.weight", "layers.0.input_layernorm.weight", "layers.0.layer_scalar",
            "layers.1.ple.ple_embedding.layer_multipliers", "layers.1.ple.ple_embedding.ngram_heads_offsets",
            "layers.1.ple.ple_embedding.ngram_heads_vocab_sizes",
            "layers.1.ple.ple_embedding.ngram_embedding.shard_3.weight", "layers.1.ple.key_proj.weight",
            "layers.1.engram.embed.weight", "layers.1.engram.wkv.weight", "layers.0.attn_hyper_connection.hc_norm.weight",
            "layers.0.attn_sconv.weight", "blk.3.exp_probs_b.bias", "blk.3.ffn_gate_inp.weight",
            "blk.3.ffn_gate_inp_shexp.weight", "blk.3.indexer.proj.weight", "blk.3.attn_norm.weight",
            "blk.3.ffn_norm.weight", "blk.3.attn_kv_b.weight", "blk.3.ffn_gate_exps.weight", "blk.3.ffn_down_shexp.weight",
            "blk.0.ffn_up.weight", "blk.78.nextn.eh_proj.weight",
        };
        for (const char *n : names) {
            const TensorPlace place = placeOf(n);
            used.insert(decidingRow(place.rest, RoleScope::Layer));
        }
        for (const char *n : {"model.embed_tokens.weight", "embed.weight", "gpt_neox.embed_out.weight",
                              "backbone.embeddings.weight", "lm_head.weight", "head.weight", "hc_head_fn",
                              "model.output_attn_res_proj.weight", "model.output_attn_res_norm.weight",
                              "model.norm.weight", "backbone.norm_f.weight", "transformer.final_layernorm.weight",
                              "model.final_norm.weight", "model.language_model.hyper_connection_mixer.hc_norm.weight",
                              "model.language_model.hyper_connection_mixer.input_mix_weight_up.weight",
                              "model.hc_head.hc_head_fn", "model.llm.unembed.weight", "model.llm.embed_norm.weight",
                              "token_embd.weight", "output.weight", "output_norm.weight"})
            used.insert(decidingRow(n, RoleScope::Outside));
        for (int i = 0; i < int(roleTable().size()); ++i)
            QVERIFY2(used.count(i), qPrintable(QStringLiteral("row %1 (%2) decides none of the names").arg(i).arg(
                                        QString::fromLatin1(roleTable()[std::size_t(i)].family.data(),
                                                            int(roleTable()[std::size_t(i)].family.size())))));
        QVERIFY(!used.count(-1));
    }

    // The schedule each family writes becomes one attention kind per layer.
    void schedules_data()
    {
        QTest::addColumn<QByteArray>("config");
        QTest::addColumn<QByteArray>("kinds"); // comma-separated
        QTest::addColumn<QByteArray>("from");
        QTest::addColumn<bool>("warned");
        const QByteArray L3 = R"("num_hidden_layers": 3, )";
        QTest::newRow("layer_types") << L3 + R"("layer_types": ["full_attention", "sliding_attention", "linear_attention"])"
                                     << QByteArray("full_attention,sliding_attention,linear_attention")
                                     << QByteArray("layer_types") << false;
        QTest::newRow("compress_ratios (DeepSeek-V4, then the MTP block)")
            << L3 + R"("compress_ratios": [0, 4, 128, 0])"
            << QByteArray("sliding_attention,compressed_sparse_attention,heavily_compressed_attention")
            << QByteArray("compress_ratios") << false;
        QTest::newRow("compress_ratios too short")
            << L3 + R"("compress_ratios": [0, 4])" << QByteArray() << QByteArray() << true;
        QTest::newRow("Kimi counts from 1")
            << L3 + R"("linear_attn_config": {"kda_layers": [1, 2], "full_attn_layers": [3]})"
            << QByteArray("linear_attention,linear_attention,full_attention") << QByteArray("linear_attn_config")
            << false;
        QTest::newRow("GLM-5.3 counts from 0")
            << L3 + R"("linear_attn_config": {"kda_layers": [0, 1], "full_attn_layers": [2]})"
            << QByteArray("linear_attention,linear_attention,full_attention") << QByteArray("linear_attn_config")
            << false;
        QTest::newRow("a layer past the end")
            << L3 + R"("linear_attn_config": {"kda_layers": [1, 2, 4]})" << QByteArray() << QByteArray() << true;
        QTest::newRow("hybrid_override_pattern (Nemotron-H)")
            << QByteArray(R"("num_hidden_layers": 4, "hybrid_override_pattern": "M*-E")")
            << QByteArray("mamba,full_attention,none,none") << QByteArray("hybrid_override_pattern") << false;
        QTest::newRow("hybrid_override_pattern, wrong letter")
            << L3 + R"("hybrid_override_pattern": "MXM")" << QByteArray() << QByteArray() << true;
        QTest::newRow("hybrid_layer_pattern (MiMo-V2)")
            << L3 + R"("hybrid_layer_pattern": [0, 1, 1])"
            << QByteArray("full_attention,sliding_attention,sliding_attention") << QByteArray("hybrid_layer_pattern")
            << false;
    }
    void schedules()
    {
        QFETCH(QByteArray, config);
        QFETCH(QByteArray, kinds);
        QFETCH(QByteArray, from);
        QFETCH(bool, warned);
        const ModelConfig cfg = parseModelConfig("config.json", QByteArray("{" + config + "}").toStdString());
        QByteArray got;
        for (const auto &k : cfg.layerTypes)
            got += (got.isEmpty() ? "" : ",") + QByteArray::fromStdString(k);
        QCOMPARE(got, kinds);
        QCOMPARE(QByteArray::fromStdString(cfg.layerTypesFrom), from);
        QCOMPARE(!cfg.warnings.empty(), warned);
    }

    void transformersV4KindsCarryTheirRatios()
    {
        const ModelConfig cfg = parseModelConfig(
            "config.json", R"({"num_hidden_layers": 3, "layer_types": ["sliding_attention",
            "compressed_sparse_attention", "heavily_compressed_attention"],
            "compress_rates": {"compressed_sparse_attention": 8}})");
        QCOMPARE(cfg.compressRatios, (std::vector<std::int64_t>{0, 8, 128}));
    }

    void hashLayersFromTheirCount()
    {
        const ModelConfig cfg = parseModelConfig(
            "config.json", R"({"num_hidden_layers": 4, "n_routed_experts": 8, "num_hash_layers": 2})");
        QCOMPARE(cfg.mlpLayerTypes, (std::vector<std::string>{"hash_moe", "hash_moe", "moe", "moe"}));
        QCOMPARE(*cfg.numHashLayers, std::int64_t(2));
    }

    void correctionBiasesUnderEveryName()
    {
        // Read as correction biases (added for the choice only): under the router, directly on
        // block_sparse_moe (MiniMax), and DeepSeek-V4's ffn.gate.bias. gpt-oss's router bias is a logit bias.
        for (const char *n : {"model.layers.3.mlp.gate.e_score_correction_bias",
                              "model.layers.1.block_sparse_moe.e_score_correction_bias",
                              "model.layers.1.block_sparse_moe.gate.e_score_correction_bias", "layers.4.ffn.gate.bias",
                              "mtp.0.ffn.gate.bias"})
            QVERIFY2(isCorrectionBias(n), n);
        QVERIFY(!isCorrectionBias("model.layers.0.mlp.router.bias"));
        QVERIFY(isRouterLinearBias("model.layers.0.mlp.router.bias"));
    }

    void mtpBlocksNamedApart()
    {
        // vLLM places mtp.N after the decoder layers; the block's own naming is what follows.
        const auto v4 = mtpBlockPlace("mtp.0.ffn.experts.3.w1.weight");
        QVERIFY(v4);
        QCOMPARE(v4->layer, 0);
        QCOMPARE(v4->rest, std::string_view("ffn.experts.3.w1.weight"));
        QCOMPARE(mtpBlockPlace("mtp.layers.1.mlp.gate.weight")->layer, 1);
        QCOMPARE(mtpBlockPlace("model.mtp.layers.2.input_layernorm.weight")->layer, 2);
        QVERIFY(!mtpBlockPlace("mtp.fc.weight"));
        QVERIFY(!mtpBlockPlace("model.layers.3.mlp.gate.weight"));
    }
};

QTEST_GUILESS_MAIN(TestRoles)
#include "tst_roles.moc"
