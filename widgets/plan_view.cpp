#include "plan_view.h"

#include "chart_widget.h"
#include "colours.h"
#include "errors.h"
#include "explain.h"
#include "reflow_grid.h"
#include "working_links.h"
#include "wrap_label.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QGridLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QVBoxLayout>

#include <cmath>
#include <tuple>

namespace atlas {

namespace {

QSpinBox *spin(int lo, int hi, int value, QWidget *parent, const QString &special = {})
{
    auto *s = new QSpinBox(parent);
    s->setRange(lo, hi);
    s->setValue(value);
    if (!special.isEmpty()) s->setSpecialValueText(special);
    return s;
}

// The plan's notes name the command line's options; here they name the controls beside them.
QString guiWording(QString note)
{
    static const std::pair<const char *, const char *> words[] = {
        {"--mtp includes them", "\u201cload the MTP layers\u201d includes them"},
        {"--mtp loads the MTP weights", "Loading the MTP layers counts their weights"},
        {"--mtp is not set", "the MTP layers are not loaded"},
        {"--cache-preset vllm-mtp counts its cache", "the engine's cache (Cache: the engine's) counts it"},
        {"--reserve BYTES sets them aside", "Reserve sets them aside"},
        {"--mem-fraction sets it", "Memory fraction sets it"},
        {"(--dp-attention)", "(DP attention)"},
    };
    for (const auto &[cli, gui] : words)
        note.replace(QString::fromUtf8(cli), QString::fromUtf8(gui));
    return note;
}

} // namespace

PlanView::PlanView(QWidget *parent)
    : AtlasView(parent), m_gpu(new QComboBox(this)), m_engine(new QComboBox(this)), m_gpus(spin(1, 4096, 8, this)),
      m_tp(spin(0, 4096, 0, this, tr("GPUs ÷ stages"))), m_ep(spin(0, 4096, 0, this, tr("off"))),
      m_dp(spin(1, 4096, 1, this)), m_pp(spin(1, 4096, 1, this)), m_redundant(spin(0, 4096, 0, this)),
      m_context(spin(1, 1 << 30, 131072, this)), m_cacheFrom(new QComboBox(this)), m_kv(new QComboBox(this)),
      m_state(new QComboBox(this)), m_customGib(new QDoubleSpinBox(this)), m_fraction(new QDoubleSpinBox(this)),
      m_reserve(new QDoubleSpinBox(this)), m_mtp(new QCheckBox(tr("load the MTP layers (speculative decoding)"), this)),
      m_verdict(new WrapLabel(this)), m_details(new WrapLabel(this)), m_chart(new ChartWidget(this)),
      m_pareto(new ChartWidget(this))
{
    m_pareto->setTitle(tr("Smallest deployments"));
    m_pareto->setEmptyMessage(tr("Searching the deployments of this GPU…"));
    m_pareto->setMinimumHeight(260);
    m_chart->setMinimumHeight(220); // a small window scrolls the page instead of squeezing the bars and their labels
    connect(m_pareto, &ChartWidget::clicked, this, [this](double x, double) { pickDeployment(int(std::lround(x))); });
    for (const auto &p : gpuPresets()) {
        m_gpu->addItem((p.runtime ? tr("%1 (%2 GiB as the runtime sees it)") : tr("%1 (%2 GiB, the vendor's figure)"))
                           .arg(QString::fromUtf8(p.name.data(), qsizetype(p.name.size())))
                           .arg(double(p.bytes) / double(1ull << 30), 0, 'f', 1),
                       QVariant::fromValue<qulonglong>(p.bytes));
        m_gpu->setItemData(m_gpu->count() - 1, QString::fromUtf8(p.source.data(), qsizetype(p.source.size())),
                           Qt::ToolTipRole);
    }
    m_gpu->addItem(tr("custom memory"), QVariant::fromValue<qulonglong>(0));
    m_gpu->setItemData(m_gpu->count() - 1, tr("GPU memory as the runtime sees it, in GiB (beside)"), Qt::ToolTipRole);
    m_gpu->setCurrentIndex(1); // H200
    m_customGib->setRange(1, 4096);
    m_customGib->setDecimals(2);
    m_customGib->setValue(80);
    m_customGib->setSuffix(tr(" GiB"));
    m_customGib->setToolTip(tr("GPU memory as the runtime sees it (torch's total)"));
    m_customGib->setEnabled(false);
    m_cacheFrom->addItem(tr("the engine's"), 0);
    m_cacheFrom->addItem(tr("the Cache view's settings"), 1);
    m_cacheFrom->setToolTip(tr("The engine's: the rows, index entries and dtypes vLLM or SGLang allocate for this "
                               "model; the Cache view's: its preset, KV and state dtypes"));
    m_kv->addItem(tr("the engine's"), -1);
    m_kv->addItem(QStringLiteral("BF16"), int(KvDtype::BF16));
    m_kv->addItem(QStringLiteral("FP8"), int(KvDtype::FP8));
    m_kv->addItem(QStringLiteral("FP8 (fp8_ds_mla, 656 B)"), int(KvDtype::FP8_DS_MLA));
    m_state->addItem(tr("the engine's"), -1);
    m_state->addItem(QStringLiteral("FP32"), int(StateDtype::FP32));
    m_state->addItem(QStringLiteral("BF16"), int(StateDtype::BF16));
    m_context->setGroupSeparatorShown(true);
    m_context->setSuffix(tr(" tokens"));
    m_engine->addItem(QStringLiteral("vLLM"), int(PlanEngine::Vllm));
    m_engine->addItem(QStringLiteral("SGLang"), int(PlanEngine::Sglang));
    m_engine->setToolTip(tr("Whose placement rules, pipeline split and default memory fraction"));
    m_pp->setToolTip(tr("Pipeline stages: TP x PP = GPUs; each stage holds its layers and their cache"));
    m_fraction->setRange(0, 1.0);
    m_fraction->setDecimals(3);
    m_fraction->setSingleStep(0.01);
    m_fraction->setSpecialValueText(tr("engine default"));
    m_fraction->setValue(0);
    m_reserve->setRange(0, 1024);
    m_reserve->setDecimals(1);
    m_reserve->setSuffix(tr(" GiB"));
    m_verdict->setWordWrap(true);
    m_verdict->setTextFormat(Qt::RichText);
    m_verdict->setStyleSheet(QStringLiteral("QLabel { font-size: 13pt; padding: 6px 0; }"));
    m_details->setWordWrap(true);
    // Both change at every keystroke in the fields below and fill the page's width.
    m_verdict->setFillsWidth(true);
    m_details->setFillsWidth(true);
    m_details->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_chart->setTitle(tr("Memory of each GPU"));
    m_chart->setValueFormat([](double gib) { return binaryBytesQ(std::uint64_t(std::llround(gib * double(1ull << 30)))); });

    // A window too short for the verdict, the controls, the details and the chart scrolls, rather than
    // squeezing the controls.
    auto *v = makeScrollingPage(this);
    v->addWidget(makeHeading(tr("Capacity plan: GPUs, parallelism and cache room"), this));
    m_ggufNote = new WrapLabel(tr("A GGUF copy: vLLM and SGLang serve safetensors checkpoints, so these plans count this "
                               "copy's bytes as if they loaded it. llama.cpp on one GPU (-ngl, --n-cpu-moe): the "
                               "Overview's Fits on, or <tt>ckpt-atlas plan --engine llama.cpp</tt>."),
                            this);
    m_ggufNote->setWordWrap(true);
    m_ggufNote->setProperty("role", QStringLiteral("note"));
    m_ggufNote->setVisible(false);
    v->addWidget(m_ggufNote);
    v->addWidget(m_verdict);
    // Four pairs to a row on a wide window, fewer on a narrow one.
    auto *grid = new ReflowGrid(4, this);
    auto add = [&](const QString &label, QWidget *w) { grid->addField(new QLabel(label, this), w); };
    add(tr("GPU"), m_gpu);
    add(tr("GPUs"), m_gpus);
    add(tr("Tensor parallel"), m_tp);
    add(tr("Pipeline stages"), m_pp);
    add(tr("Engine"), m_engine);
    add(tr("Expert parallel"), m_ep);
    add(tr("Redundant experts"), m_redundant);
    add(tr("DP attention"), m_dp);
    add(tr("Context"), m_context);
    add(tr("Memory fraction"), m_fraction);
    add(tr("Reserve"), m_reserve);
    add(tr("Custom memory"), m_customGib);
    add(tr("Cache"), m_cacheFrom);
    add(tr("KV dtype"), m_kv);
    add(tr("State dtype"), m_state);
    letComboShrink(m_gpu);
    v->addWidget(grid);
    v->addWidget(m_mtp);
    v->addWidget(m_details);
    v->addWidget(m_chart, 1);
    v->addWidget(m_pareto, 1);

    for (QSpinBox *s : {m_gpus, m_tp, m_ep, m_dp, m_pp, m_redundant, m_context})
        connect(s, qOverload<int>(&QSpinBox::valueChanged), this, &PlanView::replan);
    for (QDoubleSpinBox *s : {m_fraction, m_reserve, m_customGib})
        connect(s, qOverload<double>(&QDoubleSpinBox::valueChanged), this, &PlanView::replan);
    connect(m_gpu, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        m_customGib->setEnabled(m_gpu->currentData().toULongLong() == 0);
        replan();
    });
    for (QComboBox *c : {m_engine, m_kv, m_state})
        connect(c, qOverload<int>(&QComboBox::currentIndexChanged), this, &PlanView::replan);
    connect(m_cacheFrom, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        const bool engines = m_cacheFrom->currentData().toInt() == 0;
        m_kv->setEnabled(engines);
        m_state->setEnabled(engines);
        replan();
    });
    connect(m_mtp, &QCheckBox::toggled, this, &PlanView::replan);
}

