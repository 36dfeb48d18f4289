#include "cache_view.h"

#include "chart_widget.h"
#include "explain.h"
#include "working_links.h"
#include "wrap_label.h"

#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QSignalBlocker>
#include <QSlider>
#include <QTimer>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace atlas {

CacheView::CacheView(QWidget *parent)
    : AtlasView(parent), m_context(new QSpinBox(this)), m_slider(new QSlider(Qt::Horizontal, this)),
      m_kv(new QComboBox(this)), m_preset(new QComboBox(this)), m_entry(new QComboBox(this)),
      m_state(new QComboBox(this)), m_chart(new ChartWidget(this)), m_parts(new ChartWidget(this)),
      m_breakdown(new WrapLabel(this)), m_textTimer(new QTimer(this))
{
    m_context->setRange(1, 1 << 30);
    m_context->setGroupSeparatorShown(true);
    m_context->setSuffix(tr(" tokens"));
    m_slider->setRange(0, 0); // stops set by setStops
    m_slider->setTickPosition(QSlider::TicksBelow);
    m_slider->setTickInterval(1);
    m_slider->setPageStep(1);
    // The labels carry this checkpoint's numbers: they are filled in by setCheckpoint().
    m_kv->addItem(tr("BF16 latent"), int(KvDtype::BF16));
    m_kv->addItem(tr("FP8 latent"), int(KvDtype::FP8));
    m_kv->addItem(tr("FlashMLA fp8_ds_mla (FP8 + scales + BF16 rope)"), int(KvDtype::FP8_DS_MLA));
    m_llamaType = new QComboBox(this);
    for (const char *t : {"f16", "q8_0", "q4_0", "bf16", "f32", "q4_1", "iq4_nl", "q5_0", "q5_1"})
        m_llamaType->addItem(QString::fromLatin1(t), int(*llamaCacheTypeFromName(t)));
    m_llamaType->setToolTip(tr("llama.cpp's --cache-type-k (-ctk) and -ctv: an MLA layer keeps K only, V a view of it"));
    m_entry->addItem(tr("as the preset allocates"), 0);
    m_state->addItem(tr("FP32 recurrent and compressor states (as vLLM keeps them)"), int(StateDtype::FP32));
    m_state->addItem(tr("BF16 states (half)"), int(StateDtype::BF16));
    for (CachePreset p : {CachePreset::Article, CachePreset::Vllm, CachePreset::VllmMtp, CachePreset::Atom,
                          CachePreset::Reference, CachePreset::LlamaCpp}) {
        const auto d = cachePresetDescription(p);
        m_preset->addItem(QString::fromUtf8(d.data(), qsizetype(d.size())), int(p));
    }
    for (QComboBox *c : {m_kv, m_llamaType, m_preset, m_entry, m_state})
        letComboShrink(c, 24);
    m_breakdown->setWordWrap(true);
    m_breakdown->setFillsWidth(true); // new at each step of the context slider
    m_breakdown->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_chart->setTitle(tr("Cache per sequence against context length"));
    m_parts->setTitle(tr("Per layer kind: what grows with the context, and what each sequence holds anyway"));
    m_parts->setMinimumHeight(170);
    m_parts->setValueFormat([](double gib) { return binaryBytesQ(std::uint64_t(std::llround(gib * double(1ull << 30)))); });

    auto *v = new QVBoxLayout(this);
    v->setContentsMargins(20, 16, 20, 16);
    v->addWidget(makeHeading(tr("Cache: per token and per sequence"), this));
    auto *form = new QFormLayout();
    auto *ctxRow = new QHBoxLayout();
    ctxRow->addWidget(m_slider, 1);
    ctxRow->addWidget(m_context);
    form->addRow(tr("Context"), ctxRow);
    form->addRow(tr("Engine preset"), m_preset);
    form->addRow(tr("KV cache layout"), m_kv);
    form->addRow(tr("llama.cpp cache type"), m_llamaType);
    m_form = form;
    form->addRow(tr("Index-key entry"), m_entry);
    form->addRow(tr("Per-sequence state"), m_state);
    v->addLayout(form);
    v->addWidget(m_breakdown);
    auto *charts = new QHBoxLayout();
    charts->addWidget(m_chart, 3);
    charts->addWidget(m_parts, 2);
    v->addLayout(charts, 1);

    connect(m_context, qOverload<int>(&QSpinBox::valueChanged), this, [this](int value) {
        if (!m_data) return;
        QSignalBlocker block(m_slider);
        m_slider->setValue(stopAtOrBelow(value));
        recompute();
    });
    connect(m_slider, &QSlider::valueChanged, this, [this](int value) {
        if (value < 0 || value >= int(m_stops.size())) return;
        m_sliding = true;
        m_context->setValue(m_stops[std::size_t(value)]);
        m_sliding = false;
    });
    m_textTimer->setSingleShot(true);
    m_textTimer->setInterval(120);
    const auto showPendingText = [this] {
        m_textTimer->stop();
        m_breakdown->setText(m_pendingText);
        setWorkings(m_breakdown, m_pendingWorking);
    };
    connect(m_textTimer, &QTimer::timeout, this, showPendingText);
    connect(m_slider, &QSlider::sliderReleased, this, [this, showPendingText] {
        if (m_textTimer->isActive()) showPendingText();
    });
    connect(m_kv, qOverload<int>(&QComboBox::currentIndexChanged), this, &CacheView::recompute);
    connect(m_entry, qOverload<int>(&QComboBox::currentIndexChanged), this, &CacheView::recompute);
    connect(m_preset, qOverload<int>(&QComboBox::currentIndexChanged), this, [this] {
        showPresetRows();
        recompute();
    });
    connect(m_llamaType, qOverload<int>(&QComboBox::currentIndexChanged), this, &CacheView::recompute);
    showPresetRows();
    connect(m_state, qOverload<int>(&QComboBox::currentIndexChanged), this, &CacheView::recompute);
}

