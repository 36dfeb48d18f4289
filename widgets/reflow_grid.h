#pragma once

#include <QWidget>

#include <utility>
#include <vector>

class QGridLayout;

namespace atlas {

// A grid that puts as many columns side by side as its width holds (up to a maximum) and wraps the
// rest onto further rows: the cards of the Overview, the controls of the Plan. Its minimum width is
// one column's, so a narrow window reflows it instead of being held wide.
// A cell is one widget (a card) or a label with its field.
class ReflowGrid : public QWidget
{
    Q_OBJECT
public:
    explicit ReflowGrid(int maxColumns, QWidget *parent = nullptr);
    void addCell(QWidget *cell);
    void addField(QWidget *label, QWidget *field);
    // Deletes every cell.
    void clear();
    int columns() const { return m_columns; }
    QSize minimumSizeHint() const override;
    QSize sizeHint() const override;
    // The height its rows take at this width (the layout asks minimumSizeHint, which uses the present width).
    int heightForWidth(int width) const override;

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
    int columnWidth() const;
    int columnsFor(int width) const;
    int visibleCells() const;
    void place(int columns);

    QGridLayout *m_grid;
    std::vector<std::pair<QWidget *, QWidget *>> m_cells; // (cell or label, field or nullptr)
    int m_maxColumns;
    int m_columns = 0;
};

} // namespace atlas
