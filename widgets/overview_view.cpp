#include "overview_view.h"

#include "layer_kinds.h"
#include "report.h"

#include "architecture.h"

#include "cache_budget.h"
#include "colours.h"
#include "explain.h"
#include "working_links.h"
#include "reflow_grid.h"
#include "wrap_label.h"

#include <QCheckBox>
#include <QGuiApplication>
#include <QClipboard>
#include <QMenu>
#include <QEvent>
#include <QFrame>
#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QMessageBox>
#include <QTableWidget>
#include <QTextDocument>
#include <QTimer>
#include <QVBoxLayout>

#include <map>

namespace atlas {

namespace {

} // namespace

// The value a card shows, as plain text (a card may hold rich text: a second line, a link to its working).
QString cardValueText(const QLabel *label)
{
    if (label->textFormat() == Qt::PlainText || !Qt::mightBeRichText(label->text())) return label->text().simplified();
    QTextDocument doc;
    doc.setHtml(label->text());
    return doc.toPlainText().simplified();
}

QString cardCitation(const QLabel *label, const QString &name)
{
    const QString shown = cardValueText(label);
    const QString exact = label->property("headline").toString();
    QString text = name + QStringLiteral(": ") + (exact.isEmpty() || exact == shown ? shown : exact + QStringLiteral(" (") + shown + QLatin1Char(')'));
    const QString source = label->window() ? label->window()->property("atlasProvenance").toString() : QString();
    if (!source.isEmpty()) text += QStringLiteral(" — ") + source;
    return text;
}

namespace {

QFrame *card(QWidget *parent, QLabel **value, const QString &name)
{
    auto *frame = new QFrame(parent);
    frame->setFrameShape(QFrame::StyledPanel);
    frame->setObjectName(QStringLiteral("card"));
    auto *v = new QVBoxLayout(frame);
    v->setContentsMargins(14, 10, 14, 10);
    auto *caption = makeCaption(name, frame);
    *value = new WrapLabel(QStringLiteral("—"), frame);
    // A narrow window wraps a long value onto a second line rather than holding the page wide.
    (*value)->setWordWrap(true);
    frame->setMinimumWidth(170);
    QFont f = (*value)->font();
    f.setPointSizeF(f.pointSizeF() * 1.6);
    f.setWeight(QFont::DemiBold);
    (*value)->setFont(f);
    // Not selectable by mouse: a selectable label lays its text out as a rich-text document even when it is
    // plain, and the Overview's twenty cards were then a third of the open's longest stall (bench_gui). The
    // value is copied from the card's menu instead, bare or with its source.
    // Copy as…: the number with what it is and where it comes from, ready to paste into a document.
    QLabel *label = *value;
    label->setContextMenuPolicy(Qt::CustomContextMenu);
    QObject::connect(label, &QWidget::customContextMenuRequested, label, [label, name](const QPoint &at) {
        QMenu menu(label);
        QAction *bare = menu.addAction(QObject::tr("Copy Value"));
        menu.addAction(QObject::tr("Copy Value with Its Source"));
        const QString working = label->property("working").toString();
        QAction *copyWorking = working.isEmpty() ? nullptr : menu.addAction(QObject::tr("Copy the Working"));
        QAction *chosen = menu.exec(label->mapToGlobal(at));
        if (!chosen) return;
        QGuiApplication::clipboard()->setText(chosen == copyWorking ? working
                                              : chosen == bare     ? cardValueText(label)
                                                                   : cardCitation(label, name));
    });
    v->addWidget(caption);
    v->addWidget(*value);
    v->addStretch(1); // a card beside a taller one keeps its text at the top
    return frame;
}

} // namespace

OverviewView::OverviewView(QWidget *parent) : AtlasView(parent)
{
    auto *v = makeScrollingPage(this, true);
    QWidget *page = v->parentWidget();
    v->setSpacing(12);

    m_banner = new WrapLabel(page);
    m_banner->setObjectName(QStringLiteral("syntheticBanner"));
    m_banner->setWordWrap(true);
    m_banner->setFillsWidth(true);
    m_banner->setText(
        tr("<b>Synthetic checkpoint.</b> Written by Checkpoint Atlas from a real architecture's "
           "layout: every header is faithful, the weights are empty and the router biases are "
           "made up. No figure here describes a released model's values."));
    m_banner->setStyleSheet(bannerStyle(Banner::Notice));
    m_banner->hide();
    v->addWidget(m_banner);

    v->addWidget(makeHeading(tr("Checkpoint"), page));
    m_identity = new WrapLabel(page);
    m_identity->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_identity->setWordWrap(true); // its hints are QLabel's: a long path is its minimum width (the page scrolls sideways)
    v->addWidget(m_identity);

    m_cards = new ReflowGrid(4, page);
    const QStringList names{tr("Parameters"), tr("Active per token"), tr("Tensors"),
                            tr("Shards"),     tr("Tensor data"),      tr("Layers"),
                            tr("Indexers"),   tr("KV + index cache")};
    for (int i = 0; i < names.size(); ++i)
        addCard(names[i]);
    v->addWidget(m_cards);

    // Fits on: the GPUs the user ticks, each with its smallest deployment (the Plan view has the rest).
    v->addWidget(makeHeading(tr("Fits on"), page));
    auto *boxes = new ReflowGrid(11, page);
    for (const auto &g : gpuPresets()) {
        auto *box = new QCheckBox(QString::fromUtf8(g.name.data(), qsizetype(g.name.size())), boxes);
        box->setToolTip(tr("%1 of memory (%2)").arg(binaryBytesQ(g.bytes), qs(std::string(g.source))));
        boxes->addCell(box);
        m_fitsBoxes << box;
        connect(box, &QCheckBox::toggled, this, [this] {
            emit tickedGpusChanged(tickedGpus());
            requestFits();
        });
    }
    v->addWidget(boxes);
    m_fits = new WrapLabel(page);
    m_fits->setObjectName(QStringLiteral("fits"));
    m_fits->setWordWrap(true);
    m_fits->setFillsWidth(true);
    m_fits->setTextFormat(Qt::RichText);
    m_fits->setTextInteractionFlags(Qt::TextBrowserInteraction);
    connect(m_fits, &QLabel::linkActivated, this, [this](const QString &link) {
        // "plan:N": the Nth line's smallest deployment, in the Plan view.
        if (!m_search || !link.startsWith(QLatin1String("plan:"))) return;
        const auto i = std::size_t(link.mid(5).toULongLong());
        if (i < m_search->gpus.size() && m_search->gpus[i].smallest)
            emit planWanted(qs(std::string(m_search->gpus[i].gpu->name)), *m_search->gpus[i].smallest,
                            m_search->options.context);
    });
    v->addWidget(m_fits);
    // A context slider dragged end to end asks once it rests, not at every step.
    m_fitsTimer = new QTimer(this);
    m_fitsTimer->setSingleShot(true);
    m_fitsTimer->setInterval(250);
    connect(m_fitsTimer, &QTimer::timeout, this, &OverviewView::emitFits);

    v->addWidget(makeHeading(tr("Architecture"), page));
    m_arch = new ReflowGrid(4, page);
    v->addWidget(m_arch);

    v->addWidget(makeHeading(tr("Quantization layout"), page));
    m_quant = makeTable({tr("Category"), tr("Format"), tr("Stored as"), tr("Parameters"), tr("Bits/weight"),
                         tr("Scale tensors"), tr("Scale bytes")},
                        page);
    // The names and counts keep their width; the two format columns share the rest and wrap, so a narrow
    // window never scrolls the table sideways. Its height is its rows' (the page scrolls, not the table).
    m_quant->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_quant->horizontalHeader()->setSectionResizeMode(1, QHeaderView::Stretch);
    m_quant->horizontalHeader()->setSectionResizeMode(2, QHeaderView::Stretch);
    m_quant->setWordWrap(true);
    m_quant->verticalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_quant->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_quant->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    m_quant->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_quant->installEventFilter(this);
    v->addWidget(m_quant);

    m_warnings = makeCaption(QString(), page);
    v->addWidget(m_warnings);
    v->addStretch(1);
}

void OverviewView::setTickedGpus(const QStringList &names)
{
    for (QCheckBox *box : m_fitsBoxes) {
        const QSignalBlocker block(box);
        box->setChecked(names.contains(box->text()));
    }
    requestFits();
}

QStringList OverviewView::tickedGpus() const
{
    QStringList names;
    for (QCheckBox *box : m_fitsBoxes)
        if (box->isChecked()) names << box->text();
    return names;
}

// A search when what it depends on changed: the checkpoint, the ticked GPUs, the context.
void OverviewView::requestFits()
{
    if (!m_data) return;
    SearchOptions so;
    so.engine = PlanEngine::Vllm;
    so.context = m_context ? m_context : defaultContextTokens(m_data->checkpoint.config);
    for (QCheckBox *box : m_fitsBoxes)
        if (box->isChecked())
            if (const GpuPreset *g = gpuPresetNamed(box->text().toStdString())) so.gpus.push_back(g);
    const QString key = tickedGpus().join(QLatin1Char(',')) + QLatin1Char('|') + QString::number(so.context);
    if (key == m_fitsKey) return;
    m_fitsKey = key;
    m_search.reset();
    so.serial = ++m_fitsSerial; // an answer to any earlier request is not shown
    if (so.gpus.empty()) {
        m_fitsPending = false;
        m_fitsTimer->stop();
        m_fits->setText(tr("<span style='color:gray'>Tick the GPUs to check.</span>"));
        return;
    }
    m_fitsPending = true;
    m_fits->setText(tr("<span style='color:gray'>Searching the deployments of %1…</span>")
                        .arg(tickedGpus().join(QStringLiteral(", ")).toHtmlEscaped()));
    m_fitsOptions = so;
    m_fitsTimer->start();
}

void OverviewView::emitFits()
{
    if (m_fitsPending && m_data) emit fitsWanted(m_fitsOptions);
}

void OverviewView::setFits(const DeploymentSearch &search)
{
    // Only the answer to the newest request, while it is awaited (another checkpoint, context or GPUs since
    // wait for theirs).
    if (!m_data || !m_fitsPending || search.options.serial != m_fitsSerial) return;
    m_fitsPending = false;
    m_search = search;
    QStringList rows;
    for (std::size_t i = 0; i < search.gpus.size(); ++i) {
        const GpuSearch &k = search.gpus[i];
        const QString gpu = qs(std::string(k.gpu->name));
        QString line;
        if (k.smallest)
            line = tr("<b>%1</b> from <b>%2 GPUs</b> (%3): %4 of %5 tokens · <a href='plan:%6'>plan it</a>")
                       .arg(gpu.toHtmlEscaped())
                       .arg(k.smallest->gpus)
                       .arg(qs(k.smallest->layout()).toHtmlEscaped(),
                            k.smallest->sequences == 1 ? tr("1 sequence") : tr("%1 sequences").arg(groupDigitsQ(k.smallest->sequences)),
                            groupDigitsQ(search.options.context))
                       .arg(i);
        else
            line = tr("<b>%1</b>: no deployment of up to %2 GPUs holds one sequence of %3 tokens")
                       .arg(gpu.toHtmlEscaped())
                       .arg(search.options.maxGpus)
                       .arg(groupDigitsQ(search.options.context));
        rows << line;
    }
    rows << tr("<span style='color:gray'>vLLM's placement and its own cache for each GPU; the Plan view searches "
               "other engines, contexts and sequence counts.</span>");
    m_fits->setText(rows.join(QStringLiteral("<br>")));
    emit fitsShown();
}

void OverviewView::setLlamaFits(const QStringList &lines, std::uint64_t serial)
{
    if (!m_data || !m_fitsPending || serial != m_fitsSerial) return;
    m_fitsPending = false;
    m_search.reset();
    QStringList rows = lines;
    rows << tr("<span style='color:gray'>llama.cpp on one GPU: every block offloaded (-ngl) with the routed experts of "
               "the first blocks kept in host memory (--n-cpu-moe), its f16 K cache at this context, 1 GiB set aside; "
               "ckpt-atlas plan --engine llama.cpp tells more.</span>");
    m_fits->setText(rows.join(QStringLiteral("<br>")));
    emit fitsShown();
}

void OverviewView::fitsFailed(const QString &why, std::uint64_t serial)
{
    if (serial && serial != m_fitsSerial) return; // an earlier request's
    m_fitsPending = false;
    m_search.reset();
    m_fits->setText(tr("<span style='color:gray'>%1</span>").arg(why.toHtmlEscaped()));
    emit fitsShown();
}

QString OverviewView::fitsText() const
{
    QTextDocument doc;
    doc.setHtml(m_fits->text());
    return doc.toPlainText();
}

void OverviewView::setCacheBudget(const CacheBudget &cache)
{
    if (m_cardValues.size() < 8) return;
    if (cache.contextTokens && cache.contextTokens != m_context) {
        m_context = cache.contextTokens; // "Fits on" follows the context the cache card counts
        requestFits();
    }
    QLabel *label = m_cardValues[7].second;
    if (!cache.available) {
        label->setProperty("working", QString()); // no number, no working
        label->unsetCursor();
        label->setProperty("headline", QVariant());
        label->setText(tr("n/a"));
        label->setToolTip(qs(cache.reason));
        return;
    }
    // The settings the figure assumes, named on the card itself (exported figures have no tooltips).
    // Short enough for the card (the layout's full wording is in the tooltip and the Cache view).
    QString small = qs(cacheShortWords(cache));
    if (cache.windowBytes)
        small = tr("+ %1/sequence of sliding windows · ").arg(binaryBytesQ(cache.windowBytes)) + small;
    if (cache.fixedStateBytes)
        small = tr("+ %1/sequence (%2 state) · ")
                    .arg(binaryBytesQ(*cache.fixedStateBytes), qs(std::string(stateDtypeName(cache.stateDtype))).toUpper()) +
                small;
    label->setTextFormat(Qt::RichText);
    label->setWordWrap(true);
    label->setProperty("headline", QString(groupDigitsQ(cache.bytesPerToken) + tr(" B/token")));
    label->setProperty("settings", small);
    label->setText(groupDigitsQ(cache.bytesPerToken) + tr(" B/token") +
                   QStringLiteral("<div style='font-size:9pt; font-weight:normal'>") + small.toHtmlEscaped() +
                   QStringLiteral("</div>"));
    label->setToolTip(tr("%1 at %2 tokens (per sequence, state included)")
                          .arg(binaryBytesQ(cache.totalBytes), groupDigitsQ(cache.contextTokens)) +
                      (cache.layoutNote.empty() ? QString() : QStringLiteral("\n") + qs(cache.layoutNote)));
    if (m_data) setWorking(7, "cache.bytes_per_token", explainReport(m_data->checkpoint.config, m_data->analysis, cache));
}

// "21 full / 57 shared", and the layers with no indexer counted too when there are any (DeepSeek-V4:
// "21 full / 22 none").
QString OverviewView::indexerCount(std::size_t full, std::size_t shared, std::size_t mainLayers)
{
    QStringList parts{tr("%1 full").arg(full)};
    if (shared) parts << tr("%1 shared").arg(shared);
    if (mainLayers > full + shared) parts << tr("%1 none").arg(mainLayers - full - shared);
    if (parts.size() == 1) parts << tr("0 shared");
    return parts.join(QStringLiteral(" / "));
}

QLabel *OverviewView::addCard(const QString &name)
{
    QLabel *value = nullptr;
    m_cards->addCell(card(this, &value, name));
    m_cardValues.append({name, value});
    return value;
}

QString OverviewView::architectureValue(const QString &name) const
{
    for (const auto &[n, label] : m_archValues)
        if (n == name) return label->text();
    return {};
}

QString OverviewView::cardValue(const QString &name) const
{
    for (const auto &[n, label] : m_cardValues)
        if (n == name) return label->property("headline").isValid() ? label->property("headline").toString() : label->text();
    return {};
}

bool OverviewView::syntheticBannerShown() const
{
    return !m_banner->isHidden();
}

// The table as tall as its rows at its present width (wrapped rows grow when the window narrows).
void OverviewView::fitQuantHeight()
{
    const int h = m_quant->horizontalHeader()->height() + m_quant->verticalHeader()->length() + 2 * m_quant->frameWidth();
    if (m_quant->height() != h || m_quant->minimumHeight() != h) m_quant->setFixedHeight(h);
}


void OverviewView::setWorking(int card, const std::string &path, const Explanations &explanations)
{
    if (card >= m_cardValues.size()) return;
    QLabel *label = m_cardValues[card].second;
    label->setProperty("working", QString());
    label->unsetCursor();
    QString text;
    for (const auto &[p, w] : explanations)
        if (p == path) text = workingText(w);
    label->setProperty("working", text);
    label->setProperty("workingPath", qs(path));
    if (text.isEmpty()) return;
    label->setToolTip(label->toolTip() + tr("\n\n%1 =\n%2\n(click for the working)").arg(qs(path), text));
    label->setCursor(Qt::PointingHandCursor);
    label->installEventFilter(this);
}

QString OverviewView::cardWorking(const QString &name) const
{
    for (const auto &[n, label] : m_cardValues)
        if (n == name) return label->property("working").toString();
    return {};
}

bool OverviewView::eventFilter(QObject *watched, QEvent *event)
{
    if (event->type() == QEvent::MouseButtonRelease) {
        if (auto *label = qobject_cast<QLabel *>(watched); label && !label->property("working").toString().isEmpty()) {
            showWorkingPane(this, label->property("workingPath").toString(), label->property("working").toString());
            return true;
        }
    }
    if (watched == m_quant && event->type() == QEvent::Resize) {
        m_quant->resizeRowsToContents();
        fitQuantHeight();
    }
    return AtlasView::eventFilter(watched, event);
}

void OverviewView::themeChanged()
{
    m_banner->setStyleSheet(bannerStyle(Banner::Notice));
    update();
}

void OverviewView::clearAll()
{
    m_data.reset();
    m_search.reset();
    m_fitsKey.clear();
    m_fitsPending = false;
    ++m_fitsSerial;
    m_fitsTimer->stop();
    m_context = 0;
    m_fits->clear();
    m_banner->hide();
    m_identity->setText(tr("No checkpoint open."));
    for (auto &[n, label] : m_cardValues) {
        label->setText(QStringLiteral("—"));
        label->setProperty("working", QString());
        label->unsetCursor();
    }
    m_quant->setRowCount(0);
    m_warnings->clear();
}

void OverviewView::setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data)
{
    m_data = std::move(data);
    m_fitsKey.clear(); // another checkpoint: its own deployments
    m_context = 0;
    const Checkpoint &c = m_data->checkpoint;
    const CheckpointAnalysis &a = m_data->analysis;
    m_banner->setVisible(c.synthetic());

    QStringList rows;
    auto row = [&](const QString &k, const QString &v) {
        rows << QStringLiteral("<tr><td style='padding-right:18px'><b>%1</b></td><td>%2</td></tr>")
                    .arg(k, v.toHtmlEscaped());
    };
    row(tr("Source"), qs(c.source.location) + QStringLiteral("  (") +
                          qs(std::string(sourceKindName(c.source.kind))) + QLatin1Char(')'));
    // A figure names a local folder, never its path on this machine (the caption adds its headers' fingerprint).
    const int sourceRow = 0;
    QString citedSource = rows[sourceRow];
    if (c.source.kind == SourceKind::Local) {
        QString folder = qs(c.source.location);
        while (folder.endsWith(QLatin1Char('/')))
            folder.chop(1);
        folder = folder.mid(folder.lastIndexOf(QLatin1Char('/')) + 1);
        citedSource = QStringLiteral("<tr><td style='padding-right:18px'><b>%1</b></td><td>%2</td></tr>")
                          .arg(tr("Source"), tr("%1  (local folder)").arg(folder).toHtmlEscaped());
    }
    if (!c.source.revision.empty()) row(tr("Revision"), qs(c.source.revision));
    if (!c.source.commit.empty()) row(tr("Commit"), qs(c.source.commit));
    row(tr("Model type"), c.config.modelType.empty() ? tr("(not in config.json)") : qs(c.config.modelType));
    QStringList arch;
    for (const auto &x : c.config.architectures)
        arch << qs(x);
    if (c.format == CheckpointFormat::Gguf)
        row(tr("Format"), tr("GGUF, llama.cpp architecture %1 (its metadata read as config.json's keys)").arg(qs(c.ggufArchitecture)));
    else
        row(tr("Architectures"), arch.isEmpty() ? tr("(not in config.json)") : arch.join(QStringLiteral(", ")));
    const ModelConfig &cfg = c.config;
    if (!cfg.topkMethod.empty() || !cfg.scoringFunc.empty() || !cfg.moeRouterDtype.empty())
        row(tr("Router"),
            tr("%1 · scores %2 · router dtype %3")
                .arg(cfg.topkMethod.empty() ? tr("top-k method not stated") : qs(cfg.topkMethod),
                     cfg.scoringFunc.empty() ? tr("not stated") : qs(cfg.scoringFunc),
                     cfg.moeRouterDtype.empty() ? tr("not declared") : qs(cfg.moeRouterDtype)));
    m_identity->setText(QStringLiteral("<table>") + rows.join(QString()) + QStringLiteral("</table>"));
    rows[sourceRow] = citedSource;
    m_identity->setProperty("exportText", QString(QStringLiteral("<table>") + rows.join(QString()) + QStringLiteral("</table>")));

    const ParameterBudget &b = a.budget;
    int dense = 0, moe = 0, mtp = 0;
    for (const auto &l : a.layers)
        if (l.kind == LayerKind::Mtp || l.onDisk()) (l.kind == LayerKind::Dense ? dense : l.kind == LayerKind::Moe ? moe : mtp)++;
    auto set = [&](int i, const QString &text, const QString &tip) {
        m_cardValues[i].second->setText(text);
        m_cardValues[i].second->setToolTip(tip);
    };
    const std::uint64_t encoders = b.byCategory[static_cast<std::size_t>(Category::Encoders)];
    const std::uint64_t mtpParams = b.byCategory[static_cast<std::size_t>(Category::Mtp)];
    set(0, qs(paramCount(b.total)),
        groupDigitsQ(b.total) + tr(" parameters in the files") +
            (mtpParams ? tr("; %1 without the MTP layers, as model cards count").arg(groupDigitsQ(b.total - mtpParams))
                       : QString()) +
            (encoders ? tr(" — of which %1 in vision/audio encoders (not active per text token)").arg(groupDigitsQ(encoders))
                      : QString()));
    if (mtpParams) {
        // The total as model cards publish it, on the card itself (an exported figure has no tooltips).
        QLabel *total = m_cardValues[0].second;
        total->setProperty("headline", total->text());
        total->setTextFormat(Qt::RichText);
        total->setText(total->text().toHtmlEscaped() + QStringLiteral("<div style='font-size:9pt; font-weight:normal'>") +
                       tr("%1 without MTP").arg(qs(paramCount(b.total - mtpParams))).toHtmlEscaped() +
                       QStringLiteral("</div>"));
    } else {
        m_cardValues[0].second->setProperty("headline", QVariant());
    }
    set(1, b.activatedPerToken ? qs(paramCount(*b.activatedPerToken)) : tr("unknown"),
        b.activatedPerToken
            ? groupDigitsQ(*b.activatedPerToken) + QStringLiteral(" — ") + qs(b.activationNote)
            : qs(b.activationNote));
    {
        const Explanations working = explainReport(c.config, a, m_data->cache);
        setWorking(0, "parameters.total", working);
        setWorking(1, "parameters.activated_per_token", working);
    }
    // Tensors no row of the role table claims are counted (under other) and named here, never dropped.
    const std::size_t unassigned = b.otherTensors.size();
    set(2,
        unassigned ? tr("%1 (%2 unassigned)").arg(groupDigitsQ(c.tensorCount())).arg(groupDigitsQ(unassigned))
                   : groupDigitsQ(c.tensorCount()),
        tr("%1 quantization scale tensors among them").arg(groupDigitsQ(b.quantScales.tensors)) +
            (unassigned ? tr("; %1 of no known role, e.g. %2").arg(groupDigitsQ(unassigned), qs(b.otherTensors.front()))
                        : tr("; every tensor has a role")));
    set(3,
        c.format == CheckpointFormat::Gguf
            ? (c.shards.size() == 1 ? tr("1 GGUF file") : tr("%1 GGUF files").arg(c.shards.size()))
            : QString::number(c.shards.size()),
        tr("headers: %1 bytes").arg(groupDigitsQ(c.headerBytes())));
    set(4, binaryBytesQ(c.tensorBytes()), groupDigitsQ(c.tensorBytes()) + tr(" bytes"));
    const int missing = int(a.layersWithoutTensors.size());
    // The layer mix from the layer model: "36 Gated DeltaNet + 12 full attention", what a new MoE is opened for.
    std::map<MixerKind, int> mixers;
    for (int i = 0; i < a.mainLayers && i < int(a.layers.size()); ++i)
        if (a.layers[std::size_t(i)].onDisk()) ++mixers[a.layers[std::size_t(i)].mixer];
    QStringList mix;
    for (const auto &[kind, count] : mixers)
        mix << QStringLiteral("%1 %2").arg(count).arg(qs(std::string(mixerKind(kind).label)));
    QString layers = mix.isEmpty() ? QString::number(a.mainLayers) : mix.join(QStringLiteral(" + "));
    if (mtp) layers += tr(" + %1 MTP").arg(mtp);
    if (missing) layers += tr(" (%1 not on disk)").arg(missing);
    set(5, layers,
        tr("%1 main layers: %2 dense, %3 MoE").arg(a.mainLayers).arg(dense).arg(moe) +
            (missing ? tr("; %1 layers have no tensors on disk (a partial download): nothing is sized for them").arg(missing)
                     : QString()));
    const auto &m = a.indexShare;
    // A card that would say nothing ("Indexers: none") is not shown.
    m_cardValues[6].second->parentWidget()->setVisible(m.source != IndexShareSource::None);
    set(6,
        m.source == IndexShareSource::None ? tr("none") : indexerCount(m.full.size(), m.shared.size(), std::size_t(std::max(a.mainLayers, 0))),
        tr("map from %1").arg(qs(std::string(indexShareSourceName(m.source)))));
    setCacheBudget(m_data->cache);
    requestFits();

    // The architecture in numbers: a smaller card per fact, four to a row.
    m_arch->clear();
    m_archValues.clear();
    const auto facts = architectureFacts(cfg, a);
    for (std::size_t i = 0; i < facts.size(); ++i) {
        QLabel *value = nullptr;
        QFrame *f = card(this, &value, qs(facts[i].name));
        QFont font = value->font();
        font.setPointSizeF(font.pointSizeF() / 1.6 * 1.25);
        value->setFont(font);
        value->setText(qs(facts[i].value));
        value->setToolTip(qs(facts[i].detail));
        f->setToolTip(qs(facts[i].detail));
        m_arch->addCell(f);
        m_archValues.append({qs(facts[i].name), value});
    }

    m_quant->setRowCount(0);
    for (const auto &q : a.quantLayout) {
        const int r = m_quant->rowCount();
        m_quant->insertRow(r);
        QStringList parts;
        std::uint64_t elements = 0;
        for (const auto &[d, t] : q.dtypes) {
            parts << qs(d) + QStringLiteral(" ") + binaryBytesQ(t.bytes);
            elements += t.elements;
        }
        auto *cat = new QTableWidgetItem(qs(std::string(categoryName(q.category))));
        auto *params = new QTableWidgetItem(groupDigitsQ(elements));
        params->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        auto *scales =
            new QTableWidgetItem(q.scales.tensors ? groupDigitsQ(q.scales.tensors) : QStringLiteral("—"));
        scales->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        auto *scaleBytes =
            new QTableWidgetItem(q.scales.tensors ? binaryBytesQ(q.scales.bytes) : QStringLiteral("—"));
        scaleBytes->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        m_quant->setItem(r, 0, cat);
        m_quant->setItem(r, 1, new QTableWidgetItem(qs(q.format)));
        m_quant->setItem(r, 2, new QTableWidgetItem(parts.join(QStringLiteral(" · "))));
        m_quant->setItem(r, 3, params);
        // Stored bits per logical parameter, scales included (Q4_K 4.50, FP8 with 128x128 scales 8.00).
        auto *bits = new QTableWidgetItem(q.bitsPerWeight() > 0 ? QString::number(q.bitsPerWeight(), 'f', 2) : QStringLiteral("—"));
        bits->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        bits->setToolTip(tr("stored bits per parameter: 8 × bytes (scales included) / parameters"));
        m_quant->setItem(r, 4, bits);
        m_quant->setItem(r, 5, scales);
        m_quant->setItem(r, 6, scaleBytes);
    }
    m_quant->resizeRowsToContents();
    fitQuantHeight();
    QStringList warnings;
    for (const auto &w : c.warnings)
        warnings << qs(w).toHtmlEscaped();
    for (const auto &w : a.warnings)
        warnings << qs(w).toHtmlEscaped();
    for (const auto &w : m.mismatches)
        warnings << tr("IndexShare: ") + qs(w).toHtmlEscaped();
    m_warnings->setText(
        warnings.isEmpty() ? QString() : tr("<b>Warnings</b><br>") + warnings.join(QStringLiteral("<br>")));
}

} // namespace atlas
