#include "main_window.h"

#include "llama_plan.h"
#include "parallel_for.h"
#include <QFile>
#include <QImage>
#include <QGuiApplication>
#include <QClipboard>
#include <QTemporaryDir>

#include "anatomy_view.h"
#include "focus_ring.h"
#include "bias_view.h"
#include "budget_view.h"
#include "cache_view.h"
#include "checkpoint_loader.h"
#include "colours.h"
#include "compare_view.h"
#include "errors.h"
#include "indexshare_view.h"
#include "layers_view.h"
#include "open_dialog.h"
#include "overview_view.h"
#include "plan_view.h"
#include "preferences_dialog.h"
#include "report.h"
#include "routing_runner.h"
#include "routing_view.h"
#include "settings.h"
#include "report_command.h"
#include "untrusted_text.h"
#include "view_export.h"
#include "wrap_label.h"

#include <thread>
#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QDate>
#include <QDir>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QInputDialog>
#include <QTimer>
#include <QPointer>
#include <QThread>

#include <limits>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPainter>
#include <QProgressBar>
#include <QProxyStyle>
#include <QStackedWidget>
#include <QStatusBar>
#include <QStyleFactory>
#include <QToolBar>
#include <QToolButton>
#include <QVBoxLayout>

// Resources in a static library must be registered by hand, outside any namespace.
static void initAtlasResources()
{
    Q_INIT_RESOURCE(resources);
}

