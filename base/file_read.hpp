#pragma once
// Bounded reading of input files (REFERENCE.md "Safety and errors"): the one reader of every file stalesim
// reads: scenarios, sweep files, device profiles, jitter traces, run summaries, sweep.json, sweep.csv and
// metrics.csv (tests/layers/check_layers.sh fails on a file read anywhere else). A path must name
// a regular file (not a FIFO, a device such as /dev/zero, or a folder) no larger than a stated
// cap; the text is read whole. JSON text is also checked for nesting depth before parsing, so a
// hostile document cannot exhaust the stack, and for duplicate keys, which a parser would
// otherwise resolve silently.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace stalesim {

inline constexpr std::uint64_t kMaxScenarioBytes = 16u << 20;  // 16 MiB of JSON
inline constexpr std::uint64_t kMaxTraceBytes = 256u << 20;    // a jitter trace
inline constexpr std::uint64_t kMaxSummaryBytes = 256u << 20;  // a run's summary.json
inline constexpr int kMaxJsonDepth = 64;                       // nested arrays and objects

// The whole file, or nullopt with `error` set to the reason in words ("not a regular file (a
// FIFO)", "larger than 16 MiB (20000000 bytes)", "No such file or directory").
// `follow_links` false: a final symbolic link is refused ("a symbolic link") instead of followed
// (O_NOFOLLOW), for files whose place proves something, such as a temporary's marker.
std::optional<std::string> read_regular_file(const std::string& path, std::uint64_t max_bytes,
                                             std::string& error, bool follow_links = true);

// Follows JSON text character by character and says which characters lie inside a string (its
// quotes included), so that brackets and commas in strings are not taken for structure.
struct JsonStringScanner {
  bool in_string = false;
  bool escaped = false;
  // Whether `c` belongs to a string.
  bool in_string_at(char c) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      return true;
    }
    in_string = c == '"';
    return in_string;
  }
};

// The problem with `text` as JSON nesting (depth > max_depth at byte N), or "" when fine; also
// recognises UTF-16 and UTF-32 text ("is UTF-16: save it as UTF-8").
std::string json_shape_problem(std::string_view text, int max_depth = kMaxJsonDepth);

inline constexpr std::uint64_t kMaxProfileBytes = 1u << 20;    // a device profile
inline constexpr std::uint64_t kMaxDataFileBytes = 1u << 30;   // one dataset file (Fashion-MNIST's are 47 MB)
inline constexpr std::uint64_t kMaxManifestBytes = 64u << 20;  // a sweep's sweep.json or sweep.csv

// The first key of the JSON `text` that repeats one of its object's keys, as a JSON pointer
// ("/cluster/workers/0/count"), or nullopt (also when the text is not JSON: the parser says so).
std::optional<std::string> duplicate_key(std::string_view text);

// JSON `text` parsed with its nesting capped (json_shape_problem) and duplicate keys refused:
// the value, or nullopt with `error` set in the words every reader uses: "invalid JSON: arrays
// and objects nested deeper than 64 levels (at byte N)", "invalid JSON at line L, column C:
// REASON", "duplicate key at /a/b".
std::optional<nlohmann::json> parse_json_bounded(std::string_view text, std::string& error);

// read_regular_file and parse_json_bounded: `error` is "cannot read: REASON" or the JSON problem.
std::optional<nlohmann::json> read_json_file(const std::string& path, std::uint64_t max_bytes,
                                             std::string& error, bool follow_links = true);

}  // namespace stalesim
