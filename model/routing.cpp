#include "routing.h"

#include "bf16.h"
#include "bias_audit.h"
#include "errors.h"
#include "model_config.h"
#include "parallel_for.h"
#include "safetensors.h"
#include "splitmix64.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <mutex>
#include <stdexcept>
#include <thread>

#if defined(__SSE2__)
#include <immintrin.h>
#endif
#include <sys/resource.h>
#include <unistd.h>

// The hot loops are built three times on x86-64: for AVX-512 (x86-64-v4), for AVX2 + FMA (x86-64-v3)
// and for the baseline, and the best the CPU runs is picked at start-up (routingIsa; ATLAS_ISA or
// setRoutingIsa choose another, for tests and the bench). All compute the same bits: integer arithmetic
// is exact, and the float operations are the same IEEE operations in the same order (no FMA
// contraction: -ffp-contract=off).
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ATLAS_ISA_DISPATCH 1
#define ATLAS_KERNEL inline __attribute__((always_inline))
#define ATLAS_V3 __attribute__((target("arch=x86-64-v3")))
#define ATLAS_V4 __attribute__((target("arch=x86-64-v4")))
#else // one build: the v3 / v4 entry points are the baseline under other names
#define ATLAS_ISA_DISPATCH 0
#define ATLAS_KERNEL inline
#define ATLAS_V3
#define ATLAS_V4
#endif

namespace atlas {

namespace {

// exp(t) for t already clamped to [-87, 87]: t = n ln2 + r with |r| <= ln2/2 (Cody-Waite, two-part
// ln2), e^r by its Taylor series to r^7/7! (relative error below 2e-8 on that interval), and 2^n
// put straight into the exponent bits. Plain float arithmetic in a fixed order, so the compiler
// can run it four or eight lanes at a time and every machine gets the same bits (no FMA
// contraction: routing.cpp is built with -ffp-contract=off).
ATLAS_KERNEL float expClamped(float t)
{
    constexpr float kLog2e = 1.44269504088896341f;
    constexpr float kLn2Hi = 0.693145751953125f; // 0x3F317200: exact in float, n*kLn2Hi exact too
    constexpr float kLn2Lo = 1.42860682030941723212e-6f;
    constexpr float kRound = 12582912.0f; // 1.5 * 2^23: adding and subtracting it rounds to an integer
    const float n = (t * kLog2e + kRound) - kRound;
    const float r = (t - n * kLn2Hi) - n * kLn2Lo;
    float p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    const auto scale =
        std::bit_cast<float>(static_cast<std::uint32_t>(static_cast<std::int32_t>(n) + 127) << 23);
    return p * scale;
}

} // namespace

namespace {

ATLAS_KERNEL void sigmoidRowKernel(const float *__restrict x, float *__restrict out, int n)
{
    for (int i = 0; i < n; ++i) {
        const float v = x[i];
        // Beyond +-87, sigmoid is 0 or 1 to float precision. A NaN goes through the arithmetic as 0
        // (no float-to-int conversion of a NaN) and comes out as NaN again at the end.
        float t = v == v ? -v : 0.0f;
        t = t < -87.0f ? -87.0f : t;
        t = t > 87.0f ? 87.0f : t;
        const float s = 1.0f / (1.0f + expClamped(t));
        out[i] = v == v ? s : v; // NaN stays NaN (it then ranks as -inf in the selection)
    }
}

ATLAS_KERNEL std::uint64_t splitmixAt(std::uint64_t z) // splitmix64's output for the state z (already advanced)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

// Where a block of the synthetic table starts: draw k's state is base + (k + 1) gamma.
constexpr std::uint64_t kGamma = 0x9E3779B97F4A7C15ULL;
struct SyntheticStart
{
    std::uint64_t base;
    float scale;
    std::size_t n;
};
ATLAS_KERNEL SyntheticStart syntheticStart(std::uint64_t seed, int layer, std::uint32_t firstToken,
                                           std::uint32_t tokens, int experts, float std)
{
    const std::uint64_t skipped = static_cast<std::uint64_t>(firstToken) * static_cast<std::uint64_t>(experts) * 2;
    // Sum of eight U[0, 65535]: mean 8 * 32767.5 = 262,140, variance 8 * (65536^2 - 1) / 12. The sum less
    // the mean is an integer below 2^19 in magnitude: exact in float, as it was in double.
    const double sd = std::sqrt(8.0 * (65536.0 * 65536.0 - 1.0) / 12.0);
    return {seed * 0xD1B54A32D192ED03ULL + static_cast<std::uint64_t>(layer) * 0x8CB92BA72F3D8DD7ULL + 1 +
                skipped * kGamma,
            static_cast<float>(1.0 / sd) * std, static_cast<std::size_t>(tokens) * static_cast<std::size_t>(experts)};
}

// The state of value i's first draw (its second is one gamma on).
ATLAS_KERNEL std::uint64_t syntheticState(std::uint64_t base, std::size_t i)
{
    return base + (2 * static_cast<std::uint64_t>(i) + 1) * kGamma;
}

// Value i of a block: two draws, the eight 16-bit fields of their outputs summed, centred and scaled.
ATLAS_KERNEL float syntheticValue(std::uint64_t base, std::size_t i, float scale)
{
    const std::uint64_t za = syntheticState(base, i);
    const std::uint64_t a = splitmixAt(za), b = splitmixAt(za + kGamma);
    // Pairs of 16-bit fields added in 32-bit halves, then the halves: the same sum of eight.
    const std::uint64_t pairs = (a & 0x0000FFFF0000FFFFULL) + ((a >> 16) & 0x0000FFFF0000FFFFULL) +
                                (b & 0x0000FFFF0000FFFFULL) + ((b >> 16) & 0x0000FFFF0000FFFFULL);
    const auto sum = static_cast<std::int32_t>((pairs & 0xFFFFFFFFULL) + (pairs >> 32));
    return static_cast<float>(sum - 262140) * scale;
}

ATLAS_KERNEL void syntheticLogitsKernel(std::uint64_t seed, int layer, std::uint32_t firstToken, std::uint32_t tokens,
                                        int experts, float std, float *out)
{
    // Each value takes two draws, and a draw only adds the golden gamma to the state: the stream can
    // start at any token, so a block of tokens holds the same numbers as the whole table. Every value is
    // computed on its own (no chain through the loop: the compiler runs it four or eight lanes at a time).
    const SyntheticStart at = syntheticStart(seed, layer, firstToken, tokens, experts, std);
    for (std::size_t i = 0; i < at.n; ++i)
        out[i] = syntheticValue(at.base, i, at.scale);
}

#if ATLAS_ISA_DISPATCH
// x * c mod 2^64 on four 64-bit lanes, from three 32 x 32 -> 64-bit multiplies (AVX2 has no 64-bit one).
ATLAS_V3 inline __m256i mulConst64x4(__m256i x, std::uint64_t c)
{
    const __m256i lo = _mm256_set1_epi64x(static_cast<long long>(c & 0xFFFFFFFFu));
    const __m256i hi = _mm256_set1_epi64x(static_cast<long long>(c >> 32));
    const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(x, 32), lo), _mm256_mul_epu32(x, hi));
    return _mm256_add_epi64(_mm256_mul_epu32(x, lo), _mm256_slli_epi64(cross, 32));
}
ATLAS_V3 inline __m256i splitmixAtx4(__m256i z)
{
    z = mulConst64x4(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), 0xBF58476D1CE4E5B9ULL);
    z = mulConst64x4(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), 0x94D049BB133111EBULL);
    return _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
}

