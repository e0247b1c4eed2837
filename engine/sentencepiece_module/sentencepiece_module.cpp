// libmnemo-tokenizer-sentencepiece.so: Debian's libsentencepiece behind the C interface of
// engine/src/tokenizer/sentencepiece_abi.h (why it is a module is explained there).
#include <sentencepiece_processor.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "tokenizer/sentencepiece_abi.h"

struct mnemo_spm {
    sentencepiece::SentencePieceProcessor sp;
};

namespace {

void put_error(char* err, size_t len, const std::string& what) {
    if (!err || len == 0) return;
    const size_t n = std::min(len - 1, what.size());
    std::memcpy(err, what.data(), n);
    err[n] = '\0';
}

mnemo_spm* spm_load(const char* path, char* err, size_t err_len) {
    try {
        auto m = new mnemo_spm;
        const auto status = m->sp.Load(path);
        if (!status.ok()) {
            put_error(err, err_len, status.ToString());
            delete m;
            return nullptr;
        }
        return m;
    } catch (const std::exception& e) {  // nothing may unwind through C
        put_error(err, err_len, e.what());
        return nullptr;
    }
}

void spm_free(mnemo_spm* m) { delete m; }

int32_t spm_piece_size(const mnemo_spm* m) { return m->sp.GetPieceSize(); }

const char* spm_id_to_piece(const mnemo_spm* m, int32_t id, size_t* len) {
    const std::string& p = m->sp.IdToPiece(id);  // a reference into the loaded model
    *len = p.size();
    return p.data();
}

int32_t spm_kind(const mnemo_spm* m, int32_t id) {
    return (m->sp.IsByte(id) ? MNEMO_SPM_BYTE : 0) | (m->sp.IsControl(id) ? MNEMO_SPM_CONTROL : 0) |
           (m->sp.IsUnknown(id) ? MNEMO_SPM_UNKNOWN : 0);
}

int32_t spm_bos(const mnemo_spm* m) { return m->sp.bos_id(); }
int32_t spm_eos(const mnemo_spm* m) { return m->sp.eos_id(); }
int32_t spm_unk(const mnemo_spm* m) { return m->sp.unk_id(); }

int32_t spm_piece_to_id(const mnemo_spm* m, const char* piece, size_t len) {
    try {
        return m->sp.PieceToId(std::string(piece, len));
    } catch (const std::exception&) {
        return -1;
    }
}

int64_t spm_encode(const mnemo_spm* m, const char* text, size_t len, int32_t* out, size_t cap, char* err, size_t err_len) {
    try {
        std::vector<int> ids;
        const auto status = m->sp.Encode(std::string(text, len), &ids);
        if (!status.ok()) {
            put_error(err, err_len, status.ToString());
            return -1;
        }
        for (size_t i = 0; i < ids.size() && i < cap; ++i) out[i] = ids[i];
        return static_cast<int64_t>(ids.size());
    } catch (const std::exception& e) {
        put_error(err, err_len, e.what());
        return -1;
    }
}

const mnemo_spm_api kApi = {MNEMO_SPM_ABI_VERSION, spm_load, spm_free, spm_piece_size, spm_id_to_piece, spm_kind,
                            spm_bos, spm_eos, spm_unk, spm_piece_to_id, spm_encode};

}  // namespace

extern "C" __attribute__((visibility("default"))) const mnemo_spm_api* mnemo_sentencepiece_api(void) { return &kApi; }
