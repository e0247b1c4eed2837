// JSON reader: valid documents, every class of malformed input (with the line/column the message
// must point at), typed accessors, dotted lookups and the compact writer.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include "fixtures/error_checks.hpp"
#include "fixtures/fifo.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"

namespace json = mnemo::json;
using mnemo::test::required_error;

namespace {

// Parses text that must fail and returns the error message.
std::string parse_error(std::string_view text, std::string_view source = "doc.json") {
    return required_error("parsing " + std::string(text), [&] { json::parse(text, source); });
}

// Each text must fail to parse with a message that mentions its part.
struct Malformed {
    std::string text;
    std::string mentions;
};
void expect_parse_errors(const std::vector<Malformed>& cases) {
    for (const Malformed& c : cases) EXPECT_MENTIONS(parse_error(c.text), c.mentions) << "parsing " << c.text;
}

}  // namespace

TEST(JsonParse, ScalarsAndContainers) {
    const auto v = json::parse(
        R"({"a": 1, "b": [true, false, null], "c": "hi", "d": -2.5e3, "e": {}, "f": []})", "t");
    ASSERT_TRUE(v.is_object());
    EXPECT_EQ(v.size(), 6u);
    EXPECT_EQ(v.find("a")->as_int(), 1);
    EXPECT_TRUE(v.find("a")->is_integer());
    EXPECT_EQ(v.find("b")->as_array().size(), 3u);
    EXPECT_TRUE(v.find("b")->as_array()[0].as_bool());
    EXPECT_FALSE(v.find("b")->as_array()[1].as_bool());
    EXPECT_TRUE(v.find("b")->as_array()[2].is_null());
    EXPECT_EQ(v.find("c")->as_string(), "hi");
    EXPECT_DOUBLE_EQ(v.find("d")->as_double(), -2500.0);
    EXPECT_FALSE(v.find("d")->is_integer());
    EXPECT_TRUE(v.find("e")->is_object());
    EXPECT_EQ(v.find("e")->size(), 0u);
    EXPECT_TRUE(v.find("f")->is_array());
    EXPECT_EQ(v.find("missing"), nullptr);
    // Members keep document order.
    EXPECT_EQ(v.as_object()[0].first, "a");
    EXPECT_EQ(v.as_object()[5].first, "f");
}

TEST(JsonParse, TopLevelScalarsAndWhitespace) {
    EXPECT_EQ(json::parse(" \t\r\n42 \n", "t").as_int(), 42);
    EXPECT_EQ(json::parse("\"x\"", "t").as_string(), "x");
    EXPECT_TRUE(json::parse("null", "t").is_null());
    EXPECT_EQ(json::parse("\xEF\xBB\xBF{}", "t").size(), 0u);  // a UTF-8 BOM is ignored
}

TEST(JsonParse, Integers) {
    EXPECT_EQ(json::parse("9223372036854775807", "t").as_int(), INT64_MAX);
    EXPECT_EQ(json::parse("-9223372036854775808", "t").as_int(), INT64_MIN);
    EXPECT_EQ(json::parse("-0", "t").as_int(), 0);
    // Beyond int64: still a number, but not an exact integer.
    const auto big = json::parse("9223372036854775808", "t");
    EXPECT_FALSE(big.is_integer());
    EXPECT_DOUBLE_EQ(big.as_double(), 9223372036854775808.0);
    EXPECT_FALSE(json::parse("1.0", "t").is_integer());
    EXPECT_FALSE(json::parse("1e2", "t").is_integer());
    EXPECT_DOUBLE_EQ(json::parse("1E+2", "t").as_double(), 100.0);
    EXPECT_DOUBLE_EQ(json::parse("0.5e-1", "t").as_double(), 0.05);
    EXPECT_EQ(json::parse("1e-400", "t").as_double(), 0.0);  // underflow rounds to zero
}

