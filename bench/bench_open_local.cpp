// Opens the 141-shard GLM-5.x layout from a local folder end to end (every header read and
// validated, the analysis and cache built) and prints wall time and peak memory.
//
//   bench_open_local            write the layout under the build tree if needed, then measure 5 runs
//   bench_open_local DIR        measure one run on DIR (what the driver runs in a fresh process)
#include "load_pipeline.h"
#include "synthetic_layout.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <spawn.h>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char **environ;

namespace {

int measureOnce(const std::string &dir)
{
    const auto start = std::chrono::steady_clock::now();
    atlas::LoadRequest request;
    request.spec.path = dir;
    request.biases = false; // the layout: every header read and validated, analysis and cache
    const atlas::LoadResult result = atlas::LoadPipeline(request).run();
    const atlas::Checkpoint &ckpt = result.layout->checkpoint;
    const atlas::CheckpointAnalysis &analysis = result.layout->analysis;
    const atlas::CacheBudget &cache = result.layout->cache;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    std::printf("%.4f %ld %zu %llu %llu\n", seconds, usage.ru_maxrss, ckpt.tensorCount(),
                static_cast<unsigned long long>(analysis.budget.total),
                static_cast<unsigned long long>(cache.bytesPerToken));
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc == 2) return measureOnce(argv[1]);

    const std::filesystem::path dir = std::filesystem::path(ATLAS_BENCH_DIR) / "glm5-fp8";
    if (!std::filesystem::exists(dir / "config.json")) {
        std::printf("writing the 141-shard layout to %s ...\n", dir.c_str());
        atlas::synth::writeCheckpoint(atlas::synth::glm5Fp8(), dir);
    }
    std::vector<double> times;
    long peakKb = 0;
    for (int run = 0; run < 5; ++run) {
        int fds[2];
        if (pipe(fds) != 0) return 1;
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
        posix_spawn_file_actions_addclose(&actions, fds[0]);
        std::string self = "/proc/self/exe", arg = dir.string();
        char *args[] = {argv[0], arg.data(), nullptr};
        pid_t pid;
        if (posix_spawn(&pid, self.c_str(), &actions, nullptr, args, environ) != 0) return 1;
        close(fds[1]);
        char buf[256] = {};
        const ssize_t n = read(fds[0], buf, sizeof buf - 1);
        close(fds[0]);
        int status = 0;
        waitpid(pid, &status, 0);
        double t = 0;
        long kb = 0;
        unsigned long tensors = 0;
        if (n <= 0 || std::sscanf(buf, "%lf %ld %lu", &t, &kb, &tensors) != 3 || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0) {
            std::fprintf(stderr, "run %d failed\n", run);
            return 1;
        }
        times.push_back(t);
        peakKb = std::max(peakKb, kb);
        std::printf("run %d: %.1f ms, peak %.1f MB, %lu tensors\n", run + 1, t * 1000, kb / 1024.0, tensors);
    }
    std::sort(times.begin(), times.end());
    std::printf("open 141-shard local layout: median %.1f ms, best %.1f ms, peak RSS %.1f MB "
                "(targets: < 500 ms, < 300 MB)\n",
                times[times.size() / 2] * 1000, times.front() * 1000, peakKb / 1024.0);
    return 0;
}
