// The window's geometry at the sizes it must work at (1366×768, a laptop; 1920×1080), in the light
// and the dark theme, with a conversation that stresses it: a long prompt, a Markdown table, code
// blocks in two languages, an answer with references. Every visible item that lies in a clipping
// parent or a layout lies within it; siblings in a row or a column of a layout do not overlap; the
// model line lies inside the top bar and the chat starts under the bar; the Rename and Export
// dialogs hold their contents. Screenshots go to <build>/tests/gui/screenshots/layout-*.png.
#include <QDir>
#include <QQmlApplicationEngine>
#include <QQmlContext>
#include <QQuickItem>
#include <QQuickWindow>
#include <QTemporaryDir>
#include <QTest>

#include "chat_controller.hpp"
#include "gui_test_util.hpp"
#include "main_window.hpp"
#include "geometry_check.hpp"
#include "window_test_util.hpp"

using namespace mnemo::gui;
using namespace mnemo::gui::test;

namespace {

QRectF sceneRect(const QQuickItem* i) { return i->mapRectToScene(QRectF(0, 0, i->width(), i->height())); }

Conversation stressConversation() {
    Conversation c;
    c.id = QStringLiteral("layout-sample");
    c.title = QStringLiteral("Layout sample with a title long enough to be elided in the list on the left");
    c.created = c.updated = QDateTime::currentDateTimeUtc();
    Message q;
    q.role = QStringLiteral("user");
    q.text = QStringLiteral("Compare the backends. ").repeated(30) + QStringLiteral("\n\nAnd a word without spaces: ")
             + QStringLiteral("x").repeated(180);
    Message a;
    a.role = QStringLiteral("assistant");
    a.text = QStringLiteral(
        "## Results\n\n| Backend | Tokens/s | Peak memory |\n|---|---:|---|\n| cpu | 1898.5 | 10.9 MiB |\n"
        "| vulkan | 12.25 | 64 MiB |\n\nThe C++ side:\n\n```cpp\n#include <vector>\n// a comment\nint main() {\n"
        "    std::vector<int> v{1, 2, 3};\n    return v.size() > 2 ? 0 : 1;  // a line long enough to scroll sideways "
        "rather than wrap in the code panel at 1366 pixels of window width\n}\n```\n\nAnd Python:\n\n```python\n"
        "def greet(name: str) -> str:\n    \"\"\"Says hello.\"\"\"\n    return f\"hello {name}\"  # 42\n```\n\nDone.");
    a.finish = QStringLiteral("end of turn");
    a.tokens = 120;
    a.tokensPerSecond = 250.0;
    a.firstTokenSeconds = 0.02;
    a.device = QStringLiteral("cpu:0 AMD EPYC");
    mnemo::RetrievedReference r;
    r.chunk = 1;
    r.id = 7;
    r.text = "Tour Hujert was born in Zeajusy, a town whose name is long enough to wrap on a narrow window.";
    r.title = "Tour Hujert";
    r.source = "world/people.jsonl";
    a.references = {r, r};
    c.messages = {q, a};
    return c;
}

}  // namespace

class TestLayout : public QObject {
    Q_OBJECT
    QTemporaryDir conversations_;
    std::unique_ptr<ChatController> chat_;
    std::unique_ptr<QQmlApplicationEngine> engine_;
    QQuickWindow* window_ = nullptr;
    QObject* theme_ = nullptr;

