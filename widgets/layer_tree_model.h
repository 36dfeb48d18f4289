#pragma once

#include "loaded_checkpoint.h"

#include <QAbstractItemModel>

#include <array>

#include <memory>
#include <vector>

namespace atlas {

// layer -> module -> tensor, with the routed experts of a layer grouped under one row.
// Aggregate rows sum parameters (quantization scales excluded) and bytes (everything).
class LayerTreeModel final : public QAbstractItemModel
{
    Q_OBJECT
public:
    enum Column { Name, Dtype, Shape, Parameters, Bytes, Shard, ColumnCount };
    enum Role {
        SortRole = Qt::UserRole,
        KindRole,
    };
    enum class Kind { Group, Layer, Module, Experts, Expert, Tensor };

    struct Node
    {
        QString name;
        int parent = -1;
        int row = 0;
        std::vector<int> children;
        Kind kind = Kind::Group;
        const TensorInfo *tensor = nullptr;
        std::uint64_t parameters = 0;
        std::uint64_t bytes = 0;
        QString dtypes; // "F8_E4M3", or what is below it, by dtype order: "BF16 + F8_E4M3" (scales apart)
        std::uint64_t dtypeMask = 0; // bit d: a weight (not a scale) of Dtype d below (kDtypeCount <= 64)
        QString note;   // layer: "moe · indexer full"
    };
    // The rows of one checkpoint, built once and never changed: node 0 is the invisible root, and
    // children always come after their parent. Its tensor pointers point into the checkpoint.
    struct Tree
    {
        std::vector<Node> nodes;
        int tensors = 0;
        // Every tensor's name, ASCII lower-case, each followed by '\n', in one block (the filter searches
        // it in one pass), with where each starts and its node, in block order.
        std::string folded;
        std::vector<std::uint32_t> foldedStart;
        std::vector<int> foldedNode;
        // Per name, the set of its letter pairs hashed into 128 bits: a name lacking one of the needle's
        // pairs cannot contain it, so most names are passed over without reading them.
        std::vector<std::array<std::uint64_t, 2>> foldedPairs;
        static std::array<std::uint64_t, 2> pairsOf(std::string_view folded);
        int add(int parent, const QString &name, Kind kind);
    };
    // A pure function of the checkpoint: it may run on any thread (the window builds it off the GUI
    // thread while loading, so that showing 118,629 tensors costs the GUI thread a model reset).
    static std::shared_ptr<const Tree> buildTree(const LoadedCheckpoint &data);

    explicit LayerTreeModel(QObject *parent = nullptr);
    void setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data); // builds the tree here
    void setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data, std::shared_ptr<const Tree> tree);

    QModelIndex index(int row, int column, const QModelIndex &parent = {}) const override;
    QModelIndex parent(const QModelIndex &child) const override;
    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    int tensorCount() const { return m_tree->tensors; }
    const std::shared_ptr<const LoadedCheckpoint> &checkpoint() const { return m_data; }

    // Marks the tensors whose full name contains `text` (ignoring case) and every row above them;
    // a proxy then shows the marked rows (isShown). An empty text shows everything.
    void setFilter(const QString &text);
    std::size_t matchCount() const { return m_matches; }
    bool isShown(int row, const QModelIndex &parent) const;

private:
    std::shared_ptr<const LoadedCheckpoint> m_data;
    std::shared_ptr<const Tree> m_tree = std::make_shared<const Tree>(Tree{{Node{}}, 0, {}, {}, {}, {}});
    // With a filter, per node: 0 when the filter hides it, else 1 + its place in m_matched. Without a filter
    // it is empty (every row is shown) and so is m_matched.
    std::vector<std::uint32_t> m_shown;
    // With a filter, each shown row's sums over the tensors that match (without: the node's own). Held for
    // the shown rows only: a filter's first use fills no array as long as the tree, which on a virtual machine
    // cost 9-13 ms of fresh pages on the GUI thread.
    struct Matched
    {
        std::uint64_t parameters = 0, bytes = 0;
    };
    std::vector<Matched> m_matched;
    QString m_filter;
    std::size_t m_matches = 0;
};

} // namespace atlas
