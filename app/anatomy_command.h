#pragma once

#include <string>
#include <vector>

namespace atlas {

// ckpt-atlas anatomy [SOURCE] --layer N [--json | --format dot|mermaid] [--decode]: one layer's data graph.
int runAnatomy(const std::vector<std::string> &args);

} // namespace atlas
