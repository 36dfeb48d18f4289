// The hostile-meaning corpus: valid safetensors and configs whose numbers and names are built to
// crash, exhaust or mislead. Each runs through `ckpt-atlas inspect` and `ckpt-atlas figures` under an
// address-space limit, and each asserts the exact outcome: exit code, the thing the message names,
// and what the report says.
#include "checkpoint_reader.h"
#include "errors.h"
#include "fixture_writer.h"
#include "http_client.h"
#include "support/fault_server.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

#include <csignal>
#include <filesystem>
#include <map>
#include <fstream>
#include <sys/resource.h>
#include <sys/stat.h>

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Every run of the program gets this much address space: enough for Qt offscreen and a few
// threads, far below what the hostile inputs would otherwise allocate.
constexpr rlim_t kAddressSpace = 4ull << 30;

using fixture::Tensor;
using fixture::writeSafetensors;

std::string f32(std::initializer_list<float> values)
{
    std::string out;
    for (float v : values) {
        std::uint32_t bits;
        std::memcpy(&bits, &v, 4);
        for (int i = 0; i < 4; ++i)
            out.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
    }
    return out;
}

struct Run
{
    int exitCode = -1; // -1: crashed or hung
    QByteArray out, err;
};

Run ckptAtlas(const QStringList &args, int timeoutMs = 240000, const std::map<QString, QString> &extraEnv = {})
{
    QProcess p;
    p.setChildProcessModifier([] {
        const rlimit limit{kAddressSpace, kAddressSpace};
        setrlimit(RLIMIT_AS, &limit);
    });
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
    for (const auto &[k, v] : extraEnv)
        env.insert(k, v);
    p.setProcessEnvironment(env);
    p.start(QStringLiteral(CKPT_ATLAS_BIN), args);
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        return {};
    }
    return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
            p.readAllStandardError()};
}

std::string joined(const json &list)
{
    std::string s;
    for (const auto &w : list)
        s += w.get<std::string>() + "\n";
    return s;
}

} // namespace