namespace atlas {

namespace {
// The provenance line, made with the views' parts on the loader's thread.
struct PreparedProvenance final : PreparedView
{
    QString text;
};
} // namespace

MainWindow::MainWindow(bool interactive, QWidget *parent)
    : QMainWindow(parent), m_interactive(interactive), m_loader(new CheckpointLoader(this)),
      m_routing(new RoutingRunner(this)), m_sidebar(new QListWidget(this)), m_stack(new QStackedWidget(this)),
      m_error(new WrapLabel(this)), m_statusText(new QLabel(this)), m_progress(new QProgressBar(this)),
      m_cancel(new QToolButton(this))
{
    initAtlasResources();
    m_compareLoader = new CheckpointLoader(this);
    setWindowTitle(tr("Checkpoint Atlas"));
    setWindowIcon(QIcon(QStringLiteral(":/icons/ckpt-atlas.svg")));
    setAcceptDrops(true);

    m_views = {new OverviewView(this), new AnatomyView(this), new LayersView(this), new BudgetView(this),
               new IndexShareView(this), new CacheView(this),  new BiasView(this),   new RoutingView(this),
               new CompareView(this), new PlanView(this)};
    // The Overview's cache card and the Plan follow the Cache view's settings.
    auto *overview = static_cast<OverviewView *>(m_views[0]);
    connect(static_cast<CacheView *>(m_views[5]), &CacheView::budgetChanged, overview,
            &OverviewView::setCacheBudget);
    connect(static_cast<CacheView *>(m_views[5]), &CacheView::budgetChanged, static_cast<PlanView *>(m_views[9]),
            &PlanView::setCacheBudget);
    // The Plan view's Pareto chart: the search runs on a worker thread (a few hundred plans), the newest
    // answer only is shown.
    auto *planView = static_cast<PlanView *>(m_views[9]);
    connect(planView, &PlanView::searchWanted, this, [this, planView](const SearchOptions &options) {
        if (!m_current) {
            planView->searchFailed(tr("No checkpoint to search deployments for."));
            return;
        }
        m_searches.start([this, planView, options, data = m_current](const std::shared_ptr<JobThreads::Job> &job) {
            try {
                SearchOptions o = options;
                o.cancel = &job->cancel;
                auto found = std::make_shared<DeploymentSearch>(searchDeployments(*data, o));
                m_searches.deliver(planView, job, [planView, found] { planView->setSearch(*found); });
            } catch (const std::exception &e) {
                const QString why = QString::fromStdString(printable(e.what()));
                m_searches.deliver(planView, job, [planView, why, serial = options.serial] { planView->searchFailed(why, serial); });
            }
        });
    });
    // The Overview's "Fits on" the same way, for the GPUs ticked there (kept in the settings); "plan it"
    // opens the Plan view on that deployment.
    overview->setTickedGpus(settings::fitsGpus());
    connect(overview, &OverviewView::tickedGpusChanged, this, [](const QStringList &names) { settings::setFitsGpus(names); });
    connect(overview, &OverviewView::fitsWanted, this, [this, overview](const SearchOptions &options) {
        if (!m_current) {
            overview->fitsFailed(tr("No checkpoint to search deployments for."));
            return;
        }
        m_fits.start([this, overview, options, data = m_current](const std::shared_ptr<JobThreads::Job> &job) {
            try {
                if (data->checkpoint.format == CheckpointFormat::Gguf) {
                    // A GGUF runs on llama.cpp: each GPU's offload, in its flags' words.
                    QStringList lines;
                    for (const GpuPreset *gpu : options.gpus) {
                        if (!gpu) continue;
                        LlamaPlanOptions lo;
                        lo.gpuMemory = gpu->bytes;
                        lo.gpuName = std::string(gpu->name);
                        lo.context = options.context;
                        CacheOptions co;
                        if (options.context) co.contextTokens = options.context;
                        const LlamaPlan p = planLlamaCpp(*data, lo, co);
                        const QString name = QString::fromUtf8(gpu->name.data(), qsizetype(gpu->name.size())).toHtmlEscaped();
                        lines << (p.fitsGpu ? tr("<b>%1</b>: <tt>%2</tt> · GPU %3, host memory %4")
                                                  .arg(name, QString::fromStdString(p.flags).toHtmlEscaped(),
                                                       QString::fromStdString(binaryBytes(p.gpuTotal)),
                                                       QString::fromStdString(binaryBytes(p.hostTotal)))
                                            : tr("<b>%1</b>: does not fit one (even <tt>%2</tt> needs %3)")
                                                  .arg(name, QString::fromStdString(p.flags).toHtmlEscaped(),
                                                       QString::fromStdString(binaryBytes(p.gpuTotal))));
                    }
                    m_fits.deliver(overview, job, [overview, lines, serial = options.serial] { overview->setLlamaFits(lines, serial); });
                    return;
                }
                SearchOptions o = options;
                o.cancel = &job->cancel; // a newer search (another context, other GPUs) stops this one
                auto found = std::make_shared<DeploymentSearch>(searchDeployments(*data, o));
                m_fits.deliver(overview, job, [overview, found] { overview->setFits(*found); });
            } catch (const std::exception &e) {
                const QString why = QString::fromStdString(printable(e.what()));
                m_fits.deliver(overview, job, [overview, why, serial = options.serial] { overview->fitsFailed(why, serial); });
            }
        });
    });
    connect(overview, &OverviewView::planWanted, this,
            [this, planView](const QString &gpu, const SearchPoint &point, std::uint64_t context) {
        // The line as searched: vLLM, its own cache, no MTP layers, at that context.
        planView->setEngine(PlanEngine::Vllm);
        planView->setCacheFromCacheView(false);
        planView->setGpu(gpu);
        planView->setMtp(false);
        planView->setContext(int(std::min<std::uint64_t>(context, std::uint64_t(std::numeric_limits<int>::max()))));
        planView->setDeployment(point);
        showView(planView);
    });
    for (AtlasView *v : m_views) {
        m_stack->addWidget(v);
        m_sidebar->addItem(v->title());
        v->clearAll();
        // A view that does not apply to the checkpoint is greyed in the sidebar, its reason as tooltip.
        connect(v, &AtlasView::applicabilityChanged, this, [this, v](const QString &why) {
            QListWidgetItem *item = m_sidebar->item(int(m_views.indexOf(v)));
            if (!item) return;
            item->setToolTip(why.isEmpty() ? QString() : tr("Does not apply: %1").arg(why));
            item->setData(Qt::UserRole, !why.isEmpty());
            QColor muted = m_sidebar->palette().color(QPalette::Text);
            muted.setAlpha(110);
            // Muted when it does not apply; otherwise the palette's own text colour (follows a theme switch).
            if (why.isEmpty())
                item->setData(Qt::ForegroundRole, QVariant());
            else
                item->setForeground(QBrush(muted));
        });
    }
    m_sidebar->setFixedWidth(170);
    m_sidebar->setFrameShape(QFrame::NoFrame);
    m_sidebar->setStyleSheet(
        QStringLiteral("QListWidget { padding-top: 10px; font-size: 11pt; }"
                       "QListWidget::item { padding: 9px 14px; border-radius: 5px; margin: 1px 6px; }"
                       "QListWidget::item:selected { background: palette(highlight);"
                       " color: palette(highlighted-text); }"));
    m_sidebar->setCurrentRow(0);
    // A view still waiting for the checkpoint gets it before it shows.
    connect(m_sidebar, &QListWidget::currentRowChanged, this, [this](int row) {
        if (row >= 0 && row < m_views.size()) applyPending(m_views[row]);
    });
    connect(m_sidebar, &QListWidget::currentRowChanged, m_stack, &QStackedWidget::setCurrentIndex);
    connect(m_sidebar, &QListWidget::currentRowChanged, this, [this](int row) { visit({row, m_layer}); });
    // A layer picked in one view is shown in all of them (Anatomy, IndexShare, Router bias, Routing).
    for (AtlasView *v : m_views)
        connect(v, &AtlasView::layerSelected, this, [this, v](int layer) {
            applyAllPending(); // a view still waiting would follow the layer on the old checkpoint
            m_layer = layer;
            for (AtlasView *other : m_views)
                if (other != v) other->followLayer(layer);
            visit({int(m_views.indexOf(v)), layer});
        });

    m_error->setWordWrap(true);
    m_error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_error->setStyleSheet(bannerStyle(Banner::Error, QStringLiteral("margin: 8px 12px 0 12px;")));
    m_error->hide();

    auto *central = new QWidget(this);
    auto *h = new QHBoxLayout(central);
    h->setContentsMargins(0, 0, 0, 0);
    h->setSpacing(0);
    h->addWidget(m_sidebar);
    auto *right = new QVBoxLayout();
    right->setContentsMargins(0, 0, 0, 0);
    right->addWidget(m_error);
    right->addWidget(m_stack, 1);
    h->addLayout(right, 1);
    setCentralWidget(central);
    m_focusRing = new FocusRing(this);

    m_progress->setMaximumWidth(260);
    m_progress->setTextVisible(true);
    m_progress->hide();
    m_cancel->setText(tr("Cancel"));
    m_cancel->hide();
    connect(m_cancel, &QToolButton::clicked, this, &MainWindow::cancelLoad);
    statusBar()->addWidget(m_statusText, 1);
    statusBar()->addPermanentWidget(m_progress);
    statusBar()->addPermanentWidget(m_cancel);

    buildMenus();

    connect(m_loader, &CheckpointLoader::stage, this,
            [this](const QString &what) { m_statusText->setText(what); });
    connect(m_loader, &CheckpointLoader::progress, this,
            [this](quint64 done, quint64 total, quint64 bytes, quint64 requests) {
                if (total > 0) {
                    m_progress->setRange(0, int(total));
                    m_progress->setValue(int(done));
                } else {
                    m_progress->setRange(0, 0);
                }
                m_progress->setFormat(
                    (m_localLoad ? tr("%1/%2 files · %3 · %4 reads") : tr("%1/%2 files · %3 · %4 requests"))
                        .arg(done)
                        .arg(total)
                        .arg(binaryBytesQ(bytes))
                        .arg(requests));
            });
    m_applyNext = new QTimer(this);
    m_applyNext->setSingleShot(true);
    connect(m_applyNext, &QTimer::timeout, this, &MainWindow::applyNextPending);
    // The heavy part of showing a checkpoint (the Layers tree) is prepared on the loader's thread.
    // So is the figures' provenance line (a local folder's is a hash of its headers), after the views' parts.
    // The views are prepared on two threads, each taking the next view not yet taken: the Layers tree alone
    // takes longer than all the others together, and the layout is shown when every view is prepared.
    m_loader->setPreparer([views = m_views, version = QCoreApplication::applicationVersion()](
                              const LoadedCheckpoint &data, const std::atomic<bool> *cancel) {
        PreparedViews prepared(static_cast<std::size_t>(views.size()));
        parallelFor(prepared.size(), 2, [&](std::size_t i) { // the first error stops both
            stopIfCancelled(cancel);
            prepared[i] = views[qsizetype(i)]->prepare(data);
        });
        auto caption = std::make_shared<PreparedProvenance>();
        caption->text = qs(provenanceCaption(data.checkpoint, version.toStdString(),
                                             QDate::currentDate().toString(Qt::ISODate).toStdString()));
        prepared.push_back(std::move(caption));
        return prepared;
    });
    connect(
        m_loader, &CheckpointLoader::layoutReady, this,
        [this](std::shared_ptr<const LoadedCheckpoint> data, std::shared_ptr<const PreparedViews> prepared) {
            m_error->hide();
            m_current = data;
            m_compareLoader->discard(); // a comparison in flight was against the old A: never shown
            m_searches.forget();        // so are the deployment searches of the old checkpoint
            m_fits.forget();
            // The view on screen gets the checkpoint now; the others one per turn of the event loop, so that
            // no turn holds the GUI thread for all ten (each also gets it before it shows, and all of them
            // when the load ends).
            m_pendingData = data;
            m_pendingPrepared = prepared;
            m_pendingBiases.reset();
            m_pendingViews = m_views;
            // The Overview before any other: its cache card follows what the Cache view computes on arrival.
            // The view is laid out in this turn (the layout request is a posted event) and painted in a later
            // one: with updates off until a 1 ms timer, its paint is not added to this turn's stall.
            m_stack->setUpdatesEnabled(false);
            applyPending(m_views.front());
            if (auto *shown = qobject_cast<AtlasView *>(m_stack->currentWidget())) applyPending(shown);
            QTimer::singleShot(1, Qt::PreciseTimer, m_stack, [stack = m_stack] { stack->setUpdatesEnabled(true); });
            m_applyAfterPaint = true;
            m_applyNext->start(100);
            const auto *caption = prepared && prepared->size() > std::size_t(m_views.size())
                                      ? dynamic_cast<const PreparedProvenance *>(prepared->back().get())
                                      : nullptr;
            m_provenance = caption ? caption->text
                                   : qs(provenanceCaption(data->checkpoint, QCoreApplication::applicationVersion().toStdString(),
                                                          QDate::currentDate().toString(Qt::ISODate).toStdString()));
            setProperty("atlasProvenance", m_provenance); // what a table copied from any view cites
            const QString synthetic = data->checkpoint.synthetic() ? tr(" (synthetic demo)") : QString();
            setWindowTitle(tr("%1%2 — Checkpoint Atlas").arg(m_currentLabel, synthetic));
        });
    connect(m_loader, &CheckpointLoader::biasesReady, this, [this](std::shared_ptr<const BiasAudit> audit) {
        m_currentBiases = audit;
        m_pendingBiases = audit; // a view still waiting gets them with the checkpoint
        forEachView([&](AtlasView *v) {
            if (!m_pendingViews.contains(v)) v->setBiases(audit);
        });
    });
    auto done = [this](const QString &message) {
        m_progress->hide();
        // Cancel stays while a comparison still runs: it is then the comparison's.
        m_cancel->setVisible(m_compareLoader->isRunning());
        m_statusText->setText(message);
    };
    connect(m_loader, &CheckpointLoader::finished, this, [this, done] {
        // The views still waiting go on getting the checkpoint one per turn: all at once here was the
        // open's longest stall.
        m_announceWhenApplied = true;
        done(tr("%1 — layout in %2 s, biases by %3 s; %4")
                 .arg(m_currentLabel)
                 .arg(m_loader->layoutMs() / 1000.0, 0, 'f', 2)
                 .arg(m_loader->totalMs() / 1000.0, 0, 'f', 2)
                 .arg(m_progress->format()));
        announceIfShown();
    });
    connect(m_loader, &CheckpointLoader::cancelled, this, [this, done] {
        applyAllPending();
        done(tr("Load cancelled."));
    });
    connect(m_loader, &CheckpointLoader::failed, this, [this, done](const QString &message, int) {
        applyAllPending();
        done(tr("Load failed."));
        showError(message);
    });

    // A block clicked in the Anatomy view: its tensors, in the Layers view.
    auto *anatomy = qobject_cast<AnatomyView *>(view(QStringLiteral("anatomy")));
    auto *layers = qobject_cast<LayersView *>(view(QStringLiteral("layers")));
    connect(anatomy, &AnatomyView::tensorsChosen, this, [this, layers](const QString &filter) {
        layers->setFilterText(filter);
        showView(layers);
    });

    // Compare: B is loaded by a second loader; the diff against A is computed on its worker.
    auto *compare = qobject_cast<CompareView *>(view(QStringLiteral("compare")));
    connect(compare, &CompareView::compareRequested, this, &MainWindow::chooseComparison);
    connect(m_compareLoader, &CheckpointLoader::layoutReady, this,
            [this, compare](std::shared_ptr<const LoadedCheckpoint> b, std::shared_ptr<const PreparedViews> prepared) {
                std::shared_ptr<const CheckpointDiff> diff;
                if (prepared && !prepared->empty())
                    if (auto p = std::dynamic_pointer_cast<const PreparedDiff>(prepared->front())) diff = p->diff;
                if (!diff) return;
                guarded(compare, [&] { compare->setComparison(std::move(b), diff, m_compareLabel); });
                showView(compare);
            });
    connect(m_compareLoader, &CheckpointLoader::biasesReady, this, [this, compare](std::shared_ptr<const BiasAudit> audit) {
        guarded(compare, [&] { compare->setComparisonBiases(std::move(audit)); });
    });
    connect(m_compareLoader, &CheckpointLoader::failed, compare,
            [compare](const QString &message, int) { compare->showComparisonFailure(message); });
    // When the comparison ends, Cancel goes unless the checkpoint itself is still loading.
    auto comparisonOver = [this] { m_cancel->setVisible(m_loader->isRunning()); };
    connect(m_compareLoader, &CheckpointLoader::cancelled, this, [this, compare, comparisonOver] {
        compare->showComparisonCancelled(m_compareLabel);
        m_statusText->setText(tr("Comparison cancelled"));
        comparisonOver();
    });
    connect(m_compareLoader, &CheckpointLoader::failed, this, comparisonOver);
    connect(m_compareLoader, &CheckpointLoader::finished, this, [this, comparisonOver] {
        m_statusText->setText(tr("Compared with %1").arg(m_compareLabel));
        comparisonOver();
    });

    // The Routing view asks; the runner simulates off the GUI thread and answers.
    auto *routing = qobject_cast<RoutingView *>(view(QStringLiteral("routing")));
    connect(routing, &RoutingView::simulationRequested, m_routing, [this](RoutingRequest request) {
        // One core stays the window's: a simulation on every core competes with the GUI thread.
        const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
        if (request.options.threads == 0) request.options.threads = std::max(1u, cores - 1);
        m_routing->start(std::move(request));
    });
    connect(routing, &RoutingView::simulationCancelRequested, m_routing, &RoutingRunner::cancel);
    connect(m_routing, &RoutingRunner::finished, routing,
            [this, routing](std::shared_ptr<const RoutingRun> run) {
                guarded(routing, [&] { routing->showSimulation(std::move(run)); });
            });
    connect(m_routing, &RoutingRunner::failed, routing, &RoutingView::showSimulationFailure);
    connect(m_routing, &RoutingRunner::cancelled, routing, &RoutingView::showSimulationCancelled);

    if (m_interactive) { // headless figures and tests neither read nor write the user's window state
        restoreGeometry(settings::windowGeometry());
        restoreState(settings::windowState(), kStateVersion);
    }
    if (geometry().width() < 400) resize(1360, 860);
}

MainWindow::~MainWindow() = default;

AtlasView *MainWindow::view(const QString &fileStem) const
{
    for (AtlasView *v : m_views)
        if (v->fileStem() == fileStem) return v;
    return nullptr;
}

void MainWindow::applyPending(AtlasView *v)
{
    if (!m_pendingViews.removeOne(v) || !m_pendingData) return;
    const int i = int(m_views.indexOf(v));
    const auto p = m_pendingPrepared && i >= 0 && std::size_t(i) < m_pendingPrepared->size()
                       ? (*m_pendingPrepared)[std::size_t(i)]
                       : nullptr;
    guarded(v, [&] { v->setCheckpoint(m_pendingData, p); });
    if (m_pendingBiases) guarded(v, [&] { v->setBiases(m_pendingBiases); });
}

void MainWindow::applyNextPending()
{
    m_applyAfterPaint = false;
    if (m_pendingViews.isEmpty()) return;
    applyPending(m_pendingViews.front());
    if (!m_pendingViews.isEmpty())
        m_applyNext->start(1);
    else
        applyAllPending(); // nothing left: lets the data go
}

void MainWindow::applyAllPending()
{
    while (!m_pendingViews.isEmpty())
        applyPending(m_pendingViews.front());
    m_applyNext->stop();
    m_applyAfterPaint = false;
    m_pendingData.reset(); // every view holds it now
    m_pendingPrepared.reset();
    announceIfShown();
}

void MainWindow::announceIfShown()
{
    if (!m_announceWhenApplied || !m_pendingViews.isEmpty()) return;
    m_announceWhenApplied = false;
    emit checkpointShown();
}

void MainWindow::showView(AtlasView *view)
{
    m_sidebar->setCurrentRow(int(m_views.indexOf(view)));
}

void MainWindow::stepView(int by)
{
    if (m_views.isEmpty()) return;
    const int n = int(m_views.size());
    const int row = std::max(0, m_sidebar->currentRow());
    showView(m_views[((row + by) % n + n) % n]);
}

AtlasView *MainWindow::currentView() const
{
    const int row = m_sidebar->currentRow();
    return row >= 0 && row < m_views.size() ? m_views[row] : nullptr;
}

void MainWindow::visit(Place place)
{
    if (m_navigating) return;
    if (m_historyPos >= 0 && m_history[m_historyPos] == place) return;
    while (m_history.size() > m_historyPos + 1)
        m_history.removeLast(); // a new visit after going back drops the forward places
    m_history.append(place);
    if (m_history.size() > 200) m_history.removeFirst();
    m_historyPos = int(m_history.size()) - 1;
    if (m_back) m_back->setEnabled(m_historyPos > 0);
    if (m_forward) m_forward->setEnabled(false);
}

void MainWindow::applyPlace(const Place &place)
{
    applyAllPending();
    m_navigating = true;
    m_sidebar->setCurrentRow(place.view);
    if (place.layer >= 0 && place.layer != m_layer) {
        m_layer = place.layer;
        for (AtlasView *v : m_views)
            v->followLayer(place.layer);
    }
    m_navigating = false;
    if (m_back) m_back->setEnabled(m_historyPos > 0);
    if (m_forward) m_forward->setEnabled(m_historyPos + 1 < m_history.size());
}

bool MainWindow::goBack()
{
    if (m_historyPos <= 0) return false;
    applyPlace(m_history[--m_historyPos]);
    return true;
}

bool MainWindow::goForward()
{
    if (m_historyPos + 1 >= m_history.size()) return false;
    applyPlace(m_history[++m_historyPos]);
    return true;
}

QString MainWindow::errorText() const
{
    return m_error->isHidden() ? QString() : m_error->text();
}

bool MainWindow::progressVisible() const
{
    return !m_progress->isHidden();
}

QString MainWindow::progressText() const
{
    return m_progress->format();
}

void MainWindow::buildMenus()
{
    QMenu *file = menuBar()->addMenu(tr("&File"));
    QAction *open = file->addAction(tr("&Open…"), this, [this] {
        OpenDialog dialog(this);
        if (dialog.exec() == QDialog::Accepted && !dialog.source().isEmpty())
            openSource(dialog.source(), dialog.revision());
    });
    open->setShortcut(QKeySequence::Open);
    QAction *folder = file->addAction(tr("Open &Folder…"), this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Checkpoint folder"));
        if (!dir.isEmpty()) openSource(dir);
    });
    m_recentMenu = file->addMenu(tr("Open &Recent"));
    QAction *demo = file->addAction(tr("Open the &Demo"), this, &MainWindow::openDemo);
    QAction *reload = file->addAction(tr("Re&load"), this, [this] {
        if (m_lastSource.isEmpty())
            openDemo();
        else
            openSource(m_lastSource, m_lastRevision);
    });
    reload->setShortcut(QKeySequence::Refresh);
    m_compareAction = file->addAction(tr("&Compare With…"), this, &MainWindow::chooseComparison);
    m_compareAction->setShortcut(QKeySequence(tr("Ctrl+Shift+C")));
    file->addSeparator();
    QAction *exportView = file->addAction(tr("&Export View…"), this, &MainWindow::exportCurrentView);
    exportView->setShortcut(QKeySequence(tr("Ctrl+E")));
    QAction *exportDocument = file->addAction(tr("Export View for a Doc&ument…"), this, &MainWindow::exportCurrentViewForDocument);
    exportDocument->setShortcut(QKeySequence(tr("Ctrl+Shift+E")));
    file->addAction(tr("Export &All Figures…"), this, &MainWindow::exportAllFigures);
    file->addAction(tr("Export Repor&t…"), this, &MainWindow::exportReport);
    file->addSeparator();
    QAction *prefs = file->addAction(tr("&Preferences…"), this, [this] {
        PreferencesDialog dialog(this);
        dialog.exec();
    });
    prefs->setMenuRole(QAction::PreferencesRole);
    file->addSeparator();
    QAction *quit = file->addAction(tr("&Quit"), this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    // Edit › Copy Figure: the current view as an exported figure (no controls, its settings and provenance as
    // its caption), on the clipboard as PNG and as SVG, for a document or a chat.
    QMenu *edit = menuBar()->addMenu(tr("&Edit"));
    QAction *copyFigure = edit->addAction(tr("Copy &Figure"), this, &MainWindow::copyCurrentFigure);
    copyFigure->setShortcut(QKeySequence(tr("Ctrl+Alt+C"))); // Ctrl+Shift+C is File › Compare With…

    QMenu *viewMenu = menuBar()->addMenu(tr("&View"));
    auto *themes = new QActionGroup(this);
    const bool dark = settings::darkTheme();
    QAction *light = viewMenu->addAction(tr("&Light Theme"), this, [] {
        settings::setDarkTheme(false);
        applyTheme(Theme::Light);
    });
    QAction *darkAction = viewMenu->addAction(tr("&Dark Theme"), this, [] {
        settings::setDarkTheme(true);
        applyTheme(Theme::Dark);
    });
    for (QAction *a : {light, darkAction}) {
        a->setCheckable(true);
        themes->addAction(a);
    }
    (dark ? darkAction : light)->setChecked(true);

    QMenu *help = menuBar()->addMenu(tr("&Help"));
    help->addAction(tr("&About Checkpoint Atlas"), this, [this] {
        QMessageBox::about(
            this, tr("About Checkpoint Atlas"),
            tr("<b>Checkpoint Atlas</b><br>Layer tree, parameter budget, IndexShare, cache costs and "
               "router-bias audit of large MoE checkpoints, from their safetensors headers."));
    });

    m_back = viewMenu->addAction(tr("&Back"), this, [this] { goBack(); });
    m_back->setShortcuts(QKeySequence::Back);
    m_forward = viewMenu->addAction(tr("&Forward"), this, [this] { goForward(); });
    m_forward->setShortcuts(QKeySequence::Forward);
    m_back->setEnabled(false);
    m_forward->setEnabled(false);

    // The views by keyboard: Ctrl+1 ... Ctrl+0 in sidebar order, Ctrl+PgDown / Ctrl+PgUp to the next and
    // the previous, Ctrl+F to the Layers filter (typed text no longer lands in the sidebar).
    viewMenu->addSeparator();
    QAction *find = viewMenu->addAction(tr("F&ind Tensors"), this, [this] {
        auto *layers = qobject_cast<LayersView *>(view(QStringLiteral("layers")));
        if (!layers) return;
        showView(layers);
        layers->focusFilter();
    });
    find->setShortcut(QKeySequence::Find);
    QAction *next = viewMenu->addAction(tr("&Next View"), this, [this] { stepView(1); });
    next->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_PageDown));
    QAction *previous = viewMenu->addAction(tr("&Previous View"), this, [this] { stepView(-1); });
    previous->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_PageUp));
    QMenu *go = viewMenu->addMenu(tr("&Go To"));
    for (int i = 0; i < m_views.size(); ++i) {
        AtlasView *v = m_views[i];
        QAction *a = go->addAction(i < 10 ? QStringLiteral("&%1 %2").arg((i + 1) % 10).arg(v->title()) : v->title(), this,
                                   [this, v] { showView(v); });
        if (i < 10) a->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_0 + (i + 1) % 10)));
    }

    // Zoom of the Anatomy's stack and diagram (the other views follow the window's size).
    auto zoomAnatomy = [this](int steps) {
        auto *anatomy = qobject_cast<AnatomyView *>(view(QStringLiteral("anatomy")));
        if (!anatomy) return;
        if (m_stack->currentWidget() != anatomy) showView(anatomy);
        if (steps == 0)
            anatomy->setZoom(1);
        else
            anatomy->zoomBy(steps);
        m_statusText->setText(tr("Anatomy at %1%").arg(std::lround(anatomy->zoom() * 100)));
    };
    viewMenu->addSeparator();
    QAction *zoomIn = viewMenu->addAction(tr("&Zoom In (Anatomy)"), this, [zoomAnatomy] { zoomAnatomy(1); });
    zoomIn->setShortcuts({QKeySequence::ZoomIn, QKeySequence(Qt::CTRL | Qt::Key_Equal)});
    QAction *zoomOut = viewMenu->addAction(tr("Zoom O&ut (Anatomy)"), this, [zoomAnatomy] { zoomAnatomy(-1); });
    zoomOut->setShortcut(QKeySequence::ZoomOut);
    viewMenu->addAction(tr("&Actual Size (Anatomy)"), this, [zoomAnatomy] { zoomAnatomy(0); });

    QToolBar *tools = addToolBar(tr("Main"));
    tools->setObjectName(QStringLiteral("mainToolbar"));
    tools->setMovable(false);
    tools->setToolButtonStyle(Qt::ToolButtonTextOnly);
    tools->addAction(m_back);
    tools->addAction(m_forward);
    tools->addSeparator();
    tools->addAction(open);
    tools->addAction(folder);
    tools->addAction(demo);
    tools->addAction(reload);
    tools->addSeparator();
    tools->addAction(exportView);
    rebuildRecentMenu();
}

