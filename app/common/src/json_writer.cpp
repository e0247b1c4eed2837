#include "app/json_writer.hpp"

#include "mnemo/io/json.hpp"

#include <cmath>
#include <cstdio>

namespace mnemo::app {

void JsonWriter::before_value() {
    if (after_key_) {
        after_key_ = false;
        return;
    }
    if (!first_.empty()) {
        if (!first_.back()) out_ += ',';
        first_.back() = false;
    }
}

JsonWriter& JsonWriter::write_value(const std::string& text) {
    before_value();
    out_ += text;
    return *this;
}

JsonWriter& JsonWriter::open(char bracket) {
    write_value(std::string(1, bracket));
    first_.push_back(true);
    return *this;
}

JsonWriter& JsonWriter::close(char bracket) {
    out_ += bracket;
    first_.pop_back();
    return *this;
}

JsonWriter& JsonWriter::begin_object() { return open('{'); }
JsonWriter& JsonWriter::end_object() { return close('}'); }
JsonWriter& JsonWriter::begin_array() { return open('['); }
JsonWriter& JsonWriter::end_array() { return close(']'); }

JsonWriter& JsonWriter::key(const std::string& k) {
    write_value(json::quote(k) + ':');
    after_key_ = true;
    return *this;
}

JsonWriter& JsonWriter::value(const std::string& s) { return write_value(json::quote(s)); }

JsonWriter& JsonWriter::value(double d) {
    if (!std::isfinite(d)) return null();
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.10g", d);
    return write_value(buf);
}

JsonWriter& JsonWriter::value(int64_t i) { return write_value(std::to_string(i)); }
JsonWriter& JsonWriter::value(uint64_t u) { return write_value(std::to_string(u)); }
JsonWriter& JsonWriter::value(bool b) { return write_value(b ? "true" : "false"); }
JsonWriter& JsonWriter::null() { return write_value("null"); }

}  // namespace mnemo::app
