#pragma once
// Names of enumerations as scenario files spell them. Each enum E that has names declares, next
// to E, `std::span<const EnumName<E>> enum_names(E)` (found by argument-dependent lookup) listing
// every named value once, in documentation order. Parsing a name into E happens once, in the
// scenario loader; everything after it switches on E.

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace stalesim {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

// The name of `e`; "" for a value without one. REQUIRES: E declares enum_names(E).
template <class E>
constexpr std::string_view enum_name(E e) {
  for (const auto& n : enum_names(E{}))
    if (n.value == e) return n.name;
  return {};
}

// The value named `name`, or nullopt.
template <class E>
constexpr std::optional<E> enum_from_name(std::string_view name) {
  for (const auto& n : enum_names(E{}))
    if (n.name == name) return n.value;
  return std::nullopt;
}

// Defines `std::span<const EnumName<E>> enum_names(E)` in a header, over the {value, "name"} pairs
// listed after E in documentation order: STALESIM_ENUM_NAMES(Timing, {Timing::kModelled, "modelled"}, ...).
#define STALESIM_ENUM_NAMES(E, ...)                        \
  inline std::span<const EnumName<E>> enum_names(E) {      \
    static constexpr EnumName<E> kNames[] = {__VA_ARGS__}; \
    return kNames;                                         \
  }

// Every name, in documentation order (a field's allowed values).
template <class E>
std::vector<std::string> enum_name_list() {
  std::vector<std::string> out;
  for (const auto& n : enum_names(E{})) out.emplace_back(n.name);
  return out;
}

}  // namespace stalesim
