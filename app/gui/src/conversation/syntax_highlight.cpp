#include "conversation/syntax_highlight.hpp"

#include <QHash>
#include <QSet>
#include <QStringList>

namespace mnemo::gui {
namespace {

// What the tokenizer needs to know of a language.
struct Language {
    QSet<QString> keywords;
    QSet<QString> types;
    QStringList lineComments;      // "//", "#"
    bool blockComments = false;    // /* … */
    bool backtickStrings = false;  // JS template strings, Go raw strings
    bool tripleQuotes = false;     // Python """…""" and '''…'''
    bool singleQuoteStrings = true;  // false: ' is a char literal or a lifetime (Rust)
    bool escapesInSingleQuotes = true;  // shell: '…' has no escapes
    bool preprocessor = false;     // C/C++: #include, #define at the start of a line
    bool jsonKeys = false;         // a string before ':' is a key
    bool hashAfterSpaceOnly = false;  // shell: '#' glued to a word (${#x}, a#b) starts no comment
};

QSet<QString> words(const char* list) {
    QSet<QString> out;
    for (const QString& w : QString::fromLatin1(list).split(QLatin1Char(' '), Qt::SkipEmptyParts)) out.insert(w);
    return out;
}

const Language* languageFor(const QString& name) {
    static const QHash<QString, Language> languages = [] {
        QHash<QString, Language> l;
        Language cpp;
        cpp.keywords = words(
            "alignas alignof auto break case catch class const constexpr consteval constinit const_cast continue "
            "co_await co_return co_yield decltype default delete do dynamic_cast else enum explicit export extern "
            "false final for friend goto if inline mutable namespace new noexcept nullptr operator override private "
            "protected public reinterpret_cast requires return sizeof static static_assert static_cast struct switch "
            "template this throw true try typedef typeid typename union using virtual volatile while NULL");
        cpp.types = words(
            "bool char char8_t char16_t char32_t double float int long short signed unsigned void wchar_t size_t "
            "ptrdiff_t int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t");
        cpp.lineComments = {QStringLiteral("//")};
        cpp.blockComments = true;
        cpp.preprocessor = true;
        l.insert(QStringLiteral("cpp"), cpp);
        l.insert(QStringLiteral("c"), cpp);

        Language py;
        py.keywords = words(
            "and as assert async await break class continue def del elif else except False finally for from global "
            "if import in is lambda None nonlocal not or pass raise return True try while with yield match case self");
        py.types = words("int float str bytes bool list dict set tuple object type range len print");
        py.lineComments = {QStringLiteral("#")};
        py.tripleQuotes = true;
        l.insert(QStringLiteral("python"), py);

        Language js;
        js.keywords = words(
            "async await break case catch class const continue debugger default delete do else export extends false "
            "finally for from function if import in instanceof let new null of return static super switch this throw "
            "true try typeof undefined var void while with yield as implements interface enum type readonly "
            "private protected public declare namespace keyof");
        js.types = words("number string boolean any unknown never object symbol bigint Array Promise Map Set Object String Number");
        js.lineComments = {QStringLiteral("//")};
        js.blockComments = true;
        js.backtickStrings = true;
        l.insert(QStringLiteral("javascript"), js);
        l.insert(QStringLiteral("typescript"), js);

        Language json;
        json.keywords = words("true false null");
        json.jsonKeys = true;
        l.insert(QStringLiteral("json"), json);

        Language sh;
        sh.keywords = words(
            "if then else elif fi for while until do done case esac in function return local export readonly "
            "set unset shift exit break continue source alias echo cd sudo");
        sh.lineComments = {QStringLiteral("#")};
        sh.escapesInSingleQuotes = false;
        sh.hashAfterSpaceOnly = true;
        l.insert(QStringLiteral("shell"), sh);

        Language rust;
        rust.keywords = words(
            "as async await break const continue crate dyn else enum extern false fn for if impl in let loop match mod "
            "move mut pub ref return self Self static struct super trait true type unsafe use where while");
        rust.types = words(
            "i8 i16 i32 i64 i128 isize u8 u16 u32 u64 u128 usize f32 f64 bool char str String Vec Option Result Box "
            "Some None Ok Err");
        rust.lineComments = {QStringLiteral("//")};
        rust.blockComments = true;
        rust.singleQuoteStrings = false;
        l.insert(QStringLiteral("rust"), rust);

        Language go;
        go.keywords = words(
            "break case chan const continue default defer else fallthrough for func go goto if import interface map "
            "package range return select struct switch type var true false nil iota");
        go.types = words(
            "bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune string uint uint8 "
            "uint16 uint32 uint64 uintptr any make new len cap append");
        go.lineComments = {QStringLiteral("//")};
        go.blockComments = true;
        go.backtickStrings = true;
        l.insert(QStringLiteral("go"), go);
        return l;
    }();
    const auto it = languages.constFind(name);
    return it == languages.constEnd() ? nullptr : &*it;
}

bool isIdentifierStart(QChar c) { return c.isLetter() || c == QLatin1Char('_'); }
bool isIdentifierChar(QChar c) { return c.isLetterOrNumber() || c == QLatin1Char('_'); }

// Appends code[from, to) escaped, in `colour` when one is given.
void appendToken(QString& out, const QString& code, qsizetype from, qsizetype to, const QString& colour) {
    const QString piece = code.mid(from, to - from).toHtmlEscaped();
    if (colour.isEmpty()) {
        out += piece;
        return;
    }
    out += QStringLiteral("<span style=\"color:%1\">").arg(colour) + piece + QStringLiteral("</span>");
}

// The end of a string opened at `i` by `quote` (one past the closing quote, or the end of the
// line for an unclosed one-line string).
qsizetype stringEnd(const QString& code, qsizetype i, const QString& quote, bool escapes, bool multiline) {
    qsizetype j = i + quote.size();
    while (j < code.size()) {
        if (escapes && code.at(j) == QLatin1Char('\\')) {
            j += 2;
            continue;
        }
        if (code.mid(j, quote.size()) == quote) return j + quote.size();
        if (!multiline && code.at(j) == QLatin1Char('\n')) return j;
        ++j;
    }
    return code.size();
}

}  // namespace

QString canonicalLanguage(const QString& fenceInfo) {
    const QString l = fenceInfo.trimmed().section(QLatin1Char(' '), 0, 0).toLower();
    static const QHash<QString, QString> aliases = {
        {QStringLiteral("c++"), QStringLiteral("cpp")},       {QStringLiteral("cc"), QStringLiteral("cpp")},
        {QStringLiteral("cxx"), QStringLiteral("cpp")},       {QStringLiteral("hpp"), QStringLiteral("cpp")},
        {QStringLiteral("h"), QStringLiteral("c")},           {QStringLiteral("py"), QStringLiteral("python")},
        {QStringLiteral("python3"), QStringLiteral("python")}, {QStringLiteral("js"), QStringLiteral("javascript")},
        {QStringLiteral("jsx"), QStringLiteral("javascript")}, {QStringLiteral("mjs"), QStringLiteral("javascript")},
        {QStringLiteral("ts"), QStringLiteral("typescript")}, {QStringLiteral("tsx"), QStringLiteral("typescript")},
        {QStringLiteral("sh"), QStringLiteral("shell")},      {QStringLiteral("bash"), QStringLiteral("shell")},
        {QStringLiteral("zsh"), QStringLiteral("shell")},     {QStringLiteral("console"), QStringLiteral("shell")},
        {QStringLiteral("shell-session"), QStringLiteral("shell")}, {QStringLiteral("rs"), QStringLiteral("rust")},
        {QStringLiteral("golang"), QStringLiteral("go")},     {QStringLiteral("jsonc"), QStringLiteral("json")},
    };
    return aliases.value(l, l);
}

QString highlightCodeHtml(const QString& code, const QString& language, const SyntaxColours& colours) {
    const Language* lang = languageFor(canonicalLanguage(language));
    if (!lang) return code.toHtmlEscaped();
    QString out;
    out.reserve(code.size() * 2);
    bool lineStart = true;  // only whitespace since the last '\n'
    qsizetype i = 0;
    while (i < code.size()) {
        const QChar c = code.at(i);
        if (c == QLatin1Char('\n') || c.isSpace()) {
            out += c;
            if (c == QLatin1Char('\n')) lineStart = true;
            ++i;
            continue;
        }
        const bool wasLineStart = lineStart;
        lineStart = false;
        // Comments.
        bool comment = false;
        for (const QString& lc : lang->lineComments)
            if (code.mid(i, lc.size()) == lc && !(lang->hashAfterSpaceOnly && i > 0 && !code.at(i - 1).isSpace())) {
                const qsizetype end = code.indexOf(QLatin1Char('\n'), i);
                const qsizetype to = end < 0 ? code.size() : end;
                appendToken(out, code, i, to, colours.comment);
                i = to;
                comment = true;
                break;
            }
        if (comment) continue;
        if (lang->blockComments && code.mid(i, 2) == QLatin1String("/*")) {
            const qsizetype end = code.indexOf(QLatin1String("*/"), i + 2);
            const qsizetype to = end < 0 ? code.size() : end + 2;
            appendToken(out, code, i, to, colours.comment);
            i = to;
            continue;
        }
        // C/C++ preprocessor lines: the directive as a keyword, the rest as code.
        if (lang->preprocessor && wasLineStart && c == QLatin1Char('#')) {
            qsizetype j = i + 1;
            while (j < code.size() && (code.at(j) == QLatin1Char(' ') || isIdentifierChar(code.at(j)))) {
                if (code.at(j) == QLatin1Char(' ') && j > i + 1 && isIdentifierChar(code.at(j - 1))) break;
                ++j;
            }
            appendToken(out, code, i, j, colours.keyword);
            // #include <header>: the header as a string, as "header" is.
            const bool include = code.mid(i, j - i).remove(QLatin1Char(' ')) == QLatin1String("#include");
            i = j;
            while (include && i < code.size() && code.at(i) == QLatin1Char(' ')) out += code.at(i++);
            if (include && i < code.size() && code.at(i) == QLatin1Char('<')) {
                const qsizetype close = code.indexOf(QLatin1Char('>'), i);
                const qsizetype end = code.indexOf(QLatin1Char('\n'), i);
                const qsizetype to = close < 0 || (end >= 0 && end < close) ? (end < 0 ? code.size() : end) : close + 1;
                appendToken(out, code, i, to, colours.string);
                i = to;
            }
            continue;
        }
        // Strings.
        if (lang->tripleQuotes && (code.mid(i, 3) == QLatin1String("\"\"\"") || code.mid(i, 3) == QLatin1String("'''"))) {
            const qsizetype to = stringEnd(code, i, code.mid(i, 3), true, true);
            appendToken(out, code, i, to, colours.string);
            i = to;
            continue;
        }
        const bool singleQuote = c == QLatin1Char('\'');
        if (c == QLatin1Char('"') || (singleQuote && lang->singleQuoteStrings) || (c == QLatin1Char('`') && lang->backtickStrings)) {
            const bool backtick = c == QLatin1Char('`');
            const bool escapes = !backtick && !(singleQuote && !lang->escapesInSingleQuotes);
            const qsizetype to = stringEnd(code, i, QString(c), escapes, backtick || !lang->escapesInSingleQuotes);
            qsizetype k = to;
            while (k < code.size() && (code.at(k) == QLatin1Char(' ') || code.at(k) == QLatin1Char('\t'))) ++k;
            const bool key = lang->jsonKeys && k < code.size() && code.at(k) == QLatin1Char(':');
            appendToken(out, code, i, to, key ? colours.type : colours.string);
            i = to;
            continue;
        }
        // Rust: 'x' and '\n' are chars; 'a alone is a lifetime (left as code).
        if (singleQuote && !lang->singleQuoteStrings) {
            const qsizetype close = code.indexOf(QLatin1Char('\''), i + 1);
            if (close > i && close - i <= 3 + (code.at(i + 1) == QLatin1Char('\\') ? 1 : 0) && close - i >= 2) {
                appendToken(out, code, i, close + 1, colours.string);
                i = close + 1;
                continue;
            }
        }
        // Numbers (not the digits inside a word such as x86_64).
        if (c.isDigit() || (c == QLatin1Char('.') && i + 1 < code.size() && code.at(i + 1).isDigit())) {
            qsizetype j = i + 1;
            while (j < code.size()) {
                const QChar d = code.at(j);
                const bool exponentSign = (d == QLatin1Char('-') || d == QLatin1Char('+'))
                                          && (code.at(j - 1) == QLatin1Char('e') || code.at(j - 1) == QLatin1Char('E'))
                                          && !code.mid(i, 2).startsWith(QLatin1String("0x"), Qt::CaseInsensitive);
                if (!(isIdentifierChar(d) || d == QLatin1Char('.') || exponentSign)) break;
                ++j;
            }
            appendToken(out, code, i, j, colours.number);
            i = j;
            continue;
        }
        // Words: keywords, built-in types, or plain.
        if (isIdentifierStart(c)) {
            qsizetype j = i + 1;
            while (j < code.size() && isIdentifierChar(code.at(j))) ++j;
            const QString word = code.mid(i, j - i);
            const QString colour = lang->keywords.contains(word) ? colours.keyword
                                   : lang->types.contains(word) ? colours.type
                                                                : QString();
            appendToken(out, code, i, j, colour);
            i = j;
            continue;
        }
        appendToken(out, code, i, i + 1, QString());
        ++i;
    }
    return out;
}

}  // namespace mnemo::gui
