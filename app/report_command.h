#pragma once

#include "capacity_plan.h"
#include "load_pipeline.h"

#include <filesystem>
#include <string>
#include <vector>

namespace atlas {

// The JSON report of a load (as inspect --json --biases prints it) with the triage object the one-page
// report reads: layer_mix, fits_on (the smallest deployment of every GPU preset that holds one sequence of the
// report's context, with `engine`'s cache), generated, tool_version.
// The cache is `engine`'s own for the checkpoint unless `cacheGiven` (the load's options then stand).
nlohmann::ordered_json triageJson(const LoadResult &result, PlanEngine engine, bool cacheGiven = false);

// Writes report.json, report.md, report.html and the figures report.md references into `dir` (made if
// missing); returns the files written. Throws AtlasError(Source) naming a file that cannot be written.
std::vector<std::filesystem::path> writeTriageReport(const LoadResult &result, PlanEngine engine,
                                                     const std::filesystem::path &dir, bool cacheGiven = false);

// ckpt-atlas report [SOURCE] --out DIR [...]
int runReport(const std::vector<std::string> &args);

} // namespace atlas
