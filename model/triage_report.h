#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <utility>
#include <vector>

namespace atlas {

// A one-page triage report of a checkpoint for a reviewer (issue: "answers, not only numbers"): identity and
// provenance, size with and without MTP, active parameters, formats per category, the layer mix, cache per
// token and per sequence, where it fits, and what looks wrong. Every number it prints is one of `report`'s
// (the JSON report, ckpt-atlas.report/1, with its "triage" object: layer_mix, fits_on, generated), shown
// exactly or scaled to a unit (10^9 parameters, 2^30 bytes) and rounded: nothing is computed here.
struct TriageFiles
{
    std::string markdown;
    std::string html; // self-contained: its figures inline
    std::vector<std::pair<std::string, std::string>> figures; // file name -> SVG, referenced by the Markdown
};

// The triage object's layer mix from the report's layers[]: how many main layers of each mixer, how many of
// them own an indexer or reuse one, and the MTP layers.
nlohmann::ordered_json layerMix(const nlohmann::ordered_json &report);

TriageFiles triageReport(const nlohmann::ordered_json &report);

} // namespace atlas