NetworkOptions MainWindow::networkOptions() const
{
    NetworkOptions o;
    o.connections = settings::connections();
    o.caBundle = settings::caBundle().toStdString();
    return o;
}

void MainWindow::openDemo()
{
    m_lastSource.clear();
    m_lastRevision.clear();
    m_currentLabel = tr("Demo: synthetic GLM-5.x FP8");
    SourceSpec spec;
    startLoad(spec, m_currentLabel);
}

void MainWindow::openSource(const QString &source, const QString &revision)
{
    const auto spec = sourceSpecFor(source, revision, QString());
    if (!spec) return;
    m_lastSource = source;
    m_lastRevision = revision;
    m_currentLabel = source + (revision.isEmpty() ? QString() : QLatin1Char('@') + revision);
    addRecent(source + (revision.isEmpty() ? QString() : QStringLiteral("@") + revision));
    startLoad(*spec, m_currentLabel);
}

std::optional<SourceSpec> MainWindow::sourceSpecFor(const QString &source, const QString &revision,
                                                    const QString &headline)
{
    SourceSpec spec;
    try {
        spec = parseSourceSpec(source.toStdString(), revision.toStdString());
    } catch (const AtlasError &e) {
        showError(QString::fromUtf8(e.what()), headline);
        return std::nullopt;
    }
    // The Hub endpoint of the settings, unless the environment names one.
    if (spec.kind == SourceSpec::Kind::Hub && qEnvironmentVariableIsEmpty("HF_ENDPOINT")) {
        const QString endpoint = settings::hubEndpoint();
        if (!endpoint.isEmpty()) spec.endpoint = endpoint.toStdString();
    }
    return spec;
}

