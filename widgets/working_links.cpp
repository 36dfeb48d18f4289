#include "working_links.h"

#include "atlas_view.h"

#include <QCursor>
#include <QLabel>
#include <QMessageBox>
#include <QRegularExpression>
#include <QTimer>
#include <QToolTip>
#include <QVariantMap>

namespace atlas {

namespace {

constexpr const char *kScheme = "working:";

} // namespace

QString workingText(const Working &w)
{
    QString text = qs(w.expression) + QStringLiteral("\n");
    for (const auto &t : w.terms)
        text += QStringLiteral("\n  %1   %2").arg(qs(t.factor), qs(t.from));
    return text;
}

QString workingLink(const QString &path, const QString &shown)
{
    // The palette's link look: a number one can hover and click.
    return QStringLiteral("<a href=\"%1%2\">%3</a>")
        .arg(QLatin1String(kScheme), path.toHtmlEscaped(), shown);
}

bool hasWorking(const Explanations &explanations, const std::string &path)
{
    for (const auto &[p, w] : explanations)
        if (p == path) return true;
    return false;
}

void setWorkings(QLabel *label, const Explanations &explanations)
{
    QVariantMap map;
    for (const auto &[p, w] : explanations)
        map.insert(qs(p), workingText(w));
    label->setProperty("workings", map);
    label->setTextInteractionFlags(label->textInteractionFlags() | Qt::LinksAccessibleByMouse |
                                   Qt::LinksAccessibleByKeyboard);
    label->setOpenExternalLinks(false);
    if (label->property("workingsWired").toBool()) return;
    label->setProperty("workingsWired", true);
    QObject::connect(label, &QLabel::linkHovered, label, [label](const QString &link) {
        if (!link.startsWith(QLatin1String(kScheme))) {
            QToolTip::hideText();
            return;
        }
        const QString path = link.mid(int(qstrlen(kScheme)));
        const QString w = labelWorking(label, path);
        if (!w.isEmpty())
            QToolTip::showText(QCursor::pos(), QObject::tr("%1 =\n%2\n(click for the working)").arg(path, w), label);
    });
    QObject::connect(label, &QLabel::linkActivated, label, [label](const QString &link) {
        if (!link.startsWith(QLatin1String(kScheme))) return;
        const QString path = link.mid(int(qstrlen(kScheme)));
        const QString w = labelWorking(label, path);
        // Opened after the click is handled (a modal inside the label's mouse handler could outlive it).
        if (!w.isEmpty()) QTimer::singleShot(0, label, [label, path, w] { showWorkingPane(label, path, w); });
    });
}

QString labelWorking(const QLabel *label, const QString &path)
{
    return label->property("workings").toMap().value(path).toString();
}

QStringList labelWorkingPaths(const QLabel *label)
{
    QStringList out;
    static const QRegularExpression href(QStringLiteral("href=\"working:([^\"]+)\""));
    for (auto it = href.globalMatch(label->text()); it.hasNext();)
        out << it.next().captured(1);
    return out;
}

void showWorkingPane(QWidget *parent, const QString &path, const QString &working)
{
    // The formula pane: the arithmetic, selectable, to copy onto a slide.
    QMessageBox box(QMessageBox::NoIcon, QObject::tr("The working behind %1").arg(path), working, QMessageBox::Close,
                    parent);
    box.setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    box.exec();
}

} // namespace atlas
