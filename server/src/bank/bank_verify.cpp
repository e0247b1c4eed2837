#include "bank_verify.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <thread>

#include "bank_format.hpp"
#include "bank_retired.hpp"
#include "mnemo/io/printable.hpp"
#include "mnemo/memory/vq_codebook.hpp"

namespace mnemo::kb {
namespace {

// The version in a manifest's blob name, or 0 when `name` is not one.
uint64_t manifest_version_of(const std::string& name) {
    try {
        return parse_current_pointer(name, "");
    } catch (const Error&) {
        return 0;
    }
}

struct LoadedManifest {
    std::optional<BankManifest> manifest;
    std::string problem;  // why it is not loaded
};

LoadedManifest load_manifest(const BankStorage& st, uint64_t version) {
    const std::string name = manifest_name(version);
    const std::string where = st.describe() + ": " + name;
    LoadedManifest out;
    try {
        const std::optional<std::string> text = st.read_blob(name, kMaxManifestBytes);
        if (!text) {
            out.problem = name + ": missing";
            return out;
        }
        BankManifest m = manifest_from_json(*text, name);
        if (m.version != version) {
            out.problem = name + ": says version " + std::to_string(m.version) + ", its name " + std::to_string(version);
            return out;
        }
        out.manifest = std::move(m);
    } catch (const std::exception& e) {
        out.problem = e.what();
    }
    return out;
}

// The version's codec, from its two codebooks read whole (each at most the largest codebook of
// its dimension, so memory stays bounded) and checked against the manifest's SHA-256 and model.
// nullptr with `problem` set when it cannot be used; the records are then checked without it.
std::shared_ptr<const MemoryCodec> load_codec(const BankStorage& st, const BankManifest& m, uint64_t& bytes_read, std::string& problem) {
    try {
        auto codebook = [&](const BlobRef& b, uint32_t dim, const char* what) {
            const std::optional<std::string> bytes = st.read_blob(b.file, std::min<uint64_t>(b.bytes, vq_codebook_max_bytes(dim)));
            if (!bytes) throw Error(std::string(what) + " '" + printable(b.file) + "' is missing");
            bytes_read += bytes->size();
            return parse_vq_codebook(bytes->data(), bytes->size(), std::string(what) + " '" + printable(b.file) + "'", b.sha256);
        };
        auto codec = std::make_shared<MemoryCodec>();
        codec->keys = codebook(m.keys_codebook, static_cast<uint32_t>(m.model.spec.head_dim), "keys codebook");
        codec->values = codebook(m.values_codebook, static_cast<uint32_t>(m.model.spec.value_dim), "values codebook");
        check_memory_model(m.model, m.model, codec.get(), "the model");
        const uint64_t rb = memory_record_bytes(m.model.spec, codec.get());
        if (rb != m.record_bytes)
            throw Error("record_bytes " + std::to_string(m.record_bytes) + ", but the model and codec make " + std::to_string(rb) + "-byte records");
        return codec;
    } catch (const std::exception& e) {
        problem = std::string("codec unusable, so records were checked by header and CRC-32 only: ") + e.what();
        return nullptr;
    }
}

// Ids in both sorted range lists.
uint64_t overlap(const std::vector<IdRange>& a, const std::vector<IdRange>& b) {
    uint64_t n = 0;
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        const uint64_t lo = std::max(a[i].first, b[j].first);
        const uint64_t a_end = uint64_t{a[i].first} + a[i].count, b_end = uint64_t{b[j].first} + b[j].count;
        const uint64_t hi = std::min(a_end, b_end);
        if (hi > lo) n += hi - lo;
        if (a_end < b_end)
            ++i;
        else
            ++j;
    }
    return n;
}

struct Job {
    size_t blob;  // index into the report's blobs
    std::optional<SegmentLayout> layout;
};

void run_jobs(const BankVerifyOptions& o, std::vector<Job>& jobs, BankVerifyReport& r) {
    std::atomic<size_t> next{0};
    auto worker = [&] {
        for (size_t i; (i = next.fetch_add(1)) < jobs.size();) {
            VerifiedBlob& b = r.blobs[jobs[i].blob];
            try {
                b.check = check_blob(*o.storage, b.check.blob, jobs[i].layout ? &*jobs[i].layout : nullptr, o.chunk_bytes,
                                     o.max_listed_bad_records);
            } catch (const std::exception& e) {
                // Not the blob's fault (no thread for the read-ahead, OpenSSL failing): still said, never lost.
                b.check.problems.push_back(std::string("not checked: ") + e.what());
            }
        }
    };
    const size_t n = std::max<size_t>(1, std::min<size_t>(o.threads, jobs.size()));
    std::vector<std::thread> pool;
    for (size_t t = 1; t < n; ++t) pool.emplace_back(worker);
    worker();
    for (std::thread& t : pool) t.join();
}

// Sums a checked version's blobs into its verdict.
void tally(const BankManifest& m, const BankVerifyReport& r, size_t max_listed, VersionVerdict& v) {
    const RetiredSet retired(m.retired);
    v.retired = retired.size();
    std::vector<IdRange> bad;
    for (size_t i : v.blobs) {
        const VerifiedBlob& b = r.blobs[i];
        if (!b.ok()) ++v.bad_blobs;
        if (b.kind != "segment") continue;
        v.records_checked += b.check.records_checked;
        bad.insert(bad.end(), b.check.bad_ranges.begin(), b.check.bad_ranges.end());
        for (const auto& [id, reason] : b.check.first_bad) {
            if (v.first_bad.size() >= max_listed) break;
            v.first_bad.push_back({id, b.check.blob.file, reason, retired.contains(id)});
        }
    }
    for (const IdRange& x : bad) v.bad_records += x.count;
    v.bad_retired = overlap(bad, retired.ranges());
}

// CURRENT: present, well formed, naming a stored manifest. No CURRENT and no manifest at all is
// not a damaged bank but no bank (BankUnreachable).
void check_current(const BankStorage& st, const std::set<uint64_t>& stored, BankVerifyReport& r) {
    try {
        const std::optional<std::string> cur = st.read_blob(kCurrentPointer, kMaxPointerBytes);
        if (!cur) {
            if (stored.empty()) throw BankUnreachable(r.storage + ": not a bank (no " + kCurrentPointer + ", no manifest)");
            r.current_problems.push_back(std::string(kCurrentPointer) + " is missing, though manifests are stored: no version is published");
            return;
        }
        r.bytes_read += cur->size();
        r.current_version = parse_current_pointer(*cur, kCurrentPointer);
        if (!stored.count(r.current_version))
            r.current_problems.push_back(std::string(kCurrentPointer) + " names " + manifest_name(r.current_version) + ", which is missing");
    } catch (const BankUnreachable&) {
        throw;
    } catch (const std::exception& e) {
        r.current_problems.push_back(e.what());
    }
}

}  // namespace

