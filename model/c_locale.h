#pragma once

#include <charconv>
#include <clocale>
#include <string>

#include <locale.h>

namespace atlas {

// Numbers never follow the user's locale: Qt sets the C library's locale from the environment, and
// printf("%.2f") then writes "753,33" under a German one. Fixed-point text is made with to_chars;
// where a printf-style table is easier to read in code, the formatting runs inside a CLocaleScope.

// v with `decimals` digits after the point, always '.': "753.33".
inline std::string fixedPoint(double v, int decimals)
{
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
    return r.ec == std::errc() ? std::string(buf, r.ptr) : std::string("?");
}

// The C locale for this thread while the scope lasts (uselocale: other threads are untouched).
class CLocaleScope final
{
public:
    CLocaleScope() : m_previous(uselocale(cLocale())) {}
    ~CLocaleScope() { uselocale(m_previous); }
    CLocaleScope(const CLocaleScope &) = delete;
    CLocaleScope &operator=(const CLocaleScope &) = delete;

private:
    static locale_t cLocale()
    {
        static const locale_t c = newlocale(LC_ALL_MASK, "C", locale_t(nullptr));
        return c;
    }
    locale_t m_previous;
};

} // namespace atlas
