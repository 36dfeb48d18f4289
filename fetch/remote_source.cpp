#include "remote_source.h"

#include "errors.h"
#include "safetensors.h"
#include "untrusted_text.h"

#define CURL_DISABLE_TYPECHECK
#include <curl/curl.h>

#include "shared_libraries.h"
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <exception>
#include <fstream>
#include <unistd.h>

namespace atlas {

namespace {

std::string readFirstLine(const std::string &path)
{
    // Opened without blocking and only if it is a regular file (a token path may name anything).
    std::string line;
    try {
        std::uint64_t size = 0;
        const int fd = openRegularFile(path, &size);
        if (fd < 0) return {};
        char buffer[4096];
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        ::close(fd);
        if (n > 0) line.assign(buffer, static_cast<std::size_t>(n));
    } catch (const AtlasError &) {
        return {};
    }
    if (const auto nl = line.find('\n'); nl != std::string::npos) line.resize(nl);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\n'))
        line.pop_back();
    return line;
}

// Every byte a URL would misread escaped, slashes too (a revision such as refs/pr/1 is one segment).
std::string escapeAll(const std::string &text)
{
    char *e = lib::curl_easy_escape(nullptr, text.c_str(), static_cast<int>(text.size()));
    std::string out = e ? e : text;
    lib::curl_free(e);
    return out;
}

// Each segment of a path escaped, its slashes kept: a GGUF set in a folder of its repository
// ("UD-Q2_K_XL/GLM-5-UD-Q2_K_XL-00001-of-00006.gguf") is fetched as the Hub serves it.
std::string escapePath(const std::string &file)
{
    std::string out;
    std::size_t start = 0;
    for (;;) {
        const std::size_t slash = file.find('/', start);
        const std::string part = file.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
        char *e = lib::curl_easy_escape(nullptr, part.c_str(), static_cast<int>(part.size()));
        out += e ? e : part;
        lib::curl_free(e);
        if (slash == std::string::npos) break;
        out += '/';
        start = slash + 1;
    }
    return out;
}

} // namespace

std::optional<std::string> findHubToken()
{
    for (const char *var : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"})
        if (const char *v = std::getenv(var); v && *v) return std::string(v);
    if (const char *p = std::getenv("HF_TOKEN_PATH"); p && *p) {
        if (auto t = readFirstLine(p); !t.empty()) return t;
    }
    std::string home;
    if (const char *h = std::getenv("HF_HOME"); h && *h)
        home = h;
    else if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x)
        home = std::string(x) + "/huggingface";
    else if (const char *u = std::getenv("HOME"); u && *u)
        home = std::string(u) + "/.cache/huggingface";
    if (!home.empty())
        if (auto t = readFirstLine(home + "/token"); !t.empty()) return t;
    return std::nullopt;
}

std::uint64_t checkRangeAnswer(const std::string &file, const HttpRequest &request, const HttpResponse &r)
{
    const std::uint64_t offset = request.offset.value_or(0);
    const std::uint64_t length = request.length;
    if (r.status == 200) {
        // The server ignored Range. Fine only when the whole (small) file arrived complete.
        const std::string cl = r.header("content-length");
        const bool complete = !r.cutOff && offset == 0 && !cl.empty() &&
                              std::strtoull(cl.c_str(), nullptr, 10) == r.body.size();
        if (complete) return r.body.size();
        throw AtlasError(ErrorKind::Source,
                         file +
                             ": the server ignores Range requests (it answered 200 with the "
                             "whole file); stopped after " +
                             std::to_string(r.body.size()) + " bytes instead of downloading it");
    }
    if (r.status != 206)
        throw AtlasError(ErrorKind::Source,
                         file + ": unexpected HTTP " + std::to_string(r.status) + " to a range request");
    const std::string cr = r.header("content-range");
    unsigned long long a = 0, b = 0, total = 0;
    char slash[2] = {};
    if (std::sscanf(cr.c_str(), "bytes %llu-%llu%1[/]%llu", &a, &b, slash, &total) != 4 || b < a ||
        b >= total)
        throw AtlasError(ErrorKind::Source, file + ": the server's Content-Range '" + cr +
                                                "' is not of the form bytes A-B/TOTAL");
    const std::uint64_t expectedEnd = std::min<std::uint64_t>(offset + length, total);
    if (a != offset || b + 1 != expectedEnd)
        throw AtlasError(ErrorKind::Source, file + ": asked for bytes " + std::to_string(offset) + "-" +
                                                std::to_string(offset + length - 1) +
                                                " but the server's Content-Range says " + cr);
    if (r.body.size() != b - a + 1)
        throw AtlasError(ErrorKind::Source,
                         file + ": received " + std::to_string(r.body.size()) + " bytes but Content-Range " +
                             cr + " promises " + std::to_string(b - a + 1) +
                             (r.cutOff ? " (the server sent more than asked)" : " (the body was cut short)"));
    return total;
}

RemoteSource::RemoteSource(HttpClient::Options options, std::shared_ptr<ReceiptLog> receipts)
    : m_client(std::move(options), std::move(receipts))
{
}

std::vector<HttpResponse> RemoteSource::perform(const std::vector<HttpRequest> &requests,
                                                const HttpClient::OnDone &onDone)
{
    throwIfCancelled();
    return m_client.perform(
        requests, cancelFlag(), [this](std::uint64_t bytes, std::uint64_t count) { noteTraffic(bytes, count); },
        onDone);
}

std::string RemoteSource::urlFor(const std::string &file)
{
    std::lock_guard lock(m_lock);
    if (auto it = m_redirects.find(file); it != m_redirects.end()) return it->second;
    return fileUrl(file);
}

void RemoteSource::remember(const std::string &file, const HttpResponse &response)
{
    std::lock_guard lock(m_lock);
    if (!response.finalUrl.empty() && response.finalUrl != fileUrl(file))
        m_redirects[file] = response.finalUrl;
}

std::string RemoteSource::describeFailure(const std::string &file, const HttpResponse &r)
{
    if (!r.transportError.empty()) return file + ": " + r.transportError + " (" + redactUrl(r.finalUrl) + ")";
    std::string what = "HTTP " + std::to_string(r.status);
    if (r.status == 401 || r.status == 403)
        what += ": access denied";
    else if (r.status == 404)
        what += ": not found";
    else if (r.status == 429)
        what += ": too many requests, still refused after " + std::to_string(r.attempts) + " attempts";
    else if (r.status >= 500)
        what += ": server error, still failing after " + std::to_string(r.attempts) + " attempts";
    return file + ": " + what + " (" + redactUrl(r.finalUrl) + ")";
}

std::optional<std::string> RemoteSource::smallFileFrom(const std::string &file, HttpResponse &r)
{
    if (r.transportError.empty() && r.status == 404) return std::nullopt;
    if (!r.transportError.empty() || r.status != 200)
        throw AtlasError(ErrorKind::Source, describeFailure(file, r));
    if (r.cutOff)
        throw AtlasError(ErrorKind::Source,
                         file + ": larger than 256 MiB, too large for a config or index file");
    remember(file, r);
    return std::move(r.body);
}

std::optional<std::string> RemoteSource::readSmallFile(const std::string &file)
{
    return readBatch({file}, {}).files.front();
}

HttpRequest RemoteSource::rangeRequest(const RangeRequest &r)
{
    HttpRequest h;
    h.url = urlFor(r.file);
    h.offset = r.offset;
    h.length = std::max<std::uint64_t>(r.length, 1);
    return h;
}

BatchAnswer RemoteSource::readBatch(const std::vector<std::string> &files,
                                    const std::vector<RangeRequest> &speculative,
                                    const std::vector<std::string> &locate)
{
    std::vector<HttpRequest> http;
    std::vector<std::size_t> fileSlot(files.size(), SIZE_MAX);
    for (std::size_t i = 0; i < files.size(); ++i) {
        if (knownAbsent(files[i])) continue;
        fileSlot[i] = http.size();
        HttpRequest req;
        req.url = urlFor(files[i]);
        http.push_back(std::move(req));
    }
    const std::size_t firstRange = http.size();
    for (const auto &r : speculative) {
        http.push_back(rangeRequest(r));
        // The probe of the first shard opens a second connection to the storage, which the batch of
        // the other headers then uses beside the index's.
        http.back().ownStorageConnection = true;
    }
    const std::size_t firstLocate = http.size();
    std::vector<const std::string *> located;
    for (const auto &file : locate) {
        if (knownAbsent(file)) continue;
        HttpRequest req;
        req.url = urlFor(file);
        if (req.url != fileUrl(file)) continue; // known already
        req.locate = true;
        http.push_back(std::move(req));
        located.push_back(&file);
    }
    auto responses = http.empty() ? std::vector<HttpResponse>() : perform(http);
    // A location is only a shortcut: a failed or refused one leaves the file to be read the usual way.
    for (std::size_t k = 0; k < located.size(); ++k) {
        const HttpResponse &r = responses[firstLocate + k];
        if (r.transportError.empty() && r.status >= 300 && r.status < 400) remember(*located[k], r);
    }
    BatchAnswer out;
    for (std::size_t i = 0; i < files.size(); ++i)
        out.files.push_back(fileSlot[i] == SIZE_MAX ? std::nullopt
                                                    : smallFileFrom(files[i], responses[fileSlot[i]]));
    for (std::size_t k = 0; k < speculative.size(); ++k) {
        HttpResponse &r = responses[firstRange + k];
        if (r.transportError.empty() && r.status == 404) {
            out.ranges.push_back(std::nullopt);
            continue;
        }
        out.ranges.push_back(rangeFrom(speculative[k].file, http[firstRange + k], r));
    }
    return out;
}

std::vector<RangeAnswer> RemoteSource::readRanges(const std::vector<RangeRequest> &requests)
{
    std::vector<HttpRequest> http;
    http.reserve(requests.size());
    for (const auto &r : requests)
        http.push_back(rangeRequest(r));
    auto responses = perform(http);
    std::vector<RangeAnswer> answers;
    answers.reserve(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i)
        answers.push_back(rangeFrom(requests[i].file, http[i], responses[i]));
    return answers;
}

void RemoteSource::readRangesEach(const std::vector<RangeRequest> &requests, const EachAnswer &each)
{
    std::vector<HttpRequest> http;
    http.reserve(requests.size());
    for (const auto &r : requests)
        http.push_back(rangeRequest(r));
    // Checked and handed on as each arrives; a failure waits until all are in, so that the one told is
    // the first in request order, whatever order the server answered in.
    std::vector<std::exception_ptr> failed(requests.size());
    perform(http, [&](std::size_t i, HttpResponse &response) {
        try {
            each(i, rangeFrom(requests[i].file, http[i], response));
        } catch (...) {
            failed[i] = std::current_exception();
        }
    });
    for (const auto &f : failed)
        if (f) std::rethrow_exception(f);
}

RangeAnswer RemoteSource::rangeFrom(const std::string &file, const HttpRequest &request, HttpResponse &r)
{
    if (!r.transportError.empty() || (r.status != 200 && r.status != 206))
        throw AtlasError(ErrorKind::Source, describeFailure(file, r),
                         r.transportError.empty() && r.status == 404 ? HeaderProblem::MissingFile
                                                                     : HeaderProblem::None);
    RangeAnswer a;
    a.fileSize = checkRangeAnswer(file, request, r);
    if (a.fileSize > kMaxFileSize)
        throw AtlasError(ErrorKind::Source, file + ": the server says the file holds " + std::to_string(a.fileSize) +
                                                " bytes, more than any checkpoint file may hold (2^50)");
    {
        // Every answer about one file must agree on its size: a total that moves between requests
        // would make offsets checked against one size be read against another.
        std::lock_guard lock(m_lock);
        const auto [it, fresh] = m_sizes.try_emplace(file, a.fileSize);
        if (!fresh && it->second != a.fileSize)
            throw AtlasError(ErrorKind::Source, file + ": the server's Content-Range gives the file " +
                                                    std::to_string(a.fileSize) + " bytes, but an earlier answer gave " +
                                                    std::to_string(it->second));
    }
    a.bytes = std::move(r.body);
    remember(file, r);
    return a;
}

HttpDirectorySource::HttpDirectorySource(std::string baseUrl, HttpClient::Options options,
                                         std::shared_ptr<ReceiptLog> receipts)
    : RemoteSource(std::move(options), std::move(receipts)), m_base(std::move(baseUrl))
{
    if (m_base.empty() || m_base.back() != '/') m_base += '/';
}

SourceInfo HttpDirectorySource::info() const
{
    return {SourceKind::Https, redactUrl(m_base), {}, {}};
}

std::string HttpDirectorySource::fileUrl(const std::string &file)
{
    return m_base + escapePath(file);
}

HubSource::HubSource(std::string endpoint, std::string repo, std::string revision,
                     HttpClient::Options options, std::shared_ptr<ReceiptLog> receipts)
    : RemoteSource(std::move(options), std::move(receipts)), m_endpoint(std::move(endpoint)),
      m_repo(std::move(repo)), m_revision(revision.empty() ? "main" : std::move(revision))
{
    while (!m_endpoint.empty() && m_endpoint.back() == '/')
        m_endpoint.pop_back();
}

SourceInfo HubSource::info() const
{
    return {SourceKind::Hub, "hf://" + m_repo, m_revision, m_commit};
}

void HubSource::resolve()
{
    if (!m_commit.empty()) return;
    HttpRequest req;
    req.url = m_endpoint + "/api/models/" + m_repo + "/revision/" + escapeAll(m_revision);
    req.maxBody = 64ull << 20;
    const auto r = perform({req}).front();
    if (!r.transportError.empty() || r.status != 200)
        throw AtlasError(ErrorKind::Source, describeFailure("hf://" + m_repo + "@" + m_revision, r));
    // The answer is bounded in depth before a DOM is built (a deep one would overflow the stack).
    std::size_t nonFinite = 0;
    const auto guarded = guardJsonText("hf://" + m_repo + ": the Hub's revision answer", r.body, &nonFinite);
    nlohmann::json doc = nlohmann::json::parse(guarded ? *guarded : r.body, nullptr, false);
    if (!doc.is_object() || !doc.contains("sha") || !doc["sha"].is_string())
        throw AtlasError(ErrorKind::Source,
                         "hf://" + m_repo + ": the Hub's revision answer has no commit sha");
    const std::string sha = doc["sha"].get<std::string>();
    if (sha.size() != 40 || sha.find_first_not_of("0123456789abcdef") != std::string::npos)
        throw AtlasError(ErrorKind::Source,
                         "hf://" + m_repo + ": the Hub answered an invalid commit '" + sha + "'");
    m_commit = sha;
    if (auto s = doc.find("siblings"); s != doc.end() && s->is_array())
        for (const auto &f : *s)
            if (f.is_object() && f.contains("rfilename") && f["rfilename"].is_string())
                m_siblings.insert(f["rfilename"].get<std::string>());
}

bool HubSource::knownAbsent(const std::string &file)
{
    return !m_siblings.empty() && !m_siblings.count(file);
}

std::string HubSource::fileUrl(const std::string &file)
{
    resolve();
    return m_endpoint + "/" + m_repo + "/resolve/" + m_commit + "/" + escapePath(file);
}

std::string HubSource::describeFailure(const std::string &file, const HttpResponse &r)
{
    const std::string code = r.header("x-error-code");
    const std::string hubMessage = r.header("x-error-message");
    const bool token = findHubToken().has_value();
    std::string what;
    if (code == "GatedRepo")
        what = token
                   ? "the repository " + m_repo + " is gated and the token given does not grant access to it"
                   : "the repository " + m_repo + " is gated: a token with access is needed (set HF_TOKEN)";
    else if (code == "RepoNotFound")
        what = "the repository " + m_repo + " does not exist" +
               (token ? std::string(" or the token cannot see it")
                      : std::string(" (if it is private, set HF_TOKEN)"));
    else if (code == "RevisionNotFound")
        what = "the revision '" + m_revision + "' does not exist in " + m_repo;
    else if (code == "EntryNotFound")
        what = "the file is not in " + m_repo + " at commit " + m_commit;
    else if ((r.status == 401 || r.status == 403) && r.transportError.empty())
        what =
            token ? "access denied (HTTP " + std::to_string(r.status) + "): the token does not grant access"
                  : "access denied (HTTP " + std::to_string(r.status) + "): a token is needed (set HF_TOKEN)";
    else
        return RemoteSource::describeFailure(file, r);
    if (!hubMessage.empty()) what += " [the Hub says: " + hubMessage + "]";
    return file + ": " + what;
}

} // namespace atlas
