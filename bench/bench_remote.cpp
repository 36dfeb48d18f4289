// Opens the 141-shard GLM-5.x layout through the nginx test Hub, with and without added latency,
// and runs @huggingface/hub's parseSafetensorsMetadata side by side on the same hosts.
// Prints wall time, HTTP requests (as nginx logged them) and bytes for both.
#include "checkpoint_reader.h"
#include "gguf_layouts.h"
#include "load_pipeline.h"
#include "source_spec.h"
#include "support/latency_proxy.h"
#include "support/test_hub.h"

#include <QCoreApplication>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include <algorithm>
#include <optional>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

struct Traffic
{
    std::uint64_t requests = 0;
    std::uint64_t bytes = 0;
};

// Requests and body bytes nginx logged on the Hub and storage hosts so far.
Traffic logged(const TestHub &hub)
{
    Traffic t;
    for (const std::string &log : {hub.hubLog(), hub.storageLog()}) {
        std::istringstream lines(log);
        std::string line;
        while (std::getline(lines, line)) {
            ++t.requests;
            if (auto p = line.rfind("sent="); p != std::string::npos)
                t.bytes += std::stoull(line.substr(p + 5));
        }
    }
    return t;
}

struct Run
{
    double ms = 0;
    Traffic traffic;
    std::size_t tensors = 0;
};

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

bool ensurePeer(const QString &peerDir)
{
    if (std::filesystem::exists(peerDir.toStdString() + "/node_modules/@huggingface/hub") &&
        std::filesystem::exists(peerDir.toStdString() + "/node_modules/@huggingface/gguf"))
        return true;
    QProcess npm;
    npm.setWorkingDirectory(peerDir);
    npm.start(QStringLiteral("npm"),
              {QStringLiteral("install"), QStringLiteral("--no-audit"), QStringLiteral("--no-fund")});
    return npm.waitForFinished(300000) && npm.exitCode() == 0;
}