// The synthetic table on AVX2: eight values a step in vector registers and S more in the general ones,
// in the same loop. AVX2's 64-bit multiply is three 32-bit ones, so a core's vector unit and its scalar
// multiplier are each busy with half of the work instead of one of them with all of it (1.5x faster on
// Zen 5 with S = 2). Zen 1 runs each 256-bit multiply as two 128-bit halves: there its scalar part is as
// fast as the vector one, and S = 8. The same values as syntheticLogitsKernel, bit for bit: integer
// arithmetic, and one conversion and one multiply of the same numbers.
template <int S>
__attribute__((target("arch=x86-64-v3"), optimize("no-tree-vectorize"))) void
syntheticHybridV3(std::uint64_t seed, int layer, std::uint32_t first, std::uint32_t tokens, int experts, float sd,
                  float *out)
{
    const SyntheticStart at = syntheticStart(seed, layer, first, tokens, experts, sd);
    constexpr std::size_t kStep = 8 + S;
    const auto stateOf = [&](std::size_t i) { return static_cast<long long>(syntheticState(at.base, i)); };
    __m256i za0 = _mm256_setr_epi64x(stateOf(0), stateOf(1), stateOf(2), stateOf(3));
    __m256i za1 = _mm256_setr_epi64x(stateOf(4), stateOf(5), stateOf(6), stateOf(7));
    const __m256i advance = _mm256_set1_epi64x(static_cast<long long>(2 * kStep * kGamma));
    const __m256i gamma = _mm256_set1_epi64x(static_cast<long long>(kGamma));
    const __m256i fields = _mm256_set1_epi64x(0x0000FFFF0000FFFFLL);
    const __m256i mean = _mm256_set1_epi32(262140);
    const __m256 scale = _mm256_set1_ps(at.scale);
    // Four values' pairs of 16-bit field sums, in the 32-bit halves of each 64-bit lane.
    const auto pairsOf = [&](__m256i za) __attribute__((always_inline)) {
        const __m256i a = splitmixAtx4(za), b = splitmixAtx4(_mm256_add_epi64(za, gamma));
        const __m256i p = _mm256_add_epi64(
            _mm256_add_epi64(_mm256_and_si256(a, fields), _mm256_and_si256(_mm256_srli_epi64(a, 16), fields)),
            _mm256_add_epi64(_mm256_and_si256(b, fields), _mm256_and_si256(_mm256_srli_epi64(b, 16), fields)));
        return _mm256_add_epi32(p, _mm256_srli_epi64(p, 32)); // each value's sum in its lane's low half
    };
    std::size_t i = 0;
    for (; i + kStep <= at.n; i += kStep) {
        const __m256i p0 = pairsOf(za0), p1 = pairsOf(za1);
        za0 = _mm256_add_epi64(za0, advance);
        za1 = _mm256_add_epi64(za1, advance);
        // The low halves of p0 then p1, in value order.
        const __m256 low = _mm256_shuffle_ps(_mm256_castsi256_ps(p0), _mm256_castsi256_ps(p1), 0x88);
        const __m256i sums = _mm256_permute4x64_epi64(_mm256_castps_si256(low), 0xD8);
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(sums, mean)), scale));
        for (std::size_t k = 8; k < kStep; ++k)
            out[i + k] = syntheticValue(at.base, i + k, at.scale);
    }
    for (; i < at.n; ++i)
        out[i] = syntheticValue(at.base, i, at.scale);
}
#endif

// The scores of the BF16 logits, looked up (a BF16 logit has one of 65,536 values), and those scores
// rounded to BF16 (torch_bf16's), for one token.
ATLAS_KERNEL void bf16ScoresKernel(const float *__restrict table, const float *__restrict row, float *__restrict s16,
                                   float *__restrict rounded, int n)
{
    for (int e = 0; e < n; ++e)
        s16[e] = table[bf16Bits(row[e])];
    for (int e = 0; e < n; ++e)
        rounded[e] = roundToBf16(s16[e]);
}
// The same computed, for AVX-512, whose sigmoid runs sixteen lanes at once: cheaper there than sixteen-lane
// gathers from the 256 KB table, and the same bits (the table is sigmoidRow of every BF16 value; a NaN
// logit rounds to the one NaN the table holds for it, and stays that NaN). AVX2 looks up, one value at a
// time: 1-2 % faster than computing on Zen 5 (x86-64-v3, bench_routing's work, 2 threads: 217 -> 213 ms),
// and more where 256-bit arithmetic runs at half rate (Zen 1) while scalar loads do not.
ATLAS_KERNEL void bf16ScoresComputedKernel(const float *__restrict row, float *__restrict s16,
                                           float *__restrict rounded, int n)
{
    constexpr int kChunk = 64;
    float r16[kChunk];
    for (int first = 0; first < n; first += kChunk) {
        const int m = n - first < kChunk ? n - first : kChunk;
        for (int e = 0; e < m; ++e)
            r16[e] = roundToBf16(row[first + e]);
        sigmoidRowKernel(r16, s16 + first, m);
    }
    for (int e = 0; e < n; ++e)
        rounded[e] = roundToBf16(s16[e]);
}
using Bf16ScoresFn = void (*)(const float *__restrict, float *__restrict, float *__restrict, int);
// The baseline reads the table (made at its first use), and x86-64-v3 runs the same function.
void bf16ScoresBaseline(const float *__restrict r, float *__restrict s, float *__restrict o, int n);
ATLAS_V4 void bf16ScoresV4(const float *__restrict r, float *__restrict s, float *__restrict o, int n)
{
    bf16ScoresComputedKernel(r, s, o, n);
}

using SigmoidRowFn = void (*)(const float *__restrict, float *__restrict, int);
using SyntheticFn = void (*)(std::uint64_t, int, std::uint32_t, std::uint32_t, int, float, float *);
// The AVX2 generator's scalar values per step (2 or 8); -1: chosen for the CPU (setSyntheticScalarShare).
std::atomic<int> g_syntheticScalar{-1};

void sigmoidRowBaseline(const float *__restrict x, float *__restrict out, int n) { sigmoidRowKernel(x, out, n); }
void syntheticBaseline(std::uint64_t seed, int layer, std::uint32_t first, std::uint32_t tokens, int experts, float sd, float *out)
{
    syntheticLogitsKernel(seed, layer, first, tokens, experts, sd, out);
}
ATLAS_V3 void sigmoidRowV3(const float *__restrict x, float *__restrict out, int n) { sigmoidRowKernel(x, out, n); }
ATLAS_V4 void sigmoidRowV4(const float *__restrict x, float *__restrict out, int n) { sigmoidRowKernel(x, out, n); }
void syntheticV3(std::uint64_t seed, int layer, std::uint32_t first, std::uint32_t tokens, int experts, float sd, float *out)
{
#if ATLAS_ISA_DISPATCH
    static const bool zen1 = __builtin_cpu_is("znver1");
    const int scalarShare = g_syntheticScalar.load(std::memory_order_relaxed);
    if (scalarShare == 8 || (scalarShare < 0 && zen1))
        syntheticHybridV3<8>(seed, layer, first, tokens, experts, sd, out);
    else
        syntheticHybridV3<2>(seed, layer, first, tokens, experts, sd, out);
#else
    syntheticLogitsKernel(seed, layer, first, tokens, experts, sd, out);
#endif
}
ATLAS_V4 void syntheticV4(std::uint64_t seed, int layer, std::uint32_t first, std::uint32_t tokens, int experts, float sd, float *out)
{
    syntheticLogitsKernel(seed, layer, first, tokens, experts, sd, out);
}

bool cpuRuns(RoutingIsa isa)
{
#if ATLAS_ISA_DISPATCH
    switch (isa) {
    case RoutingIsa::Baseline: return true;
    case RoutingIsa::X86_64_V3: return __builtin_cpu_supports("x86-64-v3");
    case RoutingIsa::X86_64_V4: return __builtin_cpu_supports("x86-64-v4");
    }
    return false;
#else
    return isa == RoutingIsa::Baseline;
#endif
}

RoutingIsa startupIsa()
{
    RoutingIsa best = RoutingIsa::Baseline;
    for (RoutingIsa i : supportedRoutingIsas()) best = i;
    if (const char *env = std::getenv("ATLAS_ISA"))
        for (RoutingIsa i : supportedRoutingIsas())
            if (routingIsaName(i) == env) return i;
    return best;
}

std::atomic<RoutingIsa> g_isa{startupIsa()};

// The build of a kernel for the instruction set in use.
template <class Fn>
Fn forIsa(Fn baseline, Fn v3, Fn v4)
{
    switch (g_isa.load(std::memory_order_relaxed)) {
    case RoutingIsa::X86_64_V4: return v4;
    case RoutingIsa::X86_64_V3: return v3;
    case RoutingIsa::Baseline: break;
    }
    return baseline;
}

} // namespace

std::string_view routingIsaName(RoutingIsa isa)
{
    switch (isa) {
    case RoutingIsa::Baseline: return "baseline";
    case RoutingIsa::X86_64_V3: return "x86-64-v3";
    case RoutingIsa::X86_64_V4: return "x86-64-v4";
    }
    return "";
}

std::vector<RoutingIsa> supportedRoutingIsas()
{
    std::vector<RoutingIsa> out;
    for (RoutingIsa i : {RoutingIsa::Baseline, RoutingIsa::X86_64_V3, RoutingIsa::X86_64_V4})
        if (cpuRuns(i)) out.push_back(i);
    return out;
}

RoutingIsa routingIsa()
{
    return g_isa.load(std::memory_order_relaxed);
}

void setSyntheticScalarShare(int values)
{
    g_syntheticScalar.store(values == 2 || values == 8 ? values : -1, std::memory_order_relaxed);
}

bool setRoutingIsa(RoutingIsa isa)
{
    if (!cpuRuns(isa)) return false;
    g_isa.store(isa, std::memory_order_relaxed);
    return true;
}

static void bf16Scores(const float *row, float *s16, float *rounded, int n)
{
    forIsa<Bf16ScoresFn>(bf16ScoresBaseline, bf16ScoresBaseline, bf16ScoresV4)(row, s16, rounded, n);
}

void sigmoidRow(const float *__restrict x, float *__restrict out, int n)
{
    forIsa<SigmoidRowFn>(sigmoidRowBaseline, sigmoidRowV3, sigmoidRowV4)(x, out, n);
}

const std::vector<float> &sigmoidOfEveryBf16()
{
    static const std::vector<float> table = [] {
        std::vector<float> in(65536), out(65536);
        for (std::uint32_t b = 0; b < 65536; ++b)
            in[b] = bf16ToFloat(static_cast<std::uint16_t>(b));
        sigmoidRow(in.data(), out.data(), 65536);
        return out;
    }();
    return table;
}

