#pragma once

#include "receipts.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace atlas {

struct HttpRequest
{
    std::string url;
    std::optional<std::uint64_t> offset; // a Range request when set, with length
    std::uint64_t length = 0;
    std::uint64_t maxBody = 256ull << 20; // larger bodies are cut off
    // A HEAD whose redirect is answered, not followed: where the file is (finalUrl is the Location).
    // huggingface_hub learns a file's storage URL the same way (file_download.py, get_hf_file_metadata).
    bool locate = false;
    // At its storage hop (after a redirect), a connection of its own, kept in the pool afterwards. A
    // later batch of more reads than one connection carries then finds a second one open and sends
    // them all at once instead of in two waves (the 141 header reads of a 141-shard checkpoint).
    bool ownStorageConnection = false;
};

struct HttpResponse
{
    long status = 0;
    std::string body;
    std::map<std::string, std::string> headers; // names in lower case
    std::string finalUrl;                       // after redirects
    std::string transportError;                 // set when no HTTP answer came
    bool cutOff = false;                        // we stopped reading: more than asked for was coming
    int attempts = 0;

    std::string header(const std::string &lowerName) const;
};

// An OpenSSL certificate store (X509_STORE) shared by connections, or why there is none.
struct CaStore
{
    std::shared_ptr<void> store;
    std::string error;
};

// The libcurl multi interface, driven on the calling thread: HTTP/2 multiplexing where offered,
// connection reuse across calls, a connection limit, timeouts, manual redirects (the token is
// never sent to another origin), retries with backoff honouring Retry-After, and cancel.
class HttpClient
{
public:
    struct Options
    {
        int connections = 16;
        // Transfers in flight at once on one HTTP/2 connection: below the 100 streams curl puts on one
        // connection (and the 128 servers allow), since beyond them curl opens a new connection for each
        // further transfer (a burst of handshakes that held a 141-read batch up for 0.75 s here). Counted
        // per origin, so that the Hub's resolves and the storage's ranges of one batch do not wait on each
        // other, and twice over for an origin with two connections in recent use (ownStorageConnection).
        int maxInFlight = 96;
        std::vector<std::string> extraCaFiles; // added to the system trust store
        std::string token;                     // Bearer token, sent to tokenOrigin only
        std::string tokenOrigin;               // "https://host:port"
        long connectTimeoutSeconds = 15;
        long stallSeconds = 30;       // a body with no progress this long fails
        int maxAttempts = 5;          // for 408 / 429 / 5xx answers
        int maxTransportAttempts = 3; // for failed connections and stalled bodies
        double maxRetryWaitSeconds = 60;
        long minBytesPerSecond = 1024; // slower than this for lowSpeedSeconds fails
        long lowSpeedSeconds = 30;
        int maxRedirects = 5;
        // The whole load must finish by then (every perform() call checks it).
        std::optional<std::chrono::steady_clock::time_point> deadline;
        long timeoutSeconds = 0; // what the deadline came from, for the message
        double firstBackoffSeconds = 0.25;
    };

    HttpClient(Options options, std::shared_ptr<ReceiptLog> receipts);
    ~HttpClient();
    HttpClient(const HttpClient &) = delete;
    HttpClient &operator=(const HttpClient &) = delete;

    // Performs every request concurrently; answers in request order. Throws AtlasError(Source,
    // "cancelled") when the flag is raised. onBytes reports body bytes as they arrive. onDone, when
    // given, is handed each response on this thread as soon as it is final (after its redirects and
    // retries) and may take its body; what it leaves is returned with the others.
    using OnDone = std::function<void(std::size_t index, HttpResponse &response)>;
    std::vector<HttpResponse>
    perform(const std::vector<HttpRequest> &requests, const std::atomic<bool> *cancel,
            const std::function<void(std::uint64_t bytes, std::uint64_t requests)> &onProgress = {},
            const OnDone &onDone = {});

    ReceiptLog &receipts() { return *m_receipts; }

private:
    struct Transfer;
    class Batch;
    void configure(Transfer &t);
    void record(Transfer &t, long status, const std::string &note); // a receipt
    // HTTP/2 connections to `origin` that answered within the last few seconds (at most two): how many
    // times maxInFlight may be in flight to it.
    std::size_t connectionsInUse(const std::string &origin);
    void noteConnection(const std::string &origin, long localPort);
    void forgetConnections(const std::string &origin);
    Options m_options;
    std::shared_ptr<ReceiptLog> m_receipts;
    void *m_multi = nullptr;
    std::string m_caBundle; // combined system + extra CAs, when extra ones are given and curl loads files itself
    // The certificate store every connection is verified against (sharedCaStore), built on another thread
    // from the construction on, so that the first connection's TCP handshake hides it.
    std::shared_future<CaStore> m_caStore;
    bool m_useCaStore = false; // libcurl runs on the OpenSSL 3 this store is made for (caStoreUsable)
    const std::string &caStoreError() const { return m_caStore.get().error; }
    std::chrono::steady_clock::time_point m_epoch;
    bool m_started = false;
    // Per origin, the local port of each HTTP/2 connection that answered, and when it last did.
    std::map<std::string, std::map<long, std::chrono::steady_clock::time_point>> m_connections;
};

// True when the URL's scheme is https (in any case).
bool isHttpsUrl(const std::string &url);

// "https://Host:443/x" -> "https://host:443"; empty when the URL does not parse.
std::string originOf(const std::string &url);

// Seconds to wait from a Retry-After value (delta seconds or an HTTP date); nullopt when unreadable.
std::optional<double> parseRetryAfter(const std::string &value);

} // namespace atlas