    // Resizes the window, waits for the layout to settle, checks it and saves a screenshot.
    void checkAt(const QSize& size, const QString& shot) {
        window_->resize(size);
        QTRY_COMPARE(window_->size(), size);
        QTRY_COMPARE(window_->contentItem()->size(), QSizeF(size));
        QTest::qWait(200);  // layouts and the list view settle in the next polish
        const QStringList problems = geometryProblems(window_->contentItem());
        QVERIFY2(problems.isEmpty(), qPrintable(shot + QStringLiteral(":\n") + problems.join(QLatin1Char('\n'))));

        // The model line inside the top bar; the chat view starts below the bar.
        QQuickItem* bar = findItem(window_, "modelBar");
        QQuickItem* info = findItem(window_, "modelInfo");
        QQuickItem* view = findItem(window_, "chatView");
        QVERIFY(bar && info && view);
        QVERIFY(!info->property("text").toString().isEmpty());
        const QRectF barRect = sceneRect(bar);
        const QRectF infoRect = sceneRect(info);
        QVERIFY2(barRect.contains(infoRect), qPrintable(QStringLiteral("model line %1,%2 %3×%4 outside the bar %5×%6")
                                                            .arg(infoRect.x()).arg(infoRect.y()).arg(infoRect.width())
                                                            .arg(infoRect.height()).arg(barRect.width()).arg(barRect.height())));
        QVERIFY(sceneRect(view).top() >= barRect.bottom() - 0.5);
        // Its text's own height (descenders included) fits the line it is drawn in.
        QVERIFY(info->property("contentHeight").toReal() <= info->height() + 0.5);
        screenshot(window_, shot);
    }