QString MainWindow::captionFor(const AtlasView *v) const
{
    const QString note = v->provenanceNote();
    return note.isEmpty() || m_provenance.isEmpty() ? m_provenance : m_provenance + QStringLiteral(" · ") + note;
}

void MainWindow::chooseComparison()
{
    if (!m_current) {
        showError(tr("Open a checkpoint first: it is A, the one compared with."), tr("Nothing to compare."));
        return;
    }
    OpenDialog dialog(this);
    dialog.setWindowTitle(tr("Compare With"));
    if (dialog.exec() == QDialog::Accepted && !dialog.source().isEmpty())
        compareWith(dialog.source(), dialog.revision());
}

void MainWindow::compareWith(const QString &source, const QString &revision)
{
    if (!m_current) return;
    applyAllPending(); // the Compare view's "Reading B…" is not then cleared by the checkpoint arriving
    const auto spec = sourceSpecFor(source, revision, tr("Could not compare."));
    if (!spec) return;
    m_compareLabel = source + (revision.isEmpty() ? QString() : QLatin1Char('@') + revision);
    // The diff runs on the loader's worker, against the A shown when the comparison started.
    m_compareLoader->setPreparer([a = m_current](const LoadedCheckpoint &b, const std::atomic<bool> *cancel) {
        auto p = std::make_shared<PreparedDiff>();
        p->diff = std::make_shared<const CheckpointDiff>(diffCheckpoints(*a, b, nullptr, nullptr, cancel));
        return PreparedViews{p};
    });
    auto *compare = qobject_cast<CompareView *>(view(QStringLiteral("compare")));
    compare->showComparisonStarted(m_compareLabel);
    showView(compare);
    m_statusText->setText(tr("Comparing with %1…").arg(m_compareLabel));
    m_cancel->show();
    m_compareLoader->start(*spec, networkOptions());
}

