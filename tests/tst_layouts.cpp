// Budget, activated parameters, IndexShare and cache on written layouts, against the architecture's
// arithmetic.
#include "byte_source.h"
#include "cache_budget.h"
#include "checkpoint_reader.h"
#include "layout_arithmetic.h"
#include "report.h"

#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

#include <fstream>

using namespace atlas;
using synth::IndexerPolicy;
using synth::LayoutSpec;

namespace {

struct Opened
{
    Checkpoint checkpoint;
    CheckpointAnalysis analysis;
};

Opened writeAndOpen(const LayoutSpec &spec, const QString &dir)
{
    synth::writeCheckpoint(spec, dir.toStdString());
    LocalDirectorySource source(dir.toStdString());
    Opened o;
    o.checkpoint = readCheckpoint(source);
    o.analysis = analyze(o.checkpoint);
    return o;
}

LayoutSpec oddExperts()
{
    LayoutSpec s = synth::smallLayout();
    s.name = "odd";
    s.experts = 23;
    s.topk = 3;
    s.layers = 5;
    s.firstDense = 2;
    s.sharedExperts = 2;
    s.shards = 4;
    return s;
}

LayoutSpec noBias()
{
    LayoutSpec s = synth::smallLayout();
    s.name = "no-bias";
    s.correctionBias = false;
    s.indexer = IndexerPolicy::Formula;
    return s;
}

LayoutSpec smallDeepseek()
{
    LayoutSpec s = synth::smallLayout();
    s.name = "ds-small";
    s.modelType = "deepseek_v32";
    s.indexer = IndexerPolicy::EveryLayer;
    s.nGroup = 4;
    s.topkGroup = 2;
    s.experts = 32;
    s.mtpEmbedAndHead = true;
    s.shards = 1;
    return s;
}

LayoutSpec noDsa()
{
    LayoutSpec s = synth::smallLayout();
    s.name = "v3-like";
    s.indexer = IndexerPolicy::None;
    s.packing = synth::Packing::Bf16;
    s.mtpLayers = 0;
    return s;
}

} // namespace

Q_DECLARE_METATYPE(atlas::synth::LayoutSpec)

class TestLayouts : public QObject
{
    Q_OBJECT

private slots:
    void budget_data()
    {
        QTest::addColumn<LayoutSpec>("spec");
        QTest::newRow("small") << synth::smallLayout();
        QTest::newRow("odd experts, two shared") << oddExperts();
        QTest::newRow("no correction bias") << noBias();
        QTest::newRow("deepseek-like every layer") << smallDeepseek();
        QTest::newRow("no DSA, BF16") << noDsa();
    }
    void budget()
    {
        QFETCH(LayoutSpec, spec);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const Opened o = writeAndOpen(spec, dir.path());
        const auto want = expected::budget(spec);
        const ParameterBudget &b = o.analysis.budget;
        QCOMPARE(b.total, want.total);
        QVERIFY(b.activatedPerToken.has_value());
        QCOMPARE(*b.activatedPerToken, want.active);
        QCOMPARE(b.byCategory[size_t(Category::RoutedExperts)], want.routed);
        QCOMPARE(b.byCategory[size_t(Category::Mtp)], want.mtp);
        QCOMPARE(b.byCategory[size_t(Category::Attention)], want.attention);
        QCOMPARE(b.byCategory[size_t(Category::Indexer)], want.indexer);
        QCOMPARE(b.byCategory[size_t(Category::Other)], std::uint64_t(0));
        QCOMPARE(o.analysis.mainLayers, int(spec.layers));
        QCOMPARE(int(o.analysis.layers.size()), int(spec.layers + spec.mtpLayers));

        // Scales: one per FP8 linear layer, none without FP8.
        if (spec.packing == synth::Packing::Bf16)
            QCOMPARE(b.quantScales.tensors, std::uint64_t(0));
        else
            QVERIFY(b.quantScales.tensors > 0);
        std::uint64_t byDtype = 0;
        for (const auto &[d, n] : b.byDtype)
            byDtype += n;
        QCOMPARE(byDtype, b.total);

        for (const auto &l : o.analysis.layers) {
            const LayerKind kind = l.index >= spec.layers      ? LayerKind::Mtp
                                   : l.index < spec.firstDense ? LayerKind::Dense
                                                               : LayerKind::Moe;
            QCOMPARE(l.kind, kind);
            if (kind == LayerKind::Moe) QCOMPARE(l.routedExperts, int(spec.experts));
        }
    }

