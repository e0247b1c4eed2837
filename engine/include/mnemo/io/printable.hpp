// Text from outside (a client's request field, a corpus title, a bank's CURRENT file, a model's
// vocabulary) must not reach a terminal or a log line as is: a newline forges a log line, an
// escape sequence rewrites the user's terminal, and invalid UTF-8 breaks whatever parses the log.
// `printable()` makes such text safe to print while keeping it recognisable.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include "mnemo/api.hpp"

namespace mnemo {

// Valid UTF-8 is kept, except control characters (C0, DEL, C1), the line and paragraph
// separators U+2028/U+2029 and the bidirectional overrides (U+202A..U+202E, U+2066..U+2069),
// which become \n, \t, \r, \e, \xHH (below U+0080) or \u{HHHH}; a backslash becomes "\\" so an
// escape in the output always means one was made. Each byte that is not valid UTF-8 becomes \xHH
// (>= \x80 only ever stands for such a byte). When the result would be longer than `max_chars`
// bytes, it keeps the whole escapes and characters that fit in `max_chars` and then says
// "...(N more bytes)", N counting the input bytes left out.
MNEMO_API std::string printable(std::string_view text, size_t max_chars = 4096);

// True when `text` is well-formed UTF-8 (no overlongs, no surrogates, nothing above U+10FFFF).
MNEMO_API bool is_valid_utf8(std::string_view text);
// The offset of the first byte where `text` stops being well-formed UTF-8, or std::string::npos:
// for errors that say where a file is not UTF-8.
MNEMO_API size_t invalid_utf8_offset(std::string_view text);

}  // namespace mnemo
