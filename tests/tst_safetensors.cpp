// Every safetensors rule of domain.md section 3, each failure checked for its kind and its words.
#include "checkpoint_index.h"
#include "errors.h"
#include "name_map.h"
#include "populate.h"
#include "safetensors.h"

#include <QTest>
#include <random>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>

#include <sys/mman.h>

using namespace atlas;
Q_DECLARE_METATYPE(atlas::HeaderProblem)

namespace {

// 8-byte little-endian length, the header, then `data` zero bytes.
std::string makeFile(const std::string &header, std::uint64_t data, std::uint64_t declared = UINT64_MAX)
{
    std::string out(8, '\0');
    const std::uint64_t n = declared == UINT64_MAX ? header.size() : declared;
    for (int i = 0; i < 8; ++i)
        out[static_cast<std::size_t>(i)] = static_cast<char>((n >> (8 * i)) & 0xFF);
    return out + header + std::string(data, '\0');
}

ShardHeader parseFile(const std::string &bytes)
{
    const std::uint64_t n = parseHeaderLength("shard.safetensors", bytes.substr(0, 8), bytes.size());
    return parseShardHeader("shard.safetensors", std::string_view(bytes).substr(8, n), bytes.size());
}

std::string entry(const std::string &name, const std::string &dtype, const std::string &shape,
                  std::uint64_t b, std::uint64_t e)
{
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
           std::to_string(b) + "," + std::to_string(e) + "]}";
}

} // namespace

class TestSafetensors : public QObject
{
    Q_OBJECT

private slots:
    // Names a header crafts so that their std::hash share the low bits (cheap for an unseeded hash) must not
    // pile into one run of slots: every look-up would walk it (a 200k-name header took 52 s).
    void nameMapSpreadsCraftedNames()
    {
        std::vector<std::string> names;
        const std::hash<std::string_view> h;
        for (std::uint64_t i = 0; names.size() < 1000; ++i) {
            std::string n = "model.layers.0.x" + std::to_string(i) + ".weight";
            if ((h(n) & 0x3FF) == 0) names.push_back(std::move(n));
        }
        NameMap<int> map;
        for (std::size_t i = 0; i < names.size(); ++i)
            map.insert(names[i], int(i));
        QCOMPARE(map.size(), names.size());
        for (std::size_t i = 0; i < names.size(); ++i)
            QCOMPARE(*map.find(names[i]), int(i));
        QVERIFY(!map.contains("model.layers.0.absent.weight"));
        QVERIFY2(map.longestRun() < 200, qPrintable(QString::number(map.longestRun())));
    }

    void validHeaders_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<int>("tensors");
        QTest::addColumn<quint64>("numelFirst");

