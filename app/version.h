#pragma once

namespace atlas {

// The program's version, for --version, the window and every figure's provenance line.
inline constexpr const char *kAtlasVersion = "0.1.0";

} // namespace atlas
