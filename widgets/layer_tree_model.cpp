#include "layer_tree_model.h"

#include "roles.h"

#include "atlas_view.h"
#include "checkpoint_index.h"

#include <QBrush>
#include <QFont>
#include <QStringList>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>

namespace atlas {

LayerTreeModel::LayerTreeModel(QObject *parent) : QAbstractItemModel(parent) {}

namespace {

// A name as the tree shows it: control characters (a header may hold ESC, BEL or NUL in a tensor
// name) as \xNN, as the command line prints them; most names pass through untouched.
QString visibleName(const QString &name)
{
    const auto control = [](QChar c) { return c.unicode() < 0x20 || (c.unicode() >= 0x7F && c.unicode() <= 0x9F); };
    if (std::none_of(name.begin(), name.end(), control)) return name;
    QString out;
    for (QChar c : name)
        out += control(c) ? QStringLiteral("\\x%1").arg(c.unicode(), 2, 16, QLatin1Char('0')) : QString(c);
    return out;
}

} // namespace

int LayerTreeModel::Tree::add(int parent, const QString &name, Kind kind)
{
    Node n;
    n.name = visibleName(name);
    n.parent = parent;
    n.kind = kind;
    n.row = static_cast<int>(nodes[static_cast<std::size_t>(parent)].children.size());
    nodes.push_back(std::move(n));
    const int id = static_cast<int>(nodes.size() - 1);
    nodes[static_cast<std::size_t>(parent)].children.push_back(id);
    return id;
}

void LayerTreeModel::setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data)
{
    std::shared_ptr<const Tree> tree = data ? buildTree(*data) : nullptr;
    setCheckpoint(std::move(data), std::move(tree));
}

void LayerTreeModel::setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data,
                                   std::shared_ptr<const Tree> tree)
{
    beginResetModel();
    m_data = data && tree ? std::move(data) : nullptr;
    m_tree = m_data ? std::move(tree) : std::make_shared<const Tree>(Tree{{Node{}}, 0, {}, {}, {}, {}}); // the root alone
    m_shown = {}; // every row shown: no array (on the GUI thread, a tree-long one cost 2-3 ms of fresh pages)
    m_matched.clear();
    m_filter.clear();
    m_matches = static_cast<std::size_t>(m_tree->tensors);
    endResetModel();
}

namespace {
// ASCII case folding, the filter's on both sides: names and needle.
char asciiLower(char c)
{
    return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c;
}
} // namespace

std::array<std::uint64_t, 2> LayerTreeModel::Tree::pairsOf(std::string_view folded)
{
    std::array<std::uint64_t, 2> bits{0, 0};
    for (std::size_t i = 1; i < folded.size(); ++i) {
        const unsigned h = (static_cast<unsigned char>(folded[i - 1]) * 31u + static_cast<unsigned char>(folded[i])) * 0x9E3779B1u >> 25; // 0..127
        bits[h >> 6] |= std::uint64_t(1) << (h & 63);
    }
    return bits;
}

