#include "routing_view.h"

#include "colours.h"

#include <algorithm>
#include <cmath>

#include "bias_report.h"
#include "chart_widget.h"
#include "errors.h"
#include "wrap_label.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QSplitter>
#include <QVBoxLayout>

namespace atlas {

RoutingView::RoutingView(QWidget *parent)
    : AtlasView(parent), m_tokens(new QSpinBox(this)), m_seed(new QSpinBox(this)),
      m_std(new QDoubleSpinBox(this)), m_logitsFile(new QLineEdit(this)),
      m_run_(new QPushButton(tr("Simulate"), this)), m_status(new WrapLabel(this)),
      m_note(makeCaption(QString::fromLatin1(kSyntheticLogitsNote), this)), m_changed(new ChartWidget(this)),
      m_layer(new QComboBox(this)), m_variant(new QComboBox(this)), m_load(new ChartWidget(this)),
      m_engine(new QComboBox(this)), m_engineWhy(new WrapLabel(this)), m_declared(new WrapLabel(this))
{
    m_tokens->setRange(1, 1 << 20);
    m_tokens->setValue(4096);
    m_tokens->setGroupSeparatorShown(true);
    m_seed->setRange(0, 1 << 30);
    m_std->setRange(0.01, 100);
    m_std->setValue(1.0);
    m_std->setSingleStep(0.1);
    m_logitsFile->setPlaceholderText(
        tr("synthetic logits (or choose a safetensors file with 'logits' [T, E])"));
    auto *browse = new QPushButton(tr("Browse…"), this);
    m_run_->setDefault(true);
    m_run_->setEnabled(false);
    m_status->setWordWrap(true);
    m_status->setFillsWidth(true);
    for (int v = 0; v < kVariantCount; ++v) {
        m_variant->addItem(QString::fromLatin1(variantName(static_cast<Variant>(v))), v);
        m_variant->setItemData(v, QString::fromLatin1(variantRuntimes(static_cast<Variant>(v))), Qt::ToolTipRole);
    }
    m_variant->setCurrentIndex(int(Variant::BothBf16));
    for (const Engine &e : engines())
        m_engine->addItem(e.name, e.variant);
    m_engineWhy->setWordWrap(true);
    m_declared->setWordWrap(true);
    m_declared->setFillsWidth(true);
    m_changed->setTitle(tr("Tokens whose top-k set changes, per layer"));
    m_load->setTitle(tr("Expert load of one layer"));
    m_changed->setEmptyMessage(tr("Press Simulate: every layer routes the same tokens with the bias as stored and as "
                                  "each runtime rounds it; the share of tokens whose experts change is drawn here."));
    m_load->setEmptyMessage(tr("After a simulation: how many tokens each expert of one layer receives, the FP32 "
                               "reference beside the chosen runtime."));

    // Two charts that need height to be read: a short window scrolls the page instead of squeezing them.
    auto *v = makeScrollingPage(this);
    v->addWidget(makeHeading(tr("Routing simulation"), this));
    auto *controls = new QHBoxLayout();
    auto *form = new QFormLayout();
    form->addRow(tr("Tokens per layer"), m_tokens);
    form->addRow(tr("Seed"), m_seed);
    auto *form2 = new QFormLayout();
    form2->addRow(tr("Logit spread (std)"), m_std);
    auto *fileRow = new QHBoxLayout();
    fileRow->addWidget(m_logitsFile, 1);
    fileRow->addWidget(browse);
    form2->addRow(tr("Logits"), fileRow);
    controls->addLayout(form);
    controls->addLayout(form2, 1);
    controls->addWidget(m_run_, 0, Qt::AlignBottom);
    v->addLayout(controls);
    auto *engineRow = new QHBoxLayout();
    engineRow->addWidget(new QLabel(tr("Engine"), this));
    engineRow->addWidget(m_engine);
    engineRow->addWidget(m_engineWhy, 1);
    v->addLayout(engineRow);
    v->addWidget(m_declared);
    v->addWidget(m_note);
    v->addWidget(m_status);
    auto *split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_changed);
    auto *lower = new QWidget(split);
    auto *lv = new QVBoxLayout(lower);
    lv->setContentsMargins(0, 0, 0, 0);
    auto *pick = new QHBoxLayout();
    pick->addWidget(new QLabel(tr("Layer"), lower));
    pick->addWidget(m_layer);
    pick->addWidget(new QLabel(tr("against"), lower));
    pick->addWidget(m_variant);
    pick->addStretch(1);
    lv->addLayout(pick);
    lv->addWidget(m_load, 1);
    split->addWidget(lower);
    m_changed->setMinimumHeight(260);
    m_load->setMinimumHeight(240);
    v->addWidget(split, 1);

