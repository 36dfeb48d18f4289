#include "source_spec.h"

#include "errors.h"
#include "remote_source.h"

#include <cstdlib>
#include <filesystem>

namespace atlas {

namespace {

bool validRepoPart(const std::string &s)
{
    if (s.empty() || s.size() > 96 || s == "." || s == ".." || s.find("..") != std::string::npos)
        return false;
    for (unsigned char c : s)
        if (!(std::isalnum(c) || c == '-' || c == '_' || c == '.')) return false;
    return true;
}

// "My%20Model.gguf" -> "My Model.gguf": a URL's file name as a name (%XX with two hex digits; anything else kept).
std::string percentDecoded(const std::string &s)
{
    auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1; };
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
            out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
            i += 2;
        } else {
            out.push_back(s[i]);
        }
    }
    return out;
}

} // namespace

SourceSpec parseSourceSpec(const std::string &text, const std::string &revision)
{
    SourceSpec spec;
    if (text.starts_with("https://") || text.starts_with("http://")) {
        spec.kind = SourceSpec::Kind::Http;
        spec.url = text;
        // A .gguf URL: its folder is the source, the file (and the rest of its split) what is read.
        const auto query = text.find_first_of("?#");
        const std::string path = text.substr(0, query);
        if (path.ends_with(".gguf") && query == std::string::npos) {
            const auto slash = path.rfind('/');
            if (slash != std::string::npos && slash > path.find("://") + 2) {
                spec.url = path.substr(0, slash + 1);
                spec.ggufFile = percentDecoded(path.substr(slash + 1)); // escaped again when fetched
            }
        }
        return spec;
    }
    std::string repo;
    std::error_code ec;
    if (text.starts_with("hf://"))
        repo = text.substr(5);
    else if (!std::filesystem::exists(text, ec) && std::count(text.begin(), text.end(), '/') == 1 &&
             !text.starts_with("/") && !text.starts_with("."))
        repo = text;
    if (repo.empty()) {
        spec.kind = SourceSpec::Kind::Local;
        spec.path = text;
        if (text.ends_with(".gguf") && std::filesystem::is_regular_file(text, ec)) {
            const std::filesystem::path p(text);
            spec.path = p.has_parent_path() ? p.parent_path().string() : std::string(".");
            spec.ggufFile = p.filename().string();
        }
        return spec;
    }
    spec.kind = SourceSpec::Kind::Hub;
    if (auto at = repo.find('@'); at != std::string::npos) {
        spec.revision = repo.substr(at + 1);
        repo = repo.substr(0, at);
        if (!revision.empty() && revision != spec.revision)
            throw AtlasError(ErrorKind::Usage, "two revisions given: '" + spec.revision +
                                                   "' and --revision '" + revision + "'");
    }
    if (spec.revision.empty()) spec.revision = revision.empty() ? "main" : revision;
    const auto slash = repo.find('/');
    if (slash == std::string::npos || !validRepoPart(repo.substr(0, slash)) ||
        !validRepoPart(repo.substr(slash + 1)))
        throw AtlasError(ErrorKind::Usage, "'" + text + "' is not a Hub repository of the form ORG/NAME");
    if (spec.revision.find_first_of(" \t\n?#") != std::string::npos ||
        spec.revision.find("..") != std::string::npos)
        throw AtlasError(ErrorKind::Usage, "'" + spec.revision + "' is not a valid revision");
    spec.repo = repo;
    const char *endpoint = std::getenv("HF_ENDPOINT");
    spec.endpoint = endpoint && *endpoint ? endpoint : "https://huggingface.co";
    while (!spec.endpoint.empty() && spec.endpoint.back() == '/')
        spec.endpoint.pop_back();
    return spec;
}

HttpClient::Options httpOptionsFor(const SourceSpec &spec, const NetworkOptions &options)
{
    HttpClient::Options http;
    http.connections = options.connections;
    http.stallSeconds = options.stallSeconds;
    http.minBytesPerSecond = options.minBytesPerSecond;
    http.lowSpeedSeconds = options.lowSpeedSeconds;
    if (options.timeoutSeconds > 0) {
        http.timeoutSeconds = options.timeoutSeconds;
        http.deadline = std::chrono::steady_clock::now() + std::chrono::seconds(options.timeoutSeconds);
    }
    if (!options.caBundle.empty()) http.extraCaFiles.push_back(options.caBundle);
    for (const char *var : {"CURL_CA_BUNDLE", "SSL_CERT_FILE"})
        if (const char *v = std::getenv(var);
            v && *v &&
            std::find(http.extraCaFiles.begin(), http.extraCaFiles.end(), v) == http.extraCaFiles.end())
            http.extraCaFiles.push_back(v);
    if (spec.kind == SourceSpec::Kind::Hub) {
        if (auto token = findHubToken()) {
            http.token = *token;
            http.tokenOrigin = originOf(spec.endpoint);
        }
    }
    return http;
}

OpenedSource openSource(const SourceSpec &spec, const NetworkOptions &options,
                        const std::atomic<bool> *cancel, std::shared_ptr<ReceiptLog> receipts)
{
    OpenedSource out;
    if (!receipts) receipts = std::make_shared<ReceiptLog>();
    switch (spec.kind) {
    case SourceSpec::Kind::Local: {
        std::error_code ec;
        if (!std::filesystem::is_directory(spec.path, ec))
            throw AtlasError(ErrorKind::Source, spec.path + ": no such directory");
        out.source = std::make_unique<LocalDirectorySource>(spec.path);
        break;
    }
    case SourceSpec::Kind::Http:
        out.receipts = receipts;
        out.source =
            std::make_unique<HttpDirectorySource>(spec.url, httpOptionsFor(spec, options), out.receipts);
        break;
    case SourceSpec::Kind::Hub: {
        out.receipts = receipts;
        auto hub = std::make_unique<HubSource>(spec.endpoint, spec.repo, spec.revision,
                                               httpOptionsFor(spec, options), out.receipts);
        hub->setCancelFlag(cancel);
        hub->resolve();
        if (options.useCache)
            out.cache = std::make_unique<HeaderCache>(
                HeaderCache::defaultDirectory(spec.endpoint, spec.repo, hub->commit()));
        out.source = std::move(hub);
        break;
    }
    }
    out.source->setCancelFlag(cancel);
    return out;
}

} // namespace atlas
