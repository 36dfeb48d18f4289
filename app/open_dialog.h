#pragma once

#include <QDialog>

class QLineEdit;
class QTabWidget;

namespace atlas {

// Open a Hub repository at a revision, an HTTPS directory or a local folder.
class OpenDialog final : public QDialog
{
    Q_OBJECT
public:
    explicit OpenDialog(QWidget *parent = nullptr);
    // The SOURCE text and the revision (Hub only), as the command line takes them.
    QString source() const;
    QString revision() const;

private:
    QTabWidget *m_tabs;
    QLineEdit *m_repo;
    QLineEdit *m_revision;
    QLineEdit *m_url;
    QLineEdit *m_folder;
};

} // namespace atlas
