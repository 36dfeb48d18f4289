#include "text_cell_delegate.h"

#include <QApplication>
#include <QFontMetrics>
#include <QPaintEngine>
#include <QPainter>
#include <QStyle>

namespace atlas {

int TextCellDelegate::fontId(const QFont &font) const
{
    for (std::size_t i = 0; i < m_fonts.size(); ++i)
        if (m_fonts[i] == font) return static_cast<int>(i);
    m_fonts.push_back(font);
    return static_cast<int>(m_fonts.size() - 1);
}

const TextCellDelegate::Laid &TextCellDelegate::laidOut(const QString &text, const QFont &font, Qt::TextElideMode mode,
                                                         int width) const
{
    // The key: the text, then its font's id, then (elided) the mode and the width. No text here holds
    // U+FFFF, a noncharacter, so it cannot run into the suffix.
    QString key = text;
    key += QChar(0xFFFF);
    key += QChar(char16_t(fontId(font) + 1));
    if (width >= 0) {
        key += QChar(char16_t(mode + 1));
        key += QString::number(width);
    }
    if (const Laid *kept = m_laid.object(key)) return *kept;
    auto *laid = new Laid;
    laid->text.setTextFormat(Qt::PlainText);
    laid->text.setText(width >= 0 ? QFontMetrics(font).elidedText(text, mode, width) : text);
    laid->text.prepare(QTransform(), font);
    laid->width = laid->text.size().width();
    m_laid.insert(key, laid); // the newest entry: never the one trimmed
    return *m_laid.object(key);
}

void TextCellDelegate::paint(QPainter *painter, const QStyleOptionViewItem &option, const QModelIndex &index) const
{
    QStyleOptionViewItem opt = option;
    initStyleOption(&opt, index);
    const auto others = QStyleOptionViewItem::HasDecoration | QStyleOptionViewItem::HasCheckIndicator;
    // A figure written as SVG or PDF gets the style's own drawing: its text elements and groups as before (each
    // state change of the cached path would open another group in the file), and no time is at stake there.
    const bool raster = painter->paintEngine() && painter->paintEngine()->type() == QPaintEngine::Raster;
    if ((opt.features & others) || opt.text.contains(QChar::LineSeparator) || !raster) {
        QStyledItemDelegate::paint(painter, option, index);
        return;
    }
    const QWidget *widget = opt.widget;
    const QStyle *style = widget ? widget->style() : QApplication::style();
    // The text as QCommonStylePrivate::viewItemDrawText places it: inside the cell less the focus frame's
    // margin and a pixel on each side, elided to that width, aligned in it, centred vertically on its
    // line's height; in the highlighted-text colour when selected.
    const int margin = style->pixelMetric(QStyle::PM_FocusFrameHMargin, nullptr, widget) + 1;
    const QRect box = opt.rect.adjusted(margin, 0, -margin, 0);
    const Laid *laid = nullptr;
    if (!opt.text.isEmpty() && box.width() > 0) {
        laid = &laidOut(opt.text, opt.font, opt.textElideMode, -1);
        if (laid->width > box.width()) {
            // A table's cells wrap words: a text that needs more than one line is left to the style.
            if (opt.features & QStyleOptionViewItem::WrapText) {
                QStyledItemDelegate::paint(painter, option, index);
                return;
            }
            if (opt.textElideMode != Qt::ElideNone) laid = &laidOut(opt.text, opt.font, opt.textElideMode, box.width());
        }
    }
    // The background and the selection as the style draws them; with no text, its layout of the cell shapes
    // nothing. The focus frame comes after the text, as in QCommonStyle's CE_ItemViewItem (Fusion's frame is
    // drawn over the text).
    const bool focus = opt.state & QStyle::State_HasFocus;
    QStyleOptionViewItem bare = opt;
    bare.text.clear();
    bare.features &= ~(QStyleOptionViewItem::HasDisplay | QStyleOptionViewItem::WrapText);
    bare.state &= ~QStyle::State_HasFocus;
    style->drawControl(QStyle::CE_ItemViewItem, &bare, painter, widget);
    const auto drawFocus = [&] {
        if (!focus) return;
        QStyleOptionFocusRect frame;
        frame.QStyleOption::operator=(opt);
        frame.rect = style->subElementRect(QStyle::SE_ItemViewItemFocusRect, &opt, widget); // one cell a paint
        frame.state |= QStyle::State_KeyboardFocusChange | QStyle::State_Item;
        const QPalette::ColorGroup enabled = (opt.state & QStyle::State_Enabled) ? QPalette::Normal : QPalette::Disabled;
        frame.backgroundColor =
            opt.palette.color(enabled, (opt.state & QStyle::State_Selected) ? QPalette::Highlight : QPalette::Window);
        style->drawPrimitive(QStyle::PE_FrameFocusRect, &frame, painter, widget);
    };
    if (!laid) {
        if (focus) {
            painter->save();
            painter->setClipRect(opt.rect);
            drawFocus();
            painter->restore();
        }
        return;
    }

    const int height = static_cast<int>(laid->text.size().height());
    const int top = QStyle::alignedRect(opt.direction, opt.displayAlignment & Qt::AlignVertical_Mask,
                                        QSize(box.width(), height), box)
                        .top();
    const Qt::Alignment horizontal = QStyle::visualAlignment(opt.direction, opt.displayAlignment);
    qreal x = box.x();
    if (horizontal & Qt::AlignRight)
        x += box.width() - laid->width;
    else if (horizontal & Qt::AlignHCenter)
        x += (box.width() - laid->width) / 2;

    QPalette::ColorGroup group = (opt.state & QStyle::State_Enabled) ? QPalette::Normal : QPalette::Disabled;
    if (group == QPalette::Normal && !(opt.state & QStyle::State_Active)) group = QPalette::Inactive;
    painter->save();
    painter->setClipRect(opt.rect);
    painter->setPen(
        opt.palette.color(group, (opt.state & QStyle::State_Selected) ? QPalette::HighlightedText : QPalette::Text));
    painter->setFont(opt.font); // the static text's own: another would lay it out again
    painter->drawStaticText(QPointF(x, top), laid->text);
    drawFocus();
    painter->restore();
}

} // namespace atlas
