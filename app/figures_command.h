#pragma once

#include <string>
#include <vector>

namespace atlas {

// `ckpt-atlas figures [SOURCE] --out DIR`: every view rendered headlessly to PNG and SVG.
int runFigures(int argc, char **argv, const std::vector<std::string> &args);

} // namespace atlas
