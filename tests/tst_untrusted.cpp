// Hostile input, round four, in process (so that it runs under ASan + UBSan): JSON nested past any
// stack, tensor names with empty segments through diff, redirects that leave https, FIFOs where files
// should be, headers padded to multiply memory, text that a terminal would obey, and the smaller rules
// the format's reference decides. Each case asserts the outcome: the exception's kind and what its
// message names, or what the checkpoint then holds.
#include "byte_source.h"
#include "cache_budget.h"
#include "checkpoint_index.h"
#include "checkpoint_reader.h"
#include "diff.h"
#include "errors.h"
#include "fixture_writer.h"
#include "header_cache.h"
#include "http_client.h"
#include "loaded_checkpoint.h"
#include "model_config.h"
#include "remote_source.h"
#include "safetensors.h"
#include "source_spec.h"
#include "support/fault_server.h"
#include "support/test_hub.h"
#include "untrusted_text.h"

#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <sys/stat.h>
#include <thread>

namespace fs = std::filesystem;
using nlohmann::json;
using namespace atlas;

namespace {

std::string nested(std::size_t depth)
{
    return "{\"model_type\":\"x\",\"deep\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
}

// The message of what `fn` throws, with its kind; fails the test when it throws nothing.
template <typename Fn> std::pair<ErrorKind, std::string> thrown(Fn fn)
{
    try {
        fn();
    } catch (const AtlasError &e) {
        return {e.kind(), e.what()};
    }
    return {ErrorKind::Usage, "(nothing thrown)"};
}

// A raw safetensors file: the length prefix, then the header text as given (padding included).
void writeRawHeader(const fs::path &path, const std::string &header, std::uint64_t dataBytes)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    for (int i = 0; i < 8; ++i)
        out.put(static_cast<char>((header.size() >> (8 * i)) & 0xFF));
    out << header;
    out.close();
    fs::resize_file(path, 8 + header.size() + dataBytes);
}

std::string entry(const std::string &name, std::uint64_t begin, std::uint64_t elements)
{
    return "\"" + name + "\":{\"dtype\":\"F32\",\"shape\":[" + std::to_string(elements) + "],\"data_offsets\":[" +
           std::to_string(begin) + "," + std::to_string(begin + 4 * elements) + "]}";
}

LoadedCheckpoint loadLocal(const fs::path &dir)
{
    LocalDirectorySource source(dir.string());
    LoadedCheckpoint l;
    l.checkpoint = readCheckpoint(source);
    l.analysis = analyze(l.checkpoint);
    l.cache = computeCacheBudget(l.checkpoint, l.analysis, {});
    return l;
}

bool containsRawControl(const std::string &s)
{
    for (unsigned char c : s)
        if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) return true;
    return false;
}

} // namespace

class TestUntrusted : public QObject
{
    Q_OBJECT
    QTemporaryDir m_dir;
    fs::path dir(const char *name) const
    {
        const fs::path p = fs::path(m_dir.path().toStdString()) / name;
        fs::create_directories(p);
        return p;
    }

private slots:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    // 200,000 levels crashed the copy of the document; now one sentence names the file and the limit.
    void deepConfigIsRefusedWithoutACrash()
    {
        const auto [kind, message] = thrown([] { parseModelConfig("config.json", nested(200000)); });
        QCOMPARE(int(kind), int(ErrorKind::Invalid));
        QVERIFY2(message.find("config.json") == 0 && message.find(std::to_string(kMaxJsonDepth)) != std::string::npos,
                 message.c_str());
        // Deep braces inside a string are text, not nesting.
        const std::string inString = "{\"model_type\":\"" + std::string(100000, '[') + "\",\"hidden_size\":8}";
        QCOMPARE(*parseModelConfig("config.json", inString).hiddenSize, 8);
        // At the limit it is read (and copied, compared, printed) whole.
        const ModelConfig atLimit = parseModelConfig("config.json", nested(kMaxJsonDepth - 1));
        QCOMPARE(atLimit.modelType, std::string("x"));
        QVERIFY(atLimit.raw.dump().size() > 2 * (kMaxJsonDepth - 1));
    }

