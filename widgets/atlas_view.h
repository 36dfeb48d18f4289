#pragma once

#include "loaded_checkpoint.h"

#include <QString>
#include <QWidget>

#include <memory>

class QLabel;
class QTableWidget;

namespace atlas {

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
    virtual void setBiases(std::shared_ptr<const BiasAudit>) {}
    virtual void clearAll() = 0;
};

// Display helpers, in the domain's units.
QString qs(const std::string &s);
QString groupDigitsQ(std::uint64_t v);
QString shortCountQ(std::uint64_t v);
QString binaryBytesQ(std::uint64_t v);
QString percentQ(double fraction, int decimals = 2);

// A heading label and a muted caption label, styled once.
QLabel *makeHeading(const QString &text, QWidget *parent = nullptr);
QLabel *makeCaption(const QString &text, QWidget *parent = nullptr);
// A read-only table with these column headers, stretched columns and alternating rows.
QTableWidget *makeTable(const QStringList &headers, QWidget *parent);

} // namespace atlas
