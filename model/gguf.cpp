#include "gguf.h"

#include "c_locale.h"
#include "errors.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <unordered_set>

namespace atlas {

std::string_view ggufTypeName(GgufType type)
{
    static constexpr std::array<std::string_view, 13> kNames{"u8",  "i8",    "u16",    "i16",   "u32", "i32", "f32",
                                                             "bool", "string", "array", "u64", "i64", "f64"};
    const auto i = static_cast<std::size_t>(type);
    return i < kNames.size() ? kNames[i] : "?";
}

std::string GgufValue::display() const
{
    if (type == GgufType::Array) return "[" + std::to_string(count) + " \u00d7 " + std::string(ggufTypeName(elementType)) + "]";
    if (type == GgufType::String) return held ? text : "(" + std::to_string(count) + " bytes)";
    if (type == GgufType::Bool) return integer ? "true" : "false";
    if (integral) return std::to_string(integer);
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, number); // shortest round trip, never the locale's
    return r.ec == std::errc() ? std::string(buf, r.ptr) : std::string("?");
}

namespace {

// ggml_type ids (ggml.h enum ggml_type) and what each stores. Ids 4, 5 (Q4_2, Q4_3), 31–33 (Q4_0_4_4,
// Q4_0_4_8, Q4_0_8_8) and 36–38 (IQ4_NL_4_4, _4_8, _8_8) were removed from llama.cpp: files holding them
// no longer load there, and are refused here.
struct GgmlId
{
    std::uint32_t id;
    Dtype dtype;
};
constexpr GgmlId kGgmlIds[] = {
    {0, Dtype::F32},      {1, Dtype::F16},     {2, Dtype::Q4_0},     {3, Dtype::Q4_1},    {6, Dtype::Q5_0},
    {7, Dtype::Q5_1},     {8, Dtype::Q8_0},    {9, Dtype::Q8_1},     {10, Dtype::Q2_K},   {11, Dtype::Q3_K},
    {12, Dtype::Q4_K},    {13, Dtype::Q5_K},   {14, Dtype::Q6_K},    {15, Dtype::Q8_K},   {16, Dtype::IQ2_XXS},
    {17, Dtype::IQ2_XS},  {18, Dtype::IQ3_XXS}, {19, Dtype::IQ1_S},  {20, Dtype::IQ4_NL}, {21, Dtype::IQ3_S},
    {22, Dtype::IQ2_S},   {23, Dtype::IQ4_XS}, {24, Dtype::I8},      {25, Dtype::I16},    {26, Dtype::I32},
    {27, Dtype::I64},     {28, Dtype::F64},    {29, Dtype::IQ1_M},   {30, Dtype::BF16},   {34, Dtype::TQ1_0},
    {35, Dtype::TQ2_0},   {39, Dtype::MXFP4},   {40, Dtype::NVFP4},   {41, Dtype::Q1_0},
};

std::string quoted(std::string_view s)
{
    return "'" + std::string(s) + "'";
}

// Ran out of the bytes given: the caller reads more.
struct Short
{
};

class Reader
{
public:
    Reader(std::string_view file, std::string_view bytes, std::uint64_t fileSize)
        : m_file(file), m_bytes(bytes), m_fileSize(fileSize)
    {
    }

    [[noreturn]] void fail(const std::string &what) const
    {
        throw AtlasError(ErrorKind::Invalid, std::string(m_file) + ": " + what);
    }

    std::uint64_t pos() const { return m_pos; }
    std::uint64_t left() const { return m_fileSize > m_pos ? m_fileSize - m_pos : 0; }

