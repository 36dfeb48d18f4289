#include "diff.h"

#include "gguf_names.h"
#include "errors.h"
#include "c_locale.h"

#include "report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>

namespace atlas {

namespace {

std::string shapeText(std::span<const std::uint64_t> shape)
{
    std::string s = "[";
    for (std::size_t i = 0; i < shape.size(); ++i)
        s += (i ? "," : "") + std::to_string(shape[i]);
    return s + "]";
}

std::string describe(const TensorInfo &t)
{
    return std::string(dtypeName(t.dtype)) + " " + shapeText(t.shape);
}

bool isNumber(std::string_view s)
{
    return !s.empty() && s.size() <= 18 && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::vector<std::string_view> segments(std::string_view name)
{
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (true) {
        const auto dot = name.find('.', start);
        out.push_back(name.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start));
        if (dot == std::string_view::npos) break;
        start = dot + 1;
    }
    return out;
}

// Groups of changed tensors under construction: the numbers seen at each numeric place of a template.
// A key that tells segment lists apart exactly: each literal segment with its length (names may hold
// empty segments, '#', '.' runs or control bytes; "model..norm" must not meet "model.#.norm").
void appendKeyPart(std::string &key, std::string_view part)
{
    key += std::to_string(part.size());
    key += ':';
    key += part;
}

struct GroupBuilder
{
    std::vector<std::string> parts; // the name's segments (what stands at numeric places is unused)
    std::vector<char> numeric;      // per segment: a number, whose values are in numbers
    TensorChange change;
    std::string a, b;
    std::vector<std::set<std::uint64_t>> numbers;
    std::uint64_t tensors = 0;
};

// The pattern with its module segment (the one before the last) as a wildcard, and the change.
std::string restKey(const std::vector<std::string> &parts, const TensorGroup &g)
{
    std::string key;
    for (std::size_t k = 0; k < parts.size(); ++k)
        k + 2 == parts.size() ? void(key += "*") : appendKeyPart(key, parts[k]);
    key += '|';
    appendKeyPart(key, tensorChangeName(g.change));
    appendKeyPart(key, g.a);
    appendKeyPart(key, g.b);
    return key;
}

class Grouper
{
public:
    void add(std::string_view name, TensorChange change, const std::string &a, const std::string &b)
    {
        const auto segs = segments(name);
        std::string key;
        std::vector<std::uint64_t> nums;
        for (auto s : segs) {
            if (isNumber(s)) {
                key += "#";
                nums.push_back(std::stoull(std::string(s)));
            } else {
                appendKeyPart(key, s);
            }
        }
        key += '|';
        appendKeyPart(key, tensorChangeName(change));
        appendKeyPart(key, a);
        appendKeyPart(key, b);
        auto [it, fresh] = m_groups.try_emplace(key);
        GroupBuilder &g = it->second;
        if (fresh) {
            for (auto s : segs) {
                g.parts.push_back(isNumber(s) ? std::string() : std::string(s));
                g.numeric.push_back(isNumber(s));
            }
            g.change = change;
            g.a = a;
            g.b = b;
            g.numbers.resize(nums.size());
            m_order.push_back(key);
        }
        for (std::size_t i = 0; i < nums.size(); ++i)
            g.numbers[i].insert(nums[i]);
        ++g.tensors;
    }

