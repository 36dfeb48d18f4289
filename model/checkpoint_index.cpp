#include "checkpoint_index.h"

#include "errors.h"
#include "safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <set>

namespace atlas {

bool isSafeShardName(std::string_view name)
{
    if (name.empty() || name.size() > 255 || name == "." || name == "..")
        return false;
    if (name.find("..") != std::string_view::npos)
        return false;
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
            if (ei - si != ej - sj)
                return ei - si < ej - sj;
            if (auto c = a.substr(si, ei - si).compare(b.substr(sj, ej - sj)); c != 0)
                return c < 0;
            i = ei;
            j = ej;
            continue;
        }
        if (a[i] != b[j])
            return a[i] < b[j];
        ++i;
        ++j;
    }
    return a.size() - i < b.size() - j;
}

CheckpointIndex parseCheckpointIndex(std::string_view file, std::string_view text)
{
    auto fail = [&](HeaderProblem p, const std::string &what) -> void {
        throw AtlasError(ErrorKind::Invalid, std::string(file) + ": " + what, p);
    };
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::exception &e) {
        fail(HeaderProblem::BadIndex, std::string("not valid JSON: ") + e.what());
    }
    if (!doc.is_object() || !doc.contains("weight_map") || !doc["weight_map"].is_object())
        fail(HeaderProblem::BadIndex, "no weight_map object");
    CheckpointIndex index;
    std::set<std::string> files;
    for (const auto &[tensor, value] : doc["weight_map"].items()) {
        if (!value.is_string())
            fail(HeaderProblem::BadIndex, "weight_map entry for '" + tensor + "' is not a file name");
        const auto &name = value.get_ref<const std::string &>();
        if (!isSafeShardName(name))
            fail(HeaderProblem::UnsafeFileName,
                 "weight_map entry for '" + tensor + "' names '" + name +
                     "', which is not a plain file name in the same directory");
        index.weightMap.emplace(tensor, name);
        files.insert(name);
    }
    if (index.weightMap.empty())
        fail(HeaderProblem::BadIndex, "weight_map is empty");
    index.shardFiles.assign(files.begin(), files.end());
    std::sort(index.shardFiles.begin(), index.shardFiles.end(),
              [](const std::string &a, const std::string &b) { return naturalLess(a, b); });
    if (auto md = doc.find("metadata"); md != doc.end() && md->is_object()) {
        if (auto ts = md->find("total_size"); ts != md->end() && ts->is_number_unsigned())
            index.totalSize = ts->get<std::uint64_t>();
    }
    return index;
}

} // namespace atlas
