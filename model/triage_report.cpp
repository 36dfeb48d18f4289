#include "triage_report.h"

#include "c_locale.h"
#include "report.h"

#include <algorithm>
#include <charconv>
#include <map>

namespace atlas {

namespace {

using J = nlohmann::ordered_json;

std::uint64_t u(const J &j, const char *key)
{
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number_integer()) return 0;
    return it->is_number_unsigned() ? it->get<std::uint64_t>() : std::uint64_t(std::max<std::int64_t>(0, it->get<std::int64_t>()));
}

// A number of the JSON as printed: exact with digit groups, a fraction as its shortest decimal, "unknown"
// for a null or missing one (never a 0 the JSON does not hold).
std::string numText(const J &j, const char *key)
{
    const auto it = j.find(key);
    if (it == j.end() || !it->is_number()) return "unknown";
    if (it->is_number_integer()) return groupDigits(u(j, key));
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, it->get<double>());
    return std::string(buf, r.ptr);
}

bool isNumber(const J &j, const char *key)
{
    const auto it = j.find(key);
    return it != j.end() && it->is_number();
}

std::string str(const J &j, const char *key)
{
    const auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Parameters as a reviewer pastes them: exact, and in billions (10^9) beside.
std::string params(std::uint64_t n)
{
    return groupDigits(n) + " (" + fixedPoint(double(n) / 1e9, 2) + " B params)";
}

// Bytes exact, and in GiB (2^30) beside.
std::string bytes(std::uint64_t n)
{
    return groupDigits(n) + " B (" + binaryBytes(n) + ")";
}

std::string htmlEscape(const std::string &s)
{
    std::string out;
    for (const char c : s) switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        default: out += c;
        }
    return out;
}

// A table given once, written as Markdown and as HTML.
struct Table
{
    std::vector<std::string> head;
    std::vector<std::vector<std::string>> rows;
    std::string markdown() const
    {
        auto line = [](const std::vector<std::string> &cells) {
            std::string s = "|";
            for (const auto &c : cells) {
                std::string cell = c;
                std::replace(cell.begin(), cell.end(), '|', '/');
                s += " " + cell + " |";
            }
            return s + "\n";
        };
        std::string s = line(head);
        s += "|";
        for (std::size_t i = 0; i < head.size(); ++i)
            s += i == 0 ? " --- |" : " ---: |";
        s += "\n";
        for (const auto &r : rows)
            s += line(r);
        return s + "\n";
    }
    std::string html() const
    {
        std::string s = "<table><tr>";
        for (const auto &h : head)
            s += "<th>" + htmlEscape(h) + "</th>";
        s += "</tr>\n";
        for (const auto &r : rows) {
            s += "<tr>";
            for (std::size_t i = 0; i < r.size(); ++i)
                s += std::string(i == 0 ? "<td>" : "<td class=n>") + htmlEscape(r[i]) + "</td>";
            s += "</tr>\n";
        }
        return s + "</table>\n";
    }
};

// Parameters by category, largest first, as horizontal bars (lengths relative to the largest).
std::string budgetSvg(const J &byCategory)
{
    std::vector<std::pair<std::string, std::uint64_t>> cats;
    for (const auto &[k, v] : byCategory.items())
        if (v.is_number_unsigned() && v.get<std::uint64_t>() > 0) cats.push_back({k, v.get<std::uint64_t>()});
    std::sort(cats.begin(), cats.end(), [](const auto &a, const auto &b) { return a.second > b.second; });
    const int rowH = 26, left = 170, width = 640, top = 34;
    const double largest = cats.empty() ? 1.0 : double(cats.front().second);
    std::string s = "<svg xmlns='http://www.w3.org/2000/svg' width='" + std::to_string(left + width + 150) +
                    "' height='" + std::to_string(top + rowH * int(cats.size()) + 10) +
                    "' font-family='sans-serif' font-size='13'>\n"
                    "<text x='0' y='18' font-weight='bold'>Parameters by category (stored, in billions)</text>\n";
    int y = top;
    for (const auto &[name, n] : cats) {
        const int w = std::max(1, int(double(width) * double(n) / largest));
        s += "<text x='" + std::to_string(left - 8) + "' y='" + std::to_string(y + 17) + "' text-anchor='end'>" +
             htmlEscape(name) + "</text>";
        s += "<rect x='" + std::to_string(left) + "' y='" + std::to_string(y + 4) + "' width='" + std::to_string(w) +
             "' height='" + std::to_string(rowH - 8) + "' fill='#3b7dd8'/>";
        s += "<text x='" + std::to_string(left + w + 6) + "' y='" + std::to_string(y + 17) + "'>" +
             fixedPoint(double(n) / 1e9, 2) + " B</text>\n";
        y += rowH;
    }
    return s + "</svg>\n";
}

} // namespace