std::shared_ptr<const PreparedView> PlanView::prepare(const LoadedCheckpoint &data) const
{
    auto p = std::make_shared<PreparedPlan>();
    std::tie(p->withoutMtp, p->withMtp) = placementTotalsBoth(data);
    return p;
}

void PlanView::setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data)
{
    setCheckpoint(data, prepare(*data));
}

void PlanView::setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data, std::shared_ptr<const PreparedView> prepared)
{
    m_data = std::move(data);
    m_cache = m_data->cache;
    m_ggufNote->setVisible(m_data->checkpoint.format == CheckpointFormat::Gguf);
    // Only a checkpoint with MTP layers has them to load.
    const bool hasMtp = m_data->analysis.layerCount > m_data->analysis.mainLayers;
    m_mtp->setVisible(hasMtp);
    if (!hasMtp) {
        QSignalBlocker block(m_mtp);
        m_mtp->setChecked(false);
    }
    m_searchKey.clear(); // another checkpoint: its own deployments
    m_prepared = std::dynamic_pointer_cast<const PreparedPlan>(prepared);
    if (!m_prepared) m_prepared = std::static_pointer_cast<const PreparedPlan>(prepare(*m_data));
    {
        QSignalBlocker block(m_context);
        // The context every view and the command line use unless told otherwise: max_position_embeddings.
        const int context = int(std::min<std::uint64_t>(defaultContextTokens(m_data->checkpoint.config), 1 << 30));
        m_context->setMaximum(context);
        m_context->setValue(context);
    }
    replan();
}

