// Reading a scenario's text: the file (size-capped) and its JSON, with duplicate keys refused and
// parse errors turned into "<origin>:L:C: invalid JSON: ..." messages.
#include <algorithm>
#include <cstddef>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "base/file_read.hpp"
#include "sim/scenario/detail.hpp"

namespace stalesim::scenario_detail {

std::string read_file(const std::string& path) {
  std::string why;
  auto text = read_regular_file(path, kMaxScenarioBytes, why);
  if (!text) throw ScenarioError(fmt::format("{}: cannot read: {}", path, why));
  return std::move(*text);
}

namespace {

// A first pass over the text that refuses a duplicate key, naming its path (PathError). A SAX pass
// and then a plain parse, both linear: nlohmann's parser callback, which this replaces, scans the
// whole enclosing array at every object's end (a graph of 100,000 nodes took seconds, issue 46).
// A syntax error stops this pass quietly; the parse that follows reports it.
class DuplicateKeys {
 public:
  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(json::number_integer_t) { return value(); }
  bool number_unsigned(json::number_unsigned_t) { return value(); }
  bool number_float(json::number_float_t, const json::string_t&) { return value(); }
  bool string(json::string_t&) { return value(); }
  bool binary(json::binary_t&) { return value(); }
  bool start_object(size_t) {
    stack_.push_back({});
    return true;
  }
  bool start_array(size_t) {
    stack_.push_back({.array = true});
    return true;
  }
  bool end_object() { return end(); }
  bool end_array() { return end(); }
  bool key(json::string_t& key) {
    if (!stack_.back().keys.insert(key).second) {
      stack_.back().key = key;
      stack_.push_back({});  // so that where() includes the key
      fail(where(), "duplicate key");
    }
    stack_.back().key = key;
    return true;
  }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 private:
  struct Frame {
    bool array = false;
    size_t index = 0;
    std::string key{};
    std::set<std::string> keys{};
  };
  std::string where() const {
    std::string p;
    for (size_t i = 0; i + 1 < stack_.size(); ++i)
      p += "/" + (stack_[i].array ? std::to_string(stack_[i].index) : escape_token(stack_[i].key));
    return p;
  }
  bool value() {
    if (!stack_.empty() && stack_.back().array) ++stack_.back().index;
    return true;
  }
  bool end() {
    stack_.pop_back();
    return value();
  }
  std::vector<Frame> stack_;
};

}  // namespace

// Parses JSON text, rejecting duplicate keys. Throws ScenarioError "<origin>:L:C: invalid JSON: ...".
json parse_json_text(const std::string& text, const std::string& origin) {
  if (const std::string shape = json_shape_problem(text); !shape.empty())
    throw ScenarioError(fmt::format("{}: invalid JSON: {}", origin, shape));
  try {
    DuplicateKeys keys;
    json::sax_parse(text, &keys);
    return json::parse(text);
  } catch (const PathError& e) {
    throw scenario_error(origin, e);
  } catch (const json::parse_error& e) {
    // e.byte counts the characters read, the offending one included: its 1-based offset.
    const size_t offset = std::min<size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    size_t line = 1, line_start = 0;
    for (size_t i = 0; i < offset; ++i) {
      if (text[i] == '\n') {
        ++line;
        line_start = i + 1;
      }
    }
    const size_t column = offset - line_start + 1;
    std::string reason = e.what();
    if (const size_t at = reason.find("column "); at != std::string::npos)
      if (const size_t colon = reason.find(": ", at); colon != std::string::npos)
        reason = reason.substr(colon + 2);
    if (const size_t last = reason.find("; last read: "); last != std::string::npos) {
      const size_t next = reason.find("; ", last + 2);
      reason.erase(last, next == std::string::npos ? std::string::npos : next - last);
    }
    throw ScenarioError(fmt::format("{}:{}:{}: invalid JSON: {}", origin, line, column, reason));
  } catch (const json::out_of_range& e) {
    // A number too large for a double ("1e400"): nlohmann says which, but not where. Found by
    // tests/fuzz/fuzz_scenario (it escaped as an internal error, exit 3).
    std::string reason = e.what();
    if (const size_t at = reason.find("] "); at != std::string::npos) reason = reason.substr(at + 2);
    std::string where;
    if (const size_t q = reason.find('\''), q2 = reason.rfind('\''); q != std::string::npos && q2 > q)
      if (const size_t at = text.find(reason.substr(q + 1, q2 - q - 1)); at != std::string::npos) {
        const size_t line = 1 + static_cast<size_t>(std::count(
                                    text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
        const size_t nl = text.rfind('\n', at);
        where = fmt::format(":{}:{}", line, at - (nl == std::string::npos ? 0 : nl + 1) + 1);
      }
    throw ScenarioError(
        fmt::format("{}{}: invalid JSON: {} (larger than a double can hold)", origin, where, reason));
  }
}

}  // namespace stalesim::scenario_detail
