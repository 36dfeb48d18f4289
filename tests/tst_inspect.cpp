// `ckpt-atlas inspect` end to end, as a user runs it, on the full-scale 141-shard GLM-5.x layout.
#include "layout_arithmetic.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

#include <fstream>

namespace {

struct Run
{
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};

Run inspect(const QStringList &args)
{
    QProcess p;
    QStringList all{QStringLiteral("inspect")};
    all += args;
    p.start(QStringLiteral(CKPT_ATLAS_BIN), all);
    if (!p.waitForFinished(300000)) return {};
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
            p.readAllStandardError()};
}

} // namespace

class TestInspect : public QObject
{
    Q_OBJECT

private slots:
    void withoutADisplay()
    {
        // No DISPLAY, no Wayland, no platform chosen: what a server or a CI machine has.
        auto run = [](const QStringList &args) {
            QProcess p;
            QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
            for (const char *name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"})
                env.remove(QLatin1String(name));
            p.setProcessEnvironment(env);
            p.start(QStringLiteral(CKPT_ATLAS_BIN), args);
            if (!p.waitForFinished(300000)) return Run{};
            return Run{p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
                       p.readAllStandardError()};
        };
        const Run version = run({QStringLiteral("--version")});
        QCOMPARE(version.exitCode, 0);
        QVERIFY2(version.out.startsWith("ckpt-atlas "), version.out.constData());
        const Run help = run({QStringLiteral("--help")});
        QCOMPARE(help.exitCode, 0);
        QVERIFY(help.out.contains("ckpt-atlas inspect"));
        // A command this program does not have is a usage error, never a window on a source named "serve".
        const Run serve = run({QStringLiteral("serve"), QStringLiteral("some-dir"), QStringLiteral("--gpus"),
                               QStringLiteral("8")});
        QCOMPARE(serve.exitCode, 2);
        QVERIFY2(serve.err.contains("usage:"), serve.err.constData());
        const Run word = run({QStringLiteral("serve")});
        QCOMPARE(word.exitCode, 2);
        QVERIFY2(word.err.contains("unknown command 'serve'"), word.err.constData());
        // plan without its GPU is a usage error that says what is missing.
        const Run plan = run({QStringLiteral("plan"), QStringLiteral("some-dir"), QStringLiteral("--gpus"),
                              QStringLiteral("8")});
        QCOMPARE(plan.exitCode, 2);
        QVERIFY2(plan.err.contains("--gpu NAME or --gpu-memory BYTES"), plan.err.constData());
        const Run option = run({QStringLiteral("--gpus")});
        QCOMPARE(option.exitCode, 2);
        QVERIFY2(option.err.contains("unknown option --gpus"), option.err.constData());
        // The window itself: one sentence that points at what works here.
        const Run window = run({});
        QCOMPARE(window.exitCode, 2);
        QVERIFY2(window.err.contains("no display") && window.err.contains("inspect") &&
                     window.err.contains("QT_QPA_PLATFORM=offscreen"),
                 window.err.constData());
    }

    void initTestCase()
    {
        QVERIFY(m_full.isValid());
        const auto written =
            atlas::synth::writeCheckpoint(atlas::synth::glm5Fp8(), m_full.path().toStdString());
        QCOMPARE(written.shards, 141);
    }

    void fullScaleJson()
    {
        const Run r = inspect({m_full.path(), QStringLiteral("--json")});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const auto report = nlohmann::json::parse(r.out.toStdString());
        const auto spec = atlas::synth::glm5Fp8();
        const auto want = expected::budget(spec);

        // The published figures of the GLM-5.2-FP8 checkpoint (domain.md section 4) ...
        QCOMPARE(report["files"]["shards"].get<int>(), 141);
        QCOMPARE(report["files"]["tensors"].get<std::uint64_t>(), std::uint64_t(118629));
        QCOMPARE(report["files"]["total_bytes"].get<std::uint64_t>(), std::uint64_t(755617140416));
        // ... and the architecture's arithmetic agree with what the headers say.
        QCOMPARE(report["parameters"]["total"].get<std::uint64_t>(), want.total);
        QCOMPARE(report["parameters"]["activated_per_token"].get<std::uint64_t>(), want.active);
        QCOMPARE(report["parameters"]["by_category"]["routed_experts"].get<std::uint64_t>(), want.routed);
        QCOMPARE(report["parameters"]["by_category"]["mtp"].get<std::uint64_t>(), want.mtp);
        QCOMPARE(report["parameters"]["by_category"]["other"].get<std::uint64_t>(), std::uint64_t(0));
        QCOMPARE(qRound64(report["parameters"]["total"].get<double>() / 1e7), qint64(75333)); // 753.33 B
        QCOMPARE(qRound64(report["parameters"]["activated_per_token"].get<double>() / 1e7),
                 qint64(4125)); // 41.25 B

        QCOMPARE(report["quantization"]["formats"]["routed_experts"].get<std::string>(),
                 std::string("FP8 e4m3 128x128"));
        QCOMPARE(report["quantization"]["formats"]["embedding"].get<std::string>(), std::string("BF16"));
        QCOMPARE(report["layers"].size(), std::size_t(79));
        QCOMPARE(report["layers"][78]["kind"].get<std::string>(), std::string("mtp"));
        QCOMPARE(report["layers"][2]["kind"].get<std::string>(), std::string("dense"));
        QCOMPARE(report["layers"][3]["kind"].get<std::string>(), std::string("moe"));
        QCOMPARE(report["indexer"]["source"].get<std::string>(), std::string("indexer_types"));
        QCOMPARE(report["indexer"]["full"].size(), std::size_t(21));
        QCOMPARE(report["indexer"]["shared"].size(), std::size_t(57));
        QCOMPARE(report["indexer"]["mismatches"].size(), std::size_t(0));

        // 78 x 1,152 + 21 x 144 = 92,880 bytes per token; x 1,048,576 tokens.
        const auto &cache = report["cache"];
        QCOMPARE(cache["kv_bytes_per_token"].get<std::uint64_t>(), std::uint64_t(78 * 1152));
        QCOMPARE(cache["index_bytes_per_token"].get<std::uint64_t>(), std::uint64_t(21 * 144));
        QCOMPARE(cache["bytes_per_token"].get<std::uint64_t>(), std::uint64_t(92880));
        QCOMPARE(cache["index_bytes_per_token_every_layer"].get<std::uint64_t>(), std::uint64_t(11232));
        QCOMPARE(cache["context_tokens"].get<std::uint64_t>(), std::uint64_t(1) << 20);
        QCOMPARE(cache["total_bytes"].get<std::uint64_t>(), std::uint64_t(92880) << 20);
    }

    void cacheOptions()
    {
        const Run r = inspect({m_full.path(), QStringLiteral("--json"), QStringLiteral("--kv-dtype"),
                               QStringLiteral("fp8_ds_mla"), QStringLiteral("--index-entry-bytes"),
                               QStringLiteral("132"), QStringLiteral("--context"), QStringLiteral("131072")});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const auto cache = nlohmann::json::parse(r.out.toStdString())["cache"];
        QCOMPARE(cache["kv_bytes_per_token"].get<std::uint64_t>(), std::uint64_t(78 * 656));
        QCOMPARE(cache["index_bytes_per_token"].get<std::uint64_t>(), std::uint64_t(21 * 132));
        QCOMPARE(cache["total_bytes"].get<std::uint64_t>(), std::uint64_t(78 * 656 + 21 * 132) * 131072);
        QCOMPARE(cache["sparse_read_tokens"].get<std::uint64_t>(), std::uint64_t(2048));
    }

    void summaryIsReadable()
    {
        const Run r = inspect({m_full.path()});
        QCOMPARE(r.exitCode, 0);
        QVERIFY(r.out.contains("SYNTHETIC"));
        QVERIFY(r.out.contains("753,329,940,480"));
        QVERIFY(r.out.contains("92,880 B/token"));
        QVERIFY(r.out.contains("90.70 GiB"));
    }

    void expectations()
    {
        const Run ok = inspect({m_full.path(), QStringLiteral("--expect"),
                                QStringLiteral("parameters.total=753329940480"), QStringLiteral("--expect"),
                                QStringLiteral("layers.78.kind=mtp")});
        QCOMPARE(ok.exitCode, 0);
        const Run bad = inspect({m_full.path(), QStringLiteral("--expect"), QStringLiteral("files.tensors=1"),
                                 QStringLiteral("--expect"), QStringLiteral("indexer.source=formula"),
                                 QStringLiteral("--expect"), QStringLiteral("no.such.path=1")});
        QCOMPARE(bad.exitCode, 5);
        const QList<QByteArray> lines = bad.err.trimmed().split('\n');
        QCOMPARE(lines.size(), 3);
        QVERIFY(lines[0].contains("118629"));
    }

    void biasesAndSimulation()
    {
        const Run r =
            inspect({m_full.path(), QStringLiteral("--json"), QStringLiteral("--simulate"),
                     QStringLiteral("--tokens"), QStringLiteral("256"), QStringLiteral("--seed"),
                     QStringLiteral("3"), QStringLiteral("--expect"), QStringLiteral("biases.tensors=76"),
                     QStringLiteral("--expect"), QStringLiteral("biases.bytes_read=77824")});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const auto report = nlohmann::json::parse(r.out.toStdString());
        const auto &biases = report["biases"]["layers"];
        QCOMPARE(biases.size(), std::size_t(76));
        QCOMPARE(biases[0]["layer"].get<int>(), 3);
        QCOMPARE(biases[75]["layer"].get<int>(), 78);
        for (const auto &b : biases) {
            QCOMPARE(b["dtype"].get<std::string>(), std::string("F32"));
            QVERIFY(b["bf16_distinct"].get<int>() < b["fp32_distinct"].get<int>());
            QCOMPARE(b["sha256"].get<std::string>().size(), std::size_t(64));
            QCOMPARE(b["levels"].size(), b["bf16_distinct"].get<std::size_t>());
            int counted = 0;
            for (const auto &l : b["levels"])
                counted += l["count"].get<int>();
            QCOMPARE(counted, 256);
            // The tie range holds the lower-index count.
            QVERIFY(b["zero_logit_replaced_min"].get<int>() <= b["zero_logit_replaced"].get<int>());
            QVERIFY(b["zero_logit_replaced"].get<int>() <= b["zero_logit_replaced_max"].get<int>());
        }
        const auto &summary = report["biases"]["summary"];
        QCOMPARE(summary["tensors"].get<int>(), 76);
        QCOMPARE(summary["first_layer"].get<int>(), 3);
        QCOMPARE(summary["last_layer"].get<int>(), 78);
        QCOMPARE(summary["values_per_tensor"].get<int>(), 256);
        QCOMPARE(summary["bf16_bytes"].get<int>(), 76 * 256 * 2);
        QCOMPARE(summary["layers_losing_levels"].get<int>(), 76);
        QVERIFY(report["routing"]["layers"][0]["changed_set_fraction"].contains("torch_bf16"));
        QVERIFY(report["routing"]["layers"][0]["mean_replaced"].contains("torch_bf16"));
        const auto &routing = report["routing"];
        QCOMPARE(routing["tokens"].get<int>(), 256);
        QCOMPARE(routing["seed"].get<int>(), 3);
        QCOMPARE(routing["layers"].size(), std::size_t(76));
        QCOMPARE(routing["router"]["topk"].get<int>(), 8);
        // Same seed, same numbers.
        const Run again = inspect({m_full.path(), QStringLiteral("--json"), QStringLiteral("--simulate"),
                                   QStringLiteral("--tokens"), QStringLiteral("256"),
                                   QStringLiteral("--seed"), QStringLiteral("3")});
        QVERIFY(nlohmann::json::parse(again.out.toStdString())["routing"] == routing);

        const Run text = inspect({m_full.path(), QStringLiteral("--biases")});
        QVERIFY(text.out.contains("Router correction biases  76 tensors, 77,824 bytes read"));
        // Engine presets: the report says which; an unknown one is a usage error naming the choices.
        const Run vllm = inspect({m_full.path(), QStringLiteral("--json"), QStringLiteral("--cache-preset"),
                                  QStringLiteral("vllm")});
        QCOMPARE(nlohmann::json::parse(vllm.out.toStdString())["cache"]["preset"].get<std::string>(),
                 std::string("vllm"));
        const Run bad = inspect({m_full.path(), QStringLiteral("--cache-preset"), QStringLiteral("sglang")});
        QCOMPARE(bad.exitCode, 2);
        QVERIFY(bad.err.contains("article, vllm, vllm-mtp, atom, reference or llama.cpp"));
        const Run noTensor =
            inspect({m_full.path(), QStringLiteral("--bias-tensor"), QStringLiteral("no.such")});
        QCOMPARE(noTensor.exitCode, 2);
    }

    void exitCodes()
    {
        QCOMPARE(inspect({QStringLiteral("--kv-dtype"), QStringLiteral("fp4")}).exitCode, 2);
        QCOMPARE(inspect({m_full.path(), QStringLiteral("--context"), QStringLiteral("-5")}).exitCode, 2);
        QCOMPARE(inspect({m_full.path(), QStringLiteral("--bogus")}).exitCode, 2);
        const Run missing = inspect({m_full.path() + QStringLiteral("/nope")});
        QCOMPARE(missing.exitCode, 3);
        QVERIFY(missing.err.contains("nope"));

        QTemporaryDir broken;
        atlas::synth::writeCheckpoint(atlas::synth::smallLayout(), broken.path().toStdString());
        std::ofstream(broken.filePath(QStringLiteral("model-00002-of-00003.safetensors")).toStdString(),
                      std::ios::binary | std::ios::in | std::ios::out)
            .write("\x10\0\0\0\0\0\0\0{\"a\":", 13);
        const Run invalid = inspect({broken.path()});
        QCOMPARE(invalid.exitCode, 4);
        QVERIFY2(invalid.err.contains("model-00002-of-00003.safetensors"), invalid.err.constData());
    }

private:
    QTemporaryDir m_full;
};

QTEST_GUILESS_MAIN(TestInspect)
#include "tst_inspect.moc"
