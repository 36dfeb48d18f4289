#include "logits_reader.h"

#include "byte_source.h"
#include "errors.h"
#include "safetensors.h"

#include <filesystem>

namespace atlas {

CapturedLogits readLogitsFile(const std::string &path, std::uint64_t memoryLimit)
{
    const std::filesystem::path p(path);
    LocalDirectorySource source(p.has_parent_path() ? p.parent_path().string() : std::string("."));
    const std::string name = p.filename().string();
    auto read = [&](std::uint64_t length) {
        try {
            return std::move(source.readRanges({{name, 0, length}}).front());
        } catch (const AtlasError &e) {
            throw AtlasError(e.kind(), path + ": cannot read the logits file (" + e.what() + ")");
        }
    };
    RangeAnswer first = read(8);
    const std::uint64_t n = parseHeaderLength(path, first.bytes, first.fileSize);
    const RangeAnswer head = read(8 + n);
    const LogitsFileLayout layout = parseLogitsHeader(path, head.bytes, head.fileSize, memoryLimit);
    const RangeAnswer data = read(layout.dataEnd);
    return decodeLogits(layout, data.bytes);
}

} // namespace atlas