std::shared_ptr<const LayerTreeModel::Tree> LayerTreeModel::buildTree(const LoadedCheckpoint &data)
{
    auto tree = std::make_shared<Tree>();
    Tree &t = *tree;
    std::vector<Node> &nodes = t.nodes;
    const Checkpoint &c = data.checkpoint;
    const CheckpointAnalysis &a = data.analysis;
    // Room for the rows at once: a tensor makes at most three (an expert's, a module's and its own; GLM-5 made
    // 197,726 rows for 118,629 tensors), and the room not used is only address space. Growing by doubling copied
    // every row made so far each time, into memory never touched before: a third of the build.
    nodes.reserve(c.tensorCount() * 3 + a.layers.size() * 2 + 64);
    nodes.push_back({}); // the invisible root

    // Collect tensors by layer (-1: outside layers), then by module path, in natural order.
    struct Entry
    {
        std::string_view rest;
        const TensorInfo *tensor;
    };
    std::map<int, std::vector<Entry>> byLayer;
    for (const auto &s : c.shards)
        for (const auto &tensor : s.tensors) {
            // Layer numbers the model does not have stay with the tensors outside layers.
            const int layer = a.layerOf(tensor.name);
            byLayer[layer].push_back(
                {layer < 0                             ? std::string_view(tensor.name)
                 : mtpBlockPlace(tensor.name) ? mtpBlockPlace(tensor.name)->rest
                                              : placeOf(tensor.name).rest,
                 &tensor});
        }

    auto moduleOf = [](std::string_view rest) {
        const auto dot = rest.rfind('.');
        return dot == std::string_view::npos ? std::string_view() : rest.substr(0, dot);
    };
    for (auto &[layer, entries] : byLayer) {
        std::sort(entries.begin(), entries.end(),
                  [](const Entry &x, const Entry &y) { return naturalLess(x.rest, y.rest); });
        int layerNode;
        if (layer < 0) {
            layerNode = t.add(0, tr("Embedding, final norm and head"), Kind::Group);
        } else {
            const LayerInfo &info = a.layers[static_cast<std::size_t>(layer)];
            QString name =
                info.kind == LayerKind::Mtp ? tr("MTP layer %1").arg(layer) : tr("Layer %1").arg(layer);
            layerNode = t.add(0, name, Kind::Layer);
            QString note = qs(std::string(layerKindName(info.kind)));
            // The schedule's attention kind when the layers are not all alike (hybrid and compressed models).
            if (!a.scheduleSource.empty() && info.attention != "none" && info.kind != LayerKind::Mtp)
                note += QStringLiteral(" · ") + qs(info.attention);
            if (info.compressRatio > 0) note += tr(" (1 row per %1 tokens)").arg(info.compressRatio);
            if (info.hashRouted) note += tr(" · hash-routed");
            if (info.indexer != IndexerRole::None)
                note += QStringLiteral(" · indexer ") + qs(std::string(indexerRoleName(info.indexer)));
            if (info.indexer == IndexerRole::Shared && info.reusesLayer >= 0)
                note += tr(" (reuses layer %1)").arg(info.reusesLayer);
            nodes[static_cast<std::size_t>(layerNode)].note = note;
        }
        std::map<std::string_view, int> modules;
        int expertsNode = -1;
        std::map<std::string_view, int> experts;
        for (const Entry &e : entries) {
            int parent = layerNode;
            std::string_view rest = e.rest;
            // "mlp.experts.7.w1.weight" groups under expert 7; a bare "mlp.experts.7" is a tensor there.
            if (layer >= 0 && rest.size() > 12 && rest.substr(0, 12) == "mlp.experts.") {
                if (expertsNode < 0) expertsNode = t.add(layerNode, QString(), Kind::Experts);
                const std::string_view afterPrefix = rest.substr(12);
                const std::string_view expert = afterPrefix.substr(0, afterPrefix.find('.'));
                auto [it, fresh] = experts.try_emplace(expert, 0);
                if (fresh)
                    it->second =
                        t.add(expertsNode,
                              tr("expert %1").arg(QString::fromUtf8(expert.data(), int(expert.size()))),
                              Kind::Expert);
                parent = it->second;
                rest = expert.size() < afterPrefix.size() ? afterPrefix.substr(expert.size() + 1) : expert;
            }
            const std::string_view module = layer < 0 ? std::string_view() : moduleOf(rest);
            if (!module.empty()) {
                // Modules of an expert key on the full path so that two experts do not share one.
                const std::string_view key =
                    parent == layerNode
                        ? module
                        : std::string_view(e.rest).substr(0, e.rest.size() - rest.size() + module.size());
                auto [it, fresh] = modules.try_emplace(key, 0);
                if (fresh)
                    it->second =
                        t.add(parent, QString::fromUtf8(module.data(), int(module.size())), Kind::Module);
                parent = it->second;
                rest = rest.substr(module.size() + 1);
            }
            const int leaf = t.add(parent, QString::fromUtf8(rest.data(), int(rest.size())), Kind::Tensor);
            nodes[static_cast<std::size_t>(leaf)].tensor = e.tensor;
            ++t.tensors;
        }
        if (expertsNode >= 0)
            nodes[static_cast<std::size_t>(expertsNode)].name =
                tr("mlp.experts (%1 experts)").arg(experts.size());
    }

    // The filter's block of folded names, in node order.
    std::size_t chars = 0;
    for (const Node &n : nodes)
        if (n.tensor) chars += n.tensor->name.size() + 1;
    t.folded.reserve(chars);
    t.foldedStart.reserve(static_cast<std::size_t>(t.tensors));
    t.foldedNode.reserve(static_cast<std::size_t>(t.tensors));
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        const TensorInfo *tensor = nodes[i].tensor;
        if (!tensor) continue;
        const std::size_t start = t.folded.size();
        t.foldedStart.push_back(static_cast<std::uint32_t>(start));
        t.foldedNode.push_back(static_cast<int>(i));
        for (const char ch : tensor->name)
            t.folded.push_back(asciiLower(ch));
        t.foldedPairs.push_back(Tree::pairsOf(std::string_view(t.folded).substr(start)));
        t.folded.push_back('\n');
    }

    // A row's formats as text, one string per dtype or set of dtypes, shared by every row that shows it (not
    // one allocation a row).
    std::array<QString, kDtypeCount> dtypeText;
    for (unsigned d = 0; d < kDtypeCount; ++d)
        dtypeText[d] = qs(std::string(dtypeName(static_cast<atlas::Dtype>(d))));
    std::map<std::uint64_t, QString> dtypesText;
    // Aggregate bottom-up: children always come after their parent.
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
        Node &n = *it;
        if (n.tensor) {
            n.bytes = n.tensor->bytes();
            n.parameters = a.parametersOf(*n.tensor); // logical elements of packed weights; scales 0
            n.dtypes = dtypeText[static_cast<std::size_t>(n.tensor->dtype)];
            // Scales do not count among the formats of what is above them.
            if (!isQuantScale(n.tensor->name, n.tensor->dtype)) n.dtypeMask = std::uint64_t(1) << static_cast<unsigned>(n.tensor->dtype);
        } else {
            auto [text, fresh] = dtypesText.try_emplace(n.dtypeMask);
            if (fresh) {
                QStringList names; // "BF16 + F8_E4M3": every format below, in dtype order
                static_assert(kDtypeCount <= 64);
                for (unsigned d = 0; d < kDtypeCount; ++d)
                    if (n.dtypeMask & (std::uint64_t(1) << d)) names << dtypeText[d];
                text->second = names.join(QStringLiteral(" + "));
            }
            n.dtypes = text->second;
        }
        if (n.parent < 0) continue;
        Node &p = nodes[static_cast<std::size_t>(n.parent)];
        p.bytes += n.bytes;
        p.parameters += n.parameters;
        p.dtypeMask |= n.dtypeMask;
    }
    return tree;
}

