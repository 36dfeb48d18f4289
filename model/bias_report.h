#pragma once

#include "bias_audit.h"
#include "routing.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace atlas {

// The report's `biases` and `routing` sections (domain.md section 9).
// `kind`: what the router biases are (correction, logit, or none in the checkpoint).
nlohmann::ordered_json biasesJson(const std::vector<BiasStats> &biases, std::uint64_t bytesRead,
                                  BiasUse kind = BiasUse::Correction);
nlohmann::ordered_json routingJson(const RoutingRun &run);

// The readable per-layer tables of `inspect --biases / --simulate`.
std::string formatBiasTable(const std::vector<BiasStats> &biases, std::uint64_t bytesRead,
                            BiasUse kind = BiasUse::Correction);
std::string formatRoutingTable(const RoutingRun &run);

// Shown wherever synthetic logits are.
inline constexpr const char *kSyntheticLogitsNote =
    "Synthetic logits are a sensitivity probe of the bias rounding, not an estimate of real traffic.";

} // namespace atlas
