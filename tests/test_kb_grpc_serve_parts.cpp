// The parts of `mnemo-kb serve` that need no connection: the token file and its hashing, the
// listen policy (who may go without TLS or tokens), the request checks as pure functions, the log
// line, and the command line (`mnemo-kb token new`, `serve`'s refusals).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <fstream>
#include <set>
#include <sstream>

#include "io/sha256.hpp"
#include "mnemo/error.hpp"
#include "process_util.hpp"
#include "serve/access_tokens.hpp"
#include "serve/call_watchdog.hpp"
#include "serve/kb_service.hpp"
#include "serve/listen_policy.hpp"
#include "serve/request_checks.hpp"
#include "serve/request_decode.hpp"

namespace {

using namespace mnemo::kb;
using grpc::StatusCode;
namespace fs = std::filesystem;

std::string hash_line(const std::string& name, const std::string& scope, const std::string& token) {
    return name + " " + scope + " sha256:" + mnemo::sha256_hex(token.data(), token.size()) + "\n";
}

std::string parse_error(const std::string& text) {
    try {
        TokenTable::parse(text, "tokens file 'T'");
        return "";
    } catch (const mnemo::Error& e) {
        return e.what();
    }
}

TEST(KbGrpcServeParts, TokenFileFindsTokensByTheirHash) {
    const auto table = TokenTable::parse("# comment\n\n" + hash_line("alice", "read", "secret-a") + "  " +
                                             hash_line("ops.team-1", "admin", "secret-b"),
                                         "tokens file 'T'");
    ASSERT_EQ(table->size(), 2u);
    const TokenEntry* a = table->find("secret-a");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->name, "alice");
    EXPECT_TRUE(a->allows(TokenScope::Read));
    EXPECT_FALSE(a->allows(TokenScope::Admin));
    const TokenEntry* b = table->find("secret-b");
    ASSERT_NE(b, nullptr);
    EXPECT_TRUE(b->allows(TokenScope::Admin));
    EXPECT_TRUE(b->allows(TokenScope::Read));
    EXPECT_EQ(table->find("secret-c"), nullptr);
    EXPECT_EQ(table->find(""), nullptr);
    EXPECT_EQ(table->find("secret-a "), nullptr);
    // OpenSSL's SHA-256 and the engine's agree.
    const TokenDigest d = token_digest("abc");
    EXPECT_EQ(mnemo::to_hex(d), mnemo::sha256_hex("abc", 3));
}

TEST(KbGrpcServeParts, TokenFileErrorsNameTheLineAndField) {
    const std::string h = "sha256:" + std::string(64, 'a');
    EXPECT_NE(parse_error("a read\n").find("line 1: expected 'NAME SCOPE sha256:HEX', got 2 fields"), std::string::npos);
    EXPECT_NE(parse_error("#x\na write " + h).find("line 2: scope 'write'"), std::string::npos);
    EXPECT_NE(parse_error("a read sha256:abc").find("hash is not"), std::string::npos);
    EXPECT_NE(parse_error("a read " + std::string(71, 'a')).find("hash is not"), std::string::npos);
    EXPECT_NE(parse_error("a read " + h + "\na admin " + h).find("line 2: name 'a' appears twice"), std::string::npos);
    EXPECT_NE(parse_error("a/b read " + h).find("name 'a/b'"), std::string::npos);
    EXPECT_NE(parse_error("a read " + h + " extra").find("got 4 fields"), std::string::npos);
    EXPECT_EQ(parse_error("a read sha256:" + std::string(64, 'F') + "\r\n"), "");
}

