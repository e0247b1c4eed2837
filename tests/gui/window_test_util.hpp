// What the tests that drive the main window share: finding its items (delegates and popups
// included), clicking them, screenshots, waiting for a load or an answer.
#pragma once

#include <QDir>
#include <QImage>
#include <QQmlApplicationEngine>
#include <QQuickItem>
#include <QQuickWindow>
#include <QSet>
#include <QTest>

#include "chat_controller.hpp"
#include "main_window.hpp"

namespace mnemo::gui::test {

inline QQuickItem* findItem(QObject* root, const char* objectName) {
    return root ? root->findChild<QQuickItem*>(QString::fromLatin1(objectName)) : nullptr;
}

// Every item of the visual tree under `item` (delegates of views are found only this way: they
// are not QObject children of the window).
inline void collectItems(QQuickItem* item, QList<QQuickItem*>& out) {
    out << item;
    for (QQuickItem* c : item->childItems()) collectItems(c, out);
}

// Every object under `o`: QObject children, visual children, and the content of popups (menus and
// tooltips, which are in the visual tree only while open).
inline void collectObjects(QObject* o, QSet<QObject*>& seen) {
    if (!o || seen.contains(o)) return;
    seen.insert(o);
    for (QObject* c : o->children()) collectObjects(c, seen);
    if (auto* item = qobject_cast<QQuickItem*>(o))
        for (QQuickItem* c : item->childItems()) collectObjects(c, seen);
    if (auto* w = qobject_cast<QQuickWindow*>(o)) collectObjects(w->contentItem(), seen);
    if (o->inherits("QQuickPopup")) collectObjects(o->property("contentItem").value<QQuickItem*>(), seen);
}

inline QList<QQuickItem*> allItems(QQuickWindow* w) {
    QList<QQuickItem*> out;
    collectItems(w->contentItem(), out);
    return out;
}

inline QQuickItem* visibleItem(QQuickWindow* w, const char* objectName) {
    for (QQuickItem* i : allItems(w))
        if (i->objectName() == QLatin1String(objectName) && i->isVisible()) return i;
    return nullptr;
}

inline void click(QQuickWindow* w, QQuickItem* item) {
    const QPointF c = item->mapToScene(QPointF(item->width() / 2, item->height() / 2));
    QTest::mouseClick(w, Qt::LeftButton, Qt::NoModifier, c.toPoint());
}

// Types `text` into the window's focus item, key by key (QTest::keyClicks takes only a QWidget).
inline void typeText(QQuickWindow* w, const QString& text) {
    for (const QChar c : text) QTest::keyClick(w, c.toLatin1());
}

// Saves a screenshot under the build tree; checks it is the window's size and not blank.
inline void screenshot(QQuickWindow* w, const QString& name) {
    const QString dir = QStringLiteral(MNEMO_GUI_TEST_OUT "/screenshots");
    QVERIFY(QDir().mkpath(dir));
    const QImage img = w->grabWindow();
    QVERIFY(!img.isNull());
    QCOMPARE(img.size(), w->size() * w->devicePixelRatio());
    QSet<QRgb> colours;
    for (int y = 0; y < img.height(); y += 7)
        for (int x = 0; x < img.width(); x += 7) colours.insert(img.pixel(x, y));
    QVERIFY2(colours.size() > 8, qPrintable(QStringLiteral("%1: only %2 colours").arg(name).arg(colours.size())));
    QVERIFY(img.save(dir + QLatin1Char('/') + name));
    qInfo("screenshot: %s/%s", qPrintable(dir), qPrintable(name));
}

// The app's main window for `chat`, loaded into `engine` and shown; nullptr, and `problem` says
// why, when the QML does not load or the window is not exposed.
inline QQuickWindow* showMainWindow(QQmlApplicationEngine& engine, ChatController& chat, QString& problem) {
    const QStringList problems = loadMainWindow(engine, chat);
    auto* window = engine.rootObjects().isEmpty() ? nullptr : qobject_cast<QQuickWindow*>(engine.rootObjects().first());
    if (!problems.isEmpty() || !window) {
        problem = problems.isEmpty() ? QStringLiteral("no window") : problems.join(QLatin1Char('\n'));
        return nullptr;
    }
    window->show();
    if (!QTest::qWaitForWindowExposed(window)) {
        problem = QStringLiteral("the window was not exposed");
        return nullptr;
    }
    return window;
}

inline bool waitLoaded(ChatController& c) { return QTest::qWaitFor([&] { return !c.model()->loading(); }, 60000) && c.model()->loaded(); }
inline bool waitAnswered(ChatController& c) { return QTest::qWaitFor([&] { return !c.busy(); }, 60000); }


}  // namespace mnemo::gui::test
