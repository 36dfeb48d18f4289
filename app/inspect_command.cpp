#include "inspect_command.h"

#include "command_support.h"
#include "errors.h"
#include "load_pipeline.h"
#include "report.h"

#include <atomic>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace atlas {

namespace {

constexpr int kExitOk = 0;
constexpr int kExitExpectation = 5;

const char *kUsage =
    "usage: ckpt-atlas inspect [SOURCE] [options]\n"
    "\n"
    "SOURCE is a local checkpoint directory (config.json, model.safetensors.index.json and shards,\n"
    "or one model.safetensors), hf://ORG/NAME[@REV] or ORG/NAME on the Hub ($HF_ENDPOINT), or an\n"
    "https://HOST/DIR/ directory. A GGUF source is a .gguf file (a split is read whole from its\n"
    "first part), a folder or Hub repository of GGUF files (--gguf chooses among several sets), or\n"
    "the https URL of a .gguf file. Without SOURCE, the embedded synthetic GLM-5.x demo is opened.\n"
    "Only headers are read, through HTTP range requests; the Hub token comes from HF_TOKEN,\n"
    "HUGGING_FACE_HUB_TOKEN, $HF_TOKEN_PATH or $HF_HOME/token and is sent to the Hub only.\n"
    "\n"
    "  --revision REV            Hub branch, tag or commit (default main)\n"
    "  --ca-bundle FILE          trust this CA too (CURL_CA_BUNDLE and SSL_CERT_FILE are honoured)\n"
    "  --connections N           concurrent connections (default 16)\n"
    "  --receipts FILE           write every HTTP request made (URL, range, status, bytes, SHA-256) as JSON\n"
    "  --no-cache                do not use or fill the on-disk header cache\n"
    "  --gguf PATTERN            the GGUF set whose path contains PATTERN (e.g. UD-Q2_K_XL, Q4_K_M)\n"
    "  --timeout SECONDS         give up on a remote load after this long (default 600)\n"
    "  --json                    print the ckpt-atlas.report/1 JSON report\n"
    "  --explain                 print the working behind each headline number (integer arithmetic\n"
    "                            that evaluates to it, and where each factor comes from)\n"
    "  --context N               context length for the cache total (default: max_position_embeddings)\n"
    "  --kv-dtype bf16|fp8|fp8_ds_mla   MLA latent cache layout (default bf16)\n"
    "  --cache-preset NAME       what an engine allocates: article (default: the reference article's\n"
    "                            accounting, 144 B entries), vllm (132 B, indexer layers only), vllm-mtp\n"
    "                            (and the MTP layer), atom (every layer plus the draft layer, 144 B),\n"
    "                            reference (DeepSeek's reference: 132 B; BF16 rows on DeepSeek-V4, where\n"
    "                            vllm means vLLM's FP8 rows of 584 B and index rows of 132 B), llama.cpp\n"
    "                            (K only for MLA, index keys in the -ctk type, no nextn layer: the default\n"
    "                            for a GGUF source)\n"
    "  --cache-type-k T, --cache-type-v T   llama.cpp's cache types (-ctk/-ctv): f16 (default), q8_0,\n"
    "                            q4_0, q4_1, iq4_nl, q5_0, q5_1, bf16, f32\n"
    "  --state-dtype fp32|bf16   recurrent and compressor states per sequence (default fp32, as vLLM keeps\n"
    "                            them; Mamba-2 follows mamba_ssm_cache_dtype when the config gives it)\n"
    "  --index-entry-bytes N     bytes per index-key entry (default: the preset's, 132 or 144)\n"
    "  --expect PATH=VALUE       fail with exit 5 unless the report has VALUE at PATH (repeatable)\n"
    "  --progress                say on stderr which stage the load is in (headers, biases, routing)\n"
    "\n"
    "  --biases                  read every mlp.gate.e_score_correction_bias (exact byte ranges only):\n"
    "                            FP32 vs BF16 levels, SHA-256, the zero-logit probe\n"
    "  --bias-tensor NAME        audit this tensor too (repeatable)\n"
    "  --simulate                route tokens with the FP32 bias and with BF16 variants, per layer\n"
    "  --tokens N                tokens per layer (default 4096)\n"
    "  --seed S                  seed of the synthetic logits (default 0)\n"
    "  --logit-std X             standard deviation of the synthetic logits (default 1.0)\n"
    "  --logits FILE             captured logits: a safetensors file with 'logits' [T, E] or 'layers.N'\n"
    "\n"
    "exit codes: 0 ok, 2 usage, 3 source or network, 4 invalid checkpoint, 5 expectation failed,\n"
    "            130 interrupted (Ctrl-C)\n";

// Everything `inspect` was told on its command line.
struct InspectArgs
{
    bool help = false;
    bool progress = false;
    std::string sourceArg;
    bool json = false;
    bool explain = false;
    CacheOptions cacheOptions;
    std::vector<std::string> expectations;
    std::string revision;
    std::string receiptsFile;
    NetworkOptions network;
    bool biases = false, simulate = false;
    std::vector<std::string> biasTensors;
    RoutingOptions routing;
    std::string logitsFile;
};

// Throws AtlasError(Usage) naming the option that is wrong.
InspectArgs parseInspectArgs(const std::vector<std::string> &args)
{
    InspectArgs o;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string &a = args[i];
        const std::function<std::string()> value = [&] { return optionValue(args, i); };
        if (a == "-h" || a == "--help") {
            o.help = true;
        } else if (a == "--json") {
            o.json = true;
        } else if (a == "--explain") {
            o.explain = true;
        } else if (a == "--progress") {
            o.progress = true;
        } else if (parseSourceAndCacheOption(a, value, o.network, o.cacheOptions)) {
        } else if (a == "--revision") {
            o.revision = value();
        } else if (a == "--receipts") {
            o.receiptsFile = value();
        } else if (a == "--biases") {
            o.biases = true;
        } else if (a == "--bias-tensor") {
            o.biasTensors.push_back(value());
            o.biases = true;
        } else if (a == "--simulate") {
            o.simulate = true;
        } else if (a == "--tokens") {
            o.routing.tokens = static_cast<std::uint32_t>(parseCount(a, value(), kMaxRoutingTokens));
        } else if (a == "--seed") {
            const std::string v = value();
            auto r = std::from_chars(v.data(), v.data() + v.size(), o.routing.seed);
            if (r.ec != std::errc() || r.ptr != v.data() + v.size())
                throw AtlasError(ErrorKind::Usage, "--seed takes a whole number, not '" + v + "'");
        } else if (a == "--logit-std") {
            const std::string v = value();
            char *end = nullptr;
            const double x = std::strtod(v.c_str(), &end);
            if (!end || *end || !(x > 0) || x > 1e6)
                throw AtlasError(ErrorKind::Usage, "--logit-std takes a positive number, not '" + v + "'");
            o.routing.logitStd = static_cast<float>(x);
        } else if (a == "--logits") {
            o.logitsFile = value();
            o.simulate = true;
        } else if (a == "--expect") {
            o.expectations.push_back(value());
        } else if (a.starts_with("--")) {
            throw AtlasError(ErrorKind::Usage, "unknown option " + a);
        } else if (o.sourceArg.empty()) {
            o.sourceArg = a;
        } else {
            throw AtlasError(ErrorKind::Usage,
                             "more than one SOURCE given ('" + o.sourceArg + "', '" + a + "')");
        }
    }
    return o;
}

} // namespace

