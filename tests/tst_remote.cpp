// Remote checkpoints through a real nginx test Hub (TLS, HTTP/2, redirects, Range) and a fault server.
#include "bias_reader.h"
#include "cache_budget.h"
#include "checkpoint_reader.h"
#include "gguf_layouts.h"
#include "errors.h"
#include "report.h"
#include "source_spec.h"
#include "support/fault_server.h"
#include "support/test_hub.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

using namespace atlas;

namespace {

struct Loaded
{
    Checkpoint checkpoint;
    std::shared_ptr<ReceiptLog> receipts = std::make_shared<ReceiptLog>();
};

Loaded load(const std::string &text, NetworkOptions options = {}, const std::atomic<bool> *cancel = nullptr)
{
    Loaded l;
    const SourceSpec spec = parseSourceSpec(text);
    OpenedSource opened = openSource(spec, options, cancel, l.receipts);
    ReadOptions ro;
    ro.cache = opened.cache.get();
    l.checkpoint = readCheckpoint(*opened.source, ro);
    return l;
}

AtlasError loadError(const std::string &text, NetworkOptions options = {})
{
    try {
        load(text, options);
    } catch (const AtlasError &e) {
        return e;
    }
    return AtlasError(ErrorKind::Usage, "no error");
}

nlohmann::ordered_json reportOf(const Checkpoint &c)
{
    const auto a = analyze(c);
    auto r = buildReport(c, a, computeCacheBudget(c, a, {}));
    r.erase("source");
    return r;
}

std::uint64_t fileSize(const std::string &p)
{
    return std::filesystem::file_size(p);
}

// Makes a header's JSON unparseable without changing its length: its first key loses its opening quote.
void breakHeader(const std::string &path)
{
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(9);
    f.put('~');
}

} // namespace

