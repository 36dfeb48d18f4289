#include "bias_report.h"

#include <map>
#include "c_locale.h"

#include "report.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace atlas {

namespace {

// JSON has no NaN or infinity: those values are written as the strings "nan", "inf" and "-inf",
// so that a level made of them is still told apart from a missing value (null).
nlohmann::ordered_json number(float v)
{
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return static_cast<double>(v);
}

// Routing biases the file holds in a 16-bit type: their FP32 values were rounded before any runtime reads
// them (a quantised copy that converted them so; Kimi-Linear ships them so). Counted by dtype, "" when none.
std::string sixteenBitStorage(const std::vector<BiasStats> &biases, std::uint64_t *count)
{
    std::map<std::string, std::uint64_t> byDtype;
    for (const auto &b : biases)
        if (b.dtype == "BF16" || b.dtype == "F16") ++byDtype[b.dtype];
    std::uint64_t n = 0;
    std::string words;
    for (const auto &[d, k] : byDtype) {
        n += k;
        words += (words.empty() ? "" : ", ") + std::to_string(k) + " in " + d;
    }
    if (count) *count = n;
    return words;
}

} // namespace

nlohmann::ordered_json biasesJson(const std::vector<BiasStats> &biases, std::uint64_t bytesRead, BiasUse kind)
{
    using J = nlohmann::ordered_json;
    J out;
    out["kind"] = biasUseName(kind);
    out["tensors"] = biases.size();
    const BiasSummary sum = summarizeBiases(biases, kind);
    out["summary"] = {{"tensors", sum.tensors},
                      {"first_layer", sum.tensors ? J(sum.firstLayer) : J()},
                      {"last_layer", sum.tensors ? J(sum.lastLayer) : J()},
                      {"values_per_tensor", sum.valuesPerTensor ? J(*sum.valuesPerTensor) : J()},
                      {"bytes_read", sum.bytesRead},
                      {"bf16_bytes", sum.bf16Bytes},
                      {"median_fp32_distinct", sum.medianFp32Distinct},
                      {"median_bf16_distinct", sum.medianBf16Distinct},
                      {"min_bf16_distinct", sum.minBf16Distinct},
                      {"max_bf16_distinct", sum.maxBf16Distinct},
                      {"layers_losing_levels", sum.layersLosingLevels},
                      {"layers_changed_at_zero_logits", sum.layersChangedAtZeroLogits},
                      {"layers_changed_at_zero_logits_min", sum.layersChangedAtZeroLogitsMin},
                      {"layers_changed_at_zero_logits_max", sum.layersChangedAtZeroLogitsMax}};
    out["bytes_read"] = bytesRead;
    std::uint64_t sixteen = 0;
    sixteenBitStorage(biases, &sixteen);
    out["stored_16bit"] = sixteen; // tensors the file holds in BF16 or F16 (their FP32 values already rounded)
    J layers = J::array();
    for (const auto &b : biases) {
        J row;
        row["layer"] = b.layer;
        row["tensor"] = b.tensor;
        row["dtype"] = b.dtype;
        row["shape"] = b.shape;
        row["sha256"] = b.sha256;
        row["min"] = b.min ? number(*b.min) : J();
        row["max"] = b.max ? number(*b.max) : J();
        row["spread"] = b.min && b.max ? number(*b.max - *b.min) : J();
        row["fp32_distinct"] = b.fp32Distinct;
        row["bf16_distinct"] = b.bf16Distinct;
        row["zero_logit_replaced"] = b.zeroLogitReplaced ? J(*b.zeroLogitReplaced) : J();
        row["zero_logit_replaced_min"] = b.zeroLogitMin ? J(*b.zeroLogitMin) : J();
        row["zero_logit_replaced_max"] = b.zeroLogitMax ? J(*b.zeroLogitMax) : J();
        row["nan"] = b.nanCount;
        row["inf"] = b.infCount;
        // The histogram's data: each BF16 level and the FP32 values that collapse onto it.
        J levels = J::array();
        for (const auto &l : b.levels)
            levels.push_back({{"bf16", number(l.value)},
                              {"count", l.count},
                              {"fp32_distinct", l.fp32Distinct},
                              {"fp32_min", number(l.fp32Min)},
                              {"fp32_max", number(l.fp32Max)}});
        row["levels"] = levels;
        layers.push_back(row);
    }
    out["layers"] = layers;
    return out;
}