void MainWindow::guarded(AtlasView *view, const std::function<void()> &fn)
{
    // A view that cannot show a checkpoint says so in the banner; it never takes the window down.
    try {
        fn();
    } catch (const std::exception &e) {
        view->clearAll();
        showError(
            tr("The %1 view cannot show this checkpoint: %2").arg(view->title(), QString::fromUtf8(e.what())),
            tr("Part of the checkpoint cannot be shown."));
    }
}

void MainWindow::forEachView(const std::function<void(AtlasView *)> &fn)
{
    for (AtlasView *v : m_views)
        guarded(v, [&] { fn(v); });
}

void MainWindow::startLoad(const SourceSpec &spec, const QString &label)
{
    m_error->hide();
    m_routing->discard(); // a simulation of the previous checkpoint is never shown over this one
    m_announceWhenApplied = false;
    m_localLoad = spec.kind == SourceSpec::Kind::Local;
    m_statusText->setText(tr("Opening %1…").arg(label));
    m_progress->setRange(0, 0);
    m_progress->setFormat(tr("starting…"));
    m_progress->show();
    m_cancel->show();
    m_loader->start(spec, networkOptions());
}

void MainWindow::cancelLoad()
{
    // The job in progress is the one cancelled: the checkpoint being opened, else the comparison.
    if (m_loader->isRunning())
        m_loader->cancel();
    else
        m_compareLoader->cancel();
}