J layerMix(const J &report)
{
    std::map<std::string, std::uint64_t> mixers;
    std::uint64_t full = 0, shared = 0, mtp = 0, main = 0;
    if (const auto it = report.find("layers"); it != report.end() && it->is_array())
        for (const auto &l : *it) {
            if (str(l, "kind") == "mtp") {
                ++mtp;
                continue;
            }
            ++main;
            ++mixers[str(l, "mixer")];
            const std::string ix = str(l, "indexer");
            full += ix == "full";
            shared += ix == "shared";
        }
    J mix = J::array();
    for (const auto &[m, n] : mixers)
        mix.push_back({{"mixer", m}, {"layers", n}});
    return {{"main_layers", main}, {"mixers", mix}, {"own_an_indexer", full}, {"reuse_an_indexer", shared},
            {"mtp_layers", mtp}};
}

TriageFiles triageReport(const J &report)
{
    const CLocaleScope cLocale;
    TriageFiles out;
    const J &src = report.at("source");
    const J &model = report.at("model");
    const J &files = report.at("files");
    const J &par = report.at("parameters");
    const J cache = report.value("cache", J());
    const J triage = report.value("triage", J::object());
    const std::string title = "Triage: " + str(model, "model_type") + " — " + str(src, "location");

    std::string md = "# " + title + "\n\n";
    std::string html = "<!doctype html>\n<html><head><meta charset='utf-8'><title>" + htmlEscape(title) +
                       "</title>\n<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;color:#222}"
                       "table{border-collapse:collapse;margin:.5em 0 1.2em}td,th{border:1px solid #ccc;padding:3px 8px}"
                       "th{background:#f0f0f0;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}"
                       "li.bad{color:#a02020}</style></head><body>\n<h1>" +
                       htmlEscape(title) + "</h1>\n";
    const auto section = [&](const std::string &name) {
        md += "## " + name + "\n\n";
        html += "<h2>" + htmlEscape(name) + "</h2>\n";
    };
    const auto para = [&](const std::string &text) {
        md += text + "\n\n";
        html += "<p>" + htmlEscape(text) + "</p>\n";
    };

    // Identity and provenance.
    std::string provenance = "Read from " + str(src, "kind") + " " + str(src, "location");
    if (!str(src, "revision").empty()) provenance += " at revision " + str(src, "revision");
    if (!str(src, "commit").empty()) provenance += " (commit " + str(src, "commit") + ")";
    provenance += ": " + groupDigits(u(files, "shards")) + (str(files, "format") == "gguf" ? " GGUF files (llama.cpp's " + str(files, "gguf_architecture") + "), " : " shards, ") + groupDigits(u(files, "tensors")) +
                  " tensors, " + bytes(u(files, "total_bytes")) + " of tensors, " +
                  groupDigits(u(files, "header_bytes")) + " B of headers read.";
    if (src.value("synthetic", false)) provenance += " A synthetic layout (its values are not a model's).";
    if (!str(triage, "generated").empty())
        provenance += " Generated " + str(triage, "generated") + " by ckpt-atlas " + str(triage, "tool_version") + ".";
    para(provenance);

    section("Size");
    Table size{{"", "parameters"}, {}};
    size.rows.push_back({"in the files", params(u(par, "total"))});
    size.rows.push_back({"without the MTP layers (as model cards count)", params(u(par, "total_without_mtp"))});
    size.rows.push_back({"active per token", isNumber(par, "activated_per_token")
                                                  ? params(u(par, "activated_per_token"))
                                                  : std::string("unknown (the config does not say how many experts a token takes)")});
    if (const J &host = par.value("host_tables", J::object()); u(host, "parameters"))
        size.rows.push_back({"of them in host-resident tables", params(u(host, "parameters"))});
    md += size.markdown();
    html += size.html();

    section("Formats per category");
    Table formats{{"category", "parameters", "stored as"}, {}};
    const J &byCategory = par.value("by_category", J::object());
    const J quantFormats = report.value("quantization", J::object()).value("formats", J::object());
    for (const auto &[k, v] : byCategory.items()) {
        if (!v.is_number_unsigned() || v.get<std::uint64_t>() == 0) continue;
        formats.rows.push_back({k, groupDigits(v.get<std::uint64_t>()), str(quantFormats, k.c_str())});
    }
    md += formats.markdown();
    html += formats.html();
    out.figures.push_back({"budget.svg", budgetSvg(byCategory)});
    md += "![Parameters by category](budget.svg)\n\n";
    html += out.figures.back().second;

    section("Layer mix");
    {
        const J mix = triage.value("layer_mix", layerMix(report));
        std::string s;
        for (const auto &m : mix.value("mixers", J::array()))
            s += (s.empty() ? "" : ", ") + groupDigits(u(m, "layers")) + " " + str(m, "mixer");
        if (s.empty()) s = "no decoder layers found";
        s += " (" + groupDigits(u(mix, "main_layers")) + " main layers)";
        if (u(mix, "own_an_indexer") || u(mix, "reuse_an_indexer"))
            s += "; " + groupDigits(u(mix, "own_an_indexer")) + " own a DSA indexer, " +
                 groupDigits(u(mix, "reuse_an_indexer")) + " reuse one";
        s += "; " + groupDigits(u(mix, "mtp_layers")) + (u(mix, "mtp_layers") == 1 ? " MTP layer." : " MTP layers.");
        para(s);
    }

    section("Cache");
    if (!cache.is_object() || !isNumber(cache, "bytes_per_token")) {
        para("Not sized for this checkpoint" +
             (cache.is_object() && !str(cache, "reason").empty() ? ": " + str(cache, "reason") : std::string()) + ".");
    } else {
        std::string s = numText(cache, "bytes_per_token") + " B per token grows with the context";
        if (u(cache, "window_bytes")) s += ", plus " + bytes(u(cache, "window_bytes")) + " of sliding windows per sequence";
        if (cache.contains("fixed_state_bytes") && cache["fixed_state_bytes"].is_number_unsigned())
            s += ", plus " + bytes(u(cache, "fixed_state_bytes")) + " of fixed state per sequence";
        s += "; one sequence of " + groupDigits(u(cache, "context_tokens")) + " tokens holds " +
             bytes(u(cache, "total_bytes")) + ".";
        if (!str(triage, "cache_layout").empty()) s += " Counted as " + str(triage, "cache_layout") + ".";
        para(s);
    }

    if (const auto fits = triage.find("fits_on"); fits != triage.end() && fits->is_object()) {
        section("Fits on");
        // One cache for every GPU, said once; an engine whose cache depends on the GPU (SGLang's FP8 latent on
        // Blackwell) gets a column.
        const J gpus = fits->value("gpus", J::array());
        bool oneCache = true;
        for (const auto &g : gpus)
            oneCache = oneCache && str(g, "cache") == str(*fits, "cache");
        if (str(*fits, "engine") == "llama.cpp") {
            // A GGUF: one GPU each, llama.cpp's offload (-ngl, --n-cpu-moe) and what stays in host memory.
            para("llama.cpp on one GPU of each kind, one sequence of " + groupDigits(u(*fits, "context_tokens")) +
                 " tokens, " + str(*fits, "cache") + ": every block offloaded with the routed experts of the first "
                 "blocks kept in host memory, 1 GiB set aside:");
            Table t{{"GPU", "flags", "GPU holds", "host holds"}, {}};
            for (const auto &g : gpus) {
                const J l = g.value("llama_cpp", J::object());
                t.rows.push_back({str(g, "gpu"), (l.value("fits", false) ? "" : "does not fit: ") + str(l, "flags"),
                                  bytes(u(l, "gpu_bytes")), bytes(u(l, "host_bytes"))});
            }
            md += t.markdown();
            html += t.html();
        } else {
        para("The smallest deployment of each GPU that holds one sequence of " +
             groupDigits(u(*fits, "context_tokens")) + " tokens, with " + str(*fits, "engine") + " and " +
             (oneCache ? str(*fits, "cache") : std::string("its cache for each GPU")) + ":");
        Table t{{"GPU", "GPUs", "layout", "sequences"}, {}};
        if (!oneCache) t.head.push_back("cache");
        for (const auto &g : gpus) {
            std::vector<std::string> row;
            if (g.value("smallest", J()).is_null()) {
                row = {str(g, "gpu"), "none up to " + groupDigits(u(*fits, "max_gpus")), "", ""};
            } else {
                const J &sm = g["smallest"];
                row = {str(g, "gpu"), groupDigits(u(sm, "gpus")), str(sm, "layout"),
                       groupDigits(u(sm, "sequences_at_context"))};
            }
            if (!oneCache) row.push_back(str(g, "cache"));
            t.rows.push_back(std::move(row));
        }
        md += t.markdown();
        html += t.html();
        }
    }

    section("Anomalies");
    std::vector<std::string> anomalies;
    for (const char *key : {"schedule", "indexer"})
        for (const auto &m : report.value(key, J::object()).value("mismatches", J::array()))
            if (m.is_string()) anomalies.push_back(std::string(key) + " mismatch: " + m.get<std::string>());
    if (const J un = par.value("unassigned", J::object()); u(un, "tensors"))
        anomalies.push_back(groupDigits(u(un, "tensors")) + " tensors of no known role (" +
                            groupDigits(u(un, "parameters")) + " parameters)");
    if (const auto b = report.find("biases"); b != report.end() && b->is_object()) {
        const J sum = b->value("summary", J::object());
        if (u(sum, "layers_losing_levels"))
            anomalies.push_back("router biases lose levels in BF16 on " + groupDigits(u(sum, "layers_losing_levels")) +
                                " of " + groupDigits(u(sum, "tensors")) + " layers (as few as " +
                                groupDigits(u(sum, "min_bf16_distinct")) + " distinct values); with zero logits " +
                                groupDigits(u(sum, "layers_changed_at_zero_logits")) + " layers route differently");
    }
    for (const auto &w : report.value("warnings", J::array()))
        if (w.is_string()) anomalies.push_back(w.get<std::string>());
    if (anomalies.empty()) {
        para("None found.");
    } else {
        html += "<ul>\n";
        for (const auto &a : anomalies) {
            md += "- " + a + "\n";
            html += "<li class=bad>" + htmlEscape(a) + "</li>\n";
        }
        md += "\n";
        html += "</ul>\n";
    }
    html += "</body></html>\n";
    out.markdown = std::move(md);
    out.html = std::move(html);
    return out;
}

} // namespace atlas
