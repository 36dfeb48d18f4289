// `ckpt-atlas diff`: two checkpoints compared. Expected counts are derived here from the tensor lists the
// writer produces (synth::layoutTensors), never from the program's output.
#include "diff.h"
#include "fixture_writer.h"
#include "layout_arithmetic.h"
#include "report.h"
#include "synthetic_layout.h"
#include "support/test_hub.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <map>
#include <set>

using namespace atlas;

namespace {

struct Run
{
    int exitCode = -1;
    QByteArray out, err;
};

Run ckptAtlas(const QStringList &args)
{
    QProcess p;
    p.start(QStringLiteral(CKPT_ATLAS_BIN), args);
    Run r;
    if (!p.waitForFinished(300000)) return r;
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

nlohmann::json diffJson(const QString &a, const QString &b, QStringList extra = {})
{
    const Run r = ckptAtlas(QStringList{QStringLiteral("diff"), a, b, QStringLiteral("--json")} + extra);
    if (r.exitCode != 0) qWarning("%s", r.err.constData());
    return r.exitCode == 0 ? nlohmann::json::parse(r.out.toStdString()) : nlohmann::json();
}

std::map<std::string, std::pair<Dtype, std::vector<std::uint64_t>>> tensorMap(const synth::LayoutSpec &spec)
{
    std::map<std::string, std::pair<Dtype, std::vector<std::uint64_t>>> m;
    for (const auto &t : synth::layoutTensors(spec))
        m[t.name] = {t.dtype, t.shape};
    return m;
}

// The partition of names the diff must report, worked out from the two lists.
struct Partition
{
    std::uint64_t same = 0, added = 0, removed = 0, dtype = 0, shape = 0;
};
Partition partition(const synth::LayoutSpec &a, const synth::LayoutSpec &b)
{
    const auto ma = tensorMap(a), mb = tensorMap(b);
    Partition p;
    for (const auto &[name, t] : mb) {
        const auto it = ma.find(name);
        if (it == ma.end())
            ++p.added;
        else if (it->second.first != t.first)
            ++p.dtype;
        else if (it->second.second != t.second)
            ++p.shape;
        else
            ++p.same;
    }
    for (const auto &[name, t] : ma)
        p.removed += !mb.count(name);
    return p;
}

synth::LayoutSpec small(int shards = 3)
{
    synth::LayoutSpec s = synth::smallLayout();
    s.shards = shards;
    return s;
}

} // namespace

class TestDiff : public QObject
{
    Q_OBJECT

private slots:
    void leadSentencesAndConfigPaths()
    {
        // A requantization: the same parameters, the routed experts from 1 byte to half a byte each.
        CheckpointDiff d;
        const auto experts = static_cast<std::size_t>(Category::RoutedExperts);
        const auto attention = static_cast<std::size_t>(Category::Attention);
        d.aParameters = d.bParameters = 1000;
        d.aByCategory[experts] = d.bByCategory[experts] = 800;
        d.aByCategory[attention] = d.bByCategory[attention] = 200;
        d.aBytes[experts] = 800;
        d.bBytes[experts] = 400;
        d.aBytes[attention] = d.bBytes[attention] = 400;
        d.aFormat[experts] = "FP8 e4m3 128x128";
        d.bFormat[experts] = "NVFP4 g16";
        d.aFormat[attention] = d.bFormat[attention] = "BF16";
        d.configChanged["quantization_config"] = {{"a", {{"quant_method", "fp8"}, {"fmt", "e4m3"}, {"block", {128, 128}}}},
                                                  {"b", {{"quant_method", "modelopt"}, {"fmt", "e4m3"}, {"group", 16}}}};
        d.configAdded["moe_router_dtype"] = "float32";
        const auto lead = diffLeadSentences(d);
        QVERIFY(lead.size() >= 3);
        // 1,200 -> 800 bytes: -33.3 %, bytes before parameters, the packing named as the only change.
        QCOMPARE(QString::fromStdString(lead[0]),
                 QString::fromUtf8("Stored size 1.17 KiB \u2192 800 B (\u221233.3 %) for the same 1.00 K parameters (1,000): only "
                                   "the packing changed."));
        QVERIFY2(lead[1].find("routed experts FP8 e4m3 128x128") != std::string::npos, lead[1].c_str());
        QVERIFY2(lead[1].find("attention") == std::string::npos, lead[1].c_str()); // unchanged: not named
        // config.json key by key: nested keys as paths, added and removed apart from changed.
        std::vector<std::string> paths;
        for (const auto &c : configChangesByPath(d))
            paths.push_back(c.kind + " " + c.path);
        QCOMPARE(paths, (std::vector<std::string>{"added moe_router_dtype", "changed quantization_config.quant_method",
                                                  "removed quantization_config.block",
                                                  "added quantization_config.group"}));
    }

