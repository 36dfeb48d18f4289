#include "focus_ring.h"

#include "atlas_view.h"

#include <QAbstractItemView>
#include <QAbstractScrollArea>
#include <QApplication>
#include <QEvent>
#include <QFocusEvent>
#include <QPainter>

namespace atlas {

FocusRing::FocusRing(QWidget *window) : QWidget(window)
{
    setAttribute(Qt::WA_TransparentForMouseEvents);
    setAttribute(Qt::WA_NoSystemBackground);
    setFocusPolicy(Qt::NoFocus);
    hide();
    qApp->installEventFilter(this);
}

bool FocusRing::drawsNoFocus(const QWidget *w)
{
    // Fusion draws the focus of buttons, fields, combo boxes, sliders and check boxes; a scroll area (an item
    // view before it has a current item) and a view that takes keys itself show nothing.
    return qobject_cast<const QAbstractScrollArea *>(w) || qobject_cast<const AtlasView *>(w) ||
           w->property("atlasFocusRing").toBool();
}

bool FocusRing::eventFilter(QObject *watched, QEvent *event)
{
    const QEvent::Type type = event->type();
    if (type == QEvent::FocusIn) {
        auto *w = qobject_cast<QWidget *>(watched);
        const Qt::FocusReason reason = static_cast<QFocusEvent *>(event)->reason();
        // By the keyboard, or moved there by the program (a view shown by Ctrl+4 focuses its first part); not
        // by a click, a popup or the window's activation.
        const bool byKeys = reason == Qt::TabFocusReason || reason == Qt::BacktabFocusReason ||
                            reason == Qt::ShortcutFocusReason || reason == Qt::OtherFocusReason;
        if (w && w->window() == window() && byKeys && drawsNoFocus(w))
            follow(w);
        else if (w && w->window() == window())
            follow(nullptr);
    } else if (watched == m_target && (type == QEvent::FocusOut || type == QEvent::Hide)) {
        follow(nullptr);
    } else if (m_target && (type == QEvent::Move || type == QEvent::Resize) && qobject_cast<QWidget *>(watched) &&
               (watched == m_target || static_cast<QWidget *>(watched)->isAncestorOf(m_target))) {
        place();
    }
    return false;
}

void FocusRing::follow(QWidget *w)
{
    m_target = w;
    if (!w) {
        hide();
        return;
    }
    place();
    show();
    raise();
}

void FocusRing::place()
{
    if (!m_target || !parentWidget()) return;
    const QPoint at = m_target->mapTo(parentWidget(), QPoint(0, 0));
    // Inside the widget's edge by a pixel, clipped to the part of it the window shows.
    QRect r(at, m_target->size());
    for (QWidget *p = m_target->parentWidget(); p && p != parentWidget(); p = p->parentWidget())
        r &= QRect(p->mapTo(parentWidget(), QPoint(0, 0)), p->size());
    setGeometry(r);
    update();
}

void FocusRing::paintEvent(QPaintEvent *)
{
    QPainter p(this);
    p.setRenderHint(QPainter::Antialiasing);
    p.setPen(QPen(palette().color(QPalette::Highlight), 2));
    p.setBrush(Qt::NoBrush);
    p.drawRoundedRect(QRectF(rect()).adjusted(1, 1, -1, -1), 3, 3);
}

} // namespace atlas