    // The header cache keeps config.json only once it was accepted: the next open reads it again.
    void headerCacheNeverKeepsARefusedFile()
    {
        const fs::path d = dir("deep-cached");
        fixture::writeSafetensors(d / "model.safetensors", {{"model.norm.weight"}});
        std::ofstream(d / "config.json") << nested(300000);
        HeaderCache cache(dir("cache-of-deep"));
        ReadOptions options;
        options.cache = &cache;
        LocalDirectorySource first(d.string());
        QCOMPARE(int(thrown([&] { readCheckpoint(first, options); }).first), int(ErrorKind::Invalid));
        QVERIFY(!cache.smallFile("config.json").has_value());
        std::ofstream(d / "config.json") << R"({"model_type":"fixed","hidden_size":4})";
        LocalDirectorySource second(d.string());
        QCOMPARE(readCheckpoint(second, options).config.modelType, std::string("fixed"));
        const auto kept = cache.smallFile("config.json");
        QVERIFY(kept && *kept && kept->value().find("fixed") != std::string::npos);
    }

    // The Hub's revision answer is bounded the same way (it is parsed into a DOM too).
    void deepHubAnswerIsRefused()
    {
        const auto [kind, message] = thrown([] { guardJsonText("the Hub's answer", nested(100000), nullptr); });
        QCOMPARE(int(kind), int(ErrorKind::Invalid));
        QVERIFY(message.find("the Hub's answer") == 0);
    }

    // model..norm.weight, a trailing dot, "" and names of the key's own syntax read past the end of
    // diff's segment list; now every shape is grouped and counted.
    void emptySegmentsThroughDiff()
    {
        const fs::path a = dir("segments-a"), b = dir("segments-b");
        const std::vector<std::string> names{"model..norm.weight", "model.norm.", "", ".", "..", "0", "a.0.",
                                             "#.1", "1:x.2", "model.#.w", "model.3.w", "model.3..w"};
        std::vector<fixture::Tensor> ta, tb;
        for (const auto &n : names) {
            ta.push_back({n, "F32", {4}, {}});
            tb.push_back({n, "BF16", {4}, {}});
        }
        tb.push_back({"model.4..w", "F32", {2}, {}});
        fixture::writeCheckpoint(a, json::object(), ta);
        fixture::writeCheckpoint(b, json::object(), tb);
        const CheckpointDiff d = diffCheckpoints(loadLocal(a), loadLocal(b));
        std::uint64_t grouped = 0;
        for (const auto &g : d.groups)
            grouped += g.tensors;
        QCOMPARE(grouped, std::uint64_t(names.size() + 1)); // every name changed dtype, one was added
    }

    // Only regular files are opened, and without blocking: a FIFO with no writer answers at once.
    void fifoWhereAFileShouldBe()
    {
        const fs::path d = dir("fifo");
        QCOMPARE(::mkfifo((d / "config.json").c_str(), 0600), 0);
        fixture::writeSafetensors(d / "real.safetensors", {{"model.norm.weight"}});
        QCOMPARE(::mkfifo((d / "model.safetensors").c_str(), 0600), 0);
        auto read = std::async(std::launch::async, [d] {
            LocalDirectorySource source(d.string());
            return thrown([&] { source.readSmallFile("config.json"); });
        });
        // A generous bound only so that a regression fails instead of hanging: a blocked open() is
        // then released by opening the FIFO's other end.
        if (read.wait_for(std::chrono::minutes(2)) != std::future_status::ready) {
            std::ofstream(d / "config.json") << "{}";
            QFAIL("opening a FIFO blocked");
        }
        const auto [kind, message] = read.get();
        QCOMPARE(int(kind), int(ErrorKind::Source));
        QVERIFY2(message.find("config.json") != std::string::npos && message.find("FIFO") != std::string::npos,
                 message.c_str());
        // A shard that is a FIFO, and a symlink to one.
        fs::remove(d / "config.json");
        LocalDirectorySource source(d.string());
        const auto shard = thrown([&] { readCheckpoint(source); });
        QVERIFY2(shard.second.find("model.safetensors") != std::string::npos &&
                     shard.second.find("FIFO") != std::string::npos,
                 shard.second.c_str());
        fs::remove(d / "model.safetensors");
        QCOMPARE(::mkfifo((d / "pipe").c_str(), 0600), 0);
        fs::create_symlink(d / "pipe", d / "model.safetensors");
        QVERIFY(thrown([&] { readCheckpoint(source); }).second.find("FIFO") != std::string::npos);
        // A symlink to a regular file is read as the file.
        fs::remove(d / "model.safetensors");
        fs::create_symlink(d / "real.safetensors", d / "model.safetensors");
        QCOMPARE(readCheckpoint(source).tensorCount(), std::size_t(1));
        // A directory where config.json should be is named too.
        fs::create_directory(d / "config.json");
        QVERIFY(thrown([&] { readCheckpoint(source); }).second.find("directory") != std::string::npos);
    }