    void indexShare_data()
    {
        QTest::addColumn<LayoutSpec>("spec");
        QTest::addColumn<QString>("source");
        LayoutSpec formula = synth::smallLayout();
        formula.indexer = IndexerPolicy::Formula;
        formula.layers = 9;
        formula.indexFreq = 3;
        formula.indexOffset = 2;
        LayoutSpec defaultOffset = formula; // the key absent: the engines' default offset 2
        defaultOffset.indexOffset = 2;
        defaultOffset.writeIndexOffset = false;
        LayoutSpec pattern = synth::smallLayout();
        pattern.indexer = IndexerPolicy::Pattern;
        QTest::newRow("indexer_types") << synth::smallLayout() << QStringLiteral("indexer_types");
        QTest::newRow("formula") << formula << QStringLiteral("formula");
        QTest::newRow("formula, default offset") << defaultOffset << QStringLiteral("formula");
        QTest::newRow("index_topk_pattern") << pattern << QStringLiteral("index_topk_pattern");
        QTest::newRow("every layer") << smallDeepseek() << QStringLiteral("every_layer");
        QTest::newRow("none") << noDsa() << QStringLiteral("none");
    }
    void indexShare()
    {
        QFETCH(LayoutSpec, spec);
        QFETCH(QString, source);
        QTemporaryDir dir;
        const Opened o = writeAndOpen(spec, dir.path());
        const IndexShareMap &m = o.analysis.indexShare;
        QCOMPARE(QString::fromStdString(std::string(indexShareSourceName(m.source))), source);
        QVERIFY2(m.mismatches.empty(), m.mismatches.empty() ? "" : m.mismatches.front().c_str());
        int lastFull = -1;
        for (std::int64_t i = 0; i < spec.layers; ++i) {
            const LayerInfo &l = o.analysis.layers[size_t(i)];
            const bool full = expected::ownsIndexer(spec, i);
            if (spec.indexer == IndexerPolicy::None) {
                QCOMPARE(l.indexer, IndexerRole::None);
                continue;
            }
            QCOMPARE(l.indexer, full ? IndexerRole::Full : IndexerRole::Shared);
            QCOMPARE(l.indexerWeights, full);
            if (!full)
                QCOMPARE(l.reusesLayer, lastFull);
            else
                lastFull = int(i);
        }
        QCOMPARE(int(m.full.size()), spec.indexer == IndexerPolicy::None ? 0 : expected::fullLayers(spec));
        // The MTP layer owns its indexer.
        if (spec.mtpLayers > 0 && spec.indexer != IndexerPolicy::None)
            QCOMPARE(o.analysis.layers.back().indexer, IndexerRole::Full);
        if (source == QLatin1String("formula") && spec.writeIndexOffset) {
            // ATOM's rule, max(i - offset, 0) % freq == 0, worked out here layer by layer.
            std::vector<int> differs;
            for (int i = 0; i < spec.layers; ++i) {
                const bool atom = std::max<std::int64_t>(i - spec.indexOffset, 0) % spec.indexFreq == 0;
                if (atom != expected::ownsIndexer(spec, i)) differs.push_back(i);
            }
            QVERIFY(!differs.empty());
            QCOMPARE(m.atomDiffers, differs);
        }
    }

    void routerKeysReachTheReport()
    {
        LayoutSpec spec = synth::smallLayout();
        spec.moeRouterDtype = "float32"; // as GLM-5.3 declares it
        QTemporaryDir dir;
        const Opened o = writeAndOpen(spec, dir.path());
        const auto report =
            buildReport(o.checkpoint, o.analysis, computeCacheBudget(o.checkpoint, o.analysis, {}));
        QCOMPARE(report["model"]["moe_router_dtype"].get<std::string>(), std::string("float32"));
        QCOMPARE(report["model"]["topk_method"].get<std::string>(), std::string("noaux_tc"));
        QCOMPARE(report["model"]["scoring_func"].get<std::string>(), std::string("sigmoid"));
        QTemporaryDir plain;
        const Opened p = writeAndOpen(synth::smallLayout(), plain.path());
        QVERIFY(buildReport(p.checkpoint, p.analysis,
                            computeCacheBudget(p.checkpoint, p.analysis, {}))["model"]["moe_router_dtype"]
                    .is_null());
    }

