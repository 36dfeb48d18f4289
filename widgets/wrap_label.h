#pragma once

#include <QFont>
#include <QLabel>
#include <QMargins>

#include <array>
#include <utility>

namespace atlas {

// A word-wrapped QLabel that remembers its height at the last few widths. QLabel lays its text out
// again at every heightForWidth, and one relayout of a page asks each label the same width two to
// four times (the box layouts' minimum and preferred heights, the ReflowGrid's rows, the scroll
// area's fit): on the Overview that was two thirds of the open's longest stall. The answers are
// QLabel's own; they are forgotten when the text, its format, font, margins, indent, alignment, minimum
// size, pixmap or the style change.
class WrapLabel : public QLabel
{
public:
    explicit WrapLabel(QWidget *parent = nullptr);
    explicit WrapLabel(const QString &text, QWidget *parent = nullptr);
    int heightForWidth(int width) const override;

    // A label that fills the column its layout gives it (a page's full width) need not measure its text
    // for its size hints: QLabel's lay a rich text out ten times or so at each change of text (the ideal
    // width, the golden ratio's tries, one line, the widest word, each followed by a layout at the old
    // width again). With this set, the hints ask only for the height at a width (remembered as above):
    // the preferred width is 80 average characters with the height at the width the label has (once
    // shown), the minimum width 16 characters and the minimum height one line.
    // Where the label is wider than its widest word, as in a page's column, it is placed and drawn as
    // before.
    void setFillsWidth(bool fills);
    QSize sizeHint() const override;
    QSize minimumSizeHint() const override;

protected:
    bool event(QEvent *e) override;

private:
    // What the height depends on besides the width (QLabelPrivate::sizeForWidth reads these).
    struct Shape
    {
        QString text;
        QFont font;
        QMargins contents;
        QSize minimum; // sizeForWidth expands to it
        int format = 0, alignment = 0, indent = 0, margin = 0;
        bool wordWrap = false, pixmap = false;
        bool operator==(const Shape &o) const
        {
            return wordWrap == o.wordWrap && pixmap == o.pixmap && format == o.format && alignment == o.alignment &&
                   indent == o.indent && margin == o.margin && contents == o.contents && minimum == o.minimum &&
                   text == o.text && font == o.font;
        }
    };
    Shape shape() const;
    void forget() const { m_known = m_next = 0; }
    int hintWidth(int characters) const;

    mutable Shape m_shape;
    mutable std::array<std::pair<int, int>, 4> m_heights{}; // (width, height), the newest at m_next - 1
    mutable int m_known = 0, m_next = 0;
    bool m_fills = false;
};

} // namespace atlas