TEST(JsonParse, StringEscapesAndUnicode) {
    const auto v = json::parse(R"("a\"b\\c\/d\b\f\n\r\t\u0041\u00e9\u20ac\ud83d\ude00")", "t");
    EXPECT_EQ(v.as_string(), "a\"b\\c/d\b\f\n\r\tA\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80");
    // Raw UTF-8 passes through.
    EXPECT_EQ(json::parse("\"\xE4\xBD\xA0\xE5\xA5\xBD\"", "t").as_string(), "\xE4\xBD\xA0\xE5\xA5\xBD");
    // \u0000 is a legal character inside a std::string.
    EXPECT_EQ(json::parse(R"("a\u0000b")", "t").as_string(), std::string("a\0b", 3));
}

TEST(JsonParse, ErrorsNameSourceLineAndColumn) {
    const std::string msg = parse_error("{\n  \"a\": 1,\n  \"b\" 2\n}", "config.json");
    EXPECT_MENTIONS(msg, "config.json: line 3, column 7: expected ':'");
}

TEST(JsonParse, RejectsTrailingCommas) {
    expect_parse_errors({
        {"[1, 2,]", "line 1, column 7: expected value after ','"},
        {"{\"a\": 1,}", "line 1, column 9: expected member name after ','"},
        {"{\"a\": 1,}", "trailing commas"},
    });
}

TEST(JsonParse, RejectsLeadingZerosAndBadNumbers) {
    expect_parse_errors({
        {"[01]", "line 1, column 2: expected a number without leading zeros"},
        {"[-01]", "column 2: expected a number without leading zeros"},
        {"1.", "column 3: expected digit after decimal point"},
        {".5", "column 1: expected value"},
        {"1e", "column 3: expected digit in exponent"},
        {"-", "column 2: expected digit in number"},
        {"+1", "column 1: expected value, found '+'"},
        {"1e999", "expected a number within the range of a double"},
    });
}

TEST(JsonParse, RejectsNanAndInfinity) {
    expect_parse_errors({
        {"NaN", "line 1, column 1: expected value, found 'N'"},
        {"[Infinity]", "column 2: expected value, found 'I'"},
        {"-Infinity", "column 2: expected digit in number"},
    });
}

TEST(JsonParse, RejectsTrailingGarbage) {
    expect_parse_errors({
        {"{} x", "line 1, column 4: expected end of document, found 'x'"},
        {"1 2", "column 3: expected end of document"},
        {"truex", "column 5: expected end of document"},
    });
}

TEST(JsonParse, RejectsDuplicateKeys) {
    const std::string msg = parse_error("{\"a\": 1,\n \"b\": 2,\n \"a\": 3}");
    EXPECT_MENTIONS(msg, "line 3, column 2: expected unique member names, found duplicate key \"a\"");
}

TEST(JsonParse, RejectsStructuralErrors) {
    expect_parse_errors({
        {"", "line 1, column 1: expected value, found end of document"},
        {"[1 2]", "column 4: expected ',' or ']' in array, found '2'"},
        {"{\"a\":1 \"b\":2}", "column 8: expected ',' or '}' in object"},
        {"{a:1}", "column 2: expected '\"' to start a member name, found 'a'"},
        {"[1,", "column 4: expected value, found end of document"},
        {"tru", "column 1: expected value, found 't'"},
        {"'x'", "expected value, found '''"},
    });
}

TEST(JsonParse, RejectsBadStrings) {
    expect_parse_errors({
        {"\"abc", "column 1: expected closing '\"' of string"},
        {"\"a\nb\"", "line 1, column 3: expected escaped control character"},
        {R"("\x")", "column 3: expected one of"},
        {R"("\u12G4")", "column 6: expected 4 hex digits after \\u, found 'G'"},
        {R"("\u12")", "expected 4 hex digits"},
    });
}

TEST(JsonParse, RejectsBadSurrogates) {
    expect_parse_errors({
        {R"("\ude00")", "column 2: expected a high surrogate"},
        {R"("\ud83d")", "column 2: expected a low surrogate"},
        {R"("\ud83dx")", "expected a low surrogate"},
        {R"("\ud83d\u0041")", "column 8: expected a low surrogate"},
    });
}