void LayerTreeModel::setFilter(const QString &text)
{
    // ASCII case folding on both sides: tensor names are ASCII in practice, and anything else
    // still matches byte for byte. A match shows its tensor and every row above it.
    m_filter = text;
    const auto &nodes = m_tree->nodes;
    if (text.isEmpty()) {
        m_shown.clear(); // its room is kept for the next filter
        m_matches = static_cast<std::size_t>(m_tree->tensors);
        m_matched.clear();
        return;
    }
    std::string needle = text.toUtf8().toStdString();
    std::transform(needle.begin(), needle.end(), needle.begin(), asciiLower);
    m_shown.assign(nodes.size(), 0);
    // Room for every row once (the pages are touched only as rows are shown), so that a filter that shows
    // most of the tree never copies the list as it grows.
    m_matched.reserve(nodes.size());
    m_matched.assign(1, Matched{}); // the root's
    m_shown[0] = 1;
    m_matches = 0;
    // Each name whose letter pairs include the needle's is searched (memmem over that name alone);
    // the others cannot hold it. A name never holds '\n', so the block's names are searched one by one.
    const std::string &block = m_tree->folded;
    const auto &starts = m_tree->foldedStart;
    const auto want = Tree::pairsOf(needle);
    for (std::size_t k = 0; k < starts.size(); ++k) {
        const auto &have = m_tree->foldedPairs[k];
        if ((have[0] & want[0]) != want[0] || (have[1] & want[1]) != want[1]) continue;
        const std::size_t from = starts[k];
        const std::size_t length = (k + 1 < starts.size() ? starts[k + 1] : block.size()) - 1 - from;
        if (!memmem(block.data() + from, length, needle.data(), needle.size())) continue;
        // The tensor and every row above it, each summing what matches below it.
        const Node &leaf = nodes[static_cast<std::size_t>(m_tree->foldedNode[k])];
        for (int n = m_tree->foldedNode[k]; n >= 0; n = nodes[static_cast<std::size_t>(n)].parent) {
            std::uint32_t &slot = m_shown[static_cast<std::size_t>(n)];
            if (slot == 0) {
                m_matched.emplace_back();
                slot = static_cast<std::uint32_t>(m_matched.size());
            }
            Matched &sum = m_matched[slot - 1];
            sum.parameters += leaf.parameters;
            sum.bytes += leaf.bytes;
        }
        ++m_matches;
    }
}

bool LayerTreeModel::isShown(int row, const QModelIndex &parent) const
{
    const int p = parent.isValid() ? static_cast<int>(parent.internalId()) : 0;
    const auto &children = m_tree->nodes[static_cast<std::size_t>(p)].children;
    if (row < 0 || row >= static_cast<int>(children.size())) return false;
    return m_shown.empty() || m_shown[static_cast<std::size_t>(children[static_cast<std::size_t>(row)])] != 0;
}

