// The routing simulation at GLM-5.x scale: 76 layers x 4,096 tokens x 256 experts, the FP32
// reference and three BF16 variants, synthetic logits generated on the way. Prints the wall time,
// and, when Debian's python3-torch is installed, the same workload in PyTorch on the CPU with the
// same number of threads (bench/routing_torch.py), measured in the same run, and the ratio.
#include "routing.h"
#include "synthetic_layout.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

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
    // Each instruction set this CPU runs (the same bits on each; tst_routing holds that), three runs each
    // before torch and three after, the median of the six: a host whose speed drifts during the bench moves
    // both sides of the ratio alike. The best set is what the application uses.
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    const atlas::RoutingIsa inUse = atlas::routingIsa();
    const std::vector<atlas::RoutingIsa> isas = atlas::supportedRoutingIsas();
    std::vector<std::vector<double>> times(isas.size());
    double changed = 0;
    auto measure = [&] {
        for (std::size_t i = 0; i < isas.size(); ++i) {
            atlas::setRoutingIsa(isas[i]);
            for (int run = 0; run < 3; ++run) {
                atlas::RoutingOptions options;
                options.tokens = 4096;
                const auto start = std::chrono::steady_clock::now();
                const auto result = atlas::simulateRouting(biases, router, options);
                times[i].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
                changed = result.layers.front().variants[2].changedSetFraction;
            }
        }
        atlas::setRoutingIsa(inUse);
    };
    measure();

    // The same workload in torch, if it is installed (Debian: python3-torch for /usr/bin/python3): the
    // full comparison and the lean version a Python user would write.
    const std::string command = "/usr/bin/python3 " ATLAS_BENCH_SOURCE_DIR "/routing_torch.py " +
                                std::to_string(threads) + " 2>/dev/null";
    double torchMs = 0, leanMs = 0;
    std::string torchLines;
    if (FILE *p = popen(command.c_str(), "r")) {
        char line[256];
        while (std::fgets(line, sizeof line, p)) {
            if (std::sscanf(line, "torch: %lf ms", &torchMs) == 1) continue;
            if (std::sscanf(line, "torch lean: %lf ms", &leanMs) == 1) continue;
            torchLines += line;
        }
        pclose(p);
    }
    measure();

    double inUseMs = 0;
    for (std::size_t i = 0; i < isas.size(); ++i) {
        std::vector<double> &t = times[i];
        std::sort(t.begin(), t.end());
        const double median = (t[t.size() / 2 - 1] + t[t.size() / 2]) / 2 * 1000;
        std::printf("routing simulation (%s): 76 layers x 4096 tokens x 256 experts x (FP32 + %d variants) on %u "
                    "threads: median %.0f ms, best %.0f ms (%zu runs); layer 3 both_bf16 changed %.2f%%\n",
                    std::string(atlas::routingIsaName(isas[i])).c_str(), atlas::kVariantCount, threads, median,
                    t.front() * 1000, t.size(), changed * 100);
        if (isas[i] == inUse) inUseMs = median;
    }
    std::fputs(torchLines.c_str(), stdout);
    if (torchMs > 0 && leanMs > 0) {
        std::printf("ckpt-atlas %.0f ms (%s) vs torch %.0f ms (the same work) and %.0f ms (lean top-k only): %.1fx "
                    "and %.1fx\n",
                    inUseMs, std::string(atlas::routingIsaName(inUse)).c_str(), torchMs, leanMs, torchMs / inUseMs,
                    leanMs / inUseMs);
    } else {
        std::printf("torch: not installed for /usr/bin/python3 (apt-get install python3-torch); no comparison\n");
    }
    // One line for bench/run-all.sh: figure=value pairs.
    std::printf("figure routing_ms=%.0f isa=%s torch_ms=%.0f torch_lean_ms=%.0f\n", inUseMs,
                std::string(atlas::routingIsaName(inUse)).c_str(), torchMs, leanMs);
    return 0;
}
