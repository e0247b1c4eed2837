#include "conversation/conversation_export.hpp"

#include "conversation/atomic_write.hpp"
#include "conversation/conversation_json.hpp"
#include "plural.hpp"

namespace mnemo::gui {

// The visible branch only (Conversation::messages): the versions kept as alternatives are in the
// JSON export and the conversation's file.
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
        if (m.droppedMessages > 0)
            md += QStringLiteral("> Note: the oldest %1 were left out to fit the context\n\n").arg(countText(m.droppedMessages, QStringLiteral("message")));
        if (m.tokens > 0)
            md += QStringLiteral("_%1, %2 tokens/s, first token after %3 ms%4%5_\n\n")
                      .arg(countText(m.tokens, QStringLiteral("token")))
                      .arg(m.tokensPerSecond, 0, 'f', 1)
                      .arg(m.firstTokenSeconds * 1000.0, 0, 'f', 0)
                      .arg(m.device.isEmpty() ? QString() : QStringLiteral(", on ") + m.device)
                      .arg(m.seed >= 0 ? QStringLiteral(", seed %1").arg(m.seed) : QString());
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
