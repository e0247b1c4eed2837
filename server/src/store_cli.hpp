// The options every mnemo-kb command that opens a bank shares: `--store LOCATION` (the BANK
// argument written as an option) and how to reach a Ceph cluster for rados:// locations
// (bank/store_location.hpp, docs/kb-storage.md).
#pragma once

#include <string>
#include <vector>

#include "app/args.hpp"
#include "bank/store_location.hpp"

namespace mnemo::kb {

struct StoreCli {
    std::string store;  // --store: the bank's location, in place of the BANK argument
    StoreOptions options;

    void add_to(app::ArgParser& p) {
        p.string_opt("--store", "LOCATION", "the bank: a folder, or rados://POOL[/NAMESPACE] for a bank on a Ceph RADOS pool (instead of the BANK argument)",
                     &store);
        p.string_opt("--ceph-conf", "FILE", "rados://: the Ceph config (default: $CEPH_CONF, else /etc/ceph/ceph.conf)", &options.ceph.conf);
        p.string_opt("--ceph-keyring", "FILE", "rados://: the keyring holding the user's key (default: the config's)", &options.ceph.keyring);
        p.string_opt("--ceph-user", "ID", "rados://: the cephx user, without 'client.' (default: admin)", &options.ceph.user);
    }

    // `--store` given: it goes in front of the positionals, where BANK would have been.
    void insert_bank(std::vector<std::string>& positionals) const {
        if (!store.empty()) positionals.insert(positionals.begin(), store);
    }

    // What the commands taking `BANK [more...] [options]` do: these options added to `p`, the
    // leading positionals collected, the rest parsed, `--store` put where BANK goes. False when
    // --help was given (printed already).
    bool parse(app::ArgParser& p, int argc, char** argv, std::vector<std::string>& positionals) {
        add_to(p);
        int first = 2;
        while (first < argc && argv[first][0] != '-') positionals.emplace_back(argv[first++]);
        if (!p.parse(argc, argv, first)) return false;
        insert_bank(positionals);
        return true;
    }
};

}  // namespace mnemo::kb
