// The QML the program loads (qrc:/qml/Main.qml through loadMainWindow): it loads with every
// module it imports (a missing QML module shows only at run time), a prompt typed and sent
// through the window is answered in the chat view, the references panel opens, the device
// picker follows a switch; screenshots of the main view go to the build tree
// (tests/gui/screenshots/*.png, not committed) for a person to look at.
#include <QQmlContext>
#include <QQmlProperty>
#include <QDir>
#include <QClipboard>
#include <QGuiApplication>
#include <QPalette>
#include <QQuickItem>
#include <QQuickWindow>
#include <QTemporaryDir>
#include <QTest>

#include "chat_controller.hpp"
#include "gui_test_util.hpp"
#include "main_window.hpp"
#include "window_test_util.hpp"

using namespace mnemo::gui;
using namespace mnemo::gui::test;


class TestMainWindow : public QObject {
    Q_OBJECT
    QTemporaryDir conversations_;
    QTemporaryDir memories_;  // the memory folder stays while the model reads it
    std::unique_ptr<ChatController> chat_;
    std::unique_ptr<QQmlApplicationEngine> engine_;
    QQuickWindow* window_ = nullptr;

private Q_SLOTS:
    void initTestCase() {
        chat_ = std::make_unique<ChatController>(conversations_.path());
        engine_ = std::make_unique<QQmlApplicationEngine>();
        const QStringList problems = loadMainWindow(*engine_, *chat_);
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
        QCOMPARE(engine_->rootObjects().size(), 1);
        window_ = qobject_cast<QQuickWindow*>(engine_->rootObjects().first());
        QVERIFY(window_);
        QCOMPARE(window_->size(), QSize(1366, 768));  // the size it must work at
        window_->show();
        QVERIFY(QTest::qWaitForWindowExposed(window_));
        window_->requestActivate();
        QVERIFY(QTest::qWaitForWindowActive(window_));
    }

    void answersAPromptTypedIntoTheWindow() {
        chat_->model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(*chat_));
        chat_->settings()->setProperty("temperature", 0.0);
        chat_->settings()->setProperty("maxTokens", 32);
        QQuickItem* info = findItem(window_, "modelInfo");
        QVERIFY(info);
        QVERIFY2(info->property("text").toString().contains(QStringLiteral("memory3")), qPrintable(info->property("text").toString()));

