// `mnemo-kb documents BANK [ID...] [--json]`: the live documents of BANK's published version, each
// with its version (the bank version that added its current text), its records and its title:
// what `delete` takes and what a replacing `add` changes. IDs given: only those, and one the bank
// does not hold is an error naming it.
#include <cstdio>
#include <string>

#include "app/args.hpp"
#include "app/json_writer.hpp"
#include "bank/bank.hpp"
#include "commands.hpp"
#include "store_cli.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::kb {

int cmd_documents(int argc, char** argv) {
    std::vector<std::string> ids;
    bool json = false;
    app::ArgParser p("documents", "mnemo-kb documents BANK [ID...] [--json]",
                     "List the documents of BANK's published version: id, version (the bank version that added its "
                     "current text), records and title. With IDs, only those.");
    p.list_opt("--id", "ID", "one more document id (for an id that starts with '-'); repeatable", &ids)
        .flag("--json", "one JSON object per document on stdout (JSON Lines)", &json);
    StoreCli store;
    std::vector<std::string> pos;
    if (!store.parse(p, argc, argv, pos)) return 0;
    if (pos.empty()) throw app::UsageError("missing BANK (right after 'documents')");
    const std::string dir = pos[0];
    ids.insert(ids.begin(), pos.begin() + 1, pos.end());

    const auto bank = Bank::open(open_bank_storage(dir, store.options, false));
    std::vector<const BankDocument*> shown;
    std::string missing;
    for (const std::string& id : ids) {
        if (const BankDocument* d = bank->documents().find(id)) shown.push_back(d);
        else missing += (missing.empty() ? "'" : ", '") + printable(id, 200) + "'";
    }
    if (!missing.empty())
        throw Error("bank '" + dir + "' version " + std::to_string(bank->version()) + " has no document " + missing);
    if (ids.empty())
        for (const BankDocument& d : bank->documents().all()) shown.push_back(&d);
    if (!json)
        std::printf("bank '%s' version %llu: %zu documents, %llu records served, %llu retired\n", dir.c_str(),
                    static_cast<unsigned long long>(bank->version()), bank->documents().all().size(),
                    static_cast<unsigned long long>(bank->count() - bank->retired_count()),
                    static_cast<unsigned long long>(bank->retired_count()));
    for (const BankDocument* d : shown) {
        const BankReference& ref = bank->reference(d->ids.front());
        if (json) {
            app::JsonWriter j;
            j.begin_object()
                .key("doc_id").value(d->doc_id)
                .key("version").value(d->version)
                .key("references").value(static_cast<uint64_t>(d->ids.size()))
                .key("first_id").value(static_cast<uint64_t>(d->ids.front()))
                .key("title").value(ref.title)
                .key("source").value(ref.source)
                .end_object();
            std::printf("%s\n", j.str().c_str());
        } else {
            std::printf("  %s  v%llu  %zu records  %s\n", printable(d->doc_id).c_str(), static_cast<unsigned long long>(d->version),
                        d->ids.size(), printable(ref.title).c_str());
        }
    }
    return 0;
}

}  // namespace mnemo::kb