nlohmann::ordered_json routingJson(const RoutingRun &run)
{
    using J = nlohmann::ordered_json;
    J out;
    out["tokens"] = run.tokens;
    out["seed"] = run.seed;
    out["logits"] = run.logits;
    out["synthetic"] = run.synthetic;
    out["logits_non_finite"] = run.logitsNonFinite;
    if (run.synthetic) out["note"] = kSyntheticLogitsNote;
    out["router"] = {{"scoring", scoringName(run.router.scoring)},
                     {"scoring_from", run.router.scoringFrom},
                     {"bias", biasUseName(run.router.bias)},
                     {"experts", run.router.experts},
                     {"topk", run.router.topk},
                     {"n_group", run.router.groups},
                     {"topk_group", run.router.topkGroups},
                     {"norm_topk_prob", run.router.normTopkProb},
                     {"routed_scaling_factor", run.router.scaling}};
    J layers = J::array();
    for (const auto &l : run.layers) {
        J row;
        row["layer"] = l.layer;
        J changed, replaced, order, l1;
        for (int v = 0; v < kVariantCount; ++v) {
            const char *name = variantName(static_cast<Variant>(v));
            changed[name] = l.variants[v].changedSetFraction;
            replaced[name] = l.variants[v].meanReplaced;
            order[name] = l.variants[v].orderChangedFraction;
            l1[name] = l.variants[v].weightL1;
        }
        row["changed_set_fraction"] = changed;
        row["mean_replaced"] = replaced;
        row["order_changed_fraction"] = order;
        row["weight_l1"] = l1;
        layers.push_back(row);
    }
    out["layers"] = layers;
    auto skipped = nlohmann::ordered_json::array();
    for (const auto &s : run.skipped)
        skipped.push_back(s.text());
    out["skipped"] = skipped;
    return out;
}

std::string formatBiasTable(const std::vector<BiasStats> &biases, std::uint64_t bytesRead, BiasUse kind)
{
    const CLocaleScope cLocale; // printf-style columns below: never the user's decimal comma
    std::ostringstream o;
    if (kind == BiasUse::None && biases.empty()) {
        o << "\nRouter biases  none: the routers of this checkpoint have no bias\n";
        return o.str();
    }
    o << (kind == BiasUse::Logit ? "\nRouter linear biases (part of the logits)  " : "\nRouter correction biases  ")
      << biases.size() << " tensors, " << groupDigits(bytesRead) << " bytes read (exactly the tensors)\n";
    const BiasSummary sum = summarizeBiases(biases, kind);
    if (sum.tensors) {
        char head[512];
        std::snprintf(head, sizeof head,
                      "  layers %d..%d, %s values each; %s bytes as read, %s in BF16\n"
                      "  distinct values: median %.1f in FP32 -> %.1f in BF16 (BF16 %u..%u); %llu of %llu "
                      "layers lose levels\n"
                      "  at zero logits: %llu layers change experts (%llu..%llu over tie orders)\n",
                      sum.firstLayer, sum.lastLayer,
                      sum.valuesPerTensor ? groupDigits(*sum.valuesPerTensor).c_str() : "varying",
                      groupDigits(sum.bytesRead).c_str(), groupDigits(sum.bf16Bytes).c_str(), sum.medianFp32Distinct,
                      sum.medianBf16Distinct, sum.minBf16Distinct, sum.maxBf16Distinct,
                      static_cast<unsigned long long>(sum.layersLosingLevels),
                      static_cast<unsigned long long>(sum.tensors),
                      static_cast<unsigned long long>(sum.layersChangedAtZeroLogits),
                      static_cast<unsigned long long>(sum.layersChangedAtZeroLogitsMin),
                      static_cast<unsigned long long>(sum.layersChangedAtZeroLogitsMax));
        o << head;
    }
    std::uint64_t sixteen = 0;
    if (const std::string stored = sixteenBitStorage(biases, &sixteen); !stored.empty())
        o << "  STORED IN 16 BITS: " << stored << " of " << biases.size()
          << (sixteen == biases.size() ? " (every one)" : "")
          << " in the file itself: the values were rounded before any runtime reads them; the FP32 levels below are "
             "the 16-bit values widened, not the originals\n";
    char line[256];
    std::snprintf(line, sizeof line, "  %5s %-6s %12s %12s %10s %6s %6s %9s %7s  %s\n", "layer", "dtype", "min",
                  "max", "spread", "fp32", "bf16", "zero-log", "ties", "sha256");
    o << line;
    for (const auto &b : biases) {
        const double mn = b.min ? *b.min : NAN, mx = b.max ? *b.max : NAN;
        const std::string ties = b.zeroLogitMin && b.zeroLogitMax
                                     ? std::to_string(*b.zeroLogitMin) + ".." + std::to_string(*b.zeroLogitMax)
                                     : std::string("-");
        std::snprintf(
            line, sizeof line, "  %5d %-6s %12.6f %12.6f %10.6f %6u %6u %9s %7s  %.16s…%s\n", b.layer,
            b.dtype.c_str(), mn, mx, mx - mn, b.fp32Distinct, b.bf16Distinct,
            b.zeroLogitReplaced ? std::to_string(*b.zeroLogitReplaced).c_str() : "-", ties.c_str(), b.sha256.c_str(),
            (b.nanCount || b.infCount)
                ? ("  NaN " + std::to_string(b.nanCount) + ", Inf " + std::to_string(b.infCount)).c_str()
                : "");
        o << line;
    }
    o << "  fp32 / bf16: distinct values before and after round-to-nearest-even to BF16;\n"
         "  zero-log: experts replaced in the top-k when every logit is 0 and the bias is BF16 (ties to the\n"
         "  lower index); ties: the fewest..most any order of the tied BF16 scores would replace\n";
    return o.str();
}