// llama.cpp's cache types in place of the KV layouts of vLLM, SGLang and the references.
void CacheView::showPresetRows()
{
    const bool llama = static_cast<CachePreset>(m_preset->currentData().toInt()) == CachePreset::LlamaCpp;
    m_form->setRowVisible(m_kv, !llama);
    m_form->setRowVisible(m_llamaType, llama);
}

void CacheView::setStops(int maximum)
{
    m_stops.clear();
    for (int t = 1024; t < maximum; t *= 2)
        m_stops.push_back(t);
    m_stops.push_back(maximum);
    const QSignalBlocker block(m_slider);
    m_slider->setRange(0, int(m_stops.size()) - 1);
    const auto label = [](int t) {
        return t % (1 << 20) == 0 ? tr("%1 M").arg(t >> 20) : t % 1024 == 0 ? tr("%1 K").arg(t >> 10) : groupDigitsQ(std::uint64_t(t));
    };
    m_slider->setToolTip(tr("Context: %1 to %2 tokens in steps of two (the box beside it takes any length)")
                             .arg(label(m_stops.front()), label(m_stops.back())));
}

int CacheView::stopAtOrBelow(int tokens) const
{
    int i = 0;
    while (i + 1 < int(m_stops.size()) && m_stops[std::size_t(i) + 1] <= tokens)
        ++i;
    return i;
}

void CacheView::setStateDtype(StateDtype dtype)
{
    m_state->setCurrentIndex(m_state->findData(int(dtype)));
}

void CacheView::clearAll()
{
    m_data.reset();
    m_chart->clear();
    m_parts->clear();
    m_breakdown->clear();
}

