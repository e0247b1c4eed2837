// safetensors and Hugging Face checkpoint folders: write/read round trips, sharded folders, and
// every kind of broken file, each checked for a message that names the file and the tensor.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "fixtures/error_checks.hpp"
#include "fixtures/fifo.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/safetensors.hpp"
#include "mnemo/ops/dtype.hpp"

namespace fs = std::filesystem;
using mnemo::Checkpoint;
using mnemo::DType;
using mnemo::test::required_error;

namespace {

// A safetensors image from raw header text and a data section (no padding, as a careless writer
// might produce).
std::vector<uint8_t> make_image(const std::string& header, size_t data_bytes) {
    std::vector<uint8_t> out(8 + header.size() + data_bytes);
    for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i));
    std::memcpy(out.data() + 8, header.data(), header.size());
    for (size_t i = 0; i < data_bytes; ++i) out[8 + header.size() + i] = static_cast<uint8_t>(i);
    return out;
}

std::string header_error(const std::vector<uint8_t>& image, const std::string& source = "bad.safetensors") {
    return required_error("the header", [&] { mnemo::parse_safetensors_header(image.data(), image.size(), source); });
}

std::string header_error(const std::string& header, size_t data_bytes) {
    return header_error(make_image(header, data_bytes));
}

// Headers that must be rejected: the header text, the size of the data section after it, and what
// the message must mention.
struct BadHeader {
    std::string header;
    size_t data_bytes;
    std::string mentions;
};
void expect_header_errors(const std::vector<BadHeader>& cases) {
    for (const BadHeader& c : cases) EXPECT_MENTIONS(header_error(c.header, c.data_bytes), c.mentions) << c.header;
}

class SafetensorsFiles : public ::testing::Test {
protected:
    fs::path dir;

    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        dir = fs::temp_directory_path() /
              ("mnemo_st_" + std::string(info->name()) + "_" + std::to_string(::getpid()) + "_" +
               std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
        fs::create_directories(dir);
    }
    void TearDown() override { fs::remove_all(dir); }

    std::string path(const std::string& name) const { return (dir / name).string(); }

    void write_bytes(const std::string& name, const std::vector<uint8_t>& bytes) const {
        std::ofstream out(path(name), std::ios::binary);
        out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    }
    void write_text(const std::string& name, const std::string& text) const {
        std::ofstream(path(name)) << text;
    }

    std::string open_error() const {
        return required_error("Checkpoint::open", [&] { Checkpoint::open(dir.string()); });
    }
};

}  // namespace

TEST(DTypeNames, OurAndSafetensorsSpellings) {
    EXPECT_EQ(mnemo::dtype_from_name("f32"), DType::F32);
    EXPECT_EQ(mnemo::dtype_from_name("F32"), DType::F32);
    EXPECT_EQ(mnemo::dtype_from_name("f16"), DType::F16);
    EXPECT_EQ(mnemo::dtype_from_name("F16"), DType::F16);
    EXPECT_EQ(mnemo::dtype_from_name("bf16"), DType::BF16);
    EXPECT_EQ(mnemo::dtype_from_name("BF16"), DType::BF16);
    EXPECT_EQ(mnemo::dtype_from_name("i32"), DType::I32);
    EXPECT_EQ(mnemo::dtype_from_name("I32"), DType::I32);
    EXPECT_FALSE(mnemo::dtype_from_name("I8").has_value());
    EXPECT_FALSE(mnemo::dtype_from_name("").has_value());
    EXPECT_FALSE(mnemo::dtype_from_name("Bf16").has_value());
}

