#include "header_cache.h"

#include "byte_source.h"
#include "errors.h"
#include "http_client.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <unistd.h>

namespace atlas {

namespace {

// A cache file's bytes; nullopt when it is absent or anything but a readable regular file (opened
// without blocking: a FIFO planted in the cache must not hang a load).
std::optional<std::string> slurp(const std::filesystem::path &p, std::uint64_t limit = 1ull << 31)
{
    int fd = -1;
    std::uint64_t size = 0;
    try {
        fd = openRegularFile(p.string(), &size);
    } catch (const AtlasError &) {
        return std::nullopt;
    }
    if (fd < 0 || size > limit) {
        if (fd >= 0) ::close(fd);
        return std::nullopt;
    }
    std::string out(static_cast<std::size_t>(size), '\0');
    std::size_t got = 0;
    while (got < out.size()) {
        const ssize_t n = ::read(fd, out.data() + got, out.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        got += static_cast<std::size_t>(n);
    }
    ::close(fd);
    if (got != out.size()) return std::nullopt;
    return out;
}

// Writes beside and renames, so that a reader never sees half a file.
void spit(const std::filesystem::path &p, const std::string &bytes)
{
    std::error_code ec;
    std::filesystem::create_directories(p.parent_path(), ec);
    // Unique per write (pid and a counter): two loads of one commit in one process may store the
    // same header at once, and each must rename a whole file of its own.
    static std::atomic<std::uint64_t> writes{0};
    const auto tmp = p.string() + ".tmp" + std::to_string(::getpid()) + "." + std::to_string(writes.fetch_add(1));
    bool written = false;
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (out) {
            out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
            written = static_cast<bool>(out);
        }
    }
    if (written) std::filesystem::rename(tmp, p, ec);
    if (!written || ec) std::filesystem::remove(tmp, ec); // a failed write leaves nothing behind
}

std::string pathSafe(std::string s)
{
    for (char &c : s)
        if (c == '/' || c == ':' || c == '\\') c = '_';
    return s == ".." || s == "." ? "_" : s;
}

} // namespace

HeaderCache::HeaderCache(std::filesystem::path directory) : m_dir(std::move(directory)) {}

std::filesystem::path HeaderCache::defaultDirectory(const std::string &endpoint, const std::string &repo,
                                                    const std::string &commit)
{
    std::filesystem::path root;
    if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x)
        root = x;
    else if (const char *h = std::getenv("HOME"); h && *h)
        root = std::filesystem::path(h) / ".cache";
    else
        root = std::filesystem::temp_directory_path();
    std::string origin = originOf(endpoint);
    if (auto p = origin.find("://"); p != std::string::npos) origin = origin.substr(p + 3);
    auto dir = root / "ckpt-atlas" / "headers" / pathSafe(origin);
    const auto slash = repo.find('/');
    dir /= pathSafe(repo.substr(0, slash));
    if (slash != std::string::npos) dir /= pathSafe(repo.substr(slash + 1));
    return dir / pathSafe(commit);
}

std::optional<std::optional<std::string>> HeaderCache::smallFile(const std::string &name) const
{
    if (std::filesystem::exists(m_dir / (name + ".absent"))) return std::optional<std::string>();
    if (auto bytes = slurp(m_dir / name)) return std::optional<std::string>(std::move(*bytes));
    return std::nullopt;
}

void HeaderCache::storeSmallFile(const std::string &name, const std::optional<std::string> &content)
{
    if (content)
        spit(m_dir / name, *content);
    else
        spit(m_dir / (name + ".absent"), {});
}

bool HeaderCache::hasShard(const std::string &file) const
{
    std::error_code ec;
    return std::filesystem::is_regular_file(m_dir / (file + ".header"), ec);
}

std::optional<HeaderCache::Shard> HeaderCache::shard(const std::string &file, std::uint64_t maxHeaderBytes) const
{
    auto bytes = slurp(m_dir / (file + ".header"), maxHeaderBytes > UINT64_MAX - 8 ? UINT64_MAX : maxHeaderBytes + 8);
    if (!bytes || bytes->size() < 16) return std::nullopt;
    Shard s;
    std::memcpy(&s.fileSize, bytes->data(), 8);
    s.header = bytes->substr(8);
    return s;
}

void HeaderCache::storeShard(const std::string &file, const Shard &shard)
{
    std::string bytes(8, '\0');
    std::memcpy(bytes.data(), &shard.fileSize, 8);
    spit(m_dir / (file + ".header"), bytes + shard.header);
}

} // namespace atlas
