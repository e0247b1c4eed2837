// `mnemo-kb compact BANK [--json]`: a new version of BANK whose segments hold only live records
// (bank/bank_compact.hpp). Nothing retired: nothing is written, and it says so.
#include <chrono>
#include <cstdio>
#include <string>

#include "app/args.hpp"
#include "app/json_writer.hpp"
#include "bank/bank_compact.hpp"
#include "commands.hpp"
#include "store_cli.hpp"

namespace mnemo::kb {

int cmd_compact(int argc, char** argv) {
    bool json = false;
    app::ArgParser p("compact", "mnemo-kb compact BANK [--json]",
                     "Publish a new version of BANK whose segments no longer hold the records of replaced or deleted "
                     "documents (renumbered; every query ranks as before). The old version's files stay, so a server "
                     "that has it open keeps serving it until it reloads.");
    p.flag("--json", "print the summary as one JSON object on stdout", &json);
    StoreCli store;
    std::vector<std::string> pos;
    if (!store.parse(p, argc, argv, pos)) return 0;
    if (pos.size() != 1) throw app::UsageError(pos.empty() ? "missing BANK (right after 'compact')" : "compact takes one BANK");
    const std::string bank = pos[0];

    BankCompactOptions o;
    o.storage = open_bank_storage(bank, store.options, false);
    const auto t0 = std::chrono::steady_clock::now();
    const BankCompactReport r = compact_bank(o);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r.version) std::fprintf(stderr, "mnemo-kb: published version %llu of '%s'\n", static_cast<unsigned long long>(r.version), bank.c_str());
    if (json) {
        app::JsonWriter j;
        j.begin_object()
            .key("bank").value(bank)
            .key("from_version").value(r.from_version)
            .key("version").value(r.version)
            .key("records_before").value(r.records_before)
            .key("records_after").value(r.records_after)
            .key("retired_removed").value(r.retired_removed)
            .key("segments_kept").value(r.segments_kept)
            .key("segments_written").value(r.segments_written)
            .key("bytes_written").value(r.bytes_written)
            .key("seconds").value(seconds)
            .end_object();
        std::printf("%s\n", j.str().c_str());
    } else if (r.version == 0) {
        std::printf("'%s' version %llu has no retired records; nothing to compact (no version published)\n", bank.c_str(),
                    static_cast<unsigned long long>(r.from_version));
    } else {
        std::printf("compacted '%s': version %llu -> %llu, %llu records -> %llu (%llu retired dropped); %llu segments kept, %llu written, "
                    "%llu bytes, %.2f s\n",
                    bank.c_str(), static_cast<unsigned long long>(r.from_version), static_cast<unsigned long long>(r.version),
                    static_cast<unsigned long long>(r.records_before), static_cast<unsigned long long>(r.records_after),
                    static_cast<unsigned long long>(r.retired_removed), static_cast<unsigned long long>(r.segments_kept),
                    static_cast<unsigned long long>(r.segments_written), static_cast<unsigned long long>(r.bytes_written), seconds);
    }
    return 0;
}

}  // namespace mnemo::kb