    void indexShareDefaultOffsetLayers()
    {
        // freq 4 without an offset: full at 0, 1, 5, 9, ... (max(i - 1, 0) % 4 == 0), not 3, 7, 11.
        LayoutSpec spec = synth::smallLayout();
        spec.indexer = IndexerPolicy::Formula;
        spec.layers = 12;
        spec.indexFreq = 4;
        spec.indexOffset = 2;
        spec.writeIndexOffset = false;
        QTemporaryDir dir;
        const Opened o = writeAndOpen(spec, dir.path());
        QCOMPARE(o.analysis.indexShare.full, (std::vector<int>{0, 1, 5, 9}));
        QVERIFY(o.analysis.indexShare.atomDiffers.empty()); // ATOM's default gives the same map
    }

    void indexShareSourcesThatDisagree()
    {
        // A pattern that contradicts indexer_types: the pattern wins, and the disagreement is named.
        QTemporaryDir dir;
        const LayoutSpec spec = synth::smallLayout();
        synth::writeCheckpoint(spec, dir.path().toStdString());
        const std::string configPath = dir.path().toStdString() + "/config.json";
        nlohmann::json config = nlohmann::json::parse(std::ifstream(configPath));
        std::string pattern;
        for (std::int64_t i = 0; i < spec.layers; ++i)
            pattern += i == 2 ? 'F' : (expected::ownsIndexer(spec, i) ? 'F' : 'S');
        QVERIFY(!expected::ownsIndexer(spec, 2)); // so layer 2 is the one they disagree on
        config["index_topk_pattern"] = pattern;
        std::ofstream(configPath) << config.dump();
        LocalDirectorySource source(dir.path().toStdString());
        const Checkpoint ckpt = readCheckpoint(source);
        const CheckpointAnalysis a = analyze(ckpt);
        QCOMPARE(a.indexShare.source, IndexShareSource::Pattern);
        QCOMPARE(a.layers[2].indexer, IndexerRole::Full);
        const auto &mm = a.indexShare.mismatches;
        auto said = [&](const std::string &text) {
            return std::any_of(mm.begin(), mm.end(),
                               [&](const std::string &m) { return m.find(text) != std::string::npos; });
        };
        QVERIFY(said("index_topk_pattern and indexer_types disagree at 1 layer (2)"));
        QVERIFY(said("index_topk_pattern and index_topk_freq disagree at 1 layer (2)"));
        QVERIFY(said("layer 2: the map says full, but no self_attn.indexer.* tensors are on disk"));
    }

    void deepseekV32FullScale()
    {
        // 61 + 1 layers, every layer indexed, 8 expert groups: the arithmetic, and the published size.
        QTemporaryDir dir;
        const LayoutSpec spec = synth::deepseekV32();
        const Opened o = writeAndOpen(spec, dir.path());
        const auto want = expected::budget(spec);
        QCOMPARE(o.analysis.budget.total, want.total);
        QCOMPARE(*o.analysis.budget.activatedPerToken, want.active);
        QCOMPARE(o.analysis.indexShare.source, IndexShareSource::EveryLayer);
        QCOMPARE(o.analysis.indexShare.full.size(), std::size_t(61));
        QCOMPARE(o.checkpoint.shards.size(), std::size_t(163));
        QCOMPARE(o.checkpoint.config.nGroup.value_or(0), std::int64_t(8));
        // DeepSeek-V3's main model is the published 671 B; V3.2 adds an indexer to each of its layers.
        const auto &b = o.analysis.budget;
        QCOMPARE(qRound64(double(b.total - b.byCategory[size_t(Category::Mtp)] -
                                 b.byCategory[size_t(Category::Indexer)]) /
                          1e9),
                 qint64(671));
    }

