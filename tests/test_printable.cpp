// Outside text made safe to print (mnemo/io/printable.hpp): what is escaped, what is kept, and
// how long text is cut.
#include <gtest/gtest.h>

#include <string>

#include "mnemo/io/printable.hpp"

using mnemo::is_valid_utf8;
using mnemo::printable;

TEST(Printable, KeepsPlainTextAndValidUtf8) {
    EXPECT_EQ(printable("Puthex ring (ref12.txt)"), "Puthex ring (ref12.txt)");
    EXPECT_EQ(printable("caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x99\x82"), "caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x99\x82");
    EXPECT_EQ(printable(""), "");
}

TEST(Printable, EscapesLineBreaksAndTerminalControls) {
    // A newline would forge a log line; ESC starts a terminal escape sequence.
    EXPECT_EQ(printable("a\nb\r\tc"), "a\\nb\\r\\tc");
    EXPECT_EQ(printable("\x1B[2J\x1B]0;title\x07"), "\\e[2J\\e]0;title\\x07");
    EXPECT_EQ(printable(std::string("nul\0end", 7)), "nul\\x00end");
    EXPECT_EQ(printable("del\x7F"), "del\\x7F");
    // C1 controls (U+0080..U+009F; U+009B is CSI on some terminals) and the Unicode line breaks.
    EXPECT_EQ(printable("\xC2\x9B" "31m"), "\\u{009B}31m");
    EXPECT_EQ(printable("\xC2\x85"), "\\u{0085}");
    EXPECT_EQ(printable("a\xE2\x80\xA8" "b\xE2\x80\xA9"), "a\\u{2028}b\\u{2029}");
}

TEST(Printable, EscapesBidiOverrides) {
    // RLO reverses what follows on screen ("Trojan Source"); the isolates do the same.
    EXPECT_EQ(printable("abc\xE2\x80\xAE" "fed"), "abc\\u{202E}fed");
    EXPECT_EQ(printable("\xE2\x80\xAA\xE2\x81\xA6\xE2\x81\xA9"), "\\u{202A}\\u{2066}\\u{2069}");
    EXPECT_EQ(printable("\xE2\x80\x8F"), "\xE2\x80\x8F") << "U+200F (a mark, not an override) is kept";
}

TEST(Printable, EscapesEachInvalidByte) {
    EXPECT_EQ(printable("a\xFF" "b"), "a\\xFFb");
    EXPECT_EQ(printable("\xE2\x82"), "\\xE2\\x82") << "a truncated sequence";
    EXPECT_EQ(printable("\xC0\x80"), "\\xC0\\x80") << "an overlong NUL";
    EXPECT_EQ(printable("\xED\xA0\x80"), "\\xED\\xA0\\x80") << "an encoded surrogate";
    // A stray byte 0x85 and the C1 control U+0085 print differently.
    EXPECT_NE(printable("\x85"), printable("\xC2\x85"));
}

TEST(Printable, EscapesTheBackslashSoEscapesAreUnambiguous) {
    EXPECT_EQ(printable("C:\\dir\\n"), "C:\\\\dir\\\\n");
    EXPECT_NE(printable("\\n"), printable("\n"));
}

TEST(Printable, CutsLongTextAtWholePieces) {
    EXPECT_EQ(printable("abcdef", 6), "abcdef");
    EXPECT_EQ(printable("abcdefgh", 6), "abcdef...(2 more bytes)");
    // An escape is never cut: "ab\n" needs 4 bytes, only 3 fit.
    EXPECT_EQ(printable("ab\ncd", 3), "ab...(3 more bytes)");
    // Nor a UTF-8 sequence: U+00E9 takes 2 bytes, only 1 is left.
    EXPECT_EQ(printable("ab\xC3\xA9", 3), "ab...(2 more bytes)");
    EXPECT_EQ(printable("xyz", 0), "...(3 more bytes)");
    const std::string huge(100000, '\x1B');
    const std::string out = printable(huge);
    EXPECT_LE(out.size(), 4096u + 32u);
    EXPECT_EQ(out.substr(0, 4), "\\e\\e");
    EXPECT_NE(out.find("more bytes)"), std::string::npos);
}

TEST(Printable, ValidUtf8IsStrict) {
    EXPECT_TRUE(is_valid_utf8(""));
    EXPECT_TRUE(is_valid_utf8("caf\xC3\xA9 \xF4\x8F\xBF\xBF"));
    EXPECT_FALSE(is_valid_utf8("\xC0\xAF"));          // overlong
    EXPECT_FALSE(is_valid_utf8("\xED\xB0\x80"));      // surrogate
    EXPECT_FALSE(is_valid_utf8("\xF4\x90\x80\x80"));  // above U+10FFFF
    EXPECT_FALSE(is_valid_utf8("ok\xE2\x82"));        // truncated at the end
    EXPECT_FALSE(is_valid_utf8("\x80"));              // a lone continuation byte
}

TEST(Printable, InvalidUtf8OffsetPointsAtTheFirstBadByte) {
    EXPECT_EQ(mnemo::invalid_utf8_offset("caf\xC3\xA9"), std::string::npos);
    EXPECT_EQ(mnemo::invalid_utf8_offset("caf\xC3\xA9\xFF"), 5u);
    EXPECT_EQ(mnemo::invalid_utf8_offset("ab\xE2\x82"), 2u);
    EXPECT_EQ(mnemo::invalid_utf8_offset(std::string_view("a\0\x80", 3)), 2u) << "NUL is valid UTF-8; 0x80 alone is not";
}
