// The window's look in one place (`theme` in QML): a light and a dark palette, a type scale and
// spacing, so every QML file uses the same few values instead of its own colours and sizes. It
// follows the system (a dark system palette gives the dark theme) unless `mode` says "light" or
// "dark". Main.qml sets the Qt Quick Controls palette from it, so Fusion's controls match.
#pragma once

#include <QColor>
#include <QObject>
#include <QString>

#include "conversation/syntax_highlight.hpp"

namespace mnemo::gui {

class Theme : public QObject {
    Q_OBJECT
    Q_PROPERTY(QString mode READ mode WRITE setMode NOTIFY changed)  // "system", "light" or "dark"
    Q_PROPERTY(bool dark READ dark NOTIFY changed)
    // Surfaces.
    Q_PROPERTY(QColor window READ window NOTIFY changed)    // the chat's background
    Q_PROPERTY(QColor sidebar READ sidebar NOTIFY changed)  // the conversation list, the top bar
    Q_PROPERTY(QColor surface READ surface NOTIFY changed)  // cards: references, compare columns
    Q_PROPERTY(QColor field READ field NOTIFY changed)      // text fields
    Q_PROPERTY(QColor userBubble READ userBubble NOTIFY changed)
    Q_PROPERTY(QColor codeBackground READ codeBackground NOTIFY changed)
    Q_PROPERTY(QColor codeHeader READ codeHeader NOTIFY changed)
    Q_PROPERTY(QColor border READ border NOTIFY changed)
    Q_PROPERTY(QColor hover READ hover NOTIFY changed)
    // Text.
    Q_PROPERTY(QColor text READ text NOTIFY changed)
    Q_PROPERTY(QColor mutedText READ mutedText NOTIFY changed)
    Q_PROPERTY(QColor accent READ accent NOTIFY changed)
    Q_PROPERTY(QColor accentText READ accentText NOTIFY changed)
    Q_PROPERTY(QColor selection READ selection NOTIFY changed)
    Q_PROPERTY(QColor error READ error NOTIFY changed)
    Q_PROPERTY(QColor warning READ warning NOTIFY changed)
    Q_PROPERTY(QColor success READ success NOTIFY changed)
    // Type scale (point sizes) and spacing (pixels).
    Q_PROPERTY(qreal fontSmall READ fontSmall CONSTANT)
    Q_PROPERTY(qreal fontBody READ fontBody CONSTANT)
    Q_PROPERTY(qreal fontTitle READ fontTitle CONSTANT)
    Q_PROPERTY(qreal fontHeading READ fontHeading CONSTANT)
    Q_PROPERTY(QString monoFamily READ monoFamily CONSTANT)
    Q_PROPERTY(int spacingSmall READ spacingSmall CONSTANT)
    Q_PROPERTY(int spacing READ spacing CONSTANT)
    Q_PROPERTY(int spacingLarge READ spacingLarge CONSTANT)
    Q_PROPERTY(int radius READ radius CONSTANT)
public:
    explicit Theme(QObject* parent = nullptr);

    QString mode() const { return mode_; }
    void setMode(const QString& mode);  // anything but "light" or "dark" means "system"
    bool dark() const { return dark_; }

    QColor window() const { return dark_ ? QColor(0x1f, 0x20, 0x23) : QColor(0xff, 0xff, 0xff); }
    QColor sidebar() const { return dark_ ? QColor(0x18, 0x19, 0x1b) : QColor(0xf4, 0xf5, 0xf7); }
    QColor surface() const { return dark_ ? QColor(0x2a, 0x2c, 0x31) : QColor(0xf7, 0xf8, 0xfa); }
    QColor field() const { return dark_ ? QColor(0x26, 0x28, 0x2c) : QColor(0xff, 0xff, 0xff); }
    QColor userBubble() const { return dark_ ? QColor(0x2c, 0x35, 0x4a) : QColor(0xea, 0xf0, 0xfd); }
    QColor codeBackground() const { return dark_ ? QColor(0x15, 0x16, 0x18) : QColor(0xf6, 0xf8, 0xfa); }
    QColor codeHeader() const { return dark_ ? QColor(0x25, 0x27, 0x2b) : QColor(0xea, 0xee, 0xf2); }
    QColor border() const { return dark_ ? QColor(0x3a, 0x3d, 0x43) : QColor(0xd9, 0xdd, 0xe3); }
    QColor hover() const { return dark_ ? QColor(0x30, 0x33, 0x39) : QColor(0xe8, 0xeb, 0xef); }
    QColor text() const { return dark_ ? QColor(0xe6, 0xe7, 0xe9) : QColor(0x1f, 0x23, 0x28); }
    QColor mutedText() const { return dark_ ? QColor(0x9a, 0xa0, 0xa8) : QColor(0x5f, 0x67, 0x73); }
    QColor accent() const { return dark_ ? QColor(0x4f, 0x8c, 0xff) : QColor(0x25, 0x63, 0xeb); }
    QColor accentText() const { return QColor(0xff, 0xff, 0xff); }
    QColor selection() const { return dark_ ? QColor(0x2f, 0x5a, 0xa8) : QColor(0xb6, 0xcf, 0xfa); }
    QColor error() const { return dark_ ? QColor(0xff, 0x6b, 0x6b) : QColor(0xc6, 0x28, 0x28); }
    QColor warning() const { return dark_ ? QColor(0xff, 0xb7, 0x4d) : QColor(0xa8, 0x5d, 0x00); }
    QColor success() const { return dark_ ? QColor(0x66, 0xbb, 0x6a) : QColor(0x2e, 0x7d, 0x32); }

    qreal fontSmall() const { return 8.5; }
    qreal fontBody() const { return 10; }
    qreal fontTitle() const { return 11; }
    qreal fontHeading() const { return 13; }
    QString monoFamily() const;
    int spacingSmall() const { return 4; }
    int spacing() const { return 8; }
    int spacingLarge() const { return 16; }
    int radius() const { return 8; }

    // The syntax colours of the light or the dark theme.
    static SyntaxColours syntaxColours(bool dark);
    // A code block as HTML for a rich-text item: escaped, coloured (syntax_highlight.hpp), in a
    // <pre>. `dark` is a parameter (QML passes theme.dark) so that a binding re-runs when it changes.
    Q_INVOKABLE QString codeHtml(const QString& code, const QString& language, bool dark) const;
    // A language's name as a code panel's header shows it ("cpp" → "C++"; empty: "text").
    Q_INVOKABLE QString languageLabel(const QString& language) const;

Q_SIGNALS:
    void changed();

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void update();

    QString mode_ = QStringLiteral("system");
    bool dark_ = false;
};

}  // namespace mnemo::gui
