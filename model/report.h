#pragma once

#include "analysis.h"
#include "cache_budget.h"
#include "explain.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace atlas {

inline constexpr const char *kReportSchema = "ckpt-atlas.report/1";

// The JSON report of domain.md section 9 (sections for biases, routing and network are added by their
// owners).
nlohmann::ordered_json buildReport(const Checkpoint &checkpoint, const CheckpointAnalysis &analysis,
                                   const CacheBudget &cache);

// The readable summary `inspect` prints without --json.
std::string formatSummary(const Checkpoint &checkpoint, const CheckpointAnalysis &analysis,
                          const CacheBudget &cache);

// The working behind the headline numbers, as the report's `explain` object and as text
// ("cache.bytes_per_token = 78*(512+64)*2 + 21*144" and a line per factor).
nlohmann::ordered_json explanationsJson(const Explanations &explanations);
std::string formatExplanations(const Explanations &explanations);

// Checks "a.b.3.c=VALUE" expressions against a report; returns one line per failure.
std::vector<std::string> checkExpectations(const nlohmann::ordered_json &report,
                                           const std::vector<std::string> &expressions);

// 753329940480 -> "753,329,940,480"
std::string groupDigits(std::uint64_t v);
// 753329940480 -> "753.33 B"; 9371648 -> "9.37 M"
std::string shortCount(std::uint64_t v);
// bytes -> "90.70 GiB"
std::string binaryBytes(std::uint64_t v);
// Parameters in the one unit rule every view follows, never a bare "B" that reads as bytes:
// "1.60 T params", "753.33 B params", "41.25 M params", "768 params".
std::string paramCount(std::uint64_t v);

// The caption every exported figure carries: "glm_moe_dsa · GLM-5.2-FP8 · hub zai-org/GLM-5.2-FP8 @main
// (1a2b3c4) · Checkpoint Atlas 0.1.0 · 2026-11-29", with "synthetic" for a written layout.
std::string provenanceCaption(const Checkpoint &checkpoint, const std::string &version, const std::string &date);
// Twelve hex digits that tell two checkpoints' headers apart: every shard's file name and header length, and
// every tensor's name (length and ends), dtype, shape and byte range, mixed. Not a cryptographic hash: a
// way to cite a local folder without its path ("headers 3f2a9c1e07b4").
std::string headerFingerprint(const Checkpoint &checkpoint);

} // namespace atlas
