#pragma once

#include "job_threads.h"

#include "atlas_view.h"
#include "loaded_checkpoint.h"
#include "source_spec.h"

#include <QMainWindow>

#include <chrono>
#include <functional>
#include <optional>

class QAction;
class QLabel;
class QListWidget;
class QMenu;
class QProgressBar;
class QStackedWidget;
class QTimer;
class QToolButton;

namespace atlas {

class AtlasView;
class FocusRing;
class BiasView;
class BudgetView;
class CacheView;
class CheckpointLoader;
class IndexShareView;
class LayersView;
class OverviewView;
class RoutingRunner;
class RoutingView;

// The main window: a sidebar of views, the loader wired to them, progress and cancel, export,
// recent sources, themes and settings.
class MainWindow final : public QMainWindow
{
    Q_OBJECT
public:
    FocusRing *focusRing() const { return m_focusRing; } // the keyboard focus drawn where the style draws none
    // interactive = false (headless figures and tests): the user's saved window state is neither
    // restored nor overwritten.
    explicit MainWindow(bool interactive = true, QWidget *parent = nullptr);
    ~MainWindow() override;

    void openDemo();
    void openSource(const QString &source, const QString &revision = {});
    void cancelLoad();
    CheckpointLoader *loader() const { return m_loader; }
    std::shared_ptr<const LoadedCheckpoint> current() const { return m_current; } // what the views show
    CheckpointLoader *compareLoader() const { return m_compareLoader; }
    const QList<AtlasView *> &views() const { return m_views; }
    AtlasView *view(const QString &fileStem) const;
    void showView(AtlasView *view);
    // The current view's figure on the clipboard, as PNG and SVG (Edit › Copy Figure); false when none was made.
    bool copyCurrentFigure();
    AtlasView *currentView() const; // the one the sidebar shows
    void stepView(int by);          // the next (1) or previous (-1) view, wrapping around
    // Back and Forward through the views and layers visited (a jump from a block to Layers, a layer
    // picked in one view); false when there is nowhere to go.
    bool goBack();
    bool goForward();
    int currentLayer() const { return m_layer; }
    // Loads B and shows the Compare view of the current checkpoint against it.
    void compareWith(const QString &source, const QString &revision = {});
    void chooseComparison();
    QString errorText() const;
    // Cancels every load and simulation and waits for their threads until `deadline` at most: false
    // when one is still blocked then (the program must then exit without waiting for it).
    bool waitForJobs(std::chrono::steady_clock::time_point deadline);
    // The provenance caption of the checkpoint shown, carried by every exported figure.
    QString provenance() const { return m_provenance; }
    // The caption of one view's exported figure: the provenance and what the view adds to it.
    QString captionFor(const AtlasView *view) const;
    bool progressVisible() const;
    QString progressText() const;

    // Every view as PNG, SVG and PDF into dir (File › Export All Figures); the errors, if any.
    QStringList exportAllTo(const QString &dir, QStringList *skipped = nullptr);
    // Why a view is not exported as a figure ("" when it is): it does not apply to this checkpoint, or
    // there is nothing to compare with.
    QString figureSkipReason(const AtlasView *v) const;
    // The file name of a view's figure in Export All Figures and `figures`.
    static QString exportFileName(int viewIndex, const QString &stem, QLatin1String suffix);

    enum class Theme { Light, Dark };
    static void applyTheme(Theme theme);
    // Colours chosen in code (the error banner, the views' banners, verdicts and series) follow the theme.
    void themeChanged();

signals:
    // The load has ended and every view holds its checkpoint and biases. The views after the one on
    // screen get them one per turn of the event loop, so this can come a few turns after the loader's
    // finished.
    void checkpointShown();

protected:
    bool event(QEvent *event) override;
    void closeEvent(QCloseEvent *event) override;
    void dragEnterEvent(QDragEnterEvent *event) override;
    void dropEvent(QDropEvent *event) override;

private:
    void buildMenus();
    void startLoad(const SourceSpec &spec, const QString &label);
    void addRecent(const QString &source);
    void rebuildRecentMenu();
    void exportCurrentView();
    void exportCurrentViewForDocument(); // laid out for a column (asks its width), as figures --document
    void exportAllFigures();
    void exportReport();
    void showError(const QString &message, const QString &headline = {});
    void guarded(AtlasView *view, const std::function<void()> &fn);
    void forEachView(const std::function<void(AtlasView *)> &fn);
    NetworkOptions networkOptions() const;
    // SOURCE@REVISION as a spec, with the settings' Hub endpoint; nullopt after showing the error.
    std::optional<SourceSpec> sourceSpecFor(const QString &source, const QString &revision, const QString &headline);

    bool m_interactive;
    CheckpointLoader *m_loader;
    RoutingRunner *m_routing;
    QListWidget *m_sidebar;
    FocusRing *m_focusRing = nullptr;
    QStackedWidget *m_stack;
    QLabel *m_error;
    QLabel *m_statusText;
    QProgressBar *m_progress;
    QToolButton *m_cancel;
    QMenu *m_recentMenu = nullptr;
    QList<AtlasView *> m_views;
    QString m_currentLabel;
    QString m_provenance; // the caption every exported figure carries
    std::shared_ptr<const LoadedCheckpoint> m_current;  // A: what the views show
    std::shared_ptr<const BiasAudit> m_currentBiases;
    // Views that have not yet been given the checkpoint just loaded (applyPending gives it to one).
    QList<AtlasView *> m_pendingViews;
    std::shared_ptr<const LoadedCheckpoint> m_pendingData;
    std::shared_ptr<const PreparedViews> m_pendingPrepared;
    std::shared_ptr<const BiasAudit> m_pendingBiases;
    // The views after the one on screen wait until the window has painted it: the first waits for the
    // paint (or 100 ms, if none comes) and then 5 ms, each next one for a 1 ms timer. A posted call or a
    // zero timer would run in the same stretch as the layout and paint the view before it posted, and the
    // two would be one stall. The view on screen is itself painted in the turn after its layout (updates
    // are off until a 1 ms timer).
    QTimer *m_applyNext = nullptr;
    bool m_applyAfterPaint = false;
    bool m_announceWhenApplied = false; // the load has finished: checkpointShown when no view waits
    void announceIfShown();
    void applyPending(AtlasView *v);
    void applyNextPending();
    void applyAllPending();
    CheckpointLoader *m_compareLoader = nullptr;        // B, for the Compare view
    QString m_compareLabel;
    QAction *m_compareAction = nullptr;
    QString m_lastSource, m_lastRevision;
    bool m_localLoad = true; // local reads are file reads, not HTTP requests
    struct Place
    {
        int view = 0;
        int layer = -1;
        bool operator==(const Place &) const = default;
    };
    void visit(Place place);
    void applyPlace(const Place &place);
    QList<Place> m_history;
    int m_historyPos = -1;
    bool m_navigating = false;
    int m_layer = -1;
    QAction *m_back = nullptr, *m_forward = nullptr;
    JobThreads m_searches; // the Plan view's deployment searches (each cancels the one before)
    JobThreads m_fits;     // the Overview's "Fits on" searches
};

} // namespace atlas
