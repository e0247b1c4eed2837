#include "bank_verify_blob.hpp"

#include <openssl/evp.h>

#include <algorithm>
#include <cstring>
#include <future>

#include "mnemo/error.hpp"
#include "mnemo/memory/memory_record.hpp"

namespace mnemo::kb {
namespace {

// SHA-256 fed chunk by chunk (sha256_hex.hpp hashes a whole string, which a segment never is here).
class Sha256Stream {
public:
    Sha256Stream() : ctx_(EVP_MD_CTX_new()) {
        if (!ctx_ || EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr) != 1) throw Error("SHA-256: OpenSSL's EVP_DigestInit_ex failed");
    }
    ~Sha256Stream() { EVP_MD_CTX_free(ctx_); }
    Sha256Stream(const Sha256Stream&) = delete;
    Sha256Stream& operator=(const Sha256Stream&) = delete;
    void update(const void* data, size_t n) {
        if (EVP_DigestUpdate(ctx_, data, n) != 1) throw Error("SHA-256: OpenSSL's EVP_DigestUpdate failed");
    }
    std::string hex() {
        unsigned char digest[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        if (EVP_DigestFinal_ex(ctx_, digest, &n) != 1 || n != 32) throw Error("SHA-256: OpenSSL's EVP_DigestFinal_ex failed");
        static const char* digits = "0123456789abcdef";
        std::string out(64, '0');
        for (unsigned i = 0; i < 32; ++i) {
            out[2 * i] = digits[digest[i] >> 4];
            out[2 * i + 1] = digits[digest[i] & 15];
        }
        return out;
    }

private:
    EVP_MD_CTX* ctx_;
};

// A record's header (memory_record.hpp): u32 magic, id, n_valid, CRC-32 of the rest.
constexpr size_t kRecordHeaderBytes = 16;

uint32_t le_u32(const uint8_t* p) {
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
           static_cast<uint32_t>(p[3]) << 24;
}

// Without a usable codec the record's expected size is the manifest's record_bytes, and what can
// be checked is its header and checksum: the same checks check_memory_record starts with.
void check_record_crc_only(const uint8_t* p, size_t n, uint32_t id, const std::string& where) {
    uint32_t holds = 0;
    if (n < kRecordHeaderBytes || !memory_record_id(p, n, &holds)) throw Error(where + ": bad record magic (damaged data)");
    if (holds != id) throw Error(where + ": holds record " + std::to_string(holds) + " (damaged data)");
    if (le_u32(p + 12) != memory_crc32(p + kRecordHeaderBytes, n - kRecordHeaderBytes))
        throw Error(where + ": checksum mismatch (the record is damaged)");
}

// Takes a segment's bytes in order, in pieces of any size, and checks the header and each record
// once it has all of its bytes: whole in the caller's chunk when it lies inside one, else gathered
// into one record's buffer (a record straddling two chunks, or longer than a chunk).
class SegmentScanner {
public:
    SegmentScanner(const SegmentLayout& layout, BlobCheck& out, size_t max_listed)
        : l_(layout), out_(out), max_listed_(max_listed), record_(layout.record_bytes) {}

    // Bytes [offset, offset + n) of the segment; offsets continue where the last call ended.
    void feed(const uint8_t* data, size_t n) {
        const uint64_t end = kSegmentHeaderBytes + uint64_t{l_.entry.count} * l_.record_bytes;
        while (n > 0 && offset_ < end) {
            if (offset_ < kSegmentHeaderBytes) {
                const size_t take = std::min<size_t>(n, kSegmentHeaderBytes - offset_);
                std::memcpy(header_ + offset_, data, take);
                advance(data, n, take);
                if (offset_ == kSegmentHeaderBytes) check_header();
                continue;
            }
            const uint64_t rel = offset_ - kSegmentHeaderBytes;
            const uint64_t in_record = rel % l_.record_bytes;
            const auto index = static_cast<uint32_t>(rel / l_.record_bytes);
            if (in_record == 0 && n >= l_.record_bytes) {
                check_record(data, index);
                advance(data, n, l_.record_bytes);
                continue;
            }
            const size_t take = static_cast<size_t>(std::min<uint64_t>(n, l_.record_bytes - in_record));
            std::memcpy(record_.data() + in_record, data, take);
            advance(data, n, take);
            if (in_record + take == l_.record_bytes) check_record(record_.data(), index);
        }
    }

    // After the last piece: the records the blob ended before (truncated, or a read that failed)
    // are bad, with `why`.
    void finish(const std::string& why) {
        if (offset_ < kSegmentHeaderBytes) out_.problems.push_back("segment header: " + why);
        for (uint32_t i = records_done_; i < l_.entry.count; ++i) bad(l_.entry.first_id + i, "record " + std::to_string(l_.entry.first_id + i) + ": " + why);
    }

private:
    void advance(const uint8_t*& data, size_t& n, size_t by) {
        data += by;
        n -= by;
        offset_ += by;
    }

