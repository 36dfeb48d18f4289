#include "compare_view.h"

#include "colours.h"

#include "chart_widget.h"
#include "wrap_label.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace atlas {

namespace {

QTableWidgetItem *cell(const QString &text, bool right = false)
{
    auto *item = new QTableWidgetItem(text);
    if (right) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    return item;
}

QString where(const SourceInfo &s)
{
    QString w = qs(s.location);
    if (!s.revision.empty()) w += QStringLiteral(" @") + qs(s.revision);
    if (!s.commit.empty()) w += QStringLiteral(" (") + qs(s.commit.substr(0, 7)) + QLatin1Char(')');
    return w;
}

QString jsonText(const nlohmann::json &v)
{
    QString s = qs(v.dump());
    return s.size() > 80 ? s.left(77) + QStringLiteral("…") : s;
}

} // namespace

CompareView::CompareView(QWidget *parent)
    : AtlasView(parent), m_sources(new WrapLabel(this)), m_summary(makeCaption(QString(), this)), m_lead(new WrapLabel(this)),
      m_empty(new WrapLabel(this)), m_results(new QWidget(this)),
      m_compare(new QPushButton(tr("Compare With…"), this)), m_filter(new QLineEdit(this)),
      m_changes(makeTable({tr("Change"), tr("What"), tr("A"), tr("B"), tr("Tensors")}, this)),
      m_chart(new ChartWidget(this)),
      m_biases(makeTable({tr("Layer"), tr("A dtype"), tr("B dtype"), tr("BF16 levels A"), tr("BF16 levels B"),
                          tr("Bytes")},
                         this))
{
    m_sources->setWordWrap(true);
    m_sources->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_summary->setTextFormat(Qt::RichText);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_lead->setWordWrap(true);
    m_lead->setTextFormat(Qt::RichText);
    m_lead->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_empty->setWordWrap(true);
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setTextFormat(Qt::RichText);
    m_filter->setPlaceholderText(tr("Filter the changes (a tensor name, a dtype, a config key)"));
    m_filter->setClearButtonEnabled(true);
    // One line per change: the pattern takes the room, long values are elided (full text on hover).
    m_changes->setWordWrap(false);
    m_changes->setTextElideMode(Qt::ElideMiddle);
    auto *header = m_changes->horizontalHeader();
    header->setSectionResizeMode(QHeaderView::Interactive);
    header->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    header->setSectionResizeMode(1, QHeaderView::Stretch);
    header->setSectionResizeMode(4, QHeaderView::ResizeToContents);
    m_changes->setColumnWidth(2, 230);
    m_changes->setColumnWidth(3, 230);
    m_chart->setTitle(tr("Logical parameters by category: A and B"));

    auto *v = new QVBoxLayout(this);
    v->setContentsMargins(20, 16, 20, 16);
    auto *top = new QHBoxLayout();
    top->addWidget(makeHeading(tr("Compare two checkpoints"), this), 1);
    top->addWidget(m_compare);
    v->addLayout(top);
    v->addWidget(m_sources);
    v->addWidget(m_lead);
    v->addWidget(m_summary);
    v->addWidget(m_empty, 1);
    auto *results = new QVBoxLayout(m_results);
    results->setContentsMargins(0, 0, 0, 0);
    results->addWidget(m_filter);
    auto *split = new QSplitter(Qt::Vertical, m_results);
    split->addWidget(m_changes);
    auto *lower = new QSplitter(Qt::Horizontal, split);
    lower->addWidget(m_chart);
    lower->addWidget(m_biases);
    split->addWidget(lower);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    results->addWidget(split, 1);
    v->addWidget(m_results, 1);

    connect(m_compare, &QPushButton::clicked, this, &CompareView::compareRequested);
    connect(m_filter, &QLineEdit::textChanged, this, &CompareView::applyFilter);
    clearAll();
}

QString CompareView::provenanceNote() const
{
    return m_diff ? tr("compared with %1").arg(where(m_diff->b)) : QString();
}

QString CompareView::summaryText() const
{
    return m_summary->text();
}

QString CompareView::leadText() const
{
    return m_lead->text();
}

void CompareView::setFilterText(const QString &text)
{
    m_filter->setText(text);
    applyFilter();
}

