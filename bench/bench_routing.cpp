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
    // Each instruction set this CPU runs (the same bits on each; tst_routing holds that), three runs
    // each, the median; the best set is what the application uses.
    const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    double changed = 0, inUseMs = 0;
    const atlas::RoutingIsa inUse = atlas::routingIsa();
    for (const atlas::RoutingIsa isa : atlas::supportedRoutingIsas()) {
        atlas::setRoutingIsa(isa);
        std::vector<double> times;
        for (int run = 0; run < 3; ++run) {
            atlas::RoutingOptions options;
            options.tokens = 4096;
            const auto start = std::chrono::steady_clock::now();
            const auto result = atlas::simulateRouting(biases, router, options);
            times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
            changed = result.layers.front().variants[2].changedSetFraction;
        }
        std::sort(times.begin(), times.end());
        std::printf("routing simulation (%s): 76 layers x 4096 tokens x 256 experts x (FP32 + %d variants) on %u "
                    "threads: median %.0f ms, best %.0f ms; layer 3 both_bf16 changed %.2f%%\n",
                    std::string(atlas::routingIsaName(isa)).c_str(), atlas::kVariantCount, threads, times[1] * 1000,
                    times[0] * 1000, changed * 100);
        if (isa == inUse) inUseMs = times[1] * 1000;
    }
    atlas::setRoutingIsa(inUse);

    // The same workload in torch, if it is installed (Debian: python3-torch for /usr/bin/python3): the
    // full comparison and the lean version a Python user would write.
    const std::string command = "/usr/bin/python3 " ATLAS_BENCH_SOURCE_DIR "/routing_torch.py " +
                                std::to_string(threads) + " 2>/dev/null";
    double torchMs = 0, leanMs = 0;
    if (FILE *p = popen(command.c_str(), "r")) {
        char line[256];
        while (std::fgets(line, sizeof line, p)) {
            if (std::sscanf(line, "torch: %lf ms", &torchMs) == 1) continue;
            if (std::sscanf(line, "torch lean: %lf ms", &leanMs) == 1) continue;
            std::fputs(line, stdout);
        }
        pclose(p);
    }
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
