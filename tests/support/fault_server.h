#pragma once

// A small HTTP/1.1 server for the misbehaviour nginx will not produce. It serves the files of
// one folder; the first path segment picks the behaviour:
//   /ok/FILE          correct Range answers
//   /wrongrange/FILE  206 whose Content-Range starts one byte late
//   /short/FILE       206 with a correct Content-Range and half the body, then close
//   /stall/FILE       headers and a few bytes, then silence
//   /retry/FILE       the first request of each path: 429 with Retry-After: 1; then as /ok
//   /loop/FILE        302 to itself, every time
//   /trickle/FILE     correct headers, then the body one byte every 200 ms
//   /bighead/FILE     as /ok, with a 1 MiB response header line
//   /forbidmissing/FILE  as /ok, but 403 for a file that is not there (S3 without ListBucket)
//   /gated/ANY        401 with X-Error-Code GatedRepo and an X-Error-Message holding ESC, BEL and a
//                     terminal title sequence (what a hostile Hub could send)
#include <atomic>
#include <mutex>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

class FaultServer
{
public:
    explicit FaultServer(std::string folder);
    ~FaultServer();
    bool start();
    void stop();
    std::string url(const std::string &behaviour) const;
    int requests() const { return m_requests.load(); }
    int authorizedRequests() const { return m_authorized.load(); } // requests with an Authorization header

private:
    void acceptLoop();
    void serve(int fd);
    std::string m_folder;
    int m_listen = -1;
    int m_port = 0;
    std::atomic<bool> m_stop{false};
    std::atomic<int> m_requests{0};
    std::atomic<int> m_authorized{0};
    std::thread m_thread;
    std::mutex m_lock;
    std::vector<std::thread> m_workers;
    std::set<std::string> m_retried;
    std::map<std::string, unsigned long long> m_answered; // ranged answers per file ("growing")
};
