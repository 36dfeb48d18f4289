#include "byte_source.h"

#include "errors.h"
#include "populate.h"
#include "safetensors.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace atlas {

void ByteSource::throwIfCancelled() const
{
    stopIfCancelled(m_cancel);
}

bool ByteSource::viewSmallFile(const std::string &file, const std::function<void(std::string_view)> &use)
{
    const std::optional<std::string> text = readSmallFile(file);
    if (!text) return false;
    use(*text);
    return true;
}

void ByteSource::readRangesEach(const std::vector<RangeRequest> &requests, const EachAnswer &each)
{
    auto answers = readRanges(requests);
    for (std::size_t i = 0; i < answers.size(); ++i)
        each(i, std::move(answers[i]));
}

BatchAnswer ByteSource::readBatch(const std::vector<std::string> &files,
                                  const std::vector<RangeRequest> &speculative, const std::vector<std::string> &)
{
    BatchAnswer out;
    for (const auto &f : files)
        out.files.push_back(readSmallFile(f));
    for (const auto &r : speculative) {
        try {
            out.ranges.push_back(std::move(readRanges({r}).front()));
        } catch (const AtlasError &) {
            if (isCancelled()) throw;
            out.ranges.push_back(std::nullopt);
        }
    }
    return out;
}

namespace {

// Closes the descriptor on every path out.
struct FileDescriptor
{
    int fd;
    ~FileDescriptor()
    {
        if (fd >= 0) ::close(fd);
    }
};

constexpr std::uint64_t kSmallFileLimit = 256ull << 20;

} // namespace

int openRegularFile(const std::string &path, std::uint64_t *size)
{
    // O_NONBLOCK: opening a FIFO with no writer (or some devices) would otherwise block here, before
    // anything could look at what the path is. It changes nothing for a regular file's reads.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        if (errno == ENOENT) return -1;
        throw AtlasError(ErrorKind::Source, path + ": cannot open: " + std::strerror(errno));
    }
    struct stat st
    {
    };
    const bool stated = ::fstat(fd, &st) == 0;
    if (!stated || !S_ISREG(st.st_mode)) {
        ::close(fd);
        const char *what = !stated               ? "cannot be examined"
                           : S_ISFIFO(st.st_mode) ? "is a FIFO (named pipe), not a regular file"
                           : S_ISDIR(st.st_mode)  ? "is a directory, not a regular file"
                           : S_ISSOCK(st.st_mode) ? "is a socket, not a regular file"
                           : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "is a device, not a regular file"
                                                                          : "is not a regular file";
        throw AtlasError(ErrorKind::Source, path + ": " + what + "; only regular files are read");
    }
    // A regular file: reads may block as they always do (a FUSE or network file system might answer
    // EAGAIN to a descriptor left non-blocking).
    if (const int flags = ::fcntl(fd, F_GETFL); flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
    if (size) *size = static_cast<std::uint64_t>(st.st_size);
    return fd;
}

LocalDirectorySource::LocalDirectorySource(std::string directory)
{
    std::error_code ec;
    auto abs = std::filesystem::absolute(directory, ec);
    m_dir = ec ? directory : abs.lexically_normal().string();
    if (m_dir.size() > 1 && m_dir.back() == '/') m_dir.pop_back();
}

