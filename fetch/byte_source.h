#pragma once

#include "checkpoint.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
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

// Small files and speculative ranges asked for together, so that a remote source spends one
// round trip on all of them. A speculative range whose file does not exist answers nullopt.
struct BatchAnswer
{
    std::vector<std::optional<std::string>> files;
    std::vector<std::optional<RangeAnswer>> ranges;
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
    // The same file handed to `use` where it lies, when the source can do so without a copy (a local
    // folder maps it: the 11 MB index of a 141-shard checkpoint is then never copied into new memory);
    // by default read with readSmallFile. False when it does not exist; the view lasts only during `use`.
    virtual bool viewSmallFile(const std::string &file, const std::function<void(std::string_view)> &use);
    // One range read into `scratch`, a buffer the caller reuses from range to range, and handed to `use` with
    // the file's size; false when the source reads only in batches (readRanges). The view is shorter than
    // asked where the file ends, and lasts only during `use`. `scratch` only grows: a buffer of the largest
    // size yet is read over, never cleared first.
    using RangeUse = std::function<void(std::string_view bytes, std::uint64_t fileSize)>;
    virtual bool readRangeInto(const RangeRequest &, std::string &scratch, const RangeUse &)
    {
        (void)scratch;
        return false;
    }
    // A batch of ranges; a source may serve them concurrently. Answers come back in request order.
    virtual std::vector<RangeAnswer> readRanges(const std::vector<RangeRequest> &requests) = 0;
    // The same batch, each answer handed to `each` (on the calling thread) as it comes; a source that
    // serves ranges concurrently hands them in the order they arrive, so that work on the first can
    // begin while the others are still on their way. A failure is thrown once every answer is in: the
    // first in request order, as readRanges would throw it. By default readRanges, then each in order.
    using EachAnswer = std::function<void(std::size_t index, RangeAnswer &&answer)>;
    virtual void readRangesEach(const std::vector<RangeRequest> &requests, const EachAnswer &each);
    // Small files and speculative ranges at once (by default one after the other). `locate` names files
    // whose location a source that redirects may learn in the same batch, for the reads that follow (the
    // Hub's shards while the index downloads); others ignore it.
    virtual BatchAnswer readBatch(const std::vector<std::string> &files,
                                  const std::vector<RangeRequest> &speculative,
                                  const std::vector<std::string> &locate = {});
    // The files the source is known to hold, when it can say without a request (the Hub's listing).
    virtual std::vector<std::string> knownFiles() const { return {}; }
    // The files to choose GGUF files from: the listing where there is one (a local folder's own and its
    // subfolders' to one level, the Hub's), else knownFiles() (empty for an HTTPS directory).
    virtual std::vector<std::string> listFiles() const { return knownFiles(); }

    void setCancelFlag(const std::atomic<bool> *flag) { m_cancel = flag; }
    // Requests made and bytes received so far; the listener hears of every change (from any thread).
    std::uint64_t requestsMade() const { return m_requests.load(); }
    std::uint64_t bytesReceived() const { return m_bytes.load(); }
    void setTrafficListener(std::function<void()> listener) { m_listener = std::move(listener); }
    bool isCancelled() const { return m_cancel && m_cancel->load(std::memory_order_relaxed); }
    const std::atomic<bool> *cancelFlag() const { return m_cancel; }

protected:
    void throwIfCancelled() const;
    void noteTraffic(std::uint64_t bytes, std::uint64_t requests)
    {
        m_bytes += bytes;
        m_requests += requests;
        if (m_listener) m_listener();
    }

private:
    std::atomic<std::uint64_t> m_requests{0};
    std::atomic<std::uint64_t> m_bytes{0};
    std::function<void()> m_listener;
    const std::atomic<bool> *m_cancel = nullptr;
};

// Opens a file to read only if it is a regular file once symlinks are resolved, without blocking on a
// FIFO or a device; its size in *size. -1 when it does not exist; throws AtlasError(Source) naming the
// path and what it is otherwise.
int openRegularFile(const std::string &path, std::uint64_t *size);

// Reads files under a local directory with pread: only the bytes asked for.
class LocalDirectorySource final : public ByteSource
{
public:
    explicit LocalDirectorySource(std::string directory);
    SourceInfo info() const override;
    std::optional<std::string> readSmallFile(const std::string &file) override;
    bool viewSmallFile(const std::string &file, const std::function<void(std::string_view)> &use) override;
    bool readRangeInto(const RangeRequest &request, std::string &scratch, const RangeUse &use) override;
    std::vector<RangeAnswer> readRanges(const std::vector<RangeRequest> &requests) override;
    std::vector<std::string> listFiles() const override;

private:
    std::string m_dir;
};

} // namespace atlas