    void check_header() {
        try {
            check_segment_header(header_, l_.entry, l_.record_bytes, "segment header");
        } catch (const Error& e) {
            out_.problems.push_back(e.what());
        }
    }

    void check_record(const uint8_t* p, uint32_t index) {
        const uint32_t id = l_.entry.first_id + index;
        const std::string where = "record " + std::to_string(id);
        try {
            if (l_.codec)
                check_memory_record(p, l_.record_bytes, id, l_.spec, l_.codec.get(), where);
            else
                check_record_crc_only(p, l_.record_bytes, id, where);
        } catch (const Error& e) {
            bad(id, e.what());
        }
        ++out_.records_checked;
        records_done_ = index + 1;
    }

    void bad(uint32_t id, const std::string& why) {
        std::vector<IdRange>& r = out_.bad_ranges;
        if (!r.empty() && r.back().first + r.back().count == id)
            ++r.back().count;
        else
            r.push_back({id, 1});
        if (out_.first_bad.size() < max_listed_) out_.first_bad.emplace(id, why);
    }

    const SegmentLayout& l_;
    BlobCheck& out_;
    size_t max_listed_;
    uint64_t offset_ = 0;
    uint32_t records_done_ = 0;
    uint8_t header_[kSegmentHeaderBytes] = {};
    std::vector<uint8_t> record_;
};

}  // namespace

uint64_t BlobCheck::bad_records() const {
    uint64_t n = 0;
    for (const IdRange& r : bad_ranges) n += r.count;
    return n;
}

BlobCheck check_blob(const BankStorage& st, const BlobRef& blob, const SegmentLayout* layout, size_t chunk_bytes, size_t max_listed) {
    BlobCheck out;
    out.blob = blob;
    std::unique_ptr<SegmentScanner> scanner;
    if (layout) scanner = std::make_unique<SegmentScanner>(*layout, out, max_listed);

    std::unique_ptr<BlobReader> reader;
    try {
        reader = st.open_blob(blob.file);
    } catch (const std::exception& e) {
        bool missing = false;
        try {
            missing = !st.exists(blob.file);
        } catch (const std::exception&) {
        }
        out.problems.push_back(missing ? std::string("missing") : std::string("cannot be opened: ") + e.what());
        if (scanner) scanner->finish(missing ? "its segment is missing" : "its segment cannot be opened");
        return out;
    }

    const uint64_t size = reader->size();
    if (size != blob.bytes)
        out.problems.push_back(std::to_string(size) + " bytes, the manifest says " + std::to_string(blob.bytes) +
                               (size < blob.bytes ? " (truncated)" : ""));
    Sha256Stream sha;
    // Two chunks: the next one is read while this one is hashed and checked, so a store's latency
    // (a RADOS round trip, a disk seek) overlaps the CPU work instead of adding to it.
    const size_t chunk = std::max<size_t>(1, static_cast<size_t>(std::min<uint64_t>(chunk_bytes, std::max<uint64_t>(size, 1))));
    std::vector<uint8_t> buffers[2] = {std::vector<uint8_t>(chunk), std::vector<uint8_t>(size > chunk ? chunk : 0)};
    auto read_ahead = [&](uint64_t at, std::vector<uint8_t>& into) {
        return std::async(std::launch::async, [&reader, &into, at, chunk, size] {
            const size_t n = static_cast<size_t>(std::min<uint64_t>(chunk, size - at));
            reader->read(at, into.data(), n);
            return n;
        });
    };
    uint64_t offset = 0;
    std::string stopped;
    std::future<size_t> next;
    if (size > 0) next = read_ahead(0, buffers[0]);
    for (size_t k = 0; offset < size; ++k) {
        size_t n = 0;
        try {
            n = next.get();
        } catch (const std::exception& e) {
            stopped = "not read: reading byte " + std::to_string(offset) + " failed";
            out.problems.push_back("read failed at byte " + std::to_string(offset) + ": " + e.what());
            break;
        }
        const std::vector<uint8_t>& got = buffers[k % 2];
        if (offset + n < size) next = read_ahead(offset + n, buffers[(k + 1) % 2]);
        sha.update(got.data(), n);
        if (scanner) scanner->feed(got.data(), n);
        offset += n;
        out.bytes_read += n;
    }
    if (stopped.empty()) {
        const std::string h = sha.hex();
        if (h != blob.sha256) out.problems.push_back("SHA-256 " + h + " does not match the manifest's " + blob.sha256);
    }
    if (scanner) scanner->finish(stopped.empty() ? "missing: the segment ends at byte " + std::to_string(size) : stopped);
    return out;
}

}  // namespace mnemo::kb
