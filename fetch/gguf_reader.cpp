#include "gguf_reader.h"

#include "errors.h"
#include "gguf.h"
#include "gguf_config.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <unordered_set>

namespace atlas {

namespace {

// A first file's header holds the tokenizer (2–10 MB); the other parts of a split hold their tensor infos
// (tens of kB). What one range asks for first; a longer header is read on with what the parse estimates.
constexpr std::uint64_t kFirstRead = 4ull << 20;
constexpr std::uint64_t kPartRead = 256ull << 10;

std::string lower(std::string_view s)
{
    std::string out(s);
    for (auto &c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

std::string baseName(std::string_view path)
{
    const auto slash = path.rfind('/');
    return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

// A set's key: the folder and stem of a split ("UD-Q2_K_XL/GLM-5-UD-Q2_K_XL of 6"), or the file itself.
std::string setKey(const std::string &file)
{
    if (const auto split = ggufSplitName(baseName(file))) {
        const auto slash = file.rfind('/');
        const std::string folder = slash == std::string::npos ? "" : file.substr(0, slash + 1);
        return folder + split->stem + "-*-of-" + std::to_string(split->count) + ".gguf";
    }
    return file;
}

std::vector<std::string> partsOf(const std::string &file)
{
    const auto slash = file.rfind('/');
    const std::string folder = slash == std::string::npos ? "" : file.substr(0, slash + 1);
    std::vector<std::string> out;
    for (auto &name : ggufSplitFiles(baseName(file)))
        out.push_back(folder + name);
    return out;
}

// Vision projectors and MTP-only files sit beside the model in the same repositories (mmproj-F16.gguf,
// mtp-*.gguf): never the model unless a pattern asks for them.
bool companion(const std::string &file)
{
    const std::string base = lower(baseName(file));
    return base.starts_with("mmproj") || base.starts_with("mtp-");
}

// Every part of a set among the files at hand, or the first one missing named.
void requireParts(const std::vector<std::string> &parts, const std::set<std::string> &have, const std::string &location)
{
    for (const auto &p : parts)
        if (!have.count(p))
            throw AtlasError(ErrorKind::Source,
                             location + ": " + p + " is missing" +
                                 (parts.size() > 1 ? " (part of a split of " + std::to_string(parts.size()) + " files)" : std::string()),
                             HeaderProblem::MissingFile);
}

} // namespace

bool listsOnlyGguf(const std::vector<std::string> &available)
{
    bool gguf = false;
    for (const auto &f : available) {
        if (f.find('/') == std::string::npos && (f.ends_with(".safetensors") || f == "model.safetensors.index.json"))
            return false;
        gguf = gguf || f.ends_with(".gguf");
    }
    return gguf;
}

// A path inside the source: no empty, "." or ".." segment, not absolute, no backslash (a listing or a URL is
// the server's; the name also becomes a header-cache path).
bool safeRelativePath(std::string_view p)
{
    if (p.empty() || p.front() == '/' || p.find('\\') != std::string_view::npos) return false;
    for (std::size_t start = 0;;) {
        const auto slash = p.find('/', start);
        const std::string_view seg = p.substr(start, slash == std::string_view::npos ? std::string_view::npos : slash - start);
        if (seg.empty() || seg == "." || seg == "..") return false;
        if (slash == std::string_view::npos) return true;
        start = slash + 1;
    }
}

std::vector<std::string> chooseGgufFiles(const std::vector<std::string> &available, const GgufSelection &selection,
                                         const std::string &location)
{
    if (!selection.file.empty() && !safeRelativePath(selection.file))
        throw AtlasError(ErrorKind::Usage, selection.file + ": not a file name inside the source", HeaderProblem::UnsafeFileName);
    if (!selection.file.empty()) {
        if (!selection.file.ends_with(".gguf"))
            throw AtlasError(ErrorKind::Usage, selection.file + ": not a .gguf file");
        std::vector<std::string> parts = partsOf(selection.file);
        if (!available.empty()) requireParts(parts, {available.begin(), available.end()}, location);
        return parts;
    }
    // Sets of the listing's .gguf files, kept whole; a pattern keeps those whose path contains it.
    const std::string want = lower(selection.pattern);
    std::map<std::string, std::vector<std::string>> sets;
    for (const auto &f : available) {
        if (!f.ends_with(".gguf") || !safeRelativePath(f)) continue; // a listing's name outside the repository: never read
        if (want.empty() ? companion(f) : lower(f).find(want) == std::string::npos) continue;
        sets[setKey(f)].push_back(f);
    }
    auto named = [&](std::size_t most) {
        std::string list;
        std::size_t n = 0;
        for (const auto &[key, files] : sets) {
            if (n++ == most) {
                list += ", and " + std::to_string(sets.size() - most) + " more";
                break;
            }
            list += (list.empty() ? "" : ", ") + key;
        }
        return list;
    };
    if (sets.empty())
        throw AtlasError(ErrorKind::Source,
                         location + (want.empty() ? std::string(": no .gguf file")
                                                  : ": no .gguf file's path contains '" + selection.pattern + "'"),
                         HeaderProblem::MissingFile);
    if (sets.size() > 1)
        throw AtlasError(ErrorKind::Usage, location + ": " +
                                               (want.empty() ? std::string("holds ") + std::to_string(sets.size()) + " GGUF sets"
                                                             : "'" + selection.pattern + "' matches " +
                                                                   std::to_string(sets.size()) + " GGUF sets") +
                                               " (" + named(8) + "); choose one with --gguf PATTERN");
    const std::vector<std::string> &files = sets.begin()->second;
    std::vector<std::string> parts = partsOf(files.front());
    requireParts(parts, {files.begin(), files.end()}, location);
    return parts;
}

Checkpoint readGgufCheckpoint(ByteSource &source, const std::vector<std::string> &files, const ReadOptions &options)
{
    Checkpoint ckpt;
    ckpt.format = CheckpointFormat::Gguf;
    LoadProgress progress;
    progress.filesTotal = files.size();
    auto report = [&] {
        progress.bytes = source.bytesReceived();
        progress.requests = source.requestsMade();
        if (options.progress) options.progress(progress);
    };
    struct Pending
    {
        std::string file;
        std::string bytes;
        std::uint64_t fileSize = 0;
        std::uint64_t want = 0;
        std::optional<GgufHeader> header;
        bool cached = false;
    };
    std::vector<Pending> pending(files.size());
    for (std::size_t i = 0; i < files.size(); ++i) {
        pending[i].file = files[i];
        pending[i].want = i == 0 ? kFirstRead : kPartRead;
    }
    std::uint64_t held = 0;
    // Headers already read for this commit (the Hub's cache): parsed from the disk, no request.
    if (options.cache)
        for (auto &p : pending) {
            auto c = options.cache->shard(p.file, options.headerBudget > held ? options.headerBudget - held : 0);
            if (!c) continue;
            GgufParse parse = parseGgufHeader(p.file, c->header, c->fileSize);
            if (!parse.header) continue; // a cut entry: read again
            held += c->header.size();
            p.fileSize = c->fileSize;
            p.header = std::move(parse.header);
            p.cached = true;
            ++progress.filesDone;
        }
    for (;;) {
        std::vector<RangeRequest> requests;
        std::vector<std::size_t> which;
        for (std::size_t i = 0; i < pending.size(); ++i) {
            Pending &p = pending[i];
            if (p.header) continue;
            const std::uint64_t from = p.bytes.size();
            if (p.want <= from) continue;
            if (held + (p.want - from) > options.headerBudget)
                throw AtlasError(ErrorKind::Invalid, p.file + ": the GGUF headers of this set hold more than " +
                                                         std::to_string(options.headerBudget) +
                                                         " bytes in all (the limit); stopped here");
            held += p.want - from;
            requests.push_back({p.file, from, p.want - from});
            which.push_back(i);
        }
        if (requests.empty()) break;
        stopIfCancelled(source.cancelFlag());
        std::vector<RangeAnswer> answers = source.readRanges(requests);
        stopIfCancelled(source.cancelFlag());
        for (std::size_t k = 0; k < answers.size(); ++k) {
            Pending &p = pending[which[k]];
            p.fileSize = answers[k].fileSize;
            if (p.fileSize > kMaxFileSize)
                throw AtlasError(ErrorKind::Invalid, p.file + ": " + std::to_string(p.fileSize) +
                                                         " bytes is larger than any file this program reads");
            p.bytes += answers[k].bytes;
            GgufParse parse = parseGgufHeader(p.file, p.bytes, p.fileSize);
            if (parse.header) {
                if (options.cache) // the header's own bytes, for the next open of this commit
                    options.cache->storeShard(p.file, {p.bytes.substr(0, std::size_t(parse.header->headerEnd)), p.fileSize});
                p.header = std::move(parse.header);
                // The header stays charged: what it was read from bounds what its parse holds.
                std::string().swap(p.bytes);
                ++progress.filesDone;
            } else {
                if (answers[k].bytes.size() < requests[k].length && p.bytes.size() >= p.fileSize)
                    throw AtlasError(ErrorKind::Invalid, p.file + ": file ended inside its header");
                if (answers[k].bytes.empty())
                    throw AtlasError(ErrorKind::Source, p.file + ": the server sent no bytes of the range asked for");
                p.want = std::max(parse.wanted, p.bytes.size() + 1);
            }
        }
        report();
    }

    // The set, checked part by part: the first holds the metadata, every part says where it stands.
    const std::size_t n = pending.size();
    std::uint64_t tensors = 0;
    std::unordered_set<std::string_view> names;
    for (std::size_t i = 0; i < n; ++i) {
        const GgufHeader &h = *pending[i].header;
        const auto no = h.splitNumber();
        const auto count = h.splitCount();
        // split.no and split.count are u16 in llama.cpp's gguf-split: anything else is refused before any sum.
        if ((no && (*no < 0 || *no > 65535)) || (count && (*count < 0 || *count > 65535)))
            throw AtlasError(ErrorKind::Invalid, pending[i].file + ": split.no or split.count is outside 0..65535");
        if (n > 1) {
            if (!no || !count)
                throw AtlasError(ErrorKind::Invalid, pending[i].file + ": a part of a split without split.no and split.count");
            if (*no != static_cast<std::int64_t>(i) || *count != static_cast<std::int64_t>(n))
                throw AtlasError(ErrorKind::Invalid, pending[i].file + ": says it is part " + std::to_string(*no + 1) +
                                                         " of " + std::to_string(*count) + ", but its name makes it part " +
                                                         std::to_string(i + 1) + " of " + std::to_string(n));
        } else if (count && *count > 1) {
            throw AtlasError(ErrorKind::Invalid, pending[i].file + ": is part " + std::to_string(no.value_or(0) + 1) +
                                                     " of a split of " + std::to_string(*count) +
                                                     " files; open the set (its files are named NAME-0000K-of-0000N.gguf)");
        }
        for (const auto &t : h.shard.tensors)
            if (!names.insert(t.name).second)
                throw AtlasError(ErrorKind::Invalid, pending[i].file + ": tensor '" + std::string(t.name) +
                                                         "' is in an earlier part of the split too");
        tensors += h.shard.tensors.size();
    }
    const GgufHeader &first = *pending.front().header;
    if (first.architecture().empty())
        throw AtlasError(ErrorKind::Invalid, pending.front().file + ": no general.architecture in its metadata");
    if (n > 1)
        if (auto declared = first.integer("split.tensors.count"); declared && *declared != static_cast<std::int64_t>(tensors))
            throw AtlasError(ErrorKind::Invalid, pending.front().file + ": split.tensors.count says " +
                                                     std::to_string(*declared) + " tensors; the " + std::to_string(n) +
                                                     " parts hold " + std::to_string(tensors));
    bool correctionBias = false;
    for (const auto &p : pending)
        for (const auto &t : p.header->shard.tensors)
            correctionBias = correctionBias || t.name.ends_with(".exp_probs_b.bias");
    ckpt.config = ggufModelConfig(first, correctionBias);
    ckpt.hasConfig = true;
    ckpt.ggufArchitecture = first.architecture();
    for (auto &w : ckpt.config.warnings)
        ckpt.warnings.push_back("GGUF metadata: " + w);
    ckpt.source = source.info();
    ckpt.shards.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        ShardHeader shard = std::move(pending[i].header->shard);
        for (auto &t : shard.tensors)
            t.shard = static_cast<std::uint32_t>(i);
        ckpt.shards.push_back(std::move(shard));
    }
    std::uint64_t total = 0;
    for (const auto &s : ckpt.shards)
        total += s.fileSize;
    if (total > kMaxCheckpointBytes)
        throw AtlasError(ErrorKind::Invalid, source.info().location + ": the GGUF files hold " + std::to_string(total) +
                                                 " bytes in all, more than the limit");
    report();
    return ckpt;
}

} // namespace atlas