QModelIndex LayerTreeModel::index(int row, int column, const QModelIndex &parent) const
{
    const int p = parent.isValid() ? static_cast<int>(parent.internalId()) : 0;
    const auto &children = m_tree->nodes[static_cast<std::size_t>(p)].children;
    if (row < 0 || row >= static_cast<int>(children.size()) || column < 0 || column >= ColumnCount) return {};
    return createIndex(row, column, quintptr(children[static_cast<std::size_t>(row)]));
}

QModelIndex LayerTreeModel::parent(const QModelIndex &child) const
{
    if (!child.isValid()) return {};
    const Node &n = m_tree->nodes[child.internalId()];
    if (n.parent <= 0) return {};
    return createIndex(m_tree->nodes[static_cast<std::size_t>(n.parent)].row, 0, quintptr(n.parent));
}

int LayerTreeModel::rowCount(const QModelIndex &parent) const
{
    if (parent.isValid() && parent.column() != 0) return 0;
    const int p = parent.isValid() ? static_cast<int>(parent.internalId()) : 0;
    return static_cast<int>(m_tree->nodes[static_cast<std::size_t>(p)].children.size());
}

int LayerTreeModel::columnCount(const QModelIndex &) const
{
    return ColumnCount;
}

QVariant LayerTreeModel::data(const QModelIndex &index, int role) const
{
    if (!index.isValid()) return {};
    const Node &n = m_tree->nodes[index.internalId()];
    // A filter totals what it matched: a layer row sums its matching tensors only.
    const bool filtered = !m_matched.empty();
    const std::uint32_t slot = filtered ? m_shown[index.internalId()] : 1;
    const Matched matched = filtered && slot != 0 ? m_matched[slot - 1] : Matched{};
    const std::uint64_t parameters = filtered ? matched.parameters : n.parameters;
    const std::uint64_t bytes = filtered ? matched.bytes : n.bytes;
    if (role == KindRole) return static_cast<int>(n.kind);
    if (role == SortRole) {
        switch (index.column()) {
        case Parameters:
            return QVariant::fromValue<qulonglong>(parameters);
        case Bytes:
            return QVariant::fromValue<qulonglong>(bytes);
        case Name:
            // Natural order is the model's own order: sort by position.
            return QVariant::fromValue<qulonglong>(static_cast<qulonglong>(index.internalId()));
        default:
            return data(index, Qt::DisplayRole);
        }
    }
    if (role == Qt::TextAlignmentRole && (index.column() == Parameters || index.column() == Bytes))
        return int(Qt::AlignRight | Qt::AlignVCenter);
    if (role == Qt::FontRole && index.column() == Name && (n.kind == Kind::Layer || n.kind == Kind::Group)) {
        QFont f;
        f.setWeight(QFont::DemiBold);
        return f;
    }
    if (role == Qt::ToolTipRole && index.column() == Bytes)
        return filtered && !n.tensor ? tr("%1 bytes in the matching tensors (%2 in all)").arg(groupDigitsQ(bytes), groupDigitsQ(n.bytes))
                                     : tr("%1 bytes").arg(groupDigitsQ(bytes));
    if (role == Qt::ToolTipRole && n.tensor) return qs(std::string(n.tensor->name));
    if (role != Qt::DisplayRole) return {};
    switch (index.column()) {
    case Name:
        return n.note.isEmpty() ? n.name : n.name + QStringLiteral("   ·   ") + n.note;
    case Dtype:
        return n.dtypes;
    case Shape: {
        if (!n.tensor) return {};
        QStringList dims;
        for (auto d : n.tensor->shape)
            dims << QString::number(d);
        return QString(QLatin1Char('[') + dims.join(QStringLiteral(", ")) + QLatin1Char(']'));
    }
    case Parameters:
        return parameters ? groupDigitsQ(parameters) : QString();
    case Bytes: // readable at a glance; the exact count is the tooltip, and the sort uses it
        return binaryBytesQ(bytes);
    case Shard:
        return n.tensor ? qs(m_data->checkpoint.shards[n.tensor->shard].file) : QString();
    default:
        return {};
    }
}

QVariant LayerTreeModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
    case Name:
        return tr("Name");
    case Dtype:
        return tr("Dtype");
    case Shape:
        return tr("Shape");
    case Parameters:
        return tr("Parameters");
    case Bytes:
        return tr("Stored");
    case Shard:
        return tr("Shard");
    default:
        return {};
    }
}

} // namespace atlas
