#pragma once

// Writes small or full-scale header-faithful safetensors files for tests: the header as the format
// wants it, the data region a sparse hole (except where bytes are given).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fixture {

struct Tensor
{
    std::string name;
    std::string dtype = "F32";
    std::vector<std::uint64_t> shape{4};
    std::string data; // little-endian bytes; zeros (sparse) when shorter than the tensor
};

inline std::uint64_t dtypeBytes(const std::string &d)
{
    if (d == "F64" || d == "I64" || d == "U64") return 8;
    if (d == "F32" || d == "I32" || d == "U32") return 4;
    if (d == "BF16" || d == "F16" || d == "I16" || d == "U16") return 2;
    return 1;
}

inline std::uint64_t tensorBytes(const Tensor &t)
{
    std::uint64_t n = dtypeBytes(t.dtype);
    for (auto d : t.shape)
        n *= d;
    return n;
}

// One safetensors file; the data region is sparse where no bytes are given.
inline void writeSafetensors(const std::filesystem::path &path, const std::vector<Tensor> &tensors)
{
    nlohmann::json header = nlohmann::json::object();
    std::uint64_t offset = 0;
    for (const auto &t : tensors) {
        const std::uint64_t n = tensorBytes(t);
        header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + n}}};
        offset += n;
    }
    const std::string text = header.dump();
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        for (int i = 0; i < 8; ++i)
            out.put(static_cast<char>((text.size() >> (8 * i)) & 0xFF));
        out << text;
        std::uint64_t at = 0;
        for (const auto &t : tensors) {
            if (!t.data.empty()) {
                out.seekp(static_cast<std::streamoff>(8 + text.size() + at));
                out << t.data;
            }
            at += tensorBytes(t);
        }
    }
    std::filesystem::resize_file(path, 8 + text.size() + offset);
}

// config.json and model.safetensors in dir.
inline void writeCheckpoint(const std::filesystem::path &dir, const nlohmann::json &config,
                            const std::vector<Tensor> &tensors)
{
    std::filesystem::create_directories(dir);
    if (!config.is_null()) std::ofstream(dir / "config.json") << config.dump();
    writeSafetensors(dir / "model.safetensors", tensors);
}

} // namespace fixture
