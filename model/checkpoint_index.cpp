#include "checkpoint_index.h"

#include "errors.h"
#include "safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace atlas {

bool isSafeShardName(std::string_view name)
{
    if (name.empty() || name.size() > 255 || name == "." || name == "..") return false;
    if (name.find("..") != std::string_view::npos) return false;
    for (unsigned char c : name) {
        if (c < 0x20 || c == 0x7F || c == '/' || c == '\\' || c == '%' || c == ':' || c == '?' || c == '#')
            return false;
    }
    return isValidUtf8(name);
}

bool naturalLess(std::string_view a, std::string_view b)
{
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        const bool da = a[i] >= '0' && a[i] <= '9';
        const bool db = b[j] >= '0' && b[j] <= '9';
        if (da && db) {
            std::size_t ei = i, ej = j;
            while (ei < a.size() && a[ei] >= '0' && a[ei] <= '9')
                ++ei;
            while (ej < b.size() && b[ej] >= '0' && b[ej] <= '9')
                ++ej;
            // Compare numerically without parsing: strip leading zeros, then length, then text.
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
}

namespace {

// Reads the index without building a DOM: eleven megabytes of weight_map for a 141-shard model.
class IndexHandler
{
public:
    using json = nlohmann::json;
    explicit IndexHandler(std::string_view file) : m_file(file) {}

    std::vector<std::pair<std::string, std::string>> entries;
    std::optional<std::uint64_t> totalSize;
    bool sawWeightMap = false;

    bool null() { return value("null"); }
    bool boolean(bool) { return value("a boolean"); }
    bool number_integer(json::number_integer_t v)
    {
        if (m_depth == 2 && m_inMetadata && m_key == "total_size" && v >= 0)
            totalSize = static_cast<std::uint64_t>(v);
        return value("a number");
    }
    bool number_unsigned(json::number_unsigned_t v)
    {
        if (m_depth == 2 && m_inMetadata && m_key == "total_size") totalSize = v;
        return value("a number");
    }
    bool number_float(json::number_float_t v, const std::string &)
    {
        // Some writers store total_size as a float; take it when it is a whole number.
        if (m_depth == 2 && m_inMetadata && m_key == "total_size" && v >= 0 && v < 1.8e19 &&
            v == static_cast<double>(static_cast<std::uint64_t>(v)))
            totalSize = static_cast<std::uint64_t>(v);
        return value("a number");
    }
    bool binary(json::binary_t &) { return value("binary data"); }
    bool string(std::string &v)
    {
        if (m_depth == 2 && m_inWeightMap) {
            entries.emplace_back(std::move(m_key), std::move(v));
            return true;
        }
        return value("a string");
    }
    bool start_object(std::size_t)
    {
        if (m_depth == 0 && m_started) fail(HeaderProblem::BadIndex, "not a JSON object");
        m_started = true;
        if (m_depth == 1) {
            m_inWeightMap = m_key == "weight_map";
            m_inMetadata = m_key == "metadata";
            sawWeightMap = sawWeightMap || m_inWeightMap;
        } else if (m_depth == 2 && m_inWeightMap) {
            fail(HeaderProblem::BadIndex, "weight_map entry for '" + m_key + "' is not a file name");
        }
        ++m_depth;
        return true;
    }
    bool key(std::string &k)
    {
        m_key = std::move(k);
        return true;
    }
    bool end_object()
    {
        if (--m_depth == 1) m_inWeightMap = m_inMetadata = false;
        return true;
    }
    bool start_array(std::size_t)
    {
        if (m_depth == 0) fail(HeaderProblem::BadIndex, "not a JSON object");
        if (m_depth == 1 && m_key == "weight_map")
            fail(HeaderProblem::BadIndex, "weight_map is not an object");
        value("an array");
        ++m_depth;
        return true;
    }
    bool end_array()
    {
        --m_depth;
        return true;
    }
    bool parse_error(std::size_t position, const std::string &, const nlohmann::detail::exception &ex)
    {
        fail(HeaderProblem::BadIndex, "not valid JSON (byte " + std::to_string(position) + "): " + ex.what());
    }

private:
    bool value(const char *what)
    {
        if (m_depth == 0) fail(HeaderProblem::BadIndex, "not a JSON object");
        if (m_depth == 2 && m_inWeightMap)
            fail(HeaderProblem::BadIndex,
                 "weight_map entry for '" + m_key + "' is " + what + ", not a file name");
        if (m_depth == 1 && m_key == "weight_map")
            fail(HeaderProblem::BadIndex, "weight_map is not an object");
        return true;
    }
    [[noreturn]] void fail(HeaderProblem p, const std::string &what)
    {
        throw AtlasError(ErrorKind::Invalid, std::string(m_file) + ": " + what, p);
    }

    std::string_view m_file;
    int m_depth = 0;
    bool m_started = false;
    bool m_inWeightMap = false;
    bool m_inMetadata = false;
    std::string m_key;
};

} // namespace

CheckpointIndex parseCheckpointIndex(std::string_view file, std::string_view text)
{
    auto fail = [&](HeaderProblem p, const std::string &what) {
        throw AtlasError(ErrorKind::Invalid, std::string(file) + ": " + what, p);
    };
    IndexHandler handler(file);
    nlohmann::json::sax_parse(text.begin(), text.end(), &handler, nlohmann::json::input_format_t::json, true);
    if (!handler.sawWeightMap) fail(HeaderProblem::BadIndex, "no weight_map object");
    if (handler.entries.empty()) fail(HeaderProblem::BadIndex, "weight_map is empty");

    CheckpointIndex index;
    index.totalSize = handler.totalSize;
    std::unordered_map<std::string, std::uint32_t> fileSlot;
    std::vector<std::uint32_t> slotOf;
    slotOf.reserve(handler.entries.size());
    for (const auto &[tensor, name] : handler.entries) {
        auto [it, fresh] = fileSlot.try_emplace(name, static_cast<std::uint32_t>(index.shardFiles.size()));
        if (fresh) {
            if (!isSafeShardName(name))
                fail(HeaderProblem::UnsafeFileName,
                     "weight_map entry for '" + tensor + "' names '" + name +
                         "', which is not a plain file name in the same directory");
            index.shardFiles.push_back(name);
        }
        slotOf.push_back(it->second);
    }
    // Natural order of the shard files, and the map renumbered to it.
    std::vector<std::uint32_t> order(index.shardFiles.size());
    for (std::uint32_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
        return naturalLess(index.shardFiles[a], index.shardFiles[b]);
    });
    std::vector<std::uint32_t> renumber(order.size());
    std::vector<std::string> sorted(order.size());
    for (std::uint32_t k = 0; k < order.size(); ++k) {
        renumber[order[k]] = k;
        sorted[k] = std::move(index.shardFiles[order[k]]);
    }
    index.shardFiles = std::move(sorted);
    index.weightMap.reserve(handler.entries.size());
    for (std::size_t i = 0; i < handler.entries.size(); ++i)
        index.weightMap[std::move(handler.entries[i].first)] = renumber[slotOf[i]];
    return index;
}

} // namespace atlas
