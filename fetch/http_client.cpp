#include "http_client.h"

#include "errors.h"

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#include "shared_libraries.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <future>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <unistd.h>

namespace atlas {

namespace {

std::once_flag g_curlInit;

bool isRetryableStatus(long s)
{
    return s == 408 || s == 429 || s == 500 || s == 502 || s == 503 || s == 504;
}

bool isRedirect(long s)
{
    return s == 301 || s == 302 || s == 303 || s == 307 || s == 308;
}

bool isHttpUrl(const std::string &url) // http:// in any case
{
    return url.size() >= 7 && std::equal(url.begin(), url.begin() + 7, "http://", [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a)) == b;
           });
}

std::string lower(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
}

std::string trim(const std::string &s)
{
    const auto b = s.find_first_not_of(" \t\r\n");
    const auto e = s.find_last_not_of(" \t\r\n");
    return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

} // namespace

bool isHttpsUrl(const std::string &url)
{
    return url.size() >= 8 && std::equal(url.begin(), url.begin() + 8, "https://", [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a)) == b;
           });
}

std::string HttpResponse::header(const std::string &lowerName) const
{
    auto it = headers.find(lowerName);
    return it == headers.end() ? std::string() : it->second;
}

std::string originOf(const std::string &url)
{
    CURLU *u = lib::curl_url();
    std::string out;
    if (lib::curl_url_set(u, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
        char *scheme = nullptr, *host = nullptr, *port = nullptr;
        if (lib::curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
            lib::curl_url_get(u, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
            lib::curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK)
            out = lower(scheme) + "://" + lower(host) + ":" + port;
        lib::curl_free(scheme);
        lib::curl_free(host);
        lib::curl_free(port);
    }
    lib::curl_url_cleanup(u);
    return out;
}

std::optional<double> parseRetryAfter(const std::string &value)
{
    const std::string v = trim(value);
    if (v.empty()) return std::nullopt;
    if (std::all_of(v.begin(), v.end(), [](unsigned char c) { return std::isdigit(c); })) {
        // Delta seconds; beyond a day it is as good as never (and a long run of digits must not throw).
        if (v.size() > 6) return 1e6;
        return static_cast<double>(std::stol(v));
    }
    if (v.size() > 64) return std::nullopt;
    const time_t when = lib::curl_getdate(v.c_str(), nullptr);
    if (when < 0) return std::nullopt;
    return std::max(0.0, std::difftime(when, std::time(nullptr)));
}

struct HttpClient::Transfer
{
    HttpClient *client = nullptr;
    const HttpRequest *request = nullptr;
    std::string url;
    CURL *easy = nullptr;
    curl_slist *headerList = nullptr;
    HttpResponse response;
    long liveStatus = 0;
    int redirects = 0;
    std::chrono::steady_clock::time_point started;
    std::chrono::steady_clock::time_point notBefore;
    const std::atomic<bool> *cancel = nullptr;
    std::uint64_t reportedBytes = 0;
    std::chrono::steady_clock::time_point lastActivity;
    bool stalled = false;
    std::string origin, originOfUrl; // url's origin, and the url it was taken from
    std::string activeOrigin;        // where it was sent, while in flight

    std::uint64_t limit() const { return request->offset ? request->length : request->maxBody; }

    static size_t onHeader(char *data, size_t size, size_t n, void *self)
    {
        auto *t = static_cast<Transfer *>(self);
        t->lastActivity = std::chrono::steady_clock::now();
        const std::string line(data, size * n);
        if (line.rfind("HTTP/", 0) == 0) {
            t->response.headers.clear();
            const auto sp = line.find(' ');
            t->liveStatus = sp == std::string::npos ? 0 : std::atol(line.c_str() + sp + 1);
        } else if (auto colon = line.find(':'); colon != std::string::npos) {
            t->response.headers[lower(trim(line.substr(0, colon)))] = trim(line.substr(colon + 1));
        }
        return size * n;
    }

    static size_t onBody(char *data, size_t size, size_t n, void *self)
    {
        auto *t = static_cast<Transfer *>(self);
        const size_t bytes = size * n;
        t->lastActivity = std::chrono::steady_clock::now();
        // Bodies of redirects and errors are small; keep a little of them for messages.
        const std::uint64_t room =
            t->limit() > t->response.body.size() ? t->limit() - t->response.body.size() : 0;
        if (bytes > room) {
            t->response.body.append(data, static_cast<size_t>(room));
            t->response.cutOff = true;
            return 0; // stop the transfer: whatever else comes was not asked for
        }
        t->response.body.append(data, bytes);
        return bytes;
    }

    static int onProgress(void *self, curl_off_t, curl_off_t, curl_off_t, curl_off_t)
    {
        auto *t = static_cast<Transfer *>(self);
        if (t->cancel && t->cancel->load(std::memory_order_relaxed)) return 1;
        // A server that stops sending (before or during the body) fails after stallSeconds without a byte.
        if (std::chrono::steady_clock::now() - t->lastActivity >
            std::chrono::seconds(t->client->m_options.stallSeconds)) {
            t->stalled = true;
            return 1;
        }
        return 0;
    }
};

HttpClient::HttpClient(Options options, std::shared_ptr<ReceiptLog> receipts)
    : m_options(std::move(options)), m_receipts(std::move(receipts))
{
    std::call_once(g_curlInit, [] { lib::curl_global_init(CURL_GLOBAL_DEFAULT); });
    if (!m_receipts) m_receipts = std::make_shared<ReceiptLog>();
    m_multi = lib::curl_multi_init();
    lib::curl_multi_setopt(m_multi, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX);
    lib::curl_multi_setopt(m_multi, CURLMOPT_MAX_TOTAL_CONNECTIONS,
                      static_cast<long>(std::max(1, m_options.connections)));
    lib::curl_multi_setopt(m_multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                      static_cast<long>(std::max(1, m_options.connections)));

    // curl's own trust (its default bundle and folder) and the extra bundles: what each connection is verified
    // against, whichever way it is loaded below.
    std::string defaultCa, defaultFolder;
    {
        CURL *probe = lib::curl_easy_init();
        char *ca = nullptr, *folder = nullptr;
        if (lib::curl_easy_getinfo(probe, CURLINFO_CAINFO, &ca) == CURLE_OK && ca) defaultCa = ca;
        if (lib::curl_easy_getinfo(probe, CURLINFO_CAPATH, &folder) == CURLE_OK && folder) defaultFolder = folder;
        lib::curl_easy_cleanup(probe);
    }
    for (const auto &file : m_options.extraCaFiles)
        if (!std::ifstream(file, std::ios::binary))
            throw AtlasError(ErrorKind::Source, file + ": cannot read the CA bundle");
    std::vector<std::string> bundles;
    if (!defaultCa.empty()) bundles.push_back(defaultCa);
    bundles.insert(bundles.end(), m_options.extraCaFiles.begin(), m_options.extraCaFiles.end());
    const curl_version_info_data *curl = lib::curl_version_info(CURLVERSION_NOW);
    m_useCaStore = caStoreUsable(curl ? curl->ssl_version : nullptr) && !(bundles.empty() && defaultFolder.empty());
    if (m_useCaStore) {
        // Loaded once into a store the connections share, starting now.
        m_caStore = std::async(std::launch::async, [bundles, defaultFolder] {
                        CaStore c;
                        try {
                            c.store = sharedCaStore(bundles, defaultFolder, c.error);
                        } catch (const std::exception &e) { // never into curl's callback
                            c.store.reset();
                            c.error = e.what();
                        }
                        return c;
                    }).share();
    } else if (!m_options.extraCaFiles.empty()) {
        // curl loads its files itself: extra trust adds to the system bundle in one file with both.
        std::string bundle;
        for (const auto &file : bundles) {
            std::ifstream in(file, std::ios::binary);
            if (!bundle.empty()) bundle += "\n";
            bundle.append(std::istreambuf_iterator<char>(in), {});
        }
        char path[] = "/tmp/ckpt-atlas-ca-XXXXXX";
        const int fd = mkstemp(path);
        if (fd < 0) throw AtlasError(ErrorKind::Source, "cannot create a temporary CA bundle");
        const bool ok = ::write(fd, bundle.data(), bundle.size()) == static_cast<ssize_t>(bundle.size());
        ::close(fd);
        m_caBundle = path;
        if (!ok) throw AtlasError(ErrorKind::Source, "cannot write a temporary CA bundle");
    }
}

namespace {
// CURLOPT_SSL_CTX_FUNCTION: each new connection's SSL_CTX gets the shared store before its handshake.
CURLcode onSslContext(CURL *, void *sslCtx, void *caStore)
{
    const CaStore &c = static_cast<const std::shared_future<CaStore> *>(caStore)->get(); // ready by now, or soon
    return c.store && useCaStore(sslCtx, c.store.get()) ? CURLE_OK : CURLE_SSL_CACERT_BADFILE;
}
} // namespace

HttpClient::~HttpClient()
{
    lib::curl_multi_cleanup(m_multi);
    if (!m_caBundle.empty()) ::unlink(m_caBundle.c_str());
}

void HttpClient::configure(Transfer &t)
{
    CURL *e = t.easy;
    lib::curl_easy_reset(e);
    lib::curl_easy_setopt(e, CURLOPT_URL, t.url.c_str());
    lib::curl_easy_setopt(e, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
    lib::curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
    lib::curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
    lib::curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
    lib::curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
    lib::curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    lib::curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, m_options.connectTimeoutSeconds);
    // A minimum transfer rate: a server that trickles bytes just often enough to dodge the stall
    // detector still fails once the average stays below it for lowSpeedSeconds.
    lib::curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, m_options.minBytesPerSecond);
    lib::curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, m_options.lowSpeedSeconds);
    lib::curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    lib::curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "identity");
    lib::curl_easy_setopt(e, CURLOPT_USERAGENT, "ckpt-atlas/0.1");
    // The shared certificate store, handed to each new connection's SSL_CTX (curl loads no file then); where
    // libcurl does not run on OpenSSL 3, the files as before.
    if (m_useCaStore && lib::curl_easy_setopt(e, CURLOPT_SSL_CTX_FUNCTION, &onSslContext) == CURLE_OK) {
        lib::curl_easy_setopt(e, CURLOPT_SSL_CTX_DATA, &m_caStore);
        lib::curl_easy_setopt(e, CURLOPT_CAINFO, static_cast<const char *>(nullptr));
        lib::curl_easy_setopt(e, CURLOPT_CAPATH, static_cast<const char *>(nullptr));
    } else if (!m_caBundle.empty()) {
        lib::curl_easy_setopt(e, CURLOPT_CAINFO, m_caBundle.c_str());
    }
    lib::curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &Transfer::onHeader);
    lib::curl_easy_setopt(e, CURLOPT_HEADERDATA, &t);
    lib::curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &Transfer::onBody);
    lib::curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
    lib::curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
    lib::curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, &Transfer::onProgress);
    lib::curl_easy_setopt(e, CURLOPT_XFERINFODATA, &t);
    lib::curl_easy_setopt(e, CURLOPT_PRIVATE, &t);
    if (t.request->locate) lib::curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    // Only for the first attempt of a hop to another origin than the request's (a retry reuses what is open),
    // and with room for a third connection beside the Hub's and the storage's first.
    if (t.request->ownStorageConnection && t.redirects > 0 && t.response.attempts == 0 && m_options.connections >= 3 &&
        originOf(t.url) != originOf(t.request->url))
        lib::curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, 1L);
    if (t.request->offset) {
        const std::uint64_t first = *t.request->offset;
        const std::uint64_t last = first + std::max<std::uint64_t>(t.request->length, 1) - 1;
        const std::string range = std::to_string(first) + "-" + std::to_string(last);
        lib::curl_easy_setopt(e, CURLOPT_RANGE, range.c_str()); // curl copies the string
    }
    lib::curl_slist_free_all(t.headerList);
    t.headerList = nullptr;
    // The token goes to the endpoint's own origin only, never across a redirect to storage, and
    // never in cleartext: over https only, whatever origin was configured.
    if (!m_options.token.empty() && !m_options.tokenOrigin.empty() &&
        originOf(t.url) == m_options.tokenOrigin && isHttpsUrl(t.url)) {
        const std::string auth = "Authorization: Bearer " + m_options.token;
        t.headerList = lib::curl_slist_append(t.headerList, auth.c_str());
    }
    lib::curl_easy_setopt(e, CURLOPT_HTTPHEADER, t.headerList);
    t.response.body.clear();
    t.response.headers.clear();
    t.response.cutOff = false;
    t.liveStatus = 0;
    t.reportedBytes = 0;
    t.stalled = false;
    t.started = std::chrono::steady_clock::now();
    t.lastActivity = t.started;
}