void MainWindow::showError(const QString &message, const QString &headline)
{
    m_error->setText(
        QStringLiteral("<b>%1</b> %2")
            .arg(headline.isEmpty() ? tr("Could not open the checkpoint.") : headline.toHtmlEscaped(),
                 visibleText(message).toHtmlEscaped()));
    m_error->show();
}

void MainWindow::addRecent(const QString &source)
{
    settings::addRecentSource(source);
    rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu()
{
    m_recentMenu->clear();
    const QStringList recent = settings::recentSources();
    for (const QString &r : recent) {
        m_recentMenu->addAction(r, this, [this, r] {
            const auto at = r.lastIndexOf(QLatin1Char('@'));
            if (r.startsWith(QLatin1String("hf://")) && at > 0)
                openSource(r.left(at), r.mid(at + 1));
            else
                openSource(r);
        });
    }
    m_recentMenu->setEnabled(!recent.isEmpty());
}

void MainWindow::exportCurrentView()
{
    auto *v = qobject_cast<AtlasView *>(m_stack->currentWidget());
    if (!v) return;
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export %1").arg(v->title()), QDir::home().filePath(v->fileStem() + QStringLiteral(".png")),
        tr("PNG image (*.png);;SVG drawing (*.svg);;PDF document (*.pdf)"));
    if (path.isEmpty()) return;
    QString error;
    if (!exportWidget(v, path, &error, captionFor(v)))
        QMessageBox::warning(this, tr("Export failed"), error);
    else
        m_statusText->setText(tr("Saved %1").arg(path));
}

