// Crash safety of `mnemo-kb build`, `add`, `delete` and `compact` (server/src/bank/
// bank_version_writer.cpp): the program is killed with SIGKILL at random moments of its run; the
// bank must then open as the previous version (or, for a first build, not at all: no CURRENT),
// every live record's CRC good, and running the same command again must finish the job (resuming
// from the checkpoints it finds). Every stopping point, one by one: test_kb_bank_correct_crash.cpp.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "bank/bank.hpp"
#include "mnemo/error.hpp"
#include "model_test_util.hpp"
#include "process_util.hpp"

namespace fs = std::filesystem;
using namespace mnemo;

namespace {

// argv for bin/mnemo-kb (no shell, so SIGKILL reaches the program itself).
std::vector<std::string> kb_args(const std::vector<std::string>& rest) {
    std::vector<std::string> a = {std::string(MNEMO_BUILD_BIN) + "/mnemo-kb"};
    a.insert(a.end(), rest.begin(), rest.end());
    if (rest.front() != "build" && rest.front() != "add") return a;  // delete, compact: no model
    for (const char* s : {"-m", "", "--threads", "1", "--batch", "8"})
        a.emplace_back(std::string(s).empty() ? test::model_dir("memory3-tiny-bpe") : s);
    if (rest.front() == "build")  // add reuses the bank's codec
        for (const char* s : {"--factory", "OPQ4_16,Residual2x6,PQ4x5", "--opq-iterations", "3", "--kmeans-iterations", "8"}) a.emplace_back(s);
    return a;
}

pid_t spawn(const std::vector<std::string>& args) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        std::vector<char*> argv;
        for (const std::string& s : args) argv.push_back(const_cast<char*>(s.c_str()));
        argv.push_back(nullptr);
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, 1);
        ::dup2(null, 2);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    return pid;
}

// Runs to the end (bounded); returns the exit code and the seconds it took.
std::pair<int, double> run(const std::vector<std::string>& args) {
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t pid = spawn(args);
    int status = 0;
    for (int i = 0; i < 6000; ++i) {  // 60 s at most
        if (::waitpid(pid, &status, WNOHANG) == pid)
            return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()};
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    return {124, 60};
}

// Starts the program and kills it after `delay` (if it is still running).
void run_and_kill(const std::vector<std::string>& args, std::chrono::microseconds delay) {
    const pid_t pid = spawn(args);
    std::this_thread::sleep_for(delay);
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
}

void write_corpus(const fs::path& dir, int docs, unsigned seed) {
    static const char* words[] = {"north", "south", "lamp", "table", "seed", "grain", "wheel", "tower", "glass", "iron"};
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> word(0, 9), len(6, 14);
    fs::create_directories(dir);
    for (int d = 0; d < docs; ++d) {
        std::ofstream out(dir / ("d" + std::to_string(d) + ".txt"));
        for (int p = 0; p < 6; ++p) {
            for (int w = len(rng); w > 0; --w) out << words[word(rng)] << (w > 1 ? " " : ".\n\n");
        }
    }
}

// The bank is whole: either no version (`none_ok`) or one of `versions`, every record readable.
uint64_t check_whole(const fs::path& bank, bool none_ok, const std::vector<uint64_t>& versions) {
    auto st = kb::open_folder_storage(bank.string(), true);
    if (kb::Bank::current_version(*st) == 0) {
        EXPECT_TRUE(none_ok) << "CURRENT vanished";
        return 0;
    }
    std::shared_ptr<const kb::Bank> b;
    try {
        b = kb::Bank::open(st);
    } catch (const std::exception& e) {
        ADD_FAILURE() << "the bank does not open after a kill: " << e.what();
        return 0;
    }
    EXPECT_NE(std::find(versions.begin(), versions.end(), b->version()), versions.end()) << "version " << b->version();
    for (uint32_t i = 0; i < b->count(); ++i)
        if (!b->retired(i)) {
            EXPECT_NO_THROW(b->record(i)) << "record " << i;
        }
    return b->version();
}