// One perform() call: its transfers, those waiting to start (new or backing off), and what becomes
// of each finished transfer: done, retried, or redirected.
class HttpClient::Batch
{
public:
    using Clock = std::chrono::steady_clock;

    Batch(HttpClient &client, const std::vector<HttpRequest> &requests, const std::atomic<bool> *cancel,
          const std::function<void(std::uint64_t, std::uint64_t)> &onProgress, const OnDone &onDone)
        : m_client(client), m_transfers(requests.size()), m_cancel(cancel), m_onProgress(onProgress),
          m_onDone(onDone)
    {
        for (std::size_t i = 0; i < requests.size(); ++i) {
            Transfer &t = m_transfers[i];
            t.client = &client;
            t.request = &requests[i];
            t.url = requests[i].url;
            t.cancel = cancel;
            t.easy = lib::curl_easy_init();
            t.notBefore = Clock::now();
            m_waiting.push_back(&t);
        }
    }
    ~Batch()
    {
        for (auto &t : m_transfers) {
            if (t.easy) {
                lib::curl_multi_remove_handle(m_client.m_multi, t.easy);
                lib::curl_easy_cleanup(t.easy);
            }
            lib::curl_slist_free_all(t.headerList);
        }
    }

    std::vector<HttpResponse> run()
    {
        while (m_done < m_transfers.size()) {
            checkCancelAndDeadline();
            startDue();
            int running = 0;
            lib::curl_multi_perform(m_client.m_multi, &running);
            reportBytes();
            int left = 0;
            while (CURLMsg *msg = lib::curl_multi_info_read(m_client.m_multi, &left))
                if (msg->msg == CURLMSG_DONE) finished(msg);
            // Handed on once each is final and its receipt taken (the receipt hashes the body).
            for (std::size_t i : m_justDone)
                if (m_onDone) m_onDone(i, m_transfers[i].response);
            m_justDone.clear();
            if (m_done >= m_transfers.size()) break;
            sleep();
        }
        std::vector<HttpResponse> out;
        out.reserve(m_transfers.size());
        for (auto &t : m_transfers)
            out.push_back(std::move(t.response));
        return out;
    }

private:
    const HttpClient::Options &options() const { return m_client.m_options; }