int runInspect(const std::vector<std::string> &args)
{
    return runCommand("inspect", [&](const std::atomic<bool> *interrupted) {
        const InspectArgs o = parseInspectArgs(args);
        if (o.help) {
            std::cout << kUsage;
            return kExitOk;
        }
        if (o.sourceArg.empty() && !o.revision.empty())
            throw AtlasError(ErrorKind::Usage, "--revision needs a Hub SOURCE");
        LoadRequest request = sourceRequest(o.sourceArg, o.revision, o.network, o.cacheOptions);
        request.biases = o.biases || o.simulate;
        request.biasTensors = o.biasTensors;
        request.simulate = o.simulate;
        request.routing = o.routing;
        request.logitsFile = o.logitsFile;

        LoadPipeline pipeline(std::move(request));
        auto writeReceipts = [&] {
            if (!pipeline.remote() || o.receiptsFile.empty()) return;
            std::ofstream out(o.receiptsFile);
            out << jsonOutput(pipeline.receipts()->toJson()) << "\n";
            if (!out) throw AtlasError(ErrorKind::Source, o.receiptsFile + ": cannot write the receipts");
        };
        LoadResult result;
        try {
            LoadObserver observer;
            if (o.progress)
                observer.stage = [](LoadStage stage) {
                    static const char *const names[] = {"preparing the demo", "reading headers",
                                                        "reading router biases", "simulating routing"};
                    std::cerr << "ckpt-atlas: " << names[static_cast<int>(stage)] << "\n" << std::flush;
                };
            result = pipeline.run(interrupted, observer);
        } catch (...) {
            // Whatever was fetched before a failure is still worth a receipt.
            try {
                writeReceipts();
            } catch (const AtlasError &) {
            }
            throw;
        }
        if (result.layout->cache.kvDtypeMisfit)
            throw AtlasError(ErrorKind::Usage, "--kv-dtype: " + result.layout->cache.reason);
        if (result.layout->cache.overflow && o.cacheOptions.contextTokens)
            throw AtlasError(ErrorKind::Usage, "--context: " + result.layout->cache.reason);
        writeReceipts();
        const auto report = buildReport(result);
        if (o.json)
            std::cout << jsonOutput(report) << "\n";
        else if (o.explain)
            printText(std::cout, formatExplanations(explainReport(result.layout->checkpoint.config,
                                                                  result.layout->analysis, result.layout->cache)));
        else
            printText(std::cout, formatReport(result));
        const auto failures = checkExpectations(report, o.expectations);
        for (const auto &f : failures)
            printText(std::cerr, f + "\n");
        leaveForExit(std::move(result));
        return failures.empty() ? kExitOk : kExitExpectation;
    });
}

} // namespace atlas
