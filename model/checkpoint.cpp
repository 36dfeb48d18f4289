#include "checkpoint.h"

namespace atlas {

std::string_view sourceKindName(SourceKind kind)
{
    switch (kind) {
    case SourceKind::Hub:
        return "hub";
    case SourceKind::Https:
        return "https";
    case SourceKind::Local:
        break;
    }
    return "local";
}

std::size_t Checkpoint::tensorCount() const
{
    std::size_t n = 0;
    for (const auto &s : shards)
        n += s.tensors.size();
    return n;
}

std::uint64_t Checkpoint::tensorBytes() const
{
    std::uint64_t n = 0;
    for (const auto &s : shards)
        for (const auto &t : s.tensors)
            n += t.bytes();
    return n;
}

std::uint64_t Checkpoint::headerBytes() const
{
    std::uint64_t n = 0;
    for (const auto &s : shards)
        n += s.dataStart();
    return n;
}

bool Checkpoint::synthetic() const
{
    if (config.synthetic) return true;
    for (const auto &s : shards)
        if (auto it = s.metadata.find("ckpt_atlas"); it != s.metadata.end() && it->second == "synthetic")
            return true;
    return false;
}

} // namespace atlas