void CacheView::setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data)
{
    m_data = std::move(data);
    const CacheBudget &c = m_data->cache;
    // Nothing to size whatever the settings (no attention width known); a context or dtype the user can
    // change is not a reason to hide the view.
    setNotApplicable(!c.available && !c.overflow && !c.kvDtypeMisfit
                         ? tr("No cache can be sized for this model: %1.").arg(qs(c.reason))
                         : QString());
    {
        // A GGUF runs on llama.cpp: its preset (the budget's) unless the user picks another; a safetensors
        // checkpoint leaves llama.cpp's for the default.
        const QSignalBlocker blockPreset(m_preset);
        const bool gguf = m_data->checkpoint.format == CheckpointFormat::Gguf;
        const auto current = static_cast<CachePreset>(m_preset->currentData().toInt());
        if (gguf && current == CachePreset::Article) m_preset->setCurrentIndex(m_preset->findData(int(CachePreset::LlamaCpp)));
        if (!gguf && current == CachePreset::LlamaCpp) m_preset->setCurrentIndex(m_preset->findData(int(CachePreset::Article)));
        showPresetRows();
    }
    {
        QSignalBlocker blockKv(m_kv), blockEntry(m_entry);
        // The presets described for what this checkpoint caches (no index-key talk without index keys).
        for (int i = 0; i < m_preset->count(); ++i) {
            const auto d = cachePresetDescription(static_cast<CachePreset>(m_preset->itemData(i).toInt()), presetContextOf(c));
            m_preset->setItemText(i, QString::fromUtf8(d.data(), qsizetype(d.size())));
        }
        if (c.available && !c.mla() && c.kvWidth > 0) {
            m_kv->setItemText(0, tr("BF16 K and V (%1 B/layer)").arg(2 * 2 * c.kvWidth));
            m_kv->setItemText(1, tr("FP8 K and V (%1 B/layer)").arg(2 * c.kvWidth));
            m_kv->setItemText(2, tr("FlashMLA fp8_ds_mla (MLA models only)"));
        }
        if (!c.layoutNote.empty()) { // DeepSeek-V4: rows of one shared K=V head, not an MLA latent
            m_kv->setItemText(0, tr("BF16 rows (the reference implementation)"));
            m_kv->setItemText(1, tr("FP8 rows (vLLM's layout: FP8 latent, BF16 RoPE, scales)"));
            m_kv->setItemText(2, tr("FP8 rows (as fp8)"));
        }
        if (c.kvLoraRank > 0) {
            m_kv->setItemText(0, tr("BF16 latent (%1 B/layer at rank %2 + rope %3)")
                                     .arg(kvBytesPerLayer(KvDtype::BF16, c.kvLoraRank, c.ropeDim))
                                     .arg(c.kvLoraRank)
                                     .arg(c.ropeDim));
            m_kv->setItemText(
                1, tr("FP8 latent (%1 B/layer)").arg(kvBytesPerLayer(KvDtype::FP8, c.kvLoraRank, c.ropeDim)));
            m_kv->setItemText(2, tr("FlashMLA fp8_ds_mla (FP8 + scales + BF16 rope, %1 B/layer)")
                                     .arg(kvBytesPerLayer(KvDtype::FP8_DS_MLA, c.kvLoraRank, c.ropeDim)));
        }
        m_entry->clear();
        if (c.indexHeadDim > 0) {
            const auto padded = indexEntryBytesPadded(c.indexHeadDim);
            const auto reference = indexEntryBytesReference(c.indexHeadDim);
            m_entry->addItem(tr("as the preset allocates"), 0);
            m_entry->addItem(tr("%1 B: head dim %2 + scales, padded to 16 B").arg(padded).arg(c.indexHeadDim),
                             int(padded));
            if (reference != padded)
                m_entry->addItem(tr("%1 B: unpadded (DeepSeek reference)").arg(reference), int(reference));
        } else {
            m_entry->addItem(tr("no index keys in this model"), 0);
        }
    }
    QSignalBlocker block(m_context);
    m_context->setMaximum(
        int(std::min<std::uint64_t>(defaultContextTokens(m_data->checkpoint.config), 1 << 30)));
    m_context->setValue(m_context->maximum());
    setStops(m_context->maximum());
    {
        const QSignalBlocker blockSlider(m_slider);
        m_slider->setValue(m_slider->maximum());
    }
    recompute();
}

void CacheView::setContext(std::uint64_t tokens)
{
    m_context->setValue(int(std::min<std::uint64_t>(tokens, std::uint64_t(m_context->maximum()))));
}