namespace {
void bf16ScoresBaseline(const float *__restrict r, float *__restrict s, float *__restrict o, int n)
{
    bf16ScoresKernel(sigmoidOfEveryBf16().data(), r, s, o, n);
}
} // namespace

float sigmoid(float x)
{
    float out;
    sigmoidRow(&x, &out, 1);
    return out;
}

std::string_view scoringName(Scoring s)
{
    switch (s) {
    case Scoring::Sigmoid:
        return "sigmoid";
    case Scoring::Softmax:
        return "softmax";
    case Scoring::SoftmaxAfterTopk:
        return "softmax_after_topk";
    case Scoring::SqrtSoftplus:
        return "sqrtsoftplus";
    }
    return "";
}

std::string_view biasUseName(BiasUse b)
{
    switch (b) {
    case BiasUse::Correction:
        return "correction";
    case BiasUse::Logit:
        return "logit";
    case BiasUse::None:
        return "none";
    }
    return "";
}

const char *variantName(Variant v)
{
    switch (v) {
    case Variant::BiasBf16:
        return "bias_bf16";
    case Variant::LogitsBf16:
        return "logits_bf16";
    case Variant::BothBf16:
        return "both_bf16";
    case Variant::TorchBf16:
        return "torch_bf16";
    }
    return "";
}

const char *variantRuntimes(Variant v)
{
    switch (v) {
    case Variant::BiasBf16:
        return "kernels that require a BF16 routing bias but take FP32 logits";
    case Variant::LogitsBf16:
        return "SGLang's quantized AITER path with both hunks of PR #37133 (FP32 bias, BF16 logits promoted "
               "to FP32): what is left after the fix";
    case Variant::BothBf16:
        return "SGLang's quantized AITER path before PR #37133, and its parameter-only patch (the bias "
               "converted to the gating dtype at the call)";
    case Variant::TorchBf16:
        return "torch-native grouped top-k on BF16 tensors (every step rounded to BF16, group sums too)";
    }
    return "";
}

const char *referenceRuntimes()
{
    return "transformers, the DeepSeek reference, and any runtime that honours moe_router_dtype: float32 "
           "(FP32 gate output, FP32 bias)";
}

Router::Router(RouterConfig config) : m_config(config)
{
    if (m_config.experts <= 0 || m_config.topk <= 0 || m_config.topk > m_config.experts)
        throw std::invalid_argument("router: top-k must be between 1 and the number of experts");
    if (m_config.groups < 1 || m_config.experts % m_config.groups != 0)
        throw std::invalid_argument("router: n_group must divide the number of experts");
    if (m_config.topkGroups < 1 || m_config.topkGroups > m_config.groups)
        throw std::invalid_argument("router: topk_group must be between 1 and n_group");
    m_choice.resize(static_cast<std::size_t>(m_config.experts));
    m_candValue.resize(static_cast<std::size_t>(m_config.experts) + 16);
    m_candIndex.resize(static_cast<std::size_t>(m_config.experts) + 16);
    m_groupKept.resize(static_cast<std::size_t>(m_config.groups));
    m_groupScores.resize(static_cast<std::size_t>(m_config.groups));
}

namespace {
constexpr int kLanes = 32; // classes of experts for the top-K threshold (see route)
}

namespace {

// The packing and ranking of the selection's candidates (route's selectFrom). Every version writes the
// same: the experts e in [0, E) with c[e] >= t in ascending order (ci, cv: n of them, returned; both
// arrays hold E + 16), then, for n <= kRankMax, the top min(n, K) by (score descending, index ascending)
// into idx / val. Scores are never NaN (the choice scores map NaN to -inf).
constexpr int kRankMax = 32;

// For each 8-bit mask, the positions of its set bits in order, a byte each (AVX2's left-pack).
struct PackTable
{
    std::uint64_t order[256];
    constexpr PackTable() : order()
    {
        for (unsigned m = 0; m < 256; ++m) {
            std::uint64_t v = 0;
            int k = 0;
            for (unsigned b = 0; b < 8; ++b)
                if (m & (1u << b)) v |= std::uint64_t(b) << (8 * k++);
            order[m] = v;
        }
    }
};
[[maybe_unused]] constexpr PackTable kPack{}; // read only by the AVX2 kernels

template <int W>
ATLAS_KERNEL int packAtLeastGeneric(const float *c, int E, float t, int *ci, float *cv)
{
    int n = 0;
    for (int e = 0; e < E; ++e) {
        ci[n] = e;
        cv[n] = c[e];
        n += c[e] >= t;
    }
    return n;
}

template <int W>
ATLAS_KERNEL void rankTopKGeneric(const int *ci, float *cv, int n, int K, int *idx, float *val)
{
    const int padded = (n + 7) & ~7;
    for (int j = n; j < padded; ++j)
        cv[j] = NAN; // beats nothing, equals nothing
    for (int i = 0; i < n; ++i) {
        const float v = cv[i];
        int rank = 0;
        for (int j = 0; j < padded; ++j)
            rank += (cv[j] > v) | ((cv[j] == v) & (j < i));
        if (rank < K) {
            idx[rank] = ci[i];
            val[rank] = v;
        }
    }
}

#if ATLAS_ISA_DISPATCH
// The packed experts' numbers are the first expert's plus the positions the permutation picks: an add, not
// a second cross-lane permute (Zen 1 runs a 256-bit vpermd as three micro-ops, one per four cycles).
ATLAS_V3 inline int packAtLeast8(const float *c, int E, float t, int *ci, float *cv)
{
    const __m256 tv = _mm256_set1_ps(t);
    __m256i first = _mm256_setzero_si256();
    const __m256i step = _mm256_set1_epi32(8);
    int n = 0;
    for (int e = 0; e < E; e += 8) {
        const __m256 v = _mm256_loadu_ps(c + e);
        const auto m = static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(v, tv, _CMP_GE_OQ)));
        const __m256i perm = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(kPack.order[m])));
        _mm256_storeu_ps(cv + n, _mm256_permutevar8x32_ps(v, perm));
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(ci + n), _mm256_add_epi32(first, perm));
        n += __builtin_popcount(m);
        first = _mm256_add_epi32(first, step);
    }
    return n;
}

ATLAS_V3 inline void rankTopK8(const int *ci, float *cv, int n, int K, int *idx, float *val)
{
    const int vectors = (n + 7) / 8;
    for (int j = n; j < vectors * 8; ++j)
        cv[j] = NAN;
    __m256 v[kRankMax / 8];
    for (int k = 0; k < vectors; ++k)
        v[k] = _mm256_loadu_ps(cv + 8 * k);
    int outIdx[kRankMax + 1];
    float outVal[kRankMax + 1];
    for (int i = 0; i < n; ++i) {
        const __m256 b = _mm256_set1_ps(cv[i]);
        unsigned gt = 0, eq = 0;
        for (int k = 0; k < vectors; ++k) {
            gt |= static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(v[k], b, _CMP_GT_OQ))) << (8 * k);
            eq |= static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(v[k], b, _CMP_EQ_OQ))) << (8 * k);
        }
        const unsigned before = i == 0 ? 0u : (~0u >> (32 - i));
        const int rank = __builtin_popcount(gt) + __builtin_popcount(eq & before);
        const int at = rank < K ? rank : K; // the places from K on are not kept
        outIdx[at] = ci[i];
        outVal[at] = cv[i];
    }
    const int kept = n < K ? n : K;
    for (int k = 0; k < kept; ++k) {
        idx[k] = outIdx[k];
        val[k] = outVal[k];
    }
}

ATLAS_V4 inline int packAtLeast16(const float *c, int E, float t, int *ci, float *cv)
{
    const __m512 tv = _mm512_set1_ps(t);
    __m512i ids = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i step = _mm512_set1_epi32(16);
    int n = 0;
    for (int e = 0; e < E; e += 16) {
        const __m512 v = _mm512_loadu_ps(c + e);
        const __mmask16 m = _mm512_cmp_ps_mask(v, tv, _CMP_GE_OQ);
        _mm512_storeu_ps(cv + n, _mm512_maskz_compress_ps(m, v));
        _mm512_storeu_si512(ci + n, _mm512_maskz_compress_epi32(m, ids));
        n += __builtin_popcount(m);
        ids = _mm512_add_epi32(ids, step);
    }
    return n;
}

