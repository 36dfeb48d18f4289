#pragma once

#include <string>
#include <vector>

namespace atlas {

// `ckpt-atlas inspect …`: returns the process exit code (0 ok, 2 usage, 3 source, 4 invalid, 5 expectation).
int runInspect(const std::vector<std::string> &args);

} // namespace atlas
