// Server-sent events (the WHATWG "text/event-stream" format) as `mnemo serve` and every
// OpenAI-compatible server stream them: fed the bytes as the network delivers them, in pieces
// cut anywhere (inside a line, between "\r" and "\n", inside a UTF-8 sequence), it hands back
// each complete event once its blank line has arrived. Comments (": prompt 64/973",
// ": keep-alive") are handed back separately: the server's prefill progress is in them.
#pragma once

#include <QByteArray>
#include <QList>

namespace mnemo::gui {

struct SseEvent {
    QByteArray data;     // the event's data lines joined by "\n" (the JSON, or "[DONE]")
    QByteArray name;     // "event:" field; empty when the server sends none (mnemo serve never does)
    bool comment = false;  // a ":" line: `data` holds its text without the colon and one space
};

class SseParser {
public:
    // Takes the next piece of the stream; returns the events and comments it completed, in order.
    QList<SseEvent> feed(const QByteArray& bytes);
    // Bytes held back: an unfinished line or an event without its blank line yet. Non-empty at
    // the end of a stream means it was cut off mid-event.
    bool pending() const { return !buffer_.isEmpty() || hasFields_; }
    // The largest line accepted; a longer one is a broken or hostile stream (feed() throws).
    static constexpr qsizetype kMaxLineBytes = 16 * 1024 * 1024;

private:
    void takeLine(const QByteArray& line, QList<SseEvent>& out);

    QByteArray buffer_;       // bytes after the last line end
    bool lastWasCr_ = false;  // a "\r" ended the last line: a "\n" that follows belongs to it
    SseEvent current_;
    bool hasFields_ = false;  // current_ has at least one data or event line
};

}  // namespace mnemo::gui