TEST(JsonParse, RejectsInvalidUtf8) {
    expect_parse_errors({
        {"\"a\xFF\"", "column 3: expected valid UTF-8 in string, found byte 0xff"},
        {"\"\xC0\xAF\"", "expected valid UTF-8"},   // overlong '/'
        {"\"\xE0\x80\xAF\"", "overlong"},           // overlong 3-byte
        {"\"\xED\xA0\x80\"", "encoded surrogate"},  // U+D800
        {"\"\xF4\x90\x80\x80\"", "above U+10FFFF"},
        {"\"\xE4\xBD\"", "truncated sequence"},
        {"\"\x80\"", "expected valid UTF-8"},  // lone continuation
    });
}

TEST(JsonParse, ColumnsCountCharactersNotBytes) {
    // "é" is two bytes but one column.
    EXPECT_MENTIONS(parse_error("[\"\xC3\xA9\" x]"), "line 1, column 6:");
}

TEST(JsonParse, DepthLimit) {
    std::string ok(512, '[');
    ok += std::string(512, ']');
    EXPECT_NO_THROW(json::parse(ok, "t"));
    std::string deep(513, '[');
    deep += std::string(513, ']');
    EXPECT_MENTIONS(parse_error(deep), "column 513: expected nesting depth at most 512");
    // Far deeper input must fail cleanly too (no stack overflow).
    EXPECT_MENTIONS(parse_error(std::string(100000, '[')), "nesting depth");
}

TEST(JsonValue, TypedAccessorsThrowWithTypes) {
    const auto v = json::parse(R"({"s": "x", "n": 1.5, "a": []})", "t");
    EXPECT_EQ(required_error("as_int on a string", [&] { v.find("s")->as_int(); }), "expected integer, found string");
    EXPECT_MENTIONS(required_error("as_int on 1.5", [&] { v.find("n")->as_int(); }),
                    "expected integer, found number 1.5");
    EXPECT_THROW(v.find("a")->as_object(), mnemo::Error);
    EXPECT_THROW(v.as_array(), mnemo::Error);
    EXPECT_THROW(v.as_string(), mnemo::Error);
    EXPECT_THROW(v.as_bool(), mnemo::Error);
    EXPECT_THROW(v.as_double(), mnemo::Error);
    EXPECT_EQ(required_error("as_string on an array", [&] { v.find("a")->as_string(); }),
              "expected string, found array");
    EXPECT_STREQ(json::type_name(json::Type::Bool), "boolean");
}

TEST(JsonValue, DottedPathLookup) {
    const auto v = json::parse(R"({"rope_scaling": {"factor": 8.0, "inner": {"x": 1}}, "a.b": 2})", "t");
    ASSERT_NE(v.find_path("rope_scaling.factor"), nullptr);
    EXPECT_DOUBLE_EQ(v.find_path("rope_scaling.factor")->as_double(), 8.0);
    EXPECT_EQ(v.find_path("rope_scaling.inner.x")->as_int(), 1);
    EXPECT_EQ(v.find_path("rope_scaling.missing"), nullptr);
    EXPECT_EQ(v.find_path("rope_scaling.factor.deeper"), nullptr);  // step into a number
    EXPECT_EQ(v.find_path("nope.factor"), nullptr);
    EXPECT_EQ(v.find_path("rope_scaling"), v.find("rope_scaling"));
    EXPECT_EQ(json::parse("[1]", "t").find("x"), nullptr);  // not an object
}

// A decimal step indexes an array, so plugins can read list fields ("memory_anchors.1").
TEST(JsonValue, DottedPathIndexesArrays) {
    const auto v = json::parse(R"({"anchors": [3, 7, {"x": 5}], "m": {"0": 9}})", "t");
    EXPECT_EQ(v.find_path("anchors.0")->as_int(), 3);
    EXPECT_EQ(v.find_path("anchors.1")->as_int(), 7);
    EXPECT_EQ(v.find_path("anchors.2.x")->as_int(), 5);
    EXPECT_EQ(v.find_path("anchors.3"), nullptr);    // past the end
    EXPECT_EQ(v.find_path("anchors.-1"), nullptr);   // not a decimal index
    EXPECT_EQ(v.find_path("anchors.1x"), nullptr);
    EXPECT_EQ(v.find_path("anchors."), nullptr);
    EXPECT_EQ(v.find_path("m.0")->as_int(), 9);      // an object member named "0" stays a member
}

