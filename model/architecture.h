#pragma once

#include "analysis.h"
#include "model_config.h"

#include <string>
#include <vector>

namespace atlas {

// The architecture in numbers, for the Overview's card row: what a reader asks first about a model
// (width, attention, experts and top-k, groups, routed scaling, vocabulary, context). From config.json,
// else from the tensors' shapes; a fact neither gives is left out, never guessed.
struct ArchitectureFact
{
    std::string name;   // "Hidden size"
    std::string value;  // "6,144"
    std::string detail; // the keys or shapes it comes from
};
std::vector<ArchitectureFact> architectureFacts(const ModelConfig &cfg, const CheckpointAnalysis &a);

} // namespace atlas
