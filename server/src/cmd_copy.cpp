// `mnemo-kb copy FROM TO`: the published version of a bank, copied to another store — the way a
// bank built in a folder moves onto a Ceph RADOS pool (or back). Each blob the version's manifest
// names is read, checked against the manifest's SHA-256 and size, and written under the same
// name; the manifest follows, and CURRENT last, so TO has no bank until the copy is whole (a copy
// killed half-way leaves garbage the next writer of TO clears, never half a bank).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "app/args.hpp"
#include "app/json_writer.hpp"
#include "bank/bank_format.hpp"
#include "bank/bank_version_writer.hpp"
#include "bank/sha256_hex.hpp"
#include "commands.hpp"
#include "mnemo/error.hpp"
#include "store_cli.hpp"

namespace mnemo::kb {

int cmd_copy(int argc, char** argv) {
    bool json = false;
    app::ArgParser p("copy", "mnemo-kb copy FROM TO [--json] [--ceph-conf F --ceph-keyring F --ceph-user ID]",
                     "Copy the published version of the bank FROM to TO, where no bank is yet (each a folder or "
                     "rados://POOL[/NAMESPACE]); every blob is checked against its SHA-256 on the way.");
    p.flag("--json", "print the summary as one JSON object on stdout", &json);
    StoreCli store;
    std::vector<std::string> pos;
    if (!store.parse(p, argc, argv, pos)) return 0;
    if (pos.size() != 2) throw app::UsageError("copy takes FROM and TO");

    const auto t0 = std::chrono::steady_clock::now();
    const auto from = open_bank_storage(pos[0], store.options, false);
    const auto to = open_bank_storage(pos[1], store.options, true);
    const std::optional<std::string> pointer = from->read_blob(kCurrentPointer, kMaxPointerBytes);
    if (!pointer) throw Error(from->describe() + ": no bank (nothing published) to copy");
    const uint64_t version = parse_current_pointer(*pointer, from->describe() + ": " + kCurrentPointer);
    const std::string manifest_text = *from->read_blob(manifest_name(version), kMaxManifestBytes);
    const BankManifest m = manifest_from_json(manifest_text, from->describe() + ": " + manifest_name(version));

    const auto lock = to->lock_writer("mnemo-kb copy");
    if (to->exists(kCurrentPointer)) throw Error(to->describe() + ": already holds a bank; copy only into an empty place");
    uint64_t bytes = 0, blobs = 0;
    for (const NamedBlob& b : manifest_blobs(m)) {
        lock->renew();
        const std::string where = from->describe() + ": " + b.kind + " '" + b.blob.file + "'";
        const std::optional<std::string> data = from->read_blob(b.blob.file, b.blob.bytes);
        if (!data) throw Error(where + ": missing (the manifest names it)");
        if (data->size() != b.blob.bytes || sha256_hex(*data) != b.blob.sha256)
            throw Error(where + ": its bytes are not the ones the manifest names (run `mnemo-kb verify`); nothing published at the destination");
        if (to->exists(b.blob.file)) to->remove_blob(b.blob.file);  // garbage of an interrupted copy (TO holds no bank)
        to->write_blob(b.blob.file, *data);
        bytes += data->size();
        ++blobs;
        if (!json && ::isatty(2)) std::fprintf(stderr, "\rcopy: %llu blobs, %.1f MB", static_cast<unsigned long long>(blobs), static_cast<double>(bytes) / 1e6);
    }
    if (to->exists(manifest_name(version))) to->remove_blob(manifest_name(version));
    to->write_blob(manifest_name(version), manifest_text);
    to->publish_pointer(kCurrentPointer, *pointer, std::nullopt);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (json) {
        app::JsonWriter j;
        j.begin_object()
            .key("from").value(from->describe())
            .key("to").value(to->describe())
            .key("version").value(version)
            .key("blobs").value(blobs + 1)
            .key("bytes").value(bytes + manifest_text.size())
            .key("seconds").value(seconds)
            .end_object();
        std::printf("%s\n", j.str().c_str());
    } else {
        if (::isatty(2)) std::fprintf(stderr, "\n");
        std::printf("copied version %llu of %s to %s: %llu blobs, %.1f MB, %.2f s\n", static_cast<unsigned long long>(version),
                    from->describe().c_str(), to->describe().c_str(), static_cast<unsigned long long>(blobs + 1),
                    static_cast<double>(bytes + manifest_text.size()) / 1e6, seconds);
    }
    return 0;
}

}  // namespace mnemo::kb
