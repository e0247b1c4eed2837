// The BankStorage contract (server/src/bank/bank_storage.hpp, docs/kb-storage.md), checked the
// same way on every store: the local folder always, a Ceph RADOS pool when a cluster is given
// (MNEMO_TEST_CEPH_CONF, MNEMO_TEST_CEPH_KEYRING, MNEMO_TEST_CEPH_USER, MNEMO_TEST_CEPH_POOL; the
// script tests/kb/ceph/rados_store_tests.sh starts a one-machine cluster and sets them). Without
// one, the RADOS cases are skipped with the reason, never passed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "bank/bank.hpp"
#include "bank/bank_build.hpp"
#include "bank/bank_version_writer.hpp"
#include "bank/store_location.hpp"
#include "fixtures/kb_corrected_bank.hpp"
#include "mnemo/session/session.hpp"

namespace mnemo {
namespace {

namespace fs = std::filesystem;

const char* env(const char* name) {
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
}

// A fresh, empty store per test: a new folder, or a new RADOS namespace of the test pool.
struct StoreUnderTest {
    std::string location;
    kb::StoreOptions options;
    std::shared_ptr<kb::BankStorage> open(bool create = true) const { return kb::open_bank_storage(location, options, create); }
};

std::string unique_suffix() {
    static std::atomic<int> n{0};
    return std::to_string(::getpid()) + "-" + std::to_string(n++);
}

class KbStorageContract : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        if (GetParam() == "folder") {
            dir_ = fs::temp_directory_path() / ("mnemo-storage-contract-" + unique_suffix());
            fs::remove_all(dir_);
            store_.location = dir_.string();
            return;
        }
        if (!kb::rados_supported()) GTEST_SKIP() << "this build has no librados (MNEMO_KB_RADOS=OFF)";
        const char* conf = env("MNEMO_TEST_CEPH_CONF");
        if (!conf)
            GTEST_SKIP() << "no Ceph cluster: MNEMO_TEST_CEPH_CONF is unset (tests/kb/ceph/rados_store_tests.sh starts one and runs these)";
        store_.options.ceph.conf = conf;
        if (const char* k = env("MNEMO_TEST_CEPH_KEYRING")) store_.options.ceph.keyring = k;
        if (const char* u = env("MNEMO_TEST_CEPH_USER")) store_.options.ceph.user = u;
        const char* pool = env("MNEMO_TEST_CEPH_POOL");
        store_.location = std::string("rados://") + (pool ? pool : "mnemo") + "/contract-" + unique_suffix();
    }
    void TearDown() override {
        if (!dir_.empty()) fs::remove_all(dir_);
    }
    StoreUnderTest store_;
    fs::path dir_;
};

std::string pattern(size_t n, unsigned seed) {
    std::string s(n, '\0');
    uint32_t x = seed * 2654435761u + 1;
    for (char& c : s) {
        x = x * 1664525u + 1013904223u;
        c = static_cast<char>(x >> 24);
    }
    return s;
}

