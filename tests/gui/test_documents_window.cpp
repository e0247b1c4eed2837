// Knowledge → Documents… in the window (qrc:/qml/Main.qml at 1366×768): the Knowledge panel's
// "Documents…" button opens the panel, a typed path adds a document (the list shows it; nothing of
// the panel outside it or overlapping at 1366×768), the next
// answer's references link to it, and clicking that link opens the panel on the document.
// A long add shows its progress and is cancelled from its button. Screenshots:
// <build>/tests/gui/screenshots/documents-panel.png, documents-progress.png, reference-document.png.
#include <QFile>
#include <QQmlApplicationEngine>
#include <QQuickWindow>
#include <QTemporaryDir>
#include <QTest>

#include "gui_test_util.hpp"
#include "kb/documents/documents_controller.hpp"
#include "main_window.hpp"
#include "geometry_check.hpp"
#include "window_test_util.hpp"

using namespace mnemo::gui;
using namespace mnemo::gui::test;

class TestDocumentsWindow : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;
    std::unique_ptr<ChatController> chat_;
    std::unique_ptr<QQmlApplicationEngine> engine_;
    QQuickWindow* window_ = nullptr;

    QObject* popup(const char* name) const { return engine_->rootObjects().first()->findChild<QObject*>(QString::fromLatin1(name)); }

private Q_SLOTS:
    void initTestCase() {
        chat_ = std::make_unique<ChatController>(dir_.filePath(QStringLiteral("conversations")));
        chat_->kb()->documents()->setMemoriesRoot(dir_.filePath(QStringLiteral("memories")));
        engine_ = std::make_unique<QQmlApplicationEngine>();
        QString problem;
        window_ = showMainWindow(*engine_, *chat_, problem);
        QVERIFY2(window_, qPrintable(problem));
        chat_->model()->loadModel(defaultModelDir());
        QVERIFY(waitLoaded(*chat_));
        chat_->settings()->setProperty("temperature", 0.0);
        chat_->settings()->setProperty("maxTokens", 8);
    }

    void addsADocumentAndLinksItsReferences() {
        QObject* kbPanel = popup("kbPanel");
        QObject* docsPanel = popup("documentsPanel");
        QVERIFY(kbPanel && docsPanel);
        click(window_, findItem(window_, "kbButton"));
        QTRY_VERIFY(kbPanel->property("opened").toBool());
        QQuickItem* button = nullptr;
        QTRY_VERIFY((button = visibleItem(window_, "documentsButton")));
        click(window_, button);
        QTRY_VERIFY(docsPanel->property("opened").toBool());
        QQuickItem* where = visibleItem(window_, "documentsWhere");
        QVERIFY(where);
        QVERIFY2(where->property("text").toString().contains(dir_.filePath(QStringLiteral("memories"))), qPrintable(where->property("text").toString()));

        const QString fact = dir_.filePath(QStringLiteral("zorblat.md"));
        {
            QFile f(fact);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("# Zorblat Quenn\n\nZorblat Quenn was born in Plimvar.\n");
        }
        QQuickItem* field = visibleItem(window_, "documentsPathField");
        QVERIFY(field);
        click(window_, field);
        field->setProperty("text", fact);
        QTest::keyClick(window_, Qt::Key_Return);  // Enter in the field adds
        QTRY_VERIFY_WITH_TIMEOUT(!chat_->kb()->documents()->busy() && !chat_->model()->loading(), 60000);
        QVERIFY2(!chat_->kb()->documents()->messageIsError(), qPrintable(chat_->kb()->documents()->message()));
        QTRY_COMPARE(findItem(window_, "documentsList")->property("count").toInt(), 1);
        QTest::qWait(100);
        QCOMPARE(window_->size(), QSize(1366, 768));
        const QStringList problems = geometryProblems(docsPanel->property("contentItem").value<QQuickItem*>()->parentItem());
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
        screenshot(window_, QStringLiteral("documents-panel.png"));

        // A long document: the progress bar with its rate and time left, and Cancel, which leaves
        // the folder as it was.
        QByteArray many;
        for (int i = 0; i < 20000; ++i) many += "Line " + QByteArray::number(i) + " of a long document.\n\n";
        const QString longDoc = dir_.filePath(QStringLiteral("long.txt"));
        {
            QFile f(longDoc);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(many);
        }
        DocumentsController* docs = chat_->kb()->documents();
        field->setProperty("text", longDoc);
        click(window_, field);
        QTest::keyClick(window_, Qt::Key_Return);
        QVERIFY(QTest::qWaitFor([&] { return docs->progress() > 0 || !docs->busy(); }, 60000));
        QVERIFY2(docs->busy(), "20000 references were memorized before the test could cancel");
        QQuickItem* cancel = visibleItem(window_, "documentsCancel");
        QVERIFY(cancel && visibleItem(window_, "documentsProgress"));
        screenshot(window_, QStringLiteral("documents-progress.png"));
        click(window_, cancel);
        QTRY_VERIFY_WITH_TIMEOUT(!docs->busy(), 30000);
        QVERIFY2(docs->message().startsWith(QStringLiteral("Cancelled")), qPrintable(docs->message()));
        QCOMPARE(findItem(window_, "documentsList")->property("count").toInt(), 1);
        QMetaObject::invokeMethod(docsPanel, "close");
        QMetaObject::invokeMethod(kbPanel, "close");
        QTRY_VERIFY(!docsPanel->property("visible").toBool() && !kbPanel->property("visible").toBool());

        QVERIFY(chat_->send(QStringLiteral("Where was Zorblat Quenn born?")));
        QVERIFY(waitAnswered(*chat_));
        QVERIFY(!chat_->conversation()->at(1).references.isEmpty());
        QQuickItem* toggle = nullptr;
        QTRY_VERIFY((toggle = visibleItem(window_, "referencesToggle")));
        click(window_, toggle);
        QQuickItem* link = nullptr;
        QTRY_VERIFY((link = visibleItem(window_, "referenceDocumentLink")));
        QCOMPARE(link->property("text").toString(), QStringLiteral("Document: Zorblat Quenn"));
        click(window_, link);
        QTRY_VERIFY(docsPanel->property("opened").toBool());
        QCOMPARE(chat_->kb()->documents()->highlightedRow(), 0);
        QTest::qWait(100);
        screenshot(window_, QStringLiteral("reference-document.png"));
    }
};

QTEST_MAIN(TestDocumentsWindow)
#include "test_documents_window.moc"
