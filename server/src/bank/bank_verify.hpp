// `mnemo-kb verify` as a library call: the full integrity pass over a bank that `serve` leaves
// out (server/README.md, "Checking a bank"). `serve` checks at open what it loads whole (manifest,
// codebooks, texts, vectors, tokenizer: size and SHA-256) and each segment's size and header, and
// each record's CRC when it serves it; hashing every segment at open would read the whole bank,
// tens of TB at 10^8 references. verify reads everything the checked versions name, once, in
// bounded chunks (bank_verify_blob.hpp): CURRENT, each manifest, every blob's size and SHA-256,
// every segment's header and every record (retired ones too), and lists blobs that no stored
// manifest names. It only reads: nothing is repaired or removed.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bank_storage.hpp"
#include "bank_verify_blob.hpp"
#include "mnemo/error.hpp"

namespace mnemo::kb {

struct BankVerifyOptions {
    std::shared_ptr<const BankStorage> storage;
    bool all_versions = false;  // every stored manifest, not only the one CURRENT names
    unsigned threads = 1;       // blobs read at once (each blob is read by one thread)
    size_t chunk_bytes = size_t{8} << 20;  // one read; memory is about threads x (2 chunks + a record)
    size_t max_listed_bad_records = 20;    // per version: the first ones, with their reason
};

// One blob as read once, however many checked versions name it.
struct VerifiedBlob {
    // "segment", "texts", "vectors", "keys codebook", "values codebook", "tokenizer file",
    // "vector index", "bm25 index"
    std::string kind;
    BlobCheck check;
    std::vector<uint64_t> versions;  // the checked versions that name it
    bool ok() const { return check.problems.empty() && check.bad_ranges.empty(); }
};

struct BadRecord {
    uint32_t id = 0;
    std::string segment;
    std::string reason;
    bool retired = false;  // retired in this version: damaged, but this version never serves it
};

struct VersionVerdict {
    uint64_t version = 0;
    std::string manifest;  // its blob name
    bool published = false;  // CURRENT names it
    std::vector<std::string> problems;  // the manifest itself and its codec (blobs have their own)
    std::vector<size_t> blobs;          // indexes into BankVerifyReport::blobs, in manifest order
    uint64_t bad_blobs = 0;
    uint64_t records = 0;          // the manifest's count
    uint64_t records_checked = 0;  // read and checked (retired ones included)
    uint64_t retired = 0;          // retired in this version (checked like the others)
    uint64_t bad_records = 0, bad_retired = 0;
    std::vector<BadRecord> first_bad;  // in id order, at most max_listed_bad_records
    bool ok() const { return problems.empty() && bad_blobs == 0 && bad_records == 0; }
};

struct BankVerifyReport {
    std::string storage;  // BankStorage::describe()
    uint64_t current_version = 0;  // what CURRENT names; 0 when it is missing or malformed
    std::vector<std::string> current_problems;
    std::vector<VersionVerdict> versions;  // in version order
    std::vector<VerifiedBlob> blobs;
    // Blobs that no stored manifest names (an interrupted write's leftovers, a build's checkpoints):
    // a note, not damage.
    std::vector<std::string> garbage;
    std::vector<std::string> notes;
    uint64_t bytes_read = 0;
    double seconds = 0;
    unsigned threads = 1;
    bool damaged() const;
    uint64_t bad_blobs() const;
    double mb_per_second() const;  // 10^6 bytes per second
};

// The storage holds no bank at all (no CURRENT and no manifest), or cannot be listed: `verify`'s
// exit code 2, as opposed to a bank with damage (1).
class BankUnreachable : public Error {
public:
    using Error::Error;
};

BankVerifyReport verify_bank(const BankVerifyOptions& options);

}  // namespace mnemo::kb
