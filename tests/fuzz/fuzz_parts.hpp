#pragma once
// Shared by the harnesses that fuzz a folder's files (fuzz_compare, fuzz_summarize): one input
// split into files at lines "----", and the folder they are written to.

#include <unistd.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace stalesim::fuzz {

// `text` cut at each "\n----\n" into at most `most` parts (the last takes the rest).
inline std::vector<std::string_view> parts_of(std::string_view text, size_t most) {
  std::vector<std::string_view> parts;
  constexpr std::string_view kSep = "\n----\n";
  size_t from = 0;
  while (parts.size() + 1 < most) {
    const size_t at = text.find(kSep, from);
    if (at == std::string_view::npos) break;
    parts.push_back(text.substr(from, at - from));
    from = at + kSep.size();
  }
  parts.push_back(text.substr(from));
  return parts;
}

// A harness's scratch folder, /tmp/stalesim-fuzz-NAME-PID, made when constructed and removed
// with what it holds when destroyed: held in a function-local static, it goes when the process
// exits (libFuzzer ends a timed run with exit(), which runs the destructor), so no temporary is
// left behind. It removes only the path it made.
class ScratchFolder {
 public:
  // `inner`: a folder to make inside it too ("": none).
  explicit ScratchFolder(const std::string& name, const std::string& inner = "")
      : path_(std::filesystem::temp_directory_path() /
              ("stalesim-fuzz-" + name + "-" + std::to_string(::getpid()))) {
    std::filesystem::create_directories(inner.empty() ? path_ : path_ / inner);
  }
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  ~ScratchFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace stalesim::fuzz
