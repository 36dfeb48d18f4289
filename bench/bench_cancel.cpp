// How soon a raised cancel flag ends a load, whatever stage it is in: the whole pipeline of the
// command line and the window (headers of the 141-shard GLM-5.x layout, analysis, cache, router
// biases, a routing simulation at the most tokens allowed), cancelled after a range of delays.
// Prints, per delay, the stage reached and the latency from the flag to the end of the load; then
// the worst latency (target: under 500 ms).
//
//   bench_cancel            write the layout under the build tree if needed, then measure
#include "load_pipeline.h"
#include "routing.h"
#include "synthetic_layout.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;

const char *stageName(int stage)
{
    static const char *const names[] = {"demo", "headers", "biases", "routing"};
    return stage >= 0 && stage < 4 ? names[stage] : "start";
}

} // namespace

int main()
{
    const std::filesystem::path dir = std::filesystem::path(ATLAS_BENCH_DIR) / "glm5-fp8";
    if (!std::filesystem::exists(dir / "config.json")) {
        std::printf("writing the 141-shard layout to %s ...\n", dir.c_str());
        atlas::synth::writeCheckpoint(atlas::synth::glm5Fp8(), dir);
    }
    double worst = 0;
    const int delays[] = {0, 5, 20, 50, 100, 200, 400, 800, 1500, 3000, 6000};
    for (int delayMs : delays) {
        atlas::LoadRequest request;
        request.spec.path = dir.string();
        request.biases = true;
        request.simulate = true;
        request.routing.tokens = atlas::kMaxRoutingTokens;
        std::atomic<bool> cancel{false}, done{false};
        std::atomic<int> stage{-1};
        std::string outcome = "finished";
        Clock::time_point ended;
        atlas::LoadObserver observer;
        observer.stage = [&](atlas::LoadStage s) { stage = static_cast<int>(s); };
        std::thread worker([&] {
            try {
                atlas::LoadPipeline(request).run(&cancel, observer);
            } catch (const std::exception &e) {
                outcome = e.what();
            }
            ended = Clock::now();
            done = true;
        });
        std::this_thread::sleep_for(std::chrono::milliseconds(delayMs));
        const int at = stage.load();
        const auto raised = Clock::now();
        cancel = true;
        worker.join();
        const double ms = std::chrono::duration<double, std::milli>(ended - raised).count();
        worst = std::max(worst, ms);
        std::printf("cancel after %5d ms, in %-8s -> %-9s in %7.1f ms\n", delayMs, stageName(at), outcome.c_str(),
                    std::max(0.0, ms));
    }
    std::printf("worst cancel latency over the stages: %.1f ms (target < 500 ms)\n", worst);
    return 0;
}