    void indexShareMismatch()
    {
        // A config whose indexer_types disagrees with the tensors on disk is reported, layer by layer.
        QTemporaryDir dir;
        LayoutSpec spec = synth::smallLayout();
        synth::writeCheckpoint(spec, dir.path().toStdString());
        auto config = synth::layoutConfig(spec);
        auto &types = config["indexer_types"];
        const int flipped = 3; // offset 2, freq 2: layers 0, 1, 3, 5 own an indexer
        const bool wasFull = types[flipped] == "full";
        types[flipped] = wasFull ? "shared" : "full";
        std::ofstream(dir.filePath(QStringLiteral("config.json")).toStdString()) << config.dump();
        LocalDirectorySource source(dir.path().toStdString());
        const auto a = analyze(readCheckpoint(source));
        // Two disagreements: indexer_types against the freq/offset formula, and against the disk.
        QCOMPARE(a.indexShare.mismatches.size(), std::size_t(2));
        QCOMPARE(
            a.indexShare.mismatches[0],
            std::string("indexer_types and index_topk_freq disagree at 1 layer (3); indexer_types was used"));
        QVERIFY(a.indexShare.mismatches[1].starts_with("layer 3:"));
    }

    void cache_data()
    {
        QTest::addColumn<LayoutSpec>("spec");
        QTest::addColumn<QString>("kv");
        QTest::addColumn<int>("entry");
        QTest::addColumn<quint64>("context");
        QTest::newRow("small bf16 default")
            << synth::smallLayout() << QStringLiteral("bf16") << 0 << quint64(0);
        QTest::newRow("small fp8 132")
            << synth::smallLayout() << QStringLiteral("fp8") << 132 << quint64(5000);
        QTest::newRow("ds fp8_ds_mla")
            << smallDeepseek() << QStringLiteral("fp8_ds_mla") << 144 << quint64(100);
        QTest::newRow("below index_topk") << smallDeepseek() << QStringLiteral("bf16") << 0 << quint64(17);
    }
    void cache()
    {
        QFETCH(LayoutSpec, spec);
        QFETCH(QString, kv);
        QFETCH(int, entry);
        QFETCH(quint64, context);
        QTemporaryDir dir;
        const Opened o = writeAndOpen(spec, dir.path());
        CacheOptions opt;
        opt.kvDtype = *kvDtypeFromName(kv.toStdString());
        if (entry) opt.indexEntryBytes = entry;
        if (context) opt.contextTokens = context;
        const CacheBudget c = computeCacheBudget(o.checkpoint, o.analysis, opt);
        QVERIFY(c.available);

        const std::uint64_t latent = std::uint64_t(spec.kvLoraRank + spec.ropeDim);
        std::uint64_t perLayer = kv == QLatin1String("bf16") ? 2 * latent
                                 : kv == QLatin1String("fp8")
                                     ? latent
                                     : std::uint64_t(spec.kvLoraRank) +
                                           4 * std::uint64_t((spec.kvLoraRank + 127) / 128) +
                                           2 * std::uint64_t(spec.ropeDim);
        // Default entry: head_dim + 4 per 128, rounded up to 16.
        const std::uint64_t ref =
            std::uint64_t(spec.indexHeadDim) + 4 * std::uint64_t((spec.indexHeadDim + 127) / 128);
        const std::uint64_t e = entry ? std::uint64_t(entry) : (ref + 15) / 16 * 16;
        const std::uint64_t fulls = std::uint64_t(expected::fullLayers(spec));
        const std::uint64_t perToken = std::uint64_t(spec.layers) * perLayer + fulls * e;
        const std::uint64_t ctx = context ? context : std::uint64_t(spec.maxPosition);
        QCOMPARE(c.kvBytesPerToken, std::uint64_t(spec.layers) * perLayer);
        QCOMPARE(c.indexBytesPerToken, fulls * e);
        QCOMPARE(c.bytesPerToken, perToken);
        QCOMPARE(c.indexBytesPerTokenEveryLayer, std::uint64_t(spec.layers) * e);
        QCOMPARE(c.contextTokens, ctx);
        QCOMPARE(c.totalBytes, perToken * ctx);
        QCOMPARE(c.sparseReadTokens, std::min<std::uint64_t>(ctx, std::uint64_t(spec.indexTopk)));
    }

