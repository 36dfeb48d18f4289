#pragma once

#include "analysis.h"

#include <optional>
#include <span>
#include <string_view>

namespace atlas {

// Which role a tensor plays, from one declarative table (style.md: knowledge as data). Each row names
// the family its naming comes from; tst_roles checks the table row by row, and adding a family adds
// rows here, not branches in analyze().

enum class RoleScope {
    Layer,   // matched against the name after "layers.N." (segment 0, segment 1, the ending)
    Outside, // matched against the last module of a name that is in no decoder layer
};

struct RoleRow
{
    RoleScope scope;
    std::string_view first;  // segment 0 (Layer) or the module (Outside): "" any, "x*" prefix, "*x" suffix
    std::string_view second; // segment 1 (Layer only), the same patterns
    std::string_view ending; // the name must end with this (empty: any)
    Category category;
    std::string_view family; // where the naming comes from
};

// A segment that puts a whole tensor in a vision or audio encoder (or its projector).
struct EncoderRow
{
    std::string_view segment; // "x*" prefix, or equal
    std::string_view family;
};

std::span<const RoleRow> roleTable();
// The row of roleTable() that decides a name (after "layers.N." for a layer name), or -1.
int decidingRow(std::string_view name, RoleScope scope);
std::span<const EncoderRow> encoderTable();

// Names whose layer numbers are not decoder layers: an encoder's (any segment from encoderTable()) or
// an MTP block outside "layers.N." (mtp.*, model.mtp.*). Checked before a name is placed in a layer.
std::optional<Category> outsideLayersRole(std::string_view name);

// An MTP block outside "layers.N.": "mtp.N.*" (DeepSeek-V4), "mtp.layers.N.*" (Qwen3-Next),
// "model.mtp.layers.N.*": the block's number (layer) and the name inside it (rest). vLLM places
// block N after the decoder layers (num_hidden_layers + N); so does the analysis.
std::optional<TensorPlace> mtpBlockPlace(std::string_view name);

// The role of a name in no decoder layer (embedding and head, final norms, hyper-connection heads).
Category outsideRole(std::string_view name);

} // namespace atlas