TEST_P(KbStorageContract, BlobsAreWrittenOnceAndReadWholeOrByRange) {
    auto st = store_.open();
    EXPECT_FALSE(st->read_blob("a").has_value());
    EXPECT_FALSE(st->exists("a"));
    st->write_blob("a", "hello");
    EXPECT_TRUE(st->exists("a"));
    EXPECT_EQ(*st->read_blob("a"), "hello");
    test::expect_error_with([&] { st->write_blob("a", "again"); }, {"'a'", "immutable"});
    test::expect_error_with([&] { st->read_blob("a", 4); }, {"'a'", "5 bytes"});
    for (const std::string bad : {"x/y", "..", ".", ""}) test::expect_error_with([&] { st->write_blob(bad, "z"); }, {"invalid blob name"});
    st->write_blob("empty", "");
    EXPECT_EQ(*st->read_blob("empty"), "");

    // A blob larger than RADOS's 4 MiB pieces: whole, by range across a piece boundary, and
    // several ranges at once.
    const std::string big = pattern((9u << 20) + 12345, 7);
    st->write_blob("big", big);
    EXPECT_EQ(*st->read_blob("big"), big);
    auto r = st->open_blob("big");
    EXPECT_EQ(r->size(), big.size());
    std::string part(1000, '\0');
    const uint64_t across = (4u << 20) - 300;
    r->read(across, part.data(), part.size());
    EXPECT_EQ(part, big.substr(across, part.size()));
    std::string a(64, '\0'), b(5000, '\0'), c(17, '\0');
    r->read_ranges({{0, a.data(), a.size()}, {(8u << 20) - 10, b.data(), b.size()}, {big.size() - 17, c.data(), c.size()}});
    EXPECT_EQ(a, big.substr(0, 64));
    EXPECT_EQ(b, big.substr((8u << 20) - 10, 5000));
    EXPECT_EQ(c, big.substr(big.size() - 17));
    test::expect_error_with([&] { r->read(big.size() - 2, part.data(), 3); }, {"past its end"});
    test::expect_error_with([&] { st->open_blob("missing"); }, {"'missing'"});

    EXPECT_EQ(st->list(), (std::vector<std::string>{"a", "big", "empty"}));
    st->remove_blob("big");
    st->remove_blob("never-written");  // removing what is not there is no error
    EXPECT_EQ(st->list(), (std::vector<std::string>{"a", "empty"}));
    EXPECT_FALSE(st->read_blob("big").has_value());
}

TEST_P(KbStorageContract, ThePointerIsSwappedOnlyFromWhatTheWriterRead) {
    auto st = store_.open();
    st->publish_pointer("CURRENT", "1\n", std::nullopt);
    EXPECT_THROW(st->publish_pointer("CURRENT", "2\n", std::nullopt), kb::PointerConflict);
    st->publish_pointer("CURRENT", "2\n", std::string("1\n"));
    EXPECT_THROW(st->publish_pointer("CURRENT", "3\n", std::string("1\n")), kb::PointerConflict);
    EXPECT_EQ(*st->read_blob("CURRENT"), "2\n");
}

TEST_P(KbStorageContract, OneWriterAtATime) {
    auto st = store_.open();
    auto other = store_.open(false);  // another connection, as a second machine would have
    {
        const auto held = st->lock_writer("writer one (test)");
        test::expect_error_with([&] { other->lock_writer("writer two"); }, {"another writer", "writer one (test)"});
        EXPECT_NO_THROW(held->renew());
    }
    EXPECT_NO_THROW(other->lock_writer("writer two"));
    // A VersionWriter holds the lock for its whole life.
    auto writer = std::make_unique<kb::VersionWriter>(*st);
    test::expect_error_with([&] { kb::VersionWriter second(*other); }, {"another writer"});
    writer.reset();
    EXPECT_NO_THROW(kb::VersionWriter third(*other));
    EXPECT_EQ(st->list(), std::vector<std::string>{});  // the lock is not a blob
}

