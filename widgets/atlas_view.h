#pragma once

#include "loaded_checkpoint.h"

#include <QString>
#include <QWidget>

#include <memory>
#include <vector>

class QComboBox;
class QLabel;
class QTableWidget;
class QVBoxLayout;

namespace atlas {

// What a view computed from a checkpoint off the GUI thread, before showing it.
struct PreparedView
{
    virtual ~PreparedView() = default;
};

// What every view prepared, in the order of the views.
using PreparedViews = std::vector<std::shared_ptr<const PreparedView>>;

// One page of the main window. Views only show what model/ computed; they keep the data alive
// through shared pointers, so a new load can replace it at any time.
class AtlasView : public QWidget
{
    Q_OBJECT
public:
    using QWidget::QWidget;
    virtual QString title() const = 0;
    virtual QString fileStem() const = 0; // for exported figures: "overview", "layers", ...
    virtual void setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data) = 0;
    // Work too heavy for the GUI thread: a pure function of the checkpoint that touches no widget,
    // run by whoever loads (the window's loader, on its worker thread). Most views need none.
    virtual std::shared_ptr<const PreparedView> prepare(const LoadedCheckpoint &) const { return nullptr; }
    // Shows the checkpoint with what prepare() made (or without: then the view does the work itself).
    virtual void setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data,
                               std::shared_ptr<const PreparedView>)
    {
        setCheckpoint(std::move(data));
    }
    virtual void setBiases(std::shared_ptr<const BiasAudit>) {}
    // What an exported figure of this view adds to the checkpoint's provenance (B, for Compare).
    virtual QString provenanceNote() const { return {}; }
    virtual void clearAll() = 0;

    // Why the view has nothing to show for this checkpoint (one sentence: why, and what to do), or empty
    // when it applies. While set, the sentence covers the view, centred (exported figures show it too).
    QString notApplicable() const { return m_notApplicable; }

    // Another view (or Back / Forward) picked a layer: show it too, without announcing it again.
    virtual void followLayer(int) {}
    // The light / dark theme changed: colours chosen in code (banners, verdicts, series) are chosen again.
    virtual void themeChanged() { update(); }

signals:
    void applicabilityChanged(const QString &why);
    // The user picked a layer here (a cell, a row, a menu, the arrow keys): the other views follow.
    void layerSelected(int layer);

protected:
    void setNotApplicable(const QString &why);

private:
    QString m_notApplicable;
    QLabel *m_emptyState = nullptr;
};

// True while a view is being rendered into an exported figure: interaction hints ("click a layer") are
// left out. A QLabel with the property "exportText" shows that text in the figure instead of its own.
bool exportingFigure();
void setExportingFigure(bool on);

// Display helpers, in the domain's units.
QString qs(const std::string &s);
// A message that may carry text from a checkpoint or a server, with its control characters as \xNN.
QString visibleText(const QString &message);
QString groupDigitsQ(std::uint64_t v);
QString shortCountQ(std::uint64_t v);
QString binaryBytesQ(std::uint64_t v);
QString percentQ(double fraction, int decimals = 2);

// A heading label and a muted caption label, styled once.
QLabel *makeHeading(const QString &text, QWidget *parent = nullptr);
QLabel *makeCaption(const QString &text, QWidget *parent = nullptr);
// Captions take their muted colour from the application's palette when made; a theme switched while the
// window is open gives every caption under `root` the new palette's (a live switch equals a fresh start).
void refreshCaptions(QWidget *root);
// A combo box whose width does not follow its longest item: a narrow window elides the shown text;
// the list that drops down stays as wide as its items.
void letComboShrink(QComboBox *combo, int characters = 18);
// The view's content on a page that scrolls vertically (and sideways only when `sideways`) when the
// window is too short for it, instead of squeezing it; returns the page's layout, with the views' margins.
QVBoxLayout *makeScrollingPage(QWidget *view, bool sideways = false);
// A read-only table with these column headers, stretched columns and alternating rows.
// Every table of every view comes from here, with a context menu: copy the row, or the table as Markdown or CSV.
QTableWidget *makeTable(const QStringList &headers, QWidget *parent);
// A table as text (what those copies put on the clipboard): the headers, the rows as shown (onlyRow >= 0: that
// row alone), and the window's provenance (its "atlasProvenance" property) under them.
enum class TableFormat { Markdown, Csv };
QString tableText(const QTableWidget *table, TableFormat format, int onlyRow = -1);

} // namespace atlas
