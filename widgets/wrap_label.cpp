#include "wrap_label.h"

#include <QEvent>

#include <algorithm>

namespace atlas {

WrapLabel::WrapLabel(QWidget *parent) : QLabel(parent)
{
    setWordWrap(true);
}

WrapLabel::WrapLabel(const QString &text, QWidget *parent) : QLabel(text, parent)
{
    setWordWrap(true);
}

WrapLabel::Shape WrapLabel::shape() const
{
    return {text(),   font(),   contentsMargins(), minimumSize(), int(textFormat()), int(alignment()),
            indent(), margin(), wordWrap(),        !pixmap().isNull()};
}

int WrapLabel::heightForWidth(int width) const
{
    Shape now = shape();
    if (!(now == m_shape)) {
        m_shape = std::move(now);
        forget();
    }
    for (int i = 0; i < m_known; ++i)
        if (m_heights[std::size_t(i)].first == width) return m_heights[std::size_t(i)].second;
    const int height = QLabel::heightForWidth(width);
    m_heights[std::size_t(m_next)] = {width, height};
    m_next = (m_next + 1) % int(m_heights.size());
    m_known = std::min(m_known + 1, int(m_heights.size()));
    return height;
}

void WrapLabel::setFillsWidth(bool fills)
{
    if (fills == m_fills) return;
    m_fills = fills;
    updateGeometry();
}

// A width of so many average characters of the label's font, with its margins and indent.
int WrapLabel::hintWidth(int characters) const
{
    const QMargins m = contentsMargins();
    return fontMetrics().averageCharWidth() * characters + m.left() + m.right() + 2 * margin() + std::max(indent(), 0);
}

QSize WrapLabel::sizeHint() const
{
    if (!m_fills) return QLabel::sizeHint();
    ensurePolished(); // the style sheet's font and padding
    // Its height at the width it has once shown, which its layout asks for next (and is remembered).
    return {hintWidth(80), heightForWidth(isVisible() && width() > 0 ? width() : hintWidth(80))};
}

QSize WrapLabel::minimumSizeHint() const
{
    if (!m_fills) return QLabel::minimumSizeHint();
    ensurePolished();
    const QMargins m = contentsMargins();
    return {hintWidth(16), fontMetrics().height() + m.top() + m.bottom() + 2 * margin()};
}

bool WrapLabel::event(QEvent *e)
{
    switch (e->type()) {
    case QEvent::FontChange:
    case QEvent::ApplicationFontChange:
    case QEvent::StyleChange:
    case QEvent::Polish:
    case QEvent::PolishRequest:
    case QEvent::ContentsRectChange:
    case QEvent::LayoutDirectionChange:
    case QEvent::ScreenChangeInternal:
        forget();
        break;
    default:
        break;
    }
    return QLabel::event(e);
}

} // namespace atlas

