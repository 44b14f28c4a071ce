// scenario_to_json (sim/scenario/to_json.hpp): the resolved scenario, every field that applies,
// written back in the field table's order.
#include "sim/scenario/to_json.hpp"

#include <string>
#include <utility>

#include "sim/scenario/detail.hpp"

namespace stalesim {

using namespace scenario_detail;

nlohmann::json scenario_to_json(const Scenario& s) {
  json out = json::object();
  for (const auto& f : scenario_fields()) {
    if (!applies_in(f, s)) continue;
    if (const size_t star = f.path.find('*'); star != std::string::npos) {
      const json::json_pointer array_ptr(f.path.substr(0, star - 1));
      if (!out.contains(array_ptr)) continue;
      for (size_t i = 0; i < out[array_ptr].size(); ++i) {
        json v = f.get(s, i);
        if (!v.is_discarded()) out[json::json_pointer(instantiate(f.path, i))] = std::move(v);  // absent
      }
    } else if (f.type == FieldType::kObject) {
      out[json::json_pointer(f.path)] = json::object();
    } else {
      out[json::json_pointer(f.path)] = f.get(s, 0);
    }
  }
  return out;
}

}  // namespace stalesim
