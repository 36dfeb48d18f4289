#pragma once

// The list a layout writer builds: tensors in file order with their bytes, and the packings the
// published files use (synth/next_gen_layouts.cpp, synth/autumn_layouts.cpp).
#include "synthetic_layout.h"

#include <string>
#include <vector>

namespace atlas::synth::build {

using Shape = std::vector<std::uint64_t>;

inline std::uint64_t ceilDiv(std::uint64_t a, std::uint64_t b)
{
    return (a + b - 1) / b;
}

class Tensors
{
public:
    void add(std::string name, Dtype dtype, Shape shape)
    {
        std::uint64_t numel = 1;
        for (auto d : shape)
            numel *= d;
        out.push_back({std::move(name), dtype, std::move(shape), numel * dtypeBits(dtype) / 8});
    }
    void bf16(const std::string &name, Shape shape) { add(name, Dtype::BF16, std::move(shape)); }
    void f32(const std::string &name, Shape shape) { add(name, Dtype::F32, std::move(shape)); }
    // FP8 e4m3 with power-of-two scales per 128 x 128 block, as DeepSeek-V4 names them (X.scale).
    void fp8E8m0(const std::string &module, std::uint64_t rows, std::uint64_t cols)
    {
        add(module + ".weight", Dtype::F8_E4M3, {rows, cols});
        add(module + ".scale", Dtype::F8_E8M0, {ceilDiv(rows, 128), ceilDiv(cols, 128)});
    }
    // FP8 e4m3 with F32 scales per 128 x 128 block (GLM, DeepSeek-V3 naming).
    void fp8ScaleInv(const std::string &module, std::uint64_t rows, std::uint64_t cols)
    {
        add(module + ".weight", Dtype::F8_E4M3, {rows, cols});
        add(module + ".weight_scale_inv", Dtype::F32, {ceilDiv(rows, 128), ceilDiv(cols, 128)});
    }
    // FP4 e2m1, two per I8 byte, an E8M0 scale per 32 values of a row (DeepSeek-V4 routed experts).
    void fp4Pairs(const std::string &module, std::uint64_t rows, std::uint64_t cols)
    {
        add(module + ".weight", Dtype::I8, {rows, cols / 2});
        add(module + ".scale", Dtype::F8_E8M0, {rows, cols / 32});
    }
    std::vector<SynthTensor> out;
};

inline std::string str(std::int64_t v)
{
    return std::to_string(v);
}

} // namespace atlas::synth::build
