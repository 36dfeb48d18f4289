// The routing simulation at GLM-5.x scale: 76 layers x 4,096 tokens x 256 experts, the FP32
// reference and three BF16 variants, synthetic logits generated on the way. Prints the wall time.
#include "routing.h"
#include "synthetic_layout.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

int main()
{
    const auto spec = atlas::synth::glm5Fp8();
    std::vector<atlas::LayerBias> biases;
    for (int layer = 3; layer <= 78; ++layer)
        biases.push_back({layer, atlas::synth::syntheticBias(spec, layer)});
    atlas::RouterConfig router;
    router.experts = 256;
    router.topk = 8;
    router.groups = 1;
    router.topkGroups = 1;
    router.scaling = 2.5f;
    std::vector<double> times;
    double changed = 0;
    for (int run = 0; run < 3; ++run) {
        atlas::RoutingOptions options;
        options.tokens = 4096;
        const auto start = std::chrono::steady_clock::now();
        const auto result = atlas::simulateRouting(biases, router, options);
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        changed = result.layers.front().variants[2].changedSetFraction;
    }
    std::sort(times.begin(), times.end());
    std::printf(
        "routing simulation: 76 layers x 4096 tokens x 256 experts x (FP32 + 3 variants) on %u threads: "
        "median %.0f ms, best %.0f ms (target < 1000 ms); layer 3 both_bf16 changed %.2f%%\n",
        std::thread::hardware_concurrency(), times[1] * 1000, times[0] * 1000, changed * 100);
    return 0;
}
