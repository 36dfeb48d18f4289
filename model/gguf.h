#pragma once

#include "safetensors.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace atlas {

// GGUF, llama.cpp's format (domain.md section 20): little-endian "GGUF", u32 version, u64 tensor count,
// u64 metadata count, the key/values, the tensor infos, padding to general.alignment, then the data. The
// header has no length prefix: it is read until the tensor infos end. Every count, length and offset is
// checked against these bounds and the file's size before anything is held (README, limits).
inline constexpr std::uint64_t kMaxGgufHeaderBytes = 1ull << 30; // metadata and tensor infos together
inline constexpr std::uint64_t kMaxGgufTensors = 1ull << 24;
inline constexpr std::uint64_t kMaxGgufKeys = 1ull << 16; // real files hold ~60
inline constexpr std::uint64_t kMaxGgufKeyLength = 65535;
inline constexpr std::uint32_t kMaxGgufDims = 4;       // GGML_MAX_DIMS (ggml.h)
inline constexpr std::size_t kMaxGgufNameLength = 63;  // GGML_MAX_NAME - 1: gguf.cpp refuses longer names
inline constexpr std::uint64_t kMaxGgufAlignment = 1ull << 24;
inline constexpr std::uint64_t kGgufHeldArray = 4096; // numeric arrays up to this many values are kept (per-layer lists)
inline constexpr std::uint64_t kGgufHeldString = 1ull << 16; // longer strings are skipped, their length kept
inline constexpr std::uint64_t kGgufShownString = 1024; // longer ones are not copied into the shard's metadata

// gguf_type (ggml/include/gguf.h): the metadata value types.
enum class GgufType : std::uint32_t {
    U8 = 0,
    I8 = 1,
    U16 = 2,
    I16 = 3,
    U32 = 4,
    I32 = 5,
    F32 = 6,
    Bool = 7,
    String = 8,
    Array = 9,
    U64 = 10,
    I64 = 11,
    F64 = 12,
};
std::string_view ggufTypeName(GgufType type);

// One metadata value: scalars and short strings held; arrays summarised by element type and count, their
// values held when numeric and at most kGgufHeldArray long, or strings and at most 64 of them (tags,
// languages). A tokenizer's 150k strings are read and skipped, never held.
struct GgufValue
{
    GgufType type = GgufType::U8;
    GgufType elementType = GgufType::U8; // arrays
    std::uint64_t count = 0;             // arrays: elements; strings: bytes
    bool integral = false;               // a whole number (every integer type, and Bool)
    std::int64_t integer = 0;            // integral scalars (U64 past INT64_MAX: held in `number` only)
    double number = 0;                   // every numeric scalar
    std::string text;                    // strings of up to kGgufHeldString bytes
    bool held = true;                    // false: a string or array whose values were skipped
    std::vector<double> numbers;         // a numeric array's values
    std::vector<std::string> strings;    // a short string array's values

    std::string display() const; // "61", "0.5", "deepseek2", "[151552 × string]"
};

// ggml_type (ggml/include/ggml.h) to the dtype it stores; nullopt for an id llama.cpp never had or removed.
std::optional<Dtype> dtypeOfGgmlType(std::uint32_t id);
// The id a dtype has in GGUF files, or -1 (safetensors-only dtypes: F8, F4, U8 ...).
int ggmlTypeOf(Dtype dtype);

struct GgufHeader
{
    std::uint32_t version = 0;
    std::uint64_t alignment = 32;
    std::map<std::string, GgufValue, std::less<>> metadata;
    // The tensors, in data order, with row-major shapes (GGUF lists ne[0], the fastest dimension, first;
    // shapes here are reversed, as gguf-py shows them, so a stacked expert tensor leads with the expert
    // count as the safetensors naming does). begin/end are relative to the data section, which starts at
    // shard.dataStart(): shard.headerLength is that offset less 8.
    ShardHeader shard;
    std::uint64_t headerEnd = 0; // where the tensor infos end

    const GgufValue *find(std::string_view key) const;
    std::optional<std::int64_t> integer(std::string_view key) const;
    std::optional<double> number(std::string_view key) const;
    std::string text(std::string_view key) const;
    std::string architecture() const { return text("general.architecture"); }
    // split.no (0-based), split.count, split.tensors.count; nullopt when the file is not part of a split.
    std::optional<std::int64_t> splitNumber() const { return integer("split.no"); }
    std::optional<std::int64_t> splitCount() const { return integer("split.count"); }
};

// Parses the header from a prefix of a file of fileSize bytes. With too few bytes it asks for more:
// `header` empty and `wanted` the prefix to read next (an estimate from what was read, at least twice
// what was given, never past the file). Throws AtlasError(Invalid) naming the file and the rule broken.
struct GgufParse
{
    std::optional<GgufHeader> header;
    std::uint64_t wanted = 0;
};
GgufParse parseGgufHeader(std::string_view file, std::string_view bytes, std::uint64_t fileSize);

// "GLM-5-UD-Q2_K_XL-00002-of-00006.gguf" -> its set ("GLM-5-UD-Q2_K_XL", 6) and part 2; nullopt otherwise.
struct GgufSplitName
{
    std::string stem;
    int part = 0;
    int count = 0;
};
std::optional<GgufSplitName> ggufSplitName(std::string_view file);
// Every part's name of the split `file` belongs to ("x-00001-of-00003.gguf" -> the three), or {file}.
std::vector<std::string> ggufSplitFiles(std::string_view file);

} // namespace atlas
