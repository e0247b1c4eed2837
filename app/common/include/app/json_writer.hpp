// A minimal streaming JSON writer for the programs' --json output (`mnemo bench`, `mnemo compare`,
// `mnemo-kb compress`): objects, arrays, strings (escaped per RFC 8259), numbers (non-finite
// values become null) and booleans, with commas placed for us.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mnemo::app {

class JsonWriter {
public:
    JsonWriter& begin_object();
    JsonWriter& end_object();
    JsonWriter& begin_array();
    JsonWriter& end_array();
    JsonWriter& key(const std::string& k);  // inside an object, before each value
    JsonWriter& value(const std::string& s);
    JsonWriter& value(const char* s) { return value(std::string(s)); }
    JsonWriter& value(double d);
    JsonWriter& value(int64_t i);
    JsonWriter& value(uint64_t u);
    JsonWriter& value(int32_t i) { return value(static_cast<int64_t>(i)); }
    JsonWriter& value(bool b);
    JsonWriter& null();
    // [v0,v1,...]: one value() per item of a container (numbers, strings).
    template <class Items>
    JsonWriter& array(const Items& items) {
        begin_array();
        for (const auto& item : items) value(item);
        return end_array();
    }

    const std::string& str() const { return out_; }

private:
    void before_value();
    // Every value and container opening is placed the same way: comma first when needed.
    JsonWriter& write_value(const std::string& text);
    JsonWriter& open(char bracket);
    JsonWriter& close(char bracket);
    std::string out_;
    std::vector<bool> first_;  // per open container: no element written yet
    bool after_key_ = false;
};

}  // namespace mnemo::app