ATLAS_V4 inline void rankTopK16(const int *ci, float *cv, int n, int K, int *idx, float *val)
{
    // The places after the n-th read as NaN (beats nothing, equals nothing): masked loads, not a loop
    // of stores whose length mispredicts. Each candidate is then taken from these registers, not from
    // cv / ci again: the packing has just written them with wide stores at other offsets, which a
    // narrow load cannot be forwarded from (it would wait for the stores to reach the cache).
    const int vectors = (n + 15) / 16;
    __m512 v[kRankMax / 16];
    __m512i ids[kRankMax / 16];
    for (int k = 0; k < vectors; ++k) {
        const int left = n - 16 * k;
        const auto present = static_cast<__mmask16>(left >= 16 ? 0xFFFFu : (1u << left) - 1u);
        v[k] = _mm512_mask_loadu_ps(_mm512_set1_ps(NAN), present, cv + 16 * k);
        ids[k] = _mm512_maskz_loadu_epi32(present, ci + 16 * k);
    }
    int outIdx[kRankMax + 1];
    float outVal[kRankMax + 1];
    for (int i = 0; i < n; ++i) {
        const __m512i lane = _mm512_set1_epi32(i & 15);
        const __m512 b = _mm512_mask_permutexvar_ps(v[i >> 4], 0xFFFF, lane, v[i >> 4]); // masked: GCC bug 105593
        unsigned gt = 0, eq = 0;
        for (int k = 0; k < vectors; ++k) {
            gt |= static_cast<unsigned>(_mm512_cmp_ps_mask(v[k], b, _CMP_GT_OQ)) << (16 * k);
            eq |= static_cast<unsigned>(_mm512_cmp_ps_mask(v[k], b, _CMP_EQ_OQ)) << (16 * k);
        }
        const unsigned before = i == 0 ? 0u : (~0u >> (32 - i));
        const int rank = __builtin_popcount(gt) + __builtin_popcount(eq & before);
        const int at = rank < K ? rank : K; // the places from K on are not kept
        outIdx[at] = _mm512_cvtsi512_si32(_mm512_mask_permutexvar_epi32(ids[i >> 4], 0xFFFF, lane, ids[i >> 4]));
        outVal[at] = _mm512_cvtss_f32(b);
    }
    // The kept places one by one: a wide load of these narrow stores would wait for them to reach the cache.
    const int kept = n < K ? n : K;
    for (int k = 0; k < kept; ++k) {
        idx[k] = outIdx[k];
        val[k] = outVal[k];
    }
}
#endif

// The same, the choice scores formed on the way: c[e] = scores[e] + bias[e] (rounded to BF16 when
// bf16Sums), NaN as -inf.
template <int W>
ATLAS_KERNEL int packSumAtLeastGeneric(const float *s, const float *b, int E, float t, bool bf16Sums, int *ci, float *cv)
{
    int n = 0;
    for (int e = 0; e < E; ++e) {
        float v = s[e] + b[e];
        if (bf16Sums) v = roundToBf16(v);
        v = std::isnan(v) ? -INFINITY : v;
        ci[n] = e;
        cv[n] = v;
        n += v >= t;
    }
    return n;
}

#if ATLAS_ISA_DISPATCH
// roundToBf16 on eight lanes (NaN lanes are not rounded: the caller maps them to -inf).
ATLAS_V3 inline __m256 roundToBf16x8(__m256 v)
{
    const __m256i bits = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_add_epi32(bits, _mm256_add_epi32(_mm256_set1_epi32(0x7FFF), lsb));
    return _mm256_castsi256_ps(_mm256_and_si256(rounded, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
}

ATLAS_V3 inline int packSumAtLeast8(const float *s, const float *b, int E, float t, bool bf16Sums, int *ci, float *cv)
{
    const __m256 tv = _mm256_set1_ps(t), minusInf = _mm256_set1_ps(-INFINITY);
    __m256i first = _mm256_setzero_si256();
    const __m256i step = _mm256_set1_epi32(8);
    int n = 0;
    for (int e = 0; e < E; e += 8) {
        __m256 v = _mm256_add_ps(_mm256_loadu_ps(s + e), _mm256_loadu_ps(b + e));
        const __m256 ordered = _mm256_cmp_ps(v, v, _CMP_ORD_Q);
        if (bf16Sums) v = roundToBf16x8(v);
        v = _mm256_blendv_ps(minusInf, v, ordered);
        const auto m = static_cast<unsigned>(_mm256_movemask_ps(_mm256_cmp_ps(v, tv, _CMP_GE_OQ)));
        const __m256i perm = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(kPack.order[m])));
        _mm256_storeu_ps(cv + n, _mm256_permutevar8x32_ps(v, perm));
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(ci + n), _mm256_add_epi32(first, perm)); // as packAtLeast8
        n += __builtin_popcount(m);
        first = _mm256_add_epi32(first, step);
    }
    return n;
}

ATLAS_V4 inline int packSumAtLeast16(const float *s, const float *b, int E, float t, bool bf16Sums, int *ci, float *cv)
{
    const __m512 tv = _mm512_set1_ps(t), minusInf = _mm512_set1_ps(-INFINITY);
    __m512i ids = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i step = _mm512_set1_epi32(16);
    int n = 0;
    for (int e = 0; e < E; e += 16) {
        __m512 v = _mm512_add_ps(_mm512_loadu_ps(s + e), _mm512_loadu_ps(b + e));
        const __mmask16 ordered = _mm512_cmp_ps_mask(v, v, _CMP_ORD_Q);
        if (bf16Sums) { // roundToBf16 on sixteen lanes, in GCC's vector arithmetic
            using U32x16 = unsigned __attribute__((vector_size(64)));
            U32x16 bits = reinterpret_cast<U32x16>(_mm512_castps_si512(v));
            bits = (bits + 0x7FFFu + ((bits >> 16) & 1u)) & 0xFFFF0000u;
            v = _mm512_castsi512_ps(reinterpret_cast<__m512i>(bits));
        }
        v = _mm512_mask_blend_ps(ordered, minusInf, v);
        const __mmask16 m = _mm512_cmp_ps_mask(v, tv, _CMP_GE_OQ);
        _mm512_storeu_ps(cv + n, _mm512_maskz_compress_ps(m, v));
        _mm512_storeu_si512(ci + n, _mm512_maskz_compress_epi32(m, ids));
        n += __builtin_popcount(m);
        ids = _mm512_add_epi32(ids, step);
    }
    return n;
}
#endif

template <int W>
ATLAS_KERNEL int packSumAtLeast(const float *s, const float *b, int E, float t, bool bf16Sums, int *ci, float *cv)
{
#if ATLAS_ISA_DISPATCH
    if constexpr (W == 16) if (E % 16 == 0) return packSumAtLeast16(s, b, E, t, bf16Sums, ci, cv);
    if constexpr (W == 8) if (E % 8 == 0) return packSumAtLeast8(s, b, E, t, bf16Sums, ci, cv);
#endif
    return packSumAtLeastGeneric<W>(s, b, E, t, bf16Sums, ci, cv);
}

#if ATLAS_ISA_DISPATCH
// route's threshold with sixteen classes (e mod 16), on sixteen lanes: each class's best choice score,
// then the largest of those that at least K of them reach, which is the K-th largest. E is a multiple of
// 16; no score is NaN.
ATLAS_V4 inline float kthLaneMax16(const float *c, int E, int K)
{
    // The masked forms with every lane set: GCC 12's unmasked ones take an "undefined" source that
    // -Wmaybe-uninitialized reports (GCC bug 105593).
    constexpr __mmask16 all = 0xFFFF;
    __m512 m = _mm512_loadu_ps(c);
    for (int e = 16; e < E; e += 16) // the new score where larger, as the scalar pass
        m = _mm512_mask_max_ps(m, all, _mm512_loadu_ps(c + e), m);
    alignas(64) float lane[16];
    _mm512_store_ps(lane, m);
    __m512i reach = _mm512_setzero_si512();
    const __m512i one = _mm512_set1_epi32(1);
    for (int j = 0; j < 16; ++j) // reach[l]: how many class maxima are at least lane l's
        reach = _mm512_mask_add_epi32(reach, _mm512_cmp_ps_mask(_mm512_set1_ps(lane[j]), m, _CMP_GE_OQ), reach, one);
    // The largest of those reached by K (the smallest class maximum always is: K <= 16).
    const __mmask16 reached = _mm512_cmp_epi32_mask(reach, _mm512_set1_epi32(K), _MM_CMPINT_NLT);
    __m512 x = _mm512_mask_blend_ps(reached, _mm512_set1_ps(-INFINITY), m);
    x = _mm512_mask_max_ps(x, all, x, _mm512_mask_shuffle_f32x4(x, all, x, x, 0x4E));
    x = _mm512_mask_max_ps(x, all, x, _mm512_mask_shuffle_f32x4(x, all, x, x, 0xB1));
    x = _mm512_mask_max_ps(x, all, x, _mm512_mask_permute_ps(x, all, x, 0x4E));
    x = _mm512_mask_max_ps(x, all, x, _mm512_mask_permute_ps(x, all, x, 0xB1));
    return _mm512_cvtss_f32(x);
}
#endif

template <int W>
ATLAS_KERNEL int packAtLeast(const float *c, int E, float t, int *ci, float *cv)
{
#if ATLAS_ISA_DISPATCH
    if constexpr (W == 16) if (E % 16 == 0) return packAtLeast16(c, E, t, ci, cv);
    if constexpr (W == 8) if (E % 8 == 0) return packAtLeast8(c, E, t, ci, cv);
#endif
    return packAtLeastGeneric<W>(c, E, t, ci, cv);
}

