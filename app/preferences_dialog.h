#pragma once

#include <QDialog>

class QLineEdit;
class QSpinBox;

namespace atlas {

// Network settings kept in QSettings: the Hub endpoint, an extra CA bundle, the connection limit.
class PreferencesDialog final : public QDialog
{
    Q_OBJECT
public:
    explicit PreferencesDialog(QWidget *parent = nullptr);
    void accept() override;

private:
    QLineEdit *m_endpoint;
    QLineEdit *m_caBundle;
    QSpinBox *m_connections;
};

} // namespace atlas