std::string formatRoutingTable(const RoutingRun &run)
{
    const CLocaleScope cLocale; // printf-style columns below: never the user's decimal comma
    std::ostringstream o;
    o << "\nRouting simulation  " << run.tokens << " tokens per layer, logits: " << run.logits << "\n";
    if (run.synthetic) o << "  " << kSyntheticLogitsNote << "\n";
    o << "  router: " << run.router.experts << " experts, top-" << run.router.topk << ", "
      << scoringName(run.router.scoring) << " (" << run.router.scoringFrom << "), bias "
      << biasUseName(run.router.bias) << "\n";
    if (run.router.bias == BiasUse::None)
        o << "  no router bias: bias_bf16 equals the reference, both_bf16 equals logits_bf16\n";
    o << "  reference: " << referenceRuntimes() << "\n";
    for (int v = 0; v < kVariantCount; ++v)
        o << "  " << variantName(static_cast<Variant>(v)) << ": " << variantRuntimes(static_cast<Variant>(v)) << "\n";
    char line[320];
    std::string head = "  layer  ", sub = "         ";
    for (int v = 0; v < kVariantCount; ++v) {
        char cell[64];
        std::snprintf(cell, sizeof cell, "%-28s", variantName(static_cast<Variant>(v)));
        head += cell;
        sub += "changed  replaced  wL1      ";
    }
    o << head << "\n" << sub << "\n";
    for (const auto &l : run.layers) {
        std::string cells;
        for (int v = 0; v < kVariantCount; ++v) {
            char cell[64];
            std::snprintf(cell, sizeof cell, "%6.2f%% %8.3f %7.4f    ",
                          100.0 * l.variants[v].changedSetFraction, l.variants[v].meanReplaced,
                          l.variants[v].weightL1);
            cells += cell;
        }
        std::snprintf(line, sizeof line, "  %5d  %s\n", l.layer, cells.c_str());
        o << line;
    }
    for (const auto &s : run.skipped)
        o << "  skipped " << s.text() << "\n";
    if (run.logitsNonFinite)
        o << "  warning: " << run.logitsNonFinite
          << " captured logits are NaN or infinite; NaN choice scores rank as -inf (ties: lower expert "
             "index)\n";
    return o.str();
}

} // namespace atlas
