#pragma once

#include "anatomy.h"
#include "atlas_view.h"

#include <QRectF>

class QComboBox;
class QBoxLayout;
class QScrollArea;

namespace atlas {

// The layer stack: one card per run of like layers, a cell per layer coloured by its attention kind (one colour
// language on every model), its DSA indexer role a second channel (a dot: owns one; a ring: reuses one), the
// first layer number of each row beside it, and a swatch legend of what is shown; the selected layer is outlined
// and, when it shares an indexer, an arc joins it to its source.
class LayerStackWidget final : public QWidget
{
    Q_OBJECT
public:
    explicit LayerStackWidget(QWidget *parent = nullptr);
    void setRuns(std::vector<StackRun> runs);
    void setSelectedLayer(int layer);
    // Cells carry indexer marks in a model with DSA indexers.
    bool showsIndexerRoles() const { return m_indexed; }
    // The legend's entries as drawn ("MLA", "owns a DSA indexer", ...), for tests.
    QStringList legendTexts() const;
    QSize sizeHint() const override;
    // Cells and text this many times their size (the view's zoom).
    void setZoom(double zoom);
    double zoom() const { return m_zoom; }

signals:
    void layerClicked(int layer);

protected:
    void paintEvent(QPaintEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    bool event(QEvent *event) override;

private:
    void layout();
    std::vector<StackRun> m_runs;
    std::vector<QRectF> m_cards;
    std::vector<std::pair<int, QRectF>> m_cells; // layer, cell
    struct RowLabel
    {
        int layer;
        QRectF rect;
    };
    std::vector<RowLabel> m_rowLabels; // the first layer of each row of cells
    struct LegendEntry
    {
        QColor colour;
        int mark; // 0 a swatch of that colour, 1 a dot (owns an indexer), 2 a ring (reuses one)
        QString text;
        QRectF rect;
    };
    std::vector<LegendEntry> m_legend;
    double cell() const;
    double gap() const;
    int m_selected = -1;
    int m_height = 0;
    bool m_indexed = false;
    double m_zoom = 1;
};

// One layer's block diagram, painted as vectors; the boxes carry their tensors for hover and click.
class LayerDiagramWidget final : public QWidget
{
    Q_OBJECT
public:
    explicit LayerDiagramWidget(QWidget *parent = nullptr);
    void setAnatomy(LayerAnatomy anatomy);
    const LayerAnatomy &anatomy() const { return m_anatomy; }
    // Text and blocks this many times their size; the blocks stop widening at a readable line length.
    void setZoom(double zoom);
    double zoom() const { return m_zoom; }
    int readableWidth() const; // the widest the diagram is laid out at this zoom

signals:
    void boxClicked(const QStringList &tensors);
    void zoomRequested(int steps); // Ctrl + the wheel

protected:
    void paintEvent(QPaintEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    bool event(QEvent *event) override;
    void mousePressEvent(QMouseEvent *event) override;
    void wheelEvent(QWheelEvent *event) override;
    // By keyboard: the arrow keys move a focus ring over the blocks that hold tensors, Enter or Space opens
    // the one ringed (as a click does).
    void keyPressEvent(QKeyEvent *event) override;
    void focusInEvent(QFocusEvent *event) override;
    void focusOutEvent(QFocusEvent *event) override;

public:
    const AnatomyBox *focusedBox() const { return m_focused; }

private:
    void moveFocusBy(int step);
    const AnatomyBox *m_focused = nullptr;
    // Lays the diagram out for a width and paints it when `painter` is given; returns its height.
    double draw(QPainter *painter, double width);
    void fitHeight(); // the diagram's height at its width, for the scroll area
    const AnatomyBox *boxAt(QPointF pos) const;
    LayerAnatomy m_anatomy;
    std::vector<std::pair<QRectF, const AnatomyBox *>> m_hits; // in widget coordinates
    double m_zoom = 1;
};

class AnatomyView final : public AtlasView
{
    Q_OBJECT
public:
    explicit AnatomyView(QWidget *parent = nullptr);
    QString title() const override { return tr("Anatomy"); }
    QString fileStem() const override { return QStringLiteral("anatomy"); }
    void setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data) override;
    // The stack and each layer's tensors, found off the GUI thread; a click then reads one layer.
    std::shared_ptr<const PreparedView> prepare(const LoadedCheckpoint &data) const override;
    void setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data,
                       std::shared_ptr<const PreparedView> prepared) override;
    void clearAll() override;
    void selectLayer(int layer);
    int selectedLayer() const { return m_layer; }
    void setMode(AnatomyMode mode); // MLA at prefill or at decode (absorbed)
    void followLayer(int layer) override { selectLayer(layer); }
    int layerCount() const { return m_data ? m_data->analysis.layerCount : 0; }
    LayerDiagramWidget *diagram() const { return m_diagram; }
    LayerStackWidget *stack() const { return m_stack; }
    // Zoom of the stack and the diagram: 1 is the window's text size; Ctrl+plus / Ctrl+minus (View › Zoom In,
    // Zoom Out) step it, View › Actual Size resets it.
    void setZoom(double zoom);
    double zoom() const { return m_zoom; }
    void zoomBy(int steps);
    // True while the stack is laid out above the diagram (a narrow window or a document column).
    bool stacked() const;

protected:
    void keyPressEvent(QKeyEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;

signals:
    // The tensors of a clicked block: the window shows them in the Layers view.
    void tensorsChosen(const QString &filter);

private:
    struct PreparedAnatomy final : PreparedView
    {
        std::vector<StackRun> runs;
        TensorsByLayer index;
        // The layer shown first and its drawing in each mode (prefill, decode), worked out with the rest: a
        // GLM-5 MoE layer's 1,500 tensors took 10 ms of the GUI thread's open.
        int first = 0;
        LayerAnatomy firstDrawn[2];
    };
    // The layer a checkpoint opens on: the first MoE layer that owns an indexer, else the first MoE layer.
    static int firstLayer(const std::vector<StackRun> &runs);
    std::shared_ptr<const LoadedCheckpoint> m_data;
    std::shared_ptr<const PreparedAnatomy> m_prepared;
    QLabel *m_summary;
    LayerStackWidget *m_stack;
    LayerDiagramWidget *m_diagram;
    QComboBox *m_mode;
    QWidget *m_modeRow;
    QBoxLayout *m_columns = nullptr; // the stack beside the diagram, or above it
    QScrollArea *m_stackScroll = nullptr;
    void arrange();
    double m_zoom = 1;
    int m_layer = -1;
};

} // namespace atlas