void CacheView::setKvDtype(KvDtype dtype)
{
    m_kv->setCurrentIndex(m_kv->findData(int(dtype)));
}

void CacheView::setPreset(CachePreset preset)
{
    m_preset->setCurrentIndex(m_preset->findData(int(preset)));
}

void CacheView::setIndexEntryBytes(int bytes)
{
    m_entry->setCurrentIndex(std::max(0, m_entry->findData(bytes)));
}

QString CacheView::breakdownText() const
{
    return m_breakdown->text();
}

QStringList CacheView::layoutChoices() const
{
    QStringList out;
    for (int i = 0; i < m_kv->count(); ++i)
        out << m_kv->itemText(i);
    return out;
}

QStringList CacheView::entryChoices() const
{
    QStringList out;
    for (int i = 0; i < m_entry->count(); ++i)
        out << m_entry->itemText(i);
    return out;
}

void CacheView::recompute()
{
    if (!m_data) return;
    CacheOptions opt;
    opt.kvDtype = static_cast<KvDtype>(m_kv->currentData().toInt());
    opt.preset = static_cast<CachePreset>(m_preset->currentData().toInt());
    if (const int e = m_entry->currentData().toInt()) opt.indexEntryBytes = e;
    opt.contextTokens = std::uint64_t(m_context->value());
    opt.stateDtype = static_cast<StateDtype>(m_state->currentData().toInt());
    opt.llamaCacheTypeK = opt.llamaCacheTypeV = static_cast<Dtype>(m_llamaType->currentData().toInt());
    m_budget = computeCacheBudget(m_data->checkpoint, m_data->analysis, opt);
    const CacheBudget &c = m_budget;
    emit budgetChanged(c);
    if (!c.available) {
        m_textTimer->stop();
        m_breakdown->setText(qs(c.reason));
        m_chart->clear();
        m_parts->clear();
        return;
    }
    QString text;
    const bool kinds = std::any_of(c.attention.begin(), c.attention.end(), [](const AttentionLayers &g) {
        return g.kind != AttentionKind::Mla && g.kind != AttentionKind::Full && g.kind != AttentionKind::Sliding &&
               g.kind != AttentionKind::IndexKeys;
    });
    if (kinds) {
        text = kindsBreakdown(c);
    } else if (!c.mla()) {
        QStringList parts;
        for (const auto &g : c.attention) {
            if (g.kind == AttentionKind::Linear)
                parts << (g.stateBytesPerLayer
                              ? tr("%1 linear-attention layers hold a fixed state of %2 B each (%3 per "
                                   "sequence, whatever the context)")
                                    .arg(g.layers)
                                    .arg(groupDigitsQ(*g.stateBytesPerLayer))
                                    .arg(binaryBytesQ(c.fixedStateBytes.value_or(0)))
                              : tr("%1 linear-attention layers hold a fixed state, not per token").arg(g.layers));
            else if (g.kind == AttentionKind::Sliding)
                parts << tr("%1 sliding-window layers × %2 B up to %3 tokens")
                             .arg(g.layers)
                             .arg(g.bytesPerTokenPerLayer)
                             .arg(groupDigitsQ(*g.window));
            else if (g.kind == AttentionKind::IndexKeys)
                parts << tr("index keys on %1 sparse layers × %2 B").arg(g.layers).arg(g.bytesPerTokenPerLayer);
            else
                parts << tr("%1 full-attention layers × %2 B").arg(g.layers).arg(g.bytesPerTokenPerLayer);
        }
        text = tr("<b>Per token:</b> K and V (GQA): %1.<br>").arg(parts.join(QStringLiteral("; ")));
        if (c.windowBytes)
            text += tr("<b>At long context</b> %1 B per token grow; the sliding layers hold %2 per sequence once "
                       "their window is full.<br>")
                        .arg(groupDigitsQ(c.bytesPerToken), binaryBytesQ(c.windowBytes));
        text +=
            tr("<b>At %1 tokens:</b> %2 bytes = <b>%3</b> (GiB = 2³⁰ bytes).")
                .arg(groupDigitsQ(c.contextTokens), groupDigitsQ(c.totalBytes), binaryBytesQ(c.totalBytes));
    } else {
        text = mlaBreakdown(c);
    }
    if (c.mla()) {
        const auto d = cachePresetDescription(c.preset, presetContextOf(c));
        text = tr("<b>Counted as</b> %1.<br>").arg(QString::fromUtf8(d.data(), qsizetype(d.size()))) + text;
    }
    // The headline numbers' working (domain.md section 17): hover a link, click for the formula pane.
    const Explanations working = explainReport(m_data->checkpoint.config, m_data->analysis, c);
    QStringList links;
    for (const auto &[path, label] :
         {std::pair{"cache.bytes_per_token", tr("bytes per token")},
          std::pair{"cache.window_bytes", tr("the windows")},
          std::pair{"cache.fixed_state_bytes", tr("the fixed state")},
          std::pair{"cache.total_bytes", tr("the total at %1 tokens").arg(groupDigitsQ(c.contextTokens))}})
        if (hasWorking(working, path)) links << workingLink(QString::fromLatin1(path), label);
    if (!links.isEmpty()) text += tr("<br><b>The working:</b> %1.").arg(links.join(QStringLiteral(" · ")));
    if (m_sliding) {
        m_pendingText = text;
        m_pendingWorking = working;
        m_textTimer->start(); // restarted by every step: the text follows once the slider rests
    } else {
        m_textTimer->stop();
        m_breakdown->setText(text);
        setWorkings(m_breakdown, working);
    }
    drawCurves(c);
    drawParts(c);
}

