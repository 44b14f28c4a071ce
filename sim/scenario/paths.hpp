#pragma once
// Dotted field paths ("cluster.workers.0.count") as --set, --grid and sweep files write them: the
// one splitter of such a path, and the one ranking behind every "did you mean" of a key or path.

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace stalesim {

// "a.b.c" -> {"a", "b", "c"}; empty parts are kept ("a..b" -> {"a", "", "b"}).
std::vector<std::string> split_field_path(std::string_view path);

// The names closest to `key` by edit_distance (sim/text.hpp), at most `max_distance` away: every
// name at the smallest distance, in the order of `names`; empty when none is close enough.
std::vector<std::string> closest_names(std::string_view key, std::span<const std::string> names,
                                       std::size_t max_distance);

}  // namespace stalesim
