#include "preferences_dialog.h"

#include "settings.h"

#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPushButton>
#include <QSpinBox>
#include <QUrl>
#include <QVBoxLayout>

namespace atlas {

PreferencesDialog::PreferencesDialog(QWidget *parent)
    : QDialog(parent), m_endpoint(new QLineEdit(this)), m_caBundle(new QLineEdit(this)),
      m_connections(new QSpinBox(this))
{
    setWindowTitle(tr("Preferences"));
    m_endpoint->setText(settings::hubEndpoint());
    m_endpoint->setPlaceholderText(tr("https://huggingface.co (or $HF_ENDPOINT)"));
    m_caBundle->setText(settings::caBundle());
    m_caBundle->setPlaceholderText(tr("system trust store only"));
    m_connections->setRange(1, settings::kMaxConnections);
    m_connections->setValue(settings::connections());
    auto *browse = new QPushButton(tr("Browse…"), this);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString file = QFileDialog::getOpenFileName(this, tr("CA bundle (PEM)"), m_caBundle->text());
        if (!file.isEmpty()) m_caBundle->setText(file);
    });
    auto *form = new QFormLayout();
    form->addRow(tr("Hub endpoint"), m_endpoint);
    auto *ca = new QHBoxLayout();
    ca->addWidget(m_caBundle, 1);
    ca->addWidget(browse);
    form->addRow(tr("Extra CA bundle"), ca);
    form->addRow(tr("Connections"), m_connections);
    auto *note =
        new QLabel(tr("TLS is always verified; the bundle adds trust to the system store. $HF_ENDPOINT, "
                      "CURL_CA_BUNDLE and SSL_CERT_FILE apply as well."),
                   this);
    note->setWordWrap(true);
    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    auto *v = new QVBoxLayout(this);
    v->addLayout(form);
    v->addWidget(note);
    v->addWidget(buttons);
    resize(520, 200);
}

void PreferencesDialog::accept()
{
    const QString endpoint = m_endpoint->text().trimmed();
    const QUrl url(endpoint);
    if (!endpoint.isEmpty() &&
        (!url.isValid() ||
         (url.scheme() != QLatin1String("https") && url.scheme() != QLatin1String("http")) ||
         url.host().isEmpty())) {
        QMessageBox::warning(this, tr("Preferences"),
                             tr("The Hub endpoint must be an http(s) URL, such as https://huggingface.co."));
        return;
    }
    const QString ca = m_caBundle->text().trimmed();
    if (!ca.isEmpty() && !QFileInfo(ca).isReadable()) {
        QMessageBox::warning(this, tr("Preferences"), tr("%1: the CA bundle cannot be read.").arg(ca));
        return;
    }
    settings::setHubEndpoint(endpoint);
    settings::setCaBundle(ca);
    settings::setConnections(m_connections->value());
    QDialog::accept();
}

} // namespace atlas
