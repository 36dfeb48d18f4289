#include "atlas_view.h"

#include "text_cell_delegate.h"

#include <QGuiApplication>
#include <QClipboard>
#include <QMenu>

#include <QApplication>

#include "report.h"
#include "untrusted_text.h"
#include "wrap_label.h"

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
class EmptyState final : public WrapLabel
{
public:
    explicit EmptyState(QWidget *parent) : WrapLabel(parent)
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
    auto *l = new WrapLabel(text, parent);
    QFont f = l->font();
    f.setPointSizeF(f.pointSizeF() * 1.25);
    f.setWeight(QFont::DemiBold);
    l->setFont(f);
    l->setWordWrap(true); // a long heading (llama.cpp's names) wraps in a narrow window or column
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
    auto *l = new WrapLabel(text, parent);
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

namespace {

// A cell as text for a copy: its shown text, a Markdown cell's pipes escaped, a CSV field quoted when needed.
QString markdownCell(QString s)
{
    return QString(s).replace(QLatin1Char('|'), QStringLiteral("\\|")).replace(QLatin1Char('\n'), QLatin1Char(' '));
}
QString csvField(const QString &s)
{
    if (!s.contains(QLatin1Char(',')) && !s.contains(QLatin1Char('"')) && !s.contains(QLatin1Char('\n'))) return s;
    QString q = s;
    return QLatin1Char('"') + q.replace(QLatin1Char('"'), QStringLiteral("\"\"")) + QLatin1Char('"');
}

} // namespace

QString tableText(const QTableWidget *t, TableFormat format, int onlyRow)
{
    QStringList header;
    for (int c = 0; c < t->columnCount(); ++c)
        header << (t->horizontalHeaderItem(c) ? t->horizontalHeaderItem(c)->text() : QString());
    QStringList lines;
    const auto row = [&](int r) -> QStringList {
        QStringList cells;
        for (int c = 0; c < t->columnCount(); ++c)
            cells << (t->item(r, c) ? t->item(r, c)->text() : QString());
        return cells;
    };
    if (format == TableFormat::Markdown) {
        auto line = [](const QStringList &cells) -> QString {
            QStringList escaped;
            for (const auto &s : cells)
                escaped << markdownCell(s);
            return QStringLiteral("| ") + escaped.join(QStringLiteral(" | ")) + QStringLiteral(" |");
        };
        lines << line(header);
        QStringList rule;
        for (int c = 0; c < t->columnCount(); ++c)
            rule << QStringLiteral("---");
        lines << line(rule);
        for (int r = 0; r < t->rowCount(); ++r)
            if (onlyRow < 0 || r == onlyRow) lines << line(row(r));
    } else {
        auto line = [](const QStringList &cells) -> QString {
            QStringList quoted;
            for (const auto &s : cells)
                quoted << csvField(s);
            return quoted.join(QLatin1Char(','));
        };
        lines << line(header);
        for (int r = 0; r < t->rowCount(); ++r)
            if (onlyRow < 0 || r == onlyRow) lines << line(row(r));
    }
    // Where the numbers come from, as a figure's caption says it (the window's provenance, when it has one).
    const QString source = t->window() ? t->window()->property("atlasProvenance").toString() : QString();
    if (!source.isEmpty())
        lines << (format == TableFormat::Markdown ? QStringLiteral("\n") + source : QStringLiteral("# ") + source);
    return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

QTableWidget *makeTable(const QStringList &headers, QWidget *parent)
{
    auto *t = new QTableWidget(0, int(headers.size()), parent);
    t->setHorizontalHeaderLabels(headers);
    t->verticalHeader()->hide();
    t->horizontalHeader()->setSectionResizeMode(QHeaderView::Stretch);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setAlternatingRowColors(true);
    t->setItemDelegate(new TextCellDelegate(t)); // each cell's text laid out once, not at every paint
    // Copy as…: the row under the pointer, the whole table as Markdown or CSV, each with its provenance.
    t->setContextMenuPolicy(Qt::CustomContextMenu);
    QObject::connect(t, &QWidget::customContextMenuRequested, t, [t](const QPoint &at) {
        const int r = t->rowAt(at.y());
        QMenu menu(t);
        QAction *rowMd = r >= 0 ? menu.addAction(QObject::tr("Copy Row as Markdown")) : nullptr;
        QAction *md = menu.addAction(QObject::tr("Copy Table as Markdown"));
        QAction *csv = menu.addAction(QObject::tr("Copy Table as CSV"));
        QAction *chosen = menu.exec(t->viewport()->mapToGlobal(at));
        if (!chosen) return;
        const QString text = chosen == rowMd ? tableText(t, TableFormat::Markdown, r)
                             : chosen == md  ? tableText(t, TableFormat::Markdown)
                                             : tableText(t, TableFormat::Csv);
        if (chosen == rowMd || chosen == md || chosen == csv) QGuiApplication::clipboard()->setText(text);
    });
    return t;
}

} // namespace atlas
