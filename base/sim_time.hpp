#pragma once
// SimTime: virtual time as a strong type over int64 nanoseconds (DESIGN.md section 2, rule 1).
// Conversions to and from seconds happen only at the edges: scenario loading and output.

#include <cmath>
#include <compare>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>

namespace stalesim {

// A time or duration past what int64 nanoseconds hold (about 292 years), or not a number. Bad
// input: the CLI reports it with exit 2. The message says what was being computed.
class TimeRangeError : public std::range_error {
 public:
  using std::range_error::range_error;
};

class SimTime {
 public:
  // The largest duration a conversion accepts: 2^62 ns (about 146 years), so that adding a few
  // of them to a time in range cannot overflow unnoticed.
  static constexpr double kMaxNs = 4.611686018427388e18;
  constexpr SimTime() = default;
  static constexpr SimTime from_ns(int64_t ns) { return SimTime(ns); }
  static constexpr SimTime zero() { return SimTime(0); }
  static constexpr SimTime max() { return SimTime(std::numeric_limits<int64_t>::max()); }
  // Rounds to the nearest nanosecond. REQUIRES: finite, |s| < 9.2e9.
  static SimTime from_seconds(double s) { return SimTime(static_cast<int64_t>(std::llround(s * 1e9))); }
  static SimTime from_us(double us) { return SimTime(static_cast<int64_t>(std::llround(us * 1e3))); }
  // Rounds `ns` to the nearest nanosecond. Throws TimeRangeError, naming `what`, when `ns` is not
  // finite or its magnitude exceeds kMaxNs.
  static SimTime from_ns_checked(double ns, const std::string& what) {
    if (!(std::fabs(ns) <= kMaxNs)) {
      char seconds[32] = "not a number";
      if (!std::isnan(ns)) std::snprintf(seconds, sizeof seconds, "%g s", ns / 1e9);
      throw TimeRangeError(what + ": " + seconds +
                           ", past the simulator's time range (int64 nanoseconds, about 292 years)");
    }
    return SimTime(static_cast<int64_t>(std::llround(ns)));
  }

  constexpr int64_t ns() const { return ns_; }
  // Divides (correctly rounded), so whole seconds print as whole numbers.
  constexpr double seconds() const { return static_cast<double>(ns_) / 1e9; }

  // Checked: a sum or difference past int64 throws TimeRangeError instead of wrapping.
  constexpr SimTime operator+(SimTime o) const {
    int64_t r = 0;
    if (__builtin_add_overflow(ns_, o.ns_, &r)) overflow();
    return SimTime(r);
  }
  constexpr SimTime operator-(SimTime o) const {
    int64_t r = 0;
    if (__builtin_sub_overflow(ns_, o.ns_, &r)) overflow();
    return SimTime(r);
  }
  constexpr SimTime& operator+=(SimTime o) { return *this = *this + o; }
  constexpr SimTime& operator-=(SimTime o) { return *this = *this - o; }
  constexpr auto operator<=>(const SimTime&) const = default;

 private:
  constexpr explicit SimTime(int64_t ns) : ns_(ns) {}
  [[noreturn]] static void overflow() {
    throw TimeRangeError("virtual time past the simulator's range (int64 nanoseconds, about 292 years)");
  }
  int64_t ns_ = 0;
};

constexpr SimTime max(SimTime a, SimTime b) { return a < b ? b : a; }

}  // namespace stalesim
