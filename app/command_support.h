#pragma once

#include <type_traits>
#include <utility>

#include "cache_budget.h"
#include "load_pipeline.h"
#include "source_spec.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace atlas {

// What the subcommands of the command line (inspect, diff) share.

// A positive whole number for `option`, at most `max`; throws AtlasError(Usage) naming the option.
std::uint64_t parseCount(const std::string &option, const std::string &value, std::uint64_t max = UINT64_MAX);

// The value after the option at args[i], advancing i; throws AtlasError(Usage) "OPTION needs a value"
// when none follows. Every subcommand's parser reads option values through it.
std::string optionValue(const std::vector<std::string> &args, std::size_t &i);

// The options that say how to reach sources and how to count the cache: --ca-bundle, --connections,
// --timeout, --no-cache, --gguf, --context, --kv-dtype, --cache-preset, --index-entry-bytes. Returns false when
// `option` is none of them; `value` takes the option's argument (and throws when there is none).
bool parseSourceAndCacheOption(const std::string &option, const std::function<std::string()> &value,
                               NetworkOptions &network, CacheOptions &cache);

// A load of SOURCE (the embedded demo when empty; a Hub revision when given) with the command's network
// and cache options; the command sets what else it wants (biases, the simulation).
LoadRequest sourceRequest(const std::string &source, const std::string &revision, const NetworkOptions &network,
                          const CacheOptions &cache);

// Runs a subcommand: Ctrl-C raises the flag handed to `body` (every transfer and the simulation watch
// it; the command then stops cleanly), and exceptions become the exit codes of the usage text:
// the AtlasError's kind, 130 when interrupted, 4 for out of memory. Usage errors point at
// 'ckpt-atlas NAME --help'.
int runCommand(const char *name, const std::function<int(const std::atomic<bool> *interrupted)> &body);

// What a command prints, made safe for the terminal it reaches: every control character and every
// byte that is not UTF-8 (a tensor name, a server's message, a folder name) as \xNN; newlines and
// tabs stay. Every printing of text from a checkpoint or a server goes through one of these.
void printText(std::ostream &out, std::string_view text);
// A JSON document as text, valid UTF-8 always: control characters as JSON's \u001b; strings and keys
// with bytes that are not UTF-8 or with C1 controls are written with them as \xNN, as printText shows.
std::string jsonOutput(nlohmann::ordered_json document, int indent = 2);

// A load makes a few hundred thousand small allocations and a few hundred header buffers of ~100 KB:
// malloc keeps the buffers on the heap (no mmap and page faults per buffer, no trim between shards).
// The 141-shard open measured 0.47 -> 0.40 s with it (bench_open_local). Called first by both mains.
void keepLoadBuffersOnTheHeap();

// A command's loaded checkpoint is not taken apart object by object when the command is done: the
// process ends right after, and freeing 118k tensors one by one cost 4 ms of a 130 ms inspect (Kimi-K3's
// 497k: 15 ms). Sanitizer builds free it as usual, so that a real leak still shows.
template <typename T>
void leaveForExit(T &&done)
{
#if defined(__SANITIZE_ADDRESS__)
    (void)done;
#else
    new std::decay_t<T>(std::forward<T>(done)); // never deleted: the process ends next
#endif
}

} // namespace atlas
