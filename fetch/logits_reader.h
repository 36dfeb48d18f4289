#pragma once

#include "routing.h"

#include <string>

namespace atlas {

// Reads captured logits from a local safetensors file: the header first, then only the bytes up to
// the end of the last logits tensor, after their size has been checked against `memoryLimit`.
// Throws AtlasError naming the file: Source when it cannot be read, Invalid when it is not logits.
CapturedLogits readLogitsFile(const std::string &path, std::uint64_t memoryLimit = routingMemoryLimit());

} // namespace atlas
