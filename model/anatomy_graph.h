#pragma once

// A layer's anatomy as a data graph (domain.md section 16): nodes that hold tensors or compute something,
// edges that follow the data as the engines run it (vLLM's modeling code, cited where each kind is wired
// in anatomy_graph.cpp), not the order boxes stand in on the page. `ckpt-atlas anatomy` prints it as
// ckpt-atlas.anatomy/1 JSON, Graphviz DOT or Mermaid.
#include "anatomy.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace atlas {

// The fixed vocabulary of what a node is.
enum class NodeRole { Input, Projection, Norm, Rope, Conv, Activation, Gate, State, Cache, Heads, Topk, Attention,
                      Router, Experts, Sum, Streams, Output, Embedding, HostTable };
std::string_view nodeRoleName(NodeRole r); // "projection", "norm", "rope", ...

struct AnatomyNode
{
    std::string id;    // unique in the layer: "kv_a_layernorm", "sparse_attention"
    std::string label; // the box's title
    NodeRole role = NodeRole::Projection;
    std::vector<std::string> tensors; // full names
    bool cached = false;
    std::string shapeOut; // the width it hands on, when known ("576")
    // Where its box stands in the LayerAnatomy: stage, column (-1: the stage's joined blocks), index.
    int stage = -1, column = -1, index = -1;
};

struct AnatomyEdge
{
    std::string from, to;
    std::string shape; // the source's shapeOut
};

struct AnatomyGraph
{
    int layer = 0;
    std::string kind; // the layer's mixer kind (layer_kinds' name)
    std::vector<AnatomyNode> nodes;
    std::vector<AnatomyEdge> edges;
    // What the arrows between the page's stages carry (the layer's input, the residual, an MTP block's
    // input, the hc_pre mixes): a box fed by one of these lists it nowhere else.
    std::vector<std::string> carried;
    const AnatomyNode *node(const std::string &id) const;
    AnatomyNode *node(const std::string &id);
    // The ids feeding `id`, in edge order.
    std::vector<std::string> inputsOf(const std::string &id) const;
};

AnatomyGraph anatomyGraph(const LoadedCheckpoint &data, int layer, AnatomyMode mode = AnatomyMode::Prefill);
// The graph of an anatomy already built (the view's, with its index).
AnatomyGraph anatomyGraph(const LoadedCheckpoint &data, const LayerAnatomy &anatomy, int layer);
// Writes the graph's inputs back onto the boxes, for a drawing that shows every edge (AnatomyBox::inputsElsewhere).
void annotateInputs(LayerAnatomy &anatomy, const AnatomyGraph &graph);

nlohmann::ordered_json anatomyJson(const AnatomyGraph &graph); // schema ckpt-atlas.anatomy/1
std::string anatomyDot(const AnatomyGraph &graph);
std::string anatomyMermaid(const AnatomyGraph &graph);

} // namespace atlas
