// The desktop app offscreen: item models under QAbstractItemModelTester, every view rendered on
// the full GLM-5.x layout and on a small one and checked for what it shows, exports opened again,
// and a remote load cancelled from the window.
#include "bf16.h"
#include "anatomy_view.h"
#include "anatomy_graph.h"
#include "bias_view.h"
#include "compare_view.h"
#include "explain.h"
#include "report.h"
#include "budget_view.h"
#include "cache_view.h"
#include "plan_view.h"
#include "working_links.h"
#include "chart_widget.h"
#include "checkpoint_loader.h"
#include "checkpoint_reader.h"
#include "indexshare_view.h"
#include "layer_tree_model.h"
#include "layers_view.h"
#include "gguf_layouts.h"
#include "layout_arithmetic.h"
#include "llama_plan.h"
#include "load_pipeline.h"
#include "main_window.h"
#include "open_dialog.h"
#include "overview_view.h"
#include "preferences_dialog.h"
#include "report.h"
#include "routing_view.h"
#include "settings.h"
#include "support/fault_server.h"
#include "support/latency_proxy.h"
#include "support/test_hub.h"
#include "view_export.h"
#include "focus_ring.h"
#include "wrap_label.h"
#include "text_cell_delegate.h"

#include <QAbstractItemModelTester>
#include <QDir>
#include <QGuiApplication>
#include <QMimeData>
#include <QClipboard>
#include <QImage>
#include <QLineEdit>
#include <QProcess>
#include <QSettings>
#include <QFileInfo>
#include <QRegularExpression>

#include <bit>
#include <QMenu>
#include <QMenuBar>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSvgRenderer>
#include <QSvgGenerator>
#include <QBuffer>
#include <QPainter>
#include <QTabWidget>
#include <QTableWidget>
#include <QStandardItemModel>
#include <QTreeView>
#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QTemporaryDir>
#include <QListWidget>
#include <QSlider>
#include <QScrollBar>
#include <QAbstractScrollArea>
#include <QTest>
#include <QVBoxLayout>
#include <set>
#include <QTreeView>
#include <QXmlStreamReader>

using namespace atlas;

namespace {

// The layout as the window gets it: through the one load pipeline.
std::shared_ptr<const LoadedCheckpoint> loadLocal(const QString &dir)
{
    LoadRequest request;
    request.spec.path = dir.toStdString();
    request.biases = false;
    return LoadPipeline(request).run().layout;
}

// Opens a folder in a window and waits until every view holds the layout and the biases.
bool openAndWait(MainWindow &window, const QString &dir)
{
    QSignalSpy done(&window, &MainWindow::checkpointShown);
    window.openSource(dir);
    return done.wait(300000);
}

// A layer's drawing as text: every stage, column and box with all that it says, and what is left out.
QString describe(const LayerAnatomy &a)
{
    QString out = QString::fromStdString(a.heading) + QLatin1Char('\n');
    const auto box = [&](const AnatomyBox &b) {
        out += QStringLiteral("  %1 [%2] [%3] %4 [%5] %6%7%8 [%9] [%10]")
                   .arg(int(b.kind))
                   .arg(QString::fromStdString(b.title), QString::fromStdString(b.detail))
                   .arg(b.parameters)
                   .arg(QString::fromStdString(b.dtypes))
                   .arg(b.fromConfig)
                   .arg(b.cached)
                   .arg(b.skipped)
                   .arg(QString::fromStdString(b.cacheNote), QString::fromStdString(b.from));
        out += QStringLiteral(" fed from above %1;").arg(b.fedFromAbove);
        for (const auto &in : b.inputsElsewhere)
            out += QStringLiteral(" <- ") + QString::fromStdString(in);
        for (const auto &t : b.tensors)
            out += QLatin1Char(' ') + QString::fromStdString(t);
        out += QLatin1Char('\n');
    };
    for (const auto &stage : a.stages) {
        out += QString::fromStdString(stage.title) + QLatin1Char('\n');
        for (const auto &column : stage.columns) {
            out += QStringLiteral(" ") + QString::fromStdString(column.title) + QLatin1Char('\n');
            for (const auto &b : column.boxes)
                box(b);
        }
        for (const auto &b : stage.join)
            box(b);
    }
    for (const auto &n : a.notes)
        out += QStringLiteral("note ") + QString::fromStdString(n) + QLatin1Char('\n');
    for (const auto &n : a.unplaced)
        out += QStringLiteral("unplaced ") + QString::fromStdString(n) + QLatin1Char('\n');
    return out;
}

// What the Anatomy view should draw for a layer: the layer's blocks, annotated from its data graph.
QString expectedDrawing(const LoadedCheckpoint &data, int layer, AnatomyMode mode)
{
    LayerAnatomy a = layerAnatomy(data, layer, nullptr, mode);
    annotateInputs(a, anatomyGraph(data, a, layer));
    return describe(a);
}

} // namespace

