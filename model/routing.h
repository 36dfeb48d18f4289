#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>

#include "safetensors.h"
#include <optional>
#include <string>
#include <string_view>
#include <memory>
#include <vector>

namespace atlas {

// How a router turns a token's logits into scores:
// - Sigmoid: one sigmoid per expert (DeepSeek-V3, GLM: noaux_tc);
// - Softmax: softmax over all experts, then top-K (Mixtral, Qwen MoE);
// - SoftmaxAfterTopk: top-K of the logits themselves, softmax over the chosen ones (gpt-oss);
// - SqrtSoftplus: sqrt(softplus(logit)) per expert (DeepSeek-V4); like Sigmoid, the correction bias is
//   added for the choice only and the weights are the chosen unbiased scores, renormalised.
enum class Scoring { Sigmoid, Softmax, SoftmaxAfterTopk, SqrtSoftplus };
std::string_view scoringName(Scoring s); // "sigmoid", "softmax", "softmax_after_topk", "sqrtsoftplus"

// What a layer's router bias is, when it has one:
// - Correction: e_score_correction_bias, added to the scores for the selection only (noaux_tc);
// - Logit: the bias of the router's linear layer, part of the logits (gpt-oss mlp.router.bias);
// - None: the router has no bias; the bias variants then equal the reference.
enum class BiasUse { Correction, Logit, None };
std::string_view biasUseName(BiasUse b); // "correction", "logit", "none"

// Routing as domain.md section 8 defines it, for the router functions above.
struct RouterConfig
{
    int experts = 0;
    int topk = 0;
    int groups = 1;     // n_group
    int topkGroups = 1; // topk_group
    bool normTopkProb = true;
    float scaling = 1.0f; // routed_scaling_factor
    Scoring scoring = Scoring::Sigmoid;
    BiasUse bias = BiasUse::Correction;
    std::string scoringFrom; // where the scoring came from: "scoring_func" or the default that applied
};

// A token's router scores from its logits: sigmoid per expert, softmax over the experts, or the
// logits themselves (softmax after top-K: the softmax is taken over the chosen experts' weights).
void routerScores(const RouterConfig &config, const float *logits, float *scores);

struct Routing
{
    std::vector<int> experts;   // chosen experts, best first (ties: lower index first)
    std::vector<float> weights; // the same order
};

// One token: selection by score + bias (the correction bias; zeros otherwise), grouped when
// groups > 1; weights from the scores of the chosen experts (softmax over them for
// SoftmaxAfterTopk), normalised when norm_topk_prob, times routed_scaling_factor.
struct RouterKernel
{
    template <int W>
    static void route(class Router &r, const float *scores, const float *bias, struct Routing &out,
                      const std::vector<int> *hint, bool bf16Sums);
};

class Router
{
public:
    explicit Router(RouterConfig config);
    const RouterConfig &config() const { return m_config; }
    // scores: routerScores(logits) already computed (FP32). `hint`, when given, is K experts of another
    // routing of the same token: it only makes the search faster, never changes the answer.
    // bf16Sums: the choice scores and the group sums rounded to BF16 as they are formed (torch_bf16).
    void route(const float *scores, const float *bias, Routing &out, const std::vector<int> *hint = nullptr,
               bool bf16Sums = false);

private:
    friend struct RouterKernel; // route, built for each instruction set (routing.cpp)
    RouterConfig m_config;
    std::vector<float> m_choice;
    std::vector<float> m_candValue; // the experts at or above a threshold, packed (E + 16 slots)
    std::vector<int> m_candIndex;
    std::vector<char> m_groupKept;
    std::vector<std::pair<float, int>> m_groupScores;
};

// The instruction sets the simulation's vector loops are built for (x86-64 with GCC; elsewhere the
// baseline only). The best the CPU runs is used; every one gives the same bits.
enum class RoutingIsa { Baseline, X86_64_V3, X86_64_V4 };
std::string_view routingIsaName(RoutingIsa isa); // "baseline", "x86-64-v3", "x86-64-v4"
std::vector<RoutingIsa> supportedRoutingIsas();  // those this CPU runs, the baseline first
RoutingIsa routingIsa();                         // in use: the best, or ATLAS_ISA's name at start-up
bool setRoutingIsa(RoutingIsa isa);              // false (and unchanged) if the CPU cannot run it
// The x86-64-v3 synthetic logits run S values a step on the scalar multiplier beside eight on AVX2: S = 2,
// or 8 on Zen 1. Tests set 2 or 8 to run either on any CPU (the same bits); anything else: chosen again.
void setSyntheticScalarShare(int values);

// 1 / (1 + e^-x) in FP32, to within a few units in the last place, the same bits on every machine;
// NaN stays NaN. sigmoidRow does a whole row and is what the simulation uses.
float sigmoid(float x);
void sigmoidRow(const float *__restrict x, float *__restrict out, int n);
// sigmoid of every BF16 value, indexed by its bits (built once, thread-safe).
const std::vector<float> &sigmoidOfEveryBf16();

// The variants against the FP32 reference (domain.md section 8). TorchBf16 is torch-native grouped
// top-k on BF16 tensors: s = bf16(sigmoid(bf16(logit))), c = bf16(s + bf16(bias)), group sums in BF16.
enum class Variant { BiasBf16 = 0, LogitsBf16 = 1, BothBf16 = 2, TorchBf16 = 3 };
inline constexpr int kVariantCount = 4;
const char *variantName(Variant v);
// The runtime paths a variant stands for, in a sentence (section 8's list).
const char *variantRuntimes(Variant v);
// The FP32 reference's runtimes.
const char *referenceRuntimes();

struct VariantStats
{
    double changedSetFraction = 0;   // tokens whose top-K set changed
    double meanReplaced = 0;         // experts replaced per token
    double orderChangedFraction = 0; // tokens with the same set in another order
    double weightL1 = 0;             // mean over tokens of sum |w_ref - w_variant|
    std::vector<std::uint32_t> load; // tokens per expert
};

struct LayerRouting
{
    int layer = 0;
    std::uint32_t tokens = 0;
    std::vector<std::uint32_t> referenceLoad;
    VariantStats variants[kVariantCount];
};

// Deterministic synthetic logits: splitmix64 streams per (seed, layer); each value is the sum of
// eight 16-bit uniforms, centred and scaled to variance std^2 (Irwin-Hall, n = 8): the same
// numbers on every machine, using integer arithmetic and one float multiply.
void syntheticLogits(std::uint64_t seed, int layer, std::uint32_t tokens, int experts, float std, float *out);
// The same numbers from token `firstToken` on: a block of the table above, without making the rest.
void syntheticLogits(std::uint64_t seed, int layer, std::uint32_t firstToken, std::uint32_t tokens, int experts,
                     float std, float *out);

// Routes every token under the reference and the three variants. logits: tokens x experts, the
// gate's output before any bias. `bias`: one value per expert (zeros when config.bias is None).
// Throws AtlasError("cancelled") soon after `cancel` is set, within the layer.
LayerRouting simulateLayer(int layer, const RouterConfig &config, const std::vector<float> &bias,
                           const float *logits, std::uint32_t tokens,
                           const std::atomic<bool> *cancel = nullptr);

// The same, with the logits handed over a block of kLogitBlockTokens tokens at a time:
// block(first, count) returns count rows of experts logits, valid until the next call.
inline constexpr std::uint32_t kLogitBlockTokens = 4096;
using LogitBlocks = std::function<const float *(std::uint32_t first, std::uint32_t count)>;
LayerRouting simulateLayerBlocks(int layer, const RouterConfig &config, const std::vector<float> &bias,
                                 std::uint32_t tokens, const std::atomic<bool> *cancel, const LogitBlocks &block);

// Experts that leave the top-K set when every logit is 0 and the bias is rounded to BF16 (0 for
// a router without a bias).
int zeroLogitReplaced(const RouterConfig &config, const std::vector<float> &bias);

// The zero-logit probe with its ties: at zero logits many BF16 choice scores tie, so the count depends
// on the tie rule. `replaced` follows this program's lower-index rule; min and max are the fewest and
// the most experts any tie order of the BF16 selection would replace (groups included). min/max are
// absent only when tied groups leave more than 4,096 ways to choose (or 2^26 expert visits).
struct ZeroLogitProbe
{
    int replaced = 0;
    std::optional<int> min, max;
};
ZeroLogitProbe zeroLogitProbe(const RouterConfig &config, const std::vector<float> &bias);

// Logits captured from a real run: one [T, E] table for every layer ("logits"), or one per
// layer ("layers.N"), read from a safetensors file.
struct CapturedLogits
{
    std::string file;
    std::uint32_t tokens = 0;
    int experts = 0;
    std::vector<float> shared;                  // "logits", when present
    std::map<int, std::vector<float>> perLayer; // "layers.N"
    std::uint64_t nonFinite = 0;                // NaN and infinite values (they route as -inf / +inf)
    const std::vector<float> *forLayer(int layer) const;
};

// Tokens per layer the simulation accepts, from --tokens or a logits file.
inline constexpr std::uint32_t kMaxRoutingTokens = 1u << 24;

// What the simulation may hold at once: a quarter of physical memory (or of RLIMIT_AS when set).
std::uint64_t routingMemoryLimit();
// Throws AtlasError(Usage) naming --tokens when tokens x experts x 4 bytes x threads exceed `limit`.
void checkRoutingMemory(std::uint32_t tokens, int experts, unsigned threads, std::uint64_t limit);

// Where a logits file keeps its logits, read from its header alone, so that nothing larger than
// the logits themselves is ever read. Throws AtlasError(Invalid) naming the file and the limit.
struct LogitsFileLayout
{
    std::string file;
    std::uint64_t dataStart = 0; // 8 + header length
    std::uint64_t dataEnd = 0;   // the end of the last logits tensor, from the start of the file
    std::uint32_t tokens = 0;
    int experts = 0;
    std::vector<std::pair<int, TensorInfo>> tensors; // layer (-1: "logits") and where it lies
    std::vector<std::shared_ptr<const void>> nameStores; // what the tensors' names point into (the header's)
};
// `head`: at least the first 8 + N bytes of a file of `fileSize` bytes.
LogitsFileLayout parseLogitsHeader(const std::string &file, std::string_view head, std::uint64_t fileSize,
                                   std::uint64_t memoryLimit);
// `bytes`: the file from its start to at least layout.dataEnd.
CapturedLogits decodeLogits(const LogitsFileLayout &layout, std::string_view bytes);
// Both steps over a whole file held in memory.
CapturedLogits parseLogitsFile(const std::string &file, std::string_view bytes);

struct RoutingOptions
{
    std::uint32_t tokens = 4096;
    std::uint64_t seed = 0;
    float logitStd = 1.0f;
    const CapturedLogits *captured = nullptr;
    unsigned threads = 0; // 0: one per core
    const std::atomic<bool> *cancel = nullptr;
    std::atomic<std::uint64_t> *routed = nullptr; // tokens handed to the router so far, all layers
    std::uint64_t memoryLimit = 0; // 0: routingMemoryLimit()
};

// A layer the simulation left out, and why ("hash-routed: gate.tid2eid chooses the experts …").
struct SkippedLayer
{
    int layer = -1;
    std::string reason;
    std::string text() const { return "layer " + std::to_string(layer) + ": " + reason; } // as reports print it
};

struct RoutingRun
{
    std::uint32_t tokens = 0;
    std::uint64_t seed = 0;
    std::string logits; // "synthetic normal (std 1.0, seed 0)" or the captured file
    bool synthetic = true;
    std::uint64_t logitsNonFinite = 0; // captured NaN / infinite logits (flagged in the report)
    RouterConfig router;
    std::vector<LayerRouting> layers;
    std::vector<SkippedLayer> skipped; // layers that could not be simulated, with the reason
};

// One layer's bias to simulate with.
struct LayerBias
{
    int layer = -1;
    std::vector<float> values;
    std::string skip; // when set, the layer is not simulated, for this reason (a hash-routed layer)
};

// What a simulation is asked to do: the layers' biases, the router, the token options and, when
// given, a captured-logits file to read first (by whoever runs the request, off the GUI thread).
struct RoutingRequest
{
    std::vector<LayerBias> biases;
    RouterConfig router;
    RoutingOptions options; // captured and cancel are set by the runner
    std::string logitsFile;
};

// Simulates every layer on a few threads. Throws std::runtime_error("cancelled") on cancel.
RoutingRun simulateRouting(const std::vector<LayerBias> &biases, const RouterConfig &router,
                           const RoutingOptions &options);

} // namespace atlas
