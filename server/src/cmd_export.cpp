// `mnemo-kb export BANK -o FOLDER`: the bank's current version as a compressed memory folder
// (mnemo/memory/memory_folder.hpp) — the same records, codebooks, retrieval vectors and reference
// tokens — for `mnemo run --memories FOLDER`: the in-process twin of what `mnemo-kb serve` serves,
// which is how the tests and benchmarks compare the remote path with the local one.
#include <cstdio>
#include <string>

#include "app/args.hpp"
#include "bank/bank.hpp"
#include "commands.hpp"
#include "store_cli.hpp"
#include "mnemo/memory/memory_folder.hpp"

namespace mnemo::kb {

int cmd_export(int argc, char** argv) {
    std::string bank_dir, out;
    bool force = false;
    app::ArgParser p("export", "mnemo-kb export BANK -o FOLDER [--force]",
                     "Write the current version of BANK as a compressed memory folder.");
    p.string_opt("-o,--out", "FOLDER", "the memory folder to write (required)", &out)
        .flag("--force", "replace FOLDER if it exists (once the new one is complete)", &force);
    // BANK comes first, right after 'export'.
    StoreCli store;
    store.add_to(p);
    int first = 2;
    if (first < argc && argv[first][0] != '-') bank_dir = argv[first++];
    if (!p.parse(argc, argv, first)) return 0;
    if (!store.store.empty()) {
        if (!bank_dir.empty()) throw app::UsageError("give BANK or --store, not both");
        bank_dir = store.store;
    }
    if (bank_dir.empty()) throw app::UsageError("missing BANK");
    if (out.empty()) throw app::UsageError("missing -o/--out FOLDER");

    const auto bank = Bank::open(open_bank_storage(bank_dir, store.options, false));
    const MemorySpec& spec = bank->model().spec;
    // The live records only, renumbered 0.. in their order (as `compact` would): a memory folder
    // has no retired records, and ranks as the bank does.
    std::vector<WrittenMemory> memories;
    std::vector<MemoryReference> refs;
    for (uint32_t id = 0; id < bank->count(); ++id) {
        if (bank->retired(id)) continue;
        const std::string rec = bank->record(id);
        WrittenMemory w;
        w.memory = *decode_memory_record(reinterpret_cast<const uint8_t*>(rec.data()), rec.size(), id, spec, &bank->codec(),
                                         "bank '" + bank_dir + "': record " + std::to_string(id));
        w.memory.id = static_cast<uint32_t>(memories.size());
        const float* v = bank->vector(id);
        w.vector.assign(v, v + spec.retrieval_dim);
        memories.push_back(std::move(w));
        const BankReference& r = bank->reference(id);
        refs.push_back({r.tokens, r.text, r.doc_id, r.title, r.source, r.title_tokens});
    }
    write_memory_folder(out, bank->model(), memories, refs, force, &bank->codec());
    std::fprintf(stderr, "export: bank '%s' version %llu (%llu memories) -> %s\n", bank_dir.c_str(),
                 static_cast<unsigned long long>(bank->version()), static_cast<unsigned long long>(memories.size()), out.c_str());
    return 0;
}

}  // namespace mnemo::kb