    // n bytes at the cursor, or Short when the prefix ends first; a file that ends first is invalid.
    std::string_view take(std::uint64_t n, const char *what)
    {
        if (n > left())
            fail("file ended inside its header (" + std::string(what) + " at byte " + std::to_string(m_pos) +
                 " needs " + std::to_string(n) + " bytes, " + std::to_string(left()) + " left)");
        if (m_pos + n > kMaxGgufHeaderBytes)
            fail("header runs past " + std::to_string(kMaxGgufHeaderBytes) + " bytes (the limit)");
        if (m_pos + n > m_bytes.size()) throw Short{};
        const std::string_view s = m_bytes.substr(m_pos, n);
        m_pos += n;
        return s;
    }
    void skip(std::uint64_t n, const char *what)
    {
        if (n > left()) take(n, what); // fails naming it
        if (m_pos + n > kMaxGgufHeaderBytes) take(n, what);
        if (m_pos + n > m_bytes.size()) throw Short{};
        m_pos += n;
    }
    template <class T> T scalar(const char *what)
    {
        T v;
        std::memcpy(&v, take(sizeof(T), what).data(), sizeof(T));
        return v;
    }
    std::uint32_t u32(const char *what) { return scalar<std::uint32_t>(what); }
    std::uint64_t u64(const char *what) { return scalar<std::uint64_t>(what); }
    // A string's length, checked against what is left of the file.
    std::uint64_t stringLength(const char *what)
    {
        const std::uint64_t n = u64(what);
        if (n > left())
            fail(std::string(what) + " at byte " + std::to_string(m_pos - 8) + " claims " + std::to_string(n) +
                 " bytes, past the end of the file");
        return n;
    }

private:
    std::string_view m_file;
    std::string_view m_bytes;
    std::uint64_t m_fileSize;
    std::uint64_t m_pos = 0;
};

std::uint64_t scalarSize(GgufType t)
{
    switch (t) {
    case GgufType::U8:
    case GgufType::I8:
    case GgufType::Bool: return 1;
    case GgufType::U16:
    case GgufType::I16: return 2;
    case GgufType::U32:
    case GgufType::I32:
    case GgufType::F32: return 4;
    case GgufType::U64:
    case GgufType::I64:
    case GgufType::F64: return 8;
    case GgufType::String:
    case GgufType::Array: return 0;
    }
    return 0;
}

bool knownType(std::uint32_t t)
{
    return t <= static_cast<std::uint32_t>(GgufType::F64);
}

// A numeric scalar of type t from its bytes: (integral, integer, number).
void readNumber(GgufType t, std::string_view b, GgufValue &v)
{
    auto get = [&](auto x) {
        std::memcpy(&x, b.data(), sizeof(x));
        return x;
    };
    v.integral = true;
    switch (t) {
    case GgufType::U8: v.integer = get(std::uint8_t{}); break;
    case GgufType::I8: v.integer = get(std::int8_t{}); break;
    case GgufType::Bool: v.integer = get(std::uint8_t{}) != 0; break;
    case GgufType::U16: v.integer = get(std::uint16_t{}); break;
    case GgufType::I16: v.integer = get(std::int16_t{}); break;
    case GgufType::U32: v.integer = get(std::uint32_t{}); break;
    case GgufType::I32: v.integer = get(std::int32_t{}); break;
    case GgufType::I64: v.integer = get(std::int64_t{}); break;
    case GgufType::U64: {
        const auto u = get(std::uint64_t{});
        v.number = static_cast<double>(u);
        if (u > static_cast<std::uint64_t>(INT64_MAX)) {
            v.integral = false;
            return;
        }
        v.integer = static_cast<std::int64_t>(u);
        return;
    }
    case GgufType::F32:
        v.integral = false;
        v.number = get(float{});
        return;
    case GgufType::F64:
        v.integral = false;
        v.number = get(double{});
        return;
    default: v.integral = false; return;
    }
    v.number = static_cast<double>(v.integer);
}

struct Parser
{
    Reader r;
    // For the estimate when the bytes run out: what is known to be left beyond the cursor.
    std::uint64_t arrayLeft = 0;     // elements of the array being read
    double elementBytes = 0;         // their average size so far
    std::uint64_t keysLeft = 0;      // key/values after the current one
    std::uint64_t tensorsLeft = 0;   // tensor infos after the current one
    std::uint64_t tensorCount = 0;
    std::uint64_t keyBytesSeen = 0;  // bytes of key/values read, for their average
    std::uint64_t keysSeen = 0;

    std::string key(const char *what)
    {
        const std::uint64_t n = r.stringLength(what);
        if (n == 0) r.fail(std::string(what) + " at byte " + std::to_string(r.pos() - 8) + " is empty");
        if (n > kMaxGgufKeyLength)
            r.fail(std::string(what) + " at byte " + std::to_string(r.pos() - 8) + " is " + std::to_string(n) +
                   " bytes long (at most " + std::to_string(kMaxGgufKeyLength) + ")");
        const std::string_view s = r.take(n, what);
        if (!isValidUtf8(s)) r.fail(std::string(what) + " at byte " + std::to_string(r.pos() - n) + " is not UTF-8");
        return std::string(s);
    }

