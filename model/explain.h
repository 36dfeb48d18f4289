#pragma once

// The working behind a headline number (domain.md section 17): integer arithmetic that evaluates exactly
// to the number, and what each factor is (a config key, a tensor group, a preset's entry size). The report
// carries them as `explain` {path → {expression, terms}}, `inspect --explain` prints them, the window shows
// them on the numbers.
#include "analysis.h"
#include "cache_budget.h"
#include "capacity_plan.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace atlas {

struct WorkingTerm
{
    std::string factor; // as it stands in the expression: "78"
    std::string from;   // "num_hidden_layers: the MLA layers"
};

struct Working
{
    std::string expression; // "78*(512+64)*2 + 21*144"
    std::vector<WorkingTerm> terms;
};

// Report path ("cache.bytes_per_token") → its working, in the report's order. A number whose arithmetic
// is not exact in these terms has no entry.
using Explanations = std::vector<std::pair<std::string, Working>>;

Explanations explainReport(const ModelConfig &config, const CheckpointAnalysis &analysis, const CacheBudget &cache);
// The plan's per_gpu.weight_bytes, per_gpu.max_cached_tokens and sequences_at_context.
Explanations explainPlan(const CapacityPlan &plan);

// An exact rational, the value of an expression.
struct ExactValue
{
    __int128 numerator = 0;
    __int128 denominator = 1;
    // Both sides are in lowest terms (evaluateWorking and the report's numbers): equal when both parts are.
    bool operator==(const ExactValue &o) const { return numerator == o.numerator && denominator == o.denominator; }
};
// Evaluates integers with + - * /, parentheses and min(a, b, ...), exactly (/ is exact division); nullopt
// when the text is not such an expression, divides by zero or overflows.
std::optional<ExactValue> evaluateWorking(std::string_view expression);

} // namespace atlas