    // Twelve shards, the first header padded with spaces to 4 MiB: every other shard's first read was
    // sized from it (12 × 4 MiB held at once). Now what is read stays within the stated bound of the
    // headers' real size, locally and over HTTP, and the budget is charged before a byte is read.
    void paddedFirstHeaderDoesNotMultiplyMemory()
    {
        const fs::path d = dir("padded");
        constexpr int kShards = 12, kPerShard = 20;
        constexpr std::size_t kPadding = 4u << 20;
        json weightMap = json::object();
        std::uint64_t realHeaders = 0;
        for (int s = 0; s < kShards; ++s) {
            const std::string file = "model-" + std::to_string(s + 1) + "-of-12.safetensors";
            std::string header = "{";
            for (int t = 0; t < kPerShard; ++t) {
                const std::string name = "model.layers." + std::to_string(s) + ".w" + std::to_string(t);
                header += (t ? "," : "") + entry(name, 16 * std::uint64_t(t), 4);
                weightMap[name] = file;
            }
            // A large tensor last: the file goes on well past the header, so a read sized from the
            // padded header would really come back that long (a short file would cut it off).
            const std::string big = "model.layers." + std::to_string(s) + ".big";
            header += "," + entry(big, 16 * std::uint64_t(kPerShard), kPadding / 2) + "}";
            weightMap[big] = file;
            if (s == 0) header += std::string(kPadding, ' ');
            realHeaders += 8 + header.size();
            writeRawHeader(d / file, header, 16 * kPerShard + 2 * kPadding);
        }
        std::ofstream(d / "model.safetensors.index.json") << json{{"weight_map", weightMap}}.dump();
        const std::uint64_t bound = realHeaders + 512ull * kShards * (kPerShard + 1) + (128u << 10);

        LocalDirectorySource local(d.string());
        QCOMPARE(readCheckpoint(local).tensorCount(), std::size_t(kShards * (kPerShard + 1)));
        QVERIFY2(local.bytesReceived() <= bound + (16 << 10), std::to_string(local.bytesReceived()).c_str());

        FaultServer server(d.string());
        QVERIFY(server.start());
        HttpDirectorySource remote(server.url("ok"), {}, nullptr);
        QCOMPARE(readCheckpoint(remote).tensorCount(), std::size_t(kShards * (kPerShard + 1)));
        QVERIFY2(remote.bytesReceived() <= bound + (16 << 10), std::to_string(remote.bytesReceived()).c_str());

        // A budget below the real headers stops the load, having read no more than the budget.
        ReadOptions tight;
        tight.headerBudget = kPadding / 2;
        LocalDirectorySource limited(d.string());
        const auto [kind, message] = thrown([&] { readCheckpoint(limited, tight); });
        QCOMPARE(int(kind), int(ErrorKind::Invalid));
        QVERIFY2(message.find("the limit") != std::string::npos, message.c_str());
        QVERIFY(limited.bytesReceived() <= tight.headerBudget + (16 << 10)); // + config and index
    }

    // A first read that ran long is kept as read until its header is parsed (settleHeader), and its tail's
    // charge is given back then: a budget that holds the real headers, with room for what two threads have in
    // flight, holds every shard, however long each guess ran (twelve tails over it would not fit).
    void keptTailsAreGivenBack()
    {
        const fs::path d = dir("kept-tails");
        constexpr int kShards = 12, kPerShard = 10;
        json weightMap = json::object();
        std::uint64_t realHeaders = 0, longestGuess = 0;
        for (int s = 0; s < kShards; ++s) {
            const std::string file = "model-" + std::to_string(s + 1) + "-of-12.safetensors";
            std::string header = "{";
            std::uint64_t guess = 8 + 128; // estimateHeaderBytes: each name plus 100 bytes
            for (int t = 0; t < kPerShard; ++t) {
                const std::string name = "model.layers." + std::to_string(s) + ".mlp." + std::string(100, 'w') +
                                         "." + std::to_string(t) + ".weight";
                header += (t ? "," : "") + entry(name, std::uint64_t(t) << 20, 1u << 18); // 1 MiB each, sparse
                weightMap[name] = file;
                guess += name.size() + 100;
            }
            header += "}";
            QVERIFY(guess > 8 + header.size() && guess - (8 + header.size()) <= (8 + header.size()) / 2);
            realHeaders += 8 + header.size();
            longestGuess = std::max(longestGuess, guess);
            writeRawHeader(d / file, header, std::uint64_t(kPerShard) << 20); // reads run past the header
        }
        std::ofstream(d / "model.safetensors.index.json") << json{{"weight_map", weightMap}}.dump();
        ReadOptions options;
        options.parseThreads = 2;
        options.headerBudget = realHeaders + 2 * longestGuess;
        LocalDirectorySource source(d.string());
        QCOMPARE(readCheckpoint(source, options).tensorCount(), std::size_t(kShards * kPerShard));
    }