    std::vector<TensorGroup> take()
    {
        // Patterns first, then groups that differ only in the module name ("gate_proj", "up_proj") with the
        // same numbers and the same change merged into one line.
        struct Built
        {
            std::vector<std::string> parts;
            TensorGroup group;
        };
        std::vector<Built> built;
        for (const auto &key : m_order) {
            const GroupBuilder &g = m_groups.at(key);
            Built out;
            std::size_t n = 0;
            for (std::size_t k = 0; k < g.parts.size(); ++k) {
                if (!g.numeric[k]) {
                    out.parts.push_back(g.parts[k]);
                    continue;
                }
                const auto &set = g.numbers[n++];
                const std::vector<std::uint64_t> v(set.begin(), set.end());
                out.parts.push_back(v.size() == 1 ? std::to_string(v.front()) : "{" + collapseNumbers(v) + "}");
            }
            out.group.change = g.change;
            out.group.a = g.a;
            out.group.b = g.b;
            out.group.tensors = g.tensors;
            built.push_back(std::move(out));
        }
        std::map<std::string, std::vector<std::size_t>> byRest; // pattern without its module segment
        for (std::size_t i = 0; i < built.size(); ++i) {
            const auto &parts = built[i].parts;
            if (parts.size() < 2) continue;
            byRest[restKey(parts, built[i].group)].push_back(i);
        }
        std::vector<char> merged(built.size(), 0);
        std::vector<TensorGroup> out;
        for (std::size_t i = 0; i < built.size(); ++i) {
            if (merged[i]) continue;
            auto &parts = built[i].parts;
            TensorGroup g = built[i].group;
            std::vector<std::string> modules{parts.size() >= 2 ? parts[parts.size() - 2] : std::string()};
            if (parts.size() >= 2) {
                for (std::size_t j : byRest[restKey(parts, g)])
                    if (j != i && !merged[j]) {
                        merged[j] = 1;
                        modules.push_back(built[j].parts[parts.size() - 2]);
                        g.tensors += built[j].group.tensors;
                    }
            }
            for (std::size_t k = 0; k < parts.size(); ++k) {
                std::string p = parts[k];
                if (k + 2 == parts.size() && modules.size() > 1) {
                    p = "{";
                    for (std::size_t m = 0; m < modules.size(); ++m)
                        p += (m ? "," : "") + modules[m];
                    p += "}";
                }
                g.pattern += (k ? "." : "") + p;
            }
            out.push_back(std::move(g));
        }
        std::stable_sort(out.begin(), out.end(),
                         [](const TensorGroup &x, const TensorGroup &y) { return x.tensors > y.tensors; });
        return out;
    }

private:
    std::unordered_map<std::string, GroupBuilder> m_groups;
    std::vector<std::string> m_order;
};

std::string jsonShort(const nlohmann::json &v)
{
    std::string s = v.dump();
    if (s.size() > 60) s = s.substr(0, 57) + "...";
    return s;
}

// Pads to `width` characters as shown (UTF-8 code points, so "→" counts once).
std::string padRight(std::string s, std::size_t width)
{
    std::size_t shown = 0;
    for (unsigned char c : s)
        shown += (c & 0xC0) != 0x80;
    if (shown < width) s.append(width - shown, ' ');
    return s;
}

} // namespace

bool precisionLost(std::string_view a, std::string_view b)
{
    // F32 stored before, a 16-bit float after (the dtype leads each description).
    return a.starts_with("F32") && (b.starts_with("BF16") || b.starts_with("F16"));
}

std::string_view tensorChangeName(TensorChange c)
{
    switch (c) {
    case TensorChange::Added:
        return "added";
    case TensorChange::Removed:
        return "removed";
    case TensorChange::Dtype:
        return "dtype";
    case TensorChange::Shape:
        return "shape";
    }
    return "";
}

std::string collapseNumbers(const std::vector<std::uint64_t> &v)
{
    std::string out;
    for (std::size_t i = 0; i < v.size();) {
        std::size_t j = i;
        while (j + 1 < v.size() && v[j + 1] == v[j] + 1)
            ++j;
        out += (out.empty() ? "" : ",") + std::to_string(v[i]);
        if (j > i) out += (j == i + 1 ? "," : "..") + std::to_string(v[j]);
        i = j + 1;
    }
    return out;
}

namespace {

// Safetensors against GGUF: every safetensors tensor (scales apart) to the GGUF names the converter gives it;
// a GGUF tensor with an origin compares its type with the origin's, one without is added; an origin none of
// whose GGUF names is present is absent, grouped by category and layer.
void diffAcrossFormats(const LoadedCheckpoint &A, const LoadedCheckpoint &B, CheckpointDiff &d, const std::atomic<bool> *cancel)
{
    const bool aIsGguf = A.checkpoint.format == CheckpointFormat::Gguf;
    const LoadedCheckpoint &S = aIsGguf ? B : A, &G = aIsGguf ? A : B;
    std::unordered_map<std::string_view, const TensorInfo *> inG;
    for (const auto &s : G.checkpoint.shards)
        for (const auto &t : s.tensors)
            inG.emplace(t.name, &t);
    // Per GGUF tensor: the dtypes of its origins ("F8_E4M3", or "F8_E4M3 + BF16" when they differ).
    std::unordered_map<std::string_view, std::set<std::string>> origins;
    // By (side that lacks it, category, layer): tensors, parameters.
    std::map<std::tuple<char, Category, int>, std::pair<std::uint64_t, std::uint64_t>> absent;
    const char sMissing = aIsGguf ? 'a' : 'b', gMissing = aIsGguf ? 'b' : 'a'; // what the GGUF lacks is missing from its side
    Grouper grouper;
    for (const auto &s : S.checkpoint.shards) {
        stopIfCancelled(cancel);
        for (const auto &t : s.tensors) {
            if (isQuantScale(t.name, t.dtype)) {
                ++d.scalesFolded;
                continue;
            }
            bool found = false;
            for (const std::string &g : ggufNamesOf(t.name))
                if (const auto it = inG.find(g); it != inG.end()) {
                    origins[it->first].insert(std::string(dtypeName(t.dtype)));
                    found = true;
                }
            if (found) continue;
            const int layer = S.analysis.layerOf(t.name);
            const bool mtp = layer >= S.analysis.mainLayers;
            auto &slot = absent[{sMissing, categorize(t.name, layer, mtp), layer}];
            ++slot.first;
            slot.second += S.analysis.parametersOf(t);
            if (aIsGguf) {
                ++d.added;
                grouper.add(t.name, TensorChange::Added, "", describe(t));
            } else {
                ++d.removed;
                grouper.add(t.name, TensorChange::Removed, describe(t), "");
            }
        }
    }
    for (const auto &s : G.checkpoint.shards)
        for (const auto &t : s.tensors) {
            const auto it = origins.find(t.name);
            const std::string gType(dtypeName(t.dtype));
            if (it == origins.end()) {
                const int layer = G.analysis.layerOf(t.name);
                auto &slot = absent[{gMissing, categorize(t.name, layer, layer >= G.analysis.mainLayers), layer}];
                ++slot.first;
                slot.second += G.analysis.parametersOf(t);
                if (aIsGguf) {
                    ++d.removed;
                    grouper.add(t.name, TensorChange::Removed, describe(t), "");
                } else {
                    ++d.added;
                    grouper.add(t.name, TensorChange::Added, "", describe(t));
                }
                continue;
            }
            std::string from;
            for (const auto &o : it->second)
                from += (from.empty() ? "" : " + ") + o;
            if (from == gType) {
                ++d.same;
                continue;
            }
            ++d.dtypeChanged;
            grouper.add(t.name, TensorChange::Dtype, aIsGguf ? gType : from, aIsGguf ? from : gType);
        }
    d.groups = grouper.take();
    // Absent parts by category, their layers collected.
    std::map<std::pair<char, Category>, CheckpointDiff::Absent> byCategory;
    for (const auto &[key, counts] : absent) {
        const auto &[missing, category, layer] = key;
        auto &row = byCategory[{missing, category}];
        row.category = category;
        row.missingFrom = missing;
        row.layers.push_back(layer);
        row.tensors += counts.first;
        row.parameters += counts.second;
    }
    for (auto &[c, row] : byCategory)
        d.absent.push_back(std::move(row));
}

} // namespace

CheckpointDiff diffCheckpoints(const LoadedCheckpoint &A, const LoadedCheckpoint &B, const BiasAudit *biasesA,
                               const BiasAudit *biasesB, const std::atomic<bool> *cancel)
{
    CheckpointDiff d;
    d.a = A.checkpoint.source;
    d.b = B.checkpoint.source;

    // config.json, top-level keys.
    const nlohmann::json &ca = A.checkpoint.config.raw, &cb = B.checkpoint.config.raw;
    if (ca.is_object() && cb.is_object()) {
        for (const auto &[k, v] : ca.items()) {
            const auto it = cb.find(k);
            if (it == cb.end())
                d.configRemoved[k] = v;
            else if (*it != v)
                d.configChanged[k] = {{"a", v}, {"b", *it}};
        }
        for (const auto &[k, v] : cb.items())
            if (!ca.contains(k)) d.configAdded[k] = v;
    }

    d.acrossFormats = A.checkpoint.format != B.checkpoint.format;
    if (d.acrossFormats) {
        // Only the keys both sides carry: a GGUF's metadata holds what its converter wrote, not config.json.
        d.configAdded = nlohmann::ordered_json::object();
        d.configRemoved = nlohmann::ordered_json::object();
        diffAcrossFormats(A, B, d, cancel);
    }
    // Tensors: names partitioned.
    std::unordered_map<std::string_view, const TensorInfo *> inA;
    for (const auto &s : A.checkpoint.shards) {
        stopIfCancelled(cancel);
        for (const auto &t : s.tensors)
            inA.emplace(t.name, &t);
    }
    Grouper grouper;
    std::unordered_map<std::string_view, char> seen;
    for (const auto &s : B.checkpoint.shards)
        for (const auto &t : s.tensors) {
            if (d.acrossFormats) break; // matched by diffAcrossFormats
            if (&t == &s.tensors.front()) stopIfCancelled(cancel); // once per shard
            const auto it = inA.find(t.name);
            if (it == inA.end()) {
                ++d.added;
                grouper.add(t.name, TensorChange::Added, "", describe(t));
                continue;
            }
            seen.emplace(t.name, 1);
            const TensorInfo &x = *it->second;
            if (x.dtype != t.dtype) {
                ++d.dtypeChanged;
                grouper.add(t.name, TensorChange::Dtype, describe(x), describe(t));
            } else if (x.shape != t.shape) {
                ++d.shapeChanged;
                grouper.add(t.name, TensorChange::Shape, describe(x), describe(t));
            } else {
                ++d.same;
            }
        }
    for (const auto &s : A.checkpoint.shards) {
        stopIfCancelled(cancel);
        if (d.acrossFormats) break;
        for (const auto &t : s.tensors)
            if (!seen.count(t.name)) {
                ++d.removed;
                grouper.add(t.name, TensorChange::Removed, describe(t), "");
            }
    }
    if (!d.acrossFormats) d.groups = grouper.take();

    // Parameters, bytes and formats by category.
    auto side = [&d](const LoadedCheckpoint &l, std::uint64_t &total, std::optional<std::uint64_t> &active,
                   std::array<std::uint64_t, kCategoryCount> &byCategory, std::array<std::uint64_t, kCategoryCount> &bytes,
                   std::array<std::string, kCategoryCount> &format, std::vector<int> &full,
                   std::uint64_t &cachePerToken) {
        total = l.analysis.budget.total;
        active = l.analysis.budget.activatedPerToken;
        byCategory = l.analysis.budget.byCategory;
        for (const auto &row : l.analysis.quantLayout) {
            const auto c = static_cast<std::size_t>(row.category);
            format[c] = row.format;
            (&format == &d.aFormat ? d.aBitsPerWeight : d.bBitsPerWeight)[c] = row.bitsPerWeight();
            std::uint64_t b = row.scales.bytes;
            for (const auto &[dtype, tally] : row.dtypes)
                b += tally.bytes;
            bytes[c] = b;
        }
        // Hash routing's tables are stored with the router though they are no parameters: the stored
        // size counts every byte, as the Overview's tensor data does.
        bytes[static_cast<std::size_t>(Category::Router)] += l.analysis.budget.routerTables.bytes;
        full = l.analysis.indexShare.full;
        cachePerToken = l.cache.available ? l.cache.bytesPerToken : 0;
    };
    side(A, d.aParameters, d.aActive, d.aByCategory, d.aBytes, d.aFormat, d.aFull, d.aCacheBytesPerToken);
    side(B, d.bParameters, d.bActive, d.bByCategory, d.bBytes, d.bFormat, d.bFull, d.bCacheBytesPerToken);

    // Biases, byte for byte.
    if (biasesA && biasesB) {
        d.biasesCompared = true;
        d.biases = compareBiases(*biasesA, *biasesB, d.acrossFormats);
    }
    return d;
}

std::vector<BiasComparison> compareBiases(const BiasAudit &a, const BiasAudit &b, bool byLayer)
{
    std::map<std::string, BiasComparison> rows;
    auto row = [&rows, byLayer](const BiasStats &s) -> BiasComparison & {
        // Across namings the layer pairs them (model.layers.3.mlp.gate.e_score_correction_bias, blk.3.exp_probs_b.bias).
        char key[24];
        std::snprintf(key, sizeof key, "%012d", s.layer);
        auto &r = rows[byLayer ? std::string(key) : s.tensor];
        r.layer = s.layer;
        if (r.tensor.empty()) r.tensor = s.tensor;
        return r;
    };
    auto side = [](const BiasStats &s) { return BiasComparison::Side{true, s.dtype, s.bf16Distinct, s.sha256}; };
    for (const auto &s : a.stats)
        row(s).a = side(s);
    for (const auto &s : b.stats)
        row(s).b = side(s);
    std::vector<BiasComparison> out;
    for (auto &[name, r] : rows) {
        r.sameBytes = r.a.present && r.b.present && r.a.sha256 == r.b.sha256 && r.a.dtype == r.b.dtype;
        out.push_back(r);
    }
    std::sort(out.begin(), out.end(), [](const auto &x, const auto &y) {
        return x.layer != y.layer ? x.layer < y.layer : x.tensor < y.tensor;
    });
    return out;
}

nlohmann::ordered_json diffJson(const CheckpointDiff &d)
{
    using J = nlohmann::ordered_json;
    auto source = [](const SourceInfo &s) {
        return J{{"kind", sourceKindName(s.kind)},
                 {"location", s.location},
                 {"revision", s.revision.empty() ? J() : J(s.revision)},
                 {"commit", s.commit.empty() ? J() : J(s.commit)}};
    };
    J out;
    out["schema"] = "ckpt-atlas.diff/1";
    out["a"] = source(d.a);
    out["b"] = source(d.b);
    out["config"] = {{"added", d.configAdded}, {"removed", d.configRemoved}, {"changed", d.configChanged}};
    J groups = J::array();
    for (const auto &g : d.groups)
        groups.push_back({{"pattern", g.pattern},
                          {"change", tensorChangeName(g.change)},
                          {"a", g.a.empty() ? J() : J(g.a)},
                          {"b", g.b.empty() ? J() : J(g.b)},
                          {"tensors", g.tensors}});
    out["tensors"] = {{"same", d.same},
                      {"added", d.added},
                      {"removed", d.removed},
                      {"dtype_changed", d.dtypeChanged},
                      {"shape_changed", d.shapeChanged},
                      {"groups", groups}};
    J byCategory = J::object();
    for (std::size_t c = 0; c < kCategoryCount; ++c) {
        if (!d.aByCategory[c] && !d.bByCategory[c] && !d.aBytes[c] && !d.bBytes[c]) continue;
        byCategory[std::string(categoryName(static_cast<Category>(c)))] = {
            {"a", d.aByCategory[c]},
            {"b", d.bByCategory[c]},
            {"a_bytes", d.aBytes[c]},
            {"b_bytes", d.bBytes[c]},
            {"a_format", d.aFormat[c]},
            {"b_format", d.bFormat[c]},
            {"delta", static_cast<std::int64_t>(d.bByCategory[c] - d.aByCategory[c])},
            {"bytes_delta", static_cast<std::int64_t>(d.bBytes[c] - d.aBytes[c])},
            {"a_bits_per_weight", std::round(d.aBitsPerWeight[c] * 1000) / 1000},
            {"b_bits_per_weight", std::round(d.bBitsPerWeight[c] * 1000) / 1000}};
    }
    if (d.acrossFormats) {
        J absent = J::array();
        for (const auto &row : d.absent)
            absent.push_back({{"category", categoryName(row.category)},
                              {"missing_from", std::string(1, row.missingFrom)},
                              {"layers", row.layers},
                              {"tensors", row.tensors},
                              {"parameters", row.parameters}});
        out["across_formats"] = {{"scales_folded", d.scalesFolded}, {"absent", absent}};
    }
    out["parameters"] = {{"a", d.aParameters},
                         {"b", d.bParameters},
                         {"equal", d.parametersAgree()},
                         {"a_activated_per_token", d.aActive ? J(*d.aActive) : J()},
                         {"b_activated_per_token", d.bActive ? J(*d.bActive) : J()},
                         {"by_category", byCategory}};
    out["indexer"] = {{"a_full", d.aFull}, {"b_full", d.bFull}};
    out["cache"] = {{"a_bytes_per_token", d.aCacheBytesPerToken}, {"b_bytes_per_token", d.bCacheBytesPerToken}};
    if (d.biasesCompared) {
        J layers = J::array();
        for (const auto &r : d.biases)
            layers.push_back({{"layer", r.layer},
                              {"tensor", r.tensor},
                              {"same_bytes", r.sameBytes},
                              {"a_dtype", r.a.present ? J(r.a.dtype) : J()},
                              {"b_dtype", r.b.present ? J(r.b.dtype) : J()},
                              {"a_bf16_distinct", r.a.present ? J(r.a.bf16Distinct) : J()},
                              {"b_bf16_distinct", r.b.present ? J(r.b.bf16Distinct) : J()},
                              {"precision_lost", precisionLost(r.a.dtype, r.b.dtype)}});
        out["biases"] = {{"layers", layers}};
    }
    return out;
}

namespace {

// A key only one side has: an object's keys one by one (as paths), anything else whole.
void flattenOneSide(const std::string &path, const nlohmann::ordered_json &v, bool added,
                    std::vector<ConfigChange> &out, int depth)
{
    if (v.is_object() && !v.empty() && depth < 16) {
        for (const auto &[k, inner] : v.items())
            flattenOneSide(path + "." + k, inner, added, out, depth + 1);
        return;
    }
    if (added)
        out.push_back({path, "added", nullptr, v});
    else
        out.push_back({path, "removed", v, nullptr});
}

void flattenChange(const std::string &path, const nlohmann::ordered_json &a, const nlohmann::ordered_json &b,
                   std::vector<ConfigChange> &out, int depth)
{
    if (a.is_object() && b.is_object() && depth < 16) {
        for (const auto &[k, v] : a.items()) {
            const auto other = b.find(k);
            if (other == b.end())
                flattenOneSide(path + "." + k, v, false, out, depth + 1);
            else if (*other != v)
                flattenChange(path + "." + k, v, *other, out, depth + 1);
        }
        for (const auto &[k, v] : b.items())
            if (!a.contains(k)) flattenOneSide(path + "." + k, v, true, out, depth + 1);
        return;
    }
    out.push_back({path, "changed", a, b});
}

// What a config change reads as: the value added, the value removed, or "a → b".
std::string changeText(const ConfigChange &ch)
{
    if (ch.kind == "added") return jsonShort(ch.b);
    if (ch.kind == "removed") return jsonShort(ch.a);
    return jsonShort(ch.a) + " → " + jsonShort(ch.b);
}

std::string signedPercent(double fraction)
{
    const double pct = fraction * 100;
    return (pct < 0 ? "\u2212" : "+") + fixedPoint(std::fabs(pct), 1) + " %";
}

} // namespace

std::vector<ConfigChange> configChangesByPath(const CheckpointDiff &d)
{
    std::vector<ConfigChange> out;
    for (const auto &[k, v] : d.configAdded.items())
        flattenOneSide(k, v, true, out, 0);
    for (const auto &[k, v] : d.configRemoved.items())
        flattenOneSide(k, v, false, out, 0);
    for (const auto &[k, v] : d.configChanged.items())
        flattenChange(k, v["a"], v["b"], out, 0);
    return out;
}

std::vector<std::string> diffLeadSentences(const CheckpointDiff &d)
{
    const CLocaleScope cLocale;
    std::vector<std::string> out;
    const std::uint64_t aBytes = d.aStoredBytes(), bBytes = d.bStoredBytes();
    const std::string params = d.parametersAgree()
                                   ? "the same " + shortCount(d.aParameters) + " parameters (" + groupDigits(d.aParameters) + ")"
                                   : shortCount(d.aParameters) + " \u2192 " + shortCount(d.bParameters) + " parameters (" +
                                         signedPercent((double(d.bParameters) - double(d.aParameters)) /
                                                       double(std::max<std::uint64_t>(d.aParameters, 1))) + ")";
    if (aBytes != bBytes)
        out.push_back("Stored size " + binaryBytes(aBytes) + " \u2192 " + binaryBytes(bBytes) + " (" +
                      signedPercent((double(bBytes) - double(aBytes)) / double(std::max<std::uint64_t>(aBytes, 1))) +
                      ") for " + params + (d.parametersAgree() ? ": only the packing changed." : "."));
    else
        out.push_back("The same stored size (" + binaryBytes(aBytes) + ") for " + params + ".");
    // Formats by category, where they differ.
    std::vector<std::string> formats;
    for (std::size_t c = 0; c < kCategoryCount; ++c)
        if (d.aFormat[c] != d.bFormat[c] && (d.aByCategory[c] || d.bByCategory[c])) {
            std::string name(categoryName(static_cast<Category>(c)));
            std::replace(name.begin(), name.end(), '_', ' ');
            formats.push_back(name + " " + (d.aFormat[c].empty() ? "none" : d.aFormat[c]) + " \u2192 " +
                              (d.bFormat[c].empty() ? "none" : d.bFormat[c]));
        }
    if (!formats.empty()) {
        std::string s = "Formats: ";
        for (std::size_t i = 0; i < formats.size(); ++i)
            s += (i ? "; " : "") + formats[i];
        out.push_back(s + ".");
    }
    const auto config = configChangesByPath(d);
    if (!config.empty()) {
        std::string s = "Config: " + std::to_string(config.size()) + (config.size() == 1 ? " key" : " keys") + " (";
        for (std::size_t i = 0; i < config.size() && i < 4; ++i)
            s += (i ? ", " : "") + config[i].path;
        out.push_back(s + (config.size() > 4 ? ", \u2026)." : ")."));
    }
    if (d.aFull != d.bFull)
        out.push_back("Indexers: " + std::to_string(d.aFull.size()) + " \u2192 " + std::to_string(d.bFull.size()) +
                      " layers own one.");
    if (d.aCacheBytesPerToken != d.bCacheBytesPerToken)
        out.push_back("Cache: " + groupDigits(d.aCacheBytesPerToken) + " \u2192 " + groupDigits(d.bCacheBytesPerToken) +
                      " B per token.");
    if (!d.tensorsIdentical()) {
        std::string s = "Tensors: " + groupDigits(d.same) + " the same";
        if (d.dtypeChanged) s += ", " + groupDigits(d.dtypeChanged) + " with another dtype";
        if (d.shapeChanged) s += ", " + groupDigits(d.shapeChanged) + " with another shape";
        if (d.added) s += ", " + groupDigits(d.added) + " added";
        if (d.removed) s += ", " + groupDigits(d.removed) + " removed";
        if (d.acrossFormats)
            s += " (matched through llama.cpp's naming; " + groupDigits(d.scalesFolded) +
                 " block-scale tensors folded into the GGUF blocks)";
        out.push_back(s + ".");
    }
    if (d.acrossFormats) {
        std::string s = "Bits per weight: ";
        bool any = false;
        for (std::size_t c = 0; c < kCategoryCount; ++c) {
            if (!d.aBitsPerWeight[c] && !d.bBitsPerWeight[c]) continue;
            std::string name(categoryName(static_cast<Category>(c)));
            std::replace(name.begin(), name.end(), '_', ' ');
            s += (any ? "; " : "") + name + " " + fixedPoint(d.aBitsPerWeight[c], 2) + " \u2192 " + fixedPoint(d.bBitsPerWeight[c], 2);
            any = true;
        }
        if (any) out.push_back(s + ".");
    }
    for (const auto &row : d.absent)
        out.push_back(absentSentence(row));
    return out;
}

std::string absentSentence(const CheckpointDiff::Absent &row)
{
    std::string name(categoryName(row.category));
    std::replace(name.begin(), name.end(), '_', ' ');
    std::vector<std::uint64_t> layers;
    bool outside = false;
    for (int l : row.layers)
        if (l < 0)
            outside = true;
        else
            layers.push_back(static_cast<std::uint64_t>(l));
    std::string where;
    if (!layers.empty())
        where = (layers.size() == 1 ? "layer " : "layers ") + collapseNumbers(layers);
    if (outside) where += std::string(where.empty() ? "" : " and ") + "outside the layers";
    return "Absent in " + std::string(1, static_cast<char>(std::toupper(row.missingFrom))) + ": " + name + " of " + where +
           " (" + groupDigits(row.tensors) + (row.tensors == 1 ? " tensor, " : " tensors, ") + shortCount(row.parameters) +
           " parameters).";
}

std::string diffSummary(const CheckpointDiff &d)
{
    const CLocaleScope cLocale; // printf-style columns below: never the user's decimal comma
    std::vector<std::string> parts;
    // config, key by key: a nested object's keys as paths, never a dump of the object
    const std::vector<ConfigChange> changes = configChangesByPath(d);
    if (changes.empty()) {
        parts.push_back("config identical");
    } else {
        std::string c = "config:";
        bool first = true;
        for (const char *kind : {"added", "removed", "changed"}) {
            std::size_t n = 0;
            std::string shown;
            for (const auto &ch : changes) {
                if (ch.kind != kind || ++n > 3) continue; // the first three named, the rest counted
                shown += (shown.empty() ? "" : ", ") + ch.path + ": " + changeText(ch);
            }
            if (!n) continue;
            if (n > 3) shown += ", …";
            c += std::string(first ? " " : ", ") + std::to_string(n) +
                 (first ? (n == 1 ? " key " : " keys ") : " ") + kind + " (" + shown + ")";
            first = false;
        }
        parts.push_back(c);
    }
    // tensors
    if (d.tensorsIdentical()) {
        parts.push_back("tensors identical (" + groupDigits(d.same) + ")");
    } else {
        std::string t = "tensors: " + groupDigits(d.same) + " same";
        if (d.added) t += ", " + groupDigits(d.added) + " added";
        if (d.removed) t += ", " + groupDigits(d.removed) + " removed";
        if (d.dtypeChanged) t += ", " + groupDigits(d.dtypeChanged) + " with another dtype";
        if (d.shapeChanged) t += ", " + groupDigits(d.shapeChanged) + " with another shape";
        parts.push_back(t);
    }
    // parameters
    if (d.parametersAgree())
        parts.push_back("logical parameters equal (" + groupDigits(d.aParameters) + ")");
    else
        parts.push_back("logical parameters differ: " + groupDigits(d.aParameters) + " → " + groupDigits(d.bParameters));
    // biases
    if (d.biasesCompared) {
        std::size_t both = 0, same = 0, lost = 0;
        for (const auto &r : d.biases) {
            both += r.a.present && r.b.present;
            same += r.sameBytes;
            lost += precisionLost(r.a.dtype, r.b.dtype);
        }
        std::string b = "biases byte-identical in " + std::to_string(same) + "/" + std::to_string(both) + " layers";
        if (lost) b += ", F32 → 16-bit in " + std::to_string(lost) + " (precision lost)";
        parts.push_back(b);
    }
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i)
        out += (i ? "; " : "") + parts[i];
    return out;
}

