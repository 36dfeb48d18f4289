#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace atlas {

// Every dtype the safetensors format defines.
enum class Dtype : std::uint8_t {
    BOOL,
    U8,
    I8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F16,
    BF16,
    F32,
    F64,
    C64,
    F8_E4M3,
    F8_E5M2,
    F8_E8M0,
    F8_E4M3FNUZ,
    F8_E5M2FNUZ,
    F4,
    F6_E2M3,
    F6_E3M2, // the last: tables by dtype are sized by it
};

std::optional<Dtype> dtypeFromName(std::string_view name);
std::string_view dtypeName(Dtype dtype);
// Width of one element in bits (4 and 6 for the sub-byte types).
unsigned dtypeBits(Dtype dtype);

} // namespace atlas