    // A budget smaller than a first read's guess (256 KiB for a lone model.safetensors) but larger
    // than the real header: the read is cut to the budget before it is made, and the load succeeds.
    void budgetIsChargedBeforeTheRead()
    {
        const fs::path d = dir("budget-first-read");
        const std::string header = "{" + entry("model.norm.weight", 0, 1u << 18) + "}"; // 1 MiB of data
        writeRawHeader(d / "model.safetensors", header, 1u << 20);
        ReadOptions options;
        options.headerBudget = 4096;
        LocalDirectorySource source(d.string());
        QCOMPARE(readCheckpoint(source, options).tensorCount(), std::size_t(1));
        QVERIFY2(source.bytesReceived() <= options.headerBudget, std::to_string(source.bytesReceived()).c_str());
    }

    // Redirects never leave https; the token never goes over http.
    void redirectFromHttpsToHttpIsRefused()
    {
        TestHub hub;
        hub.addRepo("org/down", synth::smallLayout());
        QString error;
        QVERIFY2(hub.start(&error), qPrintable(error));
        NetworkOptions network;
        network.caBundle = hub.caFile();
        // An https directory whose files all redirect to http://.
        SourceSpec direct = parseSourceSpec(hub.downgradeUrl("org/down"), {});
        auto opened = openSource(direct, network, nullptr, nullptr);
        const auto [kind, message] = thrown([&] { readCheckpoint(*opened.source); });
        QCOMPARE(int(kind), int(ErrorKind::Source));
        QVERIFY2(message.find("leaves https") != std::string::npos && message.find("http://127.0.0.1") != std::string::npos,
                 message.c_str());
        QVERIFY2(hub.plainLog().empty(), hub.plainLog().c_str()); // not one request went out in cleartext
        // A cleartext URL the user typed is read.
        SourceSpec typed = parseSourceSpec(hub.plainUrl("org/down"), {});
        auto plain = openSource(typed, network, nullptr, nullptr);
        QVERIFY(readCheckpoint(*plain.source).tensorCount() > 0);
    }

    void hubResolvingToCleartextIsRefused()
    {
        TestHub hub;
        hub.addRepo("org/downgrade", synth::smallLayout());
        hub.setCleartextStorage(true);
        QString error;
        QVERIFY2(hub.start(&error), qPrintable(error));
        qputenv("HF_ENDPOINT", QByteArray::fromStdString(hub.endpoint()));
        qputenv("HF_TOKEN", QByteArray::fromStdString(hub.token()));
        NetworkOptions network;
        network.caBundle = hub.caFile();
        network.useCache = false;
        const SourceSpec spec = parseSourceSpec("hf://org/downgrade", {});
        const auto [kind, message] = thrown([&] {
            auto opened = openSource(spec, network, nullptr, nullptr);
            readCheckpoint(*opened.source);
        });
        qunsetenv("HF_ENDPOINT");
        qunsetenv("HF_TOKEN");
        QCOMPARE(int(kind), int(ErrorKind::Source));
        QVERIFY2(message.find("leaves https") != std::string::npos, message.c_str());
        QVERIFY(hub.plainLog().empty());
        QVERIFY(message.find(hub.token()) == std::string::npos);
    }