    void collapse()
    {
        QCOMPARE(collapseNumbers({0, 1, 2, 5}), std::string("0..2,5"));
        QCOMPARE(collapseNumbers({3, 4}), std::string("3,4"));
        QCOMPARE(collapseNumbers({7}), std::string("7"));
        QCOMPARE(collapseNumbers({1, 3, 5, 6, 7, 8}), std::string("1,3,5..8"));
    }

    void glm52AgainstGlm53()
    {
        // The reference article's comparison: one config key added, the tensors and biases identical.
        synth::LayoutSpec a = small(), b = small();
        b.moeRouterDtype = "float32";
        QTemporaryDir da, db;
        synth::writeCheckpoint(a, da.path().toStdString());
        synth::writeCheckpoint(b, db.path().toStdString());
        const auto j = diffJson(da.path(), db.path(), {QStringLiteral("--biases")});
        QVERIFY(j.is_object());
        QCOMPARE(j["schema"].get<std::string>(), std::string("ckpt-atlas.diff/1"));
        QCOMPARE(j["config"]["added"].size(), std::size_t(1));
        QCOMPARE(j["config"]["added"]["moe_router_dtype"].get<std::string>(), std::string("float32"));
        QVERIFY(j["config"]["removed"].empty() && j["config"]["changed"].empty());
        const std::uint64_t tensors = synth::layoutTensors(a).size();
        QCOMPARE(j["tensors"]["same"].get<std::uint64_t>(), tensors);
        QVERIFY(j["tensors"]["groups"].empty());
        QCOMPARE(j["parameters"]["a"].get<std::uint64_t>(), expected::budget(a).total);
        QVERIFY(j["parameters"]["equal"].get<bool>());
        // Every MoE and MTP layer's F32 correction bias, the same bytes on both sides.
        const auto &layers = j["biases"]["layers"];
        QCOMPARE(layers.size(), std::size_t(a.layers - a.firstDense + a.mtpLayers));
        for (const auto &l : layers) {
            QVERIFY(l["same_bytes"].get<bool>());
            QCOMPARE(l["a_dtype"].get<std::string>(), std::string("F32"));
        }
        // The readable output leads with one sentence.
        const Run r = ckptAtlas({QStringLiteral("diff"), da.path(), db.path(), QStringLiteral("--biases")});
        QCOMPARE(r.exitCode, 0);
        const QString text = QString::fromUtf8(r.out);
        const QString sentence = QStringLiteral("config: 1 key added (moe_router_dtype: \"float32\"); tensors identical (%1); "
                                                "logical parameters equal (%2); biases byte-identical in %3/%3 layers.")
                                     .arg(QString::fromStdString(groupDigits(tensors)),
                                          QString::fromStdString(groupDigits(expected::budget(a).total)))
                                     .arg(layers.size());
        QVERIFY2(text.contains(sentence), qPrintable(text.left(600)));
    }

