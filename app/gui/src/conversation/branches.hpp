// The versions of a conversation (issue 29): a regenerated answer and an edited prompt do not
// replace what was there; the earlier version, with everything that followed it, is kept as an
// alternative "tail" on the message where the conversation forked (Message::alternatives), and
// ‹ k/n › steps between them, as LM Studio and Jan do. One mechanism for both: a fork at an
// answer holds other answers, a fork at a prompt other prompts with their continuations; a kept
// tail may fork again further down, so the versions form a tree. These functions work on a
// conversation's message list and return the new one; the chat (ChatController) shows it, and
// the model re-reads the conversation on the next answer (its KV cache rebuilds from the fork, as
// after an edit).
#pragma once

#include <QList>

#include "conversation/conversation.hpp"

namespace mnemo::gui {

// How many versions message `m` has (itself included): 1 when it never forked.
inline int versionCount(const Message& m) { return static_cast<int>(m.alternatives.size()) + 1; }

// `messages` forked at `row`: the first `row` messages, then `newTail`, which becomes the newest
// version; the tail it replaces (messages[row..]) is kept as an alternative, unless it is an
// answer with no text (it failed before a token: nothing to go back to). `newTail` must not be empty.
QList<Message> forkAt(const QList<Message>& messages, int row, QList<Message> newTail);

// `messages` with version `version` (0-based) of the message at `row` shown instead of the one
// shown now, which is kept as an alternative. Out of range: `messages` unchanged.
QList<Message> showVersion(const QList<Message>& messages, int row, int version);

}  // namespace mnemo::gui