bool BankVerifyReport::damaged() const {
    if (!current_problems.empty()) return true;
    for (const VersionVerdict& v : versions)
        if (!v.ok()) return true;
    return bad_blobs() > 0;
}

uint64_t BankVerifyReport::bad_blobs() const {
    return static_cast<uint64_t>(std::count_if(blobs.begin(), blobs.end(), [](const VerifiedBlob& b) { return !b.ok(); }));
}

double BankVerifyReport::mb_per_second() const { return seconds > 0 ? static_cast<double>(bytes_read) / 1e6 / seconds : 0; }

BankVerifyReport verify_bank(const BankVerifyOptions& o) {
    if (!o.storage) throw Error("verify: no storage");
    const auto t0 = std::chrono::steady_clock::now();
    const BankStorage& st = *o.storage;
    BankVerifyReport r;
    r.storage = st.describe();
    r.threads = std::max(1u, o.threads);

    std::vector<std::string> names;
    try {
        names = st.list();
    } catch (const std::exception& e) {
        throw BankUnreachable(e.what());
    }
    std::set<uint64_t> stored;  // versions with a manifest blob
    for (const std::string& n : names)
        if (const uint64_t v = manifest_version_of(n)) stored.insert(v);

    check_current(st, stored, r);

    std::set<uint64_t> to_check;
    if (o.all_versions) to_check = stored;
    if (r.current_version) to_check.insert(r.current_version);
    if (to_check.empty()) r.notes.push_back("no version was checked: CURRENT is unusable (--all-versions checks every stored manifest)");

    // Every stored manifest is read: the checked ones to be checked, all of them to tell garbage.
    std::map<uint64_t, LoadedManifest> manifests;
    for (uint64_t v : stored) manifests.emplace(v, load_manifest(st, v));
    std::set<std::string> named = {kCurrentPointer};
    for (const auto& [v, lm] : manifests) {
        named.insert(manifest_name(v));
        if (lm.manifest)
            for (const NamedBlob& b : manifest_blobs(*lm.manifest)) named.insert(b.blob.file);
        else if (!to_check.count(v))
            r.notes.push_back("an older manifest does not load, so its blobs may be listed as garbage: " + lm.problem);
    }
    std::erase_if(manifests, [&](const auto& e) { return !to_check.count(e.first); });  // only their names were needed

    // One job per distinct blob (and layout): a blob shared by versions is read once.
    std::map<std::string, size_t> blob_index;
    std::vector<Job> jobs;
    std::map<std::pair<std::string, std::string>, std::pair<std::shared_ptr<const MemoryCodec>, std::string>> codecs;
    std::vector<const BankManifest*> checked_manifests;
    for (uint64_t v : to_check) {
        VersionVerdict vv;
        vv.version = v;
        vv.manifest = manifest_name(v);
        vv.published = v == r.current_version;
        const auto it = manifests.find(v);
        const BankManifest* m = it != manifests.end() && it->second.manifest ? &*it->second.manifest : nullptr;
        if (!m) {
            vv.problems.push_back(it != manifests.end() ? it->second.problem : vv.manifest + ": missing");
        } else {
            vv.records = m->count;
            auto& codec = codecs[{m->keys_codebook.sha256 + m->keys_codebook.file, m->values_codebook.sha256 + m->values_codebook.file}];
            if (!codec.first && codec.second.empty()) codec.first = load_codec(st, *m, r.bytes_read, codec.second);
            if (!codec.second.empty()) vv.problems.push_back(codec.second);
            for (const NamedBlob& nb : manifest_blobs(*m)) {
                std::optional<SegmentLayout> layout;
                std::string key = nb.blob.file + '\n' + nb.blob.sha256 + '\n' + std::to_string(nb.blob.bytes);
                if (nb.segment) {
                    layout = SegmentLayout{*nb.segment, m->record_bytes, m->model.spec, codec.first};
                    key += '\n' + std::to_string(nb.segment->first_id) + '\n' + std::to_string(nb.segment->count) + '\n' +
                           std::to_string(m->record_bytes) + '\n' + m->keys_codebook.sha256 + m->values_codebook.sha256;
                }
                auto [pos, fresh] = blob_index.emplace(key, r.blobs.size());
                if (fresh) {
                    VerifiedBlob b;
                    b.kind = nb.kind;
                    b.check.blob = nb.blob;
                    r.blobs.push_back(std::move(b));
                    jobs.push_back({pos->second, std::move(layout)});
                }
                if (r.blobs[pos->second].versions.empty() || r.blobs[pos->second].versions.back() != v)
                    r.blobs[pos->second].versions.push_back(v);
                vv.blobs.push_back(pos->second);
            }
        }
        checked_manifests.push_back(m);
        r.versions.push_back(std::move(vv));
    }

    run_jobs(o, jobs, r);
    for (const VerifiedBlob& b : r.blobs) r.bytes_read += b.check.bytes_read;
    for (size_t i = 0; i < r.versions.size(); ++i)
        if (checked_manifests[i]) tally(*checked_manifests[i], r, o.max_listed_bad_records, r.versions[i]);

    for (const std::string& n : names)
        if (!named.count(n)) r.garbage.push_back(n);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return r;
}

}  // namespace mnemo::kb
