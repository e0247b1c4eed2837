// Text from outside the app, in the window the program loads: conversation titles, references,
// model folder and device names, reasons, shown as plain text everywhere (a QML Text guesses its
// format, and would render HTML and load an <img>), the message's Markdown without raw HTML or
// images; and files the app could not use named in the notice bar until dismissed.
#include <QQuickTextDocument>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QTextDocument>
#include <sys/stat.h>

#include "chat_controller.hpp"
#include "gui_test_util.hpp"
#include "main_window.hpp"
#include "window_test_util.hpp"

using namespace mnemo::gui;
using namespace mnemo::gui::test;

class TestOutsideText : public QObject {
    Q_OBJECT
    QTemporaryDir conversations_;
    QTemporaryDir outsideModel_;  // a model folder whose name looks like HTML
    std::unique_ptr<ChatController> chat_;
    std::unique_ptr<QQmlApplicationEngine> engine_;
    QQuickWindow* window_ = nullptr;

private Q_SLOTS:
    void initTestCase() {
        chat_ = std::make_unique<ChatController>(conversations_.path());
        engine_ = std::make_unique<QQmlApplicationEngine>();
        QString problem;
        window_ = showMainWindow(*engine_, *chat_, problem);
        QVERIFY2(window_, qPrintable(problem));
    }

    // Text from outside the app — a conversation file's title, references, device, notice and
    // error, a model folder's name in the status, the recent models and the model's tooltip — is
    // shown as plain text: a Text guesses its format, and would render HTML (loading an <img>). The
    // message itself is Markdown without raw HTML or images.
    void showsOutsideTextAsPlainText() {
        const QString tag = QStringLiteral("<img src=leak.png>");  // no '/': it names a folder too
        Conversation c;
        c.id = QStringLiteral("outside-text");
        c.title = QStringLiteral("Title ") + tag;
        c.created = c.updated = QDateTime::currentDateTimeUtc();
        Message q;
        q.role = QStringLiteral("user");
        q.text = QStringLiteral("Question ") + tag;
        Message a;
        a.role = QStringLiteral("assistant");
        a.text = QStringLiteral("Answer <b>bold</b> %1 ![pic](file:///nonexistent/leak.png)").arg(tag);
        a.finish = QStringLiteral("end of turn");
        a.tokens = 3;
        a.tokensPerSecond = 10.0;
        a.device = QStringLiteral("cpu:0 ") + tag;
        a.notice = QStringLiteral("Notice ") + tag;
        a.error = QStringLiteral("Error ") + tag;
        mnemo::RetrievedReference r;
        r.chunk = 1;
        r.id = 2;
        r.text = (QStringLiteral("Memory ") + tag).toStdString();
        r.title = (QStringLiteral("Reference ") + tag).toStdString();
        r.source = (QStringLiteral("Source ") + tag).toStdString();
        a.references = {r};
        c.messages = {q, a};
        QCOMPARE(chat_->conversations()->save(c), QString());
        QVERIFY(chat_->openConversation(c.id));
        QQuickItem* toggle = nullptr;
        QTRY_VERIFY((toggle = visibleItem(window_, "referencesToggle")));
        click(window_, toggle);
        // A model folder whose name is the tag: the status, the recent models, the model's tooltip.
        QVERIFY(QDir().mkpath(outsideModel_.filePath(QStringLiteral("model-") + tag)));
        const QString model = outsideModel_.filePath(QStringLiteral("model-") + tag);
        QVERIFY(copyDefaultModel(model));
        chat_->model()->loadModel(model);
        QVERIFY(waitLoaded(*chat_));
        QObject* menu = engine_->rootObjects().first()->findChild<QObject*>(QStringLiteral("modelMenu"));
        QMetaObject::invokeMethod(menu, "open");
        QTRY_VERIFY(menu->property("opened").toBool());

        int shown = 0;
        QStringList rich;
        QSet<QObject*> all;
        collectObjects(window_, all);
        for (QObject* o : all) {
            if (!o->inherits("QQuickText") || !o->property("text").toString().contains(tag)) continue;
            ++shown;
            if (o->property("textFormat").toInt() != 0)  // Text.PlainText
                rich << QStringLiteral("%1 \"%2\"").arg(QString::fromLatin1(o->metaObject()->className()), o->property("text").toString());
        }
        QMetaObject::invokeMethod(menu, "close");
        QVERIFY2(rich.isEmpty(), qPrintable(QStringLiteral("shown as rich text:\n") + rich.join(QLatin1Char('\n'))));
        // The conversation's title, the reference's two lines, the device, the notice, the error, the
        // status, the recent model, the model's tooltip.
        QVERIFY2(shown >= 9, qPrintable(QStringLiteral("only %1 texts hold the tag").arg(shown)));

        // The answer: its raw HTML is shown as typed, its image as its address; nothing loaded.
        bool answerSeen = false;
        for (QObject* o : all) {
            auto* doc = o->inherits("QQuickTextEdit") ? o->property("textDocument").value<QQuickTextDocument*>() : nullptr;
            if (!doc || !doc->textDocument()->toPlainText().startsWith(QStringLiteral("Answer"))) continue;
            answerSeen = true;
            const QString plain = doc->textDocument()->toPlainText();
            QVERIFY2(plain.contains(QStringLiteral("<b>bold</b> ") + tag), qPrintable(plain));
            QVERIFY2(plain.contains(QStringLiteral("[image: file:///nonexistent/leak.png]")), qPrintable(plain));
            for (QTextBlock b = doc->textDocument()->begin(); b.isValid(); b = b.next())
                for (auto it = b.begin(); !it.atEnd(); ++it) QVERIFY(!it.fragment().charFormat().isImageFormat());
        }
        QVERIFY(answerSeen);
        QTest::qWait(100);
        screenshot(window_, QStringLiteral("outside-text.png"));
    }

    // Files the app cannot use are named in the notice bar until dismissed (the status line is
    // overwritten by the next load): here a FIFO among the conversations.
    void namesTheFilesItCouldNotUseUntilDismissed() {
        const QString fifo = conversations_.filePath(QStringLiteral("stuck.json"));
        QCOMPARE(::mkfifo(QFile::encodeName(fifo).constData(), 0600), 0);
        chat_->conversations()->reload();
        QQuickItem* notices = nullptr;
        QTRY_VERIFY((notices = visibleItem(window_, "noticesText")));
        const QString text = notices->property("text").toString();
        QVERIFY2(text.contains(fifo + QStringLiteral(": ")) && text.contains(QStringLiteral("FIFO")), qPrintable(text));
        screenshot(window_, QStringLiteral("notices.png"));
        chat_->dismissNotices();
        QTRY_VERIFY(!visibleItem(window_, "noticeBar"));
        QVERIFY(QFile::remove(fifo));
    }

    void cleanupTestCase() {
        engine_.reset();
        chat_.reset();
    }
};

QTEST_MAIN(TestOutsideText)
#include "test_outside_text.moc"
