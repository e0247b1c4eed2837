// A conversation kept in a session's KV cache, shared by `mnemo chat`, `mnemo eval` (follow-up
// questions) and mnemo-chat. Each turn the caller renders the whole conversation with the chat
// template; sync() feeds only the tokens the cache does not hold yet, as a prompt whose turns are
// retrieval segments (Session::append), so a conversation fed again from scratch (an edit, a
// regeneration) reads the memories it read turn by turn. A session can only forget a sequence
// as a whole: when the rendering no longer starts with what the cache holds, it starts over.
#pragma once

#include <cstdint>
#include <vector>

#include "mnemo/session/session.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"

namespace mnemo::app {

// A conversation rendered for the model: its tokens (the assistant header at the end) and where
// each user turn after the first begins (ChatTemplate::render_tokens).
struct RenderedChat {
    std::vector<int32_t> tokens;
    std::vector<int32_t> turn_starts;
};
RenderedChat render_chat(const ChatTemplate& tmpl, const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages);

class ChatCache {
public:
    explicit ChatCache(Session& session, int32_t seq = 0) : session_(session), seq_(seq) {}

    // Bring the cache up to `target`; returns the logits of its last token. Throws Cancelled.
    const float* sync(const RenderedChat& target);
    // Forget everything (a new conversation, a failed load).
    void reset();
    // After an interrupted append or decode the cache length may not match what fed() says.
    void check_consistent();

    std::vector<int32_t>& fed() { return fed_; }
    int32_t seq() const { return seq_; }
    // How often sync() had to start over although the cache held part of the conversation: a
    // chat whose past turns render as they were generated never does (checked by the tests).
    int64_t restarts() const { return restarts_; }
    // Tokens the last sync() fed: the new turn alone, or the whole conversation after a restart.
    size_t last_fed() const { return last_fed_; }

private:
    Session& session_;
    int32_t seq_;
    std::vector<int32_t> fed_;
    int64_t restarts_ = 0;
    size_t last_fed_ = 0;
};

}  // namespace mnemo::app