TEST(KbGrpcServeParts, NewTokensAreRandomAndOnlyTheirHashIsStored) {
    std::set<std::string> seen;
    for (int i = 0; i < 20; ++i) {
        const std::string t = generate_token();
        EXPECT_EQ(t.size(), 47u) << t;
        EXPECT_EQ(t.rfind("mkb_", 0), 0u);
        EXPECT_EQ(t.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", 4), std::string::npos) << t;
        seen.insert(t);
    }
    EXPECT_EQ(seen.size(), 20u);

    std::string dir_template = (fs::temp_directory_path() / "mnemo_kb_tokens_XXXXXX").string();
    const fs::path dir = mkdtemp(dir_template.data());
    const std::string file = (dir / "tokens").string();
    const std::string reader = add_token(file, "reader", TokenScope::Read);
    const std::string admin = add_token(file, "admin", TokenScope::Admin);
    struct stat st {};
    ASSERT_EQ(stat(file.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str().find(reader), std::string::npos) << "the token itself is never stored";
    const auto table = TokenTable::load(file);
    ASSERT_EQ(table->size(), 2u);
    ASSERT_NE(table->find(reader), nullptr);
    EXPECT_EQ(table->find(reader)->name, "reader");
    ASSERT_NE(table->find(admin), nullptr);
    EXPECT_EQ(table->find(admin)->scope, TokenScope::Admin);
    EXPECT_THROW(add_token(file, "reader", TokenScope::Admin), mnemo::Error);
    EXPECT_THROW(add_token(file, "bad name", TokenScope::Read), mnemo::Error);
    EXPECT_EQ(TokenTable::load(file)->size(), 2u) << "a refused add leaves the file as it was";

    // The command line: prints the token once, stores its hash line.
    const auto r = mnemo::testing::run_program("mnemo-kb", "token new --name cli --scope read --tokens " + mnemo::testing::shell_quote(file), 30);
    ASSERT_EQ(r.code, 0) << r.output;
    const size_t at = r.output.find("mkb_");  // stdout's line; stderr's note may come first
    ASSERT_NE(at, std::string::npos) << r.output;
    const std::string printed = r.output.substr(at, r.output.find('\n', at) - at);
    ASSERT_NE(TokenTable::load(file)->find(printed), nullptr) << r.output;
    EXPECT_EQ(TokenTable::load(file)->find(printed)->name, "cli");
    const auto bad = mnemo::testing::run_program("mnemo-kb", "token new --name x --scope root --tokens " + mnemo::testing::shell_quote(file), 30);
    EXPECT_TRUE(mnemo::testing::exited_with(bad, 2, {"--scope must be read, admin or shard"}));
    fs::remove_all(dir);
}

TEST(KbGrpcServeParts, OnlyLoopbackAddressesMayGoWithoutTls) {
    for (const char* a : {"127.0.0.1:0", "127.3.4.5:8080", "localhost:50051", "[::1]:9", "[::ffff:127.0.0.1]:1"})
        EXPECT_TRUE(is_loopback_listen_address(a)) << a;
    for (const char* a : {"0.0.0.0:1", "[::]:1", "10.0.0.1:5", "128.0.0.1:5", "example.com:5", "127.0.0.1", "::1:5", "[::1]", "127.0.0.1:",
                          "127.0.0.1:x", "localhost.evil.com:5", "[::ffff:10.0.0.1]:1", ""})
        EXPECT_FALSE(is_loopback_listen_address(a)) << a;

    auto problem = [](const std::string& listen, bool tls, bool insecure, bool tokens, bool no_auth) {
        return transport_problem({listen, tls, insecure, tokens, no_auth});
    };
    EXPECT_EQ(problem("0.0.0.0:443", true, false, true, false), "");
    EXPECT_EQ(problem("127.0.0.1:0", false, true, true, false), "");
    EXPECT_EQ(problem("127.0.0.1:0", false, true, false, true), "");
    EXPECT_NE(problem("0.0.0.0:80", false, true, true, false).find("only a loopback address"), std::string::npos);
    EXPECT_NE(problem("10.1.1.1:80", false, false, true, false).find("no TLS"), std::string::npos);
    EXPECT_NE(problem("127.0.0.1:1", true, true, true, false).find("contradict"), std::string::npos);
    EXPECT_NE(problem("127.0.0.1:1", false, true, false, false).find("--tokens"), std::string::npos);
    EXPECT_NE(problem("0.0.0.0:1", true, false, false, true).find("--no-auth is allowed only"), std::string::npos);
    EXPECT_NE(problem("127.0.0.1:1", true, false, false, true).find("--no-auth is allowed only"), std::string::npos);

    const auto r = mnemo::testing::run_program("mnemo-kb", "serve /nonexistent-bank --listen 0.0.0.0:0 --insecure --no-auth", 30);
    EXPECT_TRUE(mnemo::testing::exited_with(r, 2, {"--insecure serves plaintext", "0.0.0.0:0"}));
}

BankShape shape() {
    BankShape s;
    s.version = 5;
    s.retrieval_dim = 3;
    s.count = 10;
    s.has_tokenizer = false;
    s.key_codebook_sha256 = std::string(64, 'a');
    s.value_codebook_sha256 = std::string(64, 'b');
    return s;
}

TEST(KbGrpcServeParts, RequestChecksAreExactAndNameTheField) {
    const ServeLimits limits;
    mnemo::kb::v1::RetrieveRequest r;
    r.set_k(3);
    for (float x : {0.1f, 0.2f, 0.3f}) r.add_vector(x);
    EXPECT_TRUE(check_retrieve(r, shape(), limits).ok());
    r.set_vector(1, -INFINITY);
    grpc::Status s = check_retrieve(r, shape(), limits);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("vector[1] is infinite"), std::string::npos) << s.error_message();
    r.set_vector(1, 0.0f);
    r.set_min_relative_score(0.7);
    EXPECT_TRUE(check_retrieve(r, shape(), limits).ok());
    for (double bad : {1.5, -0.1, static_cast<double>(NAN)}) {
        r.set_min_relative_score(bad);
        s = check_retrieve(r, shape(), limits);
        EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT) << bad;
        EXPECT_NE(s.error_message().find("min_relative_score is"), std::string::npos) << s.error_message();
    }
    r.set_min_relative_score(0);
    r.set_min_references(1000);
    EXPECT_TRUE(check_retrieve(r, shape(), limits).ok());
    r.set_min_references(1001);
    s = check_retrieve(r, shape(), limits);
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("min_references is 1001"), std::string::npos) << s.error_message();
    r.set_min_references(0);
    r.set_text("hello");
    EXPECT_EQ(check_retrieve(r, shape(), limits).error_code(), StatusCode::FAILED_PRECONDITION);
    r.clear_text();
    r.set_k(limits.max_k + 1);
    s = check_retrieve(r, shape(), limits);
    EXPECT_NE(s.error_message().find("k is 65; this server answers 1..64"), std::string::npos) << s.error_message();
    // The request's own faults come before the bank's state.
    r.set_bank_version(4);
    EXPECT_EQ(check_retrieve(r, shape(), limits).error_code(), StatusCode::INVALID_ARGUMENT);
    r.set_k(1);
    s = check_retrieve(r, shape(), limits);
    EXPECT_EQ(s.error_code(), StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(s.error_message().find("bank_version 4 was asked, the server has version 5"), std::string::npos);

    mnemo::kb::v1::FetchRequest f;
    f.add_ids(3);
    f.add_ids(10);
    s = check_fetch(f, shape(), limits);
    EXPECT_EQ(s.error_code(), StatusCode::NOT_FOUND);
    EXPECT_NE(s.error_message().find("ids[1] = 10"), std::string::npos) << s.error_message();
    f.set_key_codebook_sha256(std::string(64, 'A'));  // hashes compare in either case
    EXPECT_EQ(check_fetch(f, shape(), limits).error_code(), StatusCode::NOT_FOUND);

    mnemo::kb::v1::CodebookRequest c;
    c.set_sha256(std::string(64, 'b'));
    EXPECT_TRUE(check_codebook(c, shape()).ok());
    c.set_chunk_bytes(ServeLimits::kMaxCodebookChunk);
    EXPECT_TRUE(check_codebook(c, shape()).ok());
}