    void tokenIsNeverSentInCleartext()
    {
        const fs::path d = dir("token-plain");
        fixture::writeSafetensors(d / "model.safetensors", {{"model.norm.weight"}});
        FaultServer server(d.string());
        QVERIFY(server.start());
        HttpClient::Options options;
        options.token = "hf_secret";
        options.tokenOrigin = originOf(server.url("ok"));
        HttpDirectorySource source(server.url("ok"), options, nullptr);
        QCOMPARE(readCheckpoint(source).tensorCount(), std::size_t(1));
        QVERIFY(server.requests() > 0);
        QCOMPARE(server.authorizedRequests(), 0);
    }

    // Control characters and bytes that are not UTF-8 print as \xNN; valid UTF-8 is left alone.
    void printableEscapesWhatATerminalObeys()
    {
        QCOMPARE(printable("a\x1b]0;t\x07z"), std::string("a\\x1b]0;t\\x07z"));
        QCOMPARE(printable(printable("a\x1b")), printable("a\x1b")); // escaping twice changes nothing
        QVERIFY(needsJsonEscape("c1 \xc2\x9b") && needsJsonEscape("bad \xff") && needsJsonEscape("del\x7f"));
        QVERIFY(!needsJsonEscape("esc \x1b is JSON's to escape, é 中 too"));
        QCOMPARE(printable(std::string("n\0ul", 4)), std::string("n\\x00ul"));
        QCOMPARE(printable("del\x7f"), std::string("del\\x7f"));
        QCOMPARE(printable("c1 \xc2\x9b" "31m"), std::string("c1 \\xc2\\x9b31m")); // U+009B, CSI
        QCOMPARE(printable("bad \xff\xfe"), std::string("bad \\xff\\xfe"));
        QCOMPARE(printable("cut \xe4\xb8"), std::string("cut \\xe4\\xb8"));
        QCOMPARE(printable("surrogate \xed\xa0\x80"), std::string("surrogate \\xed\\xa0\\x80"));
        const std::string fine = "line\n\ttab é 中 \xf0\x9f\x98\x80 ·";
        QCOMPARE(printable(fine), fine);
        QCOMPARE(printableLine("a\nb"), std::string("a\\x0ab"));
    }

    // A tensor name with ESC and BEL reaches the checkpoint as it is (the reference accepts it); the
    // error from a hostile Hub carries its message, escaped where it is printed.
    void hostileServerMessage()
    {
        const fs::path d = dir("gated");
        FaultServer server(d.string());
        QVERIFY(server.start());
        HubSource hub(server.url("gated").substr(0, server.url("gated").size() - 1), "org/name", "main", {}, nullptr);
        const auto [kind, message] = thrown([&] { hub.resolve(); });
        QCOMPARE(int(kind), int(ErrorKind::Source));
        QVERIFY2(message.find("gated") != std::string::npos, message.c_str());
        QVERIFY(containsRawControl(message));
        QVERIFY(!containsRawControl(printable(message)));
        QVERIFY(printable(message).find("\\x1b]0;owned\\x07") != std::string::npos);
    }

    // The smaller cases, each with the behaviour the format's reference (or Python) gives.
    void nanAndInfinityInConfigReadAsPythonDoes()
    {
        const ModelConfig c = parseModelConfig(
            "config.json", R"({"hidden_size":8,"routed_scaling_factor":NaN,"x":[Infinity,-Infinity],"s":"NaN"})");
        QCOMPARE(*c.hiddenSize, 8);
        QVERIFY(!c.routedScalingFactor);
        QVERIFY(c.raw["x"][0].is_null() && c.raw["x"][1].is_null());
        QCOMPARE(c.raw["s"].get<std::string>(), std::string("NaN")); // a string stays a string
        QVERIFY(std::any_of(c.warnings.begin(), c.warnings.end(),
                            [](const std::string &w) { return w.find("3 NaN or Infinity") == 0; }));
        // Other malformed JSON keeps a sentence without the library's tag.
        const auto [kind, message] = thrown([] { parseModelConfig("config.json", "{\"a\":nope}"); });
        QCOMPARE(int(kind), int(ErrorKind::Invalid));
        QVERIFY(message.find("config.json: not valid JSON") == 0 && message.find("json.exception") == std::string::npos);
    }