bool PlanView::ggufNoteShown() const
{
    return !m_ggufNote->isHidden();
}

void PlanView::themeChanged()
{
    if (m_data) replan(); // the verdict's colour
    update();
}

void PlanView::clearAll()
{
    dropSearch();
    m_data.reset();
    m_prepared.reset();
    m_plan.reset();
    m_cache.reset();
    m_verdict->clear();
    m_details->clear();
    m_chart->clear();
}

void PlanView::setGpus(int gpus)
{
    m_gpus->setValue(gpus);
}

void PlanView::setCacheBudget(const CacheBudget &budget)
{
    if (!m_data) return;
    m_cache = budget;
    // Hidden (a context slider dragged in the Cache view): planned when shown; any other change plans
    // with this budget too.
    if (!isVisible()) {
        m_stale = true;
        return;
    }
    replan();
}

void PlanView::showEvent(QShowEvent *event)
{
    AtlasView::showEvent(event);
    if (m_stale && m_data) replan();
}

void PlanView::setSearch(const DeploymentSearch &search)
{
    // Only the answer to the newest request, while it is awaited (the GPU, engine, context or cache may
    // have changed since, or a custom memory be chosen).
    if (!m_data || !m_searchPending || search.options.serial != m_searchSerial) return;
    m_searchPending = false;
    struct Shown
    {
        PlanView *view;
        ~Shown() { emit view->searchShown(); }
    } shown{this};
    if (search.gpus.empty() || !search.gpus.front().gpu) {
        searchFailed(tr("No GPU to search deployments for."));
        return;
    }
    m_search = search;
    drawPareto();
    showVerdict(); // a plan that does not fit: where it would
}