TEST(KbGrpcServeParts, LogLineHasTimePeerClientMethodStatusAndCounts) {
    KbService::CallNote note;
    note.detail = "ids=3";
    note.records = 3;
    note.bytes = 1200;
    const auto when = std::chrono::system_clock::time_point(std::chrono::milliseconds(1700000000123LL));
    const std::string line = format_request_log(when, "ipv4:127.0.0.1:5000", "alice", KbMethod::FetchMemories,
                                                grpc::Status(StatusCode::NOT_FOUND, "ids[0] = 9 is not in bank version 2"), 1.5, note);
    EXPECT_EQ(line, "2023-11-14T22:13:20.123Z peer=ipv4:127.0.0.1:5000 client=alice method=FetchMemories status=NOT_FOUND "
                    "ms=1.500 ids=3 records=3 bytes=1200 error=\"ids[0] = 9 is not in bank version 2\"");
}

TEST(KbGrpcServeParts, ListenPortsOutOfRangeAreUsageErrors) {
    for (const char* ok : {"127.0.0.1:0", "127.0.0.1:65535", "[::1]:1", "0.0.0.0:7443", "example.com:80"})
        EXPECT_EQ(listen_address_problem(ok), "") << ok;
    const std::string e = listen_address_problem("127.0.0.1:99999");
    EXPECT_NE(e.find("--listen '127.0.0.1:99999'"), std::string::npos) << e;
    EXPECT_NE(e.find("0..65535"), std::string::npos) << e;
    EXPECT_NE(listen_address_problem("[::1]:65536").find("out of range"), std::string::npos);
    EXPECT_NE(listen_address_problem("127.0.0.1:http").find("is not HOST:PORT"), std::string::npos);
    EXPECT_NE(listen_address_problem(":80").find("is not HOST:PORT"), std::string::npos);
    EXPECT_NE(transport_problem({"0.0.0.0:70000", true, false, true, false}).find("out of range"), std::string::npos)
        << "checked before any other rule";
    const auto r = mnemo::testing::run_program("mnemo-kb", "serve /nonexistent-bank --listen 127.0.0.1:99999 --insecure --no-auth", 30);
    EXPECT_TRUE(mnemo::testing::exited_with(r, 2, {"--listen '127.0.0.1:99999'", "0..65535"}));
}

