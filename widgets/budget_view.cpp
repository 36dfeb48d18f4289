#include "budget_view.h"

#include "chart_widget.h"
#include "report.h"

#include <QHeaderView>

#include <array>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace atlas {

BudgetView::BudgetView(QWidget *parent)
    : AtlasView(parent), m_shares(new ChartWidget(this)), m_chart(new ChartWidget(this)),
      m_table(makeTable({tr("Category"), tr("Parameters"), tr("Share of total"), tr("Active per token"),
                         tr("Share of active"), tr("Stored"), tr("Share of bytes"), tr("Bits/weight")},
                        this)),
      m_caption(makeCaption(QString(), this))
{
    m_shares->setTitle(tr("Where the parameters and the bytes go (shares of each total, linear)"));
    m_chart->setTitle(tr("Parameters by category (log scale: the small categories readable)"));
    auto *v = new QVBoxLayout(this);
    v->setContentsMargins(20, 16, 20, 16);
    v->addWidget(makeHeading(tr("Parameter budget"), this));
    v->addWidget(m_caption);
    auto *split = new QSplitter(Qt::Vertical, this);
    split->addWidget(m_shares);
    split->addWidget(m_chart);
    split->addWidget(m_table);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    split->setStretchFactor(2, 2);
    v->addWidget(split, 1);
}

void BudgetView::clearAll()
{
    m_shares->clear();
    m_chart->clear();
    m_table->setRowCount(0);
    m_caption->clear();
}

void BudgetView::setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data)
{
    const ParameterBudget &b = data->analysis.budget;
    QStringList labels;
    BarSeries total{tr("Total"), {}, ChartWidget::seriesColor(0)};
    BarSeries active{tr("Active per token"), {}, ChartWidget::seriesColor(1)};
    m_table->setRowCount(0);
    const double activeSum = b.activatedPerToken ? double(*b.activatedPerToken) : 0.0;
    // Stored bytes by category (weights and their scales), as the quantization layout sums them.
    std::array<std::uint64_t, kCategoryCount> stored{};
    std::array<double, kCategoryCount> bits{};
    for (const auto &row : data->analysis.quantLayout) {
        std::uint64_t bytes = row.scales.bytes;
        for (const auto &[d, t] : row.dtypes)
            bytes += t.bytes;
        stored[std::size_t(row.category)] = bytes;
        bits[std::size_t(row.category)] = row.bitsPerWeight();
    }
    double storedSum = 0;
    for (auto s : stored)
        storedSum += double(s);
    QList<BarSeries> shares;
    for (std::size_t i = 0; i < kCategoryCount; ++i) {
        if (b.byCategory[i] == 0) continue;
        const QString name = qs(std::string(categoryName(static_cast<Category>(i))));
        labels << name;
        total.values << double(b.byCategory[i]);
        active.values << double(b.activeByCategory[i]);
        const int r = m_table->rowCount();
        m_table->insertRow(r);
        auto cell = [&](int column, const QString &text) {
            auto *item = new QTableWidgetItem(text);
            if (column > 0) item->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
            m_table->setItem(r, column, item);
        };
        cell(0, name);
        cell(1, groupDigitsQ(b.byCategory[i]));
        cell(2, percentQ(double(b.byCategory[i]) / double(b.total ? b.total : 1)));
        cell(3, b.activatedPerToken ? groupDigitsQ(b.activeByCategory[i]) : tr("unknown"));
        cell(4, activeSum > 0 ? percentQ(double(b.activeByCategory[i]) / activeSum) : QStringLiteral("—"));
        cell(5, binaryBytesQ(stored[i]));
        cell(6, storedSum > 0 ? percentQ(double(stored[i]) / storedSum) : QStringLiteral("—"));
        cell(7, bits[i] > 0 ? QString::number(bits[i], 'f', 2) : QStringLiteral("—"));
        shares << BarSeries{name,
                            {100.0 * double(b.byCategory[i]) / double(b.total ? b.total : 1),
                             activeSum > 0 ? 100.0 * double(b.activeByCategory[i]) / activeSum : 0.0,
                             storedSum > 0 ? 100.0 * double(stored[i]) / storedSum : 0.0},
                            ChartWidget::seriesColor(int(shares.size()))};
    }
    const QStringList shareLabels{tr("parameters (%1)").arg(qs(paramCount(b.total))),
                                  b.activatedPerToken ? tr("active per token (%1)").arg(qs(paramCount(*b.activatedPerToken)))
                                                      : tr("active per token (unknown)"),
                                  tr("stored bytes (%1)").arg(binaryBytesQ(std::uint64_t(storedSum)))};
    m_shares->showBars(shareLabels, shares, tr("share of the total (%)"), false, true);
    QList<BarSeries> series{total};
    if (b.activatedPerToken) series << active;
    m_chart->showBars(labels, series, tr("parameters"), true);
    // A GGUF keeps its scales inside each block (Q4_K's d, dmin and scales): no tensors of their own.
    const bool gguf = data->checkpoint.format == CheckpointFormat::Gguf;
    m_caption->setText(
        (gguf ? tr("%1 parameters in all, %2 active per token (%3). The quantisation scales are inside the GGUF "
                   "blocks (%4 bits per parameter stored, scales included).")
                    .arg(groupDigitsQ(b.total),
                         b.activatedPerToken ? groupDigitsQ(*b.activatedPerToken) : tr("unknown"),
                         qs(b.activationNote), QString::number(bitsPerWeight(data->analysis.quantLayout), 'f', 2))
              : tr("%1 parameters in all, %2 active per token (%3). Quantization scales are not parameters: "
                   "%4 tensors, %5 elements, %6.")
                    .arg(groupDigitsQ(b.total),
                         b.activatedPerToken ? groupDigitsQ(*b.activatedPerToken) : tr("unknown"),
                         qs(b.activationNote), groupDigitsQ(b.quantScales.tensors),
                         groupDigitsQ(b.quantScales.elements), binaryBytesQ(b.quantScales.bytes))) +
        (b.byCategory[std::size_t(Category::HostTables)]
             ? tr(" Host tables: %1 parameters (%2) stay in host memory, on no GPU; a token reads %3 of them.")
                   .arg(groupDigitsQ(b.byCategory[std::size_t(Category::HostTables)]),
                        binaryBytesQ(data->analysis.hostTableBytes),
                        groupDigitsQ(b.activeByCategory[std::size_t(Category::HostTables)]))
             : QString()));
}

} // namespace atlas