void PlanView::clearPareto()
{
    m_points.clear();
    m_search.reset();
    m_pareto->clear();
}

void PlanView::dropSearch()
{
    m_searchKey.clear();
    m_searchPending = false;
    ++m_searchSerial; // whatever answer is still on its way is not shown
    clearPareto();
}

void PlanView::drawPareto()
{
    if (!m_search) return;
    const DeploymentSearch &search = *m_search;
    m_drawnMtp = m_mtp->isChecked();
    // The series of the MTP setting the plan uses; the other (when searched) drawn faint for comparison.
    const GpuSearch *shown = &search.gpus.front(), *other = nullptr;
    for (const auto &k : search.gpus)
        if (k.mtp == m_drawnMtp) shown = &k;
    for (const auto &k : search.gpus)
        if (&k != shown) other = &k;
    const GpuSearch &k = *shown;
    m_points = k.pareto;
    m_pareto->setTitle(tr("Smallest deployments on %1%2: most sequences of %3 tokens for each GPU count (click one to plan it)")
                           .arg(qs(std::string(k.gpu->name)), k.mtp ? tr(" with the MTP layers") : QString(),
                                groupDigitsQ(search.options.context)));
    if (m_points.empty()) {
        m_pareto->clear();
        m_pareto->setEmptyMessage(tr("No deployment of up to %1 × %2 holds one sequence of %3 tokens.")
                                      .arg(search.options.maxGpus)
                                      .arg(qs(std::string(k.gpu->name)), groupDigitsQ(search.options.context)));
        return;
    }
    QList<LineSeries> lines;
    LineSeries line{other ? (k.mtp ? tr("with the MTP layers") : tr("without the MTP layers")) : tr("Pareto set"), {}, {},
                    ChartWidget::seriesColor(0)};
    for (const auto &p : m_points) {
        line.x << p.gpus;
        line.y << double(p.sequences);
    }
    lines << line;
    if (other && !other->pareto.empty()) {
        LineSeries faint{other->mtp ? tr("with the MTP layers") : tr("without the MTP layers"), {}, {},
                         ChartWidget::seriesColor(1)};
        faint.dashed = true;
        for (const auto &p : other->pareto) {
            faint.x << p.gpus;
            faint.y << double(p.sequences);
        }
        lines << faint;
    }
    m_pareto->setHoverFormat([points = m_points](double x, double) {
        const SearchPoint *best = nullptr;
        for (const auto &p : points)
            if (!best || std::abs(p.gpus - x) < std::abs(best->gpus - x)) best = &p;
        return best ? tr("%1 GPUs, %2: %3 sequences").arg(best->gpus).arg(qs(best->layout())).arg(groupDigitsQ(best->sequences))
                    : QString();
    });
    m_pareto->showLines(lines, tr("GPUs"), tr("sequences"), false, true);
    // Labels to the right of the points in the left half, to the left in the right half: all inside the
    // axis, which starts at no GPUs.
    const double right = m_points.back().gpus * 1.06 + 1;
    for (const auto &p : m_points)
        m_pareto->addPointLabel(p.gpus, double(p.sequences),
                                QStringLiteral("%1 GPUs, %2 · %3").arg(p.gpus).arg(qs(p.layout())).arg(groupDigitsQ(p.sequences)),
                                ChartWidget::seriesColor(0),
                                (p.gpus < right / 2 ? Qt::AlignLeft : Qt::AlignRight) | Qt::AlignBottom);
    m_pareto->setXRange(0, right);
}

