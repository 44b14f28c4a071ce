#include "sim/output/timeline.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/output/explain.hpp"
#include "sim/policies/sync_policy.hpp"
#include "sim/text.hpp"

namespace stalesim {

namespace {

enum Cell { kCompute = 0, kCommunicate = 1, kWait = 2, kNone = 3, kMarker = 4 };
constexpr std::array<const char*, 5> kGlyph = {"█", "▄", "░", " ", "▼"};
constexpr std::array<const char*, 5> kColour = {"\033[32m", "\033[36m", "\033[33m", "", "\033[1;31m"};
constexpr const char* kReset = "\033[0m";

Cell cell_of(Activity a) {
  switch (a) {
    case Activity::kCompute:
      return kCompute;
    case Activity::kWait:
      return kWait;
    case Activity::kPush:
    case Activity::kPull:
      return kCommunicate;
  }
  return kNone;
}

// Display width of plain (ASCII) text.
std::string pad(const std::string& s, size_t width) {
  return s + std::string(width > s.size() ? width - s.size() : 0, ' ');
}

}  // namespace

void TimelineRecorder::start(const ClockTable& clocks, const SyncPolicy& policy,
                             const std::vector<std::string>& profiles) {
  clocks_ = &clocks;
  Narrator n;
  n.start(clocks, policy);
  policy_ = fmt::format("{}, {}", policy.name(), n.bound());
  rows_.assign(profiles.size(), Row{});
  for (size_t w = 0; w < profiles.size(); ++w) rows_[w].profile = profiles[w];
}

void TimelineRecorder::close(Row& row, SimTime end) {
  const SimTime b = end < until_ ? end : until_;
  if (b > row.since) row.spans.push_back({row.current, row.since, b, row.current_blocked});
}

void TimelineRecorder::activity(SimTime now, int32_t worker, Activity a) {
  Row& row = rows_[static_cast<size_t>(worker)];
  close(row, now);
  row.current = a;
  row.since = now;
  row.current_blocked = false;
}

void TimelineRecorder::blocked(SimTime now, int32_t worker, WaitCause cause, int64_t, int64_t) {
  Row& row = rows_[static_cast<size_t>(worker)];
  if (now >= until_) return;
  row.current_blocked = true;  // the wait that began at `now`
  ++row.blocks;
  // Who it waits for: the slowest worker now (as Narrator::waits_for); a value-bound hold, no one.
  ++row.blocked_for[cause == WaitCause::kValueBound ? -1 : clocks_->slowest()];
}

void TimelineRecorder::update(SimTime now, int32_t worker, int64_t, int64_t, int64_t) {
  if (now < until_) ++rows_[static_cast<size_t>(worker)].updates;
}

void TimelineRecorder::finish(SimTime end) {
  end_ = end;
  for (auto& row : rows_) {
    close(row, end);
    row.since = end;
  }
}

std::string TimelineRecorder::render(const std::string& title, int width, bool color) const {
  const int64_t total = until_.ns();
  const auto edge = [&](int c) { return total * c / width; };  // cell c covers [edge(c), edge(c+1))
  std::vector<std::string> labels;
  size_t label_width = 0;
  for (size_t w = 0; w < rows_.size(); ++w) {
    labels.push_back(fmt::format("w{} {}", w, escaped(rows_[w].profile)));
    label_width = std::max(label_width, labels.back().size());
  }
  const bool ms = until_ < SimTime::from_seconds(1);  // label the axis in milliseconds
  std::string out = fmt::format("timeline of {}: {}; {} workers; 0 to {:g} s, one cell = {:g} ms\n", title,
                                policy_, rows_.size(), until_.seconds(), until_.seconds() * 1e3 / width);
  // Axis: tick labels at 0, 1/4, 1/2, 3/4 and the end of the span.
  std::string axis(static_cast<size_t>(width) + 8, ' ');
  size_t used = 0;
  for (int k = 0; k <= 4; ++k) {
    const std::string t = ms ? fmt::format("{:g}ms", until_.seconds() * 1e3 * k / 4)
                             : fmt::format("{:g}s", until_.seconds() * k / 4);
    size_t at = static_cast<size_t>(width * k / 4);
    if (k == 4)
      at = static_cast<size_t>(width) + 1 >= t.size() ? static_cast<size_t>(width) + 1 - t.size() : 0;
    if (k > 0 && at < used + 1) continue;
    axis.replace(at, t.size(), t);
    used = at + t.size();
  }
  while (!axis.empty() && axis.back() == ' ') axis.pop_back();
  out += pad("", label_width) + "  " + axis + "\n";
  for (size_t w = 0; w < rows_.size(); ++w) {
    const Row& row = rows_[w];
    std::vector<std::array<int64_t, 3>> cover(static_cast<size_t>(width), {0, 0, 0});
    std::vector<bool> marker(static_cast<size_t>(width), false);
    int64_t waited = 0;
    for (const Span& s : row.spans) {
      const Cell kind = cell_of(s.activity);
      if (kind == kWait) waited += (s.end - s.start).ns();
      const int first = static_cast<int>(s.start.ns() * width / total);
      for (int c = first; c < width && edge(c) < s.end.ns(); ++c) {
        const int64_t lo = std::max(edge(c), s.start.ns()), hi = std::min(edge(c + 1), s.end.ns());
        if (hi > lo) cover[static_cast<size_t>(c)][static_cast<size_t>(kind)] += hi - lo;
      }
      if (s.blocked && 2 * (s.end - s.start).ns() >= edge(first + 1) - edge(first) && first < width)
        marker[static_cast<size_t>(first)] = true;
    }
    std::string line = pad(labels[w], label_width) + " │";
    int colour = -1;
    for (int c = 0; c < width; ++c) {
      const auto& cv = cover[static_cast<size_t>(c)];
      int best = kNone;
      int64_t most = 0;
      for (int k = 0; k < 3; ++k)
        if (cv[static_cast<size_t>(k)] > most) most = cv[static_cast<size_t>(k)], best = k;
      if (marker[static_cast<size_t>(c)]) best = kMarker;
      if (color && best != colour) {
        if (colour >= 0) line += kReset;
        line += kColour[static_cast<size_t>(best)];
        colour = best;
      }
      line += kGlyph[static_cast<size_t>(best)];
    }
    if (color) line += kReset;
    // Who it waited for, most waited-for first: "6 blocked (6 for w0)".
    std::vector<std::pair<int64_t, int32_t>> by_count;
    for (const auto& [w, n] : row.blocked_for) by_count.emplace_back(-n, w);
    std::sort(by_count.begin(), by_count.end());
    std::string whom;
    for (const auto& [n, w] : by_count)
      whom += fmt::format("{}{} {}", whom.empty() ? " (" : ", ", -n,
                          w < 0 ? "value-bound holds" : fmt::format("for w{}", w));
    if (!whom.empty()) whom += ")";
    line += fmt::format("│ {} updates, {} blocked{}, {:.0f}% waiting\n", row.updates, row.blocks, whom,
                        100.0 * static_cast<double>(waited) / static_cast<double>(total));
    out += line;
  }
  const auto key = [&](Cell c) {
    return color ? fmt::format("{}{}{}", kColour[static_cast<size_t>(c)], kGlyph[static_cast<size_t>(c)],
                               kReset)
                 : std::string(kGlyph[static_cast<size_t>(c)]);
  };
  out += fmt::format(
      "{} compute  {} communicate (push, pull)  {} wait  {} blocked by the policy here (for wN: waiting for "
      "the slowest worker, wN)",
      key(kCompute), key(kCommunicate), key(kWait), key(kMarker));
  if (end_ < until_) out += fmt::format("  (the run ended at {:g} s)", end_.seconds());
  out += "\n";
  return out;
}

SimTime parse_duration(const std::string& text) {
  std::string number = text;
  double unit = 1.0;
  if (number.size() > 2 && number.ends_with("ms")) {
    number.resize(number.size() - 2);
    unit = 1e-3;
  } else if (number.size() > 1 && number.ends_with("s")) {
    number.resize(number.size() - 1);
  }
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(number, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (number.empty() || used != number.size() || !(v * unit >= 1e-9) || v * unit > 1e9)
    throw std::invalid_argument(
        fmt::format("expected a duration from 1 ns to 1e9 s such as 5s, 250ms or 2.5, got '{}'", text));
  return SimTime::from_seconds(v * unit);
}

}  // namespace stalesim
