#pragma once

// A TCP proxy on loopback that holds every chunk for a fixed delay in each direction, so a
// round trip through it costs 2 x delay: network latency without netem. It bounds itself:
// it serves until stop() and sends only to the upstream port it was given.
#include <atomic>
#include <chrono>
#include <thread>

class LatencyProxy
{
public:
    LatencyProxy(int listenPort, int upstreamPort, std::chrono::microseconds oneWayDelay);
    ~LatencyProxy();
    bool start();
    void stop();
    void setDelay(std::chrono::microseconds oneWayDelay) { m_delayUs = oneWayDelay.count(); }
    int port() const { return m_listenPort; }

private:
    void loop();
    int m_listenPort;
    int m_upstreamPort;
    std::atomic<long long> m_delayUs;
    int m_listen = -1;
    std::atomic<bool> m_stop{false};
    std::thread m_thread;
};
