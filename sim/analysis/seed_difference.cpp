#include "sim/analysis/seed_difference.hpp"

#include <cmath>

namespace stalesim {

namespace {

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

// Sample standard deviation; 0 for fewer than 2 values (as papers_claims.py's sd).
double sd_of(const std::vector<double>& v) {
  if (v.size() < 2) return 0.0;
  const double m = mean_of(v);
  double sq = 0;
  for (double x : v) sq += (x - m) * (x - m);
  return std::sqrt(sq / static_cast<double>(v.size() - 1));
}

// The regularized incomplete beta function I_x(a, b) by its continued fraction (Lentz), as
// papers_claims.py's betainc, step for step.
double betainc(double a, double b, double x) {
  if (x <= 0) return 0.0;
  if (x >= 1) return 1.0;
  if (x > (a + 1) / (a + b + 2)) return 1.0 - betainc(b, a, 1.0 - x);
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x)) /
      a;
  const double tiny = 1e-300;
  double c = 1.0, d = 1.0 - (a + b) * x / (a + 1);
  d = 1.0 / (std::abs(d) > tiny ? d : tiny);
  double f = d;
  for (int m = 1; m < 500; ++m) {
    const double nums[2] = {m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))};
    for (double num : nums) {
      d = 1.0 + num * d;
      d = 1.0 / (std::abs(d) > tiny ? d : tiny);
      c = 1.0 + num / c;
      c = std::abs(c) > tiny ? c : tiny;
      f *= c * d;
    }
    if (std::abs(c * d - 1.0) < 1e-15) break;
  }
  return front * f;
}

}  // namespace

double t_sf(double t, std::optional<double> df) {
  if (!df) return 0.5 * std::erfc(t / std::sqrt(2.0));
  const double tail = 0.5 * betainc(*df / 2.0, 0.5, *df / (*df + t * t));
  return t > 0 ? tail : 1.0 - tail;
}

std::string difference_verdict(double d, const std::optional<double>& se, std::optional<double> df) {
  if (!se || !std::isfinite(d)) return "inconclusive";
  if (*se == 0) return d > 0 ? "A higher" : d < 0 ? "A lower" : "inconclusive";
  if (t_sf(d / *se, df) < kVerdictLevel) return "A higher";
  if (t_sf(-d / *se, df) < kVerdictLevel) return "A lower";
  return "inconclusive";
}

SeedDifference seed_difference(const std::vector<double>& a, const std::vector<double>& b) {
  SeedDifference s;
  s.n_a = a.size();
  s.n_b = b.size();
  s.mean_a = mean_of(a);
  s.mean_b = mean_of(b);
  s.d = s.mean_a - s.mean_b;
  if (a.size() >= 2 && b.size() >= 2) {
    const double sa = sd_of(a), sb = sd_of(b);
    const double va = sa * sa / static_cast<double>(a.size()), vb = sb * sb / static_cast<double>(b.size());
    s.se = std::sqrt(va + vb);
    const double den =
        va * va / static_cast<double>(a.size() - 1) + vb * vb / static_cast<double>(b.size() - 1);
    if (den > 0) s.df = (va + vb) * (va + vb) / den;
  }
  s.verdict = difference_verdict(s.d, s.se, s.df);
  return s;
}

}  // namespace stalesim