        QQuickItem* prompt = findItem(window_, "promptInput");
        QQuickItem* send = findItem(window_, "sendButton");
        QQuickItem* view = findItem(window_, "chatView");
        QVERIFY(prompt && send && view);
        prompt->forceActiveFocus();
        const Question q = trainedQuestion();
        for (const QChar ch : q.question) QTest::keyClick(window_, ch.toLatin1());  // typed, key by key
        QCOMPARE(prompt->property("text").toString(), q.question);
        QVERIFY(send->isEnabled());
        click(window_, send);
        QVERIFY(chat_->busy() || chat_->conversation()->count() == 2);
        QVERIFY(waitAnswered(*chat_));
        QCOMPARE(prompt->property("text").toString(), QString());  // the box is cleared once sent
        QCOMPARE(view->property("count").toInt(), 2);
        QCOMPARE(chat_->conversation()->at(1).text.trimmed(), q.answer);
        QVERIFY(findItem(window_, "performanceStrip")->property("text").toString().contains(QStringLiteral("tokens/s")));
        QTest::qWait(100);  // let the view scroll and lay out the finished answer
        screenshot(window_, QStringLiteral("main-view.png"));
    }

    void editsAPromptAndContinuesFromIt() {
        QQuickItem* edit = visibleItem(window_, "editButton");
        QVERIFY(edit);
        click(window_, edit);
        QQuickItem* editor = nullptr;
        QTRY_VERIFY((editor = visibleItem(window_, "messageEditor")));
        QCOMPARE(editor->property("text").toString(), trainedQuestion(0).question);  // starts from the message
        const Question q = trainedQuestion(1);
        editor->setProperty("text", q.question);
        click(window_, visibleItem(window_, "sendEditedButton"));
        QVERIFY(waitAnswered(*chat_));
        QCOMPARE(chat_->conversation()->count(), 2);
        QCOMPARE(chat_->conversation()->at(0).text, q.question);
        QCOMPARE(chat_->conversation()->at(1).text.trimmed(), q.answer);
        QVERIFY(!visibleItem(window_, "messageEditor"));
        // Back to the first question for the tests that follow.
        QVERIFY(chat_->editMessage(0, trainedQuestion(0).question));
        QVERIFY(waitAnswered(*chat_));
    }

    void opensTheReferencesOfAnAnswer() {
        QTemporaryDir& dir = memories_;
        const QString memorized = memorizeCorpus(dir.path(), "Tour Hujert was born in Zeajusy.\n\nThe Lelosk ring is amber.\n");
        QVERIFY2(memorized.isEmpty(), qPrintable(memorized));

        chat_->kb()->setProperty("retrieval", QStringLiteral("bm25"));
        chat_->kb()->useMemoryFolder(dir.filePath(QStringLiteral("mem")));
        QVERIFY(waitLoaded(*chat_));
        QVERIFY2(chat_->model()->line().contains(QStringLiteral("memories: memory folder")), qPrintable(chat_->model()->line()));
        QVERIFY(chat_->regenerate());  // the same question, now with the memories
        QVERIFY(waitAnswered(*chat_));
        QCOMPARE(chat_->conversation()->at(1).references.size(), 1);

        // The panel of the answer (the prompt's own panel exists too, hidden).
        QQuickItem* toggle = nullptr;
        QTRY_VERIFY((toggle = visibleItem(window_, "referencesToggle")));
        QCOMPARE(toggle->property("text").toString(), QStringLiteral("▸ 1 reference"));
        click(window_, toggle);
        QCOMPARE(toggle->property("text").toString(), QStringLiteral("▾ 1 reference"));
        QTest::qWait(100);
        screenshot(window_, QStringLiteral("references-open.png"));
    }

    void stopsAStreamingAnswerFromTheStopButton() {
        chat_->newConversation();
        // Almost flat sampling: an answer long enough to be seen streaming and to be stopped.
        chat_->settings()->setProperty("temperature", 20.0);
        chat_->settings()->setProperty("topK", 0);
        chat_->settings()->setProperty("topP", 1.0);
        chat_->settings()->setProperty("minP", 0.0);
        chat_->settings()->setProperty("maxTokens", 4000);
        // A seed known to ramble on: each answer draws its own otherwise (issue 29), and a few end at once.
        chat_->settings()->setProperty("fixedSeed", true);
        chat_->settings()->setProperty("seed", 0xC0FFEE);
        QQuickItem* prompt = findItem(window_, "promptInput");
        prompt->forceActiveFocus();
        for (const QChar ch : QStringLiteral("Tell me about Zeajusy.")) QTest::keyClick(window_, ch.toLatin1());
        QTest::keyClick(window_, Qt::Key_Return);  // Enter sends
        QVERIFY(chat_->busy());
        QVERIFY(QTest::qWaitFor([&] { return chat_->conversation()->at(1).text.size() > 20 || !chat_->busy(); }, 60000));
        QVERIFY2(chat_->busy(), "the answer ended before it could be stopped");
        QQuickItem* stop = findItem(window_, "stopButton");
        QVERIFY(stop && stop->isVisible());
        QVERIFY(!findItem(window_, "sendButton")->isVisible());
        screenshot(window_, QStringLiteral("streaming.png"));
        click(window_, stop);
        QVERIFY(!chat_->busy());
        QCOMPARE(chat_->conversation()->at(1).finish, QStringLiteral("stopped"));
        QTRY_VERIFY(findItem(window_, "sendButton")->isVisible());
        chat_->settings()->setProperty("temperature", 0.0);
        chat_->settings()->setProperty("maxTokens", 32);
        chat_->settings()->setProperty("fixedSeed", false);
    }

    void showsTheSettingsAndTheRecentModels() {
        QObject* settings = engine_->rootObjects().first()->findChild<QObject*>(QStringLiteral("settingsDialog"));
        QVERIFY(settings);
        QMetaObject::invokeMethod(settings, "open");
        QTRY_VERIFY(settings->property("opened").toBool());
        screenshot(window_, QStringLiteral("settings.png"));
        QMetaObject::invokeMethod(settings, "close");
        QTRY_VERIFY(!settings->property("visible").toBool());

        QObject* menu = engine_->rootObjects().first()->findChild<QObject*>(QStringLiteral("modelMenu"));
        QVERIFY(menu);
        QCOMPARE(menu->property("count").toInt(), 4);  // open a folder, open a GGUF file, a separator, the default model
        QQuickItem* recent = nullptr;
        QVERIFY(QMetaObject::invokeMethod(menu, "itemAt", Q_RETURN_ARG(QQuickItem*, recent), Q_ARG(int, 3)));
        QVERIFY(recent);
        QCOMPARE(recent->property("text").toString(), defaultModelDir());
    }

    void rendersMarkdownAndCopiesACodeBlock() {
        // A saved conversation whose answer is Markdown (the default model writes none itself).
        Conversation c;
        c.id = QStringLiteral("markdown-sample");
        c.title = QStringLiteral("Markdown sample");
        c.created = c.updated = QDateTime::currentDateTimeUtc();
        Message q;
        q.role = QStringLiteral("user");
        q.text = QStringLiteral("How do I run Mnemo?");
        Message a;
        a.role = QStringLiteral("assistant");
        a.text = QStringLiteral("## Running\n\nUse **mnemo run** with a *model folder*:\n\n```sh\nmnemo run -m DIR -p \"Hello\"\n```\n\n"
                                "- `--backend vulkan` picks the GPU\n- `--temp 0` is greedy\n");
        a.finish = QStringLiteral("end of turn");
        a.tokens = 40;
        a.tokensPerSecond = 250.0;
        a.firstTokenSeconds = 0.02;
        a.device = QStringLiteral("cpu:0 AMD EPYC");
        c.messages = {q, a};
        QCOMPARE(chat_->conversations()->save(c), QString());
        QVERIFY(chat_->openConversation(c.id));
        // The code block's own panel: its language, and its Copy button.
        QQuickItem* copy = nullptr;
        QTRY_VERIFY((copy = visibleItem(window_, "copyCodeButton")));
        QCOMPARE(visibleItem(window_, "codeLanguage")->property("text").toString(), QStringLiteral("Shell"));
        click(window_, copy);
        QCOMPARE(QGuiApplication::clipboard()->text(), QStringLiteral("mnemo run -m DIR -p \"Hello\""));
        QTest::qWait(100);
        screenshot(window_, QStringLiteral("markdown.png"));
    }

    // The dialogs are QML too (Qt's own, from QtQuick.Dialogs): they load only when every module
    // they import is installed, which is seen only when they open.
    void opensTheFileDialogs() {
        for (const char* name : {"modelDialog", "ggufDialog", "exportDialog"}) {
            QStringList problems;
            const auto c = connect(engine_.get(), &QQmlEngine::warnings, this, [&](const QList<QQmlError>& ws) {
                for (const QQmlError& w : ws) problems << w.toString();
            });
            QObject* dialog = engine_->rootObjects().first()->findChild<QObject*>(QString::fromLatin1(name));
            QVERIFY2(dialog, name);
            QMetaObject::invokeMethod(dialog, "open");
            QTest::qWait(200);
            disconnect(c);
            QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
            QVERIFY2(dialog->property("visible").toBool(), name);
            if (QLatin1String(name) == QLatin1String("modelDialog")) screenshot(window_, QStringLiteral("open-model-dialog.png"));
            QMetaObject::invokeMethod(dialog, "close");
            QTRY_VERIFY(!dialog->property("visible").toBool());
        }
    }

    // The compare view, opened from the bar: CPU and the first Vulkan device are ticked to start
    // with; without Vulkan the run is CPU against CPU (started through the controller, as the
    // view would with CPU ticked twice).
    void comparesBackendsInTheCompareView() {
        QQuickItem* button = findItem(window_, "compareButton");
        QVERIFY(button && button->isEnabled());
        click(window_, button);
        QObject* view = engine_->rootObjects().first()->findChild<QObject*>(QStringLiteral("compareView"));
        QVERIFY(view);
        QTRY_VERIFY(view->property("opened").toBool());
        QQuickItem* prompt = visibleItem(window_, "comparePrompt");
        QVERIFY(prompt);
        prompt->setProperty("text", trainedQuestion(0).question);
        CompareController* compare = chat_->compare();
        compare->setProperty("steps", 8);
        if (noVulkanReason().isEmpty()) {
            QQuickItem* run = visibleItem(window_, "compareRunButton");
            QVERIFY(run && run->isEnabled());
            click(window_, run);
        } else {
            QVERIFY(compare->start(chat_->model()->dir(), trainedQuestion(0).question, {QStringLiteral("cpu:0"), QStringLiteral("cpu:0")}));
        }
        QVERIFY(compare->running());
        QTRY_VERIFY(visibleItem(window_, "compareCancelButton"));
        QVERIFY(QTest::qWaitFor([&] { return !compare->running(); }, 120000));
        QVERIFY2(!compare->statusIsError(), qPrintable(compare->status()));
        QCOMPARE(findItem(window_, "compareColumns")->property("count").toInt(), 2);
        QTRY_VERIFY(visibleItem(window_, "compareSpeed"));
        QVERIFY(visibleItem(window_, "compareSpeed")->property("text").toString().endsWith(QStringLiteral("tokens/s")));
        QTest::qWait(100);
        screenshot(window_, QStringLiteral("compare-view.png"));
        QMetaObject::invokeMethod(view, "close");
        QTRY_VERIFY(!view->property("visible").toBool());
    }

    // The knowledge panel, with the status of a server that does not answer: the chat goes on
    // and the answer says it had no memories.
    void showsTheKbPanelAndAnUnreachableServer() {
        QObject* panel = engine_->rootObjects().first()->findChild<QObject*>(QStringLiteral("kbPanel"));
        QVERIFY(panel);
        click(window_, findItem(window_, "kbButton"));
        QTRY_VERIFY(panel->property("opened").toBool());
        QQuickItem* url = visibleItem(window_, "kbUrlField");
        QVERIFY(url);
        url->setProperty("text", QStringLiteral("grpc://127.0.0.1:1"));
        chat_->kb()->setTimeoutMs(500);
        click(window_, visibleItem(window_, "kbConnectButton"));
        QVERIFY(chat_->model()->loading());
        QVERIFY(waitLoaded(*chat_));
        QVERIFY(chat_->kb()->status().missing());
        // In words, by host and port; the address as given and the client's text under it.
        QTRY_VERIFY(visibleItem(window_, "kbStatus")->property("text").toString().contains(QStringLiteral("127.0.0.1:1 is not answering")));
        QVERIFY(visibleItem(window_, "kbDetails")->property("text").toString().contains(QStringLiteral("grpc://127.0.0.1:1")));
        QTest::qWait(100);
        screenshot(window_, QStringLiteral("kb-panel.png"));
        QMetaObject::invokeMethod(panel, "close");
        QTRY_VERIFY(!panel->property("visible").toBool());

        QVERIFY(chat_->regenerate());
        QVERIFY(waitAnswered(*chat_));
        QQuickItem* notice = nullptr;
        QTRY_VERIFY((notice = visibleItem(window_, "kbNotice")));
        QVERIFY(notice->property("text").toString().contains(QStringLiteral("without memories")));
        QTest::qWait(100);
        screenshot(window_, QStringLiteral("answer-without-memories.png"));
        chat_->kb()->useNoMemories();
        QVERIFY(waitLoaded(*chat_));
    }

    // The picker's server entry, as a person chooses it: it opens the server panel; a server
    // that does not answer is said there and in the status line, and the model runs on as it did.
    void theServerEntryAsksForAServer() {
        QObject* panel = engine_->rootObjects().first()->findChild<QObject*>(QStringLiteral("serverPanel"));
        QVERIFY(panel);
        QQuickItem* picker = findItem(window_, "devicePicker");
        const int before = picker->property("currentIndex").toInt();
        click(window_, picker);
        QTRY_VERIFY(picker->property("popup").value<QObject*>()->property("opened").toBool());
        QQuickItem* row = nullptr;
        for (QQuickItem* i : allItems(window_))
            if (i->isVisible() && i->inherits("QQuickItemDelegate") && i->property("text").toString().startsWith(QStringLiteral("Server (mnemo serve)")))
                row = i;
        QVERIFY(row);
        click(window_, row);
        QTRY_VERIFY(panel->property("opened").toBool());
        QCOMPARE(picker->property("currentIndex").toInt(), before);  // nothing answers there yet
        visibleItem(window_, "serverUrlField")->setProperty("text", QStringLiteral("http://127.0.0.1:1"));
        visibleItem(window_, "serverKeyField")->setProperty("text", QStringLiteral("typed-key"));
        click(window_, visibleItem(window_, "serverConnectButton"));
        QTRY_VERIFY_WITH_TIMEOUT(chat_->server()->state() == QStringLiteral("failed"), 20000);
        QVERIFY(visibleItem(window_, "serverKeyField")->property("text").toString().isEmpty());  // no copy of the key stays
        QTRY_VERIFY(visibleItem(window_, "serverStatus")->property("text").toString().contains(QStringLiteral("cannot reach http://127.0.0.1:1/v1")));
        QVERIFY(chat_->statusIsError());
        QVERIFY(!chat_->model()->remote());
        QTest::qWait(100);
        screenshot(window_, QStringLiteral("server-panel.png"));
        QMetaObject::invokeMethod(panel, "close");
        QTRY_VERIFY(!panel->property("visible").toBool());
        QCOMPARE(picker->property("currentIndex").toInt(), before);
    }

    void devicePickerFollowsASwitch() {
        QQuickItem* picker = findItem(window_, "devicePicker");
        QVERIFY(picker);
        QCOMPARE(picker->property("currentIndex").toInt(), chat_->devices()->rowOf(QStringLiteral("cpu"), 0));
        click(window_, picker);  // opens the list of devices
        QTRY_VERIFY(picker->property("popup").value<QObject*>()->property("opened").toBool());
        QTest::qWait(100);
        screenshot(window_, QStringLiteral("device-picker.png"));
        QTest::keyClick(window_, Qt::Key_Escape);

        const QString why = noVulkanReason();
        if (!why.isEmpty()) QSKIP(qPrintable(why));
        // Choose Vulkan 0 in the picker's list, as a person does.
        const int vulkan = chat_->devices()->rowOf(QStringLiteral("vulkan"), 0);
        click(window_, picker);
        QTRY_VERIFY(picker->property("popup").value<QObject*>()->property("opened").toBool());
        QQuickItem* row = nullptr;
        for (QQuickItem* i : allItems(window_))
            if (i->isVisible() && i->inherits("QQuickItemDelegate") && i->property("text").toString().startsWith(QStringLiteral("Vulkan 0:")))
                row = i;
        QVERIFY(row);
        click(window_, row);
        QVERIFY(chat_->model()->loading());
        QVERIFY(waitLoaded(*chat_));
        QVERIFY2(!chat_->statusIsError(), qPrintable(chat_->status()));
        QCOMPARE(picker->property("currentIndex").toInt(), vulkan);
        QVERIFY(findItem(window_, "modelInfo")->property("text").toString().contains(QStringLiteral("vulkan:0")));
        QCOMPARE(chat_->conversation()->count(), 2);  // the conversation stays
    }

    // "Fastest (measured)" in the picker, as a person chooses it: it measures each device, loads
    // the model on the fastest and shows the figures under the bar.
    void choosesFastestInThePicker() {
        QQuickItem* picker = findItem(window_, "devicePicker");
        click(window_, picker);
        QTRY_VERIFY(picker->property("popup").value<QObject*>()->property("opened").toBool());
        QQuickItem* row = nullptr;
        for (QQuickItem* i : allItems(window_))
            if (i->isVisible() && i->inherits("QQuickItemDelegate") && i->property("text").toString().startsWith(QStringLiteral("Fastest (measured)")))
                row = i;
        QVERIFY(row);
        click(window_, row);
        QVERIFY(chat_->model()->loading());
        QVERIFY(QTest::qWaitFor([&] { return !chat_->model()->loading(); }, 120000));
        QVERIFY2(chat_->fastestDevice()->active(), qPrintable(chat_->status()));
        QCOMPARE(picker->property("currentIndex").toInt(), DeviceModel::kFastestRow);
        QTRY_VERIFY(visibleItem(window_, "fastestText"));
        QVERIFY(visibleItem(window_, "fastestText")->property("text").toString().contains(QStringLiteral("(chosen)")));
        QCOMPARE(chat_->conversation()->count(), 2);  // the conversation stays
        QTest::qWait(100);
        screenshot(window_, QStringLiteral("fastest-device.png"));
    }

    void followsADarkPalette() {
        const QPalette light = QGuiApplication::palette();
        QPalette dark;
        dark.setColor(QPalette::Window, QColor(0x2b, 0x2b, 0x2b));
        dark.setColor(QPalette::WindowText, QColor(0xe8, 0xe8, 0xe8));
        dark.setColor(QPalette::Base, QColor(0x1e, 0x1e, 0x1e));
        dark.setColor(QPalette::AlternateBase, QColor(0x33, 0x33, 0x33));
        dark.setColor(QPalette::Text, QColor(0xe8, 0xe8, 0xe8));
        dark.setColor(QPalette::Button, QColor(0x3a, 0x3a, 0x3a));
        dark.setColor(QPalette::ButtonText, QColor(0xe8, 0xe8, 0xe8));
        dark.setColor(QPalette::Highlight, QColor(0x3d, 0x7e, 0xc6));
        dark.setColor(QPalette::HighlightedText, Qt::white);
        dark.setColor(QPalette::Mid, QColor(0x55, 0x55, 0x55));
        dark.setColor(QPalette::PlaceholderText, QColor(0x90, 0x90, 0x90));
        for (QPalette::ColorRole role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
            dark.setColor(QPalette::Disabled, role, QColor(0x70, 0x70, 0x70));  // as a dark theme dims them
        QGuiApplication::setPalette(dark);
        QTest::qWait(100);
        const QImage img = window_->grabWindow();
        // The chat area (right of the list, below the bars) is dark now, its text light.
        const QColor background = img.pixelColor(img.width() - 20, img.height() / 2);
        QVERIFY2(background.lightness() < 80, qPrintable(background.name()));
        screenshot(window_, QStringLiteral("main-view-dark.png"));
        QGuiApplication::setPalette(light);
    }

    // Last: by now the chat view holds a prompt and an answer with their buttons.
    void everyControlHasAnAccessibleName() {
        int checked = 0;
        QStringList unnamed;
        for (QQuickItem* item : allItems(window_)) {
            // Controls a person uses; panes, containers and labels only hold or show them.
            if (!item->isVisible() || !item->inherits("QQuickControl") || item->inherits("QQuickPane")
                || item->inherits("QQuickContainer")
                || item->inherits("QQuickLabel") || item->inherits("QQuickScrollBar") || item->inherits("QQuickToolBar"))
                continue;
            // The attached Accessible.name as the item's own QML file sets it.
            const QQmlProperty name(item, QStringLiteral("Accessible.name"), qmlContext(item));
            if (!name.isValid()) qWarning("%s: no Accessible.name property", item->metaObject()->className());
            if (!name.isValid()) continue;
            ++checked;
            if (name.read().toString().isEmpty())
                unnamed << QString::fromLatin1(item->metaObject()->className()) + QLatin1Char(' ') + item->objectName();
        }
        QVERIFY(checked >= 8);
        QVERIFY2(unnamed.isEmpty(), qPrintable(unnamed.join(QStringLiteral(", "))));
    }

    void cleanupTestCase() {
        engine_.reset();
        chat_.reset();
    }
};

QTEST_MAIN(TestMainWindow)
#include "test_main_window.moc"
