#include "report.h"
#include "c_locale.h"

#include <charconv>
#include <cmath>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <sstream>

namespace atlas {

std::string groupDigits(std::uint64_t v)
{
    std::string digits = std::to_string(v);
    std::string out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

std::string shortCount(std::uint64_t v)
{
    if (v >= 1'000'000'000ULL) return fixedPoint(static_cast<double>(v) / 1e9, 2) + " B";
    if (v >= 1'000'000ULL) return fixedPoint(static_cast<double>(v) / 1e6, 2) + " M";
    if (v >= 1'000ULL) return fixedPoint(static_cast<double>(v) / 1e3, 2) + " K";
    return std::to_string(v);
}

std::string paramCount(std::uint64_t v)
{
    if (v >= 1'000'000'000'000ULL) return fixedPoint(static_cast<double>(v) / 1e12, 2) + " T params";
    if (v >= 1'000'000'000ULL) return fixedPoint(static_cast<double>(v) / 1e9, 2) + " B params";
    if (v >= 1'000'000ULL) return fixedPoint(static_cast<double>(v) / 1e6, 2) + " M params";
    return std::to_string(v) + " params";
}

std::string binaryBytes(std::uint64_t v)
{
    static const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double x = static_cast<double>(v);
    int u = 0;
    while (x >= 1024.0 && u < 6) {
        x /= 1024.0;
        ++u;
    }
    if (u == 0) return std::to_string(v) + " B";
    return fixedPoint(x, 2) + " " + units[u];
}

namespace {

std::string fixedPointOrWhole(double v)
{
    return v == std::floor(v) ? groupDigits(static_cast<std::uint64_t>(v)) : fixedPoint(v, 4);
}

nlohmann::ordered_json intList(const std::vector<int> &v)
{
    auto a = nlohmann::ordered_json::array();
    for (int x : v)
        a.push_back(x);
    return a;
}

// A byte count that may be fractional (compressed rows): an integer when it is one.
nlohmann::ordered_json exactNumber(double exact, std::uint64_t whole)
{
    if (exact == static_cast<double>(whole)) return whole;
    return exact;
}

nlohmann::ordered_json stringList(const std::vector<std::string> &v)
{
    auto a = nlohmann::ordered_json::array();
    for (const auto &x : v)
        a.push_back(x);
    return a;
}

} // namespace

nlohmann::ordered_json buildReport(const Checkpoint &ckpt, const CheckpointAnalysis &a, const CacheBudget &c)
{
    using J = nlohmann::ordered_json;
    J r;
    r["schema"] = kReportSchema;
    J source;
    source["kind"] = sourceKindName(ckpt.source.kind);
    source["location"] = ckpt.source.location;
    source["revision"] = ckpt.source.revision.empty() ? J() : J(ckpt.source.revision);
    source["commit"] = ckpt.source.commit.empty() ? J() : J(ckpt.source.commit);
    source["synthetic"] = ckpt.synthetic();
    r["source"] = source;

    J model;
    model["model_type"] = ckpt.config.modelType.empty() ? J() : J(ckpt.config.modelType);
    model["architectures"] = stringList(ckpt.config.architectures);
    auto optionalString = [](const std::string &v) { return v.empty() ? J() : J(v); };
    model["moe_router_dtype"] = optionalString(ckpt.config.moeRouterDtype);
    model["topk_method"] = optionalString(ckpt.config.topkMethod);
    model["scoring_func"] = optionalString(ckpt.config.scoringFunc);
    r["model"] = model;

    J files;
    files["shards"] = ckpt.shards.size();
    files["tensors"] = ckpt.tensorCount();
    files["total_bytes"] = ckpt.tensorBytes();
    files["header_bytes"] = ckpt.headerBytes();
    files["format"] = ckpt.format == CheckpointFormat::Gguf ? "gguf" : "safetensors";
    if (ckpt.format == CheckpointFormat::Gguf) files["gguf_architecture"] = ckpt.ggufArchitecture;
    r["files"] = files;

    const ParameterBudget &b = a.budget;
    J params;
    params["total"] = b.total;
    // Model cards leave MTP blocks out of the size they publish (DeepSeek-V3 671 B, V4-Flash 284 B).
    params["total_without_mtp"] = b.total - b.byCategory[static_cast<std::size_t>(Category::Mtp)];
    params["activated_per_token"] = b.activatedPerToken ? J(*b.activatedPerToken) : J();
    J byCat = J::object();
    for (std::size_t i = 0; i < kCategoryCount; ++i)
        byCat[std::string(categoryName(static_cast<Category>(i)))] = b.byCategory[i];
    params["by_category"] = byCat;
    J byDtype = J::object();
    for (const auto &[d, n] : b.byDtype)
        byDtype[d] = n;
    params["by_dtype"] = byDtype;
    params["quant_scales"] = {{"tensors", b.quantScales.tensors},
                              {"elements", b.quantScales.elements},
                              {"bytes", b.quantScales.bytes}};
    params["router_tables"] = {{"tensors", b.routerTables.tensors},
                               {"elements", b.routerTables.elements},
                               {"bytes", b.routerTables.bytes}};
    // Host-resident n-gram memories (Engram, n-gram embeddings), reported apart: in the total, active only
    // for the rows a token reads, and in host memory rather than on a GPU (plan: host_bytes).
    {
        const auto hi = static_cast<std::size_t>(Category::HostTables);
        params["host_tables"] = {{"tensors", a.hostTables.size()},
                                 {"parameters", b.byCategory[hi]},
                                 {"active_per_token", b.activeByCategory[hi]},
                                 {"bytes", a.hostTableBytes}};
    }
    params["other_tensors"] = stringList(b.otherTensors);
    // Tensors no row of the role table claims: 0 on every family the program knows.
    J examples = J::array();
    for (std::size_t i = 0; i < b.otherTensors.size() && i < 5; ++i)
        examples.push_back(b.otherTensors[i]);
    params["unassigned"] = {{"tensors", b.otherTensors.size()},
                            {"parameters", b.byCategory[static_cast<std::size_t>(Category::Other)]},
                            {"examples", examples}};
    r["parameters"] = params;

    J layers = J::array();
    for (const auto &l : a.layers) {
        J row;
        row["index"] = l.index;
        row["kind"] = layerKindName(l.kind);
        row["indexer"] = indexerRoleName(l.indexer);
        row["indexer_weights"] = l.indexerWeights;
        row["attention"] = l.attention;
        row["mixer"] = mixerKind(l.mixer).name; // the kind decided once (model/layer_kinds.h)
        if (l.compressRatio >= 0) row["compress_ratio"] = l.compressRatio;
        if (l.kind != LayerKind::Dense) row["routing"] = l.hashRouted ? "hash" : "scores";
        row["parameters"] = l.params.elements;
        row["on_disk"] = l.onDisk(); // false: a partial download's layer, sized nowhere
        if (l.indexer == IndexerRole::Shared && l.reusesLayer >= 0) row["reuses_layer"] = l.reusesLayer;
        layers.push_back(row);
    }
    r["layers"] = layers;
    r["layers_without_tensors"] = a.layersWithoutTensors;
    r["schedule"] = {{"source", a.scheduleSource.empty() ? J() : J(a.scheduleSource)},
                     {"mismatches", stringList(a.scheduleMismatches)}};

    const IndexShareMap &m = a.indexShare;
    J idx;
    idx["source"] = indexShareSourceName(m.source);
    idx["full"] = intList(m.full);
    idx["shared"] = intList(m.shared);
    idx["mismatches"] = stringList(m.mismatches);
    if (!m.atomDiffers.empty()) {
        idx["atom_full"] = intList(m.atomFull);
        idx["atom_differs"] = intList(m.atomDiffers);
    }
    r["indexer"] = idx;

    J quantization;
    quantization["method"] =
        ckpt.config.quantization.method.empty() ? J() : J(ckpt.config.quantization.method);
    J formats = J::object();
    for (const auto &row : a.quantLayout)
        if (!row.format.empty()) formats[std::string(categoryName(row.category))] = row.format;
    quantization["formats"] = formats;
    J bpw = J::object();
    for (const auto &row : a.quantLayout)
        if (row.bitsPerWeight() > 0) bpw[std::string(categoryName(row.category))] = std::round(row.bitsPerWeight() * 1000) / 1000;
    quantization["bits_per_weight"] = bpw;
    quantization["bits_per_weight_overall"] = std::round(bitsPerWeight(a.quantLayout) * 1000) / 1000;
    // What the files declare of the routed experts and of ModelOpt / MLX packing, apart from the method.
    if (const auto &q = ckpt.config.quantization; !q.expertFormat.empty())
        quantization["experts_declared"] = {{"format", q.expertFormat}, {"from", q.expertFormatFrom}};
    if (const auto &q = ckpt.config.quantization; !q.modelOptAlgo.empty() || !q.modelOptKvCacheAlgo.empty())
        quantization["hf_quant_config"] = {{"quant_algo", q.modelOptAlgo.empty() ? J() : J(q.modelOptAlgo)},
                                           {"group_size", q.modelOptGroupSize ? J(q.modelOptGroupSize) : J()},
                                           {"kv_cache_quant_algo",
                                            q.modelOptKvCacheAlgo.empty() ? J() : J(q.modelOptKvCacheAlgo)}};
    if (const auto &q = ckpt.config.quantization; q.mlxBits)
        quantization["mlx"] = {{"bits", q.mlxBits}, {"group_size", q.mlxGroupSize}, {"modules_overridden", q.mlxModuleBits.size()}};
    r["quantization"] = quantization;

    if (c.available) {
        J cache;
        cache["preset"] = cachePresetName(c.preset);
        cache["kv_dtype"] = kvDtypeName(c.kvDtype);
        if (c.preset == CachePreset::LlamaCpp) {
            cache["cache_type_k"] = llamaCacheTypeName(c.llamaCacheTypeK);
            cache["cache_type_v"] = c.mla() ? J() : J(llamaCacheTypeName(c.llamaCacheTypeV)); // MLA: V is a view of K
        }
        cache["index_entry_bytes"] = c.indexEntryBytes;
        // DeepSeek-V4's rows hold both (cache.layers[] has them per kind): no split to give.
        cache["kv_bytes_per_token"] = c.layoutNote.empty() ? J(c.kvBytesPerToken) : J();
        cache["index_bytes_per_token"] = c.layoutNote.empty() ? J(c.indexBytesPerToken) : J();
        // What grows per token at long context; layers with a window apart (they stop at it).
        cache["bytes_per_token"] = exactNumber(c.bytesPerTokenExact, c.bytesPerToken);
        cache["window_bytes_per_token"] =
            c.windowBytesPerToken == std::floor(c.windowBytesPerToken)
                ? J(static_cast<std::uint64_t>(c.windowBytesPerToken))
                : J(c.windowBytesPerToken);
        cache["window_bytes"] = c.windowBytes;
        cache["state_dtype"] = stateDtypeName(c.stateDtype);
        if (!c.layoutNote.empty()) cache["layout"] = c.layoutNote;
        cache["index_bytes_per_token_every_layer"] = c.indexBytesPerTokenEveryLayer;
        cache["context_tokens"] = c.contextTokens;
        cache["total_bytes"] = c.totalBytes;
        cache["sparse_read_tokens"] = c.sparseReadTokens;
        J layers = J::array();
        for (const auto &g : c.attention)
            layers.push_back(
                {{"kind", attentionKindName(g.kind)},
                 {"layers", g.layers},
                 {"bytes_per_token",
                  g.compression > 1 ? exactNumber(g.bytesPerToken(), g.bytesPerTokenPerLayer / g.compression)
                                    : J(g.bytesPerTokenPerLayer)},
                 {"row_bytes", g.bytesPerTokenPerLayer},
                 {"compression", g.compression},
                 {"window", g.window                                ? J(*g.window)
                            : g.kind == AttentionKind::Window ||
                                    g.kind == AttentionKind::CompressedSparse ||
                                    g.kind == AttentionKind::HeavilyCompressed
                                ? J(ckpt.config.slidingWindow.value_or(128))
                                : J()},
                 {"state_bytes_per_layer", g.stateBytesPerLayer ? J(*g.stateBytesPerLayer) : J()},
                 {"state_dtype", g.stateDtype.empty() ? J() : J(g.stateDtype)},
                 {"note", g.note}});
        cache["layers"] = layers;
        cache["fixed_state_bytes"] = c.fixedStateBytes ? J(*c.fixedStateBytes) : J();
        r["cache"] = cache;
    } else {
        r["cache"] = J();
    }
    auto warnings = ckpt.warnings;
    warnings.insert(warnings.end(), a.warnings.begin(), a.warnings.end());
    r["warnings"] = stringList(warnings);
    r["explain"] = explanationsJson(explainReport(ckpt.config, a, c));
    return r;
}

nlohmann::ordered_json explanationsJson(const Explanations &explanations)
{
    using J = nlohmann::ordered_json;
    J out = J::object();
    for (const auto &[path, w] : explanations) {
        J terms = J::array();
        for (const auto &t : w.terms)
            terms.push_back({{"factor", t.factor}, {"from", t.from}});
        out[path] = {{"expression", w.expression}, {"terms", std::move(terms)}};
    }
    return out;
}

std::string formatExplanations(const Explanations &explanations)
{
    std::string o;
    for (const auto &[path, w] : explanations) {
        o += path + " = " + w.expression + "\n";
        for (const auto &t : w.terms)
            o += "    " + t.factor + "  " + t.from + "\n";
    }
    return o;
}

std::string formatSummary(const Checkpoint &ckpt, const CheckpointAnalysis &a, const CacheBudget &c)
{
    const CLocaleScope cLocale; // printf-style columns below: never the user's decimal comma
    std::ostringstream o;
    const ParameterBudget &b = a.budget;
    if (ckpt.synthetic())
        o << "SYNTHETIC checkpoint written by ckpt-atlas (header-faithful layout, no real weights)\n";
    o << "Source      " << sourceKindName(ckpt.source.kind) << "  " << ckpt.source.location << "\n";
    if (!ckpt.source.commit.empty()) o << "Commit      " << ckpt.source.commit << "\n";
    o << "Model       " << (ckpt.config.modelType.empty() ? "(unknown type)" : ckpt.config.modelType);
    for (const auto &arch : ckpt.config.architectures)
        o << "  " << arch;
    if (ckpt.format == CheckpointFormat::Gguf) o << "  (GGUF, llama.cpp architecture " << ckpt.ggufArchitecture << ")";
    o << "\n";
    o << "Files       " << ckpt.shards.size()
      << (ckpt.format == CheckpointFormat::Gguf ? (ckpt.shards.size() == 1 ? " GGUF file, " : " GGUF files, ") : " shards, ")
      << groupDigits(ckpt.tensorCount())
      << " tensors, " << groupDigits(ckpt.tensorBytes()) << " bytes of tensor data ("
      << binaryBytes(ckpt.tensorBytes()) << "), headers " << groupDigits(ckpt.headerBytes()) << " bytes\n";

    std::size_t dense = 0, moe = 0, mtp = 0;
    for (const auto &l : a.layers)
        if (l.kind == LayerKind::Mtp || l.onDisk()) (l.kind == LayerKind::Dense ? dense : l.kind == LayerKind::Moe ? moe : mtp)++;
    o << "Layers      " << a.mainLayers << " main (" << dense << " dense, " << moe << " MoE";
    if (!a.layersWithoutTensors.empty()) o << ", " << a.layersWithoutTensors.size() << " without tensors on disk";
    o << ") + " << mtp << " MTP\n\n";

    o << "Parameters  " << groupDigits(b.total) << " (" << shortCount(b.total) << ")";
    if (const std::uint64_t mtp = b.byCategory[static_cast<std::size_t>(Category::Mtp)])
        o << ", " << shortCount(b.total - mtp) << " without the MTP layers";
    o << "\n";
    o << "Active      ";
    if (b.activatedPerToken)
        o << groupDigits(*b.activatedPerToken) << " per token (" << shortCount(*b.activatedPerToken) << ")";
    else
        o << "unknown";
    o << "  [" << b.activationNote << "]\n\n";

    char line[200];
    std::snprintf(line, sizeof line, "  %-16s %22s %8s %22s\n", "category", "parameters", "share", "active");
    o << line;
    for (std::size_t i = 0; i < kCategoryCount; ++i) {
        if (b.byCategory[i] == 0) continue;
        std::snprintf(
            line, sizeof line, "  %-16s %22s %7.2f%% %22s\n",
            std::string(categoryName(static_cast<Category>(i))).c_str(), groupDigits(b.byCategory[i]).c_str(),
            100.0 * static_cast<double>(b.byCategory[i]) / static_cast<double>(b.total ? b.total : 1),
            groupDigits(b.activeByCategory[i]).c_str());
        o << line;
    }
    o << "  quantization scales (not parameters): " << groupDigits(b.quantScales.tensors) << " tensors, "
      << groupDigits(b.quantScales.elements) << " elements, " << groupDigits(b.quantScales.bytes)
      << " bytes\n";
    if (const auto hi = static_cast<std::size_t>(Category::HostTables); b.byCategory[hi])
        o << "  host tables: " << groupDigits(b.byCategory[hi]) << " parameters in " << a.hostTables.size()
          << " tensors, " << binaryBytes(a.hostTableBytes) << " kept in host memory, not on a GPU; "
          << groupDigits(b.activeByCategory[hi]) << " read per token\n";
    if (!b.otherTensors.empty()) {
        o << "  'other' holds " << b.otherTensors.size() << " tensors:";
        for (std::size_t i = 0; i < b.otherTensors.size() && i < 8; ++i)
            o << " " << b.otherTensors[i];
        if (b.otherTensors.size() > 8) o << " ...";
        o << "\n";
    }
    o << "\nQuantization layout\n";
    for (const auto &row : a.quantLayout) {
        o << "  " << categoryName(row.category) << ": " << row.format << " · " << fixedPoint(row.bitsPerWeight(), 2)
          << " bits/weight ·";
        for (const auto &[d, t] : row.dtypes)
            o << " " << d << " " << shortCount(t.elements);
        if (row.scales.tensors) o << "  + " << row.scales.tensors << " scale tensors";
        o << "\n";
    }

    const IndexShareMap &m = a.indexShare;
    o << "\nIndexShare  source: " << indexShareSourceName(m.source) << ", " << m.full.size() << " full, "
      << m.shared.size() << " shared\n";
    if (!m.full.empty()) {
        o << "  full layers:";
        for (int i : m.full)
            o << " " << i;
        o << "\n";
    }
    if (!m.atomDiffers.empty()) {
        o << "  ATOM's fallback (offset + 1) differs at layers:";
        for (int i : m.atomDiffers)
            o << " " << i;
        o << "\n";
    }
    for (const auto &mm : m.mismatches)
        o << "  MISMATCH " << mm << "\n";

    o << "\nCache";
    if (!c.available) {
        o << "       " << c.reason << "\n";
    } else {
        if (c.preset == CachePreset::LlamaCpp)
            o << "       " << cacheShortWords(c);
        else
            o << "       " << kvDtypeName(c.kvDtype) << " KV";
        if (c.indexLayers > 0 && c.preset != CachePreset::LlamaCpp) o << ", " << c.indexEntryBytes << "-byte index entries";
        const std::string described = c.layoutNote.empty() ? std::string(cachePresetDescription(c.preset)) : c.layoutNote;
        o << "\n  preset      "
          << (described.starts_with(std::string(cachePresetName(c.preset)) + ":") ? described
                                                                                 : std::string(cachePresetName(c.preset)) + ": " + described)
          << "\n";
        o << "  state       " << stateDtypeName(c.stateDtype)
          << " recurrent and compressor states (convolution windows BF16)\n";
        for (const auto &g : c.attention) {
            char kind[32];
            std::snprintf(kind, sizeof kind, "  %-19s ", std::string(attentionKindName(g.kind)).c_str());
            o << kind << g.layers << " layers";
            if (g.bytesPerTokenPerLayer)
                o << ", "
                  << (g.bytesPerTokenPerLayer % g.compression == 0
                          ? groupDigits(g.bytesPerTokenPerLayer / g.compression)
                          : fixedPoint(g.bytesPerToken(), 4))
                  << " B/token each"
                  << (g.window ? " up to " + groupDigits(*g.window) + " tokens" : std::string());
            if (g.stateBytesPerLayer) o << ", " << groupDigits(*g.stateBytesPerLayer) << " B per sequence each";
            if (!g.bytesPerTokenPerLayer && !g.stateBytesPerLayer) o << ", state size unknown";
            if (!g.note.empty()) o << "  (" << g.note << ")";
            o << "\n";
        }
        if (std::any_of(c.attention.begin(), c.attention.end(),
                        [](const AttentionLayers &g) { return g.kind == AttentionKind::IndexKeys; }))
            o << "  index keys  " << groupDigits(c.indexBytesPerToken)
              << " B/token (every layer indexed: " << groupDigits(c.indexBytesPerTokenEveryLayer) << ")\n";
        if (c.fixedStateBytes)
            o << "  per sequence " << groupDigits(*c.fixedStateBytes) << " B (" << binaryBytes(*c.fixedStateBytes)
              << ") whatever the context\n";
        if (c.windowBytes)
            o << "  windows     " << groupDigits(c.windowBytes) << " B (" << binaryBytes(c.windowBytes)
              << ") per sequence once full, growing " << fixedPointOrWhole(c.windowBytesPerToken)
              << " B/token until then\n";
        o << "  total       " << (c.bytesPerTokenExact == double(c.bytesPerToken)
                                         ? groupDigits(c.bytesPerToken)
                                         : fixedPoint(c.bytesPerTokenExact, 4))
          << " B/token" << (c.windowBytes ? " at long context" : "")
          << (c.fixedStateBytes ? " + the state per sequence" : "")
          << (c.windowBytes ? " + the windows" : "") << "; at " << groupDigits(c.contextTokens)
          << " tokens: " << groupDigits(c.totalBytes) << " B (" << binaryBytes(c.totalBytes) << ")\n";
        if (c.indexTopk)
            o << "  sparse read " << groupDigits(c.sparseReadTokens) << " of " << groupDigits(c.contextTokens)
              << " entries per query\n";
    }
    auto warnings = ckpt.warnings;
    warnings.insert(warnings.end(), a.warnings.begin(), a.warnings.end());
    for (const auto &w : warnings)
        o << "WARNING " << w << "\n";
    return o.str();
}

std::vector<std::string> checkExpectations(const nlohmann::ordered_json &report,
                                           const std::vector<std::string> &expressions)
{
    std::vector<std::string> failures;
    for (const auto &expr : expressions) {
        const auto eq = expr.find('=');
        if (eq == std::string::npos || eq == 0) {
            failures.push_back("expect " + expr + ": not of the form PATH=VALUE");
            continue;
        }
        const std::string path = expr.substr(0, eq);
        const std::string want = expr.substr(eq + 1);
        const nlohmann::ordered_json *node = &report;
        std::string walked;
        bool found = true;
        std::size_t start = 0;
        while (start <= path.size()) {
            std::size_t dot = path.find('.', start);
            if (dot == std::string::npos) dot = path.size();
            const std::string part = path.substr(start, dot - start);
            if (node->is_object() && node->contains(part)) {
                node = &(*node)[part];
            } else if (node->is_array()) {
                std::size_t idx = 0;
                auto res = std::from_chars(part.data(), part.data() + part.size(), idx);
                if (res.ec != std::errc() || res.ptr != part.data() + part.size() || idx >= node->size()) {
                    found = false;
                    break;
                }
                node = &(*node)[idx];
            } else {
                found = false;
                break;
            }
            start = dot + 1;
        }
        if (!found) {
            failures.push_back("expect " + path + "=" + want + ": the report has no such path");
            continue;
        }
        bool ok;
        std::string got;
        if (node->is_string()) {
            got = node->get<std::string>();
            ok = got == want;
        } else if (node->is_number_float()) {
            got = node->dump();
            char *endp = nullptr;
            const double w = std::strtod(want.c_str(), &endp);
            const double g = node->get<double>();
            ok = endp && *endp == '\0' && !want.empty() &&
                 std::fabs(w - g) <= 1e-9 * std::max(1.0, std::fabs(g));
        } else {
            got = node->dump();
            ok = got == want;
        }
        if (!ok) failures.push_back("expect " + path + "=" + want + ": the report says " + got);
    }
    return failures;
}

std::string headerFingerprint(const Checkpoint &ckpt)
{
    std::uint64_t h = 0x9E3779B97F4A7C15ULL;
    const auto mix = [&h](std::uint64_t v) {
        h ^= v + 0x9E3779B97F4A7C15ULL + (h << 6) + (h >> 2);
        h *= 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
    };
    const auto ends = [](std::string_view s) {
        std::uint64_t a = 0, b = 0;
        std::memcpy(&a, s.data(), std::min<std::size_t>(8, s.size()));
        if (s.size() > 8) std::memcpy(&b, s.data() + s.size() - std::min<std::size_t>(8, s.size() - 8), std::min<std::size_t>(8, s.size() - 8));
        return a * 31 + b;
    };
    for (const auto &shard : ckpt.shards) {
        std::uint64_t file = 0xcbf29ce484222325ULL; // FNV-1a: the same on every standard library
        for (const char ch : shard.file)
            file = (file ^ static_cast<unsigned char>(ch)) * 0x100000001b3ULL;
        mix(file);
        mix(shard.headerLength);
        for (const auto &t : shard.tensors) {
            mix(t.name.size() ^ (ends(t.name) << 1));
            mix(static_cast<std::uint64_t>(t.dtype) | (std::uint64_t(t.shape.size()) << 8));
            for (const auto d : t.shape)
                mix(d);
            mix(t.begin);
            mix(t.end);
        }
    }
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
    return std::string(out, 12);
}

std::string provenanceCaption(const Checkpoint &ckpt, const std::string &version, const std::string &date)
{
    std::string location = ckpt.source.location;
    // The model's name: the repository for the Hub, else the folder or URL's last part.
    std::string name = location;
    while (!name.empty() && name.back() == '/')
        name.pop_back();
    if (const auto slash = name.rfind('/'); slash != std::string::npos && ckpt.source.kind != SourceKind::Hub)
        name = name.substr(slash + 1);
    std::string out = ckpt.config.modelType.empty() ? std::string("unknown model type") : ckpt.config.modelType;
    if (!name.empty()) out += " · " + name;
    // A local folder is cited by its name and its headers' fingerprint, never its path on this machine.
    if (ckpt.source.kind == SourceKind::Local)
        out += " · local folder, headers " + headerFingerprint(ckpt);
    else
        out += " · " + std::string(sourceKindName(ckpt.source.kind)) + " " + location;
    if (!ckpt.source.revision.empty()) out += " @" + ckpt.source.revision;
    if (!ckpt.source.commit.empty()) out += " (" + ckpt.source.commit.substr(0, 7) + ")";
    if (ckpt.synthetic()) out += " · synthetic";
    out += " · Checkpoint Atlas " + version + " · " + date;
    return out;
}

} // namespace atlas
