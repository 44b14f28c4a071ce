#pragma once
// Small text helpers shared by the scenario loader, sweeps, sweep files and summaries: the one
// edit distance behind every "did you mean", and the one CSV quoting rule of every CSV we write.

#include <cstddef>
#include <string>
#include <string_view>

namespace stalesim {

// Optimal string alignment distance (Levenshtein plus adjacent transpositions), case-insensitive.
std::size_t edit_distance(std::string_view a, std::string_view b);

// `s` as one CSV cell (RFC 4180): as is unless it holds a comma, a quote or a line break, then
// quoted with its quotes doubled.
std::string csv_escape(const std::string& s);

// `s` safe to print on a terminal: control characters (escape sequences, line breaks, tabs, DEL)
// written as \n, \t, \r or \xNN and a backslash doubled, so text a user wrote (a profile name, a
// manifest's flags, a folder name) can neither move the cursor nor fake a line of output.
std::string escaped(std::string_view s);

}  // namespace stalesim