    // One button: Simulate, and Cancel while a simulation runs.
    connect(m_run_, &QPushButton::clicked, this, [this] {
        if (m_running)
            emit simulationCancelRequested();
        else
            runSimulation();
    });
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString file = QFileDialog::getOpenFileName(this, tr("Captured logits"), QString(),
                                                          tr("safetensors (*.safetensors);;All files (*)"));
        if (!file.isEmpty()) m_logitsFile->setText(file);
    });
    connect(m_layer, qOverload<int>(&QComboBox::currentIndexChanged), this, &RoutingView::showLoad);
    connect(m_layer, qOverload<int>(&QComboBox::activated), this,
            [this](int) { emit layerSelected(m_layer->currentData().toInt()); });
    connect(m_variant, qOverload<int>(&QComboBox::currentIndexChanged), this, &RoutingView::showLoad);
    connect(m_engine, qOverload<int>(&QComboBox::currentIndexChanged), this, &RoutingView::selectEngine);
    selectEngine(1);
    clearAll();
}

QList<RoutingView::Engine> RoutingView::engines()
{
    return {{tr("transformers, DeepSeek reference, moe_router_dtype: float32"), -1},
            {tr("SGLang AITER (quantized), before PR #37133"), int(Variant::BothBf16)},
            {tr("SGLang AITER, parameter-only patch"), int(Variant::BothBf16)},
            {tr("SGLang AITER with PR #37133 (both hunks)"), int(Variant::LogitsBf16)},
            {tr("kernels taking a BF16 routing bias, FP32 logits"), int(Variant::BiasBf16)},
            {tr("torch-native grouped top-k in BF16"), int(Variant::TorchBf16)}};
}

void RoutingView::selectEngine(int index)
{
    if (index < 0 || index >= m_engine->count()) return;
    if (m_engine->currentIndex() != index) {
        m_engine->setCurrentIndex(index); // comes back here through the signal
        return;
    }
    const int v = m_engine->itemData(index).toInt();
    if (v < 0) {
        showChanged();
        m_engineWhy->setText(tr("Routes as the FP32 reference (%1): no token changes experts.")
                                 .arg(QString::fromLatin1(referenceRuntimes())));
        return;
    }
    m_variant->setCurrentIndex(v);
    showChanged();
    m_engineWhy->setText(tr("Shown as <b>%1</b>: %2.")
                             .arg(QString::fromLatin1(variantName(static_cast<Variant>(v))),
                                  QString::fromLatin1(variantRuntimes(static_cast<Variant>(v)))));
}

QString RoutingView::engineText() const
{
    return m_engineWhy->text();
}

QString RoutingView::declaredText() const
{
    return m_declared->text();
}

int RoutingView::selectedVariant() const
{
    return m_variant->currentData().toInt();
}

RoutingView::~RoutingView() = default;

QString RoutingView::noteText() const
{
    return m_note->isVisible() || !m_note->isHidden() ? m_note->text() : QString();
}

void RoutingView::setTokens(int tokens)
{
    m_tokens->setValue(tokens);
}

void RoutingView::setSeed(int seed)
{
    m_seed->setValue(seed);
}

void RoutingView::clearAll()
{
    m_running = false;
    m_run_->setText(tr("Simulate"));
    m_audit.reset();
    m_run.reset();
    m_changed->clear();
    m_load->clear();
    m_layer->clear();
    m_run_->setEnabled(false);
    m_status->setText(tr("The simulation needs the router biases, read after the layout."));
}

void RoutingView::setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data)
{
    clearAll();
    const bool routed = std::any_of(data->analysis.layers.begin(), data->analysis.layers.end(),
                                    [](const LayerInfo &l) { return l.routedExperts > 0; });
    setNotApplicable(routed ? QString()
                            : tr("This model has no routed experts: every token goes through the same MLP, so there "
                                 "is no routing to simulate."));
    const std::string &declared = data->checkpoint.config.moeRouterDtype;
    if (declared == "float32")
        m_declared->setText(tr("config.json declares <b>moe_router_dtype: float32</b>: the router is meant to run in "
                               "FP32. A runtime that honours it routes as the reference; the variants show what "
                               "one that does not would change."));
    else if (!declared.empty())
        m_declared->setText(tr("config.json declares <b>moe_router_dtype: %1</b>.").arg(qs(declared).toHtmlEscaped()));
    else
        m_declared->setText(tr("config.json does not declare moe_router_dtype: each runtime picks the router's "
                               "dtype itself."));
}

