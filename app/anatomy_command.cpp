#include "anatomy_command.h"

#include "anatomy_graph.h"
#include "command_support.h"
#include "errors.h"
#include "load_pipeline.h"

#include <functional>
#include <iostream>

namespace atlas {

namespace {

const char *kUsage =
    "usage: ckpt-atlas anatomy [SOURCE] --layer N [--json | --format text|json|dot|mermaid] [--decode]\n"
    "\n"
    "One layer as a data graph: its blocks (the tensors each holds, what is cached) and the data flowing\n"
    "between them as the engines run it (MLA, the DSA indexer, IndexShare, GQA and sliding windows, KDA,\n"
    "Gated DeltaNet, the router and experts). JSON is the ckpt-atlas.anatomy/1 schema; DOT (Graphviz) and\n"
    "Mermaid are for slides and documents.\n"
    "\n"
    "  --layer N                 the layer (0 first; MTP layers follow the decoder layers)\n"
    "  --json                    the same as --format json\n"
    "  --format F                text (default), json, dot or mermaid\n"
    "  --decode                  MLA at decode (kv_b_proj absorbed) instead of prefill\n"
    "  --revision REV, --ca-bundle FILE, --connections N, --timeout S, --no-cache: as for inspect\n"
    "\n"
    "exit codes: 0 ok, 2 usage, 3 source or network, 4 invalid checkpoint\n";

struct AnatomyArgs
{
    bool help = false, decode = false;
    std::string format = "text";
    std::string source, revision;
    std::optional<std::uint64_t> layer;
    NetworkOptions network;
    CacheOptions cache;
};

AnatomyArgs parseAnatomyArgs(const std::vector<std::string> &args)
{
    AnatomyArgs o;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string &a = args[i];
        const std::function<std::string()> value = [&] { return optionValue(args, i); };
        if (a == "-h" || a == "--help") {
            o.help = true;
        } else if (a == "--json") {
            o.format = "json";
        } else if (a == "--format") {
            o.format = value();
            if (o.format != "text" && o.format != "json" && o.format != "dot" && o.format != "mermaid")
                throw AtlasError(ErrorKind::Usage, "--format takes text, json, dot or mermaid, not '" + o.format + "'");
        } else if (a == "--decode") {
            o.decode = true;
        } else if (a == "--layer") {
            const std::string v = value();
            o.layer = v == "0" ? 0 : parseCount(a, v, 1u << 20);
        } else if (a == "--revision") {
            o.revision = value();
        } else if (parseSourceAndCacheOption(a, value, o.network, o.cache)) {
        } else if (!a.empty() && a[0] == '-') {
            throw AtlasError(ErrorKind::Usage, "unknown option " + a);
        } else if (o.source.empty()) {
            o.source = a;
        } else {
            throw AtlasError(ErrorKind::Usage, "one SOURCE only (also given: '" + a + "')");
        }
    }
    return o;
}

std::string textOf(const AnatomyGraph &g)
{
    std::string s = "layer " + std::to_string(g.layer) + " (" + g.kind + ")\n";
    for (const auto &n : g.nodes) {
        std::string inputs;
        for (const auto &i : g.inputsOf(n.id))
            inputs += (inputs.empty() ? "" : ", ") + i;
        s += "  " + n.id + "  [" + std::string(nodeRoleName(n.role)) + (n.cached ? ", cached" : "") + "]" +
             (inputs.empty() ? "" : "  ← " + inputs) + "\n";
    }
    return s;
}

} // namespace

int runAnatomy(const std::vector<std::string> &args)
{
    return runCommand("anatomy", [&](const std::atomic<bool> *interrupted) {
        const AnatomyArgs o = parseAnatomyArgs(args);
        if (o.help) {
            std::cout << kUsage;
            return 0;
        }
        if (!o.layer) throw AtlasError(ErrorKind::Usage, "anatomy needs --layer N");
        LoadRequest request = sourceRequest(o.source, o.revision, o.network, o.cache);
        request.biases = false;
        const LoadResult result = LoadPipeline(std::move(request)).run(interrupted);
        const LoadedCheckpoint &data = *result.layout;
        if (*o.layer >= static_cast<std::uint64_t>(data.analysis.layerCount))
            throw AtlasError(ErrorKind::Usage, "--layer " + std::to_string(*o.layer) + ": the checkpoint has " +
                                                   std::to_string(data.analysis.layerCount) + " layers (0 to " +
                                                   std::to_string(data.analysis.layerCount - 1) + ")");
        const AnatomyGraph g = anatomyGraph(data, static_cast<int>(*o.layer),
                                            o.decode ? AnatomyMode::Decode : AnatomyMode::Prefill);
        if (o.format == "json")
            std::cout << jsonOutput(anatomyJson(g)) << "\n";
        else if (o.format == "dot")
            printText(std::cout, anatomyDot(g));
        else if (o.format == "mermaid")
            printText(std::cout, anatomyMermaid(g));
        else
            printText(std::cout, textOf(g));
        return 0;
    });
}

} // namespace atlas