class TestRemote : public QObject
{
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_cache.isValid());
        m_hub.addRepo("atlas/glm5", synth::glm5Fp8());
        m_hub.addRepo("atlas/small", synth::smallLayout());
        m_hub.addRepo("gated/small", synth::smallLayout(), true);
        m_hub.addRepo("atlas/truncated", synth::smallLayout());
        m_hub.addRepo("atlas/missing-shard", synth::smallLayout());
        m_hub.addRepo("atlas/bad-header", synth::smallLayout());
        m_hub.addRepo("atlas/bad-and-missing", synth::smallLayout());
        for (const char *answer : {"http", "429", "200", "404"}) {
            m_hub.addRepo(std::string("hostile/head-") + answer, synth::smallLayout());
            m_hub.setHeadAnswer(std::string("hostile/head-") + answer, answer);
        }
        // A GGUF repository as quantisers publish them: a split set in a folder, a single file beside it.
        m_hub.addRepoFiles("atlas/glm5-gguf", [](const std::string &folder) {
            synth::writeGguf(synth::glm5Fp8(), synth::ggufUdQ2KXL(), folder + "/UD-Q2_K_XL", "GLM-5.2-UD-Q2_K_XL");
            synth::writeGguf(synth::smallLayout(), synth::ggufQ4KM(), folder, "small-Q4_K_M");
        });
        // Damage two repos after their listings were written.
        const std::string t = m_hub.repoFolder("atlas/truncated") + "/model-00002-of-00003.safetensors";
        std::filesystem::resize_file(t, fileSize(t) - 1000);
        std::filesystem::remove(m_hub.repoFolder("atlas/missing-shard") +
                                "/model-00003-of-00003.safetensors");
        // Headers parsed while their batch still comes in: one that does not parse, and one that does
        // not parse in a batch where another shard is missing.
        breakHeader(m_hub.repoFolder("atlas/bad-header") + "/model-00002-of-00003.safetensors");
        breakHeader(m_hub.repoFolder("atlas/bad-and-missing") + "/model-00002-of-00003.safetensors");
        std::filesystem::remove(m_hub.repoFolder("atlas/bad-and-missing") + "/model-00003-of-00003.safetensors");
        QString error;
        QVERIFY2(m_hub.start(&error), qPrintable(error));
        qputenv("HF_ENDPOINT", QByteArray::fromStdString(m_hub.endpoint()));
        qputenv("XDG_CACHE_HOME", m_cache.path().toLocal8Bit());
        qunsetenv("HF_TOKEN");
        qunsetenv("HUGGING_FACE_HUB_TOKEN");
        qputenv("HF_HOME", m_cache.path().toLocal8Bit() + "/no-hf-home");
        m_trusted.caBundle = m_hub.caFile();
        m_trusted.useCache = false;
    }
    void cleanupTestCase() { m_hub.stop(); }
    void init() { qunsetenv("HF_TOKEN"); }

    void fullScaleHubEqualsLocal()
    {
        const std::size_t storageLogBefore = m_hub.storageLog().size();
        const Loaded remote = load("hf://atlas/glm5", m_trusted);
        QCOMPARE(remote.checkpoint.source.kind, SourceKind::Hub);
        QCOMPARE(remote.checkpoint.source.commit.size(), std::size_t(40));
        QCOMPARE(remote.checkpoint.shards.size(), std::size_t(141));
        const Loaded local = load(m_hub.repoFolder("atlas/glm5"));
        QVERIFY(reportOf(remote.checkpoint) == reportOf(local.checkpoint));

        // Few round trips: at most 2.1 requests per shard with the API call, the redirects, config and index.
        const double perShard = double(remote.receipts->requests()) / 141.0;
        QVERIFY2(perShard <= 2.1, qPrintable(QString::number(perShard)));
        // Bytes: at most 5% above what is needed (every header, the index and the config).
        const std::string dir = m_hub.repoFolder("atlas/glm5");
        const double needed = double(local.checkpoint.headerBytes() + fileSize(dir + "/config.json") +
                                     fileSize(dir + "/model.safetensors.index.json"));
        const double ratio = double(remote.receipts->bytes()) / needed;
        QVERIFY2(ratio <= 1.05 && ratio >= 1.0, qPrintable(QString::number(ratio)));
        // Every range answer was a 206 from the storage host (redirects came from the Hub host), over HTTP/2.
        for (const auto &r : remote.receipts->all()) {
            QCOMPARE(r.httpVersion, 2);
            if (r.rangeOffset && r.status != 302) {
                QCOMPARE(r.status, 206L);
                QVERIFY(r.url.find(m_hub.endpoint()) == std::string::npos);
            }
        }
        // Each shard but the probed first was located in the index's batch (a HEAD to the Hub, its redirect
        // answered, not followed), so its header was then one range read straight from the storage: no
        // resolve before it. Receipts are logged as answers end, and a batch ends before the next begins.
        const std::string probed = remote.checkpoint.shards.front().file;
        std::map<std::string, int> located, resolvedRanges;
        bool shardRangeSeen = false, locatedLate = false;
        for (const auto &r : remote.receipts->all()) {
            const std::string file = r.url.substr(r.url.rfind('/') + 1);
            if (r.note == "located") {
                ++located[file];
                locatedLate = locatedLate || shardRangeSeen;
                QCOMPARE(r.status, 302L);
                QCOMPARE(r.bytes, std::uint64_t(0));
                QVERIFY(r.url.find(m_hub.endpoint()) == 0);
            } else if (r.rangeOffset && file != probed) {
                if (r.status == 302) ++resolvedRanges[file];
                else shardRangeSeen = true;
            }
        }
        QCOMPARE(located.size(), std::size_t(140));
        QVERIFY(!located.count(probed));
        for (const auto &[file, n] : located)
            QVERIFY2(n == 1, file.c_str());
        QVERIFY2(resolvedRanges.empty(), resolvedRanges.empty() ? "" : resolvedRanges.begin()->first.c_str());
        QVERIFY(shardRangeSeen);
        QVERIFY(!locatedLate);

        // The storage is read over at most two HTTP/2 connections (nginx's $connection): the index's and the
        // one the probe of the first shard opened for itself (HttpRequest::ownStorageConnection). No third is
        // opened for the reads beyond one connection's 100 streams (curl would open one for each: 16). When
        // both answered recently the 140 other header reads, more than one connection carries
        // (HttpClient::Options::maxInFlight), go out at once over both; whether they did depends on timing
        // (the index's request may join the probe's connection; a slow parse may outlast the 5 s a connection
        // counts as open), so it is only checked when two connections were opened.
        std::map<std::string, int> rangesByConnection;
        std::set<std::string> connections;
        std::istringstream lines(m_hub.storageLog().substr(storageLogBefore));
        for (std::string line; std::getline(lines, line);) {
            const auto at = line.find(" conn=");
            QVERIFY2(at != std::string::npos, line.c_str());
            const std::string conn = line.substr(at + 6, line.find(' ', at + 6) - at - 6);
            connections.insert(conn);
            if (line.find(" 206 ") != std::string::npos && line.find("model-00001-of-") == std::string::npos)
                ++rangesByConnection[conn];
        }
        QVERIFY2(connections.size() <= 2, std::to_string(connections.size()).c_str());
        if (connections.size() == 2 && remote.receipts->elapsedSeconds() < 4)
            QCOMPARE(rangesByConnection.size(), std::size_t(2));
        int ranges = 0;
        for (const auto &[conn, n] : rangesByConnection)
            ranges += n;
        QCOMPARE(ranges, 140);
    }

    // Locating is only a shortcut: a HEAD answered with a redirect out of https, an error, a 429 or a 200
    // is recorded once, never retried and never followed, and the shard is then read through the Hub's
    // redirect as before (nginx answers HEAD so, GET as usual; see TestHub::setHeadAnswer).
    void locateAnswersThatAreNotUsed_data()
    {
        QTest::addColumn<QString>("answer");
        QTest::addColumn<QString>("note");
        QTest::newRow("redirect to http") << QStringLiteral("http") << QStringLiteral("location refused");
        QTest::newRow("429") << QStringLiteral("429") << QStringLiteral("not located");
        QTest::newRow("200") << QStringLiteral("200") << QStringLiteral("not located");
        QTest::newRow("404") << QStringLiteral("404") << QStringLiteral("not located");
    }
    void locateAnswersThatAreNotUsed()
    {
        QFETCH(QString, answer);
        QFETCH(QString, note);
        const std::string repo = "hostile/head-" + answer.toStdString();
        const std::size_t plainBefore = m_hub.plainLog().size();
        const Loaded remote = load("hf://" + repo, m_trusted);
        QVERIFY(reportOf(remote.checkpoint) == reportOf(load(m_hub.repoFolder(repo)).checkpoint));
        QCOMPARE(m_hub.plainLog().size(), plainBefore); // nothing went out in cleartext
        const std::string probed = remote.checkpoint.shards.front().file;
        std::map<std::string, int> heads, storageRanges;
        for (const auto &r : remote.receipts->all()) {
            const std::string file = r.url.substr(r.url.rfind('/') + 1);
            QVERIFY2(r.note != "located", file.c_str());
            if (r.note.rfind(note.toStdString(), 0) == 0) ++heads[file];
            if (r.rangeOffset && r.status == 206) {
                QVERIFY2(r.url.find(m_hub.storageUrl(repo)) == 0, r.url.c_str());
                ++storageRanges[file];
            }
        }
        QCOMPARE(heads.size(), remote.checkpoint.shards.size() - 1);
        QVERIFY(!heads.count(probed));
        for (const auto &[file, n] : heads)
            QVERIFY2(n == 1, (file + ": " + std::to_string(n)).c_str());
        QCOMPARE(storageRanges.size(), remote.checkpoint.shards.size());
        // The Hub saw exactly one HEAD per located shard.
        const std::string log = m_hub.hubLog();
        const std::string head = "\"HEAD /" + repo + "/";
        std::size_t sent = 0;
        for (std::size_t at = log.find(head); at != std::string::npos; at = log.find(head, at + 1)) ++sent;
        QCOMPARE(sent, heads.size());
    }

    void biasesByteExact_data()
    {
        QTest::addColumn<QString>("repo");
        QTest::addColumn<bool>("full");
        QTest::newRow("small") << QStringLiteral("atlas/small") << false;
        QTest::newRow("GLM-5.x full scale") << QStringLiteral("atlas/glm5") << true;
    }
    void biasesByteExact()
    {
        QFETCH(QString, repo);
        QFETCH(bool, full);
        const auto spec = full ? synth::glm5Fp8() : synth::smallLayout();
        auto receipts = std::make_shared<ReceiptLog>();
        OpenedSource o =
            openSource(parseSourceSpec("hf://" + repo.toStdString()), m_trusted, nullptr, receipts);
        const Checkpoint ckpt = readCheckpoint(*o.source);
        const std::size_t before = receipts->all().size();
        const BiasFetchPlan plan = planBiasFetch(ckpt);
        const auto tensors = readBiases(*o.source, plan);

        const std::size_t layers = std::size_t(spec.layers - spec.firstDense + spec.mtpLayers);
        QCOMPARE(tensors.size(), layers);
        QCOMPARE(plan.bytes, std::uint64_t(layers * spec.experts * 4));
        if (full) QCOMPARE(plan.bytes, std::uint64_t(77824)); // 76 x 256 x 4
        for (const auto &t : tensors) {
            // The bytes the writer put there, hashed here.
            const std::vector<float> written = synth::syntheticBias(spec, t.layer);
            const std::string bytes(reinterpret_cast<const char *>(written.data()), written.size() * 4);
            QCOMPARE(t.sha256, sha256Hex(bytes));
            QVERIFY(t.raw == bytes);
        }
        // Only those bytes were read: one 206 per planned range, straight to storage, of exactly its length.
        const auto all = receipts->all();
        QCOMPARE(all.size() - before, plan.ranges.size());
        std::uint64_t read = 0;
        for (std::size_t i = before; i < all.size(); ++i) {
            QCOMPARE(all[i].status, 206L);
            read += all[i].bytes;
        }
        QCOMPARE(read, plan.bytes);
    }

    // A GGUF set read from the Hub by --gguf, a folder deep: the same checkpoint as the local files, through
    // byte ranges only, and no more than two ranges per file (the first file's 5 MB of metadata included).
    void ggufFromTheHub()
    {
        auto open = [&](const std::string &text, const std::string &pattern, bool cache = false) {
            Loaded l;
            SourceSpec spec = parseSourceSpec(text);
            spec.ggufPattern = pattern;
            NetworkOptions network = m_trusted;
            network.useCache = cache;
            OpenedSource opened = openSource(spec, network, nullptr, l.receipts);
            ReadOptions ro;
            ro.cache = opened.cache.get();
            ro.gguf = {spec.ggufFile, spec.ggufPattern};
            l.checkpoint = readCheckpoint(*opened.source, ro);
            return l;
        };
        const Loaded remote = open("hf://atlas/glm5-gguf", "UD-Q2_K_XL");
        QCOMPARE(remote.checkpoint.format, CheckpointFormat::Gguf);
        QCOMPARE(remote.checkpoint.shards.size(), std::size_t(6));
        LocalDirectorySource local(m_hub.repoFolder("atlas/glm5-gguf"));
        ReadOptions lo;
        lo.gguf.pattern = "UD-Q2_K_XL";
        QVERIFY(reportOf(remote.checkpoint) == reportOf(readCheckpoint(local, lo)));
        std::map<std::string, int> ranges;
        for (const auto &r : remote.receipts->all())
            if (r.rangeOffset && r.status == 206) ++ranges[r.url.substr(r.url.rfind('/') + 1)];
        QCOMPARE(ranges.size(), std::size_t(6));
        for (const auto &[file, n] : ranges)
            QVERIFY2(n <= 2, (file + ": " + std::to_string(n)).c_str());
        // The header cache: a second open of the commit reads no range, and finds the same checkpoint.
        open("hf://atlas/glm5-gguf", "UD-Q2_K_XL", true);
        const Loaded again = open("hf://atlas/glm5-gguf", "UD-Q2_K_XL", true);
        int againRanges = 0;
        for (const auto &r : again.receipts->all())
            againRanges += r.rangeOffset.has_value();
        QCOMPARE(againRanges, 0);
        QVERIFY(reportOf(again.checkpoint) == reportOf(remote.checkpoint));
        // Without a pattern the repository's two sets are named, and the choice asked for.
        const AtlasError both = [&] {
            try {
                open("hf://atlas/glm5-gguf", "");
            } catch (const AtlasError &e) {
                return e;
            }
            return AtlasError(ErrorKind::Usage, "no error");
        }();
        QVERIFY2(std::string(both.what()).find("holds 2 GGUF sets") != std::string::npos, both.what());
        // The https URL of one file: its folder is the source.
        const Loaded one = open(m_hub.storageUrl("atlas/glm5-gguf") + "small-Q4_K_M.gguf", "");
        QCOMPARE(one.checkpoint.shards.size(), std::size_t(1));
        QCOMPARE(one.checkpoint.format, CheckpointFormat::Gguf);
    }

    void plainHttpsDirectory()
    {
        const Loaded l = load(m_hub.storageUrl("atlas/small"), m_trusted);
        QCOMPARE(l.checkpoint.source.kind, SourceKind::Https);
        QCOMPARE(l.checkpoint.shards.size(), std::size_t(3));
        QVERIFY(reportOf(l.checkpoint) == reportOf(load(m_hub.repoFolder("atlas/small")).checkpoint));
    }

    void cacheMakesSecondOpenOneRequest()
    {
        NetworkOptions cached = m_trusted;
        cached.useCache = true;
        const Loaded first = load("hf://atlas/small", cached);
        QVERIFY(first.receipts->requests() > 3);
        const Loaded second = load("atlas/small", cached);
        QCOMPARE(second.receipts->requests(), std::uint64_t(1)); // only the revision
        QVERIFY(reportOf(first.checkpoint) == reportOf(second.checkpoint));
        // A damaged cache entry is read again rather than trusted.
        const auto dir =
            HeaderCache::defaultDirectory(m_hub.endpoint(), "atlas/small", first.checkpoint.source.commit);
        std::ofstream(dir / "model-00001-of-00003.safetensors.header",
                      std::ios::binary | std::ios::in | std::ios::out)
            .write("\x01\x02\x03\x04\x05\x06\x07\x08\x09", 9);
        const Loaded third = load("atlas/small", cached);
        QVERIFY(third.receipts->requests() > 1);
        QVERIFY(reportOf(first.checkpoint) == reportOf(third.checkpoint));
    }

    void gatedRepo()
    {
        const AtlasError without = loadError("hf://gated/small", m_trusted);
        QCOMPARE(without.kind(), ErrorKind::Source);
        QVERIFY2(QString::fromUtf8(without.what()).contains(QLatin1String("gated")), without.what());
        QVERIFY2(QString::fromUtf8(without.what()).contains(QLatin1String("HF_TOKEN")), without.what());

        qputenv("HF_TOKEN", QByteArray::fromStdString(m_hub.token()));
        const Loaded with = load("hf://gated/small", m_trusted);
        QCOMPARE(with.checkpoint.shards.size(), std::size_t(3));
        // The token went to the Hub host, never to storage (which refuses it with 400 anyway).
        QVERIFY(m_hub.hubLog().find(m_hub.token()) != std::string::npos);
        QVERIFY(m_hub.storageLog().find(m_hub.token()) == std::string::npos);
        QVERIFY(with.receipts->toJson().dump().find(m_hub.token()) == std::string::npos);
    }

    void wrongToken()
    {
        qputenv("HF_TOKEN", "hf_wrong");
        const AtlasError e = loadError("hf://gated/small", m_trusted);
        QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("does not grant access")), e.what());
        QVERIFY(QString::fromUtf8(e.what()).indexOf(QLatin1String("hf_wrong")) < 0);
    }

    void tokenFromFile()
    {
        QTemporaryDir home;
        std::ofstream(home.filePath(QStringLiteral("token")).toStdString()) << m_hub.token() << "\n";
        qputenv("HF_HOME", home.path().toLocal8Bit());
        const Loaded with = load("hf://gated/small", m_trusted);
        qputenv("HF_HOME", m_cache.path().toLocal8Bit() + "/no-hf-home");
        QCOMPARE(with.checkpoint.shards.size(), std::size_t(3));
    }

    void plainSentences_data()
    {
        QTest::addColumn<QString>("source");
        QTest::addColumn<QString>("says");
        QTest::newRow("no such repo")
            << QStringLiteral("hf://atlas/nothing") << QStringLiteral("does not exist");
        QTest::newRow("no such revision")
            << QStringLiteral("hf://atlas/small@v9") << QStringLiteral("revision 'v9' does not exist");
        QTest::newRow("file gone")
            << QStringLiteral("hf://atlas/missing-shard")
            << QStringLiteral("model-00003-of-00003.safetensors: the file is not in atlas/missing-shard");
    }
    void plainSentences()
    {
        QFETCH(QString, source);
        QFETCH(QString, says);
        const AtlasError e = loadError(source.toStdString(), m_trusted);
        QCOMPARE(e.kind(), ErrorKind::Source);
        QVERIFY2(QString::fromUtf8(e.what()).contains(says), e.what());
    }

    void truncatedShard()
    {
        const AtlasError e = loadError("hf://atlas/truncated", m_trusted);
        QCOMPARE(e.kind(), ErrorKind::Invalid);
        QCOMPARE(e.problem(), HeaderProblem::Truncated);
        QVERIFY(QString::fromUtf8(e.what()).contains(QLatin1String("model-00002-of-00003.safetensors")));
    }

    // A header that does not parse is named, whether it is parsed while its batch still comes in or
    // after (CheckpointRead::fetchShardHeaders parses each whole header on arrival).
    void malformedHeaderInTheBatch()
    {
        const AtlasError e = loadError("hf://atlas/bad-header", m_trusted);
        QCOMPARE(e.kind(), ErrorKind::Invalid);
        QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("model-00002-of-00003.safetensors")), e.what());
        // The same checkpoint read locally fails the same way.
        const AtlasError local = loadError(m_hub.repoFolder("atlas/bad-header"), {});
        QCOMPARE(QString::fromUtf8(local.what()), QString::fromUtf8(e.what()));
    }

    // A shard that cannot be read is told before a header of the same batch that did not parse: what the
    // server failed to send comes first, as when every header was parsed after the batch.
    void readFailureBeforeParseFailure()
    {
        const AtlasError e = loadError("hf://atlas/bad-and-missing", m_trusted);
        QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("model-00003-of-00003.safetensors")), e.what());
        QVERIFY2(!QString::fromUtf8(e.what()).contains(QLatin1String("model-00002")), e.what());
    }

    void serverIgnoresRange()
    {
        auto receipts = std::make_shared<ReceiptLog>();
        try {
            OpenedSource o =
                openSource(parseSourceSpec(m_hub.noRangeUrl("atlas/glm5")), m_trusted, nullptr, receipts);
            readCheckpoint(*o.source);
            QFAIL("a server that ignores Range was accepted");
        } catch (const AtlasError &e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("ignores Range")), e.what());
            QVERIFY(QString::fromUtf8(e.what()).contains(QLatin1String(".safetensors")));
        }
        // No shard (5 GB each) was downloaded: nothing beyond what was asked for arrived.
        for (const auto &r : receipts->all())
            if (r.rangeLength) QVERIFY(r.bytes <= *r.rangeLength);
        QVERIFY(receipts->bytes() < 64ull << 20);
    }

    void serverErrorsAreRetriedThenNamed()
    {
        auto receipts = std::make_shared<ReceiptLog>();
        try {
            OpenedSource o =
                openSource(parseSourceSpec(m_hub.failingUrl("atlas/small")), m_trusted, nullptr, receipts);
            readCheckpoint(*o.source);
            QFAIL("a failing server was accepted");
        } catch (const AtlasError &e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("HTTP 503")), e.what());
            QVERIFY(QString::fromUtf8(e.what()).contains(QLatin1String("config.json")));
        }
        std::vector<Receipt> config;
        for (const auto &r : receipts->all())
            if (r.url.ends_with("/config.json")) config.push_back(r);
        QCOMPARE(config.size(), std::size_t(5)); // five attempts, Retry-After: 1 honoured between them
        for (std::size_t i = 1; i < config.size(); ++i)
            QVERIFY(config[i].startSeconds - config[i - 1].startSeconds >= 0.95);
    }

    // The certificate store is built once per process for each list of CA bundles (sharedCaStore): loads
    // with the test CA ran before this one in this process, and a load without it must still be refused.
    void untrustedCertificate()
    {
        NetworkOptions untrusted;
        untrusted.useCache = false;
        const AtlasError e = loadError("hf://atlas/small", untrusted);
        QCOMPARE(e.kind(), ErrorKind::Source);
        QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("certificate")), e.what());
    }

    // A bundle is known by its path, size and time: rewritten, it is read again, and one that holds no
    // certificate fails the load naming it (not curl's "problem with the SSL CA cert").
    void caBundleRewritten()
    {
        QTemporaryDir dir;
        const std::string ca = dir.path().toStdString() + "/ca.pem";
        std::filesystem::copy_file(m_hub.caFile(), ca);
        NetworkOptions options = m_trusted;
        options.caBundle = ca;
        QCOMPARE(load("hf://atlas/small", options).checkpoint.shards.size(), std::size_t(3));
        std::ofstream(ca, std::ios::trunc) << "not a certificate\n";
        const AtlasError e = loadError("hf://atlas/small", options);
        QCOMPARE(e.kind(), ErrorKind::Source);
        QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("ca.pem: no CA certificate could be read")), e.what());
        std::filesystem::copy_file(m_hub.caFile(), ca, std::filesystem::copy_options::overwrite_existing);
        QCOMPARE(load("hf://atlas/small", options).checkpoint.shards.size(), std::size_t(3));
    }

    void faultServer()
    {
        FaultServer server(m_hub.repoFolder("atlas/small"));
        QVERIFY(server.start());
        NetworkOptions fast;
        fast.useCache = false;
        fast.stallSeconds = 2;

        // The optional hf_quant_config.json from a host that answers 403 for a missing key (S3 without
        // ListBucket): a warning, the checkpoint read as before.
        {
            const Loaded ok = load(server.url("forbidmissing"), fast);
            QVERIFY(ok.checkpoint.tensorCount() > 0);
            const auto &w = ok.checkpoint.warnings;
            QVERIFY(std::any_of(w.begin(), w.end(), [](const std::string &x) {
                return x.starts_with("hf_quant_config.json could not be read (") && x.find("403") != std::string::npos;
            }));
        }

        const AtlasError wrong = loadError(server.url("wrongrange"), fast);
        QVERIFY2(QString::fromUtf8(wrong.what()).contains(QLatin1String("Content-Range")), wrong.what());

        // A Content-Range total that moves between two answers about one file: refused, naming it.
        {
            OpenedSource opened = openSource(parseSourceSpec(server.url("growing")), fast, nullptr, {});
            opened.source->readRanges({{"config.json", 0, 8}});
            try {
                opened.source->readRanges({{"config.json", 8, 8}});
                QFAIL("a file whose size changed between answers was read");
            } catch (const AtlasError &e) {
                QCOMPARE(e.kind(), ErrorKind::Source);
                QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("config.json")), e.what());
                QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("earlier answer")), e.what());
            }
        }

        const AtlasError huge = loadError(server.url("huge"), fast);
        QVERIFY2(QString::fromUtf8(huge.what()).contains(QLatin1String("more than any checkpoint file may hold")),
                 huge.what());

        const AtlasError shortBody = loadError(server.url("short"), fast);
        QCOMPARE(shortBody.kind(), ErrorKind::Source);

        const AtlasError stalled = loadError(server.url("stall"), fast);
        QVERIFY2(QString::fromUtf8(stalled.what()).contains(QLatin1String("config.json")), stalled.what());
        QVERIFY2(QString::fromUtf8(stalled.what()).contains(QLatin1String("no data for 2 s")),
                 stalled.what());
        // Three attempts of two seconds each, with backoff between them: the load ended (it returned
        // here), it did not hang; how long it took is bench_remote's business, not this test's.

        // The deadline of the whole load holds even when no single transfer is stalled long enough.
        NetworkOptions deadline;
        deadline.useCache = false;
        deadline.timeoutSeconds = 2;
        const AtlasError late = loadError(server.url("stall"), deadline);
        QCOMPARE(late.kind(), ErrorKind::Source);
        QVERIFY2(QString::fromUtf8(late.what()).contains(QLatin1String("time limit of 2 s")), late.what());

        // Bytes often enough to dodge the stall detector, too few to count as a transfer.
        NetworkOptions slow = fast;
        slow.lowSpeedSeconds = 2;
        const AtlasError trickled = loadError(server.url("trickle"), slow);
        QVERIFY2(
            QString::fromUtf8(trickled.what()).contains(QLatin1String("slower than 1024 bytes/s for 2 s")),
            trickled.what());

        const AtlasError loop = loadError(server.url("loop"), fast);
        QVERIFY2(QString::fromUtf8(loop.what()).contains(QLatin1String("more than 5 redirects")),
                 loop.what());

        const Loaded retried = load(server.url("retry"), fast);
        QCOMPARE(retried.checkpoint.shards.size(), std::size_t(3));
        bool saw429 = false;
        for (const auto &r : retried.receipts->all())
            saw429 = saw429 || r.status == 429;
        QVERIFY(saw429);
        server.stop();
    }

    void cancelDuringLoad()
    {
        FaultServer server(m_hub.repoFolder("atlas/small"));
        QVERIFY(server.start());
        std::atomic<bool> cancel{false};
        std::atomic<bool> finished{false};
        std::string message;
        std::thread worker([&] {
            try {
                load(server.url("stall"), m_trusted, &cancel);
            } catch (const AtlasError &e) {
                message = e.what();
            }
            finished = true;
        });
        struct Joiner // a failed check below must not leave a joinable thread behind (std::terminate)
        {
            std::thread &t;
            std::atomic<bool> &cancel;
            ~Joiner()
            {
                cancel = true;
                if (t.joinable()) t.join();
            }
        } joiner{worker, cancel};
        // The server holds the request without answering: once it has one, the load is waiting on it.
        QVERIFY(QTest::qWaitFor([&] { return server.requests() > 0; }, 300000));
        QVERIFY(!finished);
        cancel = true;
        // Cancel ends the stalled transfer (the stall detector alone would take far longer); the
        // latency is measured by bench_cancel, never asserted against a clock here.
        QVERIFY(QTest::qWaitFor([&] { return finished.load(); }, 300000));
        QCOMPARE(message, std::string("cancelled"));
        server.stop();
    }

    void commandLine()
    {
        // The whole command, with a token in the environment: the report is right and the token is nowhere.
        QTemporaryDir out;
        const QString receipts = out.filePath(QStringLiteral("receipts.json"));
        QProcess p;
        auto env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("HF_TOKEN"), QString::fromStdString(m_hub.token()));
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(CKPT_ATLAS_BIN),
                {QStringLiteral("inspect"), QStringLiteral("gated/small"), QStringLiteral("--revision"),
                 QStringLiteral("main"), QStringLiteral("--json"), QStringLiteral("--ca-bundle"),
                 QString::fromStdString(m_hub.caFile()), QStringLiteral("--receipts"), receipts,
                 QStringLiteral("--no-cache"), QStringLiteral("--connections"), QStringLiteral("4")});
        QVERIFY(p.waitForFinished(300000));
        const QByteArray stdoutText = p.readAllStandardOutput();
        const QByteArray stderrText = p.readAllStandardError();
        QVERIFY2(p.exitCode() == 0, stderrText.constData());
        const auto report = nlohmann::json::parse(stdoutText.toStdString());
        QCOMPARE(report["source"]["kind"].get<std::string>(), std::string("hub"));
        QCOMPARE(report["source"]["commit"].get<std::string>().size(), std::size_t(40));
        QVERIFY(report["network"]["requests"].get<int>() > 3);
        std::ifstream in(receipts.toStdString());
        const std::string receiptsText((std::istreambuf_iterator<char>(in)), {});
        const auto list = nlohmann::json::parse(receiptsText);
        QCOMPARE(list.size(), report["network"]["requests"].get<std::size_t>());
        for (const QByteArray &text : {stdoutText, stderrText, QByteArray::fromStdString(receiptsText)})
            QVERIFY(!text.contains(QByteArray::fromStdString(m_hub.token())));
    }

private:
    TestHub m_hub;
    QTemporaryDir m_cache;
    NetworkOptions m_trusted;
};

QTEST_GUILESS_MAIN(TestRemote)
#include "tst_remote.moc"
