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
    BiasUse kind = BiasUse::None;       // what the router biases read are (None: there are none)
    std::vector<LayerBias> routing;     // what the simulation runs on: each routed layer's bias
                                        // (zeros for a router without one)
    std::optional<RouterConfig> router; // when config.json lets the layers be simulated
    std::string routerProblem;          // why not, otherwise
};

// Statistics for every tensor read, and the router configuration that fits the router biases (or,
// without any, the routed layers of the analysis).
BiasAudit auditBiases(const ModelConfig &config, const CheckpointAnalysis &analysis,
                      const std::vector<BiasTensor> &tensors, std::uint64_t bytesRead);

} // namespace atlas
