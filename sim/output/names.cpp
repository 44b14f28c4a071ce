// The older staleness names read for a deprecation period (sim/output/names.hpp).

#include "sim/output/names.hpp"

namespace stalesim {

std::string current_csv_names(std::string_view file, std::string text) {
  const size_t end = std::min(text.find('\n'), text.size());
  std::string header;
  size_t start = 0;
  bool changed = false;
  while (start <= end) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos || comma > end) comma = end;
    std::string cell = text.substr(start, comma - start);
    for (const auto& r : kRenamedNames)
      if (file == r.where && cell == r.old_name) {
        cell = r.name;
        changed = true;
        break;
      }
    header += cell;
    if (comma < end) header += ',';
    start = comma + 1;
  }
  if (!changed) return text;
  return header + text.substr(end);
}

bool has_old_summary_names(const nlohmann::json& summary) {
  return summary.is_object() &&
         (summary.contains("staleness_per_gradient") || summary.contains("step_staleness"));
}

nlohmann::json current_summary_names(nlohmann::json s) {
  if (!has_old_summary_names(s)) return s;
  if (s.contains("staleness_per_gradient")) {
    const nlohmann::json per = s["staleness_per_gradient"];
    if (per.contains("missed_updates")) s["missed_updates"] = per["missed_updates"];
    if (per.contains("read_clock_gap")) s["staleness"] = per["read_clock_gap"];
    s.erase("staleness_per_gradient");
  }
  if (s.contains("step_staleness")) {
    if (!s.contains("missed_updates")) s["missed_updates"] = s["step_staleness"];
    s.erase("step_staleness");
  }
  return s;
}

}  // namespace stalesim