class TestWidgets : public QObject
{
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY(m_settings.isValid());
        qputenv("XDG_CONFIG_HOME", m_settings.path().toLocal8Bit()); // settings of the tests only
        qputenv("XDG_CACHE_HOME", m_settings.path().toLocal8Bit() + "/cache");
        setApplicationIdentity();
        MainWindow::applyTheme(MainWindow::Theme::Light);
        synth::writeCheckpoint(synth::glm5Fp8(), m_full.path().toStdString());
        synth::writeCheckpoint(synth::smallLayout(), m_small.path().toStdString());
    }

    // WrapLabel remembers heights per width: each answer must still be QLabel's after any change that moves the
    // text, and a change must be seen (a stale height would clip a card's value or leave a gap under it).
    void wrapLabelAnswersAsQLabel()
    {
        QWidget page;
        auto *cached = new WrapLabel(&page);
        auto *plain = new QLabel(&page);
        plain->setWordWrap(true);
        const QList<int> widths{60, 100, 140, 320, 600, 900}; // more than it keeps: old answers are replaced
        auto heights = [&](QLabel *l) {
            QList<int> h;
            for (int w : widths)
                h << l->heightForWidth(w);
            return h;
        };
        QStringList wrong;
        auto same = [&](const char *step) {
            const QList<int> want = heights(plain);
            const QList<int> once = heights(cached), again = heights(cached); // again: from what it remembers
            if (once != want || again != want) wrong << QString::fromLatin1(step);
            return want;
        };
        auto both = [&](const std::function<void(QLabel *)> &change) {
            change(cached);
            change(plain);
        };
        const QString sentence = QStringLiteral("Every header is faithful and the weights are empty; the router biases are made up.");
        both([&](QLabel *l) { l->setText(sentence); });
        const QList<int> first = same("plain text");
        both([&](QLabel *l) { l->setText(sentence + QStringLiteral(" ") + sentence); });
        QVERIFY(same("longer text") != first);
        both([&](QLabel *l) { l->setText(QStringLiteral("<b>Synthetic.</b> ") + sentence); });
        same("rich text");
        both([&](QLabel *l) { l->setTextFormat(Qt::PlainText); });
        same("shown as plain");
        const QList<int> before = same("before the font");
        both([&](QLabel *l) {
            QFont f = l->font();
            f.setPointSizeF(f.pointSizeF() * 1.6);
            l->setFont(f);
        });
        QVERIFY(same("larger font") != before);
        const QList<int> beforeMargins = heights(cached);
        both([&](QLabel *l) { l->setContentsMargins(30, 8, 30, 8); });
        QVERIFY(same("contents margins") != beforeMargins);
        both([&](QLabel *l) { l->setIndent(24); });
        same("indent");
        both([&](QLabel *l) { l->setMargin(6); });
        same("margin");
        const QList<int> beforeSheet = heights(cached);
        both([&](QLabel *l) {
            l->setStyleSheet(QStringLiteral("font-size: 7pt"));
            l->ensurePolished(); // the sheet's font applies when polished
        });
        QVERIFY(same("style sheet") != beforeSheet);
        const QList<int> beforeMinimum = heights(cached);
        both([&](QLabel *l) { l->setMinimumHeight(300); });
        QVERIFY(same("minimum height") != beforeMinimum);
        both([&](QLabel *l) { l->setWordWrap(false); });
        same("no wrap");
        QVERIFY2(wrong.isEmpty(), qPrintable(QStringLiteral("heights differ from QLabel's after: ") + wrong.join(QStringLiteral(", "))));
    }

    // A WrapLabel that fills its column (the Plan's verdict and details, the Overview's identity) answers its
    // size hints from its height at the width it has, not from its text's ideal width: in a page's column it is
    // placed and drawn as QLabel is, at each change of text, and its preferred height is the one it is shown at.
    void wrapLabelThatFillsItsColumn()
    {
        QWidget page;
        page.resize(700, 600);
        auto *v = new QVBoxLayout(&page);
        auto *filling = new WrapLabel(&page);
        filling->setTextFormat(Qt::RichText);
        filling->setFillsWidth(true);
        auto *plain = new QLabel(&page);
        plain->setTextFormat(Qt::RichText);
        plain->setWordWrap(true);
        v->addWidget(filling);
        v->addWidget(plain);
        v->addStretch(1);
        page.show();
        QVERIFY(QTest::qWaitForWindowExposed(&page));
        const QString sentence =
            QStringLiteral("The weights fit (88.18 GiB per GPU), but the 37.64 GiB left hold 436,324 tokens, less than one sequence.");
        for (const QString &text : {QStringLiteral("<b>Fits.</b>"), QStringLiteral("<b>%1</b> %1").arg(sentence),
                                    QStringLiteral("<span style='font-size:13pt'>%1</span><br>%1 %1").arg(sentence)}) {
            filling->setText(text);
            plain->setText(text);
            v->activate();
            QCoreApplication::processEvents();
            QCOMPARE(filling->size(), plain->size());
            QCOMPARE(filling->grab().toImage(), plain->grab().toImage());
            QCOMPARE(filling->sizeHint().height(), filling->height());
            QCOMPARE(filling->sizeHint().height(), plain->heightForWidth(plain->width()));
        }
        // Its minimum: 16 average characters wide (not its widest word), one line high.
        const QSize least = filling->minimumSizeHint();
        QCOMPARE(least.width(), filling->fontMetrics().averageCharWidth() * 16);
        QCOMPARE(least.height(), filling->fontMetrics().height());
        // Off again, the hints are QLabel's.
        filling->setFillsWidth(false);
        QCOMPARE(filling->sizeHint(), plain->sizeHint());
        QCOMPARE(filling->minimumSizeHint(), plain->minimumSizeHint());
    }

    // TextCellDelegate lays each text out once: what it draws must be the style's own drawing to the pixel
    // (QCommonStylePrivate::viewItemDrawText), in a tree and in a table, for left-, right- and centre-aligned
    // text, elided at either end or in the middle, bold, selected, coloured, the current cell's focus frame (Fusion
    // draws it over the text), a table's word-wrapped cell that fits and one that does not, and a cell with an
    // icon (both left to the style); and a repaint lays nothing out again. A figure written as SVG is the style's.
    void textCellDelegateDrawsAsTheStyle()
    {
        QStandardItemModel model(0, 3);
        const QString longName = QStringLiteral("model.layers.77.mlp.experts.255.down_proj.weight_scale_inv   ·   "
                                                "routed expert · FP8 e4m3 128x128 blocks");
        const QList<QStringList> rows{{QStringLiteral("Layer 3"), QStringLiteral("BF16 + F8_E4M3"), QStringLiteral("9,868,032,768")},
                                      {longName, QStringLiteral("model-00004-of-00141.safetensors"), QStringLiteral("9.19 GiB")},
                                      {QStringLiteral("e_score_correction_bias"), QStringLiteral("F32"), QStringLiteral("256")},
                                      {QString(), QStringLiteral("·"), QStringLiteral("1,903,171,584")}};
        for (const QStringList &r : rows) {
            QList<QStandardItem *> items;
            for (const QString &t : r)
                items << new QStandardItem(t);
            items[2]->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            model.appendRow(items);
        }
        QFont bold = model.item(0, 0)->font();
        bold.setWeight(QFont::DemiBold);
        model.item(0, 0)->setFont(bold);
        model.item(2, 1)->setTextAlignment(Qt::AlignCenter);
        model.item(3, 0)->setIcon(QIcon(QPixmap(12, 12))); // drawn by QStyledItemDelegate
        model.item(2, 2)->setForeground(QColor(0xC0, 0x30, 0x30));
        auto grabBoth = [&](QAbstractItemView *view, const char *what) {
            view->resize(520, 140);
            view->selectionModel()->select(model.index(1, 0), QItemSelectionModel::Select | QItemSelectionModel::Rows);
            view->setCurrentIndex(model.index(2, 1));
            // The current cell's focus frame, drawn where the style draws it with the text.
            view->show();
            QApplication::setActiveWindow(view);
            view->setFocus();
            QVERIFY(QTest::qWaitForWindowActive(view));
            QVERIFY(view->hasFocus());
            const QImage plain = view->grab().toImage();
            // A figure written as SVG: the style's own drawing, byte for byte.
            const auto svg = [&] {
                QBuffer out;
                out.open(QIODevice::WriteOnly);
                QSvgGenerator generator;
                generator.setOutputDevice(&out);
                generator.setSize(view->size());
                QPainter p(&generator);
                view->render(&p);
                p.end();
                return out.data();
            };
            const QByteArray plainSvg = svg();
            auto *delegate = new TextCellDelegate(view);
            view->setItemDelegate(delegate);
            const QImage cached = view->grab().toImage();
            const int kept = delegate->keptCount();
            const QImage again = view->grab().toImage();
            QVERIFY2(kept > 0, what);
            QCOMPARE(delegate->keptCount(), kept); // the repaint found every text laid out
            QVERIFY2(cached == plain, qPrintable(QStringLiteral("%1: not the style's drawing").arg(QLatin1String(what))));
            QVERIFY2(again == plain, what);
            QVERIFY2(svg() == plainSvg, what);
            view->setItemDelegate(nullptr);
            delete delegate;
        };
        for (const auto mode : {Qt::ElideRight, Qt::ElideMiddle, Qt::ElideLeft}) {
            QTreeView tree;
            tree.setModel(&model);
            tree.setTextElideMode(mode);
            tree.setColumnWidth(0, 200);
            tree.setColumnWidth(1, 130);
            grabBoth(&tree, "tree");
            if (QTest::currentTestFailed()) return;
        }
        QTableView table;
        table.setModel(&model);
        table.setWordWrap(true);
        table.setColumnWidth(0, 150);
        table.setColumnWidth(1, 180);
        table.setRowHeight(1, 40); // the long name wraps onto a second line there
        grabBoth(&table, "table");
    }

    void chartPreparesItsBufferWhileEmpty()
    {
        // A chart showing its empty message makes its plot's paint buffer in a later turn of the event loop, at
        // the size the plot will have; its first drawing is the same as a chart's that was never empty.
        const QList<LineSeries> series{{QStringLiteral("share"), {0, 1, 2, 3}, {0.5, 2.0, 1.0, 3.5}, ChartWidget::seriesColor(1)}};
        ChartWidget prepared;
        prepared.setEmptyMessage(QStringLiteral("Press Simulate."));
        prepared.resize(700, 450);
        prepared.show();
        QVERIFY(QTest::qWaitForWindowExposed(&prepared));
        QTRY_COMPARE(prepared.paintBufferSize(), QSize(700, 450));
        ChartWidget reference;
        reference.resize(700, 450);
        reference.show();
        QVERIFY(QTest::qWaitForWindowExposed(&reference));
        for (ChartWidget *chart : {&prepared, &reference}) {
            chart->setTitle(QStringLiteral("Tokens whose top-k set changes"));
            chart->showLines(series, QStringLiteral("layer"), QStringLiteral("tokens"), false, false);
        }
        QCoreApplication::processEvents();
        QCOMPARE(prepared.paintBufferSize(), QSize(700, 450));
        QCOMPARE(prepared.grab().toImage(), reference.grab().toImage());
        // A new size: the buffer follows it, and the drawing is still the same.
        for (ChartWidget *chart : {&prepared, &reference})
            chart->resize(640, 420);
        QCoreApplication::processEvents();
        QCOMPARE(prepared.grab().toImage(), reference.grab().toImage());
        QCOMPARE(prepared.paintBufferSize(), QSize(640, 420));
        // Emptied again while shown: the buffer stays; hidden and resized, a new one is made at the new size.
        prepared.clear();
        QCoreApplication::processEvents();
        QCOMPARE(prepared.paintBufferSize(), QSize(640, 420));
        prepared.resize(600, 400);
        QTRY_COMPARE(prepared.paintBufferSize(), QSize(600, 400));
    }

    void layerTreeModel()
    {
        LayerTreeModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        const auto spec = synth::smallLayout();
        model.setCheckpoint(loadLocal(m_small.path()));
        // One row per layer (main + MTP) and one for the tensors outside layers.
        QCOMPARE(model.rowCount(), int(spec.layers + spec.mtpLayers + 1));
        QCOMPARE(model.tensorCount(), int(loadLocal(m_small.path())->checkpoint.tensorCount()));
        // A MoE layer holds its routed experts under one row.
        const QModelIndex layer1 = model.index(2, 0);
        QVERIFY(model.data(layer1).toString().startsWith(QLatin1String("Layer 1")));
        QModelIndex experts;
        for (int r = 0; r < model.rowCount(layer1); ++r)
            if (model.data(model.index(r, 0, layer1)).toString().startsWith(QLatin1String("mlp.experts")))
                experts = model.index(r, 0, layer1);
        QVERIFY(experts.isValid());
        QCOMPARE(model.rowCount(experts), int(spec.experts));
        QCOMPARE(model.data(experts).toString(),
                 QStringLiteral("mlp.experts (%1 experts)").arg(spec.experts));
        // Natural order: expert 2 before expert 10.
        QCOMPARE(model.data(model.index(2, 0, experts)).toString(), QStringLiteral("expert 2"));
        QCOMPARE(model.data(model.index(10, 0, experts)).toString(), QStringLiteral("expert 10"));
        // The experts row sums its experts' parameters.
        QCOMPARE(model
                     .data(model.index(experts.row(), LayerTreeModel::Parameters, layer1),
                           LayerTreeModel::SortRole)
                     .toULongLong(),
                 qulonglong(expected::routedPerLayer(spec)));
        model.setCheckpoint(nullptr);
        QCOMPARE(model.rowCount(), 0);
    }

    void layersViewFilter()
    {
        // The proxy under the tester on the small layout (the tester walks every row on every change)...
        {
            LayersView view;
            QAbstractItemModelTester tester(view.proxy(),
                                            QAbstractItemModelTester::FailureReportingMode::QtTest);
            const auto spec = synth::smallLayout();
            view.setCheckpoint(loadLocal(m_small.path()));
            view.setFilterText(QStringLiteral("e_score_correction_bias"));
            QCOMPARE(view.proxy()->rowCount(), int(spec.layers - spec.firstDense + spec.mtpLayers));
            view.setFilterText(QStringLiteral("EXPERTS.3.")); // case-insensitive
            QCOMPARE(view.proxy()->rowCount(), int(spec.layers - spec.firstDense + spec.mtpLayers));
            view.setFilterText(QString());
            QCOMPARE(view.proxy()->rowCount(), int(spec.layers + spec.mtpLayers + 1));
        }
        // ... and the same filter over all 118,629 tensors.
        LayersView view;
        view.setCheckpoint(loadLocal(m_full.path()));
        QCOMPARE(view.model()->tensorCount(), 118629);
        // Matches counted from the tensor list itself, case-insensitively as the filter does.
        auto tensorsNamed = [&](std::string needle) {
            std::uint64_t n = 0;
            for (const auto &shard : view.model()->checkpoint()->checkpoint.shards)
                for (const auto &t : shard.tensors)
                    n += t.name.find(needle) != std::string::npos;
            return qint64(n);
        };
        view.setFilterText(QStringLiteral("e_score_correction_bias"));
        QCOMPARE(view.proxy()->rowCount(), 76); // layers 3 to 78
        QCOMPARE(view.matchCount(), tensorsNamed("e_score_correction_bias"));
        QCOMPARE(view.matchCount(), qint64(76));
        // Few matches are expanded down to the tensors; many are not.
        const QModelIndex firstLayer = view.proxy()->index(0, 0);
        QVERIFY(view.tree()->isExpanded(firstLayer));
        QVERIFY(view.tree()->isExpanded(view.proxy()->index(0, 0, firstLayer)));
        // A filter totals what it matched: a layer row sums its matching tensors, not the whole layer.
        {
            std::uint64_t bytes = 0;
            for (const auto &shard : view.model()->checkpoint()->checkpoint.shards)
                for (const auto &t : shard.tensors)
                    if (t.name.starts_with("model.layers.3.") && t.name.find("e_score_correction_bias") != std::string::npos)
                        bytes += t.bytes();
            const QModelIndex bytesCell = view.proxy()->index(0, LayerTreeModel::Bytes);
            QCOMPARE(bytesCell.data(LayerTreeModel::SortRole).toULongLong(), qulonglong(bytes));
            // The row's context menu copies the full name, shape and dtype of a tensor.
            QModelIndex tensor = view.proxy()->index(0, 0, firstLayer);
            while (view.proxy()->rowCount(tensor) > 0) // down to the tensor row
                tensor = view.proxy()->index(0, 0, tensor);
            QVERIFY(view.copyText(tensor, LayersView::CopyWhat::Name).endsWith(QLatin1String("e_score_correction_bias")));
            QVERIFY(view.copyText(tensor, LayersView::CopyWhat::Name).startsWith(QLatin1String("model.layers.3.")));
            QCOMPARE(view.copyText(tensor, LayersView::CopyWhat::Shape), QStringLiteral("[256]"));
            QCOMPARE(view.copyText(tensor, LayersView::CopyWhat::Row).count(QLatin1Char('\t')), LayerTreeModel::ColumnCount - 1);
        }
        // Nothing matches: a sentence instead of a blank pane.
        view.setFilterText(QStringLiteral("no_such_tensor_name"));
        QCOMPARE(view.matchCount(), qint64(0));
        QVERIFY(view.noMatchText().contains(QLatin1String("no_such_tensor_name")));
        view.setFilterText(QStringLiteral("indexer.wq_b"));
        QVERIFY(view.noMatchText().isEmpty());
        QCOMPARE(view.proxy()->rowCount(), 22);                    // 21 full layers and the MTP layer
        QCOMPARE(view.matchCount(), tensorsNamed("indexer.wq_b")); // weights and their scales
        view.setFilterText(QStringLiteral("Experts"));
        QCOMPARE(view.matchCount(), tensorsNamed("experts"));
        QVERIFY(view.matchCount() > LayersView::kExpandMatches);
        QVERIFY(!view.tree()->isExpanded(view.proxy()->index(0, 0)));
        view.setFilterText(QString());
        QCOMPARE(view.proxy()->rowCount(), 80);
        // Without a filter the rows total every tensor again, not what the last filter matched.
        {
            std::uint64_t bytes = 0, shown = 0;
            for (const auto &shard : view.model()->checkpoint()->checkpoint.shards)
                for (const auto &t : shard.tensors)
                    bytes += t.bytes();
            for (int row = 0; row < view.proxy()->rowCount(); ++row)
                shown += view.proxy()->index(row, LayerTreeModel::Bytes).data(LayerTreeModel::SortRole).toULongLong();
            QCOMPARE(shown, bytes);
        }
        // A layer row names every weight format below it (scales apart), never "mixed".
        const QString dtypes = view.proxy()->index(3, LayerTreeModel::Dtype).data().toString();
        QVERIFY2(dtypes.contains(QLatin1String("F8_E4M3")) && dtypes.contains(QLatin1String(" + ")), qPrintable(dtypes));
    }

    void cacheLabelsFollowTheCheckpoint()
    {
        // The small layout's indexer keys are 64 wide and its latent 512 + 64 (or whatever it says):
        // the pickers must show this checkpoint's bytes, not GLM-5.x's 132 / 144 / 1,152.
        const auto spec = synth::smallLayout();
        CacheView view;
        view.setCheckpoint(loadLocal(m_small.path()));
        const auto padded = indexEntryBytesPadded(spec.indexHeadDim);
        const auto reference = indexEntryBytesReference(spec.indexHeadDim);
        QVERIFY(padded != 144 && reference != 132);
        const QStringList entries = view.entryChoices();
        QCOMPARE(entries.size(), 3); // as the preset allocates, padded, unpadded
        QVERIFY2(entries[1].startsWith(QStringLiteral("%1 B").arg(padded)), qPrintable(entries[1]));
        QVERIFY2(entries[2].startsWith(QStringLiteral("%1 B").arg(reference)), qPrintable(entries[2]));
        // The preset picks the entry unless one is chosen: vLLM's is the unpadded reference entry.
        view.setPreset(CachePreset::Vllm);
        QCOMPARE(view.budget().indexEntryBytes, std::int64_t(reference));
        QCOMPARE(view.budget().preset, CachePreset::Vllm);
        // Named in words, not by the preset's internal name.
        QVERIFY2(view.breakdownText().contains(QLatin1String("vLLM: index keys")), qPrintable(view.breakdownText()));
        QVERIFY(!view.breakdownText().contains(QLatin1String("Preset vllm")));
        view.setPreset(CachePreset::Article);
        QCOMPARE(view.budget().indexEntryBytes, std::int64_t(padded));
        const auto bf16 = kvBytesPerLayer(KvDtype::BF16, spec.kvLoraRank, spec.ropeDim);
        QVERIFY2(view.layoutChoices()[0].contains(QStringLiteral("%1 B/layer").arg(bf16)),
                 qPrintable(view.layoutChoices()[0]));
        view.setIndexEntryBytes(int(reference));
        QCOMPARE(view.budget().indexEntryBytes, std::int64_t(reference));
    }

    void headlessWindowLeavesTheWindowStateAlone()
    {
        QSettings().remove(QStringLiteral("window"));
        {
            MainWindow window(false);
            window.show();
            window.close();
        }
        QVERIFY(!QSettings().contains(QStringLiteral("window/geometry")));
        {
            MainWindow window; // interactive: it keeps the state (so the check above can fail)
            window.show();
            window.close();
        }
        QVERIFY(QSettings().contains(QStringLiteral("window/geometry")));
        QSettings().remove(QStringLiteral("window"));
    }

    void anatomyOnFullLayout()
    {
        MainWindow window(false);
        window.resize(1440, 900);
        window.show();
        QVERIFY(openAndWait(window, m_full.path()));
        auto *anatomy = qobject_cast<AnatomyView *>(window.view(QStringLiteral("anatomy")));
        QVERIFY(anatomy);
        QCOMPARE(window.views().indexOf(anatomy), 1); // second in the sidebar
        const auto spec = synth::glm5Fp8();
        // The first MoE layer that owns an indexer is shown first.
        int firstFull = -1;
        for (std::int64_t i = spec.firstDense; i < spec.layers && firstFull < 0; ++i)
            if (synth::formulaFull(i, spec.indexFreq, spec.indexOffset)) firstFull = int(i);
        QCOMPARE(anatomy->diagram()->anatomy().layer, firstFull);
        // That first layer was drawn off the GUI thread with the rest of the open (AnatomyView::prepare), in
        // both modes; each is the drawing worked out here, and so is every other layer, drawn when chosen.
        {
            const LoadedCheckpoint &data = *window.current();
            QVERIFY(describe(anatomy->diagram()->anatomy()).contains(QLatin1String("kv_b_proj")));
            QCOMPARE(describe(anatomy->diagram()->anatomy()), expectedDrawing(data, firstFull, AnatomyMode::Prefill));
            anatomy->setMode(AnatomyMode::Decode);
            QCOMPARE(describe(anatomy->diagram()->anatomy()), expectedDrawing(data, firstFull, AnatomyMode::Decode));
            QVERIFY(expectedDrawing(data, firstFull, AnatomyMode::Decode) != expectedDrawing(data, firstFull, AnatomyMode::Prefill));
            anatomy->selectLayer(firstFull + 1);
            QCOMPARE(describe(anatomy->diagram()->anatomy()), expectedDrawing(data, firstFull + 1, AnatomyMode::Decode));
            anatomy->setMode(AnatomyMode::Prefill);
            QCOMPARE(describe(anatomy->diagram()->anatomy()), expectedDrawing(data, firstFull + 1, AnatomyMode::Prefill));
            anatomy->selectLayer(firstFull);
            QCOMPARE(describe(anatomy->diagram()->anatomy()), expectedDrawing(data, firstFull, AnatomyMode::Prefill));
        }
        // One colour language on the stack: attention kinds as swatches, indexer roles as marks, in the legend.
        QCOMPARE(anatomy->stack()->legendTexts(),
                 (QStringList{QStringLiteral("MLA"), QStringLiteral("owns a DSA indexer"), QStringLiteral("reuses one (IndexShare)")}));

        // The exported SVG holds the numbers as text, and every figure carries its provenance.
        window.showView(anatomy);
        QCoreApplication::processEvents();
        QTemporaryDir out;
        const QString path = out.filePath(QStringLiteral("anatomy.svg"));
        QString error;
        QVERIFY2(exportWidget(anatomy, path, &error, window.provenance()), qPrintable(error));
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QString svg = QString::fromUtf8(f.readAll());
        const QString latent = QStringLiteral("split %1 latent + %2 k_pe").arg(spec.kvLoraRank).arg(spec.ropeDim);
        QVERIFY2(svg.contains(latent), qPrintable(latent));
        QVERIFY(svg.contains(QStringLiteral("cached: %L1 B/token with k_pe (bf16)").arg(2 * (spec.kvLoraRank + spec.ropeDim))));
        QVERIFY(window.provenance().startsWith(QStringLiteral("glm_moe_dsa · ")));
        QVERIFY(window.provenance().contains(QStringLiteral(" · synthetic · Checkpoint Atlas ")));
        QVERIFY(svg.contains(window.provenance().toHtmlEscaped()));
        // Blocks are filled opaque (their tint mixed with the page): no faint fill-opacity a renderer could drop.
        {
            const QRegularExpression faint(QStringLiteral("fill-opacity=\"0\\.([0-9]+)\""));
            for (auto it = faint.globalMatch(svg); it.hasNext();) {
                const double a = QStringLiteral("0.%1").arg(it.next().captured(1)).toDouble();
                QVERIFY2(a >= 0.5, qPrintable(QString::number(a)));
            }
        }
        // The provenance is in the files too (SVG <metadata>, PNG text), and a PNG says its real density.
        QVERIFY(svg.contains(QStringLiteral("<dc:source>") + window.provenance().toHtmlEscaped() + QStringLiteral("</dc:source>")));
        {
            const QString png = out.filePath(QStringLiteral("anatomy.png"));
            QVERIFY2(exportWidget(anatomy, png, &error, window.provenance()), qPrintable(error));
            const QImage image(png);
            QCOMPARE(image.text(QStringLiteral("Source")), window.provenance());
            QCOMPARE(image.dotsPerMeterX(), int(std::lround(192 / 0.0254)));
        }
        // A local folder is cited by its name and its headers' fingerprint, never by its path here.
        {
            const QString folder = QFileInfo(m_full.path()).fileName();
            QVERIFY2(!window.provenance().contains(QFileInfo(m_full.path()).absolutePath()), qPrintable(window.provenance()));
            QVERIFY2(window.provenance().contains(folder), qPrintable(window.provenance()));
            static const QRegularExpression fingerprint(QStringLiteral("local folder, headers [0-9a-f]{12}"));
            QVERIFY2(fingerprint.match(window.provenance()).hasMatch(), qPrintable(window.provenance()));
            const auto small = loadLocal(m_small.path()), again = loadLocal(m_small.path()), full = loadLocal(m_full.path());
            QCOMPARE(headerFingerprint(small->checkpoint), headerFingerprint(again->checkpoint));
            QVERIFY(headerFingerprint(small->checkpoint) != headerFingerprint(full->checkpoint));
            QVERIFY(window.provenance().contains(QString::fromStdString(headerFingerprint(full->checkpoint))));
        }

        // A shared layer says whose selection it reuses.
        const int shared = firstFull + 1;
        anatomy->selectLayer(shared);
        bool said = false;
        for (const auto &stage : anatomy->diagram()->anatomy().stages)
            for (const auto &b : stage.join)
                said = said || (b.detail.starts_with("reuses layer " + std::to_string(firstFull)) &&
                                b.from == "layer " + std::to_string(firstFull) + "'s top-k");
        QVERIFY(said);
        // The arrow keys step through the layers; the figure leaves the hint out.
        QTest::keyClick(anatomy, Qt::Key_Right);
        QCOMPARE(anatomy->selectedLayer(), shared + 1);
        QTest::keyClick(anatomy, Qt::Key_Left);
        QCOMPARE(anatomy->selectedLayer(), shared);
        QVERIFY(!svg.contains(QStringLiteral("Click a layer")));
        if (qEnvironmentVariableIsSet("ATLAS_SHOTS")) { // for a developer to look at: decode, a full layer
            anatomy->setMode(AnatomyMode::Decode);
            anatomy->selectLayer(firstFull);
            window.grab().save(qEnvironmentVariable("ATLAS_SHOTS") + QStringLiteral("/anatomy-decode.png"));
            anatomy->setMode(AnatomyMode::Prefill);
        }
        QVERIFY(!svg.contains(QStringLiteral("Hover a block")));

        // A clicked block lists its tensors in the Layers view.
        auto *layers = qobject_cast<LayersView *>(window.view(QStringLiteral("layers")));
        const QString prefix = QStringLiteral("model.layers.%1.self_attn.q_a_proj").arg(shared);
        emit anatomy->diagram()->boxClicked({prefix + QStringLiteral(".weight"), prefix + QStringLiteral(".weight_scale_inv")});
        QCOMPARE(layers->matchCount(), qint64(2));
        QVERIFY(layers->isVisible());
        // Back returns to the Anatomy after the jump; Forward to Layers again.
        QVERIFY(window.goBack());
        QVERIFY(anatomy->isVisible());
        QVERIFY(window.goForward());
        QVERIFY(layers->isVisible());

        // A layer picked in one view is picked in all: a row of IndexShare, the arrow keys in Anatomy.
        auto *index = window.view(QStringLiteral("indexshare"));
        auto *bias = qobject_cast<BiasView *>(window.view(QStringLiteral("router-bias")));
        emit index->layerSelected(firstFull + 2);
        QCOMPARE(anatomy->selectedLayer(), firstFull + 2);
        QCOMPARE(window.currentLayer(), firstFull + 2);
        QCOMPARE(bias->selectedLayerText(), QStringLiteral("layer %1").arg(firstFull + 2));
        window.showView(anatomy);
        QTest::keyClick(anatomy, Qt::Key_Right);
        QCOMPARE(bias->selectedLayerText(), QStringLiteral("layer %1").arg(firstFull + 3));
        QVERIFY(window.goBack()); // the layer before the key press
        QCOMPARE(anatomy->selectedLayer(), firstFull + 2);
    }

    void viewsThatDoNotApply()
    {
        // No DSA indexer and no router bias: IndexShare and Router bias say why, centred, and are greyed
        // in the sidebar with the reason; the other views apply.
        synth::LayoutSpec spec = synth::smallLayout();
        spec.indexer = synth::IndexerPolicy::None;
        spec.correctionBias = false;
        QTemporaryDir dir;
        synth::writeCheckpoint(spec, dir.path().toStdString());
        MainWindow window(false);
        window.resize(1024, 700);
        window.show();
        QVERIFY(openAndWait(window, dir.path()));
        auto *sidebar = window.findChild<QListWidget *>();
        QVERIFY(sidebar);
        for (int i = 0; i < window.views().size(); ++i) {
            AtlasView *v = window.views()[i];
            const bool shouldNot = v->fileStem() == QLatin1String("indexshare") || v->fileStem() == QLatin1String("router-bias");
            QCOMPARE(!v->notApplicable().isEmpty(), shouldNot);
            QCOMPARE(sidebar->item(i)->toolTip().isEmpty(), !shouldNot);
        }
        QVERIFY(window.view(QStringLiteral("indexshare"))->notApplicable().contains(QLatin1String("no sparse-attention")));
        QVERIFY(window.view(QStringLiteral("router-bias"))->notApplicable().contains(QLatin1String("no bias")));
        // A checkpoint with both: every view applies again.
        QVERIFY(openAndWait(window, m_small.path()));
        for (int i = 0; i < window.views().size(); ++i) {
            QVERIFY2(window.views()[i]->notApplicable().isEmpty(), qPrintable(window.views()[i]->title()));
            QVERIFY(sidebar->item(i)->toolTip().isEmpty());
        }
    }

    void enginesAndTheBiasSummary()
    {
        // A small layout that declares moe_router_dtype: float32, as GLM-5.3 does.
        synth::LayoutSpec spec = synth::smallLayout();
        spec.moeRouterDtype = "float32";
        QTemporaryDir dir;
        synth::writeCheckpoint(spec, dir.path().toStdString());
        MainWindow window(false);
        window.resize(1440, 900);
        window.show();
        QVERIFY(openAndWait(window, dir.path()));
        auto *routing = qobject_cast<RoutingView *>(window.view(QStringLiteral("routing")));
        QVERIFY(routing->declaredText().contains(QLatin1String("moe_router_dtype: float32")));
        // The engine picker selects the variant that stands for it, and says why.
        const auto engines = RoutingView::engines();
        for (int i = 0; i < engines.size(); ++i) {
            routing->selectEngine(i);
            if (engines[i].variant < 0) {
                QVERIFY(routing->engineText().contains(QLatin1String("FP32 reference")));
                continue;
            }
            QCOMPARE(routing->selectedVariant(), engines[i].variant);
            QVERIFY(routing->engineText().contains(
                QString::fromLatin1(variantRuntimes(static_cast<Variant>(engines[i].variant))).left(30)));
        }
        // The checkpoint-wide summary, worked out here from the writer's bias values.
        std::uint64_t tensors = 0, losing = 0;
        for (std::int64_t layer = spec.firstDense; layer < spec.layers + spec.mtpLayers; ++layer) {
            const auto values = synth::syntheticBias(spec, layer);
            std::set<float> fp32, bf16;
            for (float v : values) {
                fp32.insert(v);
                bf16.insert(roundToBf16(v));
            }
            ++tensors;
            losing += bf16.size() < fp32.size();
        }
        auto *bias = qobject_cast<BiasView *>(window.view(QStringLiteral("router-bias")));
        QCOMPARE(bias->summaryValue(QStringLiteral("Layers losing levels")),
                 QStringLiteral("%1 of %2").arg(losing).arg(tensors));
        QCOMPARE(bias->summaryValue(QStringLiteral("Values per tensor")), QString::number(spec.experts));
        QCOMPARE(bias->summaryValue(QStringLiteral("In BF16")),
                 QString::fromStdString(groupDigits(tensors * std::uint64_t(spec.experts) * 2)) + QStringLiteral(" B"));
    }

    void comparisonStates()
    {
        QTemporaryDir otherA;
        synth::writeCheckpoint(synth::smallLayout(), otherA.path().toStdString());
        FaultServer server(m_small.path().toStdString()); // holds every answer: B is still being read
        QVERIFY(server.start());
        MainWindow window(false);
        window.show();
        QVERIFY(openAndWait(window, m_small.path()));
        auto *compare = qobject_cast<CompareView *>(window.view(QStringLiteral("compare")));
        CheckpointLoader *b = window.compareLoader();

        // A new A while B is being compared with the old one: the comparison is dropped, nothing of it
        // is ever delivered (not even "cancelled"), and the view speaks of the new A only.
        {
            QSignalSpy layout(b, &CheckpointLoader::layoutReady), finished(b, &CheckpointLoader::finished),
                failed(b, &CheckpointLoader::failed), cancelled(b, &CheckpointLoader::cancelled);
            window.compareWith(QString::fromStdString(server.url("stall")));
            QVERIFY(QTest::qWaitFor([&] { return server.requests() > 0; }, 300000));
            QVERIFY(b->isRunning());
            QVERIFY(openAndWait(window, otherA.path()));
            QVERIFY(!b->isRunning());
            QVERIFY(QTest::qWaitFor([&] { return b->idle(); }, 300000)); // the dropped job has ended
            QCoreApplication::processEvents();
            QCOMPARE(layout.count() + finished.count() + failed.count() + cancelled.count(), 0);
            QVERIFY2(compare->summaryText().isEmpty() || !compare->summaryText().contains(QLatin1String("Reading B")),
                     qPrintable(compare->summaryText()));
        }

        // A comparison cancelled while B's server holds its answer says so, instead of "Reading B…";
        // Cancel is the comparison's, as nothing else is loading.
        const int before = server.requests();
        QSignalSpy cancelled(b, &CheckpointLoader::cancelled);
        window.compareWith(QString::fromStdString(server.url("stall")));
        QVERIFY(QTest::qWaitFor([&] { return server.requests() > before; }, 300000));
        QVERIFY(!window.loader()->isRunning());
        window.cancelLoad();
        QVERIFY(cancelled.wait(300000));
        QVERIFY2(compare->summaryText().contains(QLatin1String("cancelled")), qPrintable(compare->summaryText()));
        server.stop();
    }

    void compareView()
    {
        // A: the small layout; B: the same layout repacked as NVFP4, with one tensor fewer.
        QTemporaryDir bDir;
        synth::LayoutSpec spec = synth::smallLayout();
        spec.packing = synth::Packing::Nvfp4;
        synth::writeCheckpoint(spec, bDir.path().toStdString());
        MainWindow window(false);
        window.resize(1440, 900);
        window.show();
        QVERIFY(openAndWait(window, m_small.path()));
        QSignalSpy compared(window.compareLoader(), &CheckpointLoader::finished);
        window.compareWith(bDir.path());
        QVERIFY(compared.wait(300000));
        auto *compare = qobject_cast<CompareView *>(window.view(QStringLiteral("compare")));
        QVERIFY(compare->isVisible()); // the window shows it when B arrives

        // The same numbers as `ckpt-atlas diff` computes from the two layouts.
        const auto a = loadLocal(m_small.path()), b = loadLocal(bDir.path());
        const CheckpointDiff d = diffCheckpoints(*a, *b);
        QVERIFY(compare->summaryText().contains(QString::fromStdString(groupDigits(d.same)) + QStringLiteral(" same")));
        QVERIFY(compare->summaryText().contains(QLatin1String("logical parameters equal")));
        QVERIFY(compare->summaryText().contains(QLatin1String("biases byte-identical in")));
        const int rows = int(d.groups.size() + configChangesByPath(d).size()); // config key by key
        QCOMPARE(compare->changes()->rowCount(), rows);
        QCOMPARE(compare->biasTable()->rowCount(), int(spec.layers - spec.firstDense + spec.mtpLayers));
        QVERIFY(compare->budgetChart()->pointCount(QStringLiteral("B")) > 0);
        // The filter keeps what matches.
        compare->setFilterText(QStringLiteral("weight_scale_inv"));
        int shown = 0;
        for (int r = 0; r < compare->changes()->rowCount(); ++r)
            if (!compare->changes()->isRowHidden(r)) {
                ++shown;
                QVERIFY(compare->changes()->item(r, 1)->text().contains(QLatin1String("weight_scale_inv")));
            }
        QVERIFY(shown > 0 && shown < rows);
        // Exported, its caption names B.
        QTemporaryDir out;
        const QString path = out.filePath(QStringLiteral("compare.svg"));
        QString error;
        QVERIFY2(exportWidget(compare, path, &error, window.captionFor(compare)), qPrintable(error));
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QVERIFY(QString::fromUtf8(f.readAll()).contains(QStringLiteral("compared with ") + bDir.path()));
        // A new A clears the comparison.
        QVERIFY(openAndWait(window, bDir.path()));
        QCOMPARE(compare->changes()->rowCount(), 0);
    }

    void exportAllNamesEveryFormatAlike()
    {
        MainWindow window(false);
        window.resize(1200, 800);
        window.show();
        QVERIFY(openAndWait(window, m_small.path()));
        QTemporaryDir out;
        QStringList skipped;
        QVERIFY(window.exportAllTo(out.path(), &skipped).isEmpty());
        // One number per view, in sidebar order, shared by its PNG, SVG and PDF; a view that does not apply
        // (here Compare, with nothing to compare with) is skipped with one line, not exported empty.
        const QStringList files = QDir(out.path()).entryList(QDir::Files, QDir::Name);
        // A figure is read, not operated: its controls are hidden while it is drawn, their settings written as
        // lines of its caption (here the PNG's Settings text), and shown again afterwards.
        {
            auto *cache = window.view(QStringLiteral("cache"));
            window.showView(cache);
            auto *slider = cache->findChild<QSlider *>();
            QVERIFY(slider && slider->isVisible());
            const QString png = out.filePath(QStringLiteral("cache-alone.png"));
            QString error;
            QVERIFY2(exportWidget(cache, png, &error, window.captionFor(cache)), qPrintable(error));
            const QString settings = QImage(png).text(QStringLiteral("Settings"));
            QVERIFY2(settings.startsWith(QLatin1String("Context: ")), qPrintable(settings));
            QVERIFY2(settings.contains(QLatin1String("KV cache layout: ")), qPrintable(settings));
            QVERIFY(slider->isVisible());
            QFile::remove(png);
        }
        QCOMPARE(skipped.size(), 1);
        QVERIFY2(skipped.front().startsWith(QLatin1String("Compare: nothing to compare with")), qPrintable(skipped.front()));
        QCOMPARE(files.size(), int(window.views().size() - 1) * 3);
        for (int i = 0; i < window.views().size(); ++i)
            for (const char *suffix : {".png", ".svg", ".pdf"})
                if (window.views()[i]->fileStem() != QLatin1String("compare"))
                QVERIFY2(files.contains(QStringLiteral("%1-%2%3")
                                            .arg(i + 1, 2, 10, QLatin1Char('0'))
                                            .arg(window.views()[i]->fileStem(), QLatin1String(suffix))),
                         qPrintable(files.join(QLatin1Char(' '))));
    }

    // The main paths by key events only: views by Ctrl+digit and Ctrl+PgDown / PgUp, the Layers filter by
    // Ctrl+F and typing, unique mnemonics in the File menu.
    void keyboardDrivesTheWindow()
    {
        MainWindow window(false);
        window.resize(1200, 800);
        window.show();
        QApplication::setActiveWindow(&window);
        QVERIFY(QTest::qWaitForWindowActive(&window));
        QVERIFY(openAndWait(window, m_small.path()));
        const auto key = [&](int k, Qt::KeyboardModifiers m = Qt::ControlModifier) {
            QWidget *target = QApplication::focusWidget() ? QApplication::focusWidget() : &window;
            QTest::keyClick(target, static_cast<Qt::Key>(k), m);
        };
        key(Qt::Key_3);
        QCOMPARE(window.currentView(), window.view(QStringLiteral("layers")));
        key(Qt::Key_PageDown);
        QCOMPARE(window.currentView(), window.view(QStringLiteral("budget")));
        key(Qt::Key_PageUp);
        key(Qt::Key_PageUp);
        QCOMPARE(window.currentView(), window.view(QStringLiteral("anatomy")));
        key(Qt::Key_0);
        QCOMPARE(window.currentView(), window.view(QStringLiteral("plan")));
        key(Qt::Key_PageDown); // wraps to the first
        QCOMPARE(window.currentView(), window.view(QStringLiteral("overview")));
        key(Qt::Key_F);
        auto *layers = qobject_cast<LayersView *>(window.view(QStringLiteral("layers")));
        QCOMPARE(window.currentView(), layers);
        auto *filter = qobject_cast<QLineEdit *>(QApplication::focusWidget());
        QVERIFY(filter);
        QTest::keyClicks(filter, QStringLiteral("e_score"));
        QTRY_VERIFY(layers->matchCount() > 0);
        // The Anatomy's blocks by keyboard: focus rings the first block, an arrow moves the ring, Enter opens
        // the ringed block's tensors in Layers, as a click does.
        key(Qt::Key_2);
        auto *anatomy = qobject_cast<AnatomyView *>(window.view(QStringLiteral("anatomy")));
        QCOMPARE(window.currentView(), anatomy);
        QCoreApplication::processEvents(); // painted: its blocks have places
        anatomy->diagram()->setFocus(Qt::TabFocusReason);
        QVERIFY(anatomy->diagram()->focusedBox());
        const AnatomyBox *first = anatomy->diagram()->focusedBox();
        key(Qt::Key_Right, Qt::NoModifier);
        QVERIFY(anatomy->diagram()->focusedBox() && anatomy->diagram()->focusedBox() != first);
        key(Qt::Key_Return, Qt::NoModifier);
        QCOMPARE(window.currentView(), layers);
        QVERIFY(layers->matchCount() > 0);
        // A focus the style does not draw (a table, a scroll area) is ringed when the keyboard puts it there.
        key(Qt::Key_4);
        QCOMPARE(window.currentView(), window.view(QStringLiteral("budget")));
        QWidget *table = nullptr;
        for (int i = 0; i < 12 && !table; ++i) {
            key(Qt::Key_Tab, Qt::NoModifier);
            if (qobject_cast<QTableWidget *>(QApplication::focusWidget())) table = QApplication::focusWidget();
        }
        QVERIFY(table);
        QVERIFY2(window.focusRing()->target() == table, window.focusRing()->target() ? window.focusRing()->target()->metaObject()->className() : "none");
        QVERIFY(window.focusRing()->isVisible());
        QVERIFY(window.focusRing()->geometry().intersects(QRect(table->mapTo(&window, QPoint(0, 0)), table->size())));
        table->clearFocus();
        QVERIFY(!window.focusRing()->isVisible());
        // No two actions share a shortcut (an ambiguous one fires neither).
        {
            QMap<QString, QString> owner;
            for (QAction *a : window.findChildren<QAction *>())
                for (const QKeySequence &k : a->shortcuts()) {
                    const QString ks = k.toString();
                    QVERIFY2(!owner.contains(ks) || owner[ks] == a->text(),
                             qPrintable(QStringLiteral("%1: %2 and %3").arg(ks, owner[ks], a->text())));
                    owner[ks] = a->text();
                }
        }
        // Every File-menu mnemonic is one letter used once.
        QMenu *file = nullptr;
        for (QAction *a : window.menuBar()->actions())
            if (a->text() == QLatin1String("&File")) file = a->menu();
        QVERIFY(file);
        QSet<QChar> seen;
        for (QAction *a : file->actions()) {
            if (a->isSeparator()) continue;
            const qsizetype amp = a->text().indexOf(QLatin1Char('&'));
            QVERIFY2(amp >= 0 && amp + 1 < a->text().size(), qPrintable(a->text()));
            const QChar m = a->text().at(amp + 1).toLower();
            QVERIFY2(!seen.contains(m), qPrintable(a->text()));
            seen.insert(m);
        }
    }

    // A GGUF copy in the window: the Overview counts its files and bits per weight and answers Fits on with
    // llama.cpp's offload, Layers finds its tensors by llama.cpp's names and sums their ggml types, the Cache
    // view counts llama.cpp's cache, the Anatomy places every tensor.
    void windowOnGguf()
    {
        QTemporaryDir dir;
        const synth::LayoutSpec spec = synth::deepseekV3();
        synth::writeGguf(spec, synth::ggufQ4KM(), dir.path().toStdString(), "DeepSeek-V3-Q4_K_M");
        MainWindow window(false);
        window.resize(1400, 900);
        window.show();
        QVERIFY(openAndWait(window, dir.path()));
        QVERIFY(window.errorText().isEmpty());
        // Every view of a GGUF copy lays out for a 16 cm column with 8-pt text (its longer llama.cpp names
        // included: a heading that did not wrap held the Router bias view too wide).
        {
            QTemporaryDir out;
            for (AtlasView *v : window.views()) {
                if (!window.figureSkipReason(v).isEmpty()) continue;
                window.showView(v);
                QCoreApplication::processEvents();
                FigureOptions document;
                document.columnCm = 16;
                FigureReport report;
                QString error;
                QVERIFY2(exportWidget(v, out.filePath(v->fileStem() + QStringLiteral(".svg")), &error, window.captionFor(v),
                                      document, &report),
                         qPrintable(error));
                QVERIFY2(report.smallestPt >= 7.95, qPrintable(QStringLiteral("%1: %2 pt at %3 px").arg(v->fileStem()).arg(report.smallestPt).arg(report.layout.width())));
            }
        }
        const LoadedCheckpoint &data = *window.current();
        auto *overview = qobject_cast<OverviewView *>(window.view(QStringLiteral("overview")));
        QCOMPARE(overview->cardValue(QStringLiteral("Shards")), QStringLiteral("1 GGUF file"));
        const auto want = expected::budget(spec);
        QCOMPARE(overview->cardValue(QStringLiteral("Parameters")), QString::fromStdString(paramCount(want.total - want.mtp)));
        QTableWidget *quant = overview->quantTable();
        QCOMPARE(quant->horizontalHeaderItem(4)->text(), QStringLiteral("Bits/weight"));
        for (int r = 0; r < quant->rowCount(); ++r) {
            const QuantRow &row = data.analysis.quantLayout[std::size_t(r)];
            QCOMPARE(quant->item(r, 4)->text(), QString::number(row.bitsPerWeight(), 'f', 2));
        }
        // Copy as…: the table as Markdown and CSV, its rows as shown, with the window's provenance under it.
        const QString md = tableText(quant, TableFormat::Markdown);
        QVERIFY2(md.startsWith(QStringLiteral("| Category | Format | Stored as | Parameters | Bits/weight |")), qPrintable(md));
        QCOMPARE(md.count(QLatin1Char('\n')), 2 + quant->rowCount() + 2); // header, rule, rows, blank, source
        QVERIFY2(md.contains(window.property("atlasProvenance").toString()) &&
                     !window.property("atlasProvenance").toString().isEmpty(),
                 qPrintable(md));
        const QString row = tableText(quant, TableFormat::Markdown, 0);
        QVERIFY(row.contains(QStringLiteral("| routed_experts |")) && !row.contains(QStringLiteral("| norms |")));
        const QString csv = tableText(quant, TableFormat::Csv);
        QVERIFY2(csv.startsWith(QStringLiteral("Category,Format,Stored as,Parameters,Bits/weight,")), qPrintable(csv));
        QVERIFY(csv.contains(QStringLiteral("routed_experts,")));
        // Copy as… on a number: what it is, its value, and the window's provenance.
        {
            QLabel value(QStringLiteral("<b>1 GGUF file</b>"), &window);
            QCOMPARE(cardCitation(&value, QStringLiteral("Shards")),
                     QStringLiteral("Shards: 1 GGUF file — ") + window.property("atlasProvenance").toString());
            value.setProperty("headline", QStringLiteral("70,272 B/token"));
            QVERIFY(cardCitation(&value, QStringLiteral("Cache")).startsWith(QStringLiteral("Cache: 70,272 B/token (1 GGUF file) — ")));
            QCOMPARE(cardValueText(&value), QStringLiteral("1 GGUF file")); // Copy Value: what is shown, bare
            value.setText(QStringLiteral("a < b"));
            value.setTextFormat(Qt::PlainText);
            QCOMPARE(cardValueText(&value), QStringLiteral("a < b"));
        }
        // The Overview's cards are not selectable (a selectable label lays plain text out as a document): their
        // values are copied from the menu.
        for (auto *card : overview->findChildren<QFrame *>(QStringLiteral("card")))
            for (auto *label : card->findChildren<QLabel *>())
                QVERIFY2(!(label->textInteractionFlags() & Qt::TextSelectableByMouse), qPrintable(label->text()));
        // Fits on: llama.cpp's offload on each ticked GPU, as planLlamaCpp words it.
        overview->setTickedGpus({QStringLiteral("H200"), QStringLiteral("H100")});
        QTRY_VERIFY_WITH_TIMEOUT(!overview->fitsPending(), 120000);
        for (const char *gpu : {"H200", "H100"}) {
            LlamaPlanOptions lo;
            lo.gpuMemory = gpuPresetNamed(gpu)->bytes;
            lo.context = data.cache.contextTokens;
            CacheOptions co;
            co.contextTokens = data.cache.contextTokens;
            const LlamaPlan p = planLlamaCpp(data, lo, co);
            QVERIFY2(overview->fitsText().contains(QString::fromStdString(p.flags)), qPrintable(overview->fitsText()));
        }
        QVERIFY(overview->fitsText().contains(QLatin1String("llama.cpp on one GPU")));
        // Layers: llama.cpp's names, the biases of the MoE blocks, a block's ggml types summed.
        auto *layers = qobject_cast<LayersView *>(window.view(QStringLiteral("layers")));
        layers->setFilterText(QStringLiteral("exp_probs_b"));
        QCOMPARE(layers->matchCount(), qint64(spec.layers - spec.firstDense));
        layers->setFilterText(QString());
        const QString dtypes = layers->proxy()->index(1, 1).data().toString(); // layer 0
        QVERIFY2(dtypes.contains(QLatin1String("Q4_K")) && dtypes.contains(QLatin1String("F32")) &&
                     !dtypes.contains(QLatin1String("BOOL")),
                 qPrintable(dtypes));
        // The Cache view: llama.cpp's preset, its q8_0 type a choice.
        auto *cache = qobject_cast<CacheView *>(window.view(QStringLiteral("cache")));
        QVERIFY2(cache->breakdownText().contains(QLatin1String("llama.cpp")), qPrintable(cache->breakdownText()));
        QCOMPARE(cache->budget().preset, CachePreset::LlamaCpp);
        QCOMPARE(cache->budget().bytesPerToken, std::uint64_t(spec.layers) * 2 * std::uint64_t(spec.kvLoraRank + spec.ropeDim));
        // The Anatomy: every tensor of an MoE block placed in a box.
        auto *anatomy = qobject_cast<AnatomyView *>(window.view(QStringLiteral("anatomy")));
        QVERIFY(anatomy->notApplicable().isEmpty());
        const TensorsByLayer byLayer = tensorsByLayer(data);
        for (int i : {0, int(spec.firstDense), int(spec.layers) - 1}) {
            const LayerAnatomy l = layerAnatomy(data, i, &byLayer);
            QVERIFY2(l.unplaced.empty(), l.unplaced.empty() ? "" : l.unplaced.front().c_str());
        }
        // Edit › Copy Figure: the Overview's figure on the clipboard as PNG and SVG.
        window.showView(overview);
        QVERIFY(window.copyCurrentFigure());
        const QMimeData *clip = QGuiApplication::clipboard()->mimeData();
        QVERIFY(clip && clip->hasImage() && !qvariant_cast<QImage>(clip->imageData()).isNull());
        QVERIFY(clip->data(QStringLiteral("image/svg+xml")).startsWith("<?xml"));
        // The Plan view says whose plans these are.
        auto *plan = qobject_cast<PlanView *>(window.view(QStringLiteral("plan")));
        QVERIFY(plan->ggufNoteShown());
    }

    void windowOnFullLayout()
    {
        MainWindow window(false);
        window.resize(1400, 900);
        window.show();
        QVERIFY(openAndWait(window, m_full.path()));
        QVERIFY(window.errorText().isEmpty());
        QVERIFY(window.loader()->layoutMs() >= 0);
        QVERIFY(window.loader()->totalMs() >= window.loader()->layoutMs());
        const auto spec = synth::glm5Fp8();
        const auto want = expected::budget(spec);

        auto *overview = qobject_cast<OverviewView *>(window.view(QStringLiteral("overview")));
        QCOMPARE(overview->cardValue(QStringLiteral("Parameters")),
                 QString::fromStdString(paramCount(want.total)));
        QCOMPARE(overview->cardValue(QStringLiteral("Active per token")),
                 QString::fromStdString(paramCount(want.active)));
        // The layer mix from the layer model, MTP apart; the total as model cards count it, on the card.
        QCOMPARE(overview->cardValue(QStringLiteral("Layers")),
                 QStringLiteral("%1 MLA + %2 MTP").arg(spec.layers).arg(spec.mtpLayers));
        QCOMPARE(overview->cardValue(QStringLiteral("Tensors")), QStringLiteral("118,629"));
        QCOMPARE(overview->cardValue(QStringLiteral("KV + index cache")), QStringLiteral("92,880 B/token"));
        // Each headline card carries its working: its first line evaluates exactly to the number.
        for (const auto &[card, value] : {std::pair{QStringLiteral("Parameters"), double(want.total)},
                                          std::pair{QStringLiteral("Active per token"), double(want.active)},
                                          std::pair{QStringLiteral("KV + index cache"), 92880.0}}) {
            const QString working = overview->cardWorking(card);
            QVERIFY2(!working.isEmpty(), qPrintable(card));
            const auto v = evaluateWorking(working.section(QLatin1Char('\n'), 0, 0).toStdString());
            QVERIFY2(v, qPrintable(working));
            QCOMPARE(double(v->numerator) / double(v->denominator), value);
        }
        QVERIFY(overview->syntheticBannerShown());
        {
            // The card counts what the IndexShare view lists, main layers only.
            auto *indexView = qobject_cast<IndexShareView *>(window.view(QStringLiteral("indexshare")));
            int full = 0, shared = 0;
            for (int r = 0; r < indexView->table()->rowCount(); ++r) {
                if (indexView->table()->item(r, 1)->text() == QLatin1String("mtp")) continue;
                const QString role = indexView->table()->item(r, 2)->text();
                full += role == QLatin1String("full");
                shared += role == QLatin1String("shared");
            }
            QVERIFY(full > 0 && shared > 0);
            QCOMPARE(overview->cardValue(QStringLiteral("Indexers")), QStringLiteral("%1 full / %2 shared").arg(full).arg(shared));
        }
        // Layers without an indexer are counted when there are any; a shared count only when there is one.
        QCOMPARE(OverviewView::indexerCount(21, 0, 43), QStringLiteral("21 full / 22 none"));
        QCOMPARE(OverviewView::indexerCount(3, 9, 12), QStringLiteral("3 full / 9 shared"));
        QCOMPARE(OverviewView::indexerCount(12, 0, 12), QStringLiteral("12 full / 0 shared"));
        // The architecture in numbers, from the written config.json.
        {
            const synth::LayoutSpec spec = synth::glm5Fp8();
            QCOMPARE(overview->architectureValue(QStringLiteral("Hidden size")), groupDigitsQ(std::uint64_t(spec.hidden)));
            QCOMPARE(overview->architectureValue(QStringLiteral("Experts")),
                     QStringLiteral("%1 routed + %2 shared · top-%3").arg(spec.experts).arg(spec.sharedExperts).arg(spec.topk));
            QVERIFY(overview->architectureValue(QStringLiteral("Attention"))
                        .contains(QStringLiteral("kv %1 + %2 RoPE").arg(spec.kvLoraRank).arg(spec.ropeDim)));
        }
        // "Fits on": the smallest deployment of each ticked GPU, as plan --search finds it (vLLM, its own
        // cache, the cache card's context); "plan it" opens the Plan view on it.
        {
            overview->setTickedGpus({QStringLiteral("H200"), QStringLiteral("B300")});
            QCOMPARE(overview->tickedGpus(), (QStringList{QStringLiteral("H200"), QStringLiteral("B300")}));
            QTRY_VERIFY_WITH_TIMEOUT(!overview->fitsPending(), 120000);
            SearchOptions so;
            so.gpus = {gpuPresetNamed("H200"), gpuPresetNamed("B300")};
            const DeploymentSearch want = searchDeployments(*window.current(), so);
            QCOMPARE(want.options.context, std::uint64_t(spec.maxPosition));
            const QString text = overview->fitsText();
            for (const auto &k : want.gpus) {
                QVERIFY(k.smallest);
                QVERIFY2(text.contains(QStringLiteral("%1 from %2 GPUs (%3)")
                                           .arg(qs(std::string(k.gpu->name)))
                                           .arg(k.smallest->gpus)
                                           .arg(qs(k.smallest->layout()))),
                         qPrintable(text));
            }
            // An answer to an earlier request is not shown: ticking another GPU asks again, and the old answer
            // arriving then leaves the new request waiting for its own.
            overview->setTickedGpus({QStringLiteral("H200")});
            QVERIFY(overview->fitsPending());
            overview->setFits(want); // the two-GPU answer, to the request before
            QVERIFY(overview->fitsPending());
            QTRY_VERIFY_WITH_TIMEOUT(!overview->fitsPending(), 120000);
            QVERIFY(!overview->fitsText().contains(QLatin1String("B300")));
            auto *plan = qobject_cast<PlanView *>(window.view(QStringLiteral("plan")));
            emit overview->planWanted(QStringLiteral("B300"), *want.gpus[1].smallest, want.options.context);
            QCOMPARE(window.currentView(), plan);
            QVERIFY(plan->plan() && plan->plan()->fits);
            QCOMPARE(plan->plan()->options.gpus, want.gpus[1].smallest->gpus);
            QCOMPARE(plan->plan()->sequencesAtContext, want.gpus[1].smallest->sequences);
            plan->resetParallelism(); // the layout the checks below start from
            window.showView(overview);
        }
        // The card follows the Cache view's settings: vLLM's 132-byte entries give 78 x 1,152 + 21 x 132.
        auto *cacheView = qobject_cast<CacheView *>(window.view(QStringLiteral("cache")));
        cacheView->setPreset(CachePreset::Vllm);
        QCOMPARE(overview->cardValue(QStringLiteral("KV + index cache")),
                 groupDigitsQ(78 * 1152 + 21 * 132) + QStringLiteral(" B/token"));
        // Reloaded with the Cache view on screen at vLLM's count (the views get the checkpoint one by one),
        // the card still says what the Cache view counts.
        window.showView(cacheView);
        QVERIFY(openAndWait(window, m_full.path()));
        QCOMPARE(overview->cardValue(QStringLiteral("KV + index cache")),
                 groupDigitsQ(cacheView->budget().bytesPerToken) + QStringLiteral(" B/token"));
        QCOMPARE(cacheView->budget().bytesPerToken, std::uint64_t(78 * 1152 + 21 * 132)); // the preset kept
        window.showView(overview);
        cacheView->setPreset(CachePreset::Article);
        // The chosen context's figure is drawn and labelled on the chart; hovering reads any context.
        {
            const std::uint64_t context = std::uint64_t(synth::glm5Fp8().maxPosition); // the default context
            QCOMPARE(cacheView->chart()->pointLabels(),
                     QStringList{QStringLiteral("%1 tokens: %2").arg(groupDigitsQ(context), binaryBytesQ(92880ull * context))});
            QVERIFY(cacheView->chart()->hoverText(131072).contains(QStringLiteral("131,072 tokens → ") +
                                                                   binaryBytesQ(92880ull * 131072)));
        }

        // The Plan view re-plans as the user types: 8 H200 hold it, 4 do not, 3 cannot split 64 heads. Its
        // context is the one every view starts at (max_position_embeddings), and its cache the engine's.
        auto *planView = qobject_cast<PlanView *>(window.view(QStringLiteral("plan")));
        planView->setGpu(QStringLiteral("H200"));
        planView->setGpus(8);
        QVERIFY(planView->plan());
        QCOMPARE(planView->plan()->options.context, std::uint64_t(synth::glm5Fp8().maxPosition));
        QCOMPARE(planView->plan()->perGpu.cacheBytesPerToken, double(78 * 1152 + 21 * 132)); // vLLM's entries
        QVERIFY2(planView->detailsText().contains(QStringLiteral("vLLM&#x27;s BF16 latent and 132-byte FP8 index keys")) ||
                     planView->detailsText().contains(QStringLiteral("vLLM's BF16 latent and 132-byte FP8 index keys")),
                 qPrintable(planView->detailsText()));
        QVERIFY2(!planView->detailsText().contains(QStringLiteral("preset")), qPrintable(planView->detailsText()));
        planView->setContext(131072);
        QVERIFY2(planView->plan() && planView->plan()->fits, qPrintable(planView->verdict()));
        // The Pareto chart of this GPU comes from a search off the GUI thread; a click plans its point.
        QTRY_VERIFY_WITH_TIMEOUT(!planView->searchPending(), 120000);
        QVERIFY(!planView->pareto().empty());
        {
            const SearchPoint first = planView->pareto().front();
            planView->pickDeployment(first.gpus);
            QVERIFY(planView->plan() && planView->plan()->fits);
            QCOMPARE(planView->plan()->options.gpus, first.gpus);
            QCOMPARE(*planView->plan()->options.tp, first.tp);
            QCOMPARE(planView->plan()->sequencesAtContext, first.sequences);
            // Both MTP settings were searched at once: ticking it draws the other series, no new search.
            planView->setMtp(true);
            QVERIFY(!planView->searchPending());
            QVERIFY(!planView->pareto().empty());
            QVERIFY(planView->paretoChart()->seriesNames().contains(QStringLiteral("without the MTP layers")));
            QVERIFY(planView->pareto().front().sequences <= first.sequences); // the MTP layers cost memory
            planView->pickDeployment(planView->pareto().front().gpus);
            QVERIFY(planView->plan() && planView->plan()->options.mtp);
            QCOMPARE(planView->plan()->sequencesAtContext, planView->pareto().front().sequences);
            planView->setMtp(false);
            QCOMPARE(planView->pareto().front().sequences, first.sequences);
            planView->resetParallelism(); // back to the layout the checks below expect
            planView->setGpus(8);
        }
        QCOMPARE(planView->plan()->perGpu.weightBytes, std::uint64_t(94'683'065'664));
        QCOMPARE(planView->chart()->seriesNames(),
                 (QStringList{QStringLiteral("replicated"), QStringLiteral("split by TP"), QStringLiteral("routed experts"),
                              QStringLiteral("cache room"), QStringLiteral("usable (0.900 of the GPU)"),
                              QStringLiteral("GPU memory")})); // no reserve set, no reserve drawn
        QCOMPARE(planView->chart()->categoryLabels(), QStringList{QStringLiteral("each of the 8 GPUs")});
        // Each part's value is printed beside the bar; the usable and the physical memory are lines.
        QVERIFY2(planView->chart()->pointLabels().contains(
                     QStringLiteral("routed experts: ") + binaryBytesQ(planView->plan()->perGpu.expertBytes)),
                 qPrintable(planView->chart()->pointLabels().join(QLatin1Char('|'))));
        QCOMPARE(planView->chart()->levels(),
                 (QStringList{QStringLiteral("usable (0.900 of the GPU)"), QStringLiteral("GPU memory")}));
        // The notes name the controls of this view, not the command line's options.
        QVERIFY2(planView->detailsText().contains(QStringLiteral("Reserve sets them aside")), qPrintable(planView->detailsText()));
        QVERIFY2(!planView->detailsText().contains(QStringLiteral("--")), qPrintable(planView->detailsText()));
        // Its headline numbers link to their working, which evaluates exactly to the plan's figure.
        {
            const auto valueOf = [](const QLabel *label, const QString &path) {
                const auto v = evaluateWorking(labelWorking(label, path).section(QLatin1Char('\n'), 0, 0).toStdString());
                return v && v->denominator == 1 ? std::optional<std::int64_t>(std::int64_t(v->numerator)) : std::nullopt;
            };
            const QLabel *details = planView->detailsLabel();
            QCOMPARE(labelWorkingPaths(details), (QStringList{QStringLiteral("per_gpu.weight_bytes"),
                                                              QStringLiteral("per_gpu.max_cached_tokens"),
                                                              QStringLiteral("sequences_at_context")}));
            const CapacityPlan &p = *planView->plan();
            QCOMPARE(valueOf(details, QStringLiteral("per_gpu.weight_bytes")), std::optional<std::int64_t>(p.perGpu.weightBytes));
            QCOMPARE(valueOf(details, QStringLiteral("per_gpu.max_cached_tokens")),
                     std::optional<std::int64_t>(p.perGpu.maxCachedTokens));
            QCOMPARE(valueOf(details, QStringLiteral("sequences_at_context")), std::optional<std::int64_t>(p.sequencesAtContext));
        }
        planView->setGpus(4);
        QVERIFY(planView->plan() && !planView->plan()->fits);
        QVERIFY2(planView->verdict().contains(QStringLiteral("Does not fit")), qPrintable(planView->verdict()));
        planView->setGpus(3);
        QVERIFY(!planView->plan());
        QVERIFY2(planView->verdict().contains(QStringLiteral("attention heads")), qPrintable(planView->verdict()));
        planView->setGpus(8);
        // The plan follows the Cache view's settings when asked to: planned when it is shown (a hidden
        // Plan view does not re-plan at every step of the Cache view's slider).
        planView->setCacheFromCacheView(true);
        window.showView(cacheView);
        cacheView->setPreset(CachePreset::Vllm);
        window.showView(planView);
        QCOMPARE(planView->plan()->perGpu.cacheBytesPerToken, double(78 * 1152 + 21 * 132));
        cacheView->setPreset(CachePreset::Article);
        QCOMPARE(planView->plan()->perGpu.cacheBytesPerToken, double(92880));
        planView->setCacheFromCacheView(false);
        // SGLang keeps the latent in FP8 on Blackwell (576 B a layer), BF16 on Hopper.
        planView->setEngine(PlanEngine::Sglang);
        planView->setGpu(QStringLiteral("B200"));
        QCOMPARE(planView->plan()->perGpu.cacheBytesPerToken, double(78 * 576 + 21 * 132));
        planView->setGpu(QStringLiteral("H200"));
        QCOMPARE(planView->plan()->perGpu.cacheBytesPerToken, double(78 * 1152 + 21 * 132));
        planView->setEngine(PlanEngine::Vllm);
        // Custom memory: as typed, in GiB.
        planView->setCustomGpuMemory(141.0);
        QCOMPARE(planView->plan()->options.gpuMemory, std::uint64_t(141) << 30);
        planView->setGpu(QStringLiteral("H200"));
        QCOMPARE(planView->plan()->options.gpuMemory, std::uint64_t(150'109'945'856));
        // Two pipeline stages of TP 4: a bar per stage, named by its GPUs and layers; SGLang's own fraction.
        planView->setPipelineStages(2);
        QCOMPARE(planView->plan()->stages.size(), std::size_t(2));
        QCOMPARE(*planView->plan()->options.tp, 4);
        QCOMPARE(planView->chart()->categoryLabels().size(), 2);
        QCOMPARE(planView->chart()->categoryLabels().last(),
                 QStringLiteral("stage 2: GPUs 4–7, layers %1–%2")
                     .arg(planView->plan()->stages[1].firstLayer)
                     .arg(planView->plan()->stages[1].endLayer - 1));
        QVERIFY2(planView->verdict().contains(QStringLiteral("stage")) ||
                     planView->plan()->fits,
                 qPrintable(planView->verdict()));
        planView->setEngine(PlanEngine::Sglang);
        QCOMPARE(*planView->plan()->options.memFraction, sglangMemFraction(150'109'945'856ull, 4, 2, 1));
        if (qEnvironmentVariableIsSet("ATLAS_SHOTS")) { // for a developer to look at
            window.resize(1400, 900);
            window.showView(planView);
            window.grab().save(qEnvironmentVariable("ATLAS_SHOTS") + QStringLiteral("/plan-pp2-sglang.png"));
        }
        planView->setEngine(PlanEngine::Vllm);
        planView->setPipelineStages(1);
        QCOMPARE(overview->quantTable()->rowCount(), 9);

        auto *budget = qobject_cast<BudgetView *>(window.view(QStringLiteral("budget")));
        QCOMPARE(budget->chart()->seriesNames(),
                 (QStringList{QStringLiteral("Total"), QStringLiteral("Active per token")}));
        QCOMPARE(budget->chart()->pointCount(QStringLiteral("Total")), 9);
        // On its log axis each value is a dot with its value printed (a bar's length would say nothing).
        QCOMPARE(budget->chart()->pointLabels().size(),
                 budget->chart()->pointCount(QStringLiteral("Total")) +
                     budget->chart()->pointCount(QStringLiteral("Active per token")));
        // Every bar reads out on hover: the category and each series' value.
        QVERIFY2(budget->chart()->hoverText(0).contains(QStringLiteral("Total: ")), qPrintable(budget->chart()->hoverText(0)));
        QCOMPARE(budget->chart()->pointCount(QStringLiteral("Active per token")),
                 8); // MTP has no active part
        QCOMPARE(budget->table()->item(0, 1)->text(), QString::fromStdString(groupDigits(want.routed)));
        // Where the bytes go, linear: three stacks (parameters, active, stored bytes), a series per category
        // shown, every colour its own; the routed experts' share of the bytes is the bytes the table gives.
        ChartWidget *shares = budget->sharesChart();
        QCOMPARE(shares->categoryLabels().size(), 3);
        QCOMPARE(shares->seriesNames().size(), budget->table()->rowCount());
        QVERIFY(shares->seriesNames().contains(QStringLiteral("routed_experts")));
        QSet<QRgb> colours;
        for (int i = 0; i < shares->seriesNames().size(); ++i)
            colours.insert(ChartWidget::seriesColor(i).rgb());
        QCOMPARE(colours.size(), shares->seriesNames().size());
        QCOMPARE(budget->table()->item(0, 7)->text(), QStringLiteral("8.00")); // FP8 with 128x128 F32 scales

        auto *index = qobject_cast<IndexShareView *>(window.view(QStringLiteral("indexshare")));
        QVERIFY(index->summaryText().contains(QLatin1String("<b>21 full</b> and <b>57 shared</b>")));
        QCOMPARE(index->table()->rowCount(), 79);
        QCOMPARE(index->table()->item(7, 3)->text(), QStringLiteral("6")); // layer 7 reuses layer 6

        auto *cache = qobject_cast<CacheView *>(window.view(QStringLiteral("cache")));
        QCOMPARE(cache->budget().bytesPerToken, std::uint64_t(92880));
        QVERIFY(cache->breakdownText().contains(QLatin1String("90.70 GiB")));
        {
            // The breakdown links the headline figures to their working, each exact.
            const QLabel *b = cache->breakdownLabel();
            const QStringList paths = labelWorkingPaths(b);
            QVERIFY2(paths.contains(QStringLiteral("cache.bytes_per_token")) && paths.contains(QStringLiteral("cache.total_bytes")),
                     qPrintable(paths.join(QLatin1Char(' '))));
            for (const auto &[path, value] : {std::pair{QStringLiteral("cache.bytes_per_token"), cache->budget().bytesPerToken},
                                              std::pair{QStringLiteral("cache.total_bytes"), cache->budget().totalBytes}}) {
                const auto v = evaluateWorking(labelWorking(b, path).section(QLatin1Char('\n'), 0, 0).toStdString());
                QVERIFY2(v && v->denominator == 1, qPrintable(labelWorking(b, path)));
                QCOMPARE(std::uint64_t(v->numerator), value);
            }
        }
        {
            // Dragged, the charts follow each step and the breakdown's text once the slider rests (its
            // wrapped rich text is the costly part of a step); it then names the new context.
            auto *slider = cache->findChild<QSlider *>();
            QVERIFY(slider);
            // It stops at 1 K, 2 K, 4 K, ... and the model's maximum, with a tick at each.
            QVERIFY(slider->tickPosition() != QSlider::NoTicks);
            slider->setValue(slider->minimum());
            QCOMPARE(cache->budget().contextTokens, std::uint64_t(1024));
            slider->setValue(slider->maximum());
            QCOMPARE(cache->budget().contextTokens, std::uint64_t(synth::glm5Fp8().maxPosition));
            slider->setValue(slider->maximum() / 2);
            QVERIFY(std::has_single_bit(cache->budget().contextTokens) && cache->budget().contextTokens >= 1024);
            const QString context = QString::fromStdString(groupDigits(cache->budget().contextTokens));
            QCOMPARE(cache->chart()->seriesNames().isEmpty(), false);
            QTRY_VERIFY2(cache->breakdownText().contains(QStringLiteral("At %1 tokens").arg(context)),
                         qPrintable(cache->breakdownText()));
        }
        cache->setContext(2048);
        QVERIFY(cache->breakdownText().contains(QLatin1String("exactly dense attention")));
        cache->setKvDtype(KvDtype::FP8_DS_MLA);
        cache->setIndexEntryBytes(132);
        QCOMPARE(cache->budget().bytesPerToken, std::uint64_t(78 * 656 + 21 * 132));
        QCOMPARE(cache->chart()->pointCount(QStringLiteral("selected context")), 1);

        auto *bias = qobject_cast<BiasView *>(window.view(QStringLiteral("router-bias")));
        QVERIFY(bias->statusText().startsWith(QLatin1String("76 tensors, 77,824 bytes read")));
        QCOMPARE(bias->table()->rowCount(), 76);
        QCOMPARE(bias->levels()->pointCount(QStringLiteral("F32 distinct (as stored)")), 76); // the stored dtype named
        bias->selectLayer(40);
        const auto values = synth::syntheticBias(spec, 40);
        std::set<std::uint16_t> levels;
        for (float v : values)
            levels.insert(bf16Bits(v));
        QCOMPARE(bias->histogram()->pointCount(QStringLiteral("BF16 levels (%1)").arg(levels.size())),
                 int(levels.size()));

        auto *routing = qobject_cast<RoutingView *>(window.view(QStringLiteral("routing")));
        routing->setTokens(128);
        QSignalSpy simulated(routing, &RoutingView::simulationFinished);
        routing->runSimulation();
        QVERIFY(simulated.wait(300000));
        QVERIFY(routing->result());
        QCOMPARE(routing->result()->layers.size(), std::size_t(76));
        // The engine picked by default (SGLang's quantized AITER path) is both_bf16: named and drawn in front.
        QCOMPARE(routing->changedChart()->pointCount(QStringLiteral("both_bf16 (the chosen engine)")), 76);
        QCOMPARE(routing->changedChart()->seriesNames().last(), QStringLiteral("both_bf16 (the chosen engine)"));
        // bias_bf16 is drawn, or named as lying under the series it equals.
        QString biasSeries;
        for (const QString &n : routing->changedChart()->seriesNames())
            if (n.startsWith(QLatin1String("bias_bf16"))) biasSeries = n;
        QCOMPARE(routing->changedChart()->pointCount(biasSeries), 76);
        bool sameAsBoth = true;
        for (const auto &l : routing->result()->layers)
            sameAsBoth = sameAsBoth && l.variants[int(Variant::BiasBf16)].changedSetFraction ==
                                           l.variants[int(Variant::BothBf16)].changedSetFraction;
        QCOMPARE(biasSeries.contains(QLatin1String("under it")), sameAsBoth);
        // The expert load as a difference, ranked: one point per expert, gains before losses, summing to zero
        // (every token still goes to top-k experts).
        const QString diffName = routing->loadChart()->seriesNames().value(0);
        QVERIFY2(diffName.endsWith(QStringLiteral(" − FP32 reference")), qPrintable(diffName));
        QCOMPARE(routing->loadChart()->pointCount(diffName), 256);
        QVERIFY2(routing->loadChart()->hoverText(0).contains(QLatin1String("expert ")), qPrintable(routing->loadChart()->hoverText(0)));
        QVERIFY(routing->noteText().contains(QLatin1String("not an estimate of real traffic")));

        // A 1024 × 700 window holds every view of this 78-layer checkpoint: the views reflow (card grids,
        // the plan's controls, wrapped chart titles, combo boxes that elide) instead of holding it wider.
        // At 2560 × 1440 too; at both sizes every view renders, nothing inside it reaches past its right edge
        // (a child wider than the view would be cut), and its charts keep room to draw.
        const QSize before = window.size();
        for (const QSize size : {QSize(1024, 700), QSize(2560, 1440)}) {
            window.resize(size);
            for (AtlasView *v : window.views()) {
                window.showView(v);
                QCoreApplication::processEvents();
                QVERIFY2(window.minimumSizeHint().width() <= size.width(), qPrintable(v->fileStem()));
                QVERIFY2(window.minimumSizeHint().height() <= size.height(), qPrintable(v->fileStem()));
                QCOMPARE(window.size(), size);
                QVERIFY(!v->grab().isNull());
                for (QWidget *w : v->findChildren<QWidget *>()) {
                    if (!w->isVisibleTo(v) || qobject_cast<QScrollBar *>(w)) continue;
                    bool scrolled = false; // a scroll area's page may be wider than its window onto it
                    for (QWidget *p = w->parentWidget(); p && p != v && !scrolled; p = p->parentWidget())
                        scrolled = qobject_cast<QAbstractScrollArea *>(p) != nullptr;
                    if (scrolled) continue;
                    QVERIFY2(w->mapTo(v, QPoint(w->width(), 0)).x() <= v->width() + 1,
                             qPrintable(QStringLiteral("%1 at %2: %3 runs past the view").arg(v->fileStem()).arg(size.width()).arg(QString::fromLatin1(w->metaObject()->className()))));
                }
                for (ChartWidget *c : v->findChildren<ChartWidget *>())
                    if (c->isVisibleTo(v) && !c->isEmpty())
                        QVERIFY2(c->height() >= 150, qPrintable(QStringLiteral("%1 at %2: a chart %3 px high").arg(v->fileStem()).arg(size.width()).arg(c->height())));
            }
        }
        window.resize(before);

        // Every view renders and exports; the files open again.
        QTemporaryDir out;
        for (AtlasView *v : window.views()) {
            window.showView(v);
            QCoreApplication::processEvents();
            // The longest table in the view: its every row must be in the figure, not the window's slice.
            int tableRows = 0;
            for (QTableView *t : v->findChildren<QTableView *>())
                if (t->isVisibleTo(v)) tableRows = std::max(tableRows, t->verticalHeader()->length());
            const QSize before = v->size();
            QList<Qt::ScrollBarPolicy> policies;
            for (QTableView *t : v->findChildren<QTableView *>())
                policies << t->verticalScrollBarPolicy();
            for (const char *suffix : {".png", ".svg", ".pdf"}) {
                const QString path = out.filePath(v->fileStem() + QLatin1String(suffix));
                QString error;
                QVERIFY2(exportWidget(v, path, &error), qPrintable(error));
                QCOMPARE(v->size(), before); // laid out full height for the figure only
                QList<Qt::ScrollBarPolicy> after; // the scroll bars as they were
                for (QTableView *t : v->findChildren<QTableView *>())
                    after << t->verticalScrollBarPolicy();
                QCOMPARE(after, policies);
                QFile f(path);
                QVERIFY(f.open(QIODevice::ReadOnly));
                const QByteArray head = f.read(8);
                if (QLatin1String(suffix) == QLatin1String(".png")) {
                    const QImage image(path);
                    QVERIFY(!image.isNull());
                    QCOMPARE(image.width(), v->width() * 2); // high-DPI
                    QVERIFY2(image.height() >= 2 * tableRows, qPrintable(path));
                } else if (QLatin1String(suffix) == QLatin1String(".svg")) {
                    QVERIFY(QSvgRenderer(path).isValid());
                    // Charts are drawn as vectors: their titles are text in the drawing, not pixels.
                    f.seek(0);
                    const QString svg = QString::fromUtf8(f.readAll());
                    for (ChartWidget *chart : v->findChildren<ChartWidget *>())
                        if (chart->isVisibleTo(v) && !chart->isEmpty()) {
                            QCOMPARE(chart->titleLines().join(QLatin1Char(' ')), chart->title());
                            for (const QString &line : chart->titleLines())
                                QVERIFY2(svg.contains(QLatin1Char('>') + line + QLatin1Char('<')), qPrintable(path));
                        }
                } else {
                    QVERIFY(head.startsWith("%PDF"));
                    QVERIFY(f.size() > 2000);
                }
            }
        }
        QString error;
        QVERIFY(!exportWidget(window.views().front(), out.filePath(QStringLiteral("x.gif")), &error));
        QVERIFY(error.contains(QLatin1String(".png, .svg or .pdf")));
        QVERIFY(!exportWidget(window.views().front(), QStringLiteral("/nonexistent/dir/x.png"), &error));
    }

    void windowOnSmallLayout()
    {
        MainWindow window(false);
        window.resize(1200, 800);
        window.show();
        QVERIFY(openAndWait(window, m_small.path()));
        const auto spec = synth::smallLayout();
        auto *overview = qobject_cast<OverviewView *>(window.view(QStringLiteral("overview")));
        QCOMPARE(overview->cardValue(QStringLiteral("Parameters")),
                 QString::fromStdString(paramCount(expected::budget(spec).total)));
        auto *bias = qobject_cast<BiasView *>(window.view(QStringLiteral("router-bias")));
        QCOMPARE(bias->table()->rowCount(), int(spec.layers - spec.firstDense + spec.mtpLayers));
        auto *index = qobject_cast<IndexShareView *>(window.view(QStringLiteral("indexshare")));
        QCOMPARE(index->table()->rowCount(), int(spec.layers + spec.mtpLayers));
        // A dark theme renders too, with the charts on a dark base.
        MainWindow::applyTheme(MainWindow::Theme::Dark);
        auto *budget = qobject_cast<BudgetView *>(window.view(QStringLiteral("budget")));
        window.showView(budget);
        QCoreApplication::processEvents();
        const QImage image = budget->chart()->grab().toImage();
        QVERIFY(QColor(image.pixel(5, 5)).lightness() < 80);
        // Colours chosen in code follow the switch: the synthetic banner turns dark, its text light.
        window.showView(overview);
        QCoreApplication::processEvents();
        QVERIFY(overview->syntheticBannerShown());
        auto *banner = overview->findChild<QLabel *>(QStringLiteral("syntheticBanner"));
        QVERIFY(banner);
        const QImage dark = banner->grab().toImage();
        QVERIFY(QColor(dark.pixel(dark.width() / 2, 3)).lightness() < 100);
        MainWindow::applyTheme(MainWindow::Theme::Light);
        const QImage light = banner->grab().toImage();
        QVERIFY(QColor(light.pixel(light.width() / 2, 3)).lightness() > 180);
    }

    // What an export must leave as it found it: the view's visible parts, their table texts and row heights,
    // scroll positions, and the keyboard's focus.
    static QStringList widgetState(QWidget *view)
    {
        QStringList out;
        QWidget *focus = QApplication::focusWidget();
        out << QStringLiteral("focus %1").arg(focus ? QString::fromLatin1(focus->metaObject()->className()) : QStringLiteral("none"));
        for (QWidget *w : view->findChildren<QWidget *>()) {
            QString line = QString::fromLatin1(w->metaObject()->className()) + (w->isVisibleTo(view) ? QStringLiteral(" shown") : QStringLiteral(" hidden"));
            if (auto *t = qobject_cast<QTableWidget *>(w)) {
                for (int r = 0; r < t->rowCount(); ++r) {
                    line += QStringLiteral(" |%1").arg(t->rowHeight(r));
                    for (int c = 0; c < t->columnCount(); ++c)
                        if (t->item(r, c)) line += QLatin1Char(' ') + t->item(r, c)->text();
                }
                for (int c = 0; c < t->columnCount(); ++c)
                    if (t->horizontalHeaderItem(c)) line += QStringLiteral(" h:") + t->horizontalHeaderItem(c)->text();
            }
            if (auto *a = qobject_cast<QAbstractScrollArea *>(w))
                line += QStringLiteral(" scroll %1 %2").arg(a->verticalScrollBar()->value()).arg(a->horizontalScrollBar()->value());
            if (auto *c = qobject_cast<ChartWidget *>(w)) line += QStringLiteral(" min %1").arg(c->minimumHeight());
            out << line;
        }
        return out;
    }

    // Figures for a document column: every text at 8 pt or more at print size (read back from the SVG's own
    // font sizes and millimetres), a PNG whose pHYs is its real density for the column, long tables cut with
    // a line that says how many rows are left out; and an exact --size is exactly that size.
    void figuresForADocumentAndAnExactSize()
    {
        MainWindow window(false);
        window.resize(1440, 900);
        window.show();
        QVERIFY(openAndWait(window, m_full.path()));
        QTemporaryDir out;
        const double columnCm = 16;
        int cutTables = 0;
        for (AtlasView *v : window.views()) {
            if (!window.figureSkipReason(v).isEmpty()) continue;
            window.showView(v);
            QCoreApplication::processEvents();
            const QSize before = v->size();
            const QStringList stateBefore = widgetState(v);
            FigureOptions document;
            document.columnCm = columnCm;
            const QString svgPath = out.filePath(v->fileStem() + QStringLiteral(".svg"));
            const QString pngPath = out.filePath(v->fileStem() + QStringLiteral(".png"));
            QString error;
            FigureReport report;
            QVERIFY2(exportWidget(v, svgPath, &error, window.captionFor(v), document, &report), qPrintable(error));
            QCOMPARE(v->size(), before); // laid out for the column only while it was painted
            QFile f(svgPath);
            QVERIFY(f.open(QIODevice::ReadOnly));
            const QString svg = QString::fromUtf8(f.readAll());
            static const QRegularExpression head(QStringLiteral("<svg width=\"([0-9.]+)mm\" height=\"([0-9.]+)mm\"\\s+viewBox=\"0 0 ([0-9]+) ([0-9]+)\""));
            const QRegularExpressionMatch m = head.match(svg);
            QVERIFY2(m.hasMatch(), qPrintable(v->fileStem()));
            QVERIFY2(std::abs(m.captured(1).toDouble() - columnCm * 10) < 0.02, qPrintable(m.captured(1)));
            const double ptPerUnit = m.captured(1).toDouble() / 25.4 * 72 / m.captured(3).toDouble();
            QCOMPARE(m.captured(3).toInt(), report.figure.width());
            // Every text's font size at print size, read with an XML reader (a <text>'s own font-size, else
            // its ancestors'), and where the cut table's note sits (under the groups' translations).
            double smallest = 1e9, noteY = -1;
            int texts = 0;
            {
                QXmlStreamReader xml(svg);
                struct Level { double size, dy; };
                std::vector<Level> stack{{0, 0}};
                static const QRegularExpression matrix(QStringLiteral("matrix\\(([^)]*)\\)"));
                while (!xml.atEnd()) {
                    xml.readNext();
                    if (xml.isStartElement()) {
                        Level l = stack.back();
                        const auto attrs = xml.attributes();
                        if (attrs.hasAttribute(QLatin1String("font-size"))) l.size = attrs.value(QLatin1String("font-size")).toDouble();
                        if (const QRegularExpressionMatch t = matrix.match(attrs.value(QLatin1String("transform")).toString()); t.hasMatch())
                            l.dy = t.captured(1).split(QLatin1Char(',')).value(5).toDouble(); // absolute: the generator writes each group's whole matrix
                        stack.push_back(l);
                        if (xml.name() == QLatin1String("text")) {
                            QVERIFY2(l.size > 0, qPrintable(v->fileStem()));
                            smallest = std::min(smallest, l.size * ptPerUnit);
                            ++texts;
                            const double y = attrs.value(QLatin1String("y")).toDouble() + l.dy;
                            if (xml.readElementText().contains(QLatin1String("more rows: see ckpt-atlas report"))) noteY = y;
                            stack.pop_back();
                        }
                    } else if (xml.isEndElement()) {
                        stack.pop_back();
                    }
                }
                QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
            }
            QVERIFY2(texts > 10, qPrintable(v->fileStem()));
            QVERIFY2(smallest >= 7.95, qPrintable(QStringLiteral("%1: %2 pt").arg(v->fileStem()).arg(smallest)));
            QVERIFY2(std::abs(smallest - report.smallestPt) < 0.05, qPrintable(v->fileStem()));
            // No faint fill a renderer that ignores fill-opacity would draw solid.
            QVERIFY2(!svg.contains(QLatin1String("fill-opacity=\"0.")), qPrintable(v->fileStem()));
            // A cut table says so inside the view's part of the figure (not under the caption, not past it).
            if (!report.cut.isEmpty())
                QVERIFY2(noteY > 0 && noteY < report.layout.height(),
                         qPrintable(QStringLiteral("%1: the note at y %2 in a %3-high view").arg(v->fileStem()).arg(noteY).arg(report.layout.height())));
            // The PNG: its pHYs says how dense it is when the column's width is printed, 300 dpi or more.
            QVERIFY2(exportWidget(v, pngPath, &error, window.captionFor(v), document), qPrintable(error));
            const QImage png(pngPath);
            const double dpi = png.dotsPerMeterX() * 0.0254;
            QVERIFY2(dpi >= 299.5, qPrintable(QString::number(dpi)));
            QVERIFY2(std::abs(png.width() / dpi * 2.54 - columnCm) < 0.01, qPrintable(QString::number(png.width() / dpi * 2.54)));
            if (!report.cut.isEmpty()) {
                ++cutTables;
                // At most the document's rows of the cut table, each counted.
                static const QRegularExpression counts(QStringLiteral("^([0-9,]+) of ([0-9,]+) rows$"));
                for (const QString &c : report.cut) {
                    const QRegularExpressionMatch n = counts.match(c);
                    QVERIFY2(n.hasMatch(), qPrintable(c));
                    const int shown = QString(n.captured(1)).remove(QLatin1Char(',')).toInt();
                    const int total = QString(n.captured(2)).remove(QLatin1Char(',')).toInt();
                    QVERIFY2(shown >= 1 && shown <= kDocumentTableRows && total > shown, qPrintable(c));
                }
            }
            // Exactly the size asked for, caption included.
            FigureOptions exact;
            exact.size = QSize(900, 640);
            QVERIFY2(exportWidget(v, pngPath, &error, window.captionFor(v), exact), qPrintable(error));
            QCOMPARE(QImage(pngPath).size(), exact.size * pngScale());
            QVERIFY2(exportWidget(v, svgPath, &error, window.captionFor(v), exact), qPrintable(error));
            QCOMPARE(QSvgRenderer(svgPath).viewBox(), QRect(QPoint(), exact.size));
            QCOMPARE(v->size(), before);
            // Everything the export changed for the figure is as it was: texts, row heights, scroll positions,
            // which parts show, the keyboard's focus.
            {
                QCoreApplication::processEvents(); // what the window shows once its pending layouts ran
                const QStringList stateAfter = widgetState(v);
                QCOMPARE(stateAfter.size(), stateBefore.size());
                for (int i = 0; i < stateAfter.size(); ++i)
                    QVERIFY2(stateAfter[i] == stateBefore[i],
                             qPrintable(QStringLiteral("%1: %2 -> %3").arg(v->fileStem(), stateBefore[i].left(300), stateAfter[i].left(300))));
            }
        }
        // The IndexShare and Router bias tables of 78 layers are longer than a document's rows; the Layers
        // tree too.
        QVERIFY(cutTables >= 3);
        // A focused field the figure hides gets the focus back afterwards.
        {
            QApplication::setActiveWindow(&window);
            QVERIFY(QTest::qWaitForWindowActive(&window));
            auto *layers = qobject_cast<LayersView *>(window.view(QStringLiteral("layers")));
            window.showView(layers);
            layers->focusFilter();
            QWidget *field = QApplication::focusWidget();
            QVERIFY(qobject_cast<QLineEdit *>(field));
            FigureOptions document;
            document.columnCm = columnCm;
            QString error;
            QVERIFY2(exportWidget(layers, out.filePath(QStringLiteral("focus.png")), &error, QString(), document), qPrintable(error));
            QCOMPARE(QApplication::focusWidget(), field);
            QVERIFY(field->isVisible());
        }
        QString error;
        FigureOptions narrow;
        narrow.columnCm = 8;
        QVERIFY(!exportWidget(window.views().front(), out.filePath(QStringLiteral("x.png")), &error, QString(), narrow));
        QVERIFY2(error.contains(QLatin1String("8 cm")), qPrintable(error));
    }

    // The Anatomy zooms (View › Zoom In, Ctrl+plus) and reflows: beside the diagram in a wide window, above
    // it in a narrow one, the diagram never narrower than its minimum nor wider than a readable line.
    void anatomyZoomsAndReflows()
    {
        MainWindow window(false);
        window.resize(1440, 900);
        window.show();
        QApplication::setActiveWindow(&window);
        QVERIFY(QTest::qWaitForWindowActive(&window));
        QVERIFY(openAndWait(window, m_full.path()));
        auto *anatomy = qobject_cast<AnatomyView *>(window.view(QStringLiteral("anatomy")));
        window.showView(anatomy);
        QCoreApplication::processEvents();
        for (const QSize size : {QSize(1024, 700), QSize(1440, 900), QSize(2560, 1440)}) {
            window.resize(size);
            QCoreApplication::processEvents();
            QCOMPARE(window.size(), size);
            const int diagramWidth = anatomy->diagram()->width();
            QVERIFY2(diagramWidth >= anatomy->diagram()->minimumWidth(), qPrintable(QString::number(diagramWidth)));
            QVERIFY2(anatomy->diagram()->mapTo(anatomy, QPoint(diagramWidth, 0)).x() <= anatomy->width(),
                     qPrintable(QStringLiteral("%1 wide: the diagram runs past the view").arg(size.width())));
            if (size.width() == 2560) QVERIFY(!anatomy->stacked());
        }
        // Narrower than the stack and the diagram side by side: the stack goes above, the diagram keeps its width.
        {
            const QSize keep = anatomy->size();
            anatomy->resize(600, 900);
            QVERIFY(anatomy->stacked());
            QVERIFY(anatomy->diagram()->width() >= anatomy->diagram()->minimumWidth());
            QVERIFY2(anatomy->diagram()->mapTo(anatomy, QPoint(anatomy->diagram()->width(), 0)).x() <= 600,
                     qPrintable(QStringLiteral("diagram %1 wide at x %2; view %3")
                                    .arg(anatomy->diagram()->width())
                                    .arg(anatomy->diagram()->mapTo(anatomy, QPoint(0, 0)).x())
                                    .arg(anatomy->width())));
            anatomy->resize(keep);
            QVERIFY(!anatomy->stacked());
        }
        // At 2560 the blocks stop at a readable width instead of stretching across the screen: the diagram is
        // as tall as at that width (a wider layout would be shorter, its text on fewer lines).
        const double heightWide = anatomy->diagram()->minimumHeight();
        QVERIFY(anatomy->diagram()->readableWidth() < anatomy->diagram()->width());
        {
            const QImage drawn = anatomy->diagram()->grab().toImage();
            const QRgb page = drawn.pixel(drawn.width() - 1, drawn.height() / 2);
            int right = 0; // the rightmost painted column
            for (int y = 0; y < drawn.height(); y += 3)
                for (int x = drawn.width() - 1; x > right; --x)
                    if (drawn.pixel(x, y) != page) {
                        right = x;
                        break;
                    }
            QVERIFY2(right > 0 && right <= anatomy->diagram()->readableWidth() + 2,
                     qPrintable(QStringLiteral("painted to x %1, readable %2").arg(right).arg(anatomy->diagram()->readableWidth())));
        }
        const double before = anatomy->diagram()->font().pointSizeF();
        const int stackBefore = anatomy->stack()->minimumWidth();
        QTest::keyClick(&window, Qt::Key_Equal, Qt::ControlModifier);
        QVERIFY2(anatomy->zoom() > 1.1, qPrintable(QString::number(anatomy->zoom())));
        QVERIFY(anatomy->diagram()->font().pointSizeF() > before * 1.1);
        QVERIFY(anatomy->diagram()->minimumHeight() > heightWide);
        QVERIFY(anatomy->stack()->minimumWidth() > stackBefore);
        QTest::keyClick(&window, Qt::Key_Minus, Qt::ControlModifier);
        QTest::keyClick(&window, Qt::Key_Minus, Qt::ControlModifier);
        QVERIFY(anatomy->zoom() < 1);
        anatomy->setZoom(1);
        QCOMPARE(anatomy->diagram()->font().pointSizeF(), before);
    }

    // A live switch to the dark theme gives what a fresh dark start gives: the sidebar's background and
    // text, and every caption's colour.
    void liveThemeSwitchEqualsAFreshStart()
    {
        const auto look = [](MainWindow &w) {
            QCoreApplication::processEvents();
            auto *sidebar = w.findChild<QListWidget *>();
            const QImage side = sidebar->grab().toImage();
            QStringList out{QColor(side.pixel(side.width() / 2, side.height() - 5)).name()};
            for (int i = 0; i < sidebar->count(); ++i) {
                const QVariant fg = sidebar->item(i)->data(Qt::ForegroundRole);
                out << (fg.isValid() ? fg.value<QBrush>().color().name(QColor::HexArgb) : QStringLiteral("palette text"));
            }
            for (QLabel *l : w.findChildren<QLabel *>())
                if (l->property("atlasCaption").toBool()) out << l->palette().color(QPalette::WindowText).name(QColor::HexArgb);
            out.removeDuplicates();
            return out;
        };
        MainWindow::applyTheme(MainWindow::Theme::Light);
        MainWindow live(false);
        live.resize(1200, 800);
        live.show();
        QVERIFY(openAndWait(live, m_small.path()));
        const QStringList lightLook = look(live);
        MainWindow::applyTheme(MainWindow::Theme::Dark);
        const QStringList switched = look(live);
        MainWindow fresh(false);
        fresh.resize(1200, 800);
        fresh.show();
        QVERIFY(openAndWait(fresh, m_small.path()));
        const QStringList started = look(fresh);
        MainWindow::applyTheme(MainWindow::Theme::Light);
        QCOMPARE(switched, started);
        QVERIFY(switched != lightLook);
        QVERIFY(QColor(switched.front()).lightness() < 80); // the sidebar turned dark
    }

    void errorsAreShownNotFrozen()
    {
        MainWindow window(false);
        window.show();
        QSignalSpy failed(window.loader(), &CheckpointLoader::failed);
        window.openSource(m_settings.path() + QStringLiteral("/no-such-checkpoint"));
        QVERIFY(failed.wait(300000));
        QVERIFY(window.errorText().contains(QLatin1String("no-such-checkpoint")));
        QVERIFY(!window.progressVisible());
    }

    void cancelRemoteLoadFromWindow()
    {
        // A server that stops mid-answer: the window shows progress, and Cancel ends the load at once.
        FaultServer server(m_small.path().toStdString());
        QVERIFY(server.start());
        MainWindow window(false);
        window.show();
        QSignalSpy cancelled(window.loader(), &CheckpointLoader::cancelled);
        window.openSource(QString::fromStdString(server.url("stall")));
        QTRY_VERIFY_WITH_TIMEOUT(server.requests() > 0, 300000);
        QVERIFY(window.progressVisible());
        QVERIFY(window.loader()->isRunning());
        window.cancelLoad();
        QVERIFY(cancelled.wait(300000)); // how soon: bench_cancel measures it
        QVERIFY(!window.loader()->isRunning());
        QVERIFY(!window.progressVisible());
        QVERIFY(window.errorText().isEmpty());
        server.stop();
    }

    void dialogs()
    {
        OpenDialog open;
        auto edit = [&open](const char *name) { return open.findChild<QLineEdit *>(QLatin1String(name)); };
        edit("repo")->setText(QStringLiteral(" zai-org/GLM-5.2-FP8 "));
        edit("revision")->setText(QStringLiteral("v1.0"));
        QCOMPARE(open.source(), QStringLiteral("hf://zai-org/GLM-5.2-FP8"));
        QCOMPARE(open.revision(), QStringLiteral("v1.0"));
        open.findChild<QTabWidget *>()->setCurrentIndex(2);
        edit("folder")->setText(m_small.path());
        QCOMPARE(open.source(), m_small.path());
        QCOMPARE(open.revision(), QString());

        PreferencesDialog prefs;
        const auto fields = prefs.findChildren<QLineEdit *>();
        fields[0]->setText(QStringLiteral("https://hub.example.test"));
        prefs.findChild<QSpinBox *>()->setValue(4);
        prefs.accept();
        QCOMPARE(QSettings().value(QStringLiteral("network/endpoint")).toString(),
                 QStringLiteral("https://hub.example.test"));
        QCOMPARE(QSettings().value(QStringLiteral("network/connections")).toInt(), 4);
        if (const QByteArray shots = qgetenv("ATLAS_SHOTS"); !shots.isEmpty()) {
            open.show();
            prefs.show();
            QCoreApplication::processEvents();
            open.grab().save(QString::fromLocal8Bit(shots) + QStringLiteral("/open-dialog.png"));
            prefs.grab().save(QString::fromLocal8Bit(shots) + QStringLiteral("/preferences.png"));
        }
        QSettings().remove(QStringLiteral("network"));
    }

    void cancelHubLoadFromWindow()
    {
        // The nginx test Hub behind 100 ms of round-trip latency: a load of the 141-shard layout is under
        // way (requests counted) when Cancel is pressed, and it ends within moments.
        TestHub hub;
        hub.addRepo("atlas/glm5", synth::glm5Fp8());
        const int hubProxyPort = freeLoopbackPort();
        const int storageProxyPort = freeLoopbackPort();
        hub.setStorageRedirectPort(storageProxyPort);
        QString error;
        QVERIFY2(hub.start(&error), qPrintable(error));
        LatencyProxy hubProxy(hubProxyPort, hub.hubPort(), std::chrono::milliseconds(50));
        LatencyProxy storageProxy(storageProxyPort, hub.storagePort(), std::chrono::milliseconds(50));
        QVERIFY(hubProxy.start() && storageProxy.start());
        qputenv("HF_ENDPOINT", QByteArray("https://127.0.0.1:") + QByteArray::number(hubProxyPort));
        QSettings().setValue(QStringLiteral("network/caBundle"), QString::fromStdString(hub.caFile()));

        MainWindow window(false);
        window.show();
        QSignalSpy cancelled(window.loader(), &CheckpointLoader::cancelled);
        QSignalSpy layout(window.loader(), &CheckpointLoader::layoutReady);
        window.openSource(QStringLiteral("atlas/glm5"));
        QTRY_VERIFY_WITH_TIMEOUT(window.progressText().contains(QLatin1String(" requests")) &&
                                     !window.progressText().contains(QLatin1String("· 0 requests")),
                                 300000);
        window.cancelLoad();
        QVERIFY(cancelled.wait(300000)); // how soon: bench_cancel measures it
        QCOMPARE(layout.count(), 0);
        QVERIFY(!window.loader()->isRunning());
        QVERIFY(window.errorText().isEmpty());

        // The same source then loads to the end, through the same proxies.
        QSignalSpy finished(&window, &MainWindow::checkpointShown);
        window.openSource(QStringLiteral("atlas/glm5"));
        QVERIFY(finished.wait(300000));
        auto *overview = qobject_cast<OverviewView *>(window.view(QStringLiteral("overview")));
        QCOMPARE(overview->cardValue(QStringLiteral("Tensors")), QStringLiteral("118,629"));
        qunsetenv("HF_ENDPOINT");
        QSettings().remove(QStringLiteral("network"));
    }

    void figuresCommand()
    {
        QTemporaryDir out;
        QProcess p;
        p.start(QStringLiteral(CKPT_ATLAS_BIN),
                {QStringLiteral("figures"), m_small.path(), QStringLiteral("--out"), out.path(),
                 QStringLiteral("--tokens"), QStringLiteral("64")});
        QVERIFY(p.waitForFinished(300000));
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        const QStringList files = QDir(out.path()).entryList(QDir::Files, QDir::Name);
        // The window, then nine views as PNG and SVG: Compare, with nothing to compare with, is skipped in one
        // line, not written as a figure of its empty state.
        QCOMPARE(files.size(), 19);
        QVERIFY(!files.contains(QStringLiteral("09-compare.png")));
        QVERIFY(QString::fromUtf8(p.readAllStandardOutput()).contains(QLatin1String("skipped 09-compare: nothing to compare with")));
        QCOMPARE(files.front(), QStringLiteral("00-window.png"));
        QCOMPARE(files[1], QStringLiteral("01-overview.png"));
        QCOMPARE(files[3], QStringLiteral("02-anatomy.png"));
        for (const QString &f : files) {
            if (f.endsWith(QLatin1String(".png")))
                QVERIFY(!QImage(out.filePath(f)).isNull());
            else
                QVERIFY(QSvgRenderer(out.filePath(f)).isValid());
        }
    }

private:
    QTemporaryDir m_settings;
    QTemporaryDir m_full;
    QTemporaryDir m_small;
};

QTEST_MAIN(TestWidgets)
#include "tst_widgets.moc"
