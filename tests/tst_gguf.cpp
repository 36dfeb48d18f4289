// GGUF (domain.md section 20): llama.cpp's header read byte by byte and bounded, the synthetic copies of
// GLM-5.2 and DeepSeek-V3 at full scale analysed as their origins are, the bias audit, the diff against the
// origin, the llama.cpp cache and plan. Every expected figure is worked out here from the architecture and
// the block structs of ggml/src/ggml-common.h, never read back from the writer.
#include "bias_audit.h"
#include "bias_reader.h"
#include "bias_report.h"
#include "byte_source.h"
#include "cache_budget.h"
#include "checkpoint_reader.h"
#include "diff.h"
#include "errors.h"
#include "gguf.h"
#include "gguf_config.h"
#include "gguf_layouts.h"
#include "gguf_names.h"
#include "gguf_reader.h"
#include "layout_arithmetic.h"
#include "llama_plan.h"

#include <QTemporaryDir>
#include <QTest>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

using namespace atlas;

namespace {

using u64 = std::uint64_t;

// Bytes of a ggml block, from the block structs (ggml-common.h): half d = 2, QK_K = 256, K_SCALE_SIZE = 12.
struct BlockStruct
{
    Dtype dtype;
    unsigned values;
    unsigned bytes;
};
constexpr unsigned QK = 32, QK_K = 256, half = 2;
const BlockStruct kStructs[] = {
    {Dtype::Q4_0, QK, half + QK / 2},                        // d, qs[QK/2]
    {Dtype::Q4_1, QK, 2 * half + QK / 2},                    // d, m, qs
    {Dtype::Q5_0, QK, half + 4 + QK / 2},                    // d, qh[4], qs
    {Dtype::Q5_1, QK, 2 * half + 4 + QK / 2},                // d, m, qh, qs
    {Dtype::Q8_0, QK, half + QK},                            // d, qs[QK]
    {Dtype::Q8_1, QK, 2 * half + QK},                        // d, s, qs
    {Dtype::Q2_K, QK_K, QK_K / 16 + QK_K / 4 + 2 * half},    // scales, qs, d, dmin
    {Dtype::Q3_K, QK_K, QK_K / 8 + QK_K / 4 + 12 + half},    // hmask, qs, scales, d
    {Dtype::Q4_K, QK_K, 2 * half + 12 + QK_K / 2},           // d, dmin, scales, qs
    {Dtype::Q5_K, QK_K, 2 * half + 12 + QK_K / 8 + QK_K / 2}, // d, dmin, scales, qh, qs
    {Dtype::Q6_K, QK_K, QK_K / 2 + QK_K / 4 + QK_K / 16 + half}, // ql, qh, scales, d
    {Dtype::Q8_K, QK_K, 4 + QK_K + QK_K / 16 * 2},           // float d, qs, bsums[QK_K/16] int16
    {Dtype::IQ2_XXS, QK_K, half + QK_K / 8 * 2},             // d, qs[QK_K/8] uint16
    {Dtype::IQ2_XS, QK_K, half + QK_K / 8 * 2 + QK_K / 32},  // d, qs, scales
    {Dtype::IQ2_S, QK_K, half + QK_K / 4 + QK_K / 32 + QK_K / 32}, // d, qs[QK_K/4], qh, scales
    {Dtype::IQ3_XXS, QK_K, half + 3 * QK_K / 8},             // d, qs[3*QK_K/8]
    {Dtype::IQ3_S, QK_K, half + QK_K / 4 + QK_K / 32 + QK_K / 8 + QK_K / 64}, // d, qs, qh, signs, scales
    {Dtype::IQ1_S, QK_K, half + QK_K / 8 + QK_K / 32 * 2},   // d, qs, qh[QK_K/32] uint16
    {Dtype::IQ1_M, QK_K, QK_K / 8 + QK_K / 16 + QK_K / 32},  // qs, qh, scales
    {Dtype::IQ4_NL, QK, half + QK / 2},                      // d, qs
    {Dtype::IQ4_XS, QK_K, half + 2 + QK_K / 64 + QK_K / 2},  // d, scales_h, scales_l, qs
    {Dtype::TQ1_0, QK_K, (QK_K - 4 * QK_K / 64) / 5 + QK_K / 64 + half}, // qs, qh, d
    {Dtype::TQ2_0, QK_K, QK_K / 4 + half},                   // qs, d
    {Dtype::MXFP4, QK, 1 + QK / 2},                          // e (E8M0), qs
    {Dtype::NVFP4, 64, 64 / 16 + 64 / 2},                    // d[4] (UE4M3 per 16), qs
    {Dtype::Q1_0, 128, half + 128 / 8},                      // d, qs
};

u64 bytesOf(Dtype d, u64 values)
{
    for (const auto &s : kStructs)
        if (s.dtype == d) return values / s.values * s.bytes;
    switch (d) {
    case Dtype::F32: return values * 4;
    case Dtype::F16:
    case Dtype::BF16: return values * 2;
    default: return 0;
    }
}

// A GGUF header, written here byte by byte.
class Builder
{
public:
    Builder &u8(std::uint8_t v) { return raw(&v, 1); }
    Builder &u32(std::uint32_t v) { return raw(&v, 4); }
    Builder &u64v(std::uint64_t v) { return raw(&v, 8); }
    Builder &str(std::string_view s)
    {
        u64v(s.size());
        bytes.append(s);
        return *this;
    }
    Builder &head(std::uint32_t version, u64 tensors, u64 keys)
    {
        bytes = "GGUF";
        return u32(version).u64v(tensors).u64v(keys);
    }
    Builder &kvU32(std::string_view k, std::uint32_t v) { return str(k).u32(4).u32(v); }
    Builder &kvStr(std::string_view k, std::string_view v) { return str(k).u32(8).str(v); }
    Builder &tensor(std::string_view name, std::vector<u64> ne, std::uint32_t type, u64 offset)
    {
        str(name).u32(static_cast<std::uint32_t>(ne.size()));
        for (u64 d : ne)
            u64v(d);
        return u32(type).u64v(offset);
    }
    std::string bytes;

private:
    Builder &raw(const void *p, std::size_t n)
    {
        bytes.append(static_cast<const char *>(p), n);
        return *this;
    }
};

// Two tensors: a Q8_0 [4, 64] matrix (ne 64, 4) and an F32 vector of 8, aligned to 32.
Builder validHeader()
{
    Builder b;
    b.head(3, 2, 3).kvStr("general.architecture", "deepseek2").kvU32("deepseek2.block_count", 1);
    b.str("tokenizer.ggml.tokens").u32(9).u32(8).u64v(3).str("a").str("bb").str("ccc");
    b.tensor("blk.0.attn_q_a.weight", {64, 4}, 8, 0).tensor("blk.0.attn_norm.weight", {8}, 0, 288);
    return b;
}

u64 aligned(u64 n, u64 a)
{
    return (n + a - 1) / a * a;
}

Checkpoint readFolder(const std::string &dir, const GgufSelection &sel = {})
{
    LocalDirectorySource source(dir);
    ReadOptions o;
    o.gguf = sel;
    return readCheckpoint(source, o);
}

LoadedCheckpoint load(const std::string &dir, CacheOptions cache = {})
{
    LoadedCheckpoint l;
    l.checkpoint = readFolder(dir);
    l.analysis = analyze(l.checkpoint);
    l.cache = computeCacheBudget(l.checkpoint, l.analysis, cache);
    return l;
}

// llama-quant.cpp use_more_bits over n blocks.
bool moreBits(std::int64_t i, std::int64_t n)
{
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

// A K-quant on a row that does not fill 256 values falls back (llama-quant.cpp tensor_type_fallback).
Dtype onRow(Dtype d, u64 row)
{
    unsigned values = 1;
    for (const auto &s : kStructs)
        if (s.dtype == d) values = s.values;
    if (row % values == 0) return d;
    if (d == Dtype::Q4_K) return Dtype::Q5_0;
    if (d == Dtype::Q5_K) return Dtype::Q5_1;
    if (d == Dtype::Q6_K) return Dtype::Q8_0;
    return Dtype::IQ4_NL;
}

} // namespace

class TestGguf : public QObject
{
    Q_OBJECT

private slots:
    void blocksMatchTheirStructs()
    {
        for (const auto &s : kStructs) {
            const DtypeBlock b = dtypeBlock(s.dtype);
            QVERIFY2(b.elements == s.values && b.bytes == s.bytes, dtypeName(s.dtype).data());
            QVERIFY(isGgmlBlockType(s.dtype));
            QCOMPARE(ggmlTypeOf(s.dtype) >= 0, true);
        }
        QCOMPARE(dtypeBitsPerValue(Dtype::Q4_K), 4.5);
        QCOMPARE(dtypeBitsPerValue(Dtype::Q8_0), 8.5);
        // ggml.h enum ggml_type ids, and the removed ones refused.
        QCOMPARE(*dtypeOfGgmlType(12), Dtype::Q4_K);
        QCOMPARE(*dtypeOfGgmlType(30), Dtype::BF16);
        QCOMPARE(*dtypeOfGgmlType(39), Dtype::MXFP4);
        for (std::uint32_t removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 42u, 1000u})
            QVERIFY(!dtypeOfGgmlType(removed));
        // A safetensors header never names a ggml type.
        QVERIFY(!dtypeFromName("Q4_K"));
        QVERIFY(dtypeFromName("F8_E4M3"));
        // Every safetensors name finds its own dtype, and nothing near one does: a trailing NUL (a JSON
        // string may hold one), a prefix or a longer name.
        for (int i = 0; i < kDtypeCount; ++i) {
            const auto d = static_cast<Dtype>(i);
            if (isGgmlBlockType(d)) continue;
            const std::string name(dtypeName(d));
            QCOMPARE(dtypeFromName(name), std::optional<Dtype>(d));
            QVERIFY2(!dtypeFromName(name + std::string(1, '\0')), name.c_str());
            QVERIFY2(!dtypeFromName(name + "X"), name.c_str());
            QVERIFY2(!dtypeFromName(name.substr(0, name.size() - 1)), name.c_str());
        }
        QVERIFY(!dtypeFromName(""));
        QVERIFY(!dtypeFromName("F8_E4M3_LONG"));
    }

