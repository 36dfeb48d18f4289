#include "view_export.h"

#include "atlas_view.h"
#include "colours.h"

#include <QLabel>
#include <QApplication>
#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "chart_widget.h"

#include <QAbstractButton>
#include <QAbstractSlider>
#include <QAbstractSpinBox>
#include <QComboBox>
#include <QLineEdit>
#include <QFormLayout>
#include <QAbstractItemView>
#include <QBoxLayout>
#include <QFileInfo>
#include <QHeaderView>
#include <QImage>
#include <QLayout>
#include <QPointer>
#include <QScrollArea>
#include <QScrollBar>
#include <QSplitter>
#include <QTableView>
#include <QTableWidget>
#include <QTreeView>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QFile>
#include <QBuffer>
#include <QLocale>
#include <QRegularExpression>
#include <optional>
#include <QSvgGenerator>

#include <cmath>
#include <QWidget>

namespace atlas {

namespace {

constexpr int kCaptionHeight = 26;

// A little smaller than the view's text on screen; a document's caption is body text (8 pt or more printed).
QFont captionFont(const QWidget *widget, bool document)
{
    QFont f = widget->font();
    if (!document) f.setPointSizeF(f.pointSizeF() * 0.85);
    return f;
}

// Every layout inside the view redone, children first, then the view's own.
void relayout(QWidget *view)
{
    const QList<QWidget *> inside = view->findChildren<QWidget *>(); // parents before their children
    for (auto it = inside.rbegin(); it != inside.rend(); ++it) {
        if (auto *splitter = qobject_cast<QSplitter *>(*it)) splitter->refresh();
        if (QLayout *l = (*it)->layout()) {
            l->invalidate();
            l->activate();
        }
    }
    if (QLayout *l = view->layout()) {
        l->invalidate();
        l->activate();
    }
}

// The strip at the foot of a cut table that says how many rows it leaves out.
int cutNoteHeight(const QWidget *table)
{
    return QFontMetrics(table->font()).height() + 10;
}

// The height the view needs at its width: its minimum, and what its wrapped text takes at this width (a
// layout's minimum size counts a word-wrapped label at some other width).
int neededHeight(QWidget *view)
{
    int h = view->minimumSizeHint().height();
    if (QLayout *l = view->layout(); l && l->hasHeightForWidth()) h = std::max(h, l->totalMinimumHeightForWidth(view->width()));
    return h;
}

// While alive, the view has another size (a document column's width, an exact figure size).
class Resized
{
public:
    Resized(QWidget *view, QSize size) : m_view(view), m_size(view->size())
    {
        view->resize(size);
        relayout(view);
    }
    ~Resized()
    {
        if (!m_view) return;
        m_view->resize(m_size);
        relayout(m_view);
    }
    Resized(const Resized &) = delete;
    Resized &operator=(const Resized &) = delete;

private:
    QPointer<QWidget> m_view;
    QSize m_size;
};

// A table or tree that shows fewer rows than it holds: where its foot is and what to say there.
struct CutNote
{
    QRect strip; // in the view's coordinates
    QString text;
    QString summary; // "12 of 118,629 rows"
};

std::vector<CutNote> cutNotes(QWidget *view)
{
    std::vector<CutNote> notes;
    const QLocale locale;
    for (QAbstractItemView *v : view->findChildren<QAbstractItemView *>()) {
        if (!v->isVisibleTo(view) || !v->model()) continue;
        auto *table = qobject_cast<QTableView *>(v);
        auto *tree = qobject_cast<QTreeView *>(v);
        if (!table && !tree) continue;
        const QRect port = v->viewport()->rect();
        const int noteH = cutNoteHeight(v);
        const int limit = port.height() - noteH; // rows must end above the note
        long long total = 0, shown = 0;
        int lastBottom = 0; // the foot of the last row shown whole above the note
        if (table) {
            const int rows = v->model()->rowCount(v->rootIndex());
            bool overflows = false;
            for (int r = 0; r < rows; ++r) {
                if (table->isRowHidden(r)) continue;
                ++total;
                const int top = table->rowViewportPosition(r);
                if (top < 0) { overflows = true; continue; } // scrolled above
                const int bottom = top + table->rowHeight(r);
                if (bottom > port.height()) overflows = true;
                if (bottom <= limit) ++shown, lastBottom = std::max(lastBottom, bottom);
            }
            if (!overflows) continue; // everything fits
        } else {
            bool overflows = false;
            for (QModelIndex i = tree->indexAt(QPoint(1, 1)); i.isValid(); i = tree->indexBelow(i)) {
                const QRect r = tree->visualRect(i);
                if (r.bottom() >= port.height()) {
                    overflows = true;
                    break;
                }
            }
            if (!overflows && tree->verticalScrollBar()->value() == 0) continue;
            for (QModelIndex i = tree->model()->index(0, 0, tree->rootIndex()); i.isValid() && total < 5000000;
                 i = tree->indexBelow(i))
                ++total;
            for (QModelIndex i = tree->indexAt(QPoint(1, 1)); i.isValid(); i = tree->indexBelow(i)) {
                const QRect r = tree->visualRect(i);
                if (r.bottom() + 1 > limit) break;
                ++shown;
                lastBottom = r.bottom() + 1;
            }
        }
        const QPoint at = v->viewport()->mapTo(view, QPoint(0, 0));
        CutNote note;
        // From the foot of the last row shown (no sliver of the next one shows) to the bottom.
        const int stripTop = lastBottom > 0 ? lastBottom : std::max(0, port.height() - noteH);
        note.strip = QRect(at.x(), at.y() + stripTop, port.width(), std::max(port.height() - stripTop, std::min(noteH, port.height())));
        note.text = QObject::tr("… %1 more rows: see ckpt-atlas report").arg(locale.toString(total - shown));
        note.summary = QObject::tr("%1 of %2 rows").arg(locale.toString(shown), locale.toString(total));
        notes.push_back(note);
    }
    return notes;
}

// While alive, the view is laid out at the height its scrolling parts need to show everything (every
// table row, the whole page of a scroll area) with their vertical scroll bars off: a figure shows what
// scrolls, not the window's slice of it. Only the view's own layout is redone (its ancestors' pending
// layout requests see the restored sizes), so the window around it does not move.
class FullHeight
{
public:
    // maxRows > 0: a table or tree shows its first maxRows rows at most (scrolled to the top), with room
    // under them for the line that says how many more there are.
    explicit FullHeight(QWidget *view, int maxRows = 0) : m_view(view), m_size(view->size()), m_pin(maxRows > 0)
    {
        for (QSplitter *s : view->findChildren<QSplitter *>())
            m_splitters.push_back({s, s->sizes()});
        // Tables first: a scroll area's page grows with the tables in it.
        for (QTableView *t : view->findChildren<QTableView *>()) {
            if (!t->isVisibleTo(view)) continue;
            const QHeaderView *header = t->horizontalHeader();
            const int all = t->model() ? t->model()->rowCount(t->rootIndex()) : 0;
            int rows = 0; // the rows shown (a filter hides some)
            for (int r = 0; r < all; ++r)
                rows += !t->isRowHidden(r);
            int body = t->verticalHeader()->length();
            const bool cut = maxRows > 0 && rows > maxRows;
            if (cut) {
                body = cutNoteHeight(t);
                for (int r = 0, kept = 0; r < all && kept < maxRows; ++r)
                    if (!t->isRowHidden(r)) body += t->rowHeight(r), ++kept;
                toTop(t);
            }
            int full = body + 2 * t->frameWidth() +
                       (header->isVisibleTo(t) ? std::max(header->height(), header->sizeHint().height()) : 0) +
                       (cut ? 0 : 2);
            if (t->horizontalScrollBar()->isVisibleTo(t)) full += t->horizontalScrollBar()->sizeHint().height();
            if (cut) cap(t, full);
            grow(t, full);
        }
        // A tree: the rows as they are expanded now (a layer list, or what the user opened).
        for (QTreeView *t : view->findChildren<QTreeView *>()) {
            if (!t->isVisibleTo(view)) continue;
            const auto policy = t->sizeAdjustPolicy();
            t->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
            int full = t->sizeHint().height();
            t->setSizeAdjustPolicy(policy);
            if (maxRows > 0 && t->model() && t->model()->rowCount(t->rootIndex())) {
                const int row = t->visualRect(t->model()->index(0, 0, t->rootIndex())).height();
                const int header = t->header()->isVisibleTo(t) ? t->header()->height() : 0;
                const int most = header + maxRows * std::max(row, 1) + cutNoteHeight(t) + 2 * t->frameWidth();
                if (full > most) {
                    full = most;
                    toTop(t);
                    cap(t, most);
                }
            }
            grow(t, full);
        }
        for (QScrollArea *s : view->findChildren<QScrollArea *>()) {
            if (!s->isVisibleTo(view) || !s->widget()) continue;
            QWidget *page = s->widget();
            if (page->layout()) page->layout()->activate();
            int full = std::max(page->minimumSizeHint().height(), page->sizeHint().height());
            full = std::max(full, page->minimumHeight()) + 2 * s->frameWidth();
            if (s->horizontalScrollBar()->isVisibleTo(s)) full += s->horizontalScrollBar()->sizeHint().height();
            grow(s, full);
        }
        if (m_saved.empty() && m_capped.empty()) return;
        // Everything else keeps its size: the view grows by what its outermost scrolling parts grow (and
        // to its minimum at this width: a narrow column wraps its text onto more lines).
        int extra = 0;
        for (const Saved &s : m_saved) {
            bool inner = false;
            for (const Saved &o : m_saved)
                inner = inner || (o.area != s.area && o.area->isAncestorOf(s.area));
            if (!inner) extra += s.area->minimumHeight() - s.height;
        }
        relayout(view);
        const int height = std::max(view->height() + extra, neededHeight(view));
        view->resize(view->width(), height);
        relayout(view);
        // A splitter gives new room by its stretch factors (a chart could grow thousands of pixels): the
        // grown part gets what it needs, the others keep their sizes.
        for (auto &[splitter, sizes] : m_splitters) {
            if (!splitter || splitter->orientation() != Qt::Vertical) continue;
            QList<int> want = sizes;
            bool grown = false;
            for (int i = 0; i < splitter->count() && i < want.size(); ++i) {
                const auto holds = [&](QWidget *area) {
                    return area && (splitter->widget(i) == area || splitter->widget(i)->isAncestorOf(area));
                };
                for (const Saved &g : m_saved)
                    if (holds(g.area)) {
                        want[i] += g.area->minimumHeight() - g.height;
                        grown = true;
                    }
                for (const Capped &c : m_capped) // a table cut to its first rows: its pane just holds them
                    if (holds(c.area)) {
                        want[i] = splitter->widget(i)->minimumSizeHint().height();
                        grown = true;
                    }
            }
            if (grown) splitter->setSizes(want);
        }
        relayout(view);
    }
    ~FullHeight()
    {
        if (m_saved.empty() && m_capped.empty()) {
            for (auto &[area, value] : m_scrolled)
                if (area) area->verticalScrollBar()->setValue(value);
            return;
        }
        // Undone in the reverse order of doing.
        for (auto it = m_saved.rbegin(); it != m_saved.rend(); ++it) {
            if (!it->area) continue;
            it->area->setMinimumHeight(it->minimumHeight);
            it->area->setVerticalScrollBarPolicy(it->policy);
        }
        for (auto it = m_capped.rbegin(); it != m_capped.rend(); ++it)
            if (it->area) {
                it->area->setMinimumHeight(it->minimumHeight);
                it->area->setMaximumHeight(it->maximumHeight);
                it->area->setVerticalScrollBarPolicy(it->policy);
            }
        relayout(m_view);
        m_view->resize(m_size);
        for (auto &[splitter, sizes] : m_splitters)
            if (splitter) splitter->setSizes(sizes);
        relayout(m_view);
        for (auto &[area, value] : m_scrolled)
            if (area) area->verticalScrollBar()->setValue(value);
    }
    FullHeight(const FullHeight &) = delete;
    FullHeight &operator=(const FullHeight &) = delete;

private:
    // Lays the view's insides out again now, innermost first: splitters and layouts would otherwise only
    // see changed minimum sizes when the event loop next runs.
    void grow(QAbstractScrollArea *area, int full)
    {
        // Past a few screens a figure is no longer read whole (and a PNG at twice the size grows to
        // hundreds of megabytes): such a view is shown as the window shows it.
        constexpr int kMostExtra = 6000;
        // (A document figure is then laid out to its content's height: every scrolling part keeps what it
        // needs, even one that fits now.)
        if ((full <= area->height() && !m_pin) || full - area->height() > kMostExtra) return;
        m_saved.push_back({area, area->minimumHeight(), area->height(), area->verticalScrollBarPolicy()});
        area->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
        area->setMinimumHeight(full);
    }
    // No taller than `most` (a document figure's table of its first rows), scroll bars off.
    void cap(QAbstractScrollArea *area, int most)
    {
        m_capped.push_back({area, area->minimumHeight(), area->maximumHeight(), area->verticalScrollBarPolicy()});
        area->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
        area->setMaximumHeight(most);
        area->setMinimumHeight(most);
    }
    struct Capped
    {
        QPointer<QAbstractScrollArea> area;
        int minimumHeight, maximumHeight;
        Qt::ScrollBarPolicy policy;
    };
    std::vector<Capped> m_capped;
    void toTop(QAbstractScrollArea *area)
    {
        m_scrolled.push_back({area, area->verticalScrollBar()->value()});
        area->verticalScrollBar()->setValue(0);
    }
    std::vector<std::pair<QPointer<QAbstractScrollArea>, int>> m_scrolled; // scroll positions before
    struct Saved
    {
        QPointer<QAbstractScrollArea> area;
        int minimumHeight;
        int height; // before
        Qt::ScrollBarPolicy policy;
    };
    QWidget *m_view;
    QSize m_size;
    bool m_pin = false;
    std::vector<Saved> m_saved;
    std::vector<std::pair<QPointer<QSplitter>, QList<int>>> m_splitters; // their sizes before
};

// Items joined by " · " in lines no wider than `width` in `font`, broken between items.
QStringList wrapItems(const QStringList &items, const QFont &font, int width)
{
    const QFontMetrics fm(font);
    QStringList lines;
    QString line;
    for (const QString &item : items) {
        const QString next = line.isEmpty() ? item : line + QStringLiteral(" · ") + item;
        if (fm.horizontalAdvance(next) <= width) {
            line = next;
            continue;
        }
        if (!line.isEmpty()) lines << line;
        line.clear();
        // An item wider than a line is broken between its words.
        for (const QString &word : item.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
            const QString longer = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
            if (!line.isEmpty() && fm.horizontalAdvance(longer) > width) {
                lines << line;
                line = word;
            } else {
                line = longer;
            }
        }
    }
    if (!line.isEmpty()) lines << line;
    return lines;
}

// While alive, a document figure's tables write their long counts short ("724,775,731,200" as "724.78 B"),
// where a column too narrow for them would cut their digits. The exact counts stay in the view and the
// report.
class ShortCounts
{
public:
    explicit ShortCounts(QWidget *view)
    {
        static const QRegularExpression grouped(QStringLiteral("^\\d{1,3}(,\\d{3}){2,}$"));
        for (QTableWidget *t : view->findChildren<QTableWidget *>()) {
            if (!t->isVisibleTo(view)) continue;
            for (int r = 0; r < t->rowCount(); ++r)
                for (int c = 0; c < t->columnCount(); ++c) {
                    QTableWidgetItem *item = t->item(r, c);
                    if (!item) continue;
                    const QString text = item->text();
                    if (!grouped.match(text).hasMatch()) continue;
                    const QString digits = QString(text).remove(QLatin1Char(','));
                    bool ok = false;
                    const qulonglong n = digits.toULongLong(&ok);
                    if (!ok) continue;
                    m_changed.push_back({t, r, c, text});
                    item->setText(shortCountQ(n));
                }
        }
        if (!m_changed.empty()) relayout(view);
        // Then a heading or a name wider than its column is broken between its words (and after a name's
        // underscores), the header and the rows growing to hold the lines, instead of being cut.
        for (QTableWidget *t : view->findChildren<QTableWidget *>()) {
            if (!t->isVisibleTo(view)) continue;
            const QFontMetrics fm(t->font()), hm(t->horizontalHeader()->font());
            bool wrapped = false;
            for (int c = 0; c < t->columnCount(); ++c) {
                const int room = t->columnWidth(c) - 12;
                if (QTableWidgetItem *h = t->horizontalHeaderItem(c); h && hm.horizontalAdvance(h->text()) > room) {
                    QStringList lines;
                    for (const QString &word : h->text().split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
                        if (!lines.isEmpty() && hm.horizontalAdvance(lines.back() + QLatin1Char(' ') + word) <= room)
                            lines.back() += QLatin1Char(' ') + word;
                        else
                            lines << word;
                    }
                    m_headers.push_back({t, -1, c, h->text()});
                    h->setText(lines.join(QLatin1Char('\n')));
                }
                for (int r = 0; r < t->rowCount(); ++r) {
                    QTableWidgetItem *item = t->item(r, c);
                    if (!item || !item->text().contains(QLatin1Char('_')) || fm.horizontalAdvance(item->text()) <= room) continue;
                    m_changed.push_back({t, r, c, item->text()});
                    item->setText(QString(item->text()).replace(QLatin1Char('_'), QStringLiteral("_\u200B")));
                    wrapped = true;
                }
            }
            if (wrapped) {
                Wrapped w{t, t->wordWrap(), {}};
                for (int r = 0; r < t->rowCount(); ++r)
                    w.heights.push_back(t->rowHeight(r));
                m_wrap.push_back(std::move(w));
                t->setWordWrap(true);
                t->resizeRowsToContents();
            }
        }
        // A tree's columns take what their visible rows need (an empty column shrinks to its heading), the
        // widest giving way when they do not all fit: the names are what a reader of the figure looks for.
        for (QTreeView *t : view->findChildren<QTreeView *>()) {
            if (!t->isVisibleTo(view) || !t->model()) continue;
            QHeaderView *h = t->header();
            const int columns = h->count();
            std::vector<int> want(std::size_t(columns), 0), before(std::size_t(columns), 0);
            int total = 0;
            // A column empty on every row the figure shows is left out of it.
            std::vector<bool> filled(std::size_t(columns), false);
            for (QModelIndex i = t->indexAt(QPoint(1, 1)); i.isValid() && t->visualRect(i).top() < t->viewport()->height();
                 i = t->indexBelow(i))
                for (int c = 0; c < columns; ++c)
                    if (!filled[std::size_t(c)] && !i.siblingAtColumn(c).data().toString().isEmpty()) filled[std::size_t(c)] = true;
            std::vector<int> hidden;
            for (int c = 1; c < columns; ++c)
                if (!h->isSectionHidden(c) && !filled[std::size_t(c)]) {
                    h->hideSection(c);
                    hidden.push_back(c);
                }
            for (int c = 0; c < columns; ++c) {
                before[std::size_t(c)] = h->sectionSize(c);
                if (h->isSectionHidden(c)) continue;
                want[std::size_t(c)] = std::max(static_cast<QAbstractItemView *>(t)->sizeHintForColumn(c), h->sectionSizeHint(c)) + 4;
                total += want[std::size_t(c)];
            }
            const int room = t->viewport()->width();
            while (total > room) { // the widest column gives way, down to its heading; the names last
                int widest = -1;
                for (int c = 1; c < columns; ++c)
                    if (!h->isSectionHidden(c) && want[std::size_t(c)] > h->sectionSizeHint(c) &&
                        (widest < 0 || want[std::size_t(c)] > want[std::size_t(widest)]))
                        widest = c;
                if (widest < 0 && want[0] > h->sectionSizeHint(0)) widest = 0;
                if (widest < 0) break;
                const int cut = std::min(total - room, want[std::size_t(widest)] - h->sectionSizeHint(widest));
                const int step = std::max(1, std::min(cut, 16));
                want[std::size_t(widest)] -= step;
                total -= step;
            }
            m_columns.push_back({t, before, h->stretchLastSection(), hidden});
            bool stretches = false; // a column that takes what is left (the names) keeps doing so
            for (int c = 0; c < columns; ++c)
                stretches = stretches || (!h->isSectionHidden(c) && h->sectionResizeMode(c) == QHeaderView::Stretch);
            if (!stretches) h->setStretchLastSection(true);
            for (int c = 0; c < columns; ++c)
                if (!h->isSectionHidden(c) && h->sectionResizeMode(c) == QHeaderView::Interactive) h->resizeSection(c, want[std::size_t(c)]);
        }
        if (!m_headers.empty() || !m_wrap.empty() || !m_columns.empty()) relayout(view);
        m_view = view;
    }
    ~ShortCounts()
    {
        // Undone in the reverse order of doing (a cell may have been changed twice: its count, then its name).
        for (auto it = m_changed.rbegin(); it != m_changed.rend(); ++it)
            if (it->table)
                if (QTableWidgetItem *item = it->table->item(it->row, it->column)) item->setText(it->text);
        for (const Changed &h : m_headers)
            if (h.table)
                if (QTableWidgetItem *item = h.table->horizontalHeaderItem(h.column)) item->setText(h.text);
        for (const Columns &c : m_columns)
            if (c.tree) {
                QHeaderView *h = c.tree->header();
                for (int i : c.hidden)
                    h->showSection(i);
                h->setStretchLastSection(c.stretchLast);
                for (int i = 0; i < h->count() && i < int(c.sizes.size()); ++i)
                    if (h->sectionResizeMode(i) == QHeaderView::Interactive) h->resizeSection(i, c.sizes[std::size_t(i)]);
            }
        for (const Wrapped &w : m_wrap)
            if (w.table) {
                w.table->setWordWrap(w.wordWrap);
                for (int r = 0; r < w.table->rowCount() && r < int(w.heights.size()); ++r)
                    w.table->setRowHeight(r, w.heights[std::size_t(r)]);
            }
        if ((!m_changed.empty() || !m_headers.empty() || !m_columns.empty()) && m_view) relayout(m_view);
    }
    ShortCounts(const ShortCounts &) = delete;
    ShortCounts &operator=(const ShortCounts &) = delete;

private:
    struct Changed
    {
        QPointer<QTableWidget> table;
        int row, column;
        QString text;
    };
    std::vector<Changed> m_changed, m_headers;
    struct Wrapped
    {
        QPointer<QTableWidget> table;
        bool wordWrap;
        std::vector<int> heights; // the rows' heights before
    };
    std::vector<Wrapped> m_wrap;
    struct Columns
    {
        QPointer<QTreeView> tree;
        std::vector<int> sizes; // before
        bool stretchLast;
        std::vector<int> hidden; // the columns left out
    };
    std::vector<Columns> m_columns;
    QPointer<QWidget> m_view;
};

// While alive, every chart in the view is at least kChartRoom high (a document figure is laid out to its
// content's height, where a chart would otherwise get only its minimum).
class ChartRoom
{
public:
    static constexpr int kChartRoom = 240;
    explicit ChartRoom(QWidget *view)
    {
        for (ChartWidget *c : view->findChildren<ChartWidget *>())
            if (c->isVisibleTo(view) && c->minimumHeight() < kChartRoom) {
                m_saved.push_back({c, c->minimumHeight()});
                c->setMinimumHeight(kChartRoom);
            }
        if (!m_saved.empty()) relayout(view);
        m_view = view;
    }
    ~ChartRoom()
    {
        for (auto &[chart, height] : m_saved)
            if (chart) chart->setMinimumHeight(height);
        if (!m_saved.empty() && m_view) relayout(m_view);
    }
    ChartRoom(const ChartRoom &) = delete;
    ChartRoom &operator=(const ChartRoom &) = delete;

private:
    std::vector<std::pair<QPointer<QWidget>, int>> m_saved;
    QPointer<QWidget> m_view;
};

// While alive, no scroll area in the view shows a scroll bar: a figure is read, not scrolled (a cut table
// says what it leaves out).
class NoScrollBars
{
public:
    explicit NoScrollBars(QWidget *view)
    {
        for (QAbstractScrollArea *a : view->findChildren<QAbstractScrollArea *>()) {
            if (!a->isVisibleTo(view)) continue;
            m_saved.push_back({a, a->horizontalScrollBarPolicy(), a->verticalScrollBarPolicy()});
            a->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
            a->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
        }
        if (!m_saved.empty()) relayout(view);
        m_view = view;
    }
    ~NoScrollBars()
    {
        for (auto it = m_saved.rbegin(); it != m_saved.rend(); ++it)
            if (it->area) {
                it->area->setHorizontalScrollBarPolicy(it->horizontal);
                it->area->setVerticalScrollBarPolicy(it->vertical);
            }
        if (!m_saved.empty() && m_view) relayout(m_view);
    }
    NoScrollBars(const NoScrollBars &) = delete;
    NoScrollBars &operator=(const NoScrollBars &) = delete;

private:
    struct Saved
    {
        QPointer<QAbstractScrollArea> area;
        Qt::ScrollBarPolicy horizontal, vertical;
    };
    std::vector<Saved> m_saved;
    QPointer<QWidget> m_view;
};

// While alive, the view's controls (buttons, check boxes, sliders, spin boxes, combo boxes, text fields) are
// hidden with the labels of their form rows, and what they were set to is kept as one line of settings: a
// figure is read, not operated. Controls inside tables and trees (their editors) are left alone.
class HiddenControls
{
public:
    explicit HiddenControls(QWidget *view)
    {
        const auto isControl = [](QWidget *w) {
            return qobject_cast<QAbstractButton *>(w) || qobject_cast<QComboBox *>(w) ||
                   qobject_cast<QAbstractSpinBox *>(w) || qobject_cast<QLineEdit *>(w) ||
                   (qobject_cast<QAbstractSlider *>(w) && !qobject_cast<QScrollBar *>(w));
        };
        const auto inItemView = [view](QWidget *w) {
            for (QWidget *p = w->parentWidget(); p && p != view; p = p->parentWidget())
                if (qobject_cast<QAbstractItemView *>(p) || qobject_cast<QAbstractSpinBox *>(p) ||
                    qobject_cast<QComboBox *>(p))
                    return true;
            return false;
        };
        // Each form row's label, by the controls of its field.
        std::map<QWidget *, QWidget *> labelOf;
        for (QFormLayout *form : view->findChildren<QFormLayout *>())
            for (int row = 0; row < form->rowCount(); ++row) {
                QLayoutItem *label = form->itemAt(row, QFormLayout::LabelRole);
                QLayoutItem *field = form->itemAt(row, QFormLayout::FieldRole);
                if (!label || !label->widget() || !field) continue;
                if (field->widget()) labelOf[field->widget()] = label->widget();
                if (QLayout *l = field->layout())
                    for (int i = 0; i < l->count(); ++i)
                        if (QWidget *w = l->itemAt(i)->widget()) labelOf[w] = label->widget();
            }
        // A short label just before a control in a row ("Engine [combo]", "Layer [combo] against [combo]").
        for (QBoxLayout *box : view->findChildren<QBoxLayout *>())
            for (int i = 0; i + 1 < box->count(); ++i) {
                auto *label = qobject_cast<QLabel *>(box->itemAt(i)->widget());
                QWidget *next = box->itemAt(i + 1)->widget();
                if (label && next && isControl(next) && !labelOf.count(next) && label->text().size() <= 40)
                    labelOf[next] = label;
            }
        // The keyboard's focus comes back where it was (hiding a focused field moves it on).
        if (QWidget *f = QApplication::focusWidget(); f && view->isAncestorOf(f)) m_focus = f;
        std::set<QWidget *> labelsDone;
        for (QWidget *w : view->findChildren<QWidget *>()) {
            if (!isControl(w) || !w->isVisibleTo(view) || inItemView(w)) continue;
            QWidget *label = labelOf.count(w) ? labelOf[w] : nullptr;
            if (!label) label = qobject_cast<QWidget *>(w->property("atlasFieldLabel").value<QObject *>()); // ReflowGrid
            if (label && !label->isVisibleTo(view)) label = nullptr;
            const QString name = label ? plain(label) : QString();
            QString value;
            if (auto *c = qobject_cast<QComboBox *>(w)) value = c->currentText();
            else if (auto *b = qobject_cast<QAbstractSpinBox *>(w)) value = b->text();
            else if (auto *e = qobject_cast<QLineEdit *>(w)) value = e->text();
            else if (auto *b = qobject_cast<QAbstractButton *>(w); b && b->isCheckable() && b->isChecked())
                value = QString(b->text()).remove(QLatin1Char('&'));
            if (!w->isEnabled()) value.clear(); // a setting that does not apply now (custom memory of a named GPU)
            if (!value.isEmpty()) m_settings << (name.isEmpty() ? value : name + QStringLiteral(": ") + value);
            hide(w);
            if (label && labelsDone.insert(label).second) hide(label);
        }
        if (!m_hidden.empty()) relayout(view); // the rows they held close up
        m_view = view;
    }
    ~HiddenControls()
    {
        for (auto it = m_hidden.rbegin(); it != m_hidden.rend(); ++it)
            if (*it) (*it)->show();
        if (!m_hidden.empty() && m_view) relayout(m_view);
        if (m_focus && QApplication::focusWidget() != m_focus) m_focus->setFocus(Qt::OtherFocusReason);
    }
    QString settings() const { return m_settings.join(QStringLiteral(" · ")); }
    QStringList items() const { return m_settings; }

private:
    static QString plain(QWidget *label)
    {
        auto *l = qobject_cast<QLabel *>(label);
        QString t = l ? l->text() : QString();
        t.remove(QLatin1Char('&'));
        while (t.endsWith(QLatin1Char(':')))
            t.chop(1);
        return t.trimmed();
    }
    void hide(QWidget *w)
    {
        m_hidden.push_back(w);
        w->hide();
    }
    std::vector<QPointer<QWidget>> m_hidden;
    QPointer<QWidget> m_view;
    QPointer<QWidget> m_focus;
    QStringList m_settings;
};

// The widget, then the caption in a strip of its own below it; a cut table's foot says what it leaves out.
// Every colour painted here is opaque (a faint colour mixed with the page): an SVG renderer that ignores
// fill-opacity draws it as it is meant.
void paintFigure(QPainter &p, QWidget *widget, const QString &caption, const std::vector<CutNote> &notes,
                 bool document)
{
    // A figure is read, not clicked: labels with an "exportText" show it instead, and painted hints go.
    std::vector<std::pair<QLabel *, QString>> swapped;
    for (QLabel *label : widget->findChildren<QLabel *>())
        if (const QVariant t = label->property("exportText"); t.isValid()) {
            swapped.emplace_back(label, label->text());
            label->setText(t.toString());
        }
    setExportingFigure(true);
    widget->render(&p, QPoint(), QRegion(), QWidget::DrawWindowBackground | QWidget::DrawChildren);
    setExportingFigure(false);
    for (auto &[label, text] : swapped)
        label->setText(text);
    const QColor page = widget->palette().color(QPalette::Window), ink = widget->palette().color(QPalette::WindowText);
    for (const CutNote &note : notes) {
        const QColor base = widget->palette().color(QPalette::Base);
        p.fillRect(note.strip, mixColour(base, ink, 0.04));
        p.setPen(QPen(mixColour(base, ink, 0.25), 1));
        p.drawLine(note.strip.topLeft(), note.strip.topRight());
        p.setPen(mixColour(ink, base, 0.3));
        p.setFont(widget->font());
        p.drawText(note.strip.adjusted(8, 0, -8, 0), Qt::AlignLeft | Qt::AlignVCenter,
                   QFontMetrics(widget->font()).elidedText(note.text, Qt::ElideRight, note.strip.width() - 16));
    }
    if (caption.isEmpty()) return;
    const QStringList lines = caption.split(QLatin1Char('\n'));
    const QFont f = captionFont(widget, document);
    p.setFont(f);
    for (int i = 0; i < lines.size(); ++i) {
        const QRect strip(0, widget->height() + i * kCaptionHeight, widget->width(), kCaptionHeight);
        p.fillRect(strip, page);
        p.setPen(mixColour(ink, page, 0.3));
        p.drawText(strip.adjusted(20, 0, -20, 0), Qt::AlignLeft | Qt::AlignVCenter,
                   QFontMetrics(f).elidedText(lines[i], Qt::ElideMiddle, strip.width() - 40));
    }
}

// Charts draw as vectors into SVG and PDF while alive, and switch back to raster afterwards.
struct VectorCharts
{
    explicit VectorCharts(bool on) { ChartWidget::setVectorOutput(on); }
    ~VectorCharts() { ChartWidget::setVectorOutput(false); }
    VectorCharts(const VectorCharts &) = delete;
    VectorCharts &operator=(const VectorCharts &) = delete;
};

// The font sizes of an SVG's text, in its user units: a <text>'s own font-size (QSvgGenerator writes one on
// each), else the one of the <g> around it.
std::vector<double> svgTextSizes(const QByteArray &svg)
{
    std::vector<double> sizes;
    double current = 0;
    static const QRegularExpression token(QStringLiteral("<g [^>]*?font-size=\"([0-9.]+)\"|<text\\b([^>]*)>"));
    static const QRegularExpression own(QStringLiteral("font-size=\"([0-9.]+)\""));
    const QString text = QString::fromUtf8(svg);
    for (auto it = token.globalMatch(text); it.hasNext();) {
        const QRegularExpressionMatch m = it.next();
        if (m.capturedView(0).startsWith(QLatin1String("<g"))) {
            current = m.captured(1).toDouble();
        } else if (const QRegularExpressionMatch o = own.match(m.captured(2)); o.hasMatch()) {
            sizes.push_back(o.captured(1).toDouble());
        } else if (current > 0) {
            sizes.push_back(current);
        }
    }
    return sizes;
}

// The smallest text the figure draws, in window pixels: the view painted once into an SVG at the screen's
// density (where a font size in user units is its size in pixels), charts as vectors.
double smallestTextPx(QWidget *widget, const QString &caption, const std::vector<CutNote> &notes, bool document)
{
    QBuffer buffer;
    buffer.open(QIODevice::WriteOnly);
    QSvgGenerator svg;
    svg.setOutputDevice(&buffer);
    svg.setResolution(widget->logicalDpiX());
    svg.setSize(widget->size());
    svg.setViewBox(QRect(QPoint(), widget->size()));
    {
        const VectorCharts vector(true);
        QPainter p(&svg);
        paintFigure(p, widget, caption, notes, document);
    }
    const std::vector<double> sizes = svgTextSizes(buffer.data());
    return sizes.empty() ? 0.0 : *std::min_element(sizes.begin(), sizes.end());
}

} // namespace

static int g_pngScale = 2;

void setPngScale(int scale)
{
    g_pngScale = scale == 1 ? 1 : 2;
}

int pngScale()
{
    return g_pngScale;
}

bool exportWidget(QWidget *widget, const QString &path, QString *error, const QString &caption,
                  const FigureOptions &options, FigureReport *report)
{
    const QString suffix = QFileInfo(path).suffix().toLower();
    auto fail = [&](const QString &why) {
        if (error) *error = why;
        return false;
    };
    if (suffix != QLatin1String("png") && suffix != QLatin1String("svg") && suffix != QLatin1String("pdf"))
        return fail(QStringLiteral("%1: choose a .png, .svg or .pdf file name").arg(path));
    const bool document = options.columnCm > 0;
    const bool exact = !document && options.size.width() > 0 && options.size.height() > 0;
    if (document && (options.columnCm < kMinColumnCm || options.columnCm > kMaxColumnCm))
        return fail(QStringLiteral("a document column of %1 cm: choose %2 to %3 cm%4")
                        .arg(options.columnCm)
                        .arg(kMinColumnCm)
                        .arg(kMaxColumnCm)
                        .arg(options.columnCm < kMinColumnCm ? QStringLiteral(" (narrower, no view fits with 8-pt text)")
                                                             : QString()));
    const HiddenControls controls(widget);
    // The settings the controls held come first in the caption (a figure has no controls).
    const QString settingsLine = controls.settings();
    const QFont font = captionFont(widget, document);
    const NoScrollBars noScrollBars(widget);
    // The settings, then the provenance, each wrapped to the figure's width (never elided).
    auto captionAt = [&](int width) {
        QStringList lines = wrapItems(controls.items(), font, width - 40);
        if (!caption.isEmpty()) lines << wrapItems(caption.split(QStringLiteral(" · ")), font, width - 40);
        return lines;
    };
    const double columnPt = options.columnCm / 2.54 * 72;
    std::optional<Resized> resized;
    if (document) {
        // As wide as lets the smallest text print at 8 pt in the column (and no narrower than the view can be).
        const double px = smallestTextPx(widget, captionAt(widget->width()).join(QLatin1Char('\n')), {}, true);
        int width = px > 0 ? int(std::floor(columnPt * px / 8.0 + 1e-6)) : widget->width();
        width = std::max(width, widget->minimumSizeHint().width());
        resized.emplace(widget, QSize(width, widget->height()));
    } else if (exact) {
        const int lines = int(captionAt(options.size.width()).size());
        resized.emplace(widget, QSize(options.size.width(), std::max(40, options.size.height() - lines * kCaptionHeight)));
    }
    // At the column's width, tables write long counts short and break what does not fit between words, and
    // charts keep room to draw (the text around them takes more lines).
    std::optional<ShortCounts> shortCounts;
    if (document) shortCounts.emplace(widget);
    std::optional<ChartRoom> chartRoom;
    if (document) chartRoom.emplace(widget);
    std::optional<FullHeight> fullHeight;
    if (!exact) fullHeight.emplace(widget, document ? kDocumentTableRows : 0);
    // A document figure is as tall as its content wants, not as the window is.
    std::optional<Resized> natural;
    if (document)
        natural.emplace(widget, QSize(widget->width(), std::max(neededHeight(widget), widget->sizeHint().height())));
    const QStringList captionLines = captionAt(widget->width());
    const QString captionText = captionLines.join(QLatin1Char('\n'));
    const std::vector<CutNote> notes = cutNotes(widget);
    const QSize size = exact ? options.size : widget->size() + QSize(0, int(captionLines.size()) * kCaptionHeight);
    // Print size: the column's width, or the screen's (96 window pixels an inch).
    const double inches = document ? options.columnCm / 2.54 : size.width() / 96.0;
    const int scale = options.pngScale > 0 ? options.pngScale
                      : document           ? std::clamp(int(std::ceil(300.0 * inches / size.width())), 2, 6)
                                           : g_pngScale;
    if (report) {
        report->layout = widget->size();
        report->figure = size;
        report->smallestPx = smallestTextPx(widget, captionText, notes, document);
        report->smallestPt = report->smallestPx * (inches * 72.0 / size.width());
        report->pngScale = scale;
        report->pngDpi = int(std::lround(scale * size.width() / inches));
        report->cut.clear();
        for (const CutNote &n : notes)
            report->cut << n.summary;
    }
    // Charts draw as vectors, sharp at any scale of a PNG and as shapes and text in SVG and PDF.
    const VectorCharts vector(true);
    if (suffix == QLatin1String("png")) {
        QImage image(size * scale, QImage::Format_ARGB32_Premultiplied);
        image.setDevicePixelRatio(double(scale));
        image.fill(widget->palette().color(QPalette::Window));
        QPainter p(&image);
        paintFigure(p, widget, captionText, notes, document);
        p.end();
        // Its real density (pHYs), so a word processor places it at the column's or the window's size, and
        // its provenance as PNG text (tEXt).
        const int dotsPerMeter = int(std::lround(scale * size.width() / (inches * 0.0254)));
        image.setDotsPerMeterX(dotsPerMeter);
        image.setDotsPerMeterY(dotsPerMeter);
        image.setText(QStringLiteral("Software"), QStringLiteral("Checkpoint Atlas"));
        if (!widget->windowTitle().isEmpty()) image.setText(QStringLiteral("Title"), widget->windowTitle());
        if (!caption.isEmpty()) image.setText(QStringLiteral("Source"), caption);
        if (!settingsLine.isEmpty()) image.setText(QStringLiteral("Settings"), settingsLine);
        if (!image.save(path, "PNG")) return fail(QStringLiteral("%1: cannot write the PNG file").arg(path));
        return true;
    }
    // Millimetres on the page: the column's width, or the window's at 96 dpi.
    const double mmWide = inches * 25.4, mmHigh = mmWide * size.height() / size.width();
    if (suffix == QLatin1String("svg")) {
        QSvgGenerator svg;
        svg.setFileName(path);
        svg.setSize(size);
        svg.setViewBox(QRect(QPoint(), size));
        // At the screen's density a font's size in user units is its size in pixels, as the view laid it out
        // (at the generator's default 72 dpi a 9-pt font would be written 9 units high in a 12-pixel line).
        svg.setResolution(widget->logicalDpiX());
        svg.setTitle(widget->windowTitle());
        svg.setDescription(caption.isEmpty() ? QStringLiteral("Checkpoint Atlas") : caption);
        QPainter p;
        if (!p.begin(&svg)) return fail(QStringLiteral("%1: cannot write the SVG file").arg(path));
        paintFigure(p, widget, captionText, notes, document);
        p.end();
        QFile file(path);
        if (!file.open(QIODevice::ReadOnly)) return fail(QStringLiteral("%1: the SVG file was not written").arg(path));
        QByteArray text = file.readAll();
        file.close();
        const qsizetype open = text.indexOf("<svg");
        const qsizetype end = open < 0 ? -1 : text.indexOf('>', open);
        if (end < 0) return fail(QStringLiteral("%1: the SVG file was not written whole").arg(path));
        // Its size on the page, in millimetres.
        static const QRegularExpression dims(QStringLiteral("width=\"[0-9.]+mm\" height=\"[0-9.]+mm\""));
        QString head = QString::fromUtf8(text.left(end + 1));
        head.replace(dims, QStringLiteral("width=\"%1mm\" height=\"%2mm\"")
                               .arg(QString::number(mmWide, 'f', 2), QString::number(mmHigh, 'f', 2)));
        // The provenance as SVG <metadata> (Dublin Core), beside the <desc> the generator wrote.
        if (!caption.isEmpty())
            head += QStringLiteral("\n<metadata><rdf:RDF xmlns:rdf=\"http://www.w3.org/1999/02/22-rdf-syntax-ns#\" "
                                   "xmlns:dc=\"http://purl.org/dc/elements/1.1/\"><rdf:Description><dc:source>") +
                    caption.toHtmlEscaped() +
                    QStringLiteral("</dc:source><dc:creator>Checkpoint Atlas</dc:creator></rdf:Description></rdf:RDF></metadata>");
        // Every faint fill made opaque, its colour mixed with the page's (an SVG renderer that ignores
        // fill-opacity would draw card captions black and a splitter's grip as dark dots).
        QString body = QString::fromUtf8(text.mid(end + 1));
        static const QRegularExpression faint(QStringLiteral("fill=\"#([0-9a-fA-F]{6})\" fill-opacity=\"(0(?:\\.[0-9]+)?)\""));
        const QColor page = widget->palette().color(QPalette::Window);
        QString opaque;
        opaque.reserve(body.size());
        qsizetype from = 0;
        for (auto it = faint.globalMatch(body); it.hasNext();) {
            const QRegularExpressionMatch m = it.next();
            opaque += QStringView(body).mid(from, m.capturedStart() - from);
            const QColor ink(QLatin1Char('#') + m.captured(1));
            const double alpha = m.captured(2).toDouble();
            opaque += alpha < 0.004 ? QStringLiteral("fill=\"none\"")
                                    : QStringLiteral("fill=\"%1\" fill-opacity=\"1\"").arg(mixColour(page, ink, alpha).name());
            from = m.capturedEnd();
        }
        opaque += QStringView(body).mid(from);
        text = head.toUtf8() + opaque.toUtf8();
        if (!file.open(QIODevice::WriteOnly | QIODevice::Truncate) || file.write(text) != text.size())
            return fail(QStringLiteral("%1: cannot write the SVG file").arg(path));
        return true;
    }
    QPdfWriter pdf(path);
    pdf.setResolution(96);
    pdf.setPageSize(QPageSize(QSizeF(mmWide, mmHigh), QPageSize::Millimeter));
    pdf.setPageMargins(QMarginsF(0, 0, 0, 0));
    pdf.setCreator(QStringLiteral("Checkpoint Atlas"));
    if (!caption.isEmpty()) pdf.setTitle(caption);
    QPainter p;
    if (!p.begin(&pdf)) return fail(QStringLiteral("%1: cannot write the PDF file").arg(path));
    const double s = double(pdf.width()) / double(size.width());
    p.scale(s, s);
    paintFigure(p, widget, captionText, notes, document);
    p.end();
    return true;
}

} // namespace atlas
