#pragma once

#include "safetensors.h" // isValidUtf8

#include <algorithm>
#include <charconv>
#include <clocale>
#include <cmath>
#include <cstdlib>
#include <locale.h>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace atlas {

// A strict JSON reader (RFC 8259) that calls a handler the way nlohmann's sax_parse does, written for
// the two documents a load reads in bulk: shard headers and model.safetensors.index.json (the
// 141-shard GLM-5.x layout holds 22 MB of them). It makes no DOM, reuses one buffer for every key
// and string, keeps its nesting on an explicit stack (hostile depth cannot overflow the C++ stack),
// validates UTF-8 and escapes, and accepts only whitespace after the top-level value.
//
// Handler: null(), boolean(bool), number_integer(std::int64_t), number_unsigned(std::uint64_t),
// number_float(double, const std::string &), string(std::string &), key(std::string &),
// start_object(std::size_t), end_object(), start_array(std::size_t), end_array(),
// parse_error(std::size_t byte, const std::string &message). A callback returning false stops the
// reading; parseJson then returns false. parse_error's return value is returned. A handler may take keys and
// strings as views instead, key_in_place(std::string_view) and string_in_place(std::string_view): a string
// without escapes is then never copied (the view lasts until the next callback).
//
// A part of a document (two threads reading the halves of a large one): `part` starts the reading at
// byte `start` inside `objects` open objects, where a key follows a comma, and stops it (stopped = true,
// parseJson true) when a key is about to be read at byte `stopAt` inside `objects` open objects. Byte
// positions in messages are the whole text's.
struct JsonPart
{
    std::size_t start = 0;
    std::size_t objects = 0; // resume inside this many objects, a key next (0: the document's start)
    std::size_t stopAt = static_cast<std::size_t>(-1);
    std::size_t stopObjects = 0;
    bool stopped = false;
};
template <typename Handler> [[nodiscard]] bool parseJson(std::string_view text, Handler &h, JsonPart *part = nullptr)
{
    const char *const begin = text.data();
    const char *p = begin + (part ? std::min(part->start, text.size()) : 0);
    const char *const end = begin + text.size();
    std::string buffer;
    std::vector<char> stack(part ? part->objects : 0, '{'); // '{' or '['
    static constexpr std::size_t kUnknownSize = static_cast<std::size_t>(-1);

    auto error = [&](const char *at, const std::string &what) {
        return h.parse_error(static_cast<std::size_t>(at - begin), what);
    };
    auto skipSpace = [&] {
        while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
            ++p;
    };
    auto hex4 = [&](const char *at, unsigned &out) {
        if (end - at < 4) return false;
        out = 0;
        for (int i = 0; i < 4; ++i) {
            const char c = at[i];
            out <<= 4;
            if (c >= '0' && c <= '9') out |= unsigned(c - '0');
            else if (c >= 'a' && c <= 'f') out |= unsigned(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') out |= unsigned(c - 'A' + 10);
            else return false;
        }
        return true;
    };
    auto appendUtf8 = [&](unsigned cp) {
        if (cp < 0x80) {
            buffer += char(cp);
        } else if (cp < 0x800) {
            buffer += char(0xC0 | (cp >> 6));
            buffer += char(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            buffer += char(0xE0 | (cp >> 12));
            buffer += char(0x80 | ((cp >> 6) & 0x3F));
            buffer += char(0x80 | (cp & 0x3F));
        } else {
            buffer += char(0xF0 | (cp >> 18));
            buffer += char(0x80 | ((cp >> 12) & 0x3F));
            buffer += char(0x80 | ((cp >> 6) & 0x3F));
            buffer += char(0x80 | (cp & 0x3F));
        }
    };
    // Reads a string at p (on its opening quote) into `read`: the text itself when it holds no escape (no copy),
    // else `buffer`, unescaped; an empty message when it is well formed.
    std::string_view read;
    auto readString = [&]() -> std::string {
        ++p;
        buffer.clear();
        for (bool first = true;; first = false) {
            const char *run = p;
#if defined(__SSE2__)
            // Sixteen bytes at a time (SSE2 is every x86-64's baseline): a quote, a backslash, a control
            // character or a non-ASCII byte stops the run exactly where it is (as signed bytes, both of the
            // last are below 0x20).
            while (end - p >= 16) {
                const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
                const __m128i stop = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                                               _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))),
                                                  _mm_cmplt_epi8(v, _mm_set1_epi8(0x20)));
                if (const int mask = _mm_movemask_epi8(stop)) {
                    p += __builtin_ctz(static_cast<unsigned>(mask));
                    break;
                }
                p += 16;
            }
#endif
            // Eight bytes at a time while none is a quote, a backslash, a control character or non-ASCII
            // (each test is exact: it flags a word only when such a byte is in it); names are most of an
            // index's and a header's bytes.
            constexpr std::uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
            while (end - p >= 8) {
                std::uint64_t w;
                std::memcpy(&w, p, 8);
                const std::uint64_t quote = w ^ (ones * '"'), slash = w ^ (ones * '\\');
                const std::uint64_t special = ((quote - ones) & ~quote) | ((slash - ones) & ~slash) |
                                              ((w - ones * 0x20) & ~w) | w;
                if (special & highs) break;
                p += 8;
            }
            bool ascii = true;
            while (p < end && *p != '"' && *p != '\\' && static_cast<unsigned char>(*p) >= 0x20) {
                ascii = ascii && static_cast<unsigned char>(*p) < 0x80;
                ++p;
            }
            if (!ascii && !isValidUtf8(std::string_view(run, std::size_t(p - run))))
                return "invalid UTF-8 in a string";
            if (p == end) return "the text ends inside a string";
            if (*p == '"' && first) {
                read = std::string_view(run, std::size_t(p - run));
                ++p;
                return {};
            }
            buffer.append(run, std::size_t(p - run));
            if (*p == '"') {
                read = buffer;
                ++p;
                return {};
            }
            if (*p != '\\') return "a control character inside a string";
            if (++p == end) return "the text ends inside a string";
            switch (*p++) {
            case '"': buffer += '"'; break;
            case '\\': buffer += '\\'; break;
            case '/': buffer += '/'; break;
            case 'b': buffer += '\b'; break;
            case 'f': buffer += '\f'; break;
            case 'n': buffer += '\n'; break;
            case 'r': buffer += '\r'; break;
            case 't': buffer += '\t'; break;
            case 'u': {
                unsigned cp = 0;
                if (!hex4(p, cp)) return "a \\u escape without four hex digits";
                p += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    unsigned low = 0;
                    if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !hex4(p + 2, low) || low < 0xDC00 ||
                        low > 0xDFFF)
                        return "a lone surrogate in a \\u escape";
                    p += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    return "a lone surrogate in a \\u escape";
                }
                appendUtf8(cp);
                break;
            }
            default: return "an invalid escape in a string";
            }
        }
    };
    // A number at p: JSON's grammar exactly, then the narrowest of unsigned, signed and double.
    // 1: read; 0: stopped (a callback said false); -1: malformed, and parse_error answered true.
    auto readNumber = [&]() -> int {
        const char *start = p;
        const bool negative = *p == '-';
        if (negative) ++p;
        if (p == end || *p < '0' || *p > '9') return error(start, "a malformed number") ? -1 : 0;
        if (*p == '0') {
            ++p;
        } else {
            while (p < end && *p >= '0' && *p <= '9')
                ++p;
        }
        bool integral = true;
        if (p < end && *p == '.') {
            integral = false;
            ++p;
            if (p == end || *p < '0' || *p > '9') return error(start, "a malformed number") ? -1 : 0;
            while (p < end && *p >= '0' && *p <= '9')
                ++p;
        }
        if (p < end && (*p == 'e' || *p == 'E')) {
            integral = false;
            ++p;
            if (p < end && (*p == '+' || *p == '-')) ++p;
            if (p == end || *p < '0' || *p > '9') return error(start, "a malformed number") ? -1 : 0;
            while (p < end && *p >= '0' && *p <= '9')
                ++p;
        }
        if (integral) {
            if (negative) {
                // A handler that declares kNegativeZeroIsFloat hears "-0" as a double, as serde_json
                // (the safetensors reference) reads it, so that an offset or a dimension written "-0"
                // is refused as the reference refuses it; others hear integer 0, as nlohmann says.
                std::int64_t v = 0;
                bool asFloat = false;
                if constexpr (requires { Handler::kNegativeZeroIsFloat; }) asFloat = p - start == 2 && start[1] == '0';
                if (!asFloat && std::from_chars(start, p, v).ec == std::errc()) return h.number_integer(v) ? 1 : 0;
            } else {
                std::uint64_t v = 0;
                if (std::from_chars(start, p, v).ec == std::errc()) return h.number_unsigned(v) ? 1 : 0;
            }
        }
        double d = 0;
        buffer.assign(start, p);
        const auto r = std::from_chars(start, p, d);
        if (r.ec == std::errc::result_out_of_range) {
            // Subnormal or beyond: strtod in the C locale gives the value the other readers give
            // (a subnormal, or zero), and infinity is refused as they refuse it.
            static const locale_t c = newlocale(LC_ALL_MASK, "C", locale_t(nullptr));
            d = strtod_l(buffer.c_str(), nullptr, c);
            if (std::isinf(d)) return error(start, "a number too large for a double") ? -1 : 0;
        } else if (r.ec != std::errc()) {
            return error(start, "a malformed number") ? -1 : 0;
        }
        return h.number_float(d, buffer) ? 1 : 0;
    };
    auto literal = [&](std::string_view word) {
        if (std::size_t(end - p) < word.size() || std::string_view(p, word.size()) != word) return false;
        p += word.size();
        return true;
    };

    // At the closing '}' or ']' of the innermost container: leave it and tell the handler.
    auto close = [&] {
        const char closed = stack.back();
        ++p;
        stack.pop_back();
        return closed == '{' ? h.end_object() : h.end_array();
    };

    // Expecting: a value (after '[', ',' in an array, ':' or at the top), or a key / '}' in an object.
    enum class Want { Value, FirstValueOrEnd, KeyOrEnd, Key, AfterValue } want = stack.empty() ? Want::Value : Want::Key;
    for (;;) {
        skipSpace();
        if (want == Want::AfterValue) {
            if (stack.empty()) {
                if (p != end) return error(p, "text after the end of the document");
                return true;
            }
            if (p == end) return error(p, "the text ends inside an " + std::string(stack.back() == '{' ? "object" : "array"));
            if (*p == ',') {
                ++p;
                want = stack.back() == '{' ? Want::Key : Want::Value;
                continue;
            }
            if (*p == (stack.back() == '{' ? '}' : ']')) {
                if (!close()) return false;
                continue;
            }
            return error(p, stack.back() == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
        }
        if (p == end) return error(p, "the text ends where a value was expected");
        if (want == Want::KeyOrEnd || want == Want::Key) {
            if (want == Want::KeyOrEnd && *p == '}') {
                if (!close()) return false;
                want = Want::AfterValue;
                continue;
            }
            if (part && want == Want::Key && std::size_t(p - begin) == part->stopAt &&
                stack.size() == part->stopObjects && stack.back() == '{') {
                part->stopped = true;
                return true;
            }
            if (*p != '"') return error(p, "expected a string key");
            const char *at = p;
            if (const std::string bad = readString(); !bad.empty()) return error(at, bad);
            if constexpr (requires { h.key_in_place(read); }) {
                if (!h.key_in_place(read)) return false;
            } else {
                if (read.data() != buffer.data()) buffer.assign(read);
                if (!h.key(buffer)) return false;
            }
            skipSpace();
            if (p == end || *p != ':') return error(p, "expected ':' after a key");
            ++p;
            want = Want::Value;
            continue;
        }
        if (want == Want::FirstValueOrEnd && *p == ']') {
            if (!close()) return false;
            want = Want::AfterValue;
            continue;
        }
        const char *at = p;
        switch (*p) {
        case '{':
            ++p;
            stack.push_back('{');
            if (!h.start_object(kUnknownSize)) return false;
            want = Want::KeyOrEnd;
            continue;
        case '[':
            ++p;
            stack.push_back('[');
            if (!h.start_array(kUnknownSize)) return false;
            want = Want::FirstValueOrEnd;
            continue;
        case '"':
            if (const std::string bad = readString(); !bad.empty()) return error(at, bad);
            if constexpr (requires { h.string_in_place(read); }) {
                if (!h.string_in_place(read)) return false;
            } else {
                if (read.data() != buffer.data()) buffer.assign(read);
                if (!h.string(buffer)) return false;
            }
            break;
        case 't':
            if (!literal("true")) return error(at, "an invalid literal");
            if (!h.boolean(true)) return false;
            break;
        case 'f':
            if (!literal("false")) return error(at, "an invalid literal");
            if (!h.boolean(false)) return false;
            break;
        case 'n':
            if (!literal("null")) return error(at, "an invalid literal");
            if (!h.null()) return false;
            break;
        default:
            if (*p == '-' || (*p >= '0' && *p <= '9')) {
                const int r = readNumber();
                if (r == 0) return false;
                if (r < 0) return true; // parse_error's answer, as for every other error
                break;
            }
            return error(at, "an unexpected character where a value was expected");
        }
        want = Want::AfterValue;
    }
}

} // namespace atlas