std::vector<std::string> LocalDirectorySource::listFiles() const
{
    namespace fs = std::filesystem;
    std::vector<std::string> out;
    std::error_code ec;
    for (fs::directory_iterator it(m_dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        std::error_code e2;
        if (it->is_directory(e2)) {
            // One level down, as the Hub's quantisation repos keep a folder per quantisation.
            std::error_code e3;
            std::size_t n = 0;
            for (fs::directory_iterator sub(it->path(), e3), subEnd; !e3 && sub != subEnd && n < 4096; sub.increment(e3), ++n)
                if (std::error_code e4; sub->is_regular_file(e4))
                    out.push_back(name + "/" + sub->path().filename().string());
        } else if (it->is_regular_file(e2)) {
            out.push_back(name);
        }
        if (out.size() > 65536) break;
    }
    return out;
}

SourceInfo LocalDirectorySource::info() const
{
    return {SourceKind::Local, m_dir, {}, {}};
}

namespace {

// A config or index file, opened: -1 when it does not exist; too large a one is refused, naming it.
int openSmallFile(const std::string &path, std::uint64_t *size)
{
    const int fd = openRegularFile(path, size);
    if (fd >= 0 && *size > kSmallFileLimit) {
        ::close(fd);
        throw AtlasError(ErrorKind::Source, path + ": " + std::to_string(*size) +
                                                " bytes is too large for a config or index file");
    }
    return fd;
}

} // namespace

bool LocalDirectorySource::viewSmallFile(const std::string &file, const std::function<void(std::string_view)> &use)
{
    throwIfCancelled();
    const std::string path = m_dir + "/" + file;
    std::uint64_t size = 0;
    FileDescriptor f{openSmallFile(path, &size)};
    if (f.fd < 0) return false;
    // Mapped, its pages taken from the page cache in one call: reading it into new memory costs the
    // kernel a fault, a cleared page and a copy per 4 KiB (10 ms for 11 MB, against 0.2 ms mapped).
    // A file system that cannot map it is read as any other. (A file cut short by another process while
    // mapped would fault on access, as with every reader that maps: the checkpoint must not change while
    // it is read.)
    void *const map = size ? ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, f.fd, 0) : MAP_FAILED;
    if (map == MAP_FAILED) return ByteSource::viewSmallFile(file, use);
    struct Unmap
    {
        void *at;
        std::size_t length;
        ~Unmap() { ::munmap(at, length); }
    } unmap{map, static_cast<std::size_t>(size)};
    noteTraffic(size, 1);
    use(std::string_view(static_cast<const char *>(map), static_cast<std::size_t>(size)));
    return true;
}

std::optional<std::string> LocalDirectorySource::readSmallFile(const std::string &file)
{
    throwIfCancelled();
    const std::string path = m_dir + "/" + file;
    std::uint64_t size = 0;
    FileDescriptor f{openSmallFile(path, &size)};
    if (f.fd < 0) return std::nullopt;
    std::string out(static_cast<std::size_t>(size), '\0');
    std::size_t got = 0;
    while (got < out.size()) {
        const ssize_t n = ::read(f.fd, out.data() + got, out.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw AtlasError(ErrorKind::Source, path + ": read failed: " + std::strerror(errno));
        got += static_cast<std::size_t>(n);
    }
    noteTraffic(out.size(), 1);
    return out;
}

bool LocalDirectorySource::readRangeInto(const RangeRequest &r, std::string &scratch, const RangeUse &use)
{
    throwIfCancelled();
    const std::string path = m_dir + "/" + r.file;
    std::uint64_t size = 0;
    FileDescriptor f{openRegularFile(path, &size)};
    if (f.fd < 0) throw AtlasError(ErrorKind::Source, path + ": cannot open: no such file", HeaderProblem::MissingFile);
    if (size > kMaxFileSize)
        throw AtlasError(ErrorKind::Invalid,
                         path + ": " + std::to_string(size) + " bytes, more than any checkpoint file may hold (2^50)");
    const std::size_t len = static_cast<std::size_t>(r.offset >= size ? 0 : std::min(r.length, size - r.offset));
    // Read over what the buffer held: a new buffer for each header of megabytes cost a cleared page, a
    // zeroed string and a copy per 4 KiB into memory no cache held (a fifth of Kimi-K3's open). Mapping the
    // file instead saves the copy but not the cold reads, which then pay a page walk per 4 KiB as well.
    if (scratch.size() < len) assignPopulated(scratch, len);
    std::size_t got = 0;
    while (got < len) {
        const ssize_t n = ::pread(f.fd, scratch.data() + got, len - got, static_cast<off_t>(r.offset + got));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            throw AtlasError(ErrorKind::Source, path + ": read failed at byte " + std::to_string(r.offset + got) + ": " +
                                                    (n == 0 ? "unexpected end of file" : std::strerror(errno)));
        got += static_cast<std::size_t>(n);
    }
    noteTraffic(len, 1);
    use(std::string_view(scratch.data(), len), size);
    return true;
}

std::vector<RangeAnswer> LocalDirectorySource::readRanges(const std::vector<RangeRequest> &requests)
{
    // Each into a string of its own, grown from empty to the range's length.
    std::vector<RangeAnswer> answers(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i)
        readRangeInto(requests[i], answers[i].bytes,
                      [&](std::string_view, std::uint64_t fileSize) { answers[i].fileSize = fileSize; });
    return answers;
}

} // namespace atlas
