#include "untrusted_text.h"

#include "errors.h"

#include <vector>

namespace atlas {

std::optional<std::string> guardJsonText(std::string_view file, std::string_view text, std::size_t *nonFinite)
{
    std::size_t depth = 0;
    std::size_t found = 0;
    std::string out;
    std::size_t copied = 0; // text[0, copied) is in out already (once anything was replaced)
    const std::size_t n = text.size();
    for (std::size_t i = 0; i < n; ++i) {
        const char c = text[i];
        if (c == '"') {
            // Skip the string; an unterminated one is the parser's to report.
            for (++i; i < n && text[i] != '"'; ++i)
                if (text[i] == '\\') ++i;
            continue;
        }
        if (c == '{' || c == '[') {
            if (++depth > kMaxJsonDepth)
                throw AtlasError(ErrorKind::Invalid, std::string(file) + ": nests objects and arrays more than " +
                                                         std::to_string(kMaxJsonDepth) +
                                                         " levels deep (the limit); refused");
        } else if (c == '}' || c == ']') {
            if (depth) --depth;
        } else if (c == 'N' || c == 'I' || c == '-') {
            std::string_view token;
            for (std::string_view t : {std::string_view("NaN"), std::string_view("Infinity"),
                                       std::string_view("-Infinity")})
                if (text.substr(i, t.size()) == t) token = t;
            if (token.empty()) continue;
            out.append(text.substr(copied, i - copied));
            out += "null";
            i += token.size() - 1;
            copied = i + 1;
            ++found;
        }
    }
    if (nonFinite) *nonFinite = found;
    if (!found) return std::nullopt;
    out.append(text.substr(copied));
    return out;
}

namespace {

// Length of the valid UTF-8 sequence at s[i], 0 when none starts there.
std::size_t utf8Length(std::string_view s, std::size_t i)
{
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
    const unsigned char c = b(i);
    std::size_t len = 0;
    unsigned cp = 0;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
    else return 0;
    if (i + len > s.size()) return 0;
    for (std::size_t k = 1; k < len; ++k) {
        if ((b(i + k) & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (b(i + k) & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    // C1 controls (U+0080..U+009F) act on terminals as ESC sequences do.
    if (cp >= 0x80 && cp <= 0x9F) return 0;
    return len;
}

std::string escape(std::string_view text, bool keepLineBreaks)
{
    static const char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        const bool control = c < 0x20 || c == 0x7F;
        const bool kept = keepLineBreaks && (c == '\n' || c == '\t');
        if (control && !kept) {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
            ++i;
            continue;
        }
        const std::size_t len = utf8Length(text, i);
        if (len == 0) {
            // An invalid byte, or a C1 control (its bytes each escaped).
            const std::size_t span = (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
                                      static_cast<unsigned char>(text[i + 1]) <= 0x9F)
                                         ? 2
                                         : 1;
            for (std::size_t k = 0; k < span; ++k) {
                const auto d = static_cast<unsigned char>(text[i + k]);
                out += "\\x";
                out += hex[d >> 4];
                out += hex[d & 15];
            }
            i += span;
            continue;
        }
        out.append(text.substr(i, len));
        i += len;
    }
    return out;
}

} // namespace

bool needsJsonEscape(std::string_view text)
{
    for (std::size_t i = 0; i < text.size();) {
        if (static_cast<unsigned char>(text[i]) < 0x80) {
            if (text[i] == 0x7F) return true; // DEL: JSON writers leave it raw
            ++i;
            continue;
        }
        const std::size_t len = utf8Length(text, i);
        if (len == 0) return true;
        i += len;
    }
    return false;
}

std::string printable(std::string_view text)
{
    return escape(text, true);
}

std::string printableLine(std::string_view text)
{
    return escape(text, false);
}

} // namespace atlas