std::string formatDiff(const CheckpointDiff &d)
{
    const CLocaleScope cLocale; // printf-style columns below: never the user's decimal comma
    std::ostringstream o;
    auto where = [](const SourceInfo &s) {
        std::string w = s.location;
        if (!s.revision.empty()) w += " @" + s.revision;
        if (!s.commit.empty()) w += " (" + s.commit.substr(0, 7) + ")";
        return w;
    };
    o << "A  " << where(d.a) << "\nB  " << where(d.b) << "\n\n" << diffSummary(d) << ".\n";

    if (const auto changes = configChangesByPath(d); !changes.empty()) {
        o << "\nConfig\n";
        for (const auto &ch : changes)
            o << (ch.kind == "added" ? "  + " : ch.kind == "removed" ? "  - " : "  ~ ") << ch.path << ": "
              << changeText(ch) << "\n";
    }
    if (!d.groups.empty()) {
        o << "\nTensors (" << d.groups.size() << " groups)\n";
        std::size_t shown = 0;
        for (const auto &g : d.groups) {
            if (++shown > 60) {
                o << "  … " << d.groups.size() - 60 << " more groups (--json lists them all)\n";
                break;
            }
            o << "  " << (g.change == TensorChange::Added     ? "+ "
                          : g.change == TensorChange::Removed ? "- "
                                                              : "~ ")
              << g.pattern << ": ";
            if (g.change == TensorChange::Added)
                o << g.b;
            else if (g.change == TensorChange::Removed)
                o << g.a;
            else
                o << g.a << " → " << g.b << (precisionLost(g.a, g.b) ? " (precision lost)" : "");
            o << "  (" << groupDigits(g.tensors) << (g.tensors == 1 ? " tensor)" : " tensors)") << "\n";
        }
    }
    o << "\nParameters by category" << (d.parametersAgree() ? "  (logical parameters agree)" : "  (logical parameters DIFFER)")
      << "\n";
    char line[320];
    // B - A, signed, with digit groups; "=" when equal.
    auto delta = [](std::uint64_t a, std::uint64_t b) {
        if (a == b) return std::string("=");
        return (b > a ? "+" : "-") + groupDigits(b > a ? b - a : a - b);
    };
    std::snprintf(line, sizeof line, "  %-16s %19s %19s %18s   ", "category", "A", "B", "B - A");
    o << line << padRight("bytes A → B", 28) << (d.acrossFormats ? padRight("bits/weight", 16) : std::string())
      << "format A → B\n";
    for (std::size_t c = 0; c < kCategoryCount; ++c) {
        if (!d.aByCategory[c] && !d.bByCategory[c]) continue;
        const std::string bits = d.acrossFormats ? padRight(fixedPoint(d.aBitsPerWeight[c], 2) + " → " +
                                                                fixedPoint(d.bBitsPerWeight[c], 2), 16)
                                                 : std::string();
        const std::string fa = d.aFormat[c].empty() ? "-" : d.aFormat[c], fb = d.bFormat[c].empty() ? "-" : d.bFormat[c];
        std::snprintf(line, sizeof line, "  %-16s %19s %19s %18s   ", std::string(categoryName(static_cast<Category>(c))).c_str(),
                      groupDigits(d.aByCategory[c]).c_str(), groupDigits(d.bByCategory[c]).c_str(),
                      delta(d.aByCategory[c], d.bByCategory[c]).c_str());
        o << line << padRight(binaryBytes(d.aBytes[c]) + " → " + binaryBytes(d.bBytes[c]), 28) << bits
          << (fa == fb ? fa : fa + " → " + fb) << "\n";
    }
    std::snprintf(line, sizeof line, "  %-16s %19s %19s %18s\n", "total", groupDigits(d.aParameters).c_str(),
                  groupDigits(d.bParameters).c_str(), delta(d.aParameters, d.bParameters).c_str());
    o << line;
    if (d.acrossFormats) {
        o << "\nAcross formats  tensors matched through llama.cpp's naming (experts stacked, kv_b_proj split); "
          << groupDigits(d.scalesFolded) << " block-scale tensors folded into the GGUF blocks\n";
        if (d.absent.empty()) o << "  nothing absent: every part of each side is in the other\n";
        for (const auto &row : d.absent)
            o << "  " << absentSentence(row) << "\n";
    }
    if (d.aFull != d.bFull) {
        auto list = [](const std::vector<int> &v) {
            std::string s;
            for (int x : v)
                s += (s.empty() ? "" : ",") + std::to_string(x);
            return s.empty() ? std::string("none") : s;
        };
        o << "\nIndexer layers differ\n  A: " << list(d.aFull) << "\n  B: " << list(d.bFull) << "\n";
    }
    o << "\nCache per token  A " << groupDigits(d.aCacheBytesPerToken) << " B, B " << groupDigits(d.bCacheBytesPerToken)
      << " B\n";
    if (d.biasesCompared) {
        o << "\nBiases\n";
        std::snprintf(line, sizeof line, "  %5s  %-6s %-6s %8s %8s  %s\n", "layer", "A", "B", "bf16 A", "bf16 B", "bytes");
        o << line;
        for (const auto &r : d.biases) {
            std::snprintf(line, sizeof line, "  %5d  %-6s %-6s %8s %8s  %s\n", r.layer, r.a.present ? r.a.dtype.c_str() : "-",
                          r.b.present ? r.b.dtype.c_str() : "-", r.a.present ? std::to_string(r.a.bf16Distinct).c_str() : "-",
                          r.b.present ? std::to_string(r.b.bf16Distinct).c_str() : "-",
                          !r.a.present ? "only in B" : !r.b.present ? "only in A" : r.sameBytes ? "same" : "DIFFERENT");
            o << line;
        }
    }
    return o.str();
}

} // namespace atlas
