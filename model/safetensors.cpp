#include "safetensors.h"

#include "errors.h"
#include "json_sax.h"
#include "populate.h"

#include <nlohmann/json.hpp>
#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <unordered_set>

namespace atlas {

namespace {

[[noreturn]] void fail(HeaderProblem problem, std::string_view file, const std::string &what)
{
    throw AtlasError(ErrorKind::Invalid, std::string(file) + ": " + what, problem);
}

std::string quote(std::string_view s)
{
    return "'" + std::string(s) + "'";
}

// A SAX handler that builds the tensor list directly: no DOM, and duplicate names are caught.
class HeaderHandler
{
public:
    using json = nlohmann::json;
    static constexpr bool kNegativeZeroIsFloat = true; // "-0" is refused where a count stands, as serde does
    // The keys handed in last as long as the reading (simdjson's document, through replay): a tensor's name is
    // then held as a view until its entry ends, not copied.
    bool viewsLast = false;
    HeaderHandler(std::string_view file, ShardHeader &out, ListedNames *listed)
        : m_file(file), m_out(out), m_listed(listed)
    {
        if (m_listed) {
            m_listed->found.assign(m_listed->sorted.size(), 0);
            m_listed->unlisted.clear();
        }
    }

    bool null()
    {
        if (m_state == State::TopValue && m_key == "__metadata__") {
            m_state = State::Top;
            return true;
        }
        return scalar("null");
    }
    bool boolean(bool) { return scalar("a boolean"); }
    bool number_integer(json::number_integer_t v)
    {
        if (v < 0) return scalar("a negative number");
        return number(static_cast<std::uint64_t>(v));
    }
    bool number_unsigned(json::number_unsigned_t v) { return number(v); }
    bool number_float(json::number_float_t, const std::string &) { return scalar("a non-integer number"); }
    bool binary(json::binary_t &) { return scalar("binary data"); }
    // Keys and strings come as views (json_sax.h, replay); what outlasts the call is copied unless viewsLast.
    bool string_in_place(std::string_view v)
    {
        switch (m_state) {
        case State::Metadata:
            m_out.metadata[m_key2] = std::string(v);
            m_state = State::MetadataKey;
            return true;
        case State::EntryValue:
            if (m_fieldKind == Field::Dtype) {
                // Most entries repeat the dtype of the one before.
                const auto d = v == m_lastDtypeName ? m_lastDtype : dtypeFromName(v);
                if (!d)
                    fail(HeaderProblem::UnknownDtype, m_file,
                         "tensor " + quote(m_key) + " has unknown dtype " + quote(v));
                m_dtype = *d;
                m_lastDtype = d;
                m_lastDtypeName = dtypeName(*d);
                m_state = State::Entry;
                return true;
            }
            if (isKnownField()) return scalar("a string");
            m_state = State::Entry; // unknown fields are ignored, as the reference does
            return true;
        default:
            return scalar("a string");
        }
    }
    bool start_object(std::size_t)
    {
        switch (m_state) {
        case State::Start:
            m_state = State::Top;
            return true;
        case State::TopValue:
            if (m_key == "__metadata__") {
                m_state = State::MetadataKey;
                return true;
            }
            beginEntry();
            m_state = State::Entry;
            return true;
        case State::EntryValue:
            if (isKnownField()) return scalar("an object");
            return skip();
        case State::Skip:
            ++m_skipDepth;
            return true;
        case State::Metadata:
            fail(HeaderProblem::MetadataNotStrings, m_file,
                 "__metadata__ value for " + quote(m_key2) + " is not a string");
        default:
            return scalar("an object");
        }
    }
    bool key_in_place(std::string_view k)
    {
        switch (m_state) {
        case State::Top:
            m_key = held(k, m_keyStore);
            m_state = State::TopValue;
            return true;
        case State::Entry:
            // A field given twice is refused, as serde refuses it for the reference's TensorInfo
            // ("duplicate field"): which of the two a reader takes is not to be guessed.
            m_fieldKind = k == "dtype" ? Field::Dtype : k == "shape" ? Field::Shape
                          : k == "data_offsets"               ? Field::Offsets
                                                              : Field::Other;
            if ((m_fieldKind == Field::Dtype && m_dtype) || (m_fieldKind == Field::Shape && m_hasShape) ||
                (m_fieldKind == Field::Offsets && m_hasOffsets))
                fail(HeaderProblem::BadEntry, m_file, "tensor " + quote(m_key) + " gives " + quote(k) + " twice");
            m_field = held(k, m_fieldStore);
            m_state = State::EntryValue;
            return true;
        case State::MetadataKey:
            m_key2.assign(k);
            m_state = State::Metadata;
            return true;
        case State::Skip:
            return true;
        default:
            return scalar("a key");
        }
    }
    bool end_object()
    {
        switch (m_state) {
        case State::Top:
            m_state = State::Done;
            return true;
        case State::MetadataKey:
            m_state = State::Top;
            return true;
        case State::Entry:
            finishEntry();
            m_state = State::Top;
            return true;
        case State::Skip:
            return leaveSkip();
        default:
            return scalar("the end of an object");
        }
    }
    bool start_array(std::size_t)
    {
        switch (m_state) {
        case State::EntryValue:
            if (m_fieldKind == Field::Shape) {
                m_shape.clear();
                m_hasShape = true;
                m_state = State::ShapeArray;
                return true;
            }
            if (m_fieldKind == Field::Offsets) {
                m_offsets.clear();
                m_hasOffsets = true;
                m_state = State::OffsetsArray;
                return true;
            }
            if (isKnownField()) return scalar("an array");
            return skip();
        case State::Skip:
            ++m_skipDepth;
            return true;
        case State::Metadata:
            fail(HeaderProblem::MetadataNotStrings, m_file,
                 "__metadata__ value for " + quote(m_key2) + " is not a string");
        default:
            return scalar("an array");
        }
    }
    bool end_array()
    {
        switch (m_state) {
        case State::ShapeArray:
            m_state = State::Entry;
            return true;
        case State::OffsetsArray:
            if (m_offsets.size() != 2)
                fail(HeaderProblem::BadEntry, m_file,
                     "tensor " + quote(m_key) + " has data_offsets with " + std::to_string(m_offsets.size()) +
                         " values instead of 2");
            m_state = State::Entry;
            return true;
        case State::Skip:
            return leaveSkip();
        default:
            return scalar("the end of an array");
        }
    }
    bool parse_error(std::size_t position, const std::string &what)
    {
        fail(HeaderProblem::NotJson, m_file,
             "header is not valid JSON (byte " + std::to_string(position) + "): " + what);
    }

private:
    enum class State {
        Start,
        Top,
        TopValue,
        Entry,
        EntryValue,
        ShapeArray,
        OffsetsArray,
        MetadataKey,
        Metadata,
        Skip,
        Done,
    };

