// A message as the chat view shows it, without a window: cut into prose and code blocks, each
// code block's syntax colours (escaped HTML, never the code's own markup), Markdown tables with
// borders, padding and numbers on the right, and the export dialog's file name.
#include <QGuiApplication>
#include <QTest>

#include "conversation/code_blocks.hpp"
#include "conversation/export_file_name.hpp"
#include "conversation/markdown_html.hpp"
#include "conversation/message_blocks.hpp"
#include "conversation/syntax_highlight.hpp"

using namespace mnemo::gui;

namespace {

const SyntaxColours kColours{QStringLiteral("#k"), QStringLiteral("#t"), QStringLiteral("#s"), QStringLiteral("#c"),
                             QStringLiteral("#n")};

QString span(const char* colour, const QString& text) {
    return QStringLiteral("<span style=\"color:%1\">%2</span>").arg(QLatin1String(colour), text);
}

}  // namespace

class TestMarkdown : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void cutsAMessageIntoProseAndCode() {
        const QList<MessageBlock> b = splitMessageBlocks(QStringLiteral(
            "Intro\n\n```cpp\nint x;\n```\nBetween\n~~~~\n```not a fence end\n~~~~~\n\n\n```sh\necho hi"));
        QCOMPARE(b.size(), 5);
        QCOMPARE(b[0].kind, MessageBlock::Kind::Markdown);
        QCOMPARE(b[0].text, QStringLiteral("Intro\n"));
        QCOMPARE(b[1].kind, MessageBlock::Kind::Code);
        QCOMPARE(b[1].language, QStringLiteral("cpp"));
        QCOMPARE(b[1].text, QStringLiteral("int x;"));
        QCOMPARE(b[2].text, QStringLiteral("Between"));
        // A longer closing fence closes; a fence of the other character inside does not.
        QCOMPARE(b[3].text, QStringLiteral("```not a fence end"));
        QVERIFY(b[3].closed);
        // Still streaming: the code so far, not closed; blank prose makes no block.
        QCOMPARE(b[4].language, QStringLiteral("sh"));
        QCOMPARE(b[4].text, QStringLiteral("echo hi"));
        QVERIFY(!b[4].closed);
        QCOMPARE(fencedCodeBlocks(QStringLiteral("a\n```\nx\n```\n```py\ny")), (QStringList{QStringLiteral("x"), QStringLiteral("y")}));
    }

    void theViewGetsHtmlForProseAndRawCode() {
        const QVariantList v = messageBlocksForView(QStringLiteral("**bold** <img src=x>\n```html\n<img src=x>\n```"));
        QCOMPARE(v.size(), 2);
        const QVariantMap prose = v[0].toMap();
        QCOMPARE(prose.value(QStringLiteral("kind")).toString(), QStringLiteral("markdown"));
        QVERIFY(prose.value(QStringLiteral("html")).toString().contains(QStringLiteral("font-weight")));
        QVERIFY(!prose.value(QStringLiteral("html")).toString().contains(QStringLiteral("<img")));
        const QVariantMap code = v[1].toMap();
        QCOMPARE(code.value(QStringLiteral("kind")).toString(), QStringLiteral("code"));
        QCOMPARE(code.value(QStringLiteral("code")).toString(), QStringLiteral("<img src=x>"));  // what Copy copies
        QCOMPARE(code.value(QStringLiteral("language")).toString(), QStringLiteral("html"));
    }

    void coloursCppTokens() {
        const QString html = highlightCodeHtml(
            QStringLiteral("#include <vector>\nint main() { return 0x1F + 2.5e-3; } // done\n/* a\nb */ auto s = \"a\\\"<b>\";"),
            QStringLiteral("c++"), kColours);
        QVERIFY2(html.startsWith(span("#k", QStringLiteral("#include")) + QLatin1Char(' ') + span("#s", QStringLiteral("&lt;vector&gt;")) + QLatin1Char('\n')), qPrintable(html));
        QVERIFY(html.contains(span("#t", QStringLiteral("int")) + QStringLiteral(" main()")));
        QVERIFY(html.contains(span("#k", QStringLiteral("return"))));
        QVERIFY(html.contains(span("#n", QStringLiteral("0x1F"))));
        QVERIFY2(html.contains(span("#n", QStringLiteral("2.5e-3"))), qPrintable(html));
        QVERIFY(html.contains(span("#c", QStringLiteral("// done"))));
        QVERIFY(html.contains(span("#c", QStringLiteral("/* a\nb */"))));
        QVERIFY(html.contains(span("#s", QStringLiteral("&quot;a\\&quot;&lt;b&gt;&quot;"))));
    }

    void coloursOtherLanguages() {
        const QString py = highlightCodeHtml(QStringLiteral("def f(x):\n    \"\"\"doc\n\"\"\"\n    return x  # 1"), QStringLiteral("py"), kColours);
        QVERIFY(py.contains(span("#k", QStringLiteral("def"))));
        QVERIFY(py.contains(span("#s", QStringLiteral("&quot;&quot;&quot;doc\n&quot;&quot;&quot;"))));
        QVERIFY(py.contains(span("#c", QStringLiteral("# 1"))));
        QVERIFY(highlightCodeHtml(QStringLiteral("x=1#c"), QStringLiteral("python"), kColours).endsWith(span("#c", QStringLiteral("#c"))));
        const QString json = highlightCodeHtml(QStringLiteral("{\"n\": 1, \"ok\": true, \"s\": \"v\"}"), QStringLiteral("json"), kColours);
        QVERIFY(json.contains(span("#t", QStringLiteral("&quot;n&quot;"))));  // a key
        QVERIFY(json.contains(span("#s", QStringLiteral("&quot;v&quot;"))));  // a value
        QVERIFY(json.contains(span("#k", QStringLiteral("true"))));
        const QString sh = highlightCodeHtml(QStringLiteral("echo ${#x} 'a\\' # note"), QStringLiteral("bash"), kColours);
        QVERIFY2(sh.contains(QStringLiteral("${#x}")), qPrintable(sh));  // '#' inside a word: no comment
        QVERIFY(sh.contains(span("#s", QStringLiteral("'a\\'"))));      // no escapes in '…'
        QVERIFY(sh.contains(span("#c", QStringLiteral("# note"))));
        const QString rust = highlightCodeHtml(QStringLiteral("fn f<'a>(c: char) { let x = 'y'; }"), QStringLiteral("rs"), kColours);
        QVERIFY2(rust.contains(QStringLiteral("&lt;'a&gt;")), qPrintable(rust));  // a lifetime, not a string
        QVERIFY(rust.contains(span("#s", QStringLiteral("'y'"))));
        const QString go = highlightCodeHtml(QStringLiteral("func main() { s := `raw\n` }"), QStringLiteral("golang"), kColours);
        QVERIFY(go.contains(span("#k", QStringLiteral("func"))));
        QVERIFY(go.contains(span("#s", QStringLiteral("`raw\n`"))));
        const QString ts = highlightCodeHtml(QStringLiteral("const n: number = 3 // x86_64"), QStringLiteral("ts"), kColours);
        QVERIFY(ts.contains(span("#k", QStringLiteral("const"))));
        QVERIFY(ts.contains(span("#t", QStringLiteral("number"))));
    }

    // The code is the model's text: whatever it holds comes out escaped, in any language.
    void neverPassesTheCodesMarkup() {
        const QString evil = QStringLiteral("<img src=\"file:///etc/passwd\"> </span><b>x</b> & \"q\" '<i>'");
        for (const QString& language : {QStringLiteral("cpp"), QStringLiteral("python"), QStringLiteral("json"),
                                        QStringLiteral("shell"), QStringLiteral("rust"), QStringLiteral("unknown"), QString()}) {
            const QString html = highlightCodeHtml(evil, language, kColours);
            QString stripped = html;
            stripped.remove(QRegularExpression(QStringLiteral("<span style=\"color:#[a-z]\">|</span>")));
            QVERIFY2(!stripped.contains(QLatin1Char('<')) && !stripped.contains(QLatin1Char('>')), qPrintable(language + QLatin1Char(' ') + html));
        }
        QCOMPARE(highlightCodeHtml(QStringLiteral("a < b"), QStringLiteral("klingon"), kColours), QStringLiteral("a &lt; b"));
    }

    void knowsLanguageAliases() {
        QCOMPARE(canonicalLanguage(QStringLiteral("C++")), QStringLiteral("cpp"));
        QCOMPARE(canonicalLanguage(QStringLiteral("python {.class}")), QStringLiteral("python"));
        QCOMPARE(canonicalLanguage(QStringLiteral("zsh")), QStringLiteral("shell"));
        QCOMPARE(canonicalLanguage(QStringLiteral("Haskell")), QStringLiteral("haskell"));
    }

    // QTextDocument's defaults gave tables no border and no padding: columns ran into each other.
    void tablesHaveBordersPaddingAndNumbersOnTheRight() {
        const QString html = markdownToHtml(QStringLiteral("| Name | Score |\n|---|---|\n| a | 12.5 |\n| b | n/a |\n"));
        QVERIFY2(html.contains(QStringLiteral("border=\"1\"")), qPrintable(html));
        QVERIFY2(html.contains(QStringLiteral("cellpadding=\"6\"")), qPrintable(html));
        QVERIFY2(html.contains(QStringLiteral("border-collapse:collapse")), qPrintable(html));
        const qsizetype number = html.indexOf(QStringLiteral("12.5"));
        const qsizetype text = html.indexOf(QStringLiteral("n/a"));
        QVERIFY(number > 0 && text > 0);
        QVERIFY2(html.lastIndexOf(QStringLiteral("align=\"right\""), number) > html.lastIndexOf(QStringLiteral("<td"), number),
                 qPrintable(html));  // the number's paragraph is right-aligned
        QVERIFY(html.lastIndexOf(QStringLiteral("align=\"right\""), text) < html.lastIndexOf(QStringLiteral("<td"), text));
    }

    void suggestsAnExportFileName() {
        QCOMPARE(exportFileName(QStringLiteral("Where was Tour Hujert born?"), QStringLiteral("markdown")),
                 QStringLiteral("Where was Tour Hujert born.md"));
        QCOMPARE(exportFileName(QStringLiteral("a/b\\c:d\n"), QStringLiteral("json")), QStringLiteral("a b c d.json"));
        QCOMPARE(exportFileName(QStringLiteral("..."), QStringLiteral("json")), QStringLiteral("conversation.json"));
        QCOMPARE(exportFileName(QStringLiteral("x").repeated(200), QStringLiteral("markdown")).size(), 83);
    }
};

QTEST_MAIN(TestMarkdown)
#include "test_markdown.moc"