    void fp8AgainstRepacked_data()
    {
        QTest::addColumn<int>("packing");
        QTest::newRow("NVFP4") << int(synth::Packing::Nvfp4);
        QTest::newRow("INT4") << int(synth::Packing::Int4);
        QTest::newRow("AWQ") << int(synth::Packing::Awq);
    }
    void fp8AgainstRepacked()
    {
        QFETCH(int, packing);
        synth::LayoutSpec a = small(), b = small(2);
        b.packing = static_cast<synth::Packing>(packing);
        QTemporaryDir da, db;
        synth::writeCheckpoint(a, da.path().toStdString());
        synth::writeCheckpoint(b, db.path().toStdString());
        const auto j = diffJson(da.path(), db.path());
        QVERIFY(j.is_object());
        const Partition p = partition(a, b);
        QCOMPARE(j["tensors"]["same"].get<std::uint64_t>(), p.same);
        QCOMPARE(j["tensors"]["added"].get<std::uint64_t>(), p.added);
        QCOMPARE(j["tensors"]["removed"].get<std::uint64_t>(), p.removed);
        QCOMPARE(j["tensors"]["dtype_changed"].get<std::uint64_t>(), p.dtype);
        QCOMPARE(j["tensors"]["shape_changed"].get<std::uint64_t>(), p.shape);
        // The groups cover every changed name exactly once, in far fewer lines than names.
        std::uint64_t inGroups = 0;
        for (const auto &g : j["tensors"]["groups"])
            inGroups += g["tensors"].get<std::uint64_t>();
        QCOMPARE(inGroups, p.added + p.removed + p.dtype + p.shape);
        QVERIFY(j["tensors"]["groups"].size() * 20 < inGroups);
        // The repack keeps every logical parameter; the routed experts' format changes.
        QVERIFY(j["parameters"]["equal"].get<bool>());
        QCOMPARE(j["parameters"]["b"].get<std::uint64_t>(), expected::budget(a).total);
        const auto &routed = j["parameters"]["by_category"]["routed_experts"];
        QCOMPARE(routed["a_format"].get<std::string>(), std::string("FP8 e4m3 128x128"));
        QVERIFY(routed["b_format"].get<std::string>() != routed["a_format"].get<std::string>());
        QVERIFY(routed["b_bytes"].get<std::uint64_t>() < routed["a_bytes"].get<std::uint64_t>());
        QCOMPARE(routed["delta"].get<std::int64_t>(), std::int64_t(0));
        QVERIFY(routed["bytes_delta"].get<std::int64_t>() < 0);
        // The config: quantization_config changed, nothing else.
        QCOMPARE(j["config"]["changed"].size(), std::size_t(1));
        QVERIFY(j["config"]["changed"].contains("quantization_config"));
        // The readable diff names its changed keys as paths, never a dump of the nested object.
        const Run r = ckptAtlas({QStringLiteral("diff"), da.path(), db.path()});
        QCOMPARE(r.exitCode, 0);
        const QString text = QString::fromUtf8(r.out);
        const QString lead = text.section(QLatin1Char('\n'), 3, 3); // after the A and B lines and a blank one
        QVERIFY2(lead.startsWith(QLatin1String("config: ")) && lead.contains(QLatin1String("quantization_config.")),
                 qPrintable(lead));
        QVERIFY2(!lead.contains(QLatin1Char('{')), qPrintable(lead));
        QVERIFY2(text.contains(QLatin1String("\n  ~ quantization_config.")) ||
                     text.contains(QLatin1String("\n  + quantization_config.")),
                 qPrintable(text.left(1200)));
    }

    void groupsCollapseLayerAndExpertNumbers()
    {
        // FP8 -> NVFP4: every routed expert's weight changes dtype; in one line per module name.
        synth::LayoutSpec a = small(), b = small();
        b.packing = synth::Packing::Nvfp4;
        QTemporaryDir da, db;
        synth::writeCheckpoint(a, da.path().toStdString());
        synth::writeCheckpoint(b, db.path().toStdString());
        const auto j = diffJson(da.path(), db.path());
        const std::string want = "model.layers.{" + std::to_string(a.firstDense) + ".." +
                                 std::to_string(a.layers + a.mtpLayers - 1) + "}.mlp.experts.{0.." +
                                 std::to_string(a.experts - 1) + "}.{gate_proj,up_proj}.weight";
        bool found = false;
        for (const auto &g : j["tensors"]["groups"])
            if (g["pattern"] == want) {
                found = true;
                QCOMPARE(g["change"].get<std::string>(), std::string("dtype"));
                QCOMPARE(g["tensors"].get<std::uint64_t>(),
                         std::uint64_t(2 * (a.layers - a.firstDense + a.mtpLayers) * a.experts));
            }
        QVERIFY2(found, j["tensors"]["groups"].dump(1).substr(0, 2000).c_str());
    }