// A peer script under node, trusting the test CA: its one line of JSON, or nullopt (said on stderr).
std::optional<QJsonObject> runPeer(const QString &peerDir, const std::string &caFile, const QStringList &args)
{
    QProcess node;
    auto env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("NODE_EXTRA_CA_CERTS"), QString::fromStdString(caFile));
    node.setProcessEnvironment(env);
    node.setWorkingDirectory(peerDir);
    node.start(QStringLiteral("node"), args);
    if (!node.waitForFinished(600000) || node.exitCode() != 0) {
        std::fprintf(stderr, "peer %s failed: %s\n", qPrintable(args.value(0)), node.readAllStandardError().constData());
        return std::nullopt;
    }
    return QJsonDocument::fromJson(node.readAllStandardOutput().trimmed()).object();
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    // ATLAS_BENCH_ROUNDS=N: N runs of each (the median is shown); 3 by default.
    const int rounds = [] {
        const char *v = std::getenv("ATLAS_BENCH_ROUNDS");
        const int n = v ? std::atoi(v) : 0;
        return n > 0 ? std::min(n, 99) : 3;
    }();
    TestHub hub;
    const auto spec = atlas::synth::glm5Fp8();
    hub.addRepo("atlas/glm5", spec);
    // GLM-5.2 as a 6-file UD-Q2_K_XL GGUF set: the first file holds 5 MB of metadata (the tokenizer).
    const std::string ggufStem = "GLM-5.2-UD-Q2_K_XL";
    hub.addRepoFiles("atlas/glm5-gguf", [&](const std::string &folder) {
        atlas::synth::writeGguf(spec, atlas::synth::ggufUdQ2KXL(), folder, ggufStem);
    });
    const int hubProxyPort = freeLoopbackPort();
    const int storageProxyPort = freeLoopbackPort();
    hub.setStorageRedirectPort(storageProxyPort);
    QString error;
    if (!hub.start(&error)) {
        std::fprintf(stderr, "test hub: %s\n", qPrintable(error));
        return 1;
    }
    LatencyProxy hubProxy(hubProxyPort, hub.hubPort(), std::chrono::microseconds(0));
    LatencyProxy storageProxy(storageProxyPort, hub.storagePort(), std::chrono::microseconds(0));
    if (!hubProxy.start() || !storageProxy.start()) {
        std::fprintf(stderr, "cannot start the latency proxies\n");
        return 1;
    }
    const std::string endpoint = "https://127.0.0.1:" + std::to_string(hubProxyPort);
    qputenv("HF_ENDPOINT", QByteArray::fromStdString(endpoint));

    const std::string dir = hub.repoFolder("atlas/glm5");
    std::uint64_t headerBytes = 0;
    {
        atlas::LocalDirectorySource local(dir);
        headerBytes = atlas::readCheckpoint(local).headerBytes();
    }
    const std::uint64_t needed = headerBytes + std::filesystem::file_size(dir + "/config.json") +
                                 std::filesystem::file_size(dir + "/model.safetensors.index.json");

    const QString peerDir = QStringLiteral(ATLAS_PEER_DIR);
    // ATLAS_BENCH_NO_PEER=1: ckpt-atlas alone (for A/B runs and profiles of its own work).
    const bool peerWanted = !(std::getenv("ATLAS_BENCH_NO_PEER") && *std::getenv("ATLAS_BENCH_NO_PEER") == '1');
    const bool peer = peerWanted && ensurePeer(peerDir);
    if (peerWanted && !peer)
        std::printf("peer: @huggingface/hub could not be installed (npm); measuring ckpt-atlas alone\n");

    std::printf("141 shards; headers + index + config = %llu bytes\n",
                static_cast<unsigned long long>(needed));
    std::printf("%-22s %6s %10s %9s %12s %12s %10s\n", "tool", "rtt", "wall ms", "requests", "req/shard",
                "bytes", "bytes/need");
    for (const int rttMs : {0, 40}) {
        hubProxy.setDelay(std::chrono::microseconds(rttMs * 500));
        storageProxy.setDelay(std::chrono::microseconds(rttMs * 500));
        std::vector<double> ours, theirs;
        Traffic oursTraffic, theirsTraffic;
        for (int round = 0; round < rounds; ++round) {
            const Traffic before = logged(hub);
            const auto start = std::chrono::steady_clock::now();
            atlas::NetworkOptions options;
            options.caBundle = hub.caFile();
            options.useCache = false;
            atlas::LoadRequest request;
            request.spec = atlas::parseSourceSpec("hf://atlas/glm5");
            request.network = options;
            request.biases = false; // headers only, as the peer reads them
            atlas::LoadPipeline pipeline(request);
            const atlas::LoadResult result = pipeline.run();
            const atlas::Checkpoint &ckpt = result.layout->checkpoint;
            if (const char *dump = std::getenv("ATLAS_BENCH_RECEIPTS"))
                std::ofstream(std::string(dump) + "-" + std::to_string(rttMs) + ".json")
                    << pipeline.receipts()->toJson().dump(1);
            ours.push_back(
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
            const Traffic after = logged(hub);
            oursTraffic = {after.requests - before.requests, after.bytes - before.bytes};
            if (ckpt.tensorCount() != 118629) {
                std::fprintf(stderr, "ckpt-atlas read %zu tensors\n", ckpt.tensorCount());
                return 1;
            }
            if (!peer) continue;
            const auto peerOut = runPeer(peerDir, hub.caFile(), {QStringLiteral("peer.mjs"), QString::fromStdString(endpoint),
                                                                 QStringLiteral("atlas/glm5")});
            if (!peerOut) return 1;
            const QJsonObject &out = *peerOut;
            theirs.push_back(out.value(QStringLiteral("ms")).toDouble());
            const Traffic later = logged(hub);
            theirsTraffic = {later.requests - after.requests, later.bytes - after.bytes};
            if (out.value(QStringLiteral("tensors")).toInt() != 118629) {
                std::fprintf(stderr, "peer read %d tensors\n", out.value(QStringLiteral("tensors")).toInt());
                return 1;
            }
        }
        auto row = [&](const char *tool, double ms, const Traffic &t) {
            std::printf("%-22s %4d ms %10.0f %9llu %12.3f %12llu %10.4f\n", tool, rttMs, ms,
                        static_cast<unsigned long long>(t.requests), double(t.requests) / 141.0,
                        static_cast<unsigned long long>(t.bytes), double(t.bytes) / double(needed));
        };
        row("ckpt-atlas", median(ours), oursTraffic);
        if (peer) {
            row("@huggingface/hub", median(theirs), theirsTraffic);
            std::printf("speed-up at %d ms round trip: %.2fx (median of %d runs each)\n", rttMs,
                        median(theirs) / median(ours), rounds);
        }
    }
    // The GGUF set, opened by --gguf, against @huggingface/gguf's ggufAllShards on the same files.
    std::printf("\nGGUF: 6 files of GLM-5.2 UD-Q2_K_XL\n");
    std::printf("%-22s %6s %10s %9s %12s %12s\n", "tool", "rtt", "wall ms", "requests", "req/file", "bytes");
    for (const int rttMs : {0, 40}) {
        hubProxy.setDelay(std::chrono::microseconds(rttMs * 500));
        storageProxy.setDelay(std::chrono::microseconds(rttMs * 500));
        std::vector<double> ours, theirs;
        Traffic oursTraffic, theirsTraffic;
        std::size_t ourTensors = 0;
        for (int round = 0; round < rounds; ++round) {
            const Traffic before = logged(hub);
            const auto start = std::chrono::steady_clock::now();
            atlas::LoadRequest request;
            request.spec = atlas::parseSourceSpec("hf://atlas/glm5-gguf");
            request.spec.ggufPattern = "UD-Q2_K_XL";
            request.network.caBundle = hub.caFile();
            request.network.useCache = false;
            request.biases = false;
            const atlas::LoadResult result = atlas::LoadPipeline(request).run();
            ours.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
            const Traffic after = logged(hub);
            oursTraffic = {after.requests - before.requests, after.bytes - before.bytes};
            ourTensors = result.layout->checkpoint.tensorCount();
            if (!peer) continue;
            const auto peerOut = runPeer(peerDir, hub.caFile(),
                                         {QStringLiteral("gguf.mjs"),
                                          QString::fromStdString(endpoint + "/atlas/glm5-gguf/resolve/main/" + ggufStem +
                                                                 "-00001-of-00006.gguf")});
            if (!peerOut) return 1;
            const QJsonObject &out = *peerOut;
            theirs.push_back(out.value(QStringLiteral("ms")).toDouble());
            const Traffic later = logged(hub);
            theirsTraffic = {later.requests - after.requests, later.bytes - after.bytes};
            if (std::size_t(out.value(QStringLiteral("tensors")).toInt()) != ourTensors) {
                std::fprintf(stderr, "gguf peer read %d tensors, ckpt-atlas %zu\n", out.value(QStringLiteral("tensors")).toInt(),
                             ourTensors);
                return 1;
            }
        }
        auto row = [&](const char *tool, double ms, const Traffic &t) {
            std::printf("%-22s %4d ms %10.0f %9llu %12.3f %12llu\n", tool, rttMs, ms, static_cast<unsigned long long>(t.requests),
                        double(t.requests) / 6.0, static_cast<unsigned long long>(t.bytes));
        };
        row("gguf-ckpt-atlas", median(ours), oursTraffic);
        if (peer) {
            row("@huggingface/gguf", median(theirs), theirsTraffic);
            std::printf("gguf speed-up at %d ms round trip: %.2fx (median of %d runs each)\n", rttMs, median(theirs) / median(ours),
                        rounds);
        }
    }
    return 0;
}