    void duplicateFieldsAndNegativeZero()
    {
        const auto bad = [](const std::string &header) {
            return thrown([&] { parseShardHeader("x.safetensors", header, 8 + header.size() + 16); });
        };
        for (const std::string field : {R"("dtype":"F32")", R"("shape":[4])", R"("data_offsets":[0,16])"}) {
            const std::string h = R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0,16],)" + field + "}}";
            const auto [kind, message] = bad(h);
            QCOMPARE(int(kind), int(ErrorKind::Invalid));
            QVERIFY2(message.find("twice") != std::string::npos, message.c_str());
        }
        QVERIFY(bad(R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[-0,16]}})").second.find("data_offsets") !=
                std::string::npos);
        QVERIFY(bad(R"({"t":{"dtype":"F32","shape":[-0],"data_offsets":[0,0]}})").second.find("shape") !=
                std::string::npos);
        // The same entry without the repetition is accepted (the rule is not over-eager).
        const std::string ok = R"({"t":{"dtype":"F32","shape":[4],"data_offsets":[0,16],"extra":1}})";
        QCOMPARE(parseShardHeader("x.safetensors", ok, 8 + ok.size() + 16).tensors.size(), std::size_t(1));
    }

    void twoWeightMapsUseTheLast()
    {
        const std::string text =
            R"({"weight_map":{"a":"one.safetensors"},"metadata":{"total_size":1},"weight_map":{"b":"two.safetensors"}})";
        const CheckpointIndex index = parseCheckpointIndex("model.safetensors.index.json", text);
        QCOMPARE(index.size(), std::size_t(1));
        QCOMPARE(std::string(index.listed[0]), std::string("b"));
        QCOMPARE(index.shardFiles, std::vector<std::string>{"two.safetensors"});
        QCOMPARE(index.warnings.size(), std::size_t(1));
        QVERIFY(index.warnings[0].find("2 times") != std::string::npos);
    }

    void sameUnlistedTensorInTwoShardsIsCountedOnce()
    {
        const fs::path d = dir("doubled");
        fixture::writeSafetensors(d / "a.safetensors", {{"listed.a"}, {"twice", "F32", {8}, {}}});
        fixture::writeSafetensors(d / "b.safetensors", {{"listed.b"}, {"twice", "F32", {8}, {}}});
        std::ofstream(d / "model.safetensors.index.json")
            << json{{"weight_map", {{"listed.a", "a.safetensors"}, {"listed.b", "b.safetensors"}}}}.dump();
        LocalDirectorySource source(d.string());
        const Checkpoint c = readCheckpoint(source);
        QCOMPARE(c.tensorCount(), std::size_t(3));
        QVERIFY(std::any_of(c.warnings.begin(), c.warnings.end(), [](const std::string &w) {
            return w.find("'twice' in a.safetensors and b.safetensors") != std::string::npos;
        }));
    }

    // A server that promises a long header and closes is told as that, not as a missing index.
    void serverThatClosesInsideTheHeader()
    {
        const fs::path d = dir("closes");
        std::string header = "{" + entry("model.norm.weight", 0, 4) + "}";
        header += std::string((600u << 10) - header.size(), ' ');
        writeRawHeader(d / "model.safetensors", header, 16);
        FaultServer server(d.string());
        QVERIFY(server.start());
        HttpDirectorySource source(server.url("short"), {}, nullptr);
        const auto [kind, message] = thrown([&] { readCheckpoint(source); });
        QCOMPARE(int(kind), int(ErrorKind::Source));
        QVERIFY2(message.find("model.safetensors: the server closed the connection after") == 0, message.c_str());
        QVERIFY(message.find("no model.safetensors.index.json") == std::string::npos);
        // A missing file still reads as missing.
        HttpDirectorySource empty(server.url("ok") + "nothing-here/", {}, nullptr);
        QVERIFY(thrown([&] { readCheckpoint(empty); }).second.find("no model.safetensors.index.json") !=
                std::string::npos);
    }

    void responseHeaderOfAMegabyte()
    {
        const fs::path d = dir("bighead");
        fixture::writeSafetensors(d / "model.safetensors", {{"model.norm.weight"}});
        FaultServer server(d.string());
        QVERIFY(server.start());
        HttpDirectorySource source(server.url("bighead"), {}, nullptr);
        const auto [kind, message] = thrown([&] { readCheckpoint(source); });
        QCOMPARE(int(kind), int(ErrorKind::Source));
        QVERIFY2(message.find("response header is larger than the 100 KiB") != std::string::npos, message.c_str());
        QVERIFY(message.find("Out of memory") == std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestUntrusted)
#include "tst_untrusted.moc"