template <int W>
ATLAS_KERNEL void rankTopK(const int *ci, float *cv, int n, int K, int *idx, float *val)
{
#if ATLAS_ISA_DISPATCH
    if constexpr (W == 16) return rankTopK16(ci, cv, n, K, idx, val);
    if constexpr (W == 8) return rankTopK8(ci, cv, n, K, idx, val);
#endif
    rankTopKGeneric<W>(ci, cv, n, K, idx, val);
}

} // namespace

// The selection, built for each instruction set: W is how many choice scores one compare takes (4 with
// SSE2, 8 with AVX2, 16 with AVX-512); the answer is the same on each.
template <int W>
ATLAS_KERNEL void RouterKernel::route(Router &r, const float *scores, const float *bias, Routing &out,
                                      const std::vector<int> *hint, bool bf16Sums)
{
    const RouterConfig &m_config = r.m_config;
    std::vector<char> &m_groupKept = r.m_groupKept;
    std::vector<std::pair<float, int>> &m_groupScores = r.m_groupScores;
    const int E = m_config.experts, K = m_config.topk, G = m_config.groups;
    float *c = r.m_choice.data();
    // NaN never orders: a NaN choice score (a NaN logit or bias, or +inf - inf) counts as -inf, so it
    // ranks below every number and ties among such experts go to the lower index, like any tie.
    const auto choice = [&](int e) __attribute__((always_inline)) {
        float v = scores[e] + bias[e];
        if (bf16Sums) v = roundToBf16(v);
        return std::isnan(v) ? -INFINITY : v;
    };
    // A hint with one group: the choice scores are formed, compared and packed in one pass (fused below),
    // never stored.
    const bool fused = G == 1 && hint && static_cast<int>(hint->size()) == K;
    if (!fused)
        for (int e = 0; e < E; ++e)
            c[e] = choice(e);

    std::fill(m_groupKept.begin(), m_groupKept.end(), 1);
    if (G > 1) {
        const int per = E / G;
        for (int g = 0; g < G; ++g) {
            // Sum of the two largest choice scores in the group.
            float a = -INFINITY, b = -INFINITY;
            for (int e = g * per; e < (g + 1) * per; ++e) {
                if (c[e] > a) {
                    b = a;
                    a = c[e];
                } else if (c[e] > b) {
                    b = c[e];
                }
            }
            float sum = per >= 2 ? a + b : a;
            if (bf16Sums) sum = roundToBf16(sum);
            m_groupScores[static_cast<std::size_t>(g)] = {std::isnan(sum) ? -INFINITY : sum, g};
        }
        // The best topk_group groups; ties go to the lower group index.
        std::partial_sort(m_groupScores.begin(), m_groupScores.begin() + m_config.topkGroups,
                          m_groupScores.end(), [](const auto &x, const auto &y) {
                              return x.first != y.first ? x.first > y.first : x.second < y.second;
                          });
        std::fill(m_groupKept.begin(), m_groupKept.end(), 0);
        for (int k = 0; k < m_config.topkGroups; ++k)
            m_groupKept[static_cast<std::size_t>(m_groupScores[static_cast<std::size_t>(k)].second)] = 1;
    }

    // Top-K by choice score in one ascending pass: a later expert displaces only a strictly smaller one,
    // so ties go to the lower index.
    out.experts.resize(static_cast<std::size_t>(K));
    out.weights.resize(static_cast<std::size_t>(K));
    int *idx = out.experts.data();
    float best[64];
    float *val = K <= 64 ? best : nullptr;
    std::vector<float> big;
    if (!val) {
        big.resize(static_cast<std::size_t>(K));
        val = big.data();
    }
    int filled = 0;
    auto offerValue = [&](int e, float v) __attribute__((always_inline)) {
        if (filled == K && !(v > val[K - 1])) return;
        int pos = filled < K ? filled++ : K - 1;
        while (pos > 0 && v > val[pos - 1]) {
            val[pos] = val[pos - 1];
            idx[pos] = idx[pos - 1];
            --pos;
        }
        val[pos] = v;
        idx[pos] = e;
    };
    auto offer = [&](int e) __attribute__((always_inline)) { offerValue(e, c[e]); };
    // The same answer by rank: the candidates (every expert at or above t, ascending) are packed, and when
    // there are few, each one's place is the number of candidates that beat it (a larger score, or the
    // same score and a lower index): no insertion, no branch on the scores. Many: offered in order.
    auto rankPacked = [&](const int *ci, float *cv, int n) __attribute__((always_inline)) {
        if (n > kRankMax) {
            for (int i = 0; i < n; ++i)
                offerValue(ci[i], cv[i]);
            return;
        }
        rankTopK<W>(ci, cv, n, K, idx, val);
        filled = n < K ? n : K;
    };
    auto selectFrom = [&](float threshold) __attribute__((always_inline)) {
        const int n = packAtLeast<W>(c, E, threshold, r.m_candIndex.data(), r.m_candValue.data());
        rankPacked(r.m_candIndex.data(), r.m_candValue.data(), n);
    };
    if (G > 1) {
        const int per = E / G;
        for (int e = 0; e < E; ++e)
            if (m_groupKept[static_cast<std::size_t>(e / per)]) offer(e);
    } else if (hint && static_cast<int>(hint->size()) == K) {
        // K experts whose choice scores are all at least t: no expert below t can be in the top K,
        // so only those at or above t are offered (in ascending order: the full pass's answer).
        // The hint, another routing of the same token, makes t tight.
        float threshold = INFINITY;
        for (int e : *hint) {
            const float v = choice(e);
#if defined(__SSE2__) // v < threshold ? v : threshold, in the float registers (no chain through cmov)
            threshold = _mm_cvtss_f32(_mm_min_ss(_mm_set_ss(v), _mm_set_ss(threshold)));
#else
            threshold = v < threshold ? v : threshold;
#endif
        }
        const int n = packSumAtLeast<W>(scores, bias, E, threshold, bf16Sums, r.m_candIndex.data(), r.m_candValue.data());
        rankPacked(r.m_candIndex.data(), r.m_candValue.data(), n);
    } else if (E % kLanes == 0 && E >= 2 * kLanes && K <= kLanes) {
        // The same pass over fewer experts. Split the experts into kLanes classes (e mod kLanes) and
        // take each class's best score: the K-th best of those, t, is reached by at least K experts,
        // so no expert below t can be in the top K. Offering only the experts at or above t, in
        // ascending order, gives exactly the full pass's answer, ties included. With K <= 8, sixteen
        // classes give as tight a t for less sorting.
        const int lanes = K <= 8 ? 16 : kLanes;
        const auto threshold = [&]() __attribute__((always_inline)) {
#if ATLAS_ISA_DISPATCH
            if constexpr (W == 16)
                if (lanes == 16) return kthLaneMax16(c, E, K);
#endif
            float laneMax[kLanes];
            for (int l = 0; l < lanes; ++l)
                laneMax[l] = c[l];
            if (lanes == 16) {
                for (int e = 16; e < E; e += 16)
                    for (int l = 0; l < 16; ++l)
                        laneMax[l] = c[e + l] > laneMax[l] ? c[e + l] : laneMax[l];
            } else {
                for (int e = kLanes; e < E; e += kLanes)
                    for (int l = 0; l < kLanes; ++l)
                        laneMax[l] = c[e + l] > laneMax[l] ? c[e + l] : laneMax[l];
            }
            // The K-th largest lane maximum is the largest one that at least K lane maxima reach:
            // found by counting for each, with no branch on the scores (an insertion sort's branches
            // mispredicted on every token).
            float t = -INFINITY;
            for (int l = 0; l < lanes; ++l) {
                const float v = laneMax[l];
                int reach = 0;
                for (int j = 0; j < lanes; ++j)
                    reach += laneMax[j] >= v;
                t = reach >= K && v > t ? v : t;
            }
            return t;
        };
        selectFrom(threshold());
    } else {
        for (int e = 0; e < E; ++e)
            offer(e);
    }
    if (filled < K) // fewer kept experts than K (topk_group too small): the rest stay empty
        out.experts.resize(static_cast<std::size_t>(filled)),
            out.weights.resize(static_cast<std::size_t>(filled));

    float sum = 0;
    if (m_config.scoring == Scoring::SoftmaxAfterTopk) {
        // Softmax over the chosen experts' logits (shifted by the largest finite one): the weights sum
        // to 1 already, whatever norm_topk_prob says.
        float top = -INFINITY;
        for (int e : out.experts)
            top = scores[e] > top ? scores[e] : top;
        if (!std::isfinite(top)) top = 0.0f;
        for (std::size_t k = 0; k < out.experts.size(); ++k) {
            out.weights[k] = std::exp(scores[out.experts[k]] - top);
            sum += out.weights[k];
        }
        for (auto &w : out.weights)
            w = (sum > 0 ? w / sum : w) * m_config.scaling;
        return;
    }
    for (std::size_t k = 0; k < out.experts.size(); ++k) {
        out.weights[k] = scores[out.experts[k]];
        sum += out.weights[k];
    }
    for (auto &w : out.weights) {
        if (m_config.normTopkProb && sum > 0) w /= sum;
        w *= m_config.scaling;
    }
}

