#include "conversation/conversation_export.hpp"

#include "conversation/atomic_write.hpp"
#include "conversation/conversation_json.hpp"

namespace mnemo::gui {

QString conversationToMarkdown(const Conversation& c) {
    QString md = QStringLiteral("# %1\n\n").arg(c.title.isEmpty() ? QStringLiteral("Conversation") : c.title);
    if (!c.model.isEmpty()) md += QStringLiteral("Model: `%1`\n\n").arg(c.model);
    if (!c.systemPrompt.isEmpty()) md += QStringLiteral("**System:** %1\n\n").arg(c.systemPrompt);
    for (const Message& m : c.messages) {
        const bool answer = m.role == QLatin1String("assistant");
        md += answer ? QStringLiteral("## Mnemo\n\n") : QStringLiteral("## You\n\n");
        md += m.text.trimmed() + QStringLiteral("\n\n");
        if (!answer) continue;
        if (!m.error.isEmpty()) md += QStringLiteral("> Failed: %1\n\n").arg(m.error);
        if (!m.notice.isEmpty()) md += QStringLiteral("> Note: %1\n\n").arg(m.notice);
        if (!m.references.isEmpty()) {
            md += QStringLiteral("References read:\n\n");
            for (const RetrievedReference& r : m.references)
                md += QStringLiteral("- chunk %1, memory #%2: %3\n").arg(r.chunk).arg(r.id).arg(QString::fromStdString(r.text).simplified());
            md += QLatin1Char('\n');
        }
        if (m.tokens > 0)
            md += QStringLiteral("_%1 tokens, %2 tokens/s, first token after %3 ms%4_\n\n")
                      .arg(m.tokens)
                      .arg(m.tokensPerSecond, 0, 'f', 1)
                      .arg(m.firstTokenSeconds * 1000.0, 0, 'f', 0)
                      .arg(m.device.isEmpty() ? QString() : QStringLiteral(", on ") + m.device);
    }
    return md;
}

QString exportConversation(const Conversation& c, const QString& path, const QString& format) {
    QByteArray bytes;
    if (format == QLatin1String("markdown")) bytes = conversationToMarkdown(c).toUtf8();
    else if (format == QLatin1String("json")) bytes = conversationToBytes(c);
    else return QStringLiteral("unknown export format '%1' (expected markdown or json)").arg(format);
    return writeFileAtomically(path, bytes);
}

}  // namespace mnemo::gui
