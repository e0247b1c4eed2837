// `mnemo-kb verify BANK [--all-versions] [--threads N] [--json]`: reads everything the published
// version (or every stored version) names and says what is damaged (bank/bank_verify.hpp;
// server/README.md, "Checking a bank"). Exit code 0: no damage; 1: damage found; 2: a usage error,
// or no bank to check (unreachable store, no CURRENT and no manifest).
#include <cstdio>
#include <string>
#include <thread>

#include "app/args.hpp"
#include "app/json_writer.hpp"
#include "bank/bank_verify.hpp"
#include "commands.hpp"
#include "mnemo/io/printable.hpp"
#include "store_cli.hpp"

namespace mnemo::kb {
namespace {

constexpr int kExitClean = 0, kExitDamaged = 1, kExitUnreachable = 2;

void write_json(const std::string& bank, const BankVerifyReport& r) {
    app::JsonWriter j;
    j.begin_object().key("bank").value(bank).key("storage").value(r.storage).key("ok").value(!r.damaged());
    j.key("current").begin_object().key("version").value(r.current_version).key("problems").array(r.current_problems).end_object();
    j.key("versions").begin_array();
    for (const VersionVerdict& v : r.versions) {
        j.begin_object()
            .key("version").value(v.version)
            .key("manifest").value(v.manifest)
            .key("published").value(v.published)
            .key("ok").value(v.ok())
            .key("problems").array(v.problems)
            .key("blobs").value(static_cast<uint64_t>(v.blobs.size()))
            .key("bad_blobs").value(v.bad_blobs)
            .key("records").value(v.records)
            .key("records_checked").value(v.records_checked)
            .key("retired").value(v.retired)
            .key("bad_records").value(v.bad_records)
            .key("bad_retired").value(v.bad_retired);
        j.key("first_bad_records").begin_array();
        for (const BadRecord& b : v.first_bad)
            j.begin_object().key("id").value(static_cast<uint64_t>(b.id)).key("segment").value(b.segment).key("reason").value(b.reason)
                .key("retired").value(b.retired).end_object();
        j.end_array().end_object();
    }
    j.end_array().key("blobs").begin_array();
    for (const VerifiedBlob& b : r.blobs) {
        j.begin_object()
            .key("file").value(b.check.blob.file)
            .key("kind").value(b.kind)
            .key("ok").value(b.ok())
            .key("bytes").value(b.check.blob.bytes)
            .key("bytes_read").value(b.check.bytes_read)
            .key("problems").array(b.check.problems)
            .key("versions").array(b.versions);
        if (b.kind == "segment") j.key("records_checked").value(b.check.records_checked).key("bad_records").value(b.check.bad_records());
        j.end_object();
    }
    j.end_array()
        .key("garbage").array(r.garbage)
        .key("notes").array(r.notes)
        .key("bad_blobs").value(r.bad_blobs())
        .key("bytes_read").value(r.bytes_read)
        .key("seconds").value(r.seconds)
        .key("mb_per_s").value(r.mb_per_second())
        .key("threads").value(static_cast<uint64_t>(r.threads))
        .end_object();
    std::printf("%s\n", j.str().c_str());
}

std::string list_of(const std::vector<std::string>& items, size_t max) {
    std::string s;
    for (size_t i = 0; i < items.size() && i < max; ++i) s += (i ? ", " : "") + printable(items[i], 200);
    if (items.size() > max) s += ", ... (" + std::to_string(items.size() - max) + " more)";
    return s;
}

void write_text(const std::string& bank, const BankVerifyReport& r) {
    std::printf("verify %s\n", printable(r.storage).c_str());
    if (r.current_problems.empty())
        std::printf("  OK   CURRENT -> version %llu\n", static_cast<unsigned long long>(r.current_version));
    for (const std::string& p : r.current_problems) std::printf("  BAD  CURRENT: %s\n", printable(p).c_str());
    for (const VerifiedBlob& b : r.blobs) {
        std::string what = std::to_string(b.check.blob.bytes) + " bytes";
        if (b.kind == "segment") what += ", " + std::to_string(b.check.records_checked) + " records checked";
        std::printf("  %s  %-15s %s (%s)", b.ok() ? "OK " : "BAD", b.kind.c_str(), printable(b.check.blob.file).c_str(), what.c_str());
        for (const std::string& p : b.check.problems) std::printf("; %s", printable(p).c_str());
        if (b.check.bad_records()) std::printf("; %llu bad records", static_cast<unsigned long long>(b.check.bad_records()));
        std::printf("\n");
    }
    for (const VersionVerdict& v : r.versions) {
        std::printf("version %llu%s: %s: %llu of %llu records checked (%llu retired, checked as well), %llu bad; %llu blobs, %llu bad\n",
                    static_cast<unsigned long long>(v.version), v.published ? " (published)" : "", v.ok() ? "OK" : "DAMAGED",
                    static_cast<unsigned long long>(v.records_checked), static_cast<unsigned long long>(v.records),
                    static_cast<unsigned long long>(v.retired), static_cast<unsigned long long>(v.bad_records),
                    static_cast<unsigned long long>(v.blobs.size()), static_cast<unsigned long long>(v.bad_blobs));
        for (const std::string& p : v.problems) std::printf("  problem: %s\n", printable(p).c_str());
        for (const BadRecord& b : v.first_bad)
            std::printf("  bad record %u in %s%s: %s\n", b.id, printable(b.segment).c_str(), b.retired ? " (retired)" : "",
                        printable(b.reason).c_str());
        if (v.bad_records > v.first_bad.size())
            std::printf("  ... %llu more bad records\n", static_cast<unsigned long long>(v.bad_records - v.first_bad.size()));
    }
    if (!r.garbage.empty())
        std::printf("note: %zu blobs no stored manifest names (leftovers of an interrupted write or build checkpoints; not damage, "
                    "verify removes nothing): %s\n",
                    r.garbage.size(), list_of(r.garbage, 20).c_str());
    for (const std::string& n : r.notes) std::printf("note: %s\n", printable(n).c_str());
    std::printf("read %.1f MB in %.2f s (%.0f MB/s, %u threads)\n", static_cast<double>(r.bytes_read) / 1e6, r.seconds, r.mb_per_second(),
                r.threads);
    std::printf("%s: %s\n", printable(bank).c_str(), r.damaged() ? "DAMAGE FOUND" : "OK, no damage found");
}

}  // namespace

int cmd_verify(int argc, char** argv) {
    bool json = false, all_versions = false;
    int32_t threads = static_cast<int32_t>(std::min(4u, std::max(1u, std::thread::hardware_concurrency())));
    app::ArgParser p("verify", "mnemo-kb verify BANK [--all-versions] [--threads N] [--json]",
                     "Read everything BANK's published version names and check it: CURRENT, the manifest, every "
                     "blob's size and SHA-256, every segment's header and every record's checksum (retired records "
                     "too). Blobs no stored manifest names are listed as a note. Exit code 0: no damage found, "
                     "1: damage found, 2: no bank to check. Reads only; changes nothing.");
    p.flag("--all-versions", "check every stored version, not only the published one (a blob they share is read once)", &all_versions)
        .int_opt("--threads", "N", "blobs read at once (default: up to 4)", &threads, 1, 256)
        .flag("--json", "print the report as one JSON object on stdout", &json);
    StoreCli store;
    std::vector<std::string> pos;
    if (!store.parse(p, argc, argv, pos)) return 0;
    if (pos.size() != 1) throw app::UsageError(pos.empty() ? "missing BANK (right after 'verify')" : "verify takes one BANK");
    const std::string bank = pos[0];

    BankVerifyOptions o;
    o.all_versions = all_versions;
    o.threads = static_cast<unsigned>(threads);
    // Nothing to check is not damage: the location or the store is wrong (exit code 2, not 1).
    auto unreachable = [&](const std::exception& e) {
        std::fprintf(stderr, "mnemo-kb verify: %s\n", printable(e.what()).c_str());
        if (json) {
            app::JsonWriter j;
            j.begin_object().key("bank").value(bank).key("ok").value(false).key("error").value(std::string(e.what())).end_object();
            std::printf("%s\n", j.str().c_str());
        }
        return kExitUnreachable;
    };
    try {
        o.storage = open_bank_storage(bank, store.options, false);
    } catch (const std::exception& e) {
        return unreachable(e);
    }
    BankVerifyReport r;
    try {
        r = verify_bank(o);
    } catch (const BankUnreachable& e) {
        return unreachable(e);
    }
    if (json)
        write_json(bank, r);
    else
        write_text(bank, r);
    return r.damaged() ? kExitDamaged : kExitClean;
}

}  // namespace mnemo::kb
