// Reading whole files (mnemo/io/file_read.hpp): only regular files, never a blocking open, and a
// size cap checked before anything is buffered. A FIFO must be refused at once
// (fixtures/fifo.hpp turns a blocking call into a failure, not a hang).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "fixtures/error_checks.hpp"
#include "fixtures/fifo.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/file_read.hpp"

namespace fs = std::filesystem;
using mnemo::test::error_without_blocking;
using mnemo::test::required_error;

namespace {

class FileRead : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("mnemo-file-read-" + std::to_string(::getpid()) + "-" +
                                            ::testing::UnitTest::GetInstance()->current_test_info()->name());
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string write(const std::string& name, const std::string& bytes) const {
        const std::string p = (dir_ / name).string();
        std::ofstream(p, std::ios::binary) << bytes;
        return p;
    }
    std::string fifo(const std::string& name) const {
        const std::string p = (dir_ / name).string();
        mnemo::test::make_fifo(p);
        return p;
    }

    fs::path dir_;
};

}  // namespace

TEST_F(FileRead, ReadsARegularFileWhole) {
    std::string bytes(200000, 'a');
    bytes[12345] = '\0';  // binary content survives
    EXPECT_EQ(mnemo::read_file_capped(write("f.bin", bytes), bytes.size()), bytes);
    EXPECT_EQ(mnemo::read_file_capped(write("empty", ""), 0), "");
}

TEST_F(FileRead, FollowsASymlinkToARegularFile) {
    const std::string target = write("target.json", "{}");
    const std::string link = (dir_ / "link.json").string();
    fs::create_symlink(target, link);
    EXPECT_EQ(mnemo::read_file_capped(link, 16), "{}");
    const mnemo::OpenedFile f = mnemo::open_regular_file(link);
    EXPECT_EQ(f.size, 2u);
    ::close(f.fd);
}

TEST_F(FileRead, RefusesAFifoWithoutBlocking) {
    const std::string p = fifo("model.safetensors");
    const std::string e = error_without_blocking(p, [&] { mnemo::read_file_capped(p, 1 << 20, "config"); });
    EXPECT_MENTIONS(e, p);
    EXPECT_MENTIONS(e, "is a FIFO, expected a regular file");
    const std::string o = error_without_blocking(p, [&] { ::close(mnemo::open_regular_file(p).fd); });
    EXPECT_MENTIONS(o, "is a FIFO");
    // A symlink to a FIFO is the FIFO.
    const std::string link = (dir_ / "config.json").string();
    fs::create_symlink(p, link);
    EXPECT_MENTIONS(error_without_blocking(link, [&] { mnemo::read_file_capped(link, 1 << 20); }), "is a FIFO");
}

TEST_F(FileRead, RefusesDevicesAndDirectories) {
    // /dev/zero never ends: read whole, it would take all memory.
    const std::string zero = required_error("reading /dev/zero", [] { mnemo::read_file_capped("/dev/zero", 1 << 20); });
    EXPECT_MENTIONS(zero, "/dev/zero: is a character device, expected a regular file");
    const std::string d = required_error("reading a folder", [&] { mnemo::read_file_capped(dir_.string(), 1 << 20); });
    EXPECT_MENTIONS(d, dir_.string() + ": is a directory, expected a regular file");
    EXPECT_MENTIONS(required_error("opening a folder", [&] { mnemo::open_regular_file(dir_.string()); }), "is a directory");
}

TEST_F(FileRead, NamesTheFileAndTheReasonWhenItCannotBeOpened) {
    const std::string missing = (dir_ / "nope.json").string();
    const std::string e = required_error("reading a missing file", [&] { mnemo::read_file_capped(missing, 10); });
    EXPECT_MENTIONS(e, missing + ": cannot open file: No such file or directory");
}

TEST_F(FileRead, EnforcesTheCapBeforeReading) {
    const std::string p = write("token", std::string(1000, 'x'));
    EXPECT_EQ(mnemo::read_file_capped(p, 1000).size(), 1000u);  // exactly the cap is allowed
    const std::string e = required_error("reading past the cap", [&] { mnemo::read_file_capped(p, 999, "access token file"); });
    EXPECT_MENTIONS(e, p + ": access token file is 1000 bytes, more than the 999 bytes it may have");
    const std::string big = write("big", std::string(3 << 20, 'y'));
    EXPECT_MENTIONS(required_error("reading 3 MiB", [&] { mnemo::read_file_capped(big, 1 << 20, "config"); }),
                    "config is 3.0 MiB, more than the 1.0 MiB it may have");
}

TEST_F(FileRead, CapsAFileLongerThanItsSizeSays) {
    // /proc files report size 0 and still have content: they are read to the end, and the cap
    // holds while reading (the same path as a file that grows while it is read).
    const std::string status = mnemo::read_file_capped("/proc/self/status", 1 << 20);
    EXPECT_NE(status.find("Name:"), std::string::npos);
    const std::string e = required_error("reading past the cap", [] { mnemo::read_file_capped("/proc/self/status", 16, "status"); });
    EXPECT_MENTIONS(e, "/proc/self/status: status grew past the 16 bytes it may have");
}

TEST_F(FileRead, OpenedDescriptorBlocksAndClosesOnExec) {
    const mnemo::OpenedFile f = mnemo::open_regular_file(write("x", "abc"));
    ASSERT_GE(f.fd, 0);
    EXPECT_EQ(f.size, 3u);
    EXPECT_EQ(::fcntl(f.fd, F_GETFL) & O_NONBLOCK, 0) << "the O_NONBLOCK used to open must be cleared again";
    EXPECT_NE(::fcntl(f.fd, F_GETFD) & FD_CLOEXEC, 0);
    ::close(f.fd);
}
