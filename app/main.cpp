// ckpt-atlas: the command line. inspect and diff run here without Qt; the window and `figures` are
// ckpt-atlas-gui's (beside this program), started in this process's place.
#include "anatomy_command.h"
#include "report_command.h"
#include "command_support.h"
#include "diff_command.h"
#include "inspect_command.h"
#include "version.h"

#include <cerrno>
#include <cstring>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include "plan_command.h"
#include "gguf_layouts.h"
#include "synthetic_layout.h"

#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace {

const char *kUsage =
    "usage: ckpt-atlas [SOURCE]                 open the desktop app (the demo without SOURCE)\n"
    "       ckpt-atlas inspect [SOURCE] [...]   print the report (ckpt-atlas inspect --help)\n"
    "       ckpt-atlas diff A B [...]           compare two checkpoints (ckpt-atlas diff --help)\n"
    "       ckpt-atlas plan [SOURCE] --gpus N --gpu H200 [...]   GPUs, parallelism and cache room to serve it\n"
    "       ckpt-atlas anatomy [SOURCE] --layer N [--json | --format dot|mermaid]   one layer's data graph\n"
    "       ckpt-atlas report [SOURCE] --out DIR   a one-page triage report (Markdown, HTML, JSON)\n"
    "       ckpt-atlas figures [SOURCE] --out DIR   write every view as PNG and SVG\n"
    "       ckpt-atlas write-layout NAME DIR   write a synthetic, header-faithful checkpoint (sparse files)\n"
    "       ckpt-atlas --version | --help\n"
    "\n"
    "SOURCE: a local checkpoint folder, hf://ORG/NAME[@REV] or ORG/NAME on the Hub, or an https:// folder.\n";

int usageError(const std::string &what)
{
    std::cerr << "ckpt-atlas: " << what << "\n\n" << kUsage;
    return 2;
}

// Can the window be shown at all? Without a display Qt would abort with its plugin message.
bool haveDisplay()
{
    const auto set = [](const char *name) {
        const char *v = std::getenv(name);
        return v && *v;
    };
    return set("QT_QPA_PLATFORM") || set("DISPLAY") || set("WAYLAND_DISPLAY");
}

// What the window takes: nothing, or one SOURCE. A word that is neither a path nor a Hub or web
// source is a command this program does not have (`ckpt-atlas plan DIR` must not open a window).
std::optional<int> checkWindowArgs(const std::vector<std::string> &args)
{
    if (args.empty()) return std::nullopt;
    for (const auto &a : args)
        if (a.starts_with("-")) return usageError("unknown option " + a);
    if (args.size() > 1) return usageError("unknown command '" + args.front() + "' (or more than one SOURCE)");
    const std::string &a = args.front();
    std::error_code ec;
    const bool looksLikeSource = std::filesystem::exists(a, ec) || a.find('/') != std::string::npos ||
                                 a.starts_with("hf://") || a.starts_with("http://") || a.starts_with("https://");
    if (!looksLikeSource) return usageError("unknown command '" + a + "', and no folder of that name");
    return std::nullopt;
}

// This program's own file, when /proc says so and it is this program (not ld.so running it).
std::optional<std::filesystem::path> selfExecutable()
{
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (ec || self.filename() != "ckpt-atlas") return std::nullopt;
    return self;
}

// Replaces this process with ckpt-atlas-gui, found beside this program, with the same arguments.
int startGui(char **argv)
{
    std::string gui;
    if (const auto self = selfExecutable()) {
        gui = self->parent_path() / "ckpt-atlas-gui";
    } else if (std::string_view(argv[0]).find('/') != std::string_view::npos) {
        gui = std::filesystem::path(argv[0]).parent_path() / "ckpt-atlas-gui";
    }
    argv[0] = const_cast<char *>(gui.empty() ? "ckpt-atlas-gui" : gui.c_str());
    if (gui.empty())
        ::execvp("ckpt-atlas-gui", argv); // started by bare name from PATH: its sibling is on PATH too
    else
        ::execv(gui.c_str(), argv);
    std::cerr << "ckpt-atlas: cannot start the desktop part " << (gui.empty() ? "ckpt-atlas-gui" : gui) << ": "
              << std::strerror(errno) << "\n";
    return 2;
}

