#include "theme/theme.hpp"

#include <QEvent>
#include <QFontDatabase>
#include <QGuiApplication>
#include <QHash>
#include <QPalette>

namespace mnemo::gui {

Theme::Theme(QObject* parent) : QObject(parent) {
    // The system's palette changes arrive as an ApplicationPaletteChange event to the application
    // (QGuiApplication::paletteChanged is deprecated in Qt 6).
    if (qApp) qApp->installEventFilter(this);
    update();
}

void Theme::setMode(const QString& mode) {
    const QString m = mode == QLatin1String("light") || mode == QLatin1String("dark") ? mode : QStringLiteral("system");
    if (m == mode_) return;
    mode_ = m;
    update();
    Q_EMIT changed();
}

bool Theme::eventFilter(QObject* watched, QEvent* event) {
    if (watched == qApp && event->type() == QEvent::ApplicationPaletteChange) {
        const bool before = dark_;
        update();
        if (dark_ != before) Q_EMIT changed();
    }
    return QObject::eventFilter(watched, event);
}

void Theme::update() {
    if (mode_ == QLatin1String("system"))
        dark_ = QGuiApplication::palette().color(QPalette::Window).lightness() < 128;
    else
        dark_ = mode_ == QLatin1String("dark");
}

QString Theme::monoFamily() const { return QFontDatabase::systemFont(QFontDatabase::FixedFont).family(); }

SyntaxColours Theme::syntaxColours(bool dark) {
    // One Dark and One Light (Atom's), which read well on the code panels' backgrounds.
    if (dark)
        return {QStringLiteral("#c678dd"), QStringLiteral("#e5c07b"), QStringLiteral("#98c379"), QStringLiteral("#7f848e"),
                QStringLiteral("#d19a66")};
    return {QStringLiteral("#a626a4"), QStringLiteral("#b35e00"), QStringLiteral("#3e8e3a"), QStringLiteral("#8a8c93"),
            QStringLiteral("#986801")};
}

QString Theme::codeHtml(const QString& code, const QString& language, bool dark) const {
    return QStringLiteral("<pre style=\"margin:0\">") + highlightCodeHtml(code, language, syntaxColours(dark))
           + QStringLiteral("</pre>");
}

QString Theme::languageLabel(const QString& language) const {
    static const QHash<QString, QString> names = {
        {QStringLiteral("cpp"), QStringLiteral("C++")},         {QStringLiteral("c"), QStringLiteral("C")},
        {QStringLiteral("python"), QStringLiteral("Python")},   {QStringLiteral("javascript"), QStringLiteral("JavaScript")},
        {QStringLiteral("typescript"), QStringLiteral("TypeScript")}, {QStringLiteral("json"), QStringLiteral("JSON")},
        {QStringLiteral("shell"), QStringLiteral("Shell")},     {QStringLiteral("rust"), QStringLiteral("Rust")},
        {QStringLiteral("go"), QStringLiteral("Go")},
    };
    const QString canonical = canonicalLanguage(language);
    if (canonical.isEmpty()) return QStringLiteral("text");
    return names.value(canonical, canonical);
}

}  // namespace mnemo::gui