void RoutingView::setBiases(std::shared_ptr<const BiasAudit> audit)
{
    m_audit = std::move(audit);
    const bool ready = m_audit->router.has_value();
    m_run_->setEnabled(ready);
    m_status->setText(ready ? routerText(*m_audit->router) + tr(" Press Simulate.")
                            : tr("Cannot simulate: %1").arg(qs(m_audit->routerProblem)));
}

void RoutingView::runSimulation()
{
    if (!m_audit || !m_audit->router) return;
    RoutingRequest request;
    request.biases = m_audit->routing;
    request.router = *m_audit->router;
    request.options.tokens = std::uint32_t(m_tokens->value());
    request.options.seed = std::uint64_t(m_seed->value());
    request.options.logitStd = float(m_std->value());
    request.logitsFile = m_logitsFile->text().trimmed().toStdString();
    m_run_->setText(tr("Cancel"));
    m_status->setText(
        tr("Simulating %1 layers × %2 tokens…").arg(request.biases.size()).arg(request.options.tokens));
    m_running = true;
    emit simulationRequested(request);
}

void RoutingView::showSimulation(std::shared_ptr<const RoutingRun> run)
{
    m_running = false;
    m_run_->setText(tr("Simulate"));
    m_run_->setEnabled(m_audit && m_audit->router);
    m_run = std::move(run);
    showRun();
    emit simulationFinished();
}

void RoutingView::showSimulationFailure(const QString &message)
{
    m_running = false;
    m_run_->setText(tr("Simulate"));
    m_run_->setEnabled(m_audit && m_audit->router);
    m_status->setText(tr("Simulation failed: %1").arg(visibleText(message)));
    emit simulationFinished();
}

void RoutingView::showSimulationCancelled()
{
    m_running = false;
    m_run_->setText(tr("Simulate"));
    m_run_->setEnabled(m_audit && m_audit->router);
    m_status->setText(tr("Simulation cancelled."));
    emit simulationFinished();
}

QString RoutingView::routerText(const RouterConfig &r)
{
    const QString groups = r.groups > 1 ? tr(", %1 groups keeping %2").arg(r.groups).arg(r.topkGroups) : QString();
    const QString bias = r.bias == BiasUse::Correction ? tr("correction bias added for the selection")
                         : r.bias == BiasUse::Logit  ? tr("linear bias added to the logits")
                                                     : tr("no bias: bias_bf16 equals the reference");
    return tr("Router: %1 experts, top-%2%3; %4 (%5); %6.")
        .arg(r.experts)
        .arg(r.topk)
        .arg(groups)
        .arg(QString::fromLatin1(scoringName(r.scoring).data(), qsizetype(scoringName(r.scoring).size())))
        .arg(qs(r.scoringFrom))
        .arg(bias);
}

void RoutingView::showRun()
{
    const RoutingRun &run = *m_run;
    m_note->setVisible(run.synthetic);
    m_status->setText(
        routerText(run.router) + QLatin1Char(' ') +
        tr("%1 tokens per layer, logits: %2. Changed set = the top-%3 experts differ from the FP32 "
           "reference.")
            .arg(run.tokens)
            .arg(qs(run.logits))
            .arg(run.router.topk) +
        skippedText(run.skipped));
    showChanged();
    QSignalBlocker block(m_layer);
    m_layer->clear();
    for (const auto &l : run.layers)
        m_layer->addItem(tr("layer %1").arg(l.layer), l.layer);
    m_layer->setCurrentIndex(0);
    showLoad();
}

// "Skipped 3 layers (0, 1, 2): hash-routed …": every skipped layer, the reasons once each.
QString RoutingView::skippedText(const std::vector<SkippedLayer> &skipped)
{
    if (skipped.empty()) return {};
    QStringList layers, reasons;
    for (const auto &s : skipped) {
        layers << QString::number(s.layer);
        const QString why = qs(s.reason);
        if (!why.isEmpty() && !reasons.contains(why)) reasons << why;
    }
    return tr(" Skipped %n layer(s) (%1): %2", nullptr, int(skipped.size()))
        .arg(layers.join(QStringLiteral(", ")), reasons.join(QStringLiteral("; ")));
}

