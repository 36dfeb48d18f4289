#include "atlas_view.h"

#include <QApplication>

#include "report.h"
#include "untrusted_text.h"

#include <QAbstractItemView>
#include <QComboBox>
#include <QEvent>
#include <QHeaderView>
#include <QLabel>
#include <QScrollArea>
#include <QTableWidget>
#include <QVBoxLayout>

namespace atlas {

QString qs(const std::string &s)
{
    // Text from a checkpoint or a server may hold control characters or bytes that are not UTF-8.
    return QString::fromStdString(printable(s));
}

QString visibleText(const QString &message)
{
    return QString::fromStdString(printable(message.toStdString()));
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

namespace {

// The sentence of an empty or not-applicable view, over the whole view and following its size.
class EmptyState final : public QLabel
{
public:
    explicit EmptyState(QWidget *parent) : QLabel(parent)
    {
        setAlignment(Qt::AlignCenter);
        setWordWrap(true);
        setTextFormat(Qt::RichText);
        setAutoFillBackground(true);
        fit();
        QFont f = font();
        f.setPointSizeF(f.pointSizeF() * 1.2);
        setFont(f);
        parent->installEventFilter(this);
        fit();
    }

    // Over the whole view; the sentence in the middle three fifths, as a paragraph reads best.
    void fit()
    {
        const QRect r = parentWidget()->rect();
        setGeometry(r);
        setContentsMargins(r.width() / 5, 40, r.width() / 5, 80);
    }

protected:
    bool eventFilter(QObject *watched, QEvent *event) override
    {
        if (watched == parentWidget() && event->type() == QEvent::Resize) fit();
        return false;
    }
};

} // namespace

namespace {
bool g_exportingFigure = false;
}

bool exportingFigure()
{
    return g_exportingFigure;
}

void setExportingFigure(bool on)
{
    g_exportingFigure = on;
}

void AtlasView::setNotApplicable(const QString &why)
{
    if (why == m_notApplicable) return;
    m_notApplicable = why;
    if (!m_emptyState) m_emptyState = new EmptyState(this);
    if (why.isEmpty()) {
        m_emptyState->hide();
    } else {
        const QColor fg = palette().color(QPalette::WindowText), bg = palette().color(QPalette::Window);
        const QColor muted = QColor::fromRgbF(0.75f * fg.redF() + 0.25f * bg.redF(), 0.75f * fg.greenF() + 0.25f * bg.greenF(),
                                              0.75f * fg.blueF() + 0.25f * bg.blueF());
        m_emptyState->setText(QStringLiteral("<div style='color:%1'><p style='font-size:15pt; font-weight:600'>%2</p>"
                                             "<p>%3</p></div>")
                                  .arg(muted.name(), title().toHtmlEscaped(), why.toHtmlEscaped()));
        static_cast<EmptyState *>(m_emptyState)->fit();
        m_emptyState->raise();
        m_emptyState->show();
    }
    emit applicabilityChanged(why);
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

namespace {
void applyCaptionPalette(QLabel *l)
{
    QPalette p = QApplication::palette(l);
    QColor c = p.color(QPalette::WindowText);
    c.setAlpha(170);
    p.setColor(QPalette::WindowText, c);
    l->setPalette(p);
}
} // namespace

QLabel *makeCaption(const QString &text, QWidget *parent)
{
    auto *l = new QLabel(text, parent);
    l->setWordWrap(true);
    l->setProperty("atlasCaption", true);
    applyCaptionPalette(l);
    return l;
}

void refreshCaptions(QWidget *root)
{
    for (QLabel *l : root->findChildren<QLabel *>())
        if (l->property("atlasCaption").toBool()) applyCaptionPalette(l);
}

QVBoxLayout *makeScrollingPage(QWidget *view, bool sideways)
{
    auto *outer = new QVBoxLayout(view);
    outer->setContentsMargins(0, 0, 0, 0);
    auto *scroll = new QScrollArea(view);
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    if (!sideways) scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    outer->addWidget(scroll);
    auto *page = new QWidget(scroll);
    scroll->setWidget(page);
    auto *v = new QVBoxLayout(page);
    v->setContentsMargins(20, 16, 20, 16);
    return v;
}

void letComboShrink(QComboBox *combo, int characters)
{
    combo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    combo->setMinimumContentsLength(characters);
    combo->setSizePolicy(QSizePolicy::Expanding, combo->sizePolicy().verticalPolicy());
    auto fitList = [combo] {
        QAbstractItemView *list = combo->view();
        list->setMinimumWidth(list->sizeHintForColumn(0) + 2 * list->frameWidth() + 24);
    };
    QObject::connect(combo->model(), &QAbstractItemModel::rowsInserted, combo, fitList);
    QObject::connect(combo->model(), &QAbstractItemModel::dataChanged, combo, fitList);
    fitList();
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
