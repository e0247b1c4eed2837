// Whole files written atomically (mnemo/io/atomic_file.hpp), the one writer the CLI's reports,
// mnemo-kb's token and port files and mnemo-chat's conversations share: the content arrives
// whole, a new file gets the mode asked for, an existing one is replaced, no temporary file is
// left behind, and a path that is not a regular file (a folder, a FIFO, a symlink to one) is
// refused with its name and left as it was.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "mnemo/error.hpp"
#include "mnemo/io/atomic_file.hpp"

namespace fs = std::filesystem;

namespace {

class AtomicFile : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("mnemo-atomic-" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string path(const std::string& name) const { return (dir_ / name).string(); }
    static std::string read(const std::string& p) {
        std::ifstream in(p, std::ios::binary);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }
    size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), fs::directory_iterator())); }
    static std::string error_of(const std::string& p, const std::string& content) {
        try {
            mnemo::write_file_atomically(p, content);
        } catch (const mnemo::Error& e) {
            return e.what();
        }
        return "";
    }

    fs::path dir_;
};

}  // namespace

TEST_F(AtomicFile, WritesReplacesAndLeavesNoTemporaryFile) {
    const std::string p = path("report.json");
    mnemo::write_file_atomically(p, std::string("first\0with a NUL", 16), 0600);
    EXPECT_EQ(read(p), std::string("first\0with a NUL", 16));
    struct stat st {};
    ASSERT_EQ(::stat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << "a token file must not be readable by others";
    mnemo::write_file_atomically(p, "second");
    EXPECT_EQ(read(p), "second");
    mnemo::write_file_atomically(path("empty"), "");
    EXPECT_EQ(read(path("empty")), "");
    EXPECT_EQ(entries(), 2u) << "no PATH.tmp.PID left behind";
}

TEST_F(AtomicFile, RefusesWhatIsNotARegularFileAndLeavesItAsItWas) {
    const std::string fifo = path("fifo");
    ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
    const std::string link = path("link");
    fs::create_symlink(fifo, link);
    const std::string folder = path("folder");
    fs::create_directory(folder);
    for (const auto& [p, kind] : {std::pair{fifo, "a FIFO"}, std::pair{link, "a FIFO"}, std::pair{folder, "a directory"}}) {
        const std::string why = error_of(p, "x");
        EXPECT_EQ(why.rfind("cannot write " + p + ": ", 0), 0u) << why;
        EXPECT_NE(why.find(kind), std::string::npos) << why;
        EXPECT_NE(why.find("expected a regular file"), std::string::npos) << why;
    }
    EXPECT_TRUE(fs::is_fifo(fs::symlink_status(fifo)));
    EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
    EXPECT_TRUE(fs::is_directory(folder));
    EXPECT_EQ(entries(), 3u);
}

TEST_F(AtomicFile, AMissingFolderIsAnErrorNamingThePath) {
    const std::string p = path("no/such/folder/out.json");
    const std::string why = error_of(p, "x");
    EXPECT_EQ(why.rfind("cannot write " + p + ": ", 0), 0u) << why;
    EXPECT_FALSE(fs::exists(p));
}

// A link planted where the temporary file would go (the names are predictable: PATH.tmp.PID.N) must
// not redirect the write: the writer creates its temporary file exclusively and without following
// links, so the planted links' targets stay untouched and the target gets the content.
TEST_F(AtomicFile, LinksPlantedAtTheTemporaryNamesAreNotFollowed) {
    const std::string p = path("tokens");
    const std::string victim = path("victim");
    mnemo::write_file_atomically(victim, "untouched");
    const size_t before = entries();
    const std::string stem = p + ".tmp." + std::to_string(::getpid());
    fs::create_symlink(victim, stem);  // the name the writer used to take
    for (int n = 0; n < 16; ++n) fs::create_symlink(victim, stem + "." + std::to_string(n));
    for (int i = 0; i < 4; ++i) mnemo::write_file_atomically(p, "secret " + std::to_string(i), 0600);
    EXPECT_EQ(read(p), "secret 3");
    EXPECT_EQ(read(victim), "untouched");
    EXPECT_EQ(entries(), before + 17 + 1) << "the planted links stay, the target is added, no temporary file is left";
}

// The piecewise writer (GGUF conversion): pieces arrive in order, and a writer destroyed before
// commit() (an error while converting) leaves the old file and no temporary one.
TEST_F(AtomicFile, APiecewiseWriteLandsWholeOrNotAtAll) {
    const std::string p = path("model.gguf");
    {
        mnemo::AtomicFileWriter w(p);
        w.write("first ");
        w.write("second");
        EXPECT_FALSE(fs::exists(p)) << "visible before commit";
        w.commit();
    }
    EXPECT_EQ(read(p), "first second");
    {
        mnemo::AtomicFileWriter w(p);
        w.write("half of a new file");
    }  // no commit
    EXPECT_EQ(read(p), "first second");
    EXPECT_EQ(entries(), 1u);
}
