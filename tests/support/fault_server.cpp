#include "fault_server.h"

#include "test_hub.h"

#include <arpa/inet.h>
#include <chrono>
#include <cstring>
#include <fstream>
#include <netinet/in.h>
#include <poll.h>
#include <sstream>
#include <sys/socket.h>
#include <unistd.h>

FaultServer::FaultServer(std::string folder) : m_folder(std::move(folder)) {}

FaultServer::~FaultServer()
{
    stop();
}

bool FaultServer::start()
{
    m_listen = listenOnLoopback(0, &m_port);
    if (m_listen < 0) return false;
    m_thread = std::thread([this] { acceptLoop(); });
    return true;
}

void FaultServer::stop()
{
    if (m_stop.exchange(true)) return;
    if (m_thread.joinable()) m_thread.join();
    std::lock_guard lock(m_lock);
    for (auto &w : m_workers)
        if (w.joinable()) w.join();
    if (m_listen >= 0) ::close(m_listen);
}

std::string FaultServer::url(const std::string &behaviour) const
{
    return "http://127.0.0.1:" + std::to_string(m_port) + "/" + behaviour + "/";
}

void FaultServer::acceptLoop()
{
    while (!m_stop) {
        pollfd p{m_listen, POLLIN, 0};
        if (::poll(&p, 1, 100) <= 0) continue;
        const int fd = ::accept(m_listen, nullptr, nullptr);
        if (fd < 0) continue;
        std::lock_guard lock(m_lock);
        m_workers.emplace_back([this, fd] { serve(fd); });
    }
}

void FaultServer::serve(int fd)
{
    auto sendAll = [&](const std::string &s) {
        std::size_t off = 0;
        while (off < s.size()) {
            const ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
            if (n <= 0) return false;
            off += static_cast<std::size_t>(n);
        }
        return true;
    };
    std::string buffer;
    while (!m_stop) {
        // Read one request head.
        std::size_t end;
        while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
            pollfd p{fd, POLLIN, 0};
            if (m_stop || ::poll(&p, 1, 100) < 0) break;
            if (!(p.revents & POLLIN)) continue;
            char chunk[4096];
            const ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
            if (n <= 0) {
                ::close(fd);
                return;
            }
            buffer.append(chunk, static_cast<std::size_t>(n));
        }
        if (end == std::string::npos) break;
        const std::string head = buffer.substr(0, end);
        buffer.erase(0, end + 4);
        ++m_requests;
        std::istringstream lines(head);
        std::string method, target;
        lines >> method >> target;
        unsigned long long first = 0, last = 0;
        bool ranged = false;
        if (auto r = head.find("Range: bytes="); r != std::string::npos)
            ranged = std::sscanf(head.c_str() + r + 13, "%llu-%llu", &first, &last) == 2;
        if (head.find("\r\nAuthorization:") != std::string::npos ||
            head.find("\r\nauthorization:") != std::string::npos)
            ++m_authorized;
        const auto slash = target.find('/', 1);
        const std::string behaviour = target.substr(1, slash - 1);
        if (behaviour == "gated") {
            sendAll("HTTP/1.1 401 Unauthorized\r\nX-Error-Code: GatedRepo\r\nX-Error-Message: "
                    "\x1b]0;owned\x07 \x1b[31mred\x1b[0m\r\nContent-Length: 0\r\n\r\n");
            continue;
        }
        const std::string file = slash == std::string::npos ? std::string() : target.substr(slash + 1);
        std::ifstream in(m_folder + "/" + file, std::ios::binary);
        if (file.empty() || file.find("..") != std::string::npos || !in) {
            // S3 without ListBucket answers 403 for a key that is not there.
            sendAll(behaviour == "forbidmissing" ? "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n"
                                                 : "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
            continue;
        }
        in.seekg(0, std::ios::end);
        const unsigned long long size = static_cast<unsigned long long>(in.tellg());
        if (behaviour == "loop") { // a redirect to itself, forever
            sendAll("HTTP/1.1 302 Found\r\nLocation: " + target + "\r\nContent-Length: 0\r\n\r\n");
            continue;
        }
        if (behaviour == "retry") {
            bool first429;
            {
                std::lock_guard lock(m_lock);
                first429 = m_retried.insert(target).second;
            }
            if (first429) {
                sendAll("HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n");
                continue;
            }
        }
        if (!ranged) {
            first = 0;
            last = size ? size - 1 : 0;
        }
        last = std::min(last, size - 1);
        std::string body(static_cast<std::size_t>(last - first + 1), '\0');
        in.seekg(static_cast<std::streamoff>(first));
        in.read(body.data(), static_cast<std::streamsize>(body.size()));
        unsigned long long shownFirst = first, shownLast = last, shownSize = size;
        if (behaviour == "growing" && ranged) { // the file's total grows by a byte with every answer
            std::lock_guard lock(m_lock);
            shownSize += m_answered[file]++;
        }
        if (behaviour == "huge" && ranged) shownSize = (1ull << 50) + 1; // a file larger than any shard
        if (behaviour == "wrongrange") {
            ++shownFirst;
            ++shownLast;
        }
        std::string status = ranged ? "206 Partial Content" : "200 OK";
        std::string headers =
            "HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
        if (ranged)
            headers += "Content-Range: bytes " + std::to_string(shownFirst) + "-" +
                       std::to_string(shownLast) + "/" + std::to_string(shownSize) + "\r\n";
        if (behaviour == "bighead") headers += "X-Padding: " + std::string(1 << 20, 'a') + "\r\n";
        headers += "\r\n";
        if (behaviour == "short") {
            sendAll(headers + body.substr(0, body.size() / 2));
            break;
        }
        if (behaviour == "trickle") { // one byte every 200 ms: never stalled, always too slow
            if (!sendAll(headers)) break;
            bool ok = true;
            for (std::size_t i = 0; ok && i < body.size() && !m_stop; ++i) {
                ok = sendAll(body.substr(i, 1));
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
            }
            if (!ok) break;
            continue;
        }
        if (behaviour == "stall") {
            sendAll(headers + body.substr(0, std::min<std::size_t>(8, body.size())));
            while (!m_stop)
                std::this_thread::sleep_for(std::chrono::milliseconds(50));
            break;
        }
        if (!sendAll(headers + body)) break;
    }
    ::close(fd);
}
