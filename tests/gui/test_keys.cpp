// Focus and keys in the window, driven as a person does (QTest::keyClick on the window): after a
// click on "▸ references" typing still goes to the prompt box and Enter does not toggle the list;
// in a message's edit box Enter and Ctrl+Enter send the edit, Shift+Enter is a new line and Esc
// cancels; Enter renames in the Rename dialog and opens in the path dialogs.
#include <QFile>
#include <QQmlApplicationEngine>
#include <QQuickItem>
#include <QQuickWindow>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include "chat_controller.hpp"
#include "gui_test_util.hpp"
#include "main_window.hpp"
#include "window_test_util.hpp"

using namespace mnemo::gui;
using namespace mnemo::gui::test;

class TestKeys : public QObject {
    Q_OBJECT
    QTemporaryDir conversations_;
    std::unique_ptr<ChatController> chat_;
    std::unique_ptr<QQmlApplicationEngine> engine_;
    QQuickWindow* window_ = nullptr;

    QQuickItem* focused() const { return window_->activeFocusItem(); }
    QString promptText() const { return findItem(window_, "promptInput")->property("text").toString(); }

    void openSample(const QString& id) {
        Conversation c;
        c.id = id;
        c.title = QStringLiteral("Keys");
        c.created = c.updated = QDateTime::currentDateTimeUtc();
        Message q;
        q.role = QStringLiteral("user");
        q.text = QStringLiteral("Where was Tour Hujert born?");
        Message a;
        a.role = QStringLiteral("assistant");
        a.text = QStringLiteral("Zeajusy");
        a.finish = QStringLiteral("end of turn");
        mnemo::RetrievedReference r;
        r.chunk = 1;
        r.id = 3;
        r.text = "Tour Hujert was born in Zeajusy.";
        a.references = {r};
        c.messages = {q, a};
        QCOMPARE(chat_->conversations()->save(c), QString());
        QVERIFY(chat_->openConversation(c.id));
    }

