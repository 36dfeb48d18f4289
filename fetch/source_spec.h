#pragma once

#include "byte_source.h"
#include "header_cache.h"
#include "http_client.h"

#include <memory>
#include <optional>
#include <string>

namespace atlas {

// What the user typed as SOURCE, understood.
struct SourceSpec
{
    enum class Kind { Local, Hub, Http };
    Kind kind = Kind::Local;
    std::string path;     // Local
    std::string url;      // Http: the directory URL
    std::string repo;     // Hub: ORG/NAME
    std::string revision; // Hub: branch, tag or commit ("main" when not given)
    std::string endpoint; // Hub: $HF_ENDPOINT or https://huggingface.co
    // GGUF: a .gguf file the path or URL named (relative to `path` / `url`, which are then its folder), and
    // --gguf PATTERN (a Hub repository or folder of several quantisations).
    std::string ggufFile;
    std::string ggufPattern;
};

// "hf://ORG/NAME[@REV]", "ORG/NAME" (when no such path exists), "https://HOST/DIR/", or a folder; a local file
// or an https URL that ends in ".gguf" names that file (and its split) in its folder.
// `revision` (from --revision) applies to Hub sources. Throws AtlasError(Usage) when malformed.
SourceSpec parseSourceSpec(const std::string &text, const std::string &revision = {});

struct NetworkOptions
{
    int connections = 16;
    std::string caBundle; // --ca-bundle; CURL_CA_BUNDLE / SSL_CERT_FILE are added too
    bool useCache = true; // --no-cache turns it off
    long stallSeconds = 30;
    long minBytesPerSecond = 1024; // slower than this for lowSpeedSeconds fails
    long lowSpeedSeconds = 30;
    long timeoutSeconds = 600; // --timeout: the whole load, from opening the source to the last byte
    std::string ggufPattern;   // --gguf: which GGUF files of a source that holds several (SourceSpec::ggufPattern)
};

HttpClient::Options httpOptionsFor(const SourceSpec &spec, const NetworkOptions &options);

// An opened source, ready for readCheckpoint, with what goes with it.
struct OpenedSource
{
    std::unique_ptr<ByteSource> source;
    std::shared_ptr<ReceiptLog> receipts; // empty for local folders
    std::unique_ptr<HeaderCache> cache;   // Hub sources only, unless disabled
};

// Opens the source; a Hub source resolves its revision here (one request). Requests are
// recorded in `receipts` (a new log when none is given).
OpenedSource openSource(const SourceSpec &spec, const NetworkOptions &options,
                        const std::atomic<bool> *cancel = nullptr, std::shared_ptr<ReceiptLog> receipts = {});

} // namespace atlas
