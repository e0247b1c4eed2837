#include "engine/context_fit.hpp"

#include <algorithm>
#include <string>

#include "engine/chat_tokens.hpp"
#include "mnemo/error.hpp"

namespace mnemo::gui {

namespace {
// The start of fitToContext's refusal, which isContextOverflow recognises.
constexpr const char* kOverflow = "the conversation has ";
constexpr const char* kOverflowHolds = " tokens but the context holds ";
}  // namespace

bool isContextOverflow(const QString& reason) {
    return reason.startsWith(QLatin1String(kOverflow)) && reason.contains(QLatin1String(kOverflowHolds));
}

int answerReserve(int nCtx, int maxTokens) {
    const int quarter = std::max(1, nCtx / 4);
    return maxTokens > 0 ? std::min(maxTokens, quarter) : quarter;
}

FittedChat fitToContext(const Tokenizer& tokenizer, const ChatTemplate& chatTemplate, QList<ChatTurn> turns, int nCtx,
                        const SamplingSettings& settings) {
    FittedChat f;
    f.chat = renderChat(tokenizer, chatTemplate, turns);
    const auto length = [&] { return static_cast<int64_t>(f.chat.tokens.size()); };
    if (!settings.dropOldestTurns) {
        if (length() >= nCtx)
            throw Error(kOverflow + std::to_string(length()) + kOverflowHolds + std::to_string(nCtx) +
                        ": let the app drop the oldest messages (Settings, \"When the conversation is longer than the context\"), "
                        "start a new conversation, or edit an earlier message");
        return f;
    }
    const int64_t room = nCtx - answerReserve(nCtx, settings.maxTokens);
    const int first = !turns.isEmpty() && turns.front().role == QLatin1String("system") ? 1 : 0;
    const int64_t before = length();
    while (length() > room) {
        // Everything from `first` up to the next user message goes (a prompt with its answer), so
        // the conversation still opens with a user message; the newest prompt always stays.
        int end = first + 1;
        while (end < turns.size() && turns.at(end).role != QLatin1String("user")) ++end;
        if (end >= turns.size()) {
            throw Error("the newest message alone takes " + std::to_string(length()) + " tokens, with " +
                        std::to_string(answerReserve(nCtx, settings.maxTokens)) + " kept for the answer, but the context holds " +
                        std::to_string(nCtx) + " (the conversation had " + std::to_string(before) +
                        "): shorten it or load the model with a longer context");
        }
        f.dropped += end - first;
        turns.erase(turns.begin() + first, turns.begin() + end);
        f.chat = renderChat(tokenizer, chatTemplate, turns);
    }
    return f;
}

}  // namespace mnemo::gui
