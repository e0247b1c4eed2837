// SentencePiece tokenizer.model through Debian's libsentencepiece, which lives in a module of its
// own (libmnemo-tokenizer-sentencepiece.so; tokenizer/sentencepiece_abi.h says why). The library
// does the encoding; this wrapper adds what the Tokenizer interface needs on top: literal control
// tokens in the text when parse_special is set (sentencepiece itself treats "<s>" as ordinary
// text), per-token bytes for streaming, and the decoder's "drop the dummy-prefix space" rule.
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/modules/registry.hpp"
#include "mnemo/tokenizer/tokenizer.hpp"
#include "tokenizer/sentencepiece_abi.h"
#include "tokenizer/unicode.hpp"

// RTLD_DEEPBIND keeps the module's protobuf bound to itself. AddressSanitizer refuses it, so a
// sanitizer build with the gRPC client in the process (libprotobuf loaded) cannot load the module
// safely at all, and says so (sentencepiece_supported) instead of crashing in protobuf's start-up.
#if defined(__SANITIZE_ADDRESS__)
#define MNEMO_SPM_NO_DEEPBIND 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MNEMO_SPM_NO_DEEPBIND 1
#endif
#endif
#ifdef MNEMO_SPM_NO_DEEPBIND
constexpr int kBind = 0;
#else
constexpr int kBind = RTLD_DEEPBIND;
#endif

