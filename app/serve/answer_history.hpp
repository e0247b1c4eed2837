// The answers this server gave, as they continue a conversation. A SentencePiece tokenizer drops
// the space of an answer's first piece when it decodes ("Kaimekim" for "▁Kaimekim"), so a client
// that sends the answer back in the next turn's messages would render other tokens than the ones
// generated, and the slot's cache could not be reused. The server remembers, for its recent
// answers, the text it returned and the text as generated (GenerateResult::history_text) and
// renders the latter: the next turn then prefills only its new tokens. Bounded (oldest dropped).
#pragma once

#include <deque>
#include <mutex>
#include <string>
#include <unordered_map>

namespace mnemo::serve {

class AnswerHistory {
public:
    explicit AnswerHistory(size_t capacity = 1024) : capacity_(capacity) {}
    void remember(const std::string& returned, const std::string& as_generated) {
        if (returned == as_generated || capacity_ == 0) return;
        std::lock_guard<std::mutex> lock(mu_);
        if (map_.emplace(returned, as_generated).second) order_.push_back(returned);
        while (order_.size() > capacity_) {
            map_.erase(order_.front());
            order_.pop_front();
        }
    }
    // The text to render for an assistant message with this content.
    std::string as_generated(const std::string& content) const {
        std::lock_guard<std::mutex> lock(mu_);
        const auto it = map_.find(content);
        return it == map_.end() ? content : it->second;
    }

private:
    size_t capacity_;
    mutable std::mutex mu_;
    std::unordered_map<std::string, std::string> map_;
    std::deque<std::string> order_;
};

}  // namespace mnemo::serve