void MainWindow::exportCurrentViewForDocument()
{
    auto *v = qobject_cast<AtlasView *>(m_stack->currentWidget());
    if (!v) return;
    bool ok = false;
    const double cm = QInputDialog::getDouble(
        this, tr("Export %1 for a Document").arg(v->title()),
        tr("Width of the document's column, in centimetres. The view is laid out so that its smallest text prints "
           "at 8 pt or more at that width; long tables keep their first %1 rows.")
            .arg(kDocumentTableRows),
        settings::documentColumnCm(), kMinColumnCm, kMaxColumnCm, 1, &ok);
    if (!ok) return;
    settings::setDocumentColumnCm(cm);
    const QString path = QFileDialog::getSaveFileName(
        this, tr("Export %1").arg(v->title()), QDir::home().filePath(v->fileStem() + QStringLiteral(".svg")),
        tr("SVG drawing (*.svg);;PNG image (*.png);;PDF document (*.pdf)"));
    if (path.isEmpty()) return;
    FigureOptions options;
    options.columnCm = cm;
    FigureReport report;
    QString error;
    if (!exportWidget(v, path, &error, captionFor(v), options, &report)) {
        QMessageBox::warning(this, tr("Export failed"), error);
        return;
    }
    m_statusText->setText(tr("Saved %1 for a %2 cm column: laid out %3 px wide, smallest text %4 pt")
                              .arg(path)
                              .arg(cm)
                              .arg(report.layout.width())
                              .arg(report.smallestPt, 0, 'f', 1));
}

bool MainWindow::copyCurrentFigure()
{
    auto *v = qobject_cast<AtlasView *>(m_stack->currentWidget());
    if (!v || !m_current) return false;
    QTemporaryDir dir;
    QString error;
    const QString png = dir.filePath(v->fileStem() + QStringLiteral(".png")), svg = dir.filePath(v->fileStem() + QStringLiteral(".svg"));
    if (!dir.isValid() || !exportWidget(v, png, &error, captionFor(v)) || !exportWidget(v, svg, &error, captionFor(v))) {
        m_statusText->setText(tr("Could not copy the figure: %1").arg(error));
        return false;
    }
    auto *mime = new QMimeData;
    mime->setImageData(QImage(png));
    QFile svgFile(svg);
    if (svgFile.open(QIODevice::ReadOnly)) mime->setData(QStringLiteral("image/svg+xml"), svgFile.readAll());
    QGuiApplication::clipboard()->setMimeData(mime);
    m_statusText->setText(tr("Copied the %1 figure (PNG and SVG)").arg(v->title()));
    return true;
}

void MainWindow::exportAllFigures()
{
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder for the figures"));
    if (dir.isEmpty()) return;
    QStringList skipped;
    const QStringList failures = exportAllTo(dir, &skipped);
    if (!failures.isEmpty())
        QMessageBox::warning(this, tr("Export failed"), failures.join(QLatin1Char('\n')));
    else
        m_statusText->setText(skipped.isEmpty() ? tr("Saved every view to %1").arg(dir)
                                                : tr("Saved the views to %1; skipped %2 that do not apply (%3)")
                                                      .arg(dir)
                                                      .arg(skipped.size())
                                                      .arg(skipped.join(QStringLiteral("; "))));
}

// The one-page triage report (ckpt-atlas report): written off the GUI thread (the fits-on search plans some
// 3,000 deployments), its outcome told in the status bar or a message.
void MainWindow::exportReport()
{
    if (!m_current) return;
    const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder for the report"));
    if (dir.isEmpty()) return;
    LoadResult result;
    result.layout = m_current;
    result.biases = m_currentBiases;
    m_statusText->setText(tr("Writing the report to %1…").arg(dir));
    QPointer<MainWindow> window(this);
    QThread *thread = QThread::create([window, result, dir] {
        yieldToTheGuiThread();
        QString message;
        bool ok = true;
        try {
            writeTriageReport(result, PlanEngine::Vllm, dir.toStdString());
            message = MainWindow::tr("Saved the report (report.md, report.html, report.json) to %1").arg(dir);
        } catch (const std::exception &e) {
            ok = false;
            message = QString::fromStdString(printable(e.what()));
        }
        QMetaObject::invokeMethod(
            qApp,
            [window, ok, message] {
                if (!window) return;
                if (ok)
                    window->m_statusText->setText(message);
                else
                    QMessageBox::warning(window, MainWindow::tr("Report failed"), message);
            },
            Qt::QueuedConnection);
    });
    connect(thread, &QThread::finished, thread, &QObject::deleteLater);
    thread->start();
}

QString MainWindow::figureSkipReason(const AtlasView *v) const
{
    if (!v->notApplicable().isEmpty()) return v->notApplicable();
    if (const auto *compare = qobject_cast<const CompareView *>(v); compare && !compare->hasComparison())
        return tr("nothing to compare with (File › Compare With…, or figures --compare SOURCE)");
    return {};
}

QStringList MainWindow::exportAllTo(const QString &dir, QStringList *skipped)
{
    applyAllPending(); // every figure of the checkpoint its caption names
    QStringList failures;
    for (int n = 0; n < m_views.size(); ++n) {
        AtlasView *v = m_views[n];
        // A view that does not apply is told in one line, not exported as a figure of its empty state.
        if (const QString why = figureSkipReason(v); !why.isEmpty()) {
            if (skipped) skipped->append(QStringLiteral("%1: %2").arg(v->title(), why));
            continue;
        }
        for (const char *suffix : {".png", ".svg", ".pdf"}) {
            QString error;
            const QString path = QDir(dir).filePath(exportFileName(n, v->fileStem(), QLatin1String(suffix)));
            if (!exportWidget(v, path, &error, captionFor(v))) failures << error;
        }
    }
    return failures;
}