namespace {

using RouteFn = void (*)(Router &, const float *, const float *, Routing &, const std::vector<int> *, bool);
void routeBaseline(Router &r, const float *s, const float *b, Routing &o, const std::vector<int> *h, bool bf)
{
    RouterKernel::route<4>(r, s, b, o, h, bf);
}
ATLAS_V3 void routeV3(Router &r, const float *s, const float *b, Routing &o, const std::vector<int> *h, bool bf)
{
    RouterKernel::route<8>(r, s, b, o, h, bf);
}
ATLAS_V4 void routeV4(Router &r, const float *s, const float *b, Routing &o, const std::vector<int> *h, bool bf)
{
    RouterKernel::route<16>(r, s, b, o, h, bf);
}

} // namespace

void Router::route(const float *scores, const float *bias, Routing &out, const std::vector<int> *hint, bool bf16Sums)
{
    forIsa<RouteFn>(routeBaseline, routeV3, routeV4)(*this, scores, bias, out, hint, bf16Sums);
}

void syntheticLogits(std::uint64_t seed, int layer, std::uint32_t firstToken, std::uint32_t tokens, int experts,
                     float std, float *out)
{
    forIsa<SyntheticFn>(syntheticBaseline, syntheticV3, syntheticV4)(seed, layer, firstToken, tokens, experts, std, out);
}

void syntheticLogits(std::uint64_t seed, int layer, std::uint32_t tokens, int experts, float std, float *out)
{
    syntheticLogits(seed, layer, 0, tokens, experts, std, out);
}

LayerRouting simulateLayer(int layer, const RouterConfig &config, const std::vector<float> &bias,
                           const float *logits, std::uint32_t tokens, const std::atomic<bool> *cancel)
{
    const auto E = static_cast<std::size_t>(config.experts);
    return simulateLayerBlocks(layer, config, bias, tokens, cancel,
                               [&](std::uint32_t first, std::uint32_t) { return logits + first * E; });
}

LayerRouting simulateLayerBlocks(int layer, const RouterConfig &config, const std::vector<float> &bias,
                                 std::uint32_t tokens, const std::atomic<bool> *cancel, const LogitBlocks &block)
{
    const int E = config.experts;
    if (static_cast<int>(bias.size()) != E)
        throw std::invalid_argument("router: the bias has " + std::to_string(bias.size()) + " values for " +
                                    std::to_string(E) + " experts");
    Router router(config);
    std::vector<float> biasBf16(bias.size());
    for (std::size_t e = 0; e < bias.size(); ++e)
        biasBf16[e] = roundToBf16(bias[e]);

    LayerRouting result;
    result.layer = layer;
    result.tokens = tokens;
    result.referenceLoad.assign(static_cast<std::size_t>(E), 0);
    for (auto &v : result.variants)
        v.load.assign(static_cast<std::size_t>(E), 0);

    // Where each expert sits in the reference and the variant's choice (-1: not chosen), per token.
    std::vector<int> refPos(static_cast<std::size_t>(E), -1), varPos(static_cast<std::size_t>(E), -1);
    std::vector<float> s32(static_cast<std::size_t>(E)), s16(static_cast<std::size_t>(E)),
        r16(static_cast<std::size_t>(E));
    // A bias in the logits: each variant has its own scores (logits + bias, either rounded), and the
    // selection adds nothing.
    const bool inLogits = config.bias == BiasUse::Logit;
    std::vector<float> zeros(static_cast<std::size_t>(E), 0.0f), z(inLogits ? zeros.size() : 0),
        sBias(z.size()), sBoth(z.size()), sTorch(zeros.size());
    Routing ref, var;
    std::uint64_t changed[kVariantCount] = {}, replaced[kVariantCount] = {}, reordered[kVariantCount] = {};
    double l1[kVariantCount] = {};
    const float *blockStart = nullptr;
    std::uint32_t blockFirst = 0;
    for (std::uint32_t t = 0; t < tokens; ++t) {
        if ((t & 255) == 0) stopIfCancelled(cancel);
        if (t % kLogitBlockTokens == 0) {
            blockFirst = t;
            blockStart = block(t, std::min(kLogitBlockTokens, tokens - t));
        }
        const float *row = blockStart + static_cast<std::size_t>(t - blockFirst) * static_cast<std::size_t>(E);
        if (inLogits) {
            // s32: logits + bias; sBias: logits + bf16(bias); s16: bf16(logits) + bias; sBoth: both rounded.
            for (int e = 0; e < E; ++e)
                r16[static_cast<std::size_t>(e)] = roundToBf16(row[e]);
            const std::pair<const float *, const float *> terms[4] = {
                {row, bias.data()}, {row, biasBf16.data()}, {r16.data(), bias.data()}, {r16.data(), biasBf16.data()}};
            float *outs[4] = {s32.data(), sBias.data(), s16.data(), sBoth.data()};
            for (int v = 0; v < 4; ++v) {
                for (int e = 0; e < E; ++e)
                    z[static_cast<std::size_t>(e)] = terms[v].first[e] + terms[v].second[e];
                routerScores(config, z.data(), outs[v]);
            }
        } else if (config.scoring != Scoring::Sigmoid) {
            routerScores(config, row, s32.data());
            for (int e = 0; e < E; ++e)
                r16[static_cast<std::size_t>(e)] = roundToBf16(row[e]);
            routerScores(config, r16.data(), s16.data());
        } else {
            sigmoidRow(row, s32.data(), E);
            // A BF16 logit has one of 65,536 values: its sigmoid is looked up (the same bits as computed),
            // and rounded for torch_bf16.
            bf16Scores(row, s16.data(), sTorch.data(), E);
        }
        // torch_bf16: every tensor BF16, each step rounded (the logits, the bias, their sum, the scores).
        if (inLogits) {
            for (int e = 0; e < E; ++e)
                z[static_cast<std::size_t>(e)] = roundToBf16(r16[static_cast<std::size_t>(e)] + biasBf16[static_cast<std::size_t>(e)]);
            routerScores(config, z.data(), sTorch.data());
        } else {
            if (config.scoring != Scoring::Sigmoid) // the scores of the BF16 logits, rounded (the
                for (int e = 0; e < E; ++e)         // sigmoid's were above)
                    sTorch[static_cast<std::size_t>(e)] = roundToBf16(s16[static_cast<std::size_t>(e)]);
        }
        if (inLogits)
            for (auto &x : sTorch)
                x = roundToBf16(x);
        router.route(s32.data(), inLogits ? zeros.data() : bias.data(), ref);
        for (std::size_t k = 0; k < ref.experts.size(); ++k) {
            ++result.referenceLoad[static_cast<std::size_t>(ref.experts[k])];
            refPos[static_cast<std::size_t>(ref.experts[k])] = static_cast<int>(k);
        }

        for (int v = 0; v < kVariantCount; ++v) {
            const bool roundedLogits = v != static_cast<int>(Variant::BiasBf16);
            const bool roundedBias = v != static_cast<int>(Variant::LogitsBf16);
            if (v == static_cast<int>(Variant::TorchBf16))
                router.route(sTorch.data(), inLogits ? zeros.data() : biasBf16.data(), var, &ref.experts, true);
            else if (inLogits)
                router.route(roundedLogits ? (roundedBias ? sBoth.data() : s16.data())
                                           : (roundedBias ? sBias.data() : s32.data()),
                             zeros.data(), var, &ref.experts);
            else
                router.route(roundedLogits ? s16.data() : s32.data(),
                             roundedBias ? biasBf16.data() : bias.data(), var, &ref.experts);
            VariantStats &st = result.variants[v];
            int common = 0;
            for (std::size_t k = 0; k < var.experts.size(); ++k) {
                const auto e = static_cast<std::size_t>(var.experts[k]);
                ++st.load[e];
                common += refPos[e] >= 0;
                varPos[e] = static_cast<int>(k);
            }
            const int lost = static_cast<int>(ref.experts.size()) - common;
            if (lost > 0) {
                ++changed[v];
                replaced[v] += static_cast<std::uint64_t>(lost);
            } else if (var.experts != ref.experts) {
                ++reordered[v];
            }
            // L1 distance of the weight vectors over all experts (positions looked up, not searched).
            double d = 0;
            for (std::size_t k = 0; k < ref.experts.size(); ++k) {
                const int at = varPos[static_cast<std::size_t>(ref.experts[k])];
                const float w = at < 0 ? 0.0f : var.weights[static_cast<std::size_t>(at)];
                d += std::fabs(static_cast<double>(ref.weights[k]) - w);
            }
            for (std::size_t k = 0; k < var.experts.size(); ++k) {
                const auto e = static_cast<std::size_t>(var.experts[k]);
                if (refPos[e] < 0) d += std::fabs(static_cast<double>(var.weights[k]));
                varPos[e] = -1;
            }
            l1[v] += d;
        }
        for (int e : ref.experts)
            refPos[static_cast<std::size_t>(e)] = -1;
    }
    for (int v = 0; v < kVariantCount; ++v) {
        VariantStats &st = result.variants[v];
        const double T = tokens ? static_cast<double>(tokens) : 1.0;
        st.changedSetFraction = static_cast<double>(changed[v]) / T;
        st.meanReplaced = static_cast<double>(replaced[v]) / T;
        st.orderChangedFraction = static_cast<double>(reordered[v]) / T;
        st.weightL1 = l1[v] / T;
    }
    return result;
}