    void checkCancelAndDeadline() const
    {
        if (m_cancel && m_cancel->load()) throw AtlasError(ErrorKind::Source, "cancelled");
        if (options().deadline && Clock::now() > *options().deadline)
            throw AtlasError(ErrorKind::Source, "the load did not finish within its time limit of " +
                                                    std::to_string(options().timeoutSeconds) +
                                                    " s (--timeout); waiting on " +
                                                    redactUrl(m_transfers[0].url) +
                                                    (m_transfers.size() > 1 ? " and others" : ""));
    }

    // Transfers whose time has come, up to the in-flight cap of each origin.
    void startDue()
    {
        const auto now = Clock::now();
        for (auto it = m_waiting.begin(); it != m_waiting.end();) {
            if ((*it)->notBefore > now) {
                ++it;
                continue;
            }
            Transfer &t = **it;
            if (t.originOfUrl != t.url) { // a redirect moved it
                t.origin = originOf(t.url);
                t.originOfUrl = t.url;
            }
            std::size_t &toOrigin = m_activeByOrigin[t.origin];
            const std::size_t cap =
                static_cast<std::size_t>(std::max(1, options().maxInFlight)) * m_client.connectionsInUse(t.origin);
            if (toOrigin < cap) {
                m_client.configure(t);
                lib::curl_multi_add_handle(m_client.m_multi, t.easy);
                ++m_active;
                ++toOrigin;
                t.activeOrigin = t.origin;
                it = m_waiting.erase(it);
            } else {
                ++it;
            }
        }
    }

