#pragma once

// The working behind a headline number, in the window (domain.md section 17): a number shown as a link
// whose hover shows its arithmetic and whose click opens the formula pane, selectable to copy.
#include "explain.h"

#include <QString>

class QLabel;
class QWidget;

namespace atlas {

// "78*(512+64)*2 + 21*144", then a line per factor and where it came from.
QString workingText(const Working &w);
// `shown` as a link to the working of report path `path` ("cache.bytes_per_token"), for a rich-text label.
QString workingLink(const QString &path, const QString &shown);
// Gives the label's working links their workings: hover shows one, click opens the formula pane. Paths
// with no working are left plain text by the caller (workingLink only where `explanations` has the path).
void setWorkings(QLabel *label, const Explanations &explanations);
// The working a label's link to `path` shows ("" when it has none), for tests and the pane.
QString labelWorking(const QLabel *label, const QString &path);
// The paths a label links to, in the text's order.
QStringList labelWorkingPaths(const QLabel *label);
bool hasWorking(const Explanations &explanations, const std::string &path);
void showWorkingPane(QWidget *parent, const QString &path, const QString &working);

} // namespace atlas