// Hybrid and compressed attention: one line per layer kind, per token and per sequence apart.
QString CacheView::kindsBreakdown(const CacheBudget &c) const
{
    QString text;
    if (!c.layoutNote.empty()) text += tr("<b>Layout:</b> %1.<br>").arg(qs(c.layoutNote).toHtmlEscaped());
    QStringList rows;
    for (const auto &g : c.attention) {
        QString row = tr("<b>%1</b> × %2 layers").arg(kindLabel(g.kind)).arg(g.layers);
        if (g.bytesPerTokenPerLayer)
            row += tr(": %1 B per token each").arg(g.bytesPerTokenPerLayer % g.compression == 0
                                                       ? groupDigitsQ(g.bytesPerTokenPerLayer / g.compression)
                                                       : QString::number(g.bytesPerToken(), 'f', 4));
        if (g.stateBytesPerLayer)
            row += (g.bytesPerTokenPerLayer ? tr(", ") : tr(": ")) +
                   tr("%1 B per sequence each").arg(groupDigitsQ(*g.stateBytesPerLayer));
        if (!g.bytesPerTokenPerLayer && !g.stateBytesPerLayer) row += tr(": state size not given by the config");
        if (!g.note.empty()) row += QStringLiteral(" <span style='color:gray'>(") + qs(g.note).toHtmlEscaped() +
                                    QStringLiteral(")</span>");
        rows << row;
    }
    text += rows.join(QStringLiteral("<br>")) + QStringLiteral("<br>");
    text += tr("<b>Per token:</b> %1 B. <b>Per sequence, whatever the context:</b> %2 (%3 states). ")
                .arg(c.bytesPerTokenExact == double(c.bytesPerToken) ? groupDigitsQ(c.bytesPerToken)
                                                                    : QString::number(c.bytesPerTokenExact, 'f', 4),
                     binaryBytesQ(c.fixedStateBytes.value_or(0)), qs(std::string(stateDtypeName(c.stateDtype))).toUpper());
    if (c.windowBytes)
        text += tr("<b>Sliding windows:</b> %1 per sequence once full (%2 B per token until then), not in the "
                   "per-token figure. ")
                    .arg(binaryBytesQ(c.windowBytes), QString::number(c.windowBytesPerToken, 'f', 0));
    text += tr("<b>At %1 tokens:</b> %2 bytes = <b>%3</b> (GiB = 2³⁰ bytes).")
                .arg(groupDigitsQ(c.contextTokens), groupDigitsQ(c.totalBytes), binaryBytesQ(c.totalBytes));
    return text;
}