    // A name whose prefix is the decoder's ("model.") but which holds ".mtp." or ".mtp_layers." further on is an
    // MTP block's (outsideRolesOf asks the whole name then), wherever the "mtp" falls among its dots; ".mtpx." and
    // "_mtp." are not.
    void mtpFurtherOnThanThePrefix()
    {
        Checkpoint c;
        c.shards.resize(1);
        ShardHeader &sh = c.shards[0];
        sh.file = "model.safetensors";
        std::uint64_t end = 0;
        for (const char *name : {"model.layers.0.mlp.down_proj.weight", "model.layers.1.mlp.down_proj.weight",
                                 "model.layers.1.mtp.eh_proj.weight", "model.layers.1.mtp_layers.0.enorm.weight",
                                 "model.layers.1.mtpx.w.weight", "model.layers.1.e_mtp.w.weight"}) {
            TensorInfo t;
            t.name = sh.keepName(name);
            t.dtype = Dtype::BF16;
            t.shape = {4, 4};
            t.numel = 16;
            t.begin = end;
            t.end = end += 32;
            sh.tensors.push_back(t);
        }
        sh.fileSize = end + sh.dataStart();
        const CheckpointAnalysis a = analyze(c);
        QCOMPARE(a.budget.byCategory[static_cast<std::size_t>(Category::Mtp)], std::uint64_t(2 * 16));
    }

    // analyze() reads a checkpoint of 64k tensors or more in two halves of its shards at once (outsideRolesOf,
    // countLayers): the answer is the one pass's, here that of the same tensors held in a single shard. The later
    // half also holds what only it names: an MTP block named apart, a side network's numbered blocks (a tower), a
    // vision projector and a layer too far.
    void analysisInHalvesIsOnePass()
    {
        QTemporaryDir dir;
        const Opened o = writeAndOpen(synth::glm5Fp8(), dir.path());
        QVERIFY(o.checkpoint.tensorCount() >= 65536);
        Checkpoint split = o.checkpoint;
        ShardHeader &last = split.shards.back();
        std::uint64_t end = last.tensors.empty() ? 0 : last.tensors.back().end;
        for (const char *name : {"mtp.1.e_proj.weight", "mtp.1.mlp.down_proj.weight", "side_net.blocks.0.attn.qkv.weight",
                                 "side_net.blocks.1.attn.qkv.weight", "vision_tower.proj.weight", "model.layers.900.mlp.gate.weight",
                                 "model.layers.77.mlp.experts.0.gate_up_proj_blocks", "model.layers.77.mlp.no_such_role.weight"}) {
            TensorInfo t;
            t.name = last.keepName(name);
            t.dtype = std::string_view(name).ends_with("_blocks") ? Dtype::U8 : Dtype::BF16; // MXFP4: packed, two a byte
            t.shape = {4, 4};
            t.numel = 16;
            t.begin = end;
            t.end = end += 32;
            t.shard = static_cast<std::uint32_t>(split.shards.size() - 1);
            last.tensors.push_back(t);
        }
        Checkpoint whole = split;
        whole.shards.resize(1);
        whole.shards[0].tensors.clear();
        std::uint64_t at = 0;
        for (const auto &sh : split.shards)
            for (TensorInfo t : sh.tensors) {
                t.shard = 0;
                t.end = at + t.bytes();
                t.begin = at;
                at = t.end;
                whole.shards[0].tensors.push_back(t);
            }
        whole.shards[0].fileSize = at + whole.shards[0].dataStart();
        // With num_hidden_layers, and without it (the layers are then the run of numbers found on disk).
        for (const bool configLayers : {true, false}) {
            if (!configLayers) split.config.numHiddenLayers.reset(), whole.config.numHiddenLayers.reset();
            const CheckpointAnalysis a = analyze(split), b = analyze(whole);
            QCOMPARE(a.layerCount, b.layerCount);
            QCOMPARE(a.mainLayers, b.mainLayers);
            QCOMPARE(a.towerPrefixes, b.towerPrefixes);
            QCOMPARE(a.towerPrefixes, std::vector<std::string>{"side_net."});
            QCOMPARE(a.warnings, b.warnings);
            QCOMPARE(a.budget.total, b.budget.total);
            QCOMPARE(a.budget.byCategory, b.budget.byCategory);
            QCOMPARE(a.budget.byDtype, b.budget.byDtype);
            QCOMPARE(a.budget.quantScales.tensors, b.budget.quantScales.tensors);
            QCOMPARE(a.budget.quantScales.bytes, b.budget.quantScales.bytes);
            QCOMPARE(a.budget.otherTensors, b.budget.otherTensors);
            QVERIFY(!a.budget.otherTensors.empty());
            // The tensor pass ran in two halves (the tensors counted in the later one are the split's last
            // shard's), joined as one pass: the quantization layout, the packed counts, the dimensions.
            QCOMPARE(a.quantLayout.size(), b.quantLayout.size());
            for (std::size_t r = 0; r < a.quantLayout.size(); ++r) {
                QCOMPARE(a.quantLayout[r].category, b.quantLayout[r].category);
                QCOMPARE(a.quantLayout[r].format, b.quantLayout[r].format);
                QCOMPARE(a.quantLayout[r].scales.elements, b.quantLayout[r].scales.elements);
                QCOMPARE(a.quantLayout[r].dtypes.size(), b.quantLayout[r].dtypes.size());
                for (const auto &[dtype, tally] : a.quantLayout[r].dtypes)
                    QCOMPARE(tally.elements, b.quantLayout[r].dtypes.at(dtype).elements);
            }
            QCOMPARE(a.packedElements.size(), std::size_t(1));
            QCOMPARE(b.packedElements.size(), std::size_t(1));
            QCOMPARE(a.packedElements.front().elements, std::uint64_t(32));
            QCOMPARE(a.diskKvLoraRank, b.diskKvLoraRank);
            QCOMPARE(a.diskRopeDim, b.diskRopeDim);
            QCOMPARE(a.diskKvWidth, b.diskKvWidth);
            QCOMPARE(a.diskIndexHeadDim, b.diskIndexHeadDim);
            QVERIFY(a.diskKvLoraRank && a.diskRopeDim && a.diskIndexHeadDim);
            QCOMPARE(a.layers.size(), b.layers.size());
            for (std::size_t i = 0; i < a.layers.size(); ++i) {
                QCOMPARE(a.layers[i].kind, b.layers[i].kind);
                QCOMPARE(a.layers[i].attention, b.layers[i].attention);
                QCOMPARE(a.layers[i].routedExperts, b.layers[i].routedExperts);
                QCOMPARE(a.layers[i].params.elements, b.layers[i].params.elements);
                QCOMPARE(a.layers[i].scales.tensors, b.layers[i].scales.tensors);
            }
            QVERIFY(a.layerCount > static_cast<int>(synth::glm5Fp8().layers)); // the MTP layers, counted in both
        }
    }

