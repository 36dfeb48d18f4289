#include "dtype.h"

#include <array>

namespace atlas {

namespace {
struct DtypeRow
{
    Dtype dtype;
    std::string_view name;
    unsigned bits;
};

constexpr std::array<DtypeRow, 22> kDtypes{{
    {Dtype::BOOL, "BOOL", 8},
    {Dtype::U8, "U8", 8},
    {Dtype::I8, "I8", 8},
    {Dtype::I16, "I16", 16},
    {Dtype::U16, "U16", 16},
    {Dtype::I32, "I32", 32},
    {Dtype::U32, "U32", 32},
    {Dtype::I64, "I64", 64},
    {Dtype::U64, "U64", 64},
    {Dtype::F16, "F16", 16},
    {Dtype::BF16, "BF16", 16},
    {Dtype::F32, "F32", 32},
    {Dtype::F64, "F64", 64},
    {Dtype::C64, "C64", 64},
    {Dtype::F8_E4M3, "F8_E4M3", 8},
    {Dtype::F8_E5M2, "F8_E5M2", 8},
    {Dtype::F8_E8M0, "F8_E8M0", 8},
    {Dtype::F8_E4M3FNUZ, "F8_E4M3FNUZ", 8},
    {Dtype::F8_E5M2FNUZ, "F8_E5M2FNUZ", 8},
    {Dtype::F4, "F4", 4},
    {Dtype::F6_E2M3, "F6_E2M3", 6},
    {Dtype::F6_E3M2, "F6_E3M2", 6},
}};
} // namespace

std::optional<Dtype> dtypeFromName(std::string_view name)
{
    for (const auto &row : kDtypes)
        if (row.name == name) return row.dtype;
    return std::nullopt;
}

std::string_view dtypeName(Dtype dtype)
{
    return kDtypes[static_cast<std::size_t>(dtype)].name;
}

unsigned dtypeBits(Dtype dtype)
{
    return kDtypes[static_cast<std::size_t>(dtype)].bits;
}

} // namespace atlas