QString CacheView::kindLabel(AttentionKind k)
{
    switch (k) {
    case AttentionKind::Mla:
        return tr("MLA latent");
    case AttentionKind::Full:
        return tr("K and V");
    case AttentionKind::Sliding:
        return tr("K and V, sliding window");
    case AttentionKind::IndexKeys:
        return tr("index keys");
    case AttentionKind::Kda:
        return tr("KDA (linear)");
    case AttentionKind::GatedDeltaNet:
        return tr("Gated DeltaNet (linear)");
    case AttentionKind::Mamba2:
        return tr("Mamba-2");
    case AttentionKind::Linear:
        return tr("linear attention");
    case AttentionKind::CompressedSparse:
        return tr("compressed ÷4 + indexer");
    case AttentionKind::HeavilyCompressed:
        return tr("compressed ÷128");
    case AttentionKind::Window:
        return tr("window only");
    }
    return {};
}

// A stacked bar per layer kind: its rows at the chosen context over its fixed state per sequence.
void CacheView::drawParts(const CacheBudget &c)
{
    const double gib = 1024.0 * 1024.0 * 1024.0;
    QStringList labels;
    BarSeries grows{tr("grows with the context (at %1 tokens)").arg(groupDigitsQ(c.contextTokens)), {},
                    ChartWidget::seriesColor(0)};
    BarSeries fixed{tr("fixed per sequence"), {}, ChartWidget::seriesColor(1)};
    for (const auto &g : c.attention) {
        labels << tr("%1 (%2)").arg(kindLabel(g.kind)).arg(g.layers);
        const std::uint64_t tokens = g.window ? std::min(*g.window, c.contextTokens) : c.contextTokens;
        grows.values << double(g.bytesPerTokenPerLayer) * double(tokens / std::max<std::uint64_t>(g.compression, 1)) *
                            double(g.layers) / gib;
        fixed.values << double(g.stateBytesPerLayer.value_or(0)) * double(g.layers) / gib;
    }
    m_parts->showBars(labels, {grows, fixed}, tr("GiB per sequence"), false, true);
}

QString CacheView::mlaBreakdown(const CacheBudget &c) const
{
    QString text =
        tr("<b>Per token:</b> MLA latent %1 layers × %2 B = <b>%3 B</b>; index keys %4 layers × %5 B = "
           "<b>%6 B</b>; total <b>%7 B</b>.<br>")
            .arg(c.kvLayers)
            .arg(c.kvBytesPerLayer)
            .arg(groupDigitsQ(c.kvBytesPerToken))
            .arg(c.indexLayers)
            .arg(c.indexEntryBytes)
            .arg(groupDigitsQ(c.indexBytesPerToken), groupDigitsQ(c.bytesPerToken));
    if (c.windowBytes)
        text += tr("<b>Sliding windows:</b> %1 per sequence once full (%2 B per token until then), not in the "
                   "per-token figure. ")
                    .arg(binaryBytesQ(c.windowBytes), QString::number(c.windowBytesPerToken, 'f', 0));
    text += tr("<b>At %1 tokens:</b> %2 bytes = <b>%3</b> (GiB = 2³⁰ bytes).")
                .arg(groupDigitsQ(c.contextTokens), groupDigitsQ(c.totalBytes), binaryBytesQ(c.totalBytes));
    if (c.indexBytesPerTokenEveryLayer > 0)
        text +=
            tr(" Had every layer its own indexer, the index keys would cost %1 B/token: %2 in all at this "
               "context.")
                .arg(groupDigitsQ(c.indexBytesPerTokenEveryLayer),
                     binaryBytesQ((c.kvBytesPerToken + c.indexBytesPerTokenEveryLayer) * c.contextTokens));
    if (c.indexTopk)
        text += tr("<br><b>Sparse read:</b> each query reads %1 of %2 cached entries (%3)%4.")
                    .arg(groupDigitsQ(c.sparseReadTokens), groupDigitsQ(c.contextTokens),
                         percentQ(double(c.sparseReadTokens) / double(c.contextTokens), 2),
                         c.contextTokens <= std::uint64_t(*c.indexTopk)
                             ? tr(": at or below index_topk = %1 the selection is everything, exactly dense "
                                  "attention")
                                   .arg(*c.indexTopk)
                             : QString());
    return text;
}