TEST(JsonValue, DumpIsCompactAndRoundTrips) {
    const std::string text =
        R"({"a":[1,-2,3.5,1e+20,true,false,null],"s":"q\"\\\n\u0001\u00e9","o":{"x":{}},"f":2.0})";
    const auto v = json::parse(text, "t");
    const std::string out = v.dump();
    EXPECT_EQ(out, "{\"a\":[1,-2,3.5,1e+20,true,false,null],\"s\":\"q\\\"\\\\\\n\\u0001\xC3\xA9\","
                   "\"o\":{\"x\":{}},\"f\":2.0}");
    const auto again = json::parse(out, "t");
    EXPECT_EQ(again.dump(), out);
    EXPECT_FALSE(again.find("f")->is_integer());  // "2.0" stays a non-integer
    EXPECT_EQ(json::Value::make_number(std::nan(""), false, 0).dump(), "null");
    EXPECT_EQ(json::Value::make_number(0, true, -7).dump(), "-7");
}

TEST(JsonParseFile, ReadsFileAndNamesPathInErrors) {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() /
                         ("mnemo_json_test_" + std::to_string(::getpid()) + "_" +
                          std::to_string(std::chrono::steady_clock::now().time_since_epoch().count()));
    fs::create_directories(dir);
    const std::string good = (dir / "good.json").string();
    const std::string bad = (dir / "bad.json").string();
    std::ofstream(good) << R"({"hidden_size": 64})";
    std::ofstream(bad) << "{\"hidden_size\": 64,\n}";
    EXPECT_EQ(json::parse_file(good).find("hidden_size")->as_int(), 64);
    EXPECT_MENTIONS(required_error("bad.json", [&] { json::parse_file(bad); }),
                    bad + ": line 2, column 1: expected member name after ','");
    const std::string missing = (dir / "missing.json").string();
    EXPECT_MENTIONS(required_error("a missing file", [&] { json::parse_file(missing); }),
                    missing + ": cannot open file");
    // Only regular files are read: a folder, a FIFO (which would block the open), a device.
    EXPECT_MENTIONS(required_error("reading a folder", [&] { json::parse_file(dir.string()); }),
                    dir.string() + ": is a directory, expected a regular file");
    const std::string fifo = (dir / "config.json").string();
    mnemo::test::make_fifo(fifo);
    EXPECT_MENTIONS(mnemo::test::error_without_blocking(fifo, [&] { json::parse_file(fifo); }),
                    fifo + ": is a FIFO, expected a regular file");
    EXPECT_MENTIONS(required_error("reading /dev/zero", [&] { json::parse_file("/dev/zero"); }), "is a character device");
    fs::remove_all(dir);
}

// What dump() writes is valid JSON text, which is UTF-8: a byte that is not (a model's partial
// token, a damaged title) becomes U+FFFD, so the document reads back.
TEST(JsonValue, DumpReplacesInvalidUtf8) {
    const auto v = json::Value::make_string("caf\xE9 \xC3\xA9 \xE2\x82 \xF0\x9F\x99\x82");
    const std::string out = v.dump();
    EXPECT_EQ(out, "\"caf\\ufffd \xC3\xA9 \\ufffd\\ufffd \xF0\x9F\x99\x82\"");
    EXPECT_EQ(json::parse(out, "t").as_string(), "caf\xEF\xBF\xBD \xC3\xA9 \xEF\xBF\xBD\xEF\xBF\xBD \xF0\x9F\x99\x82");
    EXPECT_EQ(json::quote("\x80"), "\"\\ufffd\"");
}
