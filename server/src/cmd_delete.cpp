// `mnemo-kb delete BANK ID... [--id ID] [--json]`: a new version of BANK in which these documents
// are retired (bank/bank_delete.hpp). An id the bank does not hold is an error naming it, and
// nothing is published.
#include <cstdio>
#include <string>

#include "app/args.hpp"
#include "app/json_writer.hpp"
#include "bank/bank_delete.hpp"
#include "commands.hpp"
#include "store_cli.hpp"

namespace mnemo::kb {

int cmd_delete(int argc, char** argv) {
    std::vector<std::string> ids;
    bool json = false;
    app::ArgParser p("delete", "mnemo-kb delete BANK ID... [options]",
                     "Publish a new version of BANK without the documents ID... (a corpus file's path in its folder, or a "
                     "JSONL id, as build/add named them): their records are retired, no longer retrieved or served. "
                     "`mnemo-kb compact` then drops them from the segments.");
    p.list_opt("--id", "ID", "one more document id (for an id that starts with '-'); repeatable", &ids)
        .flag("--json", "print the summary as one JSON object on stdout", &json);
    StoreCli store;
    std::vector<std::string> pos;
    if (!store.parse(p, argc, argv, pos)) return 0;
    if (pos.empty()) throw app::UsageError("missing BANK (right after 'delete')");
    const std::string bank = pos[0];
    ids.insert(ids.begin(), pos.begin() + 1, pos.end());
    if (ids.empty()) throw app::UsageError("no document id to delete: give at least one ID after BANK");

    const BankDeleteReport r = delete_documents(open_bank_storage(bank, store.options, false), ids);
    std::fprintf(stderr, "mnemo-kb: published version %llu of '%s'\n", static_cast<unsigned long long>(r.version), bank.c_str());
    if (json) {
        app::JsonWriter j;
        j.begin_object()
            .key("bank").value(bank)
            .key("version").value(r.version)
            .key("documents").value(r.documents)
            .key("retired_records").value(r.retired_records)
            .key("live_records").value(r.live_records)
            .key("retired_total").value(r.retired_total)
            .key("bytes_written").value(r.bytes_written)
            .end_object();
        std::printf("%s\n", j.str().c_str());
    } else {
        std::printf("deleted from '%s': version %llu, %llu documents (%llu records retired); %llu records served, %llu retired in all "
                    "(`mnemo-kb compact` drops them)\n",
                    bank.c_str(), static_cast<unsigned long long>(r.version), static_cast<unsigned long long>(r.documents),
                    static_cast<unsigned long long>(r.retired_records), static_cast<unsigned long long>(r.live_records),
                    static_cast<unsigned long long>(r.retired_total));
    }
    return 0;
}

}  // namespace mnemo::kb
