#pragma once

#include "loaded_checkpoint.h"

#include <cstdint>
#include <string>
#include <vector>

namespace atlas {

// The architecture drawn from the headers: the layer stack, and one layer as a block diagram whose
// every dimension is read from tensor shapes (config.json only as a fallback, and then marked).

enum class BoxKind { Input, Linear, Norm, Latent, Heads, Attention, Indexer, Router, Experts, Note };

struct AnatomyBox
{
    BoxKind kind = BoxKind::Linear;
    std::string title;                // "q_a_proj"
    std::string detail;               // "6,144 → 2,048"
    std::vector<std::string> tensors; // the tensors it stands for, by full name
    std::uint64_t parameters = 0;     // logical parameters (scales excluded)
    std::string dtypes;               // "F8_E4M3 + F32 scales"
    bool fromConfig = false;          // a dimension came from config.json, not from a shape
    bool cached = false;              // what the KV or index-key cache keeps
    std::string cacheNote;            // "1,152 B/token (BF16)"
    bool skipped = false;             // a block this layer does not run (IndexShare), drawn greyed
    std::string from;                 // an input from outside the layer ("layer 4's top-k"), drawn as an arrow
    // Filled from the layer's data graph (annotateInputs): the blocks feeding this one that are not the
    // one drawn just above it, by title, and whether the one above feeds it at all.
    std::vector<std::string> inputsElsewhere;
    bool fedFromAbove = true;
};

// MLA computes attention two ways: at prefill K and V are expanded per head from the latent; at decode
// kv_b_proj is absorbed (its K half into the query, its V half after attention) and the queries attend
// to the cached latent itself, as one shared head.
enum class AnatomyMode { Prefill, Decode };

// Boxes drawn top to bottom, each feeding the next.
struct AnatomyColumn
{
    std::string title;
    std::vector<AnatomyBox> boxes;
};

// Columns side by side (parallel paths), then the boxes they join into, full width, in order.
struct AnatomyStage
{
    std::string title;
    std::vector<AnatomyColumn> columns;
    std::vector<AnatomyBox> join;
};

struct LayerAnatomy
{
    int layer = -1;
    std::string heading; // "Layer 5 · MoE · MLA · indexer shared (reuses layer 4)"
    std::vector<AnatomyStage> stages;
    std::vector<std::string> notes;
    std::vector<std::string> unplaced; // tensors of the layer no box stands for
};

std::string_view layerAttentionName(LayerAttention a); // "MLA", "GQA", "sliding", "linear", "none", "compressed"

// A run of consecutive layers of one kind (dense, MoE, MTP); attention and indexer roles per layer,
// so that alternating patterns (sliding / full, full / shared indexers) stay inside one run.
struct StackRun
{
    int first = 0, last = 0;
    LayerKind kind = LayerKind::Dense;
    std::vector<LayerAttention> attention; // per layer of the run
    std::vector<IndexerRole> indexer;      // per layer of the run
    std::vector<int> reuses;          // per layer: the full layer a shared one borrows from, or -1
    std::vector<std::int64_t> compression; // per layer: DeepSeek-V4's tokens per compressed row (0: window only; -1: n/a)
    int count() const { return last - first + 1; }
};

std::vector<StackRun> layerStack(const LoadedCheckpoint &data);

// Each layer's tensors, in one pass over the names (pointers into `data`, valid while it lives).
using TensorsByLayer = std::vector<std::vector<const TensorInfo *>>;
TensorsByLayer tensorsByLayer(const LoadedCheckpoint &data);

// One layer's block diagram. Throws nothing: what cannot be placed is listed in `unplaced`. With
// `index` (tensorsByLayer of the same data) only that layer's tensors are read.
LayerAnatomy layerAnatomy(const LoadedCheckpoint &data, int layer, const TensorsByLayer *index = nullptr,
                          AnatomyMode mode = AnatomyMode::Prefill);

} // namespace atlas
