#pragma once

#include <QPointer>
#include <QWidget>

namespace atlas {

// A visible focus for the widgets whose style draws none (a scroll area, a table with no current cell, a
// view that takes the arrow keys): when the keyboard or the program moves the focus onto one (Tab, Backtab,
// a shortcut, a view shown), a ring in the palette's highlight colour is drawn around it, over the window,
// until the focus leaves (a click does not ring). It is a child of the window, not of the view, so an
// exported figure never shows it.
class FocusRing final : public QWidget
{
    Q_OBJECT
public:
    explicit FocusRing(QWidget *window);
    QWidget *target() const { return m_target; } // the widget ringed now, or null

protected:
    bool eventFilter(QObject *watched, QEvent *event) override;
    void paintEvent(QPaintEvent *event) override;

private:
    static bool drawsNoFocus(const QWidget *w);
    void follow(QWidget *w);
    void place();
    QPointer<QWidget> m_target;
};

} // namespace atlas
