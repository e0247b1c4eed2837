// StreamDecoder: turns generated ids into text as they arrive. Byte-level tokens may end in the
// middle of a UTF-8 character; those bytes wait in pending_ until the character is complete, so
// every string handed out is valid UTF-8 and the concatenation equals the whole-sequence decode.
#include "mnemo/tokenizer/tokenizer.hpp"
#include "tokenizer/unicode.hpp"

namespace mnemo {

StreamDecoder::StreamDecoder(const Tokenizer& tok, bool skip_special)
    : tok_(tok), skip_special_(skip_special) {}

std::string StreamDecoder::push(int32_t id) {
    if (skip_special_ && tok_.is_special(id)) return {};
    std::string bytes = tok_.token_bytes(id);
    if (first_ && !bytes.empty()) {
        // Whole-sequence decode drops the dummy-prefix space of the first piece (SentencePiece);
        // ask the tokenizer whether it does so for this piece instead of guessing by type.
        if (bytes[0] == ' ' && !tok_.is_special(id)) {
            const std::string whole = tok_.decode({id}, skip_special_);
            if (whole.empty() || whole[0] != ' ') bytes.erase(0, 1);
        }
        first_ = false;
    }
    pending_ += bytes;
    const size_t ready = unicode::complete_utf8_prefix(pending_);
    std::string out = unicode::sanitize_utf8(std::string_view(pending_).substr(0, ready));
    pending_.erase(0, ready);
    return out;
}

std::string StreamDecoder::finish() {
    std::string out = unicode::sanitize_utf8(pending_);
    pending_.clear();
    first_ = true;
    return out;
}

}  // namespace mnemo
