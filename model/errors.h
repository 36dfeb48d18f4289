#pragma once

#include <atomic>
#include <stdexcept>
#include <string>

namespace atlas {

// What went wrong, in the terms of the command line's exit codes.
enum class ErrorKind {
    Usage = 2,   // the request itself is malformed
    Source = 3,  // the source could not be read (missing file, network, server)
    Invalid = 4, // the bytes were read but are not a valid checkpoint
};

// Which safetensors rule a header broke; tests assert on it, messages explain it.
enum class HeaderProblem {
    None,
    TooSmall,       // fewer than 8 bytes
    LengthTooLarge, // N above the 100,000,000 limit
    LengthPastEnd,  // 8 + N beyond the end of the file
    NotUtf8,
    BadStart, // does not start with '{'
    NotJson,
    BadEntry, // an entry is not {dtype, shape, data_offsets}
    UnknownDtype,
    ShapeOverflow,
    SizeMismatch, // end - begin differs from numel x dtype size
    Gap,
    Overlap,
    TrailingBytes, // data after the last tensor
    Truncated,     // a tensor ends past the end of the file
    MetadataNotStrings,
    DuplicateName,
    SubByteMisaligned, // numel x bits not a multiple of 8
    UnsafeFileName,    // an index names a file outside its directory
    BadIndex,
    MissingFile, // the file a read names does not exist (HTTP 404, ENOENT)
};

class AtlasError : public std::runtime_error
{
public:
    AtlasError(ErrorKind kind, const std::string &message, HeaderProblem problem = HeaderProblem::None)
        : std::runtime_error(message), m_kind(kind), m_problem(problem)
    {
    }
    ErrorKind kind() const { return m_kind; }
    HeaderProblem problem() const { return m_problem; }

private:
    ErrorKind m_kind;
    HeaderProblem m_problem;
};

// The one way a long loop answers a raised cancel flag (null: no flag): AtlasError(Source, "cancelled").
inline void stopIfCancelled(const std::atomic<bool> *cancel)
{
    if (cancel && cancel->load(std::memory_order_relaxed)) throw AtlasError(ErrorKind::Source, "cancelled");
}

} // namespace atlas
