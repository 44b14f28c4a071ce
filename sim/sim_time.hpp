#pragma once
// SimTime: virtual time as a strong type over int64 nanoseconds (design.md section 2, rule 1).
// Conversions to and from seconds happen only at the edges: scenario loading and output.

#include <cmath>
#include <compare>
#include <cstdint>
#include <limits>

namespace stalesim {

class SimTime {
 public:
  constexpr SimTime() = default;
  static constexpr SimTime from_ns(int64_t ns) { return SimTime(ns); }
  static constexpr SimTime zero() { return SimTime(0); }
  static constexpr SimTime max() { return SimTime(std::numeric_limits<int64_t>::max()); }
  // Rounds to the nearest nanosecond. REQUIRES: finite, |s| < 9.2e9.
  static SimTime from_seconds(double s) { return SimTime(static_cast<int64_t>(std::llround(s * 1e9))); }
  static SimTime from_us(double us) { return SimTime(static_cast<int64_t>(std::llround(us * 1e3))); }

  constexpr int64_t ns() const { return ns_; }
  // Divides (correctly rounded), so whole seconds print as whole numbers.
  constexpr double seconds() const { return static_cast<double>(ns_) / 1e9; }

  constexpr SimTime operator+(SimTime o) const { return SimTime(ns_ + o.ns_); }
  constexpr SimTime operator-(SimTime o) const { return SimTime(ns_ - o.ns_); }
  constexpr SimTime& operator+=(SimTime o) { ns_ += o.ns_; return *this; }
  constexpr SimTime& operator-=(SimTime o) { ns_ -= o.ns_; return *this; }
  constexpr auto operator<=>(const SimTime&) const = default;

 private:
  constexpr explicit SimTime(int64_t ns) : ns_(ns) {}
  int64_t ns_ = 0;
};

constexpr SimTime max(SimTime a, SimTime b) { return a < b ? b : a; }

}  // namespace stalesim