    void headerParses()
    {
        const Builder b = validHeader();
        const u64 dataStart = aligned(b.bytes.size(), 32);
        const u64 size = dataStart + 288 + 32;
        const GgufParse p = parseGgufHeader("x.gguf", b.bytes, size);
        QVERIFY(p.header);
        const GgufHeader &h = *p.header;
        QCOMPARE(h.version, 3u);
        QCOMPARE(h.architecture(), std::string("deepseek2"));
        QCOMPARE(*h.integer("deepseek2.block_count"), std::int64_t(1));
        const GgufValue *tokens = h.find("tokenizer.ggml.tokens");
        QVERIFY(tokens && tokens->type == GgufType::Array && tokens->count == 3);
        QCOMPARE(h.shard.dataStart(), dataStart);
        QCOMPARE(h.shard.tensors.size(), std::size_t(2));
        const TensorInfo &q = h.shard.tensors[0];
        QCOMPARE(std::string(q.name), std::string("blk.0.attn_q_a.weight"));
        QCOMPARE(q.dtype, Dtype::Q8_0);
        QCOMPARE(q.shape, (std::vector<u64>{4, 64})); // row-major: ne reversed
        QCOMPARE(q.numel, u64(256));
        QCOMPARE(q.bytes(), u64(256 / 32 * 34));
        QCOMPARE(h.shard.tensors[1].begin, u64(288));
        // Another alignment moves the data and the expected offsets with it.
        Builder c;
        c.head(3, 2, 2).kvStr("general.architecture", "x").kvU32("general.alignment", 64);
        c.tensor("a", {64, 4}, 8, 0).tensor("b", {8}, 0, 320);
        const GgufParse p2 = parseGgufHeader("y.gguf", c.bytes, aligned(c.bytes.size(), 64) + 352);
        QVERIFY(p2.header);
        QCOMPARE(p2.header->shard.dataStart(), aligned(c.bytes.size(), 64));
    }

