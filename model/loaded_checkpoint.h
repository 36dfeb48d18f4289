#pragma once

#include "analysis.h"
#include "bias_audit.h"
#include "cache_budget.h"

#include <optional>
#include <string>
#include <vector>

namespace atlas {

// What one load produced, handed to the views as it arrives: the layout first, the biases later.
struct LoadedCheckpoint
{
    Checkpoint checkpoint;
    CheckpointAnalysis analysis;
    CacheBudget cache; // at the context the load was asked for (by default defaultContextTokens())
};

struct BiasAudit
{
    std::vector<BiasStats> stats;
    std::uint64_t bytesRead = 0;
    std::optional<RouterConfig> router; // when config.json lets the biases be simulated
    std::string routerProblem;          // why not, otherwise
};

// Statistics for every tensor read, and the router configuration that fits the correction biases.
BiasAudit auditBiases(const ModelConfig &config, const std::vector<BiasTensor> &tensors,
                      std::uint64_t bytesRead);

// The correction biases of an audit, by layer: what the routing simulation runs on.
std::vector<LayerBias> correctionBiases(const BiasAudit &audit);

} // namespace atlas