TEST_F(SafetensorsFiles, RoundTripAllDtypes) {
    const std::vector<float> f32 = {1.0f, -2.0f, 3.5f, 0.25f, 1e-3f, 6.0f};
    const std::vector<uint16_t> f16 = {mnemo::f32_to_f16(1.0f), mnemo::f32_to_f16(-0.5f), mnemo::f32_to_f16(2.0f),
                                       mnemo::f32_to_f16(65504.0f)};
    const std::vector<uint16_t> bf16 = {mnemo::f32_to_bf16(3.0f), mnemo::f32_to_bf16(-1.5f),
                                        mnemo::f32_to_bf16(1e10f), mnemo::f32_to_bf16(0.0f)};
    const std::vector<int32_t> i32 = {7, -8, 2147483647};
    const float scalar = 42.0f;
    const std::string file = path("model.safetensors");
    mnemo::write_safetensors(file,
                             {{"model.embed.weight", DType::F32, {2, 3}, f32.data()},
                              {"h.0.f16", DType::F16, {4}, f16.data()},
                              {"h.0.bf16", DType::BF16, {2, 1, 2}, bf16.data()},
                              {"ids", DType::I32, {3}, i32.data()},
                              {"scale", DType::F32, {}, &scalar},
                              {"empty", DType::F32, {0, 4}, nullptr}},
                             {{"format", "pt"}, {"note", "quote \" and é"}});

    // No temp file is left behind.
    size_t entries = 0;
    for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++entries;
    EXPECT_EQ(entries, 1u);

    const Checkpoint cp = Checkpoint::open(dir.string());
    ASSERT_EQ(cp.tensors().size(), 6u);
    ASSERT_EQ(cp.files().size(), 1u);
    EXPECT_EQ(cp.files()[0], file);
    EXPECT_EQ(cp.find("nope"), nullptr);

    const auto* w = cp.find("model.embed.weight");
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->dtype, DType::F32);
    EXPECT_EQ(w->shape, (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(w->nbytes, 24u);
    EXPECT_EQ(w->file, file);
    EXPECT_EQ(std::memcmp(w->data, f32.data(), 24), 0);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(w->data) % 8, 0u);  // the header is padded to 8 bytes

    const auto* h = cp.find("h.0.f16");
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->dtype, DType::F16);
    EXPECT_FLOAT_EQ(mnemo::load_as_f32(h->data, h->dtype, 3), 65504.0f);
    EXPECT_EQ(std::memcmp(h->data, f16.data(), 8), 0);

    const auto* b = cp.find("h.0.bf16");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(b->dtype, DType::BF16);
    EXPECT_EQ(b->shape, (std::vector<int64_t>{2, 1, 2}));
    EXPECT_FLOAT_EQ(mnemo::load_as_f32(b->data, b->dtype, 1), -1.5f);

    const auto* ids = cp.find("ids");
    ASSERT_NE(ids, nullptr);
    EXPECT_EQ(ids->dtype, DType::I32);
    EXPECT_EQ(static_cast<const int32_t*>(ids->data)[2], 2147483647);

    const auto* s = cp.find("scale");
    ASSERT_NE(s, nullptr);
    EXPECT_TRUE(s->shape.empty());
    EXPECT_FLOAT_EQ(*static_cast<const float*>(s->data), 42.0f);

    EXPECT_EQ(cp.find("empty")->nbytes, 0u);
    EXPECT_EQ(cp.total_bytes(), 24u + 8u + 8u + 12u + 4u);

    // Header layout: padded length, tensors in the given order with consecutive offsets.
    const mnemo::MappedFile map(file);
    const auto hdr = mnemo::parse_safetensors_header(map.data(), map.size(), file);
    EXPECT_EQ(hdr.header_len % 8, 0u);
    EXPECT_EQ(hdr.data_start, 8 + hdr.header_len);
    ASSERT_EQ(hdr.entries.size(), 6u);
    EXPECT_EQ(hdr.entries[0].name, "model.embed.weight");
    EXPECT_EQ(hdr.entries[5].name, "empty");
    uint64_t expect_begin = 0;
    for (const auto& e : hdr.entries) {
        EXPECT_EQ(e.begin, expect_begin) << e.name;
        expect_begin = e.end;
    }
    EXPECT_EQ(map.size(), hdr.data_start + expect_begin);
    EXPECT_EQ(hdr.metadata.at("format"), "pt");
    EXPECT_EQ(hdr.metadata.at("note"), "quote \" and é");
}

