// mnemo-bench-kb-store: how fast a bank's store writes and reads records (docs/kb-scale.md takes
// its figures from here). Against any location a bank can live in (a folder, rados://POOL/NS):
//   write: segments of --segment-records records of --record-bytes, written as blobs (what
//          `build` does per segment), records/s and MB/s;
//   read:  --clients threads, each repeating for --seconds: pick --batch random records across
//          the segments and read them together (BlobReader::read_ranges, what a retrieval's
//          Fetch does), latency per batch p50/p99, records/s.
// The blobs it wrote are removed at the end (its namespace or folder should be a scratch one).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "app/args.hpp"
#include "app/json_writer.hpp"
#include "bank/store_location.hpp"
#include "mnemo/error.hpp"

using Clock = std::chrono::steady_clock;

namespace {

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size() - 1) + 0.5))];
}

int run(int argc, char** argv) {
    std::string location;
    mnemo::kb::StoreOptions store;
    int32_t segments = 4, segment_records = 16384, record_bytes = 2704, clients = 4, batch = 15, seconds = 10;
    bool json = false;
    mnemo::app::ArgParser p("mnemo-bench-kb-store", "mnemo-bench-kb-store --store LOCATION [options]",
                            "Write and read bank records through a store (folder or rados://POOL/NS) and report the throughput.");
    p.string_opt("--store", "LOCATION", "a scratch folder or rados://POOL/NAMESPACE (everything written is removed at the end)", &location)
        .string_opt("--ceph-conf", "FILE", "rados://: the Ceph config", &store.ceph.conf)
        .string_opt("--ceph-keyring", "FILE", "rados://: the keyring", &store.ceph.keyring)
        .string_opt("--ceph-user", "ID", "rados://: the cephx user", &store.ceph.user)
        .int_opt("--segments", "N", "segments to write (default 4)", &segments, 1, 100000)
        .int_opt("--segment-records", "N", "records per segment (default 16384)", &segment_records, 1, 1 << 24)
        .int_opt("--record-bytes", "B", "bytes per record (default 2704: the default model's compressed record)", &record_bytes, 16, 1 << 24)
        .int_opt("--clients", "N", "reading threads (default 4)", &clients, 1, 256)
        .int_opt("--batch", "K", "records per read batch (default 15: a 64-token chunk's memories)", &batch, 1, 4096)
        .int_opt("--seconds", "S", "how long to read (default 10)", &seconds, 1, 3600)
        .flag("--json", "one JSON object on stdout", &json);
    if (!p.parse(argc, argv, 1)) return 0;
    if (location.empty()) throw mnemo::app::UsageError("missing --store LOCATION");
    auto st = mnemo::kb::open_bank_storage(location, store, true);

    // Write: each segment one blob, as `build` writes them.
    std::vector<std::string> names;
    std::mt19937_64 rng(42);
    std::string blob(static_cast<size_t>(segment_records) * static_cast<size_t>(record_bytes), '\0');
    for (char& c : blob) c = static_cast<char>(rng());
    const auto w0 = Clock::now();
    for (int32_t s = 0; s < segments; ++s) {
        names.push_back("bench-seg-" + std::to_string(s));
        if (st->exists(names.back())) st->remove_blob(names.back());
        st->write_blob(names.back(), blob);
    }
    const double write_s = seconds_since(w0);
    const double records = static_cast<double>(segments) * segment_records;

    // Read: random batches across every segment, from several threads.
    std::vector<std::unique_ptr<mnemo::kb::BlobReader>> readers;
    for (const std::string& n : names) readers.push_back(st->open_blob(n));
    std::vector<std::vector<double>> lat(static_cast<size_t>(clients));
    std::atomic<uint64_t> read_records{0};
    std::vector<std::thread> threads;
    const auto r0 = Clock::now();
    for (int32_t c = 0; c < clients; ++c)
        threads.emplace_back([&, c] {
            std::mt19937_64 r(1000 + static_cast<uint64_t>(c));
            std::string buf(static_cast<size_t>(batch) * static_cast<size_t>(record_bytes), '\0');
            while (seconds_since(r0) < seconds) {
                // A batch's records, grouped by segment (one read_ranges per segment touched).
                std::vector<std::vector<mnemo::kb::BlobReader::Range>> by_seg(readers.size());
                for (int32_t i = 0; i < batch; ++i) {
                    const size_t s = r() % readers.size();
                    const uint64_t id = r() % static_cast<uint64_t>(segment_records);
                    by_seg[s].push_back({id * static_cast<uint64_t>(record_bytes), buf.data() + static_cast<size_t>(i) * record_bytes,
                                         static_cast<size_t>(record_bytes)});
                }
                const auto t = Clock::now();
                std::vector<std::thread> per_seg;  // segments in parallel too, as a server's Fetch would
                for (size_t s = 0; s < by_seg.size(); ++s)
                    if (!by_seg[s].empty()) per_seg.emplace_back([&, s] { readers[s]->read_ranges(by_seg[s]); });
                for (std::thread& th : per_seg) th.join();
                lat[static_cast<size_t>(c)].push_back(seconds_since(t) * 1000);
                read_records += static_cast<uint64_t>(batch);
            }
        });
    for (std::thread& t : threads) t.join();
    const double read_s = seconds_since(r0);
    std::vector<double> all;
    for (const auto& l : lat) all.insert(all.end(), l.begin(), l.end());
    readers.clear();
    for (const std::string& n : names) st->remove_blob(n);

    const double mb = records * record_bytes / 1e6;
    if (json) {
        mnemo::app::JsonWriter j;
        j.begin_object()
            .key("store").value(st->describe())
            .key("records_written").value(static_cast<uint64_t>(records))
            .key("record_bytes").value(static_cast<int64_t>(record_bytes))
            .key("write_records_per_s").value(records / write_s)
            .key("write_mb_per_s").value(mb / write_s)
            .key("read_clients").value(static_cast<int64_t>(clients))
            .key("read_batch").value(static_cast<int64_t>(batch))
            .key("read_batches").value(static_cast<uint64_t>(all.size()))
            .key("read_records_per_s").value(static_cast<double>(read_records.load()) / read_s)
            .key("batch_ms_p50").value(percentile(all, 0.5))
            .key("batch_ms_p99").value(percentile(all, 0.99))
            .end_object();
        std::printf("%s\n", j.str().c_str());
    } else {
        std::printf("%s\n", st->describe().c_str());
        std::printf("  write: %.0f records (%d B) in %.2f s: %.0f records/s, %.1f MB/s\n", records, record_bytes, write_s, records / write_s, mb / write_s);
        std::printf("  read:  %d clients x batches of %d for %.1f s: %.0f records/s, batch p50 %.2f ms, p99 %.2f ms (%zu batches)\n", clients,
                    batch, read_s, static_cast<double>(read_records.load()) / read_s, percentile(all, 0.5), percentile(all, 0.99), all.size());
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const mnemo::app::UsageError& e) {
        std::fprintf(stderr, "mnemo-bench-kb-store: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mnemo-bench-kb-store: %s\n", e.what());
        return 1;
    }
}
