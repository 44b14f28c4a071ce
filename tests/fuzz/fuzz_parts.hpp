#pragma once
// Shared by the harnesses that fuzz a folder's files (fuzz_compare, fuzz_summarize): one input
// split into files at lines "----".

#include <cstddef>
#include <string_view>
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

}  // namespace stalesim::fuzz