namespace mnemo {

std::unique_ptr<Tokenizer> load_sentencepiece(const std::string& model_path);

bool sentencepiece_supported(std::string* reason) {
#if defined(MNEMO_SPM_NO_DEEPBIND) && defined(MNEMO_HAVE_KB_GRPC)
    if (reason)
        *reason = "SentencePiece models cannot be loaded by this build: it is sanitized (AddressSanitizer refuses RTLD_DEEPBIND) "
                  "and holds the gRPC client, whose libprotobuf would clash with libsentencepiece's private copy; use a release build";
    return false;
#else
    (void)reason;
    return true;
#endif
}

namespace {

const char* const kMetaspace = "\xE2\x96\x81";
constexpr const char* kModuleFile = "libmnemo-tokenizer-sentencepiece.so";

// Next to libmnemo first (a program anywhere that links it), then where modules are looked for.
const mnemo_spm_api& sentencepiece_module() {
    static const mnemo_spm_api* api = [] {
        if (std::string why; !sentencepiece_supported(&why)) throw Error(why);
        namespace fs = std::filesystem;
        std::vector<std::string> dirs;
        Dl_info self{};
        if (dladdr(reinterpret_cast<void*>(&load_sentencepiece), &self) && self.dli_fname)
            dirs.push_back(fs::path(self.dli_fname).parent_path().string());
        for (const std::string& d : default_search_paths("MNEMO_TOKENIZER_PATH")) dirs.push_back(d);
        std::string tried;
        for (const std::string& d : dirs) {
            const fs::path path = fs::path(d) / kModuleFile;
            std::error_code ec;
            if (!fs::is_regular_file(path, ec)) continue;  // dlopen() of a FIFO would block, as the registries know
            void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | kBind);
            if (!h) {
                tried += std::string("; ") + dlerror();
                continue;
            }
            auto entry = reinterpret_cast<mnemo_spm_entry_fn>(dlsym(h, MNEMO_SPM_ENTRY_SYMBOL));
            const mnemo_spm_api* a = entry ? entry() : nullptr;
            if (a && a->abi_version == MNEMO_SPM_ABI_VERSION) return a;
            tried += "; " + path.string() + " is not a SentencePiece module of this version";
            dlclose(h);
        }
        std::string where;
        for (const std::string& d : dirs) where += (where.empty() ? "" : ", ") + d;
        throw Error(std::string("SentencePiece models need ") + kModuleFile + ", not found in " + where + tried);
    }();
    return *api;
}

class SentencePieceTokenizer final : public Tokenizer {
public:
    explicit SentencePieceTokenizer(const std::string& path) : path_(path), api_(sentencepiece_module()) {
        load_checked();
        const int n = api_.piece_size(sp_.get());
        bytes_.resize(n);
        special_.assign(n, 0);
        for (int id = 0; id < n; ++id) {
            const std::string piece = id_to_piece(id);
            const int32_t kind = api_.kind(sp_.get(), id);
            if (kind & MNEMO_SPM_BYTE) {
                bytes_[id] = std::string(1, static_cast<char>(byte_of_piece(piece, id)));
            } else if (kind & MNEMO_SPM_CONTROL) {
                bytes_[id] = piece;
                special_[id] = 1;
                if (!piece.empty()) controls_.push_back(piece);
            } else if (kind & MNEMO_SPM_UNKNOWN) {
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
        if (api_.bos_id(sp_.get()) >= 0) bos_id = api_.bos_id(sp_.get());
        if (api_.eos_id(sp_.get()) >= 0) {
            eos_id = api_.eos_id(sp_.get());
            eos_ids.push_back(*eos_id);
        }
        add_bos = bos_id.has_value();
        // The normalizer spec is not reachable through the public API without protobuf, so ask
        // the model: with add_dummy_prefix, "a" encodes to pieces starting with a metaspace.
        std::vector<int32_t> probe;
        encode_plain("a", probe);
        strip_first_space_ = !probe.empty() && id_to_piece(probe[0]).rfind(kMetaspace, 0) == 0;
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
                out.push_back(api_.piece_to_id(sp_.get(), hit->data(), hit->size()));
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
        const int id = api_.piece_to_id(sp_.get(), piece.data(), piece.size());
        // PieceToId answers unk_id for unknown pieces; only report it for the unk piece itself.
        if (id < 0 || (id == api_.unk_id(sp_.get()) && id_to_piece(id) != piece)) return std::nullopt;
        return id;
    }

    bool is_special(int32_t id) const override {
        return id >= 0 && id < vocab_size() && special_[id];
    }

private:
    // The library opens the file itself, with a plain blocking open and no size limit; so the
    // file is opened here first (a regular file, without blocking, within the tokenizer cap) and
    // the library is handed that same open file through /proc, which no rename can swap.
    void load_checked() {
        const OpenedFile f = open_regular_file(path_);
        struct Closer {
            int fd;
            ~Closer() { ::close(fd); }
        } closer{f.fd};
        if (f.size > kMaxTokenizerFileBytes)
            throw Error(path_ + ": tokenizer file is " + std::to_string(f.size) + " bytes, more than the " +
                        std::to_string(kMaxTokenizerFileBytes) + " a tokenizer may have");
        const std::string via_fd = "/proc/self/fd/" + std::to_string(f.fd);
        std::error_code ec;
        const std::string load_path = std::filesystem::exists(via_fd, ec) ? via_fd : path_;
        char err[512] = {0};
        sp_ = Handle(api_.load(load_path.c_str(), err, sizeof err), api_.free);
        if (!sp_) throw Error(path_ + ": cannot load SentencePiece model: " + err);
    }

    // A byte-fallback piece is "<0xHH>"; anything else in a byte piece is a damaged model.
    int byte_of_piece(const std::string& piece, int32_t id) const {
        auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
        if (piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && piece[5] == '>' && hex(piece[3]) >= 0 && hex(piece[4]) >= 0)
            return hex(piece[3]) * 16 + hex(piece[4]);
        throw Error(path_ + ": byte piece " + std::to_string(id) + " is " + json::quote(piece) + ", expected <0xHH>");
    }

    void check_id(int32_t id) const {
        if (id < 0 || id >= vocab_size())
            throw Error(path_ + ": token id " + std::to_string(id) + " out of range [0, " +
                        std::to_string(vocab_size()) + ")");
    }

    std::string id_to_piece(int32_t id) const {
        size_t len = 0;
        const char* p = api_.id_to_piece(sp_.get(), id, &len);
        return std::string(p, len);
    }

    void encode_plain(std::string_view text, std::vector<int32_t>& out) const {
        if (text.empty()) return;
        char err[512] = {0};
        const size_t at = out.size();
        out.resize(at + text.size() + 8);  // ids <= bytes for every model seen; else asked again
        int64_t n = api_.encode(sp_.get(), text.data(), text.size(), out.data() + at, out.size() - at, err, sizeof err);
        if (n > static_cast<int64_t>(out.size() - at)) {
            out.resize(at + static_cast<size_t>(n));
            n = api_.encode(sp_.get(), text.data(), text.size(), out.data() + at, out.size() - at, err, sizeof err);
        }
        if (n < 0) {
            out.resize(at);
            throw Error(path_ + ": SentencePiece encode failed: " + err);
        }
        out.resize(at + static_cast<size_t>(n));
    }

    using Handle = std::unique_ptr<mnemo_spm, void (*)(mnemo_spm*)>;
    std::string path_;
    const mnemo_spm_api& api_;
    Handle sp_{nullptr, nullptr};
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
