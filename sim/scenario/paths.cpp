// Dotted field paths and "did you mean" (sim/scenario/paths.hpp): the one splitter of --set,
// --grid and sweep file keys, and the one ranking of close names.
#include "sim/scenario/paths.hpp"

#include "sim/text.hpp"

namespace stalesim {

std::vector<std::string> split_field_path(std::string_view path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    parts.emplace_back(path.substr(start, dot == std::string_view::npos ? path.npos : dot - start));
    if (dot == std::string_view::npos) return parts;
    start = dot + 1;
  }
}

std::vector<std::string> closest_names(std::string_view key, std::span<const std::string> names,
                                       std::size_t max_distance) {
  std::size_t best = max_distance;
  std::vector<std::string> close;
  for (const auto& n : names) {
    const std::size_t dist = edit_distance(key, n);
    if (dist > best) continue;
    if (dist < best) {
      close.clear();
      best = dist;
    }
    close.push_back(n);
  }
  return close;
}

}  // namespace stalesim
