#include "receipts.h"

#include "shared_libraries.h"

#include <algorithm>

namespace atlas {

void ReceiptLog::add(Receipt r)
{
    std::lock_guard lock(m_lock);
    m_receipts.push_back(std::move(r));
}

std::vector<Receipt> ReceiptLog::all() const
{
    std::lock_guard lock(m_lock);
    return m_receipts;
}

std::uint64_t ReceiptLog::requests() const
{
    std::lock_guard lock(m_lock);
    return m_receipts.size();
}

std::uint64_t ReceiptLog::bytes() const
{
    std::lock_guard lock(m_lock);
    std::uint64_t n = 0;
    for (const auto &r : m_receipts)
        n += r.bytes;
    return n;
}

double ReceiptLog::elapsedSeconds() const
{
    std::lock_guard lock(m_lock);
    double end = 0;
    for (const auto &r : m_receipts)
        end = std::max(end, r.startSeconds + r.seconds);
    return end;
}

nlohmann::ordered_json ReceiptLog::toJson() const
{
    auto list = nlohmann::ordered_json::array();
    for (const auto &r : all()) {
        nlohmann::ordered_json j;
        j["url"] = r.url;
        if (r.rangeOffset && r.rangeLength)
            j["range"] = "bytes=" + std::to_string(*r.rangeOffset) + "-" +
                         std::to_string(*r.rangeOffset + *r.rangeLength - 1);
        else
            j["range"] = nullptr;
        j["status"] = r.status;
        j["http_version"] = r.httpVersion;
        j["bytes"] = r.bytes;
        j["sha256"] = r.sha256;
        j["start_seconds"] = r.startSeconds;
        j["seconds"] = r.seconds;
        if (!r.note.empty()) j["note"] = r.note;
        list.push_back(j);
    }
    return list;
}

std::string redactUrl(std::string_view url)
{
    std::string out(url);
    if (auto q = out.find_first_of("?#"); q != std::string::npos)
        out = out.substr(0, q) + (out[q] == '?' ? "?…" : "");
    if (auto scheme = out.find("://"); scheme != std::string::npos) {
        const auto hostStart = scheme + 3;
        const auto pathStart = out.find('/', hostStart);
        const auto at = out.rfind('@', pathStart == std::string::npos ? out.size() : pathStart);
        if (at != std::string::npos && at >= hostStart) out.erase(hostStart, at + 1 - hostStart);
    }
    return out;
}

std::string sha256Hex(std::string_view bytes)
{
    unsigned char digest[32];
    const unsigned len = 32;
    sha256Digest(bytes.data(), bytes.size(), digest);
    static const char *hex = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < len; ++i) {
        out += hex[digest[i] >> 4];
        out += hex[digest[i] & 15];
    }
    return out;
}

} // namespace atlas
