#include "command_support.h"

#include "errors.h"
#include "untrusted_text.h"

#include <charconv>
#include <csignal>
#include <malloc.h>
#include <iostream>

namespace atlas {

namespace {

constexpr int kExitInterrupted = 130;

std::atomic<bool> g_interrupted{false};
extern "C" void onInterrupt(int)
{
    g_interrupted.store(true);
}

} // namespace

void printText(std::ostream &out, std::string_view text)
{
    out << printable(text);
}

std::string jsonOutput(nlohmann::ordered_json document, int indent)
{
    // Control characters are left to JSON's own \u escapes; what JSON cannot carry safely (bytes that
    // are not UTF-8, C1 controls, DEL) is written as printText writes it (needsJsonEscape).
    // Iterative: the document may carry a config.json of up to kMaxJsonDepth levels.
    std::vector<nlohmann::ordered_json *> todo{&document};
    while (!todo.empty()) {
        nlohmann::ordered_json *v = todo.back();
        todo.pop_back();
        if (v->is_string()) {
            if (auto &s = v->get_ref<std::string &>(); needsJsonEscape(s)) s = printable(s);
        } else if (v->is_object()) {
            bool badKey = false;
            for (auto it = v->begin(); it != v->end() && !badKey; ++it)
                badKey = needsJsonEscape(it.key());
            if (badKey) {
                nlohmann::ordered_json fixed = nlohmann::ordered_json::object();
                for (auto it = v->begin(); it != v->end(); ++it)
                    fixed[printable(it.key())] = std::move(it.value());
                *v = std::move(fixed);
            }
            for (auto &item : *v)
                todo.push_back(&item);
        } else if (v->is_array()) {
            for (auto &item : *v)
                todo.push_back(&item);
        }
    }
    return document.dump(indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

std::string optionValue(const std::vector<std::string> &args, std::size_t &i)
{
    if (i + 1 >= args.size()) throw AtlasError(ErrorKind::Usage, args[i] + " needs a value");
    return args[++i];
}

std::uint64_t parseCount(const std::string &option, const std::string &value, std::uint64_t max)
{
    std::uint64_t v = 0;
    auto r = std::from_chars(value.data(), value.data() + value.size(), v);
    if (r.ec != std::errc() || r.ptr != value.data() + value.size() || v == 0)
        throw AtlasError(ErrorKind::Usage, option + " takes a positive whole number, not '" + value + "'");
    if (v > max)
        throw AtlasError(ErrorKind::Usage,
                         option + " " + value + " is above the limit of " + std::to_string(max));
    return v;
}

bool parseSourceAndCacheOption(const std::string &a, const std::function<std::string()> &value,
                               NetworkOptions &network, CacheOptions &cache)
{
    if (a == "--ca-bundle") {
        network.caBundle = value();
    } else if (a == "--connections") {
        network.connections = static_cast<int>(parseCount(a, value(), 256));
    } else if (a == "--timeout") {
        network.timeoutSeconds = static_cast<long>(parseCount(a, value(), 7 * 24 * 3600));
    } else if (a == "--no-cache") {
        network.useCache = false;
    } else if (a == "--gguf") {
        network.ggufPattern = value();
        if (network.ggufPattern.empty()) throw AtlasError(ErrorKind::Usage, "--gguf needs a pattern (e.g. Q4_K_M)");
    } else if (a == "--context") {
        cache.contextTokens = parseCount(a, value());
    } else if (a == "--kv-dtype") {
        const std::string v = value();
        auto k = kvDtypeFromName(v);
        if (!k) throw AtlasError(ErrorKind::Usage, "--kv-dtype takes bf16, fp8 or fp8_ds_mla, not '" + v + "'");
        cache.kvDtype = *k;
    } else if (a == "--cache-preset") {
        const std::string v = value();
        auto preset = cachePresetFromName(v);
        if (!preset)
            throw AtlasError(ErrorKind::Usage,
                             "--cache-preset takes article, vllm, vllm-mtp, atom, reference or llama.cpp, not '" + v + "'");
        cache.preset = *preset;
    } else if (a == "--cache-type-k" || a == "-ctk" || a == "--cache-type-v" || a == "-ctv") {
        const std::string v = value();
        const auto t = llamaCacheTypeFromName(v);
        if (!t)
            throw AtlasError(ErrorKind::Usage, a + " takes llama.cpp's cache types f32, f16, bf16, q8_0, q4_0, q4_1, "
                                                   "iq4_nl, q5_0 or q5_1, not '" + v + "'");
        (a == "--cache-type-k" || a == "-ctk" ? cache.llamaCacheTypeK : cache.llamaCacheTypeV) = *t;
    } else if (a == "--state-dtype") {
        const std::string v = value();
        auto d = stateDtypeFromName(v);
        if (!d) throw AtlasError(ErrorKind::Usage, "--state-dtype takes fp32 or bf16, not '" + v + "'");
        cache.stateDtype = *d;
    } else if (a == "--index-entry-bytes") {
        cache.indexEntryBytes = static_cast<std::int64_t>(parseCount(a, value(), 1 << 20));
    } else {
        return false;
    }
    return true;
}

int runCommand(const char *name, const std::function<int(const std::atomic<bool> *interrupted)> &body)
{
    try {
        struct sigaction action = {};
        action.sa_handler = onInterrupt;
        sigemptyset(&action.sa_mask);
        sigaction(SIGINT, &action, nullptr);
        return body(&g_interrupted);
    } catch (const AtlasError &e) {
        if (g_interrupted) {
            std::cerr << "ckpt-atlas: interrupted\n";
            return kExitInterrupted;
        }
        std::cerr << "ckpt-atlas: " << printable(e.what()) << "\n";
        if (e.kind() == ErrorKind::Usage) std::cerr << "(see 'ckpt-atlas " << name << " --help')\n";
        return static_cast<int>(e.kind());
    } catch (const std::bad_alloc &) {
        std::cerr << "ckpt-atlas: out of memory\n";
        return static_cast<int>(ErrorKind::Invalid);
    } catch (const std::exception &e) {
        std::cerr << "ckpt-atlas: " << printable(e.what()) << "\n";
        return static_cast<int>(ErrorKind::Source);
    }
}

void keepLoadBuffersOnTheHeap()
{
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    mallopt(M_TOP_PAD, 64 << 20);
}

LoadRequest sourceRequest(const std::string &source, const std::string &revision, const NetworkOptions &network,
                          const CacheOptions &cache)
{
    LoadRequest request;
    if (!source.empty()) request.spec = parseSourceSpec(source, revision);
    request.spec.ggufPattern = network.ggufPattern;
    request.network = network;
    request.cache = cache;
    return request;
}

} // namespace atlas
