// Issue 29 in the window (qrc:/qml/Main.qml at 1366×768, driven by clicks): the ‹ k/n › navigator
// of a regenerated answer and the seed under it, Delete that asks first and can be undone, the
// settings' seed and context-overflow choices with the model's trained context, and the status
// line's "Drop oldest messages and continue". Screenshots go to <build>/tests/gui/screenshots/.
#include <QQmlApplicationEngine>
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

class TestChatWindow : public QObject {
    Q_OBJECT
    QTemporaryDir conversations_;
    std::unique_ptr<ChatController> chat_;
    std::unique_ptr<QQmlApplicationEngine> engine_;
    QQuickWindow* window_ = nullptr;

    QObject* object(const char* name) { return window_->findChild<QObject*>(QString::fromLatin1(name)); }

private Q_SLOTS:
    void initTestCase() {
        chat_ = std::make_unique<ChatController>(conversations_.path());
        engine_ = std::make_unique<QQmlApplicationEngine>();
        QString problem;
        window_ = showMainWindow(*engine_, *chat_, problem);
        QVERIFY2(window_, qPrintable(problem));
        chat_->model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(*chat_));
        chat_->settings()->setProperty("temperature", 0.8);
        chat_->settings()->setProperty("maxTokens", 24);
    }

    void stepsThroughTheVersionsOfAnAnswer() {
        QVERIFY(chat_->send(QStringLiteral("Tell me a story about a miner.")));
        QVERIFY(waitAnswered(*chat_));
        QVERIFY(!visibleItem(window_, "versionNavigator"));  // one version: no navigator
        QQuickItem* seed = visibleItem(window_, "measurements");
        QVERIFY(seed);
        QVERIFY2(seed->property("text").toString().contains(QStringLiteral("seed %1").arg(chat_->conversation()->at(1).seed)),
                 qPrintable(seed->property("text").toString()));
        const QString first = chat_->conversation()->at(1).text;
        QVERIFY(chat_->regenerate());
        QVERIFY(waitAnswered(*chat_));
        QQuickItem* label = nullptr;
        QTRY_VERIFY((label = visibleItem(window_, "versionLabel")));
        QCOMPARE(label->property("text").toString(), QStringLiteral("2/2"));
        QVERIFY(!visibleItem(window_, "nextVersion")->isEnabled());
        click(window_, visibleItem(window_, "previousVersion"));
        QCOMPARE(chat_->conversation()->at(1).text, first);
        QTRY_COMPARE(visibleItem(window_, "versionLabel")->property("text").toString(), QStringLiteral("1/2"));
        screenshot(window_, QStringLiteral("answer-versions.png"));
        click(window_, visibleItem(window_, "nextVersion"));
        QTRY_COMPARE(visibleItem(window_, "versionLabel")->property("text").toString(), QStringLiteral("2/2"));
    }

    void deletingAsksFirstAndCanBeUndone() {
        const QString id = chat_->conversationId();
        QObject* dialog = object("deleteDialog");
        QVERIFY(dialog);
        QVERIFY(QMetaObject::invokeMethod(dialog, "openFor", Q_ARG(QVariant, id), Q_ARG(QVariant, chat_->title())));
        QTRY_VERIFY(dialog->property("opened").toBool());
        QCOMPARE(chat_->conversations()->rowCount(), 1);  // nothing deleted by asking
        screenshot(window_, QStringLiteral("delete-confirm.png"));
        QVERIFY(QMetaObject::invokeMethod(dialog, "accept"));
        QTRY_COMPARE(chat_->conversations()->rowCount(), 0);
        QQuickItem* undo = nullptr;
        QTRY_VERIFY((undo = visibleItem(window_, "undoDeleteButton")));
        screenshot(window_, QStringLiteral("delete-undo.png"));
        click(window_, undo);
        QCOMPARE(chat_->conversations()->rowCount(), 1);
        QCOMPARE(chat_->conversationId(), id);
        QTRY_VERIFY(!visibleItem(window_, "undoDeleteBar"));
    }

    void theSettingsNameTheTrainedContextAndTheSeed() {
        QObject* settings = object("settingsDialog");
        QVERIFY(settings);
        QVERIFY(QMetaObject::invokeMethod(settings, "open"));
        QTRY_VERIFY(settings->property("opened").toBool());
        QObject* warning = object("contextWarning");
        QObject* trained = object("trainedContextLabel");
        QVERIFY(warning && trained);
        const int length = chat_->model()->trainedContext();
        QVERIFY(length > 0);
        QVERIFY2(trained->property("text").toString().contains(QStringLiteral("trained: %1").arg(length)),
                 qPrintable(trained->property("text").toString()));
        chat_->settings()->setProperty("contextLength", length * 2);
        QVERIFY2(warning->property("text").toString().contains(QString::number(length * 2)), qPrintable(warning->property("text").toString()));
        QVERIFY(warning->property("visible").toBool());
        screenshot(window_, QStringLiteral("settings-context-warning.png"));
        chat_->settings()->setProperty("contextLength", 0);
        QVERIFY(!warning->property("visible").toBool());
        QObject* seedField = object("seedField");
        QVERIFY(seedField);
        QVERIFY(!seedField->property("enabled").toBool());
        chat_->settings()->setProperty("fixedSeed", true);
        QVERIFY(seedField->property("enabled").toBool());
        chat_->settings()->setProperty("fixedSeed", false);
        QVERIFY(QMetaObject::invokeMethod(settings, "close"));
        QTRY_VERIFY(!settings->property("visible").toBool());
    }

    void offersToDropTheOldestMessages() {
        chat_->settings()->setProperty("contextLength", 64);
        chat_->settings()->setProperty("temperature", 0.0);
        chat_->settings()->setProperty("maxTokens", 8);
        chat_->model()->reloadModel();
        QVERIFY(waitLoaded(*chat_));
        chat_->newConversation();
        for (int i = 0; i < 20 && !chat_->contextOverflow(); ++i) {
            QVERIFY(chat_->send(trainedQuestion(0).question));
            QVERIFY(waitAnswered(*chat_));
        }
        QQuickItem* drop = nullptr;
        QTRY_VERIFY((drop = visibleItem(window_, "dropOldestButton")));
        screenshot(window_, QStringLiteral("context-full.png"));
        click(window_, drop);
        QVERIFY(waitAnswered(*chat_));
        QTRY_VERIFY(!visibleItem(window_, "dropOldestButton"));
        QCOMPARE(chat_->conversation()->at(chat_->conversation()->count() - 1).text.trimmed(), trainedQuestion(0).answer);
        QTRY_VERIFY(visibleItem(window_, "measurements"));
    }

    void cleanupTestCase() {
        engine_.reset();
        chat_.reset();
    }
};

QTEST_MAIN(TestChatWindow)
#include "test_chat_window.moc"
