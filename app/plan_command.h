#pragma once

#include <string>
#include <vector>

namespace atlas {

// ckpt-atlas plan [SOURCE] --gpus N (--gpu NAME | --gpu-memory BYTES) [...]: what it takes to serve it.
int runPlan(const std::vector<std::string> &args);

} // namespace atlas