    void cachePresets()
    {
        // What each engine allocates, worked out from the spec and the writer's tensor list.
        const LayoutSpec spec = synth::glm5Fp8();
        QTemporaryDir dir;
        const Opened o = writeAndOpen(spec, dir.path());
        const std::uint64_t latent = 2 * std::uint64_t(spec.kvLoraRank + spec.ropeDim); // BF16
        const std::uint64_t ref = std::uint64_t(spec.indexHeadDim) + 4 * std::uint64_t((spec.indexHeadDim + 127) / 128);
        const std::uint64_t padded = (ref + 15) / 16 * 16;
        const std::uint64_t fulls = std::uint64_t(expected::fullLayers(spec));
        std::uint64_t mtpIndexed = 0;
        for (const auto &t : synth::layoutTensors(spec))
            for (std::int64_t m = spec.layers; m < spec.layers + spec.mtpLayers; ++m)
                mtpIndexed += t.name == "model.layers." + std::to_string(m) + ".self_attn.indexer.wk.weight";
        const std::uint64_t L = std::uint64_t(spec.layers), mtp = std::uint64_t(spec.mtpLayers);
        struct Want
        {
            CachePreset preset;
            std::uint64_t kv, index;
        };
        const Want wants[] = {{CachePreset::Article, L * latent, fulls * padded},
                              {CachePreset::Vllm, L * latent, fulls * ref},
                              {CachePreset::VllmMtp, (L + mtp) * latent, (fulls + mtpIndexed) * ref},
                              {CachePreset::Atom, (L + mtp) * latent, (L + mtp) * padded}};
        for (const Want &w : wants) {
            CacheOptions opt;
            opt.preset = w.preset;
            const CacheBudget c = computeCacheBudget(o.checkpoint, o.analysis, opt);
            QVERIFY(c.available);
            QCOMPARE(c.preset, w.preset);
            QCOMPARE(c.kvBytesPerToken, w.kv);
            QCOMPARE(c.indexBytesPerToken, w.index);
        }
        // The article's own figure stays the default: 92,880 B per token for GLM-5.x.
        QCOMPARE(computeCacheBudget(o.checkpoint, o.analysis, {}).bytesPerToken, std::uint64_t(92880));
        QCOMPARE(std::string(cachePresetName(*cachePresetFromName("vllm-mtp"))), std::string("vllm-mtp"));
        QVERIFY(!cachePresetFromName("sglang"));
    }