void CompareView::clearAll()
{
    m_a.reset();
    m_biasesA.reset();
    m_b.reset();
    m_biasesB.reset();
    m_diff.reset();
    m_changes->setRowCount(0);
    m_biases->setRowCount(0);
    m_chart->clear();
    m_compare->setEnabled(false);
    m_sources->clear();
    m_summary->clear();
    m_lead->clear();
    m_results->hide();
    m_empty->show();
    m_empty->setText(tr("<p style='font-size:14pt'>Nothing to compare yet</p><p>Open a checkpoint, then "
                        "File › Compare With… a second one: a requantized release, another revision, a "
                        "fine-tune.</p>"));
}

void CompareView::setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data)
{
    // A new A: any comparison was against the old one.
    clearAll();
    m_a = std::move(data);
    m_compare->setEnabled(true);
    m_sources->setText(tr("<b>A</b> %1").arg(where(m_a->checkpoint.source).toHtmlEscaped()));
    m_empty->setText(tr("<p style='font-size:14pt'>Nothing to compare yet</p><p>Press <b>Compare With…</b> "
                        "(File menu) to choose B: the changes are listed here, the biggest first, key by key "
                        "and tensor by tensor.</p>"));
}

void CompareView::setBiases(std::shared_ptr<const BiasAudit> audit)
{
    m_biasesA = std::move(audit);
    showBiases();
}

void CompareView::showComparisonStarted(const QString &label)
{
    m_summary->setText(tr("Reading B (%1)…").arg(label.toHtmlEscaped()));
}

void CompareView::showComparisonCancelled(const QString &label)
{
    m_summary->setText(tr("The comparison with %1 was cancelled; nothing of B is shown. Compare With… starts it "
                          "again.")
                           .arg(label.toHtmlEscaped()));
}

void CompareView::showComparisonFailure(const QString &message)
{
    m_summary->setText(tr("<span style='color:%1'>Could not compare: %2</span>").arg(toneHex(Tone::Bad), visibleText(message).toHtmlEscaped()));
}

void CompareView::setComparison(std::shared_ptr<const LoadedCheckpoint> b, std::shared_ptr<const CheckpointDiff> diff,
                                const QString &)
{
    m_b = std::move(b);
    m_biasesB.reset();
    m_diff = std::move(diff);
    showDiff();
}

void CompareView::setComparisonBiases(std::shared_ptr<const BiasAudit> audit)
{
    m_biasesB = std::move(audit);
    showBiases();
}

