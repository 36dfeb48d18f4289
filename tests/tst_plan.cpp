// The capacity plan (domain.md section 14) on the GLM-5.2-FP8 layout at full scale: every figure is
// worked out here from the written tensors by the placement rules, then held against the worked example
// of the issue (TP8 on H200: 94,683,065,664 B of weights per GPU, 1,697,145,408 of them replicated).
#include "analysis.h"
#include "byte_source.h"
#include "cache_budget.h"
#include "capacity_plan.h"
#include "deployment_search.h"
#include "checkpoint_reader.h"
#include "errors.h"
#include "report.h"
#include "synthetic_layout.h"

#include <QFile>
#include <QProcess>

#include <memory>
#include <set>
#include <tuple>
#include <QRegularExpression>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

#include <charconv>
#include <cmath>
#include <functional>

using namespace atlas;

namespace {

// vLLM's rules by name, for the GLM-MoE-DSA naming: replicated are q_a_proj, kv_a_proj_with_mqa,
// the norms, the router and its bias, the DSA indexer; the rest splits by TP; the MTP layer stays out.
struct Expected
{
    std::uint64_t replicated = 0, split = 0;
};

Expected byHand(const synth::LayoutSpec &spec)
{
    Expected e;
    const std::string mtp = "model.layers." + std::to_string(spec.layers) + ".";
    for (const auto &t : synth::layoutTensors(spec)) {
        if (t.name.starts_with(mtp)) continue;
        const bool rep = t.name.find("q_a_proj") != std::string::npos ||
                         t.name.find("kv_a_proj_with_mqa") != std::string::npos ||
                         t.name.find("layernorm") != std::string::npos || t.name.ends_with("norm.weight") ||
                         t.name.find("mlp.gate.") != std::string::npos || t.name.find(".indexer.") != std::string::npos;
        (rep ? e.replicated : e.split) += t.bytes;
    }
    return e;
}

} // namespace