void PlanView::resetParallelism()
{
    {
        const QSignalBlocker a(m_tp), b(m_pp), c(m_ep), d(m_dp);
        m_tp->setValue(0);
        m_pp->setValue(1);
        m_ep->setValue(0);
        m_dp->setValue(1);
    }
    replan();
}

void PlanView::searchFailed(const QString &why, std::uint64_t serial)
{
    if (serial && serial != m_searchSerial) return; // an earlier request's
    m_searchPending = false;
    clearPareto();
    m_pareto->setEmptyMessage(why);
    emit searchShown();
}

void PlanView::pickDeployment(int gpus)
{
    const SearchPoint *best = nullptr;
    for (const auto &p : m_points)
        if (!best || std::abs(p.gpus - gpus) < std::abs(best->gpus - gpus)) best = &p;
    if (best) setDeployment(SearchPoint(*best));
}

void PlanView::setDeployment(const SearchPoint &chosen)
{
    {
        const QSignalBlocker a(m_gpus), b(m_tp), c(m_pp), d(m_ep), e(m_dp);
        m_gpus->setValue(chosen.gpus);
        m_tp->setValue(chosen.tp);
        m_pp->setValue(chosen.pp);
        m_ep->setValue(chosen.ep);
        m_dp->setValue(chosen.dpAttention);
    }
    replan();
}

void PlanView::setMtp(bool load)
{
    if (!m_mtp->isHidden() || !load) m_mtp->setChecked(load);
}

void PlanView::setContext(int tokens)
{
    m_context->setValue(tokens);
}

void PlanView::setCacheFromCacheView(bool fromCacheView)
{
    m_cacheFrom->setCurrentIndex(fromCacheView ? 1 : 0);
}

void PlanView::setCustomGpuMemory(double gib)
{
    m_gpu->setCurrentIndex(m_gpu->findData(QVariant::fromValue<qulonglong>(0)));
    m_customGib->setValue(gib);
}

CacheBudget PlanView::planCache(const PlanOptions &o) const
{
    if (m_cacheFrom->currentData().toInt() == 1) {
        CacheBudget c = m_cache ? *m_cache : m_data->cache;
        return c;
    }
    CacheOptions given;
    given.contextTokens = o.context;
    CacheOptions co = engineCacheOptions(o.engine, o.mtp, gpuPresetNamed(o.gpuName), *m_data, given);
    if (const int kv = m_kv->currentData().toInt(); kv >= 0) co.kvDtype = KvDtype(kv);
    if (const int st = m_state->currentData().toInt(); st >= 0) co.stateDtype = StateDtype(st);
    return computeCacheBudget(m_data->checkpoint, m_data->analysis, co);
}

void PlanView::setPipelineStages(int pp)
{
    m_pp->setValue(pp);
}

void PlanView::setEngine(PlanEngine engine)
{
    m_engine->setCurrentIndex(m_engine->findData(int(engine)));
}

void PlanView::setGpu(const QString &name)
{
    for (int i = 0; i < m_gpu->count(); ++i)
        if (m_gpu->itemText(i).startsWith(name + QLatin1Char(' '))) m_gpu->setCurrentIndex(i);
}

QString PlanView::detailsText() const
{
    return m_details->text();
}

