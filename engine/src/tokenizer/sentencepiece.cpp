// SentencePiece tokenizer.model through Debian's libsentencepiece. The library does the encoding;
// this wrapper adds what the Tokenizer interface needs on top: literal control tokens in the text
// when parse_special is set (sentencepiece itself treats "<s>" as ordinary text), per-token bytes
// for streaming, and the decoder's "drop the dummy-prefix space" rule.
#include <sentencepiece_processor.h>

#include <algorithm>

#include "mnemo/error.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"
#include "tokenizer/unicode.hpp"

namespace mnemo {
namespace {

const char* const kMetaspace = "\xE2\x96\x81";

class SentencePieceTokenizer final : public Tokenizer {
public:
    explicit SentencePieceTokenizer(const std::string& path) : path_(path) {
        const auto status = sp_.Load(path);
        if (!status.ok())
            throw Error(path + ": cannot load SentencePiece model: " + status.ToString());
        const int n = sp_.GetPieceSize();
        bytes_.resize(n);
        special_.assign(n, 0);
        for (int id = 0; id < n; ++id) {
            const std::string& piece = sp_.IdToPiece(id);
            if (sp_.IsByte(id)) {
                bytes_[id] = std::string(1, static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
            } else if (sp_.IsControl(id)) {
                bytes_[id] = piece;
                special_[id] = 1;
                if (!piece.empty()) controls_.push_back(piece);
            } else if (sp_.IsUnknown(id)) {
                bytes_[id] = " \xE2\x81\x87 ";  // sentencepiece's default unk surface " ⁇ "
            } else {
                std::string text;
                for (size_t pos = 0; pos < piece.size();) {
                    if (piece.compare(pos, 3, kMetaspace) == 0) { text += ' '; pos += 3; }
                    else text += piece[pos++];
                }
                bytes_[id] = std::move(text);
            }
        }
        std::sort(controls_.begin(), controls_.end(),
                  [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
        if (sp_.bos_id() >= 0) bos_id = sp_.bos_id();
        if (sp_.eos_id() >= 0) {
            eos_id = sp_.eos_id();
            eos_ids.push_back(sp_.eos_id());
        }
        add_bos = bos_id.has_value();
        // The normalizer spec is not reachable through the public API without protobuf, so ask
        // the model: with add_dummy_prefix, "a" encodes to pieces starting with a metaspace.
        std::vector<std::string> probe;
        strip_first_space_ = sp_.Encode("a", &probe).ok() && !probe.empty() &&
                             probe[0].rfind(kMetaspace, 0) == 0;
    }

    std::vector<int32_t> encode(std::string_view text, bool parse_special) const override {
        std::vector<int32_t> out;
        size_t seg = 0;
        if (parse_special) {
            for (size_t pos = 0; pos < text.size();) {
                const std::string* hit = nullptr;
                for (const auto& c : controls_)
                    if (text.substr(pos).starts_with(c)) { hit = &c; break; }
                if (!hit) { ++pos; continue; }
                encode_plain(text.substr(seg, pos - seg), out);
                out.push_back(sp_.PieceToId(*hit));
                pos += hit->size();
                seg = pos;
            }
        }
        encode_plain(text.substr(seg), out);
        return out;
    }

    std::string token_bytes(int32_t id) const override {
        check_id(id);
        return bytes_[id];
    }

    std::string decode(const std::vector<int32_t>& ids, bool skip_special) const override {
        std::string raw;
        bool at_start = true;
        for (int32_t id : ids) {
            check_id(id);
            if (skip_special && special_[id]) continue;
            std::string_view piece = bytes_[id];
            if (at_start && strip_first_space_ && !special_[id] && piece.starts_with(' '))
                piece.remove_prefix(1);
            if (!piece.empty() || !special_[id]) at_start = false;
            raw += piece;
        }
        return unicode::sanitize_utf8(raw);
    }

    int32_t vocab_size() const override { return static_cast<int32_t>(bytes_.size()); }

    std::optional<int32_t> token_id(std::string_view piece) const override {
        const int id = sp_.PieceToId(std::string(piece));
        // PieceToId answers unk_id for unknown pieces; only report it for the unk piece itself.
        if (id < 0 || (id == sp_.unk_id() && sp_.IdToPiece(id) != piece)) return std::nullopt;
        return id;
    }

    bool is_special(int32_t id) const override {
        return id >= 0 && id < vocab_size() && special_[id];
    }

private:
    void check_id(int32_t id) const {
        if (id < 0 || id >= vocab_size())
            throw Error(path_ + ": token id " + std::to_string(id) + " out of range [0, " +
                        std::to_string(vocab_size()) + ")");
    }

    void encode_plain(std::string_view text, std::vector<int32_t>& out) const {
        if (text.empty()) return;
        std::vector<int> ids;
        const auto status = sp_.Encode(std::string(text), &ids);
        if (!status.ok()) throw Error(path_ + ": SentencePiece encode failed: " + status.ToString());
        out.insert(out.end(), ids.begin(), ids.end());
    }

    std::string path_;
    sentencepiece::SentencePieceProcessor sp_;
    std::vector<std::string> bytes_;
    std::vector<uint8_t> special_;
    std::vector<std::string> controls_;  // literal control pieces, longest first
    bool strip_first_space_ = false;
};

}  // namespace

std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& model_path) {
    return std::make_unique<SentencePieceTokenizer>(model_path);
}

}  // namespace mnemo