// Wire bytes of a field: tag and length, then the bytes.
std::string wire_bytes(int number, const std::string& bytes) {
    return std::string(1, static_cast<char>((number << 3) | 2)) + static_cast<char>(bytes.size()) + bytes;
}

TEST(KbGrpcServeParts, RequestsDecodeWithErrorsThatNameTheField) {
    mnemo::kb::v1::RetrieveRequest r;
    grpc::Status s = decode_request(wire_bytes(3, "ok \xce\xbb") + std::string("\x20\x05", 2), r);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(r.text(), "ok \xce\xbb");
    EXPECT_EQ(r.k(), 5u);

    s = decode_request(wire_bytes(3, "bad \xed\xa0\x80"), r);  // a surrogate
    EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(s.error_message().find("text is not valid UTF-8"), std::string::npos) << s.error_message();
    s = decode_request(wire_bytes(5, wire_bytes(1, "a") + wire_bytes(1, "b") + wire_bytes(1, "\xff")), r);
    EXPECT_NE(s.error_message().find("filter.sources[2] is not valid UTF-8"), std::string::npos) << s.error_message();
    s = decode_request(wire_bytes(5, wire_bytes(2, "\xc0\xaf")), r);  // an overlong '/'
    EXPECT_NE(s.error_message().find("filter.source_prefix is not valid UTF-8"), std::string::npos) << s.error_message();
    mnemo::kb::v1::FetchRequest f;
    s = decode_request(wire_bytes(3, "\x80"), f);
    EXPECT_NE(s.error_message().find("key_codebook_sha256 is not valid UTF-8"), std::string::npos) << s.error_message();
    // Bytes of a string field sent with another wire type are protobuf's unknown fields: no check.
    EXPECT_TRUE(decode_request(std::string("\x1d\xff\xff\xff\xff", 5), r).ok());

    for (const std::string& junk : {std::string("\x0a\x05" "ab"), std::string("\xff"), std::string("\x2a\x02\x0a\x05"), std::string("\x0d\x01\x02")}) {
        s = decode_request(junk, r);
        EXPECT_EQ(s.error_code(), StatusCode::INVALID_ARGUMENT);
        EXPECT_NE(s.error_message().find("not a valid mnemo.kb.v1.RetrieveRequest message"), std::string::npos) << s.error_message();
    }
}

