// The capacity plan (domain.md section 14) on the GLM-5.2-FP8 layout at full scale: every figure is
// worked out here from the written tensors by the placement rules, then held against the worked example
// of the issue (TP8 on H200: 94,683,065,664 B of weights per GPU, 1,697,145,408 of them replicated).
#include "analysis.h"
#include "byte_source.h"
#include "cache_budget.h"
#include "capacity_plan.h"
#include "checkpoint_reader.h"
#include "errors.h"
#include "synthetic_layout.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

#include <cmath>

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

private slots:
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
        QCOMPARE(j["per_gpu"]["cache_bytes_per_token"].get<std::uint64_t>(), std::uint64_t(92880));
        QVERIFY(j["fits"].get<bool>());
        p.start(QStringLiteral(CKPT_ATLAS_BIN), {QStringLiteral("plan"), m_dir.path(), QStringLiteral("--gpus"),
                                                 QStringLiteral("4"), QStringLiteral("--gpu"), QStringLiteral("H200")});
        QVERIFY(p.waitForFinished(300000));
        QCOMPARE(p.exitCode(), 1); // does not fit
        QVERIFY(p.readAllStandardOutput().startsWith("Does not fit"));
        p.start(QStringLiteral(CKPT_ATLAS_BIN), {QStringLiteral("plan"), m_dir.path(), QStringLiteral("--gpus"),
                                                 QStringLiteral("3"), QStringLiteral("--gpu"), QStringLiteral("H200")});
        QVERIFY(p.waitForFinished(300000));
        QCOMPARE(p.exitCode(), 2);
        QVERIFY(p.readAllStandardError().contains("attention heads"));
    }
};

QTEST_GUILESS_MAIN(TestPlan)
#include "tst_plan.moc"