    void renamedAndMissingTensors()
    {
        // Hand-made: one tensor renamed, one dropped, one F32 -> BF16 (precision lost), one reshaped.
        using fixture::Tensor;
        const std::vector<Tensor> a = {{"model.layers.0.mlp.gate.e_score_correction_bias", "F32", {8}},
                                       {"model.layers.0.mlp.gate.weight", "BF16", {8, 16}},
                                       {"model.layers.0.self_attn.o_proj.weight", "BF16", {16, 16}},
                                       {"model.layers.0.old_name.weight", "BF16", {4}},
                                       {"model.layers.0.dropped.weight", "BF16", {4}},
                                       {"model.norm.weight", "BF16", {16}}};
        const std::vector<Tensor> b = {{"model.layers.0.mlp.gate.e_score_correction_bias", "BF16", {8}},
                                       {"model.layers.0.mlp.gate.weight", "BF16", {8, 16}},
                                       {"model.layers.0.self_attn.o_proj.weight", "BF16", {16, 32}},
                                       {"model.layers.0.new_name.weight", "BF16", {4}},
                                       {"model.norm.weight", "BF16", {16}}};
        QTemporaryDir da, db;
        const nlohmann::json config = {{"num_hidden_layers", 1}, {"n_routed_experts", 8}, {"num_experts_per_tok", 2}};
        fixture::writeCheckpoint(da.path().toStdString(), config, a);
        nlohmann::json configB = config;
        configB["num_experts_per_tok"] = 4;
        configB.erase("n_routed_experts");
        configB["num_experts"] = 8;
        fixture::writeCheckpoint(db.path().toStdString(), configB, b);
        const auto j = diffJson(da.path(), db.path(), {QStringLiteral("--biases")});
        QVERIFY(j.is_object());
        QCOMPARE(j["tensors"]["same"].get<int>(), 2);
        QCOMPARE(j["tensors"]["added"].get<int>(), 1);
        QCOMPARE(j["tensors"]["removed"].get<int>(), 2);
        QCOMPARE(j["tensors"]["dtype_changed"].get<int>(), 1);
        QCOMPARE(j["tensors"]["shape_changed"].get<int>(), 1);
        QCOMPARE(j["config"]["changed"]["num_experts_per_tok"]["b"].get<int>(), 4);
        QVERIFY(j["config"]["removed"].contains("n_routed_experts"));
        QVERIFY(j["config"]["added"].contains("num_experts"));
        const auto &bias = j["biases"]["layers"][0];
        QCOMPARE(bias["a_dtype"].get<std::string>(), std::string("F32"));
        QCOMPARE(bias["b_dtype"].get<std::string>(), std::string("BF16"));
        QVERIFY(!bias["same_bytes"].get<bool>());
        QVERIFY(bias["precision_lost"].get<bool>());
        const Run r = ckptAtlas({QStringLiteral("diff"), da.path(), db.path()});
        QVERIFY(QString::fromUtf8(r.out).contains(QLatin1String("(precision lost)")));
        // --expect checks the diff like inspect checks the report; a wrong expectation is exit 5.
        QCOMPARE(ckptAtlas({QStringLiteral("diff"), da.path(), db.path(), QStringLiteral("--expect"),
                            QStringLiteral("tensors.added=1")})
                     .exitCode,
                 0);
        QCOMPARE(ckptAtlas({QStringLiteral("diff"), da.path(), db.path(), QStringLiteral("--expect"),
                            QStringLiteral("tensors.added=2")})
                     .exitCode,
                 5);
    }

