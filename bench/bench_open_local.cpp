// Opens the 141-shard GLM-5.x layout from a local folder end to end (every header read and
// validated, the analysis and cache built) and prints wall time and peak memory.
//
//   bench_open_local            write the layout under the build tree if needed, then measure 5 runs,
//                               then time `ckpt-atlas inspect DIR --json` against the same header walk
//                               done by python3 (json.loads of every shard header), interleaved
//   bench_open_local DIR        measure one run on DIR (what the driver runs in a fresh process)
//   bench_open_local --kimi-k3  the Kimi-K3 layout (497,220 tensors, a 57 MB index), written under the build
//                               tree if needed: median of 5 fresh processes, one "figure" line
//   bench_open_local --two-million
//                               a GLM-5-shaped layout with 4,352 experts a layer (2.0 M tensors, 400
//                               shards), the same way (3 runs)
#include "checkpoint_reader.h"
#include "load_pipeline.h"
#include "report.h"
#include "source_spec.h"
#include "synthetic_layout.h"

#include <algorithm>
#include <optional>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <fcntl.h>
#include <spawn.h>
#include <string>
#include <string_view>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

extern char **environ;

namespace {

// Resident and peak resident memory now, in MB (from /proc/self/status).
std::string memoryNow()
{
    std::FILE *f = std::fopen("/proc/self/status", "r");
    if (!f) return "?";
    char line[256];
    long rss = 0, hwm = 0;
    while (std::fgets(line, sizeof line, f)) {
        std::sscanf(line, "VmRSS: %ld", &rss);
        std::sscanf(line, "VmHWM: %ld", &hwm);
    }
    std::fclose(f);
    char out[64];
    std::snprintf(out, sizeof out, "%.0f/%.0f MB", rss / 1024.0, hwm / 1024.0);
    return out;
}

// ATLAS_BENCH_PHASES=1: the same load in its steps, each timed, on stderr (where the time goes), with
// resident / peak memory after each.
void printPhases(const std::string &dir)
{
    using clock = std::chrono::steady_clock;
    auto t0 = clock::now();
    auto ms = [&t0] {
        const auto now = clock::now();
        const double v = std::chrono::duration<double, std::milli>(now - t0).count();
        t0 = now;
        return v;
    };
    atlas::SourceSpec spec;
    spec.path = dir;
    atlas::OpenedSource opened = atlas::openSource(spec, {}, nullptr, nullptr);
    const double open = ms();
    atlas::Checkpoint ckpt = atlas::readCheckpoint(*opened.source, {});
    const double read = ms();
    const std::string afterRead = memoryNow();
    atlas::CheckpointAnalysis analysis = atlas::analyze(ckpt);
    const double analyse = ms();
    const std::string afterAnalysis = memoryNow();
    const atlas::CacheBudget cache = atlas::computeCacheBudget(ckpt, analysis, {});
    const double budget = ms();
    const std::string json = atlas::buildReport(ckpt, analysis, cache).dump(2);
    const double report = ms();
    std::fprintf(stderr,
                 "phases (ms): open %.1f, read headers %.1f (%s), analyse %.1f (%s), cache %.1f, report %.1f "
                 "(%zu B, %s)\n",
                 open, read, afterRead.c_str(), analyse, afterAnalysis.c_str(), budget, report, json.size(),
                 memoryNow().c_str());
}

int measureOnce(const std::string &dir)
{
    if (const char *p = std::getenv("ATLAS_BENCH_PHASES"); p && *p == '1') printPhases(dir);
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

// Runs argv to the end with stdout thrown away; wall seconds and peak RSS (KB) of that process. posix_spawn
// starts a child in its parent's memory (vfork), and Linux then counts the parent's peak as the child's
// (ru_maxrss is carried over the exec): this process, holding a layout it wrote, would make every child
// look 115 MB large. So a small launcher (this program again, `--launch`) spawns the command and reports.
int launch(char **argv)
{
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    const auto start = std::chrono::steady_clock::now();
    pid_t pid;
    if (posix_spawnp(&pid, argv[0], &actions, nullptr, argv, environ) != 0) return 1;
    int status = 0;
    rusage usage{};
    wait4(pid, &status, 0, &usage);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%.6f %ld %d\n", seconds, usage.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : 128);
    return 0;
}

// This program run again with `args` in a fresh process: what it printed, when it exited 0.
std::optional<std::string> runSelf(std::vector<std::string> args)
{
    int fds[2];
    if (pipe(fds) != 0) return std::nullopt;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    args.insert(args.begin(), "/proc/self/exe");
    std::vector<char *> argv;
    for (auto &a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_t pid;
    const bool spawned = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ) == 0;
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    if (!spawned) {
        close(fds[0]);
        return std::nullopt;
    }
    std::string out;
    char buf[256];
    for (ssize_t got; (got = read(fds[0], buf, sizeof buf)) > 0;)
        out.append(buf, std::size_t(got));
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
    return out;
}

bool timeProcess(std::vector<std::string> argv, double &seconds, long &peakKb)
{
    argv.insert(argv.begin(), "--launch");
    const auto out = runSelf(std::move(argv));
    int code = -1;
    return out && std::sscanf(out->c_str(), "%lf %ld %d", &seconds, &peakKb, &code) == 3 && code == 0;
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// The whole command line against a ten-line Python walk of the same headers, in fresh processes,
// one after the other so that both see the same machine and page cache.
int compareWithPython(const std::string &dir)
{
    const std::string walk = "import json, struct, glob, sys\n"
                             "for f in sorted(glob.glob(sys.argv[1] + '/*.safetensors')):\n"
                             "    with open(f, 'rb') as fh:\n"
                             "        n = struct.unpack('<Q', fh.read(8))[0]\n"
                             "        json.loads(fh.read(n))\n";
    std::vector<double> atlasTimes, pythonTimes;
    long atlasPeak = 0, pythonPeak = 0;
    for (int run = 0; run < 5; ++run) {
        double t = 0;
        long kb = 0;
        if (!timeProcess({CKPT_ATLAS_BIN, "inspect", dir, "--json"}, t, kb)) {
            std::fprintf(stderr, "ckpt-atlas inspect failed\n");
            return 1;
        }
        atlasTimes.push_back(t);
        atlasPeak = std::max(atlasPeak, kb);
        if (!timeProcess({"python3", "-c", walk, dir}, t, kb)) {
            std::printf("python3 is not available: no comparison\n");
            return 0;
        }
        pythonTimes.push_back(t);
        pythonPeak = std::max(pythonPeak, kb);
    }
    const double a = median(atlasTimes), p = median(pythonTimes);
    std::printf("inspect --json: median %.1f ms, peak RSS %.1f MB; python3 header walk: median %.1f ms, peak RSS "
                "%.1f MB; python / atlas = %.2f (target >= 3, RSS <= 100 MB)\n",
                a * 1000, atlasPeak / 1024.0, p * 1000, pythonPeak / 1024.0, p / a);
    return 0;
}

// One run of measureOnce(dir) in a fresh process: wall seconds, peak RSS (KB), tensors.
bool spawnMeasure(const std::string &dir, double &t, long &kb, unsigned long &tensors)
{
    const auto out = runSelf({dir});
    return out && std::sscanf(out->c_str(), "%lf %ld %lu", &t, &kb, &tensors) == 3;
}

// A large layout written once under the build tree, then opened in `runs` fresh processes: the median.
int measureLarge(const char *self, const std::string &name, const std::filesystem::path &dir, int runs,
                 const std::function<void()> &write)
{
    if (!std::filesystem::exists(dir / "config.json")) {
        std::printf("writing the %s layout to %s ...\n", name.c_str(), dir.c_str());
        std::fflush(stdout);
        write();
        // Start again in a fresh process: a child's peak RSS would otherwise start from the writer's (it is
        // kept across exec).
        std::fflush(stdout);
        std::string flag = "--" + name;
        char *args[] = {const_cast<char *>(self), flag.data(), nullptr};
        execv("/proc/self/exe", args);
        return 1;
    }
    std::vector<double> times;
    long peakKb = 0;
    unsigned long tensors = 0;
    for (int run = 0; run < runs; ++run) {
        double t = 0;
        long kb = 0;
        if (!spawnMeasure(dir.string(), t, kb, tensors)) {
            std::fprintf(stderr, "%s: run %d failed\n", name.c_str(), run + 1);
            return 1;
        }
        times.push_back(t);
        peakKb = std::max(peakKb, kb);
    }
    std::printf("figure layout=%s open_ms=%.0f peak_mib=%.0f tensors=%lu runs=%d\n", name.c_str(),
                median(times) * 1000, peakKb / 1024.0, tensors, runs);
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    const std::filesystem::path benchDir(ATLAS_BENCH_DIR);
    if (argc >= 3 && std::string_view(argv[1]) == "--launch") return launch(argv + 2);
    if (argc == 2 && std::string_view(argv[1]) == "--kimi-k3")
        return measureLarge(argv[0], "kimi-k3", benchDir / "kimi-k3", 5, [&] {
            atlas::synth::writeLayout(atlas::synth::kimiK3(), benchDir / "kimi-k3");
        });
    if (argc == 2 && std::string_view(argv[1]) == "--two-million")
        return measureLarge(argv[0], "two-million", benchDir / "two-million", 3, [&] {
            atlas::synth::LayoutSpec spec = atlas::synth::glm5Fp8();
            spec.name = "two-million";
            spec.experts = 4352;
            spec.shards = 400;
            atlas::synth::writeCheckpoint(spec, benchDir / "two-million");
        });
    if (argc == 2) return measureOnce(argv[1]);

    const std::filesystem::path dir = benchDir / "glm5-fp8";
    if (!std::filesystem::exists(dir / "config.json")) {
        std::printf("writing the 141-shard layout to %s ...\n", dir.c_str());
        atlas::synth::writeCheckpoint(atlas::synth::glm5Fp8(), dir);
    }
    std::vector<double> times;
    long peakKb = 0;
    for (int run = 0; run < 5; ++run) {
        double t = 0;
        long kb = 0;
        unsigned long tensors = 0;
        if (!spawnMeasure(dir.string(), t, kb, tensors)) {
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
    return compareWithPython(dir.string());
}