void routerScores(const RouterConfig &config, const float *logits, float *scores)
{
    const int E = config.experts;
    if (config.scoring == Scoring::Sigmoid) {
        sigmoidRow(logits, scores, E);
        return;
    }
    if (config.scoring == Scoring::SoftmaxAfterTopk) {
        std::copy(logits, logits + E, scores);
        return;
    }
    if (config.scoring == Scoring::SqrtSoftplus) {
        // softplus(x) = log(1 + e^x), as torch computes it: x itself above 20; a NaN stays NaN.
        for (int e = 0; e < E; ++e) {
            const float x = logits[e];
            scores[e] = std::sqrt(x > 20.0f ? x : std::log1p(std::exp(x)));
        }
        return;
    }
    // Softmax over the experts in FP32, shifted by the largest finite logit; a NaN row stays NaN.
    float top = -INFINITY;
    for (int e = 0; e < E; ++e)
        if (logits[e] > top) top = logits[e];
    if (!std::isfinite(top)) top = 0.0f;
    float sum = 0.0f;
    for (int e = 0; e < E; ++e) {
        scores[e] = std::exp(logits[e] - top);
        sum += scores[e];
    }
    for (int e = 0; e < E; ++e)
        scores[e] /= sum;
}

namespace {

// Fewest and most of `reference` that a top-K over `c` (restricted to `kept`) can keep, over every order
// of its ties.
std::pair<int, int> overlapRange(const std::vector<float> &c, const std::vector<char> &kept, int K,
                                 const std::vector<char> &inReference)
{
    std::vector<float> values;
    for (std::size_t e = 0; e < c.size(); ++e)
        if (kept[e]) values.push_back(c[e]);
    if (values.empty()) return {0, 0};
    const int k = std::min<int>(K, static_cast<int>(values.size()));
    std::nth_element(values.begin(), values.begin() + (k - 1), values.end(), std::greater<float>());
    const float v = values[static_cast<std::size_t>(k - 1)]; // the K-th largest
    int above = 0, aboveInRef = 0, tied = 0, tiedInRef = 0;
    for (std::size_t e = 0; e < c.size(); ++e) {
        if (!kept[e]) continue;
        if (c[e] > v) {
            ++above;
            aboveInRef += inReference[e];
        } else if (c[e] == v) {
            ++tied;
            tiedInRef += inReference[e];
        }
    }
    const int need = k - above; // taken from the tied experts, in any order
    return {aboveInRef + std::max(0, need - (tied - tiedInRef)), aboveInRef + std::min(need, tiedInRef)};
}

} // namespace

ZeroLogitProbe zeroLogitProbe(const RouterConfig &config, const std::vector<float> &bias)
{
    ZeroLogitProbe probe;
    const std::size_t E = bias.size();
    Router router(config);
    std::vector<float> zeros(E, 0.0f), scores(E), rounded(E), c16(E);
    for (std::size_t e = 0; e < E; ++e)
        rounded[e] = roundToBf16(bias[e]);
    Routing ref;
    if (config.bias == BiasUse::Logit) {
        routerScores(config, bias.data(), scores.data());
        router.route(scores.data(), zeros.data(), ref);
        routerScores(config, rounded.data(), c16.data());
    } else {
        routerScores(config, zeros.data(), scores.data());
        router.route(scores.data(), bias.data(), ref);
        for (std::size_t e = 0; e < E; ++e)
            c16[e] = scores[e] + rounded[e];
    }
    for (auto &x : c16)
        x = std::isnan(x) ? -INFINITY : x;
    std::vector<char> inRef(E, 0);
    for (int e : ref.experts)
        inRef[static_cast<std::size_t>(e)] = 1;
    const int K = config.topk, G = config.groups, TG = config.topkGroups;
    const int refSize = static_cast<int>(ref.experts.size());
    // This program's rule: the BF16 selection with ties to the lower index.
    Routing lowerIndex;
    router.route(c16.data(), zeros.data(), lowerIndex);
    int kept = 0;
    for (int e : lowerIndex.experts)
        kept += inRef[static_cast<std::size_t>(e)];
    probe.replaced = refSize - kept;

    // Groups: the kept groups may themselves tie; every way of choosing among the tied ones is tried.
    const int per = static_cast<int>(E) / G;
    std::vector<float> groupScore(static_cast<std::size_t>(G));
    for (int g = 0; g < G; ++g) {
        float a = -INFINITY, b = -INFINITY;
        for (int e = g * per; e < (g + 1) * per; ++e) {
            const float x = c16[static_cast<std::size_t>(e)];
            if (x > a) {
                b = a;
                a = x;
            } else if (x > b) {
                b = x;
            }
        }
        const float sum = per >= 2 ? a + b : a;
        groupScore[static_cast<std::size_t>(g)] = std::isnan(sum) ? -INFINITY : sum;
    }
    std::vector<int> certain, tiedGroups;
    if (G > 1) {
        std::vector<float> sorted = groupScore;
        std::sort(sorted.begin(), sorted.end(), std::greater<float>());
        const float v = sorted[static_cast<std::size_t>(TG - 1)];
        for (int g = 0; g < G; ++g) {
            if (groupScore[static_cast<std::size_t>(g)] > v)
                certain.push_back(g);
            else if (groupScore[static_cast<std::size_t>(g)] == v)
                tiedGroups.push_back(g);
        }
    }
    const int needGroups = G > 1 ? TG - static_cast<int>(certain.size()) : 0;
    // Ways to choose needGroups of the tied groups: C(n, k), counted with a cap.
    double ways = 1;
    for (int i = 0; i < needGroups; ++i)
        ways = ways * (tiedGroups.size() - static_cast<std::size_t>(i)) / (i + 1);
    // Bounded work: at most 4,096 group choices and 2^26 expert visits in all (a real router needs ~70).
    if (ways > 4096 || ways * double(E) > double(1 << 26)) return probe;

    int bestOverlap = -1, worstOverlap = K + 1;
    std::vector<int> pick(static_cast<std::size_t>(needGroups));
    for (int i = 0; i < needGroups; ++i)
        pick[static_cast<std::size_t>(i)] = i;
    while (true) {
        std::vector<char> kept(E, G > 1 ? 0 : 1);
        if (G > 1) {
            auto keep = [&](int g) {
                for (int e = g * per; e < (g + 1) * per; ++e)
                    kept[static_cast<std::size_t>(e)] = 1;
            };
            for (int g : certain)
                keep(g);
            for (int i : pick)
                keep(tiedGroups[static_cast<std::size_t>(i)]);
        }
        const auto [lo, hi] = overlapRange(c16, kept, K, inRef);
        worstOverlap = std::min(worstOverlap, lo);
        bestOverlap = std::max(bestOverlap, hi);
        // The next combination of needGroups out of tiedGroups.size(), in lexicographic order.
        int i = needGroups - 1;
        const int n = static_cast<int>(tiedGroups.size());
        while (i >= 0 && pick[static_cast<std::size_t>(i)] == n - needGroups + i)
            --i;
        if (i < 0) break;
        ++pick[static_cast<std::size_t>(i)];
        for (int j = i + 1; j < needGroups; ++j)
            pick[static_cast<std::size_t>(j)] = pick[static_cast<std::size_t>(j - 1)] + 1;
    }
    probe.min = refSize - bestOverlap;
    probe.max = refSize - worstOverlap;
    return probe;
}

int zeroLogitReplaced(const RouterConfig &config, const std::vector<float> &bias)
{
    return zeroLogitProbe(config, bias).replaced;
}

const std::vector<float> *CapturedLogits::forLayer(int layer) const
{
    if (auto it = perLayer.find(layer); it != perLayer.end()) return &it->second;
    return shared.empty() ? nullptr : &shared;
}

namespace {

// A container's memory limit (cgroup v2): memory.max of this process's cgroup, "max" for none.
std::optional<std::uint64_t> cgroupMemoryMax()
{
    std::ifstream self("/proc/self/cgroup");
    std::string line, path;
    while (std::getline(self, line))
        if (line.starts_with("0::")) path = line.substr(3);
    if (path.empty() || path.find("..") != std::string::npos) return std::nullopt;
    std::optional<std::uint64_t> lowest;
    // A limit can sit on any ancestor: the smallest on the way up counts.
    for (std::string dir = path;; dir = dir.substr(0, dir.rfind('/'))) {
        std::ifstream f("/sys/fs/cgroup" + dir + (dir.ends_with('/') ? "" : "/") + "memory.max");
        std::string value;
        if (f >> value && value != "max") {
            std::uint64_t v = 0;
            const auto r = std::from_chars(value.data(), value.data() + value.size(), v);
            if (r.ec == std::errc() && (!lowest || v < *lowest)) lowest = v;
        }
        if (dir.empty() || dir == "/" || dir.rfind('/') == std::string::npos) break;
    }
    return lowest;
}

} // namespace

