// Reading a checkpoint from a local folder: damaged, missing and hostile files get messages that name them.
#include "byte_source.h"
#include "checkpoint_reader.h"
#include "errors.h"
#include "synthetic_layout.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <filesystem>
#include <fstream>

using namespace atlas;

namespace {

QString firstShard(const QTemporaryDir &dir)
{
    return dir.filePath(QStringLiteral("model-00001-of-00003.safetensors"));
}

AtlasError openExpectingError(const QTemporaryDir &dir)
{
    LocalDirectorySource source(dir.path().toStdString());
    try {
        readCheckpoint(source);
    } catch (const AtlasError &e) {
        return e;
    }
    return AtlasError(ErrorKind::Usage, "no error");
}

} // namespace

class TestReader : public QObject
{
    Q_OBJECT

private slots:
    void init()
    {
        QVERIFY(m_dir.isValid());
        synth::writeCheckpoint(synth::smallLayout(), m_dir.path().toStdString());
    }
    void cleanup()
    {
        QDir(m_dir.path()).removeRecursively();
        QDir().mkpath(m_dir.path());
    }

    void readsEveryShard()
    {
        LocalDirectorySource source(m_dir.path().toStdString());
        std::vector<LoadProgress> seen;
        ReadOptions options;
        options.progress = [&](const LoadProgress &p) { seen.push_back(p); };
        const Checkpoint c = readCheckpoint(source, options);
        QCOMPARE(c.shards.size(), std::size_t(3));
        QVERIFY(c.warnings.empty());
        QVERIFY(c.synthetic());
        QVERIFY(!seen.empty());
        QCOMPARE(seen.back().filesDone, std::size_t(3));
        QCOMPARE(seen.back().filesTotal, std::size_t(3));
        // The shard files' sizes are the headers plus the data, as the reader saw them.
        std::uint64_t fileBytes = 0;
        for (const auto &s : c.shards)
            fileBytes += QFileInfo(m_dir.filePath(QString::fromStdString(s.file))).size();
        QCOMPARE(fileBytes, c.tensorBytes() + c.headerBytes());
    }

    // A local header is read into a buffer its thread keeps from shard to shard: a shorter range after a
    // longer one is exactly its own bytes, and a range past the end of the file comes back short.
    void rangesReadIntoOneBuffer()
    {
        const std::string path = m_dir.filePath(QStringLiteral("bytes.bin")).toStdString();
        std::string content;
        for (int i = 0; i < 10000; ++i)
            content += char('a' + i % 26);
        std::ofstream(path, std::ios::binary) << content;
        LocalDirectorySource source(m_dir.path().toStdString());
        std::string scratch;
        std::string seen;
        std::uint64_t size = 0;
        auto keep = [&](std::string_view bytes, std::uint64_t fileSize) {
            seen = std::string(bytes);
            size = fileSize;
        };
        QVERIFY(source.readRangeInto({"bytes.bin", 100, 8000}, scratch, keep));
        QCOMPARE(seen, content.substr(100, 8000));
        QCOMPARE(size, std::uint64_t(content.size()));
        QVERIFY(source.readRangeInto({"bytes.bin", 3, 5}, scratch, keep));
        QCOMPARE(seen, content.substr(3, 5));
        QVERIFY(scratch.size() >= 8000); // kept, not given back
        QVERIFY(source.readRangeInto({"bytes.bin", 9990, 100}, scratch, keep));
        QCOMPARE(seen, content.substr(9990));
        QVERIFY(source.readRangeInto({"bytes.bin", 20000, 100}, scratch, keep));
        QCOMPARE(seen, std::string());
        QCOMPARE(source.bytesReceived(), std::uint64_t(8000 + 5 + 10));
        try {
            source.readRangeInto({"absent.bin", 0, 8}, scratch, keep);
            QFAIL("a missing file was read");
        } catch (const AtlasError &e) {
            QCOMPARE(e.problem(), HeaderProblem::MissingFile);
            QVERIFY2(std::string(e.what()).find("absent.bin") != std::string::npos, e.what());
        }
    }

