#include "reflow_grid.h"

#include <QGridLayout>
#include <QResizeEvent>

#include <algorithm>

namespace atlas {

namespace {

// Hidden on purpose (not merely not shown yet, as every widget is before its window is).
bool hiddenCell(const QWidget *a, const QWidget *b)
{
    auto hidden = [](const QWidget *w) { return w->isHidden() && w->testAttribute(Qt::WA_WState_ExplicitShowHide); };
    return hidden(a) && (!b || hidden(b));
}

} // namespace

ReflowGrid::ReflowGrid(int maxColumns, QWidget *parent)
    : QWidget(parent), m_grid(new QGridLayout(this)), m_maxColumns(std::max(1, maxColumns))
{
    m_grid->setContentsMargins(0, 0, 0, 0);
    m_grid->setSpacing(10);
    setSizePolicy(QSizePolicy::Preferred, QSizePolicy::Fixed);
}

void ReflowGrid::addCell(QWidget *cell)
{
    cell->setParent(this);
    m_cells.emplace_back(cell, nullptr);
    place(m_columns ? m_columns : m_maxColumns);
}

void ReflowGrid::addField(QWidget *label, QWidget *field)
{
    label->setParent(this);
    field->setParent(this);
    field->setProperty("atlasFieldLabel", QVariant::fromValue<QObject *>(label)); // its label, for exports
    m_cells.emplace_back(label, field);
    place(m_columns ? m_columns : m_maxColumns);
}

void ReflowGrid::clear()
{
    for (auto &[a, b] : m_cells) {
        delete a;
        delete b;
    }
    m_cells.clear();
}

// The widest cell: a card, or the widest label beside the widest field.
int ReflowGrid::columnWidth() const
{
    int cell = 0, label = 0, field = 0;
    for (const auto &[a, b] : m_cells) {
        if (hiddenCell(a, b)) continue;
        if (b) {
            label = std::max(label, a->minimumSizeHint().width());
            field = std::max(field, std::max(b->minimumSizeHint().width(), b->minimumWidth()));
        } else
            cell = std::max({cell, a->minimumSizeHint().width(), a->minimumWidth()});
    }
    return std::max(cell, label ? label + m_grid->horizontalSpacing() + field : 0);
}

int ReflowGrid::columnsFor(int width) const
{
    const int column = std::max(1, columnWidth());
    const int spacing = m_grid->horizontalSpacing() * 2; // between columns, a little more air
    const int fit = std::clamp((width + spacing) / (column + spacing), 1, m_maxColumns);
    // As few rows as fit, the cells spread evenly over them (eight cards: 4 + 4, not 5 + 3).
    const int cells = std::max(1, visibleCells());
    const int rows = (cells + fit - 1) / fit;
    return std::clamp((cells + rows - 1) / rows, 1, fit);
}

int ReflowGrid::visibleCells() const
{
    return int(std::count_if(m_cells.begin(), m_cells.end(),
                             [](const auto &c) { return !hiddenCell(c.first, c.second); }));
}

// The height of the rows this width puts the cells in: a card that wraps its text is asked its height at
// the column's width.
int ReflowGrid::heightForWidth(int width) const
{
    const int columns = columnsFor(width);
    const int spacing = m_grid->horizontalSpacing();
    const int columnWidth = std::max(1, (width - (columns - 1) * spacing) / columns);
    int height = 0, rowHeight = 0, i = 0, rows = 0;
    for (const auto &[a, b] : m_cells) {
        if (hiddenCell(a, b)) continue;
        int h = a->hasHeightForWidth() ? a->heightForWidth(columnWidth) : a->sizeHint().height();
        if (b) h = std::max(h, b->sizeHint().height());
        rowHeight = std::max(rowHeight, h);
        if (++i % columns == 0) {
            height += rowHeight;
            rowHeight = 0;
            ++rows;
        }
    }
    if (rowHeight) {
        height += rowHeight;
        ++rows;
    }
    return height + std::max(0, rows - 1) * m_grid->verticalSpacing();
}

// One column's width, and the height of the rows at the present width (the least rows, while hidden: a
// page of the window that is not shown has no width of its own yet and must not hold the window tall).
QSize ReflowGrid::minimumSizeHint() const
{
    return {columnWidth(), heightForWidth(isVisible() && width() > 1 ? width() : QWIDGETSIZE_MAX / 4)};
}

QSize ReflowGrid::sizeHint() const
{
    return {m_grid->sizeHint().width(), minimumSizeHint().height()};
}

void ReflowGrid::resizeEvent(QResizeEvent *event)
{
    QWidget::resizeEvent(event);
    const int columns = columnsFor(event->size().width());
    if (columns != m_columns)
        place(columns);
    else if (heightForWidth(event->size().width()) != event->size().height())
        updateGeometry(); // cards that wrap their text are taller or shorter at this width
}

void ReflowGrid::place(int columns)
{
    m_columns = columns;
    for (auto &[a, b] : m_cells) {
        m_grid->removeWidget(a);
        if (b) m_grid->removeWidget(b);
    }
    const bool fields = std::any_of(m_cells.begin(), m_cells.end(), [](const auto &c) { return c.second; });
    const int span = fields ? 2 : 1;
    for (int c = 0; c < m_grid->columnCount(); ++c)
        m_grid->setColumnStretch(c, 0);
    for (int c = 0; c < columns; ++c)
        m_grid->setColumnStretch(c * span + span - 1, 1);
    int i = 0;
    for (auto &[a, b] : m_cells) {
        if (hiddenCell(a, b)) continue; // a hidden cell leaves no hole
        const int row = i / columns, column = (i % columns) * span;
        m_grid->addWidget(a, row, column);
        if (b) m_grid->addWidget(b, row, column + 1);
        ++i;
    }
    updateGeometry();
}

} // namespace atlas
