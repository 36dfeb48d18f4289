#pragma once

// Text that came from a checkpoint or a server, made safe before anything trusts it: JSON documents
// checked before a DOM is built from them, and strings escaped before a terminal or a report sees them.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace atlas {

// The deepest nesting any JSON document a load reads may have (config.json, the Hub's answers).
// Published configs nest four or five levels; nlohmann copies, compares and prints a document
// recursively, so depth is bounded before one is built (200,000 levels overflowed the stack).
inline constexpr std::size_t kMaxJsonDepth = 512;

// Checks a JSON text before it is parsed into a DOM. Throws AtlasError(Invalid) naming `file` when
// objects and arrays nest deeper than kMaxJsonDepth. Python's json module writes and reads NaN,
// Infinity and -Infinity (transformers' configs may hold them); outside strings these become null,
// counted in *nonFinite, and the rewritten text is returned (nullopt when the text is unchanged).
std::optional<std::string> guardJsonText(std::string_view file, std::string_view text, std::size_t *nonFinite);

// The text with every control character (C0 but newline and tab, DEL, C1) and every byte that is not
// part of valid UTF-8 written as \xNN: what a terminal, a log or a JSON document may show verbatim.
// Valid UTF-8 in, the same UTF-8 out.
std::string printable(std::string_view text);

// True when a JSON writer cannot show the text safely by itself: it is not valid UTF-8, or it holds a
// C1 control (U+0080..U+009F, which some terminals obey as ESC sequences) or DEL. C0 controls are
// not counted: JSON escapes them (\u001b).
bool needsJsonEscape(std::string_view text);

// As printable, but newline and tab are escaped too: for one name or one header value on one line.
std::string printableLine(std::string_view text);

} // namespace atlas