    void truncatedShard()
    {
        const QString shard = firstShard(m_dir);
        const auto size = QFileInfo(shard).size();
        std::filesystem::resize_file(shard.toStdString(), std::uintmax_t(size - 100));
        const AtlasError e = openExpectingError(m_dir);
        QCOMPARE(e.kind(), ErrorKind::Invalid);
        QCOMPARE(e.problem(), HeaderProblem::Truncated);
        QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("model-00001-of-00003.safetensors")),
                 e.what());
    }

    void truncatedInsideHeader()
    {
        std::filesystem::resize_file(firstShard(m_dir).toStdString(), 100);
        const AtlasError e = openExpectingError(m_dir);
        QCOMPARE(e.kind(), ErrorKind::Invalid);
        QCOMPARE(e.problem(), HeaderProblem::LengthPastEnd);
        QVERIFY(QString::fromUtf8(e.what()).contains(QLatin1String("model-00001-of-00003")));
    }

    void missingShard()
    {
        QVERIFY(QFile::remove(firstShard(m_dir)));
        const AtlasError e = openExpectingError(m_dir);
        QCOMPARE(e.kind(), ErrorKind::Source);
        QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("model-00001-of-00003.safetensors")),
                 e.what());
    }

    void indexNamesAbsentTensor()
    {
        const std::string path = m_dir.filePath(QStringLiteral("model.safetensors.index.json")).toStdString();
        std::ifstream in(path);
        auto index = nlohmann::json::parse(in);
        in.close();
        index["weight_map"]["model.layers.0.ghost.weight"] = "model-00002-of-00003.safetensors";
        std::ofstream(path) << index.dump();
        const AtlasError e = openExpectingError(m_dir);
        QCOMPARE(e.kind(), ErrorKind::Invalid);
        QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("ghost")), e.what());
    }

    void indexDisagreesWithHeaders()
    {
        // The sort-merge cross-check, each way a name can disagree.
        const std::string path = m_dir.filePath(QStringLiteral("model.safetensors.index.json")).toStdString();
        std::ifstream in(path);
        const auto original = nlohmann::json::parse(in);
        in.close();
        std::string tensor, shard, otherShard;
        for (const auto &[name, file] : original["weight_map"].items()) {
            if (tensor.empty()) {
                tensor = name;
                shard = file.get<std::string>();
            } else if (file.get<std::string>() != shard) {
                otherShard = file.get<std::string>();
                break;
            }
        }
        QVERIFY(!otherShard.empty());

        // Listed in one shard, found in another: refused, naming both.
        auto moved = original;
        moved["weight_map"][tensor] = otherShard;
        std::ofstream(path) << moved.dump();
        AtlasError e = openExpectingError(m_dir);
        QCOMPARE(e.kind(), ErrorKind::Invalid);
        QVERIFY2(QString::fromUtf8(e.what()).contains(QString::fromStdString("is listed in " + otherShard + " but found in " + shard)),
                 e.what());

        // Listed twice (JSON allows the key twice; the index may not): refused.
        std::string twice = original.dump();
        const std::string head = "\"weight_map\":{";
        twice.insert(twice.find(head) + head.size(), "\"" + tensor + "\":\"" + shard + "\",");
        std::ofstream(path) << twice;
        e = openExpectingError(m_dir);
        QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("twice")), e.what());

        // In a header but not in the index: read, with a warning naming it.
        auto missing = original;
        missing["weight_map"].erase(tensor);
        std::ofstream(path) << missing.dump();
        LocalDirectorySource source(m_dir.path().toStdString());
        const Checkpoint c = readCheckpoint(source);
        bool warned = false;
        for (const auto &w : c.warnings)
            warned = warned || (w.find("not in the index") != std::string::npos && w.find(tensor) != std::string::npos);
        QVERIFY(warned);
    }

    void headerNamesMatchedAgainstTheIndexInAnyOrder()
    {
        // A shard's names are taken from the index's list as the header is parsed: in step when the header
        // is in name order, by search when not; a name the list lacks is kept apart; a name given twice is
        // refused whether the list has it or not; and the names outlive the read that made them.
        const std::string file = "model-00001-of-00001.safetensors";
        const auto write = [&](const std::vector<std::string> &keys) {
            std::string json = "{";
            std::uint64_t at = 0;
            for (const auto &k : keys) {
                json += (json.size() > 1 ? "," : "") + ("\"" + k + "\":{\"dtype\":\"F32\",\"shape\":[2],") +
                        "\"data_offsets\":[" + std::to_string(at) + "," + std::to_string(at + 8) + "]}";
                at += 8;
            }
            json += "}";
            std::string bytes;
            for (int i = 0; i < 8; ++i)
                bytes.push_back(static_cast<char>((json.size() >> (8 * i)) & 0xFF));
            bytes += json + std::string(at, '\0');
            std::ofstream(m_dir.filePath(QString::fromStdString(file)).toStdString(), std::ios::binary) << bytes;
        };
        QDir(m_dir.path()).removeRecursively();
        QDir().mkpath(m_dir.path());
        std::ofstream(m_dir.filePath(QStringLiteral("model.safetensors.index.json")).toStdString())
            << "{\"weight_map\":{\"a.weight\":\"" << file << "\",\"b.weight\":\"" << file
            << "\",\"c.weight\":\"" << file << "\"}}";

        write({"c.weight", "z.extra", "a.weight", "b.weight"});
        Checkpoint copy;
        {
            LocalDirectorySource source(m_dir.path().toStdString());
            const Checkpoint c = readCheckpoint(source);
            copy.shards = c.shards;
            bool warned = false;
            for (const auto &w : c.warnings)
                warned = warned || (w.find("not in the index") != std::string::npos &&
                                    w.find("z.extra") != std::string::npos);
            QVERIFY(warned);
        }
        QCOMPARE(copy.shards.size(), std::size_t(1));
        std::vector<std::string> names;
        for (const auto &t : copy.shards[0].tensors)
            names.push_back(std::string(t.name)); // in data order
        QCOMPARE(names, (std::vector<std::string>{"c.weight", "z.extra", "a.weight", "b.weight"}));

        for (const auto &keys : {std::vector<std::string>{"a.weight", "b.weight", "c.weight", "b.weight"},
                                 std::vector<std::string>{"a.weight", "z.extra", "b.weight", "z.extra", "c.weight"}}) {
            write(keys);
            const AtlasError e = openExpectingError(m_dir);
            QCOMPARE(e.problem(), HeaderProblem::DuplicateName);
            QVERIFY2(QString::fromUtf8(e.what()).contains(QString::fromStdString(file)), e.what());
        }

        // Listed but absent from the header: refused, naming the tensor.
        write({"a.weight", "c.weight"});
        const AtlasError absent = openExpectingError(m_dir);
        QVERIFY2(QString::fromUtf8(absent.what()).contains(QLatin1String("'b.weight' is listed in")), absent.what());
    }

    void indexEscapesDirectory()
    {
        const std::string path = m_dir.filePath(QStringLiteral("model.safetensors.index.json")).toStdString();
        std::ifstream in(path);
        auto index = nlohmann::json::parse(in);
        in.close();
        index["weight_map"]["model.norm.weight"] = "../../etc/passwd";
        std::ofstream(path) << index.dump();
        const AtlasError e = openExpectingError(m_dir);
        QCOMPARE(e.problem(), HeaderProblem::UnsafeFileName);
    }

    void hostileHeaderLength()
    {
        // A header length of 2^63 must be refused before any allocation.
        std::fstream f(firstShard(m_dir).toStdString(), std::ios::in | std::ios::out | std::ios::binary);
        const unsigned char n[8] = {0, 0, 0, 0, 0, 0, 0, 0x80};
        f.write(reinterpret_cast<const char *>(n), 8);
        f.close();
        const AtlasError e = openExpectingError(m_dir);
        QCOMPARE(e.problem(), HeaderProblem::LengthTooLarge);
    }

    void brokenConfig()
    {
        std::ofstream(m_dir.filePath(QStringLiteral("config.json")).toStdString())
            << "{\"num_hidden_layers\": ";
        const AtlasError e = openExpectingError(m_dir);
        QCOMPARE(e.kind(), ErrorKind::Invalid);
        QVERIFY(QString::fromUtf8(e.what()).startsWith(QLatin1String("config.json")));
    }

    void wrongTypesInConfigAreTolerated()
    {
        std::ofstream(m_dir.filePath(QStringLiteral("config.json")).toStdString())
            << R"({"num_hidden_layers": "six", "n_routed_experts": -3, "indexer_types": [1, 2]})";
        LocalDirectorySource source(m_dir.path().toStdString());
        const Checkpoint c = readCheckpoint(source);
        QCOMPARE(c.config.warnings.size(), std::size_t(3));
        QVERIFY(!c.config.numHiddenLayers);
    }

    void singleFileCheckpoint()
    {
        QTemporaryDir single;
        synth::LayoutSpec spec = synth::smallLayout();
        spec.shards = 1;
        synth::writeCheckpoint(spec, single.path().toStdString());
        QVERIFY(QFile::exists(single.filePath(QStringLiteral("model.safetensors"))));
        QVERIFY(!QFile::exists(single.filePath(QStringLiteral("model.safetensors.index.json"))));
        LocalDirectorySource source(single.path().toStdString());
        QCOMPARE(readCheckpoint(source).shards.size(), std::size_t(1));
    }

    void emptyDirectory()
    {
        QTemporaryDir empty;
        LocalDirectorySource source(empty.path().toStdString());
        try {
            readCheckpoint(source);
            QFAIL("an empty folder was read as a checkpoint");
        } catch (const AtlasError &e) {
            QCOMPARE(e.kind(), ErrorKind::Source);
            QVERIFY2(QString::fromUtf8(e.what()).contains(QLatin1String("model.safetensors")), e.what());
        }
    }

    void cancelStopsTheRead()
    {
        std::atomic<bool> cancel{true};
        LocalDirectorySource source(m_dir.path().toStdString());
        source.setCancelFlag(&cancel);
        QVERIFY_THROWS_EXCEPTION(AtlasError, readCheckpoint(source));
    }

private:
    QTemporaryDir m_dir;
};

QTEST_APPLESS_MAIN(TestReader)
#include "tst_reader.moc"
