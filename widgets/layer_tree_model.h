#pragma once

#include "loaded_checkpoint.h"

#include <QAbstractItemModel>

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
        FilterRole /* a tensor's full name, else the row's name */
    };
    enum class Kind { Group, Layer, Module, Experts, Expert, Tensor };

    explicit LayerTreeModel(QObject *parent = nullptr);
    void setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data);

    QModelIndex index(int row, int column, const QModelIndex &parent = {}) const override;
    QModelIndex parent(const QModelIndex &child) const override;
    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    int tensorCount() const { return m_tensors; }
    const std::shared_ptr<const LoadedCheckpoint> &checkpoint() const { return m_data; }
    // Tensors whose full name contains `text`, ignoring case: what the Layers filter shows.
    std::size_t countMatching(const QString &text) const;

private:
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
        QString dtypes; // "F8_E4M3" or "mixed"
        QString note;   // layer: "moe · indexer full"
    };
    int addNode(int parent, const QString &name, Kind kind);
    void build(); // the nodes of m_data, inside a model reset
    std::shared_ptr<const LoadedCheckpoint> m_data;
    std::vector<Node> m_nodes; // node 0 is the invisible root
    int m_tensors = 0;
};

} // namespace atlas
