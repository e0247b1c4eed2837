// Parsing and writing the canonical VQ codebook format (mnemo/memory/vq_codebook.hpp). The bytes usually
// come over the network, so every field is checked before it sizes anything: the arrays are read
// only once the header's sizes add up to exactly the bytes present.
#include "mnemo/memory/vq_codebook.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"
#include "io/sha256.hpp"

namespace mnemo {
namespace {

constexpr char kMagic[8] = {'M', 'N', 'E', 'M', 'O', 'V', 'Q', 'C'};
constexpr uint32_t kMaxBits = 16;       // VQ_DECODE's limit on bits per index
constexpr uint32_t kMaxCoarseBits = 32;  // Mc * bc: the list number is at most 4 bytes
// Larger than any byte count a real header implies (2^48 floats per table at most, plus A) and
// small enough that the sum of three arrays' bytes cannot overflow 64 bits.
constexpr uint64_t kTooMany = uint64_t{1} << 60;
// A codebook file read whole: 16-bit tables for 256-dimensional heads with a rotation are about
// 256 MiB, the largest any model here would use; a file above this is refused unread.
constexpr uint64_t kMaxCodebookFileBytes = uint64_t{1} << 30;

uint32_t load_u32(const uint8_t* p) {
    return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}

void store_u32(uint8_t* p, uint32_t v) {
    for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

// Printable text of raw bytes for messages: "MNEMOVQC", or with \xNN escapes.
std::string quoted(const uint8_t* p, size_t n) {
    std::string s = "\"";
    for (size_t i = 0; i < n; ++i) {
        if (p[i] >= 0x20 && p[i] < 0x7F && p[i] != '"' && p[i] != '\\') {
            s += static_cast<char>(p[i]);
        } else {
            static const char* digits = "0123456789abcdef";
            s += "\\x";
            s += digits[p[i] >> 4];
            s += digits[p[i] & 15];
        }
    }
    return s + "\"";
}

struct ArraySpec {
    const char* name;
    uint64_t dims[3];
    int ndim;
    std::vector<float> VqCodebook::*dest;
    // Elements, saturated at kTooMany (a header may claim anything).
    uint64_t count() const {
        uint64_t n = 1;
        for (int i = 0; i < ndim; ++i) n = dims[i] != 0 && n > kTooMany / dims[i] ? kTooMany : n * dims[i];
        return std::min(n, kTooMany);
    }
    std::string shape() const {
        std::string s = "[";
        for (int i = 0; i < ndim; ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
        return s + "]";
    }
    // "coarse[1][37][3]" for a flat element index.
    std::string element(uint64_t flat) const {
        std::string s;
        for (int i = ndim - 1; i >= 0; --i) {
            s = "[" + std::to_string(flat % dims[i]) + "]" + s;
            flat /= dims[i];
        }
        return name + s;
    }
};

}  // namespace

std::vector<uint8_t> VqCodebook::to_bytes() const {
    std::vector<uint8_t> out(kHeaderBytes + 4 * (rotation.size() + coarse.size() + pq.size()));
    std::memcpy(out.data(), kMagic, sizeof(kMagic));
    size_t at = sizeof(kMagic);
    for (uint32_t v : {kFormatVersion, has_rotation() ? kFlagRotation : 0u, d_in, d_out, coarse_m, coarse_nbits, pq_m,
                       pq_nbits}) {
        store_u32(out.data() + at, v);
        at += 4;
    }
    for (const std::vector<float>* a : {&rotation, &coarse, &pq})
        for (float f : *a) {
            uint32_t bits;
            std::memcpy(&bits, &f, 4);
            store_u32(out.data() + at, bits);
            at += 4;
        }
    return out;
}

namespace {

// The header's shape fields, checked, and the arrays they imply with the total byte count.
struct Header {
    VqCodebook cb;  // shape fields only
    std::vector<ArraySpec> arrays;
    uint64_t bytes = 0;  // the whole codebook's; >= 4 * kTooMany when the header is absurd
    std::string layout;  // "coarse[1, 256, 8], pq[...]" for messages
};

Header parse_header(const uint8_t* bytes, size_t size, const std::string& name) {
    auto fail = [&](const std::string& what) -> Error { return Error(name + ": " + what); };
    if (size < VqCodebook::kHeaderBytes)
        throw fail("truncated: " + std::to_string(size) + " bytes, the header alone needs " + std::to_string(VqCodebook::kHeaderBytes));
    if (std::memcmp(bytes, kMagic, 8) != 0)
        throw fail("magic (bytes 0..7) is " + quoted(bytes, 8) + ", expected \"MNEMOVQC\" (not a Mnemo VQ codebook)");
    const uint32_t version = load_u32(bytes + 8), flags = load_u32(bytes + 12);
    if (version != VqCodebook::kFormatVersion)
        throw fail("format version (offset 8) is " + std::to_string(version) + ", expected " +
                   std::to_string(VqCodebook::kFormatVersion));
    if (flags & ~VqCodebook::kFlagRotation)
        throw fail("flags (offset 12) are " + std::to_string(flags) + ", expected 0 or 1 (bit 0: rotation present)");

    Header h;
    VqCodebook& cb = h.cb;
    cb.d_in = load_u32(bytes + 16);
    cb.d_out = load_u32(bytes + 20);
    cb.coarse_m = load_u32(bytes + 24);
    cb.coarse_nbits = load_u32(bytes + 28);
    cb.pq_m = load_u32(bytes + 32);
    cb.pq_nbits = load_u32(bytes + 36);
    const bool rotated = (flags & VqCodebook::kFlagRotation) != 0;

    if (cb.d_out == 0) throw fail("d_out (offset 20) is 0, expected at least 1");
    if (cb.d_in == 0) throw fail("d_in (offset 16) is 0, expected at least 1");
    if (!rotated && cb.d_in != cb.d_out)
        throw fail("d_in (offset 16) is " + std::to_string(cb.d_in) + ", expected d_out = " + std::to_string(cb.d_out) +
                   " (no rotation: flag bit 0 is clear)");
    if (cb.coarse_m == 0 || cb.d_out % cb.coarse_m != 0)
        throw fail("coarse_M (offset 24) is " + std::to_string(cb.coarse_m) + ", expected a divisor of d_out = " +
                   std::to_string(cb.d_out));
    if (cb.pq_m == 0 || cb.d_out % cb.pq_m != 0)
        throw fail("pq_M (offset 32) is " + std::to_string(cb.pq_m) + ", expected a divisor of d_out = " +
                   std::to_string(cb.d_out));
    if (cb.coarse_nbits < 1 || cb.coarse_nbits > kMaxBits)
        throw fail("coarse_nbits (offset 28) is " + std::to_string(cb.coarse_nbits) + ", expected 1.." +
                   std::to_string(kMaxBits));
    if (cb.pq_nbits < 1 || cb.pq_nbits > kMaxBits)
        throw fail("pq_nbits (offset 36) is " + std::to_string(cb.pq_nbits) + ", expected 1.." + std::to_string(kMaxBits));
    if (uint64_t{cb.coarse_m} * cb.coarse_nbits > kMaxCoarseBits)
        throw fail("coarse codes of coarse_M x coarse_nbits = " + std::to_string(cb.coarse_m) + " x " +
                   std::to_string(cb.coarse_nbits) + " bits, expected at most " + std::to_string(kMaxCoarseBits) +
                   " bits (a 4-byte list number)");

    if (rotated) h.arrays.push_back({"A", {cb.d_out, cb.d_in, 0}, 2, &VqCodebook::rotation});
    h.arrays.push_back({"coarse", {cb.coarse_m, uint64_t{1} << cb.coarse_nbits, cb.d_out / cb.coarse_m}, 3, &VqCodebook::coarse});
    h.arrays.push_back({"pq", {cb.pq_m, uint64_t{1} << cb.pq_nbits, cb.d_out / cb.pq_m}, 3, &VqCodebook::pq});
    // count() saturates below 2^60 elements, so the sum of three arrays' bytes stays below 2^63.
    h.bytes = VqCodebook::kHeaderBytes;
    for (const ArraySpec& a : h.arrays) {
        h.bytes += 4 * a.count();
        h.layout += (h.layout.empty() ? "" : ", ") + std::string(a.name) + a.shape();
    }
    return h;
}

}  // namespace

uint64_t vq_codebook_bytes(const void* header, size_t size, const std::string& name, VqCodebook* shape) {
    const Header h = parse_header(static_cast<const uint8_t*>(header), size, name);
    if (shape) *shape = h.cb;
    return h.bytes;
}

uint64_t vq_codebook_max_bytes(uint32_t d_in) {
    // The rotated space at its widest (2 d_in), a rotation, and both tables at VQ_DECODE's 16 bits:
    // coarse and pq each hold 2^16 centroids of d_out values in all, whatever their M.
    const uint64_t d_out = 2 * uint64_t{d_in};
    return VqCodebook::kHeaderBytes + 4 * (d_out * d_in + 2 * (uint64_t{1} << kMaxBits) * d_out);
}

VqCodebook parse_vq_codebook(const void* data, size_t size, const std::string& name, const std::string& expected_sha256) {
    const auto* bytes = static_cast<const uint8_t*>(data);
    auto fail = [&](const std::string& what) -> Error { return Error(name + ": " + what); };

    if (!expected_sha256.empty()) {
        // Before anything else: bytes that are not the expected ones are refused whatever they hold.
        const Sha256Digest got = sha256(bytes, size);
        if (expected_sha256.size() != 64 || !digest_matches_hex(got, expected_sha256)) {
            if (expected_sha256.size() != 64 ||
                expected_sha256.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
                throw fail("the expected SHA-256 '" + expected_sha256 + "' is not 64 hex digits");
            throw fail("SHA-256 mismatch: the " + std::to_string(size) + " bytes hash to " + to_hex(got) + ", expected " +
                       expected_sha256);
        }
    }
    Header h = parse_header(bytes, size, name);
    if (h.bytes != size)
        throw fail(std::string(h.bytes > size ? "truncated" : "trailing bytes") + ": the header (" + h.layout +
                   " f32) implies " + (h.bytes >= 4 * kTooMany ? "more than 2^62" : std::to_string(h.bytes)) +
                   " bytes, the data has " + std::to_string(size));

    VqCodebook cb = h.cb;
    size_t at = VqCodebook::kHeaderBytes;
    for (const ArraySpec& a : h.arrays) {
        const auto n = static_cast<size_t>(a.count());
        std::vector<float>& dest = cb.*a.dest;
        dest.resize(n);
        for (size_t i = 0; i < n; ++i, at += 4) {
            const uint32_t bits = load_u32(bytes + at);
            float f;
            std::memcpy(&f, &bits, 4);
            if (!std::isfinite(f))
                throw fail(a.element(i) + " (offset " + std::to_string(at) + ") is " + (std::isnan(f) ? "NaN" : "infinite") +
                           ", expected a finite float");
            dest[i] = f;
        }
    }
    cb.sha256 = sha256_hex(bytes, size);
    return cb;
}

VqCodebook load_vq_codebook(const std::string& path, const std::string& expected_sha256) {
    const std::string bytes = read_file_capped(path, kMaxCodebookFileBytes, "codebook file");
    return parse_vq_codebook(bytes.data(), bytes.size(), path, expected_sha256);
}

std::vector<int32_t> vq_code_words(const uint8_t* codes, size_t n, size_t code_size, size_t words) {
    if (words * 4 < code_size)
        throw Error("vq codes: " + std::to_string(words) + " words per code hold " + std::to_string(words * 4) +
                    " bytes, a code has " + std::to_string(code_size));
    std::vector<int32_t> out(n * words, 0);
    for (size_t r = 0; r < n; ++r)
        for (size_t i = 0; i < code_size; ++i) {
            const uint32_t b = uint32_t{codes[r * code_size + i]} << (8 * (i % 4));
            out[r * words + i / 4] = static_cast<int32_t>(static_cast<uint32_t>(out[r * words + i / 4]) | b);
        }
    return out;
}

}  // namespace mnemo