    bool isKnownField() const
    {
        return m_fieldKind != Field::Other;
    }

    bool number(std::uint64_t v)
    {
        switch (m_state) {
        case State::ShapeArray:
            m_shape.push_back(v);
            return true;
        case State::OffsetsArray:
            m_offsets.push_back(v);
            return true;
        case State::EntryValue:
            if (isKnownField()) return scalar("a number");
            m_state = State::Entry;
            return true;
        case State::Skip:
            return true;
        default:
            return scalar("a number");
        }
    }

    bool skip()
    {
        m_state = State::Skip;
        m_skipDepth = 1;
        return true;
    }
    bool leaveSkip()
    {
        if (--m_skipDepth == 0) m_state = State::Entry;
        return true;
    }

    // A value of a kind that does not belong where it stands.
    bool scalar(const char *what)
    {
        switch (m_state) {
        case State::Skip:
            return true;
        case State::EntryValue:
            if (!isKnownField()) {
                m_state = State::Entry;
                return true;
            }
            fail(HeaderProblem::BadEntry, m_file,
                 "tensor " + quote(m_key) + ": field " + quote(m_field) + " is " + what);
        case State::ShapeArray:
            fail(HeaderProblem::BadEntry, m_file,
                 "tensor " + quote(m_key) + ": shape holds " + what +
                     " (dimensions are non-negative integers)");
        case State::OffsetsArray:
            fail(HeaderProblem::BadEntry, m_file, "tensor " + quote(m_key) + ": data_offsets holds " + what);
        case State::Metadata:
            fail(HeaderProblem::MetadataNotStrings, m_file,
                 "__metadata__ value for " + quote(m_key2) + " is " + what + ", not a string");
        case State::TopValue:
            if (m_key == "__metadata__")
                fail(HeaderProblem::MetadataNotStrings, m_file, std::string("__metadata__ is ") + what);
            fail(HeaderProblem::BadEntry, m_file,
                 "tensor " + quote(m_key) + " is " + what + ", not an object");
        case State::Start:
            fail(HeaderProblem::BadStart, m_file, std::string("header is ") + what + ", not a JSON object");
        default:
            fail(HeaderProblem::BadEntry, m_file, std::string("unexpected ") + what + " in header");
        }
    }