class TestHostile : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;

    // A single-file checkpoint: config.json (unless empty) and model.safetensors.
    QString checkpoint(const char *name, const json &config, const std::vector<Tensor> &tensors)
    {
        const fs::path dir = fs::path(m_dir.path().toStdString()) / name;
        fs::create_directories(dir);
        if (!config.is_null()) std::ofstream(dir / "config.json") << config.dump();
        writeSafetensors(dir / "model.safetensors", tensors);
        return QString::fromStdString(dir.string());
    }

    json inspectJson(const QString &dir, QStringList extra = {})
    {
        const Run r =
            ckptAtlas(QStringList{QStringLiteral("inspect"), dir, QStringLiteral("--json")} + extra);
        if (r.exitCode != 0) qWarning("exit %d: %s", r.exitCode, r.err.constData());
        return r.exitCode == 0 ? json::parse(r.out.toStdString()) : json();
    }

    void figuresOk(const QString &dir)
    {
        const QString out = m_dir.filePath(QStringLiteral("figures-") + QFileInfo(dir).fileName());
        const Run r = ckptAtlas({QStringLiteral("figures"), dir, QStringLiteral("--out"), out,
                                 QStringLiteral("--tokens"), QStringLiteral("64")});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY(QFileInfo::exists(out + QStringLiteral("/03-layers.png")));
    }

    static json moeConfig(int layers, int experts, int topk)
    {
        return {{"model_type", "hostile"},
                {"num_hidden_layers", layers},
                {"n_routed_experts", experts},
                {"num_experts_per_tok", topk}};
    }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void layerNumberBeyondTheModel()
    {
        const QString dir = checkpoint("beyond", moeConfig(2, 4, 1),
                                       {{"model.layers.0.input_layernorm.weight"},
                                        {"model.layers.1.input_layernorm.weight"},
                                        {"model.layers.2147483647.mlp.gate.weight", "F32", {4, 4}}});
        const json r = inspectJson(dir);
        QVERIFY(!r.is_null());
        QCOMPARE(r["layers"].size(), std::size_t(2));
        QCOMPARE(r["parameters"]["by_category"]["other"].get<std::uint64_t>(), std::uint64_t(16));
        QVERIFY(joined(r["warnings"]).find("model.layers.2147483647.mlp.gate.weight") != std::string::npos);
        figuresOk(dir);
    }

    void hugeLayerNumberWithoutConfig()
    {
        const QString dir = checkpoint(
            "huge-layer", json(),
            {{"model.layers.0.input_layernorm.weight"}, {"model.layers.999999999.input_layernorm.weight"}});
        const json r = inspectJson(dir);
        QVERIFY(!r.is_null());
        QCOMPARE(r["layers"].size(), std::size_t(1));
        QCOMPARE(r["parameters"]["by_category"]["other"].get<std::uint64_t>(), std::uint64_t(4));
        QVERIFY(joined(r["warnings"]).find("999999999") != std::string::npos);
        figuresOk(dir);
    }

    void biasLargerThanAnyRouter()
    {
        // F32 [2^31]: 8 GiB, sparse on disk. It must be refused before a byte of it is read.
        const QString dir = checkpoint(
            "huge-bias", moeConfig(1, 256, 8),
            {{"model.layers.0.mlp.gate.e_score_correction_bias", "F32", {std::uint64_t(1) << 31}}});
        const Run r = ckptAtlas({QStringLiteral("inspect"), dir, QStringLiteral("--biases")});
        QCOMPARE(r.exitCode, 4);
        QVERIFY2(r.err.contains("model.layers.0.mlp.gate.e_score_correction_bias"), r.err.constData());
        QVERIFY2(r.err.contains("5120"), r.err.constData()); // 256 x 4 + 4,096
        const Run f = ckptAtlas({QStringLiteral("figures"), dir, QStringLiteral("--out"),
                                 m_dir.filePath(QStringLiteral("fig-huge-bias"))});
        QCOMPARE(f.exitCode, 4);
        QVERIFY2(f.err.contains("e_score_correction_bias"), f.err.constData());
    }

    void bareExpertNumberAndStrangeNames()
    {
        const QString dir = checkpoint("names", moeConfig(2, 8, 2),
                                       {{"model.layers.0.input_layernorm.weight"},
                                        {"model.layers.1.mlp.experts.7"},
                                        {"model.layers.1.mlp.experts."},
                                        {"model.layers.1."},
                                        {"model.layers..x"},
                                        {"model.layers.-1.x"},
                                        {""},
                                        {"nosuffix"},
                                        {"\xc3\xbcnic\xc3\xb8"
                                         "de.weight"}});
        const json r = inspectJson(dir);
        QVERIFY(!r.is_null());
        QCOMPARE(r["files"]["tensors"].get<int>(), 9);
        figuresOk(dir);
    }

    void absurdConfigValues()
    {
        json cfg = moeConfig(2, 4, 1);
        cfg["max_position_embeddings"] = std::uint64_t(1) << 62;
        cfg["kv_lora_rank"] = 512;
        cfg["qk_rope_head_dim"] = 64;
        cfg["n_group"] = 0;
        cfg["topk_group"] = -3;
        cfg["index_topk_freq"] = 0;
        cfg["hidden_size"] = "wide";
        cfg["n_shared_experts"] = 1e30;
        cfg["num_nextn_predict_layers"] = std::uint64_t(18446744073709551615ull);
        const QString dir = checkpoint("absurd", cfg, {{"model.layers.0.input_layernorm.weight"}});
        const json r = inspectJson(dir);
        QVERIFY(!r.is_null());
        const std::string w = joined(r["warnings"]);
        for (const char *key : {"max_position_embeddings", "n_group", "topk_group", "index_topk_freq",
                                "hidden_size", "n_shared_experts", "num_nextn_predict_layers"})
            QVERIFY2(w.find(key) != std::string::npos, key);
        // The context falls back to the documented default when the config's is refused.
        QCOMPARE(r["cache"]["context_tokens"].get<std::uint64_t>(), std::uint64_t(131072));
        figuresOk(dir);

        // The same overflow typed by the user is a usage error naming the option.
        const Run u = ckptAtlas({QStringLiteral("inspect"), dir, QStringLiteral("--context"),
                                 QStringLiteral("18446744073709551615")});
        QCOMPARE(u.exitCode, 2);
        QVERIFY2(u.err.contains("--context"), u.err.constData());
    }

    void nanAndInfinityInTheBias()
    {
        const QString dir = checkpoint("nan-bias", moeConfig(1, 8, 2),
                                       {{"model.layers.0.mlp.gate.e_score_correction_bias",
                                         "F32",
                                         {8},
                                         f32({0.5f, NAN, 0.25f, INFINITY, -INFINITY, NAN, 0.125f, 0.0f})}});
        const QStringList args{QStringLiteral("--biases"), QStringLiteral("--simulate"),
                               QStringLiteral("--tokens"), QStringLiteral("256")};
        const json a = inspectJson(dir, args), b = inspectJson(dir, args);
        QVERIFY(!a.is_null());
        const json &bias = a["biases"]["layers"][0];
        QCOMPARE(bias["nan"].get<int>(), 2);
        QCOMPARE(bias["inf"].get<int>(), 2);
        QCOMPARE(bias["levels"].front()["bf16"].get<std::string>(),
                 std::string("-inf")); // ascending, NaN last
        QCOMPARE(bias["levels"].back()["bf16"].get<std::string>(), std::string("nan"));
        QCOMPARE(a["routing"]["layers"].size(), std::size_t(1));
        QCOMPARE(a["routing"].dump(), b["routing"].dump()); // deterministic
        figuresOk(dir);
    }

    void routerThatDoesNotFit()
    {
        const QString dir = checkpoint("router-misfit", moeConfig(1, 4, 9),
                                       {{"model.layers.0.mlp.gate.e_score_correction_bias", "F32", {4}}});
        const Run r = ckptAtlas({QStringLiteral("inspect"), dir, QStringLiteral("--simulate")});
        QCOMPARE(r.exitCode, 4);
        QVERIFY2(r.err.contains("num_experts_per_tok"), r.err.constData());
    }

    void tokensBeyondMemory()
    {
        const QString dir = checkpoint("wide-router", moeConfig(1, 4096, 8),
                                       {{"model.layers.0.mlp.gate.e_score_correction_bias", "F32", {4096}}});
        // Synthetic logits are made a block at a time, so memory no longer grows with --tokens; the
        // count itself has a ceiling.
        const Run over = ckptAtlas({QStringLiteral("inspect"), dir, QStringLiteral("--simulate"),
                                    QStringLiteral("--tokens"), QStringLiteral("16777217")});
        QCOMPARE(over.exitCode, 2);
        QVERIFY2(over.err.contains("16777216"), over.err.constData());
    }

    void logitsLargerThanMemory()
    {
        const QString dir = checkpoint("logits-ckpt", moeConfig(1, 8, 2),
                                       {{"model.layers.0.mlp.gate.e_score_correction_bias", "F32", {8}}});
        // Four layers of [2^24, 8] F32: 2 GiB declared, sparse; the limit under 4 GiB is 1 GiB.
        const fs::path logits = fs::path(m_dir.path().toStdString()) / "huge-logits.safetensors";
        std::vector<Tensor> layers;
        for (int i = 0; i < 4; ++i)
            layers.push_back({"layers." + std::to_string(i), "F32", {std::uint64_t(1) << 24, 8}});
        writeSafetensors(logits, layers);
        const Run r = ckptAtlas({QStringLiteral("inspect"), dir, QStringLiteral("--logits"),
                                 QString::fromStdString(logits.string())});
        QCOMPARE(r.exitCode, 4);
        QVERIFY2(r.err.contains("huge-logits.safetensors") && r.err.contains("limit"), r.err.constData());
    }

    void ctrlCStopsCleanly()
    {
        const QString dir = checkpoint("long-simulation", moeConfig(4, 256, 8),
                                       {{"model.layers.0.mlp.gate.e_score_correction_bias", "F32", {256}},
                                        {"model.layers.1.mlp.gate.e_score_correction_bias", "F32", {256}},
                                        {"model.layers.2.mlp.gate.e_score_correction_bias", "F32", {256}},
                                        {"model.layers.3.mlp.gate.e_score_correction_bias", "F32", {256}}});
        QProcess p;
        // Four layers of the most tokens allowed: minutes of simulation on any machine. The signal goes
        // once the command says it is simulating, so it lands inside the routing loop.
        p.start(QStringLiteral(CKPT_ATLAS_BIN), {QStringLiteral("inspect"), dir, QStringLiteral("--simulate"),
                                                 QStringLiteral("--tokens"), QStringLiteral("16777216"),
                                                 QStringLiteral("--progress")});
        QVERIFY(p.waitForStarted());
        QByteArray said;
        QVERIFY(QTest::qWaitFor(
            [&] {
                said += p.readAllStandardError();
                return said.contains("simulating routing") || p.state() != QProcess::Running;
            },
            300000));
        QCOMPARE(p.state(), QProcess::Running); // still simulating
        ::kill(static_cast<pid_t>(p.processId()), SIGINT);
        QVERIFY(p.waitForFinished(300000));
        QCOMPARE(p.exitStatus(), QProcess::NormalExit);
        QCOMPARE(p.exitCode(), 130);
        said += p.readAllStandardError();
        QVERIFY(said.contains("interrupted"));
    }

    void headerBudgetOfACheckpoint()
    {
        const QString dir = checkpoint(
            "budget", moeConfig(1, 4, 1),
            {{"model.layers.0.input_layernorm.weight"}, {"model.layers.0.post_attention_layernorm.weight"}});
        atlas::LocalDirectorySource source(dir.toStdString());
        atlas::ReadOptions options;
        options.headerBudget = 64; // smaller than this one header
        try {
            atlas::readCheckpoint(source, options);
            QFAIL("a header over the budget was read");
        } catch (const atlas::AtlasError &e) {
            QCOMPARE(e.kind(), atlas::ErrorKind::Invalid);
            QVERIFY2(std::string(e.what()).find("model.safetensors") != std::string::npos, e.what());
            QVERIFY2(std::string(e.what()).find("64 bytes") != std::string::npos, e.what());
        }
        options.headerBudget = 2ull << 30;
        QCOMPARE(atlas::readCheckpoint(source, options).tensorCount(), std::size_t(2));
    }

    // Round four, through the programs: no crash on any nesting depth or name shape in any command,
    // nothing a terminal would obey reaches stdout or stderr, and a FIFO never holds a command.
    void deepConfigThroughEveryCommand()
    {
        const QString deep = checkpoint("deep", json(), {{"model.norm.weight"}});
        std::ofstream(deep.toStdString() + "/config.json")
            << "{\"a\":" << std::string(200000, '[') << std::string(200000, ']') << "}";
        const QString fine = checkpoint("deep-b", moeConfig(1, 4, 1), {{"model.norm.weight"}});
        const QString out = m_dir.filePath(QStringLiteral("deep-figures"));
        for (const QStringList &args :
             {QStringList{QStringLiteral("inspect"), deep}, QStringList{QStringLiteral("diff"), deep, fine},
              QStringList{QStringLiteral("diff"), fine, deep},
              QStringList{QStringLiteral("figures"), deep, QStringLiteral("--out"), out},
              QStringList{QStringLiteral("figures"), fine, QStringLiteral("--compare"), deep, QStringLiteral("--out"), out}}) {
            const Run r = ckptAtlas(args);
            QVERIFY2(r.exitCode > 0, qPrintable(args.join(QLatin1Char(' ')) + QStringLiteral(": ") + QString::number(r.exitCode)));
            QVERIFY2(r.err.contains("config.json") && r.err.contains("512 levels"), r.err.constData());
        }
    }

    void emptyNameSegmentsThroughDiffAndCompare()
    {
        const std::vector<Tensor> a{{"model..norm.weight"}, {"model.norm."}, {""}, {"."}, {"model.0..w"}};
        std::vector<Tensor> b = a;
        for (auto &t : b)
            t.dtype = "BF16";
        const QString da = checkpoint("segments-a", moeConfig(1, 4, 1), a);
        const QString db = checkpoint("segments-b", moeConfig(1, 4, 1), b);
        const Run diff = ckptAtlas({QStringLiteral("diff"), da, db});
        QVERIFY2(diff.exitCode == 0, diff.err.constData());
        QVERIFY(diff.out.contains("model..norm.weight"));
        const QString out = m_dir.filePath(QStringLiteral("segments-figures"));
        const Run figures = ckptAtlas({QStringLiteral("figures"), da, QStringLiteral("--compare"), db,
                                       QStringLiteral("--out"), out, QStringLiteral("--tokens"), QStringLiteral("64")});
        QVERIFY2(figures.exitCode == 0, figures.err.constData());
    }

    void fifoNeverHoldsACommand()
    {
        const QString dir = checkpoint("fifo-config", json(), {{"model.norm.weight"}});
        QCOMPARE(::mkfifo((dir.toStdString() + "/config.json").c_str(), 0600), 0);
        const Run r = ckptAtlas({QStringLiteral("inspect"), dir});
        QCOMPARE(r.exitCode, 3); // -1 would be a hang, ended by the kill
        QVERIFY2(r.err.contains("config.json") && r.err.contains("FIFO"), r.err.constData());
    }

    void outputATerminalWouldObeyIsEscaped()
    {
        const std::string name = "\x1b]0;owned\x07\x1b[2J.weight"; // no known role: the report names it
        const QString dir = checkpoint("escapes", moeConfig(1, 4, 1), {{name}, {"model.norm.weight"}});
        for (const QStringList &extra : {QStringList{}, QStringList{QStringLiteral("--json")}}) {
            const Run r = ckptAtlas(QStringList{QStringLiteral("inspect"), dir} + extra);
            QVERIFY2(r.exitCode == 0, r.err.constData());
            QVERIFY(!r.out.contains('\x1b') && !r.out.contains('\x07') && !r.err.contains('\x1b'));
            // As text \x1b; in JSON the string's own escape, \u001b.
            const char *escaped = extra.isEmpty() ? "\\x1b]0;owned\\x07" : "\\u001b]0;owned\\u0007";
            QVERIFY2(r.out.contains(escaped), r.out.left(2000).constData());
            if (!extra.isEmpty()) QVERIFY(json::parse(r.out.toStdString()).is_object());
        }
        // A server's X-Error-Message with a terminal title sequence.
        FaultServer server(m_dir.path().toStdString());
        QVERIFY(server.start());
        const std::string endpoint = server.url("gated");
        const Run hub = ckptAtlas({QStringLiteral("inspect"), QStringLiteral("hf://org/name")}, 240000,
                                  {{QStringLiteral("HF_ENDPOINT"), QString::fromStdString(endpoint)}});
        QCOMPARE(hub.exitCode, 3);
        QVERIFY2(!hub.err.contains('\x1b') && !hub.err.contains('\x07'), hub.err.constData());
        QVERIFY2(hub.err.contains("\\x1b]0;owned\\x07"), hub.err.constData());
    }

    // A folder name that is not UTF-8: --json stays valid UTF-8 (it exited 3 with the library's text).
    void folderNameThatIsNotUtf8()
    {
        // A QString cannot carry the bytes 0xFF 0xFE: the folder is made here and named to the program
        // by the shell (printf), as a user's shell would pass it.
        const fs::path parent = fs::path(m_dir.path().toStdString()) / "not-utf8";
        const fs::path dir = parent / "ckpt-\xff\xfe";
        fs::create_directories(dir);
        std::ofstream(dir / "config.json") << moeConfig(1, 4, 1).dump();
        writeSafetensors(dir / "model.safetensors", {{"model.norm.weight"}});
        const QString script = QStringLiteral("exec \"$0\" inspect \"$1/$(printf 'ckpt-\\377\\376')\" --json");
        QProcess p;
        p.start(QStringLiteral("/bin/sh"), {QStringLiteral("-c"), script, QStringLiteral(CKPT_ATLAS_BIN),
                                            QString::fromStdString(parent.string())});
        QVERIFY(p.waitForFinished(240000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        const std::string out = p.readAllStandardOutput().toStdString();
        const json report = json::parse(out); // throws on invalid UTF-8
        QCOMPARE(report["source"]["location"].get<std::string>(), parent.string() + "/ckpt-\\xff\\xfe");
        fs::remove_all(parent); // QTemporaryDir cannot name it
    }

    void retryAfterNeverThrows()
    {
        QCOMPARE(*atlas::parseRetryAfter("3"), 3.0);
        QVERIFY(*atlas::parseRetryAfter(std::string(400, '9')) >= 1e6); // as good as never, not an exception
        QVERIFY(!atlas::parseRetryAfter("-5"));
        QVERIFY(!atlas::parseRetryAfter("soon"));
        QVERIFY(!atlas::parseRetryAfter(std::string(5000, 'x')));
        QVERIFY(*atlas::parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0); // in the past
    }
};

QTEST_GUILESS_MAIN(TestHostile)
#include "tst_hostile.moc"