TEST_F(SafetensorsFiles, WriteRejectsBadTensorsAndLeavesNoFile) {
    const float x = 1.0f;
    try {
        mnemo::write_safetensors(path("a.safetensors"), {{"w", DType::F32, {1}, &x}, {"w", DType::F32, {1}, &x}});
        ADD_FAILURE() << "duplicate names must be rejected";
    } catch (const mnemo::Error& e) {
        EXPECT_MENTIONS(e.what(), "a.safetensors: tensor 'w': name appears twice");
    }
    EXPECT_THROW(mnemo::write_safetensors(path("a.safetensors"), {{"w", DType::F32, {-1}, &x}}), mnemo::Error);
    EXPECT_THROW(mnemo::write_safetensors(path("a.safetensors"), {{"w", DType::F32, {2}, nullptr}}), mnemo::Error);
    EXPECT_TRUE(fs::is_empty(dir));
    // A folder that does not exist: the temp file cannot be created, and the message says where.
    try {
        mnemo::write_safetensors(path("nodir/a.safetensors"), {{"w", DType::F32, {1}, &x}});
        ADD_FAILURE() << "writing into a missing folder must fail";
    } catch (const mnemo::Error& e) {
        EXPECT_MENTIONS(e.what(), "nodir/a.safetensors.tmp-");
    }
}

TEST_F(SafetensorsFiles, ShardedFolderViaIndex) {
    const std::vector<float> a = {1, 2, 3, 4};
    const std::vector<float> b = {5, 6};
    const std::vector<uint16_t> c = {mnemo::f32_to_bf16(7.0f)};
    mnemo::write_safetensors(path("model-00001-of-00002.safetensors"),
                             {{"a", DType::F32, {2, 2}, a.data()}, {"c", DType::BF16, {1}, c.data()}});
    mnemo::write_safetensors(path("model-00002-of-00002.safetensors"), {{"b", DType::F32, {2}, b.data()}});
    write_text("model.safetensors.index.json", R"({"metadata": {"total_size": 26}, "weight_map": {
        "a": "model-00001-of-00002.safetensors",
        "b": "model-00002-of-00002.safetensors",
        "c": "model-00001-of-00002.safetensors"}})");
    const Checkpoint cp = Checkpoint::open(dir.string());
    ASSERT_EQ(cp.files().size(), 2u);  // each shard opened once
    EXPECT_EQ(cp.tensors().size(), 3u);
    ASSERT_NE(cp.find("b"), nullptr);
    EXPECT_EQ(cp.find("b")->file, path("model-00002-of-00002.safetensors"));
    EXPECT_EQ(cp.find("a")->file, path("model-00001-of-00002.safetensors"));
    EXPECT_FLOAT_EQ(static_cast<const float*>(cp.find("b")->data)[1], 6.0f);
    EXPECT_FLOAT_EQ(mnemo::load_as_f32(cp.find("c")->data, DType::BF16, 0), 7.0f);
    EXPECT_EQ(cp.total_bytes(), 26u);
}

TEST_F(SafetensorsFiles, EmptyFolderIsReported) {
    EXPECT_MENTIONS(open_error(), "no model.safetensors or model.safetensors.index.json in " + dir.string());
}

TEST_F(SafetensorsFiles, EmptyAndTruncatedFiles) {
    write_bytes("model.safetensors", {});
    EXPECT_MENTIONS(open_error(), path("model.safetensors") + ": file is empty");
    write_bytes("model.safetensors", {1, 0, 0});
    EXPECT_MENTIONS(open_error(), path("model.safetensors") + ": file is 3 bytes, too short");
    // A complete header whose data section was cut off.
    auto image = make_image(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 16);
    image.erase(image.end() - 5, image.end());  // drop the last 5 data bytes
    write_bytes("model.safetensors", image);
    const std::string msg = open_error();
    EXPECT_MENTIONS(msg, path("model.safetensors") + ": tensor 'w': data_offsets [0, 16) run past the data "
                                                     "section (11 bytes)");
}

TEST(SafetensorsHeader, HeaderLengthPastEndOfFile) {
    auto image = make_image(R"({})", 0);
    image[0] = 200;  // claims 200 header bytes in a 10-byte file
    EXPECT_MENTIONS(header_error(image), "bad.safetensors: header length 200 runs past the end of the file (10 bytes)");
    image[0] = 0;
    image[7] = 0x80;  // a huge length, caught by the size limit before anything is read
    EXPECT_MENTIONS(header_error(image), "bad.safetensors: header length 9223372036854775808 exceeds the limit");
}