        auto row = [](const char *name, const std::string &bytes, int tensors, quint64 numel) {
            QTest::newRow(name) << QByteArray(bytes.data(), static_cast<int>(bytes.size())) << tensors
                                << numel;
        };
        row("one F32", makeFile("{" + entry("w", "F32", "[2,3]", 0, 24) + "}", 24), 1, 6);
        row("trailing spaces", makeFile("{" + entry("w", "BF16", "[4]", 0, 8) + "}    ", 8), 1, 4);
        row("out of order offsets",
            makeFile("{" + entry("b", "F32", "[1]", 4, 8) + "," + entry("a", "F32", "[1]", 0, 4) + "}", 8), 2,
            1);
        row("scalar and empty",
            makeFile("{" + entry("s", "F64", "[]", 0, 8) + "," + entry("z", "F32", "[0,5]", 8, 8) + "}", 8),
            2, 1);
        row("metadata",
            makeFile("{\"__metadata__\":{\"format\":\"pt\"}," + entry("w", "U8", "[3]", 0, 3) + "}", 3), 1,
            3);
        row("metadata null", makeFile("{\"__metadata__\":null," + entry("w", "U8", "[3]", 0, 3) + "}", 3), 1,
            3);
        row("unknown field ignored",
            makeFile("{\"w\":{\"dtype\":\"I8\",\"extra\":{\"a\":[1,{\"b\":2}]},\"shape\":[2],\"data_"
                     "offsets\":[0,2]}}",
                     2),
            1, 2);
        row("F4 packs two per byte", makeFile("{" + entry("w", "F4", "[4]", 0, 2) + "}", 2), 1, 4);
        row("F6 packs four in three bytes", makeFile("{" + entry("w", "F6_E2M3", "[4]", 0, 3) + "}", 3), 1,
            4);
        row("F8_E8M0", makeFile("{" + entry("w", "F8_E8M0", "[16,2]", 0, 32) + "}", 32), 1, 32);
        row("no tensors", makeFile("{}", 0), 0, 0);
        row("utf8 name", makeFile("{" + entry("gewicht\xc3\xa4", "C64", "[1]", 0, 8) + "}", 8), 1, 1);
    }
    void validHeaders()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(int, tensors);
        QFETCH(quint64, numelFirst);
        const ShardHeader h = parseFile(bytes.toStdString());
        QCOMPARE(static_cast<int>(h.tensors.size()), tensors);
        if (tensors > 0) QCOMPARE(h.tensors.front().numel, numelFirst);
        for (std::size_t i = 1; i < h.tensors.size(); ++i)
            QCOMPARE(h.tensors[i].begin, h.tensors[i - 1].end); // sorted by offset
    }

    void malformedHeaders_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<HeaderProblem>("problem");
        QTest::addColumn<QString>("mentions");

        auto row = [](const char *name, const std::string &bytes, HeaderProblem p, const char *mention) {
            QTest::newRow(name) << QByteArray(bytes.data(), static_cast<int>(bytes.size())) << p
                                << QString::fromUtf8(mention);
        };
        row("empty file", std::string(), HeaderProblem::TooSmall, "too small");
        row("five bytes", std::string("\x02\0\0\0\0", 5), HeaderProblem::TooSmall, "too small");
        row("N above limit", makeFile("{}", 0, 100'000'001), HeaderProblem::LengthTooLarge, "100000001");
        row("N huge", makeFile("{}", 0, 0xFFFFFFFFFFFFFFFFull - 1), HeaderProblem::LengthTooLarge, "exceeds");
        row("N past end", makeFile("{}", 0, 4096), HeaderProblem::LengthPastEnd, "past the end");
        row("not UTF-8", makeFile("{\"w\xff\":{}}", 0), HeaderProblem::NotUtf8, "UTF-8");
        row("overlong UTF-8", makeFile("{\"\xc0\xaf\":{}}", 0), HeaderProblem::NotUtf8, "UTF-8");
        row("surrogate UTF-8", makeFile("{\"\xed\xa0\x80\":{}}", 0), HeaderProblem::NotUtf8, "UTF-8");
        row("leading space", makeFile(" {}", 0), HeaderProblem::BadStart, "'{'");
        row("array", makeFile("[]", 0), HeaderProblem::BadStart, "'{'");
        row("not JSON", makeFile("{\"w\":", 0), HeaderProblem::NotJson, "not valid JSON");
        row("trailing garbage", makeFile("{}x", 0), HeaderProblem::NotJson, "not valid JSON");
        row("gap",
            makeFile("{" + entry("a", "F32", "[1]", 0, 4) + "," + entry("b", "F32", "[1]", 8, 12) + "}", 12),
            HeaderProblem::Gap, "'b'");
        row("gap at start", makeFile("{" + entry("a", "F32", "[1]", 4, 8) + "}", 8), HeaderProblem::Gap,
            "'a'");
        row("overlap",
            makeFile("{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[2]", 4, 12) + "}", 12),
            HeaderProblem::Overlap, "overlaps");
        row("size mismatch", makeFile("{" + entry("a", "F32", "[3]", 0, 8) + "}", 8),
            HeaderProblem::SizeMismatch, "'a'");
        row("shape overflow", makeFile("{" + entry("a", "F32", "[4294967296,4294967296,16]", 0, 8) + "}", 8),
            HeaderProblem::ShapeOverflow, "overflows");
        row("bytes overflow", makeFile("{" + entry("a", "F64", "[4611686018427387904]", 0, 8) + "}", 8),
            HeaderProblem::ShapeOverflow, "overflows");
        row("trailing bytes", makeFile("{" + entry("a", "F32", "[1]", 0, 4) + "}", 8),
            HeaderProblem::TrailingBytes, "follow the last tensor");
        row("truncated data", makeFile("{" + entry("a", "F32", "[4]", 0, 16) + "}", 8),
            HeaderProblem::Truncated, "truncated");
        row("metadata number", makeFile("{\"__metadata__\":{\"a\":1}}", 0), HeaderProblem::MetadataNotStrings,
            "'a'");
        row("metadata nested", makeFile("{\"__metadata__\":{\"a\":{\"b\":\"c\"}}}", 0),
            HeaderProblem::MetadataNotStrings, "'a'");
        row("metadata list", makeFile("{\"__metadata__\":[\"a\"]}", 0), HeaderProblem::MetadataNotStrings,
            "__metadata__");
        row("unknown dtype", makeFile("{" + entry("a", "F7", "[1]", 0, 1) + "}", 1),
            HeaderProblem::UnknownDtype, "'F7'");
        row("lowercase dtype", makeFile("{" + entry("a", "f32", "[1]", 0, 4) + "}", 4),
            HeaderProblem::UnknownDtype, "'f32'");
        row("duplicate name",
            makeFile("{" + entry("a", "U8", "[1]", 0, 1) + "," + entry("a", "U8", "[1]", 1, 2) + "}", 2),
            HeaderProblem::DuplicateName, "twice");
        row("sub-byte misaligned", makeFile("{" + entry("a", "F4", "[3]", 0, 2) + "}", 2),
            HeaderProblem::SubByteMisaligned, "whole bytes");
        row("negative dimension", makeFile("{" + entry("a", "U8", "[-1]", 0, 1) + "}", 1),
            HeaderProblem::BadEntry, "negative");
        row("float dimension", makeFile("{" + entry("a", "U8", "[1.5]", 0, 1) + "}", 1),
            HeaderProblem::BadEntry, "shape");
        row("three offsets", makeFile("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}", 1),
            HeaderProblem::BadEntry, "3 values");
        row("end before begin",
            makeFile("{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[2,1]}}", 2),
            HeaderProblem::BadEntry, "end before");
        row("missing offsets", makeFile("{\"a\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1),
            HeaderProblem::BadEntry, "data_offsets");
        row("entry is a number", makeFile("{\"a\":5}", 0), HeaderProblem::BadEntry, "not an object");
        row("dtype is a number", makeFile("{\"a\":{\"dtype\":5,\"shape\":[1],\"data_offsets\":[0,1]}}", 1),
            HeaderProblem::BadEntry, "'dtype'");
    }
    void malformedHeaders()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(HeaderProblem, problem);
        QFETCH(QString, mentions);
        try {
            parseFile(bytes.toStdString());
            QFAIL("a malformed header was accepted");
        } catch (const AtlasError &e) {
            const QString message = QString::fromUtf8(e.what());
            QCOMPARE(e.kind(), ErrorKind::Invalid);
            QCOMPARE(e.problem(), problem);
            QVERIFY2(message.startsWith(QLatin1String("shard.safetensors: ")), qPrintable(message));
            QVERIFY2(message.contains(mentions), qPrintable(message));
        }
    }

    // The same header read by simdjson (the fast path) and by the project's own reader gives the same
    // tensors, metadata and listed names, or the same error (safetensors.h, parseShardHeader's fastUpTo).
    void headerReadEitherWay()
    {
        const std::string a = entry("model.layers.0.mlp.w1.weight", "F8_E4M3", "[4,2]", 0, 8);
        const std::string b = entry("model.layers.0.mlp.w1.weight_scale_inv", "F32", "[1,1]", 8, 12);
        const std::string c = entry("lm_head.weight", "BF16", "[2]", 12, 16);
        auto header = [&](const std::string &inside) { return "{" + inside + "}"; };
        std::string deep = "{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":";
        for (int i = 0; i < 2000; ++i)
            deep += "[";
        for (int i = 0; i < 2000; ++i)
            deep += "]";
        deep += "}}";
        struct Doc
        {
            std::string text;
            std::uint64_t data; // bytes after the header
        };
        const std::vector<Doc> documents = {
            {header(a + "," + b + "," + c), 16},
            {header(c + "," + a + "," + b) + "   ", 16},                                     // out of order, padded
            {header("\"__metadata__\":{\"format\":\"pt\",\"note\":\"a b\"}," + a + "," + b + "," + c), 16},
            {header("\"__metadata__\":null," + a + "," + b + "," + c), 16},
            {header(a + "," + b + "," + c + ",\"__metadata__\":{\"format\":\"pt\"}"), 16}, // metadata last
            {"{\"w\":{\"dtype\":\"U8\",\"extra\":{\"a\":[1,2.5,true,false,null,{\"b\":\"s\"}]},\"shape\":[2],"
            "\"data_offsets\":[0,2]}}", 2},                                                  // unknown field
            {"{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"big\":18446744073709551615}}", 1},
            {"{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"huge\":18446744073709551616}}", 1},
            {"{\"w\":{\"dtype\":\"U8\",\"shape\":[9223372036854775808],\"data_offsets\":[0,1]}}", 1},
            {"{\"w\":{\"dtype\":\"U8\",\"shape\":[-0],\"data_offsets\":[0,0]}}", 0},           // refused as serde does
            {"{\"w\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0,0]}}", 0},
            {"{\"w\":{\"dtype\":\"U8\",\"shape\":[1e0],\"data_offsets\":[0,1]}}", 1},
            {"{\"w\":{\"dtype\":\"U8\",\"shape\":[1.0],\"data_offsets\":[0,1]}}", 1},
            {"{\"w\":{\"dtype\":\"U8\",\"shape\":[true],\"data_offsets\":[0,1]}}", 1},
            {"{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"dtype\":\"U8\"}}", 1}, // field twice
            {"{\"w\":{\"dtype\":null,\"shape\":[1],\"data_offsets\":[0,1]}}", 1},
            {"{\"w\":[1]}", 0},
            {"{\"__metadata__\":{\"a\":1}}", 0},
            {"{\"__metadata__\":{\"a\":\"x\",\"a\":\"y\"}}", 0},                                 // the last counts
            {header(a + "," + a), 16},                                                          // a name twice
            {header(a + ",\"w\":}"), 16},                                                       // bad JSON after an entry
            {header(entry("w", "F7", "[1]", 0, 1) + ",\"x\":}"), 1},                           // bad dtype, then bad JSON
            {header(a) + "x", 16},
            {header(a + ",\"w\\u0041\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[8,8]}"), 8}, // an escape
            {header(a + ",\"gewicht\xc3\xa4\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[8,8]}"), 8},
            {header(a + ",\"w\x01\":{}"), 16},                                                  // a control character
            {"{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}", 1},             // not closed
            {deep, 1},                                                                         // beyond simdjson's depth
            {"{}", 0},
            {"{\"a\":\"\\ud800\"}", 0},
        };
        const std::vector<std::string_view> sorted = {"lm_head.weight", "model.layers.0.mlp.w1.weight",
                                                      "model.layers.0.mlp.w1.weight_scale_inv", "w"};
        auto read = [&](const Doc &doc, std::size_t fastUpTo, bool withList) -> std::string {
            ListedNames listed;
            listed.sorted = sorted;
            try {
                const ShardHeader h = parseShardHeader("s.safetensors", doc.text, 8 + doc.text.size() + doc.data,
                                                       withList ? &listed : nullptr, fastUpTo);
                std::string out;
                for (const auto &t : h.tensors) {
                    out += std::string(t.name) + ":" + std::string(dtypeName(t.dtype)) + "[";
                    for (auto d : t.shape)
                        out += std::to_string(d) + ",";
                    out += "]" + std::to_string(t.begin) + "-" + std::to_string(t.end) + ";";
                }
                for (const auto &[k, v] : h.metadata)
                    out += k + "=" + v + ";";
                if (withList) {
                    for (char f : listed.found)
                        out += f ? '1' : '0';
                    for (auto u : listed.unlisted)
                        out += "|" + std::string(u);
                }
                return out;
            } catch (const AtlasError &e) {
                return "error " + std::to_string(static_cast<int>(e.problem())) + ": " + e.what();
            }
        };
        int accepted = 0;
        for (const auto &doc : documents)
            for (bool withList : {false, true}) {
                const std::string fast = read(doc, kFastHeaderBytes, withList), own = read(doc, 0, withList);
                QVERIFY2(fast == own, (doc.text.substr(0, 120) + "\n  fast: " + fast.substr(0, 300) +
                                       "\n  own:  " + own.substr(0, 300)).c_str());
                accepted += !own.starts_with("error");
            }
        QVERIFY(accepted >= 16); // both kinds of answer are compared
        QVERIFY(read(documents[0], kFastHeaderBytes, true).ends_with("1110")); // listed names ticked off
    }

    void unsafeShardNames_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<bool>("safe");
        QTest::newRow("plain") << QStringLiteral("model-00001-of-00141.safetensors") << true;
        QTest::newRow("single") << QStringLiteral("model.safetensors") << true;
        QTest::newRow("parent") << QStringLiteral("../model.safetensors") << false;
        QTest::newRow("dotdot") << QStringLiteral("..") << false;
        QTest::newRow("dot") << QStringLiteral(".") << false;
        QTest::newRow("absolute") << QStringLiteral("/etc/passwd") << false;
        QTest::newRow("subdir") << QStringLiteral("sub/model.safetensors") << false;
        QTest::newRow("backslash") << QStringLiteral("..\\model.safetensors") << false;
        QTest::newRow("percent dot") << QStringLiteral("%2e%2e%2fmodel.safetensors") << false;
        QTest::newRow("percent slash") << QStringLiteral("a%2Fb.safetensors") << false;
        QTest::newRow("newline") << QStringLiteral("a\nb.safetensors") << false;
        QTest::newRow("drive") << QStringLiteral("C:model.safetensors") << false;
        QTest::newRow("query") << QStringLiteral("model.safetensors?x=1") << false;
        QTest::newRow("empty") << QString() << false;
    }
    void unsafeShardNames()
    {
        QFETCH(QString, name);
        QFETCH(bool, safe);
        QCOMPARE(isSafeShardName(name.toStdString()), safe);
        const std::string index =
            "{\"weight_map\":{\"w\":" + nlohmann::json(name.toStdString()).dump() + "}}";
        if (safe) {
            QCOMPARE(parseCheckpointIndex("model.safetensors.index.json", index).shardFiles.size(),
                     std::size_t(1));
            return;
        }
        try {
            parseCheckpointIndex("model.safetensors.index.json", index);
            QFAIL("an unsafe shard name was accepted");
        } catch (const AtlasError &e) {
            QCOMPARE(e.problem(), HeaderProblem::UnsafeFileName);
            QVERIFY(QString::fromUtf8(e.what()).contains(QLatin1String("'w'")));
        }
    }

    void indexShape()
    {
        const auto idx = parseCheckpointIndex(
            "i.json",
            R"({"metadata":{"total_size":40},"weight_map":{"a":"m-10.st","b":"m-9.st","c":"m-10.st"}})");
        QCOMPARE(idx.shardFiles.size(), std::size_t(2));
        QCOMPARE(idx.shardFiles[0], std::string("m-9.st")); // natural order
        QCOMPARE(idx.totalSize.value_or(0), std::uint64_t(40));
        QVERIFY_THROWS_EXCEPTION(AtlasError, parseCheckpointIndex("i.json", R"({"weight_map":{}})"));
        QVERIFY_THROWS_EXCEPTION(AtlasError, parseCheckpointIndex("i.json", R"({"weight_map":{"a":3}})"));
        QVERIFY_THROWS_EXCEPTION(AtlasError, parseCheckpointIndex("i.json", R"([1,2])"));
    }

    // A weight_map in name order (as the writers save it) and the same map shuffled give one index: each
    // shard's names in order, every name found, a repeated name refused either way.
    void indexInAnyOrder()
    {
        const char *sorted = R"({"weight_map":{"a.x":"m-2.st","b.x":"m-1.st","c.x":"m-2.st","d.x":"m-1.st","e.x":"m-2.st"}})";
        const char *shuffled = R"({"weight_map":{"e.x":"m-2.st","b.x":"m-1.st","a.x":"m-2.st","d.x":"m-1.st","c.x":"m-2.st"}})";
        const auto x = parseCheckpointIndex("i.json", sorted), y = parseCheckpointIndex("i.json", shuffled);
        for (const auto *idx : {&x, &y}) {
            QCOMPARE(idx->shardStart, (std::vector<std::size_t>{0, 2, 5}));
            std::vector<std::string> order;
            for (const auto name : idx->listed) order.emplace_back(name);
            QCOMPARE(order, (std::vector<std::string>{"b.x", "d.x", "a.x", "c.x", "e.x"}));
            for (const char *n : {"a.x", "b.x", "c.x", "d.x", "e.x"})
                QCOMPARE(idx->shardOf(n).value_or(9), std::string_view(n) == "b.x" || std::string_view(n) == "d.x" ? 0u : 1u);
            QVERIFY(!idx->shardOf("f.x"));
        }
        QVERIFY_THROWS_EXCEPTION(AtlasError, parseCheckpointIndex("i.json", R"({"weight_map":{"a":"m.st","a":"n.st"}})"));
    }

    // A field of the wrong kind names its tensor and its field, whichever reader reads the header: simdjson (whose
    // keys the handler holds as views while the entry lasts) or the strict reader (an escape sends a header there;
    // its keys are copied, since its buffer is reused).
    void wrongFieldNamesTensorAndField()
    {
        const std::string later = ",\"z.weight\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}";
        for (const std::string name : {std::string("model.layers.0.w"), std::string("model.layers.0.\\u0077")}) {
            const std::string json = "{\"" + name + "\":{\"dtype\":\"U8\",\"shape\":\"2\",\"data_offsets\":[0,2]}" + later;
            try {
                parseShardHeader("s.safetensors", json, 8 + json.size() + 3);
                QFAIL("a string shape was accepted");
            } catch (const AtlasError &e) {
                QCOMPARE(std::string(e.what()), std::string("s.safetensors: tensor 'model.layers.0.w': field 'shape' is a string"));
            }
        }
    }

    // Index names as written: escaped names, one-letter names with one-letter files, a weight_map given
    // twice (the last one counts) and the names of 4,096 entries.
    void indexNamesAsWritten()
    {
        // q\"x, b\\s, \u00e9t\u00e9, a surrogate pair and t\n, spelt with nlohmann's escapes.
        const std::string escaped =
            "{\"metadata\":{\"total_size\":1},\"weight_map\":{" + nlohmann::json("q\"x").dump() + ":\"m.st\"," +
            nlohmann::json("b\\s").dump() + ":\"m.st\",\"\\u00e9t\\u00e9\":\"m.st\",\"\\ud83d\\ude00.w\":\"n.st\"," +
            nlohmann::json("t\n").dump() + ":\"n.st\"," +
            // An escape after a long plain run, and a file spelt with an escape: the same file as "m.st".
            "\"model.layers.0.mlp.\\u0077eight\":\"m\\u002est\"}}";
        const auto idx = parseCheckpointIndex("i.json", escaped);
        std::vector<std::string> names;
        for (const std::uint32_t i : idx.byName)
            names.emplace_back(idx.listed[i]);
        QCOMPARE(names, (std::vector<std::string>{"b\\s", "model.layers.0.mlp.weight", "q\"x", "t\n",
                                                  "\xc3\xa9t\xc3\xa9", "\xf0\x9f\x98\x80.w"}));
        QCOMPARE(idx.shardFiles, (std::vector<std::string>{"m.st", "n.st"}));
        QCOMPARE(idx.shardOf("model.layers.0.mlp.weight").value_or(9), idx.shardOf("q\"x").value_or(8));

        std::string tight = "{\"weight_map\":{}, \"weight_map\":{";
        std::vector<std::string> expected;
        for (int i = 0; i < 4096; ++i) {
            const std::string name = i < 26 ? std::string(1, char('a' + i)) : "n" + std::to_string(i);
            tight += (i ? "," : "") + ("\"" + name + "\":\"" + std::string(1, char('a' + i % 3)) + "\"");
            expected.push_back(name);
        }
        tight += "}}";
        const auto t = parseCheckpointIndex("i.json", tight);
        QCOMPARE(t.warnings.size(), std::size_t(1)); // the repeated weight_map, said
        QCOMPARE(t.size(), expected.size());
        std::sort(expected.begin(), expected.end());
        for (std::size_t i = 0; i < expected.size(); ++i)
            QCOMPARE(std::string(t.listed[t.byName[i]]), expected[i]);
        QCOMPARE(t.shardOf("b").value_or(9), 1u);
    }

    // A large index is read in two halves on two threads (parseCheckpointIndex's splitFrom): whatever falls
    // at the middle, the answer is the one reading's, or its error.
    void indexReadInHalves()
    {
        auto entries = [](int n, const std::string &prefix) {
            std::string t;
            for (int i = 0; i < n; ++i)
                t += (i ? ",\n  \"" : "\"") + prefix + std::to_string(i) + ".weight\": \"model-" +
                     std::to_string(1 + i % 7) + ".safetensors\"";
            return t;
        };
        const std::string map = "\"weight_map\": {" + entries(3000, "model.layers.") + "}";
        const std::string meta = "\"metadata\": {\"total_size\": 12345}";
        // A string with an escaped quote and comma (`\",\"`) and a long metadata string at the middle.
        std::string tricky = "\"weight_map\": {";
        for (int i = 0; i < 2000; ++i)
            tricky += std::string(i ? "," : "") + "\"a\\\",\\\"b" + std::to_string(i) + "\":\"m.st\"";
        tricky += "}";
        // Names in increasing order within each half (the writers' order, which skips the sort), two halves of
        // the same length so that the split falls where they meet: the later half starts lower (then sorted), or
        // with the name the first half ends with (a name given twice, seen only across the halves).
        auto run = [](const std::string &first, int from, int n) {
            std::string t;
            for (int i = from; i < from + n; ++i) {
                char name[16];
                std::snprintf(name, sizeof name, "%s%04d", first.c_str(), i);
                t += std::string(i > from ? ", " : "") + "\"" + name + "\": \"model-1.safetensors\"";
            }
            return t;
        };
        const std::string lowerLater = "{\"weight_map\": {" + run("b", 0, 3000) + ", " + run("a", 0, 3000) + "}}";
        const std::string twiceAcross =
            "{\"weight_map\": {" + run("b", 0, 3000) + ", " + run("b", 2999, 1) + ", " + run("c", 1, 2999) + "}}";
        const std::vector<std::string> documents = {
            "{" + meta + ", " + map + "}",
            "{" + map + ", " + meta + "}",                            // metadata after the map
            "{" + tricky + "}",                                       // the guess falls inside names
            "{\"metadata\": {" + entries(6000, "note") + "}, " + map + "}", // the middle inside metadata
            "{" + map + ", \"weight_map\": {\"x.weight\": \"model-2.safetensors\"}}", // given twice: the last counts
            "{" + map.substr(0, map.size() - 1) + ", \"late\": 7}}",  // a bad entry in the second half
            "{" + map.substr(0, 40) + "7, " + map.substr(40) + "}",   // a bad entry at the start
            "{" + map.substr(0, map.size() - 1) + ", \"x\": \"../up.safetensors\"}}",
            "{" + map + ", \"" + "model.layers.5.weight\": 1}",
            "{" + map.substr(0, map.size() - 1) + ", \"model.layers.5.weight\": \"model-1.safetensors\"}}", // twice
            "{" + map + "} trailing",
            lowerLater,
            twiceAcross,
            "{\"weight_map\": {" + run("b", 0, 6000) + "}}", // increasing throughout
        };
        auto read = [](const std::string &doc, std::size_t splitFrom) -> std::string {
            try {
                const CheckpointIndex x = parseCheckpointIndex("i.json", doc, nullptr, splitFrom);
                std::string out = std::to_string(x.totalSize.value_or(0)) + "|";
                for (const auto &f : x.shardFiles)
                    out += f + ",";
                for (std::size_t f = 0; f < x.shardFiles.size(); ++f)
                    for (const auto name : x.shardNames(f))
                        out += std::string(name) + ":" + std::to_string(f) + ";";
                for (const auto i : x.byName)
                    out += std::to_string(i) + ",";
                for (const auto &w : x.warnings)
                    out += w;
                return out;
            } catch (const AtlasError &e) {
                return std::string("error: ") + e.what();
            }
        };
        for (const auto &doc : documents) {
            const std::string one = read(doc, SIZE_MAX), two = read(doc, 0);
            QVERIFY2(one == two, (one.substr(0, 200) + "\n  vs\n" + two.substr(0, 200)).c_str());
        }
        QVERIFY(read(documents[0], 0).starts_with("12345|model-1.safetensors,"));
        QVERIFY(read(documents[1], 0).starts_with("12345|"));
        QVERIFY(read(documents[4], 0).starts_with("0|model-2.safetensors,x.weight:0;0,"));
        QVERIFY(read(documents[5], 0).find("'late' is a number") != std::string::npos);
        QVERIFY(read(documents[9], 0).find("twice") != std::string::npos);
        QVERIFY(read(documents[11], 0).find("a0000:0;a0001:0;") != std::string::npos);
        QVERIFY(read(documents[12], 0).find("lists tensor 'b2999' twice") != std::string::npos);
        QVERIFY(read(documents[13], 0).find("b0000:0;b0001:0;") != std::string::npos);
    }

    // Shapes up to rank 4 are held in place, longer ones on the heap: both read, copied and moved alike.
    void shapesOfEveryRank()
    {
        std::string json = "{";
        std::uint64_t offset = 0;
        for (int rank = 0; rank <= 10; ++rank) {
            std::string dims;
            std::uint64_t numel = 1;
            for (int d = 0; d < rank; ++d) {
                dims += (d ? "," : "") + std::to_string(d + 2);
                numel *= static_cast<std::uint64_t>(d + 2);
            }
            json += std::string(rank ? "," : "") + "\"r" + std::to_string(rank) + "\":{\"dtype\":\"U8\",\"shape\":[" +
                    dims + "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(offset + numel) + "]}";
            offset += numel;
        }
        json += "}";
        const ShardHeader h = parseShardHeader("s.safetensors", json, 8 + json.size() + offset);
        QCOMPARE(h.tensors.size(), std::size_t(11));
        for (std::size_t rank = 0; rank < h.tensors.size(); ++rank) {
            const Shape &shape = h.tensors[rank].shape;
            QCOMPARE(shape.size(), rank);
            for (std::size_t d = 0; d < rank; ++d)
                QCOMPARE(shape[d], std::uint64_t(d + 2));
            Shape copy = shape;
            QVERIFY(copy == shape);
            Shape moved = std::move(copy);
            QVERIFY(moved == shape);
            QVERIFY(copy.empty());
            copy = moved; // assigned into a moved-from shape
            moved.push_back(9);
            QVERIFY(!(moved == copy));
            QCOMPARE(moved.back(), std::uint64_t(9));
            QCOMPARE(copy.toVector(), std::vector<std::uint64_t>(shape.begin(), shape.end()));
            moved = std::move(copy);
            QVERIFY(moved == shape);
        }
    }

    void naturalOrder()
    {
        QVERIFY(naturalLess("layers.9", "layers.10"));
        QVERIFY(!naturalLess("layers.10", "layers.9"));
        QVERIFY(naturalLess("a", "b"));
        QVERIFY(naturalLess("x2", "x2y"));
        QVERIFY(!naturalLess("x07", "x7") || !naturalLess("x7", "x07")); // never both
        // naturalLess starts where the two names part (past eight shared bytes at a time): on names built from
        // digits, zeros, dots and letters its every answer is the one of comparing from the first byte.
        const auto reference = [](std::string_view a, std::string_view b) {
            std::size_t i = 0, j = 0;
            const auto digit = [](char c) { return c >= '0' && c <= '9'; };
            while (i < a.size() && j < b.size()) {
                if (digit(a[i]) && digit(b[j])) {
                    std::size_t ei = i, ej = j;
                    while (ei < a.size() && digit(a[ei]))
                        ++ei;
                    while (ej < b.size() && digit(b[ej]))
                        ++ej;
                    std::size_t si = i, sj = j;
                    while (si + 1 < ei && a[si] == '0')
                        ++si;
                    while (sj + 1 < ej && b[sj] == '0')
                        ++sj;
                    if (ei - si != ej - sj) return ei - si < ej - sj;
                    if (auto c = a.substr(si, ei - si).compare(b.substr(sj, ej - sj)); c != 0) return c < 0;
                    i = ei;
                    j = ej;
                    continue;
                }
                if (a[i] != b[j]) return a[i] < b[j];
                ++i;
                ++j;
            }
            return a.size() - i < b.size() - j;
        };
        std::mt19937 random(20261205);
        const std::string alphabet = "0012789.ab_x";
        std::vector<std::string> names{"", "0", "00", "model.layers.10.mlp.experts.7.w1", "model.layers.10.mlp.experts.70.w1",
                                       "model.layers.010.mlp", "model.layers.9.mlp.experts.255"};
        for (int n = 0; n < 3000; ++n) {
            // Pairs that share a long prefix, then differ within or around a number.
            std::string name = names[random() % names.size()];
            const std::size_t keep = name.empty() ? 0 : random() % (name.size() + 1);
            name.resize(keep);
            for (int k = int(random() % 12); k > 0; --k)
                name += alphabet[random() % alphabet.size()];
            names.push_back(name);
        }
        int differ = 0;
        for (std::size_t k = 0; k + 1 < names.size(); ++k)
            for (const std::size_t other : {k + 1, std::size_t(random() % names.size())}) {
                const std::string &a = names[k], &b = names[other];
                if (naturalLess(a, b) != reference(a, b) || naturalLess(b, a) != reference(b, a)) ++differ;
            }
        QCOMPARE(differ, 0);
    }

    // populateForWrite backs the whole pages inside its range and no others, and leaves every byte as it
    // was; PopulateAhead runs a chunk ahead of the writing, never past its buffer (populate.cpp).
    void populatedPages()
    {
        constexpr std::size_t page = 4096, pages = 600; // more than two 1 MiB chunks
        auto *base = static_cast<char *>(::mmap(nullptr, pages * page, PROT_READ | PROT_WRITE,
                                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        QVERIFY(base != MAP_FAILED);
        ::madvise(base, pages * page, MADV_NOHUGEPAGE); // page by page, whatever the system's huge-page policy
        auto resident = [&] {
            std::vector<unsigned char> in(pages);
            ::mincore(base, pages * page, in.data());
            std::vector<int> out;
            for (std::size_t i = 0; i < pages; ++i)
                if (in[i] & 1) out.push_back(int(i));
            return out;
        };
        QCOMPARE(resident(), std::vector<int>{});
#ifdef MADV_POPULATE_WRITE
        if (::madvise(base + 599 * page, page, MADV_POPULATE_WRITE) != 0) QSKIP("this kernel cannot populate (before 5.14)");
        ::madvise(base + 599 * page, page, MADV_DONTNEED);
#else
        QSKIP("built without MADV_POPULATE_WRITE");
#endif
        // From byte 100 of page 1 to byte 10 of page 5: pages 2, 3 and 4 lie wholly inside.
        populateForWrite(base + page + 100, 4 * page - 90);
        QCOMPARE(resident(), (std::vector<int>{2, 3, 4}));
        QVERIFY(std::all_of(base + 2 * page, base + 5 * page, [](char c) { return c == 0; }));
        // Bytes already written stay as they are.
        std::memset(base + 10 * page, 'x', 3 * page);
        populateForWrite(base + 10 * page, 3 * page);
        QVERIFY(std::all_of(base + 10 * page, base + 13 * page, [](char c) { return c == 'x'; }));
        ::madvise(base, pages * page, MADV_DONTNEED);
        QCOMPARE(resident(), std::vector<int>{});
        // Ahead of the writing: the first MiB (256 pages) at the first need, the next at the 257th page.
        PopulateAhead ahead(base, 300 * page);
        ahead.need(10);
        QCOMPARE(resident().size(), std::size_t(256));
        ahead.need(200 * page);
        QCOMPARE(resident().size(), std::size_t(256));
        ahead.need(256 * page + 1);
        const std::vector<int> now = resident();
        QCOMPARE(now.size(), std::size_t(300)); // the whole buffer, and nothing past it
        QCOMPARE(now.back(), 299);
        ::munmap(base, pages * page);
    }
};

QTEST_APPLESS_MAIN(TestSafetensors)
#include "tst_safetensors.moc"
