#pragma once

#include "atlas_view.h"
#include "cache_budget.h"
#include "deployment_search.h"
#include "explain.h"
#include "wrap_label.h"

#include <optional>

class QCheckBox;
class QTimer;
class QLabel;
class QTableWidget;

namespace atlas {

// A card's number as its "Copy Value with Its Source" puts it: "Parameters: 753.33 B params — <provenance>".
QString cardCitation(const QLabel *label, const QString &name);
// A card's number as its "Copy Value" puts it: the text shown, without markup ("753.33 B params").
QString cardValueText(const QLabel *label);

class ReflowGrid;

// Identity, headline numbers and the quantization layout.
class OverviewView final : public AtlasView
{
    Q_OBJECT
public:
    explicit OverviewView(QWidget *parent = nullptr);
    QString title() const override { return tr("Overview"); }
    QString fileStem() const override { return QStringLiteral("overview"); }
    void setCheckpoint(std::shared_ptr<const LoadedCheckpoint> data) override;
    void clearAll() override;
    void themeChanged() override;

    // The cache card follows the Cache view's settings (preset, KV layout, state dtype, context).
    void setCacheBudget(const CacheBudget &budget);
    // For tests: the value shown on a headline card ("Parameters", "Active per token", ...).
    QString cardValue(const QString &name) const;
    QString architectureValue(const QString &name) const; // a card of the Architecture row ("Experts")
    QTableWidget *quantTable() const { return m_quant; }
    // For tests: the working a headline card shows on hover and in its pane on click ("" when none).
    QString cardWorking(const QString &name) const;
    bool syntheticBannerShown() const;
    static QString indexerCount(std::size_t full, std::size_t shared, std::size_t mainLayers);

    // "Fits on": the smallest deployment of each GPU the user ticks (plan --search with vLLM's placement and
    // cache, at the cache card's context), searched off the GUI thread by whoever listens to fitsWanted.
    void setTickedGpus(const QStringList &names);
    QStringList tickedGpus() const;
    void setFits(const DeploymentSearch &search);
    // A GGUF's lines: llama.cpp's offload on each ticked GPU (planLlamaCpp), already worded; `serial` the request's.
    void setLlamaFits(const QStringList &lines, std::uint64_t serial);
    void fitsFailed(const QString &why, std::uint64_t serial = 0); // serial 0: whatever was asked
    bool fitsPending() const { return m_fitsPending; }
    QString fitsText() const; // the lines as shown, plain

signals:
    void fitsWanted(const SearchOptions &options);
    void fitsShown();                       // setFits or fitsFailed drew an answer
    void tickedGpusChanged(const QStringList &names);
    void planWanted(const QString &gpu, const SearchPoint &point, std::uint64_t context); // "plan it" on a line

private:
    QLabel *addCard(const QString &name);
    bool eventFilter(QObject *watched, QEvent *event) override;
    // A card's working: the arithmetic in its tooltip, and a pane with it on click.
    void setWorking(int card, const std::string &path, const Explanations &explanations);
    void fitQuantHeight();
    void requestFits();
    void emitFits(); // the debounced request, when it is still wanted
    std::shared_ptr<const LoadedCheckpoint> m_data;
    WrapLabel *m_banner;
    WrapLabel *m_identity;
    ReflowGrid *m_cards;
    ReflowGrid *m_arch; // the architecture in numbers, a card per fact
    QList<QPair<QString, QLabel *>> m_archValues;
    QList<QPair<QString, QLabel *>> m_cardValues;
    QTableWidget *m_quant;
    QLabel *m_warnings;
    QList<QCheckBox *> m_fitsBoxes;
    WrapLabel *m_fits;
    std::optional<DeploymentSearch> m_search;
    QString m_fitsKey;
    SearchOptions m_fitsOptions; // the request waiting for the debounce
    QTimer *m_fitsTimer = nullptr;
    std::uint64_t m_fitsSerial = 0; // the newest request's
    bool m_fitsPending = false;
    std::uint64_t m_context = 0; // the cache card's
};

} // namespace atlas
