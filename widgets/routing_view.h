#pragma once

#include "atlas_view.h"
#include "routing.h"
#include "wrap_label.h"

#include <memory>

class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace atlas {

class ChartWidget;

// The routing simulation: tokens, seed, spread or a logits file; changed-set fraction per layer
// for the BF16 variants, each labelled with the runtime paths it stands for; an engine picker;
// one layer's expert load under FP32 and a variant.
class RoutingView final : public AtlasView
{
    Q_OBJECT
public:
    explicit RoutingView(QWidget *parent = nullptr);
    ~RoutingView() override;
    QString title() const override { return tr("Routing"); }
    QString fileStem() const override { return QStringLiteral("routing"); }
    void setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data) override;
    void setBiases(std::shared_ptr<const BiasAudit> audit) override;
    void clearAll() override;

    void setTokens(int tokens);
    void setSeed(int seed);
    // Asks for a simulation (simulationRequested); the result comes back through showSimulation,
    // showSimulationFailure or showSimulationCancelled, and simulationFinished() follows each.
    void runSimulation();
    void showSimulation(std::shared_ptr<const RoutingRun> run);
    void showSimulationFailure(const QString &message);
    void showSimulationCancelled();
    bool isRunning() const { return m_running; }
    bool canSimulate() const { return m_audit && m_audit->router; }
    const RoutingRun *result() const { return m_run.get(); }
    ChartWidget *changedChart() const { return m_changed; }
    ChartWidget *loadChart() const { return m_load; }
    QString noteText() const;
    // The runtime paths and the variant each stands for (the engine picker); -1: the FP32 reference.
    struct Engine
    {
        QString name;
        int variant;
    };
    static QList<Engine> engines();
    void selectEngine(int index);
    QString engineText() const;
    QString declaredText() const;
    int selectedVariant() const;

signals:
    void simulationRequested(const atlas::RoutingRequest &request);
    void simulationCancelRequested();
    void simulationFinished();

private:
    static QString routerText(const RouterConfig &router);
    void showRun();
    void showLoad();
    void showChanged();

public:
    void followLayer(int layer) override;
    void themeChanged() override;
    static QString skippedText(const std::vector<SkippedLayer> &skipped);

private:
    std::shared_ptr<const BiasAudit> m_audit;
    std::shared_ptr<const RoutingRun> m_run;
    bool m_running = false;
    QSpinBox *m_tokens;
    QSpinBox *m_seed;
    QDoubleSpinBox *m_std;
    QLineEdit *m_logitsFile;
    QPushButton *m_run_;
    WrapLabel *m_status;
    QLabel *m_note;
    ChartWidget *m_changed;
    QComboBox *m_layer;
    QComboBox *m_variant;
    ChartWidget *m_load;
    std::vector<std::size_t> m_loadOrder; // the expert at each rank of the load chart
    QComboBox *m_engine;
    QLabel *m_engineWhy;
    WrapLabel *m_declared; // what config.json's moe_router_dtype declares
};

} // namespace atlas
