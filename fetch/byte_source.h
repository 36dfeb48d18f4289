#pragma once

#include "checkpoint.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace atlas {

struct RangeRequest
{
    std::string file;
    std::uint64_t offset = 0;
    std::uint64_t length = 0; // may run past the end of the file: the answer is then shorter
};

struct RangeAnswer
{
    std::string bytes;
    std::uint64_t fileSize = 0; // the whole file's size, as the source reports it
};

// Where a checkpoint's bytes come from: a local folder, an HTTPS directory, the Hub.
// Every read names a file relative to the checkpoint's root. Failures throw AtlasError naming the file.
class ByteSource
{
public:
    virtual ~ByteSource() = default;
    virtual SourceInfo info() const = 0;
    // A small whole file (config.json, the index); nullopt when it does not exist.
    virtual std::optional<std::string> readSmallFile(const std::string &file) = 0;
    // A batch of ranges; a source may serve them concurrently. Answers come back in request order.
    virtual std::vector<RangeAnswer> readRanges(const std::vector<RangeRequest> &requests) = 0;

    void setCancelFlag(const std::atomic<bool> *flag) { m_cancel = flag; }
    bool isCancelled() const { return m_cancel && m_cancel->load(std::memory_order_relaxed); }

protected:
    void throwIfCancelled() const;

private:
    const std::atomic<bool> *m_cancel = nullptr;
};

// Reads files under a local directory with pread: only the bytes asked for.
class LocalDirectorySource final : public ByteSource
{
public:
    explicit LocalDirectorySource(std::string directory);
    SourceInfo info() const override;
    std::optional<std::string> readSmallFile(const std::string &file) override;
    std::vector<RangeAnswer> readRanges(const std::vector<RangeRequest> &requests) override;

private:
    std::string m_dir;
};

} // namespace atlas
