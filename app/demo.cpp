#include "demo.h"

#include "errors.h"
#include "synthetic_layout.h"

#include <cstdlib>
#include <fstream>
#include <unistd.h>

namespace atlas {

namespace {

std::filesystem::path cacheRoot()
{
    if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x)
        return std::filesystem::path(x) / "ckpt-atlas";
    if (const char *h = std::getenv("HOME"); h && *h)
        return std::filesystem::path(h) / ".cache" / "ckpt-atlas";
    return std::filesystem::temp_directory_path() / "ckpt-atlas";
}

// Bump when the writer's output changes, so that old demos are not reused.
constexpr const char *kDemoName = "demo-glm5-fp8-v2";

} // namespace

std::filesystem::path ensureDemoCheckpoint()
{
    namespace fs = std::filesystem;
    const fs::path dir = cacheRoot() / kDemoName;
    if (fs::exists(dir / ".complete")) return dir;
    std::error_code ec;
    fs::create_directories(cacheRoot(), ec);
    // Write beside, then rename, so that an interrupted write never leaves a half demo.
    const fs::path staging =
        cacheRoot() / (std::string(kDemoName) + ".partial-" + std::to_string(::getpid()));
    fs::remove_all(staging, ec);
    synth::writeCheckpoint(synth::glm5Fp8(), staging);
    std::ofstream(staging / ".complete") << "ok\n";
    fs::remove_all(dir, ec);
    fs::rename(staging, dir, ec);
    if (ec && !fs::exists(dir / ".complete"))
        throw AtlasError(ErrorKind::Source,
                         dir.string() + ": cannot store the demo checkpoint: " + ec.message());
    fs::remove_all(staging, ec);
    return dir;
}

} // namespace atlas