    void beginEntry()
    {
        m_dtype.reset();
        m_shape.clear();
        m_offsets.clear();
        m_hasShape = m_hasOffsets = false;
    }

    void finishEntry()
    {
        if (!m_dtype || !m_hasShape || !m_hasOffsets) {
            std::string missing = !m_dtype ? "dtype" : !m_hasShape ? "shape" : "data_offsets";
            fail(HeaderProblem::BadEntry, m_file, "tensor " + quote(m_key) + " has no " + missing);
        }
        TensorInfo t;
        t.name = keepName();
        t.dtype = *m_dtype;
        t.shape = m_shape;
        t.begin = m_offsets[0];
        t.end = m_offsets[1];
        if (t.end < t.begin)
            fail(HeaderProblem::BadEntry, m_file,
                 "tensor " + quote(m_key) + " has data_offsets that end before they begin");
        const std::uint64_t expected = tensorByteSize(m_file, m_key, t.dtype, t.shape, &t.numel);
        if (t.end - t.begin != expected)
            fail(HeaderProblem::SizeMismatch, m_file,
                 "tensor " + quote(m_key) + " spans " + std::to_string(t.end - t.begin) + " bytes but " +
                     std::string(dtypeName(t.dtype)) + " of its shape needs " + std::to_string(expected));
        m_out.tensors.push_back(std::move(t));
    }

