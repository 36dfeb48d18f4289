#pragma once

// One table of the ways a layer mixes its tokens, a row per kind: every view and formula asks the row,
// never a tensor name or a schedule word again. A layer's kind is decided once, in analyze(), from the
// schedule and the tensors together (LayerInfo::mixer).
#include <string_view>
#include <vector>

namespace atlas {

enum class MixerKind {
    Full,              // softmax attention over every cached token: GQA / MQA / MHA
    Sliding,           // the same, over the last sliding_window tokens
    Mla,               // multi-head latent attention (DeepSeek, GLM, Kimi): a latent per token
    Kda,               // Kimi Delta Attention: a recurrent state per sequence
    GatedDeltaNet,     // Qwen3-Next
    Mamba2,            // Nemotron-H
    Linear,            // a recurrent mixer the config does not size
    Window,            // DeepSeek-V4, compress ratio 0: the window only
    CompressedSparse,  // DeepSeek-V4, ratio 4: window + compressed rows + an indexer over them
    HeavilyCompressed, // DeepSeek-V4, ratio 128: window + compressed rows
    None,              // no token mixing (the schedule says so)
};

// How a layer's tokens attend, as the Anatomy draws it (a stage per shape).
// Compressed: DeepSeek-V4's window + compressed rows (the ratio per layer in StackRun::compression).
enum class LayerAttention { Mla, Gqa, Sliding, Linear, None, Compressed };

// How tensor parallelism divides a kind's cache on each GPU.
enum class TpCacheSplit {
    KvHeads,    // K and V by KV heads, at least one per GPU
    Replicated, // one latent or one shared K=V head: every rank keeps it whole
    Heads,      // a recurrent state by heads
    None,       // nothing cached
};

struct MixerKindRow
{
    MixerKind kind;
    std::string_view name;         // "full_attention": the report's word (layers[].mixer)
    std::string_view words;        // the schedule words (layer_types, ...) that mean it, comma-separated
    std::string_view label;        // "full attention": what a view prints
    std::string_view tone;         // the colour token a view paints it with (widgets/colours)
    bool recurrent;                // a fixed state per sequence instead of rows per token
    bool growsWithContext;         // rows that grow with every token, without end
    TpCacheSplit tpCache;          // how TP divides what it caches
    std::string_view cacheFormula; // the arithmetic cache_budget.cpp does for it, in words
    LayerAttention anatomy;        // the stage the Anatomy draws
};

const std::vector<MixerKindRow> &mixerKinds();
const MixerKindRow &mixerKind(MixerKind kind);
inline bool isRecurrent(MixerKind kind) { return mixerKind(kind).recurrent; }
// The kind a schedule's word for a layer names (layer_types and the families' own schedules, as
// ModelConfig::layerTypes holds them), by the rows' words; nullptr for a word no row claims.
const MixerKindRow *mixerKindOfWord(std::string_view word);
// "linear_attention", "mamba", ...: a word whose row is recurrent.
bool isRecurrentWord(std::string_view word);

} // namespace atlas