TEST(KbGrpcServeParts, TheWatchdogMarksACallAtItsDeadlineAndCancelsItAGraceLater) {
    CallWatchdog dog(std::chrono::milliseconds(200));
    std::atomic<int> cancels{0};
    const auto t0 = CallWatchdog::Clock::now();
    auto late = dog.watch(t0 + std::chrono::milliseconds(100), [&] { ++cancels; });
    auto done = dog.watch(t0 + std::chrono::milliseconds(100), [&] { cancels += 100; });
    done.reset();  // a call that ended in time is never cancelled
    EXPECT_FALSE(late->expired());
    for (int i = 0; i < 600 && !late->expired(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_TRUE(late->expired());
    for (int i = 0; i < 600 && !late->cancelled(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_TRUE(late->cancelled());
    EXPECT_GE(CallWatchdog::Clock::now() - t0, std::chrono::milliseconds(300));
    EXPECT_EQ(cancels.load(), 1);
    EXPECT_EQ(dog.watched(), 1u);
    late.reset();
    EXPECT_EQ(dog.watched(), 0u);
}

TEST(KbGrpcServeParts, LogLinesStayOneLineWhateverTheErrorHolds) {
    KbService::CallNote note;
    note.server_error = "folder '/srv/b': 'seg\x1b[31m'";
    const auto when = std::chrono::system_clock::time_point(std::chrono::milliseconds(1700000000123LL));
    const std::string line = format_request_log(when, "ipv4:127.0.0.1:5000", "alice", KbMethod::Retrieve,
                                                grpc::Status(StatusCode::FAILED_PRECONDITION, "x\" client=admin\nforged \\"), 1.5, note);
    EXPECT_EQ(line.find_first_of("\n\x1b"), std::string::npos) << line;
    EXPECT_NE(line.find("error=\"x\\\" client=admin\\nforged \\\\\""), std::string::npos) << line;
    EXPECT_NE(line.find("server_error=\"folder '/srv/b': 'seg\\e[31m'\""), std::string::npos) << line;
}

// `token new` prints the token before it stores it: when stdout cannot take it (a full disk, here
// /dev/full) the command fails and the token file stays as it was.
TEST(KbGrpcServeParts, TokenNewWithAFullStdoutAddsNoToken) {
    std::string dir_template = (fs::temp_directory_path() / "mnemo_kb_tokens_XXXXXX").string();
    const fs::path dir = mkdtemp(dir_template.data());
    const std::string file = (dir / "tokens").string();
    add_token(file, "first", TokenScope::Read);
    std::ifstream before_in(file);
    std::stringstream before;
    before << before_in.rdbuf();
    // stderr to the pipe first, then stdout to /dev/full.
    const std::string cmd = mnemo::testing::shell_quote(std::string(MNEMO_BUILD_BIN) + "/mnemo-kb") + " token new --name lost --scope read --tokens " +
                            mnemo::testing::shell_quote(file) + " 2>&1 >/dev/full </dev/null";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string output;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) output.append(buf, n);
    const int status = pclose(p);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << "status " << status << ": " << output;
    EXPECT_NE(output.find("cannot write the token to stdout"), std::string::npos) << output;
    std::ifstream after_in(file);
    std::stringstream after;
    after << after_in.rdbuf();
    EXPECT_EQ(after.str(), before.str()) << "a token nobody saw was added";
    fs::remove_all(dir);
}

}  // namespace