    void reportBytes()
    {
        if (!m_onProgress) return;
        std::uint64_t fresh = 0;
        for (auto &t : m_transfers) {
            fresh += t.response.body.size() > t.reportedBytes ? t.response.body.size() - t.reportedBytes : 0;
            t.reportedBytes = std::max<std::uint64_t>(t.reportedBytes, t.response.body.size());
        }
        if (fresh) m_onProgress(fresh, 0);
    }

    void finished(CURLMsg *msg)
    {
        Transfer *t = nullptr;
        lib::curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, reinterpret_cast<char **>(&t));
        const CURLcode code = msg->data.result;
        lib::curl_multi_remove_handle(m_client.m_multi, t->easy);
        --m_active;
        --m_activeByOrigin[t->activeOrigin];
        long status = 0;
        lib::curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
        ++t->response.attempts;
        if (m_onProgress) m_onProgress(0, 1);
        if (m_cancel && m_cancel->load()) {
            m_client.record(*t, status, "cancelled");
            throw AtlasError(ErrorKind::Source, "cancelled");
        }
        const bool cutByUs = code == CURLE_WRITE_ERROR && t->response.cutOff;
        if (code != CURLE_OK && !cutByUs) {
            m_client.forgetConnections(t->activeOrigin); // trouble: one connection's worth until proven again
            transportFailure(*t, code, status);
            return;
        }
        long version = 0, localPort = 0;
        lib::curl_easy_getinfo(t->easy, CURLINFO_HTTP_VERSION, &version);
        lib::curl_easy_getinfo(t->easy, CURLINFO_LOCAL_PORT, &localPort);
        if (version == CURL_HTTP_VERSION_2_0 && localPort > 0) m_client.noteConnection(t->activeOrigin, localPort);
        if (t->request->locate) { // only a shortcut: answered at once, never retried
            if (isRedirect(status)) {
                located(*t, status);
            } else {
                m_client.record(*t, status, "not located");
                complete(*t, status, {});
            }
            return;
        }
        if (isRedirect(status) && t->redirects >= options().maxRedirects) {
            m_client.record(*t, status, "too many redirects");
            complete(*t, status, "more than " + std::to_string(options().maxRedirects) + " redirects");
            return;
        }
        if (isRedirect(status) && followRedirect(*t, status)) return;
        if (isRetryableStatus(status) && t->response.attempts < options().maxAttempts &&
            retryLater(*t, status))
            return;
        m_client.record(*t, status, cutByUs ? "stopped reading: more bytes than asked for" : "");
        complete(*t, status, {});
    }

    // A failed connection, a stalled or too-slow body: retried with backoff, except for TLS trust.
    void transportFailure(Transfer &t, CURLcode code, long status)
    {
        if (t.request->locate) { // only a shortcut: not worth a retry
            m_client.record(t, status, "not located: " + std::string(lib::curl_easy_strerror(code)));
            complete(t, status, lib::curl_easy_strerror(code));
            return;
        }
        // libcurl 7.88 answers a response header line beyond its 100 KiB buffer with "Out of memory".
        // (8.6 and later call it CURLE_TOO_LARGE.)
        bool hugeHeader = code == CURLE_OUT_OF_MEMORY && t.liveStatus != 0;
#if LIBCURL_VERSION_NUM >= 0x080600
        hugeHeader = hugeHeader || code == CURLE_TOO_LARGE;
#endif
        std::string error;
        if (t.stalled)
            error = "the transfer stalled: no data for " + std::to_string(options().stallSeconds) + " s";
        else if (code == CURLE_OPERATION_TIMEDOUT && t.liveStatus != 0)
            error = "the transfer was slower than " + std::to_string(options().minBytesPerSecond) + " bytes/s for " +
                    std::to_string(options().lowSpeedSeconds) + " s";
        else if (hugeHeader)
            error = "the server's response header is larger than the 100 KiB libcurl accepts; refused";
        else if (code == CURLE_PARTIAL_FILE) {
            const std::string promised = t.response.header("content-length");
            error = "the server closed the connection after " + std::to_string(t.response.body.size()) + " of the " +
                    (promised.empty() ? std::string("bytes it promised")
                                      : promised.substr(0, 20) + " bytes it promised");
        } else if (code == CURLE_SSL_CACERT_BADFILE && m_client.m_useCaStore && !m_client.caStoreError().empty())
            error = "the trusted certificates could not be loaded: " + m_client.caStoreError();
        else
            error = lib::curl_easy_strerror(code);
        m_client.record(t, status, error);
        const bool tls = code == CURLE_PEER_FAILED_VERIFICATION || code == CURLE_SSL_CONNECT_ERROR ||
                         code == CURLE_SSL_CACERT_BADFILE || code == CURLE_SSL_CERTPROBLEM;
        if (!tls && !hugeHeader && t.response.attempts < options().maxTransportAttempts) {
            const double wait = options().firstBackoffSeconds * (1 << (t.response.attempts - 1));
            later(t, std::min(wait, 8.0));
            return;
        }
        std::string message = error;
        if (code == CURLE_PEER_FAILED_VERIFICATION)
            message += " (the server's certificate is not trusted; add its CA with --ca-bundle)";
        complete(t, status, message);
    }

    // A locate request's redirect: its Location is the answer, unless it leaves https (then it fails,
    // and the read that follows it for real says why).
    void located(Transfer &t, long status)
    {
        char *location = nullptr;
        lib::curl_easy_getinfo(t.easy, CURLINFO_REDIRECT_URL, &location);
        const bool web = location && (isHttpsUrl(location) || isHttpUrl(location));
        if (!web || (isHttpsUrl(t.url) && !isHttpsUrl(location))) {
            m_client.record(t, status, "location refused");
            complete(t, status, "no usable Location");
            return;
        }
        m_client.record(t, status, "located");
        t.url = location;
        complete(t, status, {});
    }

    bool followRedirect(Transfer &t, long status)
    {
        char *location = nullptr;
        lib::curl_easy_getinfo(t.easy, CURLINFO_REDIRECT_URL, &location);
        if (!location) return false;
        // Once a request is on https it stays there: a Location that leaves TLS (http://, or any
        // other scheme) is refused, not followed, whatever the host.
        if (isHttpsUrl(t.url) && !isHttpsUrl(location)) {
            m_client.record(t, status, "redirect refused: it leaves https");
            complete(t, status,
                     "the server redirected " + redactUrl(t.url) + " to " + redactUrl(location) +
                         ", which leaves https; refused (TLS is never given up once a source is https)");
            return true;
        }
        m_client.record(t, status, "redirect");
        t.url = location;
        ++t.redirects;
        t.response.attempts = 0;
        later(t, 0);
        return true;
    }

    // 408, 429 and 5xx: again after Retry-After or the backoff, unless that is too long to wait.
    bool retryLater(Transfer &t, long status)
    {
        double wait = options().firstBackoffSeconds * (1 << (t.response.attempts - 1));
        if (auto ra = parseRetryAfter(t.response.header("retry-after"))) wait = *ra;
        if (wait > options().maxRetryWaitSeconds) return false;
        m_client.record(t, status, "retry after " + std::to_string(status));
        later(t, wait);
        return true;
    }

    void later(Transfer &t, double seconds)
    {
        t.notBefore = Clock::now() +
                      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
        m_waiting.push_back(&t);
    }

    void complete(Transfer &t, long status, const std::string &transportError)
    {
        t.response.transportError = transportError;
        t.response.status = status;
        t.response.finalUrl = t.url;
        ++m_done;
        m_justDone.push_back(static_cast<std::size_t>(&t - m_transfers.data()));
    }

    // Until a socket is ready, the next retry is due, or a cancel check is due.
    void sleep()
    {
        int timeoutMs = 50;
        if (m_active == 0 && !m_waiting.empty()) {
            auto next = std::min_element(m_waiting.begin(), m_waiting.end(), [](Transfer *a, Transfer *b) {
                return a->notBefore < b->notBefore;
            });
            const auto ms =
                std::chrono::duration_cast<std::chrono::milliseconds>((*next)->notBefore - Clock::now())
                    .count();
            timeoutMs = static_cast<int>(std::clamp<long long>(ms, 0, 50));
        }
        lib::curl_multi_poll(m_client.m_multi, nullptr, 0, timeoutMs, nullptr);
    }

    HttpClient &m_client;
    std::vector<Transfer> m_transfers;
    std::vector<Transfer *> m_waiting; // not yet added, or backing off
    std::size_t m_active = 0;
    std::map<std::string, std::size_t> m_activeByOrigin; // of m_active
    std::size_t m_done = 0;
    std::vector<std::size_t> m_justDone; // final since onDone was last called
    const std::atomic<bool> *m_cancel;
    const std::function<void(std::uint64_t, std::uint64_t)> &m_onProgress;
    const OnDone &m_onDone;
};