void RoutingView::followLayer(int layer)
{
    const int i = m_layer->findData(layer);
    if (i >= 0) m_layer->setCurrentIndex(i);
}

void RoutingView::themeChanged()
{
    showChanged();
    update();
}

void RoutingView::showChanged()
{
    if (!m_run) return;
    const RoutingRun &run = *m_run;
    // The chosen engine's variant stands out, solid and wide; the others stay thin and pale behind it.
    const int chosen = m_engine->currentData().toInt();
    QList<LineSeries> series, front;
    for (int v = 0; v < kVariantCount; ++v) {
        const bool emphasised = v == chosen;
        QColor color = ChartWidget::seriesColor(v + 1);
        if (chosen >= 0 && !emphasised) color.setAlpha(darkTheme() ? 210 : 170); // pale, yet readable at 1 px
        LineSeries s{QString::fromLatin1(variantName(static_cast<Variant>(v))) +
                         (emphasised ? tr(" (the chosen engine)") : QString()),
                     {},
                     {},
                     color,
                     !emphasised && chosen >= 0,
                     false,
                     emphasised ? 4.0 : 1.6};
        for (const auto &l : run.layers) {
            s.x << l.layer;
            s.y << l.variants[v].changedSetFraction * 100.0;
        }
        (emphasised ? front : series) << s;
    }
    // A series drawn exactly under another is named so (bias_bf16 equals both_bf16 when the logits are BF16
    // already): every legend entry is either visible or says where it is.
    QList<LineSeries> all = series + front;
    for (int i = 0; i < all.size(); ++i)
        for (int j = i + 1; j < all.size(); ++j)
            if (all[i].y == all[j].y) {
                const QString over = all[j].name.section(QLatin1Char(' '), 0, 0);
                all[i].name += tr(" (the same as %1: under it)").arg(over);
                break;
            }
    m_changed->showLines(all, tr("layer"), tr("changed tokens (%)"), false, false);
}

void RoutingView::showLoad()
{
    if (!m_run || m_layer->currentIndex() < 0) return;
    const LayerRouting &l = m_run->layers[std::size_t(m_layer->currentIndex())];
    const int v = m_variant->currentData().toInt();
    // What rounding moves, as a difference: tokens each expert gains (+) or loses (−) under the variant, the
    // experts ranked by it (gains first, losses last) so 256 or 768 of them read as one curve, never moiré,
    // and no series hides under another. The hover names the expert and both loads.
    const QString variant = QString::fromLatin1(variantName(static_cast<Variant>(v)));
    std::vector<std::size_t> order(l.referenceLoad.size());
    for (std::size_t e = 0; e < order.size(); ++e)
        order[e] = e;
    auto delta = [&](std::size_t e) { return double(l.variants[v].load[e]) - double(l.referenceLoad[e]); };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return delta(a) > delta(b); });
    LineSeries diff{tr("%1 − FP32 reference").arg(variant), {}, {}, ChartWidget::seriesColor(3)};
    diff.bars = true;
    std::size_t moved = 0;
    for (std::size_t r = 0; r < order.size(); ++r) {
        diff.x << double(r);
        diff.y << delta(order[r]);
        moved += delta(order[r]) != 0;
    }
    m_loadOrder = order;
    m_load->setTitle(moved ? tr("Expert load of layer %1: tokens each expert gains or loses with %2 (%3 of %4 experts "
                                "change; ranked by the change)")
                                 .arg(l.layer)
                                 .arg(variant)
                                 .arg(moved)
                                 .arg(order.size())
                           : tr("Expert load of layer %1: %2 routes every token as the FP32 reference does").arg(l.layer).arg(variant));
    m_load->setHoverFormat([this, layer = m_layer->currentIndex(), v](double x, double) {
        if (!m_run || layer < 0 || std::size_t(layer) >= m_run->layers.size()) return QString();
        const LayerRouting &lr = m_run->layers[std::size_t(layer)];
        const auto r = std::size_t(std::max(0.0, std::round(x)));
        if (r >= m_loadOrder.size()) return QString();
        const std::size_t e = m_loadOrder[r];
        return tr("expert %1: %2 tokens with the FP32 reference, %3 with the variant")
            .arg(e)
            .arg(lr.referenceLoad[e])
            .arg(lr.variants[std::size_t(v)].load[e]);
    });
    m_load->showLines({diff}, tr("experts, ranked by the change (gains first)"), tr("tokens gained (+) or lost (−)"), false, false);
}

} // namespace atlas
