#include "colours.h"

#include <QGuiApplication>
#include <QPalette>

namespace atlas {

bool darkTheme()
{
    return QGuiApplication::palette().color(QPalette::Window).lightness() < 128;
}

QColor toneColor(Tone tone)
{
    const bool dark = darkTheme();
    switch (tone) {
    case Tone::IndexerOwner:
        return dark ? QColor(0x4C, 0xC3, 0x8A) : QColor(0x3A, 0x9E, 0x6E);
    case Tone::IndexerShared:
        return dark ? QColor(0x2F, 0x6B, 0x50) : QColor(0x9F, 0xD4, 0xB8);
    case Tone::IndexerNone:
        return dark ? QColor(0x4A, 0x4F, 0x58) : QColor(0xC8, 0xCB, 0xD0);
    case Tone::Mtp:
        return dark ? QColor(0xA9, 0x8B, 0xE0) : QColor(0x8E, 0x6C, 0xC2);
    case Tone::Cached:
        return QColor(0xE0, 0x8A, 0x2E);
    case Tone::Good:
        return dark ? QColor(0x5C, 0xD0, 0x8A) : QColor(0x1F, 0x7A, 0x3A);
    case Tone::Bad:
        return dark ? QColor(0xF0, 0x7A, 0x7A) : QColor(0xB0, 0x30, 0x30);
    case Tone::Muted:
        return dark ? QColor(0x9A, 0xA0, 0xAA) : QColor(0x8A, 0x8F, 0x98);
    }
    return Qt::gray;
}

QString toneHex(Tone tone)
{
    return toneColor(tone).name(QColor::HexRgb);
}

QString bannerStyle(Banner banner, const QString &extraRules)
{
    const bool dark = darkTheme();
    const char *background, *text, *border;
    if (banner == Banner::Notice) {
        background = dark ? "#3B3220" : "#FFF4D6";
        text = dark ? "#F3D58A" : "#5C4400";
        border = dark ? "#7A6428" : "#E8C66A";
    } else {
        background = dark ? "#3D2224" : "#FDECEC";
        text = dark ? "#F4B4B4" : "#7A1F1F";
        border = dark ? "#8A3A3E" : "#E7A3A3";
    }
    return QStringLiteral("QLabel { background: %1; color: %2; border: 1px solid %3; border-radius: 6px;"
                          " padding: 8px 12px; %4 }")
        .arg(QLatin1String(background), QLatin1String(text), QLatin1String(border), extraRules);
}

QColor mixColour(const QColor &from, const QColor &to, double t)
{
    const QColor a = from.toRgb(), b = to.toRgb();
    return QColor::fromRgbF(float(a.redF() + (b.redF() - a.redF()) * t), float(a.greenF() + (b.greenF() - a.greenF()) * t),
                            float(a.blueF() + (b.blueF() - a.blueF()) * t));
}

} // namespace atlas
