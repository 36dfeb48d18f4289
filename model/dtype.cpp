#include "dtype.h"

#include <array>

namespace atlas {

namespace {
struct DtypeRow
{
    Dtype dtype;
    std::string_view name;
    unsigned bits;
    unsigned blockElements = 1; // ggml's block types: values per block, and bytes per block
    unsigned blockBytes = 0;
};

constexpr std::size_t kSafetensorsDtypes = 22;
// ggml's blocks: llama.cpp ggml/src/ggml.c type_traits (blck_size, type_size), checked against the block structs
// of ggml/src/ggml-common.h (gguf-py's GGML_QUANT_SIZES says 40 bytes for Q8_1; block_q8_1 is 2 halves + 32).
constexpr std::array<DtypeRow, kDtypeCount> kDtypes{{
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
    {Dtype::Q4_0, "Q4_0", 0, 32, 18},
    {Dtype::Q4_1, "Q4_1", 0, 32, 20},
    {Dtype::Q5_0, "Q5_0", 0, 32, 22},
    {Dtype::Q5_1, "Q5_1", 0, 32, 24},
    {Dtype::Q8_0, "Q8_0", 0, 32, 34},
    {Dtype::Q8_1, "Q8_1", 0, 32, 36},
    {Dtype::Q2_K, "Q2_K", 0, 256, 84},
    {Dtype::Q3_K, "Q3_K", 0, 256, 110},
    {Dtype::Q4_K, "Q4_K", 0, 256, 144},
    {Dtype::Q5_K, "Q5_K", 0, 256, 176},
    {Dtype::Q6_K, "Q6_K", 0, 256, 210},
    {Dtype::Q8_K, "Q8_K", 0, 256, 292},
    {Dtype::IQ2_XXS, "IQ2_XXS", 0, 256, 66},
    {Dtype::IQ2_XS, "IQ2_XS", 0, 256, 74},
    {Dtype::IQ3_XXS, "IQ3_XXS", 0, 256, 98},
    {Dtype::IQ1_S, "IQ1_S", 0, 256, 50},
    {Dtype::IQ4_NL, "IQ4_NL", 0, 32, 18},
    {Dtype::IQ3_S, "IQ3_S", 0, 256, 110},
    {Dtype::IQ2_S, "IQ2_S", 0, 256, 82},
    {Dtype::IQ4_XS, "IQ4_XS", 0, 256, 136},
    {Dtype::IQ1_M, "IQ1_M", 0, 256, 56},
    {Dtype::TQ1_0, "TQ1_0", 0, 256, 54},
    {Dtype::TQ2_0, "TQ2_0", 0, 256, 66},
    {Dtype::MXFP4, "MXFP4", 0, 32, 17},
    {Dtype::NVFP4, "NVFP4", 0, 64, 36},
    {Dtype::Q1_0, "Q1_0", 0, 128, 18},
}};
static_assert([] {
    for (std::size_t i = 0; i < kDtypes.size(); ++i)
        if (static_cast<std::size_t>(kDtypes[i].dtype) != i) return false;
    return true;
}());
} // namespace

std::optional<Dtype> dtypeFromName(std::string_view name)
{
    for (std::size_t i = 0; i < kSafetensorsDtypes; ++i)
        if (kDtypes[i].name == name) return kDtypes[i].dtype;
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

bool isGgmlBlockType(Dtype dtype)
{
    return static_cast<std::size_t>(dtype) >= kSafetensorsDtypes;
}

DtypeBlock dtypeBlock(Dtype dtype)
{
    const DtypeRow &row = kDtypes[static_cast<std::size_t>(dtype)];
    return row.blockBytes ? DtypeBlock{row.blockElements, row.blockBytes} : DtypeBlock{1, row.bits / 8};
}

double dtypeBitsPerValue(Dtype dtype)
{
    const DtypeRow &row = kDtypes[static_cast<std::size_t>(dtype)];
    return row.blockBytes ? 8.0 * row.blockBytes / row.blockElements : double(row.bits);
}

} // namespace atlas