void CompareView::showDiff()
{
    if (!m_diff) return;
    const CheckpointDiff &d = *m_diff;
    m_sources->setText(tr("<b>A</b> %1<br><b>B</b> %2").arg(where(d.a).toHtmlEscaped(), where(d.b).toHtmlEscaped()));
    m_summary->setText(qs(diffSummary(d)).toHtmlEscaped() + QLatin1Char('.'));
    m_empty->hide();
    m_results->show();
    {
        const auto lead = diffLeadSentences(d);
        QString html;
        for (std::size_t i = 0; i < lead.size(); ++i)
            html += i == 0 ? QStringLiteral("<p style='font-size:13pt; font-weight:600; margin:4px 0'>%1</p>")
                                 .arg(qs(lead[i]).toHtmlEscaped())
                           : QStringLiteral("<div>%1</div>").arg(qs(lead[i]).toHtmlEscaped());
        m_lead->setText(html);
    }

    m_changes->setSortingEnabled(false);
    m_changes->setRowCount(0);
    auto addRow = [&](const QString &change, const QString &what, const QString &a, const QString &b, const QString &n) {
        const int r = m_changes->rowCount();
        m_changes->insertRow(r);
        m_changes->setItem(r, 0, cell(change));
        m_changes->setItem(r, 1, cell(what));
        m_changes->setItem(r, 2, cell(a));
        m_changes->setItem(r, 3, cell(b));
        m_changes->setItem(r, 4, cell(n, true));
        m_changes->item(r, 1)->setToolTip(what);
        m_changes->item(r, 2)->setToolTip(a);
        m_changes->item(r, 3)->setToolTip(b);
    };
    // config.json key by key, nested keys as paths (never a truncated dump of a whole object).
    for (const auto &c : configChangesByPath(d))
        addRow(tr("config %1").arg(qs(c.kind)), qs(c.path), c.a.is_null() ? QString() : jsonText(c.a),
               c.b.is_null() ? QString() : jsonText(c.b), QString());
    for (const auto &g : d.groups) {
        const QString change = g.change == TensorChange::Added     ? tr("added")
                               : g.change == TensorChange::Removed ? tr("removed")
                               : g.change == TensorChange::Dtype   ? tr("dtype")
                                                                   : tr("shape");
        QString b = qs(g.b);
        if (precisionLost(g.a, g.b))
            b += tr(" (precision lost)");
        addRow(change, qs(g.pattern), qs(g.a), b, groupDigitsQ(g.tensors));
    }
    if (m_changes->rowCount() == 0) addRow(tr("none"), tr("the headers are identical"), QString(), QString(), QString());
    applyFilter();

    // The budget side by side, categories that either side has: the stored bytes when the packing
    // changed (equal parameters say nothing then), the parameters otherwise.
    const bool bytes = d.aStoredBytes() != d.bStoredBytes();
    QStringList labels;
    BarSeries a{tr("A"), {}, ChartWidget::seriesColor(0)}, b{tr("B"), {}, ChartWidget::seriesColor(1)};
    for (std::size_t c = 0; c < kCategoryCount; ++c) {
        if (!d.aByCategory[c] && !d.bByCategory[c]) continue;
        labels << qs(std::string(categoryName(static_cast<Category>(c))));
        a.values << (bytes ? double(d.aBytes[c]) / double(1ull << 30) : double(d.aByCategory[c]));
        b.values << (bytes ? double(d.bBytes[c]) / double(1ull << 30) : double(d.bByCategory[c]));
    }
    m_chart->setTitle(bytes ? (d.parametersAgree() ? tr("Stored GiB by category (the parameters agree)")
                                                   : tr("Stored GiB by category (the parameters differ too)"))
                      : d.parametersAgree() ? tr("Logical parameters by category: A and B agree")
                                            : tr("Logical parameters by category: A and B DIFFER"));
    m_chart->showBars(labels, {a, b}, bytes ? tr("GiB") : tr("parameters"), true);
    showBiases();
}

void CompareView::showBiases()
{
    m_biases->setRowCount(0);
    if (!m_diff || !m_biasesA || !m_biasesB) return;
    const auto rows = compareBiases(*m_biasesA, *m_biasesB);
    // The sentence gains the biases once both sides are read.
    CheckpointDiff withBiases = *m_diff;
    withBiases.biasesCompared = true;
    withBiases.biases = rows;
    m_summary->setText(qs(diffSummary(withBiases)).toHtmlEscaped() + QLatin1Char('.'));
    for (const auto &r : rows) {
        const int i = m_biases->rowCount();
        m_biases->insertRow(i);
        m_biases->setItem(i, 0, cell(QString::number(r.layer), true));
        m_biases->setItem(i, 1, cell(r.a.present ? qs(r.a.dtype) : tr("—")));
        m_biases->setItem(i, 2, cell(r.b.present ? qs(r.b.dtype) : tr("—")));
        m_biases->setItem(i, 3, cell(r.a.present ? QString::number(r.a.bf16Distinct) : tr("—"), true));
        m_biases->setItem(i, 4, cell(r.b.present ? QString::number(r.b.bf16Distinct) : tr("—"), true));
        const bool lost = precisionLost(r.a.dtype, r.b.dtype);
        m_biases->setItem(i, 5,
                          cell(!r.a.present    ? tr("only in B")
                               : !r.b.present  ? tr("only in A")
                               : r.sameBytes ? tr("same bytes")
                               : lost        ? tr("different (F32 → %1: precision lost)").arg(qs(r.b.dtype))
                                             : tr("different")));
        m_biases->item(i, 0)->setToolTip(qs(r.tensor));
        if (!r.sameBytes) m_biases->item(i, 5)->setForeground(toneColor(Tone::Bad));
    }
}

void CompareView::applyFilter()
{
    const QString f = m_filter->text().trimmed();
    for (int r = 0; r < m_changes->rowCount(); ++r) {
        bool match = f.isEmpty();
        for (int c = 0; c < m_changes->columnCount() && !match; ++c)
            match = m_changes->item(r, c) && m_changes->item(r, c)->text().contains(f, Qt::CaseInsensitive);
        m_changes->setRowHidden(r, !match);
    }
}

} // namespace atlas