    // The popup item (what a Dialog draws in) of a QML Dialog found by objectName.
    static QQuickItem* popupItem(QObject* dialog) {
        auto* content = dialog->property("contentItem").value<QQuickItem*>();
        return content ? content->parentItem() : nullptr;
    }

private Q_SLOTS:
    void initTestCase() {
        chat_ = std::make_unique<ChatController>(conversations_.path());
        engine_ = std::make_unique<QQmlApplicationEngine>();
        QString problem;
        window_ = showMainWindow(*engine_, *chat_, problem);
        QVERIFY2(window_, qPrintable(problem));
        theme_ = qvariant_cast<QObject*>(engine_->rootContext()->contextProperty(QStringLiteral("theme")));
        QVERIFY(theme_);
        chat_->model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(*chat_));
        const Conversation c = stressConversation();
        QCOMPARE(chat_->conversations()->save(c), QString());
        QVERIFY(chat_->openConversation(c.id));
    }

    void fitsAt1366Light() {
        theme_->setProperty("mode", QStringLiteral("light"));
        checkAt(QSize(1366, 768), QStringLiteral("layout-1366-light.png"));
    }
    void fitsAt1366Dark() {
        theme_->setProperty("mode", QStringLiteral("dark"));
        checkAt(QSize(1366, 768), QStringLiteral("layout-1366-dark.png"));
        // The dark theme is dark: the chat's background and the prompt box.
        const QImage img = window_->grabWindow();
        QVERIFY(img.pixelColor(img.width() - 30, img.height() / 2).lightness() < 80);
        theme_->setProperty("mode", QStringLiteral("light"));
    }
    void fitsAt1920() { checkAt(QSize(1920, 1080), QStringLiteral("layout-1920-light.png")); }

    // The end of the conversation too (the answer's code, references, measurements), scrolled to.
    // The references opened.
    void fitsScrolledToTheEnd() {
        window_->resize(1366, 768);
        QTRY_COMPARE(window_->contentItem()->width(), 1366.0);
        QQuickItem* view = findItem(window_, "chatView");
        QVERIFY(view);
        QQuickItem* toggle = nullptr;
        QMetaObject::invokeMethod(view, "positionViewAtEnd");
        QTRY_VERIFY((toggle = visibleItem(window_, "referencesToggle")));
        click(window_, toggle);
        QTest::qWait(100);
        // (A list of delegates of different heights learns its content's height as it lays them
        // out: scroll again until the bottom margin is in view.)
        QVERIFY(QTest::qWaitFor([&] {
            const qreal end = view->property("originY").toReal() + view->property("contentHeight").toReal()
                              + view->property("bottomMargin").toReal() - view->height();
            view->setProperty("contentY", end);
            return view->property("atYEnd").toBool();
        }, 5000));
        checkAt(QSize(1366, 768), QStringLiteral("layout-1366-end.png"));
    }

    // Each code block is a panel of its own with its language and a Copy button that copies it.
    void everyCodeBlockHasItsPanel() {
        window_->resize(1920, 1080);
        QQuickItem* view = findItem(window_, "chatView");
        QMetaObject::invokeMethod(view, "positionViewAtBeginning");
        QTest::qWait(200);
        QStringList languages;
        int copies = 0;
        for (QQuickItem* i : allItems(window_)) {
            if (!i->isVisible()) continue;
            if (i->objectName() == QLatin1String("codeLanguage")) languages << i->property("text").toString();
            if (i->objectName() == QLatin1String("copyCodeButton")) ++copies;
        }
        QCOMPARE(languages, (QStringList{QStringLiteral("C++"), QStringLiteral("Python")}));
        QCOMPARE(copies, 2);
    }

    void theRenameDialogHoldsItsField() {
        window_->resize(1366, 768);
        QTRY_COMPARE(window_->contentItem()->width(), 1366.0);
        QTest::qWait(200);
        QObject* dialog = window_->findChild<QObject*>(QStringLiteral("renameDialog"));
        QVERIFY(dialog);
        QMetaObject::invokeMethod(dialog, "openFor", Q_ARG(QVariant, QStringLiteral("layout-sample")),
                                  Q_ARG(QVariant, QStringLiteral("A title")));
        QTRY_VERIFY(dialog->property("opened").toBool());
        QQuickItem* popup = popupItem(dialog);
        QQuickItem* field = findItem(window_, "renameField");
        QVERIFY(popup && field);
        QVERIFY2(sceneRect(popup).contains(sceneRect(field)), "the title field sticks out of the Rename dialog");
        const QStringList problems = geometryProblems(popup);
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
        screenshot(window_, QStringLiteral("layout-rename.png"));
        QMetaObject::invokeMethod(dialog, "reject");
        QTRY_VERIFY(!dialog->property("visible").toBool());
    }

    // The export dialog: a path field with a file name from the title, "Save", contents inside.
    void theExportDialogSuggestsAFileAndFits() {
        QObject* dialog = window_->findChild<QObject*>(QStringLiteral("exportDialog"));
        QVERIFY(dialog);
        QMetaObject::invokeMethod(dialog, "suggest");
        QMetaObject::invokeMethod(dialog, "open");
        QTRY_VERIFY(dialog->property("opened").toBool());
        QQuickItem* path = visibleItem(window_, "pathField");
        QVERIFY(path);
        QCOMPARE(path->property("text").toString(),
                 QDir::home().filePath(QStringLiteral("Layout sample with a title long enough to be elided in the list on the left.md")));
        bool save = false;
        for (QQuickItem* i : allItems(window_))
            if (i->isVisible() && i->inherits("QQuickAbstractButton") && i->property("text").toString() == QLatin1String("Save")) save = true;
        QVERIFY2(save, "no Save button in the export dialog");
        QQuickItem* popup = popupItem(dialog);
        QVERIFY(popup);
        QVERIFY(sceneRect(popup).contains(sceneRect(path)));
        const QStringList problems = geometryProblems(popup);
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
        screenshot(window_, QStringLiteral("layout-export.png"));
        QMetaObject::invokeMethod(dialog, "reject");
        QTRY_VERIFY(!dialog->property("visible").toBool());
    }

    // A new conversation: the placeholder text in an empty chat.
    void fitsEmptyAt1366() {
        chat_->newConversation();
        checkAt(QSize(1366, 768), QStringLiteral("layout-1366-empty.png"));
        theme_->setProperty("mode", QStringLiteral("dark"));
        checkAt(QSize(1366, 768), QStringLiteral("layout-1366-empty-dark.png"));
        theme_->setProperty("mode", QStringLiteral("system"));
    }

    void cleanupTestCase() {
        engine_.reset();
        chat_.reset();
    }
};

QTEST_MAIN(TestLayout)
#include "test_layout.moc"