namespace {
// How long a connection that answered counts as open. Servers keep an idle HTTP/2 connection for a minute
// or more (nginx 3 min, CloudFront 60 s); a batch that follows another comes within a second.
constexpr auto kConnectionFresh = std::chrono::seconds(5);
constexpr std::size_t kMaxConnectionsCounted = 2;
} // namespace

std::size_t HttpClient::connectionsInUse(const std::string &origin)
{
    auto it = m_connections.find(origin);
    if (it == m_connections.end()) return 1;
    const auto now = std::chrono::steady_clock::now();
    std::erase_if(it->second, [&](const auto &c) { return now - c.second > kConnectionFresh; });
    const std::size_t allowed = std::min<std::size_t>(kMaxConnectionsCounted, std::max(1, m_options.connections));
    return std::clamp<std::size_t>(it->second.size(), 1, allowed);
}

void HttpClient::noteConnection(const std::string &origin, long localPort)
{
    m_connections[origin][localPort] = std::chrono::steady_clock::now();
}

void HttpClient::forgetConnections(const std::string &origin)
{
    m_connections.erase(origin);
}

void HttpClient::record(Transfer &t, long status, const std::string &note)
{
    Receipt r;
    r.url = redactUrl(t.url);
    if (t.request->offset) {
        r.rangeOffset = *t.request->offset;
        r.rangeLength = t.request->length;
    }
    r.status = status;
    long version = 0;
    lib::curl_easy_getinfo(t.easy, CURLINFO_HTTP_VERSION, &version);
    r.httpVersion = version == CURL_HTTP_VERSION_2_0 ? 2
                    : version == CURL_HTTP_VERSION_3 ? 3
                    : version                        ? 1
                                                     : 0;
    r.bytes = t.response.body.size();
    r.sha256 = sha256Hex(t.response.body);
    r.startSeconds = std::chrono::duration<double>(t.started - m_epoch).count();
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t.started).count();
    r.note = note;
    m_receipts->add(std::move(r));
}

std::vector<HttpResponse>
HttpClient::perform(const std::vector<HttpRequest> &requests, const std::atomic<bool> *cancel,
                    const std::function<void(std::uint64_t, std::uint64_t)> &onProgress, const OnDone &onDone)
{
    if (!m_started) {
        m_epoch = std::chrono::steady_clock::now();
        m_started = true;
    }
    return Batch(*this, requests, cancel, onProgress, onDone).run();
}

} // namespace atlas