std::uint64_t routingMemoryLimit()
{
    std::uint64_t limit = UINT64_MAX;
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
        limit = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) / 4;
    rlimit as{};
    if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
        limit = std::min<std::uint64_t>(limit, static_cast<std::uint64_t>(as.rlim_cur) / 4);
    if (const auto cgroup = cgroupMemoryMax()) limit = std::min(limit, *cgroup / 4);
    return limit;
}

void checkRoutingMemory(std::uint32_t tokens, int experts, unsigned threads, std::uint64_t limit)
{
    if (tokens > kMaxRoutingTokens)
        throw AtlasError(ErrorKind::Usage, "--tokens " + std::to_string(tokens) + " is above the limit of " +
                                               std::to_string(kMaxRoutingTokens) + " tokens per layer");
    // Synthetic logits are held one block per thread (simulateRouting makes them as it goes).
    const unsigned __int128 need = static_cast<unsigned __int128>(std::min(tokens, kLogitBlockTokens)) *
                                   static_cast<unsigned>(experts) * sizeof(float) * std::max(1u, threads);
    if (need > limit)
        throw AtlasError(ErrorKind::Usage,
                         "--tokens " + std::to_string(tokens) + " needs " +
                             std::to_string(static_cast<std::uint64_t>(need)) + " bytes of logits (" +
                             std::to_string(experts) + " experts, 4 bytes each, " +
                             std::to_string(std::max(1u, threads)) + " threads); the limit is " +
                             std::to_string(limit) + " bytes (a quarter of the memory available)");
}

LogitsFileLayout parseLogitsHeader(const std::string &file, std::string_view head, std::uint64_t fileSize,
                                   std::uint64_t memoryLimit)
{
    const std::uint64_t n = parseHeaderLength(file, head.substr(0, 8), fileSize);
    if (head.size() < 8 + n) throw AtlasError(ErrorKind::Invalid, file + ": the file ends inside its header");
    LogitsFileLayout out;
    out.file = file;
    out.dataStart = 8 + n;
    const ShardHeader header = parseShardHeader(file, head.substr(8, n), fileSize);
    out.nameStores = header.nameStores; // the tensors below are copies: their names must outlive the header
    std::uint64_t values = 0;
    for (const auto &t : header.tensors) {
        int layer = -2;
        if (t.name == "logits") {
            layer = -1;
        } else if (t.name.starts_with("layers.")) {
            const char *first = t.name.data() + 7, *last = t.name.data() + t.name.size();
            int v = -1;
            auto r = std::from_chars(first, last, v);
            if (r.ec == std::errc() && r.ptr == last && v >= 0) layer = v;
        }
        if (layer == -2) continue; // anything else in the file is not read
        if (t.shape.size() != 2 || t.shape[0] == 0 || t.shape[1] == 0)
            throw AtlasError(ErrorKind::Invalid,
                             file + ": tensor '" + std::string(t.name) + "' must be [tokens, experts]");
        if (t.shape[0] > kMaxRoutingTokens || t.shape[1] > static_cast<std::uint64_t>(kMaxConfigExperts))
            throw AtlasError(ErrorKind::Invalid, file + ": tensor '" + std::string(t.name) + "' is larger than " +
                                                     std::to_string(kMaxRoutingTokens) + " tokens x " +
                                                     std::to_string(kMaxConfigExperts) + " experts");
        const auto tokens = static_cast<std::uint32_t>(t.shape[0]);
        const auto experts = static_cast<int>(t.shape[1]);
        if ((out.tokens && out.tokens != tokens) || (out.experts && out.experts != experts))
            throw AtlasError(ErrorKind::Invalid,
                             file + ": tensor '" + std::string(t.name) + "' has another shape than the others");
        out.tokens = tokens;
        out.experts = experts;
        values += t.numel;
        if (values > memoryLimit / sizeof(float))
            throw AtlasError(ErrorKind::Invalid, file + ": the logits hold more than " +
                                                     std::to_string(memoryLimit / sizeof(float)) +
                                                     " values, the limit for this machine's memory");
        out.dataEnd = std::max(out.dataEnd, out.dataStart + t.end);
        out.tensors.push_back({layer, t});
    }
    if (out.tensors.empty())
        throw AtlasError(ErrorKind::Invalid, file + ": no 'logits' or 'layers.N' tensor");
    return out;
}

CapturedLogits decodeLogits(const LogitsFileLayout &layout, std::string_view bytes)
{
    if (bytes.size() < layout.dataEnd)
        throw AtlasError(ErrorKind::Invalid,
                         layout.file + ": the file ends before byte " + std::to_string(layout.dataEnd));
    CapturedLogits out;
    out.file = layout.file;
    out.tokens = layout.tokens;
    out.experts = layout.experts;
    for (const auto &[layer, t] : layout.tensors) {
        BiasTensor raw;
        raw.tensor = layout.file + ": " + std::string(t.name);
        raw.dtype = t.dtype;
        raw.raw = std::string(bytes.substr(layout.dataStart + t.begin, t.bytes()));
        auto values = decodeValues(raw);
        for (float v : values)
            out.nonFinite += !std::isfinite(v);
        if (layer == -1)
            out.shared = std::move(values);
        else
            out.perLayer[layer] = std::move(values);
    }
    return out;
}

CapturedLogits parseLogitsFile(const std::string &file, std::string_view bytes)
{
    return decodeLogits(parseLogitsHeader(file, bytes, bytes.size(), routingMemoryLimit()), bytes);
}

RoutingRun simulateRouting(const std::vector<LayerBias> &biases, const RouterConfig &router,
                           const RoutingOptions &opt)
{
    RoutingRun run;
    run.seed = opt.seed;
    run.router = router;
    run.synthetic = opt.captured == nullptr;
    if (opt.captured) {
        if (opt.captured->experts != router.experts)
            throw AtlasError(ErrorKind::Invalid, opt.captured->file + ": the logits have " +
                                                     std::to_string(opt.captured->experts) +
                                                     " experts, the router " +
                                                     std::to_string(router.experts));
        run.tokens = opt.captured->tokens;
        run.logits = opt.captured->file;
        run.logitsNonFinite = opt.captured->nonFinite;
    } else {
        run.tokens = opt.tokens;
        char sd[32];
        const auto r = std::to_chars(sd, sd + sizeof sd, static_cast<double>(opt.logitStd),
                                     std::chars_format::general, 3);
        run.logits = "synthetic normal (std " + std::string(sd, r.ptr) + ", seed " + std::to_string(opt.seed) + ")";
    }


    std::vector<const LayerBias *> todo;
    for (const auto &b : biases) {
        if (!b.skip.empty()) {
            run.skipped.push_back({b.layer, b.skip});
            continue;
        }
        if (static_cast<int>(b.values.size()) != router.experts) {
            run.skipped.push_back({b.layer, std::to_string(b.values.size()) + " bias values for " +
                                                std::to_string(router.experts) + " experts"});
            continue;
        }
        if (opt.captured && !opt.captured->forLayer(b.layer)) {
            run.skipped.push_back({b.layer, "no captured logits"});
            continue;
        }
        todo.push_back(&b);
    }
    // The threads that will run: no more than there are layers to simulate.
    const unsigned threads =
        std::min<unsigned>(resolvedThreads(opt.threads), static_cast<unsigned>(std::max<std::size_t>(todo.size(), 1)));
    if (!opt.captured)
        checkRoutingMemory(run.tokens, router.experts, threads,
                           opt.memoryLimit ? opt.memoryLimit : routingMemoryLimit());
    run.layers.resize(todo.size());
    parallelFor(todo.size(), threads, [&](std::size_t i) {
        stopIfCancelled(opt.cancel);
        const LayerBias &b = *todo[i];
        const float *data;
        const auto E = static_cast<std::size_t>(router.experts);
        if (opt.captured) {
            data = opt.captured->forLayer(b.layer)->data();
            run.layers[i] = simulateLayerBlocks(b.layer, router, b.values, run.tokens, opt.cancel,
                                                [&](std::uint32_t first, std::uint32_t count) {
                                                    if (opt.routed) opt.routed->fetch_add(count);
                                                    return data + first * E;
                                                });
            return;
        }
        // Synthetic logits are made a block at a time, inside the layer's loop: memory stays at one
        // block per thread whatever --tokens says, and cancel is seen between blocks.
        // The block is no longer than the run (as checkRoutingMemory counts it): 16 tokens of a router
        // with 100,000 experts are 6 MB, not the 1.6 GB of a whole block.
        // Not zeroed (4 MB a layer): every value is written before it is read.
        const std::unique_ptr<float[]> logits(new float[static_cast<std::size_t>(std::min(kLogitBlockTokens, run.tokens)) *
                                                        static_cast<std::size_t>(router.experts)]);
        run.layers[i] = simulateLayerBlocks(
            b.layer, router, b.values, run.tokens, opt.cancel, [&](std::uint32_t first, std::uint32_t count) {
                if (opt.routed) opt.routed->fetch_add(count);
                syntheticLogits(opt.seed, b.layer, first, count, router.experts, opt.logitStd, logits.get());
                return static_cast<const float *>(logits.get());
            });
    });
    return run;
}

} // namespace atlas