// The plan's verdict; one that does not fit names the smallest deployment of this GPU that does, once the
// search has answered (plan --search; a click on its point in the chart plans it).
void PlanView::showVerdict()
{
    if (!m_plan) return;
    const CapacityPlan &p = *m_plan;
    QString text = QStringLiteral("<span style='color:%1'><b>%2</b></span>")
                       .arg(toneHex(p.fits ? Tone::Good : Tone::Bad), qs(p.reason).toHtmlEscaped() + QLatin1Char('.'));
    if (!p.fits && m_search && m_search->options.context == p.options.context) {
        for (const auto &k : m_search->gpus) {
            if (k.mtp != p.options.mtp || !k.gpu) continue;
            const QString gpu = qs(std::string(k.gpu->name));
            text += QStringLiteral("<br><span style='font-size:11pt'>") +
                    (k.smallest ? tr("Fits from %1 × %2 with %3: %4 sequences of %5 tokens (its point in the chart below).")
                                      .arg(k.smallest->gpus)
                                      .arg(gpu, qs(k.smallest->layout()), groupDigitsQ(k.smallest->sequences),
                                           groupDigitsQ(p.options.context))
                                : tr("No deployment of up to %1 × %2 holds one sequence of %3 tokens.")
                                      .arg(m_search->options.maxGpus)
                                      .arg(gpu, groupDigitsQ(p.options.context)))
                        .toHtmlEscaped() +
                    QStringLiteral("</span>");
        }
    }
    m_verdict->setText(text);
}

QString PlanView::verdict() const
{
    return m_verdict->text();
}

