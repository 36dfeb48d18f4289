#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace atlas {

// One HTTP request as it happened: what a reviewer needs to re-check a figure, and no secret.
struct Receipt
{
    std::string url; // query string and user info removed
    std::optional<std::uint64_t> rangeOffset;
    std::optional<std::uint64_t> rangeLength;
    long status = 0;
    int httpVersion = 0; // 1 or 2 (0: no answer)
    std::uint64_t bytes = 0;
    std::string sha256;      // of the body bytes received, hex
    double startSeconds = 0; // since the first request of the session
    double seconds = 0;
    std::string note; // "redirect", "retry after 503", "cancelled", transport error ...
};

class ReceiptLog
{
public:
    void add(Receipt r);
    std::vector<Receipt> all() const;
    std::uint64_t requests() const;
    std::uint64_t bytes() const;
    double elapsedSeconds() const;
    nlohmann::ordered_json toJson() const;

private:
    mutable std::mutex m_lock;
    std::vector<Receipt> m_receipts;
};

// "https://host/path?X-Amz-Signature=..." -> "https://host/path?…"; "https://user:pw@host/" ->
// "https://host/"
std::string redactUrl(std::string_view url);
std::string sha256Hex(std::string_view bytes);

} // namespace atlas