void CacheView::drawCurves(const CacheBudget &c)
{
    const double gib = 1024.0 * 1024.0 * 1024.0;
    // The curves over the whole context range, on log axes.
    QList<LineSeries> series;
    const bool state = c.fixedStateBytes.has_value();
    LineSeries total{state       ? tr("all layers, per-sequence state included")
                     : c.mla() ? tr("KV + index (this map)")
                               : tr("K and V, all layers"),
                     {},
                     {},
                     ChartWidget::seriesColor(0)};
    LineSeries kv{state       ? tr("the per-token part only")
                  : c.mla() ? tr("MLA latent only")
                            : tr("K and V if no layer slid"),
                  {},
                  {},
                  ChartWidget::seriesColor(2),
                  true};
    LineSeries every{tr("KV + index, every layer indexed"), {}, {}, ChartWidget::seriesColor(3), true};
    const double maxCtx = double(m_context->maximum());
    for (double x = std::min(1024.0, maxCtx); x <= maxCtx * 1.0001; x *= std::exp2(0.125)) {
        total.x << x;
        total.y << double(c.bytesAt(std::uint64_t(x))) / gib; // sliding layers plateau at their window
        kv.x << x;
        kv.y << (state     ? c.bytesPerTokenExact * x
                 : c.mla() ? double(c.kvBytesPerToken) * x
                           : (c.bytesPerTokenExact + c.windowBytesPerToken) * x) /
                    gib;
        every.x << x;
        every.y << double(c.kvBytesPerToken + c.indexBytesPerTokenEveryLayer) * x / gib;
    }
    // The curves run close together on log axes: each names its own bytes per token, so the gap is read,
    // not guessed.
    auto perToken = [](double bytes) { return tr(": %1 B/token").arg(groupDigitsQ(std::uint64_t(std::llround(bytes)))); };
    if (c.mla())
        total.name += perToken(double(c.bytesPerToken)); // a stateful total has no one figure
    else if (c.windowBytes && !state)
        total.name += perToken(c.bytesPerTokenExact) + tr(" at long context");
    const double ifNoneSlid = c.bytesPerTokenExact + c.windowBytesPerToken;
    kv.name += perToken(state ? c.bytesPerTokenExact : c.mla() ? double(c.kvBytesPerToken) : ifNoneSlid);
    every.name += perToken(double(c.kvBytesPerToken + c.indexBytesPerTokenEveryLayer));
    series << total;
    if (state || c.mla() || c.bytesAt(std::uint64_t(maxCtx)) != std::uint64_t(ifNoneSlid * maxCtx))
        series << kv;
    if (c.indexBytesPerTokenEveryLayer > 0) series << every;
    // Log-log: growth in proportion to the context is a straight line (a linear GiB axis made it look
    // exponential); sliding windows and fixed states bend it.
    m_chart->showLines(series, tr("context (tokens, log scale)"), tr("GiB per sequence (log scale)"), true, true);
    m_chart->addMarkers({double(c.contextTokens)}, tr("selected context"), ChartWidget::seriesColor(1));
    m_chart->addPointLabel(double(c.contextTokens), double(c.bytesAt(c.contextTokens)) / gib,
                           tr("%1 tokens: %2").arg(groupDigitsQ(c.contextTokens), binaryBytesQ(c.bytesAt(c.contextTokens))),
                           ChartWidget::seriesColor(0));
    m_chart->setHoverFormat([](double x, double y) {
        return tr("%1 tokens → %2").arg(groupDigitsQ(std::uint64_t(std::llround(x))),
                                        binaryBytesQ(std::uint64_t(std::llround(y * 1024.0 * 1024.0 * 1024.0))));
    });
}

} // namespace atlas