    GgufValue value(GgufType type, const std::string &key)
    {
        GgufValue v;
        v.type = type;
        if (type == GgufType::String) {
            const std::uint64_t n = r.stringLength(("the value of " + quoted(key)).c_str());
            v.count = n;
            if (n <= kGgufHeldString) {
                v.text = std::string(r.take(n, "a string value"));
                if (!isValidUtf8(v.text)) r.fail("the value of " + quoted(key) + " is not UTF-8");
            } else {
                v.held = false;
                r.skip(n, "a string value");
            }
            return v;
        }
        if (type != GgufType::Array) {
            readNumber(type, r.take(scalarSize(type), "a value"), v);
            return v;
        }
        const std::uint32_t et = r.u32("an array's element type");
        if (!knownType(et)) r.fail(quoted(key) + " is an array of unknown type " + std::to_string(et));
        v.elementType = static_cast<GgufType>(et);
        if (v.elementType == GgufType::Array)
            r.fail(quoted(key) + " is an array of arrays, which llama.cpp's gguf reader does not read either");
        v.count = r.u64("an array's length");
        const std::uint64_t least = v.elementType == GgufType::String ? 8 : scalarSize(v.elementType);
        if (v.count > r.left() / least)
            r.fail(quoted(key) + " claims " + std::to_string(v.count) + " elements of " +
                   std::string(ggufTypeName(v.elementType)) + ", more than the file's " + std::to_string(r.left()) +
                   " remaining bytes can hold");
        if (v.elementType == GgufType::String) {
            v.held = v.count <= 64;
            const std::uint64_t start = r.pos();
            for (std::uint64_t i = 0; i < v.count; ++i) {
                arrayLeft = v.count - i;
                elementBytes = i ? double(r.pos() - start) / double(i) : 16.0;
                const std::uint64_t n = r.stringLength(("an element of " + quoted(key)).c_str());
                if (v.held && n > kGgufShownString) { // a short list of long strings is not held either
                    v.held = false;
                    v.strings.clear();
                }
                if (v.held)
                    v.strings.emplace_back(r.take(n, "a string element"));
                else
                    r.skip(n, "a string element");
            }
            arrayLeft = 0;
            return v;
        }
        const std::uint64_t size = scalarSize(v.elementType);
        arrayLeft = v.count;
        elementBytes = double(size);
        if (v.count <= kGgufHeldArray) {
            const std::string_view all = r.take(v.count * size, "an array");
            v.numbers.reserve(v.count);
            for (std::uint64_t i = 0; i < v.count; ++i) {
                GgufValue e;
                readNumber(v.elementType, all.substr(i * size, size), e);
                v.numbers.push_back(e.number);
            }
        } else {
            v.held = false;
            r.skip(v.count * size, "an array");
        }
        arrayLeft = 0;
        return v;
    }

    // What to read next when the bytes ran out at the cursor: the rest of the array being read, the key/
    // values after it at their average size so far, the tensor infos at 100 bytes each (a 40-byte name and
    // four dims), a quarter on top; and never less than twice what was given.
    std::uint64_t estimate(std::uint64_t given) const
    {
        double need = double(r.pos()) + double(arrayLeft) * elementBytes;
        const double perKey = keysSeen ? double(keyBytesSeen) / double(keysSeen) : 64.0;
        need += double(keysLeft) * std::min(perKey, 4096.0);
        need += double(tensorsLeft ? tensorsLeft : tensorCount) * 100.0;
        need = need * 1.25 + 65536;
        // Claimed counts cannot make one prefix ask for much more than it shows: at most 8 times what was read
        // (and 4 MiB), so a 24-byte header claiming 2^24 tensors is read on in steps, each earning the next.
        const double cap = std::max(8.0 * double(given), double(4ull << 20));
        std::uint64_t wanted = std::max<std::uint64_t>(static_cast<std::uint64_t>(std::min(need, cap)), given * 2);
        wanted = std::min(wanted, std::max<std::uint64_t>(r.left() + r.pos(), 1));
        return std::min(wanted, kMaxGgufHeaderBytes);
    }
};

} // namespace

