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

// Parses JSON text, rejecting duplicate keys. Throws ScenarioError "<origin>:L:C: invalid JSON: ...".
json parse_json_text(const std::string& text, const std::string& origin) {
  struct Frame {
    bool array = false;
    size_t index = 0;
    std::string key{};
    std::set<std::string> keys{};
  };
  std::vector<Frame> stack;
  auto where = [&] {
    std::string p;
    for (size_t i = 0; i + 1 < stack.size(); ++i)
      p += "/" + (stack[i].array ? std::to_string(stack[i].index) : escape_token(stack[i].key));
    return p;
  };
  auto element_done = [&] {
    if (!stack.empty() && stack.back().array) ++stack.back().index;
  };
  const json::parser_callback_t on_event = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
        stack.push_back({});
        break;
      case json::parse_event_t::array_start:
        stack.push_back({.array = true});
        break;
      case json::parse_event_t::key: {
        auto key = parsed.get<std::string>();
        if (!stack.back().keys.insert(key).second) {
          stack.back().key = key;
          stack.push_back({});  // so that where() includes the key
          fail(where(), "duplicate key");
        }
        stack.back().key = std::move(key);
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        stack.pop_back();
        element_done();
        break;
      case json::parse_event_t::value:
        element_done();
        break;
    }
    return true;
  };
  if (const std::string shape = json_shape_problem(text); !shape.empty())
    throw ScenarioError(fmt::format("{}: invalid JSON: {}", origin, shape));
  try {
    return json::parse(text, on_event);
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
