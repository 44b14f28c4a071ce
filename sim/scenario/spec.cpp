// The names of the spec enums of sim/scenario/spec.hpp that have no traits table of their own.
#include "sim/scenario/spec.hpp"

namespace stalesim {

std::span<const EnumName<Aggregate>> enum_names(Aggregate) {
  static constexpr EnumName<Aggregate> kNames[] = {{Aggregate::kSum, "sum"}, {Aggregate::kMean, "mean"}};
  return kNames;
}
std::string_view to_string(Aggregate a) { return enum_name(a); }

}  // namespace stalesim
