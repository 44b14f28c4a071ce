#pragma once
// Internal to the field table's files (sim/scenario/fields_*.cpp): the conversions between JSON
// values and Scenario members that each row's set/get use, and the table's sections.

#include <cstddef>
#include <iterator>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/scenario/detail.hpp"
#include "sim/scenario/fields.hpp"
#include "sim/scenario/scenario.hpp"

namespace stalesim::scenario_detail {

// ---- Conversions between JSON and Scenario members ----------------------------------------

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <class T>
T integer_from(const json& v) {  // REQUIRES: integral_value(v) and in T's range
  if (v.is_number_unsigned()) return static_cast<T>(v.get<uint64_t>());
  if (v.is_number_integer()) return static_cast<T>(v.get<int64_t>());
  return static_cast<T>(v.get<double>());
}

template <class T>
T from_json_value(const json& v) {  // REQUIRES: v passed the field's checks
  if constexpr (IsOptional<T>::value) {
    if (v.is_null()) return std::nullopt;
    return from_json_value<typename T::value_type>(v);
  } else if constexpr (std::is_enum_v<T>) {  // a name, checked against the field's allowed values
    return *enum_from_name<T>(v.get<std::string>());
  } else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
    T out;
    for (const auto& item : v) out.push_back(integer_from<int64_t>(item));
    return out;
  } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, std::string>) {
    return v.get<T>();
  } else if constexpr (std::is_integral_v<T>) {
    return integer_from<T>(v);
  } else {
    static_assert(std::is_same_v<T, double>);
    return v.get<double>();
  }
}

template <class T>
json to_json_value(const T& x) {
  if constexpr (IsOptional<T>::value) {
    return x ? to_json_value(*x) : json(nullptr);
  } else if constexpr (std::is_enum_v<T>) {
    return std::string(enum_name(x));
  } else {
    return json(x);
  }
}

// The member reached from `obj` through a chain of member pointers: member<&A::b, &B::c>(a) is a.b.c.
template <auto M, auto... Ms, class T>
auto& member(T& obj) {
  if constexpr (sizeof...(Ms) == 0) {
    return obj.*M;
  } else {
    return member<Ms...>(obj.*M);
  }
}

template <auto... Ms>
void set_m(Scenario& s, size_t, const json& v) {
  auto& m = member<Ms...>(s);
  m = from_json_value<std::remove_cvref_t<decltype(m)>>(v);
}
template <auto... Ms>
json get_m(const Scenario& s, size_t) {
  return to_json_value(member<Ms...>(s));
}
// A member of item i of a cluster list: Items is &ClusterSpec::workers or &ClusterSpec::schedule.
template <auto Items, auto M>
void set_item(Scenario& s, size_t i, const json& v) {
  auto& m = (s.cluster.*Items)[i].*M;
  m = from_json_value<std::remove_cvref_t<decltype(m)>>(v);
}
template <auto Items, auto M>
json get_item(const Scenario& s, size_t i) {
  return to_json_value((s.cluster.*Items)[i].*M);
}

// A group's optional object: its own jitter (cluster.workers[i].jitter) or its profile file's
// figures (cluster.workers[i].device). Absent unless given, so its keys are written back only for
// groups that have one (a discarded JSON value means "omit").
template <auto Part, auto M>
void set_group_part(Scenario& s, size_t i, const json& v) {
  auto& part = s.cluster.workers[i].*Part;
  if (!part) part.emplace();
  auto& m = (*part).*M;
  m = from_json_value<std::remove_cvref_t<decltype(m)>>(v);
}
template <auto Part, auto M>
json get_group_part(const Scenario& s, size_t i) {
  const auto& part = s.cluster.workers[i].*Part;
  return part ? to_json_value((*part).*M) : json(json::value_t::discarded);
}

// ---- The table's sections, in documentation order ------------------------------------------
// Each takes the defaults `d` (the Scenario defaults with one default worker group) and returns
// its rows, parents before children; fields.cpp joins them into scenario_fields().

std::vector<FieldInfo> top_fields(const Scenario& d);        // name, seed, comment (fields_run.cpp)
std::vector<FieldInfo> data_fields(const Scenario& d);       // data (fields_data.cpp)
std::vector<FieldInfo> model_fields(const Scenario& d);      // model (fields_model.cpp)
std::vector<FieldInfo> optimizer_fields(const Scenario& d);  // optimizer (fields_optimizer.cpp)
std::vector<FieldInfo> policy_fields(const Scenario& d);     // policy (fields_policy.cpp)
std::vector<FieldInfo> cluster_fields(const Scenario& d);    // cluster (fields_cluster.cpp)
std::vector<FieldInfo> topology_fields(const Scenario& d);   // cluster.network's topology (fields_topology.cpp)
std::vector<FieldInfo> run_fields(const Scenario& d);        // compute, stop, eval (fields_run.cpp)

// Appends `rows` to `table`.
inline void append(std::vector<FieldInfo>& table, std::vector<FieldInfo> rows) {
  table.insert(table.end(), std::make_move_iterator(rows.begin()), std::make_move_iterator(rows.end()));
}

}  // namespace stalesim::scenario_detail
