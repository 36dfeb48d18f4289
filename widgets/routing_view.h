#pragma once

#include "atlas_view.h"
#include "routing.h"

#include <atomic>
#include <thread>

class QComboBox;
class QDoubleSpinBox;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace atlas {

class ChartWidget;

// The routing simulation: tokens, seed, spread or a logits file; changed-set fraction per layer
// for the three BF16 variants; one layer's expert load under FP32 and a variant.
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
    void runSimulation(); // off the GUI thread; simulationFinished() when done
    bool isRunning() const { return m_worker.joinable() && !m_done; }
    const RoutingRun *result() const { return m_run.get(); }
    ChartWidget *changedChart() const { return m_changed; }
    ChartWidget *loadChart() const { return m_load; }
    QString noteText() const;

signals:
    void simulationFinished();

private:
    void stopWorker();
    void showRun();
    void showLoad();
    std::shared_ptr<const BiasAudit> m_audit;
    std::shared_ptr<const RoutingRun> m_run;
    std::thread m_worker;
    std::atomic<bool> m_cancel{false};
    std::atomic<bool> m_done{true};
    QSpinBox *m_tokens;
    QSpinBox *m_seed;
    QDoubleSpinBox *m_std;
    QLineEdit *m_logitsFile;
    QPushButton *m_run_;
    QLabel *m_status;
    QLabel *m_note;
    ChartWidget *m_changed;
    QComboBox *m_layer;
    QComboBox *m_variant;
    ChartWidget *m_load;
};

} // namespace atlas
