#pragma once

#include <string>
#include <vector>

namespace atlas {

// `ckpt-atlas diff A B …`: returns the process exit code, as `inspect` does.
int runDiff(const std::vector<std::string> &args);

} // namespace atlas
