#include "module_pattern.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

namespace atlas {

namespace {

using CodeRanges = std::vector<std::pair<char32_t, char32_t>>;

// Text is read as UTF-8 code points, as Python reads a str; a byte that is not valid UTF-8 reads as
// kBadByte + its value, which only `.` and negated classes match.
constexpr char32_t kBadByte = 0x110000;
constexpr char32_t kLastCode = kBadByte + 0xFF;

struct Decoded
{
    char32_t code;
    std::size_t length;
};

Decoded decodeAt(std::string_view s, std::size_t i)
{
    const auto b0 = static_cast<unsigned char>(s[i]);
    if (b0 < 0x80) return {b0, 1};
    const Decoded bad{kBadByte + b0, 1};
    std::size_t length = 0;
    char32_t code = 0;
    char32_t least = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        length = 2, code = b0 & 0x1F, least = 0x80;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        length = 3, code = b0 & 0x0F, least = 0x800;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        length = 4, code = b0 & 0x07, least = 0x10000;
    } else {
        return bad;
    }
    if (s.size() - i < length) return bad;
    for (std::size_t k = 1; k < length; ++k) {
        const auto b = static_cast<unsigned char>(s[i + k]);
        if ((b & 0xC0) != 0x80) return bad;
        code = (code << 6) | (b & 0x3F);
    }
    if (code < least || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return bad;
    return {code, length};
}

CodeRanges normalized(CodeRanges r)
{
    std::sort(r.begin(), r.end());
    CodeRanges out;
    for (const auto &range : r)
        if (!out.empty() && range.first <= out.back().second + 1)
            out.back().second = std::max(out.back().second, range.second);
        else
            out.push_back(range);
    return out;
}

CodeRanges complement(const CodeRanges &normal)
{
    CodeRanges out;
    char32_t next = 0;
    for (const auto &[lo, hi] : normal) {
        if (lo > next) out.push_back({next, lo - 1});
        next = hi + 1;
    }
    if (next <= kLastCode) out.push_back({next, kLastCode});
    return out;
}

bool contains(const CodeRanges &normal, char32_t c)
{
    auto it = std::upper_bound(normal.begin(), normal.end(), c,
                               [](char32_t v, const auto &range) { return v < range.first; });
    return it != normal.begin() && c <= std::prev(it)->second;
}

// \d, \w and \s; nullptr for any other letter. \d and \w are ASCII (Python's are Unicode: module names
// are ASCII); \s is Python's whole set, which is small.
const CodeRanges *categoryOf(char letter)
{
    static const CodeRanges digits{{'0', '9'}};
    static const CodeRanges word{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
    static const CodeRanges space{{0x09, 0x0D},     {0x1C, 0x20},     {0x85, 0x85},     {0xA0, 0xA0},
                                  {0x1680, 0x1680}, {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F},
                                  {0x205F, 0x205F}, {0x3000, 0x3000}};
    static const CodeRanges notDigits = complement(digits);
    static const CodeRanges notWord = complement(word);
    static const CodeRanges notSpace = complement(space);
    switch (letter) {
    case 'd':
        return &digits;
    case 'D':
        return &notDigits;
    case 'w':
        return &word;
    case 'W':
        return &notWord;
    case 's':
        return &space;
    case 'S':
        return &notSpace;
    default:
        return nullptr;
    }
}

// The control escapes Python shares inside and outside classes (\b is one only inside a class).
int controlEscape(char letter)
{
    switch (letter) {
    case 'a':
        return 0x07;
    case 'f':
        return 0x0C;
    case 'n':
        return 0x0A;
    case 'r':
        return 0x0D;
    case 't':
        return 0x09;
    case 'v':
        return 0x0B;
    case '\\':
        return '\\';
    default:
        return -1;
    }
}

bool isOctal(int c)
{
    return c >= '0' && c <= '7';
}
bool isDigit(int c)
{
    return c >= '0' && c <= '9';
}
bool isAsciiLetter(int c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

// Why a pattern is refused: the rest of the sentence after the pattern's name.
struct Refusal
{
    std::string clause;
};

[[noreturn]] void unsupported(const std::string &what)
{
    throw Refusal{"uses " + what + ", which this program does not support"};
}

struct Node
{
    enum class Kind { Empty, Char, Set, Begin, End, EndOfText, Concat, Alternate, Repeat, Group };
    Kind kind = Kind::Empty;
    // Emits no instruction: so do all its copies, which are then not made (`(?:){9999}` costs nothing).
    bool empty = true;
    char32_t code = 0;   // Char
    std::size_t set = 0; // Set: index into the pattern's sets
    int min = 0;         // Repeat
    int max = 0;         // Repeat; -1: no bound
    std::vector<Node> children;

    static Node of(Kind kind)
    {
        Node n;
        n.kind = kind;
        n.empty = kind == Kind::Empty;
        return n;
    }
};

bool isAssertion(const Node &n)
{
    return n.kind == Node::Kind::Begin || n.kind == Node::Kind::End || n.kind == Node::Kind::EndOfText;
}

// Recursive descent, one level per nested group (capped at kMaxDepth); Python's grammar and its
// errors, in its words, so that what Python refuses is refused here too.
class Parser final
{
public:
    Parser(std::string_view pattern, std::vector<CodeRanges> &sets) : m_pattern(pattern), m_sets(sets) {}

    Node parse()
    {
        Node root = alternation(0);
        if (!atEnd()) invalid("unbalanced parenthesis", m_pos); // only a ')' ends a top-level alternation
        return root;
    }

private:
    struct Count
    {
        int min;
        int max; // -1: no bound
    };
    // One item of a class: a code point (which can start a range) or a category such as \d.
    struct ClassItem
    {
        char32_t code = 0;
        const CodeRanges *category = nullptr;
    };

    bool atEnd() const { return m_pos >= m_pattern.size(); }
    int peek(std::size_t ahead = 0) const
    {
        return m_pos + ahead < m_pattern.size() ? static_cast<unsigned char>(m_pattern[m_pos + ahead]) : -1;
    }

    // Python counts positions in code points.
    [[noreturn]] void invalid(const std::string &why, std::size_t at) const
    {
        std::size_t position = 0;
        for (std::size_t i = 0; i < at && i < m_pattern.size(); ++i)
            position += (static_cast<unsigned char>(m_pattern[i]) & 0xC0) != 0x80;
        throw Refusal{"is not a valid regular expression (" + why + " at position " +
                      std::to_string(position) + ")"};
    }

    Node setNode(CodeRanges ranges)
    {
        Node n = Node::of(Node::Kind::Set);
        n.set = m_sets.size();
        m_sets.push_back(std::move(ranges));
        return n;
    }
    static Node charNode(char32_t code)
    {
        Node n = Node::of(Node::Kind::Char);
        n.code = code;
        return n;
    }
    char32_t literalAt()
    {
        const Decoded d = decodeAt(m_pattern, m_pos);
        m_pos += d.length;
        return d.code;
    }

    Node alternation(int depth)
    {
        Node first = sequence(depth);
        if (peek() != '|') return first;
        Node alt = Node::of(Node::Kind::Alternate);
        alt.children.push_back(std::move(first));
        while (peek() == '|') {
            ++m_pos;
            alt.children.push_back(sequence(depth));
        }
        return alt;
    }

    Node sequence(int depth)
    {
        Node seq = Node::of(Node::Kind::Concat);
        while (!atEnd() && peek() != '|' && peek() != ')') {
            const std::size_t at = m_pos;
            const std::optional<Count> count = quantifier();
            if (!count) {
                seq.children.push_back(atom(depth));
                continue;
            }
            if (seq.children.empty() || isAssertion(seq.children.back())) invalid("nothing to repeat", at);
            if (seq.children.back().kind == Node::Kind::Repeat) invalid("multiple repeat", at);
            if (peek() == '+')
                unsupported("a possessive quantifier '" + std::string(m_pattern.substr(at, m_pos + 1 - at)) +
                            "'");
            if (peek() == '?') ++m_pos; // lazy: the same yes or no
            Node repeat = Node::of(Node::Kind::Repeat);
            repeat.min = count->min;
            repeat.max = count->max;
            repeat.empty = seq.children.back().empty;
            repeat.children.push_back(std::move(seq.children.back()));
            seq.children.back() = std::move(repeat);
        }
        seq.empty =
            std::all_of(seq.children.begin(), seq.children.end(), [](const Node &n) { return n.empty; });
        return seq;
    }

    // `*`, `+`, `?` or a well-formed `{...}` (anything else from `{` is a literal, as in Python).
    std::optional<Count> quantifier()
    {
        const int c = peek();
        if (c == '*' || c == '+' || c == '?') {
            ++m_pos;
            return c == '*' ? Count{0, -1} : c == '+' ? Count{1, -1} : Count{0, 1};
        }
        if (c != '{' || peek(1) == '}') return std::nullopt;
        const std::size_t open = m_pos;
        std::size_t at = m_pos + 1;
        auto digits = [&] {
            const std::size_t from = at;
            while (at < m_pattern.size() && isDigit(static_cast<unsigned char>(m_pattern[at])))
                ++at;
            return m_pattern.substr(from, at - from);
        };
        const std::string_view lo = digits();
        std::string_view hi = lo;
        bool comma = false;
        if (at < m_pattern.size() && m_pattern[at] == ',') {
            ++at;
            comma = true;
            hi = digits();
        }
        if (at >= m_pattern.size() || m_pattern[at] != '}') return std::nullopt;
        m_pos = at + 1;
        // Copies past kMaxStates could never fit; the digits are not read further than that.
        auto value = [&](std::string_view d) {
            int v = 0;
            for (char ch : d) {
                v = v * 10 + (ch - '0');
                if (v > static_cast<int>(ModulePattern::kMaxStates))
                    throw Refusal{"repeats something " + std::string(d) + " times, more than the " +
                                  std::to_string(ModulePattern::kMaxStates) + " copies this program expands"};
            }
            return v;
        };
        const Count count{lo.empty() ? 0 : value(lo), hi.empty() ? (comma ? -1 : 0) : value(hi)};
        if (count.max >= 0 && count.max < count.min) invalid("min repeat greater than max repeat", open + 1);
        return count;
    }

    Node atom(int depth)
    {
        switch (peek()) {
        case '(':
            return group(depth);
        case '[':
            return charClass();
        case '.':
            ++m_pos;
            return setNode(complement({{'\n', '\n'}}));
        case '^':
            ++m_pos;
            return Node::of(Node::Kind::Begin);
        case '$':
            ++m_pos;
            return Node::of(Node::Kind::End);
        case '\\':
            return escape();
        default:
            return charNode(literalAt());
        }
    }

    Node group(int depth)
    {
        const std::size_t open = m_pos++;
        if (depth >= ModulePattern::kMaxDepth)
            throw Refusal{"nests groups more than " + std::to_string(ModulePattern::kMaxDepth) +
                          " deep, more than this program reads"};
        if (peek() == '?') {
            const int kind = peek(1);
            const int next = peek(2);
            if (kind == ':') {
                m_pos += 2;
            } else if (kind == '=' || kind == '!') {
                unsupported(std::string("a lookahead '(?") + static_cast<char>(kind) + "'");
            } else if (kind == '<' && (next == '=' || next == '!')) {
                unsupported(std::string("a lookbehind '(?<") + static_cast<char>(next) + "'");
            } else if (kind == '<' || (kind == 'P' && next == '<')) {
                unsupported(kind == '<' ? "a named group '(?<'" : "a named group '(?P<'");
            } else if (kind == 'P' && next == '=') {
                unsupported("a backreference '(?P='");
            } else if (kind == '>') {
                unsupported("an atomic group '(?>'");
            } else if (kind == '(') {
                unsupported("a conditional group '(?('");
            } else if (kind == '#') {
                unsupported("a comment '(?#'");
            } else if (kind == '-' || (kind >= 0 && std::string_view("aiLmsux").find(
                                                        static_cast<char>(kind)) != std::string_view::npos)) {
                unsupported(std::string("inline flags '(?") + static_cast<char>(kind) + "'");
            } else if (kind < 0) {
                invalid("unexpected end of pattern", m_pos + 1);
            } else {
                invalid("unknown extension ?" + std::string(1, static_cast<char>(kind)), m_pos);
            }
        }
        Node inner = alternation(depth + 1);
        if (peek() != ')') invalid("missing ), unterminated subpattern", open);
        ++m_pos;
        Node g = Node::of(Node::Kind::Group);
        g.empty = inner.empty;
        g.children.push_back(std::move(inner));
        return g;
    }

    // Hex digits after \x, \u or \U: exactly `count` of them, as Python wants.
    char32_t hexEscape(std::size_t at, int count)
    {
        char32_t v = 0;
        for (int i = 0; i < count; ++i) {
            const int c = peek();
            const int d = isDigit(c)             ? c - '0'
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                 : -1;
            if (d < 0) invalid("incomplete escape " + std::string(m_pattern.substr(at, m_pos - at)), at);
            v = v * 16 + static_cast<char32_t>(d);
            ++m_pos;
        }
        if (v > 0x10FFFF) invalid("bad escape " + std::string(m_pattern.substr(at, m_pos - at)), at);
        return v;
    }

    // Up to `more` further octal digits after the one at m_pos - 1.
    char32_t octalEscape(std::size_t at, int more)
    {
        char32_t v = static_cast<char32_t>(m_pattern[m_pos - 1] - '0');
        for (int i = 0; i < more && isOctal(peek()); ++i)
            v = v * 8 + static_cast<char32_t>(m_pattern[m_pos++] - '0');
        if (v > 0377)
            invalid("octal escape value " + std::string(m_pattern.substr(at, m_pos - at)) +
                        " outside of range 0-0o377",
                    at);
        return v;
    }

    Node escape()
    {
        const std::size_t at = m_pos++;
        if (atEnd()) invalid("bad escape (end of pattern)", at);
        const char c = m_pattern[m_pos];
        if (const CodeRanges *category = categoryOf(c)) {
            ++m_pos;
            return setNode(*category);
        }
        if (const int control = controlEscape(c); control >= 0) {
            ++m_pos;
            return charNode(static_cast<char32_t>(control));
        }
        switch (c) {
        case 'A':
            ++m_pos;
            return Node::of(Node::Kind::Begin);
        case 'Z':
            ++m_pos;
            return Node::of(Node::Kind::EndOfText);
        case 'b':
        case 'B':
            unsupported(std::string("a word boundary '\\") + c + "'");
        case 'x':
            ++m_pos;
            return charNode(hexEscape(at, 2));
        case 'u':
            ++m_pos;
            return charNode(hexEscape(at, 4));
        case 'U':
            ++m_pos;
            return charNode(hexEscape(at, 8));
        case 'N':
            unsupported("a named character '\\N'");
        case '0':
            ++m_pos;
            return charNode(octalEscape(at, 2));
        default:
            break;
        }
        if (isDigit(static_cast<unsigned char>(c))) {
            // Three octal digits are a character; any other digits name a group.
            if (isOctal(static_cast<unsigned char>(c)) && isOctal(peek(1)) && isOctal(peek(2))) {
                ++m_pos;
                return charNode(octalEscape(at, 2));
            }
            std::size_t end = m_pos + 1;
            if (end < m_pattern.size() && isDigit(static_cast<unsigned char>(m_pattern[end]))) ++end;
            unsupported("a backreference '" + std::string(m_pattern.substr(at, end - at)) + "'");
        }
        if (isAsciiLetter(static_cast<unsigned char>(c))) invalid(std::string("bad escape \\") + c, at);
        return charNode(literalAt());
    }

    ClassItem classItem()
    {
        if (peek() != '\\') return {literalAt()};
        const std::size_t at = m_pos++;
        if (atEnd()) invalid("bad escape (end of pattern)", at);
        const char c = m_pattern[m_pos];
        if (const CodeRanges *category = categoryOf(c)) {
            ++m_pos;
            return {0, category};
        }
        if (const int control = controlEscape(c); control >= 0) {
            ++m_pos;
            return {static_cast<char32_t>(control)};
        }
        switch (c) {
        case 'b':
            ++m_pos;
            return {0x08};
        case 'x':
            ++m_pos;
            return {hexEscape(at, 2)};
        case 'u':
            ++m_pos;
            return {hexEscape(at, 4)};
        case 'U':
            ++m_pos;
            return {hexEscape(at, 8)};
        case 'N':
            unsupported("a named character '\\N'");
        default:
            break;
        }
        if (isOctal(static_cast<unsigned char>(c))) {
            ++m_pos;
            return {octalEscape(at, 2)};
        }
        if (isDigit(static_cast<unsigned char>(c)) || isAsciiLetter(static_cast<unsigned char>(c)))
            invalid(std::string("bad escape \\") + c, at);
        return {literalAt()};
    }

    Node charClass()
    {
        const std::size_t open = m_pos++;
        const bool negate = peek() == '^';
        if (negate) ++m_pos;
        const std::size_t start = m_pos;
        CodeRanges ranges;
        auto add = [&](const ClassItem &item) {
            if (item.category)
                ranges.insert(ranges.end(), item.category->begin(), item.category->end());
            else
                ranges.push_back({item.code, item.code});
        };
        for (;;) {
            if (atEnd()) invalid("unterminated character set", open);
            if (peek() == ']' && m_pos != start) { // a ']' first is a member
                ++m_pos;
                break;
            }
            const std::size_t itemAt = m_pos;
            const ClassItem first = classItem();
            if (peek() != '-') {
                add(first);
                continue;
            }
            ++m_pos;
            if (atEnd()) invalid("unterminated character set", open);
            if (peek() == ']') { // "a-]": the '-' is a member
                ++m_pos;
                add(first);
                ranges.push_back({'-', '-'});
                break;
            }
            const ClassItem last = classItem();
            if (first.category || last.category || last.code < first.code)
                invalid("bad character range " + std::string(m_pattern.substr(itemAt, m_pos - itemAt)),
                        itemAt);
            ranges.push_back({first.code, last.code});
        }
        ranges = normalized(std::move(ranges));
        return setNode(negate ? complement(ranges) : std::move(ranges));
    }

    std::string_view m_pattern;
    std::size_t m_pos = 0;
    std::vector<CodeRanges> &m_sets;
};

} // namespace

// Lays the parsed pattern out as a program (Thompson's construction, Russ Cox's VM form). Counted
// repeats become copies, so the program is where a pattern's size shows: refused past kMaxStates.
class ModulePatternBuilder final
{
public:
    explicit ModulePatternBuilder(ModulePattern &out) : m_program(out.m_program) {}

    void build(const Node &root)
    {
        emit(root);
        push({Op::Match});
    }

private:
    using Op = ModulePattern::Op;

    std::uint32_t here() const { return static_cast<std::uint32_t>(m_program.size()); }
    void push(ModulePattern::Instruction i)
    {
        if (m_program.size() >= ModulePattern::kMaxStates)
            throw Refusal{"expands to more than " + std::to_string(ModulePattern::kMaxStates) +
                          " states (counted repeats are copied out), more than this program matches"};
        m_program.push_back(i);
    }

    void emit(const Node &n)
    {
        if (n.empty) return;
        switch (n.kind) {
        case Node::Kind::Empty:
            return;
        case Node::Kind::Char:
            push({Op::Char, static_cast<std::uint32_t>(n.code)});
            return;
        case Node::Kind::Set:
            push({Op::Set, static_cast<std::uint32_t>(n.set)});
            return;
        case Node::Kind::Begin:
            push({Op::Begin});
            return;
        case Node::Kind::End:
            push({Op::End});
            return;
        case Node::Kind::EndOfText:
            push({Op::EndOfText});
            return;
        case Node::Kind::Group:
            emit(n.children.front());
            return;
        case Node::Kind::Concat:
            for (const Node &child : n.children)
                emit(child);
            return;
        case Node::Kind::Alternate:
            alternate(n);
            return;
        case Node::Kind::Repeat:
            repeat(n);
            return;
        }
    }

    // split L1, next; L1: branch; jump end; next: split ... ; the last branch falls through to end.
    void alternate(const Node &n)
    {
        std::vector<std::uint32_t> exits;
        for (std::size_t i = 0; i + 1 < n.children.size(); ++i) {
            const std::uint32_t split = here();
            push({Op::Split, split + 1, 0});
            emit(n.children[i]);
            exits.push_back(here());
            push({Op::Jump});
            m_program[split].y = here();
        }
        emit(n.children.back());
        for (std::uint32_t e : exits)
            m_program[e].x = here();
    }

    // x{n,m}: n copies, then m - n optional ones that all skip to the end; x{n,}: n - 1 copies and x+.
    void repeat(const Node &n)
    {
        const Node &body = n.children.front();
        if (n.max < 0) {
            for (int i = 1; i < n.min; ++i)
                emit(body);
            const std::uint32_t loop = here();
            if (n.min >= 1) {
                emit(body);
                push({Op::Split, loop, here() + 1});
            } else {
                push({Op::Split, loop + 1, 0});
                emit(body);
                push({Op::Jump, loop});
                m_program[loop].y = here();
            }
            return;
        }
        for (int i = 0; i < n.min; ++i)
            emit(body);
        std::vector<std::uint32_t> skips;
        for (int i = n.min; i < n.max; ++i) {
            skips.push_back(here());
            push({Op::Split, here() + 1, 0});
            emit(body);
        }
        for (std::uint32_t s : skips)
            m_program[s].y = here();
    }

    std::vector<ModulePattern::Instruction> &m_program;
};

std::variant<ModulePattern, std::string> ModulePattern::compile(std::string_view pattern,
                                                                std::string_view subject)
{
    try {
        ModulePattern compiled;
        const Node root = Parser(pattern, compiled.m_sets).parse();
        ModulePatternBuilder(compiled).build(root);
        return compiled;
    } catch (const Refusal &r) {
        return std::string(subject) + " " + r.clause;
    }
}

std::variant<ModulePattern, std::string> ModulePattern::compile(std::string_view pattern)
{
    return compile(pattern, "the pattern '" + std::string(pattern) + "'");
}

// One pass over the text with the set of states that can read the next character: each state is
// entered at most once per position (the `seen` mark), so the time is O(states x text) and loops
// that read nothing, such as (a*)*, end.
bool ModulePattern::run(std::string_view text, bool whole) const
{
    const std::size_t size = text.size();
    std::vector<std::uint32_t> current;
    std::vector<std::uint32_t> next;
    std::vector<std::uint32_t> stack; // explicit: no recursion however the program loops
    std::vector<std::size_t> seen(m_program.size(), std::numeric_limits<std::size_t>::max());

    // Adds to `list` the reading states reachable from pc at byte offset pos without reading; true when
    // Match is reached where a match counts.
    auto follow = [&](std::vector<std::uint32_t> &list, std::uint32_t pc, std::size_t pos) {
        stack.push_back(pc);
        while (!stack.empty()) {
            const std::uint32_t at = stack.back();
            stack.pop_back();
            if (seen[at] == pos) continue;
            seen[at] = pos;
            const Instruction &in = m_program[at];
            switch (in.op) {
            case Op::Char:
            case Op::Set:
                list.push_back(at);
                break;
            case Op::Split:
                stack.push_back(in.y);
                stack.push_back(in.x);
                break;
            case Op::Jump:
                stack.push_back(in.x);
                break;
            case Op::Begin:
                if (pos == 0) stack.push_back(at + 1);
                break;
            case Op::End: // Python's $: the end, or just before a newline that ends the text
                if (pos == size || (pos + 1 == size && text[pos] == '\n')) stack.push_back(at + 1);
                break;
            case Op::EndOfText:
                if (pos == size) stack.push_back(at + 1);
                break;
            case Op::Match:
                if (!whole || pos == size) {
                    stack.clear();
                    return true;
                }
                break;
            }
        }
        return false;
    };

    if (follow(current, 0, 0)) return true;
    for (std::size_t pos = 0; pos < size && !current.empty();) {
        const Decoded d = decodeAt(text, pos);
        next.clear();
        for (std::uint32_t pc : current) {
            const Instruction &in = m_program[pc];
            const bool reads = in.op == Op::Char ? in.x == d.code : contains(m_sets[in.x], d.code);
            if (reads && follow(next, pc + 1, pos + d.length)) return true;
        }
        std::swap(current, next);
        pos += d.length;
    }
    return false;
}

} // namespace atlas