TEST(SafetensorsHeader, OffsetsOutOfRange) {
    expect_header_errors({
        {R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 8,
         "bad.safetensors: tensor 'w': data_offsets [4, 12) run past the data section (8 bytes)"},
        {R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[8,4]}})", 8,
         "tensor 'w': data_offsets [8, 4) begin after they end"},
        {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", 8,
         "tensor 'w': field 'data_offsets'[0]: expected a non-negative integer, found number -4"},
        {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,1e30]}})", 8,
         "tensor 'w': field 'data_offsets'[1]: expected a non-negative integer"},
        {R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0]}})", 8,
         "tensor 'w': field 'data_offsets': expected an array [begin, end], found an array of 1"},
    });
}

TEST(SafetensorsHeader, OverlappingOffsets) {
    const std::string msg = header_error(
        R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", 12);
    EXPECT_MENTIONS(msg, "bad.safetensors: tensor 'b': data_offsets [4, 12) overlap tensor 'a' [0, 8)");
    // Listed in the opposite order the overlap is still found (offsets are sorted first).
    const std::string msg2 = header_error(
        R"({"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]},)"
        R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 12);
    EXPECT_MENTIONS(msg2, "tensor 'b': data_offsets [4, 12) overlap tensor 'a' [0, 8)");
    // Identical ranges overlap too; adjacent ranges and empty tensors do not.
    EXPECT_MENTIONS(header_error(R"({"a":{"dtype":"I32","shape":[1],"data_offsets":[0,4]},)"
                                 R"("b":{"dtype":"I32","shape":[1],"data_offsets":[0,4]}})", 4),
                    "overlap tensor");
    const auto ok = make_image(R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},)"
                               R"("e":{"dtype":"F16","shape":[0],"data_offsets":[2,2]},)"
                               R"("b":{"dtype":"F16","shape":[2],"data_offsets":[4,8]}})", 8);
    EXPECT_EQ(mnemo::parse_safetensors_header(ok.data(), ok.size(), "ok").entries.size(), 3u);
}

TEST(SafetensorsHeader, WrongByteCountForShape) {
    expect_header_errors({
        {R"({"lm_head.weight":{"dtype":"F32","shape":[2,3],"data_offsets":[0,10]}})", 10,
         "bad.safetensors: tensor 'lm_head.weight': data_offsets [0, 10) hold 10 bytes but shape "
         "[2, 3] of F32 needs 24"},
        {R"({"w":{"dtype":"BF16","shape":[4],"data_offsets":[0,16]}})", 16,
         "tensor 'w': data_offsets [0, 16) hold 16 bytes but shape [4] of BF16 needs 8"},
    });
}

TEST(SafetensorsHeader, UnsupportedAndUnknownDtypes) {
    for (const std::string dt : {"I8", "U8", "F64", "F8_E4M3", "BOOL", "I64"}) {
        EXPECT_MENTIONS(header_error(R"({"q.weight":{"dtype":")" + dt + R"(","shape":[1],"data_offsets":[0,1]}})", 8),
                        "bad.safetensors: tensor 'q.weight': unsupported dtype '" + dt + "'");
    }
    expect_header_errors({
        {R"({"w":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", 8, "tensor 'w': unknown dtype 'F33'"},
        // Our lower-case spelling is not valid inside a safetensors header.
        {R"({"w":{"dtype":"f32","shape":[1],"data_offsets":[0,4]}})", 8, "tensor 'w': unknown dtype 'f32'"},
        {R"({"w":{"dtype":7,"shape":[1],"data_offsets":[0,4]}})", 8,
         "tensor 'w': field 'dtype': expected string, found number"},
    });
}

TEST(SafetensorsHeader, BadShapes) {
    expect_header_errors({
        {R"({"w":{"dtype":"F32","shape":[1,1,1,1,1],"data_offsets":[0,4]}})", 8,
         "tensor 'w': field 'shape' has 5 dimensions, at most 4 are supported"},
        {R"({"w":{"dtype":"F32","shape":[2,-1],"data_offsets":[0,4]}})", 8,
         "tensor 'w': field 'shape'[1]: expected a non-negative integer, found number -1"},
        {R"({"w":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 8,
         "tensor 'w': field 'shape'[0]: expected a non-negative integer, found number 1.5"},
        {R"({"w":{"dtype":"F32","shape":"2","data_offsets":[0,4]}})", 8,
         "tensor 'w': field 'shape': expected array, found string"},
        {R"({"w":{"dtype":"F32","shape":[4611686018427387904,4611686018427387904],"data_offsets":[0,4]}})", 8,
         "tensor 'w': shape [4611686018427387904, 4611686018427387904] of F32 is too large"},
    });
}

