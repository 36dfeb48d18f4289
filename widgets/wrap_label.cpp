#include "wrap_label.h"

#include <QEvent>

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

