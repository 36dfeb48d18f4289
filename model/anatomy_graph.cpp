#include "anatomy_graph.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>
#include <utility>

namespace atlas {

std::string_view nodeRoleName(NodeRole r)
{
    switch (r) {
    case NodeRole::Input: return "input";
    case NodeRole::Projection: return "projection";
    case NodeRole::Norm: return "norm";
    case NodeRole::Rope: return "rope";
    case NodeRole::Conv: return "conv";
    case NodeRole::Activation: return "activation";
    case NodeRole::Gate: return "gate";
    case NodeRole::State: return "state";
    case NodeRole::Cache: return "cache";
    case NodeRole::HostTable: return "host_table";
    case NodeRole::Heads: return "heads";
    case NodeRole::Topk: return "topk";
    case NodeRole::Attention: return "attention";
    case NodeRole::Router: return "router";
    case NodeRole::Experts: return "experts";
    case NodeRole::Sum: return "sum";
    case NodeRole::Streams: return "streams";
    case NodeRole::Embedding: return "embedding";
    case NodeRole::Output: return "output";
    }
    return "projection";
}

const AnatomyNode *AnatomyGraph::node(const std::string &id) const
{
    for (const auto &n : nodes)
        if (n.id == id) return &n;
    return nullptr;
}

AnatomyNode *AnatomyGraph::node(const std::string &id)
{
    return const_cast<AnatomyNode *>(std::as_const(*this).node(id));
}

std::vector<std::string> AnatomyGraph::inputsOf(const std::string &id) const
{
    std::vector<std::string> out;
    for (const auto &e : edges)
        if (e.to == id) out.push_back(e.from);
    return out;
}

namespace {

constexpr const char *kIn = "hidden_in";       // the layer's input, after input_layernorm
constexpr const char *kResidual = "residual";  // attention output + the residual stream, before the FFN
constexpr const char *kOut = "hidden_out";     // the layer's output
constexpr const char *kHcPostFfn = "hc_post_ffn"; // mHC: the MLP output written back into the streams

std::string slug(const std::string &title)
{
    std::string s;
    for (unsigned char c : title) {
        if (std::isalnum(c))
            s += static_cast<char>(std::tolower(c));
        else if (!s.empty() && s.back() != '_')
            s += '_';
    }
    while (!s.empty() && s.back() == '_')
        s.pop_back();
    return s.empty() ? "node" : s;
}

// The width after the last "→" of a box's detail ("2,304 → 4,096" → "4096").
std::string shapeOut(const std::string &detail)
{
    const auto arrow = detail.rfind("→");
    if (arrow == std::string::npos) return {};
    std::string digits;
    for (std::size_t i = arrow + std::string("→").size(); i < detail.size(); ++i) {
        const char c = detail[i];
        if (std::isdigit(static_cast<unsigned char>(c)))
            digits += c;
        else if (c == ',' || (c == ' ' && digits.empty()))
            continue;
        else
            break;
    }
    return digits;
}

NodeRole roleOf(const AnatomyBox &b, bool streams)
{
    const std::string &t = b.title;
    const auto has = [&](const char *s) { return t.find(s) != std::string::npos; };
    if (streams) return NodeRole::Streams;
    switch (b.kind) {
    case BoxKind::Input: return NodeRole::Input;
    case BoxKind::Linear: return has("conv") ? NodeRole::Conv : has("sigmoid") ? NodeRole::Gate : NodeRole::Projection;
    case BoxKind::Norm: return NodeRole::Norm;
    case BoxKind::Latent:
        return has("host memory") ? NodeRole::HostTable : has("state") ? NodeRole::State : b.cached ? NodeRole::Cache : NodeRole::Heads;
    case BoxKind::Heads:
        return has("rotary") ? NodeRole::Rope : has("SiLU") ? NodeRole::Activation : NodeRole::Heads;
    case BoxKind::Attention: return NodeRole::Attention;
    case BoxKind::Indexer:
        return has("top-k") || has("IndexShare") ? NodeRole::Topk
               : has("pooling")                  ? NodeRole::Conv
               : has("norm")                     ? NodeRole::Norm
                                                 : NodeRole::Projection;
    case BoxKind::Router: return NodeRole::Router;
    case BoxKind::Experts: return NodeRole::Experts;
    case BoxKind::Note: return NodeRole::Sum;
    }
    return NodeRole::Projection;
}

class Builder
{
public:
    AnatomyGraph g;