    // Opens the first message's edit box and types `text` into it.
    QQuickItem* startEditing(const QString& text) {
        QQuickItem* edit = nullptr;
        if (!QTest::qWaitFor([&] { return (edit = visibleItem(window_, "editButton")) != nullptr; })) return nullptr;
        click(window_, edit);
        QQuickItem* editor = visibleItem(window_, "messageEditor");
        if (!editor || focused() != editor) return nullptr;
        editor->setProperty("text", QString());
        typeText(window_, text);
        return editor;
    }

private Q_SLOTS:
    void initTestCase() {
        chat_ = std::make_unique<ChatController>(conversations_.path());
        engine_ = std::make_unique<QQmlApplicationEngine>();
        QString problem;
        window_ = showMainWindow(*engine_, *chat_, problem);
        QVERIFY2(window_, qPrintable(problem));
        window_->requestActivate();
        QVERIFY(QTest::qWaitForWindowActive(window_));
        chat_->model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(*chat_));
        chat_->settings()->setProperty("temperature", 0.0);
        chat_->settings()->setProperty("maxTokens", 4);
    }

    void typingStaysInThePromptAfterTheReferencesToggle() {
        openSample(QStringLiteral("keys-references"));
        QQuickItem* prompt = findItem(window_, "promptInput");
        prompt->forceActiveFocus();
        QQuickItem* toggle = nullptr;
        QTRY_VERIFY((toggle = visibleItem(window_, "referencesToggle")));
        const QString closed = toggle->property("text").toString();
        click(window_, toggle);
        const QString open = toggle->property("text").toString();
        QVERIFY(open != closed);
        QCOMPARE(focused(), prompt);
        typeText(window_, QStringLiteral("hi"));
        QCOMPARE(promptText(), QStringLiteral("hi"));
        QTest::keyClick(window_, Qt::Key_Return, Qt::ShiftModifier);  // a new line, not a toggle
        QCOMPARE(toggle->property("text").toString(), open);
        QCOMPARE(promptText(), QStringLiteral("hi\n"));
        prompt->setProperty("text", QString());
    }

    void enterSendsTheEditAndShiftEnterIsANewLine() {
        openSample(QStringLiteral("keys-edit-enter"));
        QQuickItem* editor = startEditing(QStringLiteral("Where was"));
        QVERIFY(editor);
        QTest::keyClick(window_, Qt::Key_Return, Qt::ShiftModifier);
        typeText(window_, QStringLiteral("Kilo Vemot born?"));
        QCOMPARE(editor->property("text").toString(), QStringLiteral("Where was\nKilo Vemot born?"));
        QTest::keyClick(window_, Qt::Key_Return);
        QTRY_COMPARE(chat_->conversation()->at(0).text, QStringLiteral("Where was\nKilo Vemot born?"));
        QVERIFY(waitAnswered(*chat_));
        QCOMPARE(focused(), findItem(window_, "promptInput"));
    }

    void ctrlEnterSendsTheEditNotThePrompt() {
        openSample(QStringLiteral("keys-edit-ctrl-enter"));
        findItem(window_, "promptInput")->setProperty("text", QStringLiteral("left in the prompt"));
        QVERIFY(startEditing(QStringLiteral("Edited with Ctrl+Enter")));
        QTest::keyClick(window_, Qt::Key_Return, Qt::ControlModifier);
        QTRY_COMPARE(chat_->conversation()->at(0).text, QStringLiteral("Edited with Ctrl+Enter"));
        QVERIFY(waitAnswered(*chat_));
        QCOMPARE(promptText(), QStringLiteral("left in the prompt"));  // the prompt was not sent
        findItem(window_, "promptInput")->setProperty("text", QString());
    }

    void escCancelsTheEdit() {
        openSample(QStringLiteral("keys-edit-esc"));
        QVERIFY(startEditing(QStringLiteral("never sent")));
        QTest::keyClick(window_, Qt::Key_Escape);
        QTRY_VERIFY(!visibleItem(window_, "messageEditor"));
        QCOMPARE(chat_->conversation()->at(0).text, QStringLiteral("Where was Tour Hujert born?"));
        QCOMPARE(chat_->conversation()->count(), 2);
        QCOMPARE(focused(), findItem(window_, "promptInput"));
    }

    void enterRenames() {
        openSample(QStringLiteral("keys-rename"));
        QObject* dialog = window_->findChild<QObject*>(QStringLiteral("renameDialog"));
        QVERIFY(dialog);
        QMetaObject::invokeMethod(dialog, "openFor", Q_ARG(QVariant, QStringLiteral("keys-rename")), Q_ARG(QVariant, QString()));
        QTRY_VERIFY(dialog->property("opened").toBool());
        QCOMPARE(focused(), findItem(window_, "renameField"));
        typeText(window_, QStringLiteral("Renamed by Enter"));
        QTest::keyClick(window_, Qt::Key_Return);
        QTRY_VERIFY(!dialog->property("visible").toBool());
        QCOMPARE(chat_->title(), QStringLiteral("Renamed by Enter"));
    }

    // The model folder's path typed and opened with Enter (no Ctrl+L, no going up a folder).
    void enterOpensATypedModelFolder() {
        QObject* dialog = window_->findChild<QObject*>(QStringLiteral("modelDialog"));
        QVERIFY(dialog);
        QMetaObject::invokeMethod(dialog, "open");
        QTRY_VERIFY(dialog->property("opened").toBool());
        QQuickItem* field = visibleItem(window_, "pathField");
        QVERIFY(field);
        QCOMPARE(focused(), field);
        typeText(window_, defaultModelDir());
        QTest::keyClick(window_, Qt::Key_Return);
        QTRY_VERIFY(!dialog->property("visible").toBool());
        QVERIFY(chat_->model()->loading() || chat_->model()->loaded());
        QVERIFY(waitLoaded(*chat_));
    }

    // Browse… starts in the typed folder, and Qt's folder dialog opens the folder it shows, even
    // one without sub-folders (its Open button was disabled until a sub-folder was selected).
    void browseOpensTheFolderItShows() {
        QObject* dialog = window_->findChild<QObject*>(QStringLiteral("modelDialog"));
        QMetaObject::invokeMethod(dialog, "open");
        QTRY_VERIFY(dialog->property("opened").toBool());
        QQuickItem* field = visibleItem(window_, "pathField");
        field->setProperty("text", defaultModelDir());  // files only: the dialog's list is empty
        click(window_, visibleItem(window_, "browseButton"));
        QObject* picker = dialog->findChild<QObject*>(QStringLiteral("folderPicker"));  // this dialog's
        QVERIFY(picker);
        QTRY_VERIFY(picker->property("visible").toBool());
        // The picker's own Open button: in the popup of Qt's folder dialog implementation.
        const auto pickerOpen = [&]() -> QQuickItem* {
            for (QQuickItem* i : allItems(window_)) {
                if (!i->isVisible() || !i->inherits("QQuickAbstractButton") || i->property("text").toString() != QLatin1String("Open")) continue;
                for (QQuickItem* p = i; p; p = p->parentItem())
                    if (p->inherits("QQuickPopupItem") && p->parent() && p->parent()->inherits("QQuickFolderDialogImpl")) return i;
            }
            return nullptr;
        };
        QQuickItem* open = nullptr;
        QTRY_VERIFY((open = pickerOpen()));
        QTest::qWait(100);
        screenshot(window_, QStringLiteral("folder-picker.png"));
        QTRY_VERIFY2(open->isEnabled(), "the folder dialog cannot open the folder it shows");
        click(window_, open);
        QTRY_VERIFY(!picker->property("visible").toBool());
        QCOMPARE(field->property("text").toString(), defaultModelDir());
        QMetaObject::invokeMethod(dialog, "reject");
        QTRY_VERIFY(!dialog->property("visible").toBool());
    }

    // The export dialog: the path suggested from the title in the folder of the last export;
    // Enter saves there.
    void enterSavesTheExport() {
        openSample(QStringLiteral("keys-export"));
        QObject* dialog = window_->findChild<QObject*>(QStringLiteral("exportDialog"));
        QVERIFY(dialog);
        dialog->setProperty("format", QStringLiteral("json"));
        dialog->setProperty("lastFolder", conversations_.path());
        QMetaObject::invokeMethod(dialog, "suggest");
        QMetaObject::invokeMethod(dialog, "open");
        QTRY_VERIFY(dialog->property("opened").toBool());
        QQuickItem* path = visibleItem(window_, "pathField");
        QCOMPARE(focused(), path);
        QCOMPARE(path->property("text").toString(), conversations_.filePath(QStringLiteral("Keys.json")));
        // Browse… opens Qt's Save dialog on that file: "Save", the name filled in.
        click(window_, visibleItem(window_, "browseButton"));
        QObject* picker = dialog->findChild<QObject*>(QStringLiteral("filePicker"));  // this dialog's
        QVERIFY(picker);
        QTRY_VERIFY(picker->property("visible").toBool());
        QQuickItem* name = nullptr;
        QTRY_VERIFY((name = visibleItem(window_, "fileNameTextField")));
        QCOMPARE(name->property("text").toString(), QStringLiteral("Keys.json"));
        QCOMPARE(picker->property("acceptLabel").toString(), QStringLiteral("Save"));
        QMetaObject::invokeMethod(picker, "close");
        QTRY_VERIFY(!picker->property("visible").toBool());
        path->forceActiveFocus();
        QTest::keyClick(window_, Qt::Key_Return);
        QTRY_VERIFY(!dialog->property("visible").toBool());
        QTRY_VERIFY(QFile::exists(conversations_.filePath(QStringLiteral("Keys.json"))));
    }

    // Ctrl+D opens the device picker's list with the keys in it; Esc closes it and nothing changed.
    void ctrlDOpensTheDevicePicker() {
        QQuickItem* picker = findItem(window_, "devicePicker");
        QVERIFY(picker);
        const int row = picker->property("currentIndex").toInt();
        QObject* popup = qvariant_cast<QObject*>(picker->property("popup"));
        QVERIFY(popup);
        QVERIFY(!popup->property("visible").toBool());
        QTest::keyClick(window_, Qt::Key_D, Qt::ControlModifier);
        QTRY_VERIFY(popup->property("visible").toBool());
        QTest::keyClick(window_, Qt::Key_Escape);
        QTRY_VERIFY(!popup->property("visible").toBool());
        QCOMPARE(picker->property("currentIndex").toInt(), row);
        // A row chosen with Enter: the keys go back to the prompt box, not to the picker (where
        // the letters typed next would choose rows).
        QTest::keyClick(window_, Qt::Key_D, Qt::ControlModifier);
        QTRY_VERIFY(popup->property("visible").toBool());
        QTest::keyClick(window_, Qt::Key_Return);
        QTRY_VERIFY(!popup->property("visible").toBool());
        QTRY_COMPARE(focused(), findItem(window_, "promptInput"));
        QVERIFY(waitLoaded(*chat_));
    }

    // Ctrl+Shift+A is Knowledge → Add documents…: the Documents panel, its path field holding the keys.
    void ctrlShiftAOpensDocumentsOnItsPathField() {
        QObject* panel = window_->findChild<QObject*>(QStringLiteral("documentsPanel"));
        QVERIFY(panel);
        QTest::keyClick(window_, Qt::Key_A, Qt::ControlModifier | Qt::ShiftModifier);
        QTRY_VERIFY(panel->property("opened").toBool());
        QQuickItem* path = visibleItem(window_, "documentsPathField");
        QVERIFY(path);
        QTRY_COMPARE(focused(), path);
        typeText(window_, QStringLiteral("/x"));
        QCOMPARE(path->property("text").toString(), QStringLiteral("/x"));
        path->setProperty("text", QString());
        QMetaObject::invokeMethod(panel, "close");
        QTRY_VERIFY(!panel->property("visible").toBool());
        findItem(window_, "promptInput")->forceActiveFocus();
    }

    void cleanupTestCase() {
        engine_.reset();
        chat_.reset();
    }
};

QTEST_MAIN(TestKeys)
#include "test_keys.moc"
