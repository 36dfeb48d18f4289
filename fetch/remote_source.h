#pragma once

#include "byte_source.h"
#include "http_client.h"

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace atlas {

// Shared by the Hub and plain HTTPS directories: ranged reads through HttpClient, every answer
// checked (206, a Content-Range that matches, the length received), redirect targets remembered.
class RemoteSource : public ByteSource
{
public:
    RemoteSource(HttpClient::Options options, std::shared_ptr<ReceiptLog> receipts);
    std::optional<std::string> readSmallFile(const std::string &file) override;
    std::vector<RangeAnswer> readRanges(const std::vector<RangeRequest> &requests) override;
    void readRangesEach(const std::vector<RangeRequest> &requests, const EachAnswer &each) override;
    BatchAnswer readBatch(const std::vector<std::string> &files,
                          const std::vector<RangeRequest> &speculative,
                          const std::vector<std::string> &locate = {}) override;

    ReceiptLog &receipts() { return m_client.receipts(); }

protected:
    virtual std::string fileUrl(const std::string &file) = 0;
    // A plain sentence for an HTTP failure while reading `file`.
    virtual std::string describeFailure(const std::string &file, const HttpResponse &response);
    // Whether `file` is known not to exist (the Hub lists a commit's files), saving a request.
    virtual bool knownAbsent(const std::string &) { return false; }
    std::vector<HttpResponse> perform(const std::vector<HttpRequest> &requests,
                                      const HttpClient::OnDone &onDone = {});
    std::string urlFor(const std::string &file);
    void remember(const std::string &file, const HttpResponse &response);
    HttpRequest rangeRequest(const RangeRequest &r);
    // A whole small file from its answer: nullopt for 404, AtlasError for other failures.
    std::optional<std::string> smallFileFrom(const std::string &file, HttpResponse &response);
    // A checked range answer (the body is moved out); AtlasError naming the file otherwise.
    RangeAnswer rangeFrom(const std::string &file, const HttpRequest &request, HttpResponse &response);

    HttpClient m_client;

private:
    std::mutex m_lock;
    std::map<std::string, std::string> m_redirects; // file -> storage URL
    std::map<std::string, std::uint64_t> m_sizes;   // file -> the size its first range answer gave
};

// A directory of files served over HTTP(S): https://host/path/ + file name.
class HttpDirectorySource final : public RemoteSource
{
public:
    HttpDirectorySource(std::string baseUrl, HttpClient::Options options,
                        std::shared_ptr<ReceiptLog> receipts = {});
    SourceInfo info() const override;

protected:
    std::string fileUrl(const std::string &file) override;

private:
    std::string m_base;
};

// A Hugging Face Hub repository (or a mirror at $HF_ENDPOINT), read at one resolved commit.
class HubSource final : public RemoteSource
{
public:
    HubSource(std::string endpoint, std::string repo, std::string revision, HttpClient::Options options,
              std::shared_ptr<ReceiptLog> receipts = {});
    SourceInfo info() const override;
    // Resolves the revision to a commit through the API (once). Throws AtlasError(Source).
    void resolve();
    const std::string &commit() const { return m_commit; }
    const std::string &endpoint() const { return m_endpoint; }
    const std::string &repo() const { return m_repo; }

protected:
    std::string fileUrl(const std::string &file) override;
    std::string describeFailure(const std::string &file, const HttpResponse &response) override;
    bool knownAbsent(const std::string &file) override;
    std::vector<std::string> knownFiles() const override { return {m_siblings.begin(), m_siblings.end()}; }

private:
    std::string m_endpoint;
    std::string m_repo;
    std::string m_revision;
    std::string m_commit;
    std::set<std::string> m_siblings;
};

// Checks a ranged answer: 206 with a Content-Range that matches the request and a body of that
// length (or a 200 that carries the whole, small file). Returns the file's size; throws naming the file.
std::uint64_t checkRangeAnswer(const std::string &file, const HttpRequest &request,
                               const HttpResponse &response);

// The token, in the order the Hub's own clients look for it; nullopt when there is none.
std::optional<std::string> findHubToken();

} // namespace atlas
