#include "base/file_read.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <set>
#include <vector>

#include <fmt/format.h>

namespace stalesim {

namespace {

const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a folder";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a plain file";
}

std::string size_words(std::uint64_t bytes) {
  if (bytes % (1u << 20) == 0) return fmt::format("{} MiB", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

}  // namespace

std::optional<std::string> read_regular_file(const std::string& path, std::uint64_t max_bytes,
                                             std::string& error, bool follow_links) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; fstat then refuses it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | (follow_links ? 0 : O_NOFOLLOW));
  if (fd < 0) {
    error = !follow_links && errno == ELOOP ? "a symbolic link" : std::strerror(errno);
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    error = std::strerror(errno);
    ::close(fd);
    return std::nullopt;
  }
  if (!S_ISREG(st.st_mode)) {
    error = fmt::format("not a regular file ({})", kind_of(st.st_mode));
    ::close(fd);
    return std::nullopt;
  }
  if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
    error = fmt::format("larger than {} ({} bytes)", size_words(max_bytes), st.st_size);
    ::close(fd);
    return std::nullopt;
  }
  std::string text;
  text.reserve(static_cast<size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) {
      error = std::strerror(errno);
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
    if (text.size() > max_bytes) {  // grew while being read
      error = fmt::format("larger than {}", size_words(max_bytes));
      ::close(fd);
      return std::nullopt;
    }
  }
  ::close(fd);
  return text;
}

std::string json_shape_problem(std::string_view text, int max_depth) {
  if (text.size() >= 2) {
    const auto b0 = static_cast<unsigned char>(text[0]), b1 = static_cast<unsigned char>(text[1]);
    const bool bom16 = (b0 == 0xFF && b1 == 0xFE) || (b0 == 0xFE && b1 == 0xFF);
    const bool zeros = b0 == 0 || b1 == 0;  // UTF-16/32 without a byte order mark
    if (bom16 || zeros)
      return "the text is UTF-16 or UTF-32, not UTF-8: save it as UTF-8 (e.g. iconv -f UTF-16 -t UTF-8)";
  }
  int depth = 0;
  JsonStringScanner strings;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (strings.in_string_at(c)) continue;
    if (c == '[' || c == '{') {
      if (++depth > max_depth)
        return fmt::format("arrays and objects nested deeper than {} levels (at byte {})", max_depth, i + 1);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return "";
}

namespace {

// Tracks the keys of every open object and stops at the first repeated one.
class DuplicateKeys : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::optional<std::string> found;

  bool null() override { return value(); }
  bool boolean(bool) override { return value(); }
  bool number_integer(number_integer_t) override { return value(); }
  bool number_unsigned(number_unsigned_t) override { return value(); }
  bool number_float(number_float_t, const string_t&) override { return value(); }
  bool string(string_t&) override { return value(); }
  bool binary(binary_t&) override { return value(); }
  bool start_object(std::size_t) override {
    stack_.push_back({});
    return true;
  }
  bool key(string_t& k) override {
    Frame& f = stack_.back();
    f.key = k;
    if (!f.keys.insert(k).second) {
      found = where();
      return false;
    }
    return true;
  }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override {
    stack_.push_back({.array = true});
    return true;
  }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }

 private:
  struct Frame {
    bool array = false;
    std::size_t index = 0;
    std::string key{};
    std::set<std::string> keys{};
  };
  std::vector<Frame> stack_;

  bool value() {
    if (!stack_.empty() && stack_.back().array) ++stack_.back().index;
    return true;
  }
  bool close() {
    stack_.pop_back();
    return value();
  }
  std::string where() const {
    std::string p;
    for (const Frame& f : stack_) {
      p += '/';
      if (f.array) {
        p += std::to_string(f.index);
        continue;
      }
      for (char c : f.key)
        p += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
    }
    return p;
  }
};

}  // namespace

std::optional<std::string> duplicate_key(std::string_view text) {
  DuplicateKeys sax;
  nlohmann::json::sax_parse(text, &sax);
  return sax.found;
}

std::optional<nlohmann::json> parse_json_bounded(std::string_view text, std::string& error) {
  if (const std::string shape = json_shape_problem(text); !shape.empty()) {
    error = "invalid JSON: " + shape;
    return std::nullopt;
  }
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    if (const auto dup = duplicate_key(text)) {
      error = fmt::format("duplicate key at {}", *dup);
      return std::nullopt;
    }
    return j;
  } catch (const nlohmann::json::exception& e) {
    const auto* pe = dynamic_cast<const nlohmann::json::parse_error*>(&e);
    std::string reason = e.what();
    if (const size_t at = reason.find("] "); at != std::string::npos) reason = reason.substr(at + 2);
    if (!pe) {
      error = fmt::format("invalid JSON: {}", reason);
      return std::nullopt;
    }
    size_t line = 1, column = 1;
    for (size_t i = 0; i + 1 < pe->byte && i < text.size(); ++i) {
      if (text[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    if (const size_t at = reason.find(": "); at != std::string::npos) reason = reason.substr(at + 2);
    error = fmt::format("invalid JSON at line {}, column {}: {}", line, column, reason);
    return std::nullopt;
  }
}

std::optional<nlohmann::json> read_json_file(const std::string& path, std::uint64_t max_bytes,
                                             std::string& error, bool follow_links) {
  std::string why;
  const auto text = read_regular_file(path, max_bytes, why, follow_links);
  if (!text) {
    error = "cannot read: " + why;
    return std::nullopt;
  }
  return parse_json_bounded(*text, error);
}

}  // namespace stalesim
