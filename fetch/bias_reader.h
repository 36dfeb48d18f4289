#pragma once

#include "bias_audit.h"
#include "byte_source.h"

namespace atlas {

// Reads exactly the plan's ranges (one request per range) and cuts them into tensors, each
// with the SHA-256 of its raw bytes. Throws AtlasError when an answer is short.
std::vector<BiasTensor> readBiases(ByteSource &source, const BiasFetchPlan &plan);

} // namespace atlas