class TestPlan : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    LoadedCheckpoint m_data;
    synth::LayoutSpec m_spec = synth::glm5Fp8();

    PlanOptions h200(int gpus)
    {
        PlanOptions o;
        o.gpus = gpus;
        o.gpuName = "H200";
        o.gpuMemory = *gpuMemoryFromName("h200");
        o.context = 131072;
        return o;
    }

    // With and without the MTP layers, EP over any divisor of TP: no plan the engine runs at N GPUs holds
    // more sequences than the Pareto set's best at N GPUs or fewer (the set is a frontier, not a sample).
    void searchCoversEveryLayoutAndBothMtpModes()
    {
        SearchOptions so;
        so.gpus = {gpuPresetNamed("H200")};
        so.context = 131072;
        so.maxGpus = 16;
        so.mtpBoth = true;
        const DeploymentSearch d = searchDeployments(m_data, so);
        QCOMPARE(d.gpus.size(), std::size_t(2));
        QVERIFY(!d.gpus[0].mtp);
        QVERIFY(d.gpus[1].mtp);
        QVERIFY(d.gpus[1].cacheLayout.find("the MTP layer's cache too") != std::string::npos);
        for (const GpuSearch &k : d.gpus) {
            QVERIFY(!k.pareto.empty());
            CacheOptions co = engineCacheOptions(PlanEngine::Vllm, k.mtp, k.gpu, m_data, {});
            co.contextTokens = 131072;
            const CacheBudget cache = computeCacheBudget(m_data.checkpoint, m_data.analysis, co);
            const auto frontier = [&](int n) {
                std::uint64_t best = 0;
                for (const auto &p : k.pareto)
                    if (p.gpus <= n) best = std::max(best, p.sequences);
                return best;
            };
            for (int n : {4, 8, 12, 16})
                for (int ep = 0; ep <= n; ++ep) {
                    if (ep == 1 || (ep > 1 && n % ep)) continue;
                    PlanOptions o = h200(n);
                    o.ep = ep;
                    o.mtp = k.mtp;
                    o.dpAttention = 1;
                    o.context = 131072;
                    try {
                        const CapacityPlan plan = planCapacity(m_data, o, nullptr, &cache);
                        if (plan.fits) QVERIFY(plan.sequencesAtContext <= frontier(n));
                    } catch (const AtlasError &) {
                    }
                }
        }
        // The MTP layers cost memory: with them, never more sequences at a GPU count.
        for (const auto &with : d.gpus[1].pareto)
            for (const auto &without : d.gpus[0].pareto)
                if (without.gpus == with.gpus) QVERIFY(with.sequences <= without.sequences);
    }

    // ckpt-atlas report: every number the page prints is one of report.json's, exact or in a unit (10^9 or 10^12
    // parameters, KiB to TiB) rounded to two places; nothing is computed for the page alone.
    void checkTriage(const QString &dir, bool glm, const QString &engine = QStringLiteral("vllm"))
    {
        QTemporaryDir out;
        QProcess p;
        p.start(QStringLiteral(CKPT_ATLAS_BIN),
                {QStringLiteral("report"), dir, QStringLiteral("--out"), out.path(), QStringLiteral("--engine"), engine});
        QVERIFY(p.waitForFinished(300000));
        QCOMPARE(p.exitCode(), 0);
        const auto read = [&](const char *name) {
            QFile f(out.filePath(QString::fromLatin1(name)));
            return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
        };
        const QString md = read("report.md"), html = read("report.html");
        QVERIFY(!md.isEmpty() && !html.isEmpty() && !read("budget.svg").isEmpty());
        const auto j = nlohmann::json::parse(read("report.json").toStdString());
        QCOMPARE(j["schema"].get<std::string>(), std::string("ckpt-atlas.report/1"));
        QVERIFY(j.contains("biases") && j["triage"].contains("fits_on"));
        for (const char *heading : {"## Size", "## Formats per category", "## Layer mix", "## Cache", "## Fits on", "## Anomalies"})
            QVERIFY2(md.contains(QString::fromLatin1(heading)), heading);
        QVERIFY(md.contains(QString::fromStdString(groupDigits(j["parameters"]["total_without_mtp"].get<std::uint64_t>()))));
        if (glm) QVERIFY(md.contains(QString::fromStdString(groupDigits(j["cache"]["bytes_per_token"].get<std::uint64_t>()))));
        QVERIFY(html.contains(QLatin1String("<svg")) && !html.contains(QLatin1String("src=")));
        {
            std::set<std::string> caches;
            for (const auto &g : j["triage"]["fits_on"]["gpus"])
                caches.insert(g["cache"].get<std::string>());
            for (const auto &c : caches)
                QVERIFY2(md.contains(QString::fromStdString(c)), c.c_str());
            QCOMPARE(md.contains(QLatin1String("its cache for each GPU")), caches.size() > 1);
            if (glm && engine == QLatin1String("sglang")) QVERIFY(caches.size() > 1);
        }

        // Every number of the JSON (fractions as their shortest decimal), and every number inside its strings.
        QSet<QString> exact;
        std::vector<double> values;
        const QRegularExpression numberIn(QStringLiteral("\\d[\\d,]*(?:\\.\\d+)?"));
        std::function<void(const nlohmann::json &)> collect = [&](const nlohmann::json &v) {
            if (v.is_object() || v.is_array()) {
                for (const auto &x : v) collect(x);
            } else if (v.is_number_integer()) {
                exact.insert(QString::number(v.get<std::int64_t>()));
                values.push_back(double(v.get<std::int64_t>()));
            } else if (v.is_number()) {
                char buf[64];
                const auto r = std::to_chars(buf, buf + sizeof buf, v.get<double>());
                exact.insert(QString::fromLatin1(buf, int(r.ptr - buf)));
                values.push_back(v.get<double>());
            } else if (v.is_string()) {
                for (auto m = numberIn.globalMatch(QString::fromStdString(v.get<std::string>())); m.hasNext();)
                    exact.insert(m.next().captured().remove(QLatin1Char(',')));
            }
        };
        collect(j);
        for (auto m = numberIn.globalMatch(md); m.hasNext();) {
            const QString n = m.next().captured().remove(QLatin1Char(','));
            bool found = exact.contains(n);
            for (std::size_t i = 0; !found && i < values.size(); ++i)
                for (const double unit : {1e9, 1e12, double(1ull << 10), double(1ull << 20), double(1ull << 30),
                                          double(1ull << 40)})
                    found = found || QString::number(values[i] / unit, 'f', 2) == n;
            QVERIFY2(found, qPrintable(QStringLiteral("report.md prints %1, which report.json does not hold").arg(n)));
        }
        QVERIFY2(!md.contains(QLatin1String("\n0 B per token")), qPrintable(md));
    }