std::optional<Dtype> dtypeOfGgmlType(std::uint32_t id)
{
    for (const auto &g : kGgmlIds)
        if (g.id == id) return g.dtype;
    return std::nullopt;
}

int ggmlTypeOf(Dtype dtype)
{
    for (const auto &g : kGgmlIds)
        if (g.dtype == dtype) return static_cast<int>(g.id);
    return -1;
}

const GgufValue *GgufHeader::find(std::string_view key) const
{
    const auto it = metadata.find(key);
    return it == metadata.end() ? nullptr : &it->second;
}

std::optional<std::int64_t> GgufHeader::integer(std::string_view key) const
{
    const GgufValue *v = find(key);
    if (!v || v->type == GgufType::Array || v->type == GgufType::String || !v->integral) return std::nullopt;
    return v->integer;
}

std::optional<double> GgufHeader::number(std::string_view key) const
{
    const GgufValue *v = find(key);
    if (!v || v->type == GgufType::Array || v->type == GgufType::String) return std::nullopt;
    return v->number;
}

std::string GgufHeader::text(std::string_view key) const
{
    const GgufValue *v = find(key);
    return v && v->type == GgufType::String ? v->text : std::string();
}

GgufParse parseGgufHeader(std::string_view file, std::string_view bytes, std::uint64_t fileSize)
{
    Parser p{Reader(file, bytes, fileSize)};
    Reader &r = p.r;
    GgufHeader h;
    try {
        if (fileSize < 4 || (bytes.size() >= 4 && bytes.substr(0, 4) != "GGUF"))
            r.fail("not a GGUF file (it does not begin with the four bytes 'GGUF')");
        r.take(4, "the magic");
        h.version = r.u32("the version");
        if (h.version != 2 && h.version != 3) {
            if ((h.version & 0xffffu) == 0 && h.version != 0)
                r.fail("a big-endian GGUF file (version " + std::to_string(__builtin_bswap32(h.version)) +
                       " byte-swapped); only little-endian files are read");
            r.fail("GGUF version " + std::to_string(h.version) + " is not read (versions 2 and 3 are)");
        }
        const std::uint64_t tensors = r.u64("the tensor count");
        const std::uint64_t keys = r.u64("the metadata count");
        if (tensors > kMaxGgufTensors)
            r.fail("claims " + std::to_string(tensors) + " tensors (at most " + std::to_string(kMaxGgufTensors) + ")");
        if (keys > kMaxGgufKeys)
            r.fail("claims " + std::to_string(keys) + " metadata keys (at most " + std::to_string(kMaxGgufKeys) + ")");
        // Each key/value takes at least 8 + 1 + 4 + 1 bytes, each tensor info 8 + 1 + 4 + 4 + 8.
        if (keys > r.left() / 14 || tensors > r.left() / 25)
            r.fail("claims " + std::to_string(keys) + " metadata keys and " + std::to_string(tensors) +
                   " tensors, more than the file's " + std::to_string(fileSize) + " bytes can describe");
        p.tensorCount = tensors;
        for (std::uint64_t k = 0; k < keys; ++k) {
            p.keysLeft = keys - k - 1;
            const std::uint64_t start = r.pos();
            std::string name = p.key("a metadata key");
            const std::uint32_t type = r.u32("a value type");
            if (!knownType(type)) r.fail(quoted(name) + " has unknown value type " + std::to_string(type));
            GgufValue v = p.value(static_cast<GgufType>(type), name);
            p.keyBytesSeen += r.pos() - start;
            ++p.keysSeen;
            if (h.metadata.count(name)) r.fail("metadata key " + quoted(name) + " appears twice");
            if (name == "general.alignment") {
                if (v.type != GgufType::U32)
                    r.fail("general.alignment is " + std::string(ggufTypeName(v.type)) + ", not u32");
                if (v.integer == 0 || (v.integer & (v.integer - 1)) != 0 ||
                    static_cast<std::uint64_t>(v.integer) > kMaxGgufAlignment)
                    r.fail("general.alignment " + std::to_string(v.integer) +
                           " is not a power of two up to " + std::to_string(kMaxGgufAlignment));
                h.alignment = static_cast<std::uint64_t>(v.integer);
            }
            h.metadata.emplace(std::move(name), std::move(v));
        }
        p.keysLeft = 0;
        std::unordered_set<std::string_view> names;
        // What the bytes at hand can describe, not what the header claims (a 24-byte prefix may claim 2^24).
        const std::uint64_t describable = std::min<std::uint64_t>(tensors, (bytes.size() - std::min<std::uint64_t>(bytes.size(), r.pos())) / 25);
        names.reserve(describable);
        h.shard.tensors.reserve(describable);
        for (std::uint64_t t = 0; t < tensors; ++t) {
            p.tensorsLeft = tensors - t;
            const std::uint64_t n = r.stringLength("a tensor name");
            if (n == 0 || n > kMaxGgufNameLength)
                r.fail("tensor " + std::to_string(t) + "'s name is " + std::to_string(n) + " bytes long (1 to " +
                       std::to_string(kMaxGgufNameLength) + ", as llama.cpp's GGML_MAX_NAME allows)");
            const std::string_view raw = r.take(n, "a tensor name");
            if (!isValidUtf8(raw)) r.fail("tensor " + std::to_string(t) + "'s name is not UTF-8");
            const std::uint32_t dims = r.u32("a tensor's dimension count");
            if (dims > kMaxGgufDims)
                r.fail("tensor " + quoted(raw) + " has " + std::to_string(dims) + " dimensions (at most " +
                       std::to_string(kMaxGgufDims) + ")");
            std::array<std::uint64_t, kMaxGgufDims> ne{1, 1, 1, 1};
            std::uint64_t numel = 1;
            bool overflow = false;
            for (std::uint32_t d = 0; d < dims; ++d) {
                ne[d] = r.u64("a tensor dimension");
                if (ne[d] > static_cast<std::uint64_t>(INT64_MAX)) overflow = true;
                overflow = overflow || __builtin_mul_overflow(numel, ne[d], &numel) ||
                           numel > static_cast<std::uint64_t>(INT64_MAX);
            }
            const std::uint32_t typeId = r.u32("a tensor's type");
            const std::uint64_t offset = r.u64("a tensor's offset");
            if (overflow) r.fail("tensor " + quoted(raw) + ": its dimensions overflow 63 bits");
            const std::optional<Dtype> dtype = dtypeOfGgmlType(typeId);
            if (!dtype)
                r.fail("tensor " + quoted(raw) + " has ggml type " + std::to_string(typeId) +
                       ", which llama.cpp does not define (or has removed)");
            const DtypeBlock block = dtypeBlock(*dtype);
            if (ne[0] % block.elements != 0)
                r.fail("tensor " + quoted(raw) + ": its first dimension " + std::to_string(ne[0]) +
                       " is not a multiple of " + std::string(dtypeName(*dtype)) + "'s block of " +
                       std::to_string(block.elements) + " values");
            std::uint64_t bytesOf = 0;
            if (__builtin_mul_overflow(numel / block.elements, std::uint64_t(block.bytes), &bytesOf))
                r.fail("tensor " + quoted(raw) + ": its size overflows 64 bits");
            if (offset % h.alignment != 0)
                r.fail("tensor " + quoted(raw) + " starts at data offset " + std::to_string(offset) +
                       ", not a multiple of the alignment " + std::to_string(h.alignment));
            if (!names.insert(raw).second) r.fail("tensor " + quoted(raw) + " appears twice");
            TensorInfo info;
            info.name = raw; // re-pointed into the shard's own names below, once the bytes are final
            info.dtype = *dtype;
            info.shape.assign(ne.rbegin() + (kMaxGgufDims - dims), ne.rend());
            info.numel = numel;
            info.begin = offset;
            info.end = offset + bytesOf; // both below 2^63 + 2^63: checked against the file below
            if (offset > kMaxFileSize || bytesOf > kMaxFileSize) {
                r.fail("tensor " + quoted(raw) + " lies past the end of the file (data offset " +
                       std::to_string(offset) + ", " + std::to_string(bytesOf) + " bytes)");
            }
            h.shard.tensors.push_back(std::move(info));
        }
    } catch (const Short &) {
        if (bytes.size() >= fileSize)
            throw AtlasError(ErrorKind::Invalid, std::string(file) + ": file ended inside its header");
        return {std::nullopt, p.estimate(bytes.size())};
    }
    h.headerEnd = r.pos();
    const std::uint64_t dataStart = (h.headerEnd + h.alignment - 1) / h.alignment * h.alignment;
    if (dataStart > fileSize && !h.shard.tensors.empty())
        throw AtlasError(ErrorKind::Invalid, std::string(file) + ": the data section would start past the end of the file");
    const std::uint64_t dataBytes = fileSize > dataStart ? fileSize - dataStart : 0;
    // gguf.cpp gguf_init_from_reader: each tensor starts where the one before it (in info order) ends, padded
    // to the alignment; a file with gaps or tensors out of order does not load in llama.cpp.
    std::uint64_t expected = 0;
    for (const auto &t : h.shard.tensors) {
        if (t.begin != expected)
            throw AtlasError(ErrorKind::Invalid, std::string(file) + ": tensor " + quoted(t.name) + " starts at data offset " +
                                                     std::to_string(t.begin) + ", not at " + std::to_string(expected) +
                                                     " where the tensor before it ends (llama.cpp requires them in sequence)",
                             t.begin < expected ? HeaderProblem::Overlap : HeaderProblem::Gap);
        expected = (t.end + h.alignment - 1) / h.alignment * h.alignment;
    }
    std::sort(h.shard.tensors.begin(), h.shard.tensors.end(),
              [](const TensorInfo &a, const TensorInfo &b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
    std::uint64_t lastEnd = 0;
    std::string_view lastName;
    for (auto &t : h.shard.tensors) {
        if (t.end > dataBytes)
            throw AtlasError(ErrorKind::Invalid, std::string(file) + ": tensor " + quoted(t.name) + " (data bytes " +
                                                     std::to_string(t.begin) + "\u2013" + std::to_string(t.end) +
                                                     ") runs past the end of the file's " + std::to_string(dataBytes) +
                                                     " data bytes",
                             HeaderProblem::Truncated);
        if (t.begin < lastEnd && t.end > t.begin)
            throw AtlasError(ErrorKind::Invalid, std::string(file) + ": tensor " + quoted(t.name) + " overlaps " +
                                                     quoted(lastName) + " in the data section",
                             HeaderProblem::Overlap);
        if (t.end > t.begin) {
            lastEnd = t.end;
            lastName = t.name;
        }
    }
    for (auto &t : h.shard.tensors)
        t.name = h.shard.keepName(t.name);
    h.shard.file = std::string(file);
    h.shard.fileSize = fileSize;
    h.shard.headerLength = dataStart - 8;
    for (const auto &[key, v] : h.metadata)
        if (v.type != GgufType::String || (v.held && v.count <= kGgufShownString)) h.shard.metadata.emplace(key, v.display());
    return {std::move(h), 0};
}

std::optional<GgufSplitName> ggufSplitName(std::string_view file)
{
    // STEM-00002-of-00006.gguf: five digits each, as llama.cpp's llama_split_path writes them.
    constexpr std::string_view kTail = ".gguf";
    if (!file.ends_with(kTail) || file.size() < kTail.size() + 16) return std::nullopt;
    const std::string_view core = file.substr(0, file.size() - kTail.size());
    const std::string_view tail = core.substr(core.size() - 15); // "-00002-of-00006"
    if (tail[0] != '-' || tail.substr(6, 4) != "-of-") return std::nullopt;
    auto number = [](std::string_view d) {
        int v = -1;
        if (d.size() != 5 || !std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; })) return -1;
        std::from_chars(d.data(), d.data() + d.size(), v);
        return v;
    };
    const int part = number(tail.substr(1, 5)), count = number(tail.substr(10, 5));
    if (part < 1 || count < 1 || part > count) return std::nullopt;
    return GgufSplitName{std::string(core.substr(0, core.size() - 15)), part, count};
}

std::vector<std::string> ggufSplitFiles(std::string_view file)
{
    const auto split = ggufSplitName(file);
    if (!split) return {std::string(file)};
    std::vector<std::string> out;
    char buf[32];
    for (int i = 1; i <= split->count; ++i) {
        std::snprintf(buf, sizeof buf, "-%05d-of-%05d.gguf", i, split->count);
        out.push_back(split->stem + buf);
    }
    return out;
}

} // namespace atlas
