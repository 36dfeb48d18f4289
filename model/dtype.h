#pragma once

#include <cstddef>
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
    F6_E3M2, // the last of safetensors' dtypes
    // ggml's block-quantised types (GGUF files): a block of `elements` values in `bytes`, scales inside.
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q8_1,
    Q2_K,
    Q3_K,
    Q4_K,
    Q5_K,
    Q6_K,
    Q8_K,
    IQ2_XXS,
    IQ2_XS,
    IQ3_XXS,
    IQ1_S,
    IQ4_NL,
    IQ3_S,
    IQ2_S,
    IQ4_XS,
    IQ1_M,
    TQ1_0,
    TQ2_0,
    MXFP4,
    NVFP4,
    Q1_0, // the last: tables by dtype are sized by it (kDtypeCount)
};
inline constexpr std::size_t kDtypeCount = static_cast<std::size_t>(Dtype::Q1_0) + 1;

// How a dtype packs its values: a block of `elements` values in `bytes` (1 value per block for every
// safetensors dtype but the sub-byte ones, which are described by dtypeBits instead).
struct DtypeBlock
{
    unsigned elements = 1;
    unsigned bytes = 0;
};

// A safetensors dtype by its header name (never one of ggml's block types).
std::optional<Dtype> dtypeFromName(std::string_view name);
std::string_view dtypeName(Dtype dtype);
// Width of one element in bits (4 and 6 for the sub-byte types; 0 for ggml's block types).
unsigned dtypeBits(Dtype dtype);
bool isGgmlBlockType(Dtype dtype);
DtypeBlock dtypeBlock(Dtype dtype);
// Stored bits per value: 8.5 for Q8_0, 4.5 for Q4_K, 16 for BF16.
double dtypeBitsPerValue(Dtype dtype);

} // namespace atlas