void PlanView::replan()
{
    m_stale = false;
    if (!m_data || !m_prepared) return;
    PlanOptions o;
    o.gpus = m_gpus->value();
    if (m_tp->value() > 0) o.tp = m_tp->value();
    o.ep = m_ep->value();
    o.dpAttention = m_dp->value();
    o.pp = m_pp->value();
    o.engine = PlanEngine(m_engine->currentData().toInt());
    o.redundantExperts = m_redundant->value();
    o.mtp = m_mtp->isChecked();
    const bool custom = m_gpu->currentData().toULongLong() == 0;
    o.gpuName = custom ? std::string() : m_gpu->currentText().section(QLatin1Char(' '), 0, 0).toStdString();
    if (!custom) // the preset's own name (some have spaces: "RTX PRO 6000")
        for (const auto &g : gpuPresets())
            if (g.bytes == m_gpu->currentData().toULongLong() &&
                m_gpu->currentText().startsWith(QString::fromUtf8(g.name.data(), qsizetype(g.name.size()))))
                o.gpuName = std::string(g.name);
    o.gpuMemory = custom ? std::uint64_t(std::llround(m_customGib->value() * double(1ull << 30)))
                         : m_gpu->currentData().toULongLong();
    if (m_fraction->value() > 0) o.memFraction = m_fraction->value();
    o.reserve = static_cast<std::uint64_t>(std::llround(m_reserve->value() * double(1ull << 30)));
    o.context = std::uint64_t(m_context->value());
    const bool fromCacheView = m_cacheFrom->currentData().toInt() == 1;
    const CacheBudget cache = planCache(o);
    // The Pareto chart depends on the GPU, engine, context, MTP and cache, not on the layout typed here.
    if (const GpuPreset *gpu = gpuPresetNamed(o.gpuName)) {
        const QString key = QStringLiteral("%1|%2|%3|%4|%5|%6|%7|%8")
                                .arg(qs(o.gpuName))
                                .arg(int(o.engine))
                                .arg(o.context)
                                .arg(0) // both MTP settings are searched
                                .arg(m_cacheFrom->currentIndex())
                                .arg(m_kv->currentIndex())
                                .arg(m_state->currentIndex())
                                .arg(QString::number(m_fraction->value()) + QString::number(o.reserve)) +
                            // the Cache view's budget itself when it decides (its preset, dtypes, entries)
                            (fromCacheView ? QStringLiteral("|") + qs(cacheShortWords(cache)) +
                                                 QString::number(cache.bytesPerToken) + QString::number(cache.indexEntryBytes)
                                           : QString());
        if (key != m_searchKey) {
            m_searchKey = key;
            SearchOptions so;
            so.engine = o.engine;
            so.gpus = {gpu};
            so.context = o.context;
            so.mtpBoth = true; // one series per MTP setting (the checkbox picks which is drawn)
            so.memFraction = o.memFraction;
            so.reserve = o.reserve;
            so.serial = ++m_searchSerial;
            // The totals this view prepared, lent to the search (which would make them again, on every context typed).
            so.totalsWithoutMtp = std::shared_ptr<const PlacementTotals>(m_prepared, &m_prepared->withoutMtp);
            so.totalsWithMtp = std::shared_ptr<const PlacementTotals>(m_prepared, &m_prepared->withMtp);
            so.totalsOf = m_data;
            if (fromCacheView || m_kv->currentData().toInt() >= 0 || m_state->currentData().toInt() >= 0) {
                so.cache = cacheOptionsOf(cache);
            }
            clearPareto();
            m_pareto->setEmptyMessage(tr("Searching the deployments of %1…").arg(qs(o.gpuName)));
            m_searchPending = true;
            emit searchWanted(so);
        } else if (m_search && m_drawnMtp != o.mtp) {
            drawPareto(); // the same search, the other MTP series
        }
    } else if (!m_searchKey.isEmpty()) {
        dropSearch();
        m_pareto->setEmptyMessage(tr("The smallest deployments are searched for the named GPUs."));
    }
    try {
        if (cache.kvDtypeMisfit) throw AtlasError(ErrorKind::Usage, "KV dtype: " + cache.reason);
        m_plan = planCapacity(*m_data, o, o.mtp ? &m_prepared->withMtp : &m_prepared->withoutMtp, &cache);
    } catch (const AtlasError &e) {
        m_plan.reset();
        m_verdict->setText(QStringLiteral("<span style='color:%1'>%2</span>").arg(toneHex(Tone::Bad), qs(e.what()).toHtmlEscaped()));
        m_details->setText(tr("This combination cannot run; change the GPU count or the parallelism."));
        m_chart->clear();
        return;
    }
    const CapacityPlan &p = *m_plan;
    const PlanPerGpu &g = p.perGpu;
    showVerdict();
    const bool overridden = !fromCacheView && (m_kv->currentData().toInt() >= 0 || m_state->currentData().toInt() >= 0);
    const QString cacheWords =
        qs(cacheLayoutWords(cache, fromCacheView ? std::nullopt : std::optional<PlanEngine>(o.engine),
                            "as the Cache view sets it: ")) +
        (overridden ? tr(" (the dtypes set here)") : QString());
    const QString who = p.stages.size() > 1 ? tr("Per GPU of stage %1 (layers %2–%3, the least room):")
                                                  .arg(p.bindingStage + 1)
                                                  .arg(p.stages[std::size_t(p.bindingStage)].firstLayer)
                                                  .arg(p.stages[std::size_t(p.bindingStage)].endLayer - 1)
                                            : tr("Per GPU:");
    // The headline numbers link to their working (hover, click: the formula pane).
    const Explanations working = explainPlan(p);
    const auto linked = [&](const char *path, const QString &shown) {
        return hasWorking(working, path) ? workingLink(QString::fromLatin1(path), shown) : shown;
    };
    QString details =
        QStringLiteral("<b>%1</b> ").arg(who.toHtmlEscaped()) +
        tr("weights %1 (replicated %2, split %3, experts %4%5); usable %6 of %7 (fraction %14); cache %8 B per "
           "token%9: %10. <b>%11 tokens</b> fit per GPU; <b>%12 sequences</b> of %13 tokens in the "
           "deployment.")
            .arg(linked("per_gpu.weight_bytes", binaryBytesQ(g.weightBytes)), binaryBytesQ(g.replicatedBytes), binaryBytesQ(g.splitBytes),
                 binaryBytesQ(g.expertBytes),
                 g.experts ? tr(", %1 whole experts").arg(g.experts) : QString(), binaryBytesQ(g.usableBytes),
                 binaryBytesQ(p.options.gpuMemory),
                 g.cacheBytesPerToken == std::floor(g.cacheBytesPerToken)
                     ? groupDigitsQ(std::uint64_t(g.cacheBytesPerToken))
                     : QString::number(g.cacheBytesPerToken, 'f', 4),
                 g.stateBytesPerSequence ? tr(" + %1 per sequence on each GPU")
                                               .arg(binaryBytesQ(g.stateBytesPerSequence))
                                         : QString())
            .arg(cacheWords.toHtmlEscaped(),
                 linked("per_gpu.max_cached_tokens", groupDigitsQ(g.maxCachedTokens)),
                 linked("sequences_at_context", groupDigitsQ(p.sequencesAtContext)), groupDigitsQ(p.options.context),
                 QString::number(p.options.memFraction.value_or(0.9), 'f', 3));
    for (const auto &n : p.notes)
        details += QStringLiteral("<br><span style='color:gray'>") + guiWording(qs(n)).toHtmlEscaped() + QStringLiteral("</span>");
    m_details->setText(details);
    setWorkings(m_details, working);

    // A stacked bar per pipeline stage (every GPU of a stage holds the same): what fills each GPU.
    const double gib = double(1ull << 30);
    QStringList labels;
    BarSeries rep{tr("replicated"), {}, ChartWidget::seriesColor(0)};
    BarSeries split{tr("split by TP"), {}, ChartWidget::seriesColor(2)};
    BarSeries ex{tr("routed experts"), {}, ChartWidget::seriesColor(3)};
    BarSeries reserve{tr("reserve"), {}, ChartWidget::seriesColor(5)};
    BarSeries room{tr("cache room"), {}, toneColor(Tone::Cached)};
    const int tp = std::max(*p.options.tp, 1);
    const std::size_t stages = std::max<std::size_t>(p.stages.size(), 1);
    for (std::size_t stage = 0; stage < stages; ++stage) {
        const PlanPerGpu &s = p.stages.empty() ? g : p.stages[stage].perGpu;
        const int first = int(stage) * tp; // TP × PP = GPUs: a stage is TP GPUs
        const int gpus = p.stages.size() > 1 ? tp : p.options.gpus;
        labels << (p.stages.size() > 1 ? tr("stage %1: GPUs %2–%3, layers %4–%5")
                                             .arg(stage + 1)
                                             .arg(first)
                                             .arg(first + gpus - 1)
                                             .arg(p.stages[stage].firstLayer)
                                             .arg(p.stages[stage].endLayer - 1)
                                       : gpus == 1 ? tr("the GPU") : tr("each of the %1 GPUs").arg(gpus));
        rep.values << double(s.replicatedBytes) / gib;
        split.values << double(s.splitBytes) / gib;
        ex.values << double(s.expertBytes) / gib;
        reserve.values << double(p.options.reserve) / gib;
        room.values << std::max(0.0, double(s.cacheRoomBytes) / gib);
    }
    QList<BarSeries> parts{rep, split, ex};
    if (p.options.reserve > 0) parts << reserve; // no legend entry for what is not there
    parts << room;
    m_chart->setTitle(g.cacheRoomBytes > 0
                          ? tr("Memory of a GPU (usable: %1)").arg(binaryBytesQ(g.usableBytes))
                          : tr("Memory each GPU would need: %1 more than its usable %2")
                                .arg(binaryBytesQ(std::uint64_t(-g.cacheRoomBytes)), binaryBytesQ(g.usableBytes)));
    m_chart->showBars(labels, parts, tr("GiB per GPU"), false, true);
    // What the engine may use of a GPU, and what the GPU has.
    m_chart->addLevel(double(g.usableBytes) / gib,
                      tr("usable (%1 of the GPU)").arg(QString::number(p.options.memFraction.value_or(0.9), 'f', 3)),
                      toneColor(Tone::Good));
    m_chart->addLevel(double(p.options.gpuMemory) / gib, tr("GPU memory"), palette().color(QPalette::Mid), true);
}

} // namespace atlas
