#include "atlas_view.h"

#include "report.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>

namespace atlas {

QString qs(const std::string &s)
{
    return QString::fromStdString(s);
}

QString groupDigitsQ(std::uint64_t v)
{
    return qs(groupDigits(v));
}

QString shortCountQ(std::uint64_t v)
{
    return qs(shortCount(v));
}

QString binaryBytesQ(std::uint64_t v)
{
    return qs(binaryBytes(v));
}

QString percentQ(double fraction, int decimals)
{
    return QString::number(fraction * 100.0, 'f', decimals) + QLatin1Char('%');
}

QLabel *makeHeading(const QString &text, QWidget *parent)
{
    auto *l = new QLabel(text, parent);
    QFont f = l->font();
    f.setPointSizeF(f.pointSizeF() * 1.25);
    f.setWeight(QFont::DemiBold);
    l->setFont(f);
    return l;
}

QLabel *makeCaption(const QString &text, QWidget *parent)
{
    auto *l = new QLabel(text, parent);
    l->setWordWrap(true);
    QPalette p = l->palette();
    QColor c = p.color(QPalette::WindowText);
    c.setAlpha(170);
    p.setColor(QPalette::WindowText, c);
    l->setPalette(p);
    return l;
}

QTableWidget *makeTable(const QStringList &headers, QWidget *parent)
{
    auto *t = new QTableWidget(0, int(headers.size()), parent);
    t->setHorizontalHeaderLabels(headers);
    t->verticalHeader()->hide();
    t->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setAlternatingRowColors(true);
    return t;
}

} // namespace atlas