TEST(SafetensorsHeader, MissingFieldsAndBadEntries) {
    expect_header_errors({
        {R"({"w":{"shape":[1],"data_offsets":[0,4]}})", 8, "tensor 'w': missing field 'dtype'"},
        {R"({"w":{"dtype":"F32","data_offsets":[0,4]}})", 8, "tensor 'w': missing field 'shape'"},
        {R"({"w":{"dtype":"F32","shape":[1]}})", 8, "tensor 'w': missing field 'data_offsets'"},
        {R"({"w":[1,2]})", 8, "tensor 'w': expected an object"},
        {R"([1])", 8, "bad.safetensors: header: expected a JSON object, found array"},
        {R"({"__metadata__":{"format":1}})", 8,
         "bad.safetensors: field '__metadata__.format': expected string, found number"},
        {R"({"__metadata__":[]})", 8, "field '__metadata__': expected object"},
    });
}

TEST(SafetensorsHeader, MalformedHeaderJson) {
    expect_header_errors({
        {R"({"w":{"dtype":"F32",}})", 8,
         "bad.safetensors: header JSON: line 1, column 21: expected member name after ','"},
        {std::string("{\"w\x00\":1}", 8), 0, "bad.safetensors: header JSON: line 1, column 4"},
        {R"({"a":{},"a":{}})", 8, "duplicate key \"a\""},
    });
}

TEST(SafetensorsHeader, MetadataAndPaddingAccepted) {
    const auto image = make_image(R"({"__metadata__":{"format":"pt"},"w":{"dtype":"I32","shape":[2],"data_offsets":[0,8]}}   )", 8);
    const auto h = mnemo::parse_safetensors_header(image.data(), image.size(), "ok");
    ASSERT_EQ(h.entries.size(), 1u);
    EXPECT_EQ(h.entries[0].dtype, DType::I32);
    EXPECT_EQ(h.entries[0].end, 8u);
    EXPECT_EQ(h.metadata.at("format"), "pt");
}

TEST_F(SafetensorsFiles, MappedFileNamesPathOnError) {
    try {
        mnemo::MappedFile m(path("absent.safetensors"));
        ADD_FAILURE() << "mapping a missing file must fail";
    } catch (const mnemo::Error& e) {
        EXPECT_MENTIONS(e.what(), path("absent.safetensors") + ": cannot open file: No such file or directory");
    }
    EXPECT_MENTIONS(required_error("mapping a folder", [&] { mnemo::MappedFile m(dir.string()); }),
                    dir.string() + ": is a directory, expected a regular file");
}

// A FIFO named like a checkpoint must be refused at once: opened for reading, it would block the
// load until some process writes to it.
TEST_F(SafetensorsFiles, FifoCheckpointIsRefusedWithoutBlocking) {
    mnemo::test::make_fifo(path("model.safetensors"));
    const std::string e = mnemo::test::error_without_blocking(path("model.safetensors"), [&] { Checkpoint::open(dir.string()); });
    EXPECT_MENTIONS(e, path("model.safetensors") + ": is a FIFO, expected a regular file");
}

TEST_F(SafetensorsFiles, FifoShardIsRefusedWithoutBlocking) {
    std::vector<float> values = {1, 2};
    mnemo::write_safetensors(path("s1.safetensors"), {{"a", DType::F32, {2}, values.data()}});
    mnemo::test::make_fifo(path("s2.safetensors"));
    write_text("model.safetensors.index.json", R"({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}})");
    const std::string e = mnemo::test::error_without_blocking(path("s2.safetensors"), [&] { Checkpoint::open(dir.string()); });
    EXPECT_MENTIONS(e, path("model.safetensors.index.json") + ": shard 's2.safetensors'");
    EXPECT_MENTIONS(e, path("s2.safetensors") + ": is a FIFO, expected a regular file");
}

