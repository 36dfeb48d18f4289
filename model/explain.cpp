#include "explain.h"

#include "roles.h"

#include <cctype>
#include <cmath>

namespace atlas {

namespace {

std::string num(std::uint64_t v)
{
    return std::to_string(v);
}

bool whole(double v)
{
    return std::isfinite(v) && v >= 0 && v < 9.0e15 && v == std::floor(v);
}

// Builds a sum of products, each with the terms its factors came from.
struct Sum
{
    Working w;
    void add(const std::string &product, std::vector<WorkingTerm> terms)
    {
        w.expression += (w.expression.empty() ? "" : " + ") + product;
        for (auto &t : terms)
            w.terms.push_back(std::move(t));
    }
    bool empty() const { return w.expression.empty(); }
};

std::string kvBytesName(const CacheBudget &c)
{
    if (c.preset == CachePreset::LlamaCpp)
        return "bytes per value (" + llamaCacheTypeName(c.llamaCacheTypeK) + ", llama.cpp's -ctk; V a view of K)";
    return std::string("bytes per value (") + std::string(kvDtypeName(c.kvDtype)) + ")";
}

// One cache group's bytes per token: layers × row (÷ tokens per row), with MLA's row as its parts.
std::pair<std::string, std::vector<WorkingTerm>> perToken(const CacheBudget &c, const AttentionLayers &g)
{
    const std::string L = num(static_cast<std::uint64_t>(g.layers));
    const std::string layersFrom = std::string("layers of kind ") + std::string(attentionKindName(g.kind));
    std::vector<WorkingTerm> terms{{L, layersFrom}};
    std::string row = num(g.bytesPerTokenPerLayer);
    const std::uint64_t parts = static_cast<std::uint64_t>(c.kvLoraRank + c.ropeDim);
    if (g.kind == AttentionKind::Mla && c.kvLoraRank > 0 && parts && g.bytesPerTokenPerLayer % parts == 0 &&
        g.bytesPerTokenPerLayer / parts <= 2) {
        const std::uint64_t e = g.bytesPerTokenPerLayer / parts;
        row = c.ropeDim ? "(" + num(static_cast<std::uint64_t>(c.kvLoraRank)) + "+" + num(static_cast<std::uint64_t>(c.ropeDim)) +
                              ")*" + num(e)
                        : num(static_cast<std::uint64_t>(c.kvLoraRank)) + "*" + num(e);
        terms.push_back({num(static_cast<std::uint64_t>(c.kvLoraRank)), "kv_lora_rank: the latent"});
        if (c.ropeDim) terms.push_back({num(static_cast<std::uint64_t>(c.ropeDim)), "qk_rope_head_dim: the shared RoPE key"});
        terms.push_back({num(e), kvBytesName(c)});
    } else if (g.kind == AttentionKind::IndexKeys) {
        terms.push_back({row, "index entry bytes (" + std::string(cachePresetName(c.preset)) + " preset)"});
    } else {
        terms.push_back({row, "bytes per row: " + (g.note.empty() ? std::string(attentionKindName(g.kind)) : g.note)});
    }
    std::string product = L + "*" + row;
    if (g.compression > 1) {
        product += "/" + num(g.compression);
        terms.push_back({num(g.compression), "tokens per row"});
    }
    return {product, terms};
}

// Keeps a working only if it evaluates exactly to the number it stands for.
void keep(Explanations &out, const std::string &path, Working w, ExactValue value)
{
    if (w.expression.empty()) return;
    const auto v = evaluateWorking(w.expression);
    if (v && *v == value) out.push_back({path, std::move(w)});
}

ExactValue exact(double v)
{
    // Doubles here are sums of fractions with power-of-two denominators (rows per 4 or 128 tokens).
    ExactValue r{0, 1};
    for (int i = 0; i < 20 && v != std::floor(v); ++i) {
        v *= 2;
        r.denominator *= 2;
    }
    r.numerator = static_cast<__int128>(v);
    return r;
}

ExactValue exact(std::uint64_t v)
{
    return {static_cast<__int128>(v), 1};
}

// floor(a / b) as exact arithmetic: (a - r) / b, the remainder r named.
std::string floorDivision(const std::string &a, std::uint64_t aValue, std::uint64_t b, std::vector<WorkingTerm> &terms,
                          const std::string &bFrom)
{
    const std::uint64_t r = aValue % b;
    terms.push_back({num(b), bFrom});
    if (r == 0) return "(" + a + ")/" + num(b);
    terms.push_back({num(r), "the remainder, dropped (whole units only)"});
    return "(" + a + " - " + num(r) + ")/" + num(b);
}

} // namespace

Explanations explainReport(const ModelConfig &cfg, const CheckpointAnalysis &a, const CacheBudget &c)
{
    Explanations out;
    const ParameterBudget &b = a.budget;
    {
        Sum s;
        for (std::size_t i = 0; i < kCategoryCount; ++i)
            if (b.byCategory[i])
                s.add(num(b.byCategory[i]), {{num(b.byCategory[i]), std::string(categoryName(static_cast<Category>(i))) +
                                                                       " (the tensors of that role)"}});
        keep(out, "parameters.total", s.w, exact(b.total));
    }
    if (b.activatedPerToken) {
        Sum s;
        for (std::size_t i = 0; i < kCategoryCount; ++i) {
            const auto cat = static_cast<Category>(i);
            if (!b.activeByCategory[i]) continue;
            if (cat != Category::RoutedExperts) {
                s.add(num(b.activeByCategory[i]), {{num(b.activeByCategory[i]), std::string(categoryName(cat))}});
                continue;
            }
            const std::uint64_t routed = b.byCategory[i];
            const std::optional<std::int64_t> experts = cfg.nRoutedExperts ? cfg.nRoutedExperts : a.diskRoutedExperts;
            if (!cfg.numExpertsPerTok || !experts || *experts <= 0) continue;
            const auto k = static_cast<std::uint64_t>(*cfg.numExpertsPerTok), e = static_cast<std::uint64_t>(*experts);
            std::vector<WorkingTerm> terms{{num(routed), "routed_experts: every expert of every layer"},
                                           {num(k), "num_experts_per_tok"}};
            const unsigned __int128 rk = static_cast<unsigned __int128>(routed) * k;
            std::string product;
            if (rk % e == 0) {
                product = num(routed) + "*" + num(k) + "/" + num(e);
                terms.push_back({num(e), "routed experts per layer"});
            } else {
                // Rounded to the nearest parameter: floor((R*k + E/2) / E).
                const std::uint64_t half = e / 2;
                const auto r = static_cast<std::uint64_t>((rk + half) % e);
                product = "(" + num(routed) + "*" + num(k) + " + " + num(half) + " - " + num(r) + ")/" + num(e);
                terms.push_back({num(half), "half an expert's share, to round to the nearest parameter"});
                terms.push_back({num(r), "the remainder, dropped"});
                terms.push_back({num(e), "routed experts per layer"});
            }
            s.add(product, std::move(terms));
        }
        keep(out, "parameters.activated_per_token", s.w, exact(*b.activatedPerToken));
    }
    if (!c.available) return out;
    Sum perTok, windows, state, total;
    for (const auto &g : c.attention) {
        if (g.bytesPerTokenPerLayer) {
            auto [product, terms] = perToken(c, g);
            if (g.window) {
                // The window's whole rows: layers × bytes per row × rows (no division left to round).
                const std::uint64_t rows = *g.window / std::max<std::uint64_t>(g.compression, 1);
                windows.add(num(static_cast<std::uint64_t>(g.layers)) + "*" + num(g.bytesPerTokenPerLayer) + "*" + num(rows),
                            {{num(static_cast<std::uint64_t>(g.layers)), "layers of kind " + std::string(attentionKindName(g.kind))},
                             {num(g.bytesPerTokenPerLayer), "bytes per row"},
                             {num(rows), "rows of the window (sliding_window)"}});
            } else {
                perTok.add(product, terms);
            }
            // At the context: rows = floor(min(context, window) / tokens per row).
            const std::uint64_t tokens = g.window ? std::min(*g.window, c.contextTokens) : c.contextTokens;
            const std::uint64_t rows = tokens / std::max<std::uint64_t>(g.compression, 1);
            std::vector<WorkingTerm> t{{num(static_cast<std::uint64_t>(g.layers)), "layers of kind " + std::string(attentionKindName(g.kind))},
                                       {num(g.bytesPerTokenPerLayer), "bytes per row"}};
            std::string rowsText;
            if (g.compression <= 1 && g.window) {
                rowsText = "min(" + num(c.contextTokens) + "," + num(*g.window) + ")";
                t.push_back({num(c.contextTokens), "the context"});
                t.push_back({num(*g.window), "sliding_window"});
            } else if (g.compression <= 1) {
                rowsText = num(c.contextTokens);
                t.push_back({rowsText, "the context"});
            } else {
                rowsText = num(rows);
                t.push_back({rowsText, "rows: the context (or window) over " + num(g.compression) + " tokens per row, whole rows"});
            }
            total.add(num(static_cast<std::uint64_t>(g.layers)) + "*" + num(g.bytesPerTokenPerLayer) + "*" + rowsText, t);
        }
        if (g.stateBytesPerLayer) {
            const std::vector<WorkingTerm> t{
                {num(static_cast<std::uint64_t>(g.layers)), "layers of kind " + std::string(attentionKindName(g.kind))},
                {num(*g.stateBytesPerLayer), "per sequence each: " + (g.note.empty() ? std::string("its state") : g.note)}};
            const std::string product = num(static_cast<std::uint64_t>(g.layers)) + "*" + num(*g.stateBytesPerLayer);
            state.add(product, t);
            total.add(product, t);
        }
    }
    keep(out, "cache.bytes_per_token", perTok.w, exact(c.bytesPerTokenExact));
    if (c.windowBytes) keep(out, "cache.window_bytes", windows.w, exact(c.windowBytes));
    if (c.fixedStateBytes) keep(out, "cache.fixed_state_bytes", state.w, exact(*c.fixedStateBytes));
    keep(out, "cache.total_bytes", total.w, exact(c.totalBytes));
    return out;
}

Explanations explainPlan(const CapacityPlan &p)
{
    Explanations out;
    const PlanPerGpu &g = p.perGpu;
    {
        Working w;
        w.expression = num(g.replicatedBytes) + " + " + num(g.splitBytes) + " + " + num(g.expertBytes);
        w.terms = {{num(g.replicatedBytes), "replicated on every GPU (norms, latent paths, routers, indexers)"},
                   {num(g.splitBytes), "split by tensor parallelism (heads, vocabulary, dense MLPs)"},
                   {num(g.expertBytes), "routed experts on this GPU"}};
        keep(out, "per_gpu.weight_bytes", w, exact(g.weightBytes));
    }
    if (g.cacheRoomBytes > 0 && whole(g.cacheBytesPerToken) && g.cacheBytesPerToken > 0 && whole(g.windowBytesPerSequence)) {
        Working w;
        const auto room = static_cast<std::uint64_t>(g.cacheRoomBytes);
        const auto windows = static_cast<std::uint64_t>(g.windowBytesPerSequence);
        if (room > windows) {
            std::string a = num(g.usableBytes) + " - " + num(g.weightBytes) +
                            (p.options.reserve ? " - " + num(p.options.reserve) : std::string()) +
                            (windows ? " - " + num(windows) : std::string());
            w.terms = {{num(g.usableBytes), "usable: the GPU's memory × the engine's memory fraction"},
                       {num(g.weightBytes), "the weights on this GPU"}};
            if (p.options.reserve) w.terms.push_back({num(p.options.reserve), "the reserve"});
            if (windows) w.terms.push_back({num(windows), "one sequence's full sliding windows"});
            w.expression = floorDivision(a, room - windows, static_cast<std::uint64_t>(g.cacheBytesPerToken), w.terms,
                                         "cache bytes per token on this GPU (what grows)");
            keep(out, "per_gpu.max_cached_tokens", w, exact(g.maxCachedTokens));
        }
    }
    if (p.sequencesAtContext != UINT64_MAX && g.cacheRoomBytes > 0 && whole(g.bytesPerSequence) && g.bytesPerSequence > 0) {
        Working w;
        const auto room = static_cast<std::uint64_t>(g.cacheRoomBytes);
        w.terms = {{num(room), "cache room on this GPU"}};
        const std::string per = floorDivision(num(room), room, static_cast<std::uint64_t>(g.bytesPerSequence), w.terms,
                                              "one sequence at the context on this GPU (rows, windows, state)");
        w.expression = per + "*" + num(static_cast<std::uint64_t>(p.options.dpAttention));
        w.terms.push_back({num(static_cast<std::uint64_t>(p.options.dpAttention)), "data-parallel attention groups"});
        keep(out, "sequences_at_context", w, exact(p.sequencesAtContext));
    }
    return out;
}

namespace {

class Parser
{
public:
    explicit Parser(std::string_view s) : m_s(s) {}
    std::optional<ExactValue> parse()
    {
        auto v = sum();
        skip();
        if (!v || m_i != m_s.size()) return std::nullopt;
        return v;
    }

private:
    void skip()
    {
        while (m_i < m_s.size() && m_s[m_i] == ' ')
            ++m_i;
    }
    bool take(char c)
    {
        skip();
        if (m_i < m_s.size() && m_s[m_i] == c) {
            ++m_i;
            return true;
        }
        return false;
    }
    static bool fits(__int128 v) { return v < (static_cast<__int128>(1) << 100) && v > -(static_cast<__int128>(1) << 100); }
    static std::optional<__int128> mul(__int128 a, __int128 b)
    {
        __int128 r;
        if (__builtin_mul_overflow(a, b, &r) || !fits(r)) return std::nullopt;
        return r;
    }
    static std::optional<__int128> add(__int128 a, __int128 b)
    {
        __int128 r;
        if (__builtin_add_overflow(a, b, &r) || !fits(r)) return std::nullopt;
        return r;
    }
    // a/b ± c/d, a/b × c/d and a/b ÷ c/d, nullopt when any step leaves 2^100.
    static std::optional<ExactValue> combine(const ExactValue &x, const ExactValue &y, char op)
    {
        std::optional<__int128> n, d;
        if (op == '+' || op == '-') {
            const auto l = mul(x.numerator, y.denominator), r = mul(y.numerator, x.denominator);
            if (!l || !r) return std::nullopt;
            n = add(*l, op == '+' ? *r : -*r);
            d = mul(x.denominator, y.denominator);
        } else if (op == '*') {
            n = mul(x.numerator, y.numerator);
            d = mul(x.denominator, y.denominator);
        } else {
            n = mul(x.numerator, y.denominator);
            d = mul(x.denominator, y.numerator);
        }
        if (!n || !d) return std::nullopt;
        return norm(*n, *d);
    }
    static std::optional<ExactValue> norm(__int128 n, __int128 d)
    {
        if (d == 0 || !fits(n) || !fits(d)) return std::nullopt;
        if (d < 0) n = -n, d = -d;
        __int128 a = n < 0 ? -n : n, b = d;
        while (b) {
            const __int128 t = a % b;
            a = b;
            b = t;
        }
        if (a > 1) n /= a, d /= a;
        return ExactValue{n, d};
    }
    std::optional<ExactValue> sum()
    {
        auto v = product();
        while (v) {
            if (take('+')) {
                auto r = product();
                if (!r) return std::nullopt;
                v = combine(*v, *r, '+');
            } else if (take('-')) {
                auto r = product();
                if (!r) return std::nullopt;
                v = combine(*v, *r, '-');
            } else {
                break;
            }
        }
        return v;
    }
    std::optional<ExactValue> product()
    {
        auto v = atom();
        while (v) {
            if (take('*')) {
                auto r = atom();
                if (!r) return std::nullopt;
                v = combine(*v, *r, '*');
            } else if (take('/')) {
                auto r = atom();
                if (!r || r->numerator == 0) return std::nullopt;
                v = combine(*v, *r, '/');
            } else {
                break;
            }
        }
        return v;
    }
    std::optional<ExactValue> atom()
    {
        skip();
        if (++m_depth > 64) return std::nullopt;
        struct Leave
        {
            int &d;
            ~Leave() { --d; }
        } leave{m_depth};
        if (take('(')) {
            auto v = sum();
            if (!v || !take(')')) return std::nullopt;
            return v;
        }
        if (m_s.substr(m_i, 4) == "min(") {
            m_i += 4;
            auto v = sum();
            while (v && take(',')) {
                auto r = sum();
                if (!r) return std::nullopt;
                const auto l = mul(r->numerator, v->denominator), rr = mul(v->numerator, r->denominator);
                if (!l || !rr) return std::nullopt;
                if (*l < *rr) v = r;
            }
            if (!v || !take(')')) return std::nullopt;
            return v;
        }
        __int128 n = 0;
        const std::size_t start = m_i;
        while (m_i < m_s.size() && std::isdigit(static_cast<unsigned char>(m_s[m_i]))) {
            n = n * 10 + (m_s[m_i++] - '0');
            if (!fits(n)) return std::nullopt;
        }
        if (m_i == start) return std::nullopt;
        return ExactValue{n, 1};
    }
    std::string_view m_s;
    std::size_t m_i = 0;
    int m_depth = 0;
};

} // namespace

std::optional<ExactValue> evaluateWorking(std::string_view expression)
{
    return Parser(expression).parse();
}

} // namespace atlas
