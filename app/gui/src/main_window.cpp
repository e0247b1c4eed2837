#include "main_window.hpp"

#include <QQmlContext>
#include <QQuickStyle>

#include "chat_controller.hpp"
#include "theme/theme.hpp"

namespace mnemo::gui {

void setUpQuickStyle() { QQuickStyle::setStyle(QStringLiteral("Fusion")); }

QStringList loadMainWindow(QQmlApplicationEngine& engine, ChatController& chat) {
    QStringList problems;
    const auto c = QObject::connect(&engine, &QQmlEngine::warnings, [&](const QList<QQmlError>& warnings) {
        for (const QQmlError& w : warnings) problems << w.toString();
    });
    engine.rootContext()->setContextProperty(QStringLiteral("chat"), &chat);
    // The look (theme/theme.hpp), owned by the engine: it lives as long as the QML that binds to it.
    engine.rootContext()->setContextProperty(QStringLiteral("theme"), new Theme(&engine));
    engine.load(QUrl(QString::fromLatin1(kMainQmlUrl)));
    QObject::disconnect(c);
    if (engine.rootObjects().isEmpty() && problems.isEmpty())
        problems << QStringLiteral("%1 did not load (no root object)").arg(QLatin1String(kMainQmlUrl));
    return problems;
}

}  // namespace mnemo::gui
