#include "open_dialog.h"

#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QVBoxLayout>

namespace atlas {

OpenDialog::OpenDialog(QWidget *parent)
    : QDialog(parent), m_tabs(new QTabWidget(this)), m_repo(new QLineEdit(this)),
      m_revision(new QLineEdit(this)), m_url(new QLineEdit(this)), m_folder(new QLineEdit(this))
{
    setWindowTitle(tr("Open checkpoint"));
    m_repo->setObjectName(QStringLiteral("repo"));
    m_revision->setObjectName(QStringLiteral("revision"));
    m_url->setObjectName(QStringLiteral("url"));
    m_folder->setObjectName(QStringLiteral("folder"));
    m_repo->setPlaceholderText(QStringLiteral("zai-org/GLM-5.2-FP8"));
    m_revision->setPlaceholderText(QStringLiteral("main"));
    m_url->setPlaceholderText(QStringLiteral("https://host/path/to/checkpoint/"));

    auto *hub = new QWidget(m_tabs);
    auto *hf = new QFormLayout(hub);
    hf->addRow(tr("Repository"), m_repo);
    hf->addRow(tr("Revision"), m_revision);
    auto *hubNote =
        new QLabel(tr("Only the headers are read, through range requests. A token (HF_TOKEN or the Hub "
                      "client's token file) is sent to the Hub only, never to its storage."),
                   hub);
    hubNote->setWordWrap(true);
    hf->addRow(hubNote);
    m_tabs->addTab(hub, tr("Hugging Face Hub"));

    auto *web = new QWidget(m_tabs);
    auto *wf = new QFormLayout(web);
    wf->addRow(tr("Directory URL"), m_url);
    m_tabs->addTab(web, tr("HTTPS directory"));

    auto *local = new QWidget(m_tabs);
    auto *lf = new QFormLayout(local);
    auto *row = new QHBoxLayout();
    auto *browse = new QPushButton(tr("Browse…"), local);
    row->addWidget(m_folder, 1);
    row->addWidget(browse);
    lf->addRow(tr("Folder"), row);
    m_tabs->addTab(local, tr("Local folder"));
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString dir =
            QFileDialog::getExistingDirectory(this, tr("Checkpoint folder"), m_folder->text());
        if (!dir.isEmpty()) m_folder->setText(dir);
    });

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Open | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto *v = new QVBoxLayout(this);
    v->addWidget(m_tabs);
    v->addWidget(buttons);
    resize(560, 220);
}

QString OpenDialog::source() const
{
    switch (m_tabs->currentIndex()) {
    case 0:
        return m_repo->text().trimmed().isEmpty() ? QString()
                                                  : QStringLiteral("hf://") + m_repo->text().trimmed();
    case 1:
        return m_url->text().trimmed();
    default:
        return m_folder->text().trimmed();
    }
}

QString OpenDialog::revision() const
{
    return m_tabs->currentIndex() == 0 ? m_revision->text().trimmed() : QString();
}

} // namespace atlas
