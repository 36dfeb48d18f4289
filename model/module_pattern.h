#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace atlas {

class ModulePatternBuilder;

// A regular expression over module names, in the subset of Python's `re` that quantization tools write
// in compressed-tensors "re:" targets: literals and escapes, `.`, classes, groups, `|`, `* + ?` (lazy or
// not: a yes/no answer is the same), `{n} {n,} {,m} {n,m}`, `^ $ \A \Z`. Its answers are Python's, with
// one difference: `\d` and `\w` are ASCII (module names are). A config comes from the file being read,
// so the pattern is simulated as an NFA (Pike VM: one set of states per character, no backtracking):
// O(states x text) time whatever the pattern, no recursion per character, at most kMaxStates states.
class ModulePattern final
{
public:
    static constexpr std::size_t kMaxStates = 10'000; // counted repeats are expanded into copies
    static constexpr int kMaxDepth = 200;             // nested groups: the parser recurses per level

    // The compiled pattern, or why it is refused: one sentence that begins with `subject`, the caller's
    // name for the pattern ("the quantization target 're:(?=x)'"). Refused: what Python refuses (in
    // Python's words), what a set of states cannot answer (backreferences, lookarounds, word boundaries,
    // atomic groups, possessive quantifiers), what would change the rules midway (inline flags), named
    // groups, conditionals, comments, and patterns beyond kMaxStates or kMaxDepth.
    static std::variant<ModulePattern, std::string> compile(std::string_view pattern,
                                                            std::string_view subject);
    // The same, the sentence beginning "the pattern '<pattern>'".
    static std::variant<ModulePattern, std::string> compile(std::string_view pattern);

    // Python's re.match: the pattern matches a prefix of the text (the rest is free).
    bool matchesPrefix(std::string_view text) const { return run(text, false); }
    // Python's re.fullmatch: the pattern matches the whole text.
    bool matchesWhole(std::string_view text) const { return run(text, true); }

    std::size_t states() const { return m_program.size(); }

private:
    friend class ModulePatternBuilder;
    using CodeRanges = std::vector<std::pair<char32_t, char32_t>>; // sorted, disjoint, inclusive

    enum class Op : std::uint8_t {
        Char,      // x: the code point
        Set,       // x: index into m_sets
        Split,     // to x and to y
        Jump,      // to x
        Begin,     // ^ and \A
        End,       // $: the end, or before a newline that ends the text
        EndOfText, // \Z
        Match,
    };
    struct Instruction
    {
        Op op;
        std::uint32_t x = 0;
        std::uint32_t y = 0;
    };

    ModulePattern() = default;
    bool run(std::string_view text, bool whole) const;

    std::vector<Instruction> m_program; // starts at 0
    std::vector<CodeRanges> m_sets;
};

} // namespace atlas
