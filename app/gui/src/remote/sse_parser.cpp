#include "remote/sse_parser.hpp"

#include <stdexcept>
#include <string>

namespace mnemo::gui {

QList<SseEvent> SseParser::feed(const QByteArray& bytes) {
    QList<SseEvent> out;
    qsizetype start = 0;
    for (qsizetype i = 0; i < bytes.size(); ++i) {
        const char c = bytes[i];
        if (c != '\r' && c != '\n') {
            lastWasCr_ = false;
            continue;
        }
        // "\r\n" is one line end, even when the "\r" came at the end of the previous piece.
        if (c == '\n' && lastWasCr_ && i == start && buffer_.isEmpty()) {
            lastWasCr_ = false;
            start = i + 1;
            continue;
        }
        buffer_.append(bytes.constData() + start, i - start);
        takeLine(buffer_, out);
        buffer_.clear();
        lastWasCr_ = c == '\r';
        start = i + 1;
    }
    buffer_.append(bytes.constData() + start, bytes.size() - start);
    if (buffer_.size() > kMaxLineBytes)
        throw std::runtime_error("a line of the event stream is longer than " + std::to_string(kMaxLineBytes) + " bytes");
    return out;
}

void SseParser::takeLine(const QByteArray& line, QList<SseEvent>& out) {
    if (line.isEmpty()) {  // the blank line: the event is complete
        if (hasFields_) out.push_back(current_);
        current_ = {};
        hasFields_ = false;
        return;
    }
    const qsizetype colon = line.indexOf(':');
    QByteArray field = colon < 0 ? line : line.left(colon);
    QByteArray value = colon < 0 ? QByteArray() : line.mid(colon + 1);
    if (value.startsWith(' ')) value.remove(0, 1);  // one space after the colon is not part of the value
    if (colon == 0) {
        out.push_back({value, {}, true});
        return;
    }
    if (field == "data") {
        if (hasFields_ && !current_.data.isNull()) current_.data.append('\n');
        current_.data.append(value);
        if (current_.data.isNull()) current_.data = QByteArray("");
        hasFields_ = true;
    } else if (field == "event") {
        current_.name = value;
        hasFields_ = true;
    }
    // "id" and "retry" fields mean nothing for one request's answer; unknown fields are ignored,
    // as the format asks.
}

}  // namespace mnemo::gui