QString MainWindow::exportFileName(int viewIndex, const QString &stem, QLatin1String suffix)
{
    // "01-overview.png": numbered from 1 in sidebar order, the same number for every format.
    return QStringLiteral("%1-%2%3").arg(viewIndex + 1, 2, 10, QLatin1Char('0')).arg(stem, suffix);
}

bool MainWindow::event(QEvent *event)
{
    const bool handled = QMainWindow::event(event);
    if (event->type() == QEvent::UpdateRequest && m_applyAfterPaint) { // the view on screen is painted
        m_applyAfterPaint = false;
        // Not 1 ms: a timer that falls due while the paint still runs fires in the same pass as the paint,
        // before the window can answer anything (bench_gui measured the two as one 24 ms stall).
        if (m_applyNext->isActive()) m_applyNext->start(5);
    }
    return handled;
}

void MainWindow::closeEvent(QCloseEvent *event)
{
    if (m_interactive) settings::setWindowGeometry(saveGeometry(), saveState(kStateVersion));
    // Every job is told to stop; their threads are joined when the objects go, and each checks its
    // flag within a block of work (bench_cancel measures how soon).
    m_loader->cancel();
    m_compareLoader->cancel();
    m_routing->cancel();
    QMainWindow::closeEvent(event);
}

bool MainWindow::waitForJobs(std::chrono::steady_clock::time_point deadline)
{
    const bool a = m_loader->waitIdle(deadline);
    const bool b = m_compareLoader->waitIdle(deadline);
    const bool c = m_routing->waitIdle(deadline);
    const bool d = m_searches.waitIdle(deadline);
    const bool e = m_fits.waitIdle(deadline);
    return a && b && c && d && e;
}

void MainWindow::dragEnterEvent(QDragEnterEvent *event)
{
    const auto urls = event->mimeData()->urls();
    if (urls.size() == 1 && urls.front().isLocalFile() && QFileInfo(urls.front().toLocalFile()).isDir())
        event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent *event)
{
    const auto urls = event->mimeData()->urls();
    if (!urls.isEmpty()) openSource(urls.front().toLocalFile());
}

namespace {

// Fusion, with check boxes and radio buttons whose frame stays visible on the dark theme (Fusion draws it
// a shade darker than the window, which on a dark window is nearly black on black).
class AtlasStyle final : public QProxyStyle
{
public:
    AtlasStyle() : QProxyStyle(QStyleFactory::create(QStringLiteral("Fusion"))) {}
    void drawPrimitive(PrimitiveElement element, const QStyleOption *option, QPainter *painter,
                       const QWidget *widget) const override
    {
        QProxyStyle::drawPrimitive(element, option, painter, widget);
        if ((element != PE_IndicatorCheckBox && element != PE_IndicatorRadioButton) || !darkTheme()) return;
        painter->save();
        painter->setRenderHint(QPainter::Antialiasing);
        painter->setPen(QPen(QColor(0x8A, 0x90, 0x9A), 1));
        painter->setBrush(Qt::NoBrush);
        const QRectF r = QRectF(option->rect).adjusted(0.5, 0.5, -0.5, -0.5);
        if (element == PE_IndicatorRadioButton)
            painter->drawEllipse(r);
        else
            painter->drawRoundedRect(r, 2, 2);
        painter->restore();
    }
};

} // namespace

void MainWindow::themeChanged()
{
    m_error->setStyleSheet(bannerStyle(Banner::Error, QStringLiteral("margin: 8px 12px 0 12px;")));
    // What a fresh start would make with this palette: captions, the sidebar (its style sheet polished
    // again, its rows' colours anew).
    refreshCaptions(this);
    m_sidebar->setPalette(QApplication::palette(m_sidebar));
    m_sidebar->setStyleSheet(m_sidebar->styleSheet());
    for (int i = 0; i < m_sidebar->count(); ++i) {
        QListWidgetItem *item = m_sidebar->item(i);
        QColor muted = m_sidebar->palette().color(QPalette::Text);
        muted.setAlpha(110);
        if (item->data(Qt::UserRole).toBool())
            item->setForeground(QBrush(muted));
        else
            item->setData(Qt::ForegroundRole, QVariant());
    }
    for (AtlasView *v : m_views)
        v->themeChanged();
}

void MainWindow::applyTheme(Theme theme)
{
    qApp->setStyle(new AtlasStyle);
    QPalette p;
    if (theme == Theme::Dark) {
        const QColor window(0x24, 0x27, 0x2E), base(0x1B, 0x1E, 0x24), text(0xE6, 0xE8, 0xEC),
            accent(0x4C, 0x93, 0xD6);
        p.setColor(QPalette::Window, window);
        p.setColor(QPalette::WindowText, text);
        p.setColor(QPalette::Base, base);
        p.setColor(QPalette::AlternateBase, QColor(0x22, 0x26, 0x2D));
        p.setColor(QPalette::ToolTipBase, base);
        p.setColor(QPalette::ToolTipText, text);
        p.setColor(QPalette::Text, text);
        p.setColor(QPalette::Button, QColor(0x2E, 0x32, 0x3A));
        p.setColor(QPalette::ButtonText, text);
        p.setColor(QPalette::Highlight, accent);
        p.setColor(QPalette::HighlightedText, Qt::white);
        p.setColor(QPalette::Mid, QColor(0x44, 0x49, 0x52));
        p.setColor(QPalette::PlaceholderText, QColor(0x8A, 0x90, 0x9A));
        p.setColor(QPalette::Disabled, QPalette::Text, QColor(0x70, 0x75, 0x7E));
        p.setColor(QPalette::Disabled, QPalette::ButtonText, QColor(0x70, 0x75, 0x7E));
    } else {
        p = QStyleFactory::create(QStringLiteral("Fusion"))->standardPalette();
        p.setColor(QPalette::Window, QColor(0xF4, 0xF5, 0xF7));
        p.setColor(QPalette::AlternateBase, QColor(0xF2, 0xF5, 0xF9));
        p.setColor(QPalette::Highlight, QColor(0x2F, 0x6F, 0xB3));
    }
    qApp->setPalette(p);
    for (QWidget *w : QApplication::topLevelWidgets())
        if (auto *window = qobject_cast<MainWindow *>(w)) window->themeChanged();
}

} // namespace atlas