// ckpt-atlas write-layout NAME DIR: the synthetic layouts the tests and the demo use, for anyone to open.
int writeLayoutCommand(const std::vector<std::string> &args)
{
    std::string names;
    for (const auto &n : atlas::synth::layoutNames())
        names += (names.empty() ? "" : ", ") + n;
    for (const auto &n : atlas::synth::ggufLayoutNames())
        names += ", " + n;
    if (args.size() == 1 && (args[0] == "-h" || args[0] == "--help")) {
        std::cout << "usage: ckpt-atlas write-layout NAME DIR\n\nNAME: " << names
                  << "\nWrites config.json, the index and the shards: real headers, sparse data (a few MB on "
                     "disk), synthetic router biases.\n";
        return 0;
    }
    if (args.size() != 2) return usageError("write-layout takes NAME and DIR (names: " + names + ")");
    try {
        if (const auto g = atlas::synth::writeGgufNamed(args[0], args[1])) {
            std::cout << args[1] << ": " << g->tensors << " tensors in " << g->files.size() << " GGUF file"
                      << (g->files.size() == 1 ? "" : "s") << ", " << g->tensorBytes << " bytes of tensor data (sparse)\n";
            return 0;
        }
    } catch (const std::exception &e) {
        atlas::printText(std::cerr, std::string("ckpt-atlas: ") + e.what() + "\n");
        return 3;
    }
    const auto layout = atlas::synth::layoutNamed(args[0]);
    if (!layout) return usageError("no layout named '" + args[0] + "' (names: " + names + ")");
    try {
        const auto r = atlas::synth::writeLayout(*layout, args[1]);
        std::cout << args[1] << ": " << r.tensors << " tensors in " << r.shards << " shards, " << r.tensorBytes
                  << " bytes of tensor data (sparse)\n";
        return 0;
    } catch (const std::exception &e) {
        atlas::printText(std::cerr, std::string("ckpt-atlas: ") + e.what() + "\n");
        return 3;
    }
}

} // namespace

int main(int argc, char **argv)
{
    atlas::keepLoadBuffersOnTheHeap();
    std::vector<std::string> args(argv + 1, argv + argc);
    if (!args.empty() && args.front() == "inspect") return atlas::runInspect({args.begin() + 1, args.end()});
    if (!args.empty() && args.front() == "diff") return atlas::runDiff({args.begin() + 1, args.end()});
    if (!args.empty() && args.front() == "plan") return atlas::runPlan({args.begin() + 1, args.end()});
    if (!args.empty() && args.front() == "anatomy") return atlas::runAnatomy({args.begin() + 1, args.end()});
    if (!args.empty() && args.front() == "report") return atlas::runReport({args.begin() + 1, args.end()});
    if (!args.empty() && (args.front() == "-h" || args.front() == "--help")) {
        std::cout << kUsage;
        return 0;
    }
    if (!args.empty() && (args.front() == "-V" || args.front() == "--version")) {
        std::cout << "ckpt-atlas " << atlas::kAtlasVersion << "\n";
        return 0;
    }
    if (!args.empty() && args.front() == "write-layout") return writeLayoutCommand({args.begin() + 1, args.end()});
    const bool figures = !args.empty() && args.front() == "figures";
    if (!figures) {
        if (const auto refused = checkWindowArgs(args)) return *refused;
        if (!haveDisplay()) {
            std::cerr << "ckpt-atlas: no display to open the window on (DISPLAY and WAYLAND_DISPLAY are unset); "
                         "use 'ckpt-atlas inspect' or 'ckpt-atlas figures' on this machine, or set "
                         "QT_QPA_PLATFORM=offscreen\n";
            return 2;
        }
    }
    return startGui(argv);
}
