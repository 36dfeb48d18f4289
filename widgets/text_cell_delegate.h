#pragma once

#include <QCache>
#include <QFont>
#include <QStaticText>
#include <QStyledItemDelegate>

#include <vector>

namespace atlas {

// An item delegate for cells of plain text (no icon, no check box), which lays each text out once.
// QStyledItemDelegate draws a cell through the style's CE_ItemViewItem, which shapes the cell's text with
// HarfBuzz four times at every paint: once for each of the check, decoration and text rectangles
// (QCommonStylePrivate::viewItemLayout asks viewItemSize), and once more to elide and draw it
// (viewItemDrawText). Painting the Layers tree was most of the filter's and the clear's longest stall.
// Here the style still draws the cell's background, selection and focus (with no text, so it shapes
// nothing), and the text is drawn from a QStaticText laid out at its first paint: the same font, colour,
// elision, margins and alignment as QCommonStylePrivate::viewItemDrawText, without the shaping (the figures
// of every view come out the same to the pixel). A cell with an icon or a check box, or whose words wrap onto
// a second line, and every cell of a figure written as SVG or PDF, is drawn by QStyledItemDelegate as before.
class TextCellDelegate : public QStyledItemDelegate
{
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    void paint(QPainter *painter, const QStyleOptionViewItem &option, const QModelIndex &index) const override;

    // Laid-out texts kept (the most recently drawn; a screen of the Layers tree shows about 250 cells).
    static constexpr int kKept = 4096;
    int keptCount() const { return m_laid.count(); }

private:
    struct Laid
    {
        QStaticText text;
        qreal width = 0;
    };
    // `text` laid out in `font`, elided to `width` pixels with `mode` when wider (width < 0: never elided).
    const Laid &laidOut(const QString &text, const QFont &font, Qt::TextElideMode mode, int width) const;
    int fontId(const QFont &font) const;

    mutable QCache<QString, Laid> m_laid{kKept};
    mutable std::vector<QFont> m_fonts; // the fonts seen, by id (a tree shows two: normal and demibold)
};

} // namespace atlas
