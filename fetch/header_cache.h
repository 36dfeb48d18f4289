#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace atlas {

// Headers already read, kept on disk per commit (a commit's files never change), so that opening
// the same commit again costs no request beyond resolving the revision.
class HeaderCache
{
public:
    explicit HeaderCache(std::filesystem::path directory);
    // The default place: $XDG_CACHE_HOME/ckpt-atlas/headers/HOST/ORG/NAME/COMMIT.
    static std::filesystem::path defaultDirectory(const std::string &endpoint, const std::string &repo,
                                                  const std::string &commit);

    // Small files (config, index) as they are; std::nullopt when not cached. `absent` marks
    // a file known not to exist.
    std::optional<std::optional<std::string>> smallFile(const std::string &name) const;
    void storeSmallFile(const std::string &name, const std::optional<std::string> &content);

    // A shard's header bytes (8 + N) and the shard's size.
    struct Shard
    {
        std::string header;
        std::uint64_t fileSize = 0;
    };
    // nullopt too when the cached header is longer than maxHeaderBytes (it is not read: the caller's
    // budget could not hold it).
    std::optional<Shard> shard(const std::string &file, std::uint64_t maxHeaderBytes = UINT64_MAX) const;
    bool hasShard(const std::string &file) const; // without reading it
    void storeShard(const std::string &file, const Shard &shard);

private:
    std::filesystem::path m_dir;
};

} // namespace atlas