    void node(AnatomyNode n)
    {
        std::string id = n.id;
        for (int k = 2; taken.count(id); ++k)
            id = n.id + "_" + std::to_string(k);
        taken.insert(id);
        n.id = id;
        if (!byTitle.count(n.label)) byTitle[n.label] = id;
        g.nodes.push_back(std::move(n));
    }
    std::string idOf(const std::string &title) const
    {
        auto it = byTitle.find(title);
        return it == byTitle.end() ? std::string() : it->second;
    }
    // The inputs of a node, replacing what the layout would have given it.
    void wire(const std::string &title, const std::vector<std::string> &fromTitlesOrIds)
    {
        wireId(idOf(title), fromTitlesOrIds);
    }
    void wireId(const std::string &to, const std::vector<std::string> &fromTitlesOrIds)
    {
        if (to.empty() || !taken.count(to)) return;
        std::vector<std::string> from;
        for (const auto &f : fromTitlesOrIds) {
            std::string id = taken.count(f) ? f : idOf(f);
            if (!id.empty() && id != to && std::find(from.begin(), from.end(), id) == from.end()) from.push_back(id);
        }
        if (!from.empty()) inputs[to] = from; // a source this layer lacks leaves the page's wiring
    }
    std::map<std::string, std::vector<std::string>> inputs; // node id → input ids
    std::set<std::string> taken;
    std::map<std::string, std::string> byTitle;
};

} // namespace

AnatomyGraph anatomyGraph(const LoadedCheckpoint &data, int layer, AnatomyMode mode)
{
    return anatomyGraph(data, layerAnatomy(data, layer, nullptr, mode), layer);
}

AnatomyGraph anatomyGraph(const LoadedCheckpoint &data, const LayerAnatomy &a, int layer)
{
    const LayerInfo &info = data.analysis.layers[static_cast<std::size_t>(layer)];
    Builder b;
    b.g.layer = layer;
    b.g.kind = std::string(mixerKind(info.mixer).name);
    b.node({kIn, "the layer's input (after input_layernorm)", NodeRole::Input, {}, false, {}});

    // 1. Nodes, with the wiring the page gives them: each column a chain from the stage's input, the
    //    stage's joined blocks after its columns, each stage fed by the one before.
    std::string stageInput = kIn;
    bool ffnSeen = false;
    std::set<std::string> mtpInputNodes; // the MTP block's input stage (enorm, hnorm, eh_proj, ...)
    std::set<std::string> ngramNodes;    // a host-resident n-gram memory's stage (Engram)
    std::string mtpIn, headFirst;        // its last block; the first of its head
    std::size_t headNodes = 0;           // where the head's nodes start
    for (const AnatomyStage &stage : a.stages) {
        const bool head = stage.title == "Multi-token prediction head";
        const std::size_t stageStart = b.g.nodes.size();
        if (head) headNodes = stageStart;
        const bool streams = stage.title.find("Hyper-connections") != std::string::npos;
        const bool ffn = stage.title == "Mixture of experts" || stage.title == "Dense MLP" ||
                         (streams && !stage.join.empty() && stage.join.front().title == "hc_ffn");
        if (ffn && !ffnSeen) {
            ffnSeen = true;
            b.node({kResidual, "attention output + the residual stream (post_attention_layernorm)", NodeRole::Sum, {}, false, {}});
            b.inputs[kResidual] = {kIn, stageInput};
            stageInput = kResidual;
        }
        const int stageIndex = static_cast<int>(&stage - a.stages.data());
        const auto add = [&](const AnatomyBox &box, int column, int index) {
            b.node({slug(box.title), box.title, roleOf(box, streams), box.tensors, box.cached, shapeOut(box.detail),
                    stageIndex, column, index});
            return b.g.nodes.back().id;
        };
        std::vector<std::string> lasts;
        for (const AnatomyColumn &col : stage.columns) {
            std::string prev = stageInput;
            const int column = static_cast<int>(&col - stage.columns.data());
            for (const AnatomyBox &box : col.boxes) {
                const std::string id = add(box, column, static_cast<int>(&box - col.boxes.data()));
                if (!box.skipped) b.inputs[id] = {prev};
                // A column that starts from outside this layer (DeepSeek-V4.1: another layer's rows or top-k).
                if (!box.from.empty() && prev == stageInput) {
                    const std::string ext = "from_" + slug(box.from);
                    if (!b.taken.count(ext)) b.node({ext, box.from, NodeRole::Input, {}, false, {}});
                    b.inputs[id] = {ext};
                }
                prev = id;
            }
            if (!col.boxes.empty() && !col.boxes.back().skipped) lasts.push_back(prev);
        }
        std::string prev;
        for (std::size_t k = 0; k < stage.join.size(); ++k) {
            const AnatomyBox &box = stage.join[k];
            const std::string id = add(box, -1, static_cast<int>(k));
            b.inputs[id] = k == 0 ? (lasts.empty() ? std::vector<std::string>{stageInput} : lasts) : std::vector<std::string>{prev};
            // A block fed only from outside (IndexShare: the owner's top-k, the blocks above not run).
            if (k == 0 && lasts.empty() && !box.from.empty() && !stage.columns.empty()) b.inputs[id].clear();
            if (!box.from.empty()) {
                // An input from outside this layer's blocks (another layer's top-k, a gate from the hidden state).
                const std::string ext = "from_" + slug(box.from);
                if (!b.taken.count(ext)) b.node({ext, box.from, NodeRole::Input, {}, false, {}});
                b.inputs[id].push_back(b.idOf(box.from).empty() ? ext : b.idOf(box.from));
            }
            prev = id;
        }
        if (stage.title == "Multi-token prediction input")
            for (std::size_t k = stageStart; k < b.g.nodes.size(); ++k) mtpInputNodes.insert(b.g.nodes[k].id);
        if (stage.title.find("in host memory") != std::string::npos)
            for (std::size_t k = stageStart; k < b.g.nodes.size(); ++k) ngramNodes.insert(b.g.nodes[k].id);
        if (head) {
            // The head reads the layer's output; it hands nothing on to the layer (wired below).
            if (headNodes < b.g.nodes.size()) headFirst = b.g.nodes[headNodes].id;
            continue;
        }
        if (!prev.empty())
            stageInput = prev;
        else if (!lasts.empty())
            stageInput = lasts.back();
        if (stage.title == "Multi-token prediction input") mtpIn = stageInput;
    }
    b.node({kOut, "the layer's output (+ the residual stream)", NodeRole::Output, {}, false, {}});
    b.inputs[kOut] = {stageInput, ffnSeen ? std::string(kResidual) : std::string(kIn)};
    if (!headFirst.empty()) {
        b.inputs[headFirst] = {kOut};
        std::rotate(b.g.nodes.begin() + static_cast<std::ptrdiff_t>(headNodes), b.g.nodes.end() - 1, b.g.nodes.end());
        b.g.nodes.back().role = NodeRole::Output; // the logits
    }

    // 2. The data flow the engines run, where the page's order is not it (each kind's own wiring only on
    //    layers of that kind: DeepSeek-V4's query and indexer both hold a wq_b).
    const bool mla = info.mixer == MixerKind::Mla;
    if (mla) {
    // MLA (vLLM deepseek_v2.py DeepseekV2MLAAttention.forward): both latents read the hidden state;
    // kv_a_proj_with_mqa splits into the latent (kv_a_layernorm) and k_pe (rotary_emb), and the cache
    // write takes the normalised latent and the rotated k_pe; q_b_proj reads the normalised query latent.
    b.wire("q_a_proj", {kIn});
    b.wire("kv_a_proj_with_mqa", {kIn});
    b.wire("kv_a_layernorm", {"kv_a_proj_with_mqa"});
    b.wire("normalised latent (cached)", {"kv_a_layernorm"});
    b.wire("k_pe", {"kv_a_proj_with_mqa"});
    b.wire("rotary position (RoPE)", {"k_pe"});
    b.wire("rotated k_pe (cached)", {"rotary position (RoPE)"});
    b.wire("k_pe (cached as is)", {"k_pe"});
    // DSA indexer (DeepSeek-V3.2 Indexer; vLLM deepseek_v2.py Indexer.forward(hidden_states, qr, ...)):
    // wq_b reads the query latent (qr), wk and weights_proj the hidden state; the top-k takes the index
    // queries, the cached keys and the head weights.
    b.wire("wq_b", {"q_a_layernorm"});
    b.wire("wk", {kIn});
    b.wire("weights_proj", {kIn});
    b.wire("index query heads", {"wq_b"});
    if (!b.idOf("key pooling").empty()) {
        b.wire("key pooling", {"k_norm"});
        b.wire("index keys (cached)", {"key pooling"});
    } else {
        b.wire("index keys (cached)", {"k_norm"});
    }
    b.wire("top-k selection",
           {b.idOf("index query heads").empty() ? "wq_b" : "index query heads", "index keys (cached)", "weights_proj"});
    const std::string topk = !b.idOf("top-k selection").empty() ? "top-k selection" : "IndexShare";
    b.wire("q_b_proj", {"q_a_layernorm"});
    b.wire("query heads", {b.idOf("q_b_proj").empty() ? "q_proj" : "q_b_proj"});
    b.wire("kv_b_proj", {"normalised latent (cached)"});
    b.wire("key and value heads", {"kv_b_proj"});
    const std::string pe = !b.idOf("rotated k_pe (cached)").empty() ? "rotated k_pe (cached)" : "k_pe (cached as is)";
    for (const char *att : {"sparse attention", "attention"})
        if (!b.idOf("key and value heads").empty())
            b.wire(att, {"query heads", "key and value heads", pe, b.idOf(topk).empty() ? std::string() : topk});
    // Decode: W_UK folded into the query, the cached latent read as one head, W_UV after.
    b.wire("kv_b_proj, K half (W_UK)", {"query heads"});
    b.wire("cached latent + RoPE key", {"normalised latent (cached)", pe});
    for (const char *att : {"sparse attention in latent space", "attention in latent space"})
        b.wire(att, {"kv_b_proj, K half (W_UK)", "cached latent + RoPE key", b.idOf(topk).empty() ? std::string() : topk});
    }
    // DeepSeek-V4 ratio-4 layers (the reference Attention.forward: self.indexer(x, qr, ...); vLLM
    // deepseek_v4_attention.py): the indexer's wq_b reads the query latent qr (after q_norm), its
    // weights_proj and its own compressor the hidden state x; the top-k picks compressed rows, which the
    // attention reads beside the window.
    if (info.mixer == MixerKind::CompressedSparse && b.taken.count("wq_b_2")) {
        const std::string wqa = b.idOf("wq_a");
        const std::vector<std::string> x =
            b.inputs.count(wqa) ? b.inputs[wqa] : std::vector<std::string>{std::string(kIn)};
        b.wireId("wq_b_2", {"q_norm"});
        b.wire("weights_proj", x);
        b.wire("index compressor", x);
        b.wire("top-k selection", {"wq_b_2", "index compressor", "weights_proj"});
        // DeepSeek-V4.1 (CSA2): a source layer's index keys come from its compressor's latent (wk, k_norm;
        // ik_llama.cpp deepseek41), a re-indexing layer scores against its source's keys.
        if (!b.idOf("index keys (cached)").empty()) {
            b.wire("wk", {"wkv / wgate / ape / norm"});
            b.wire("top-k selection", {"wq_b_2", "index keys (cached)", "weights_proj"});
        }
        for (const auto &n : b.g.nodes)
            if (n.label.ends_with("'s index keys")) {
                b.wire("top-k selection", {"wq_b_2", n.id, "weights_proj"});
                if (auto it = b.inputs.find(b.idOf("attention")); it != b.inputs.end()) // keys feed the top-k only
                    it->second.erase(std::remove(it->second.begin(), it->second.end(), n.id), it->second.end());
            }
    }
    // Gated DeltaNet (qwen3_next.py): z from in_proj_qkvz gates the norm beside the state.
    b.wire("norm(core, z): gated RMSNorm", {b.idOf("gated delta rule: the recurrent state (kept per sequence)"),
                                            b.idOf("in_proj_z").empty() ? "in_proj_qkvz" : "in_proj_z"});
    // z gates the output only, never the state (qwen3_next.py: core_attn_out = self.norm(core_attn_out, z)).
    if (const std::string z = b.idOf("in_proj_z"), st = b.idOf("gated delta rule: the recurrent state (kept per sequence)");
        !z.empty() && b.inputs.count(st)) {
        auto &in = b.inputs[st];
        in.erase(std::remove(in.begin(), in.end(), z), in.end());
    }
    // KDA (layers/kda.py): the output gate g = g_b(g_a(hidden)) is held in o_norm's node, reading the
    // hidden state; the state feeds o_norm, not the other way round.
    b.wire("o_norm(core, g): gated RMSNorm", {b.idOf("delta rule: the recurrent state (kept per sequence)"), kIn});
    // Gated attention (Hy4 linear_gate, Kimi-K3 g_proj): the gate reads the layer's input beside the
    // attention output it scales.
    for (const auto &n : b.g.nodes)
        if (n.label.ends_with("(sigmoid gate)") && b.inputs.count(n.id) && !b.inputs[n.id].empty())
            b.inputs[n.id] = {b.inputs[n.id].front(), kIn};
    // A sparse GQA layer's indexer (MiniMax-M3 MiniMaxM3SparseAttention): index queries and index keys each
    // from the hidden state, the top-k from both.
    if (!b.idOf("index_q_proj").empty()) {
        b.wire("index_k_proj", {b.inputs.count(b.idOf("index_q_proj")) ? b.inputs[b.idOf("index_q_proj")] : std::vector<std::string>{kIn}});
        b.wire("top-k selection", {b.idOf("index_q_norm").empty() ? "index_q_proj" : "index_q_norm", "index keys (cached)"});
    }
    if (!b.idOf("index_qk_proj").empty()) b.wire("top-k selection", {"q_layernorm, k_layernorm", "index keys (cached)"});
    // MoE: the router scores the FFN input; the experts run on that input, chosen by the router.
    if (!b.idOf("routed_expert_down_proj").empty()) { // a latent MoE: the experts read the latent
        b.wire("routed_expert_down_proj", {kResidual});
        b.wire("routed experts", {"router", b.idOf("routed_expert_norm").empty() ? "routed_expert_down_proj" : "routed_expert_norm"});
    } else {
        b.wire("routed experts", {"router", kResidual});
    }

    // An MTP block (vLLM deepseek_mtp.py DeepSeekMultiTokenPredictorLayer.forward): enorm reads the next
    // token's embedding, hnorm the hidden state it predicts from (the layer's input), and the block runs
    // on eh_proj's output, which is also its residual (mtp_block(hidden_states, residual=None)).
    std::string blockIn = kIn;
    // A host-resident n-gram memory (DeepSeek-V4.1 Engram, fastllm RunEngram; Qwen3.8's n-gram embedding,
    // Qwen4ExpTextDecoderLayer.forward: hidden_states + self.ple(...)) is added to the layer's input stream
    // before anything else reads it: what read the input reads the sum.
    if (const std::string sum = b.idOf("the residual stream + the n-gram memory"); !sum.empty()) {
        std::string mix;
        for (const auto &f : b.inputs[sum]) mix = f;
        b.inputs[sum] = {kIn, mix};
        // The memory's gate reads the stream it is added to (Engram's q/k against the streams).
        if (auto &in = b.inputs[mix]; !mix.empty() && std::find(in.begin(), in.end(), kIn) == in.end()) in.push_back(kIn);
        for (auto &[to, from] : b.inputs) {
            if (ngramNodes.count(to)) continue;
            for (auto &f : from)
                if (f == kIn) f = sum;
        }
        blockIn = sum;
    }
    if (!mtpIn.empty()) {
        b.g.node(kIn)->label = "the hidden state it predicts from (the main model's, or the MTP block's before)";
        // The block's own embedding table when it has one (DeepSeek-V3's layers.61.embed_tokens), else the
        // main model's, shared.
        const std::string own = b.idOf("embed_tokens");
        const bool hasOwn = mtpInputNodes.count(own) > 0;
        b.node(hasOwn ? AnatomyNode{"next_token", "the next token (its id)", NodeRole::Input, {}, false, {}}
                      : AnatomyNode{"next_token_embedding", "the next token's embedding (embed_tokens, shared)",
                                    NodeRole::Input, {}, false, {}});
        std::rotate(b.g.nodes.begin() + 1, b.g.nodes.end() - 1, b.g.nodes.end()); // beside the layer's input
        if (hasOwn) {
            b.inputs[own] = {"next_token"};
            b.g.node(own)->role = NodeRole::Embedding;
        }
        else if (const std::string e = b.idOf("enorm"); mtpInputNodes.count(e))
            b.inputs[e] = {"next_token_embedding"};
        for (auto &[to, from] : b.inputs) {
            if (mtpInputNodes.count(to)) continue;
            for (auto &f : from)
                if (f == kIn) f = mtpIn;
        }
        blockIn = mtpIn;
    }

    // Hyper-connections (the DeepSeek-V4 reference Block.forward; GLM-5.3-Flash the same): the layer's
    // input is the streams; hc_pre(hc_attn_*) mixes them into the attention's input, hc_post writes the
    // attention output back into the streams with post and comb; hc_pre(hc_ffn_*) feeds the MLP and its
    // hc_post gives the layer's output streams.
    std::string hcAttn, hcFfn;
    for (const auto &n : b.g.nodes)
        if (n.role == NodeRole::Streams) (n.label == "hc_attn" ? hcAttn : hcFfn) = n.id;
    if (!hcAttn.empty() || !hcFfn.empty()) {
        if (mtpIn.empty()) b.g.node(kIn)->label = "the layer's input: the residual streams";
        const bool ffn = b.taken.count(kResidual) > 0;
        for (auto &[to, from] : b.inputs) {
            if (to == hcAttn || to == hcFfn || to == kResidual || to == kOut || mtpInputNodes.count(to) || to == headFirst)
                continue;
            for (auto &f : from)
                if (f == blockIn && !hcAttn.empty()) f = hcAttn;
                else if (f == kResidual && !hcFfn.empty()) f = hcFfn;
        }
        if (!hcAttn.empty()) b.inputs[hcAttn] = {blockIn};
        if (ffn) {
            if (!hcAttn.empty()) {
                b.g.node(kResidual)->label = "hc_post: the attention output into the streams (post, comb)";
                auto &res = b.inputs[kResidual];
                std::vector<std::string> attnOut;
                for (const auto &f : res)
                    if (f != kIn && f != blockIn && f != hcAttn && f != hcFfn) attnOut.push_back(f);
                attnOut.push_back(blockIn);
                attnOut.push_back(hcAttn);
                res = attnOut;
            }
            if (!hcFfn.empty()) {
                b.inputs[hcFfn] = {kResidual};
                std::vector<std::string> post;
                for (const auto &f : b.inputs[kOut])
                    if (f != kResidual && f != kIn && f != blockIn) post.push_back(f);
                post.push_back(kResidual);
                post.push_back(hcFfn);
                b.node({kHcPostFfn, "hc_post: the MLP output into the streams (post, comb)", NodeRole::Sum, {}, false, {}});
                b.inputs[kHcPostFfn] = post;
                b.inputs[kOut] = {kHcPostFfn};
                // Just before the layer's output, as the page reads.
                auto out = std::find_if(b.g.nodes.begin(), b.g.nodes.end(), [](const AnatomyNode &n) { return n.id == kOut; });
                if (out != b.g.nodes.end()) std::rotate(out, b.g.nodes.end() - 1, b.g.nodes.end());
            }
        } else if (!hcAttn.empty()) {
            b.inputs[kOut] = {b.inputs[kOut].empty() ? std::string(hcAttn) : b.inputs[kOut].front(), blockIn, hcAttn};
        }
    }
    // What the arrows between stages carry: the page does not list it again as an input from elsewhere.
    for (const std::string &id : {std::string(kIn), std::string(kResidual), blockIn, hcAttn, hcFfn,
                                  headFirst.empty() ? std::string() : std::string(kOut)})
        if (!id.empty() && std::find(b.g.carried.begin(), b.g.carried.end(), id) == b.g.carried.end())
            b.g.carried.push_back(id);

    // 3. Edges, in node order, each pair once and no node into itself.
    std::set<std::string> used;
    std::set<std::pair<std::string, std::string>> seen;
    for (const auto &n : b.g.nodes) {
        auto it = b.inputs.find(n.id);
        if (it == b.inputs.end()) continue;
        for (const auto &from : it->second) {
            const AnatomyNode *src = b.g.node(from);
            if (!src || from == n.id || !seen.insert({from, n.id}).second) continue;
            b.g.edges.push_back({from, n.id, src->shapeOut});
            used.insert(from);
            used.insert(n.id);
        }
    }
    // External inputs the wiring replaced (a gate drawn from the side) are not left standing alone.
    std::vector<AnatomyNode> kept;
    for (auto &n : b.g.nodes)
        if (used.count(n.id) || n.role != NodeRole::Input || n.id == kIn) kept.push_back(std::move(n));
    b.g.nodes = std::move(kept);
    return b.g;
}

void annotateInputs(LayerAnatomy &a, const AnatomyGraph &g)
{
    std::map<std::tuple<int, int, int>, const AnatomyNode *> at;
    for (const auto &n : g.nodes)
        if (n.stage >= 0) at[{n.stage, n.column, n.index}] = &n;
    for (std::size_t s = 0; s < a.stages.size(); ++s) {
        AnatomyStage &stage = a.stages[s];
        const auto annotate = [&](AnatomyBox &box, int column, int index, const std::vector<std::string> &above) {
            const auto it = at.find({static_cast<int>(s), column, index});
            if (it == at.end()) return;
            const auto inputs = g.inputsOf(it->second->id);
            box.inputsElsewhere.clear();
            box.fedFromAbove = above.empty();
            for (const auto &in : inputs) {
                const bool isAbove = std::find(above.begin(), above.end(), in) != above.end();
                box.fedFromAbove = box.fedFromAbove || isAbove;
                const AnatomyNode *src = g.node(in);
                // The layer's input and the FFN's (the residual stream) are what the arrows between
                // stages carry (with mHC, the hc_pre stage above the block); an arrow from outside (box.from) is drawn already.
                if (isAbove || !src || std::find(g.carried.begin(), g.carried.end(), in) != g.carried.end() ||
                    src->role == NodeRole::Streams || (src->role == NodeRole::Input && !box.from.empty()))
                    continue;
                box.inputsElsewhere.push_back(src->label);
            }
        };
        std::vector<std::string> lasts;
        for (std::size_t c = 0; c < stage.columns.size(); ++c) {
            auto &boxes = stage.columns[c].boxes;
            for (std::size_t k = 0; k < boxes.size(); ++k) {
                std::vector<std::string> above;
                if (k > 0)
                    if (const auto p = at.find({static_cast<int>(s), static_cast<int>(c), static_cast<int>(k - 1)}); p != at.end())
                        above.push_back(p->second->id);
                annotate(boxes[k], static_cast<int>(c), static_cast<int>(k), above);
            }
            if (!boxes.empty())
                if (const auto p = at.find({static_cast<int>(s), static_cast<int>(c), static_cast<int>(boxes.size() - 1)}); p != at.end())
                    lasts.push_back(p->second->id);
        }
        for (std::size_t k = 0; k < stage.join.size(); ++k) {
            std::vector<std::string> above = lasts;
            if (k > 0)
                if (const auto p = at.find({static_cast<int>(s), -1, static_cast<int>(k - 1)}); p != at.end())
                    above = {p->second->id};
            annotate(stage.join[k], -1, static_cast<int>(k), above);
        }
    }
}

nlohmann::ordered_json anatomyJson(const AnatomyGraph &g)
{
    using J = nlohmann::ordered_json;
    J nodes = J::array(), edges = J::array();
    for (const auto &n : g.nodes)
        nodes.push_back({{"id", n.id},
                         {"label", n.label},
                         {"role", nodeRoleName(n.role)},
                         {"tensors", n.tensors},
                         {"cached", n.cached},
                         {"shape_out", n.shapeOut.empty() ? J() : J(n.shapeOut)}});
    for (const auto &e : g.edges)
        edges.push_back({{"from", e.from}, {"to", e.to}, {"shape", e.shape.empty() ? J() : J(e.shape)}});
    return {{"schema", "ckpt-atlas.anatomy/1"}, {"layer", g.layer}, {"kind", g.kind}, {"nodes", nodes}, {"edges", edges}};
}

namespace {

std::string quoted(const std::string &s, const char *quote)
{
    std::string out;
    for (char c : s) {
        if (c == '"')
            out += quote;
        else if (c == '\n')
            out += ' ';
        else
            out += c;
    }
    return out;
}

} // namespace

std::string anatomyDot(const AnatomyGraph &g)
{
    std::string s = "digraph layer_" + std::to_string(g.layer) + " {\n  rankdir=TB;\n  node [shape=box, style=rounded];\n";
    for (const auto &n : g.nodes)
        s += "  \"" + n.id + "\" [label=\"" + quoted(n.label, "\\\"") + "\"" +
             (n.cached ? ", style=\"rounded,filled\", fillcolor=\"#f3d6b5\"" : "") +
             (n.role == NodeRole::Input || n.role == NodeRole::Output ? ", shape=ellipse" : "") + "];\n";
    for (const auto &e : g.edges)
        s += "  \"" + e.from + "\" -> \"" + e.to + "\"" + (e.shape.empty() ? "" : " [label=\"" + e.shape + "\"]") + ";\n";
    return s + "}\n";
}

std::string anatomyMermaid(const AnatomyGraph &g)
{
    std::string s = "flowchart TD\n";
    for (const auto &n : g.nodes)
        s += "  " + n.id + (n.role == NodeRole::Input || n.role == NodeRole::Output ? "([\"" : "[\"") +
             quoted(n.label, "#quot;") + (n.role == NodeRole::Input || n.role == NodeRole::Output ? "\"])\n" : "\"]\n");
    for (const auto &e : g.edges)
        s += "  " + e.from + (e.shape.empty() ? " --> " : " -->|" + e.shape + "| ") + e.to + "\n";
    for (const auto &n : g.nodes)
        if (n.cached) s += "  style " + n.id + " fill:#f3d6b5\n";
    return s;
}

} // namespace atlas