    void cacheWithoutConfigDimensions()
    {
        // Without kv_lora_rank / index_head_dim in config.json, the shapes on disk still give the numbers.
        QTemporaryDir dir;
        LayoutSpec spec = synth::smallLayout();
        synth::writeCheckpoint(spec, dir.path().toStdString());
        auto config = synth::layoutConfig(spec);
        config.erase("kv_lora_rank");
        config.erase("qk_rope_head_dim");
        config.erase("index_head_dim");
        std::ofstream(dir.filePath(QStringLiteral("config.json")).toStdString()) << config.dump();
        LocalDirectorySource source(dir.path().toStdString());
        const Checkpoint ckpt = readCheckpoint(source);
        const auto a = analyze(ckpt);
        const auto c = computeCacheBudget(ckpt, a, {});
        QVERIFY(c.available);
        QCOMPARE(c.kvBytesPerLayer, std::int64_t(2 * (spec.kvLoraRank + spec.ropeDim)));
        QCOMPARE(c.indexHeadDim, std::int64_t(spec.indexHeadDim));
    }

    void unknownModelWithoutConfig()
    {
        // No config.json: a generic tree and budget from the tensor names alone, nothing dropped.
        QTemporaryDir dir;
        LayoutSpec spec = noDsa();
        spec.shards = 1;
        synth::writeCheckpoint(spec, dir.path().toStdString());
        QVERIFY(QFile::remove(dir.filePath(QStringLiteral("config.json"))));
        LocalDirectorySource source(dir.path().toStdString());
        const Checkpoint ckpt = readCheckpoint(source);
        const auto a = analyze(ckpt);
        QVERIFY(!ckpt.hasConfig);
        QCOMPARE(a.budget.total, expected::budget(spec).total);
        QVERIFY(!a.budget.activatedPerToken.has_value()); // top-k is unknown without a config
        QCOMPARE(a.mainLayers, int(spec.layers));
        QVERIFY(!a.warnings.empty());
    }

    void reportAndExpectations()
    {
        QTemporaryDir dir;
        const LayoutSpec spec = synth::smallLayout();
        const Opened o = writeAndOpen(spec, dir.path());
        const auto report =
            buildReport(o.checkpoint, o.analysis, computeCacheBudget(o.checkpoint, o.analysis, {}));
        QCOMPARE(report["schema"].get<std::string>(), std::string("ckpt-atlas.report/1"));
        QCOMPARE(report["parameters"]["total"].get<std::uint64_t>(), expected::budget(spec).total);
        QCOMPARE(report["source"]["synthetic"].get<bool>(), true);
        const std::string total = std::to_string(expected::budget(spec).total);
        QVERIFY(checkExpectations(report, {"parameters.total=" + total, "layers.0.kind=dense",
                                           "model.model_type=glm_moe_dsa"})
                    .empty());
        const auto failures = checkExpectations(report, {"parameters.total=1", "layers.99.kind=moe", "bad"});
        QCOMPARE(failures.size(), std::size_t(3));
        QVERIFY(failures[0].find("the report says " + total) != std::string::npos);
        QVERIFY(failures[1].find("no such path") != std::string::npos);
    }

    // Last: every test above read local folders, and none of that opened libcurl or libcrypto (they are
    // opened at their first use, fetch/shared_libraries.h: a local start does not pay for loading them).
    void localReadsLoadNoNetworkLibrary()
    {
        std::ifstream maps("/proc/self/maps");
        std::string line, mapped;
        while (std::getline(maps, line))
            mapped += line + "\n";
        QVERIFY(mapped.find("libc.so") != std::string::npos); // the list is readable
        QVERIFY2(mapped.find("libcurl") == std::string::npos, "libcurl is mapped");
        QVERIFY2(mapped.find("libcrypto") == std::string::npos, "libcrypto is mapped");
    }
};

QTEST_APPLESS_MAIN(TestLayouts)
#include "tst_layouts.moc"
