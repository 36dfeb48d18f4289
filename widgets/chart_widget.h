#pragma once

#include <QColor>
#include <QHash>
#include <QList>
#include <QString>
#include <QStringList>
#include <QVector>
#include <QWidget>

#include <functional>

class QCustomPlot;
class QCPItemText;
class QCPTextElement;
class QLabel;

namespace atlas {

struct BarSeries
{
    QString name;
    QVector<double> values; // one per label
    QColor color;
};

struct LineSeries
{
    QString name;
    QVector<double> x, y;
    QColor color;
    bool dashed = false;
    bool bars = false; // drawn as thin bars (a histogram) instead of a line
    double width = 2.0;
};

// The one place QCustomPlot is used: bars by category, lines over x, histograms with marker lines.
// Colours follow the palette, so light and dark themes both read.
class ChartWidget final : public QWidget
{
    Q_OBJECT
public:
    explicit ChartWidget(QWidget *parent = nullptr);
    ~ChartWidget() override;

    void setTitle(const QString &title);
    QString title() const { return m_title; }
    // The title as drawn: wrapped onto lines when the chart is narrower than it.
    QStringList titleLines() const;
    // Grouped bars, one group per label; stacked: one bar per label, the series on top of each other.
    void showBars(const QStringList &labels, const QList<BarSeries> &series, const QString &valueLabel,
                  bool logValues, bool stacked = false);
    // Lines (or histogram bars) over a numeric x axis.
    void showLines(const QList<LineSeries> &series, const QString &xLabel, const QString &yLabel, bool logX,
                   bool logY);
    // Vertical marker lines (BF16 levels over an FP32 histogram), drawn over what is shown.
    void addMarkers(const QVector<double> &x, const QString &name, const QColor &color);
    // A horizontal line at y with a legend entry (a GPU's usable and physical memory over its bars).
    void addLevel(double y, const QString &name, const QColor &color, bool dashed = false);
    QStringList levels() const { return m_levels; }
    // The x axis from lo to hi (room for labels at the ends of a line chart).
    void setXRange(double lo, double hi);
    // A point drawn and labelled with its value (the chosen context's figure), over what is shown.
    // `align`: where the point sits on the label (the default puts the label above and to its left).
    void addPointLabel(double x, double y, const QString &text, const QColor &color,
                       Qt::Alignment align = Qt::AlignRight | Qt::AlignBottom);
    QStringList pointLabels() const; // the texts of the labelled points
    // Hovering any chart reads out every series at the pointer: a bar chart's category, a line chart's
    // nearest point; `format` turns (x, y) into text (plain numbers without one).
    void setHoverFormat(std::function<QString(double x, double y)> format);
    QString hoverText(double x) const; // what hovering at x shows
    // With a format, a stacked bar chart of up to 12 bars prints each stack's total above it.
    void setValueFormat(std::function<QString(double value)> format);
    void clear();
    // What an empty chart says in place of its axes (why it is empty, what to do); shown after clear().
    void setEmptyMessage(const QString &message);
    QString emptyMessage() const { return m_emptyMessage; }

    // What is plotted, for tests and for the status line: series names and their point counts.
    QStringList seriesNames() const;
    int pointCount(const QString &series) const;
    QStringList categoryLabels() const { return m_labels; } // the bars' categories (empty for lines)
    bool isEmpty() const;

    static QColor seriesColor(int index);

    // While set, charts paint as vector drawing commands instead of their raster buffers, so that
    // a view rendered into SVG or PDF keeps its charts sharp at any zoom.
    static void setVectorOutput(bool on);
    // The size of the plot's paint buffer (empty before it has one): made ahead of the first draw while the
    // chart shows its empty message.
    QSize paintBufferSize() const;

signals:
    // A left click inside the plot, in the axes' coordinates (a Pareto point picked).
    void clicked(double x, double y);

protected:
    void changeEvent(QEvent *event) override;
    bool eventFilter(QObject *watched, QEvent *event) override;
    void resizeEvent(QResizeEvent *event) override;
    void showEvent(QShowEvent *event) override;

private:
    void applyPalette();
    void replot(); // once, after the events queued now (coalesced); none while the plot is hidden
    QCustomPlot *m_plot;
    QCPTextElement *m_titleElement = nullptr;
    QString m_title;
    QStringList m_labels;
    QStringList m_pointLabels;
    QStringList m_levels; // names of the horizontal lines drawn
    std::function<QString(double, double)> m_hoverFormat;
    std::function<QString(double)> m_valueFormat;
    QString m_emptyMessage;
    QLabel *m_empty = nullptr;
    void showPlot(bool plot);
    void fitLegend();
    QCPItemText *addValueText(double x, double y, const QString &text, bool above, int gap);
    QHash<QString, int> m_markers; // marker lines per legend name
    // A single stack's part labels, printed right of it: the x axis keeps room for the widest at any width.
    double m_sideLabelStart = 0; // where they start, in axis units (0: no such labels)
    int m_sideLabelPx = 0;       // the widest, in pixels
    void fitSideLabels();
    // A plot hidden behind its empty message gets its paint buffer ahead of its first draw, at the size it
    // will be shown at: one chart per turn of the event loop, never inside the turn that draws the data.
    void queuePrepare();
    bool prepareBuffer();
    static void prepareNext();
};

} // namespace atlas