    void hostile_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<qint64>("fileSize");
        QTest::addColumn<QString>("words");
        auto row = [](const char *name, const Builder &b, u64 size, const char *words) {
            QTest::newRow(name) << QByteArray::fromStdString(b.bytes) << qint64(size) << QString::fromUtf8(words);
        };
        const u64 big = 1 << 20;
        Builder b;
        b.bytes = "GGUX";
        b.u32(3).u64v(0).u64v(0);
        row("bad magic", b, big, "does not begin");
        row("version 1", Builder().head(1, 0, 0), big, "version 1");
        row("big-endian", Builder().head(0x03000000u, 0, 0), big, "big-endian");
        row("too many tensors", Builder().head(3, u64(1) << 40, 0), big, "tensors (at most");
        row("too many keys", Builder().head(3, 0, u64(1) << 30), big, "metadata keys (at most");
        row("counts past the file", Builder().head(3, 100000, 0), big, "more than the file");
        row("key past the end", Builder().head(3, 0, 1).u64v(u64(1) << 40), big, "past the end of the file");
        row("empty key", Builder().head(3, 0, 1).str("").u32(4).u32(1), big, "is empty");
        row("unknown value type", Builder().head(3, 0, 1).str("k").u32(13), big, "unknown value type 13");
        row("array of arrays", Builder().head(3, 0, 1).str("k").u32(9).u32(9).u64v(1), big, "array of arrays");
        row("array past the file", Builder().head(3, 0, 1).str("k").u32(9).u32(4).u64v(u64(1) << 50), big,
            "remaining bytes can hold");
        row("string element past the file",
            Builder().head(3, 0, 1).str("k").u32(9).u32(8).u64v(2).str("a").u64v(u64(1) << 45), big, "past the end of the file");
        row("duplicate key", Builder().head(3, 0, 2).kvU32("k", 1).kvU32("k", 2), big, "appears twice");
        row("alignment not a power of two", Builder().head(3, 0, 1).kvU32("general.alignment", 48), big, "not a power of two");
        row("alignment of another type", Builder().head(3, 0, 1).str("general.alignment").u32(10).u64v(32), big, "not u32");
        auto t = [](const char *name, std::vector<u64> ne, std::uint32_t type, u64 offset) {
            Builder x;
            x.head(3, 1, 1).kvStr("general.architecture", "x").tensor(name, std::move(ne), type, offset);
            return x;
        };
        row("name too long", t("blk.0.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.weight", {32}, 0, 0), big,
            "GGML_MAX_NAME");
        row("five dimensions", t("a", {1, 1, 1, 1, 1}, 0, 0), big, "5 dimensions");
        row("dimensions overflow", t("a", {u64(1) << 40, u64(1) << 40}, 0, 0), big, "overflow");
        row("removed type", t("a", {32}, 4, 0), big, "ggml type 4");
        row("unknown type", t("a", {32}, 77, 0), big, "ggml type 77");
        row("row not a whole block", t("a", {100, 2}, 12, 0), big, "not a multiple of Q4_K's block of 256");
        row("offset not aligned", t("a", {32}, 0, 8), big, "not a multiple of the alignment");
        row("tensor past the file", t("a", {1 << 20}, 0, 0), 4096, "runs past the end");
        row("gap before a tensor", t("a", {32}, 0, 64), big, "llama.cpp requires them in sequence");
        Builder dup;
        dup.head(3, 2, 1).kvStr("general.architecture", "x").tensor("a", {32}, 0, 0).tensor("a", {32}, 0, 128);
        row("duplicate tensor", dup, big, "appears twice");
        Builder overlap;
        overlap.head(3, 2, 1).kvStr("general.architecture", "x").tensor("a", {64}, 0, 0).tensor("b", {32}, 0, 128);
        row("overlapping tensors", overlap, big, "where the tensor before it ends");
        const Builder ended = Builder().head(3, 0, 2).kvStr("a", "a value of thirty characters..");
        row("file ended in the header", ended, ended.bytes.size(), "file ended inside its header");
    }
    void hostile()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(qint64, fileSize);
        QFETCH(QString, words);
        try {
            const GgufParse p = parseGgufHeader("bad.gguf", bytes.toStdString(), u64(fileSize));
            QFAIL(p.header ? "parsed" : "asked for more bytes instead of refusing");
        } catch (const AtlasError &e) {
            QCOMPARE(e.kind(), ErrorKind::Invalid);
            const QString what = QString::fromUtf8(e.what());
            QVERIFY2(what.startsWith(QStringLiteral("bad.gguf: ")), qPrintable(what));
            QVERIFY2(what.contains(words), qPrintable(what));
        }
    }

    // Every prefix of a header: more bytes wanted (never fewer than twice the prefix), or, when the file
    // itself ends there, refused; never a crash or a header made of half the bytes.
    void everyPrefix()
    {
        const Builder b = validHeader();
        const u64 size = aligned(b.bytes.size(), 32) + 320;
        for (std::size_t n = 0; n < b.bytes.size(); ++n) {
            const GgufParse p = parseGgufHeader("x.gguf", b.bytes.substr(0, n), size);
            QVERIFY(!p.header);
            QVERIFY(p.wanted >= std::min<u64>(2 * n, size));
            QVERIFY(p.wanted <= size);
            bool refused = false;
            try {
                parseGgufHeader("x.gguf", b.bytes.substr(0, n), n);
            } catch (const AtlasError &e) {
                refused = e.kind() == ErrorKind::Invalid;
            }
            QVERIFY2(refused, qPrintable(QString::number(n)));
        }
    }

    // A first file of 5 MB of metadata read from a 64 KiB prefix: the estimate from the arrays' counts and
    // sizes reaches the end in at most two further reads.
    void growingReads()
    {
        QTemporaryDir dir;
        const auto r = synth::writeGguf(synth::glm5Fp8(), synth::ggufQ4KM(), dir.path().toStdString(), "m");
        const std::string path = dir.path().toStdString() + "/" + r.files.front();
        std::ifstream in(path, std::ios::binary);
        std::string all(std::size_t(r.headerBytes), '\0');
        in.read(all.data(), std::streamsize(all.size()));
        const u64 size = std::filesystem::file_size(path);
        u64 have = 64 << 10;
        int reads = 1;
        for (;;) {
            const GgufParse p = parseGgufHeader("m.gguf", std::string_view(all).substr(0, std::min<u64>(have, all.size())), size);
            if (p.header) break;
            QVERIFY(p.wanted > have);
            have = p.wanted;
            ++reads;
            QVERIFY(reads <= 3);
        }
        QVERIFY(r.headerBytes > 4'000'000);
    }

    void fullScale_data()
    {
        QTest::addColumn<QString>("model");
        QTest::addColumn<bool>("q2");
        QTest::newRow("GLM-5.2 Q4_K_M") << QStringLiteral("glm") << false;
        QTest::newRow("GLM-5.2 UD-Q2_K_XL (6 files)") << QStringLiteral("glm") << true;
        QTest::newRow("DeepSeek-V3 Q4_K_M") << QStringLiteral("ds") << false;
        QTest::newRow("DeepSeek-V3 UD-Q2_K_XL (6 files)") << QStringLiteral("ds") << true;
    }
    void fullScale()
    {
        QFETCH(QString, model);
        QFETCH(bool, q2);
        const synth::LayoutSpec s = model == QStringLiteral("glm") ? synth::glm5Fp8() : synth::deepseekV3();
        const synth::GgufRecipe recipe = q2 ? synth::ggufUdQ2KXL() : synth::ggufQ4KM();
        QTemporaryDir dir;
        synth::writeGguf(s, recipe, dir.path().toStdString(), "Model-" + recipe.name);
        const LoadedCheckpoint l = load(dir.path().toStdString());
        QCOMPARE(l.checkpoint.format, CheckpointFormat::Gguf);
        QCOMPARE(l.checkpoint.shards.size(), std::size_t(recipe.files));
        // DeepSeek-V2/V3's converter drops the MTP block (skip_mtp); GLM-5's keeps it as the last block.
        const bool mtp = model == QStringLiteral("glm");
        QCOMPARE(l.analysis.mainLayers, int(s.layers));
        QCOMPARE(l.analysis.layerCount, int(s.layers + (mtp ? s.mtpLayers : 0)));
        const expected::Budget e = expected::budget(s);
        const u64 total = e.total - (mtp ? 0 : e.mtp);
        QCOMPARE(l.analysis.budget.total, total);
        QCOMPARE(*l.analysis.budget.activatedPerToken, e.active);
        QCOMPARE(l.analysis.budget.byCategory[std::size_t(Category::RoutedExperts)], e.routed);
        QCOMPARE(l.analysis.budget.byCategory[std::size_t(Category::Attention)], e.attention);
        QCOMPARE(l.analysis.budget.byCategory[std::size_t(Category::Indexer)], e.indexer);
        QCOMPARE(l.analysis.indexShare.full.size(), std::size_t(expected::fullLayers(s)));
        QVERIFY(l.analysis.budget.otherTensors.empty());
        // The routed experts' bytes from the recipe's types on the rows they hold.
        const u64 H = u64(s.hidden), I = u64(s.moeInter), E = u64(s.experts);
        const std::int64_t blocks = s.layers + (mtp ? s.mtpLayers : 0);
        u64 routed = 0;
        for (std::int64_t i = s.firstDense; i < s.layers; ++i)
            routed += 2 * bytesOf(onRow(recipe.expertsGateUp, H), E * I * H) +
                      bytesOf(onRow(moreBits(i, blocks) ? recipe.expertsDownMore : recipe.expertsDown, I), E * H * I);
        const QuantRow *row = nullptr;
        for (const auto &q : l.analysis.quantLayout)
            if (q.category == Category::RoutedExperts) row = &q;
        QVERIFY(row);
        u64 stored = 0;
        for (const auto &[d, t] : row->dtypes)
            stored += t.bytes;
        QCOMPARE(stored, routed);
        QCOMPARE(row->bitsPerWeight(), 8.0 * double(routed) / double(e.routed));
        // The layer model from the metadata: experts, top-k, the latent, the leading dense blocks.
        QCOMPARE(*l.checkpoint.config.nRoutedExperts, s.experts);
        QCOMPARE(*l.checkpoint.config.numExpertsPerTok, s.topk);
        QCOMPARE(*l.checkpoint.config.kvLoraRank, s.kvLoraRank);
        QCOMPARE(*l.checkpoint.config.firstKDenseReplace, s.firstDense);
        QCOMPARE(l.checkpoint.config.topkMethod, std::string("noaux_tc"));
        for (int i = 0; i < l.analysis.mainLayers; ++i)
            QCOMPARE(l.analysis.layers[std::size_t(i)].kind, i < s.firstDense ? LayerKind::Dense : LayerKind::Moe);
        // llama.cpp's cache (the default for a GGUF): K only, kv_lora_rank + rope in f16, the indexer's keys.
        QCOMPARE(l.cache.preset, CachePreset::LlamaCpp);
        const u64 perToken = u64(s.layers) * 2 * u64(s.kvLoraRank + s.ropeDim) +
                             u64(expected::fullLayers(s)) * 2 * u64(s.indexHeadDim);
        QCOMPARE(l.cache.bytesPerToken, perToken);
    }

    // A split set is read whole and checked part by part; a folder of several sets asks which.
    void splitSets()
    {
        QTemporaryDir dir;
        const std::string d = dir.path().toStdString();
        synth::writeGguf(synth::deepseekV3(), synth::ggufUdQ2KXL(), d, "DeepSeek-V3-UD-Q2_K_XL");
        synth::writeGguf(synth::deepseekV3(), synth::ggufQ4KM(), d, "DeepSeek-V3-Q4_K_M");
        auto refusal = [&](const GgufSelection &sel) {
            try {
                readFolder(d, sel);
            } catch (const AtlasError &e) {
                return std::string(e.what());
            }
            return std::string();
        };
        const std::string both = refusal({});
        QVERIFY2(both.find("holds 2 GGUF sets") != std::string::npos && both.find("--gguf") != std::string::npos, both.c_str());
        QCOMPARE(readFolder(d, {"", "ud-q2"}).shards.size(), std::size_t(6));
        QCOMPARE(readFolder(d, {"", "Q4_K_M"}).shards.size(), std::size_t(1));
        QCOMPARE(readFolder(d, {"DeepSeek-V3-UD-Q2_K_XL-00003-of-00006.gguf", ""}).shards.size(), std::size_t(6));
        QVERIFY(refusal({"", "IQ1_S"}).find("no .gguf file's path contains 'IQ1_S'") != std::string::npos);
        // A listing's names outside the repository are never read, nor is a named file outside the source.
        QVERIFY_THROWS_EXCEPTION(AtlasError, chooseGgufFiles({"../up.gguf", "a/../b.gguf", "/etc/x.gguf"}, {}, "hub"));
        try {
            chooseGgufFiles({}, {"../x.gguf", ""}, "hub");
            QFAIL("a file outside the source was accepted");
        } catch (const AtlasError &e) {
            QCOMPARE(e.problem(), HeaderProblem::UnsafeFileName);
        }
        QCOMPARE(chooseGgufFiles({"Q4/m-00001-of-00002.gguf", "Q4/m-00002-of-00002.gguf"}, {}, "hub"),
                 (std::vector<std::string>{"Q4/m-00001-of-00002.gguf", "Q4/m-00002-of-00002.gguf"}));
        // A part gone: named.
        std::filesystem::remove(d + "/DeepSeek-V3-UD-Q2_K_XL-00004-of-00006.gguf");
        const std::string missing = refusal({"", "UD-Q2"});
        QVERIFY2(missing.find("DeepSeek-V3-UD-Q2_K_XL-00004-of-00006.gguf is missing") != std::string::npos, missing.c_str());
        // A part that says it is another: refused with both numbers.
        std::filesystem::rename(d + "/DeepSeek-V3-UD-Q2_K_XL-00005-of-00006.gguf", d + "/DeepSeek-V3-UD-Q2_K_XL-00004-of-00006.gguf");
        const std::string swapped = refusal({"", "UD-Q2"});
        QVERIFY2(swapped.find("missing") != std::string::npos || swapped.find("says it is part 5 of 6") != std::string::npos,
                 swapped.c_str());
    }

    // The correction biases read from the GGUF data are the origin's, byte for byte; a copy that stored them
    // in BF16 is called out.
    void biasAudit()
    {
        QTemporaryDir dir;
        const std::string origin = dir.path().toStdString() + "/st", f32 = dir.path().toStdString() + "/f32",
                          b16 = dir.path().toStdString() + "/bf16";
        const synth::LayoutSpec s = synth::deepseekV3();
        synth::writeCheckpoint(s, origin);
        synth::writeGguf(s, synth::ggufQ4KM(), f32, "m");
        synth::GgufRecipe bf16 = synth::ggufQ4KM();
        bf16.bias = Dtype::BF16;
        synth::writeGguf(s, bf16, b16, "m");
        auto audit = [](const std::string &d) {
            LocalDirectorySource src(d);
            LoadedCheckpoint l;
            l.checkpoint = readCheckpoint(src);
            l.analysis = analyze(l.checkpoint);
            const BiasFetchPlan plan = planBiasFetch(l.checkpoint, {});
            return auditBiases(l.checkpoint.config, l.analysis, readBiases(src, plan), plan.bytes);
        };
        const BiasAudit a = audit(origin), g = audit(f32), h = audit(b16);
        QCOMPARE(g.stats.size(), std::size_t(s.layers - s.firstDense)); // no MTP block in the copy
        const auto byLayer = compareBiases(a, g, true);
        int same = 0;
        for (const auto &c : byLayer)
            same += c.sameBytes;
        QCOMPARE(same, int(s.layers - s.firstDense));
        QVERIFY(g.router.has_value());
        for (const auto &st : h.stats)
            QCOMPARE(st.dtype, std::string("BF16"));
        const std::string text = formatBiasTable(h.stats, h.bytesRead, h.kind);
        QVERIFY2(text.find("STORED IN 16 BITS: " + std::to_string(h.stats.size()) + " in BF16") != std::string::npos, text.c_str());
        QVERIFY(formatBiasTable(g.stats, g.bytesRead, g.kind).find("STORED IN 16 BITS") == std::string::npos);
        QCOMPARE(biasesJson(h.stats, h.bytesRead, h.kind)["stored_16bit"].get<u64>(), u64(h.stats.size()));
    }

    // The diff against the origin: by category the same logical parameters, the MTP block and the indexer
    // absent when the converter drops them, every expert stacked into its layer's tensor.
    void diffAgainstOrigin()
    {
        QTemporaryDir dir;
        const std::string st = dir.path().toStdString() + "/st", gg = dir.path().toStdString() + "/gg";
        const synth::LayoutSpec s = synth::deepseekV32(); // with MTP and indexers
        synth::writeCheckpoint(s, st);
        synth::GgufRecipe recipe = synth::ggufQ4KM();
        recipe.keepIndexer = false;
        synth::writeGguf(synth::deepseekV3(), recipe, gg, "m"); // deepseek2: no MTP, and here no indexer either
        const LoadedCheckpoint a = load(st), b = load(gg);
        const CheckpointDiff d = diffCheckpoints(a, b);
        QVERIFY(d.acrossFormats);
        const expected::Budget e = expected::budget(s);
        QCOMPARE(d.aByCategory[std::size_t(Category::RoutedExperts)], e.routed);
        QCOMPARE(d.bByCategory[std::size_t(Category::RoutedExperts)], e.routed);
        QCOMPARE(d.bByCategory[std::size_t(Category::Indexer)], u64(0));
        std::map<Category, const CheckpointDiff::Absent *> absent;
        for (const auto &row : d.absent)
            absent[row.category] = &row;
        QVERIFY(absent.count(Category::Mtp) && absent.count(Category::Indexer));
        QCOMPARE(absent[Category::Mtp]->layers, std::vector<int>{int(s.layers)});
        QCOMPARE(absent[Category::Mtp]->parameters, e.mtp);
        QCOMPARE(absent[Category::Indexer]->parameters, e.indexer);
        QCOMPARE(absent[Category::Indexer]->layers.size(), std::size_t(s.layers));
        QCOMPARE(absent[Category::Mtp]->missingFrom, 'b');
        QCOMPARE(d.removed, absent[Category::Mtp]->tensors + absent[Category::Indexer]->tensors);
        QCOMPARE(d.added, u64(0));
        QVERIFY(d.scalesFolded > 0);
        // Every expert of every MoE layer matched into ffn_*_exps: their bits per weight are the copy's.
        QVERIFY(d.aBitsPerWeight[std::size_t(Category::RoutedExperts)] > 8.0);
        QVERIFY(d.bBitsPerWeight[std::size_t(Category::RoutedExperts)] < 6.0);
        QVERIFY(absentSentence(*absent[Category::Mtp]).starts_with("Absent in B: mtp of layer 61"));
        // The name table both ways.
        QCOMPARE(ggufNamesOf("model.layers.7.mlp.experts.200.down_proj.weight"),
                 std::vector<std::string>{"blk.7.ffn_down_exps.weight"});
        QCOMPARE(*safetensorsNameOf("blk.7.exp_probs_b.bias"), std::string("model.layers.7.mlp.gate.e_score_correction_bias"));
        QVERIFY(ggufNamesOf("model.layers.7.mlp.experts.1.down_proj.weight_scale_inv").empty());
    }

    // The llama.cpp plan by its own arithmetic: -ngl all, the fewest blocks' experts in host memory.
    void llamaCppPlan()
    {
        QTemporaryDir dir;
        const synth::LayoutSpec s = synth::deepseekV3();
        const synth::GgufRecipe recipe = synth::ggufQ4KM();
        synth::writeGguf(s, recipe, dir.path().toStdString(), "m");
        const LoadedCheckpoint l = load(dir.path().toStdString());
        const std::vector<synth::GgufTensor> tensors = synth::ggufTensors(s, recipe);
        // Per block: experts and the rest; the head on the GPU, token_embd on the host.
        std::vector<u64> experts(std::size_t(s.layers), 0), rest(std::size_t(s.layers), 0);
        u64 output = 0, input = 0;
        for (const auto &t : tensors) {
            if (t.layer < 0) {
                (t.name == "token_embd.weight" ? input : output) += t.bytes;
                continue;
            }
            (t.name.find("_exps.") != std::string::npos ? experts : rest)[std::size_t(t.layer)] += t.bytes;
        }
        const u64 context = 16384;
        const u64 cachePerBlock = context * 2 * u64(s.kvLoraRank + s.ropeDim); // f16, K only
        auto gpuAt = [&](int k) {
            u64 g = output + (1ull << 30);
            for (int i = 0; i < s.layers; ++i)
                g += rest[std::size_t(i)] + cachePerBlock + (i >= k ? experts[std::size_t(i)] : 0);
            return g;
        };
        LlamaPlanOptions o;
        o.gpuMemory = 141ull << 30;
        o.context = context;
        o.hostMemory = 512ull << 30;
        const LlamaPlan p = planLlamaCpp(l, o, {});
        QVERIFY(p.fitsGpu);
        QCOMPARE(p.ngl, int(s.layers) + 1);
        QVERIFY(p.nCpuMoe > int(s.firstDense));
        QCOMPARE(p.gpuTotal, gpuAt(p.nCpuMoe));
        QVERIFY(gpuAt(p.nCpuMoe) <= o.gpuMemory);
        QVERIFY(gpuAt(p.nCpuMoe - 1) > o.gpuMemory); // one block fewer in host memory would not fit
        u64 host = input;
        for (int i = 0; i < p.nCpuMoe; ++i)
            host += experts[std::size_t(i)];
        QCOMPARE(p.hostTotal, host);
        QVERIFY(*p.fitsHost);
        QVERIFY(p.flags.starts_with("-ngl 62 --n-cpu-moe " + std::to_string(p.nCpuMoe) + " -c 16384 -ctk f16"));
        QVERIFY(p.overrideTensor.find("ffn_(up|down|gate|gate_up)_(ch|)exps=CPU") != std::string::npos);
        // A q8_0 cache: 576 values in 18 blocks of 34 bytes per token per block.
        CacheOptions q8;
        q8.llamaCacheTypeK = Dtype::Q8_0;
        q8.contextTokens = context;
        const CacheBudget c = computeCacheBudget(l.checkpoint, l.analysis, q8);
        QCOMPARE(c.bytesPerToken, u64(s.layers) * (u64(s.kvLoraRank + s.ropeDim) / 32 * 34));
        // Given options are kept, a GPU too small refused in words.
        o.gpuMemory = 8ull << 30;
        const LlamaPlan small = planLlamaCpp(l, o, {});
        QVERIFY(small.ngl < int(s.layers) + 1);
        o.ngl = -1;
        QVERIFY_THROWS_EXCEPTION(AtlasError, planLlamaCpp(l, o, {}));
        o.ngl = 999; // as llama.cpp takes it: every block and the output layer
        o.nCpuMoe = int(s.layers);
        const LlamaPlan all = planLlamaCpp(l, o, {});
        QCOMPARE(all.ngl, int(s.layers) + 1);
        QVERIFY(all.outputOnGpu);
        // GLM-5.2 keeps its nextn block as block 78: llama.cpp numbers 79 blocks, and -ngl 80 offloads them all.
        QTemporaryDir glmDir;
        synth::writeGguf(synth::glm5Fp8(), recipe, glmDir.path().toStdString(), "glm");
        const LoadedCheckpoint glm = load(glmDir.path().toStdString());
        LlamaPlanOptions big;
        big.gpuMemory = 1ull << 40;
        big.context = context;
        const LlamaPlan g = planLlamaCpp(glm, big, {});
        QCOMPARE(g.ngl, int(synth::glm5Fp8().layers + synth::glm5Fp8().mtpLayers) + 1);
        QCOMPARE(g.nCpuMoe, 0);
        QCOMPARE(g.hostExperts, u64(0));
        QVERIFY(g.skippedBytes > 0); // the nextn block, not loaded
    }
};

QTEST_APPLESS_MAIN(TestGguf)
#include "tst_gguf.moc"
