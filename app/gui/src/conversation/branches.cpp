#include "conversation/branches.hpp"

#include <algorithm>

namespace mnemo::gui {

namespace {

// Every version of the message at `row`, the shown one at its place, each a tail without the
// fork's own bookkeeping (which only the shown head carries).
QList<QList<Message>> versionsAt(const QList<Message>& messages, int row) {
    const Message& head = messages.at(row);
    QList<QList<Message>> all = head.alternatives;
    QList<Message> shown = messages.mid(row);
    for (Message& m : shown) m.streaming = false;  // a kept tail is never still arriving
    shown.front().alternatives.clear();
    shown.front().version = 0;
    all.insert(std::clamp<qsizetype>(head.version, 0, all.size()), shown);
    return all;
}

QList<Message> withVersion(const QList<Message>& messages, int row, QList<QList<Message>> all, int version) {
    QList<Message> out = messages.mid(0, row);
    QList<Message> tail = all.takeAt(version);
    tail.front().alternatives = std::move(all);
    tail.front().version = version;
    out += tail;
    return out;
}

bool worthKeeping(const QList<Message>& tail) {
    return !(tail.size() == 1 && tail.front().role == QLatin1String("assistant") && tail.front().text.trimmed().isEmpty());
}

}  // namespace

QList<Message> forkAt(const QList<Message>& messages, int row, QList<Message> newTail) {
    if (row < 0 || row > messages.size() || newTail.isEmpty()) return messages;
    if (row == messages.size()) return messages + newTail;  // nothing there to keep
    QList<QList<Message>> all = versionsAt(messages, row);
    const qsizetype shown = std::clamp<qsizetype>(messages.at(row).version, 0, all.size() - 1);
    if (!worthKeeping(all.at(shown))) all.removeAt(shown);
    newTail.front().alternatives.clear();
    all.push_back(std::move(newTail));
    const int newest = static_cast<int>(all.size()) - 1;
    return withVersion(messages, row, std::move(all), newest);
}

QList<Message> showVersion(const QList<Message>& messages, int row, int version) {
    if (row < 0 || row >= messages.size()) return messages;
    if (version < 0 || version >= versionCount(messages.at(row)) || version == messages.at(row).version) return messages;
    return withVersion(messages, row, versionsAt(messages, row), version);
}

}  // namespace mnemo::gui