    // The listed copy of the name when the index lists it (the next listed name first: headers are
    // usually written in name order), else a copy in the shard's own arena. A listed name met twice
    // is a duplicate, told here; unlisted ones are checked for duplicates after the parse.
    std::string_view keepName()
    {
        if (m_listed) {
            const std::span<const std::string_view> names = m_listed->sorted;
            std::size_t at = m_cursor;
            if (at >= names.size() || names[at] != m_key) {
                // A header out of name order (module order: gate, up, down) mostly lands a few names away
                // from the last: searched outwards from there, in steps that double, then bisected.
                const std::string_view key(m_key);
                std::size_t lo = 0, hi = names.size();
                if (at < names.size()) {
                    std::size_t step = 1;
                    if (names[at] < key) {
                        lo = at + 1;
                        while (lo + step - 1 < hi && names[lo + step - 1] < key) {
                            lo += step;
                            step *= 2;
                        }
                        hi = std::min(hi, lo + step - 1);
                    } else {
                        hi = at;
                        while (hi >= step && !(names[hi - step] < key)) {
                            hi -= step;
                            step *= 2;
                        }
                        lo = hi >= step ? hi - step + 1 : 0;
                    }
                }
                const auto it = std::lower_bound(names.begin() + static_cast<std::ptrdiff_t>(lo),
                                                 names.begin() + static_cast<std::ptrdiff_t>(hi), key);
                at = it != names.end() && *it == key ? static_cast<std::size_t>(it - names.begin()) : names.size();
            }
            if (at < names.size()) {
                if (m_listed->found[at])
                    fail(HeaderProblem::DuplicateName, m_file, "tensor " + quote(m_key) + " is listed twice");
                m_listed->found[at] = 1;
                m_cursor = at + 1;
                m_usedListed = true;
                return names[at];
            }
        }
        const std::string_view kept = m_out.keepName(m_key);
        if (m_listed) m_listed->unlisted.push_back(kept);
        return kept;
    }

public:
    bool usedListed() const { return m_usedListed; }

private:
    std::string_view m_file;
    ShardHeader &m_out;
    ListedNames *m_listed;
    std::size_t m_cursor = 0;
    bool m_usedListed = false;
    State m_state = State::Start;
    // `k` as long as the entry lasts: the reader's own view when viewsLast, else a copy in `store`.
    std::string_view held(std::string_view k, std::string &store) const
    {
        if (viewsLast) return k;
        store.assign(k);
        return store;
    }
    std::string_view m_key; // tensor name or "__metadata__": where the reader holds it, or m_keyStore
    std::string m_keyStore;
    std::string m_key2;  // metadata key
    std::string_view m_field; // field inside an entry: where the reader holds it, or m_fieldStore
    std::string m_fieldStore;
    enum class Field { Dtype, Shape, Offsets, Other } m_fieldKind = Field::Other; // which m_field is
    std::optional<Dtype> m_lastDtype;  // the dtype last read, and its name
    std::string_view m_lastDtypeName;
    int m_skipDepth = 0;
    std::optional<Dtype> m_dtype;
    Shape m_shape;
    std::vector<std::uint64_t> m_offsets;
    bool m_hasShape = false;
    bool m_hasOffsets = false;
};

} // namespace

bool isValidUtf8(std::string_view text)
{
    const auto *s = reinterpret_cast<const unsigned char *>(text.data());
    const std::size_t n = text.size();
    std::size_t i = 0;
    while (i < n) {
        // Fast path over ASCII, eight bytes at a time.
        if (i + 8 <= n) {
            std::uint64_t chunk;
            std::memcpy(&chunk, s + i, 8);
            if ((chunk & 0x8080808080808080ULL) == 0) {
                i += 8;
                continue;
            }
        }
        const unsigned char c = s[i];
        if (c < 0x80) {
            ++i;
            continue;
        }
        std::size_t len;
        std::uint32_t cp;
        if ((c & 0xE0) == 0xC0) {
            len = 2;
            cp = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            cp = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + len > n) return false;
        for (std::size_t k = 1; k < len; ++k) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

std::uint64_t tensorByteSize(std::string_view file, std::string_view tensor, Dtype dtype,
                             std::span<const std::uint64_t> shape, std::uint64_t *numelOut)
{
    std::uint64_t numel = 1;
    for (std::uint64_t d : shape) {
        if (__builtin_mul_overflow(numel, d, &numel))
            fail(HeaderProblem::ShapeOverflow, file,
                 "tensor " + quote(tensor) + ": the element count of its shape overflows 64 bits");
    }
    std::uint64_t bits;
    if (__builtin_mul_overflow(numel, static_cast<std::uint64_t>(dtypeBits(dtype)), &bits))
        fail(HeaderProblem::ShapeOverflow, file,
             "tensor " + quote(tensor) + ": its size in bytes overflows 64 bits");
    if (bits % 8 != 0)
        fail(HeaderProblem::SubByteMisaligned, file,
             "tensor " + quote(tensor) + ": " + std::to_string(numel) + " elements of " +
                 std::string(dtypeName(dtype)) + " do not fill whole bytes");
    if (numelOut) *numelOut = numel;
    return bits / 8;
}

std::uint64_t parseHeaderLength(std::string_view file, std::string_view first8, std::uint64_t fileSize)
{
    if (first8.size() < 8 || fileSize < 8)
        fail(HeaderProblem::TooSmall, file,
             "file is " + std::to_string(std::min<std::uint64_t>(fileSize, first8.size())) +
                 " bytes, too small for a safetensors header");
    std::uint64_t n = 0;
    for (int i = 7; i >= 0; --i)
        n = (n << 8) | static_cast<unsigned char>(first8[static_cast<std::size_t>(i)]);
    if (n > kMaxHeaderLength)
        fail(HeaderProblem::LengthTooLarge, file,
             "header length " + std::to_string(n) + " exceeds the limit of " +
                 std::to_string(kMaxHeaderLength) + " bytes");
    if (n > fileSize - 8)
        fail(HeaderProblem::LengthPastEnd, file,
             "header length " + std::to_string(n) + " runs past the end of the file (" +
                 std::to_string(fileSize) + " bytes)");
    return n;
}

std::string_view NameArena::add(std::string_view name)
{
    if (name.empty()) return {};
    if (name.size() > m_left) {
        // Blocks of 256 KiB (a longer name gets a block of its own): not zeroed, never moved.
        const std::size_t size = std::max<std::size_t>(name.size(), 256 * 1024);
        m_blocks.push_back(std::unique_ptr<char[]>(new char[size]));
        m_next = m_blocks.back().get();
        m_left = size;
    }
    std::memcpy(m_next, name.data(), name.size());
    const std::string_view kept(m_next, name.size());
    m_next += name.size();
    m_left -= name.size();
    return kept;
}

std::string_view ShardHeader::keepName(std::string_view name)
{
    if (!m_ownNames) {
        m_ownNames = std::make_shared<NameArena>();
        nameStores.push_back(m_ownNames);
    }
    return m_ownNames->add(name);
}

namespace {

// A header the fast reading below takes (besides its size: see kFastHeaderBytes): ASCII only, no escape
// and no minus sign. So every string reads as its bytes, every number is a non-negative one whatever the
// reader (simdjson hears "-0" as the integer 0, where the safetensors reference refuses it), and the
// document is valid UTF-8. Real headers are such: names, dtypes, shapes and offsets. Any other is read by
// parseJson alone.
bool fastReadable(std::string_view json)
{
    std::uint64_t high = 0;
    std::size_t i = 0;
    for (; i + 8 <= json.size(); i += 8) {
        std::uint64_t w;
        std::memcpy(&w, json.data() + i, 8);
        high |= w;
    }
    for (; i < json.size(); ++i)
        high |= static_cast<unsigned char>(json[i]);
    return !(high & 0x8080808080808080ULL) && !std::memchr(json.data(), '\\', json.size()) &&
           !std::memchr(json.data(), '-', json.size());
}

// The same calls parseJson makes, in the same order, from simdjson's validated document.
bool replay(simdjson::dom::element e, HeaderHandler &h, std::string &buffer)
{
    using Type = simdjson::dom::element_type;
    constexpr std::size_t kUnknownSize = static_cast<std::size_t>(-1);
    switch (e.type()) {
    case Type::OBJECT: {
        if (!h.start_object(kUnknownSize)) return false;
        const simdjson::dom::object object = e.get_object().value_unsafe(); // held: the loop walks it
        for (const simdjson::dom::key_value_pair field : object)
            if (!h.key_in_place(field.key) || !replay(field.value, h, buffer)) return false;
        return h.end_object();
    }
    case Type::ARRAY: {
        if (!h.start_array(kUnknownSize)) return false;
        const simdjson::dom::array array = e.get_array().value_unsafe();
        for (const simdjson::dom::element v : array)
            if (!replay(v, h, buffer)) return false;
        return h.end_array();
    }
    case Type::STRING:
        return h.string_in_place(e.get_string().value_unsafe());
    case Type::INT64: // never negative here (fastReadable)
        return h.number_unsigned(static_cast<std::uint64_t>(e.get_int64().value_unsafe()));
    case Type::UINT64:
        return h.number_unsigned(e.get_uint64().value_unsafe());
    case Type::DOUBLE:
        buffer.clear(); // HeaderHandler::number_float does not read the text
        return h.number_float(e.get_double().value_unsafe(), buffer);
    case Type::BOOL:
        return h.boolean(e.get_bool().value_unsafe());
    case Type::NULL_VALUE:
        return h.null();
    }
    return false;
}

// Parses `json` with simdjson and replays it into the handler: nullopt when simdjson refuses it (the
// caller then reads it with parseJson, which says where and why), else what the handler answered.
// simdjson validates the whole document first (its grammar, its UTF-8, its depth up to 1024), and a
// document it accepts is one parseJson accepts, read the same way (see fastReadable). Each thread keeps
// its parser and buffer, sized for the largest header it met (a few times its bytes at most).
static_assert(kHeaderPadding >= simdjson::SIMDJSON_PADDING);
std::optional<bool> readFast(std::string_view json, HeaderHandler &h, bool spacesAfter)
{
    thread_local simdjson::dom::parser parser;
    thread_local simdjson::dom::document document; // the tape and strings: grown here, not by parse()
    thread_local std::vector<char> padded;
    // Grown by half again when a header is larger than any before: a checkpoint's headers differ by a few
    // tens of percent (Kimi-K3's 575-821 KB), and each growth was fresh pages for the parser's tape, strings
    // and indexes, written anew (seven growths on one thread over Kimi-K3's shards in order). Not beyond
    // 8 MB: the parser reserves about 14 bytes a byte of capacity, and a header of 100 MB is hostile.
    if (json.size() > parser.capacity() || json.size() > document.capacity()) {
        const std::size_t room = json.size() <= (std::size_t(8) << 20) ? json.size() + json.size() / 2 : json.size();
        if (parser.allocate(room) != simdjson::SUCCESS || document.allocate(room) != simdjson::SUCCESS)
            return std::nullopt;
        if (!spacesAfter) padded.reserve(room + simdjson::SIMDJSON_PADDING);
    }
    const char *text = json.data();
    if (!spacesAfter) {
        padded.resize(json.size() + simdjson::SIMDJSON_PADDING);
        std::memcpy(padded.data(), json.data(), json.size());
        std::memset(padded.data() + json.size(), ' ', simdjson::SIMDJSON_PADDING);
        text = padded.data();
    }
    simdjson::dom::element root;
    if (parser.parse_into_document(document, text, json.size(), false).get(root) != simdjson::SUCCESS)
        return std::nullopt;
    std::string buffer;
    h.viewsLast = true; // the document outlives the replay
    return replay(root, h, buffer);
}

} // namespace

ShardHeader parseShardHeader(std::string_view file, std::string_view json, std::uint64_t fileSize,
                             ListedNames *listed, std::size_t fastUpTo, bool spacesAfter)
{
    const bool fast = json.size() <= fastUpTo && fastReadable(json); // ASCII, so valid UTF-8
    if (!fast && !isValidUtf8(json)) fail(HeaderProblem::NotUtf8, file, "header is not valid UTF-8");
    if (json.empty() || json.front() != '{')
        fail(HeaderProblem::BadStart, file, "header does not start with '{'");

    ShardHeader out;
    out.file = std::string(file);
    out.headerLength = json.size();
    out.fileSize = fileSize;
    if (listed) { // usually exactly what the header holds
        out.tensors.reserve(listed->sorted.size());
        // Populated only as far as this header could hold (an entry takes 40 bytes of text at least): an index
        // that lists a million names for a shard of ten tensors makes no memory resident.
        const std::size_t fits = std::min(listed->sorted.size(), json.size() / 40);
        populateForWrite(out.tensors.data(), fits * sizeof(TensorInfo));
    }
    bool read = false;
    if (fast) {
        HeaderHandler handler(file, out, listed);
        if (const std::optional<bool> answered = readFast(json, handler, spacesAfter)) {
            if (!*answered) fail(HeaderProblem::NotJson, file, "header is not valid JSON");
            read = true;
            if (listed && handler.usedListed()) out.nameStores.push_back(listed->owner);
        }
    }
    if (!read) {
        HeaderHandler handler(file, out, listed);
        if (!parseJson(json, handler)) fail(HeaderProblem::NotJson, file, "header is not valid JSON");
        if (listed && handler.usedListed()) out.nameStores.push_back(listed->owner);
    }

    auto &ts = out.tensors;
    {
        // A name given twice: sorted views, neighbours compared (no set of strings per header). With
        // a list, only the names it lacks are left to compare (the listed ones were ticked off).
        std::vector<std::string_view> names;
        std::vector<std::string_view> &sorted = listed ? listed->unlisted : names;
        if (!listed) {
            names.reserve(ts.size());
            for (const auto &t : ts)
                names.push_back(t.name);
        }
        if (!std::is_sorted(sorted.begin(), sorted.end())) std::sort(sorted.begin(), sorted.end());
        for (std::size_t i = 1; i < sorted.size(); ++i)
            if (sorted[i] == sorted[i - 1])
                fail(HeaderProblem::DuplicateName, file, "tensor " + quote(sorted[i]) + " is listed twice");
    }
    const auto dataOrder = [](const TensorInfo &a, const TensorInfo &b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    };
    if (!std::is_sorted(ts.begin(), ts.end(), dataOrder)) std::stable_sort(ts.begin(), ts.end(), dataOrder);
    std::uint64_t cursor = 0;
    const TensorInfo *previous = nullptr;
    for (const auto &t : ts) {
        if (t.begin > cursor)
            fail(HeaderProblem::Gap, file,
                 "gap of " + std::to_string(t.begin - cursor) + " bytes before tensor " + quote(t.name) +
                     " (data offset " + std::to_string(cursor) + ")");
        if (t.begin < cursor)
            fail(HeaderProblem::Overlap, file,
                 "tensor " + quote(t.name) + " overlaps " +
                     (previous ? quote(previous->name) : std::string("?")) + " at data offset " +
                     std::to_string(t.begin));
        cursor = t.end;
        previous = &t;
    }
    const std::uint64_t dataSize = fileSize - 8 - json.size();
    if (cursor > dataSize)
        fail(HeaderProblem::Truncated, file,
             "file is truncated: tensor " + (previous ? quote(previous->name) : std::string()) +
                 " ends at data offset " + std::to_string(cursor) + " but the file holds " +
                 std::to_string(dataSize) + " data bytes");
    if (cursor < dataSize)
        fail(HeaderProblem::TrailingBytes, file,
             std::to_string(dataSize - cursor) + " bytes follow the last tensor (data ends at " +
                 std::to_string(cursor) + " of " + std::to_string(dataSize) + ")");
    return out;
}

} // namespace atlas