private slots:
    // The GPU table (domain.md section 19): memory as the runtime reports it where a source gives it, else the
    // vendor's figure named as such; names match whatever their case, spaces or dashes.
    void gpuTable()
    {
        for (const char *n : {"H100", "H200", "H20", "B200", "B300", "GB200", "MI300X", "MI325X", "MI355X", "L40S",
                              "RTX PRO 6000"})
            QVERIFY2(gpuPresetNamed(n), n);
        QCOMPARE(gpuMemoryFromName("rtx-pro-6000").value_or(0), std::uint64_t(96) << 30);
        QCOMPARE(gpuMemoryFromName("mi355x").value_or(0), std::uint64_t(288) << 30);
        QVERIFY(gpuPresetNamed("H200")->runtime);
        QVERIFY(!gpuPresetNamed("B300")->runtime);
        QVERIFY(!gpuMemoryFromName("H300"));
        for (const auto &p : gpuPresets()) QVERIFY(!p.source.empty());
    }

    void initTestCase()
    {
        synth::writeCheckpoint(m_spec, m_dir.path().toStdString());
        LocalDirectorySource source(m_dir.path().toStdString());
        m_data.checkpoint = readCheckpoint(source);
        m_data.analysis = analyze(m_data.checkpoint);
        m_data.cache = computeCacheBudget(m_data.checkpoint, m_data.analysis, CacheOptions{});
    }

    void tp8OnH200()
    {
        const Expected e = byHand(m_spec);
        QCOMPARE(e.replicated, std::uint64_t(1'697'145'408));
        QCOMPARE(e.replicated + e.split / 8, std::uint64_t(94'683'065'664));
        QCOMPARE(e.split % 8, std::uint64_t(0));
        const CapacityPlan p = planCapacity(m_data, h200(8));
        QCOMPARE(p.perGpu.replicatedBytes, e.replicated);
        QCOMPARE(p.perGpu.weightBytes, e.replicated + e.split / 8);
        QCOMPARE(p.perGpu.splitBytes + p.perGpu.expertBytes, e.split / 8);
        // The MLA latent and the index keys stay whole on every rank: 78 x 1,152 + 21 x 144.
        QCOMPARE(p.perGpu.cacheBytesPerToken, double(78 * 1152 + 21 * 144));
        const std::uint64_t usable = 150'109'945'856ull * 9 / 10; // floor(x 0.9): the product is not whole
        QCOMPARE(p.perGpu.usableBytes, usable);
        const std::int64_t room = std::int64_t(usable) - std::int64_t(p.perGpu.weightBytes);
        QCOMPARE(p.perGpu.cacheRoomBytes, room);
        QCOMPARE(p.perGpu.maxCachedTokens, std::uint64_t(room / 92880));
        QCOMPARE(p.sequencesAtContext, std::uint64_t(room / (92880ull * 131072)));
        QVERIFY(p.fits);
        QVERIFY2(p.reason.starts_with("Fits"), p.reason.c_str());

        // Data-parallel attention: each group holds its own sequences; the split attention is wider.
        PlanOptions dp = h200(8);
        dp.dpAttention = 8;
        const CapacityPlan d = planCapacity(m_data, dp);
        QVERIFY(d.perGpu.weightBytes > p.perGpu.weightBytes);
        QCOMPARE(d.sequencesAtContext, std::uint64_t(d.perGpu.cacheRoomBytes / (92880ll * 131072)) * 8);
    }

    void fourGpusDoNotFit()
    {
        const Expected e = byHand(m_spec);
        const CapacityPlan p = planCapacity(m_data, h200(4));
        QCOMPARE(p.perGpu.weightBytes, e.replicated + e.split / 4);
        QVERIFY(!p.fits);
        const std::uint64_t usable = 150'109'945'856ull * 9 / 10;
        const std::uint64_t short_ = p.perGpu.weightBytes - usable;
        QCOMPARE(p.perGpu.cacheRoomBytes, -std::int64_t(short_));
        QVERIFY2(p.reason.find(QLocale(QLocale::English).toString(qulonglong(short_)).toStdString() + " B) short") !=
                     std::string::npos,
                 p.reason.c_str());
    }

    void expertParallelism()
    {
        // EP 8 with 8 redundant experts: (256 + 8) / 8 = 33 whole experts per GPU, of every MoE layer.
        PlanOptions o = h200(8);
        o.ep = 8;
        o.redundantExperts = 8;
        const CapacityPlan p = planCapacity(m_data, o);
        QCOMPARE(p.perGpu.experts, std::uint64_t(33));
        std::uint64_t routed = 0;
        const std::string mtp = "model.layers." + std::to_string(m_spec.layers) + ".";
        for (const auto &t : synth::layoutTensors(m_spec))
            if (!t.name.starts_with(mtp) && t.name.find(".mlp.experts.") != std::string::npos) routed += t.bytes;
        QCOMPARE(p.perGpu.expertBytes, routed / 256 * 33);
    }

    void pipelineStagesAsVllm()
    {
        // vLLM's get_pp_indices: L // pp each, the remainder one apiece to the stages before the last.
        using R = std::vector<std::pair<int, int>>;
        QCOMPARE(pipelineStages(78, 4), (R{{0, 19}, {19, 39}, {39, 59}, {59, 78}})); // 19, 20, 20, 19
        QCOMPARE(pipelineStages(5, 3), (R{{0, 2}, {2, 4}, {4, 5}}));                 // 2, 2, 1
        QCOMPARE(pipelineStages(61, 1), (R{{0, 61}}));
    }

    void tp4pp2OnH200()
    {
        // Two stages of four GPUs: layers 0-38 with the embedding, 39-77 with the final norm and the head.
        PlanOptions o = h200(8);
        o.pp = 2;
        const CapacityPlan p = planCapacity(m_data, o);
        QCOMPARE(*p.options.tp, 4);
        QCOMPARE(p.stages.size(), std::size_t(2));
        QCOMPARE(p.stages[0].firstLayer, 0);
        QCOMPARE(p.stages[0].endLayer, 39);
        QCOMPARE(p.stages[1].endLayer, 78);
        // By hand, per stage: the layer from the name, the rules of byHand, the index keys of the layers
        // that carry an indexer.
        Expected stage[2];
        std::uint64_t indexers[2] = {0, 0};
        const std::string prefix = "model.layers.";
        for (const auto &t : synth::layoutTensors(m_spec)) {
            int layer = -1;
            if (t.name.starts_with(prefix)) layer = std::stoi(t.name.substr(prefix.size()));
            if (layer == m_spec.layers) continue; // MTP
            const int s = layer < 0 ? (t.name.find("embed_tokens") != std::string::npos ? 0 : 1) : layer >= 39;
            const bool rep = t.name.find("q_a_proj") != std::string::npos ||
                             t.name.find("kv_a_proj_with_mqa") != std::string::npos ||
                             t.name.find("layernorm") != std::string::npos || t.name.ends_with("norm.weight") ||
                             t.name.find("mlp.gate.") != std::string::npos || t.name.find(".indexer.") != std::string::npos;
            (rep ? stage[s].replicated : stage[s].split) += t.bytes;
            indexers[s] += t.name.ends_with("indexer.wk.weight");
        }
        QCOMPARE(indexers[0] + indexers[1], std::uint64_t(21));
        const std::uint64_t usable = 150'109'945'856ull * 9 / 10;
        std::uint64_t fewest = UINT64_MAX;
        for (int s = 0; s < 2; ++s) {
            const PlanPerGpu &g = p.stages[s].perGpu;
            QCOMPARE(stage[s].split % 4, std::uint64_t(0));
            QCOMPARE(g.replicatedBytes, stage[s].replicated);
            QCOMPARE(g.weightBytes, stage[s].replicated + stage[s].split / 4);
            const std::uint64_t perToken = 39 * 1152 + indexers[s] * 144;
            QCOMPARE(g.cacheBytesPerToken, double(perToken));
            QCOMPARE(g.cacheRoomBytes, std::int64_t(usable) - std::int64_t(g.weightBytes));
            QCOMPARE(g.maxCachedTokens, std::uint64_t(g.cacheRoomBytes) / perToken);
            QCOMPARE(p.stages[s].sequencesAtContext, std::uint64_t(g.cacheRoomBytes) / (perToken * 131072));
            fewest = std::min(fewest, p.stages[s].sequencesAtContext);
        }
        QCOMPARE(stage[0].replicated + stage[1].replicated, byHand(m_spec).replicated);
        QCOMPARE(p.sequencesAtContext, fewest);
        QCOMPARE(p.stages[p.bindingStage].sequencesAtContext, fewest);
        QCOMPARE(p.perGpu.weightBytes, p.stages[p.bindingStage].perGpu.weightBytes);
        QVERIFY(p.fits);

        // Every cache group names its layers, so the stages can share them out.
        for (const auto &g : m_data.cache.attention)
            QCOMPARE(std::int64_t(g.layerIndices.size()), g.layers);

        o.pp = 79;
        o.gpus = 79;
        o.tp = 1;
        QVERIFY_THROWS_EXCEPTION(AtlasError, planCapacity(m_data, o)); // more stages than layers
    }

    void sglangRules()
    {
        // SGLang's default fraction (srt/arg_groups/memory_hook.py): H200 = 143,156 MiB, TP 8: reserved
        // 512 + 1.5 x 8,192 + 8 / 8 x 1,024 + 2 x 512 = 14,848 MiB; (143,156 - 14,848) / 143,156 = 0.89628...
        QCOMPARE(sglangMemFraction(150'109'945'856ull, 8, 1, 1), 0.896);
        // DP attention 8 adds 512 x 8 x 3 + 512 x 8 x 1.5 = 18,432 MiB: (143,156 - 33,280) / 143,156 = 0.76752...
        QCOMPARE(sglangMemFraction(150'109'945'856ull, 8, 1, 8), 0.768);
        // A 64 GiB GPU at TP 1: 512 + 12,288 + 128 + 512 = 13,440 MiB; (65,536 - 13,440) / 65,536 = 0.79492...
        QCOMPARE(sglangMemFraction(64ull << 30, 1, 1, 1), 0.795);
        // The remainder goes to the last stages.
        QCOMPARE(pipelineStages(5, 3, PlanEngine::Sglang), (std::vector<std::pair<int, int>>{{0, 1}, {1, 3}, {3, 5}}));

        PlanOptions o = h200(8);
        o.engine = PlanEngine::Sglang;
        const CapacityPlan p = planCapacity(m_data, o);
        QCOMPARE(*p.options.memFraction, 0.896);
        QCOMPARE(p.perGpu.usableBytes, std::uint64_t(std::floor(150'109'945'856.0L * 0.896L)));
        QCOMPARE(p.perGpu.weightBytes, std::uint64_t(94'683'065'664)); // the same placement as vLLM at TP 8

        // Under DP attention SGLang keeps the token embedding whole on every GPU.
        std::uint64_t embedding = 0;
        for (const auto &t : synth::layoutTensors(m_spec))
            if (t.name == "model.embed_tokens.weight") embedding = t.bytes;
        QVERIFY(embedding > 0);
        o.dpAttention = 8;
        PlanOptions v = o;
        v.engine = PlanEngine::Vllm;
        const CapacityPlan s = planCapacity(m_data, o), l = planCapacity(m_data, v);
        QCOMPARE(s.perGpu.replicatedBytes, l.perGpu.replicatedBytes + embedding);
        QCOMPARE(s.perGpu.weightBytes, l.perGpu.weightBytes + embedding - embedding / 8);
    }

    void impossibleCombinations_data()
    {
        QTest::addColumn<int>("gpus");
        QTest::addColumn<int>("ep");
        QTest::addColumn<int>("redundant");
        QTest::addColumn<int>("dp");
        QTest::addColumn<QString>("why");
        QTest::newRow("TP 3 and 64 heads") << 3 << 0 << 0 << 1 << QStringLiteral("attention heads");
        QTest::newRow("EP 8 and 256 + 4 experts") << 8 << 8 << 4 << 1 << QStringLiteral("does not divide 256 experts");
        QTest::newRow("DP attention 3 in TP 8") << 8 << 0 << 0 << 3 << QStringLiteral("must divide the TP degree");
        QTest::newRow("redundant without EP") << 8 << 0 << 8 << 1 << QStringLiteral("needs --ep");
    }
    void impossibleCombinations()
    {
        QFETCH(int, gpus);
        QFETCH(int, ep);
        QFETCH(int, redundant);
        QFETCH(int, dp);
        QFETCH(QString, why);
        PlanOptions o = h200(gpus);
        o.ep = ep;
        o.redundantExperts = redundant;
        o.dpAttention = dp;
        try {
            planCapacity(m_data, o);
            QFAIL("accepted");
        } catch (const AtlasError &e) {
            QCOMPARE(e.kind(), ErrorKind::Usage);
            QVERIFY2(QString::fromStdString(e.what()).contains(why), e.what());
        }
    }

    void engineDecidesTheCache()
    {
        // SGLang keeps a DSA model's latent in FP8 on Blackwell (overrides.py _dsa_kv_cache_dtype_default:
        // "fp8_e4m3" if major >= 10), BF16 on Hopper; vLLM's "auto" is the model's BF16 on both.
        const auto kvOf = [&](PlanEngine e, const char *gpu) {
            return engineCacheOptions(e, false, gpuPresetNamed(gpu), m_data, {}).kvDtype;
        };
        QCOMPARE(kvOf(PlanEngine::Sglang, "B200"), KvDtype::FP8);
        QCOMPARE(kvOf(PlanEngine::Sglang, "H200"), KvDtype::BF16);
        QCOMPARE(kvOf(PlanEngine::Sglang, "MI355X"), KvDtype::BF16);
        QCOMPARE(kvOf(PlanEngine::Vllm, "B200"), KvDtype::BF16);
        QCOMPARE(engineCacheOptions(PlanEngine::Sglang, false, nullptr, m_data, {}).kvDtype, KvDtype::BF16);
        // Speculative decoding adds the MTP layer's cache; the words say which engine's cache it is.
        const CacheBudget withMtp = computeCacheBudget(m_data.checkpoint, m_data.analysis,
                                                       engineCacheOptions(PlanEngine::Vllm, true, nullptr, m_data, {}));
        const CacheBudget without = computeCacheBudget(m_data.checkpoint, m_data.analysis,
                                                       engineCacheOptions(PlanEngine::Vllm, false, nullptr, m_data, {}));
        QVERIFY(withMtp.bytesPerToken > without.bytesPerToken);
        QVERIFY(cacheLayoutWords(withMtp, PlanEngine::Vllm).find("the MTP layer's cache too") != std::string::npos);
        const CacheBudget fp8 = computeCacheBudget(m_data.checkpoint, m_data.analysis,
                                                   engineCacheOptions(PlanEngine::Sglang, false, gpuPresetNamed("B300"), m_data, {}));
        QVERIFY(cacheLayoutWords(fp8, PlanEngine::Sglang).starts_with("SGLang's FP8 latent"));
        QCOMPARE(fp8.kvBytesPerLayer, std::int64_t(m_data.cache.kvLoraRank + m_data.cache.ropeDim)); // one byte each
    }

    // placementTotalsBoth classifies each tensor once for both ways: its totals are placementTotals' without the
    // MTP layers and with them, bucket by bucket, on layouts with an MTP layer (GLM-5), MTP blocks named apart
    // (DeepSeek-V4), eight MTP depths (Inkling) and none (the small layout).
    void placementTotalsBothWays()
    {
        const auto numbers = [](const PlacementTotals &t) {
            std::vector<std::uint64_t> v{t.indexerWkFp8, t.indexerWkBf16, t.kvBProjFp8, t.kvBProjBf16};
            std::vector<const PlacementBucket *> buckets{&t.first, &t.last};
            for (const PlacementBucket &b : t.layers)
                buckets.push_back(&b);
            for (const PlacementBucket *b : buckets)
                v.insert(v.end(), {b->replicated, b->split, b->splitAttention, b->kvHeads, b->routed, b->embedding,
                                   b->paddedSinks, b->paddedSinkHeads, b->host});
            return v;
        };
        for (const char *name : {"glm-5.2-fp8", "deepseek-v4-flash", "inkling", "small"}) {
            QTemporaryDir dir;
            const auto layout = synth::layoutNamed(name);
            QVERIFY(layout);
            synth::writeLayout(*layout, dir.path().toStdString());
            LoadedCheckpoint data;
            LocalDirectorySource source(dir.path().toStdString());
            data.checkpoint = readCheckpoint(source);
            data.analysis = analyze(data.checkpoint);
            const auto [without, with] = placementTotalsBoth(data);
            QVERIFY2(numbers(without) == numbers(placementTotals(data, false)), name);
            QVERIFY2(numbers(with) == numbers(placementTotals(data, true)), name);
            if (data.analysis.layerCount > data.analysis.mainLayers || std::string_view(name) == "deepseek-v4-flash")
                QVERIFY2(numbers(with) != numbers(without), name); // the MTP layers do weigh
        }
    }

    // The Plan view lends the search the placement totals it prepared (it would make them again at every context
    // typed): the answer is the one the search makes on its own; totals lent are what it uses (heavier experts,
    // another frontier); totals lent for another checkpoint are not used; the answer keeps none of them.
    void searchUsesTheTotalsLentForItsCheckpoint()
    {
        SearchOptions so;
        so.gpus = {gpuPresetNamed("H200")};
        so.context = 131072;
        so.maxGpus = 16;
        so.mtpBoth = true;
        const auto frontier = [](const DeploymentSearch &d) {
            std::vector<std::tuple<bool, int, int, int, int, int, std::uint64_t>> points;
            for (const GpuSearch &k : d.gpus)
                for (const SearchPoint &p : k.pareto)
                    points.emplace_back(k.mtp, p.gpus, p.tp, p.ep, p.pp, p.dpAttention, p.sequences);
            return points;
        };
        const auto own = frontier(searchDeployments(m_data, so));
        QVERIFY(own.size() > 2);
        const std::shared_ptr<const LoadedCheckpoint> self(std::shared_ptr<void>(), &m_data); // not owned
        so.totalsWithoutMtp = std::make_shared<const PlacementTotals>(placementTotals(m_data, false));
        so.totalsWithMtp = std::make_shared<const PlacementTotals>(placementTotals(m_data, true));
        so.totalsOf = self;
        const DeploymentSearch lent = searchDeployments(m_data, so);
        QVERIFY(frontier(lent) == own);
        QVERIFY(!lent.options.totalsWithoutMtp && !lent.options.totalsWithMtp && !lent.options.totalsOf);

        PlacementTotals heavier = placementTotals(m_data, false);
        for (PlacementBucket &layer : heavier.layers)
            layer.routed *= 2;
        so.totalsWithoutMtp = std::make_shared<const PlacementTotals>(heavier);
        QVERIFY(frontier(searchDeployments(m_data, so)) != own);

        const LoadedCheckpoint other = m_data; // the same layout, another checkpoint
        so.totalsOf = std::shared_ptr<const LoadedCheckpoint>(std::shared_ptr<void>(), &other);
        QVERIFY(frontier(searchDeployments(m_data, so)) == own);
    }

    void searchFindsTheSmallestDeployments()
    {
        SearchOptions so;
        so.gpus = {gpuPresetNamed("H200"), gpuPresetNamed("B300")};
        so.context = 131072;
        const DeploymentSearch d = searchDeployments(m_data, so);
        QCOMPARE(d.gpus.size(), std::size_t(2));
        QVERIFY(d.plansRefused > 0); // 3, 5, 6, 7 GPUs cannot split 64 heads
        for (const GpuSearch &k : d.gpus) {
            QVERIFY(!k.pareto.empty());
            QVERIFY(k.smallest);
            QCOMPARE(k.smallest->gpus, k.pareto.front().gpus);
            for (std::size_t i = 0; i < k.pareto.size(); ++i) {
                const SearchPoint &pt = k.pareto[i];
                if (i > 0) {
                    QVERIFY(pt.gpus > k.pareto[i - 1].gpus);
                    QVERIFY(pt.sequences > k.pareto[i - 1].sequences);
                }
                // Each point is a plan as `plan` makes it, with the engine's cache for that GPU.
                PlanOptions o = h200(pt.gpus);
                o.gpuName = std::string(k.gpu->name);
                o.gpuMemory = k.gpu->bytes;
                o.tp = pt.tp;
                o.pp = pt.pp;
                o.ep = pt.ep;
                o.dpAttention = pt.dpAttention;
                o.context = 131072;
                CacheOptions co = engineCacheOptions(PlanEngine::Vllm, false, k.gpu, m_data, {});
                co.contextTokens = 131072;
                const CacheBudget cache = computeCacheBudget(m_data.checkpoint, m_data.analysis, co);
                const CapacityPlan plan = planCapacity(m_data, o, nullptr, &cache);
                QVERIFY(plan.fits);
                QCOMPARE(plan.sequencesAtContext, pt.sequences);
            }
            // Fewer GPUs than the smallest: no layout the engine runs holds a sequence.
            for (int n = 1; n < k.smallest->gpus; ++n)
                for (int pp : {1, 2, 4, 8}) {
                    if (n % pp) continue;
                    PlanOptions o = h200(n);
                    o.gpuName = std::string(k.gpu->name);
                    o.gpuMemory = k.gpu->bytes;
                    o.pp = pp;
                    o.tp = n / pp;
                    o.dpAttention = n / pp;
                    o.context = 131072;
                    try {
                        QVERIFY(!planCapacity(m_data, o).fits);
                    } catch (const AtlasError &) {
                    }
                }
        }
        QVERIFY(d.best);
        // More sequences wanted: a larger deployment, never a smaller one.
        so.sequences = d.gpus[*d.best].smallest->sequences + 1;
        const DeploymentSearch more = searchDeployments(m_data, so);
        QVERIFY(more.best);
        QVERIFY(more.gpus[*more.best].smallest->gpus > d.gpus[*d.best].smallest->gpus ||
                more.gpus[*more.best].smallest->sequences >= so.sequences);
    }

    // ckpt-atlas report: every number the page prints is one of report.json's, exact or in a unit (10^9
    // parameters, 2^30 bytes) rounded to two places; nothing is computed for the page alone.
    void triageReport()
    {
        checkTriage(m_dir.path(), true);
        // SGLang's cache depends on the GPU on DSA models (FP8 latent on Blackwell): a cache column, each
        // GPU's own words.
        checkTriage(m_dir.path(), true, QStringLiteral("sglang"));
        // DeepSeek-V4's cache is fractional per token (compressed rows): printed as the JSON holds it.
        QTemporaryDir v4;
        synth::writeLayout(synth::deepseekV4Flash(), v4.path().toStdString());
        checkTriage(v4.path(), false);
    }

    void commandLine()
    {
        QProcess p;
        p.start(QStringLiteral(CKPT_ATLAS_BIN),
                {QStringLiteral("plan"), m_dir.path(), QStringLiteral("--gpus"), QStringLiteral("8"), QStringLiteral("--gpu"),
                 QStringLiteral("H200"), QStringLiteral("--context"), QStringLiteral("131072"), QStringLiteral("--json")});
        QVERIFY(p.waitForFinished(300000));
        QCOMPARE(p.exitCode(), 0);
        const auto j = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
        QCOMPARE(j["schema"].get<std::string>(), std::string("ckpt-atlas.plan/1"));
        QCOMPARE(j["per_gpu"]["weight_bytes"].get<std::uint64_t>(), std::uint64_t(94'683'065'664));
        // The engine decides the cache when no cache flag is given: vLLM's 132-byte index entries on the
        // layers that own an indexer (deepseek_v2.py DeepseekV32IndexerCache), the BF16 latent at "auto".
        const CacheBudget vllm =
            computeCacheBudget(m_data.checkpoint, m_data.analysis,
                               engineCacheOptions(PlanEngine::Vllm, false, gpuPresetNamed("H200"), m_data, {}));
        QCOMPARE(vllm.indexEntryBytes, std::int64_t(132));
        QCOMPARE(j["per_gpu"]["cache_bytes_per_token"].get<std::uint64_t>(), vllm.bytesPerToken);
        QCOMPARE(j["cache"]["chosen_by"].get<std::string>(), std::string("engine"));
        QCOMPARE(j["cache"]["preset"].get<std::string>(), std::string("vllm"));
        QVERIFY(j["cache"]["layout"].get<std::string>().starts_with("vLLM's BF16 latent and 132-byte FP8 index keys"));
        QVERIFY(j["fits"].get<bool>());
        // A cache flag takes the cache out of the engine's hands, and the plan says so.
        p.start(QStringLiteral(CKPT_ATLAS_BIN),
                {QStringLiteral("plan"), m_dir.path(), QStringLiteral("--gpus"), QStringLiteral("8"), QStringLiteral("--gpu"),
                 QStringLiteral("H200"), QStringLiteral("--context"), QStringLiteral("131072"),
                 QStringLiteral("--cache-preset"), QStringLiteral("article"), QStringLiteral("--json")});
        QVERIFY(p.waitForFinished(300000));
        const auto flagged = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
        QCOMPARE(flagged["per_gpu"]["cache_bytes_per_token"].get<std::uint64_t>(), m_data.cache.bytesPerToken);
        QVERIFY(m_data.cache.bytesPerToken != vllm.bytesPerToken); // 144-byte entries: the flag mattered
        QCOMPARE(flagged["cache"]["chosen_by"].get<std::string>(), std::string("flags"));
        // No --context: max_position_embeddings, as the Cache view and the report use.
        p.start(QStringLiteral(CKPT_ATLAS_BIN), {QStringLiteral("plan"), m_dir.path(), QStringLiteral("--gpus"),
                                                 QStringLiteral("8"), QStringLiteral("--gpu"), QStringLiteral("H200"),
                                                 QStringLiteral("--json")});
        QVERIFY(p.waitForFinished(300000));
        const auto long_ = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
        QCOMPARE(long_["context_tokens"].get<std::uint64_t>(), defaultContextTokens(m_data.checkpoint.config));
        p.start(QStringLiteral(CKPT_ATLAS_BIN), {QStringLiteral("plan"), m_dir.path(), QStringLiteral("--gpus"),
                                                 QStringLiteral("4"), QStringLiteral("--gpu"), QStringLiteral("H200")});
        QVERIFY(p.waitForFinished(300000));
        QCOMPARE(p.exitCode(), 1); // does not fit
        {
            const QByteArray text = p.readAllStandardOutput();
            QVERIFY(text.startsWith("Does not fit"));
            QVERIFY2(text.contains("Note        Fits from ") && text.contains(" × H200 with TP "), text.constData());
        }
        // --search: the Pareto set per GPU, as JSON.
        p.start(QStringLiteral(CKPT_ATLAS_BIN),
                {QStringLiteral("plan"), m_dir.path(), QStringLiteral("--search"), QStringLiteral("--gpu"),
                 QStringLiteral("H200"), QStringLiteral("--context"), QStringLiteral("131072"), QStringLiteral("--json")});
        QVERIFY(p.waitForFinished(300000));
        QCOMPARE(p.exitCode(), 0);
        {
            const auto s = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
            QCOMPARE(s["schema"].get<std::string>(), std::string("ckpt-atlas.plan-search/1"));
            QCOMPARE(s["gpu_kinds"].size(), std::size_t(1));
            QVERIFY(s["smallest"]["gpus"].get<int>() <= 8); // 8 x H200 with TP 8 holds three (above)
            QCOMPARE(s["smallest"]["gpu"].get<std::string>(), std::string("H200"));
        }
        p.start(QStringLiteral(CKPT_ATLAS_BIN), {QStringLiteral("plan"), m_dir.path(), QStringLiteral("--gpus"),
                                                 QStringLiteral("3"), QStringLiteral("--gpu"), QStringLiteral("H200")});
        QVERIFY(p.waitForFinished(300000));
        QCOMPARE(p.exitCode(), 2);
        QVERIFY(p.readAllStandardError().contains("attention heads"));
        p.start(QStringLiteral(CKPT_ATLAS_BIN),
                {QStringLiteral("plan"), m_dir.path(), QStringLiteral("--gpus"), QStringLiteral("8"), QStringLiteral("--pp"),
                 QStringLiteral("2"), QStringLiteral("--gpu"), QStringLiteral("H200"), QStringLiteral("--context"),
                 QStringLiteral("131072"), QStringLiteral("--json")});
        QVERIFY(p.waitForFinished(300000));
        QCOMPARE(p.exitCode(), 0);
        const auto pp = nlohmann::json::parse(p.readAllStandardOutput().toStdString());
        QCOMPARE(pp["parallelism"]["tp"].get<int>(), 4);
        QCOMPARE(pp["stages"].size(), std::size_t(2));
        QCOMPARE(pp["stages"][1]["first_layer"].get<int>(), 39);
        const int bound = pp["binding_stage"].get<int>();
        QVERIFY(pp["per_gpu"]["weight_bytes"] == pp["stages"][bound]["weight_bytes"]);
    }
};

QTEST_GUILESS_MAIN(TestPlan)
#include "tst_plan.moc"
