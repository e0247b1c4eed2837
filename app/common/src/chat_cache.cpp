#include "app/chat_cache.hpp"

namespace mnemo::app {

RenderedChat render_chat(const ChatTemplate& tmpl, const Tokenizer& tokenizer, const std::vector<ChatMessage>& messages) {
    RenderedChat r;
    r.tokens = tmpl.render_tokens(tokenizer, messages, r.turn_starts);
    return r;
}

const float* ChatCache::sync(const RenderedChat& target) {
    const std::vector<int32_t>& t = target.tokens;
    size_t common = 0;
    while (common < fed_.size() && common < t.size() && fed_[common] == t[common]) ++common;
    if (common < fed_.size() || common == t.size()) {
        // The cache holds tokens the new rendering does not start with (an edit, a regeneration,
        // an answer that renders differently from how it was generated), or nothing is new.
        if (!fed_.empty()) ++restarts_;
        session_.reset(seq_);
        fed_.clear();
        common = 0;
    }
    const std::vector<int32_t> tail(t.begin() + static_cast<std::ptrdiff_t>(common), t.end());
    std::vector<int32_t> segments;  // the turns that begin inside the tail, as offsets into it
    for (int32_t s : target.turn_starts)
        if (static_cast<size_t>(s) > common) segments.push_back(s - static_cast<int32_t>(common));
    const float* logits = session_.append(seq_, tail, /*all_logits=*/false, segments).data();
    fed_.insert(fed_.end(), tail.begin(), tail.end());
    last_fed_ = tail.size();
    return logits;
}

void ChatCache::reset() {
    session_.reset(seq_);
    fed_.clear();
}

void ChatCache::check_consistent() {
    if (session_.seq_length(seq_) != static_cast<int32_t>(fed_.size())) reset();
}

}  // namespace mnemo::app