// A whole bank through the store: built, opened, retrieved from and read back exactly as the
// same build in a local folder (the codec's training is deterministic with one thread).
TEST_P(KbStorageContract, ABankBuiltOnTheStoreServesWhatAFolderBankServes) {
    const fs::path root = fs::temp_directory_path() / ("mnemo-storage-bank-" + unique_suffix());
    fs::remove_all(root);
    std::string corpus;
    for (int d = 0; d < 24; ++d) corpus += test::kb_doc_line("d" + std::to_string(d), 100 + d);
    test::write_text(root / "corpus.jsonl", corpus);
    SessionOptions so;
    so.model_dir = test::model_dir("memory3-tiny-bpe");
    so.n_threads = 1;
    const auto session = Session::open(so);

    kb::BankBuildOptions local = test::kb_small_build(root / "local", (root / "corpus.jsonl").string());
    kb::build_bank(*session, local);
    kb::BankBuildOptions remote = test::kb_small_build(root / "unused", (root / "corpus.jsonl").string());
    remote.storage = store_.open();
    kb::build_bank(*session, remote);

    const auto a = kb::Bank::open(local.storage);
    const auto b = kb::Bank::open(store_.open(false));
    ASSERT_EQ(a->count(), b->count());
    ASSERT_EQ(a->segments(), b->segments());
    std::vector<uint32_t> every;
    for (uint32_t id = 0; id < a->count(); ++id) {
        EXPECT_EQ(a->record(id), b->record(id)) << "record " << id;
        EXPECT_EQ(a->reference(id).text, b->reference(id).text);
        every.push_back(a->count() - 1 - id);  // backwards, across every segment: one batched read
    }
    const std::vector<std::string> batched = b->records(every);
    ASSERT_EQ(batched.size(), every.size());
    for (size_t i = 0; i < every.size(); ++i) EXPECT_EQ(batched[i], a->record(every[i])) << "record " << every[i] << " read in a batch";
    test::expect_error_with([&] { b->records({0, static_cast<uint32_t>(b->count())}); }, {"no record"});
    for (uint32_t q = 0; q < a->count(); q += 5) {
        const std::vector<float> v(a->vector(q), a->vector(q) + a->model().spec.retrieval_dim);
        kb::BankQuery query;
        query.vector = &v;
        query.tokens = &a->reference(q).tokens;
        query.k = 8;
        const auto ha = a->retrieve(query), hb = b->retrieve(query);
        ASSERT_EQ(ha.size(), hb.size());
        for (size_t i = 0; i < ha.size(); ++i) {
            EXPECT_EQ(ha[i].id, hb[i].id);
            EXPECT_EQ(ha[i].score, hb[i].score);
        }
    }
    fs::remove_all(root);
}

INSTANTIATE_TEST_SUITE_P(Stores, KbStorageContract, ::testing::Values("folder", "rados"),
                         [](const ::testing::TestParamInfo<std::string>& i) { return i.param; });

TEST(KbStoreLocation, RadosLocationsAreParsedOrRefusedWithTheForm) {
    EXPECT_FALSE(kb::parse_rados_location("/srv/bank").has_value());
    EXPECT_FALSE(kb::parse_rados_location("rados").has_value());
    const auto r = kb::parse_rados_location("rados://mnemo/world");
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->pool, "mnemo");
    EXPECT_EQ(r->ns, "world");
    EXPECT_EQ(kb::parse_rados_location("rados://mnemo")->ns, "");
    for (const std::string bad : {"rados://", "rados:///ns", "rados://p/", "rados://p/a/b", "rados://p q/ns", "rados://p/n@s"})
        test::expect_error_with([&] { kb::parse_rados_location(bad); }, {"expected rados://POOL"});
}

TEST(KbStoreLocation, AnUnreachableClusterIsAnErrorNotAHang) {
    if (!kb::rados_supported()) GTEST_SKIP() << "this build has no librados (MNEMO_KB_RADOS=OFF)";
    // A config naming a monitor nobody listens on: refused within the connect timeout.
    const fs::path dir = fs::temp_directory_path() / ("mnemo-ceph-unreachable-" + unique_suffix());
    fs::create_directories(dir);
    test::write_text(dir / "ceph.conf", "[global]\nmon_host = 127.0.0.1:9\nauth_cluster_required = none\nauth_service_required = none\n"
                                        "auth_client_required = none\n");
    kb::StoreOptions o;
    o.ceph.conf = (dir / "ceph.conf").string();
    o.ceph.connect_timeout_seconds = 2;
    test::expect_error_with([&] { kb::open_bank_storage("rados://mnemo/x", o, false); }, {"RADOS pool 'mnemo'", "cannot connect"});
    o.ceph.conf = (dir / "missing.conf").string();
    test::expect_error_with([&] { kb::open_bank_storage("rados://mnemo/x", o, false); }, {"cannot read the Ceph config", "missing.conf"});
    fs::remove_all(dir);
}

}  // namespace
}  // namespace mnemo