    void twoRevisionsOnTheHub()
    {
        // One repository, two revisions (main and a tag), read through the test Hub over TLS.
        TestHub hub;
        QTemporaryDir cache;
        synth::LayoutSpec a = small(), b = small();
        b.moeRouterDtype = "float32";
        const std::string mainCommit = hub.addRepo("atlas/glm5", a);
        const std::string tagCommit = hub.addRevision("atlas/glm5", "v5.3", b);
        QString error;
        QVERIFY2(hub.start(&error), qPrintable(error));
        qputenv("HF_ENDPOINT", QByteArray::fromStdString(hub.endpoint()));
        qputenv("XDG_CACHE_HOME", cache.path().toLocal8Bit());
        const auto j = diffJson(QStringLiteral("hf://atlas/glm5@main"), QStringLiteral("hf://atlas/glm5@v5.3"),
                                {QStringLiteral("--ca-bundle"), QString::fromStdString(hub.caFile()),
                                 QStringLiteral("--biases")});
        qunsetenv("HF_ENDPOINT");
        QVERIFY(j.is_object());
        QCOMPARE(j["a"]["kind"].get<std::string>(), std::string("hub"));
        QCOMPARE(j["a"]["revision"].get<std::string>(), std::string("main"));
        QCOMPARE(j["a"]["commit"].get<std::string>(), mainCommit);
        QCOMPARE(j["b"]["revision"].get<std::string>(), std::string("v5.3"));
        QCOMPARE(j["b"]["commit"].get<std::string>(), tagCommit);
        QCOMPARE(j["config"]["added"]["moe_router_dtype"].get<std::string>(), std::string("float32"));
        QCOMPARE(j["tensors"]["same"].get<std::uint64_t>(), std::uint64_t(synth::layoutTensors(a).size()));
        for (const auto &l : j["biases"]["layers"])
            QVERIFY(l["same_bytes"].get<bool>());
    }

    void figuresWithCompare()
    {
        synth::LayoutSpec a = small(), b = small();
        b.packing = synth::Packing::Int4;
        QTemporaryDir da, db, out;
        synth::writeCheckpoint(a, da.path().toStdString());
        synth::writeCheckpoint(b, db.path().toStdString());
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(CKPT_ATLAS_BIN), {QStringLiteral("figures"), da.path(), QStringLiteral("--compare"), db.path(),
                                                 QStringLiteral("--out"), out.path(), QStringLiteral("--tokens"),
                                                 QStringLiteral("32")});
        QVERIFY(p.waitForFinished(300000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        QFile svg(out.filePath(QStringLiteral("09-compare.svg")));
        QVERIFY(svg.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(svg.readAll());
        QVERIFY(text.contains(QStringLiteral("compared with ") + db.path()));
        QVERIFY(text.contains(QLatin1String("logical parameters equal")));
        // The SVG names the font family the system resolved, never the generic alias a renderer lacks.
        QVERIFY(text.contains(QLatin1String("font-family=")));
        QVERIFY(!text.contains(QLatin1String("font-family=\"Sans Serif\"")));
    }

    void usageAndSourceErrors()
    {
        const Run one = ckptAtlas({QStringLiteral("diff"), QStringLiteral("/tmp")});
        QCOMPARE(one.exitCode, 2);
        QVERIFY(one.err.contains("two sources"));
        QTemporaryDir da;
        synth::writeCheckpoint(small(), da.path().toStdString());
        const Run missing = ckptAtlas({QStringLiteral("diff"), da.path(), QStringLiteral("/nonexistent/ckpt")});
        QCOMPARE(missing.exitCode, 3);
        QVERIFY2(missing.err.contains("B (/nonexistent/ckpt)"), missing.err.constData());
    }
};

QTEST_GUILESS_MAIN(TestDiff)
#include "tst_diff.moc"