class ShardedIndex : public SafetensorsFiles {
protected:
    std::vector<float> values = {1, 2};
    void SetUp() override {
        SafetensorsFiles::SetUp();
        mnemo::write_safetensors(path("s1.safetensors"), {{"a", DType::F32, {2}, values.data()}});
        mnemo::write_safetensors(path("s2.safetensors"), {{"b", DType::F32, {2}, values.data()}});
    }
};

TEST_F(ShardedIndex, IndexNamesMissingShard) {
    write_text("model.safetensors.index.json", R"({"weight_map": {"a": "s1.safetensors", "b": "s3.safetensors"}})");
    const std::string msg = open_error();
    EXPECT_MENTIONS(msg, path("model.safetensors.index.json") + ": shard 's3.safetensors'");
    EXPECT_MENTIONS(msg, path("s3.safetensors") + ": cannot open file: No such file or directory");
}

TEST_F(ShardedIndex, IndexNamesTensorTheShardLacks) {
    write_text("model.safetensors.index.json", R"({"weight_map": {"a": "s1.safetensors", "c": "s2.safetensors"}})");
    EXPECT_MENTIONS(open_error(), path("model.safetensors.index.json") +
                                      ": tensor 'c' is listed in shard 's2.safetensors', but that shard does not contain it");
    // Present, but in another shard than the index says.
    write_text("model.safetensors.index.json", R"({"weight_map": {"a": "s2.safetensors", "b": "s1.safetensors"}})");
    EXPECT_MENTIONS(open_error(), ": tensor 'a' is listed in shard 's2.safetensors', but it is in " +
                                      path("s1.safetensors"));
}

TEST_F(ShardedIndex, ShardNameMayNotLeaveTheFolder) {
    for (const std::string bad : {"../s1.safetensors", "/etc/passwd", "sub/s1.safetensors", "..", ""}) {
        write_text("model.safetensors.index.json", R"({"weight_map": {"a": ")" + bad + R"("}})");
        const std::string msg = open_error();
        EXPECT_MENTIONS(msg, path("model.safetensors.index.json") + ": weight_map: tensor 'a' names shard '" + bad +
                                 "', expected a plain file name");
    }
}

TEST_F(ShardedIndex, TensorInTwoShards) {
    mnemo::write_safetensors(path("s3.safetensors"), {{"a", DType::F32, {2}, values.data()}});
    write_text("model.safetensors.index.json", R"({"weight_map": {"a": "s1.safetensors", "x": "s3.safetensors"}})");
    const std::string msg = open_error();
    EXPECT_MENTIONS(msg, path("s3.safetensors") + ": tensor 'a' is also in " + path("s1.safetensors"));
}

TEST_F(ShardedIndex, MalformedIndex) {
    write_text("model.safetensors.index.json", R"({"weight_map": {"a": "s1.safetensors",}})");
    EXPECT_MENTIONS(open_error(), path("model.safetensors.index.json") + ": line 1, column 39: expected member name");
    write_text("model.safetensors.index.json", R"({"metadata": {}})");
    EXPECT_MENTIONS(open_error(), path("model.safetensors.index.json") + ": missing field 'weight_map'");
    write_text("model.safetensors.index.json", R"({"weight_map": []})");
    EXPECT_MENTIONS(open_error(), "field 'weight_map': expected object, found array");
    write_text("model.safetensors.index.json", R"({"weight_map": {"a": 3}})");
    EXPECT_MENTIONS(open_error(), "field 'weight_map.a': expected string, found number");
    write_text("model.safetensors.index.json", R"({"weight_map": {}})");
    EXPECT_MENTIONS(open_error(), "field 'weight_map' is empty");
}

TEST_F(ShardedIndex, BadShardContentNamesShardAndTensor) {
    write_bytes("s2.safetensors", make_image(R"({"b":{"dtype":"I8","shape":[2],"data_offsets":[0,2]}})", 2));
    write_text("model.safetensors.index.json", R"({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}})");
    EXPECT_MENTIONS(open_error(), path("s2.safetensors") + ": tensor 'b': unsupported dtype 'I8'");
}