TEST(KbBankCrash, KilledBuildAndAddLeaveTheBankWholeAndResume) {
    const fs::path root = fs::temp_directory_path() / ("mnemo-kb-crash-" + std::to_string(::getpid()));
    fs::remove_all(root);
    write_corpus(root / "c1", 10, 11);
    write_corpus(root / "c2", 4, 12);

    // A full build, timed: the kills fall inside runs of about this length.
    const auto [code, seconds] = run(kb_args({"build", (root / "c1").string(), "-o", (root / "ref").string()}));
    ASSERT_EQ(code, 0);
    std::mt19937 rng(5);
    std::uniform_int_distribution<int64_t> when(0, static_cast<int64_t>(seconds * 1e6));

    // First builds: killed, then run again to the end.
    for (int i = 0; i < 4; ++i) {
        const fs::path bank = root / ("b" + std::to_string(i));
        const auto args = kb_args({"build", (root / "c1").string(), "-o", bank.string()});
        run_and_kill(args, std::chrono::microseconds(when(rng)));
        const uint64_t v = check_whole(bank, true, {1});
        std::printf("build killed after %s\n", v ? "publishing" : "starting, before publishing");
        if (v != 0) continue;  // killed after publishing (its checkpoints may remain: garbage the next build removes)
        EXPECT_EQ(run(args).first, 0) << "the re-run after a kill";
        EXPECT_EQ(check_whole(bank, false, {1}), 1u);
        for (const auto& e : fs::directory_iterator(bank))
            EXPECT_NE(e.path().filename().string().rfind("staging-", 0), 0u) << "a finished build leaves no checkpoint";
    }
    // Adds to a copy of the reference bank: killed, then (if not yet published) run again.
    for (int i = 0; i < 4; ++i) {
        const fs::path bank = root / ("a" + std::to_string(i));
        fs::copy(root / "ref", bank, fs::copy_options::recursive);
        const auto args = kb_args({"add", bank.string(), (root / "c2").string()});
        run_and_kill(args, std::chrono::microseconds(when(rng) / 2));
        const uint64_t v = check_whole(bank, false, {1, 2});
        std::printf("add killed %s\n", v == 1 ? "before publishing" : "after publishing");
        if (v == 1) {
            EXPECT_EQ(run(args).first, 0) << "the re-run after a kill";
        }
        EXPECT_EQ(check_whole(bank, false, {2}), 2u);
    }
    // A replacing add (c3's d0.txt replaces c1's), then delete and compact, each killed at a
    // random moment of its run (timed first), then run again if it had not published.
    write_corpus(root / "c3", 1, 13);
    const fs::path timed = root / "timed";
    fs::copy(root / "ref", timed, fs::copy_options::recursive);
    ASSERT_EQ(run(kb_args({"add", timed.string(), (root / "c3").string()})).first, 0);
    const double delete_s = run(kb_args({"delete", timed.string(), "d1.txt"})).second;
    const double compact_s = run(kb_args({"compact", timed.string()})).second;
    ASSERT_EQ(check_whole(timed, false, {4}), 4u);
    for (int i = 0; i < 6; ++i) {
        const fs::path bank = root / ("e" + std::to_string(i));
        fs::copy(root / "ref", bank, fs::copy_options::recursive);
        ASSERT_EQ(run(kb_args({"add", bank.string(), (root / "c3").string()})).first, 0);
        for (const auto& [args, seconds] : {std::make_pair(kb_args({"delete", bank.string(), "d1.txt"}), delete_s),
                                            std::make_pair(kb_args({"compact", bank.string()}), compact_s)}) {
            const uint64_t was = check_whole(bank, false, {2, 3});
            // Most of a short run is starting up and opening the bank; its writes come at the end.
            std::uniform_int_distribution<int64_t> at(static_cast<int64_t>(seconds * 0.3e6), static_cast<int64_t>(seconds * 1.1e6));
            run_and_kill(args, std::chrono::microseconds(at(rng)));
            const uint64_t v = check_whole(bank, false, {was, was + 1});
            std::printf("%s killed %s\n", args[1].c_str(), v == was ? "before publishing" : "after publishing");
            if (v == was) {
                EXPECT_EQ(run(args).first, 0) << "the re-run after a kill";
            }
            EXPECT_EQ(check_whole(bank, false, {was + 1}), was + 1);
        }
        const auto b = kb::Bank::open(kb::open_folder_storage(bank.string(), false));
        EXPECT_EQ(b->retired_count(), 0u) << "compacted";
        EXPECT_EQ(b->documents().find("d1.txt"), nullptr);
        EXPECT_EQ(b->documents().find("d0.txt")->version, 2u);
    }
    fs::remove_all(root);
}

}  // namespace
