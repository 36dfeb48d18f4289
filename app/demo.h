#pragma once

#include <filesystem>

namespace atlas {

// The embedded demo: a synthetic GLM-5.x FP8 checkpoint (141 shards, sparse data), written on first
// use under the user's cache directory and reused afterwards.
std::filesystem::path ensureDemoCheckpoint();

} // namespace atlas
