#include "latency_proxy.h"

#include "test_hub.h"

#include <arpa/inet.h>
#include <cerrno>
#include <deque>
#include <fcntl.h>
#include <memory>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Chunk
{
    Clock::time_point due;
    std::string bytes; // empty: the sender closed its side
    std::size_t sent = 0;
};

struct Side
{
    int fd = -1;
    bool readOpen = true;
    std::deque<Chunk> outbox; // bytes waiting to be written to this side
};

struct Pair
{
    Side client, upstream;
    bool dead() const
    {
        return !client.readOpen && !upstream.readOpen && client.outbox.empty() && upstream.outbox.empty();
    }
};

int connectUpstream(int port)
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    if (::connect(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

void prepare(int fd)
{
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
}

} // namespace

LatencyProxy::LatencyProxy(int listenPort, int upstreamPort, std::chrono::microseconds oneWayDelay)
    : m_listenPort(listenPort), m_upstreamPort(upstreamPort), m_delayUs(oneWayDelay.count())
{
}

LatencyProxy::~LatencyProxy()
{
    stop();
}

bool LatencyProxy::start()
{
    m_listen = listenOnLoopback(m_listenPort);
    if (m_listen < 0) return false;
    ::fcntl(m_listen, F_SETFL, ::fcntl(m_listen, F_GETFL) | O_NONBLOCK);
    m_thread = std::thread([this] { loop(); });
    return true;
}

void LatencyProxy::stop()
{
    if (m_stop.exchange(true)) return;
    if (m_thread.joinable()) m_thread.join();
    if (m_listen >= 0) ::close(m_listen);
}

void LatencyProxy::loop()
{
    std::vector<std::unique_ptr<Pair>> pairs;
    std::vector<char> buffer(256 * 1024);
    while (!m_stop) {
        std::vector<pollfd> fds{{m_listen, POLLIN, 0}};
        auto next = Clock::now() + std::chrono::milliseconds(50);
        for (auto &p : pairs) {
            for (Side *s : {&p->client, &p->upstream}) {
                short events = s->readOpen ? POLLIN : 0;
                if (!s->outbox.empty()) {
                    if (s->outbox.front().due <= Clock::now())
                        events |= POLLOUT;
                    else
                        next = std::min(next, s->outbox.front().due);
                }
                fds.push_back({s->fd, events, 0});
            }
        }
        const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - Clock::now()).count();
        ::poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(0, wait)));

        if (fds[0].revents & POLLIN) {
            for (;;) {
                const int c = ::accept(m_listen, nullptr, nullptr);
                if (c < 0) break;
                const int u = connectUpstream(m_upstreamPort);
                if (u < 0) {
                    ::close(c);
                    continue;
                }
                prepare(c);
                prepare(u);
                auto p = std::make_unique<Pair>();
                p->client.fd = c;
                p->upstream.fd = u;
                pairs.push_back(std::move(p));
            }
        }
        const auto delay = std::chrono::microseconds(m_delayUs.load());
        std::size_t k = 1;
        for (auto &p : pairs) {
            Side *sides[2] = {&p->client, &p->upstream};
            for (int i = 0; i < 2 && k < fds.size(); ++i, ++k) {
                Side &self = *sides[i];
                Side &other = *sides[1 - i];
                if (fds[k].fd != self.fd) continue;
                if (self.readOpen && (fds[k].revents & (POLLIN | POLLHUP | POLLERR))) {
                    const ssize_t n = ::recv(self.fd, buffer.data(), buffer.size(), 0);
                    if (n > 0)
                        other.outbox.push_back(
                            {Clock::now() + delay, std::string(buffer.data(), static_cast<std::size_t>(n))});
                    else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
                        self.readOpen = false;
                        other.outbox.push_back({Clock::now() + delay, {}});
                    }
                }
                while (!self.outbox.empty() && self.outbox.front().due <= Clock::now()) {
                    Chunk &c = self.outbox.front();
                    if (c.bytes.empty()) {
                        ::shutdown(self.fd, SHUT_WR);
                        self.outbox.pop_front();
                        continue;
                    }
                    const ssize_t n =
                        ::send(self.fd, c.bytes.data() + c.sent, c.bytes.size() - c.sent, MSG_NOSIGNAL);
                    if (n <= 0) {
                        if (errno != EAGAIN && errno != EWOULDBLOCK) {
                            self.outbox.clear();
                            self.readOpen = false;
                            other.readOpen = false;
                        }
                        break;
                    }
                    c.sent += static_cast<std::size_t>(n);
                    if (c.sent == c.bytes.size()) self.outbox.pop_front();
                }
            }
        }
        for (auto it = pairs.begin(); it != pairs.end();) {
            if ((*it)->dead()) {
                ::close((*it)->client.fd);
                ::close((*it)->upstream.fd);
                it = pairs.erase(it);
            } else {
                ++it;
            }
        }
    }
    for (auto &p : pairs) {
        ::close(p->client.fd);
        ::close(p->upstream.fd);
    }
}
